"""EvalPlus-style type-aware mutation of inputs, with an ingredient pool of seen values.

Each operator changes a value of one kind into another value of that kind (an int by one or to
a fresh or seen value, a string by inserting, replacing or deleting a piece or repeating a
character, a list by removing, inserting, repeating or mutating an element ...). The pool holds
the scalars and pieces of text seen in seeds and in emitted inputs, so values that mattered in
one input turn up in others; the literals of the code under test join it (constants mined from
the source, as EvoSuite and Pynguin seed them), and a string that holds one of those text
literals may have it swapped for another of the same character classes (``'==1.0'`` to
``'!=1.0'``). Mutation is steered by a (widened) :class:`Envelope`: fresh values
come from its ranges and alphabets, and the caller keeps only results inside it.

Randomness is a ``random.Random`` the caller seeds; sets are read in a hash-independent order,
so a seed gives the same inputs in every process.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import random
from collections.abc import Callable, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any

from utdebug.synth.envelope import (
    _CLASS_CHARS,
    Envelope,
    KindEnvelope,
    Node,
    char_class,
    number_of,
)
from utdebug.synth.values import ITERATOR_KINDS, MAX_DEPTH, iterator_of, kind_of, sorted_items

__all__ = ["Ingredients", "Mutator", "alphabet_of"]

_POOL_CAP = 200


def alphabet_of(env: KindEnvelope) -> str:
    """Characters to build text from: those seen, then the rest of each seen ASCII class."""
    seen = sorted(env.chars)
    extra = [
        c for cls in sorted(env.classes) for c in _CLASS_CHARS.get(cls, "") if c not in env.chars
    ]
    chars = "".join(seen) + "".join(extra)
    return chars or "a"


class Ingredients:
    """Seen values by kind (ints, floats, strings, bytes ...) and pieces of seen text."""

    def __init__(self) -> None:
        self.by_kind: dict[str, list[Any]] = {}
        self._keys: dict[str, set[str]] = {}
        self.texts: list[str] = []
        """Text literals of the code under test (:meth:`add_constants`), for swaps."""

    def add_constants(self, values: Sequence[Any]) -> None:
        """Literals read from the code under test: seen values, and text to swap."""
        for v in values:
            self.add(v)
            if isinstance(v, str) and v and v not in self.texts:
                self.texts.append(v)

    def add(self, value: Any, depth: int = 0) -> None:
        if depth > MAX_DEPTH:
            return
        kind = kind_of(value)
        if kind in ("list", "tuple"):
            for x in value:
                self.add(x, depth + 1)
        elif kind in ITERATOR_KINDS:
            for x in value.items:
                self.add(x, depth + 1)
        elif kind in ("set", "frozenset"):
            for x in sorted_items(value):
                self.add(x, depth + 1)
        elif kind == "dict":
            for k, v in value.items():
                self.add(k, depth + 1)
                self.add(v, depth + 1)
        if kind in ("none", "bool") or kind.startswith("other:"):
            return
        if kind in ("str", "bytes") and len(value) > 200:
            return
        key = repr(value)
        keys = self._keys.setdefault(kind, set())
        pool = self.by_kind.setdefault(kind, [])
        if key in keys or len(pool) >= _POOL_CAP:
            return
        keys.add(key)
        pool.append(value)

    def pick(self, kind: str, rng: random.Random) -> Any | None:
        pool = self.by_kind.get(kind)
        return rng.choice(pool) if pool else None


class Mutator:
    """Mutates argument tuples within a (widened) envelope."""

    def __init__(
        self, envelope: Envelope, rng: random.Random, ingredients: Ingredients | None = None
    ) -> None:
        self.env = envelope
        self.rng = rng
        self.pool = ingredients or Ingredients()
        self.siblings: list[Any] = []
        """Short text and int arguments of the input being mutated (pieces to insert elsewhere,
        values to copy)."""

    # -- arguments --------------------------------------------------------------------------

    def mutate_args(self, args: Sequence[Any]) -> tuple[Any, ...]:
        """One mutation step: one argument (sometimes two) changed by a type-aware operator."""
        out = list(args)
        if not out:
            return ()
        self.siblings = [
            x
            for x in out
            if (isinstance(x, str | bytes) and 0 < len(x) <= 16)
            or (type(x) is int and abs(x) < 1 << 64)
        ]
        positions = [self.rng.randrange(len(out))]
        if len(out) > 1 and self.rng.random() < 0.25:
            positions.append(self.rng.randrange(len(out)))
        r = self.rng.random()
        for i in positions:
            node = self.env.params[i] if i < len(self.env.params) else Node()
            if r < 0.25:  # one scalar deep inside: the structure (shapes, lengths) is kept
                out[i] = self.mutate_leaf(out[i], node)
            elif r < 0.3:  # every number scaled (same shapes): larger, or of the other sign
                out[i] = _scale(out[i], self.rng.choice((10, 1000, 10**6, -1, -1)), 0)
            else:
                out[i] = self.mutate(out[i], node)
        return tuple(out)

    def mutate_leaf(self, value: Any, node: Node, depth: int = 0) -> Any:
        """``value`` with one scalar inside it (found by a random walk down its containers)
        mutated; a value that is a scalar is mutated itself."""
        kind = kind_of(value)
        env = node.kinds.get(kind)
        if depth > MAX_DEPTH or env is None:
            return self.mutate(value, node, depth)
        if kind in ("list", "tuple") and value:
            items = list(value)
            i = self.rng.randrange(len(items))
            positional = kind == "tuple" and env.items is not None and len(env.items) == len(items)
            inner = env.items[i] if positional and env.items is not None else env.elem
            items[i] = self.mutate_leaf(items[i], inner or Node(), depth + 1)
            return tuple(items) if kind == "tuple" else items
        if kind == "dict" and value:
            out = dict(value)
            k = self.rng.choice(list(out))
            out[k] = self.mutate_leaf(out[k], env.value or Node(), depth + 1)
            return out
        return self.mutate(value, node, depth)

    def mutate(self, value: Any, node: Node, depth: int = 0) -> Any:
        """A new value of the same kind (or, rarely, another kind seen at this place)."""
        kind = kind_of(value)
        if depth > MAX_DEPTH:
            return value
        others = [k for k in node.kinds if k != kind]
        if others and self.rng.random() < 0.1:
            other = self.rng.choice(sorted(others))
            seen = self.pool.pick(other, self.rng)
            return seen if seen is not None else self.fresh(node.kinds[other], depth)
        env = node.kinds.get(kind) or KindEnvelope(kind)
        op = _OPERATORS.get(kind)
        if op is None:
            return value
        return op(self, value, env, depth)

    # -- fresh values -------------------------------------------------------------------------

    def fresh(self, env: KindEnvelope, depth: int = 0) -> Any:
        """A new value of ``env``'s kind inside its bounds (small, biased to the seen ones)."""
        kind, rng = env.kind, self.rng
        seen = self.pool.pick(kind, rng)
        if seen is not None and rng.random() < 0.5:
            return seen
        if kind == "none":
            return None
        if kind == "bool":
            return rng.random() < 0.5
        if env.lo is not None and env.hi is not None and kind in _NUMERIC_FRESH:
            return _NUMERIC_FRESH[kind](self, env)
        if kind in ("str", "bytes"):
            n = self._length(env)
            alphabet = alphabet_of(env)
            text = "".join(rng.choice(alphabet) for _ in range(n))
            return text if kind == "str" else text.encode("latin-1", "replace")
        if (
            kind in ("list", "set", "frozenset")
            or kind in ITERATOR_KINDS
            or (kind == "tuple" and env.items is None)
        ):
            n = self._length(env)
            elems = (
                [self._fresh_node(env.elem, depth + 1) for _ in range(n)]
                if env.elem and env.elem.kinds
                else []
            )
            return iterator_of(kind, elems) if kind in ITERATOR_KINDS else _as_kind(kind, elems)
        if kind == "tuple" and env.items is not None:
            return tuple(self._fresh_node(n, depth + 1) for n in env.items)
        if kind == "dict":
            n = self._length(env)
            out: dict[Any, Any] = {}
            if env.key and env.key.kinds and env.value and env.value.kinds:
                for _ in range(n):
                    k = self._fresh_node(env.key, depth + 1)
                    try:
                        out[k] = self._fresh_node(env.value, depth + 1)
                    except TypeError:
                        break
            return out
        return seen

    def _fresh_node(self, node: Node, depth: int) -> Any:
        if depth > MAX_DEPTH or not node.kinds:
            return None
        kind = self.rng.choice(sorted(node.kinds))
        return self.fresh(node.kinds[kind], depth)

    def _length(self, env: KindEnvelope) -> int:
        lo = env.len_lo or 0
        hi = env.len_hi if env.len_hi is not None else lo + 5
        if hi <= lo:
            return lo
        # short lengths more often: the smallest of two draws
        return min(self.rng.randint(lo, hi), self.rng.randint(lo, hi))


