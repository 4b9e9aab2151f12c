"""What the app shows, as one object (no Textual here): :class:`AppState`, derived from the
engine's session and its events, with the one phase machine (:class:`Phase`) and the
transcript as data. The panels are drawn from it and the session file is written from it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import astuple, dataclass, field
from enum import StrEnum
from typing import Any

from rich.control import strip_control_codes

from utdebug.engine.events import CandidatesRanked, TestChanged, TestsBuilt, TestsRun
from utdebug.engine.model import Settings, Task, UnitTest
from utdebug.tui.format import percent, plural, verdict_status
from utdebug.tui.records import HistoryEntry, TestRecords, Votes
from utdebug.tui.synth import SynthResult


class Phase(StrEnum):
    """Where the session stands, as the app shows it (the status line's first part)."""

    STARTING = "starting"
    READY = "ready"
    RUNNING = "running"
    PAUSING = "pausing"
    PAUSED = "paused"
    REVIEW = "review"
    FINISHED = "finished"
    ERROR = "error"

    @property
    def ended(self) -> bool:
        return self in (Phase.FINISHED, Phase.ERROR)

    @property
    def busy(self) -> bool:
        """The session works (the spinner turns)."""
        return self in (Phase.RUNNING, Phase.PAUSING, Phase.STARTING)


_ENDS = {Phase.FINISHED, Phase.ERROR}
MOVES: dict[Phase, frozenset[Phase]] = {
    Phase.STARTING: frozenset({Phase.READY, Phase.ERROR}),
    Phase.READY: frozenset({Phase.STARTING, Phase.RUNNING, Phase.PAUSED, *_ENDS}),
    Phase.RUNNING: frozenset({Phase.PAUSING, Phase.PAUSED, Phase.REVIEW, *_ENDS}),
    Phase.PAUSING: frozenset({Phase.RUNNING, Phase.PAUSED, Phase.REVIEW, *_ENDS}),
    Phase.PAUSED: frozenset({Phase.RUNNING, Phase.REVIEW, *_ENDS}),
    Phase.REVIEW: frozenset({Phase.RUNNING, Phase.PAUSED, *_ENDS}),
    Phase.FINISHED: frozenset({Phase.RUNNING, *_ENDS}),
    Phase.ERROR: frozenset({Phase.RUNNING, *_ENDS}),
}
"""The moves the phase may make (staying where it is is always allowed)."""


class PhaseError(Exception):
    """A move :data:`MOVES` does not allow."""


@dataclass(frozen=True, slots=True)
class TimelineRow:
    round: str
    rates: str
    outcome: str
    reason: str


@dataclass(frozen=True, slots=True)
class CandidateRow:
    round: int
    row: int
    code_id: str
    pass_rate: str
    score: str
    mark: str


CALL_MARK = " · model call"
"""Between a model call's header and what the call took (a saved transcript keeps it)."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One transcript entry: a line of ``style``, or code (``style == "code"``)."""

    text: str
    style: str = ""
    kind: str = ""
    """``head`` (a model call's header), ``body`` (its reply) or ``""``."""
    meta: str = ""
    """A header's dim tail (``· model call · 412 chars · 1.2 s``)."""
    language: str = "python"
    """The language code is highlighted as."""

    def saved(self) -> list[str]:
        row = [self.text + self.meta, self.style]
        return [*row, self.kind] if self.kind else row


def line(text: str, style: str = "", kind: str = "", meta: str = "") -> Entry:
    """A line as the transcript keeps it (control codes are not kept)."""
    return Entry(strip_control_codes(text), style, kind, strip_control_codes(meta))


def reply_entries(reply: str) -> list[Entry]:
    """A model's reply as transcript entries: its prose dim, its fenced code as code."""
    out: list[Entry] = []
    for i, part in enumerate(reply.strip().split("```")):
        if i % 2 == 0:
            if part.strip():
                out.append(line(part.strip("\n"), "dim", "body"))
            continue
        lang, _, code = part.partition("\n")
        if not code.strip():  # an inline fence such as ```add(1, 2)```
            out.append(line(f"```{part}```", "dim", "body"))
            continue
        language = lang.strip() or "python"
        out.append(Entry(code.rstrip("\n"), "code", "body", language=language))
    return out or [line("(an empty reply)", "dim", "body")]


def read_transcript(rows: list[list[str]]) -> list[Entry]:
    """A saved transcript's entries (a body with no header before it is a line of its own)."""
    out: list[Entry] = []
    in_fold = False
    for plain, style, *kind in rows:
        if kind == ["body"] and in_fold:
            out.append(
                Entry(plain, style, "body") if style == "code" else line(plain, style, "body")
            )
            continue
        in_fold = kind == ["head"] and style != "code"
        if in_fold:
            said, mark, meta = plain.partition(CALL_MARK)
            out.append(line(said, style, "head", mark + meta))
        else:
            out.append(Entry(plain, style) if style == "code" else line(plain, style))
    return out


@dataclass(slots=True)
class AppState:
    """Everything the app shows about one session; the app keeps no other copy."""

    task: Task
    settings: Settings
    phase: Phase = Phase.READY
    started: bool = False
    paused_round: int | None = None
    finish_reason: str | None = None
    load_line: str | None = None
    """Why the code does not load in the sandbox (the session stopped after round 0)."""
    rolled_back_to: int | None = None
    """The version a person rolled back to after the session finished (``None``: none
    since): the finish reason no longer describes the code in force."""
    taken_back_from: str | None = None
    """How the session that was taken back from its file had ended (``None``: it was
    paused or still running when saved)."""
    error: str | None = None
    code: str = ""
    """The code in force."""
    tests: list[UnitTest] = field(default_factory=list)
    statuses: dict[int, str] = field(default_factory=dict)
    """Test id -> pass / fail / error / timeout / crash on the code in force."""
    statuses_code: str | None = None
    """The code id :attr:`statuses` are of."""
    first_ids: list[int] | None = None
    """The ids of the session's first test set (the tests that showed the bug)."""
    originals: list[UnitTest] = field(default_factory=list)
    """Tests of the first set that new tests replaced: still shown (marked ``orig``) and
    run on the code in force, to show whether the fix holds on them."""
    original_statuses: dict[int, str] = field(default_factory=dict)
    """Their status on the code in force (:attr:`originals_code`)."""
    originals_code: str | None = None
    """The code id the originals ran on last (or are running on now)."""
    passed: int | None = None
    total: int | None = None
    rounds_done: int | None = None
    round_limit: int = 0
    """The last round the session runs to now (more after ``r`` or ``s`` at the end)."""
    built_rounds: set[int] = field(default_factory=set)
    """Rounds in which a test set was built (a round that only built tests is a row)."""
    timeline: dict[str, TimelineRow] = field(default_factory=dict)
    person_changes: int = 0
    candidate_rows: list[CandidateRow] = field(default_factory=list)
    candidate_runs: dict[str, TestsRun] = field(default_factory=dict)
    """This round's runs of candidate edits: an accepted one's verdicts become current."""
    records: TestRecords = field(default_factory=TestRecords)
    """Votes, results and history per test (the detail view)."""
    transcript: list[Entry] = field(default_factory=list)
    synth: SynthResult | None = None
    """A session without a model: the synthesised inputs and their outcomes (``None``: not
    made yet)."""
    synthesising: bool = False
    synth_tests: dict[int, int] = field(default_factory=dict)
    """A synthesised input's number -> the test a person made of it."""

    def __post_init__(self) -> None:
        self.code = self.code or self.task.code
        self.round_limit = self.round_limit or self.settings.rounds
        self.records.style = "reference" if self.settings.variant.value == "reference" else "paper"

    def move(self, to: Phase) -> None:
        """Go to the phase ``to`` (:class:`PhaseError` when :data:`MOVES` does not allow it)."""
        if to is not self.phase and to not in MOVES[self.phase]:
            raise PhaseError(f"the app cannot go from {self.phase} to {to}")
        self.phase = to

    def shown_code(self) -> str:
        """The code in force as the Code and Diff views show it: a simulated model's
        stand-ins (``_sim_...`` wrappers, lookup tables) are not code anyone wrote, so each is
        said as a ``# SIMULATED ...`` line instead (:func:`utdebug.agents.sim.shown_code`)."""
        from utdebug.agents.sim import SIM_HELPER, shown_code

        if not SIM_HELPER.search(self.code):
            return self.code
        code, said = shown_code(self.code, self.task.entry_point)
        return code.rstrip() + "\n\n" + "".join(f"# {line}\n" for line in said)

    def pass_summary(self) -> str:
        """The tests panel's summary line."""
        if self.total is None:
            text = plural(len(self.tests), "test") if self.tests else "no tests yet"
        else:
            verb = "passes" if self.total == 1 else "pass"
            text = f"{self.passed}/{plural(self.total, 'test')} {verb} on the code in force"
        if self.originals:
            n = len(self.originals)
            done = [self.original_statuses.get(t.id) for t in self.originals]
            if all(done):
                passing = sum(s == "pass" for s in done)
                text += f" · orig: the first tests, {passing}/{n} pass"
            else:
                text += f" · orig: the first tests ({n}), running"
        return text

    # -- folding the session's events ------------------------------------------------------

    def tests_built(self, ev: TestsBuilt, stamp: Callable[[], str]) -> None:
        self.built_rounds.add(ev.round)
        self.keep_originals(ev, stamp)
        self.tests = list(ev.tests)
        self.statuses, self.passed, self.total = {}, None, None

    def keep_originals(self, ev: TestsBuilt, stamp: Callable[[], str]) -> None:
        """New tests replace the session's tests: those of the first set that go stay in
        the view as originals, with their status on the code in force (the run that made
        the session build new tests: the accepted edit's)."""
        if self.first_ids is None:
            if ev.tests:
                self.first_ids = [t.id for t in ev.tests]
            return
        new = {t.id for t in ev.tests}
        kept = {t.id for t in self.originals}
        first = set(self.first_ids)
        gone = [t for t in self.tests if t.id in first and t.id not in new | kept]
        if not gone:
            return
        when = stamp()
        for t in gone:
            status = self.statuses.get(t.id)
            if status is not None:
                self.original_statuses[t.id] = status
            self.records.add(
                t.id,
                when,
                "model",
                f"new tests were built in round {ev.round}; kept here as an original test "
                "(one of the first tests), run on the code in force",
            )
        # The statuses are the code in force's: kept unless they are not all there or the
        # originals kept before ran on other code (then the next run of the code in force
        # runs them all again).
        same = not self.originals or self.originals_code == self.statuses_code
        if same and all(t.id in self.statuses for t in gone):
            self.originals_code = self.statuses_code
        else:
            self.originals_code = None
        self.originals = sorted([*self.originals, *gone], key=lambda t: t.id)

    def current_run(self, ev: TestsRun) -> None:
        """The verdicts of the code in force (its own run, or the accepted candidate's)."""
        self.records.ran(ev)
        self.statuses = {
            int(v["id"]): verdict_status(str(v["verdict"]), v.get("detail")) for v in ev.verdicts
        }
        self.passed, self.total = ev.passed, ev.total
        self.statuses_code = ev.code_id

    def candidates_ranked(self, ev: CandidatesRanked) -> None:
        ranking = ev.ranking
        selected = set(ranking.get("selected", []))
        scores: dict[int, str] = {}
        for group in ranking.get("groups", []):
            for member in group.get("members", []):
                score = group.get("score")
                scores.setdefault(
                    int(member),
                    f"{score:.4g}" if isinstance(score, int | float) else str(score),
                )
        for i, (cid, rate) in enumerate(zip(ev.code_ids, ev.pass_rates, strict=False)):
            marks = []
            if i in selected:
                marks.append("selected")
            if ev.chosen == i:
                marks.append("chosen")
            self.candidate_rows.append(
                CandidateRow(ev.round, i, cid, percent(rate), scores.get(i, "—"), ", ".join(marks))
            )

    def test_changed(
        self, ev: TestChanged, session_tests: list[UnitTest] | None, when: str
    ) -> None:
        t = ev.test
        before = next((x for x in self.tests if x.id == t.id), None)
        self.records.changed(ev, before, when)
        if ev.action == "restored" and session_tests is not None:
            self.tests = list(session_tests)  # back where it was
        elif ev.action == "added":
            self.tests.append(t)
        elif ev.action == "deleted":
            self.tests = [x for x in self.tests if x.id != t.id]
            self.statuses.pop(t.id, None)
        else:
            self.tests = [t if x.id == t.id else x for x in self.tests]

    def round_row(self, round_no: int, rates: str, outcome: str, reason: str) -> None:
        self.timeline[f"r{round_no}"] = TimelineRow(str(round_no), rates, outcome, reason)

    def person_row(self, outcome: str, reason: str) -> None:
        self.person_changes += 1
        self.timeline[f"p{self.person_changes}"] = TimelineRow("·", "", outcome, reason)

    # -- the session file ------------------------------------------------------------------

    def saved(self, engine: dict[str, Any]) -> dict[str, Any]:
        """Everything a person sees and did, to take back in another process (``engine``:
        the session's snapshot)."""
        r = self.records
        return {
            "format": 1,
            "task_id": self.task.task_id,
            "given": self.task.code,
            "engine": engine,
            "statuses": {str(k): v for k, v in self.statuses.items()},
            "first_ids": self.first_ids,
            "originals": [t.to_json() for t in self.originals],
            "original_statuses": {str(k): v for k, v in self.original_statuses.items()},
            "originals_code": self.originals_code,
            "passed": self.passed,
            "total": self.total,
            "rounds_done": self.rounds_done,
            "round_limit": self.round_limit,
            "finish_reason": self.finish_reason,
            "taken_back_from": self.taken_back_from,
            "timeline": [[k, *astuple(v)] for k, v in self.timeline.items()],
            "transcript": [e.saved() for e in self.transcript],
            "votes": {str(k): [v.answers, v.refused] for k, v in r.votes.items()},
            "history": {
                str(k): [[h.when, h.who, h.what] for h in hs] for k, hs in r.history.items()
            },
        }

    def take_back(self, saved: dict[str, Any], code: str, tests: list[UnitTest]) -> None:
        """Restore a saved session's view (the session itself restored its ``code`` and
        ``tests`` from the file's ``engine`` part)."""
        self.started = True
        self.code = code
        self.tests = list(tests)
        self.statuses = {int(k): str(v) for k, v in saved.get("statuses", {}).items()}
        first = saved.get("first_ids")
        self.first_ids = None if first is None else [int(x) for x in first]
        self.originals = [
            t for t in (_read_test(x, self.code) for x in saved.get("originals", [])) if t
        ]
        self.original_statuses = {
            int(k): str(v) for k, v in saved.get("original_statuses", {}).items()
        }
        self.originals_code = saved.get("originals_code")
        self.passed, self.total = saved.get("passed"), saved.get("total")
        self.rounds_done = saved.get("rounds_done")
        self.round_limit = int(saved.get("round_limit") or self.settings.rounds)
        ended = saved.get("finish_reason")
        if ended == "resumed":  # taken back before, and not gone on since
            ended = saved.get("taken_back_from")
        self.taken_back_from = None if ended in (None, "cancelled") else str(ended)
        for key, *row in saved.get("timeline", []):
            self.timeline[str(key)] = TimelineRow(*(str(x) for x in row))
        self.person_changes = sum(1 for k in self.timeline if k.startswith("p"))
        for k, (answers, refused) in saved.get("votes", {}).items():
            self.records.votes[int(k)] = Votes(list(answers), list(refused), self.records.style)
        for k, hs in saved.get("history", {}).items():
            self.records.history[int(k)] = [HistoryEntry(*h) for h in hs]
        self.transcript.extend(read_transcript(saved.get("transcript", [])))


def _read_test(data: dict[str, Any], code: str) -> UnitTest | None:
    """A test of a saved session (``None``: one that does not read back)."""
    try:
        return UnitTest.from_json(data, module_source=code)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
