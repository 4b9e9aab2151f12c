"""Both versions of a changed function, read from the copies: what is compared, or why not.

:func:`pair` reads the function's module at the checked revision and at the base and gives a
:class:`Pair` (both texts, both definitions, the module's import name), or :class:`NotCompared`
with the reason: a new file or function, a base that does not parse on this Python, a syntax
tree that did not change, a kind of function not compared yet.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

from utdebug.check.loading import Copies, ModuleName, import_name
from utdebug.check.targets import Target, module_context
from utdebug.engine.target_kinds import KINDS, Comparing, TargetKind

__all__ = ["NotCompared", "Pair", "Side", "pair", "read_source"]

_NOT_YET = {
    TargetKind.ASYNC_FUNCTION: "async functions are not compared with their base",
    TargetKind.GENERATOR: "generators are not compared with their base",
    TargetKind.ASYNC_GENERATOR: "async generators are not compared with their base",
}


@dataclass(frozen=True, slots=True)
class NotCompared:
    """Why a function was not compared with its base version."""

    reason: str
    error: bool = False
    """A failure to report as an error (the checked version does not load) rather than a
    function left out."""
    unchanged: bool = False
    """The function and its module context have the base's syntax tree: nothing to compare."""
    seeds: int = 0


@dataclass(frozen=True, slots=True)
class Side:
    """One version of the function's module."""

    text: str
    node: ast.FunctionDef | ast.AsyncFunctionDef
    revision: str
    module: ModuleName | None
    """How an import reaches the module (``None``: no import does: its code runs as it)."""


@dataclass(frozen=True, slots=True)
class Pair:
    """Both versions of one function, ready to load."""

    target: Target
    head: Side
    base: Side

    @property
    def names(self) -> list[str]:
        """The head's positional parameters."""
        a = self.head.node.args
        return [x.arg for x in (*a.posonlyargs, *a.args)]


def read_source(path: Path) -> str | None:
    """A module's text (``None``: it cannot be read as UTF-8)."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _module_function(tree: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    found = None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            found = node  # the last definition wins, as in Python
    return found


def _parse(text: str) -> ast.Module | str:
    """The module's tree, or why it does not parse on this Python."""
    try:
        return ast.parse(text)
    except SyntaxError as e:
        where = f" (line {e.lineno})" if e.lineno else ""
        return f"{e.msg}{where}"
    except ValueError as e:
        return str(e)


def python_version() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def pair(target: Target, copies: Copies) -> Pair | NotCompared:
    """Both versions of ``target`` (see the module docstring)."""
    path, qualname = target.path, target.qualname
    if "." in qualname:
        return NotCompared("only module-level functions are compared with their base")
    head_text = read_source(copies.head / path)
    head_tree = _parse(head_text) if head_text is not None else None
    head_fn = _module_function(head_tree, qualname) if isinstance(head_tree, ast.Module) else None
    if head_text is None or head_fn is None:
        return NotCompared(f"{qualname} is not a module-level function of {path}")
    shape = target.shape or _shape(head_fn)
    if KINDS[shape].comparing is not Comparing.VALUES:
        return NotCompared(_NOT_YET.get(shape, f"a {shape} is not compared with its base"))
    if copies.base is None or copies.base_sha is None:
        return NotCompared("there is no base revision")
    base_text = read_source(copies.base / path)
    if base_text is None:
        return NotCompared(f"new file (no base version of {path})")
    base_tree = _parse(base_text)
    if isinstance(base_tree, str):
        return NotCompared(f"the base does not parse on Python {python_version()}: {base_tree}")
    base_fn = _module_function(base_tree, qualname)
    if base_fn is None:
        return NotCompared("new function (no base version)")
    if ast.dump(base_fn) == ast.dump(head_fn) and module_context(
        base_text, qualname
    ) == module_context(head_text, qualname):
        return NotCompared(
            "unchanged since the base (the same syntax tree: function and module context)",
            unchanged=True,
        )
    return Pair(
        target,
        Side(head_text, head_fn, copies.head_revision, import_name(path, copies.head)),
        Side(base_text, base_fn, copies.base_sha, import_name(path, copies.base)),
    )


def _shape(node: ast.FunctionDef | ast.AsyncFunctionDef) -> TargetKind:
    from utdebug.engine.target_kinds import classify

    return classify(node, in_class=False).kind
