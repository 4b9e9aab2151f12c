"""ClassEval+Fix: a debugging benchmark for methods, built from ClassEval.

ClassEval (FudanSELab; data CC BY-NC 4.0, non-commercial use) has 100 hand-written classes,
each with a canonical solution and unittest code: one ``TestCase`` per method plus one for the
class. ClassEval+Fix corrupts methods of the canonical solutions with the project's mutation
operators (:mod:`utdebug.mutation`) and keeps the versions that fail some of that method's
tests. It is built in the sandbox, once per (dataset hash, seed, cap, tries, limits, tool
version), and written to ``<cache>/classeval-fix/`` with its seed and the tool version; later
runs read that file.

How a test runs (:mod:`utdebug.data.classeval_checks`). The sandbox's program is the
class's module alone; ClassEval's test code, rewritten with :mod:`ast` so that it no longer uses
``unittest`` and every ``self.assert*`` records its operands, is the sandbox's staged test
(compiled before the module runs, run in a copy of its namespace with the builtins as they were
before any program ran). Each test method is one input of one sandbox batch: ``setUp``, the
test, ``tearDown``, and the test returns its records, which the runner encodes with its own
codec. The verdict is decided in the parent: each record's assertion is applied there on the
decoded values, in order (the first that does not hold fails the test, its detail naming the
line, the assertion and both operands); an exception the test raised fails it; an input that
ran out of time is a timeout, one that killed its child a crash. Nothing the test prints is
read, and neither ``unittest`` in the child nor the class's ``__eq__``/``__bool__`` decides an
assertion. Within one batch the tests run in ClassEval's order and share the module and one
fresh scratch folder as working directory (the child's private ``/tmp``), as ClassEval's own
harness shares a process: tests that write a file, open sqlite in memory or read the clock
work there.

Which tests are kept (the documented rule that makes ``--gold`` pass 100 %): at build time
every test runs on the canonical solution under the run's limits; a test the canonical
solution does not pass is excluded from every problem of its class, and the build file lists it
with the reason (a module that is not installed here, a NumPy 2 removal, a date in the past, a
host name, a test that needs more than the time limit, a file another class's test wrote).
"""

from __future__ import annotations

import ast
import functools
import inspect
import json
import random
import textwrap
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from utdebug import __version__
from utdebug.data.classeval_checks import required_lines, staged_test, test_verdict
from utdebug.data.datasets import (
    CLASSEVAL_FILE,
    ClassFixProblem,
    DatasetError,
    LoadedSplit,
    LoadRequest,
    MethodTarget,
    ProblemError,
    Provenance,
    Split,
    resolve_file,
)
from utdebug.mutation import mutants, parse_quietly
from utdebug.runs.records import RunFolderError, write_text_atomic
from utdebug.sandbox.config import Limits, StagedTest
from utdebug.sandbox.executor import Sandbox
from utdebug.sandbox.outcomes import BatchResult
from utdebug.sandbox.verdicts import Judged, Verdict

__all__ = [
    "DATA_LICENCE",
    "ClassTask",
    "FixBuild",
    "build_fix",
    "load_classeval_fix",
    "method_lines",
    "parse_classeval",
    "read_classeval_fix",
    "run_tests",
    "test_verdict",
]

DATA_LICENCE = (
    "ClassEval data: CC BY-NC 4.0 (FudanSELab, https://github.com/FudanSELab/ClassEval); "
    "non-commercial use only"
)
FORMAT = "classeval-fix/3"
"""3: the tests' assertions are applied in the parent (:mod:`classeval_checks`)."""
DEFAULT_SEED = 0
DEFAULT_CAP = 3
"""Corrupted versions kept per class at most."""
DEFAULT_TRIES = 6
"""Mutants tried per method before the method is given up."""


@dataclass(frozen=True, slots=True)
class ClassTask:
    """One ClassEval class: its canonical solution and its unittest code."""

    task_id: str
    """``ClassEval_<n>``."""
    row: int
    """1-based position in the dataset's list."""
    class_name: str
    solution: str
    test_code: str
    """ClassEval's unittest code, its ``if __name__ == "__main__"`` block dropped."""
    tests: tuple[tuple[str, str], ...]
    """Every test method as (``TestCase`` class, method), in the code's order."""
    methods: tuple[tuple[str, str], ...]
    """The class's methods that have tests, as (method, its ``TestCase`` class)."""
    descriptions: tuple[tuple[str, str], ...] = ()
    """ClassEval's description of each method, as (method, its docstring)."""
    class_description: str = ""
    """ClassEval's description of the class."""

    def description(self, method: str) -> str:
        """What the task says of ``method``: ClassEval's docstring of the method (its
        parameters, what it returns, its doctest examples), then what the class is for."""
        own = dict(self.descriptions).get(method, "")
        about = (
            f"The class {self.class_name}: {self.class_description}"
            if self.class_description
            else ""
        )
        return "\n\n".join(part for part in (own, about) if part)


