"""Seed inputs from wherever they exist, read with :mod:`ast` (nothing is executed):

- a benchmark problem's base inputs: the calls of the entry point in its ``test_list``
  asserts (MBPP+Fix); HE-style rows pass their ``base_input`` lists to :func:`seeds_from_args`;
- doctest and docstring examples: ``>>> f(1, 2)`` lines (with ``...`` continuations) and, in
  free text (a prompt), ``f(...)`` calls that parse;
- the calls of the function in a repository's own test files, including rows of
  ``@pytest.mark.parametrize`` that feed a call's arguments, and module-level constants.

Arguments must be literals (:func:`utdebug.expected_values.expected_value`: plain literals plus
``date(...)``, ``Decimal('1.5')`` ...). A call with other arguments is skipped and counted in
:attr:`Seeds.skipped` with the reason.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from utdebug.expected_values import expected_value
from utdebug.literals import LiteralError, closing_bracket

__all__ = [
    "Seed",
    "Seeds",
    "find_test_files",
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

    def add_call(
        self, call: ast.Call, origin: str, constants: dict[str, ast.expr] | None = None
    ) -> None:
        """The call's literal arguments as a seed, or the reason they cannot be read."""
        try:
            self.add(_call_args(call, constants), origin)
        except (LiteralError, RecursionError) as exc:
            self.skipped.append(f"{origin}: {exc}")

    def extend(self, other: Seeds) -> None:
        self.items += other.items
        self.skipped += other.skipped

    @property
    def inputs(self) -> list[tuple[Any, ...]]:
        return [s.args for s in self.items]


def _call_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _literal(node: ast.expr, constants: dict[str, ast.expr] | None = None, depth: int = 0) -> Any:
    if isinstance(node, ast.Name) and constants and node.id in constants and depth < 5:
        return _literal(constants[node.id], constants, depth + 1)
    return expected_value(ast.unparse(node))


def _call_args(call: ast.Call, constants: dict[str, ast.expr] | None = None) -> tuple[Any, ...]:
    if call.keywords:
        raise LiteralError("keyword arguments (only positional arguments are seeds)")
    args = []
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            raise LiteralError("a starred argument")
        args.append(_literal(arg, constants))
    return tuple(args)


def _calls_in(tree: ast.AST, func_name: str) -> Iterable[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _call_name(node.func) == func_name:
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


def seeds_from_docstring(source: str, func_name: str) -> Seeds:
    """``>>> func(...)`` examples in ``func_name``'s docstring (or in every docstring and
    comment-free text of ``source`` when no such function is defined there). A docstring
    without doctest examples gives the calls written in its text instead (``digitSum("abAB")
    => 131``, ``f(3) ➞ 9``, ``for f(2) the output should be ...``: :func:`seeds_from_text`)."""
    text = source
    try:
        tree = ast.parse(source[:_MAX_SOURCE])
    except SyntaxError:
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
    lines = text.splitlines()
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
        _add_calls_in(out, stmt, func_name, f"docstring line {start + 1}")
    if not out.inputs and not out.skipped:
        out = seeds_from_text(text, func_name, "docstring")
    if not out.inputs and node_params is not None:
        out.extend(seeds_from_examples(text, func_name, node_params))
    return out


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


def seeds_from_test_source(source: str, func_name: str, origin: str = "<test>") -> Seeds:
    """Calls of ``func_name`` in a test module's source: literal arguments, module-level
    constants (``CASES = [...]``-style names bound once to a literal), and names filled by
    ``@pytest.mark.parametrize`` rows of the enclosing test function."""
    out = Seeds()
    try:
        tree = ast.parse(source[:_MAX_SOURCE])
    except SyntaxError as exc:
        out.skipped.append(f"{origin}: syntax error ({exc.msg})")
        return out
    constants: dict[str, ast.expr] = {}
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            constants[stmt.targets[0].id] = stmt.value
    done: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            rows = _parametrize_rows(node, constants)
            if not rows:
                continue
            for call in _calls_in(node, func_name):
                done.add(id(call))
                for k, row in enumerate(rows):
                    where = f"{origin}:{call.lineno} (parametrize row {k + 1})"
                    out.add_call(call, where, {**constants, **row})
    for call in _calls_in(tree, func_name):
        if id(call) in done:
            continue
        out.add_call(call, f"{origin}:{call.lineno}", constants)
    return out


def _parametrize_rows(
    func: ast.FunctionDef | ast.AsyncFunctionDef, constants: dict[str, ast.expr]
) -> list[dict[str, ast.expr]]:
    """Rows of ``@pytest.mark.parametrize("a, b", [(1, 2), ...])`` as name -> expression."""
    rows: list[dict[str, ast.expr]] = []
    for dec in func.decorator_list:
        if not (
            isinstance(dec, ast.Call)
            and _call_name(dec.func) == "parametrize"
            and len(dec.args) >= 2
        ):
            continue
        names_node, values = dec.args[0], dec.args[1]
        if isinstance(values, ast.Name) and values.id in constants:
            values = constants[values.id]
        if isinstance(names_node, ast.Constant) and isinstance(names_node.value, str):
            names = [n.strip() for n in names_node.value.split(",") if n.strip()]
        elif isinstance(names_node, ast.List | ast.Tuple):
            names = [
                e.value
                for e in names_node.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str)
            ]
        else:
            continue
        if not isinstance(values, ast.List | ast.Tuple):
            continue
        for row in values.elts:
            if len(names) == 1:
                rows.append({names[0]: row})
            elif isinstance(row, ast.Tuple | ast.List) and len(row.elts) == len(names):
                rows.append(dict(zip(names, row.elts, strict=True)))
    return rows


def seeds_from_tests(paths: Iterable[Path], func_name: str, root: Path | None = None) -> Seeds:
    """:func:`seeds_from_test_source` over test files (unreadable files are skipped)."""
    out = Seeds()
    for path in paths:
        name = str(path.relative_to(root)) if root is not None else str(path)
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            out.skipped.append(f"{name}: unreadable ({exc.__class__.__name__})")
            continue
        out.extend(seeds_from_test_source(source, func_name, name))
    return out


TEST_FILES_LIMIT = 2000
"""At most this many test files are read from one project."""
_NOT_SOURCES = {"__pycache__", "node_modules", "venv", "env", "build", "dist", "site-packages"}


def is_test_file(path: str | Path) -> bool:
    """Whether a project's file (its path relative to the project) is a test file:
    ``test_*.py``, ``*_test.py`` or a ``.py`` file under a ``tests`` or ``test`` folder."""
    p = Path(path)
    name = p.name
    in_tests = any(part in ("tests", "test") for part in p.parts[:-1])
    return name.endswith(".py") and (
        in_tests or name.startswith("test_") or name.endswith("_test.py")
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
