"""The parent's view of a running child: which CPUs it and the parent's thread use
(:class:`_Lane`), its CPU clock (:class:`_CpuClock`) and its time asleep or waiting for a CPU
(:class:`_SchedStat`)."""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from typing import ClassVar

_NCPU = max(1, os.cpu_count() or 1)
"""How many CPUs a child can keep busy at once: the parent's next look at a child's CPU clock
is at most (time left) / this away."""


_SETTLE = 0.0003
"""How long the parent waits for a child that has written its frame to leave its CPU (it
needs microseconds; one that waits for a CPU reads exactly already)."""


class _Lane:
    """Where a batch's driving thread and its child run, and how they hand inputs and results
    over. On a virtual machine a wake-up of a blocked process on another CPU costs tens of
    microseconds (an inter-processor interrupt through the hypervisor, charged to whatever
    runs on the CPU it lands on); a context switch on one CPU about 1.5 µs.

    - **spread** (a batch alone: no other batch of this process running, and fewer other
      runnable tasks on the machine than CPUs): the two run on different CPUs and try their
      pipes (yielding between tries) before they block, so neither needs a wake-up and the
      parent decodes a frame while the child runs the next input.
    - **shared** (any other load): the thread and the child are pinned to one CPU, the one
      the fewest batches of this process use, while inputs are quick, and block on their
      pipes: a hand-over is a context switch, and no wake-up lands on another CPU, where it
      would be charged to another batch's child. An input still running at the parent's first
      look (_FIRST_LOOK) gets every CPU back; the thread gets its own affinity back at
      :meth:`close`. Where affinities cannot be set, nothing is pinned.

    CPU-time verdicts do not depend on the lane: the child yields its CPU before each frame,
    so the parent's reading is up to date in both."""

    __slots__ = ("all", "cpu", "pid", "pinned", "spread")
    _lock: ClassVar[threading.Lock] = threading.Lock()
    _users: ClassVar[dict[int, int]] = {}
    """How many shared batches of this process hold each CPU now."""
    _active: ClassVar[list[int]] = [0]
    """How many batches of this process are running now."""

    def __init__(self, every: set[int], cpu: int | None, spread: bool) -> None:
        self.all, self.cpu, self.spread = every, cpu, spread
        self.pid: int | None = None
        self.pinned = False

    @classmethod
    def open(cls) -> _Lane:
        try:
            every = os.sched_getaffinity(0)
        except OSError:
            every = set()
        others = _runnable() - 1  # this thread is one of them
        with cls._lock:
            alone = cls._active[0] == 0 and others < len(every)
            cls._active[0] += 1
            cpu = None
            if not alone and len(every) >= 2:
                cpu = min(sorted(every), key=lambda c: cls._users.get(c, 0))
                cls._users[cpu] = cls._users.get(cpu, 0) + 1
        lane = cls(every, cpu, spread=alone and len(every) >= 2)
        if cpu is not None:
            try:
                os.sched_setaffinity(0, {cpu})
            except OSError:
                lane._release_cpu()
        return lane

    def attach(self, pid: int) -> None:
        """The child (its pid here): pinned to the lane's CPU, if the lane has one."""
        self.pid = pid
        if self.cpu is not None:
            self.child(True)

    def child(self, on: bool) -> None:
        """Pin the child to this lane's CPU, or give it every CPU."""
        if self.cpu is None or self.pid is None:
            return
        try:
            os.sched_setaffinity(self.pid, {self.cpu} if on else self.all)
        except OSError:  # the child is gone, or may not be moved: its frames say the rest
            self.pinned = False
            return
        self.pinned = on

    def repin(self) -> None:
        """Before an input goes out: a child given every CPU for a slow input is pinned again
        (a shared lane's inputs start on its CPU)."""
        if self.cpu is not None and not self.pinned:
            self.child(True)

    def _release_cpu(self) -> None:
        if self.cpu is not None:
            with self._lock:
                self._users[self.cpu] -= 1
            self.cpu = None

    def close(self) -> None:
        if self.cpu is not None:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(0, self.all)
            self._release_cpu()
        with self._lock:
            self._active[0] -= 1


