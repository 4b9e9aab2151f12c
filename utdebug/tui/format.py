"""Plain-text formatting for the panels (no Textual here: easy to test on its own)."""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len
from rich.text import Text

from utdebug.engine.model import UnitTest
from utdebug.expected_values import expected_value
from utdebug.literals import LiteralError, literal_call, literal_value
from utdebug.text_safety import visible

BAR_CELLS = 8


def shorten(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters (an ellipsis marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)] + "…"


def foreign(text: str, style: str = "", *, lines: bool = False) -> Text:
    """Text that a program, a model or a file wrote, as the app shows it: plain (never read
    as markup), its control and bidirectional characters as escapes (``lines``: its line
    breaks and tabs kept)."""
    return Text(visible(text, keep="\n\t" if lines else ""), style=style)


def foreign_cell(text: str, limit: int, style: str = "") -> Text:
    """A table cell of such text: :func:`foreign` on one line of at most ``limit``
    characters (:func:`shorten`)."""
    return Text(shorten(visible(" ".join(text.split())), limit), style=style)


def safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception as exc:  # a user type with a broken __repr__
        return f"<unprintable {type(value).__name__}: {type(exc).__name__}>"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 test``, ``2 tests`` (``many``: the plural when it is not ``word + "s"``)."""
    return f"{n} {word if n == 1 else many or word + 's'}"


FINISH_WORDS = {
    "all_pass": "every test passes",
    "no_tests": "no tests to debug with",
    "rounds": "every round ran",
    "cancelled": "cancelled",
    "judged_correct": "the model judged the code correct",
    "error": "a model error",
    "resumed": "taken back from its file (r goes on)",
    "does_not_load": "its code does not load in the sandbox",
}


def finish_words(reason: str | None) -> str:
    """Why a session ended, in words (``all_pass`` is ``every test passes``)."""
    if reason is None:
        return "ended"
    return FINISH_WORDS.get(reason, reason.replace("_", " "))


def passing(passed: int, total: int) -> str:
    """``2/3 tests pass``, ``0/1 test passes``."""
    return f"{passed}/{plural(total, 'test')} {'passes' if total == 1 else 'pass'}"


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


def parse_expected(text: str, module_source: str | None = None) -> Any:
    """A person's expected output: a Python literal, or a value written as constructor calls
    (``Point(1, 2)``, ``date(2024, 1, 2)``, ``Color.RED``) read structurally with the classes of
    ``module_source`` (the code under test), never evaluated (``LiteralError`` says what is
    wrong)."""
    if not text.strip():
        raise LiteralError("type a value, e.g. 5, 'abc', [1, 2], None or Point(1, 2)")
    return expected_value(text.strip(), module_source=module_source)


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


def origin_text(test: UnitTest) -> str:
    """Where the test came from: ``synth`` for a synthesised input (whose expected value a
    person gave), ``person`` for a test a person added or whose expected value a person set,
    else ``model``."""
    if test.input_source.startswith("synth:"):
        return "synth"
    return "person" if test.origin == "person" else "model"


def vote_cell(test: UnitTest) -> str:
    """The votes column: the model's vote bar, ``—`` for a person's test (its expected value
    is the person's, whatever the model voted before)."""
    return "—" if test.origin == "person" else vote_bar(test)


# --- fitting a line and a table into the width there is ---------------------------------------


@dataclass(frozen=True, slots=True)
class StatusPart:
    """One part of the status bar: its text, a shorter form for narrow terminals, a style."""

    text: str
    short: str | None = None
    style: str = ""
    optional: bool = False
    """Left out before the first part (the state) is cut (the cost, the sandbox)."""


STATUS_SEP = " │ "


STATE_CELLS = 40
"""The first part of the status bar (the state, or what the session does now) is cut down to
this many cells before any later part (the round, the model, the tokens) is left out."""


def fit_status(parts: Sequence[StatusPart], width: int) -> list[tuple[str, str]]:
    """(text, style) pieces of one line at most ``width`` cells, separators included.

    The long forms when they fit; else short forms, from the last part backwards; else the
    optional parts are left out, from the last; else the first part (the state) is cut with
    an ellipsis down to :data:`STATE_CELLS`; else the last parts are left out; the first part
    is never left out, only cut further as a last resort.
    """
    texts = [p.text for p in parts]

    def length(items: Sequence[str]) -> int:
        return sum(cell_len(t) for t in items) + cell_len(STATUS_SEP) * max(len(items) - 1, 0)

    for i in reversed(range(len(parts))):
        if length(texts) <= width:
            break
        short = parts[i].short
        if short is not None:
            texts[i] = short
    shown = list(parts)
    for i in reversed(range(1, len(parts))):
        if length(texts) <= width:
            break
        if parts[i].optional:
            del texts[i], shown[i]
    parts = shown
    over = length(texts) - width
    if texts and over > 0 and cell_len(texts[0]) > STATE_CELLS:
        texts[0] = shorten(texts[0], max(cell_len(texts[0]) - over, STATE_CELLS))
    keep = len(texts)
    while keep > 1 and length(texts[:keep]) > width:
        keep -= 1
    texts = texts[:keep]
    if texts and length(texts) > width:
        texts[0] = shorten(texts[0], max(width, 1))
    out: list[tuple[str, str]] = []
    for i, text in enumerate(texts):
        if i:
            out.append((STATUS_SEP, "dim"))
        out.append((text, parts[i].style))
    return out


def column_widths(
    total: int,
    fixed: Sequence[tuple[str, int]],
    flexible: Sequence[tuple[str, float, int]],
    padding: int = 2,
) -> dict[str, int]:
    """Widths of a table's columns in ``total`` cells: ``fixed`` (name, width) columns keep
    their width, ``flexible`` (name, weight, minimum) ones share the rest by weight (each at
    least its minimum); every column also takes ``padding`` cells."""
    used = sum(w for _, w in fixed) + padding * (len(fixed) + len(flexible))
    spare = max(total - used, 0)
    weights = sum(w for _, w, _ in flexible) or 1.0
    out = {name: width for name, width in fixed}
    given = 0
    for i, (name, weight, minimum) in enumerate(flexible):
        last = i == len(flexible) - 1
        share = spare - given if last else int(spare * weight / weights)
        given += share
        out[name] = max(share, minimum)
    return out


def elapsed(seconds: float) -> str:
    """``4.2 s``, ``1 min 05 s``, ``2 h 03 min``."""
    seconds = max(seconds, 0.0)
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def actual_text(status: str, detail: str | None) -> str:
    """What the code in force does on a test: ``passes``, ``returned 2``, ``raised ...``."""
    if not status:
        return "not run on the code in force yet"
    if status == "pass":
        return "passes: returns the expected value"
    if detail:
        return detail if status in ("fail", "error") else f"{status}: {detail}"
    return status
