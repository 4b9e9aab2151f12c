"""What a value is, for the synthesiser: its kind, whether it can cross into the sandbox as an
input, a stable key, a size and a text that does not depend on the process's hash seed.

Nothing here runs code under test: every function reads values built in this process (seeds
read with :mod:`ast`, values generated here).
"""

from __future__ import annotations

import datetime as _dt
from decimal import Decimal
from fractions import Fraction
from typing import Any

from utdebug.literals import canonical_repr
from utdebug.sandbox._runner import MAX_NAME, MAX_SOURCE
from utdebug.sandbox.frames import encode_inputs
from utdebug.sandbox.values import EnumMember, IterOf, SourceFunction

__all__ = [
    "CONTAINER_KINDS",
    "ITERATOR_KINDS",
    "NUMBER_KINDS",
    "TEXT_KINDS",
    "Unencodable",
    "canonical",
    "check_encodable",
    "cost_order",
    "input_key",
    "iterator_of",
    "kind_of",
    "magnitude_of",
    "size_of",
    "sorted_items",
]

NUMBER_KINDS = frozenset({"int", "float", "decimal", "fraction"})
TEXT_KINDS = frozenset({"str", "bytes"})
CONTAINER_KINDS = frozenset({"list", "tuple", "set", "frozenset", "dict"})
TIME_KINDS = frozenset({"date", "datetime", "time", "timedelta"})
ITERATOR_KINDS = frozenset({"iterator", "generator"})
"""Iterators made in the child from a list (``iter([...])``, ``(x for x in [...])``): their
items are read as a list's."""
_ITER_KINDS = {"iter": "iterator", "gen": "generator", "range": "range"}
_ITER_FORMS = {kind: form for form, kind in _ITER_KINDS.items()}

_KINDS: dict[type, str] = {
    type(None): "none",
    bool: "bool",
    int: "int",
    float: "float",
    complex: "complex",
    str: "str",
    bytes: "bytes",
    list: "list",
    tuple: "tuple",
    set: "set",
    frozenset: "frozenset",
    dict: "dict",
    _dt.date: "date",
    _dt.datetime: "datetime",
    _dt.time: "time",
    _dt.timedelta: "timedelta",
    Decimal: "decimal",
    Fraction: "fraction",
    EnumMember: "enum",
    SourceFunction: "callable",
}

MAX_DEPTH = 40
"""Deepest nesting the synthesiser builds or accepts (the sandbox's codec allows 100)."""


class Unencodable(ValueError):
    """A value that cannot be an input of a sandboxed call (the message says why)."""


def kind_of(value: object) -> str:
    """The value's kind: its exact type's name among the plain and standard-library value types,
    ``enum`` (a member re-created in the child), ``callable`` (a function by its source or
    name), ``iterator``, ``generator`` or ``range`` (made in the child from a list), else
    ``other:<type name>`` (a subclass is not its base: ``True`` is ``bool``, not ``int``)."""
    kind = _KINDS.get(type(value))
    if kind is not None:
        return kind
    if type(value) is IterOf:
        return _ITER_KINDS.get(value.form, "other:IterOf")
    return f"other:{type(value).__name__}"


def iterator_of(kind: str, items: Any) -> IterOf:
    """An iterator input of ``kind`` (``iterator``, ``generator``, ``range``) over ``items``."""
    return IterOf(_ITER_FORMS[kind], tuple(items))


def check_encodable(args: tuple[Any, ...]) -> None:
    """Raise :class:`Unencodable` unless ``args`` can be sent to a sandboxed call: only the
    kinds of :func:`kind_of` (no ``other``), nested at most :data:`MAX_DEPTH` levels, no cycle,
    hashable set members and dict keys, and the sandbox's own encoder accepts it."""
    _walk_encodable(args, 0, set())
    try:
        encode_inputs([args])
    except Exception as exc:  # the codec's EncodeError, RecursionError ...
        raise Unencodable(f"the sandbox cannot encode it: {type(exc).__name__}: {exc}") from None


def _walk_encodable(value: object, depth: int, active: set[int]) -> None:
    if depth > MAX_DEPTH:
        raise Unencodable(f"nested deeper than {MAX_DEPTH} levels")
    kind = kind_of(value)
    if kind.startswith("other:"):
        raise Unencodable(f"a {type(value).__name__} is not plain data")
    if kind == "float" or kind == "complex":
        return
    if kind in ("enum", "callable") and not _names_fit(value):
        raise Unencodable(f"a {kind} whose name or source is too long to send")
    if kind == "range" and not (
        1 <= len(value.items) <= 3 and all(type(x) is int for x in value.items)  # type: ignore[attr-defined]
    ):
        raise Unencodable("a range takes one to three ints")
    if kind in ITERATOR_KINDS:
        for item in value.items:  # type: ignore[attr-defined]
            _walk_encodable(item, depth + 1, active)
    if kind in CONTAINER_KINDS:
        if id(value) in active:
            raise Unencodable("a container that contains itself")
        active.add(id(value))
        items: list[Any] = (
            [x for kv in value.items() for x in kv] if isinstance(value, dict) else list(value)  # type: ignore[call-overload]
        )
        for item in items:
            _walk_encodable(item, depth + 1, active)
        active.discard(id(value))
    if kind == "datetime" or kind == "time":
        tz = value.tzinfo  # type: ignore[attr-defined]
        if tz is not None and not isinstance(tz, _dt.timezone):
            raise Unencodable("only fixed-offset time zones cross into the sandbox")


