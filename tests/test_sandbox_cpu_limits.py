"""Per-input limits measured in CPU time (the default) and in wall-clock time.

Under CPU-time limits the trusted parent charges each input with the child's CPU time (user +
system, every thread), read from the kernel's CPU clock of the child; a program that sleeps or
blocks is stopped by a wall-clock backstop (``Limits.wall_factor`` x the limit). Verdicts then
do not move with the machine's load. ``kind="wall"`` keeps the paper's wall-clock limits.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from utdebug.sandbox import LimitKind, Limits, Sandbox, Status, collector

LIM = Limits(per_input=0.4, load=5.0, memory_mb=1024, slack=0.5)

PROGRAM = textwrap.dedent(
    """
    import threading, time

    def busy(s):  # s seconds of this thread's CPU time
        t = time.thread_time()
        while time.thread_time() - t < s:
            pass

    def f(how, s, threads=1):
        if how == "sleep":
            time.sleep(s)
        elif how == "spin":
            busy(s)
        elif how == "forever":
            while True:
                pass
        elif how == "threads":
            ts = [threading.Thread(target=busy, args=(s,)) for _ in range(threads)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        return [how, s]
    """
)


def test_cpu_time_is_the_default_and_the_kind_is_validated() -> None:
    assert Limits().kind is LimitKind.CPU
    assert Limits(kind="wall").kind is LimitKind.WALL  # type: ignore[arg-type]
    assert Limits().backstop(2.0) == 6.0 and Limits(kind=LimitKind.WALL).backstop(2.0) == 2.0
    with pytest.raises(ValueError, match="cycles"):
        Limits(kind="cycles")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="wall_factor"):
        Limits(wall_factor=0.5)


def test_a_sleeping_input_is_stopped_by_the_wall_clock_backstop(sb: Sandbox) -> None:
    res = sb.run(PROGRAM, "f", [["sleep", 60], ["spin", 0.0]], LIM)
    slept, after = res.outcomes
    assert slept.status is Status.TIMEOUT, res
    assert "wall-clock backstop" in (slept.error or ""), slept
    assert slept.seconds < 0.2, slept  # seconds are CPU time: a sleep costs next to none
    assert "asleep or blocked" in (slept.error or ""), slept
    # The parent stopped it (the time asleep is the kernel's, not the child's word): the
    # next input runs in a fresh child.
    assert after.status is Status.OK and res.children == 2, res
    # A sleep shorter than the backstop is no timeout under CPU-time limits.
    ok = sb.run(PROGRAM, "f", [["sleep", LIM.per_input + 0.1]], LIM).outcomes[0]
    assert ok.status is Status.OK and ok.value == ["sleep", LIM.per_input + 0.1], ok


WIDE = replace(LIM, wall_factor=20.0)
"""LIM with a wall-clock backstop far away: for tests of CPU-time accounting that must hold
however busy the machine is (the backstop has its own test)."""


def test_an_input_that_spins_past_its_cpu_limit_times_out(sb: Sandbox) -> None:
    res = sb.run(PROGRAM, "f", [["spin", 0.1], ["forever", 0], ["spin", 0.1]], WIDE)
    quick, spun, after = res.outcomes
    assert quick.status is Status.OK and 0.1 <= quick.seconds < LIM.per_input, quick
    assert spun.status is Status.TIMEOUT and "CPU time" in (spun.error or ""), spun
    assert LIM.per_input <= spun.seconds < LIM.per_input + LIM.slack, spun
    assert after.status is Status.OK and res.children == 1, res


def test_the_cpu_time_of_every_thread_counts(sb: Sandbox) -> None:
    # Three threads of 0.2 s each: 0.6 s of CPU time (whatever the wall time) over a 0.4 s limit.
    over = sb.run(PROGRAM, "f", [["threads", 0.2, 3]], LIM).outcomes[0]
    assert over.status is Status.TIMEOUT, over
    assert over.seconds > LIM.per_input, over
    # Two threads of 0.1 s: 0.2 s in all, within the limit, and charged as such.
    within = sb.run(PROGRAM, "f", [["threads", 0.1, 2]], LIM).outcomes[0]
    assert within.status is Status.OK and 0.2 <= within.seconds < LIM.per_input, within


def test_the_cut_after_timeouts_is_decided_in_cpu_time(sb: Sandbox) -> None:
    lim = replace(WIDE, cut_after=1, cut_limit=0.1)
    inputs = [["forever", 0], ["sleep", 0.2], ["spin", 0.2], ["spin", 0.0]]
    res = sb.run(PROGRAM, "f", inputs, lim)
    timed_out, slept, spun, quick = res.outcomes
    assert timed_out.status is Status.TIMEOUT, res
    # After the cut each input has 0.1 s of CPU time: a 0.2 s sleep is within it ...
    assert slept.status is Status.OK, res
    # ... a 0.2 s spin is not, and says so.
    assert spun.status is Status.TIMEOUT and "reduced limit" in (spun.error or ""), spun
    assert quick.status is Status.OK, res


def test_the_batch_budget_counts_cpu_time(sb: Sandbox) -> None:
    # Eight sleeps of 0.1 s: 0.8 s of wall time, almost no CPU time, within a 0.5 s budget ...
    lim = replace(LIM, batch=0.5, wall_factor=20.0)  # its wall-clock backstop: 10 s
    sleeps = sb.run(PROGRAM, "f", [["sleep", 0.1]] * 8, lim)
    assert [o.status for o in sleeps.outcomes] == [Status.OK] * 8, sleeps
    # ... which spinning spends: the inputs after it are timeouts, "not run".
    spins = sb.run(PROGRAM, "f", [["spin", 0.15]] * 8, lim)
    statuses = [o.status for o in spins.outcomes]
    assert statuses[:2] == [Status.OK, Status.OK] and statuses[-1] is Status.TIMEOUT, spins
    assert "CPU-time budget" in (spins.outcomes[-1].error or ""), spins
    # Under wall-clock limits the same sleeps spend the budget.
    wall = sb.run(PROGRAM, "f", [["sleep", 0.1]] * 8, replace(lim, kind=LimitKind.WALL))
    assert wall.outcomes[-1].status is Status.TIMEOUT, wall
    assert (wall.outcomes[-1].error or "").startswith("not run"), wall


def test_wall_clock_limits_behave_as_before(sb: Sandbox) -> None:
    lim = replace(LIM, kind=LimitKind.WALL)
    res = sb.run(PROGRAM, "f", [["sleep", 0.2], ["sleep", 60], ["spin", 0.01]], lim)
    short, slept, spun = res.outcomes
    # A sleep counts: seconds are wall time, and a sleep past the limit is a timeout at it.
    assert short.status is Status.OK and 0.15 < short.seconds < LIM.per_input, short
    assert slept.status is Status.TIMEOUT and slept.error == "timed out", slept
    assert LIM.per_input <= slept.seconds < LIM.per_input + LIM.slack, slept
    assert spun.status is Status.OK and res.children == 1, res


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: a hog never outlives the test


@contextlib.contextmanager
def cpu_hogs(n: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``n`` processes that spin until the block ends (on every exit path). Each is a session
    of its own, as unrelated jobs on a machine are (with the scheduler's autogroups, processes
    of one session share one slice of the CPU)."""
    hogs: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(n):
            hogs.append(
                subprocess.Popen(
                    [sys.executable, "-c", "import os\nos.write(1, b'!')\nwhile True:\n    pass\n"],
                    stdout=subprocess.PIPE,
                    preexec_fn=_die_with_parent,
                    start_new_session=True,
                )
            )
        for h in hogs:  # every hog is spinning before the block starts
            assert h.stdout is not None and h.stdout.read(1) == b"!"
        yield hogs
    finally:
        for h in hogs:
            h.kill()
        for h in hogs:
            h.wait()
            if h.stdout is not None:
                h.stdout.close()


def test_a_near_limit_input_passes_under_cpu_limits_on_a_loaded_machine(sb: Sandbox) -> None:
    """0.3 s of CPU time against a 0.4 s limit, while twice as many spinning processes as
    cores compete for the CPU: its wall time is well past the limit, its CPU time is not."""
    cores = len(os.sched_getaffinity(0))
    with cpu_hogs(2 * min(cores, 8)):
        res = sb.run(PROGRAM, "f", [["spin", 0.3]], WIDE)
    o = res.outcomes[0]
    if res.wall_seconds < LIM.per_input:
        pytest.skip(f"the hogs did not slow the input down ({res.wall_seconds:.2f} s wall)")
    assert o.status is Status.OK and o.value == ["spin", 0.3], res
    assert 0.3 <= o.seconds < LIM.per_input, o


class _LateClock:
    """The collector's ``time`` module, with a parent that was off its CPU ``offset`` seconds
    more than it was (a loaded machine, a long decoding): what a busy parent sees, on a quiet
    machine."""

    def __init__(self) -> None:
        self.offset = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self.offset

    def thread_time(self) -> float:
        return time.thread_time()


def test_a_parent_that_looks_late_at_a_running_input_kills_nothing(
    sb: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parent decodes input 0's frame while input 1 runs; on a busy machine its first
    look at input 1 may come seconds late. The time before it is the parent's: input 1, which
    spends its CPU time and never sleeps, is not "asleep past the backstop" (it was, with
    0.001 s of CPU time, in a loaded test run)."""
    late = _LateClock()
    settle = collector._Reader._settle

    def settle_then_stall(self: Any, msg: dict[str, Any], *rest: Any) -> bool:
        if msg.get("k") == "r" and msg.get("i") == 0:
            late.offset += 10 * LIM.backstop(LIM.per_input)
        return settle(self, msg, *rest)

    monkeypatch.setattr(collector, "time", late)
    monkeypatch.setattr(collector._Reader, "_settle", settle_then_stall)
    res = sb.run(PROGRAM, "f", [["spin", 0.0], ["spin", 0.2]], LIM)
    assert late.offset > 0, res  # the parent did look late
    assert [o.status for o in res.outcomes] == [Status.OK, Status.OK], res
    assert res.children == 1, res


def test_a_frame_that_came_while_the_parent_was_away_is_taken_not_killed(
    sb: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between two looks at an input the parent may be off its CPU for seconds; meanwhile the
    child writes its frame and waits for its next input. That wait is the parent's: the frame
    is read and judged, the input is no timeout."""
    late = _LateClock()
    cpu_wait = collector._Reader._cpu_wait
    looks: list[int] = []

    def away_at_second_look(self: Any, now: float, u: float, used: float) -> float:
        if self.expect == 1:
            looks.append(1)
            if len(looks) == 2:  # the first look took the baseline; now the parent is away
                poller = select.poll()
                poller.register(self.fd, select.POLLIN)
                assert poller.poll(60_000), "the child never wrote its frame"
                assert self.sched is not None
                while self.sched.runnable():  # until the child waits for its next input
                    os.sched_yield()
                late.offset += 10 * LIM.backstop(LIM.per_input)
                now, u = late.monotonic(), self.clock.read()
                used = u - self.u_mark
            elif len(looks) == 1:  # look again at once (the frame is not in yet)
                return min(cpu_wait(self, now, u, used), 0.0)
        return cpu_wait(self, now, u, used)

    monkeypatch.setattr(collector, "time", late)
    monkeypatch.setattr(collector._Reader, "_cpu_wait", away_at_second_look)
    res = sb.run(PROGRAM, "f", [["spin", 0.0], ["spin", 0.05], ["spin", 0.0]], LIM)
    assert len(looks) >= 2 and late.offset > 0, (looks, res)
    assert [o.status for o in res.outcomes] == [Status.OK] * 3, res
    assert res.children == 1, res
