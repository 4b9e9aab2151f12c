"""Which definitions of a module ``utdebug check`` reports, and which of them a change touches.

:func:`definitions` lists every function and class member of a parsed module with its lines,
its kind (:func:`utdebug.engine.targets.classify`) and, when the loader (:mod:`utdebug.workspace`)
cannot reach it, why: methods of nested classes and functions defined inside a module-level
``if``/``try``/... block. :func:`touched` keeps the ones a change's lines touch.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from utdebug.engine.targets import Def, classify, first_line

__all__ = ["ChangedFunction", "definitions", "touched"]

_NESTED_CLASS_REASON = (
    "methods of nested classes are not supported: debug a method of a module-level class "
    "or a module-level function"
)


@dataclass(frozen=True, slots=True)
class ChangedFunction:
    """A function (or class member) that the change touches."""

    path: str
    """Repository-relative, ``/`` separators."""
    qualname: str
    """``f`` or ``Class.method`` (``Outer.Inner.method`` for nested classes)."""
    line: int
    """First line, decorators included (1-based), in the checked revision's file."""
    end_line: int
    kind: str
    """``function``, ``staticmethod``, ``method``, ``classmethod``, ``async`` or ``property``
    (:attr:`utdebug.engine.targets.Classified.label`)."""
    supported: bool
    """Whether ``utdebug`` can load it (see :mod:`utdebug.workspace`)."""
    reason: str | None
    """Why it is not supported, and what to do; ``None`` when supported."""


def touched(
    found: list[ChangedFunction], lines: list[tuple[int, int]] | None
) -> list[ChangedFunction]:
    """The definitions the changed ``lines`` touch (``None``: a new file, all of them)."""
    hits = [
        d for d in found if lines is None or any(a <= d.end_line and b >= d.line for a, b in lines)
    ]
    # One entry per name: the loadable definition when there is one, else the first.
    best: dict[str, ChangedFunction] = {}
    for d in hits:
        kept = best.get(d.qualname)
        if kept is None or (d.supported and not kept.supported):
            best[d.qualname] = d
    return sorted(best.values(), key=lambda d: (d.line, d.qualname))


_BLOCKS: dict[type[ast.stmt], str] = {
    ast.If: "if",
    ast.For: "for",
    ast.AsyncFor: "async for",
    ast.While: "while",
    ast.With: "with",
    ast.AsyncWith: "async with",
    ast.Try: "try",
    ast.TryStar: "try",
    ast.Match: "match",
}


def _sub_bodies(node: ast.stmt) -> list[list[ast.stmt]]:
    bodies: list[list[ast.stmt]] = []
    for field in ("body", "orelse", "finalbody"):
        value = getattr(node, field, None)
        if isinstance(value, list):
            bodies.append(value)
    for handler in getattr(node, "handlers", []):
        bodies.append(handler.body)
    for case in getattr(node, "cases", []):
        bodies.append(case.body)
    return bodies


def _shadowed(body: list[ast.stmt], index: int, name: str) -> bool:
    """Whether a later ``def``/``class`` in ``body`` rebinds ``name`` (the loader takes it)."""
    return any(
        isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.name == name
        for n in body[index + 1 :]
    )


def _span(node: Def) -> tuple[int, int]:
    return first_line(node), node.end_lineno or node.lineno


def definitions(tree: ast.Module, path: str) -> list[ChangedFunction]:
    """Every reportable definition of the module (shadowed ones left out)."""
    found: list[ChangedFunction] = []

    def add(node: Def, qualname: str, kind: str, reason: str | None) -> None:
        line, end = _span(node)
        found.append(ChangedFunction(path, qualname, line, end, kind, reason is None, reason))

    def block_reason(block: str) -> str:
        return (
            f"functions defined inside {block} are not supported: define it at module level "
            f"(a function, or a method of a module-level class)"
        )

    def module_body(body: list[ast.stmt], block: str | None) -> None:
        for index, node in enumerate(body):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if block is None and _shadowed(body, index, node.name):
                    continue
                reason = block_reason(block) if block else None
                add(node, node.name, classify(node, in_class=False).label, reason)
            elif isinstance(node, ast.ClassDef):
                if block is None and _shadowed(body, index, node.name):
                    continue
                class_body(node.body, f"{node.name}.", 0, block)
            elif type(node) in _BLOCKS:
                for sub in _sub_bodies(node):
                    module_body(sub, block or f"a module-level `{_BLOCKS[type(node)]}` block")

    def class_body(body: list[ast.stmt], prefix: str, depth: int, block: str | None) -> None:
        for index, node in enumerate(body):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if _shadowed(body, index, node.name):
                    continue
                reason = None
                if block is not None:  # a member the loader cannot see
                    reason = block_reason(block)
                elif depth > 0:
                    reason = _NESTED_CLASS_REASON
                add(node, prefix + node.name, classify(node, in_class=True).label, reason)
            elif isinstance(node, ast.ClassDef):
                if _shadowed(body, index, node.name):
                    continue
                class_body(node.body, f"{prefix}{node.name}.", depth + 1, block)
            elif type(node) in _BLOCKS:
                for sub in _sub_bodies(node):
                    inner = block or f"an `{_BLOCKS[type(node)]}` block of a class body"
                    class_body(sub, prefix, depth, inner)

    module_body(tree.body, None)
    return found
