"""Waiting in tests on a condition, never on the clock: look, let the work go on, look again,
until the condition holds. The backstop is generous (a loaded machine is slow, not wrong) and
only ends a test that would never end; it is never what a test waits for."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Callable
from typing import Any

BACKSTOP = 120.0
"""Seconds after which a wait is called a hang."""


def _hang(what: str, app: Any = None) -> AssertionError:
    state = getattr(app, "state", None)
    seen = f" (state {state.phase}, notices {app.notices})" if hasattr(state, "phase") else ""
    return AssertionError(f"never reached: {what}{seen}")


async def until(
    pilot: Any, holds: Callable[[], bool], what: str, seconds: float = BACKSTOP
) -> None:
    """Return once ``holds()``. With an app's ``pilot``, between two looks the app processes
    its messages until it is idle (``pilot.pause``); with ``None``, the event loop runs the
    other tasks. What runs in threads (sandbox runs, the synthesiser) goes on meanwhile."""
    deadline = time.monotonic() + seconds
    while not holds():
        if time.monotonic() > deadline:
            raise _hang(what, getattr(pilot, "app", None))
        if pilot is None:
            await asyncio.sleep(0.005)
        else:
            await pilot.pause()


def poll(
    holds: Callable[[], bool], what: str, seconds: float = BACKSTOP, every: float = 0.05
) -> None:
    """Return once ``holds()``, looking every ``every`` seconds: for what another thread or
    process does (a file it writes, a process it starts or ends, a screen it draws)."""
    deadline = time.monotonic() + seconds
    while not holds():
        if time.monotonic() > deadline:
            raise _hang(what)
        time.sleep(every)


def while_running(
    proc: subprocess.Popen[str], holds: Callable[[], bool], what: str, every: float = 0.02
) -> None:
    """Return once ``holds()``, ``proc`` still running: a process that ended first fails the
    test with its output (what a test waits for before it interrupts the process)."""

    def look() -> bool:
        assert proc.poll() is None, proc.communicate()
        return holds()

    poll(look, what, every=every)
