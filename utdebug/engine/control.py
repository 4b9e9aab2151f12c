"""Pausing, stepping and cancelling a running session (:class:`Control`), and its two stops."""

from __future__ import annotations

import asyncio

__all__ = ["Control", "SessionBusy", "SessionCancelled"]


class SessionCancelled(Exception):
    pass


class Control:
    """Pause, step and cancel a running session.

    Checked between model calls and rounds, and honoured within a model call too: the call is
    cancelled at once (a streamed reply is closed); after a pause it is asked again on resume.
    """

    def __init__(self) -> None:
        self._go: asyncio.Event | None = None
        self._halt: asyncio.Event | None = None
        self._paused = False
        self._steps: int | None = None
        self.cancelled = False

    def _event(self) -> asyncio.Event:
        if self._go is None:
            self._go = asyncio.Event()
            if not self._paused:
                self._go.set()
        return self._go

    def _halt_event(self) -> asyncio.Event:
        if self._halt is None:
            self._halt = asyncio.Event()
            if self._paused or self.cancelled:
                self._halt.set()
        return self._halt

    def _set(self, go: bool) -> None:
        """Running (``go``) or asked to stop: wake the waiters of either."""
        if self._go is not None:
            if go or self.cancelled:
                self._go.set()
            else:
                self._go.clear()
        if self._halt is not None:
            if go and not self.cancelled:
                self._halt.clear()
            else:
                self._halt.set()

    @property
    def paused(self) -> bool:
        return self._paused

    def pause(self) -> None:
        self._paused = True
        self._set(False)

    def resume(self) -> None:
        self._paused = False
        self._steps = None
        self._set(True)

    def step(self, rounds: int = 1) -> None:
        """Run ``rounds`` more rounds, then pause again."""
        self._steps = rounds
        self._paused = False
        self._set(True)

    def cancel(self) -> None:
        self.cancelled = True
        self._set(False)

    def reopen(self) -> None:
        """Take back a cancellation (a session that ended goes on: ``continue_rounds``)."""
        self.cancelled = False
        self._set(not self._paused)

    def round_done(self) -> None:
        if self._steps is not None:
            self._steps -= 1
            if self._steps <= 0:
                self._steps = None
                self.pause()

    async def wait(self) -> None:
        if self.cancelled:
            raise SessionCancelled
        ev = self._event()
        if not ev.is_set():
            await ev.wait()
        if self.cancelled:
            raise SessionCancelled

    async def halted(self) -> None:
        """Return as soon as the session is asked to pause or to stop."""
        await self._halt_event().wait()


class SessionBusy(Exception):
    """A person's change was asked for while a round is running: pause first."""