def _names_fit(value: Any) -> bool:
    """Whether an enum member's or a function's names (and source) fit the sandbox's codec."""
    if isinstance(value, EnumMember):
        names = (value.name, value.member)
        return all(0 < len(n) <= MAX_NAME for n in names) and len(value.module) <= MAX_NAME
    return (
        0 < len(value.name) <= MAX_NAME
        and len(value.module) <= MAX_NAME
        and len(value.source) <= MAX_SOURCE
    )


def canonical(value: object) -> str:
    """``repr`` with sets written in a sorted order: the same text in every process."""
    return canonical_repr(value)


def input_key(args: tuple[Any, ...]) -> str:
    """A key that tells inputs apart by type as well as value (``1``, ``1.0`` and ``True``
    differ; so do ``0.0`` and ``-0.0``), the same in every process."""
    return _key(args, 0)


def _key(value: object, depth: int) -> str:
    kind = kind_of(value)
    if depth > MAX_DEPTH:
        return kind + ":..."
    if kind == "float":
        f = float(value)  # type: ignore[arg-type]
        return "f:" + repr(f)
    if kind in ("list", "tuple"):
        return kind + "[" + ",".join(_key(x, depth + 1) for x in value) + "]"  # type: ignore[attr-defined]
    if kind in ITERATOR_KINDS or kind == "range":
        return kind + "[" + ",".join(_key(x, depth + 1) for x in value.items) + "]"  # type: ignore[attr-defined]
    if kind in ("set", "frozenset"):
        return kind + "{" + ",".join(sorted(_key(x, depth + 1) for x in value)) + "}"  # type: ignore[attr-defined]
    if kind == "dict":
        pairs = (_key(k, depth + 1) + ":" + _key(v, depth + 1) for k, v in value.items())  # type: ignore[attr-defined]
        return "dict{" + ",".join(pairs) + "}"
    return kind + ":" + repr(value)


def size_of(value: object, _depth: int = 0) -> int:
    """How big an input is, for "smallest first": 1 per scalar, plus lengths of text and
    containers, plus the digits of large numbers."""
    if _depth > MAX_DEPTH:
        return 1
    if isinstance(value, (str, bytes)):
        return 1 + len(value)
    if isinstance(value, bool) or value is None:
        return 1
    if isinstance(value, int):
        return 1 + max(0, (abs(value).bit_length() - 4) // 3)
    if isinstance(value, float):
        return 1 if value.is_integer() else 2
    if isinstance(value, dict):
        return 1 + sum(size_of(k, _depth + 1) + size_of(v, _depth + 1) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return 1 + sum(size_of(x, _depth + 1) for x in value)
    if isinstance(value, IterOf):
        return 1 + sum(size_of(x, _depth + 1) for x in value.items)
    if isinstance(value, EnumMember):
        return 1
    return 2


def magnitude_of(value: object, _depth: int = 0) -> float:
    """The sum of the absolute values of the numbers inside ``value`` (lengths count as
    numbers too): among inputs of one size, the smaller ones usually cost less to run."""
    if _depth > MAX_DEPTH:
        return 0.0
    if isinstance(value, bool) or value is None:
        return 0.0
    if isinstance(value, int):
        return float(min(abs(value), 10**300))
    if isinstance(value, float):
        return abs(value) if value == value else 0.0
    if isinstance(value, (str, bytes)):
        return float(len(value))
    if isinstance(value, dict):
        return len(value) + sum(magnitude_of(v, _depth + 1) for v in value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return len(value) + sum(magnitude_of(x, _depth + 1) for x in value)
    if isinstance(value, IterOf):
        return magnitude_of(list(value.items), _depth)
    return 0.0


def cost_order(inputs: list[tuple[Any, ...]]) -> list[int]:
    """Indices of ``inputs``, the likely cheapest first: by :func:`size_of`, then by
    :func:`magnitude_of`."""
    return sorted(range(len(inputs)), key=lambda i: (size_of(inputs[i]), magnitude_of(inputs[i])))


def sorted_items(value: set[Any] | frozenset[Any]) -> list[Any]:
    """A set's items in an order that does not depend on the process's hash seed."""
    return sorted(value, key=lambda x: _key(x, 1))
