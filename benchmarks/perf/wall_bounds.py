"""The wall-clock bounds the unit tests no longer assert: how long hostile work takes to be
given up on, and how close sixteen sessions on a one-slot model server come to the serial
bound. On a loaded machine these times stretch while every verdict stays the same, so the
tests assert the verdicts and this script prints the times.

Run from the repository root::

    .venv/bin/python benchmarks/perf/wall_bounds.py                 # ~40 s
    .venv/bin/python benchmarks/perf/wall_bounds.py --part sandbox  # ~15 s

Parts (``--part``, default both):

- **sandbox**: ``resolve_pending`` on a model's pending arguments ``10**10**10`` and
  ``[x for x in iter(int, 1)]`` (timeout 1 s; target < 5 s each), on two hangs and two memory
  bombs (timeout 0.5 s; target < 4 s each), and one batch of hostile result objects (a
  ``__dict__`` that loops, 5,000 nested objects, 50,000 attributes, 2**40 paths through 40
  shared objects; limit 1 s; target < 20 s). Each: its verdict, its wall time.
- **serving**: sixteen one-round sessions at once against a loopback server that generates
  one request at a time (``agents/loopback_server.py``), with the client's concurrency found
  by probing (0.5 s a request) and read from ``/props`` (0.2 s a request); target: wall <=
  1.5 x the serial bound + 3 s.

Each line ends ``PASS`` or ``MISS``; the load average is printed first (the targets are for an
idle 2-core machine). Exit status: 0 (a MISS is a number to read, not a failure), 1 when a
verdict is wrong, 3 when the sandbox cannot start.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

EXIT_OK, EXIT_WRONG, EXIT_SANDBOX = 0, 1, 3

PENDING = (
    ("10**10**10", 1.0, "timed out", 5.0),
    ("[x for x in iter(int, 1)]", 1.0, "timed out", 5.0),
    ("10**10**10", 0.5, "timed out", 4.0),
    ("[x for x in iter(int, 1)]", 0.5, "timed out", 4.0),
    ("[0]*10**10", 0.5, "MemoryError", 4.0),
    ("'x' * 10**12", 0.5, "MemoryError", 4.0),
)

OBJECTS = """
class Loop:
    @property
    def __dict__(self):
        while True:
            pass

class Node:
    def __init__(self, nxt, other=None):
        self.nxt, self.other = nxt, other

def f(kind):
    if kind == "loop":
        return Loop()
    if kind == "nested":
        n = None
        for _ in range(5000):
            n = Node(n)
        return n
    if kind == "attributes":
        w = Node(None)
        for i in range(50000):
            setattr(w, "a%d" % i, i)
        return w
    s = Node(1, 2)
    for _ in range(40):
        s = Node(s, s)
    return s
"""


def line(name: str, wall: float, target: float, verdict: str) -> None:
    mark = "PASS" if wall < target else "MISS"
    print(f"{name:<58} {wall:7.2f} s  (target < {target:g} s)  {verdict}  {mark}", flush=True)


def sandbox_part(timed: Callable[[Callable[[], Any]], tuple[Any, float]]) -> bool:
    from utdebug.agents.parsing import ParsedValue, ParseFailure, resolve_pending
    from utdebug.sandbox import Limits, Sandbox, SandboxUnavailable, Status

    try:
        sb = Sandbox()
        sb.start()
    except SandboxUnavailable as e:
        print(f"SANDBOX UNAVAILABLE: {e}", file=sys.stderr)
        raise SystemExit(EXIT_SANDBOX) from None
    ok = True
    with sb:
        for source, timeout, expect, target in PENDING:
            pending = ParsedValue(None, source, pending=True)
            got, wall = timed(functools.partial(resolve_pending, sb, pending, timeout=timeout))
            right = isinstance(got, ParseFailure) and expect in got.reason
            ok &= right
            line(
                f"PENDING {source} (timeout {timeout:g} s)",
                wall,
                target,
                expect if right else f"WRONG {got}",
            )
        kinds = ["loop", "nested", "attributes", "shared"]
        lim = Limits(per_input=1.0, load=5.0, memory_mb=1024, slack=0.5)
        res, wall = timed(lambda: sb.run(OBJECTS, "f", [[k] for k in kinds], lim))
        statuses = [o.status for o in res.outcomes]
        right = statuses == [Status.TIMEOUT, Status.OK, Status.OK, Status.OK] and res.children == 1
        ok &= right
        verdict = "timeout, then 3 ok in one child" if right else f"WRONG {statuses}"
        line("OBJECTS 4 hostile results (limit 1 s)", wall, 20.0, verdict)
    return ok


async def sessions_on_one_slot(says_slots: bool) -> tuple[float, float, bool]:
    """(wall, serial bound, whether every session passed) of sixteen sessions at once."""
    from utdebug.agents.litellm_client import ClientSettings, LiteLLMModel
    from utdebug.agents.loopback_server import LLMServer
    from utdebug.engine import Executor, Session, Settings, Task
    from utdebug.sandbox import Sandbox

    code = "def ident(x):\n    return x\n"
    task = Task("serving/ident", "Return x unchanged.", "ident(x)", "ident", code)
    per_request = 0.2 if says_slots else 0.5
    with (
        Sandbox() as sb,
        LLMServer(slots=1, seconds_per_request=per_request, expose_slots=says_slots) as server,
    ):
        executor = Executor(sb, workers=2)
        model = LiteLLMModel(
            "openai/local",
            ClientSettings(timeout=15.0, max_retries=0, concurrency=8),
            api_base=server.base,
        )
        sessions = [Session(task, model, executor, Settings(n=1, k=1, rounds=1)) for _ in range(16)]
        t0 = time.monotonic()
        results = await asyncio.gather(*(s.run() for s in sessions))
        wall = time.monotonic() - t0
        executor.close()
    passed = all(r.error is None and r.reason == "all_pass" for r in results)
    return wall, server.served * per_request, passed


def serving_part() -> bool:
    import litellm  # noqa: F401  (seconds: not in the times below)

    ok = True
    for says_slots, name in ((False, "adaptive"), (True, "props")):
        wall, serial, passed = asyncio.run(sessions_on_one_slot(says_slots))
        ok &= passed
        target = 1.5 * serial + 3.0
        verdict = "16 sessions pass" if passed else "WRONG: a session failed"
        line(
            f"SERVING 16 sessions, one slot, {name} (serial {serial:.1f} s)", wall, target, verdict
        )
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("sandbox", "serving", "all"), default="all")
    args = ap.parse_args(argv)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")

    def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
        t0 = time.monotonic()
        got = fn()
        return got, time.monotonic() - t0

    print(f"LOAD average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
    ok = True
    if args.part in ("sandbox", "all"):
        ok &= sandbox_part(timed)
    if args.part in ("serving", "all"):
        ok &= serving_part()
    return EXIT_OK if ok else EXIT_WRONG


if __name__ == "__main__":
    sys.exit(main())
