"""How an input goes to the child and its result comes back (``clocks._Lane``).

A batch alone on the machine ("spread"): its driving thread and its child run on different
CPUs, and both ends wait for the other by trying their pipe, yielding their CPU between tries,
and block on it only after a bounded number of tries (a blocking wait costs a wake-up, which on
a virtual machine takes tens of microseconds across CPUs). Under any other load ("shared"):
the two are pinned to one CPU while inputs are quick and block on their pipes. The child
yields just before it writes a frame, so the parent's reading of its CPU clock once the frame
is there is exact in both: the kernel brings a running thread's clock up to date only when it
leaves or yields its CPU, or at a tick (4 ms at 250 Hz).
"""

from __future__ import annotations

import json
import os
import statistics
import struct
import textwrap
import threading
import time
from collections.abc import Iterator

import pytest

from utdebug.sandbox import Limits, Sandbox, Status, _runner, clocks, collector

BURN = textwrap.dedent(
    """
    import time

    def f(burn):
        clock = time.CLOCK_PROCESS_CPUTIME_ID
        t = time.clock_gettime(clock)
        while time.clock_gettime(clock) - t < burn:
            pass
        return time.clock_gettime(clock) - t
    """
)
LIM = Limits(per_input=2.0, load=5.0, slack=0.5, wall_factor=20.0)
CPUS = os.sched_getaffinity(0)
needs_two = pytest.mark.skipif(len(CPUS) < 2, reason="lanes differ only with 2 CPUs or more")
AFFINITY = textwrap.dedent(
    """
    import os, time

    def f(burn):
        t = time.process_time()
        while time.process_time() - t < burn:
            pass
        return sorted(os.sched_getaffinity(0))
    """
)


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many tasks the lanes see runnable on the machine (set ``[n]``)."""
    runnable = [1]
    monkeypatch.setattr(clocks, "_runnable", lambda: runnable[0])
    yield runnable
    assert clocks._Lane._active == [0]  # every lane closed
    assert all(v == 0 for v in clocks._Lane._users.values())


def test_each_input_is_charged_all_the_cpu_time_it_used(sb: Sandbox, machine: list[int]) -> None:
    """20 ms of CPU time per input (five ticks' worth), in a spread lane: the parent's charge
    is never short of what the program measured itself, and never more than a little over it.
    A reading taken while the child was still on its CPU would lag by up to a tick, moving up
    to 4 ms from one input to the next."""
    res = sb.run(BURN, "f", [(0.02,)] * 12, LIM)
    assert [o.status for o in res.outcomes] == [Status.OK] * 12, res.outcomes
    for o in res.outcomes:
        assert o.value >= 0.02
        assert o.seconds >= o.value - 0.0003, (o.seconds, o.value)  # the reading is not short
        assert o.seconds <= o.value + 0.02, (o.seconds, o.value)  # decoding, the wait: small


def test_an_inputs_garbage_is_charged_to_it_not_to_the_next_input(
    sb: Sandbox, machine: list[int]
) -> None:
    """A large result (200,000 small lists) then a trivial input, four times: freeing the large
    value is the large input's work. Before, the child freed it once the next input had
    started, and each trivial input was charged about 11 ms."""
    program = "def f(k):\n    return [[i, str(i)] for i in range(k)] if k else 0\n"
    res = sb.run(program, "f", [(200_000,), (0,)] * 4, LIM)
    assert [o.status for o in res.outcomes] == [Status.OK] * 8, res.outcomes
    trivial = [o.seconds for o in res.outcomes[1::2]]
    # What freeing such a value costs on this machine now (a loaded machine makes both the
    # child's and this measure larger): a trivial input charged with that freeing would be
    # charged at least about this much; one that is not, a fraction of it.
    value = [[i, str(i)] for i in range(200_000)]
    frame = json.dumps({"v": value}).encode()
    t0 = time.thread_time()
    del value, frame
    free = time.thread_time() - t0
    assert statistics.median(trivial) < free / 2, (trivial, free)


def _pipe() -> tuple[int, int]:
    r, w = os.pipe()
    os.set_blocking(r, False)  # as the runner's input pipe is
    return r, w


def test_the_childs_wait_for_an_input_spins_only_briefly() -> None:
    """An input that comes 0.3 s late, in two pieces: the wait uses far less CPU time than
    that (it blocks after _runner.SPIN tries), and the input is whole."""
    r, w = _pipe()
    body = b'[[1, 2], "x"]'

    def send() -> None:
        time.sleep(0.3)
        os.write(w, struct.pack(">I", len(body)) + body[:3])
        time.sleep(0.05)
        os.write(w, body[3:])

    t = threading.Thread(target=send)
    try:
        t.start()
        cpu = time.thread_time()
        text = _runner._read_input(r, _runner.SPIN)
        used = time.thread_time() - cpu
        assert text == body.decode()
        assert used < 0.1, f"{used:.3f} s of CPU time waiting for a late input"
    finally:
        t.join()
        os.close(w)
    assert _runner._read_input(r, _runner.SPIN) is None  # the parent is gone: end of the inputs
    os.close(r)


def test_the_parents_wait_for_a_slow_input_spins_only_briefly(sb: Sandbox) -> None:
    """0.3 s of CPU time in the child: the thread that drives the batch uses a small part of
    it (it polls after _SPIN tries)."""
    sb.run(BURN, "f", [(0.0,)], LIM)  # the sandbox is warm
    cpu = time.thread_time()
    res = sb.run(BURN, "f", [(0.3,)], LIM)
    used = time.thread_time() - cpu
    assert res.outcomes[0].status is Status.OK, res.outcomes
    assert res.outcomes[0].seconds >= 0.3
    assert used < 0.1, f"the parent used {used:.3f} s of CPU time for a 0.3 s input"


@needs_two
def test_a_batch_alone_spreads_and_one_beside_others_shares_a_cpu(
    machine: list[int],
) -> None:
    first = clocks._Lane.open()
    try:
        assert first.spread and first.cpu is None  # alone on an idle machine
        assert os.sched_getaffinity(0) == CPUS
        second = clocks._Lane.open()  # beside the first
        try:
            assert not second.spread and second.cpu in CPUS
            assert os.sched_getaffinity(0) == {second.cpu}  # this thread, for the batch
        finally:
            second.close()
        assert os.sched_getaffinity(0) == CPUS
    finally:
        first.close()
    machine[0] = len(CPUS) + 1  # as many other runnable tasks as CPUs
    busy = clocks._Lane.open()
    try:
        assert not busy.spread and busy.cpu in CPUS
    finally:
        busy.close()
    assert os.sched_getaffinity(0) == CPUS


@needs_two
def test_concurrent_shared_batches_take_different_cpus(machine: list[int]) -> None:
    machine[0] = 99
    cpus: list[int | None] = []
    held = threading.Barrier(2)

    def hold() -> None:
        lane = clocks._Lane.open()
        try:
            cpus.append(lane.cpu)
            held.wait(timeout=60)
        finally:
            lane.close()

    threads = [threading.Thread(target=hold) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cpus) == 2 and None not in cpus and cpus[0] != cpus[1]


@needs_two
def test_a_shared_batchs_quick_inputs_run_on_one_cpu_and_a_slow_one_gets_every_cpu(
    sb: Sandbox, machine: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rule: an input still running at the parent's first look gets every CPU; one that
    ended before it stays on the lane's CPU. The look is 5 ms of wall-clock time, which a
    quick input outlasts on a loaded machine (its CPU busy with other work: 2 failures in 14
    runs at load 7), so the test gives it room: a first look at 0.25 s, and a slow input of
    1 s of CPU time, which cannot end before it whatever the load."""
    monkeypatch.setattr(collector, "_FIRST_LOOK", 0.25)
    machine[0] = 99
    res = sb.run(AFFINITY, "f", [(0.0,), (0.0,), (1.0,), (0.0,)], LIM)
    assert [o.status for o in res.outcomes] == [Status.OK] * 4, res.outcomes
    quick, again, slow, after = (o.value for o in res.outcomes)
    assert len(quick) == 1 and quick == again == after  # one CPU, the same one each time
    assert set(slow) == CPUS  # still running at the first look: every CPU
    assert os.sched_getaffinity(0) == CPUS  # the driving thread's affinity is back


@needs_two
def test_a_spread_batchs_child_may_run_on_every_cpu(sb: Sandbox, machine: list[int]) -> None:
    res = sb.run(AFFINITY, "f", [(0.0,), (0.0,)], LIM)
    assert [set(o.value) for o in res.outcomes] == [CPUS, CPUS], res.outcomes


def test_charges_are_the_same_in_both_lanes(sb: Sandbox, machine: list[int]) -> None:
    """The 20 ms inputs above, in a shared lane: charged what they used, as in a spread one."""
    machine[0] = 99
    res = sb.run(BURN, "f", [(0.02,)] * 6, LIM)
    assert [o.status for o in res.outcomes] == [Status.OK] * 6, res.outcomes
    for o in res.outcomes:
        assert o.value - 0.0003 <= o.seconds <= o.value + 0.02, (o.seconds, o.value)