# -- per-kind operators ------------------------------------------------------------------------


def _int_fresh(m: Mutator, env: KindEnvelope) -> int:
    assert env.lo is not None
    assert env.hi is not None
    lo, hi = int(env.lo), int(env.hi)
    r = m.rng.random()
    if r < 0.15:
        return m.rng.choice([lo, hi])
    if r < 0.6 and lo <= 100 and hi >= -100:
        return m.rng.randint(max(lo, -100), min(hi, 100))
    return m.rng.randint(lo, hi)


def _float_fresh(m: Mutator, env: KindEnvelope) -> float:
    assert env.lo is not None
    assert env.hi is not None
    x = m.rng.uniform(env.lo, env.hi)
    return (
        float(round(x))
        if env.integral and m.rng.random() < 0.5
        else round(x, m.rng.choice([1, 2, 6]))
    )


def _measured_fresh(m: Mutator, env: KindEnvelope) -> Any:
    assert env.lo is not None
    assert env.hi is not None
    return number_of(env.kind, m.rng.uniform(env.lo, env.hi))


_NUMERIC_FRESH: dict[str, Callable[[Mutator, KindEnvelope], Any]] = {
    "int": _int_fresh,
    "float": _float_fresh,
    "decimal": _measured_fresh,
    "fraction": _measured_fresh,
    "date": _measured_fresh,
    "datetime": _measured_fresh,
    "time": _measured_fresh,
    "timedelta": _measured_fresh,
}