# --- reading ClassEval --------------------------------------------------------------------------


def parse_classeval(path: Path) -> tuple[list[ClassTask], list[ProblemError]]:
    """The classes of ``ClassEval_data.json``; a row that cannot be used is a
    :class:`ProblemError` (the others load). Nothing is executed."""
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise DatasetError(f"cannot read {path.name} at {path}: {e}") from None
    if not isinstance(rows, list):
        raise DatasetError(f"{path.name} at {path}: expected a JSON list of classes")
    tasks: list[ClassTask] = []
    errors: list[ProblemError] = []
    for i, row in enumerate(rows, 1):
        task_id = row.get("task_id") if isinstance(row, dict) else None
        try:
            tasks.append(_class_task(row, i))
        except ValueError as e:
            errors.append(
                ProblemError(
                    Split.CLASSEVAL,
                    str(path),
                    i,
                    f"{Split.CLASSEVAL.value}/{task_id}" if isinstance(task_id, str) else None,
                    str(e),
                )
            )
    return tasks, errors


def _class_task(row: object, number: int) -> ClassTask:
    if not isinstance(row, dict):
        raise ValueError("the row is not an object")
    fields = {}
    for name in ("task_id", "class_name", "solution_code", "test"):
        value = row.get(name)
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"missing field {name!r}")
        fields[name] = value
    solution = fields["solution_code"]
    tree = parse_quietly(solution)
    if tree is None or _class_node(tree, fields["class_name"]) is None:
        raise ValueError(f"solution_code has no class {fields['class_name']}")
    test_code, tests = _tests_of(fields["test"])
    infos = row.get("methods_info")
    methods: list[tuple[str, str]] = []
    descriptions: list[tuple[str, str]] = []
    for info in infos if isinstance(infos, list) else []:
        if isinstance(info, dict) and isinstance(info.get("method_name"), str):
            methods.append((info["method_name"], str(info.get("test_class") or "")))
            text = method_docstring(str(info.get("method_description") or ""))
            if text:
                descriptions.append((info["method_name"], text))
    about = row.get("class_description")
    return ClassTask(
        fields["task_id"],
        number,
        fields["class_name"],
        solution,
        test_code,
        tuple(tests),
        tuple(methods),
        tuple(descriptions),
        " ".join(about.strip().strip(_QUOTES).split()) if isinstance(about, str) else "",
    )


def method_docstring(method_description: str) -> str:
    """The docstring of ClassEval's ``method_description`` (a ``def`` holding only its
    docstring), cleaned as :func:`inspect.cleandoc` does; ``""`` when there is none."""
    tree = parse_quietly(textwrap.dedent(method_description).strip() or "")
    if tree is None:
        tree = parse_quietly(textwrap.dedent("    " + method_description.strip()))
    fn = tree.body[-1] if tree is not None and tree.body else None
    if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and ast.get_docstring(fn):
        return ast.get_docstring(fn) or ""
    # a docstring that does not parse (curly quotes, one left open): the lines after the def
    lines = method_description.strip().splitlines()
    at = next((i for i, line in enumerate(lines) if line.lstrip().startswith("def ")), None)
    if at is None:
        return ""
    body = inspect.cleandoc("\n".join(lines[at + 1 :]))
    return body.strip().strip(_QUOTES).strip()


_QUOTES = "\"'\u201c\u201d\u2018\u2019"


def _class_node(tree: ast.Module, name: str) -> ast.ClassDef | None:
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def _tests_of(code: str) -> tuple[str, list[tuple[str, str]]]:
    """The test code without its ``if __name__ == "__main__":`` blocks, and its test methods."""
    tree = parse_quietly(code)
    if tree is None:
        raise ValueError("the test code does not parse")
    lines = code.splitlines(keepends=True)
    for node in reversed(tree.body):
        if isinstance(node, ast.If) and "__main__" in ast.dump(node.test):
            del lines[node.lineno - 1 : node.end_lineno]
    tests = [
        (cls.name, f.name)
        for cls in tree.body
        if isinstance(cls, ast.ClassDef)
        for f in cls.body
        if isinstance(f, ast.FunctionDef) and f.name.startswith("test")
    ]
    if not tests:
        raise ValueError("the test code has no test method")
    return "".join(lines), tests


