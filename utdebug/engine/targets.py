"""What kind of definition a target is: the one table of target kinds and its classifier.

:func:`classify` decides the kind of a ``def`` once, from its syntax; the loader
(:mod:`utdebug.workspace`), the change finder of ``utdebug check``
(:mod:`utdebug.check.definitions`) and the test admission (:mod:`utdebug.engine.admission`)
all use it. Every kind is supported.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "Classified",
    "Def",
    "TargetKind",
    "classify",
    "decorator_names",
    "first_line",
    "is_generator",
    "is_property_getter",
]

Def = ast.FunctionDef | ast.AsyncFunctionDef


class TargetKind(StrEnum):
    """Everything a test can call from outside. A method's kind says how it is bound; an async
    or generator method is ``async method`` / ``generator``."""

    FUNCTION = "function"
    ASYNC_FUNCTION = "async function"
    GENERATOR = "generator"
    ASYNC_GENERATOR = "async generator"
    METHOD = "method"
    ASYNC_METHOD = "async method"
    CLASSMETHOD = "classmethod"
    STATICMETHOD = "staticmethod"
    PROPERTY = "property"


GETTERS = frozenset({"property", "cached_property", "abstractproperty"})
"""Decorators that make a property (its getter)."""
ACCESSORS = frozenset({"setter", "getter", "deleter"})
"""``@name.setter`` and the like: the rest of a property."""


@dataclass(frozen=True, slots=True)
class Classified:
    """A definition's kind and the facts it was decided from."""

    kind: TargetKind
    is_async: bool
    is_generator: bool
    in_class: bool

    @property
    def literal_args(self) -> bool:
        """Whether a plain call with literal arguments can test it (a synchronous function or
        staticmethod that returns; the loader also asks that it takes no objects)."""
        plain = not self.is_async and not self.is_generator
        return plain and self.kind in (TargetKind.FUNCTION, TargetKind.STATICMETHOD)

    @property
    def label(self) -> str:
        """The word ``utdebug check`` reports: ``function``, ``method``, ``staticmethod``,
        ``classmethod``, ``property`` or ``async`` (any ``async def``)."""
        if self.is_async:
            return "async"
        if self.kind is TargetKind.GENERATOR:
            return "method" if self.in_class else "function"
        return self.kind.value


def decorator_names(node: Def) -> set[str]:
    """The last names of ``node``'s decorators (``functools.cache(...)``: ``cache``)."""
    out = set()
    for d in node.decorator_list:
        if isinstance(d, ast.Call):
            d = d.func
        if isinstance(d, ast.Name):
            out.add(d.id)
        elif isinstance(d, ast.Attribute):
            out.add(d.attr)
    return out


def first_line(node: Def) -> int:
    """The definition's first line, its decorators included (1-based)."""
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def is_property_getter(node: Def) -> bool:
    """Whether ``node`` is a property's getter (not its setter or deleter)."""
    return bool(decorator_names(node) & GETTERS)


def is_generator(node: Def) -> bool:
    """Whether a function's own body (not a nested function's or class's) yields."""
    todo: list[ast.AST] = list(node.body)
    while todo:
        n = todo.pop()
        if isinstance(n, Def | ast.ClassDef | ast.Lambda):
            continue
        if isinstance(n, ast.Yield | ast.YieldFrom):
            return True
        todo.extend(ast.iter_child_nodes(n))
    return False


def classify(node: Def, *, in_class: bool) -> Classified:
    """The kind of ``node``, a module-level function (``in_class=False``) or a member of a
    class body."""
    is_async = isinstance(node, ast.AsyncFunctionDef)
    gen = is_generator(node)
    if gen:
        kind = TargetKind.ASYNC_GENERATOR if is_async else TargetKind.GENERATOR
    else:
        kind = TargetKind.ASYNC_FUNCTION if is_async else TargetKind.FUNCTION
    if in_class:
        names = decorator_names(node)
        accessor = any(
            isinstance(d, ast.Attribute) and d.attr in ACCESSORS for d in node.decorator_list
        )
        if names & GETTERS or accessor:
            kind = TargetKind.PROPERTY
        elif "staticmethod" in names:
            kind = TargetKind.STATICMETHOD
        elif "classmethod" in names:
            kind = TargetKind.CLASSMETHOD
        elif kind is TargetKind.FUNCTION:
            kind = TargetKind.METHOD
        elif kind is TargetKind.ASYNC_FUNCTION:
            kind = TargetKind.ASYNC_METHOD
    return Classified(kind, is_async, gen, in_class)
