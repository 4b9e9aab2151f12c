"""A standalone pytest file of a session's tests (:func:`export_pytest`, :func:`render_pytest`).

The file imports the function from the source file as it is now (by module name from its
import root inside a package, else by path) with one ``test_<entry>_<n>`` per unit test.
Values are written with :func:`repr` only when they read back through
:func:`utdebug.literals.literal_value` as the same value; an expected value known only by its
text (a :class:`~utdebug.sandbox.values.ByRepr`) becomes a comparison of the result's
``repr`` with that text as a string literal; anything else is left out with a comment saying
why. Text that a program, a model or a file name wrote is never written as code: in the
docstring and comments it is escaped and kept on its line. Float expectations use
``math.isclose(rel_tol=1e-6)`` (``math.isnan`` for NaN).
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from utdebug.engine.model import UnitTest
from utdebug.engine.program import PYTEST_HELPERS, Raises, pytest_body
from utdebug.literals import LiteralError, literal_value
from utdebug.project import package_module
from utdebug.sandbox.compare import compared_by_repr, contains_opaque
from utdebug.sandbox.values import describe
from utdebug.text_safety import visible
from utdebug.workspace import LoadedFunction, WorkspaceError
from utdebug.writeback import atomic_write

__all__ = ["PytestExport", "export_pytest", "render_pytest"]


@dataclass(frozen=True, slots=True)
class PytestExport:
    text: str
    exported: int
    skipped: int


_RESERVED = frozenset({"math", "inf", "nan", "pytest"})


def render_pytest(
    loaded: LoadedFunction, tests: Sequence[UnitTest], out: Path | None = None
) -> PytestExport:
    """The text of the pytest file :func:`export_pytest` writes to ``out`` (default: next to
    the source file), with the counts. The file finds the function relative to itself: by
    module name from the folder that holds the top package when the source file is in a
    package (its relative imports work), else by its path relative to the test file."""
    source = loaded.path.resolve()
    out_dir = (Path(out) if out is not None else source).resolve().parent
    entry = loaded.entry_point
    name = entry
    if name in _RESERVED or name.startswith(("test", "_utd")):
        name = "target_function"  # pytest would collect test*; the literals use inf/nan
    owner = f"_utd_module.{loaded.class_name}" if loaded.class_name else "_utd_module"
    blocks: list[str] = []
    exported = skipped = 0
    for n, test in enumerate(tests, start=1):
        if test.program:
            block = _program_block(entry, n, test)
        else:
            block = _literal_block(entry, name, n, test)
        if block.startswith("#"):
            skipped += 1
        else:
            exported += 1
        blocks.append(block)
    how, loader = _loader(source, out_dir)
    header = (
        f'"""Tests of {_docstring(loaded.path.name)}::{loaded.qualname}, exported by utdebug.\n\n'
        f"They import the function as it is now ({_docstring(how)}): {exported} exported, "
        f'{skipped} skipped (not literal values).\n"""\n\n'
        f"{loader}"
        "_utd_module = _utd_load()\n"
        f"{name} = {owner}.{entry}\n"
    )
    if any(t.program for t in tests):
        header = header.replace(
            "import math\n", "import asyncio\nimport inspect\nimport itertools\nimport math\n", 1
        )
        header += (
            "# Tests with setup use the module's names as utdebug ran them (in the module).\n"
            "globals().update(\n"
            "    {k: v for k, v in vars(_utd_module).items() if not k.startswith('__')}\n"
            ")\n"
            "import pytest  # noqa: E402\n"
            f"{PYTEST_HELPERS}"
        )
    text = header + "".join(f"\n\n{block}" for block in blocks)
    try:
        ast.parse(text)
    except (SyntaxError, ValueError) as exc:  # a bug here, not in the user's input
        raise WorkspaceError(f"the exported test file would not parse: {exc}") from None
    return PytestExport(text, exported, skipped)


