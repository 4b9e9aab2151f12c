"""``utdebug check`` without a model on MBPP+Fix (Hard): regressions reported, and no finding on
rewrites that keep the meaning.

    python -m utdebug.benchmarks.check_synth --data-dir ../shared/datasets [--limit N] [-j 2]
        [--json rows.jsonl]; --summarize rows.jsonl prints the totals of a (partial) run

1. **Regressions.** For each Hard problem a git repository is built: ``solution.py`` holding the
   gold code and ``tests/test_solution.py`` holding the problem's ``test_list`` asserts (the
   repository's own tests: the seeds), committed; then the buggy code committed over it. ``utdebug
   check --changed --base HEAD~1 --rev HEAD --no-model`` runs on it; the change is *reported*
   when the report has at least one changed outcome.
2. **Rewrites that keep the meaning.** The gold code of the same problems is rewritten with
   :mod:`ast` (locals renamed; reformatted by ``ast.unparse``; ``xs = []`` + ``for`` +
   ``xs.append`` written as a list comprehension, where that is trivially safe), and each
   rewrite is committed over the gold code in a repository like the one above: every finding is
   a false alarm (the target is 0). A reformatting alone leaves the syntax tree as it was, so
   ``check`` reports it unchanged and runs nothing; the table counts the rewrites whose
   functions were compared.

``check`` runs as the command (``python -m utdebug check``, one process per repository, with
``RLIMIT_CPU`` of ``--cpu`` seconds and a wall-clock limit of ``--timeout``), because the
benchmarks layer does not import the check front end (``pyproject.toml``, import contracts).
Not a unit test: the whole split takes many minutes; ``--limit`` takes the first N problems.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from utdebug.data.datasets import Problem
from utdebug.data.splits import load_split
from utdebug.text_safety import visible

# -- rewrites ----------------------------------------------------------------------------------


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    a = fn.args
    names = [x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]]
    names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    return set(names)


def _declared(fn: ast.AST) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Global | ast.Nonlocal):
            out.update(node.names)
    return out


def rename_locals(code: str) -> str | None:
    """Every module-level function's local variables renamed (``total`` -> ``v0_total``), its
    parameters too unless some call in the module passes arguments by keyword; ``None`` when
    there is none to rename or the code uses ``locals``/``eval``/``exec``."""
    tree = ast.parse(code)
    if any(
        isinstance(n, ast.Name) and n.id in ("locals", "vars", "eval", "exec")
        for n in ast.walk(tree)
    ):
        return None
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    keywords = any(isinstance(n, ast.Call) and n.keywords for n in ast.walk(tree))
    changed = False
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        skip = _declared(fn) | (_params(fn) if keywords else set())
        nested = {
            n.name
            for n in ast.walk(fn)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n is not fn
        }
        stored = sorted(
            (
                {
                    n.id
                    for n in ast.walk(fn)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                }
                | _params(fn)
            )
            - skip
            - nested
        )
        if not stored:
            continue
        new = {}
        for i, name in enumerate(stored):
            fresh = f"v{i}_{name}"
            while fresh in taken:
                fresh = "_" + fresh
            taken.add(fresh)
            new[name] = fresh
        for n in ast.walk(fn):
            if isinstance(n, ast.Name) and n.id in new:
                n.id = new[n.id]
                changed = True
            elif isinstance(n, ast.arg) and n.arg in new:
                n.arg = new[n.arg]
                changed = True
    return ast.unparse(tree) + "\n" if changed else None


def reformat(code: str) -> str | None:
    """The code as ``ast.unparse`` writes it (``None`` when that is the same text)."""
    out = ast.unparse(ast.parse(code)) + "\n"
    return out if out.strip() != code.strip() else None


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _as_comprehension(first: ast.stmt, loop: ast.stmt, later: list[ast.stmt]) -> ast.stmt | None:
    """``xs = []`` then ``for t in it: [if c:] xs.append(e)`` as ``xs = [e for t in it [if c]]``,
    when nothing after uses the loop's names and the loop does not read ``xs``."""
    if not (
        isinstance(first, ast.Assign)
        and len(first.targets) == 1
        and isinstance(first.targets[0], ast.Name)
        and isinstance(first.value, ast.List)
        and not first.value.elts
        and isinstance(loop, ast.For)
        and not loop.orelse
        and len(loop.body) == 1
    ):
        return None
    xs = first.targets[0].id
    body = loop.body[0]
    cond: ast.expr | None = None
    if isinstance(body, ast.If) and not body.orelse and len(body.body) == 1:
        cond, body = body.test, body.body[0]
    if not (
        isinstance(body, ast.Expr)
        and isinstance(body.value, ast.Call)
        and isinstance(body.value.func, ast.Attribute)
        and body.value.func.attr == "append"
        and isinstance(body.value.func.value, ast.Name)
        and body.value.func.value.id == xs
        and len(body.value.args) == 1
        and not body.value.keywords
    ):
        return None
    elt = body.value.args[0]
    targets = _names(loop.target)
    if xs in _names(loop.iter) | _names(elt) | (_names(cond) if cond is not None else set()):
        return None
    if xs in targets or any(targets & _names(s) for s in later):
        return None
    if any(
        isinstance(n, ast.NamedExpr | ast.Yield | ast.YieldFrom | ast.Await) for n in ast.walk(loop)
    ):
        return None
    comp = ast.ListComp(
        elt=elt,
        generators=[
            ast.comprehension(
                target=loop.target, iter=loop.iter, ifs=[cond] if cond else [], is_async=0
            )
        ],
    )
    return ast.Assign(targets=[ast.Name(xs, ast.Store())], value=comp, lineno=first.lineno)


