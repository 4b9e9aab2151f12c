"""Reading one child's result frames: each input's limit, the batch's budget and the hard
deadlines that decide when a child is killed (see ``docs/sandbox.md``)."""

from __future__ import annotations

import math
import os
import select
import time
from dataclasses import dataclass, replace
from typing import Any

from utdebug.sandbox.clocks import _NCPU, _CpuClock, _Lane, _SchedStat
from utdebug.sandbox.config import LimitKind, Limits
from utdebug.sandbox.frames import (
    _FACTS,
    _GC_SMALL,
    MAX_FACTS,
    _Feed,
    _gc_pause,
    _gc_resume,
    _outcome,
    _Oversize,
    _pump,
    _take_frame,
    _want,
    read_frame,
)
from utdebug.sandbox.outcomes import (
    BatchResult,
    Outcome,
    Raised,
    SandboxError,
    Status,
    _backstop_outcome,
    _charge_cpu,
    _charge_wall,
    _cpu_timeout_outcome,
    _decoded_late,
    _error_pair,
    _of,
    _short,
    _timeout_outcome,
    _violation,
)

PARENT_FACTOR = 2.0
PARENT_FLOOR = 0.5
"""Reading a batch's frames (parsing and decoding them) may cost the parent at most
PARENT_FACTOR x the CPU time the batch's children spent, as the kernel counts it, +
PARENT_FLOOR seconds: a frame whose estimated cost would pass that is refused before it is
parsed, and decoding stops once the parent's own CPU time passes it ("result too costly to
read"). A program that writes frames of its own spends next to nothing on them."""

PER_CONTAINER = 0.5e-6
PER_LEAF = 0.1e-6
PER_BYTE = 2e-9
"""A frame's cost to the parent, estimated from its bytes before it is parsed: each list or
object (a ``[`` or ``{``), each other element (a ``,`` that is not one), each byte. About
what the parent spends on the 2-core development VM under load (a 16 MiB frame of empty
lists, 5.6 M containers: 3.2 s; of ints, 8.4 M: 1.0 s; a 16 MiB string: 0.02 s); an honest
child spends more on a frame than that (encoding is at least as much work as decoding)."""

_COUNT_FROM = 1 << 16
"""Larger frames are counted as they arrive, and the parent's time on them measured; smaller
ones are costed at the worst rate per byte while the batch's frames are within
PARENT_FLOOR, then counted."""


WORST_PER_BYTE = PER_CONTAINER / 3 + PER_BYTE
"""The most a frame's byte can cost: a container every 3 bytes (``[],``)."""


def _frame_cost(frame: bytes | bytearray, counted: tuple[int, int, int] = (0, 0, 0)) -> float:
    """What parsing and decoding ``frame`` may cost the parent, in CPU seconds; ``counted``:
    its first bytes already counted (how many, their containers and commas)."""
    n = len(frame)
    containers, commas = _count(frame, counted)
    leaves = max(0, commas + 1 - containers)
    return containers * PER_CONTAINER + leaves * PER_LEAF + n * PER_BYTE


def _count(
    data: bytes | bytearray, counted: tuple[int, int, int], start: int = 0, end: int | None = None
) -> tuple[int, int]:
    """The containers (``[``, ``{``) and commas of ``data[start:end]``, of which the first
    ``counted[0]`` bytes were counted already (``counted[1:]``)."""
    end = len(data) if end is None else end
    at = start + counted[0]
    containers = counted[1] + data.count(b"[", at, end) + data.count(b"{", at, end)
    return containers, counted[2] + data.count(b",", at, end)


def too_costly(nbytes: int, cost: float, spent: float, child: float) -> str | None:
    """Why a frame of ``nbytes`` (``cost``: :func:`_frame_cost`) is refused before it is
    parsed, after the parent spent ``spent`` seconds reading the batch whose children spent
    ``child`` seconds of CPU time; None when the parent can afford it."""
    allowed = PARENT_FACTOR * child + PARENT_FLOOR
    if spent + cost <= allowed:
        return None
    return (
        f"result too costly to read: {nbytes} bytes after {child:.3f} s of CPU (the parent "
        f"reads at most {PARENT_FACTOR:g} x its children's CPU time + {PARENT_FLOOR:g} s; "
        f"{spent:.3f} s spent, about {cost:.3f} s more)"
    )


