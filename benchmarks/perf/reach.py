"""Reach: how much of real code utdebug can target, and whether tests of the new shape run.

For each installed package (default: rich, click, jinja2, httpx, GitPython's ``git``):

1. every ``def`` of every module, found with ``ast``, and whether ``utdebug`` can target it
   (:func:`utdebug.workspace.find_target`, the loader of ``debug`` and ``check``): a
   module-level function or a method of a module-level class of any kind, or a nested function
   through its enclosing function. Printed as a share of all defs and of non-dunder defs, next
   to what a module-level function or staticmethod (the old reach) covered.
2. a seeded sample of targets (``--sample``, default 50) run in the sandbox, each with one test
   of the new shape written by rule (not by a model, not by a person): the setup builds the
   object without its constructor (``obj = Cls.__new__(Cls)``) for an instance method or
   property, and the call passes ``None`` for every required parameter (``await`` for an async
   target; generators are consumed), expecting ``None``. The module is loaded in the sandbox
   as the package module it is (its imports work); a test "runs to a verdict" when it ends
   pass, fail (a value or an exception) or timeout, not with a load error or a crash. This
   measures that the module loads and the test program runs, not that the test is meaningful.

Run from the repository root (about a minute):

    .venv/bin/python benchmarks/perf/reach.py
    .venv/bin/python benchmarks/perf/reach.py --packages click --sample 10
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import importlib.util
import random
import site
import sys
from dataclasses import dataclass
from pathlib import Path

from utdebug.engine import Executor, UnitTest, Variant
from utdebug.engine.model import Task
from utdebug.sandbox import Sandbox, SandboxConfig
from utdebug.sandbox.config import Limits, ModuleContext
from utdebug.sandbox.verdicts import Verdict
from utdebug.workspace import WorkspaceError, find_target

DEFAULT = ("rich", "click", "jinja2", "httpx", "git")


@dataclass(frozen=True, slots=True)
class Def:
    file: Path
    module: str
    qualname: str
    dunder: bool
    old: bool
    """A module-level sync function or a staticmethod of a module-level class."""


def defs_of(tree: ast.Module) -> list[tuple[str, bool, bool]]:
    """(qualname, dunder, old reach) of every def in the module."""
    out: list[tuple[str, bool, bool]] = []

    def visit(body: list[ast.stmt], prefix: str, depth: int, in_class: bool) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                name = node.name
                dunder = name.startswith("__") and name.endswith("__")
                static = any(
                    isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list
                )
                old = isinstance(node, ast.FunctionDef) and (
                    (depth == 0) or (in_class and depth == 1 and static)
                )
                out.append((prefix + name, dunder, old))
                visit(node.body, f"{prefix}{name}.", depth + 1, False)
            elif isinstance(node, ast.ClassDef):
                visit(node.body, f"{prefix}{node.name}.", depth + 1, True)
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    sub = getattr(node, field, None)
                    if isinstance(sub, list):
                        stmts = [s for s in sub if isinstance(s, ast.stmt)]
                        handlers = [h for h in sub if isinstance(h, ast.ExceptHandler)]
                        visit(stmts, prefix, depth, in_class)
                        for h in handlers:
                            visit(h.body, prefix, depth, in_class)

    visit(tree.body, "", 0, False)
    return out


def package_files(name: str) -> tuple[Path, Path]:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"package {name!r} is not installed in this environment")
    folder = Path(next(iter(spec.submodule_search_locations)))
    return folder, folder.parent


def collect(name: str) -> tuple[list[Def], list[tuple[Def, bool, str]]]:
    folder, root = package_files(name)
    found: list[Def] = []
    judged: list[tuple[Def, bool, str]] = []
    for file in sorted(folder.rglob("*.py")):
        rel = file.relative_to(root).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        module = ".".join(parts)
        try:
            tree = ast.parse(file.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for qualname, dunder, old in defs_of(tree):
            d = Def(file, module, qualname, dunder, old)
            found.append(d)
            try:
                target = find_target(tree, qualname, file)
                judged.append((d, True, target.kind))
            except WorkspaceError as e:
                judged.append((d, False, str(e)))
    return found, judged


def smoke_test(tree: ast.Module, d: Def) -> tuple[Task, UnitTest] | None:
    target = find_target(tree, d.qualname, d.file)
    node, cls = target.node, target.class_node
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    if cls is not None and target.kind not in ("staticmethod",) and positional:
        positional = positional[1:]  # self / cls
    required = positional[: len(positional) - len(args.defaults)]
    kw = [a for a, dflt in zip(args.kwonlyargs, args.kw_defaults, strict=True) if dflt is None]
    call_args = ", ".join(["None"] * len(required) + [f"{a.arg}=None" for a in kw])
    owner = cls.name if cls is not None else None
    setup = ""
    if owner is None:
        call = f"{node.name}({call_args})"
    elif target.kind in ("classmethod", "staticmethod"):
        call = f"{owner}.{node.name}({call_args})"
    else:
        setup = f"obj = {owner}.__new__({owner})"
        call = f"obj.{node.name}" if target.kind == "property" else f"obj.{node.name}({call_args})"
    if isinstance(node, ast.AsyncFunctionDef) and target.kind not in ("async generator",):
        call = f"await {call}"
    task = Task(d.qualname, "", node.name, node.name, "", class_name=owner, program=True)
    return task, UnitTest(0, (), call, None, setup=setup)


async def run_sample(
    executor: Executor, sample: list[Def], limits: Limits
) -> list[tuple[Def, str]]:
    out: list[tuple[Def, str]] = []
    for d in sample:
        text = d.file.read_text(encoding="utf-8")
        tree = ast.parse(text)
        made = smoke_test(tree, d)
        if made is None:
            out.append((d, "no test"))
            continue
        task, test = made
        ctx = ModuleContext(
            name=d.module,
            file=str(d.file),
            package=d.module if d.file.name == "__init__.py" else d.module.rpartition(".")[0],
            path=(str(package_files(d.module.split(".")[0])[1]),),
            import_package=True,
        )
        ex = Executor(executor.sandbox, workers=1, context=ctx)
        try:
            run = await ex.run_tests(task, text, [test], Variant.PAPER, limits)
        finally:
            ex.close()
        (judged,) = run.results
        if run.load_error is not None:
            out.append((d, "load error: " + run.load_error))
        elif judged.verdict is Verdict.CRASH:
            out.append((d, "crash: " + (judged.detail or "")))
        else:
            out.append((d, judged.verdict.value))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packages", nargs="+", default=list(DEFAULT))
    ap.add_argument("--sample", type=int, default=50, help="targets run per package")
    ap.add_argument("--seed", type=int, default=20)
    ap.add_argument("--show-failures", action="store_true", help="list targets with no verdict")
    a = ap.parse_args()
    mounts = tuple(
        dict.fromkeys(str(Path(p).resolve()) for p in site.getsitepackages() if Path(p).is_dir())
    )
    rows = []
    with Sandbox(SandboxConfig(mounts=mounts)) as sb:
        report = sb.start()
        print(f"sandbox layers active: {len(report.active())} of {len(report.states)}")
        executor = Executor(sb, workers=1)
        try:
            for name in a.packages:
                found, judged = collect(name)
                targetable = [d for d, ok, _ in judged if ok]
                non_dunder = [d for d in found if not d.dunder]
                nd_ok = [d for d, ok, _ in judged if ok and not d.dunder]
                old = [d for d in found if d.old]
                rng = random.Random(f"{a.seed}:{name}")
                sample = rng.sample(targetable, min(a.sample, len(targetable)))
                results = asyncio.run(run_sample(executor, sample, Limits(per_input=2.0)))
                loaded = [r for r in results if not r[1].startswith("load error")]
                verdict = [r for r in results if r[1] in ("pass", "fail", "timeout")]
                rows.append(
                    (name, len(found), len(targetable), len(non_dunder), len(nd_ok), len(old),
                     len(results), len(loaded), len(verdict))
                )  # fmt: skip
                if a.show_failures:
                    for d, why in results:
                        if why not in ("pass", "fail", "timeout"):
                            print(f"  {name}: {d.module}::{d.qualname}: {why[:160]}")
        finally:
            executor.close()
    print(
        f"{'package':<8} {'defs':>6} {'targetable':>11} {'non-dunder':>11} {'old reach':>10} "
        f"{'sample':>6} {'module loads':>13} {'test runs to a verdict':>23}"
    )
    for name, n, n_ok, n_nd, n_nd_ok, n_old, s, n_loaded, n_verdict in rows:
        print(
            f"{name:<8} {n:>6} {n_ok / n:>10.1%} {n_nd_ok / n_nd:>11.1%} {n_old / n:>10.1%} "
            f"{s:>6} {n_loaded / s:>12.0%} {n_verdict / s:>22.0%}"
        )
    print(
        "targetable: share of all defs; non-dunder: share of the non-dunder defs; old reach: "
        "module-level functions and staticmethods; the sample's tests are written by rule "
        "(None for every required argument), see the docstring"
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