def loops_to_comprehensions(code: str) -> str | None:
    """Each trivially safe append loop of a module-level function as a comprehension
    (:func:`_as_comprehension`); ``None`` when there is none."""
    tree = ast.parse(code)
    changed = False
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for block in [n for n in ast.walk(fn) if hasattr(n, "body") and isinstance(n.body, list)]:
            body: list[ast.stmt] = block.body
            i = 0
            while i + 1 < len(body):
                new = _as_comprehension(body[i], body[i + 1], body[i + 2 :])
                if new is not None:
                    body[i : i + 2] = [new]
                    changed = True
                i += 1
    if not changed:
        return None
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def _as_loop(stmt: ast.stmt, fn: ast.AST, n: int) -> list[ast.stmt] | None:
    """``x = [e for t in it if c]`` (or ``return [...]``) as ``acc = []``, a ``for`` loop that
    appends, then ``x = acc``: when ``t``'s names are used nowhere else in the function."""
    value = stmt.value if isinstance(stmt, ast.Assign | ast.Return) else None
    if not isinstance(value, ast.ListComp) or len(value.generators) != 1:
        return None
    gen = value.generators[0]
    if gen.is_async or any(isinstance(x, ast.NamedExpr | ast.Await) for x in ast.walk(value)):
        return None
    inside = {id(x) for x in ast.walk(value)}
    outside = {x.id for x in ast.walk(fn) if isinstance(x, ast.Name) and id(x) not in inside}
    if _names(gen.target) & outside:
        return None
    acc = f"acc{n}_"
    while acc in outside:
        acc = "_" + acc
    append: ast.stmt = ast.Expr(
        ast.Call(ast.Attribute(ast.Name(acc, ast.Load()), "append", ast.Load()), [value.elt], [])
    )
    for cond in reversed(gen.ifs):
        append = ast.If(cond, [append], [])
    start = ast.Assign([ast.Name(acc, ast.Store())], ast.List([], ast.Load()), lineno=0)
    loop = ast.For(gen.target, gen.iter, [append], [], lineno=0)
    end: ast.stmt
    if isinstance(stmt, ast.Return):
        end = ast.Return(ast.Name(acc, ast.Load()))
    else:
        assert isinstance(stmt, ast.Assign)
        end = ast.Assign(stmt.targets, ast.Name(acc, ast.Load()), lineno=0)
    return [start, loop, end]


def comprehensions_to_loops(code: str) -> str | None:
    """Each list comprehension that is a whole statement's value (an assignment, a return) of
    a module-level function as a loop that appends (:func:`_as_loop`); ``None`` when none."""
    tree = ast.parse(code)
    n = 0
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for block in [x for x in ast.walk(fn) if hasattr(x, "body") and isinstance(x.body, list)]:
            body: list[ast.stmt] = block.body
            i = 0
            while i < len(body):
                new = _as_loop(body[i], fn, n)
                if new is not None:
                    body[i : i + 1] = new
                    n += 1
                    i += len(new)
                else:
                    i += 1
    if not n:
        return None
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def name_returned_values(code: str) -> str | None:
    """Each ``return <expression>`` of a module-level function (not a bare name or a constant)
    as ``resultN_ = <expression>`` then ``return resultN_`` (an explaining variable; the
    expression is evaluated once, as before); ``None`` when there is none."""
    tree = ast.parse(code)
    taken = _names(tree)
    n = 0
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for block in [x for x in ast.walk(fn) if hasattr(x, "body") and isinstance(x.body, list)]:
            for field in ("body", "orelse", "finalbody"):
                body = getattr(block, field, None)
                if not isinstance(body, list):
                    continue
                i = 0
                while i < len(body):
                    stmt = body[i]
                    if isinstance(stmt, ast.Return) and not isinstance(
                        stmt.value, ast.Name | ast.Constant | type(None)
                    ):
                        name = f"result{n}_"
                        while name in taken:
                            name = "_" + name
                        taken.add(name)
                        assign = ast.Assign([ast.Name(name, ast.Store())], stmt.value, lineno=0)
                        body[i : i + 1] = [assign, ast.Return(ast.Name(name, ast.Load()))]
                        n += 1
                        i += 1
                    i += 1
    if not n:
        return None
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