def _literal_block(entry: str, name: str, n: int, test: UnitTest) -> str:
    """A test with literal arguments as a pytest function, or a comment saying why it is
    left out."""
    reason, args_text, expected_text = _literal_texts(test)
    call_note = _one_line(test.call) or (
        "?" if reason is not None else _one_line(f"{entry}({args_text})")
    )
    if reason is not None:
        return f"# skipped test {n} (id {test.id}, call {call_note}): {_one_line(reason)}\n"
    call = f"{name}({args_text})"
    comment = (
        f"    # origin: {_one_line(_origin_note(test), 240)}, id {test.id}, call: {call_note}\n"
    )
    expected = test.expected
    if compared_by_repr(None, expected):
        check = f"    assert repr({call}) == {expected_text}\n"
    elif isinstance(expected, float) and expected != expected:  # NaN
        check = f"    result = {call}\n    assert math.isnan(result), result\n"
    elif isinstance(expected, float):
        check = (
            f"    result = {call}\n"
            f"    assert math.isclose(result, {expected_text}, rel_tol=1e-6), result\n"
        )
    else:
        check = f"    assert {call} == {expected_text}\n"
    return f"def test_{entry}_{n}() -> None:\n{comment}{check}"


def _loader(source: Path, out_dir: Path) -> tuple[str, str]:
    """(how the file imports the function, the code that does it: ``_utd_load()``)."""
    package = package_module(source)
    if package is not None:
        root, module = package
        how = f"module {module}, imported from the folder {_relative(root, out_dir)!r}"
        loader = (
            "import importlib\n"
            "import math\n"
            "import sys\n"
            "from pathlib import Path\n\n"
            f"_UTD_ROOT = Path(__file__).resolve().parent / {_relative(root, out_dir)!r}\n"
            "inf = math.inf\n"
            "nan = math.nan\n\n\n"
            "def _utd_load():\n"
            "    root = str(_UTD_ROOT.resolve())\n"
            "    if root not in sys.path:\n"
            "        sys.path.insert(0, root)\n"
            f"    return importlib.import_module({module!r})\n\n\n"
        )
        return how, loader
    module_name = "_utdebug_target_" + re.sub(r"\W", "_", source.stem)
    how = f"the file {_relative(source, out_dir)!r}, relative to this one"
    loader = (
        "import importlib.util\n"
        "import math\n"
        "import sys\n"
        "from pathlib import Path\n\n"
        f"_UTD_SOURCE = (Path(__file__).resolve().parent / "
        f"{_relative(source, out_dir)!r}).resolve()\n"
        "inf = math.inf\n"
        "nan = math.nan\n\n\n"
        "def _utd_load():\n"
        "    if str(_UTD_SOURCE.parent) not in sys.path:\n"
        "        sys.path.insert(0, str(_UTD_SOURCE.parent))\n"
        f"    spec = importlib.util.spec_from_file_location({module_name!r}, _UTD_SOURCE)\n"
        "    if spec is None or spec.loader is None:\n"
        '        raise ImportError(f"cannot import {_UTD_SOURCE}")\n'
        "    module = importlib.util.module_from_spec(spec)\n"
        "    spec.loader.exec_module(module)\n"
        "    return module\n\n\n"
    )
    return how, loader


def export_pytest(loaded: LoadedFunction, tests: Sequence[UnitTest], out: Path) -> Path:
    """Write :func:`render_pytest`'s file to ``out`` (atomically); returns ``out``."""
    out = Path(out)
    atomic_write(out, render_pytest(loaded, tests, out).text.encode("utf-8"))
    return out


