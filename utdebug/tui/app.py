"""``DebugApp``: the interactive front end over one engine :class:`Session`.

The session runs in an async worker and reports through its events; every widget update
happens in a message handler here (see :mod:`utdebug.tui` for the message flow). A person's
changes go through the engine's own coroutines (``set_expected``, ``add_test``,
``delete_test``, ``rollback``), only while the session is idle (paused or finished).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.widgets import DataTable, Footer, TabbedContent, TabPane
from textual.worker import Worker, WorkerState

from utdebug.agents.base import Model
from utdebug.engine.events import (
    Backtracked,
    CandidatesRanked,
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
from utdebug.engine.execution import Executor, TestRun
from utdebug.engine.model import Settings, Task, UnitTest, code_id
from utdebug.engine.session import Control, EditReview, Session
from utdebug.tui.actions import bindings
from utdebug.tui.activity import CallTracker, Progress, describe, spinner, traffic_line
from utdebug.tui.commands import DebugCommands
from utdebug.tui.details import SessionInfoScreen, TestDetail, TestDetailScreen
from utdebug.tui.format import (
    StatusPart,
    actual_text,
    finish_words,
    percent,
    plural,
    pre_post,
    safe_repr,
    shorten,
    summarize_votes,
    verdict_status,
)
from utdebug.tui.messages import (
    EngineEvent,
    OriginalsRun,
    PersonDone,
    PersonFailed,
    ReviewRequested,
)
from utdebug.tui.records import Actual
from utdebug.tui.screens import (
    AddTestScreen,
    Edited,
    EditExpectedScreen,
    HelpScreen,
    NewProgram,
    NewTest,
    ProgramTestScreen,
    ReviewScreen,
    RollbackScreen,
    SearchScreen,
    WriteBackScreen,
)
from utdebug.tui.state import CALL_MARK, AppState, Phase, line, reply_entries
from utdebug.tui.widgets import (
    CandidatesPanel,
    CodePanel,
    Frame,
    RoundsTable,
    StatusBar,
    TestsPanel,
    TooSmall,
    Transcript,
    side_by_side_width,
)
from utdebug.workspace import (
    LoadedFunction,
    WorkspaceError,
    changed_on_disk,
    export_patch,
    export_pytest,
    function_diff,
    render_pytest,
    write_back,
)

MIN_WIDTH, MIN_HEIGHT = 80, 24
NARROW_WIDTH = 120
"""Under this many columns the code and the tests stack (each gets the full width)."""
SHORT_HEIGHT = 32
"""Under this many rows the bottom tabs shrink and the task text moves to a border title."""
TICK_SECONDS = 0.1
"""How often the status line's spinner and elapsed time are redrawn while a session runs."""
PANELS = {
    "code": ("code-tabs", "tab-code"),
    "diff": ("code-tabs", "tab-diff"),
    "rounds": ("bottom-tabs", "tab-rounds"),
    "candidates": ("bottom-tabs", "tab-candidates"),
    "transcript": ("bottom-tabs", "tab-transcript"),
}


@dataclass(frozen=True, slots=True)
class Started:
    """What the start-up work hands the app: the model to use (probed), the executor over a
    started sandbox and the sandbox's layers."""

    model: Model
    executor: Executor
    sandbox_layers: Sequence[str] = ()
    sandbox_total: int | None = None
    note: str | None = None
    """What the probe found, for the transcript."""


class StartupFailed(Exception):
    """The app cannot start: one line and the command's exit code (1: the model cannot be
    used, 3: the sandbox)."""

    def __init__(self, line: str, exit_code: int) -> None:
        super().__init__(line)
        self.line = line
        self.exit_code = exit_code


@dataclass(frozen=True, slots=True)
class Undo:
    """A person's change that can be undone: what it was, and how to undo it."""

    what: str
    revert: Callable[[Session], Awaitable[TestRun]]


CANDIDATES_HINT = "run with --candidates C to rank several edits"

CSS = """
#frame, #body { height: 1fr; }
#top { height: 3fr; }
#code-panel { width: 2fr; }
#tests-panel { width: 3fr; border: round $primary; border-title-color: $text; padding: 0; }
#tests-summary { height: 1; padding: 0 1; }
#bottom-tabs { height: 2fr; }
TabbedContent { height: 1fr; }
TabbedContent > ContentSwitcher { height: 1fr; }
TabPane { height: 1fr; padding: 0; }
#code-scroll, #diff-scroll { height: 1fr; }
#task-text { padding: 0 1 1 1; }
#candidates-hint { height: auto; padding: 0 1; }
#transcript, #rounds-table { height: 1fr; }
StatusBar { height: 1; background: $panel; padding: 0 1; }
/* Narrow terminals (under 120 columns): the code above the tests, both full width. */
#frame.-narrow #top { layout: vertical; }
#frame.-narrow #code-panel { width: 1fr; height: 1fr; }
#frame.-narrow #tests-panel { width: 1fr; height: 1fr; }
/* Short terminals (under 32 rows): the task text goes to the border title, the bottom tabs
   shrink to a few rows (4 to 6 bring them back in full). */
#frame.-short #task-text { display: none; }
#frame.-short #bottom-tabs { height: 6; }
#frame.-short #bottom-tabs.-full { height: 2fr; }
#frame.-short.-narrow #top { height: 1fr; }
/* Notifications stay above the status bar and the footer. */
ToastRack { margin-bottom: 2; }
TooSmall { height: 1fr; content-align: center middle; text-style: bold; display: none; }
"""