REWRITES: dict[str, Callable[[str], str | None]] = {
    "rename": rename_locals,
    "reformat": reformat,
    "comprehension": loops_to_comprehensions,
    "loop": comprehensions_to_loops,
    "rename+loop": lambda c: (
        rename_locals(r) if (r := comprehensions_to_loops(c)) is not None else None
    ),
    "name-returns": name_returned_values,
}


# -- repositories and check ----------------------------------------------------------------------


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def build_repo(root: Path, before: str, after: str, tests: list[str]) -> None:
    """A repository with ``before`` (and its tests) committed, then ``after`` committed."""
    (root / "tests").mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    (root / "solution.py").write_text(before, encoding="utf-8")
    body = "\n\n".join(f"def test_{i}():\n    {line.strip()}\n" for i, line in enumerate(tests))
    (root / "tests" / "test_solution.py").write_text(
        "from solution import *\n\n\n" + body, encoding="utf-8"
    )
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "gold")
    (root / "solution.py").write_text(after, encoding="utf-8")
    _git(root, "commit", "-q", "-am", "change")


@dataclass(frozen=True, slots=True)
class Options:
    """This script's command line (see :func:`main`)."""

    data_dir: Path | None = None
    limit: int | None = None
    start: int = 0
    rewrites: int | None = None
    count: int = 200
    cpu: int = 60
    timeout: float = 300.0
    jobs: int = 1
    skip_buggy: bool = False
    kinds: str = ",".join(REWRITES)
    json: Path | None = None
    summarize: Path | None = None
    verbose: bool = False


def run_check(root: Path, opts: Options) -> dict[str, Any]:
    """``utdebug check`` without a model on ``root``'s last commit: its JSON report (or an
    ``error`` entry)."""
    cpu = opts.cpu

    def limit() -> None:  # pragma: no cover (runs in the child)
        # the soft limit only: the sandbox sets its children's own limits below the hard one
        hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, hard))

    cmd = [
        sys.executable,
        "-m",
        "utdebug",
        "check",
        "--changed",
        "--base",
        "HEAD~1",
        "--rev",
        "HEAD",
        "--no-model",
        "--no-cache",
        "--allow-errors",
        "-q",
        "--synth-inputs",
        str(opts.count),
        "--format",
        "json",
    ]
    try:
        done = subprocess.run(
            cmd,
            cwd=root,
            capture_output=True,
            text=True,
            timeout=opts.timeout,
            preexec_fn=limit,
            env={**os.environ, "UTDEBUG_CACHE_DIR": str(root.parent / "cache")},
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {opts.timeout} s"}
    try:
        report: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        return {"error": f"exit {done.returncode}: {done.stderr.strip()[-300:]}"}
    return report


def _summary(report: dict[str, Any]) -> dict[str, Any]:
    if "error" in report:
        return {"error": report["error"], "changes": 0, "compared": 0, "functions": 0}
    fns = report["functions"]
    diffs = [f["differential"] for f in fns if f.get("differential")]
    return {
        "changes": sum(len(d["changes"]) for d in diffs),
        "compared": sum(bool(d["compared"]) for d in diffs),
        "functions": len(fns),
        "messages": [f"{f['qualname']}: {f['message']}" for f in fns],
        "first": next(
            (
                d["changes"][0]["call"] + ": " + d["changes"][0]["description"]
                for d in diffs
                if d["changes"]
            ),
            None,
        ),
    }


def one(p: Problem, kind: str, after: str, opts: Options) -> dict[str, Any]:
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="utdebug-check-synth-") as tmp:
        root = Path(tmp) / "repo"
        build_repo(root, p.gold, after, list(p.test_list))
        row = _summary(run_check(root, opts))
    return {"task_id": p.task_id, "kind": kind, "seconds": time.monotonic() - t0, **row}


