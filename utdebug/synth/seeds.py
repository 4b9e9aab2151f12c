"""Seed inputs from wherever they exist, read with :mod:`ast` (nothing is executed):

- a benchmark problem's base inputs: the calls of the entry point in its ``test_list``
  asserts (MBPP+Fix); HE-style rows pass their ``base_input`` lists to :func:`seeds_from_args`;
- doctest and docstring examples: ``>>> f(1, 2)`` lines (with ``...`` continuations; earlier
  lines may bind the input: ``>>> xs = [1, 2]``) and, in free text (a prompt), ``f(...)``
  calls that parse;
- the calls of the function in a repository's own test files, with the values the tests give
  them (:mod:`utdebug.synth.test_calls`: names bound earlier, parametrize tables, loops over
  literal tables, fixtures, ``setUp``; enum members, functions and iterators, re-created in
  the sandbox's child).

:func:`gather` reads them all for one function of a repository (``utdebug check``). A call
whose arguments are not values read this way is skipped and counted in :attr:`Seeds.skipped`
with the reason; test files and single expressions over a size cap are not read at all.
"""

from __future__ import annotations

import ast
import functools
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from utdebug.literals import closing_bracket
from utdebug.synth.seed_values import Scope
from utdebug.synth.test_calls import Target, TestReader, call_name

__all__ = [
    "MAX_TEST_FILE_BYTES",
    "Seed",
    "Seeds",
    "find_test_files",
    "gather",
    "is_test_file",
    "seeds_from_args",
    "seeds_from_docstring",
    "seeds_from_examples",
    "seeds_from_problem",
    "seeds_from_test_source",
    "seeds_from_tests",
    "seeds_from_text",
]

_MAX_SOURCE = 2_000_000
MAX_TEST_FILE_BYTES = 1_000_000
"""A test file larger than this is not parsed for seeds (its size is noted instead)."""


@dataclass(frozen=True, slots=True)
class Seed:
    args: tuple[Any, ...]
    origin: str
    """Where it came from: ``test_list[0]``, ``docstring line 3``, ``tests/test_x.py:12``."""