def method_lines(code: str, class_name: str, method: str) -> tuple[int, int] | None:
    """First and last line of ``class_name.method`` in ``code`` (``None``: not there)."""
    tree = parse_quietly(code)
    cls = _class_node(tree, class_name) if tree is not None else None
    for node in cls.body if cls is not None else []:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == method:
            return node.lineno, node.end_lineno or node.lineno
    return None


# --- running tests ------------------------------------------------------------------------------


def run_tests(
    sb: Sandbox,
    code: str,
    test_code: str,
    tests: Sequence[tuple[str, str]],
    limits: Limits,
) -> tuple[BatchResult, list[Judged]]:
    """Run ``tests`` (``(TestCase class, method)``, one sandbox input each, in that order) of
    ``test_code`` against the class module ``code``: the module is the only program; the
    rewritten test code is the sandbox's staged test (:func:`classeval_checks.staged_test`),
    and each verdict is decided here from the records the test returned."""
    test, required = _prepared(test_code, tuple(tests))
    res = sb.run(code, "", [list(t) for t in tests], limits, test=test)
    return res, [
        test_verdict(o, required.get(t), t) for o, t in zip(res.outcomes, tests, strict=True)
    ]


@functools.lru_cache(maxsize=256)
def _prepared(
    test_code: str, tests: tuple[tuple[str, str], ...]
) -> tuple[StagedTest, dict[tuple[str, str], Counter[int]]]:
    """The rewritten test and the assertions each test must report, once per test code (every
    version of a class, and every round of its debugging loop, runs the same tests)."""
    return staged_test(test_code, tests), required_lines(test_code)


def _run_tests(
    sb: Sandbox, code: str, test_code: str, tests: Sequence[tuple[str, str]], limits: Limits
) -> list[Judged]:
    return run_tests(sb, code, test_code, tests, limits)[1]


# --- building ClassEval+Fix ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FixBuild:
    """What a build wrote: its header and one entry per class and per kept version."""

    header: dict[str, Any]
    classes: list[dict[str, Any]]
    versions: list[dict[str, Any]]


