"""Plain-text formatting for the panels (no Textual here: easy to test on its own)."""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Sequence
from typing import Any

from utdebug.engine.model import UnitTest
from utdebug.literals import LiteralError, literal_call, literal_value

BAR_CELLS = 8


def shorten(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters (an ellipsis marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)] + "…"


def safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception as exc:  # a user type with a broken __repr__
        return f"<unprintable {type(value).__name__}: {type(exc).__name__}>"


def vote_bar(test: UnitTest) -> str:
    """``████░░░░ 75%``: the share of the k draws that gave the kept answer (``—`` unvoted)."""
    if test.draws <= 0:
        return "—"
    share = min(max(test.share, 0.0), 1.0)
    filled = round(share * BAR_CELLS)
    return "█" * filled + "░" * (BAR_CELLS - filled) + f" {share:.0%}"


def percent(rate: float | None) -> str:
    return "—" if rate is None else f"{rate:.0%}"


def pre_post(pre: float | None, post: float | None) -> str:
    return f"{percent(pre)} → {percent(post)}"


def verdict_status(verdict: str, detail: str | None) -> str:
    """pass / fail / error (the program raised) / timeout / crash."""
    if verdict == "fail" and detail and detail.startswith("raised"):
        return "error"
    return verdict


def summarize_votes(answers: Sequence[str | None]) -> str:
    """``8× 3`` or ``5× 3, 2× 4, 1 unparsable``: the vote answers, most frequent first."""
    counts = Counter(a for a in answers if a is not None)
    parts = [f"{n}× {shorten(a, 30)}" for a, n in counts.most_common()]
    bad = sum(a is None for a in answers)
    if bad:
        parts.append(f"{bad} unparsable")
    return ", ".join(parts) or "no votes"


def unified_diff(old: str, new: str, old_label: str = "given", new_label: str = "current") -> str:
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=old_label,
            tofile=new_label,
        )
    )


def parse_expected(text: str) -> Any:
    """A person's expected output: one Python literal (``LiteralError`` says what is wrong)."""
    if not text.strip():
        raise LiteralError("type a Python literal, e.g. 5, 'abc', [1, 2] or None")
    return literal_value(text.strip())


def parse_arguments(text: str, entry_point: str) -> tuple[Any, ...]:
    """A person's test input: a tuple/list literal of the arguments, or a call ``f(1, 2)``."""
    source = text.strip()
    if not source:
        raise LiteralError("type the arguments as a tuple, e.g. (1, 2), or a call f(1, 2)")
    if source.startswith(entry_point + "("):
        args, kwargs = literal_call(source, entry_point)
        if kwargs:
            raise LiteralError("keyword arguments are not supported here: pass them in order")
        return args
    value = literal_value(source)
    if not isinstance(value, tuple | list):
        raise LiteralError(
            f"the arguments must be a tuple or list, e.g. ({safe_repr(value)},) for one argument"
        )
    return tuple(value)
