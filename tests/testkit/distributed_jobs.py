"""Job functions for tests/test_distributed.py.

They live in their own module so that Ray worker processes can import them by name: the test
cluster's processes run with this folder on ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

from utdebug.distributed import WorkerContext

PRIMES = """
def count_primes(n):
    if n < 0:
        raise ValueError(f"negative: {n}")
    sieve = [True] * max(n, 2)
    sieve[0] = sieve[1] = False
    for i in range(2, int(n ** 0.5) + 1):
        if sieve[i]:
            sieve[i * i :: i] = [False] * len(sieve[i * i :: i])
    return sum(sieve[:n])
"""


def primes_in_sandbox(n: int, ctx: WorkerContext) -> dict[str, Any]:
    """Runs a program on three inputs in the sandbox of the process this job runs in."""
    res = ctx.sandbox().run(PRIMES, "count_primes", [[n], [n * 10], [-n]])
    time.sleep(0.2)  # long enough that the next job needs another worker
    return {
        "outcomes": [(o.status.value, o.value, o.error_type) for o in res.outcomes],
        "pid": os.getpid(),
        "sandbox": id(ctx.sandbox()),
        "uid_base": ctx.sandbox().config.uid_base,
    }


def fails_on_odd(n: int, ctx: WorkerContext) -> int:
    if n % 2:
        raise ValueError(f"odd: {n}")
    return n // 2


def dies_once(job: tuple[int, str], ctx: WorkerContext) -> dict[str, Any]:
    """Kills its own worker process the first time it runs job 3 (a marker file says it did),
    after starting the sandbox; the retry finds the marker and runs normally."""
    n, marker_dir = job
    out = primes_in_sandbox(n, ctx)
    marker = Path(marker_dir) / f"died-{n}"
    if n == 3 and not marker.exists():
        marker.write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return out


def holds_slot(job: tuple[str, float], ctx: WorkerContext) -> tuple[float, float, int]:
    """Holds a slot of ``endpoint`` for ``seconds``: when it held it, and where."""
    endpoint, seconds = job
    with ctx.endpoint_slot(endpoint):
        start = time.time()
        time.sleep(seconds)
        return start, time.time(), os.getpid()


def dies_holding_slot(job: tuple[str, float, str], ctx: WorkerContext) -> tuple[float, float, int]:
    """Holds a slot of ``endpoint`` for ``seconds``; with a marker folder, the first run dies
    (SIGKILL) while it holds the slot (the marker file says it did)."""
    endpoint, seconds, marker_dir = job
    with ctx.endpoint_slot(endpoint):
        marker = Path(marker_dir) / "died-holding" if marker_dir else None
        if marker is not None and not marker.exists():
            marker.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        start = time.time()
        time.sleep(seconds)
        return start, time.time(), os.getpid()


def max_overlap(intervals: list[tuple[float, float]]) -> int:
    """The most intervals open at one instant."""
    events = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals])
    best = now = 0
    for _, step in events:
        now += step
        best = max(best, now)
    return best