def parse(argv: list[str] | None = None) -> Options:
    """The command line, as :class:`Options`."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--data-dir", type=Path, default=os.environ.get("UTDEBUG_DATA_DIR"))
    ap.add_argument("--limit", type=int, default=None, help="the first N problems")
    ap.add_argument("--start", type=int, default=0, help="skip the first N problems")
    ap.add_argument("--rewrites", type=int, default=None, help="at most N rewrites (all)")
    ap.add_argument("--count", type=int, default=200, help="inputs synthesised a function")
    ap.add_argument("--cpu", type=int, default=60, help="CPU seconds for check's process")
    ap.add_argument("--timeout", type=float, default=300.0, help="wall seconds a repository")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="repositories checked at once")
    ap.add_argument("--skip-buggy", action="store_true", help="rewrites only")
    ap.add_argument(
        "--kinds", default=",".join(REWRITES), help="rewrites to make (comma-separated)"
    )
    ap.add_argument(
        "--json", type=Path, default=None, help="write each row to this file (JSON lines)"
    )
    ap.add_argument(
        "--summarize", type=Path, default=None, help="only print the totals of such a file"
    )
    ap.add_argument("-v", "--verbose", action="store_true")
    return Options(**vars(ap.parse_args(argv)))


def main(argv: list[str] | None = None) -> int:
    opts = parse(argv)
    if opts.summarize is not None:
        lines = opts.summarize.read_text(encoding="utf-8").splitlines()
        for line in summarize([json.loads(x) for x in lines if x.strip()]):
            print(line)
        return 0
    problems = load_split("hard", data_dir=opts.data_dir, download=False).problems
    problems = problems[opts.start :]
    if opts.limit:
        problems = problems[: opts.limit]
    jobs: list[tuple[Problem, str, str]] = []
    if not opts.skip_buggy:
        jobs += [(p, "buggy", p.code) for p in problems]
    rewrites: list[tuple[Problem, str, str]] = []
    for p in problems:
        for kind, rewrite in REWRITES.items():
            if kind not in opts.kinds.split(","):
                continue
            try:
                text = rewrite(p.gold)
            except (SyntaxError, ValueError, RecursionError):
                text = None
            if text is not None:
                rewrites.append((p, kind, text))
    jobs += rewrites[: opts.rewrites] if opts.rewrites is not None else rewrites
    t0 = time.monotonic()
    rows: list[dict[str, Any]] = []
    out = opts.json.open("w", encoding="utf-8") if opts.json else None
    with ThreadPoolExecutor(max(1, opts.jobs)) as pool:
        futures = [pool.submit(one, p, kind, text, opts) for p, kind, text in jobs]
        for done in as_completed(futures):
            row = done.result()
            rows.append(row)
            if out is not None:
                out.write(json.dumps(row) + "\n")
                out.flush()
            bad = (row["kind"] == "buggy") != bool(row["changes"]) or "error" in row
            if opts.verbose or bad:
                what = row.get("error") or row.get("first") or "; ".join(row.get("messages", []))
                line = f"{row['task_id']:>10} {row['kind']:<21} {row['changes']:>4}  {what}"
                print(visible(line[:200]))
    print()
    for line in summarize(rows):
        print(line)
    print(f"wall clock, whole run: {time.monotonic() - t0:.0f} s")
    if out is not None:
        out.close()
    return 0


def summarize(rows: list[dict[str, Any]]) -> list[str]:
    buggy = [r for r in rows if r["kind"] == "buggy"]
    rewrites = [r for r in rows if r["kind"] != "buggy"]
    out = []
    if buggy:
        reported = sum(bool(r["changes"]) for r in buggy)
        errors = sum("error" in r for r in buggy)
        out.append(
            f"regressions (gold, then buggy): {reported}/{len(buggy)} reported "
            f"({reported / len(buggy):.1%}); {errors} check run(s) failed"
        )
    if rewrites:
        alarms = sum(r["changes"] for r in rewrites)
        with_alarm = sum(bool(r["changes"]) for r in rewrites)
        compared = sum(bool(r["compared"]) for r in rewrites)
        out.append(
            f"rewrites keeping the meaning: {len(rewrites)}, {alarms} finding(s) in "
            f"{with_alarm}; {compared} with a function compared "
            f"({sum('error' in r for r in rewrites)} check run(s) failed)"
        )
        for kind in REWRITES:
            mine = [r for r in rewrites if r["kind"] == kind]
            if mine:
                out.append(
                    f"  {kind:<21} {len(mine):>4} rewrites, {sum(r['changes'] for r in mine)} "
                    f"finding(s), {sum(bool(r['compared']) for r in mine)} compared"
                )
    return out


if __name__ == "__main__":
    sys.exit(main())
