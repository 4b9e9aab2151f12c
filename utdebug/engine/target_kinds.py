"""What kind of definition a target is: the one table of target kinds and its classifier.

:func:`classify` decides the kind of a ``def`` once, from its syntax; the loader
(:mod:`utdebug.workspace`), the change finder of ``utdebug check``
(:mod:`utdebug.check.definitions`) and the test admission (:mod:`utdebug.engine.admission`)
all use it. :data:`KINDS` holds what the rest needs to know of a kind (how a test reaches it,
whether literal arguments can test it, how ``check`` compares it with its base, the word
reports use), so no module tests a kind by name. Every kind is supported; a new one is a
member, its row and its case in :func:`classify`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "KINDS",
    "Binding",
    "Classified",
    "Comparing",
    "Def",
    "KindRow",
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


class Binding(StrEnum):
    """How a test reaches a definition of the kind."""

    PLAIN = "plain"
    """Called; in a class, bound to the object it is called on (its first parameter)."""
    CLASS = "class"
    """Called; bound to the class, whether called through the class or an object."""
    STATIC = "static"
    """Called; never bound."""
    READ = "read"
    """Read as an attribute, not called (a property)."""


class Comparing(StrEnum):
    """How ``utdebug check`` compares a module-level definition of the kind with its base."""

    VALUES = "values"
    """Calls with the same inputs, their values compared (:mod:`utdebug.check.differ`)."""
    MEMBERS = "members"
    """As a member: call sequences on receivers, awaited or consumed in the child
    (:mod:`utdebug.check.members`; every definition in a class is compared so)."""


@dataclass(frozen=True, slots=True)
class KindRow:
    """What the engine and the front ends need to know of a target kind."""

    kind: TargetKind
    binding: Binding
    literal_args: bool
    """A plain call with literal arguments can test it when it is synchronous and returns (the
    loader also asks that it takes no objects); otherwise its tests need a setup."""
    comparing: Comparing
    word: str
    """The word ``utdebug check`` reports for a synchronous definition (``method`` for a
    generator in a class)."""


KINDS: dict[TargetKind, KindRow] = {
    row.kind: row
    for row in (
        KindRow(TargetKind.FUNCTION, Binding.PLAIN, True, Comparing.VALUES, "function"),
        KindRow(TargetKind.ASYNC_FUNCTION, Binding.PLAIN, False, Comparing.MEMBERS, "function"),
        KindRow(TargetKind.GENERATOR, Binding.PLAIN, False, Comparing.MEMBERS, "function"),
        KindRow(TargetKind.ASYNC_GENERATOR, Binding.PLAIN, False, Comparing.MEMBERS, "function"),
        KindRow(TargetKind.METHOD, Binding.PLAIN, False, Comparing.MEMBERS, "method"),
        KindRow(TargetKind.ASYNC_METHOD, Binding.PLAIN, False, Comparing.MEMBERS, "method"),
        KindRow(TargetKind.CLASSMETHOD, Binding.CLASS, False, Comparing.MEMBERS, "classmethod"),
        KindRow(TargetKind.STATICMETHOD, Binding.STATIC, True, Comparing.MEMBERS, "staticmethod"),
        KindRow(TargetKind.PROPERTY, Binding.READ, False, Comparing.MEMBERS, "property"),
    )
}
"""Every target kind's row, in :class:`TargetKind`'s order."""


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
    def row(self) -> KindRow:
        """What the rest needs to know of its kind (:data:`KINDS`)."""
        return KINDS[self.kind]

    @property
    def literal_args(self) -> bool:
        """Whether a plain call with literal arguments can test it (a kind that allows it,
        synchronous and returning; the loader also asks that it takes no objects)."""
        plain = not self.is_async and not self.is_generator
        return plain and self.row.literal_args

    @property
    def label(self) -> str:
        """The word ``utdebug check`` reports: ``function``, ``method``, ``staticmethod``,
        ``classmethod``, ``property`` or ``async`` (any ``async def``)."""
        if self.is_async:
            return "async"
        word = self.row.word
        return "method" if self.in_class and word == "function" else word


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
