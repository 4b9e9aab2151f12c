"""What the app remembers about each test, from the session's events (no Textual here): the
votes behind its expected value, what the code in force does on it, and its history (who
changed it, when). The test detail view shows it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from utdebug.engine.events import TestChanged, TestKept, TestsRun, VoteCast
from utdebug.engine.model import UnitTest
from utdebug.engine.voting import KeyStyle, answer_key
from utdebug.expected_values import expected_value
from utdebug.literals import LiteralError
from utdebug.tui.format import safe_repr, shorten, verdict_status


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    when: str
    """Wall-clock time (``HH:MM:SS``)."""
    who: str
    """``model`` or ``person``."""
    what: str


@dataclass(slots=True)
class Votes:
    """The output votes of one test proposal."""

    answers: list[str] = field(default_factory=list)
    """Every vote that gave a value (its repr), in order."""
    refused: list[str] = field(default_factory=list)
    """Why each other vote was refused."""
    style: KeyStyle = "paper"
    """Which answers are one, as the session voted (:mod:`utdebug.engine.voting`)."""

    @property
    def draws(self) -> int:
        return len(self.answers) + len(self.refused)

    def tally(self) -> list[str | None]:
        """Every vote: its answer (the first one shown of those the vote counted as one:
        ``7`` and ``7.0`` are one answer), ``None`` for a refused one."""
        first: dict[str, str] = {}
        shown = [first.setdefault(answer_group(a, self.style), a) for a in self.answers]
        return [*shown, *[None] * len(self.refused)]

    def counts(self) -> list[tuple[str, int]]:
        """Every distinct answer with its count, the most frequent first."""
        return Counter(a for a in self.tally() if a is not None).most_common()


def answer_group(shown: str, style: KeyStyle = "paper") -> str:
    """The voting key of a vote's shown answer (:func:`~utdebug.engine.voting.answer_key` of
    the value it reads as; the text itself when it does not read back)."""
    if shown.startswith("raises "):
        return shown
    try:
        value = expected_value(shown)
    except LiteralError:
        return shown
    return answer_key(value, style)


@dataclass(frozen=True, slots=True)
class Actual:
    """What the code in force does on a test."""

    status: str
    """pass / fail / error / timeout / crash."""
    detail: str | None
    """``returned 2``, ``raised ValueError: ...``; ``None`` for a pass."""
    code_id: str


class TestRecords:
    """Votes, results and history per test id (fed by the app's event handler)."""

    __test__ = False  # not a pytest class

    def __init__(self, style: KeyStyle = "paper") -> None:
        self.style: KeyStyle = style
        """Which answers are one (the session's voting style)."""
        self._pending: dict[tuple[int, int], Votes] = {}
        self.votes: dict[int, Votes] = {}
        self.actual: dict[int, Actual] = {}
        self.history: dict[int, list[HistoryEntry]] = {}

    def vote(self, ev: VoteCast) -> None:
        votes = self._pending.setdefault((ev.round, ev.attempt), Votes(style=self.style))
        if ev.answer is not None:
            votes.answers.append(ev.answer)
        else:
            votes.refused.append(ev.reason or "no answer")

    def proposal_votes(self, round_no: int, attempt: int) -> Votes:
        """The votes of a proposal that was just kept or dropped (forgotten here)."""
        return self._pending.pop((round_no, attempt), Votes(style=self.style))

    def kept(self, ev: TestKept, when: str) -> None:
        t = ev.test
        votes = self.proposal_votes(ev.round, ev.attempt)
        self.votes[t.id] = votes
        share = f"{t.share:.0%} of {t.draws} votes" if t.draws else "no voting"
        self.add(
            t.id,
            when,
            "model",
            f"proposed in round {ev.round} (proposal {ev.attempt + 1}); expected value "
            f"{shorten(safe_repr(t.expected), 40)} kept with {share}",
        )

    def changed(self, ev: TestChanged, before: UnitTest | None, when: str) -> None:
        t = ev.test
        if ev.action == "edited":
            old = "?" if before is None else shorten(safe_repr(before.expected), 40)
            what = f"changed the expected value from {old} to {shorten(safe_repr(t.expected), 40)}"
        elif ev.action == "added":
            what = f"added it, expecting {shorten(safe_repr(t.expected), 40)}"
        elif ev.action == "deleted":
            what = "deleted it"
        elif ev.action == "restored":
            what = f"undid a change: the test is back as it was (origin {t.origin})"
        else:
            what = ev.action
        self.add(t.id, when, "person", what)

    def ran(self, ev: TestsRun) -> None:
        """The verdicts of the code in force (call it for current runs only)."""
        for v in ev.verdicts:
            detail = v.get("detail")
            status = verdict_status(str(v["verdict"]), detail)
            self.actual[int(v["id"])] = Actual(
                status, None if detail is None else str(detail), ev.code_id
            )

    def add(self, test_id: int, when: str, who: str, what: str) -> None:
        """One entry of a test's history."""
        self.history.setdefault(test_id, []).append(HistoryEntry(when, who, what))
