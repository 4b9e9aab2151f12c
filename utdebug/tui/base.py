"""``AppBase``: what every part of the app stands on: its state, its widgets (drawn from
the state through :data:`~utdebug.tui.panels.PANELS`), the status line, the transcript
and the session file."""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.timer import Timer
from textual.widgets import Footer, TabbedContent, TabPane

from utdebug.agents.base import Model
from utdebug.engine.control import Control
from utdebug.engine.events import ModelCalled
from utdebug.engine.execution import Executor
from utdebug.engine.model import Settings, Task, code_id
from utdebug.engine.session import Session
from utdebug.text_safety import visible
from utdebug.tui.actions import bindings
from utdebug.tui.activity import CallTracker, Progress, describe, spinner, traffic_line
from utdebug.tui.changes import PersonChanges, Undo
from utdebug.tui.config import NO_MODEL_LINE, AppConfig, StartupFailed
from utdebug.tui.driver import SessionDriver
from utdebug.tui.engine_events import EngineEvents
from utdebug.tui.format import StatusPart, finish_words, passing, shorten, verdict_status
from utdebug.tui.messages import EngineEvent, OriginalsRun, ReviewRequested
from utdebug.tui.panels import PANELS, bottom_tabs
from utdebug.tui.records import Actual
from utdebug.tui.screens import ReviewScreen
from utdebug.tui.state import CALL_MARK, AppState, Phase, line, reply_entries
from utdebug.tui.widgets import (
    CodePanel,
    Frame,
    StatusBar,
    TestsPanel,
    TooSmall,
    side_by_side_width,
)

MIN_WIDTH, MIN_HEIGHT = 80, 24
NARROW_WIDTH = 120
"""Under this many columns the code and the tests stack (each gets the full width)."""
SHORT_HEIGHT = 32
"""Under this many rows the bottom tabs shrink and the task text moves to a border title."""
TICK_SECONDS = 0.1
"""How often the status line's spinner and elapsed time are redrawn while a session runs."""


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


