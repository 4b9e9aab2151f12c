"""Stopping a ``utdebug check`` run part-way: on SIGTERM, SIGINT or the run's own deadline
(``--deadline``), :class:`Stopper` raises :class:`Stopped` where the run is (and cancels the
function's session), so that the run reports what it has as a partial report. The model's
replies are cached as they arrive, so a rerun goes on from them (see ``docs/check.md``)."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager, suppress
from types import FrameType
from typing import Any, TypeVar

from utdebug.cli_common import Exit

__all__ = ["STOP_EXIT", "Stopped", "Stopper"]

T = TypeVar("T")

STOP_EXIT: dict[str, Exit] = {
    "deadline": Exit.DEADLINE,
    "SIGINT": Exit.INTERRUPTED,
    "SIGTERM": Exit.TERMINATED,
}
"""The exit code of a run stopped for each reason (``timeout(1)``'s 124, and 128 + the
signal's number)."""

_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGALRM)


class Stopped(BaseException):
    """The run was stopped (a ``BaseException``: no ``except Exception`` on the way keeps
    it); ``reason`` is ``SIGTERM``, ``SIGINT`` or ``deadline``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Stopper:
    """Turns SIGTERM, SIGINT and the deadline (``deadline`` seconds after :meth:`installed`
    begins; ``None``: none) into :class:`Stopped`, once :meth:`arm` was called; the first
    one only, and none after :meth:`close` (the report is being written then)."""

    def __init__(self, deadline: float | None = None) -> None:
        self.deadline = deadline
        self.reason: str | None = None
        self.working_on: int | None = None
        """The function being checked (its index among the run's targets), if any."""
        self._armed = False
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None

    @contextmanager
    def installed(self) -> Iterator[Stopper]:
        """The handlers (and the deadline's timer) in force inside the block (the main
        thread only: elsewhere nothing is installed)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        old = {s: signal.getsignal(s) for s in _SIGNALS}
        for s in _SIGNALS:
            signal.signal(s, self._handle)
        if self.deadline is not None:
            signal.setitimer(signal.ITIMER_REAL, max(self.deadline, 0.001))
        try:
            yield self
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            for s, handler in old.items():
                signal.signal(s, handler)

    def arm(self) -> None:
        """From now on a stop raises :class:`Stopped` where the run is (before: it is only
        noted, and raised here)."""
        self._armed = True
        self.check()

    def close(self) -> None:
        """The run is over: a signal from now on is ignored (the report is being written)."""
        self._closed = True

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.reason is not None or self._closed:
            return
        self.reason = "deadline" if signum == signal.SIGALRM else signal.Signals(signum).name
        if not self._armed:
            return
        loop, task = self._loop, self._task
        if loop is not None and task is not None:
            # the session is cancelled even where the exception lands in another task
            with suppress(RuntimeError):  # the loop is closed already
                loop.call_soon_threadsafe(task.cancel)
        raise Stopped(self.reason)

    def check(self) -> None:
        """:class:`Stopped` when the run was asked to stop."""
        if self.reason is not None:
            raise Stopped(self.reason)

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        """``asyncio.run(work)``, cancelled when the run is stopped (:class:`Stopped`)."""
        self.check()

        async def main() -> T:
            self._loop, self._task = asyncio.get_running_loop(), asyncio.current_task()
            try:
                return await work
            finally:
                self._loop = self._task = None

        try:
            result = asyncio.run(main())
        except asyncio.CancelledError:
            if self.reason is None:
                raise
            raise Stopped(self.reason) from None
        self.check()
        return result