def build_fix(
    sb: Sandbox,
    tasks: Sequence[ClassTask],
    *,
    seed: int,
    cap: int,
    tries: int,
    limits: Limits,
    workers: int = 2,
    on_class: Callable[[str], None] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Corrupt methods of every class, seeded: per class, the canonical solution runs every
    test first (the tests it does not pass are excluded, with the reason); then its methods in
    an order drawn from ``random.Random(f"{seed}:{task_id}")``, up to ``tries`` mutants each
    (sites within the method only), keeping the first mutant that fails some of the method's
    kept tests, until ``cap`` versions of the class are kept. Returns (class entries, version
    entries), in the dataset's order whatever ``workers`` ran them."""

    def one(task: ClassTask) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        entry, versions = _build_class(sb, task, seed=seed, cap=cap, tries=tries, limits=limits)
        if on_class is not None:
            on_class(task.task_id)
        return entry, versions

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results = list(pool.map(one, tasks))
    return [c for c, _ in results], [v for _, vs in results for v in vs]


def _build_class(
    sb: Sandbox, task: ClassTask, *, seed: int, cap: int, tries: int, limits: Limits
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    verdicts = _run_tests(sb, task.solution, task.test_code, task.tests, limits)
    kept = [t for t, j in zip(task.tests, verdicts, strict=True) if j.verdict is Verdict.PASS]
    excluded = [
        {"test": ".".join(t), "verdict": j.verdict.value, "reason": _reason(j)}
        for t, j in zip(task.tests, verdicts, strict=True)
        if j.verdict is not Verdict.PASS
    ]
    rng = random.Random(f"{seed}:{task.task_id}")
    order = list(task.methods)
    rng.shuffle(order)
    versions: list[dict[str, Any]] = []
    tried: dict[str, str] = {}
    for method, test_class in order:
        if len(versions) >= cap:
            break
        own = [t for t in kept if t[0] == test_class]
        span = method_lines(task.solution, task.class_name, method)
        if not own or span is None:
            tried[method] = "no kept tests" if span is not None else "not in the solution"
            continue
        for mutant in mutants(task.solution, rng, tries, lines=span):
            results = _run_tests(sb, mutant.code, task.test_code, own, limits)
            failing = [
                ".".join(t)
                for t, j in zip(own, results, strict=True)
                if j.verdict is not Verdict.PASS
            ]
            if failing:
                versions.append(
                    {
                        "kind": "version",
                        "task_id": f"{Split.CLASSEVAL.value}/{task.task_id}/{method}",
                        "class_task": task.task_id,
                        "method": method,
                        "code": mutant.code,
                        "mutation": mutant.site.describe(),
                        "failing": failing,
                    }
                )
                tried[method] = "kept"
                break
        else:
            tried[method] = "no mutant failed its tests"
    entry = {
        "kind": "class",
        "task_id": task.task_id,
        "tests": [list(t) for t in kept],
        "excluded": excluded,
        "methods": tried,
    }
    return entry, versions


def _reason(judged: Judged) -> str:
    """Why the canonical solution does not pass a test, in words that do not depend on the
    machine (a timeout's measured seconds would make two builds differ)."""
    if judged.verdict is Verdict.FAIL:
        return judged.detail or "failed"
    if judged.verdict is Verdict.TIMEOUT:
        return "timed out on the canonical solution under the run's per-test limit"
    return "crashed on the canonical solution (its child process died)"


def fix_file_name(sha256: str, seed: int, cap: int, tries: int, limits: Limits) -> str:
    return (
        f"ClassEval+Fix-{FORMAT.rpartition('/')[2]}-{sha256[:12]}-s{seed}-c{cap}-t{tries}-"
        f"{limits.kind.value}{limits.per_input:g}-v{__version__}.jsonl"
    )


def load_classeval_fix(
    *,
    data_dir: Path | None,
    cache_dir: Path,
    verify: bool,
    limits: Limits,
    start_sandbox: Callable[[], Sandbox],
    seed: int = DEFAULT_SEED,
    cap: int = DEFAULT_CAP,
    tries: int = DEFAULT_TRIES,
    workers: int = 2,
    say: Callable[[str], None] | None = None,
) -> LoadedSplit:
    """ClassEval+Fix: the dataset file found like the other splits' (``data_dir``, else
    ``UTDEBUG_DATA_DIR``, else the cache, else its public URL), its sha256 checked; the
    corrupted versions read from the build file in ``<cache_dir>/classeval-fix/``, or built in
    a sandbox from ``start_sandbox()`` and written there first. :class:`DatasetError` when the
    file cannot be read or the build cannot be written."""
    source = resolve_file(CLASSEVAL_FILE, data_dir=data_dir, cache_dir=cache_dir, verify=verify)
    request = LoadRequest(
        cache_dir=cache_dir,
        data_dir=data_dir,
        verify=verify,
        limits=limits,
        start_sandbox=start_sandbox,
        seed=seed,
        cap=cap,
        workers=workers,
        say=say,
    )
    return read_classeval_fix(Split.CLASSEVAL, [source], request, tries=tries)


def read_classeval_fix(
    split: Split, files: Sequence[tuple[Path, str]], req: LoadRequest, tries: int = DEFAULT_TRIES
) -> LoadedSplit:
    """The split registry's reader of ClassEval+Fix: its resolved file, the corrupted versions
    built (or read from the build file) in a sandbox of ``req.start_sandbox`` under
    ``req.limits``, ``tries`` mutants per method."""
    limits, start_sandbox, cache_dir, say = req.limits, req.start_sandbox, req.cache_dir, req.say
    if start_sandbox is None or limits is None:
        raise DatasetError("ClassEval+Fix runs with plain evaluation and --gold only")
    seed = DEFAULT_SEED if req.seed is None else req.seed
    cap = DEFAULT_CAP if req.cap is None else req.cap
    ((path, sha256),) = files
    tasks, errors = parse_classeval(path)
    fix_path = cache_dir / "classeval-fix" / fix_file_name(sha256, seed, cap, tries, limits)
    header = {
        "kind": "header",
        "format": FORMAT,
        "tool": "utdebug",
        "version": __version__,
        "seed": seed,
        "cap": cap,
        "tries": tries,
        "limits": {"per_input": limits.per_input, "kind": limits.kind.value},
        "source": {"file": CLASSEVAL_FILE, "sha256": sha256},
        "licence": DATA_LICENCE,
    }
    build = _read_fix(fix_path, header)
    if build is None:
        if say is not None:
            say(
                f"classeval: building ClassEval+Fix (seed {seed}, at most {cap} versions per "
                f"class, {tries} mutants per method) in the sandbox; written to {fix_path}"
            )
        with start_sandbox() as sb:
            build = _build(sb, tasks, header, limits, req.workers, say)
        _write_build(fix_path, build)
    problems = _problems(tasks, build, path, sha256)
    about = {
        "data_licence": DATA_LICENCE,
        "build": fix_path.name,
        "classeval_fix": {
            "file": str(fix_path),
            **{k: build.header[k] for k in ("seed", "cap", "tries", "version")},
            **build.header["counts"],
        },
    }
    return LoadedSplit(Split.CLASSEVAL, [], errors, {path.name: sha256}, problems, about)


def _build(
    sb: Sandbox,
    tasks: Sequence[ClassTask],
    header: dict[str, Any],
    limits: Limits,
    workers: int,
    say: Callable[[str], None] | None,
) -> FixBuild:
    """The corrupted versions of ``tasks``, built in ``sb`` with ``header``'s settings (a line
    to ``say`` every 25 classes)."""
    done = threading.Lock()
    count = [0]

    def progress(task_id: str) -> None:
        with done:
            count[0] += 1
            if say is not None and count[0] % 25 == 0:
                say(f"classeval: {count[0]}/{len(tasks)} classes built")

    classes, versions = build_fix(
        sb,
        tasks,
        seed=header["seed"],
        cap=header["cap"],
        tries=header["tries"],
        limits=limits,
        workers=workers,
        on_class=progress,
    )
    return FixBuild(_counted(header, tasks, classes, versions), classes, versions)


def _write_build(fix_path: Path, build: FixBuild) -> None:
    """The build file (header, classes, versions); :class:`DatasetError` when it cannot be
    written."""
    try:
        fix_path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(
            fix_path,
            "".join(
                json.dumps(line) + "\n" for line in [build.header, *build.classes, *build.versions]
            ),
        )
    except (OSError, RunFolderError) as e:
        raise DatasetError(f"cannot write the ClassEval+Fix build file {fix_path}: {e}") from None


def _counted(
    header: dict[str, Any],
    tasks: Sequence[ClassTask],
    classes: Sequence[dict[str, Any]],
    versions: Sequence[dict[str, Any]],
) -> dict[str, Any]:
    return header | {
        "counts": {
            "classes": len(tasks),
            "methods": sum(len(t.methods) for t in tasks),
            "tests": sum(len(t.tests) for t in tasks),
            "kept_tests": sum(len(c["tests"]) for c in classes),
            "excluded_tests": sum(len(c["excluded"]) for c in classes),
            "classes_with_versions": len({v["class_task"] for v in versions}),
            "versions": len(versions),
        }
    }


def _read_fix(path: Path, header: dict[str, Any]) -> FixBuild | None:
    """The build in ``path`` when it was made with ``header``'s settings (else ``None``)."""
    try:
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not lines or not isinstance(lines[0], dict):
        return None
    head = lines[0]
    if any(head.get(k) != v for k, v in header.items()) or "counts" not in head:
        return None
    classes = [x for x in lines[1:] if isinstance(x, dict) and x.get("kind") == "class"]
    versions = [x for x in lines[1:] if isinstance(x, dict) and x.get("kind") == "version"]
    return FixBuild(head, classes, versions)


def _problems(
    tasks: Iterable[ClassTask], build: FixBuild, path: Path, sha256: str
) -> list[ClassFixProblem]:
    by_id = {t.task_id: t for t in tasks}
    kept = {c["task_id"]: [tuple(t) for t in c["tests"]] for c in build.classes}
    out: list[ClassFixProblem] = []
    for v in build.versions:
        task = by_id.get(v["class_task"])
        if task is None:
            continue
        tests = tuple((str(a), str(b)) for a, b in kept.get(task.task_id, []))
        test_class = dict(task.methods).get(v["method"], "")
        out.append(
            ClassFixProblem(
                split=Split.CLASSEVAL,
                task_id=v["task_id"],
                class_task=task.task_id,
                target=MethodTarget(task.class_name, v["method"], v["code"]),
                code=v["code"],
                gold=task.solution,
                test_code=task.test_code,
                tests=tests,
                target_tests=tuple(i for i, t in enumerate(tests) if t[0] == test_class),
                mutation=v["mutation"],
                provenance=Provenance(str(path), task.row, sha256),
                description=task.description(v["method"]),
            )
        )
    return out
