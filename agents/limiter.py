"""How many requests a model server gets at once: an adaptive limit per endpoint.

A laptop's llama.cpp or Ollama generates for one request (or a few) at a time and queues the
rest; a vLLM server or a hosted API takes many. Sending more requests than a server generates
for gains nothing and makes every request wait in the server's queue, where no client-side time
limit can tell waiting from working. So every endpoint (one server) gets one
:class:`AdaptiveLimiter`, shared by every model object that talks to it:

* **Known slots.** When the server says how many requests it generates for at once (llama.cpp's
  ``/props`` ``total_slots``, or its ``/slots`` list), the limit is that number (at most the
  configured ``concurrency``) and stays there.
* **Unknown slots** (Ollama, vLLM, hosted APIs): additive increase while latency holds,
  multiplicative decrease on overload. The limit starts at 1 for a local server (``initial``)
  and is raised by one after a window of calls that filled the limit *and* whose latency held:
  the window's mean time to first token stayed within ``RAISE_TOLERANCE`` times that of the
  window the climb started from, plus ``SLACK`` of a call's duration there. A request that
  queues behind another in the server waits for a good part of a whole generation before its
  first token, so queueing shows at once; a server with free slots starts it as fast as
  before. A window whose latency rose goes back one step and waits a cooldown (4 windows,
  doubling after each failed raise, at most 64) before probing again. Calls that are not
  streamed have no first token: their whole duration is the signal.
* **Overload.** A timeout, a 429 or a 503 halves the limit at once (at least 1) and starts a
  cooldown.
* **Interrupted replies.** A reply the server ended without an answer while other requests to
  it were in flight (llama-cpp-python's server cuts the reply it is generating when a second
  request arrives, and still says ``"stop"``) is never a fast success: it halves the limit and
  caps it there for the rest of the run (the server has shown it cannot serve more at once).

Waiters are served in arrival order. The limiter works across event loops and threads (the
check front end runs one event loop per function; the app runs the engine in a worker thread).
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from dataclasses import dataclass, field

from .traffic import Traffic, traffic_for

__all__ = [
    "RAISE_TOLERANCE",
    "AdaptiveLimiter",
    "forget_limiter",
    "known_endpoints",
    "limiter_for",
    "reset_limiters",
]

RAISE_TOLERANCE = 1.3
"""A raise holds when the new window's mean time to first token is at most this times the
climb's starting window's, plus ``SLACK`` times that window's mean call duration."""
SLACK = 0.1
FIRST_COOLDOWN = 4
"""Windows to wait before probing again after a failed raise (doubles each time, up to 64)."""


@dataclass(slots=True)
class _Window:
    limit: int
    overlaps_at: int = 0
    """The endpoint's count of overlapping generations when the window began."""
    first: list[float] = field(default_factory=list)
    """Time to first token of each call (its duration when it was not streamed)."""
    duration: list[float] = field(default_factory=list)
    saturated: bool = False
    streamed: bool = True
    """Every call of the window was streamed (so overlapping generation could show)."""

    def means(self) -> tuple[float, float]:
        return sum(self.first) / len(self.first), sum(self.duration) / len(self.duration)