def _runnable() -> int:
    """How many tasks on the machine are runnable now (/proc/loadavg; 1 when unknown)."""
    try:
        with open("/proc/loadavg", "rb") as f:
            return int(f.read().split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return 1


class _CpuClock:
    """The CPU time (user + system, every thread, live or ended) of one child, from the
    kernel's process CPU clock (``clock_gettime`` on the clock id of its pid: what
    ``clock_getcpuclockid`` returns). The child cannot change it; it stays readable until the
    zygote reaps the child, which happens only when the parent asks.

    The kernel brings a thread's clock up to date when it leaves or yields its CPU (and at
    each tick), so a reading of a child that is running may lag by up to a tick. The runner
    yields just before it writes a frame and between its tries for the next input, so a
    reading once a frame is here is exact to a few microseconds. A program that goes on
    running past a frame it wrote itself, or leaves a thread running, can move at most a
    tick of CPU time (4 ms at 250 Hz) from one input to the next. :meth:`settled` waits
    (briefly) until the child's main thread is off its CPU before reading."""

    __slots__ = ("clock_id", "last", "stat")

    def __init__(self, pid: int) -> None:
        self.clock_id = ((~pid) << 3) | 2  # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
        self.last = 0.0
        try:
            self.stat: int | None = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self.stat = None

    def settled(self, settle: float = _SETTLE) -> float:
        """The clock once the child's main thread is off its CPU (it goes on to wait for its
        next input at once), after at most ``settle`` seconds."""
        if self.stat is not None:
            end = 0.0
            while True:
                try:
                    raw = os.pread(self.stat, 512, 0)
                except OSError:
                    break
                at = raw.rfind(b")") + 2
                if raw[at : at + 1] != b"R":
                    break
                now = time.monotonic()
                if not end:
                    end = now + settle
                elif now > end:
                    break
                os.sched_yield()
        return self.read()

    def close(self) -> None:
        if self.stat is not None:
            os.close(self.stat)
            self.stat = None

    def read(self) -> float:
        try:
            v = time.clock_gettime(self.clock_id)
        except OSError:  # the child is gone (a zombie reads fine): keep the last value
            return self.last
        if v > self.last:
            self.last = v
        return self.last


def _pid_of(pidfd: int) -> int | None:
    """The pid, in this process's PID namespace, of the process ``pidfd`` refers to."""
    try:
        with open(f"/proc/self/fdinfo/{pidfd}", "rb") as f:
            text = f.read(4096)
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(b"Pid:"):
            try:
                pid = int(line.split()[1])
            except (IndexError, ValueError):
                return None
            return pid if pid > 0 else None
    return None


_RECHECK = 0.02
"""Seconds before the parent looks again at a child that reached its wall-clock backstop
while one of its threads was runnable."""


class _SchedStat:
    """How long a child's threads waited for a CPU, from ``/proc/<pid>/task/*/schedstat``
    (nanoseconds; the kernel counts it exactly). The wall time since ``reset`` not spent on
    a CPU (the process's CPU clock) nor waiting for one is time the program slept or was
    blocked: what the wall-clock backstop counts, so a program starved of CPU on a loaded
    machine is never taken for one that sleeps. A child with a thread running or waiting
    for a CPU at the moment the sums reach the backstop is not asleep (``runnable``): the
    kernel adds a run-queue wait to schedstat only once the thread runs, and a hypervisor's
    steal time shows in no clock of the guest's. Where the files cannot be read, all of the
    wall time not on a CPU counts."""

    __slots__ = ("base", "busy0", "fd", "queued0", "task", "w0")

    def __init__(self, pid: int) -> None:
        self.task = f"/proc/{pid}/task"
        try:
            self.fd: int | None = os.open(self.task, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            self.fd = None
        self.w0, self.busy0, self.queued0 = 0.0, 0.0, 0.0
        self.base: dict[str, int] = {}

    def _waits(self) -> dict[str, int] | None:
        """Nanoseconds each live thread has waited for a CPU."""
        if self.fd is None:
            return None
        out = {}
        try:
            tids = os.listdir(self.fd)
        except OSError:  # the child is gone
            return None
        for tid in tids:
            try:
                with open(f"{self.task}/{tid}/schedstat", "rb") as f:
                    out[tid] = int(f.read(128).split()[1])
            except (OSError, ValueError, IndexError):  # a thread that just ended
                continue
        return out

    def _read(self) -> tuple[float, float] | None:
        """(0, seconds waited for a CPU since the baseline, over the live threads)."""
        waits = self._waits()
        if waits is None:
            return None
        if math.isnan(self.queued0):
            self.base = waits
            return 0.0, 0.0
        return 0.0, sum(v - self.base.get(t, 0) for t, v in waits.items()) / 1e9

    def reset(self, now: float, cpu: float) -> None:
        """A new input starts (its baseline is read at the first look, see ``slept``)."""
        self.w0, self.busy0, self.queued0 = now, cpu, math.nan

    def slept(self, now: float, cpu: float, back: float) -> tuple[float, float]:
        """(seconds slept or blocked, seconds its threads waited for a CPU) since ``reset``;
        ``cpu`` is the process's CPU clock (every thread: a main thread that waits for its
        threads while they run or wait to run is not asleep). The files are read only when
        the time not on a CPU could reach ``back``, and first at most FIRST_LOOK after
        ``reset``: that first look is the baseline, and the time before it is not counted
        (normally FIRST_LOOK; a parent that was itself off its CPU looks later, and how long
        the child waited for a CPU until then is not known)."""
        if math.isnan(self.queued0):
            got = self._read()
            self.queued0 = got[1] if got is not None else 0.0
            self.w0, self.busy0 = now, cpu
            return 0.0, 0.0
        wall = now - self.w0
        off_cpu = max(0.0, wall - (cpu - self.busy0))
        if off_cpu < back:
            return off_cpu, 0.0  # at most this much: no need to read
        got = self._read()
        queued = 0.0 if got is None else got[1] - self.queued0
        slept = max(0.0, off_cpu - queued)
        if slept >= back and self.runnable():
            # A thread on a CPU or waiting for one is not asleep, whatever the sums say: the
            # kernel adds a run-queue wait to schedstat only once the thread runs, and time
            # the hypervisor takes (steal) shows in neither clock. Look again soon.
            return back - _RECHECK, queued
        return slept, queued

    def runnable(self) -> bool:
        """Whether any of the child's threads is running or waiting for a CPU now (state
        ``R`` in ``/proc/<pid>/task/<tid>/stat``)."""
        if self.fd is None:
            return False
        try:
            tids = os.listdir(self.fd)
        except OSError:
            return False
        for tid in tids:
            try:
                with open(f"{self.task}/{tid}/stat", "rb") as f:
                    head = f.read(512)
            except OSError:
                continue
            state = head[head.rfind(b")") + 2 : head.rfind(b")") + 3]  # after "(comm) "
            if state == b"R":
                return True
        return False

    def first_look(self) -> bool:
        return math.isnan(self.queued0)

    def close(self) -> None:
        self.base = {}
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
