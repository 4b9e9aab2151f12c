"""The parent's stand-ins for values the sandbox reports by structure (objects, enum members,
records, exceptions) or could not encode, and how any decoded value is rendered for reports
(:func:`describe`)."""

from __future__ import annotations

import builtins
import math
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Opaque:
    """A return value the child could not encode as plain data (a ``re.Match``, an object).

    It never equals an expected value; only checks that ignore the value (the dataset helper
    of MBPP 737/794) can pass it.
    """

    type_name: str
    text: str


def _same_type(module_a: str, name_a: str, module_b: str, name_b: str) -> bool:
    """Same qualified class name; an empty module (an expected value read from source, which
    knows the class but not the module it will be imported as) matches any module."""
    return name_a == name_b and (module_a == module_b or not module_a or not module_b)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Structured:
    """An instance of a class the parent does not have (a dataclass, an attrs class, an
    object with ``__dict__`` or ``__slots__``), as the sandbox read it: its class's
    qualified name and its fields, in the class's order.

    Immutable; equal to another ``Structured`` of the same class name with the same fields
    (in any order), hashable when its field values are. ``module`` is empty when unknown
    (an expected value read from source): it then matches any module. A class's own
    ``__eq__`` plays no part: objects compare by their fields.
    """

    name: str
    """The class's qualified name (``Point``, ``Outer.Point``)."""
    fields: tuple[tuple[str, Any], ...]
    module: str = ""
    """The class's module (``pkg.shapes``), or "" when not known."""
    _key: tuple[tuple[str, Any], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_key", tuple(sorted(self.fields, key=lambda kv: kv[0])))

    @property
    def type(self) -> str:
        """``module.qualname`` (just the qualname when the module is not known)."""
        return f"{self.module}.{self.name}" if self.module else self.name

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Structured):
            return NotImplemented
        if not _same_type(self.module, self.name, other.module, other.name):
            return False
        return self._key == other._key

    def __hash__(self) -> int:
        return hash((self.name, self._key))

    def __repr__(self) -> str:
        return _render(self)


class _NoValue:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<no value>"


