"""How an input goes to the child and its result comes back.

Both ends wait for the other by trying their pipe, yielding their CPU between tries, and block
on it only after a bounded number of tries (a blocking wait costs a wake-up, which on a
virtual machine takes tens of microseconds when the two run on different CPUs). The child
yields just before it writes a frame, so the parent's reading of its CPU clock once the frame
is there is exact: the kernel brings a running thread's clock up to date only when it leaves
or yields its CPU, or at a tick (4 ms at 250 Hz).
"""

from __future__ import annotations

import os
import struct
import textwrap
import threading
import time
from collections.abc import Iterator

import pytest

try:  # tests/ is not a package today; allow it to become one
    from tests import sandbox_helpers as H
except ImportError:  # pragma: no cover - depends on how pytest set sys.path
    import sandbox_helpers as H  # type: ignore[no-redef]

from utdebug.sandbox import Limits, Sandbox, Status, _runner

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


@pytest.fixture(scope="module")
def sb() -> Iterator[Sandbox]:
    yield from H.default_sandbox()


def test_each_input_is_charged_all_the_cpu_time_it_used(sb: Sandbox) -> None:
    """20 ms of CPU time per input (five ticks' worth): the parent's charge is never short of
    what the program measured itself, and never more than a little over it. A reading taken
    while the child was still on its CPU would lag by up to a tick, moving up to 4 ms from one
    input to the next."""
    res = sb.run(BURN, "f", [(0.02,)] * 12, LIM)
    assert [o.status for o in res.outcomes] == [Status.OK] * 12, res.outcomes
    for o in res.outcomes:
        assert o.value >= 0.02
        assert o.seconds >= o.value - 0.0003, (o.seconds, o.value)  # the reading is not short
        assert o.seconds <= o.value + 0.02, (o.seconds, o.value)  # decoding, the wait: small


def test_an_inputs_garbage_is_charged_to_it_not_to_the_next_input(sb: Sandbox) -> None:
    """A large result (200,000 small lists) then a trivial input, four times: freeing the large
    value is the large input's work. Before, the child freed it once the next input had
    started, and each trivial input was charged about 11 ms."""
    program = "def f(k):\n    return [[i, str(i)] for i in range(k)] if k else 0\n"
    res = sb.run(program, "f", [(200_000,), (0,)] * 4, LIM)
    assert [o.status for o in res.outcomes] == [Status.OK] * 8, res.outcomes
    trivial = [o.seconds for o in res.outcomes[1::2]]
    assert max(trivial) < 0.005, trivial


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
        text = _runner._read_input(r)
        used = time.thread_time() - cpu
        assert text == body.decode()
        assert used < 0.1, f"{used:.3f} s of CPU time waiting for a late input"
    finally:
        t.join()
        os.close(w)
    assert _runner._read_input(r) is None  # the parent is gone: end of the inputs
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
