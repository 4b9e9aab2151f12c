"""Live traffic of the model servers this process talks to: what a progress line shows.

Every endpoint (one server: an ``api_base``, or a hosted provider's model) has one
:class:`Traffic` record, created by the model client on first use and kept in a process-wide
registry. Front ends read :func:`snapshot_all` (cheap, thread-safe) once a second or so to show
calls in flight, the concurrency limit in force, tokens per second and the time per call, so a
user sees at once whether a model is slow or stuck. Nothing here does I/O or imports litellm.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass

__all__ = ["Traffic", "TrafficSnapshot", "reset_registry", "snapshot_all", "traffic_for"]

_WINDOW = 20
OVERLAP_MARGIN = 0.05
"""Seconds a request's token must come after another's first token to show that the server
generates both at once (see :attr:`Traffic.overlaps`)."""
"""Calls the per-call averages are taken over (the most recent ones)."""


@dataclass(frozen=True, slots=True)
class TrafficSnapshot:
    endpoint: str
    in_flight: int
    """Requests sent and not yet answered in full."""
    waiting: int
    """Requests held back by utdebug's own concurrency limit."""
    limit: int
    """The concurrency limit in force (adaptive)."""
    requests: int
    """Requests answered so far (each sample of a one-sample-per-call server is one)."""
    failures: int
    """Requests that failed (each retry of a failed request counts again)."""
    completion_tokens: int
    tokens_per_second: float | None
    """Completion tokens per second of generation: from each streamed reply's first token to
    its end, while any was generating (the wait for a first token, a cold server loading its
    model included, is not generation); calls that were not streamed count from their start.
    ``None``: nothing yet."""
    seconds_per_call: float | None
    """Mean wall time of the last calls, from sending to the last token."""
    first_token_seconds: float | None
    """Mean time to the first token of the last streamed calls."""

    def describe(self) -> str:
        """One short line: ``2/2 in flight, 3 waiting, 18.4 tok/s, 6.1 s/call``."""
        parts = [f"{self.in_flight}/{self.limit} in flight"]
        if self.waiting:
            parts.append(f"{self.waiting} waiting")
        if self.tokens_per_second is not None:
            parts.append(f"{self.tokens_per_second:.1f} tok/s")
        if self.seconds_per_call is not None:
            parts.append(f"{self.seconds_per_call:.1f} s/call")
        return ", ".join(parts)


class Traffic:
    """Counters of one endpoint; every method is thread-safe and O(1)."""

    def __init__(self, endpoint: str, limit: int = 1) -> None:
        self.endpoint = endpoint
        self._lock = threading.Lock()
        self.in_flight = 0
        self.waiting = 0
        self.limit = limit
        self.requests = 0
        self.failures = 0
        self.completion_tokens = 0
        self._busy = 0.0
        self._busy_since: float | None = None
        self._generating: dict[float, float] = {}
        """Start time -> first-token time of the requests in flight that have their first
        token."""
        self._gen = 0.0
        self._gen_since: float | None = None
        self._gen_tokens = 0
        """Completion tokens of requests that were streamed (had a first token)."""
        self.overlaps = 0
        """Tokens of one request that arrived well after another request's first token
        (``OVERLAP_MARGIN``): evidence that the server generates for several requests at once.
        A server that queues them, or cuts one for the next, never shows it; the margin keeps
        a loaded client, that reads one reply's last chunks after the next reply's first,
        from showing it either."""
        self._latency: deque[float] = deque(maxlen=_WINDOW)
        self._ttft: deque[float] = deque(maxlen=_WINDOW)

    def queued(self, delta: int) -> None:
        with self._lock:
            self.waiting += delta

    def started(self) -> float:
        """A request is sent; returns its start time (``time.monotonic()``)."""
        now = time.monotonic()
        with self._lock:
            if self.in_flight == 0:
                self._busy_since = now
            self.in_flight += 1
        return now

    def first_token(self, start: float) -> None:
        now = time.monotonic()
        with self._lock:
            self._ttft.append(now - start)
            if not self._generating:
                self._gen_since = now
            self._generating[start] = now

    def token(self, start: float, now: float | None = None) -> None:
        """A later token of the request sent at ``start`` (after its first), arrived at
        ``now`` (default: ``time.monotonic()``)."""
        if len(self._generating) < 2:
            return
        now = time.monotonic() if now is None else now
        with self._lock:
            if start not in self._generating:
                return
            for other, first in self._generating.items():
                if other != start and first < now - OVERLAP_MARGIN:
                    self.overlaps += 1
                    return

    def finished(self, start: float, completion_tokens: int, *, ok: bool) -> None:
        now = time.monotonic()
        with self._lock:
            self.in_flight -= 1
            if self.in_flight == 0 and self._busy_since is not None:
                self._busy += now - self._busy_since
                self._busy_since = None
            streamed = start in self._generating
            if streamed:
                del self._generating[start]
                if not self._generating and self._gen_since is not None:
                    self._gen += now - self._gen_since
                    self._gen_since = None
            if ok:
                self.requests += 1
                self.completion_tokens += completion_tokens
                if streamed:
                    self._gen_tokens += completion_tokens
                self._latency.append(now - start)
            else:
                self.failures += 1

    def set_limit(self, limit: int) -> None:
        with self._lock:
            self.limit = limit

    def snapshot(self) -> TrafficSnapshot:
        now = time.monotonic()
        with self._lock:
            busy = self._busy + (now - self._busy_since if self._busy_since is not None else 0.0)
            gen = self._gen + (now - self._gen_since if self._gen_since is not None else 0.0)
            rate: float | None = None
            if gen > 0.05:  # streamed: generation from the first token
                rate = self._gen_tokens / gen
            elif busy > 0.05 and self.completion_tokens > self._gen_tokens:
                rate = (self.completion_tokens - self._gen_tokens) / busy  # not streamed
            lat = list(self._latency)
            ttft = list(self._ttft)
            return TrafficSnapshot(
                endpoint=self.endpoint,
                in_flight=self.in_flight,
                waiting=self.waiting,
                limit=self.limit,
                requests=self.requests,
                failures=self.failures,
                completion_tokens=self.completion_tokens,
                tokens_per_second=rate,
                seconds_per_call=sum(lat) / len(lat) if lat else None,
                first_token_seconds=sum(ttft) / len(ttft) if ttft else None,
            )


_REGISTRY: dict[str, Traffic] = {}
_REGISTRY_LOCK = threading.Lock()


def traffic_for(endpoint: str, limit: int = 1) -> Traffic:
    """The :class:`Traffic` of ``endpoint`` (created on first use)."""
    with _REGISTRY_LOCK:
        t = _REGISTRY.get(endpoint)
        if t is None:
            t = _REGISTRY[endpoint] = Traffic(endpoint, limit)
        return t


def snapshot_all() -> list[TrafficSnapshot]:
    """Every endpoint's counters now (empty when no real model was called)."""
    with _REGISTRY_LOCK:
        items = list(_REGISTRY.values())
    return [t.snapshot() for t in items]


def reset_registry() -> None:
    """Forget every endpoint (tests)."""
    with _REGISTRY_LOCK:
        _REGISTRY.clear()