def _is_fact(kind: object) -> bool:
    return type(kind) is str and kind in _FACTS


class _Stop(Exception):
    """The current child stopped early at input ``index`` with ``outcome``."""

    def __init__(
        self, index: int, outcome: Outcome, budget_spent: bool = False, costly: bool = False
    ) -> None:
        super().__init__(index)
        self.index = index
        self.outcome = outcome
        self.budget_spent = budget_spent
        self.costly = costly  # a frame too costly to read: the batch's later inputs are not run


def _quick_until(
    lim: Limits, limit: float, budget: _Budget, res: BatchResult, cpu: float, start: float
) -> float:
    """Until when (monotonic) the parent may wait for the frame of an input sent at ``start``
    without looking at anything else: before it, no limit of the input, no backstop and no
    budget can have been reached (the child's CPU clock rises at most _NCPU times as fast as
    the wall clock). 0.0 when a budget is already spent (the full look says so at once)."""
    if lim.kind is LimitKind.CPU:
        quick = min(_FIRST_LOOK, (limit + lim.slack) / _NCPU, lim.backstop(limit))
    else:
        quick = min(_FIRST_LOOK, limit + lim.slack)
    left = budget.left(res, cpu, start)
    if left <= 0:
        return 0.0
    return start + min(quick, left)


_MIN_WAIT = 0.002


_SPIN = 200
"""How many times the parent tries the result pipe for an input's frame (yielding its CPU
between tries: a few hundred microseconds in all) before it polls, when the child runs on
another CPU (see :class:`_Lane`; the child's side does the same, ``_runner.SPIN``). Where the
two share a CPU it tries once."""


_CONFIRM = 0.05
"""How long the parent waits for a child that reported a timeout its CPU clock does not show yet
to leave its CPU (a rare path: an honest child blocks on its input pipe within microseconds)."""


_FIRST_LOOK = 0.005
"""The parent reads a slow input's schedstat baseline at most this long after sending it."""


@dataclass(slots=True)
class _Budget:
    """A batch's budget (``Limits.batch``): wall-clock seconds since the batch started, or,
    under CPU-time limits, the CPU time of all the batch's children (the ended ones' from
    ``wait4``, the running one's from its clock), with a wall-clock backstop."""

    lim: Limits
    t0: float

    def _wall_end(self) -> float | None:
        b = self.lim.batch
        return None if b is None else self.t0 + self.lim.backstop(b)

    def left(self, res: BatchResult, child_cpu: float, now: float) -> float:
        """How long, at the soonest, until the budget is spent (<= 0: it is; inf: none). The
        CPU part assumes the child keeps every CPU busy."""
        return self._left(res, child_cpu, now, -math.inf)

    def spent(self, res: BatchResult, child_cpu: float, now: float) -> bool:
        return self.left(res, child_cpu, now) <= 0

    def wait(self, res: BatchResult, child_cpu: float, now: float) -> float:
        """How long the parent may sleep before the budget could be spent."""
        return self._left(res, child_cpu, now, _MIN_WAIT)

    def _left(self, res: BatchResult, child_cpu: float, now: float, floor: float) -> float:
        """:meth:`left`, with the CPU part at least ``floor``."""
        end = self._wall_end()
        if end is None:
            return math.inf
        left = end - now
        if self.lim.kind is LimitKind.CPU:
            assert self.lim.batch is not None
            cpu_left = self.lim.batch - res.cpu_seconds - child_cpu
            left = min(left, max(cpu_left / _NCPU, floor))
        return left