_NO_VALUE: Any = _NoValue()


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class EnumMember:
    """A member of an enum class the parent does not have: ``Color.RED`` is
    ``EnumMember("Color", "RED")``. Equal to a member of the same name of the same class
    (by qualified name; an empty ``module`` matches any). An enum that is also an int or a str
    (``IntEnum``, ``StrEnum``, ``IntFlag``) is reported as its value instead, as it compares
    in Python."""

    name: str
    """The enum class's qualified name."""
    member: str
    module: str = ""
    value: Any = field(default=_NO_VALUE, compare=False)
    """The member's value as the sandbox read it (absent for a member read from source)."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EnumMember):
            return NotImplemented
        same = _same_type(self.module, self.name, other.module, other.name)
        if not same or self.member != other.member:
            return False
        if self.value is _NO_VALUE or other.value is _NO_VALUE:
            return True
        try:
            return bool(self.value == other.value)
        except Exception:
            return False

    def __hash__(self) -> int:
        return hash((self.name, self.member))

    def __repr__(self) -> str:
        return f"{self.name}.{self.member}"


@dataclass(frozen=True, slots=True)
class SourceFunction:
    """A function passed as an input, re-created in the child from its source, never evaluated
    in the parent: a lambda (``source`` its text, ``name`` ``<lambda>``), a ``def`` (its
    source, run in a copy of the module's namespace, and its name), or a function looked up
    by its dotted ``name`` (``source`` empty) in the module under test, else in ``module``,
    else among the builtins."""

    source: str
    name: str
    module: str = ""

    def __repr__(self) -> str:
        return self.source if self.name == "<lambda>" else self.name


ITER_FORMS = ("iter", "gen", "range")


@dataclass(frozen=True, slots=True)
class IterOf:
    """An iterator passed as an input, made in the child from a list of ``items``: ``iter``
    (``iter([...])``), ``gen`` (a generator, ``(x for x in [...])``) or ``range`` (``items``
    are ``range``'s arguments)."""

    form: str
    items: tuple[Any, ...]

    def __repr__(self) -> str:
        inner = ", ".join(_render(x) for x in self.items)
        if self.form == "range":
            return f"range({inner})"
        if self.form == "gen":
            return f"(x for x in [{inner}])"
        return f"iter([{inner}])"


class Record(tuple):  # type: ignore[type-arg]
    """A namedtuple: a tuple (it compares, hashes and iterates as one, as a namedtuple does
    in Python) that also knows its class's name and field names, for display."""

    record_name: str
    record_module: str
    record_fields: tuple[str, ...]

    def __new__(cls, items: Any, name: str, fields: tuple[str, ...], module: str = "") -> Record:
        self = super().__new__(cls, items)
        if len(fields) != len(self):
            raise ValueError("a record needs one field name per item")
        self.record_name, self.record_module, self.record_fields = name, module, tuple(fields)
        return self

    def __repr__(self) -> str:
        return _render(self)

    def __reduce__(self) -> Any:
        return (Record, (tuple(self), self.record_name, self.record_fields, self.record_module))


def exception_satisfies(
    builtin: Sequence[str], classes: Sequence[tuple[str, str]], name: str
) -> bool:
    """Whether an exception whose class has the builtin exception classes ``builtin`` (by
    identity, as the sandbox's runner found them in its MRO) and the other classes
    ``classes`` (module, qualified name) satisfies "raises ``name``", as ``except name``
    would: a builtin name (``KeyError``, ``LookupError``) only by identity, any other
    (``InsufficientFunds``, ``json.JSONDecodeError``) by the last part of a class's
    qualified name (a class is often raised from a module other than the one that exports
    it). A module's own class named like a builtin satisfies no builtin name."""
    module, _, last = name.rpartition(".")
    known = getattr(builtins, last, None)
    if not module and isinstance(known, type) and issubclass(known, BaseException):
        return last in builtin
    return any(qual.rpartition(".")[2] == last for _, qual in classes)


@dataclass(frozen=True, slots=True)
class ExceptionValue:
    """An exception object a program returned (or a test recorded), as the sandbox read it:
    its class's name and message, the builtin exception classes of its MRO (by identity)
    and its other classes (module, qualified name). Equal to another with the same classes
    and message."""

    type_name: str
    message: str
    builtin: tuple[str, ...]
    classes: tuple[tuple[str, str], ...]

    def satisfies(self, name: str) -> bool:
        return exception_satisfies(self.builtin, self.classes, name)

    def __repr__(self) -> str:
        return f"{self.type_name}({self.message!r})"


@dataclass(frozen=True, slots=True)
class ByRepr:
    """An expected value known only by its source text (``re.compile('a+')``), which the
    parent cannot read structurally: a result the sandbox could not encode either
    (an :class:`Opaque`) is compared with it by its repr."""

    text: str

    def __repr__(self) -> str:
        return self.text


def stand_in(type_name: str, text: str, parts: tuple[Any, ...] | None = None) -> Any:
    """The parent's value for what the sandbox reports of an object: an :class:`Opaque`
    (``parts`` None), or an :class:`EnumMember`, :class:`Structured` or :class:`Record`."""
    if parts is None:
        return Opaque(type_name, text)
    if parts[0] == "exc":
        return ExceptionValue(type_name, text, parts[1], parts[2])
    kind, module, name = parts[0], parts[1], parts[2]
    if kind not in ("enum", "obj", "record"):  # an input form ($fn, $iter): never a result
        raise ValueError(f"a {str(kind)[:20]} cannot be a result")
    if kind == "enum":
        if len(parts) > 4:
            return EnumMember(name, parts[3], module, parts[4])
        return EnumMember(name, parts[3], module)
    if kind == "obj":
        return Structured(name, parts[3], module)
    return Record(parts[4], name, parts[3], module)


# ---------------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------------


def _int_repr(value: int) -> str:
    try:
        return repr(value)
    except ValueError:  # more digits than sys.get_int_max_str_digits() allows
        digits = int(abs(value).bit_length() * math.log10(2)) + 1
        return f"<int with about {digits} digits>"


_FIELDS_TEXT = 10_000
"""Characters of fields rendered for one structural value before the rest is left out."""


class _Full(Exception):
    """The rendering has reached its cap: stop walking the value."""


class _Shown(str):
    """A set's item already rendered (by :func:`_set_items`)."""


def _set_items(items: Collection[object], cap: int | None) -> list[object]:
    """A set's items in the order of their rendered text (as ``canonical_repr`` writes them:
    Python's order for a set of strings changes with the string-hash seed, a report must not).
    Past ``cap`` characters the rest stay unrendered, in Python's order: the text is cut there
    anyway."""
    shown: list[str] = []
    used = 0
    for n, x in enumerate(items):
        try:
            text = _render(x, None if cap is None else max(0, cap - used))
        except _Full:
            return [*(_Shown(t) for t in shown), *list(items)[n:]]
        shown.append(text)
        used += len(text) + 2
        if cap is not None and used > cap:
            return [*(_Shown(t) for t in shown), *list(items)[n + 1 :]]
    return [_Shown(t) for t in sorted(shown)]


def _render(value: object, cap: int | None = None) -> str:
    """``repr`` with nested :class:`Opaque` shown as their text, structural values as
    ``Name(a=1, b=2)`` and huge ints summarised; with ``cap``, rendering stops (raising
    :class:`_Full` with what it has) once the text is longer than ``cap``, so a huge value costs
    what is shown, not its whole size. One structural value's fields stop (``…``) once their
    text passes ``_FIELDS_TEXT`` characters, with or without ``cap``."""
    parts: list[str] = []
    size = [0]

    def put(text: str) -> None:
        parts.append(text)
        size[0] += len(text)
        if cap is not None and size[0] > cap:
            raise _Full

    def fields(name: str, pairs: Iterable[tuple[str, Any]]) -> None:
        put(f"{name}(")
        begin = size[0]
        for k, (key, item) in enumerate(pairs):
            if k:
                put(", ")
            if size[0] - begin > _FIELDS_TEXT:
                put("…")
                break
            put(f"{key}=")
            walk(item)
        put(")")

    def walk(v: object) -> None:
        if isinstance(v, Opaque):
            return put(v.text)
        if isinstance(v, Structured):
            return fields(v.name, v.fields)
        if isinstance(v, EnumMember):
            return put(f"{v.name}.{v.member}")
        if isinstance(v, Record):
            return fields(v.record_name, zip(v.record_fields, v, strict=False))
        t = type(v)
        if t is int:
            return put(_int_repr(v))  # type: ignore[arg-type]
        if t is list or t is tuple or t is set or t is frozenset:
            items: Collection[object] = v  # type: ignore[assignment]
            if t is list:
                put("[")
            elif t is tuple:
                put("(")
            elif not items:
                return put(f"{t.__name__}()")
            else:
                put("{" if t is set else "frozenset({")
                items = _set_items(items, None if cap is None else cap - size[0])
            for k, x in enumerate(items):
                if k:
                    put(", ")
                if type(x) is _Shown:
                    put(x)
                else:
                    walk(x)
            if t is tuple and len(items) == 1:
                put(",")
            return put("]" if t is list else ")" if t is tuple else "}" if t is set else "})")
        if t is dict:
            put("{")
            for k, (key, x) in enumerate(v.items()):  # type: ignore[attr-defined]
                if k:
                    put(", ")
                walk(key)
                put(": ")
                walk(x)
            return put("}")
        return put(repr(v))

    try:
        walk(value)
    except _Full:
        raise _Full("".join(parts)) from None
    return "".join(parts)


def describe(value: object, limit: int = 2000) -> str:
    """A ``repr`` of ``value`` for reports and feedback, at most ``limit`` characters.

    An :class:`Opaque` (also nested) renders as its ``text``; ints too long for ``repr``
    (``sys.set_int_max_str_digits``) render as ``<int with about N digits>``. A longer text is
    cut and ends with ``… (N chars)``, N being the full length, or ``… (more than N chars)``
    when rendering stopped early: a huge value is rendered only as far as it is shown.
    Never raises.
    """
    try:
        text = _render(value, limit)
    except _Full as full:
        text = str(full.args[0])
        marker = f"… (more than {len(text)} chars)"
        return text[: max(0, limit - len(marker))] + marker
    except Exception as exc:  # RecursionError for absurd nesting, a failing repr, ...
        text = f"<{type(value).__name__}: repr failed: {type(exc).__name__}>"
    if len(text) <= limit:
        return text
    marker = f"… ({len(text)} chars)"
    return text[: max(0, limit - len(marker))] + marker