def _program_block(entry: str, n: int, test: UnitTest) -> str:
    """A program test as a pytest function (setup, then the call's assertion), or a comment
    saying why it is left out."""
    call_note = _one_line(test.call)
    by_repr = False
    raises: str | None = None
    if isinstance(test.expected, Raises):
        expected_text, raises = "", test.expected.type_name
        if not all(part.isidentifier() for part in raises.split(".")):
            bad = f"{_one_line(repr(raises), 60)} is not an exception type's name"
            return f"# skipped test {n} (id {test.id}, call {call_note}): expected {bad}\n"
    else:
        text, why = _expected_text(test.expected)
        if why is not None:
            return f"# skipped test {n} (id {test.id}, call {call_note}): expected value {why}\n"
        expected_text = text
        by_repr = compared_by_repr(None, test.expected)
    body = pytest_body(
        test.setup or "", test.call, expected_text, test.then, raises=raises, by_repr=by_repr
    )
    comment = (
        f"    # origin: {_one_line(_origin_note(test), 240)}, id {test.id}, call: {call_note}\n"
    )
    return f"def test_{entry}_{n}() -> None:\n{comment}" + "\n".join(body) + "\n"


def _origin_note(test: UnitTest) -> str:
    """Who stands behind the expected value (the model's vote share, or a person), and where
    a synthesised input came from."""
    if test.origin == "person":
        note = "person (the expected value is a person's)"
    else:
        note = f"model, vote share {test.share:.2f}"
    if test.input_source.startswith("synth:"):
        return f"{note}, input: {test.input_source}"
    return note


def _relative(target: Path, start: Path) -> str:
    """``target`` relative to the folder ``start``, with ``/`` (absolute when there is no
    relative path, e.g. another drive)."""
    try:
        return Path(os.path.relpath(target, start)).as_posix()
    except ValueError:
        return target.as_posix()


def _literal_texts(test: UnitTest) -> tuple[str | None, str, str]:
    """(why the test cannot be written, or None; the args text; the expected text)."""
    texts = []
    for i, arg in enumerate(test.args, start=1):
        text, why = _round_trip(arg)
        if why is not None:
            return f"argument {i} {why}", "", ""
        texts.append(text)
    expected_text, why = _expected_text(test.expected)
    if why is not None:
        return f"expected value {why}", "", ""
    return None, ", ".join(texts), expected_text


def _expected_text(value: Any) -> tuple[str, str | None]:
    """The expected value's source and why it cannot be written (``None``: it can): a value
    known only by its text (a ``ByRepr``, compared with the result's repr) is that text as a
    string literal; one known only by a program's repr (an ``Opaque``) equals nothing."""
    if contains_opaque(value):
        return "", "is known only by the repr a program wrote, which proves nothing"
    if compared_by_repr(None, value):
        return _in_literals(repr(describe(value, _REPR_LIMIT))), None
    return _round_trip(value)


_REPR_LIMIT = 100_000
"""Characters of an expected value's text written as a string (a longer one is cut, as the
sandbox's comparison by repr cuts it)."""


def _round_trip(value: Any) -> tuple[str, str | None]:
    try:
        text = repr(value)
    except Exception as exc:  # a user type with a broken __repr__
        return "", f"has no repr ({type(exc).__name__})"
    try:
        back = literal_value(text)
    except LiteralError as exc:
        return text, f"{_one_line(text, 60)} is not a literal ({_one_line(exc.message, 80)})"
    if type(back) is not type(value) or not (_equal(back, value) or repr(back) == text):
        return text, f"{_one_line(text, 60)} does not read back as the same value"
    return _in_literals(text), None


def _in_literals(text: str) -> str:
    """A repr that read back as a literal, with ``##[`` (the old CI workflow command form)
    written ``#\\x23[``: a ``#`` in such a repr is inside a string or bytes literal, where
    the escape is the same character."""
    return text.replace("##[", "#\\x23[")


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def _one_line(text: str, limit: int = 120) -> str:
    """``text`` for a comment: on one line, control and bidirectional characters escaped
    (a comment can neither end early nor read differently than it is), cut to ``limit``."""
    flat = visible(" ".join(text.split()))
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _docstring(text: str) -> str:
    """``text`` inside the file's ``\"\"\"`` docstring: backslashes and quotes escaped, control
    and bidirectional characters as escapes (it cannot end the docstring or span lines)."""
    return visible(text).replace("\\", "\\\\").replace('"', '\\"')