def _mut_int(m: Mutator, v: int, env: KindEnvelope, depth: int) -> int:
    r = m.rng.random()
    ints = [x for x in m.siblings if type(x) is int]
    if ints and r < 0.1:  # another argument's value, or its negation
        x = m.rng.choice(ints)
        return x if m.rng.random() < 0.5 else -x
    if r < 0.4:
        return v + m.rng.choice((-1, 1))
    if r < 0.55:
        seen = m.pool.pick("int", m.rng)
        if seen is not None:
            return int(seen)
    if r < 0.65:
        return m.rng.choice((-v, 2 * v, v // 2, 0, 1))
    if env.lo is not None:
        return _int_fresh(m, env)
    return m.rng.randint(-100, 100)


def _mut_float(m: Mutator, v: float, env: KindEnvelope, depth: int) -> float:
    r = m.rng.random()
    if r < 0.35:
        return v + m.rng.uniform(-1, 1)
    if r < 0.6:
        return v * (1 + m.rng.choice((-0.5, 0.5)))
    if r < 0.7:
        seen = m.pool.pick("float", m.rng)
        if seen is not None:
            return float(seen)
    if r < 0.8:
        return float(round(v))
    if env.lo is not None:
        return _float_fresh(m, env)
    return m.rng.uniform(-100, 100)


def _mut_bool(m: Mutator, v: bool, env: KindEnvelope, depth: int) -> bool:
    return not v


def _mut_text(m: Mutator, v: str | bytes, env: KindEnvelope, depth: int) -> str | bytes:
    is_bytes = isinstance(v, bytes)
    s = v.decode("latin-1") if isinstance(v, bytes) else v
    s = _mut_str(m, s, env)
    return s.encode("latin-1", "replace") if is_bytes else s


def _piece(m: Mutator, env: KindEnvelope) -> str:
    texts = [x for x in m.siblings if isinstance(x, str | bytes)]
    if texts and m.rng.random() < 0.3:
        other = m.rng.choice(texts)
        return other.decode("latin-1") if isinstance(other, bytes) else str(other)
    seen = m.pool.pick(env.kind, m.rng)
    if seen is not None and m.rng.random() < 0.5:
        text = seen.decode("latin-1") if isinstance(seen, bytes) else str(seen)
        if text:
            i = m.rng.randrange(len(text))
            return text[i : i + m.rng.randint(1, 4)]
    alphabet = alphabet_of(env)
    return "".join(m.rng.choice(alphabet) for _ in range(m.rng.randint(1, 3)))


def _mut_str(m: Mutator, s: str, env: KindEnvelope) -> str:
    rng = m.rng
    if m.pool.texts and rng.random() < _SWAP_SHARE:  # a text literal of the code swapped
        swapped = _swap_literal(m, s)
        if swapped is not None:
            return swapped
    op = rng.randrange(8)
    n = len(s)
    if op == 0 or n == 0:  # insert a piece
        i = rng.randint(0, n)
        return s[:i] + _piece(m, env) + s[i:]
    i = rng.randrange(n)
    j = min(n, i + rng.randint(1, 3))
    if op == 1:  # replace a piece
        return s[:i] + _piece(m, env) + s[j:]
    if op == 2:  # delete a piece
        return s[:i] + s[j:]
    if op == 3:  # repeat a character
        return s[:i] + s[i] * rng.randint(2, 4) + s[i + 1 :]
    if op == 4:  # a seen string
        seen = m.pool.pick(env.kind, rng)
        if isinstance(seen, bytes):
            return seen.decode("latin-1")
        if isinstance(seen, str):
            return seen
        return s[::-1]
    if op == 5:  # change the case of one character
        return s[:i] + s[i].swapcase() + s[i + 1 :]
    if op == 6:  # swap two characters
        k = rng.randrange(n)
        chars = list(s)
        chars[i], chars[k] = chars[k], chars[i]
        return "".join(chars)
    return s[::-1] if rng.random() < 0.5 else s + s[: rng.randint(1, max(1, n))]


_SWAP_SHARE = 0.25
"""The part of string mutations that try a swap of the code's text literals first."""


def _swap_literal(m: Mutator, s: str) -> str | None:
    """``s`` with one occurrence of a text literal of the code (two characters or more)
    replaced by another written with the same character classes (a word for a word, an
    operator for an operator); None when it holds none that has another."""
    held = [t for t in m.pool.texts if len(t) > 1 and t in s]
    if not held:
        return None
    old = m.rng.choice(held)
    shape = {char_class(c) for c in old}
    others = [
        t for t in m.pool.texts if t != old and len(t) > 1 and {char_class(c) for c in t} == shape
    ]
    if not others:
        return None
    new = m.rng.choice(others)
    at = [i for i in range(len(s)) if s.startswith(old, i)]
    i = m.rng.choice(at)
    return s[:i] + new + s[i + len(old) :]


def _mut_seq(m: Mutator, v: Any, env: KindEnvelope, depth: int) -> Any:
    kind = kind_of(v)
    rng = m.rng
    items = sorted_items(v) if kind in ("set", "frozenset") else list(v)
    if kind == "tuple" and env.items is not None and len(env.items) == len(items) and items:
        i = rng.randrange(len(items))
        items[i] = m.mutate(items[i], env.items[i], depth + 1)
        return tuple(items)
    elem = env.elem or Node()
    op = rng.randrange(10)
    n = len(items)
    if op == 0 or n == 0:  # insert: a mutated copy of an element, or a fresh one
        if items and rng.random() < 0.5:
            new = m.mutate(rng.choice(items), elem, depth + 1)
        else:
            new = m._fresh_node(elem, depth + 1) if elem.kinds else None
            if new is None and not elem.kinds:
                return _as_kind(kind, items)
        items.insert(rng.randint(0, n), new)
    elif op == 1:  # remove
        del items[rng.randrange(n)]
    elif op == 2:  # repeat an element
        i = rng.randrange(n)
        items.insert(rng.randint(0, n), items[i])
    elif op in (3, 4):  # mutate an element
        i = rng.randrange(n)
        items[i] = m.mutate(items[i], elem, depth + 1)
    elif op == 5:  # sort (or reverse-sort)
        try:
            items.sort(reverse=rng.random() < 0.5)
        except TypeError:
            items.reverse()
    elif op == 6:  # reverse
        items.reverse()
    elif op == 7:  # swap two
        i, k = rng.randrange(n), rng.randrange(n)
        items[i], items[k] = items[k], items[i]
    elif op == 8:  # fill a stretch with copies of one element (or of the kind's zero)
        x = rng.choice(items)
        zero = _ZEROS.get(kind_of(x))
        if zero is not None and rng.random() < 0.3 and elem.why_not(zero) is None:
            x = zero
        i = rng.randrange(n)
        k = rng.randint(i + 1, n)
        items[i:k] = [x] * (k - i)
    else:  # cut to a prefix or suffix
        k = rng.randint(0, n)
        items = items[:k] if rng.random() < 0.5 else items[k:]
    return _as_kind(kind, items)


def _mut_dict(m: Mutator, v: dict[Any, Any], env: KindEnvelope, depth: int) -> dict[Any, Any]:
    rng = m.rng
    out = dict(v)
    keys = list(out)
    key_node, value_node = env.key or Node(), env.value or Node()
    op = rng.randrange(3)
    if op == 0 and keys:  # remove a key
        del out[rng.choice(keys)]
    elif op == 1 or not keys:  # add a key
        if keys and rng.random() < 0.5:
            k = m.mutate(rng.choice(keys), key_node, depth + 1)
            val = out[rng.choice(keys)]
        else:
            k = m._fresh_node(key_node, depth + 1)
            val = m._fresh_node(value_node, depth + 1)
        with contextlib.suppress(TypeError):
            out[k] = val
    else:  # change a value
        k = rng.choice(keys)
        out[k] = m.mutate(out[k], value_node, depth + 1)
    return out


def _mut_measured(m: Mutator, v: Any, env: KindEnvelope, depth: int) -> Any:
    rng = m.rng
    kind = kind_of(v)
    if kind == "date":
        return v + _dt.timedelta(days=rng.choice((-1, 1, -30, 30, -365, 365)))
    if kind == "datetime":
        return v + _dt.timedelta(seconds=rng.choice((-1, 1, -3600, 3600, -86400, 86400)))
    if kind == "time":
        s = (
            v.hour * 3600 + v.minute * 60 + v.second + rng.choice((-1, 1, -60, 60, -3600, 3600))
        ) % 86400
        return _dt.time(s // 3600, s // 60 % 60, s % 60, v.microsecond)
    if kind == "timedelta":
        return v + _dt.timedelta(seconds=rng.choice((-1, 1, -3600, 3600, -86400, 86400)))
    if kind == "decimal":
        if not v.is_finite():
            return Decimal(0)
        return v + Decimal(rng.choice(("1", "-1", "0.1", "-0.1", "0.01")))
    if kind == "fraction":
        return v + Fraction(rng.choice((1, -1)), rng.choice((1, 2, 3, 7)))
    return v


def _mut_iterator(m: Mutator, v: Any, env: KindEnvelope, depth: int) -> Any:
    """An iterator's list mutated as a list is; the same form (``iter``, generator)."""
    return iterator_of(kind_of(v), _mut_seq(m, list(v.items), env, depth))


def _mut_range(m: Mutator, v: Any, env: KindEnvelope, depth: int) -> Any:
    """A range with one bound moved (its step kept)."""
    items = list(v.items)
    i = m.rng.randrange(min(2, len(items)))
    items[i] += m.rng.choice((-2, -1, 1, 2, 5))
    return iterator_of("range", items)


def _mut_seen(m: Mutator, v: Any, env: KindEnvelope, depth: int) -> Any:
    """Another value of the kind seen in the seeds (an enum member of the same class, another
    function), or the value itself."""
    pool = m.pool.by_kind.get(kind_of(v), [])
    same = [x for x in pool if x != v and getattr(x, "name", None) == getattr(v, "name", None)]
    others = same if kind_of(v) == "enum" else [x for x in pool if x != v]
    return m.rng.choice(others) if others else v


_ZEROS: dict[str, Any] = {"int": 0, "float": 0.0, "str": "", "bool": False}


def _scale(value: Any, factor: int, depth: int) -> Any:
    """Every int and float inside ``value`` times ``factor`` (bools and the rest unchanged)."""
    if depth > MAX_DEPTH:
        return value
    kind = kind_of(value)
    if kind in ("int", "float"):
        return value * factor
    if kind in ("list", "tuple"):
        items = [_scale(x, factor, depth + 1) for x in value]
        return tuple(items) if kind == "tuple" else items
    if kind in ITERATOR_KINDS:
        return iterator_of(kind, [_scale(x, factor, depth + 1) for x in value.items])
    if kind == "dict":
        return {k: _scale(v, factor, depth + 1) for k, v in value.items()}
    return value


def _as_kind(kind: str, items: list[Any]) -> Any:
    if kind == "tuple":
        return tuple(items)
    if kind in ("set", "frozenset"):
        try:
            return set(items) if kind == "set" else frozenset(items)
        except TypeError:
            return set() if kind == "set" else frozenset()
    return items


_OPERATORS: dict[str, Callable[[Mutator, Any, KindEnvelope, int], Any]] = {
    "int": _mut_int,
    "float": _mut_float,
    "bool": _mut_bool,
    "str": _mut_text,
    "bytes": _mut_text,
    "list": _mut_seq,
    "tuple": _mut_seq,
    "set": _mut_seq,
    "frozenset": _mut_seq,
    "dict": _mut_dict,
    "date": _mut_measured,
    "datetime": _mut_measured,
    "time": _mut_measured,
    "timedelta": _mut_measured,
    "decimal": _mut_measured,
    "fraction": _mut_measured,
    "iterator": _mut_iterator,
    "generator": _mut_iterator,
    "range": _mut_range,
    "enum": _mut_seen,
    "callable": _mut_seen,
}
