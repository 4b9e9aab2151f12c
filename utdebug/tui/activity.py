"""What the session is doing right now: the activity line's text (no Textual here).

The app gives the session its model wrapped in a :class:`CallTracker`, which remembers the
model calls in flight (purpose, samples, start, what they are about). :func:`describe` turns
the call in flight and the round's progress into one line such as ``round 0 · proposing test
2 of 3 (proposal 2 of 9) · 4.1 s``; with a real model the server's live traffic follows
(``model: 1/1 in flight, 18.4 tok/s``), so a slow model never looks stuck.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from utdebug.agents.base import Completion, Model, ModelRequest
from utdebug.agents.traffic import snapshot_all
from utdebug.tui.format import elapsed, safe_repr, shorten

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
SPINNER_FPS = 10


def spinner(now: float) -> str:
    """The spinner's frame at ``now`` (seconds)."""
    return SPINNER[int(now * SPINNER_FPS) % len(SPINNER)]


@dataclass(frozen=True, slots=True)
class CallInFlight:
    """One model call that has not answered yet."""

    purpose: str
    n: int
    started: float
    subject: str
    """What the call is about: the call voted on, or the feedback test of an edit."""
    answered_before: int
    """Requests the model servers had answered when the call started (real models)."""


def answered_requests() -> int:
    """Requests answered so far by every model server of this process (0: none called)."""
    return sum(s.requests for s in snapshot_all())


def traffic_line() -> str:
    """``model: 1/1 in flight, 18.4 tok/s, 6.1 s/call`` (``""`` without a real model)."""
    snaps = snapshot_all()
    if not snaps:
        return ""
    return "model: " + "; ".join(s.describe() for s in snaps)


class CallTracker:
    """A model that remembers its calls in flight (the session's model, as the app gives it)."""

    def __init__(self, inner: Model, clock: Callable[[], float]) -> None:
        self.inner = inner
        self.name = inner.name
        self.simulated = inner.simulated
        self.clock = clock
        self.in_flight: dict[int, CallInFlight] = {}
        self.took: dict[str, float] = {}
        """Seconds the last call of each purpose that ended took (by :attr:`clock`)."""
        self._ids = itertools.count()

    @property
    def supports_prefill(self) -> bool:
        return self.inner.supports_prefill

    def current(self) -> CallInFlight | None:
        """The call in flight that started last (``None``: no call in flight)."""
        return max(self.in_flight.values(), key=lambda c: c.started, default=None)

    async def complete(self, request: ModelRequest) -> list[Completion]:
        key = next(self._ids)
        started = self.clock()
        self.in_flight[key] = CallInFlight(
            request.purpose,
            request.n,
            started,
            _subject(request.purpose, request.context),
            answered_requests(),
        )
        try:
            return await self.inner.complete(request)
        finally:
            self.in_flight.pop(key, None)
            self.took[request.purpose] = self.clock() - started


def _subject(purpose: str, context: Any) -> str:
    ctx = context if isinstance(context, dict) else {}
    if purpose == "vote" and isinstance(ctx.get("args"), tuple):
        return "(" + ", ".join(safe_repr(a) for a in ctx["args"]) + ")"
    feedback = ctx.get("feedback")
    if purpose == "debug" and feedback is not None and hasattr(feedback, "id"):
        return f"test #{feedback.id}"
    return ""


@dataclass(slots=True)
class Progress:
    """How far the session got, from its events (the app keeps it up to date)."""

    round: int = 0
    kept: int = 0
    """Tests kept so far in the set being built."""
    proposals: int = 0
    """Test proposals so far in the set being built."""
    since: float = 0.0
    """When the session last reported something (the clock of :class:`CallTracker`)."""


def describe(
    progress: Progress,
    call: CallInFlight | None,
    *,
    entry_point: str,
    n: int,
    tries: int,
    now: float,
) -> str:
    """One line: the round, what the session does now and for how long."""
    if call is None:
        what, started = "running the tests in the sandbox", progress.since
    else:
        what, started = _call_text(progress, call, entry_point, n, tries), call.started
        done = answered_requests() - call.answered_before
        if call.n > 1 and done > 0:
            what += f": {min(done, call.n)}/{call.n} answered"
    return f"round {progress.round} · {what} · {elapsed(now - started)}"


def _call_text(progress: Progress, call: CallInFlight, entry: str, n: int, tries: int) -> str:
    if call.purpose == "ut":
        return (
            f"proposing test {min(progress.kept + 1, n)} of {n} "
            f"(proposal {progress.proposals + 1} of {tries})"
        )
    if call.purpose == "vote":
        subject = shorten(entry + call.subject, 40) if call.subject else "a test"
        return f"voting on {subject} ({call.n} votes)"
    if call.purpose == "debug":
        about = f" (feedback: {call.subject})" if call.subject else ""
        if call.n > 1:
            return f"asking for {call.n} candidate edits{about}"
        return f"asking for an edit{about}"
    if call.purpose == "critique":
        return "asking the model to critique the code"
    return f"waiting for the model ({call.purpose})"
