"""The engine's events in the app: one small handler per event type (:attr:`EngineEvents.ON_EVENT`),
each folding its event into the app's state and drawing it. The app holds one
:class:`EngineEvents` and hands it every event."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from utdebug.engine.events import (
    Backtracked,
    CandidatesRanked,
    DisagreementsFound,
    DoesNotLoad,
    EditAccepted,
    EditProposed,
    Event,
    Finished,
    ModelCalled,
    Paused,
    RolledBack,
    RoundFinished,
    SessionStarted,
    TestChanged,
    TestDropped,
    TestKept,
    TestProposed,
    TestsBuilt,
    TestsRun,
    VoteCast,
)
from utdebug.tui.format import (
    finish_words,
    percent,
    plural,
    pre_post,
    safe_repr,
    shorten,
    summarize_votes,
)
from utdebug.tui.state import Phase

if TYPE_CHECKING:
    from utdebug.tui.base import AppBase

PERSON_OUTCOMES = {
    "edited": "test edited",
    "added": "test added",
    "deleted": "test deleted",
    "restored": "test undone",
}
"""A person's change to a test, in the rounds panel's outcome column (12 cells: the words
are whole there; ``test restored`` was cut to ``test restore``)."""


class EngineEvents:
    """Folds each engine event into the app's state and draws it: a plain object the app
    holds (:attr:`~utdebug.tui.app.DebugApp.events`), with no Textual of its own."""

    def __init__(self, app: AppBase) -> None:
        self.app = app

    def fold(self, ev: Event) -> None:
        """Fold the event into the app's state and draw it (its handler in :attr:`ON_EVENT`;
        an event without one changes nothing)."""
        handler = self.ON_EVENT.get(type(ev))
        if handler is not None:
            handler(self, ev)

    def _session_started(self, ev: SessionStarted) -> None:
        self.app._note(f"session started: {ev.task_id} with {self.app._model_label()}", "bold")

    def _model_called(self, ev: ModelCalled) -> None:
        self.app._last_call = ev  # the usage is read from the session below

    def _test_proposed(self, ev: TestProposed) -> None:
        self.app.progress.round, self.app.progress.proposals = (
            ev.round,
            self.app.progress.proposals + 1,
        )
        what = ev.call if ev.call is not None else f"unparsable ({ev.reason})"
        header = f"[round {ev.round}] test proposal {ev.attempt + 1}: {what}"
        self.app._note_call(header, "bold cyan", ev.reply, "ut")

    def _vote_cast(self, ev: VoteCast) -> None:
        self.app.state.records.vote(ev)
        if ev.answer is None and ev.reason:
            self.app._note(f"  vote {ev.index + 1} refused: {ev.reason}", "yellow")

    def _test_kept(self, ev: TestKept) -> None:
        state = self.app.state
        state.records.kept(ev, self.app.config.stamp())
        self.app.progress.kept += 1
        votes = summarize_votes(state.records.votes[ev.test.id].tally())
        t = ev.test
        # The tests panel fills as tests are kept (a slow model shows progress at once).
        state.tests = [*(x for x in state.tests if x.id != t.id), t]
        self.app._draw_tests()
        self.app._note(
            f"  kept #{t.id} {t.call} → {shorten(safe_repr(t.expected), 40)} "
            f"(votes: {votes}; share {t.share:.0%})",
            "green",
        )

    def _test_dropped(self, ev: TestDropped) -> None:
        votes = summarize_votes(self.app.state.records.proposal_votes(ev.round, ev.attempt).tally())
        self.app._note(f"  dropped {ev.call or 'the proposal'}: {ev.reason} (votes: {votes})", "")

    def _does_not_load(self, ev: DoesNotLoad) -> None:
        self.app.state.load_line = ev.line
        hint = "fix the code (or what it needs) and debug it again"
        if ev.error.startswith("PermissionError"):  # a folder only its owner may read
            hint = (
                "the sandbox runs the code as another user: make the project folder "
                "readable by others (chmod o+rx), then debug it again"
            )
        self.app._note(
            f"[round {ev.round}] {ev.line}: nothing can run, so no model call is made; {hint}",
            "bold red",
        )

    def _tests_built(self, ev: TestsBuilt) -> None:
        self.app.progress.kept, self.app.progress.proposals = 0, 0
        self.app.state.tests_built(ev, self.app.config.stamp)
        self.app._note(
            f"[round {ev.round}] {plural(len(ev.tests), 'test')} kept of "
            f"{plural(ev.attempts, 'proposal')}"
        )
        self.app._draw_tests()

    def _tests_run(self, ev: TestsRun) -> None:
        if ev.role != "current":
            self.app.state.candidate_runs[ev.code_id] = ev
            self.app._note(f"  candidate {ev.code_id} passes {ev.passed}/{ev.total}")
            return
        self.app._note(f"  code in force {ev.code_id} passes {ev.passed}/{ev.total}")
        self._show_current_run(ev)

    def _edit_proposed(self, ev: EditProposed) -> None:
        which = "" if ev.candidate is None else f" candidate {ev.candidate + 1}"
        fb = "" if ev.feedback_test is None else f" (feedback: test #{ev.feedback_test})"
        header = f"[round {ev.round}] edit{which}{fb}"
        self.app._note_call(header, "bold magenta", ev.reply, "debug")
        if ev.reason:
            self.app._note(f"  {ev.reason}", "yellow")
        for label, items in (
            ("replaced", ev.replaced),
            ("added", ev.added),
            ("left out", ev.dropped),
        ):
            if items:
                self.app._note(f"  {label}: {', '.join(items)}", "cyan")

    def _candidates_ranked(self, ev: CandidatesRanked) -> None:
        self.app.state.candidates_ranked(ev)
        chosen = "the code in force" if ev.chosen is None else f"row {ev.chosen}"
        self.app._note(
            f"[round {ev.round}] {ev.ranking.get('strategy', 'ranking')} ranked "
            f"{len(ev.code_ids) - 1} candidates: chose {chosen}",
            "bold",
        )
        self.app._draw_candidates()

    def _disagreements_found(self, ev: DisagreementsFound) -> None:
        first = f": {', '.join(ev.inputs)}" if ev.inputs else ""
        self.app._note(
            f"[round {ev.round}] the {ev.programs} programs (the code in force and the "
            f"candidates) disagree on {ev.found} of {ev.checked} synthesised inputs, voted on "
            f"first{first}",
            "cyan",
        )

    def _edit_accepted(self, ev: EditAccepted) -> None:
        taken = self.app.state.candidate_runs.get(ev.code_id)
        if taken is not None:
            self._show_current_run(taken)
        self._round_row(ev.round, pre_post(ev.pre, ev.post), "accepted", ev.reason)
        self.app._note(f"[round {ev.round}] edit accepted: {ev.reason}", "bold green")

    def _backtracked(self, ev: Backtracked) -> None:
        self._round_row(ev.round, pre_post(ev.pre, ev.post), "backtracked", ev.reason)
        self.app._note(f"[round {ev.round}] backtracked: {ev.reason}", "bold yellow")

    def _round_finished(self, ev: RoundFinished) -> None:
        state = self.app.state
        state.candidate_runs.clear()
        self.app.progress.round = ev.round + 1
        self.app.progress.kept, self.app.progress.proposals = 0, 0
        state.rounds_done = ev.round
        state.code = ev.code
        if f"r{ev.round}" not in state.timeline:
            if ev.round == 0:
                outcome, why = "given code", "" if state.load_line is None else "does not load"
            elif ev.round in state.built_rounds:
                outcome, why = "new tests", "built for the code in force; no edit needed"
            else:
                outcome, why = "finished", ""
            self._round_row(ev.round, percent(ev.pass_rate), outcome, why)
        self.app._draw_code()

    def _test_changed(self, ev: TestChanged) -> None:
        session_tests = None if self.app.session is None else list(self.app.session.tests)
        self.app.state.test_changed(ev, session_tests, self.app.config.stamp())
        t = ev.test
        detail = f"#{t.id} {t.call} → {shorten(safe_repr(t.expected), 30)}"
        self._person_row(PERSON_OUTCOMES.get(ev.action, f"test {ev.action}"), detail)
        self.app._note(f"a person {ev.action} test {detail}", "bold")
        self.app._draw_tests()

    def _rolled_back(self, ev: RolledBack) -> None:
        self.app.state.code = ev.code
        if self.app.state.phase is Phase.FINISHED:  # the finish reason was about another version
            self.app.state.rolled_back_to = ev.version
        self._person_row("rolled back", f"to version {ev.version} ({ev.code_id})")
        self.app._note(f"rolled back to version {ev.version} ({ev.code_id})", "bold")
        self.app._draw_code()

    def _paused(self, ev: Paused) -> None:
        self.app.state.move(Phase.PAUSED)
        self.app.state.paused_round = ev.round
        self.app._note(f"paused ({self.app._state_text()})", "bold")

    def _finished(self, ev: Finished) -> None:
        state = self.app.state
        state.code = ev.code
        state.finish_reason = ev.reason
        state.rolled_back_to = state.taken_back_from = None
        state.error = ev.error
        state.move(Phase.ERROR if ev.reason == "error" else Phase.FINISHED)
        self.app._resolve_review(False)  # nothing is waiting any more
        words = finish_words(ev.reason)
        if ev.error:
            self.app._note(f"stopped by a model error: {ev.error} (r asks again)", "bold red")
        else:
            self.app._note(f"finished: {words}", "bold")
        self.app._draw_code()
        if ev.error:
            self.app._tell(f"the model failed: {ev.error}; r asks again", "error")
        elif ev.reason == "does_not_load" and state.load_line is not None:
            self.app._tell(state.load_line, "error")
        elif state.code.strip() != self.app.debug_task.code.strip():
            self.app._tell(f"finished ({words}): w writes the fix back, t exports the tests")
        else:
            self.app._tell(f"finished ({words}) without a change to the code")

    ON_EVENT: ClassVar[dict[type[Event], Callable[[Any, Any], None]]] = {
        SessionStarted: _session_started,
        ModelCalled: _model_called,
        TestProposed: _test_proposed,
        VoteCast: _vote_cast,
        TestKept: _test_kept,
        TestDropped: _test_dropped,
        DoesNotLoad: _does_not_load,
        TestsBuilt: _tests_built,
        TestsRun: _tests_run,
        EditProposed: _edit_proposed,
        CandidatesRanked: _candidates_ranked,
        DisagreementsFound: _disagreements_found,
        EditAccepted: _edit_accepted,
        Backtracked: _backtracked,
        RoundFinished: _round_finished,
        TestChanged: _test_changed,
        RolledBack: _rolled_back,
        Paused: _paused,
        Finished: _finished,
    }
    """Each engine event's handler: it folds the event into :attr:`state` and draws it."""

    def _show_current_run(self, ev: TestsRun) -> None:
        """The verdicts of the code in force (its own run, or the accepted candidate's)."""
        self.app.state.current_run(ev)
        self.app._run_originals(ev.code_id)
        self.app._draw_tests()

    def _round_row(self, round_no: int, rates: str, outcome: str, reason: str) -> None:
        self.app.state.round_row(round_no, rates, outcome, reason)
        self.app._draw_timeline()

    def _person_row(self, outcome: str, reason: str) -> None:
        self.app.state.person_row(outcome, reason)
        self.app._draw_timeline()
