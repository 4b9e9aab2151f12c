"""Driving the app's session: start it, run, pause, step, cancel, and go on after its end
(``r``, ``p``, ``s``, ``x``); a plain object the app holds (``app.driver``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from utdebug.engine.session import Session
from utdebug.tui.format import finish_words, plural
from utdebug.tui.state import Phase

if TYPE_CHECKING:
    from utdebug.tui.base import AppBase


class SessionDriver:
    """Starts the session in a worker of the app and drives it through its
    :class:`~utdebug.engine.control.Control`; the app's keys hand over to it."""

    def __init__(self, app: AppBase) -> None:
        self.app = app

    def start(self) -> None:
        assert self.app.session is not None
        self.app.state.started = True
        self.app.state.move(Phase.RUNNING)
        self.app._draw_status()
        self.app.run_worker(
            self._run_session(self.app.session),
            name="session",
            group="session",
            exclusive=True,
            exit_on_error=False,
        )

    async def _run_session(self, session: Session) -> None:
        await session.run()

    def _can_drive(self) -> bool:
        if self.app.state.phase.ended:
            return False
        if self.app.person_busy:
            self.app._tell("wait: a change is being applied", "warning")
            return False
        return True

    def _continue(self, rounds: int) -> None:
        """After the end: go on for ``rounds`` more rounds with the tests and the code as a
        person left them (or say why not)."""
        session = self.app.session
        if session is None or self.app.control is None:
            return
        if self.app.person_busy:
            self.app._tell("wait: a change is being applied", "warning")
            return
        refusal = session.continue_refusal()
        if refusal is not None:
            why = (
                self.app.state.error
                if self.app.state.phase is Phase.ERROR
                else finish_words(self.app.state.finish_reason)
            )
            self.app._tell(f"the session has ended ({why}): {refusal}", "warning")
            return
        # A model error is a pause: r and s ask again from the round it cut short.
        retry = self.app.state.phase is Phase.ERROR
        self.app.state.move(Phase.RUNNING)
        self.app.state.finish_reason = self.app.state.error = None
        done = -1 if self.app.state.rounds_done is None else self.app.state.rounds_done
        self.app.state.round_limit = done + rounds + (1 if done < 0 else 0)
        if retry:
            self.app._note("asking the model again from where it failed", "bold")
        else:
            self.app._note(
                f"going on for {plural(rounds, 'more round')} on the tests as they are now", "bold"
            )
        self.app._draw_status()
        self.app.run_worker(
            session.continue_rounds(rounds),
            name="session",
            group="session",
            exclusive=True,
            exit_on_error=False,
        )

    def _still_starting(self) -> bool:
        if self.app.session is None and self.app.state.phase is Phase.STARTING:
            self.app._tell(
                "still starting (the sandbox and the model's probe): a moment", "warning"
            )
            return True
        return False

    def run(self) -> None:
        if self.app._no_model() or self._still_starting():
            return
        if not self.app.state.started:
            self.start()
            return
        if self.app.state.phase.ended:
            self._continue(self.app.settings.rounds)
            return
        if not self._can_drive() or self.app.control is None:
            return
        self.app.control.resume()
        if self.app.state.phase in (Phase.PAUSED, Phase.PAUSING):
            self.app.state.move(Phase.RUNNING)
        self.app._draw_status()

    def pause(self) -> None:
        if self.app._no_model():
            return
        if not self.app.state.started:
            self.app._tell("the session has not started: r runs it, s runs one round", "warning")
            return
        if self.app.state.phase.ended:
            self.app._tell("the session has ended: r or s goes on with more rounds", "warning")
            return
        if not self._can_drive() or self.app.control is None:
            return
        self.app.control.pause()
        if self.app.state.phase is Phase.RUNNING:
            self.app.state.move(Phase.PAUSING)
        self.app._draw_status()

    def step(self) -> None:
        if self.app._no_model() or self._still_starting() or self.app.control is None:
            return
        if not self.app.state.started:
            self.app.control.step(1)
            self.start()
            return
        if self.app.state.phase.ended:
            self._continue(1)
            return
        if not self._can_drive():
            return
        self.app.control.step(1)
        if self.app.state.phase in (Phase.PAUSED, Phase.PAUSING):
            self.app.state.move(Phase.RUNNING)
        self.app._draw_status()

    def cancel(self) -> None:
        if self.app._no_model():
            return
        if not self.app.state.started or self.app.control is None:
            self.app._tell("the session has not started", "warning")
            return
        if self.app.state.phase.ended:
            self.app._tell("the session has ended already", "warning")
            return
        self.app.control.cancel()
        self.app._resolve_review(False)
        self.app._tell("cancelling the session")