@dataclass
class Seeds:
    items: list[Seed] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Calls that were found but not used, with the reason."""

    def add(self, args: tuple[Any, ...], origin: str) -> None:
        self.items.append(Seed(args, origin))

    def add_call(self, call: ast.Call, origin: str) -> None:
        """The call's arguments as a seed (values :mod:`utdebug.synth.seed_values` reads from
        ``call`` alone), or the reason they cannot be read."""
        reader = TestReader(Scope(""), Target(call_name(call.func) or ""), origin, self)
        reader.where = origin
        reader.seed(call, call.args, call.keywords, {}, "")

    def extend(self, other: Seeds) -> None:
        self.items += other.items
        self.skipped += other.skipped

    @property
    def inputs(self) -> list[tuple[Any, ...]]:
        return [s.args for s in self.items]


def _calls_in(tree: ast.AST, func_name: str) -> Iterable[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and call_name(node.func) == func_name:
            yield node


def seeds_from_args(inputs: Iterable[Sequence[Any]], origin: str = "base input") -> Seeds:
    """Seeds from argument lists a benchmark gives directly (HumanEval+'s ``base_input``)."""
    out = Seeds()
    for i, args in enumerate(inputs):
        out.add(tuple(args), f"{origin} {i + 1}")
    return out


def seeds_from_asserts(lines: Sequence[str], func_name: str, origin: str = "test_list") -> Seeds:
    """Calls of ``func_name`` in assert statements (one statement per item)."""
    out = Seeds()
    for i, line in enumerate(lines):
        _add_calls_in(out, line[:_MAX_SOURCE], func_name, f"{origin}[{i}]")
    return out


def _add_calls_in(out: Seeds, source: str, func_name: str, where: str) -> None:
    """Add ``func_name``'s calls in ``source`` to ``out`` (or say it does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        out.skipped.append(f"{where}: syntax error ({exc.msg})")
        return
    for call in _calls_in(tree, func_name):
        out.add_call(call, where)


def seeds_from_problem(problem: Any) -> Seeds:
    """A benchmark problem's base inputs: the entry point's calls in its ``test_list``
    (MBPP+Fix; 3.1 a problem on Hard); a problem without one (HE+Fix) has its prompt's
    examples instead (:func:`seeds_from_docstring`). The private ``tests`` are never read."""
    if problem.test_list:
        return seeds_from_asserts(list(problem.test_list), problem.entry_point)
    return seeds_from_docstring(getattr(problem, "prompt", "") or "", problem.entry_point)


_DOCTEST = re.compile(r"^\s*>>>\s?(.*)$")
_CONTINUATION = re.compile(r"^\s*\.\.\.\s?(.*)$")


def seeds_from_docstring(source: str, func_name: str, *, target: Target | None = None) -> Seeds:
    """``>>> func(...)`` examples in ``func_name``'s docstring (or in every docstring and
    comment-free text of ``source`` when no such function is defined there), earlier examples'
    bindings (``>>> xs = [1, 2]``) applied. A docstring without doctest examples gives the
    calls written in its text instead (``digitSum("abAB") => 131``, ``f(3) ➞ 9``, ``for f(2)
    the output should be ...``: :func:`seeds_from_text`)."""
    text = source
    try:
        tree = ast.parse(source[:_MAX_SOURCE])
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    node_params: list[str] | None = None
    if tree is not None:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == func_name:
                text = ast.get_docstring(node) or ""
                a = node.args
                node_params = [x.arg for x in [*a.posonlyargs, *a.args] if x.arg != "self"]
                break
    out = Seeds()
    t = target or Target(func_name, module_source=source if tree is not None else None)
    reader = TestReader(Scope("", target_source=t.module_source), t, "docstring", out)
    env: dict[str, Any] = {}
    for start, stmt in _examples(text):
        reader.where = f"docstring line {start + 1}"
        try:
            example = ast.parse(stmt)
        except (SyntaxError, ValueError) as exc:
            out.skipped.append(f"{reader.where}: syntax error ({getattr(exc, 'msg', exc)})")
            continue
        reader.scope.reset_source(stmt)
        try:
            reader.statements(example.body, env)
        except RecursionError:
            out.skipped.append(f"{reader.where}: nested too deeply to read")
    if not out.inputs and not out.skipped:
        out = seeds_from_text(text, func_name, "docstring")
    if not out.inputs and node_params is not None:
        out.extend(seeds_from_examples(text, func_name, node_params))
    return out


def _examples(text: str) -> Iterable[tuple[int, str]]:
    """Each ``>>>`` statement of a docstring (its ``...`` lines joined) with its line index."""
    lines = text[:_MAX_SOURCE].splitlines()
    i = 0
    while i < len(lines):
        m = _DOCTEST.match(lines[i])
        start = i
        i += 1
        if not m:
            continue
        stmt = m.group(1)
        while i < len(lines) and (c := _CONTINUATION.match(lines[i])):
            stmt += "\n" + c.group(1)
            i += 1
        yield start, stmt


_INPUT_LINE = re.compile(r"^\s*(?:[-*]\s*)?(?:Input|Inputs|Example input)\s*:\s*(.+?)\s*$", re.I)
_NAMED = re.compile(r"\b([A-Za-z_]\w*)\s*=\s*(?!=)")
_SCALAR = re.compile(r"-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|True|False|None")
_QUOTED = re.compile(r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'")


def _literal_text(line: str, i: int) -> str | None:
    """The literal's text that starts at ``line[i]`` (a bracketed value, a quoted string, a
    number, ``True``/``False``/``None``), or ``None``."""
    if i >= len(line):
        return None
    if line[i] in "[({":
        end = closing_bracket(line, i)
        return None if end is None else line[i : end + 1]
    m = _QUOTED.match(line, i) or _SCALAR.match(line, i)
    return m.group(0) if m else None


def seeds_from_examples(text: str, func_name: str, params: Sequence[str]) -> Seeds:
    """Examples written as prose, line by line: ``Input: arr = [-3, -4, 5], k = 3`` or ``For
    lst = [1, 2] the output should be 3`` (every parameter named with a literal on one line),
    and ``Input: [5, 0, 3]`` (the arguments in order, unnamed)."""
    out = Seeds()
    if not params:
        return out
    for n, line in enumerate(text.splitlines(), 1):
        where = f"docstring example line {n}"
        named: dict[str, str] = {}
        for m in _NAMED.finditer(line):
            if m.group(1) in params and m.group(1) not in named:
                value = _literal_text(line, m.end())
                if value is not None:
                    named[m.group(1)] = value
        if len(named) == len(params):
            parts = [named[p] for p in params]
        elif (unnamed := _INPUT_LINE.match(line)) and not named:
            parts = [unnamed.group(1).rstrip(".")]
        else:
            continue
        try:
            node = ast.parse(f"{func_name}({', '.join(parts)})", mode="eval").body
        except SyntaxError:
            continue
        if isinstance(node, ast.Call) and len(node.args) == len(params):
            out.add_call(node, where)
    return out


def seeds_from_text(text: str, func_name: str, origin: str = "text") -> Seeds:
    """``func_name(...)`` calls written anywhere in free text (a task's prompt): each
    occurrence is parsed up to its closing parenthesis."""
    out = Seeds()
    for m in re.finditer(rf"\b{re.escape(func_name)}\s*\(", text[:_MAX_SOURCE]):
        end = closing_bracket(text, m.end() - 1)
        if end is None:
            continue
        snippet = text[m.start() : end + 1]
        try:
            node = ast.parse(snippet, mode="eval").body
        except SyntaxError:
            continue
        if isinstance(node, ast.Call):
            out.add_call(node, f"{origin} offset {m.start()}")
    return out


def seeds_from_test_source(
    source: str, func_name: str, origin: str = "<test>", *, target: Target | None = None
) -> Seeds:
    """Calls of ``func_name`` in a test module's source, with the values its tests give them:
    literals, names bound earlier in the same test (or in ``setUp``, a fixture, a module-level
    constant), ``@pytest.mark.parametrize`` rows (``pytest.param`` rows, rows passed as
    ``*args``), rows of a ``for`` loop over a literal table (``subTest`` loops), enum members,
    functions and iterators (:mod:`utdebug.synth.seed_values`), and ``assertRaises(E, f,
    *args)``. ``target`` (the function's signature and module) maps keyword arguments to
    positions. A file over :data:`MAX_TEST_FILE_BYTES` is not parsed."""
    out = Seeds()
    if func_name not in source:
        return out
    if len(source) > MAX_TEST_FILE_BYTES:
        out.skipped.append(f"{origin}: {len(source):,} characters, not read as seeds")
        return out
    try:
        tree = _parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        out.skipped.append(f"{origin}: syntax error ({getattr(exc, 'msg', exc)})")
        return out
    t = target or Target(func_name)
    scope = Scope.of_module(tree, source, t.module, t.module_source)
    try:
        TestReader(scope, t, origin, out).module(tree)
    except RecursionError:
        out.skipped.append(f"{origin}: nested too deeply to read")
    return out


@functools.lru_cache(maxsize=32)
def _parse(source: str) -> ast.Module:
    """A test file's syntax tree (read for each function whose name it holds: parsed once
    while it is among the last few read; trees are never changed)."""
    return ast.parse(source)


def seeds_from_tests(
    paths: Iterable[Path], func_name: str, root: Path | None = None, *, target: Target | None = None
) -> Seeds:
    """:func:`seeds_from_test_source` over test files (unreadable files are skipped; a file
    over :data:`MAX_TEST_FILE_BYTES` is noted, not read)."""
    out = Seeds()
    for path in paths:
        name = str(path.relative_to(root)) if root is not None else str(path)
        try:
            size = path.stat().st_size
            if size > MAX_TEST_FILE_BYTES:
                out.skipped.append(f"{name}: {size:,} bytes, not read as seeds")
                continue
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            out.skipped.append(f"{name}: unreadable ({exc.__class__.__name__})")
            continue
        out.extend(seeds_from_test_source(source, func_name, name, target=target))
    return out


def gather(
    module_source: str,
    qualname: str,
    *,
    tests: Iterable[Path] = (),
    root: Path | None = None,
    module: str = "",
    other_sources: Sequence[str] = (),
    model_calls: Sequence[str] = (),
) -> Seeds:
    """Every seed of the function ``qualname`` of ``module_source`` (importable as ``module``):
    its calls in the test files ``tests`` (paths named relative to ``root``), the examples of
    its docstring here and in ``other_sources`` (the base's module), and ``model_calls`` (the
    calls of a model's tests, ``f(1, [2])``). Keyword arguments are placed by the signature,
    and parameters a seed leaves out get their literal defaults, so that they are varied too
    (both only by the parameters every version takes, in the same places: a parameter the
    head adds is left out, as the base's callers leave it out)."""
    target = Target.of(module_source, qualname, module)
    for text in other_sources:
        target = target.shared_with(Target.of(text, qualname))
    out = seeds_from_tests(tests, qualname, root, target=target)
    for text in (module_source, *other_sources):
        out.extend(seeds_from_docstring(text, qualname, target=target))
    for call in model_calls:
        out.extend(seeds_from_text(call, qualname, "the model's tests"))
    out.items = [Seed(target.complete(s.args), s.origin) for s in out.items]
    return out


TEST_FILES_LIMIT = 2000
"""At most this many test files are read from one project."""
_NOT_SOURCES = {"__pycache__", "node_modules", "venv", "env", "build", "dist", "site-packages"}


def is_test_file(path: str | Path) -> bool:
    """Whether a project's file (its path relative to the project) is a test file:
    ``test_*.py``, ``*_test.py``, a module named ``tests`` (``tests.py``, as Django and older
    projects keep their tests) or a ``.py`` file under a ``tests`` or ``test`` folder."""
    p = Path(path)
    name = p.name
    in_tests = any(part in ("tests", "test") for part in p.parts[:-1])
    return name.endswith(".py") and (
        in_tests or name.startswith("test_") or name.endswith("_test.py") or name == "tests.py"
    )


def find_test_files(root: Path, limit: int = TEST_FILES_LIMIT) -> list[Path]:
    """A project's test files (:func:`is_test_file`), in a stable order (hidden folders,
    virtual environments and build output left out; at most ``limit``)."""
    out: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _NOT_SOURCES and not d.startswith("."))
        rel = Path(folder).relative_to(root)
        for name in sorted(files):
            if is_test_file(rel / name):
                out.append(Path(folder) / name)
                if len(out) >= limit:
                    return out
    return out
