"""Answer keys for self-consistency voting.

Two predicted outputs are the same answer when they have the same key:

- ``paper`` (the default) is type-aware and follows how a test is judged: numbers are equal
  by value (``1`` and ``1.0`` are one answer, because a program returning ``1`` passes a test
  expecting ``1.0``), but ``True``/``False`` are never merged with ``1``/``0`` (a model that
  predicts ``True`` and one that predicts ``1`` disagree about the type the function returns);
  ``nan`` equals ``nan``; lists and tuples stay apart (``[1] != (1,)`` in Python); sets and
  dicts are order-free; strings are compared exactly.
- ``reference`` is the published code's rule: the key is ``str(value)``, so ``1``, ``1.0`` and
  ``True`` are three answers and ``'1'`` and ``1`` are one.

The winning value is the first one seen with the top key.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

KeyStyle = Literal["paper", "reference"]


def answer_key(value: Any, style: KeyStyle = "paper") -> str:
    if style == "reference":
        return str(value)
    return _key(value, 0)


def _key(v: Any, depth: int) -> str:
    if depth > 200:
        return "deep:" + repr(type(v).__name__)
    if v is None or v is Ellipsis:
        return repr(v)
    if isinstance(v, bool):
        return f"bool:{v}"
    if isinstance(v, int):
        return f"num:{float(v)!r}" if abs(v) < 2**53 else f"int:{v}"
    if isinstance(v, float):
        if math.isnan(v):
            return "num:nan"
        if v.is_integer() and abs(v) >= 2**53:
            return f"int:{int(v)}"
        return f"num:{v!r}"
    if isinstance(v, complex):
        return f"complex:{v!r}"
    if isinstance(v, str | bytes):
        return f"{type(v).__name__}:{v!r}"
    if isinstance(v, list | tuple):
        tag = "list" if isinstance(v, list) else "tuple"
        return f"{tag}[" + ",".join(_key(x, depth + 1) for x in v) + "]"
    if isinstance(v, set | frozenset):
        return "set{" + ",".join(sorted(_key(x, depth + 1) for x in v)) + "}"
    if isinstance(v, dict):
        items = sorted(f"{_key(k, depth + 1)}:{_key(x, depth + 1)}" for k, x in v.items())
        return "dict{" + ",".join(items) + "}"
    if type(v).__module__ == "utdebug.sandbox.values":  # an object read structurally
        from utdebug.literals import canonical_repr

        return f"{type(v).__name__}:{canonical_repr(v)}"
    return f"{type(v).__name__}:{v!r}"


@dataclass(frozen=True, slots=True)
class Tally:
    """The result of one vote: the winner (first value seen with the top count)."""

    value: Any
    key: str | None
    count: int
    draws: int
    counts: dict[str, int]

    @property
    def share(self) -> float:
        return self.count / self.draws if self.draws else 0.0


def tally(answers: Sequence[tuple[bool, Any]], style: KeyStyle = "paper") -> Tally:
    """Count ``(parsed, value)`` draws; unparsed draws count in ``draws`` but vote for nothing."""
    counts: dict[str, int] = {}
    first: dict[str, Any] = {}
    for ok, value in answers:
        if not ok:
            continue
        k = answer_key(value, style)
        counts[k] = counts.get(k, 0) + 1
        first.setdefault(k, value)
    if not counts:
        return Tally(None, None, 0, len(answers), {})
    top = max(counts.values())
    key = next(k for k in counts if counts[k] == top)  # dict order = first seen
    return Tally(first[key], key, top, len(answers), counts)


def keeps(t: Tally, threshold: float) -> bool:
    """Keep a test when its top answer has at least ``threshold`` of the draws (k = draws)."""
    if t.key is None or t.draws == 0:
        return False
    return t.count >= math.ceil(threshold * t.draws - 1e-9)
