"""``DebugApp``: the interactive front end over one engine :class:`Session`.

The session runs in an async worker and reports through its events; every widget update
happens in a message handler (see :mod:`utdebug.tui` for the message flow). A person's
changes go through the engine's own coroutines (``set_expected``, ``add_test``,
``delete_test``, ``rollback``), only while the session is idle (paused or finished).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any, ClassVar

from textual.app import App
from textual.binding import BindingType
from textual.widgets import DataTable, TabbedContent
from textual.worker import Worker, WorkerState

from utdebug.engine.control import Control
from utdebug.engine.events import Event
from utdebug.engine.session import EditReview, Session
from utdebug.engine.synthesised import checked_queue
from utdebug.synth.candidates import CandidateInputs, screen, synthesise_for
from utdebug.tui.actions import bindings
from utdebug.tui.activity import CallTracker, traffic_line
from utdebug.tui.base import TICK_SECONDS, AppBase
from utdebug.tui.commands import DebugCommands
from utdebug.tui.config import Started, StartupFailed
from utdebug.tui.details import SessionInfoScreen
from utdebug.tui.format import plural, pre_post
from utdebug.tui.messages import EngineEvent, PersonDone, PersonFailed, ReviewRequested
from utdebug.tui.panels import BOTTOM, PANELS, panels
from utdebug.tui.screens import HelpScreen, ReviewScreen, SearchScreen
from utdebug.tui.state import Phase
from utdebug.tui.synth import (
    SynthPlan,
    SynthResult,
    collect_seeds,
    run_outcomes,
    synthesise_inputs,
)
from utdebug.tui.transcript import Transcript
from utdebug.tui.widgets import CodePanel, Frame, InputsPanel, TestsPanel


class DebugApp(AppBase):
    """Debug one function interactively; see the module docstring.

    The caller owns ``executor`` (and its sandbox) and closes it after :meth:`run`; the app
    creates the :class:`Control` and the :class:`Session` on mount (``self.session``).
    """

    TITLE = "utdebug"
    BINDINGS: ClassVar[list[BindingType]] = list(bindings())
    COMMANDS = App.COMMANDS | {DebugCommands}

    def on_mount(self) -> None:
        self.query_one("#tests-panel", TestsPanel).border_title = "tests"
        self.query_one(Frame).fit()
        self.query_one(CodePanel).show_task(self.debug_task.task_id, self.debug_task.description)
        for name in panels(self.model_free):
            self._draw(name)
        self.query_one(TestsPanel).table.focus()
        if self.theme_problem is not None:
            self._tell(self.theme_problem, "warning")
        self.set_interval(TICK_SECONDS, self._tick)
        if self.model_free:  # the inputs are what a person works on: full height when short
            self.query_one("#bottom-tabs").add_class("-full")
        if self.config.starting is not None:
            self.state.move(Phase.STARTING)
            self._draw_status()
            self.run_worker(
                self.config.starting,
                name="startup",
                group="startup",
                thread=True,
                exit_on_error=False,
            )
            return
        self._begin()

    def _begin(self) -> None:
        """Make the session (the model and the sandbox are ready) and start it."""
        self.control = Control()
        if self.config.step_first:
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
        if self.model_free:  # nothing runs by itself: the inputs are made, a person judges
            if self.config.resume is not None:
                self._take_back(self.config.resume)
            self._synthesise()
            return
        if self.config.resume is not None:
            self._take_back(self.config.resume)
            return
        if self.config.candidates is not None:
            self._make_candidates(self.config.candidates)  # starts the session when done
            return
        if self.config.autostart:
            self.driver.start()

    def _make_candidates(self, plan: SynthPlan) -> None:
        """Synthesise UTGen's candidate inputs (here: the ast work, CPython gh-106905) and run
        them once on the code in force (in a thread); the session starts when they are in its
        queue."""
        code, executor = self.state.code, self.executor
        self._note(f"synthesising up to {plan.count} candidate inputs for UTGen", "dim")

        def now() -> None:
            if plan.refusal is not None:
                self._candidates_ready(None, f"no synthesised inputs: {plan.refusal}")
                return
            try:
                seeds, _ = collect_seeds(plan)
                syn = synthesise_for(
                    code,
                    plan.entry_point,
                    seeds.inputs,
                    count=plan.count,
                    seed=plan.seed,
                    time_budget=plan.time_budget,
                )
            except Exception as exc:  # the synthesiser failed: said, the session goes on
                self._candidates_ready(None, f"no synthesised inputs: {exc!r}")
                return

            def work() -> CandidateInputs:
                return screen(
                    executor.sandbox, code, plan.entry_point, syn, context=executor.context
                )

            self.run_worker(
                work, name="candidates", group="candidates", thread=True, exit_on_error=False
            )

        self.call_after_refresh(now)

    def _candidates_ready(self, made: CandidateInputs | None, why: str = "") -> None:
        """Put the synthesised inputs in the session's queue, say so, and start."""
        if made is not None and self.session is not None:
            self.session.synth_queue = checked_queue(made.inputs)
            by = Counter(source.removeprefix("synth:") for _, source in made.inputs)
            parts = ", ".join(f"{k} {v}" for k, v in sorted(by.items(), key=lambda kv: -kv[1]))
            dropped = ", ".join(f"{v} {k}" for k, v in sorted(made.dropped.items()))
            why = (
                f"{len(made.inputs)} synthesised inputs join UTGen's candidates"
                + (f" ({parts})" if parts else "")
                + (f"; left out: {dropped}" if dropped else "")
            )
            for note in made.notes:
                self._note(f"synth: {note}", "dim")
        self._note(why, "dim")
        if self.config.autostart and self.state.phase is Phase.READY and not self.state.started:
            self.driver.start()

    def _synthesise(self) -> None:
        """Make the inputs and run them on the code in force, in a thread (the app stays
        live; the status line says it is at work)."""
        plan = self.config.synth
        if plan is None:
            return
        code, executor = self.state.code, self.executor
        self.state.synthesising = True
        self._note(
            "no model: synthesising inputs from the docstring's examples, the project's tests "
            "and the type hints; their outcomes on the code in force follow",
            "bold",
        )
        self._draw("inputs")
        self._draw_status()

        def now() -> None:  # the ast work on this thread (CPython gh-106905), after a redraw
            try:
                result, cands = synthesise_inputs(plan, code)
            except Exception as exc:  # the synthesiser failed: said, the app stays
                result, cands = SynthResult(notes=[f"the synthesiser failed: {exc!r}"]), []

            def work() -> SynthResult:
                return run_outcomes(result, cands, plan, executor.sandbox, executor.context)

            self.run_worker(work, name="synth", group="synth", thread=True, exit_on_error=False)

        self.call_after_refresh(now)

    def _synthesised(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.SUCCESS:
            result = event.worker.result
            assert isinstance(result, SynthResult)
        elif event.state is WorkerState.ERROR:
            error = event.worker.error
            result = SynthResult(notes=[f"the synthesiser failed: {type(error).__name__}: {error}"])
        else:
            return
        self.state.synthesising = False
        self.state.synth = result
        for row in result.rows:  # tests made of these inputs before (a session taken back)
            made = next(
                (
                    t.id
                    for t in self.state.tests
                    if t.input_source == row.input_source and t.args == row.args
                ),
                None,
            )
            if made is not None:
                self.state.synth_tests[row.number] = made
        self._draw("inputs")
        self._draw_status()
        self._note(result.headline(), "bold")
        for note in result.notes:
            self._note(f"synth: {note}", "dim")
        if result.rows and self.focused is self.query_one(TestsPanel).table:
            self.query_one(InputsPanel).table.focus()

    def _take_back(self, saved: dict[str, Any]) -> None:
        """Restore a saved session: tests, votes, edits, rounds and transcript."""
        assert self.session is not None
        self.session.restore(saved["engine"])
        self.state.take_back(saved, self.session.code, list(self.session.tests))
        self._show_transcript()
        self._note(
            "session taken back from its file"
            + ("" if self.model_free else ": r goes on, s runs one round"),
            "bold",
        )
        self.state.move(Phase.FINISHED)
        self.state.finish_reason = "resumed"
        self._draw_code()
        self._draw_tests()
        self._draw_timeline()
        self._draw_status()
        self._save()

    def _listen(self, event: Event) -> None:
        """The session's listener: post the event; the handler below draws it."""
        self.post_message(EngineEvent(event))

    async def _review(self, review: EditReview) -> bool:
        """The session's reviewer: ask a person (while review by hand is on)."""
        if not self.review_by_hand:
            return review.rule_accepts
        decision: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.post_message(ReviewRequested(review, decision))
        return await decision

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if self.closing:  # workers are stopped as the app closes: nothing left to draw on
            return
        if event.worker.group == "startup":
            self._started(event)
            return
        if event.worker.group == "synth":
            self._synthesised(event)
            return
        if event.worker.group == "candidates":
            if event.state is WorkerState.SUCCESS:
                result = event.worker.result
                assert isinstance(result, CandidateInputs)
                self._candidates_ready(result)
            elif event.state is WorkerState.ERROR:
                self._candidates_ready(None, f"no synthesised inputs: {event.worker.error!r}")
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
            self.tracker = CallTracker(ready.model, self.config.clock)
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

    def on_review_requested(self, message: ReviewRequested) -> None:
        self.pending_review = message
        self.state.move(Phase.REVIEW)
        self._draw_status()
        r = message.review
        self._note(f"[round {r.round}] edit awaiting review ({pre_post(r.pre, r.post)})", "bold")

        def decided(accept: bool | None) -> None:
            if accept is not None and self.pending_review is message:
                self._resolve_review(accept)

        self.push_screen(ReviewScreen(r, self.state.code), decided)

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
        """Show the panel ``name`` (a row of :data:`~utdebug.tui.panels.PANELS`): its tab,
        the bottom tabs in full when it is one of them, and focus what its row says."""
        panel = PANELS[name]
        if panel.model_free and not self.model_free:
            self._tell("only a session without a model has synthesised inputs", "warning")
            return
        if panel.tabs is not None:
            self.query_one(f"#{panel.tabs}", TabbedContent).active = panel.pane or ""
        # A bottom tab takes the room of the code and the tests; any other panel gives it back.
        self.query_one(f"#{BOTTOM}").set_class(panel.tabs == BOTTOM, "-full")
        if panel.focus is not None:
            panel.focus(self.query_one(panel.widget)).focus()

    def action_toggle_review(self) -> None:
        if self._no_model():
            return
        self.review_by_hand = not self.review_by_hand
        if self.session is not None:
            self.session.review = self._review if self.review_by_hand else None
        if not self.review_by_hand and self.pending_review is not None:
            self._resolve_review(self.pending_review.review.rule_accepts)
        self._tell(f"review by hand {'on' if self.review_by_hand else 'off'}")
        self._draw_status()

    def action_accept_edit(self) -> None:
        if self._no_model():
            return
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
            self.push_screen(HelpScreen(self.model_free))

    # Driving the session (:attr:`driver`).

    def action_run(self) -> None:
        self.driver.run()

    def action_pause(self) -> None:
        self.driver.pause()

    def action_step(self) -> None:
        self.driver.step()

    def action_cancel_session(self) -> None:
        self.driver.cancel()

    # A person's changes (:attr:`changes`): the keys and messages that start them.

    def on_person_done(self, message: PersonDone) -> None:
        self.changes.person_done(message)

    def on_person_failed(self, message: PersonFailed) -> None:
        self.changes.person_failed(message)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.changes.row_selected(event)

    def action_edit_test(self) -> None:
        self.changes.edit_test()

    def action_add_test(self) -> None:
        self.changes.add_test()

    def action_mark_wrong(self) -> None:
        self.changes.mark_wrong()

    def action_keep_test(self) -> None:
        self.changes.keep_test()

    def action_delete_test(self) -> None:
        self.changes.delete_test()

    def action_copy(self, what: str) -> None:
        self.changes.copy(what)

    def action_rerun_test(self) -> None:
        self.changes.rerun_test()

    def action_rollback(self) -> None:
        self.changes.rollback()

    def action_undo(self) -> None:
        self.changes.undo()

    def action_show_test(self) -> None:
        self.changes.show_test()

    def action_write_back(self) -> None:
        self.changes.write_back()

    def action_export_patch(self) -> None:
        self.changes.export_patch()

    def action_export_tests(self) -> None:
        self.changes.export_tests()
