"""What reading a batch's frames may cost the parent: at most 2 x the CPU time its children
spent (the kernel's count) + 0.5 s, checked before a frame is parsed and while it is decoded.

At 550dac7 a program that wrote frames of its own (16 MiB of empty lists each, next to nothing
for the child) cost the parent seconds of CPU time per frame and hundreds of MiB.
``benchmarks/perf/parent_cost.py`` measures the times; these tests check the decisions, with
the children's CPU time and the parent's spending given, not timed.
"""

from __future__ import annotations

import os
import textwrap
import time
from collections.abc import Iterator

import pytest

from utdebug.sandbox import Limits, Sandbox, Status
from utdebug.sandbox import collector as C
from utdebug.sandbox import frames as S
from utdebug.sandbox.config import LimitKind
from utdebug.sandbox.outcomes import BatchResult

MiB = 1 << 20


def _lists(n: int) -> bytes:
    """A result frame whose value is ``n`` empty lists."""
    return b'{"k":"r","i":0,"s":"ok","t":0,"v":[' + b"[]," * (n - 1) + b"[]]}"


def test_a_frames_cost_is_estimated_from_its_bytes() -> None:
    big = _lists(MiB)  # 3 MiB: counted
    containers = MiB + 1
    want = containers * C.PER_CONTAINER + len(big) * C.PER_BYTE
    assert C._frame_cost(big) == pytest.approx(want, rel=1e-3)
    text = b'{"k":"r","i":0,"s":"ok","t":0,"v":"' + b"a" * (3 * MiB) + b'"}'
    assert C._frame_cost(text) < C._frame_cost(big) / 50  # a string costs its bytes only
    half = len(big) // 2  # counted as it arrived: the rest is counted now
    containers, commas = C._count(big, (0, 0, 0), 0, half)
    assert C._frame_cost(big, (half, containers, commas)) == pytest.approx(C._frame_cost(big))


def test_a_frame_past_the_parents_share_is_refused() -> None:
    cost = C._frame_cost(_lists(5 * MiB))  # about 2.6 s
    why = C.too_costly(16 * MiB, cost, spent=0.0, child=0.1)
    assert why is not None and why.startswith("result too costly to read: 16777216 bytes")
    assert "after 0.100 s of CPU" in why
    # a child that spent enough on it (encoding is at least as much work) is read
    assert C.too_costly(16 * MiB, cost, spent=0.0, child=cost / 2) is None
    # what the parent spent on the batch already counts
    assert C.too_costly(MiB, 0.2, spent=0.25, child=0.0) is None
    assert C.too_costly(MiB, 0.2, spent=0.35, child=0.0) is not None


