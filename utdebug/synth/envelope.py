"""The envelope of a set of inputs: what kinds each argument had, their value ranges, lengths
and character classes, nested through containers. Learned from example inputs, stated in text
(:meth:`Envelope.describe`), tested (:meth:`Envelope.contains`) and widened into the bounds the
synthesiser emits within (:meth:`Envelope.widened`).

An envelope is a conjunction of per-position bounds; it knows nothing about relations between
arguments (``i < len(xs)``), which only the references can judge (validity).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any

from utdebug.synth.values import ITERATOR_KINDS, MAX_DEPTH, TIME_KINDS, kind_of, sorted_items

__all__ = ["CHAR_CLASSES", "Envelope", "KindEnvelope", "Node", "char_class"]

CHAR_CLASSES = ("lower", "upper", "digit", "space", "punct", "control", "non-ascii")
_CLASS_CHARS = {
    "lower": string.ascii_lowercase,
    "upper": string.ascii_uppercase,
    "digit": string.digits,
    "space": " \t\n",
    "punct": string.punctuation,
}

SAMPLES = 32
_SAMPLED = frozenset(
    {"int", "float", "str", "bytes", "decimal", "fraction", "date", "datetime", "time", "timedelta"}
    | {"enum", "callable", "range"}
)
_SEQUENCES = frozenset({"list", "set", "frozenset", "tuple"}) | ITERATOR_KINDS
"""Kinds whose items are one node of elements (an iterator's: the list it is made from)."""

EXACT_AT = 8
"""A number seen at least this many times at one place (a list's elements) keeps its range in
the core widening: many examples bound it well; three scalar seeds do not."""

LENGTH_CAP = 40
"""Widened lengths of text and containers go at most this far (or the longest seed's)."""


def char_class(c: str) -> str:
    """The class of one character (a byte's, read as Latin-1)."""
    if c in string.ascii_lowercase:
        return "lower"
    if c in string.ascii_uppercase:
        return "upper"
    if c in string.digits:
        return "digit"
    if c in string.whitespace:
        return "space"
    if c in string.punctuation:
        return "punct"
    if ord(c) < 128:
        return "control"
    return "non-ascii"


def _measure(kind: str, value: Any) -> float | None:
    """A number that orders values of a numeric or time kind (None for nan and infinities)."""
    if kind == "int":
        return int(value)
    if kind == "float":
        return float(value) if math.isfinite(value) else None
    if kind == "decimal":
        return float(value) if value.is_finite() else None
    if kind == "fraction":
        return float(value)
    if kind == "date":
        return float(value.toordinal())
    if kind == "datetime":
        midnight = _dt.datetime.combine(value.date(), _dt.time(), tzinfo=value.tzinfo)
        return float(value.toordinal() * 86400.0 + (value - midnight).total_seconds())
    if kind == "time":
        return float(value.hour * 3600 + value.minute * 60 + value.second + value.microsecond / 1e6)
    if kind == "timedelta":
        return float(value.total_seconds())
    return None


_MEASURED = frozenset({"int", "float", "decimal", "fraction"}) | TIME_KINDS


@dataclass
class KindEnvelope:
    """What the values of one kind at one place looked like."""

    kind: str
    count: int = 0
    lo: float | None = None
    hi: float | None = None
    nan: bool = False
    pos_inf: bool = False
    neg_inf: bool = False
    integral: bool = True
    """Floats: every finite one seen was a whole number."""
    len_lo: int | None = None
    len_hi: int | None = None
    classes: set[str] = field(default_factory=set)
    chars: set[str] = field(default_factory=set)
    """Characters seen (at most 256 kept), for generation alphabets."""
    elem: Node | None = None
    """Elements of lists, sets, frozensets and tuples (all positions merged)."""
    items: list[Node] | None = None
    """Tuples that all had one length: each position's own node."""
    tuple_lengths: set[int] = field(default_factory=set)
    key: Node | None = None
    value: Node | None = None
    samples: list[Any] = field(default_factory=list)
    """Distinct scalar values seen (numbers, text; at most :data:`SAMPLES` kept, the first
    ones), for generation: values that occur in examples are worth reusing."""
    core_lo: float | None = None
    core_hi: float | None = None
    """Outer bounds of a number: the core range they were widened from."""

    # -- learning -------------------------------------------------------------------------

    def add(self, value: Any, depth: int) -> None:
        self.count += 1
        kind = self.kind
        if (
            kind in _SAMPLED
            and len(self.samples) < SAMPLES
            and (kind not in ("str", "bytes") or len(value) <= 64)
        ) and not any(
            type(x) is type(value) and (x == value or (x != x and value != value))
            for x in self.samples
        ):
            self.samples.append(value)
        if kind in _MEASURED:
            m = _measure(kind, value)
            if m is None:
                if value != value:
                    self.nan = True
                elif value > 0:
                    self.pos_inf = True
                else:
                    self.neg_inf = True
            else:
                self.lo = m if self.lo is None else min(self.lo, m)
                self.hi = m if self.hi is None else max(self.hi, m)
                if kind == "float" and not float(value).is_integer():
                    self.integral = False
        if kind in ("str", "bytes"):
            text = value if kind == "str" else value.decode("latin-1")
            self._length(len(text))
            for c in text:
                self.classes.add(char_class(c))
                if len(self.chars) < 256:
                    self.chars.add(c)
        if kind in _SEQUENCES:
            items = _items_of(kind, value)
            self._length(len(items))
            if self.elem is None:
                self.elem = Node()
            for x in items:
                self.elem.add(x, depth + 1)
            if kind == "tuple":
                self._positional(items, depth)
        if kind == "dict":
            self._length(len(value))
            if self.key is None:
                self.key, self.value = Node(), Node()
            assert self.value is not None
            for k, v in value.items():
                self.key.add(k, depth + 1)
                self.value.add(v, depth + 1)

    def _length(self, n: int) -> None:
        self.len_lo = n if self.len_lo is None else min(self.len_lo, n)
        self.len_hi = n if self.len_hi is None else max(self.len_hi, n)

    def _positional(self, items: list[Any], depth: int) -> None:
        self.tuple_lengths.add(len(items))
        if len(self.tuple_lengths) > 1:
            self.items = None
            return
        if self.items is None:
            if self.count > 1:  # an earlier tuple had another length: stays merged
                return
            self.items = [Node() for _ in items]
        for node, x in zip(self.items, items, strict=True):
            node.add(x, depth + 1)

    # -- testing --------------------------------------------------------------------------

    def why_not(self, value: Any, depth: int) -> str | None:
        kind = self.kind
        if kind in _MEASURED:
            m = _measure(kind, value)
            if m is None:
                if value != value:
                    return None if self.nan else "nan was never seen"
                if value > 0:
                    return None if self.pos_inf else "inf was never seen"
                return None if self.neg_inf else "-inf was never seen"
            if self.lo is None or self.hi is None or not (self.lo <= m <= self.hi):
                return f"{_short(value)} is outside {self._range_text()}"
            return None
        if kind in ("str", "bytes"):
            text = value if kind == "str" else value.decode("latin-1")
            why = self._length_why(len(text))
            if why:
                return why
            extra = {char_class(c) for c in text} - self.classes
            if extra:
                return f"characters of class {', '.join(sorted(extra))} were never seen"
            return None
        if kind in _SEQUENCES:
            items = _items_of(kind, value)
            if kind == "tuple" and self.items is not None:
                if len(items) != len(self.items):
                    return f"a tuple of {len(items)} items (seen: {len(self.items)})"
                for i, (node, x) in enumerate(zip(self.items, items, strict=True)):
                    why = node.why_not(x, depth + 1)
                    if why:
                        return f"item {i}: {why}"
                return None
            why = self._length_why(len(items))
            if why:
                return why
            for x in items:
                why = self.elem.why_not(x, depth + 1) if self.elem else "no element was seen"
                if why:
                    return f"element {_short(x)}: {why}"
            return None
        if kind == "dict":
            why = self._length_why(len(value))
            if why:
                return why
            for k, v in value.items():
                assert self.key is not None
                assert self.value is not None
                why = self.key.why_not(k, depth + 1)
                if why:
                    return f"key {_short(k)}: {why}"
                why = self.value.why_not(v, depth + 1)
                if why:
                    return f"value of {_short(k)}: {why}"
        return None

    def _length_why(self, n: int) -> str | None:
        if self.len_lo is None or self.len_hi is None or not (self.len_lo <= n <= self.len_hi):
            return f"length {n} is outside {self.len_lo}..{self.len_hi}"
        return None

    def _range_text(self) -> str:
        return f"[{_num(self.lo, self.kind)}, {_num(self.hi, self.kind)}]"

    # -- describing -----------------------------------------------------------------------

    def describe(self) -> str:
        kind = self.kind
        if kind in _MEASURED:
            parts = []
            if self.lo is not None:
                parts.append(f"{kind} in {self._range_text()}")
                if kind == "float" and self.integral:
                    parts[-1] += " (whole numbers)"
            else:
                parts.append(kind)
            parts += [
                s
                for s, on in (("nan", self.nan), ("inf", self.pos_inf), ("-inf", self.neg_inf))
                if on
            ]
            return ", ".join(parts)
        if kind in ("str", "bytes"):
            classes = ", ".join(c for c in CHAR_CLASSES if c in self.classes) or "none"
            return f"{kind} of length {self.len_lo}..{self.len_hi}, characters: {classes}"
        if kind == "tuple" and self.items is not None:
            inner = "; ".join(f"({n.describe()})" for n in self.items)
            return f"tuple of {len(self.items)}: {inner}"
        if kind in _SEQUENCES:
            elem = self.elem.describe() if self.elem and self.elem.kinds else "nothing"
            return f"{kind} of length {self.len_lo}..{self.len_hi} of ({elem})"
        if kind == "dict":
            assert self.key is not None
            assert self.value is not None
            k = self.key.describe() if self.key.kinds else "nothing"
            v = self.value.describe() if self.value.kinds else "nothing"
            return f"dict of length {self.len_lo}..{self.len_hi}, keys ({k}), values ({v})"
        return kind

    # -- widening -------------------------------------------------------------------------

    def widened(self, outer: bool = False) -> KindEnvelope:
        w = KindEnvelope(
            self.kind,
            self.count,
            self.lo,
            self.hi,
            self.nan,
            self.pos_inf,
            self.neg_inf,
            self.integral,
            self.len_lo,
            self.len_hi,
            set(self.classes),
            set(self.chars),
            self.elem.widened(outer) if self.elem else None,
            [n.widened(outer) for n in self.items] if self.items is not None else None,
            set(self.tuple_lengths),
            self.key.widened(outer) if self.key else None,
            self.value.widened(outer) if self.value else None,
            list(self.samples),
        )
        if self.kind in _MEASURED and self.lo is not None and self.hi is not None:
            lo, hi = self.lo, self.hi
            if self.count < EXACT_AT:
                lo, hi = _widen_range(self.kind, lo, hi)
            w.lo, w.hi = w.core_lo, w.core_hi = lo, hi
            if outer and self.kind in _OUTER_MAGNITUDE:
                big = _OUTER_MAGNITUDE[self.kind]
                m = max(abs(lo), abs(hi), 1.0) * (1000 if self.kind != "int" else 1)
                m = max(m, big) if self.kind == "int" else m
                w.lo, w.hi = min(lo, -m), max(hi, m)
        if self.len_lo is not None and self.len_hi is not None:
            fixed = self.kind == "tuple" or (
                self.kind in ("str", "bytes") and self.len_lo == self.len_hi and self.count > 1
            )
            if not fixed:
                w.len_lo = 0 if outer else min(self.len_lo, 1)
                w.len_hi = max(self.len_hi, min(max(2 * self.len_hi, self.len_hi + 5), LENGTH_CAP))
        if outer and self.kind in ("str", "bytes"):
            w.classes |= _OUTER_CLASSES
        return w


_OUTER_MAGNITUDE = {"int": float(1 << 40), "float": 1.0, "decimal": 1.0, "fraction": 1.0}
_OUTER_CLASSES = frozenset({"lower", "upper", "digit", "space", "punct"})


def _widen_range(kind: str, lo: float, hi: float) -> tuple[float, float]:
    """Sign-preserving widening: non-negative stays non-negative (a positive lower bound
    becomes 1, or 0 for floats), non-positive stays non-positive; the range grows by its span
    (at least 10 for ints, 1 for floats, a year for dates) on the sides that may grow."""
    floor = {"int": 10.0, "float": 1.0, "decimal": 1.0, "fraction": 1.0, "date": 365.0}
    span = max(hi - lo, floor.get(kind, 0.0))
    if kind == "datetime":
        span = max(span, 365 * 86400.0)
    if kind == "time":
        return 0.0, 86399.999999
    if kind == "timedelta":
        span = max(span, 86400.0)
    if kind in ("date", "datetime"):
        return max(lo - span, 86400.0 if kind == "datetime" else 1.0), min(
            hi + span, 3.0e6 * 86400 if kind == "datetime" else 3_000_000.0
        )
    whole = kind == "int"
    new_lo = ((1.0 if lo >= 1 else 0.0) if whole else 0.0) if lo >= 0 else lo - span
    new_hi = (max(hi, -1.0) if whole else 0.0) if hi < 0 else max(2 * hi, hi + span)
    return new_lo, new_hi


def _items_of(kind: str, value: Any) -> list[Any]:
    if kind in ITERATOR_KINDS:
        return list(value.items)
    return sorted_items(value) if kind in ("set", "frozenset") else list(value)


def _homogeneous(items: list[Node]) -> bool:
    return len(items) >= 3 and len({tuple(sorted(n.kinds)) for n in items}) == 1


def _num(x: float | None, kind: str) -> str:
    if x is None:
        return "?"
    if kind == "int":
        return str(int(x))
    if kind == "date":
        return _dt.date.fromordinal(int(x)).isoformat()
    return f"{x:g}"


def _short(value: Any, n: int = 30) -> str:
    text = repr(value)
    return text if len(text) <= n else text[: n - 3] + "..."


@dataclass
class Node:
    """The values seen at one place (an argument, a container's elements): one
    :class:`KindEnvelope` per kind."""

    kinds: dict[str, KindEnvelope] = field(default_factory=dict)

    def add(self, value: Any, depth: int = 0) -> None:
        if depth > MAX_DEPTH:
            return
        kind = kind_of(value)
        env = self.kinds.get(kind)
        if env is None:
            env = self.kinds[kind] = KindEnvelope(kind)
        env.add(value, depth)

    def why_not(self, value: Any, depth: int = 0) -> str | None:
        if depth > MAX_DEPTH:
            return f"nested deeper than {MAX_DEPTH} levels"
        kind = kind_of(value)
        env = self.kinds.get(kind)
        if env is None:
            seen = ", ".join(sorted(self.kinds)) or "nothing"
            return f"a {kind} (seen: {seen})"
        return env.why_not(value, depth)

    def describe(self) -> str:
        return " | ".join(self.kinds[k].describe() for k in sorted(self.kinds)) or "nothing"

    def widened(self, outer: bool = False) -> Node:
        kinds = {k: env.widened(outer) for k, env in self.kinds.items()}
        if outer:
            tup = kinds.get("tuple")
            if tup is not None and tup.items is not None and _homogeneous(tup.items):
                # a tuple of 3+ items of one kind is a sequence: other lengths too
                tup.items = None
                assert tup.len_lo is not None
                assert tup.len_hi is not None
                tup.len_lo, tup.len_hi = 0, max(tup.len_hi, min(2 * tup.len_hi, LENGTH_CAP))
            if tup is not None and tup.items is None and "list" not in kinds:
                # a sequence seen as a tuple may as well be a list
                kinds["list"] = dataclasses.replace(tup, kind="list")
            num = kinds.get("int")
            if num is not None and "float" not in kinds and num.core_lo is not None:
                # where ints were seen, a float of their range
                kinds["float"] = KindEnvelope(
                    "float", num.count, num.core_lo, num.core_hi, integral=False
                )
        return Node(kinds)


@dataclass
class Envelope:
    """Per-argument bounds learned from example inputs (tuples of positional arguments)."""

    arities: set[int] = field(default_factory=set)
    params: list[Node] = field(default_factory=list)
    count: int = 0
    names: tuple[str, ...] = ()
    """Parameter names, when known (only for the text)."""

    @classmethod
    def learn(cls, inputs: Iterable[Sequence[Any]], names: Sequence[str] = ()) -> Envelope:
        env = cls(names=tuple(names))
        for args in inputs:
            env.add(args)
        return env

    def add(self, args: Sequence[Any]) -> None:
        self.count += 1
        self.arities.add(len(args))
        while len(self.params) < len(args):
            self.params.append(Node())
        for node, value in zip(self.params, args, strict=False):
            node.add(value)

    def why_not(self, args: Sequence[Any]) -> str | None:
        """None when ``args`` is inside the envelope, else the first reason it is not."""
        if len(args) not in self.arities:
            return f"{len(args)} arguments (seen: {', '.join(map(str, sorted(self.arities)))})"
        for i, (node, value) in enumerate(zip(self.params, args, strict=False)):
            why = node.why_not(value)
            if why:
                return f"{self._name(i)}: {why}"
        return None

    def contains(self, args: Sequence[Any]) -> bool:
        try:
            return self.why_not(args) is None
        except Exception:  # a value no kind of the envelope can read
            return False

    def _name(self, i: int) -> str:
        return self.names[i] if i < len(self.names) else f"argument {i + 1}"

    def describe(self) -> str:
        """The envelope in words, one line per argument."""
        if not self.arities:
            return "no inputs seen"
        counts = ", ".join(map(str, sorted(self.arities)))
        lines = [f"{self.count} inputs of {counts} argument(s)"]
        lines += [f"{self._name(i)}: {node.describe()}" for i, node in enumerate(self.params)]
        return "\n".join(lines)

    def widened(self, outer: bool = False) -> Envelope:
        """Bounds to emit within. The *core* (``outer=False``): the same kinds and character
        classes; ranges grown by their span without changing sign; lengths from 1 (0 where an
        empty one was seen) to about twice the longest (at most :data:`LENGTH_CAP`, or the
        longest seen); tuples and fixed-length strings keep their lengths. The *outer* bounds
        add corners the seeds rarely show: either sign, ints up to 2**40 in magnitude, floats
        1000 times larger, empty text and containers, and every printable ASCII character
        class."""
        return Envelope(
            set(self.arities), [n.widened(outer) for n in self.params], self.count, self.names
        )


def number_of(kind: str, m: float) -> Any:
    """The value of a numeric or time kind whose measure is ``m`` (inverse of ``_measure``)."""
    if kind == "int":
        return int(m)
    if kind == "float":
        return float(m)
    if kind == "decimal":
        return Decimal(repr(float(m)))
    if kind == "fraction":
        return Fraction(m).limit_denominator(1000)
    if kind == "date":
        return _dt.date.fromordinal(max(1, int(m)))
    if kind == "datetime":
        day = _dt.date.fromordinal(max(1, int(m // 86400)))
        return _dt.datetime.combine(day, _dt.time()) + _dt.timedelta(seconds=m % 86400)
    if kind == "time":
        s = int(m) % 86400
        return _dt.time(s // 3600, s // 60 % 60, s % 60)
    if kind == "timedelta":
        return _dt.timedelta(seconds=m)
    raise ValueError(kind)
