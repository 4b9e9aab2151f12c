"""A batch's quick inputs run with the driving thread and the child on one CPU.

Handing an input over and taking its result back is then a context switch on one CPU instead
of a wake-up on another (``SandboxConfig.pin_cpu``). An input that runs longer than the
parent's first look gets every CPU back; the driving thread gets its own affinity back when
the batch ends. CPU-time verdicts do not depend on any of it.
"""

from __future__ import annotations

import os
import textwrap
import threading
from collections.abc import Iterator

import pytest

try:  # tests/ is not a package today; allow it to become one
    from tests import sandbox_helpers as H
except ImportError:  # pragma: no cover - depends on how pytest set sys.path
    import sandbox_helpers as H  # type: ignore[no-redef]

from utdebug.sandbox import Limits, Sandbox, Status
from utdebug.sandbox.server import _Pin

CPUS = os.sched_getaffinity(0)
needs_two = pytest.mark.skipif(len(CPUS) < 2, reason="pinning needs at least 2 CPUs")

PROGRAM = textwrap.dedent(
    """
    import os, time

    def f(burn):
        t = time.process_time()
        while time.process_time() - t < burn:
            pass
        return sorted(os.sched_getaffinity(0))
    """
)
LIM = Limits(per_input=2.0, load=5.0)


@pytest.fixture(scope="module")
def sb() -> Iterator[Sandbox]:
    yield from H.default_sandbox()


@needs_two
def test_quick_inputs_run_on_the_driving_threads_cpu_and_a_slow_one_gets_every_cpu(
    sb: Sandbox,
) -> None:
    before = os.sched_getaffinity(0)
    res = sb.run(PROGRAM, "f", [(0.0,), (0.0,), (0.2,), (0.0,)], LIM)
    assert [o.status for o in res.outcomes] == [Status.OK] * 4, res.outcomes
    quick, again, slow, after = (o.value for o in res.outcomes)
    assert len(quick) == 1 and quick == again == after  # one CPU, the same one each time
    assert set(slow) == CPUS  # 0.2 s of CPU time: unpinned at the first look (5 ms)
    assert os.sched_getaffinity(0) == before  # the driving thread's affinity is back


@needs_two
def test_concurrent_batches_take_different_cpus(sb: Sandbox) -> None:
    # The allocator: two batches of this process that run at once never share a CPU here.
    cpus: list[int] = []
    held = threading.Barrier(2)

    def hold() -> None:
        pin = _Pin.start(os.getpid())
        assert pin is not None
        try:
            cpus.append(pin.cpu)
            assert os.sched_getaffinity(0) == {pin.cpu}  # this thread only
            held.wait(timeout=60)
        finally:
            pin.close()
        assert os.sched_getaffinity(0) == CPUS

    threads = [threading.Thread(target=hold) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cpus) == 2 and cpus[0] != cpus[1]
    assert os.sched_getaffinity(0) == CPUS  # the main thread was never pinned

    got: dict[int, list[int]] = {}

    def run(k: int) -> None:
        out = sb.run(PROGRAM, "f", [(0.05,), (0.0,)], LIM)
        got[k] = out.outcomes[1].value

    threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got[0]) == len(got[1]) == 1
    assert all(v == 0 for v in _Pin._users.values())  # every pin released


def test_pinning_can_be_turned_off() -> None:
    s = H.make_sandbox("bwrap", pin_cpu=False)
    try:
        res = s.run(PROGRAM, "f", [(0.0,)], LIM)
    finally:
        s.close()
    assert res.outcomes[0].status is Status.OK
    assert set(res.outcomes[0].value) == CPUS