class _Reader:
    """Reads one child's frames until it ends; :meth:`run` returns an Outcome when loading
    failed, and raises :class:`_Stop` when the child must be killed at an input.

    The child gets input k (from ``feed``) only once its previous frame is here. It waits
    for it by trying its input pipe, yielding its CPU between tries, and blocks on the pipe
    after _runner.SPIN tries: a wait charges it at most those tries' CPU time (a few
    hundred microseconds; on an idle machine the next input is there within a few
    microseconds, since it goes out before the frame is decoded). Wall-clock limits: an
    input's hard deadline is its limit + slack after its input was sent, and a result that
    arrives later than its limit is a timeout. CPU-time limits (``clock``): input k is
    charged with the child's CPU clock as read here once its frame had arrived, minus the
    reading once the previous frame had arrived (the child's own readings decide nothing);
    it is killed past limit + slack of CPU time, or once it has slept or blocked
    (``sched``: wall time not spent on a CPU nor waiting for one) past the wall-clock
    backstop; a result charged with more than its limit is a timeout, and a timeout the
    child reports is one only when the charge has reached the limit.
    """

    __slots__ = (
        "born",
        "budget",
        "buf",
        "clock",
        "cost_clock",
        "cost_end",
        "counted",
        "cut",
        "expect",
        "facts",
        "failed",
        "fd",
        "feed",
        "lane",
        "lim",
        "limit",
        "n",
        "poller",
        "quick_until",
        "res",
        "sched",
        "spin",
        "start",
        "timeouts",
        "told",
        "u_mark",
        "w_mark",
    )

    def __init__(
        self,
        fd: int,
        start: int,
        n: int,
        lim: Limits,
        res: BatchResult,
        budget: _Budget,
        clock: _CpuClock | None = None,
        sched: _SchedStat | None = None,
        feed: _Feed | None = None,
        lane: _Lane | None = None,
        cost_clock: _CpuClock | None = None,
    ) -> None:
        self.fd, self.start, self.n, self.lim, self.res, self.budget = (
            fd,
            start,
            n,
            lim,
            res,
            budget,
        )
        self.clock, self.sched, self.feed, self.lane = clock, sched, feed, lane
        self.buf = bytearray()
        self.poller = select.poll()
        self.poller.register(fd, select.POLLIN)
        if feed is not None and feed.pending:  # the program itself, not all written yet
            self.poller.register(feed.fd, select.POLLOUT)
        self.expect = -1  # -1: the load frame
        self.timeouts = sum(o.status is Status.TIMEOUT for o in res.outcomes)
        self.limit, self.cut = lim.load_limit(), False
        self.w_mark = time.monotonic()  # wall clock where the current input's time starts
        self.u_mark = 0.0  # the child's CPU clock where it starts (a child's clock starts at fork)
        if sched is not None:
            sched.reset(self.w_mark, 0.0)
        self.quick_until = 0.0  # until then, the parent only waits for the child's frame
        self.spin = 0  # how many more times to try the result pipe (yielding) before polling it
        self.failed: Outcome | None = None  # the load's failure
        self.facts: list[Any] = []  # the input's assertion facts, as they came
        self.told: tuple[str, Raised] | None = None  # a stage of its test raised: its name, facts
        self.cost_clock = clock or cost_clock  # the child's CPU clock, for the parent's share
        self.cost_end: float | None = None  # this thread's CPU time where the share ends
        self.counted = (0, 0, 0)  # of a large frame still arriving: bytes, containers, commas
        self.born = self.w_mark
        os.set_blocking(fd, False)

    def run(self) -> Outcome | None:
        while True:
            try:
                frame = _take_frame(self.buf, self.lim.frame_cap)
            except _Oversize as e:
                raise _Stop(self.expect, _violation(str(e))) from None
            if frame is None:
                if len(self.buf) > _COUNT_FROM:
                    self._scan()
                self._wait()
                continue
            arrived = time.monotonic()
            # What reading it costs is booked (see PARENT_FACTOR): a frame within the floor
            # at the worst rate per byte, with nothing counted or read; others in _costly.
            n, res = len(frame), self.res
            worst = n * WORST_PER_BYTE
            if n <= _COUNT_FROM and res.parent_seconds + worst <= PARENT_FLOOR:
                res.parent_seconds += worst
                msg, outcome, c, sent_at = self._read(frame, arrived)
            else:
                msg, outcome, c, sent_at = self._costly(frame, arrived)
            if outcome is None and _is_fact(msg["k"]):
                continue
            if self._settle(msg, outcome, c, arrived):
                return self.failed
            self._next(c, sent_at)

    # -- waiting for a frame ------------------------------------------------------------------

    def _wait(self) -> None:
        """Wait for more of the child's frame, or stop the child where a limit is reached."""
        now = time.monotonic()
        if now < self.quick_until:  # nothing can have run out yet (see _quick_until)
            self._wait_quick(now)
            return
        lane, clock = self.lane, self.clock
        if lane is not None and lane.pinned and now - self.w_mark >= _FIRST_LOOK:
            lane.child(False)  # a slow input: every CPU for it (and its threads)
        u = clock.read() if clock is not None else 0.0
        used = u - self.u_mark if clock is not None else now - self.w_mark
        waiting = 0 <= self.expect < self.n
        if waiting and self.budget.spent(self.res, u, now):
            why = f"the batch's {self.lim.batch:g} s{_of(self.lim)} budget ran out here; killed"
            spent = Outcome(Status.TIMEOUT, None, "Timeout", why, used)
            raise _Stop(self.expect, spent, budget_spent=True)
        if clock is not None:
            wait = self._cpu_wait(now, u, used)
        else:
            wall_left = self.w_mark + self.limit + self.lim.slack - now
            if wall_left <= 0:
                raise _Stop(self.expect, _timeout_outcome(self.expect, used))
            wait = wall_left
        if waiting:
            wait = min(wait, self.budget.wait(self.res, u, now))
        if not _pump(self.poller, self.fd, self.buf, self.feed, max(wait, 0.0)):
            raise _Stop(self.expect, Outcome(Status.CRASH, seconds=used))

    def _wait_quick(self, now: float) -> None:
        if self.spin:  # a quick input's frame is often here already: no poll then
            self.spin -= 1
            try:
                chunk = os.read(self.fd, _want(self.buf))
            except BlockingIOError:
                os.sched_yield()
                return
            if not chunk:  # the child is gone: the full look below says so
                self.quick_until = 0.0
            self.buf += chunk
            return
        if not _pump(self.poller, self.fd, self.buf, self.feed, self.quick_until - now):
            self.quick_until = 0.0  # the child is gone: the full look below says so

    def _cpu_wait(self, now: float, u: float, used: float) -> float:
        """Under CPU-time limits: how long to wait for the frame, once the child is neither
        past its limit + slack of CPU time nor past its wall-clock backstop asleep."""
        lim, limit, sched = self.lim, self.limit, self.sched
        if used > limit + lim.slack:
            raise _Stop(self.expect, _cpu_timeout_outcome(self.expect, limit, lim, used))
        back = lim.backstop(limit)
        if sched is not None and sched.first_look():
            slept, queued = 0.0, 0.0
            if now - self.w_mark >= _FIRST_LOOK:
                slept, queued = sched.slept(now, u, back)
            else:  # a quick input never needs the file; a slow one is read soon
                back = min(back, _FIRST_LOOK)
        elif sched is not None:
            slept, queued = sched.slept(now, u, back)
        else:
            slept, queued = max(0.0, now - self.w_mark - used), 0.0
        if slept >= lim.backstop(limit):
            if self._more_frame():  # it wrote while the parent was away: read it, then judge
                return 0.0
            out = _backstop_outcome(self.expect, limit, lim, used, slept, queued)
            raise _Stop(self.expect, out)
        return min(back - slept, max((limit + lim.slack - used) / _NCPU, _MIN_WAIT))

    def _more_frame(self) -> bool:
        """Read what the result pipe holds now; True when it held something. A child that
        wrote after the parent's last read was not asleep: it was blocked on a parent off its
        CPU (a loaded machine), with a frame written or a full pipe."""
        try:
            chunk = os.read(self.fd, _want(self.buf))
        except BlockingIOError:
            return False
        self.buf += chunk
        return bool(chunk)

    # -- a frame is in --------------------------------------------------------------------------

    def _costly(
        self, frame: bytes, arrived: float
    ) -> tuple[dict[str, Any], Outcome | None, float, float | None]:
        """:meth:`_read` of a frame past the floor or large: refused before it is parsed when
        the parent cannot afford it (:meth:`_afford`), its cost booked as counted, or as
        measured for a large one."""
        big = len(frame) > _COUNT_FROM
        t0 = time.thread_time() if big else 0.0
        cost = 0.0
        try:
            c = self.clock.read() if self.clock is not None else 0.0
            cost = self._afford(frame, c)
            return self._read(frame, arrived)
        finally:
            self.res.parent_seconds += time.thread_time() - t0 if big else cost
            self.cost_end, self.counted = None, (0, 0, 0)

    def _read(
        self, frame: bytes, arrived: float
    ) -> tuple[dict[str, Any], Outcome | None, float, float | None]:
        """Parse a frame and judge a result that is due: its object, its Outcome (None for
        other frames), the child's CPU clock once it was in, and when the next input went out
        (None when it has not yet)."""
        paused = len(frame) > _GC_SMALL
        if paused:
            _gc_pause()
        try:
            try:
                msg = read_frame(frame)
                kind = msg["k"]
            except (ValueError, TypeError, KeyError, RecursionError, MemoryError) as e:
                why = f"unreadable frame ({type(e).__name__})"
                raise _Stop(self.expect, _violation(why)) from None
            # The child yielded its CPU just before it wrote this frame (the kernel then
            # brought its clock up to date) and now waits for its next input, yielding
            # between tries: the reading is exact to a few microseconds.
            c = self.clock.read() if self.clock is not None else 0.0
            outcome = None
            i = msg.get("i")
            sent_at = None
            expect = self.expect
            if self.clock is not None and kind == "r" and i == expect and 0 <= i < self.n - 1:
                # Under CPU-time limits the next input goes out before this result is
                # decoded (the decoding is the parent's work, not the child's time).
                if self.lane is not None:
                    self.lane.repin()
                sent_at = time.monotonic()
                self._send(expect + 1)
            if kind == "r" and 0 <= expect < self.n and type(i) is int and i == expect:
                outcome, c = self._judge(msg, len(frame), arrived, c)
                if self.facts or self.told is not None:
                    outcome = self._with_facts(outcome)
            elif _is_fact(kind):
                self._fact(msg, len(frame), kind)
        finally:
            if paused:
                _gc_resume()
        return msg, outcome, c, sent_at

    def _afford(self, frame: bytes, c: float) -> float:
        """Refuse a frame whose reading would pass the parent's share of the batch's children's
        CPU time (see :data:`PARENT_FACTOR`), before it is parsed; set where decoding a large
        one must stop (``cost_end``). Its estimated cost."""
        n, spent = len(frame), self.res.parent_seconds
        cost = _frame_cost(frame, self.counted)
        if spent + cost <= PARENT_FLOOR and n <= _COUNT_FROM:
            return cost
        child = self._child_cpu(c)
        why = too_costly(n, cost, spent, child)
        if why is not None:
            out = Outcome(Status.ERROR, None, "OutputTooLarge", why)
            raise _Stop(self.expect, out, costly=True)
        if n > _COUNT_FROM:
            self.cost_end = time.thread_time() + PARENT_FACTOR * child + PARENT_FLOOR - spent
        return cost

    def _child_cpu(self, c: float | None = None) -> float:
        """The CPU time the batch's children spent so far, from the kernel (``c``: the current
        child's clock, when it was just read)."""
        if c is not None and self.clock is not None:
            child = c
        elif self.clock is not None or self.cost_clock is not None:
            child = (self.clock or self.cost_clock).read()  # type: ignore[union-attr]
        else:  # no reading of the child's clock here: its wall time, a bound of it per CPU
            child = (time.monotonic() - self.born) * _NCPU
        return child + self.res.cpu_seconds

    def _scan(self) -> None:
        """Count what arrived of a large frame, and refuse it (killing its child) as soon as its
        containers alone pass the parent's share: a frame a program writes itself to cost the
        parent is neither read to its end nor held."""
        buf = self.buf
        if len(buf) < 4:
            return
        size = int.from_bytes(buf[:4], "big")
        end = min(len(buf), 4 + size)
        if size <= _COUNT_FROM or end <= 4 + self.counted[0]:
            return
        t0 = time.thread_time()
        containers, commas = _count(buf, self.counted, 4, end)
        self.counted = (end - 4, containers, commas)
        least = containers * PER_CONTAINER
        spent = self.res.parent_seconds
        self.res.parent_seconds += time.thread_time() - t0
        if spent + least <= PARENT_FLOOR:
            return
        child = self._child_cpu()
        why = too_costly(size, least, spent, child)
        if why is not None:
            out = Outcome(Status.ERROR, None, "OutputTooLarge", why)
            raise _Stop(self.expect, out, costly=True)

    def _judge(
        self, msg: dict[str, Any], nbytes: int, arrived: float, c: float
    ) -> tuple[Outcome, float]:
        """The Outcome of the result that is due, charged by the parent's clocks (and the
        child's CPU clock, read again when a timeout needed it)."""
        lim, limit = self.lim, self.limit
        # Decoding counts in the input's time: the frame's budget stops at its deadline, and
        # a result decoded past it is that input's timeout.
        if self.clock is None:
            clock = time.monotonic
            deadline = self.w_mark + limit + lim.slack
        else:  # CPU is charged: the parent's decoding is its own thread's CPU time, which a
            # loaded machine does not stretch (its byte budget bounds the work as well)
            clock = time.thread_time
            deadline = clock() + limit + lim.slack
        outcome = _outcome(msg, nbytes, deadline, self.res, clock, self.cost_end)
        late = clock() > deadline
        if late and outcome.status in (Status.OK, Status.ERROR):
            outcome = _decoded_late(outcome)
        if self.clock is None:
            return _charge_wall(outcome, arrived - self.w_mark, limit, self.cut), c
        charged = c - self.u_mark
        if outcome.status is Status.TIMEOUT and charged < limit:
            # A timeout the charge does not reach yet: the child may still be on its CPU with
            # a reading that lags (a loaded parent's settle wait can pass before it is off);
            # read again once it is.
            c = self.clock.settled(_CONFIRM)
            charged = c - self.u_mark
        return _charge_cpu(outcome, charged, limit, self.cut, lim), c

    def _fact(self, msg: dict[str, Any], nbytes: int, kind: str) -> None:
        """Keep a fact the running input's test sent as it happened (see ``_runner._test_kit``):
        an assertion's operands (``f``), or that a stage raised (``x``: reports of two stages
        for one input are a broken protocol, so a frame the program writes itself cannot
        make a stage's exception another stage's)."""
        expect = self.expect
        if not 0 <= expect < self.n:
            raise _Stop(expect, _violation(f"a test's fact ({kind!r}) outside an input"))
        if kind == "x":
            raised = Raised.of(msg.get("x"))
            name = msg.get("n")
            if raised is None or type(name) is not str:
                raise _Stop(expect, _violation("a malformed stage report"))
            if self.told is not None and self.told[1].stage != raised.stage:
                raise _Stop(expect, _violation("reports of two stages raising"))
            self.told = self.told or (name[:200], raised)
            return
        if len(self.facts) >= MAX_FACTS:
            why = f"the test sent more than {MAX_FACTS} assertion facts"
            raise _Stop(expect, Outcome(Status.ERROR, None, "OutputTooLarge", why))
        if msg.get("v") is None:  # one the child found too large to send
            self.facts.append(None)
            return
        deadline = self._deadline()
        clock = time.monotonic if self.clock is None else time.thread_time
        got = _outcome(
            {"s": "ok", "t": 0.0, "v": msg["v"]}, nbytes, deadline, self.res, clock, self.cost_end
        )
        if got.status is not Status.OK:
            raise _Stop(expect, got)
        self.facts.append(got.value)

    def _deadline(self) -> float:
        """Until when (on the decoding clock: wall time, or this thread's CPU time under
        CPU-time limits) decoding the running input's frames may go on."""
        if self.clock is None:
            return self.w_mark + self.limit + self.lim.slack
        return time.thread_time() + self.limit + self.lim.slack

    def _with_facts(self, outcome: Outcome) -> Outcome:
        """The result with the facts its test sent as they happened: its assertion facts, and
        the stage that raised (the runner's word, sent before the program could run again: a
        report that the call returned after a stage raised is that stage's error)."""
        facts, told = tuple(self.facts), self.told
        if told is not None and outcome.status is Status.OK:
            why = f"the {told[1].stage} stage raised (as the runner saw it at once)"
            return Outcome(Status.ERROR, None, told[0], why, outcome.seconds, told[1], facts)
        if told is not None and outcome.status is Status.ERROR:
            return replace(outcome, raised=told[1], facts=facts)
        return replace(outcome, facts=facts) if facts else outcome

    def _settle(
        self, msg: dict[str, Any], outcome: Outcome | None, c: float, arrived: float
    ) -> bool:
        """Take a frame in its order; True once the child is done (``failed``: the load's
        failure, if it failed)."""
        kind, expect, n = msg["k"], self.expect, self.n
        if kind == "confine-failed":
            raise SandboxError(f"the child could not confine itself: {_short(msg.get('e'), 500)}")
        if expect == -1:
            if kind != "load":
                raise _Stop(expect, _violation(f"expected the load frame, got {_short(kind)}"))
            over = c - self.u_mark if self.clock is not None else arrived - self.w_mark
            self.failed = self._load_failure(msg, over)
            if self.failed is not None:
                return True
            self.expect = self.start
        elif kind == "end":
            if expect != n:
                why = f"'end' after {expect - self.start} of {n - self.start} results"
                raise _Stop(expect, _violation(why))
            return True
        elif kind == "r" and expect < n:
            if outcome is None:
                shown = _short(msg.get("i"))
                raise _Stop(expect, _violation(f"result {shown} where {expect} was due"))
            if outcome.error_type == "ProtocolViolation":
                # Stop this child: its later frames cannot be trusted to line up.
                raise _Stop(expect, outcome)
            self.res.outcomes.append(outcome)
            self.timeouts += outcome.status is Status.TIMEOUT
            self.expect += 1
        else:
            raise _Stop(expect, _violation(f"unexpected frame kind {_short(kind)}"))
        return False

    def _load_failure(self, msg: dict[str, Any], over: float) -> Outcome | None:
        """What every input gets when loading the program failed or took ``over`` its limit."""
        limit = self.limit
        if not msg.get("ok") or over > limit:
            if msg.get("timeout") or msg.get("ok"):
                why = f"loading the program timed out (load limit: {limit:g} s{_of(self.lim)})"
                return Outcome(Status.TIMEOUT, None, "Timeout", why)
            etype, emsg = _error_pair(msg.get("e"))
            self.res.load_error = f"{etype}: {emsg}"
            return Outcome(Status.ERROR, None, etype, emsg)
        return None

    def _next(self, c: float, sent_at: float | None) -> None:
        """Start the next input's time (and send it, if it has not gone out yet)."""
        lim, n, expect = self.lim, self.n, self.expect
        if self.facts or self.told is not None:
            self.facts, self.told = [], None
        self.u_mark = c
        self.limit, self.cut = lim.in_force(expect, self.timeouts) if expect < n else (1.0, False)
        # The next input's time starts when it is sent: under wall-clock limits after the
        # decoding, so the parent's own work never eats into it.
        self.w_mark = sent_at if sent_at is not None else time.monotonic()
        if self.sched is not None:
            self.sched.reset(self.w_mark, c)
        if sent_at is None and expect < n and self.feed is not None:
            if self.lane is not None:
                self.lane.repin()
            self._send(expect)
        if expect < n:
            self.quick_until = _quick_until(lim, self.limit, self.budget, self.res, c, self.w_mark)
        else:
            self.quick_until = 0.0
        self.spin = _SPIN if self.lane is not None and self.lane.spread else 1

    def _send(self, i: int) -> None:
        """Send input ``i``; what the pipe does not take now goes out as it makes room."""
        if self.feed is not None and not self.feed.send(i):
            self.poller.register(self.feed.fd, select.POLLOUT)