class AppBase(App[None]):
    """The app's state, layout and drawing; :class:`~utdebug.tui.app.DebugApp` adds the rest."""

    CSS = CSS

    def __init__(
        self,
        task: Task,
        model: Model,
        executor: Executor,
        settings: Settings | None = None,
        config: AppConfig | None = None,
    ) -> None:
        super().__init__()
        config = config or AppConfig()
        self.config = config
        if config.model_free:  # the footer offers what a session without a model can do
            self._offer_model_free_keys()
        if config.keymap:
            self.set_keymap(config.keymap)
        self.theme_problem: str | None = None
        """A configured theme that does not exist (said once the app is up)."""
        if config.theme is not None:
            if config.theme in self.available_themes:
                self.theme = config.theme
            else:
                known = ", ".join(sorted(self.available_themes))
                self.theme_problem = (
                    f"no theme {config.theme!r} (the config file's [tui]); known: {known}"
                )
        self.startup_failure: StartupFailed | None = None
        """Why the app could not start (the command says it again on exit)."""
        self.tracker = CallTracker(model, config.clock)
        """The session's model: it remembers the calls in flight (the activity line)."""
        self.progress = Progress(since=config.clock())
        self.undo_stack: list[Undo] = []
        self.debug_task = task
        self.model = model
        self.executor = executor
        self.settings = settings or Settings()
        self.loaded = config.loaded
        """The source file of the function (write back and export need it; a write back
        replaces it)."""
        self.sandbox_layers = tuple(str(layer) for layer in config.sandbox_layers)
        self.sandbox_total = config.sandbox_total
        self.review_by_hand = config.review
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
        self._saved_at: float | None = None
        """When the session file was last written (``time.monotonic``)."""
        self._save_timer: Timer | None = None
        """The write folded into a later one while the session works."""
        self.copied: str | None = None
        """What was copied last (tests read it; the terminal's clipboard is not readable)."""
        self.events = EngineEvents(self)
        """Folds the session's events into :attr:`state` and draws them."""
        self.changes = PersonChanges(self)
        """A person's changes to the session and what the app writes from it."""
        self.driver = SessionDriver(self)
        """Starts, runs, pauses, steps and cancels the session."""

    @property
    def model_free(self) -> bool:
        """A session without a model: synthesised inputs, a person is the oracle."""
        return self.config.model_free

    def _no_model(self) -> bool:
        """A session without a model: say so in one line (the model's actions do nothing)."""
        if self.model_free:
            self._tell(NO_MODEL_LINE, "warning")
            return True
        return False

    def _offer_model_free_keys(self) -> None:
        """The same keys, shown in the footer as a session without a model needs them (its
        own actions; not the model's loop, whose keys say why not)."""
        free = {b.id: b for b in bindings(model_free=True)}
        # The map's lists are shared with the class: new lists, never changed in place.
        table = self._bindings.key_to_bindings
        for key, items in list(table.items()):
            table[key] = [free.get(b.id or "", b) for b in items]

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
                first = "tab-inputs" if self.model_free else "tab-rounds"
                with TabbedContent(id="bottom-tabs", initial=first):
                    for title, pane, widget in bottom_tabs(self.model_free):
                        with TabPane(title, id=pane):
                            yield widget
                yield StatusBar(id="status")
            yield TooSmall(id="too-small")
        yield Footer()

    def saved(self) -> dict[str, Any]:
        """Everything a person sees and did, to take back in another process."""
        assert self.session is not None
        return self.state.saved(self.session.snapshot())

    def _save(self) -> None:
        """Save the session: at once when it is not working (stopped, paused, waiting for a
        person); while it works, at most every ``config.save_every_s`` seconds (a session's
        events come by the hundred and its file grows with them)."""
        if self.config.session_file is None or self.session is None:
            return
        if self.state.phase.busy and self._saved_at is not None:
            wait = self._saved_at + self.config.save_every_s - time.monotonic()
            if wait > 0:
                if self._save_timer is None:
                    self._save_timer = self.set_timer(wait, self._write_session)
                return
        self._write_session()

    def _write_session(self) -> None:
        if self._save_timer is not None:
            self._save_timer.stop()
            self._save_timer = None
        if self.config.session_file is None or self.session is None:
            return
        from utdebug.runs.records import RunFolderError, write_text_atomic

        self._saved_at = time.monotonic()
        try:
            write_text_atomic(self.config.session_file, json.dumps(self.saved()))
        except (RunFolderError, OSError, TypeError, ValueError) as exc:
            if not self._save_failed:
                self._save_failed = True
                self._tell(f"the session cannot be saved: {exc}", "error")

    @property
    def closing(self) -> bool:
        """Whether the app is shutting down: its screens are gone or going, so what a worker
        posted before it was stopped (a session's last events, a run's result) has nothing to
        be drawn on and is dropped."""
        return not self.is_running

    def on_engine_event(self, message: EngineEvent) -> None:
        """Fold the event into the state (:attr:`events`), then redraw the status line and
        save the session. Dropped once the app is closing (:attr:`closing`): the session may
        still be running while its screen is taken down."""
        if self.closing:
            return
        self.progress.since = self.config.clock()
        self.events.fold(message.event)
        self._draw_status()
        self._save()

    def on_unmount(self) -> None:
        """The app closes: a write folded into a later one is done now."""
        if self._save_timer is not None:
            self._write_session()

    def _tick(self) -> None:
        """Redraw the activity (spinner, elapsed time) while the session works."""
        if self.state.phase.busy or self.state.synthesising:
            with contextlib.suppress(NoMatches):  # the app is closing: nothing to draw on
                self._draw_status()

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
        if self.closing:
            return
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

    def _tell(self, text: str, severity: str = "information") -> None:
        self.notices.append(text)
        shown = visible(text, keep="\n")
        if severity == "error":
            self.notify(shown, severity="error", markup=False)
        elif severity == "warning":
            self.notify(shown, severity="warning", markup=False)
        else:
            self.notify(shown, markup=False)

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

    def _model_label(self) -> str:
        simulated = bool(getattr(self.model, "simulated", False))
        return self.model.name + (" SIMULATED" if simulated else "")

    def _state_text(self) -> str:
        if self.model_free and self.state.phase not in (Phase.STARTING, Phase.ERROR):
            return self._model_free_text()
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
                ended = self._finish_words(self.state.taken_back_from)
                return f"finished: {ended} (taken back) · r goes on"
            after = (
                "" if self.state.rounds_done is None else f" after round {self.state.rounds_done}"
            )
            return f"taken back from its file: paused{after} · r goes on, s runs one round"
        if self.state.phase is Phase.FINISHED:
            return f"finished: {self._finish_words(self.state.finish_reason)}"
        if self.state.phase is Phase.ERROR:
            return f"stopped by {self.state.error} · r asks again"
        if self.state.phase is Phase.REVIEW:
            return "edit awaiting review: y accept, n reject"
        if self.state.phase is Phase.READY:
            return "ready: r runs, s runs one round"
        if self.state.phase is Phase.STARTING:
            what = "the sandbox" if self.model_free else "the sandbox and the model's probe"
            return f"{spinner(self.config.clock())} starting: {what}"
        return self._activity()  # running or pausing

    def _finish_words(self, reason: str | None) -> str:
        """Why the session ended; for "every test passes", whether that still holds (a
        person's change since may make tests fail: then how many pass now)."""
        passed, total = self.state.passed, self.state.total
        if reason == "all_pass" and passed is not None and total and passed < total:
            return f"every test passed; now {passing(passed, total)} · r goes on"
        return finish_words(reason)

    def _model_free_text(self) -> str:
        """What a session without a model is doing: synthesising, or waiting for a person."""
        if self.state.synthesising:
            return f"{spinner(self.config.clock())} no model · synthesising inputs"
        synth = self.state.synth
        if synth is None:
            return "no model · a adds a test"
        if not synth.rows:
            return "no model · nothing synthesised: a adds a test"
        return "no model · m: an outcome is wrong · g: keep it as a test · a: add a test"

    def _activity(self) -> str:
        """``⠋ round 0 · proposing test 2 of 3 (proposal 2 of 9) · 4.1 s``: what the session
        does now, for how long; a real server's live traffic follows."""
        now = self.config.clock()
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
        if not self.model_free:
            parts.append(StatusPart(f"round {done} of {limit}", f"round {done}/{limit}"))
        simulated = " SIMULATED" if getattr(self.model, "simulated", False) else ""
        parts.append(StatusPart(self._model_label(), shorten(self.model.name, 18) + simulated))
        if self.session is not None and not self.model_free:
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
                    optional=True,
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
                    optional=True,
                )
            )
        return parts

    def _draw_status(self) -> None:
        self.query_one(StatusBar).show(self.status_parts())

    def _draw(self, name: str) -> None:
        """Draw the panel ``name`` (of :data:`~utdebug.tui.panels.PANELS`) from the state."""
        panel = PANELS[name]
        if panel.model_free and not self.model_free:
            return
        if panel.draw is not None:
            panel.draw(self.query_one(panel.widget), self.state)
        if panel.fits_layout:  # the layout follows the code's width
            self._fit_layout()

    def _draw_code(self) -> None:
        self._draw("code")

    def _draw_tests(self) -> None:
        self._draw("tests")
        if self.model_free:  # the inputs say which test a person made of each
            self._draw("inputs")

    def _draw_timeline(self) -> None:
        self._draw("rounds")

    def _draw_candidates(self) -> None:
        self._draw("candidates")

    def _show_transcript(self) -> None:
        self._draw("transcript")

    def _fit_layout(self) -> None:
        """Side by side only when the function's lines and a short call both fit whole."""
        frame = self.query_one(Frame)
        need, code_width = side_by_side_width(self.state.code, self.debug_task.entry_point)
        if (frame.narrow_width, frame.code_width) != (need, code_width):
            frame.narrow_width, frame.code_width = need, code_width
            frame.fit()


def _count(n: int) -> str:
    """A token count in a few characters: 950, 13.3k, 2.41M."""
    if n < 10_000:
        return f"{n:,}"
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.2f}M"