class DebugApp(App[None]):
    """Debug one function interactively; see the module docstring.

    The caller owns ``executor`` (and its sandbox) and closes it after :meth:`run`; the app
    creates the :class:`Control` and the :class:`Session` on mount (``self.session``).
    """

    TITLE = "utdebug"
    CSS = CSS
    BINDINGS: ClassVar[list[BindingType]] = list(bindings())
    COMMANDS = App.COMMANDS | {DebugCommands}

    def __init__(
        self,
        task: Task,
        model: Model,
        executor: Executor,
        settings: Settings | None = None,
        *,
        loaded: LoadedFunction | None = None,
        sandbox_layers: Sequence[str] = (),
        sandbox_total: int | None = None,
        autostart: bool = True,
        review: bool = False,
        step_first: bool = False,
        clock: Callable[[], float] = time.monotonic,
        stamp: Callable[[], str] = lambda: time.strftime("%H:%M:%S"),
        starting: Callable[[], Started] | None = None,
        session_file: Path | None = None,
        resume: dict[str, Any] | None = None,
        keymap: dict[str, str] | None = None,
        theme: str | None = None,
    ) -> None:
        super().__init__()
        if keymap:
            self.set_keymap(keymap)
        self.theme_problem: str | None = None
        """A configured theme that does not exist (said once the app is up)."""
        if theme is not None:
            if theme in self.available_themes:
                self.theme = theme
            else:
                known = ", ".join(sorted(self.available_themes))
                self.theme_problem = f"no theme {theme!r} (the config file's [tui]); known: {known}"
        self.session_file = session_file
        """Where the session is saved as it happens (``None``: nowhere)."""
        self.resume = resume
        """A saved session to take back instead of starting a new one."""
        self.starting = starting
        """Work done after the first screen is drawn, in a thread (the sandbox, the model's
        probe): its :class:`Started` replaces the model, the executor and the sandbox layers;
        a :class:`StartupFailed` ends the app with its line and exit code."""
        self.startup_failure: StartupFailed | None = None
        """Why the app could not start (the command says it again on exit)."""
        self.clock = clock
        """Seconds for the spinner and elapsed times (tests freeze it)."""
        self.stamp = stamp
        """Wall-clock time of a test's history entries (tests freeze it)."""
        self.tracker = CallTracker(model, clock)
        """The session's model: it remembers the calls in flight (the activity line)."""
        self.progress = Progress(since=clock())
        self.undo_stack: list[Undo] = []
        self.debug_task = task
        self.model = model
        self.executor = executor
        self.settings = settings or Settings()
        self.loaded = loaded
        """The source file of the function (write back and export need it)."""
        self.sandbox_layers = tuple(str(layer) for layer in sandbox_layers)
        self.sandbox_total = sandbox_total
        """How many layers the sandbox has in all (the short status form: ``sandbox 8/8``)."""
        self.autostart = autostart
        self.review_by_hand = review
        self.step_first = step_first
        self.control: Control | None = None
        self.session: Session | None = None
        self.state = AppState(task, self.settings)
        """What the panels show: drawn from here, saved from here."""
        self.pending_review: ReviewRequested | None = None
        self.person_busy = 0
        """Changes by a person that are being applied (workers in the ``person`` group)."""
        self.notices: list[str] = []
        """Every notification shown, in order (tests read it; toasts are off in tests)."""
        self._last_call: ModelCalled | None = None
        """The model call that just ended (its time goes on the reply's line)."""
        self._save_failed = False
        self.copied: str | None = None
        """What was copied last (tests read it; the terminal's clipboard is not readable)."""

    # -- layout -----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Frame(
            (MIN_WIDTH, MIN_HEIGHT),
            narrow_width=NARROW_WIDTH,
            short_height=SHORT_HEIGHT,
            id="frame",
        ):
            with Vertical(id="body"):
                with Horizontal(id="top"):
                    yield CodePanel(id="code-panel")
                    yield TestsPanel(id="tests-panel")
                with TabbedContent(id="bottom-tabs", initial="tab-rounds"):
                    with TabPane("Rounds", id="tab-rounds"):
                        yield RoundsTable(id="rounds-table")
                    with TabPane("Candidates", id="tab-candidates"):
                        yield CandidatesPanel(id="candidates-panel")
                    with TabPane("Transcript", id="tab-transcript"):
                        yield Transcript(id="transcript")
                yield StatusBar(id="status")
            yield TooSmall(id="too-small")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#tests-panel", TestsPanel).border_title = "tests"
        self.query_one(Frame).fit()
        self.query_one(CodePanel).show_task(self.debug_task.task_id, self.debug_task.description)
        self._draw_code()
        self._draw_tests()
        self._draw_timeline()
        self._draw_candidates()
        self.query_one(TestsPanel).table.focus()
        if self.theme_problem is not None:
            self._tell(self.theme_problem, "warning")
        self.set_interval(TICK_SECONDS, self._tick)
        if self.starting is not None:
            self.state.move(Phase.STARTING)
            self._draw_status()
            self.run_worker(
                self.starting, name="startup", group="startup", thread=True, exit_on_error=False
            )
            return
        self._begin()

    def _begin(self) -> None:
        """Make the session (the model and the sandbox are ready) and start it."""
        self.control = Control()
        if self.step_first:
            self.control.step(1)
        self.session = Session(
            self.debug_task,
            self.tracker,
            self.executor,
            self.settings,
            control=self.control,
            listeners=[self._listen],
            review=self._review if self.review_by_hand else None,
        )
        self._draw_status()
        if self.resume is not None:
            self._take_back(self.resume)
            return
        if self.autostart:
            self._start()

    # -- a session that outlives the app ----------------------------------------------------

    def saved(self) -> dict[str, Any]:
        """Everything a person sees and did, to take back in another process."""
        assert self.session is not None
        return self.state.saved(self.session.snapshot())

    def _save(self) -> None:
        if self.session_file is None or self.session is None:
            return
        from utdebug.runs.records import RunFolderError, write_text_atomic

        try:
            write_text_atomic(self.session_file, json.dumps(self.saved()))
        except (RunFolderError, OSError, TypeError, ValueError) as exc:
            if not self._save_failed:
                self._save_failed = True
                self._tell(f"the session cannot be saved: {exc}", "error")

    def _take_back(self, saved: dict[str, Any]) -> None:
        """Restore a saved session: tests, votes, edits, rounds and transcript."""
        assert self.session is not None
        self.session.restore(saved["engine"])
        self.state.take_back(saved, self.session.code, list(self.session.tests))
        self._show_transcript()
        self._note("session taken back from its file: r goes on, s runs one round", "bold")
        self.state.move(Phase.FINISHED)
        self.state.finish_reason = "resumed"
        self._draw_code()
        self._draw_tests()
        self._draw_timeline()
        self._draw_status()
        self._save()

    def _tick(self) -> None:
        """Redraw the activity (spinner, elapsed time) while the session works."""
        if self.state.phase.busy:
            with contextlib.suppress(NoMatches):  # the app is closing: nothing to draw on
                self._draw_status()

    # -- the session (worker) ---------------------------------------------------------------

    def _listen(self, event: Event) -> None:
        """The session's listener: post the event; the handler below draws it."""
        self.post_message(EngineEvent(event))

    def _start(self) -> None:
        assert self.session is not None
        self.state.started = True
        self.state.move(Phase.RUNNING)
        self._draw_status()
        self.run_worker(
            self._run_session(self.session),
            name="session",
            group="session",
            exclusive=True,
            exit_on_error=False,
        )

    async def _run_session(self, session: Session) -> None:
        await session.run()

    async def _review(self, review: EditReview) -> bool:
        """The session's reviewer: ask a person (while review by hand is on)."""
        if not self.review_by_hand:
            return review.rule_accepts
        decision: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.post_message(ReviewRequested(review, decision))
        return await decision

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "startup":
            self._started(event)
            return
        if event.worker.group != "session" or event.state is not WorkerState.ERROR:
            return
        error = event.worker.error
        self.state.move(Phase.ERROR)
        self.state.error = f"{type(error).__name__}: {error}" if error else "the session failed"
        self._draw_status()
        self._tell(f"the session stopped: {self.state.error}", "error")

    def _started(self, event: Worker.StateChanged) -> None:
        """The start-up worker ended: begin the session, or end the app with why not."""
        if event.state is WorkerState.SUCCESS:
            ready = event.worker.result
            assert isinstance(ready, Started)
            self.model = ready.model
            self.tracker = CallTracker(ready.model, self.clock)
            self.executor = ready.executor
            self.sandbox_layers = tuple(ready.sandbox_layers)
            self.sandbox_total = ready.sandbox_total
            if ready.note:
                self._note(ready.note, "dim")
            self.state.move(Phase.READY)
            self._begin()
        elif event.state is WorkerState.ERROR:
            error = event.worker.error
            failure = (
                error
                if isinstance(error, StartupFailed)
                else StartupFailed(f"{type(error).__name__}: {error}", 1)
            )
            self.startup_failure = failure
            self.state.move(Phase.ERROR)
            self.state.error = failure.line
            self._draw_status()
            self.exit(return_code=failure.exit_code)

    # -- engine events ----------------------------------------------------------------------

    def on_engine_event(self, message: EngineEvent) -> None:
        """Fold the event into the state (its handler in :attr:`ON_EVENT`), then redraw the
        status line and save the session."""
        ev = message.event
        self.progress.since = self.clock()
        handler = self.ON_EVENT.get(type(ev))
        if handler is not None:
            handler(self, ev)
        self._draw_status()
        self._save()

    def _session_started(self, ev: SessionStarted) -> None:
        self._note(f"session started: {ev.task_id} with {self._model_label()}", "bold")

    def _model_called(self, ev: ModelCalled) -> None:
        self._last_call = ev  # the usage is read from the session below

    def _test_proposed(self, ev: TestProposed) -> None:
        self.progress.round, self.progress.proposals = ev.round, self.progress.proposals + 1
        what = ev.call if ev.call is not None else f"unparsable ({ev.reason})"
        header = f"[round {ev.round}] test proposal {ev.attempt + 1}: {what}"
        self._note_call(header, "bold cyan", ev.reply, "ut")

    def _vote_cast(self, ev: VoteCast) -> None:
        self.state.records.vote(ev)
        if ev.answer is None and ev.reason:
            self._note(f"  vote {ev.index + 1} refused: {ev.reason}", "yellow")

    def _test_kept(self, ev: TestKept) -> None:
        state = self.state
        state.records.kept(ev, self.stamp())
        self.progress.kept += 1
        votes = summarize_votes(state.records.votes[ev.test.id].tally())
        t = ev.test
        # The tests panel fills as tests are kept (a slow model shows progress at once).
        state.tests = [*(x for x in state.tests if x.id != t.id), t]
        self._draw_tests()
        self._note(
            f"  kept #{t.id} {t.call} → {shorten(safe_repr(t.expected), 40)} "
            f"(votes: {votes}; share {t.share:.0%})",
            "green",
        )

    def _test_dropped(self, ev: TestDropped) -> None:
        votes = summarize_votes(self.state.records.proposal_votes(ev.round, ev.attempt).tally())
        self._note(f"  dropped {ev.call or 'the proposal'}: {ev.reason} (votes: {votes})", "")

    def _does_not_load(self, ev: DoesNotLoad) -> None:
        self.state.load_line = ev.line
        hint = "fix the code (or what it needs) and debug it again"
        if ev.error.startswith("PermissionError"):  # a folder only its owner may read
            hint = (
                "the sandbox runs the code as another user: make the project folder "
                "readable by others (chmod o+rx), then debug it again"
            )
        self._note(
            f"[round {ev.round}] {ev.line}: nothing can run, so no model call is made; {hint}",
            "bold red",
        )

    def _tests_built(self, ev: TestsBuilt) -> None:
        self.progress.kept, self.progress.proposals = 0, 0
        self.state.tests_built(ev, self.stamp)
        self._note(
            f"[round {ev.round}] {plural(len(ev.tests), 'test')} kept of "
            f"{plural(ev.attempts, 'proposal')}"
        )
        self._draw_tests()

    def _tests_run(self, ev: TestsRun) -> None:
        if ev.role != "current":
            self.state.candidate_runs[ev.code_id] = ev
            self._note(f"  candidate {ev.code_id} passes {ev.passed}/{ev.total}")
            return
        self._note(f"  code in force {ev.code_id} passes {ev.passed}/{ev.total}")
        self._show_current_run(ev)

    def _edit_proposed(self, ev: EditProposed) -> None:
        which = "" if ev.candidate is None else f" candidate {ev.candidate + 1}"
        fb = "" if ev.feedback_test is None else f" (feedback: test #{ev.feedback_test})"
        header = f"[round {ev.round}] edit{which}{fb}"
        self._note_call(header, "bold magenta", ev.reply, "debug")
        if ev.reason:
            self._note(f"  {ev.reason}", "yellow")
        for label, items in (
            ("replaced", ev.replaced),
            ("added", ev.added),
            ("left out", ev.dropped),
        ):
            if items:
                self._note(f"  {label}: {', '.join(items)}", "cyan")

    def _candidates_ranked(self, ev: CandidatesRanked) -> None:
        self.state.candidates_ranked(ev)
        chosen = "the code in force" if ev.chosen is None else f"row {ev.chosen}"
        self._note(
            f"[round {ev.round}] {ev.ranking.get('strategy', 'ranking')} ranked "
            f"{len(ev.code_ids) - 1} candidates: chose {chosen}",
            "bold",
        )
        self._draw_candidates()

    def _edit_accepted(self, ev: EditAccepted) -> None:
        taken = self.state.candidate_runs.get(ev.code_id)
        if taken is not None:
            self._show_current_run(taken)
        self._round_row(ev.round, pre_post(ev.pre, ev.post), "accepted", ev.reason)
        self._note(f"[round {ev.round}] edit accepted: {ev.reason}", "bold green")

    def _backtracked(self, ev: Backtracked) -> None:
        self._round_row(ev.round, pre_post(ev.pre, ev.post), "backtracked", ev.reason)
        self._note(f"[round {ev.round}] backtracked: {ev.reason}", "bold yellow")

    def _round_finished(self, ev: RoundFinished) -> None:
        state = self.state
        state.candidate_runs.clear()
        self.progress.round = ev.round + 1
        self.progress.kept, self.progress.proposals = 0, 0
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
        self._draw_code()

    def _test_changed(self, ev: TestChanged) -> None:
        session_tests = None if self.session is None else list(self.session.tests)
        self.state.test_changed(ev, session_tests, self.stamp())
        t = ev.test
        detail = f"#{t.id} {t.call} → {shorten(safe_repr(t.expected), 30)}"
        self._person_row(f"test {ev.action}", detail)
        self._note(f"a person {ev.action} test {detail}", "bold")
        self._draw_tests()

    def _rolled_back(self, ev: RolledBack) -> None:
        self.state.code = ev.code
        if self.state.phase is Phase.FINISHED:  # the finish reason was about another version
            self.state.rolled_back_to = ev.version
        self._person_row("rolled back", f"to version {ev.version} ({ev.code_id})")
        self._note(f"rolled back to version {ev.version} ({ev.code_id})", "bold")
        self._draw_code()

    def _paused(self, ev: Paused) -> None:
        self.state.move(Phase.PAUSED)
        self.state.paused_round = ev.round
        self._note(f"paused ({self._state_text()})", "bold")

    def _finished(self, ev: Finished) -> None:
        state = self.state
        state.code = ev.code
        state.finish_reason = ev.reason
        state.rolled_back_to = state.taken_back_from = None
        state.error = ev.error
        state.move(Phase.ERROR if ev.reason == "error" else Phase.FINISHED)
        self._resolve_review(False)  # nothing is waiting any more
        words = finish_words(ev.reason)
        if ev.error:
            self._note(f"stopped by a model error: {ev.error} (r asks again)", "bold red")
        else:
            self._note(f"finished: {words}", "bold")
        self._draw_code()
        if ev.error:
            self._tell(f"the model failed: {ev.error}; r asks again", "error")
        elif ev.reason == "does_not_load" and state.load_line is not None:
            self._tell(state.load_line, "error")
        elif state.code.strip() != self.debug_task.code.strip():
            self._tell(f"finished ({words}): w writes the fix back, t exports the tests")
        else:
            self._tell(f"finished ({words}) without a change to the code")

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
        self.state.current_run(ev)
        self._run_originals(ev.code_id)
        self._draw_tests()

    def _run_originals(self, cid: str) -> None:
        """Run the originals on the code ``cid`` (the code in force now) unless they ran on
        it already; the result comes back as :class:`OriginalsRun`."""
        if not self.state.originals or cid == self.state.originals_code:
            return
        code = self._code_of(cid)
        if code is None:
            return
        self.state.originals_code = cid
        self.state.original_statuses = {}
        tests = list(self.state.originals)
        task, settings = self.debug_task, self.settings

        async def run() -> None:
            try:
                done = await self.executor.run_tests(
                    task, code, tests, settings.variant, settings.limits
                )
            except Exception as exc:  # the sandbox failed: said, the app stays
                self.post_message(OriginalsRun(cid, [], str(exc)))
                return
            results = [
                (t.id, verdict_status(j.verdict.value, j.detail), j.detail)
                for t, j in zip(tests, done.results, strict=True)
            ]
            self.post_message(OriginalsRun(cid, results))

        self.run_worker(run(), name="originals", group="originals", exit_on_error=False)

    def _code_of(self, cid: str) -> str | None:
        """The code whose id is ``cid``: the code in force or an accepted version."""
        session = self.session
        codes = [self.state.code]
        if session is not None:
            codes += [session.code, *(v.code for v in reversed(session.versions))]
        return next((c for c in codes if code_id(c) == cid), None)

    def on_originals_run(self, message: OriginalsRun) -> None:
        if message.code_id != self.state.originals_code:
            return  # the code in force changed since: a newer run is on its way
        if message.error is not None:
            self._tell(f"the first tests could not run again: {message.error}", "error")
            return
        for test_id, status, detail in message.results:
            self.state.original_statuses[test_id] = status
            self.state.records.actual[test_id] = Actual(status, detail, message.code_id)
        self._draw_tests()
        self._save()

    def _round_row(self, round_no: int, rates: str, outcome: str, reason: str) -> None:
        self.state.round_row(round_no, rates, outcome, reason)
        self._draw_timeline()

    def _person_row(self, outcome: str, reason: str) -> None:
        self.state.person_row(outcome, reason)
        self._draw_timeline()

    # -- review by hand ---------------------------------------------------------------------

    def on_review_requested(self, message: ReviewRequested) -> None:
        self.pending_review = message
        self.state.move(Phase.REVIEW)
        self._draw_status()
        r = message.review
        self._note(f"[round {r.round}] edit awaiting review ({pre_post(r.pre, r.post)})", "bold")

        def decided(accept: bool | None) -> None:
            if accept is not None and self.pending_review is message:
                self._resolve_review(accept)

        self.push_screen(
            ReviewScreen(r.round, self.state.code, r.code, r.pre, r.post, r.rule_accepts), decided
        )

    def _resolve_review(self, accept: bool) -> None:
        pending = self.pending_review
        if pending is None:
            return
        self.pending_review = None
        if not pending.decision.done():
            pending.decision.set_result(accept)
        if self.state.phase is Phase.REVIEW:
            self.state.move(Phase.RUNNING)
        if isinstance(self.screen, ReviewScreen):
            self.screen.dismiss(None)
        self._note(f"a person {'accepted' if accept else 'rejected'} the edit", "bold")
        self._draw_status()

    # -- a person's changes -----------------------------------------------------------------

    def _idle_session(self) -> Session | None:
        """The session, when a person may change it now (else say why and return None)."""
        session = self.session
        if session is None:
            self._tell("no session yet", "warning")
            return None
        if not session.idle or self.pending_review is not None:
            self._tell("pause first (p)", "warning")
            return None
        if self.person_busy:
            self._tell("wait: the last change is still being applied", "warning")
            return None
        return session

    def _selected_test(self, originals: bool = True) -> UnitTest | None:
        """The selected test (an original one only when ``originals``: it can be read,
        copied and run, not changed)."""
        test_id = self.query_one(TestsPanel).selected_id()
        for t in self.state.tests:
            if t.id == test_id:
                return t
        for t in self.state.originals:
            if t.id == test_id:
                if originals:
                    return t
                self._tell(
                    f"test #{t.id} is an original test (one of the first, kept to show whether "
                    "the fix holds): it is not among the session's tests now; a adds a test",
                    "warning",
                )
                return None
        self._tell("no test selected", "warning")
        return None

    def _person(
        self,
        what: str,
        work: Callable[[Session], Awaitable[TestRun]],
        undo: Callable[[Session], Undo | None] | None = None,
    ) -> None:
        """Run a person's change in a worker; the engine's events redraw the panels.

        ``undo`` is called with the session once the change is made and returns how to undo
        it (pushed on :attr:`undo_stack`; ``u`` pops it)."""
        session = self._idle_session()
        if session is None:
            return
        self.person_busy += 1

        async def apply() -> None:
            try:
                run = await work(session)
            except Exception as exc:  # SessionBusy, a gone test or version, a sandbox failure
                reason = exc.args[0] if len(exc.args) == 1 else str(exc)
                self.post_message(PersonFailed(what, str(reason)))
            else:
                step = undo(session) if undo is not None else None
                if step is not None:
                    self.undo_stack.append(step)
                self.post_message(PersonDone(what, run.passed, run.total))

        self.run_worker(apply(), name=what, group="person", exit_on_error=False)

    def on_person_done(self, message: PersonDone) -> None:
        self.person_busy = max(self.person_busy - 1, 0)
        self._save()
        if message.total == 0 and message.what.startswith("test #"):  # a re-run: said as is
            self._tell(message.what)
            return
        again = " (u undoes)" if self.undo_stack and not message.what.startswith("undo") else ""
        self._tell(
            f"{message.what}: {message.passed}/{plural(message.total, 'test')} pass now{again}"
        )

    def on_person_failed(self, message: PersonFailed) -> None:
        self.person_busy = max(self.person_busy - 1, 0)
        self._tell(f"{message.what} failed: {message.error}", "error")

    # -- actions ----------------------------------------------------------------------------

    def _can_drive(self) -> bool:
        if self.state.phase.ended:
            return False
        if self.person_busy:
            self._tell("wait: a change is being applied", "warning")
            return False
        return True

    def _continue(self, rounds: int) -> None:
        """After the end: go on for ``rounds`` more rounds with the tests and the code as a
        person left them (or say why not)."""
        session = self.session
        if session is None or self.control is None:
            return
        if self.person_busy:
            self._tell("wait: a change is being applied", "warning")
            return
        refusal = session.continue_refusal()
        if refusal is not None:
            why = (
                self.state.error
                if self.state.phase is Phase.ERROR
                else finish_words(self.state.finish_reason)
            )
            self._tell(f"the session has ended ({why}): {refusal}", "warning")
            return
        # A model error is a pause: r and s ask again from the round it cut short.
        retry = self.state.phase is Phase.ERROR
        self.state.move(Phase.RUNNING)
        self.state.finish_reason = self.state.error = None
        done = -1 if self.state.rounds_done is None else self.state.rounds_done
        self.state.round_limit = done + rounds + (1 if done < 0 else 0)
        if retry:
            self._note("asking the model again from where it failed", "bold")
        else:
            self._note(
                f"going on for {plural(rounds, 'more round')} on the tests as they are now", "bold"
            )
        self._draw_status()
        self.run_worker(
            session.continue_rounds(rounds),
            name="session",
            group="session",
            exclusive=True,
            exit_on_error=False,
        )

    def _still_starting(self) -> bool:
        if self.session is None and self.state.phase is Phase.STARTING:
            self._tell("still starting (the sandbox and the model's probe): a moment", "warning")
            return True
        return False

    def action_run(self) -> None:
        if self._still_starting():
            return
        if not self.state.started:
            self._start()
            return
        if self.state.phase.ended:
            self._continue(self.settings.rounds)
            return
        if not self._can_drive() or self.control is None:
            return
        self.control.resume()
        if self.state.phase in (Phase.PAUSED, Phase.PAUSING):
            self.state.move(Phase.RUNNING)
        self._draw_status()

    def action_pause(self) -> None:
        if not self.state.started:
            self._tell("the session has not started: r runs it, s runs one round", "warning")
            return
        if self.state.phase.ended:
            self._tell("the session has ended: r or s goes on with more rounds", "warning")
            return
        if not self._can_drive() or self.control is None:
            return
        self.control.pause()
        if self.state.phase is Phase.RUNNING:
            self.state.move(Phase.PAUSING)
        self._draw_status()

    def action_step(self) -> None:
        if self._still_starting() or self.control is None:
            return
        if not self.state.started:
            self.control.step(1)
            self._start()
            return
        if self.state.phase.ended:
            self._continue(1)
            return
        if not self._can_drive():
            return
        self.control.step(1)
        if self.state.phase in (Phase.PAUSED, Phase.PAUSING):
            self.state.move(Phase.RUNNING)
        self._draw_status()

    def action_cancel_session(self) -> None:
        if not self.state.started or self.control is None:
            self._tell("the session has not started", "warning")
            return
        if self.state.phase.ended:
            self._tell("the session has ended already", "warning")
            return
        self.control.cancel()
        self._resolve_review(False)
        self._tell("cancelling the session")

    def action_edit_test(self) -> None:
        if self._idle_session() is None:
            return
        test = self._selected_test(originals=False)
        if test is None:
            return
        test_id = test.id

        before = test
        if test.program:
            self._edit_program(test)
            return

        def edited(result: Edited | None) -> None:
            if result is not None:
                value = result.value
                self._person(
                    f"test #{test_id} edited",
                    lambda s: s.set_expected(test_id, value),
                    lambda s: Undo(
                        f"the edit of test #{test_id}", lambda s2: s2.restore_test(before)
                    ),
                )

        self.push_screen(
            EditExpectedScreen(test_id, test.call, test.expected, self.state.code), edited
        )

    def _edit_program(self, test: UnitTest) -> None:
        """A person edits a test with setup: its setup, call, expected outcome and follow-up."""
        test_id, before = test.id, test

        def edited(result: NewProgram | None) -> None:
            if result is not None:
                r = result
                self._person(
                    f"test #{test_id} edited",
                    lambda s: s.set_program(test_id, r.setup, r.call, r.expected, r.then),
                    lambda s: Undo(
                        f"the edit of test #{test_id}", lambda s2: s2.restore_test(before)
                    ),
                )

        shown = NewProgram(test.setup or "", test.call, test.expected, test.then)
        title = f"Test #{test_id}: setup, call and expected outcome"
        self.push_screen(
            ProgramTestScreen(title, self._target_name(), shown, self.state.code), edited
        )

    def _target_name(self) -> str:
        task = self.debug_task
        return f"{task.class_name}.{task.entry_point}" if task.class_name else task.entry_point

    def _add_program(self) -> None:
        def added(result: NewProgram | None) -> None:
            if result is not None:
                r = result

                def undo(s: Session) -> Undo | None:
                    added = s.tests[-1].id if s.tests else None
                    if added is None:
                        return None
                    return Undo(f"adding test #{added}", lambda s2: s2.delete_test(added))

                self._person(
                    "test added",
                    lambda s: s.add_program_test(r.setup, r.call, r.expected, r.then),
                    undo,
                )

        title = f"Add a test of {self._target_name()}"
        self.push_screen(
            ProgramTestScreen(title, self._target_name(), None, self.state.code), added
        )

    def action_add_test(self) -> None:
        if self._idle_session() is None:
            return
        if self.debug_task.program:
            self._add_program()
            return

        def added(result: NewTest | None) -> None:
            if result is not None:
                args, expected = result.args, result.expected

                def undo(s: Session) -> Undo | None:
                    added = s.tests[-1].id if s.tests else None
                    if added is None:
                        return None
                    return Undo(f"adding test #{added}", lambda s2: s2.delete_test(added))

                self._person("test added", lambda s: s.add_test(args, expected), undo)

        self.push_screen(AddTestScreen(self.debug_task.entry_point, self.state.code), added)

    def action_delete_test(self) -> None:
        if self._idle_session() is None:
            return
        test = self._selected_test(originals=False)
        if test is None:
            return
        test_id = test.id
        index = next(i for i, t in enumerate(self.state.tests) if t.id == test_id)
        self._person(
            f"test #{test_id} deleted",
            lambda s: s.delete_test(test_id),
            lambda s: Undo(f"deleting test #{test_id}", lambda s2: s2.restore_test(test, index)),
        )

    def action_copy(self, what: str) -> None:
        """Copy the selected test's ``call``, ``expected`` value or the whole ``test`` as
        pytest to the terminal's clipboard (OSC 52); with the transcript focused, the entry
        under its cursor (whichever copy key)."""
        transcript = self.query_one(Transcript)
        if self.focused is transcript:
            text = transcript.cursor_text()
            if text is None:
                self._tell("the transcript is empty: nothing to copy", "warning")
                return
            self.copy_to_clipboard(text)
            self.copied = text
            lines = text.count("\n") + 1
            self._tell(f"copied the transcript entry under the cursor ({plural(lines, 'line')})")
            return
        test = self._selected_test()
        if test is None:
            return
        if what == "call":
            text = test.call
        elif what == "expected":
            text = safe_repr(test.expected)
        else:
            text = self._pytest_text(test)
        self.copy_to_clipboard(text)
        self.copied = text
        self._tell(f"copied the {'test' if what == 'test' else what} of test #{test.id}")

    def _pytest_text(self, test: UnitTest) -> str:
        if self.loaded is not None:
            try:
                return render_pytest(self.loaded, [test]).text
            except (WorkspaceError, OSError):
                pass
        entry = self.debug_task.entry_point
        return (
            f"def test_{entry}_{test.id}():\n    assert {test.call} == {safe_repr(test.expected)}\n"
        )

    def action_rerun_test(self) -> None:
        """Run the selected test again on the code in force and say what it does."""
        test = self._selected_test()
        if test is None:
            return
        code, task, settings = self.state.code, self.debug_task, self.settings

        async def rerun() -> None:
            try:
                run = await self.executor.run_tests(
                    task, code, [test], settings.variant, settings.limits
                )
            except Exception as exc:  # the sandbox failed: say it, the app stays
                self.post_message(PersonFailed(f"re-running test #{test.id}", str(exc)))
                return
            (result,) = run.results
            status = verdict_status(result.verdict.value, result.detail)
            said = actual_text(status, result.detail)
            self.post_message(PersonDone(f"test #{test.id} on the code in force: {said}", 0, 0))

        self.person_busy += 1
        self.run_worker(rerun(), name="rerun", group="person", exit_on_error=False)

    def action_rollback(self) -> None:
        session = self._idle_session()
        if session is None:
            return
        versions = list(session.versions)
        labels = []
        current: int | None = None
        for i, v in enumerate(versions):
            label = f"version {i}: round {v.round}, code {code_id(v.code)}"
            if i == 0:
                label += " (the given code)"
            if v.code == self.state.code:
                label += "  ← in force"
                current = i
            labels.append((label, v.code))

        def chosen(index: int | None) -> None:
            if index is not None and current is not None and index != current:
                back = current
                self._person(
                    f"rolled back to version {index}",
                    lambda s: s.rollback(index),
                    lambda s: Undo(
                        f"the roll back to version {index}", lambda s2: s2.rollback(back)
                    ),
                )
            elif index is not None:
                self._person(f"rolled back to version {index}", lambda s: s.rollback(index))

        self.push_screen(RollbackScreen(labels, current), chosen)

    def action_undo(self) -> None:
        if not self.undo_stack:
            self._tell("nothing to undo", "warning")
            return
        if self._idle_session() is None:
            return
        step = self.undo_stack.pop()
        self._person(f"undo {step.what}", step.revert)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table is self.query_one(TestsPanel).table:
            self.action_show_test()

    def test_detail(self, test: UnitTest) -> TestDetail:
        """Everything the detail view shows about ``test``."""
        r = self.state.records
        return TestDetail(
            test, r.actual.get(test.id), r.votes.get(test.id), r.history.get(test.id, [])
        )

    def action_show_test(self) -> None:
        test = self._selected_test()
        if test is None:
            return

        def chosen(what: str | None) -> None:
            if what == "edit":
                self.action_edit_test()
            elif what == "delete":
                self.action_delete_test()

        editable = any(t.id == test.id for t in self.state.tests)
        self.push_screen(TestDetailScreen(self.test_detail(test), editable=editable), chosen)

    def session_rows(self) -> list[tuple[str, str]]:
        """What the session info screen lists."""
        s = self.settings
        rows = [
            ("state", self._state_text()),
            ("task", self.debug_task.task_id),
            ("model", self._model_label()),
            (
                "settings",
                f"{s.ut_method.value} tests, n={s.n}, k={s.k} votes, threshold "
                f"{s.threshold:g}, {s.rounds} rounds, variant {s.variant.value}, candidates "
                f"{s.candidates} ({s.ranker})",
            ),
            ("limits", f"{s.limits.per_input:g} s of {s.limits.kind.value} time per input"),
        ]
        if self.sandbox_layers:
            total = self.sandbox_total or len(self.sandbox_layers)
            rows.append(
                (
                    "sandbox",
                    f"{len(self.sandbox_layers)}/{total} layers active: "
                    + ", ".join(self.sandbox_layers)
                    + " (utdebug doctor says more)",
                )
            )
        if self.session is not None:
            u = self.session.usage
            rows.append(
                (
                    "usage",
                    f"{u.completions} completions, {u.requests} requests, {u.retries} retries, "
                    f"{u.failures} failures, {u.prompt_tokens:,} tokens in, "
                    f"{u.completion_tokens:,} out, "
                    + (f"${u.cost:.4f}" if u.cost_known else "cost unknown"),
                )
            )
        traffic = traffic_line()
        if traffic:
            rows.append(("server", traffic))
        if self.loaded is not None:
            rows.append(("file", str(self.loaded.path)))
        rows.append(("undo", f"{plural(len(self.undo_stack), 'change')} can be undone (u)"))
        return rows

    def action_session_info(self) -> None:
        if not isinstance(self.screen, SessionInfoScreen):
            self.push_screen(SessionInfoScreen(self.session_rows()))

    def action_panel(self, name: str) -> None:
        """Show a panel: ``code``, ``diff``, ``tests``, ``rounds``, ``candidates``,
        ``transcript`` (keys 1 to 6)."""
        if name == "tests":  # the bottom tabs give back the room 4 to 6 took
            self.query_one("#bottom-tabs").remove_class("-full")
            self.query_one(TestsPanel).table.focus()
            return
        tabs_id, pane = PANELS[name]
        tabs = self.query_one(f"#{tabs_id}", TabbedContent)
        tabs.active = pane
        if tabs_id == "bottom-tabs":
            tabs.add_class("-full")
        else:
            self.query_one("#bottom-tabs").remove_class("-full")
        if name == "transcript":
            self.query_one(Transcript).focus()

    def action_toggle_review(self) -> None:
        self.review_by_hand = not self.review_by_hand
        if self.session is not None:
            self.session.review = self._review if self.review_by_hand else None
        if not self.review_by_hand and self.pending_review is not None:
            self._resolve_review(self.pending_review.review.rule_accepts)
        self._tell(f"review by hand {'on' if self.review_by_hand else 'off'}")
        self._draw_status()

    def action_accept_edit(self) -> None:
        self._decide(True)

    def action_reject_edit(self) -> None:
        self._decide(False)

    def action_search(self) -> None:
        panel = self.query_one(TestsPanel)

        def searched(query: str | None) -> None:
            if query is None:
                return
            panel.search(query)
            self.query_one(Transcript).found = None
            if query:
                self.action_search_next(True)
            else:
                self._tell("search cleared: every test is shown")

        self.push_screen(SearchScreen(panel.query_text), searched)

    def action_search_next(self, forward: bool = True) -> None:
        """The next (previous) match: in the transcript when it is shown, else the next
        shown test (the table holds only matches)."""
        query = self.query_one(TestsPanel).query_text
        if not query:
            self._tell("nothing to look for: / searches", "warning")
            return
        tabs = self.query_one("#bottom-tabs", TabbedContent)
        transcript = self.query_one(Transcript)
        if tabs.active == "tab-transcript":
            found = transcript.find(query, forward)
            if found is None:
                self._tell(f"/{query}: not in the transcript", "warning")
            return
        table = self.query_one(TestsPanel).table
        if table.row_count == 0:
            self._tell(f"/{query}: no test holds it (6 shows the transcript)", "warning")
            return
        step = 1 if forward else -1
        table.move_cursor(row=(table.cursor_row + step) % table.row_count, animate=False)
        table.focus()

    def _decide(self, accept: bool) -> None:
        if self.pending_review is None and not accept and self.query_one(TestsPanel).query_text:
            self.action_search_next(True)
            return
        if self.pending_review is None:
            self._tell("no edit is awaiting review (v turns review by hand on)", "warning")
            return
        self._resolve_review(accept)

    def _fix_diff(self) -> tuple[LoadedFunction, str] | None:
        """The source file and the diff the fix makes to it (else say why and return None)."""
        loaded = self.loaded
        if loaded is None:
            self._tell(
                "no source file: debug a function from a file (utdebug debug file.py::name)",
                "warning",
            )
            return None
        if self.state.code.strip() == self.debug_task.code.strip():
            self._tell("nothing to write: the code in force is the given code", "warning")
            return None
        from utdebug.agents.sim import SIM_HELPER

        if SIM_HELPER.search(self.state.code):
            self._tell(
                "the code in force holds the simulated model's stand-ins (SIMULATED edits, "
                "not code): it is never written back",
                "warning",
            )
            return None
        changed = changed_on_disk(loaded)
        if changed is not None:  # said before a diff against the old text is shown
            self._tell(changed, "error")
            return None
        try:
            diff = function_diff(loaded, self.state.code)
        except WorkspaceError as exc:
            self._tell(str(exc), "error")
            return None
        if not diff:
            self._tell(f"nothing to write: {loaded.path.name} already holds this code", "warning")
            return None
        return loaded, diff

    def action_write_back(self) -> None:
        found = self._fix_diff()
        if found is None:
            return
        loaded, diff = found
        code = self.state.code

        def confirmed(yes: bool | None) -> None:
            if not yes:
                self._tell("not written")
                return
            try:
                result = write_back(loaded, code, backup=True)
            except WorkspaceError as exc:
                self._tell(str(exc), "error")
                return
            self.loaded = result.loaded
            self._tell(f"wrote the fix to {result.path}; the original is in {result.backup}")

        self.push_screen(WriteBackScreen(str(loaded.path), diff), confirmed)

    def action_export_patch(self) -> None:
        found = self._fix_diff()
        if found is None:
            return
        loaded, _diff = found
        out = loaded.path.with_name(loaded.path.name + ".utdebug.patch")
        try:
            export_patch(loaded, self.state.code, out)
        except (WorkspaceError, OSError) as exc:
            self._tell(f"cannot write {out}: {exc}", "error")
            return
        self._tell(f"wrote the patch to {out}")

    def action_export_tests(self) -> None:
        loaded = self.loaded
        if loaded is None:
            self._tell("no source file: the exported tests import the function from it", "warning")
            return
        if not self.state.tests:
            self._tell("no tests to export yet", "warning")
            return
        out = loaded.path.with_name(f"test_{loaded.entry_point}_utdebug.py")
        try:
            rendered = render_pytest(loaded, self.state.tests)
            export_pytest(loaded, self.state.tests, out)
        except (WorkspaceError, OSError) as exc:
            self._tell(f"cannot write {out}: {exc}", "error")
            return
        skipped = f", {rendered.skipped} skipped (not literals)" if rendered.skipped else ""
        self._tell(f"exported {plural(rendered.exported, 'test')} to {out}{skipped}")

    def action_help_quit(self) -> None:
        """Ctrl-C (Textual binds it to this): say the key that quits, as this app binds it
        (``q`` unless rebound), not Textual's ``ctrl+q``."""
        keys = [
            key
            for key, active in self.active_bindings.items()
            if active.binding.action in ("quit", "app.quit")
        ]
        key = next((k for k in keys if k != "ctrl+q"), keys[0] if keys else "q")
        self._tell(f"press {key} to quit (the session is saved as it goes)")

    def action_show_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    # -- drawing ----------------------------------------------------------------------------

    def _tell(self, text: str, severity: str = "information") -> None:
        self.notices.append(text)
        if severity == "error":
            self.notify(text, severity="error", markup=False)
        elif severity == "warning":
            self.notify(text, severity="warning", markup=False)
        else:
            self.notify(text, markup=False)

    def _note(self, text: str, style: str = "") -> None:
        if text:
            self.state.transcript.append(line(text, style))
            self._show_transcript()

    def _note_call(self, header: str, style: str, reply: str, purpose: str) -> None:
        """A model call: one line (``header · model call · 412 chars · 1.2 s``) that opens
        on the reply."""
        call = self._last_call
        meta = f"{CALL_MARK} · {len(reply):,} chars"
        took = self.tracker.took.get(purpose)
        if call is not None and call.purpose == purpose:
            took = call.seconds if took is None else took
            samples = f" (one of {call.n} samples)" if call.n > 1 else ""
            meta += f" · {took:.1f} s{samples}" + (" · cached" if call.cached else "")
        elif took is not None:
            meta += f" · {took:.1f} s"
        self.state.transcript.append(line(header, style, "head", meta))
        self.state.transcript.extend(reply_entries(reply))
        self._show_transcript()

    def _show_transcript(self) -> None:
        """Show the state's transcript entries the transcript does not show yet."""
        transcript = self.query_one(Transcript)
        transcript.add_entries(self.state.transcript[len(transcript.entries) :])

    def _model_label(self) -> str:
        simulated = bool(getattr(self.model, "simulated", False))
        return self.model.name + (" SIMULATED" if simulated else "")

    def _state_text(self) -> str:
        if self.state.phase is Phase.PAUSED:
            r = self.state.paused_round
            if (
                r is not None
                and self.state.rounds_done is not None
                and r == self.state.rounds_done + 1
            ):
                return f"paused after round {self.state.rounds_done}"
            return f"paused in round {r}"
        if self.state.phase is Phase.FINISHED and self.state.finish_reason == "does_not_load":
            return f"stopped: {self.state.load_line or finish_words(self.state.finish_reason)}"
        if self.state.phase is Phase.FINISHED and self.state.rolled_back_to is not None:
            return f"rolled back to version {self.state.rolled_back_to} · r goes on from it"
        if self.state.phase is Phase.FINISHED and self.state.finish_reason == "resumed":
            if self.state.taken_back_from is not None:
                return (
                    f"finished: {finish_words(self.state.taken_back_from)} (taken back) · r goes on"
                )
            after = (
                "" if self.state.rounds_done is None else f" after round {self.state.rounds_done}"
            )
            return f"taken back from its file: paused{after} · r goes on, s runs one round"
        if self.state.phase is Phase.FINISHED:
            return f"finished: {finish_words(self.state.finish_reason)}"
        if self.state.phase is Phase.ERROR:
            return f"stopped by {self.state.error} · r asks again"
        if self.state.phase is Phase.REVIEW:
            return "edit awaiting review: y accept, n reject"
        if self.state.phase is Phase.READY:
            return "ready: r runs, s runs one round"
        if self.state.phase is Phase.STARTING:
            return f"{spinner(self.clock())} starting: the sandbox and the model's probe"
        return self._activity()  # running or pausing

    def _activity(self) -> str:
        """``⠋ round 0 · proposing test 2 of 3 (proposal 2 of 9) · 4.1 s``: what the session
        does now, for how long; a real server's live traffic follows."""
        now = self.clock()
        s = self.settings
        tries = s.n * (s.tries_factor or (4 if s.variant.value == "reference" else 3))
        text = describe(
            self.progress,
            self.tracker.current(),
            entry_point=self.debug_task.entry_point,
            n=s.n,
            tries=tries,
            now=now,
        )
        if self.state.phase is Phase.PAUSING:
            text = "pausing · " + text
        traffic = traffic_line()
        return f"{spinner(now)} {text}" + (f" · {traffic}" if traffic else "")

    def status_parts(self) -> list[StatusPart]:
        """The status line's parts, long and short forms (the bar shows what fits)."""
        style = {"error": "bold red", "paused": "bold yellow", "review": "bold magenta"}.get(
            self.state.phase, "bold"
        )
        parts = [StatusPart(self._state_text(), style=style)]
        done = "—" if self.state.rounds_done is None else str(self.state.rounds_done)
        limit = max(self.state.round_limit, self.state.rounds_done or 0)
        parts.append(StatusPart(f"round {done} of {limit}", f"round {done}/{limit}"))
        simulated = " SIMULATED" if getattr(self.model, "simulated", False) else ""
        parts.append(StatusPart(self._model_label(), shorten(self.model.name, 18) + simulated))
        if self.session is not None:
            u = self.session.usage
            tokens_in, tokens_out = _count(u.prompt_tokens), _count(u.completion_tokens)
            parts.append(
                StatusPart(
                    f"tokens {tokens_in} in / {tokens_out} out", f"{tokens_in}/{tokens_out} tok"
                )
            )
            parts.append(
                StatusPart(
                    f"${u.cost:.4f}" if u.cost_known else "cost unknown",
                    f"${u.cost:.2f}" if u.cost_known else None,
                )
            )
        if self.review_by_hand:
            parts.append(StatusPart("review by hand", "review"))
        if self.sandbox_layers:
            total = self.sandbox_total or len(self.sandbox_layers)
            parts.append(
                StatusPart(
                    "sandbox: " + ", ".join(self.sandbox_layers),
                    f"sandbox {len(self.sandbox_layers)}/{total}",
                )
            )
        return parts

    def _draw_status(self) -> None:
        self.query_one(StatusBar).show(self.status_parts())

    def shown_code(self) -> str:
        """The code in force as the Code and Diff views show it: a simulated model's
        stand-ins (``_sim_...`` wrappers, lookup tables) are not code anyone wrote, so each is
        said as a ``# SIMULATED ...`` line instead (:func:`utdebug.agents.sim.shown_code`)."""
        from utdebug.agents.sim import SIM_HELPER, shown_code

        if not SIM_HELPER.search(self.state.code):
            return self.state.code
        code, said = shown_code(self.state.code, self.debug_task.entry_point)
        return code.rstrip() + "\n\n" + "".join(f"# {line}\n" for line in said)

    def _draw_code(self) -> None:
        self.query_one(CodePanel).show_code(
            self.shown_code(), self.debug_task.code, self.debug_task.entry_point
        )
        self._fit_layout()

    def _fit_layout(self) -> None:
        """Side by side only when the function's lines and a short call both fit whole."""
        frame = self.query_one(Frame)
        need, code_width = side_by_side_width(self.state.code, self.debug_task.entry_point)
        if (frame.narrow_width, frame.code_width) != (need, code_width):
            frame.narrow_width, frame.code_width = need, code_width
            frame.fit()

    def _draw_tests(self) -> None:
        self.query_one(TestsPanel).show(
            self.state.tests,
            {**self.state.statuses, **self.state.original_statuses},
            self.state.pass_summary(),
            self.state.originals,
        )

    def _draw_timeline(self) -> None:
        self.query_one(RoundsTable).show(list(self.state.timeline.values()))

    def _draw_candidates(self) -> None:
        if self.settings.candidates <= 1:
            hint = f"one edit per round: {CANDIDATES_HINT}"
        elif not self.state.candidate_rows:
            hint = f"{self.settings.candidates} candidates per round, ranked by "
            hint += f"{self.settings.ranker}: no ranking yet"
        else:
            hint = f"{self.settings.candidates} candidates per round, ranked by "
            hint += self.settings.ranker
        self.query_one(CandidatesPanel).show(self.state.candidate_rows, hint)


def _count(n: int) -> str:
    """A token count in a few characters: 950, 13.3k, 2.41M."""
    if n < 10_000:
        return f"{n:,}"
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.2f}M"