class _Clock:
    """A child's CPU clock that says what the test wants."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.reads = seconds, 0

    def read(self) -> float:
        self.reads += 1
        return self.seconds

    def close(self) -> None:
        pass


@pytest.fixture
def pipe() -> Iterator[int]:
    r, w = os.pipe()
    try:
        yield r
    finally:
        os.close(r)
        os.close(w)


def _reader(fd: int, res: BatchResult, clock: _Clock, kind: LimitKind) -> C._Reader:
    lim = Limits(kind=kind)
    budget = C._Budget(lim, time.monotonic())
    if kind is LimitKind.CPU:
        return C._Reader(fd, 0, 3, lim, res, budget, clock=clock)  # type: ignore[arg-type]
    return C._Reader(fd, 0, 3, lim, res, budget, cost_clock=clock)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", [LimitKind.CPU, LimitKind.WALL])
def test_the_reader_refuses_by_the_childrens_cpu_time(pipe: int, kind: LimitKind) -> None:
    res = BatchResult(outcomes=[], cpu_seconds=0.05)  # an earlier child of the batch
    reader, frame = _reader(pipe, res, _Clock(0.05), kind), _lists(5 * MiB)
    reader.expect = 1
    with pytest.raises(C._Stop) as stop:
        reader._afford(frame, 0.05)
    out = stop.value.outcome
    assert stop.value.index == 1 and out.status is Status.ERROR
    assert out.error_type == "OutputTooLarge" and "after 0.100 s of CPU" in (out.error or "")
    # the same frame after 2 s of the children's CPU time
    reader = _reader(pipe, BatchResult(outcomes=[], cpu_seconds=1.0), _Clock(1.0), kind)
    assert reader._afford(frame, 1.0) == pytest.approx(C._frame_cost(frame))
    assert reader.cost_end is not None


def _batch(*values: bytes) -> bytearray:
    """The frames of a child that loads and answers each input with one of ``values`` (the
    JSON text of its value), then ends."""
    frames = [b'{"k":"load","ok":true,"t":0}']
    frames += [b'{"k":"r","i":%d,"s":"ok","t":0,"v":%s}' % (i, v) for i, v in enumerate(values)]
    frames.append(b'{"k":"end","out":0}')
    return bytearray(b"".join(len(f).to_bytes(4, "big") + f for f in frames))


def test_small_frames_cost_the_worst_rate_until_the_floor_then_are_counted(pipe: int) -> None:
    lists = b"[" + b"[]," * 1299 + b"[]]"
    text = b'"' + b"a" * 4000 + b'"'
    clock = _Clock(0.0001)  # 0.2 ms more than the floor: less than the worst rate of 4 KB
    res = BatchResult(outcomes=[])
    reader = _reader(pipe, res, clock, LimitKind.WALL)
    reader.buf = _batch(lists, lists, text)
    assert reader.run() is None and len(res.outcomes) == 3
    assert res.parent_seconds < C.PARENT_FLOOR and clock.reads == 0  # nothing counted
    assert res.parent_seconds > 4000 * C.WORST_PER_BYTE
    # past the floor, small frames of text are counted (their bytes only) and read
    res = BatchResult(outcomes=[], parent_seconds=C.PARENT_FLOOR)
    reader = _reader(pipe, res, clock, LimitKind.WALL)
    reader.buf = _batch(text, text, text)
    assert 2 * clock.seconds < 4000 * C.WORST_PER_BYTE
    assert reader.run() is None and [o.status for o in res.outcomes] == [Status.OK] * 3
    assert res.parent_seconds - C.PARENT_FLOOR < 4000 * C.WORST_PER_BYTE / 10
    assert clock.reads >= 3
    # the same bytes as lists are not
    reader = _reader(pipe, BatchResult(outcomes=[], parent_seconds=C.PARENT_FLOOR), clock,
                     LimitKind.WALL)  # fmt: skip
    reader.buf = _batch(lists, text, text)
    with pytest.raises(C._Stop) as stop:
        reader.run()
    assert stop.value.index == 0 and stop.value.costly


def test_decoding_stops_at_the_parents_share() -> None:
    """``cost_end`` already passed: decoding stops at its first look at the clock, as too
    costly (not as the input's timeout)."""
    frame = _lists(20000)
    msg = S.read_frame(frame)
    out = S._outcome(msg, len(frame), cost_end=time.thread_time() - 1.0)
    assert out.status is Status.ERROR and out.error_type == "OutputTooLarge", out
    assert "too costly" in (out.error or "")
    assert S._outcome(S.read_frame(frame), len(frame)).status is Status.OK


def test_a_program_that_floods_its_result_pipe_is_refused(sb: Sandbox) -> None:
    """Frames of its own for every input, 15 MB of empty lists each: the first is refused
    before it is read to its end, its child killed, and the batch's later inputs are not
    run."""
    code = textwrap.dedent(
        """
        import fcntl, os

        def f(i, n):
            if i >= n:
                return i
            fd = next(fd for fd in range(3, 64) if _writes(fd))
            body = b"[" + b"[]," * 5_000_000 + b"[]]"
            for k in range(i, n):
                raw = b'{"k":"r","i":%d,"s":"ok","t":0,"v":' % k + body + b"}"
                os.write(fd, len(raw).to_bytes(4, "big") + raw)
            os._exit(0)

        def _writes(fd):
            try:
                return fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY
            except OSError:
                return False
        """
    )
    res = sb.run(code, "f", [[0, 3], [1, 3], [2, 3], [3, 3]], Limits(per_input=2.0))
    assert [o.status for o in res.outcomes] == [Status.ERROR] * 4, res
    assert (res.outcomes[0].error or "").startswith("result too costly to read: 15000"), res
    assert all("too costly for the parent to read" in (o.error or "") for o in res.outcomes[1:])
    assert res.children == 1
    assert res.parent_seconds <= C.PARENT_FACTOR * res.cpu_seconds + C.PARENT_FLOOR, res
    # a program that returns such a value itself is read
    honest = "def f(n):\n    return [[] for _ in range(n)]\n"
    res = sb.run(honest, "f", [[300_000], [5]], Limits(per_input=5.0))
    assert [len(o.value) for o in res.outcomes] == [300_000, 5], res