class AdaptiveLimiter:
    def __init__(
        self,
        endpoint: str,
        *,
        maximum: int,
        initial: int = 1,
        adaptive: bool = True,
        traffic: Traffic | None = None,
    ) -> None:
        if maximum < 1:
            raise ValueError(f"maximum must be at least 1, got {maximum}")
        self.endpoint = endpoint
        self.maximum = maximum
        self.adaptive = adaptive
        self.limit = max(1, min(initial if adaptive else maximum, maximum))
        self.slots: int | None = None
        """The server's own slot count, once known (then the limit is fixed)."""
        self.traffic = traffic or traffic_for(endpoint, self.limit)
        self.traffic.set_limit(self.limit)
        self.history: list[tuple[str, int]] = []
        """(why, new limit) of every change, oldest first (diagnostics and tests)."""
        self._lock = threading.Lock()
        self._active = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._granted: set[asyncio.Future[None]] = set()
        self._window = _Window(self.limit, self.traffic.overlaps)
        self._base: tuple[int, float, float] | None = None
        """(limit, mean first token, mean duration) of the window the current climb started
        from: raises are judged against it."""
        self._cooldown = 0
        self._next_cooldown = FIRST_COOLDOWN
        self.started = 0
        """Requests let through so far (a caller compares two readings to tell whether another
        request started while its own was in flight)."""
        self.interruptions = 0
        """Replies interrupted while others were in flight (each one halved the limit)."""

    @property
    def active(self) -> int:
        """Requests in flight now."""
        return self._active

    # --- slots ------------------------------------------------------------------------------

    def set_slots(self, slots: int) -> None:
        """The server generates for ``slots`` requests at once: fix the limit there."""
        with self._lock:
            self.slots = max(1, slots)
            self.maximum = min(self.maximum, self.slots)
            self._set(min(self.maximum, self.slots), f"server has {slots} slot(s)")
            self._grant()

    def lower_maximum(self, maximum: int) -> None:
        with self._lock:
            self.maximum = max(1, min(self.maximum, maximum))
            if self.limit > self.maximum:
                self._set(self.maximum, "a lower concurrency was configured")

    # --- acquire / release ------------------------------------------------------------------

    async def acquire(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._active < self.limit and not self._waiters:
                self._active += 1
                self.started += 1
                if self._active >= self.limit:
                    self._window.saturated = True
                return
            fut: asyncio.Future[None] = loop.create_future()
            self._waiters.append(fut)
            self._window.saturated = True
        self.traffic.queued(+1)
        try:
            await fut
        except asyncio.CancelledError:
            with self._lock:
                if fut in self._waiters:
                    self._waiters.remove(fut)
                elif fut in self._granted:
                    self._active -= 1  # granted just as we were cancelled: give it back
                    self._grant()
            raise
        finally:
            with self._lock:
                self._granted.discard(fut)
            self.traffic.queued(-1)

    def release(
        self,
        *,
        first_token: float | None = None,
        duration: float | None = None,
        overloaded: bool = False,
        interrupted: bool = False,
    ) -> None:
        """A request finished after ``duration`` seconds, its first token after
        ``first_token`` (``None``: not streamed; both ``None``: no usable sample, e.g. a failed
        call); ``overloaded``: the server said it was (timeout, 429, 503); ``interrupted``: the
        server cut its reply while other requests were in flight."""
        with self._lock:
            self._active -= 1
            if interrupted:
                self.interruptions += 1
            if self.adaptive and self.slots is None:
                if interrupted:
                    self._interrupted()
                elif overloaded:
                    self._overload()
                elif duration is not None:
                    if first_token is None:
                        self._window.streamed = False
                    first = first_token if first_token is not None else duration
                    self._sample(first, duration)
            self._grant()

    def _grant(self) -> None:
        while self._waiters and self._active < self.limit:
            fut = self._waiters.popleft()
            if fut.done():
                continue
            self._active += 1
            self.started += 1
            self._granted.add(fut)
            fut.get_loop().call_soon_threadsafe(_resolve, fut)

    # --- adaptation (called with the lock held) ----------------------------------------------

    def _set(self, limit: int, why: str) -> None:
        limit = max(1, min(limit, self.maximum))
        if limit != self.limit:
            self.history.append((why, limit))
        self.limit = limit
        self._window = _Window(limit, self.traffic.overlaps)
        self.traffic.set_limit(limit)

    def _overload(self) -> None:
        self._base = None
        self._cooldown = self._next_cooldown
        self._next_cooldown = min(64, self._next_cooldown * 2)
        self._set(self.limit // 2, "overloaded (timeout, 429 or 503)")

    def _interrupted(self) -> None:
        self._base = None
        self._cooldown = self._next_cooldown
        self._next_cooldown = min(64, self._next_cooldown * 2)
        at = self.limit
        self.maximum = max(1, min(self.maximum, at // 2 if at > 1 else 1))
        self._set(at // 2, f"replies interrupted at {at} in flight: at most {self.maximum}")

    def _sample(self, first: float, duration: float) -> None:
        w = self._window
        w.first.append(first)
        w.duration.append(duration)
        if len(w.first) < max(4, 2 * w.limit):
            return
        mean_first, mean_duration = w.means()
        base = self._base
        # evidence that requests are generated at once: a first token while another request
        # was generating (only streamed calls can show it)
        concurrent = not w.streamed or self.traffic.overlaps > w.overlaps_at
        if base is not None and base[0] < w.limit:
            bound = base[1] * RAISE_TOLERANCE + SLACK * base[2]
            if mean_first > bound or (w.saturated and not concurrent):
                # the raise made requests wait in the server: go back, probe again later
                self._cooldown = self._next_cooldown
                self._next_cooldown = min(64, self._next_cooldown * 2)
                why = (
                    f"latency rose at {w.limit} (first token {mean_first:.2f} s > {bound:.2f} s)"
                    if mean_first > bound
                    else f"no two replies generated at once at {w.limit}"
                )
                self._set(w.limit - 1, why)
                return
            self._next_cooldown = FIRST_COOLDOWN  # the raise held
        if self._cooldown > 0:
            self._cooldown -= 1
            self._window = _Window(w.limit, self.traffic.overlaps)
            return
        if base is None or base[0] >= w.limit:
            self._base = (w.limit, mean_first, mean_duration)
        if w.saturated and w.limit < self.maximum and (w.limit == 1 or concurrent):
            self._set(w.limit + 1, "latency held")
        else:
            self._window = _Window(w.limit, self.traffic.overlaps)


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


_LIMITERS: dict[str, AdaptiveLimiter] = {}
_LIMITERS_LOCK = threading.Lock()


def limiter_for(
    endpoint: str, *, maximum: int, initial: int = 1, adaptive: bool = True
) -> AdaptiveLimiter:
    """The endpoint's limiter (created by the first model that asks for it)."""
    with _LIMITERS_LOCK:
        lim = _LIMITERS.get(endpoint)
        if lim is None:
            lim = _LIMITERS[endpoint] = AdaptiveLimiter(
                endpoint, maximum=maximum, initial=initial, adaptive=adaptive
            )
        elif maximum < lim.maximum:
            lim.lower_maximum(maximum)  # two configurations of one server: the lower wins
        return lim


def known_endpoints() -> set[str]:
    """The endpoints that have a limiter now."""
    with _LIMITERS_LOCK:
        return set(_LIMITERS)


def forget_limiter(endpoint: str) -> None:
    """Forget one endpoint's limiter (a probe that is not part of a run)."""
    with _LIMITERS_LOCK:
        _LIMITERS.pop(endpoint, None)


def reset_limiters() -> None:
    """Forget every endpoint's limiter (tests)."""
    with _LIMITERS_LOCK:
        _LIMITERS.clear()
