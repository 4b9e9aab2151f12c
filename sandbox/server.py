"""The trusted side of the sandbox: start the zygote, run batches, decide what happened.

One :class:`Sandbox` owns one zygote (a warm fork server started with a clean environment,
inside bubblewrap when available). :meth:`Sandbox.run` asks it for one confined child per
(program, input batch), reads that child's result frames from a dedicated pipe with a hard
deadline per input, and, when the child dies or hangs at input *k*, records *k* and resumes a
fresh child at *k + 1*, so every input gets its own exact outcome. ``run`` is thread-safe:
the evaluator calls it from several threads at once.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import math
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from utdebug.sandbox import _runner
from utdebug.sandbox.compare import stand_in
from utdebug.sandbox.layers import (
    CHILD_ENV,
    DEFAULT_REQUIRED,
    HINTS,
    Layer,
    LayerReport,
    SandboxUnavailable,
    plan,
    report,
)

# The UTDebug authors' import prelude, executed before every program (reference §3.2).
REFERENCE_PRELUDE = "\n".join(
    [
        "import math",
        "import re",
        "import sys",
        "import copy",
        "import datetime",
        "import itertools",
        "import collections",
        "import heapq",
        "import functools",
        "import hashlib",
        "import numpy",
        "import numpy as np",
        "import string",
        "from typing import *",
        "from collections import *",
        "from functools import *",
    ]
)

# Imported once by the zygote, so children get them without touching the disk.
PREIMPORT = [
    "math", "re", "copy", "datetime", "itertools", "collections", "heapq", "functools",
    "hashlib", "numpy", "string", "typing", "fractions", "decimal", "statistics", "bisect",
    "random", "operator", "array", "cmath", "json", "textwrap", "unicodedata", "dataclasses",
    "enum", "struct", "calendar", "time", "ast", "inspect", "copyreg", "numbers", "abc",
]  # fmt: skip

# The zygote reads its code from stdin, so its command line stays short and says what it is.
BOOTSTRAP = "import sys; exec(compile(sys.stdin.buffer.read(), '<utdebug-runner>', 'exec'))"


@functools.cache
def runner_source() -> bytes:
    return Path(_runner.__file__).read_bytes()


class Status(StrEnum):
    OK = "ok"
    """The program returned a value."""
    ERROR = "error"
    """The program raised (or failed to load)."""
    TIMEOUT = "timeout"
    CRASH = "crash"
    """The child died, or broke the result protocol, while running this input."""


class LimitKind(StrEnum):
    """What a per-input limit measures."""

    CPU = "cpu"
    """CPU time of the child (user + system, all its threads) spent on the input, read by the
    parent from the kernel; a wall-clock backstop (``Limits.wall_factor`` x the limit) ends
    a program that sleeps or blocks. Does not move with the machine's load."""
    WALL = "wall"
    """Wall-clock time, as the paper's harness: on a loaded machine, slow inputs may time out
    that pass on an idle one."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one input did. ``value`` is plain, decoded data (or an ``Opaque``).

    ``seconds`` is the measure the input's limit was checked against: under CPU-time limits
    the CPU time the parent charged to the input (from the end of the previous input's report
    to the end of this one's: decoding its arguments, the call, encoding its value); under
    wall-clock limits the wall time of the call and the encoding of its value, as the child
    measured it. 0 for an input that was not run.
    """

    status: Status
    value: Any = None
    error_type: str | None = None
    error: str | None = None
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"status": self.status.value, "t": round(self.seconds, 6)}
        if self.error_type is not None:
            d["error_type"] = self.error_type
            d["error"] = self.error
        return d


@dataclass(frozen=True, slots=True)
class Limits:
    per_input: float = 2.0
    """Seconds per input (the paper's harness uses 2 s of wall-clock time); what they measure
    is ``kind``."""
    per_input_each: tuple[float, ...] | None = None
    """Optional limit for each input (e.g. calibrated from the gold solution's time)."""
    load: float = 10.0
    """Seconds (of ``kind``) to execute the program's module-level code."""
    memory_mb: int = 2048
    """RLIMIT_AS of the child (it inherits the zygote's ~200 MB of mappings)."""
    fsize_mb: int = 16
    frame_cap: int = 16 << 20
    """Largest encoded result of one input, in bytes; larger results fail as OutputTooLarge."""
    slack: float = 0.5
    """Extra seconds (of ``kind``, and on the wall-clock backstop) before the parent kills a
    child whose in-process timer did not fire. The parent's decoding of an input's result
    counts in that input's wall time (limit + slack from the result's arrival)."""
    batch: float | None = 120.0
    """Seconds (of ``kind``: the CPU time of all the batch's children under CPU-time limits,
    with a wall-clock backstop of ``wall_factor`` x it) for a whole batch (None: no limit).
    Inputs not reached when it is spent are TIMEOUT without running ("not run"), so a program
    that times out on hundreds of inputs cannot hold a worker for hours. The UTDebug authors'
    harness caps a problem at 60 s."""
    kind: LimitKind = LimitKind.CPU
    """What the limits measure: the child's CPU time (default; verdicts do not depend on the
    machine's load) or wall-clock time (the paper's harness)."""
    wall_factor: float = 3.0
    """CPU-time limits only: a program that sleeps or blocks is stopped after this many times
    its limit of wall-clock time (+ slack) instead."""

    cut_after: int | None = None
    """After this many timeouts in one batch (as the parent counted them), later inputs get
    at most ``cut_limit`` seconds of ``kind`` (None: never). A program that already hangs on
    several inputs then costs a fraction of a second per further hang instead of the full
    limit; an input that needs longer than ``cut_limit`` after that point is reported as a
    timeout "at the reduced limit"."""
    cut_limit: float = 0.25
    tasks: int = 64
    """Tasks (processes and threads) a child may hold at once, itself included
    (RLIMIT_NPROC, counted per child: see the ``tasks`` layer)."""
    scratch_mb: int = 64
    """Size of the child's own ``/tmp`` (a fresh tmpfs per child, gone when it ends)."""
    scratch_inodes: int = 4096
    """Files and folders the child's ``/tmp`` may hold."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", LimitKind(self.kind))  # "cpu" / "wall" too
        if not (math.isfinite(self.wall_factor) and self.wall_factor >= 1.0):
            raise ValueError(f"wall_factor must be at least 1, got {self.wall_factor}")

    def limit_of(self, i: int) -> float:
        return self.per_input_each[i] if self.per_input_each is not None else self.per_input

    def backstop(self, limit: float) -> float:
        """Wall-clock seconds a limit of ``limit`` allows before its slack."""
        return limit * self.wall_factor if self.kind is LimitKind.CPU else limit

    def in_force(self, i: int, timeouts: int) -> tuple[float, bool]:
        """Input ``i``'s limit after ``timeouts`` timeouts in its batch, and whether the cut
        (``cut_after``) reduced it."""
        limit = self.limit_of(i)
        if self.cut_after is not None and timeouts >= self.cut_after and self.cut_limit < limit:
            return self.cut_limit, True
        return limit, False


@dataclass(frozen=True, slots=True)
class SandboxConfig:
    allow_weak: bool = False
    """Run even when a required layer is missing (explicit opt-in)."""
    required: frozenset[Layer] = DEFAULT_REQUIRED
    use_bwrap: bool | None = None
    """None: use bubblewrap when installed; False: never; True: require it."""
    prelude: str = REFERENCE_PRELUDE
    uid_base: int = 1536
    """As root, children run as ``uid_base + slot`` (slot < 4095; no two live children of
    this sandbox share a uid; ``uid_base + 4095`` is the zygote's start-up probe's)."""
    start_timeout: float = 30.0
    mounts: tuple[str, ...] = ()
    """Host folders the children may read, bound read-only at the same path (for example a
    copy of the user's repository, or site-packages outside the interpreter's prefix). They
    are never writable from inside; absolute paths of existing folders only."""


@dataclass(frozen=True, slots=True)
class ModuleContext:
    """Run a program as a module of a real project instead of a bare ``solution`` script.

    The child creates a module object named ``name`` (registered in ``sys.modules``, so
    ``dataclasses`` and pickling find it) with ``__file__`` and ``__package__`` set (relative
    imports work), puts ``path`` in front of ``sys.path`` (the project's import roots, which
    must be visible: see :attr:`SandboxConfig.mounts`) and changes to ``cwd``. A failure to
    set this up is the program's load error.
    """

    name: str
    file: str | None = None
    package: str | None = None
    path: tuple[str, ...] = ()
    cwd: str | None = None
    import_package: bool = False
    """Import ``package`` (as a normal import would) before the program, so that a package
    whose ``__init__`` imports names back from this module loads; the program then replaces
    the module in ``sys.modules``."""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "file": self.file,
            "package": self.package,
            "path": list(self.path),
            "cwd": self.cwd,
            "import_package": self.import_package,
        }


@dataclass(slots=True)
class BatchResult:
    outcomes: list[Outcome]
    children: int = 0
    """Confined children used (1 + one per resume after a crash or hang)."""
    peak_rss_kb: int = 0
    """Largest resident set of any of this batch's children."""
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    load_error: str | None = None
    notes: list[str] = field(default_factory=list)


class SandboxError(RuntimeError):
    """The sandbox itself failed (not the program under test)."""


class EncodedInputs(tuple[str, ...]):
    """Inputs encoded once (JSON text per input); decoded afresh in the child for every call."""

    __slots__ = ()


def encode_inputs(inputs: Sequence[Sequence[Any]]) -> EncodedInputs:
    if isinstance(inputs, EncodedInputs):
        return inputs
    return EncodedInputs(
        json.dumps(_runner.encode(list(args)), separators=(",", ":"), allow_nan=False)
        for args in inputs
    )


def decode_value(data: object, budget: _runner.Budget | None = None) -> Any:
    """Decode a tagged value; ``budget`` bounds what a result from a child may cost."""
    return _runner.decode(data, stand_in, budget)


DECODE_FACTOR = 32
"""Decoding a result frame may allocate at most this many times its bytes (plus
DECODE_FLOOR) in the parent; parsing its JSON costs at most about as much again."""
DECODE_FLOOR = 1 << 20

_gc_lock = threading.Lock()
_gc_pauses = [0, False]  # decoders in flight; whether the collector was on before the first


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while a frame is parsed and decoded.

    A frame of millions of small containers otherwise triggers collection after collection
    (each scanning everything the process holds), making the parse many times slower while
    it holds the GIL. Threads share the pause; the last one out restores the collector.
    """
    with _gc_lock:
        if _gc_pauses[0] == 0:
            _gc_pauses[1] = gc.isenabled()
            gc.disable()
        _gc_pauses[0] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses[0] -= 1
            if _gc_pauses[0] == 0 and _gc_pauses[1]:
                gc.enable()


def read_frame(frame: bytes) -> dict[str, Any]:
    """The JSON object of one result frame; ValueError (or RecursionError) for anything else."""
    msg = json.loads(frame)
    if not isinstance(msg, dict):
        raise ValueError("a frame that is not a JSON object")
    return msg


def decode_frame(frame: bytes, deadline: float | None = None) -> Outcome:
    """What one forged or real ``r`` frame turns into in the parent (parse, then decode under
    the frame's budget and the input's ``deadline``), as :meth:`Sandbox.run` does it."""
    with _gc_paused():
        try:
            msg = read_frame(frame)
        except (ValueError, RecursionError, MemoryError) as e:
            return _violation(f"unreadable frame ({type(e).__name__})")
        return _outcome(msg, len(frame), deadline)


def _checked_mounts(mounts: Sequence[str]) -> tuple[str, ...]:
    out: list[str] = []
    for m in mounts:
        if not os.path.isabs(m):
            raise SandboxError(f"sandbox mount {m!r} is not an absolute path")
        real = os.path.realpath(m)
        if not os.path.isdir(real):
            raise SandboxError(f"sandbox mount {m!r} is not an existing folder")
        out.append(real)
    return tuple(out)


def clean_env() -> dict[str, str]:
    """The zygote's whole environment: nothing of the user's (no keys, no paths)."""
    return dict(CHILD_ENV)


_RECV_CAP = 1 << 20
UID_SLOTS = 4096
"""Children's uids cycle through ``uid_base + (0 .. 4094)``; ``uid_base + 4095`` probes."""


class _Stop(Exception):
    """The current child stopped early at input ``index`` with ``outcome``."""

    def __init__(self, index: int, outcome: Outcome, budget_spent: bool = False) -> None:
        super().__init__(index)
        self.index = index
        self.outcome = outcome
        self.budget_spent = budget_spent


class Sandbox:
    """A warm, confined fork server. Use as a context manager, or call start()/close()."""

    def __init__(self, config: SandboxConfig | None = None) -> None:
        self.config = config or SandboxConfig()
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._ctl: socket.socket | None = None
        self._report: LayerReport | None = None
        self._uid_lock = threading.Lock()
        self._live_uids: set[int] = set()
        self._next_slot = 0
        self._closed = False
        self.spawned = 0

    # -- life cycle ---------------------------------------------------------------------------

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def layers(self) -> LayerReport:
        if self._report is None:
            self.start()
        assert self._report is not None
        return self._report

    def start(self) -> LayerReport:
        with self._lock:
            self._closed = False
            if self._proc is None or self._proc.poll() is not None:
                self._start_locked()
            assert self._report is not None
            return self._report

    def _start_locked(self) -> None:
        cfg = self.config
        p = plan(cfg.use_bwrap, _checked_mounts(cfg.mounts))
        parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        zconf = dict(p.zygote_config)
        zconf["preimport"] = PREIMPORT
        zconf["probe_uid"] = cfg.uid_base + UID_SLOTS - 1 if p.is_root else None
        fd = child_sock.fileno()
        argv = [
            *p.argv_prefix,
            sys.executable,
            "-I",
            "-c",
            BOOTSTRAP,
            str(fd),
            json.dumps(zconf),
        ]
        try:
            proc = subprocess.Popen(
                argv,
                env=clean_env(),
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=(fd,),
                cwd="/",
                start_new_session=True,
            )
        except OSError as e:
            raise SandboxUnavailable(f"cannot start the sandbox zygote: {e}") from e
        finally:
            child_sock.close()
        assert proc.stdin is not None
        try:
            proc.stdin.write(runner_source())
            proc.stdin.close()
        except OSError:
            pass  # the zygote died at once: the info request below reports why
        parent_sock.settimeout(cfg.start_timeout)
        try:
            _send(parent_sock, {"op": "info"})
            info = _recv(parent_sock)
        except (OSError, ValueError) as e:
            proc.kill()
            err = proc.stderr.read(4000).decode(errors="replace") if proc.stderr else ""
            proc.wait()
            raise SandboxUnavailable(
                f"the sandbox zygote ({p.mode}) did not start: {e}. {err.strip()}"
            ) from e
        parent_sock.settimeout(None)
        rep = report(p, info)
        missing = rep.missing(cfg.required)
        if missing and not cfg.allow_weak:
            proc.kill()
            proc.wait()
            parent_sock.close()
            lines = "; ".join(f"{s.layer.value} ({HINTS.get(s.layer, s.detail)})" for s in missing)
            raise SandboxUnavailable(
                f"refusing to run untrusted code: missing sandbox layers: {lines}. "
                "Pass --allow-weak-sandbox (or set UTDEBUG_ALLOW_WEAK_SANDBOX=1) to run anyway."
            )
        self._proc, self._ctl, self._report = proc, parent_sock, rep
        if proc.stderr is not None:
            threading.Thread(target=_drain, args=(proc.stderr,), daemon=True).start()

    def close(self) -> None:
        """Stop the zygote; its children die with it. Runs in flight end with SandboxError."""
        with self._lock:
            self._closed = True
            if self._ctl is not None:
                self._ctl.close()
                self._ctl = None
            if self._proc is not None:
                try:
                    self._proc.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    self._proc.wait()
                self._proc = None

    # -- zygote requests ----------------------------------------------------------------------

    def _request(
        self, msg: dict[str, Any], want_fd: bool = False
    ) -> tuple[dict[str, Any], list[int]]:
        with self._lock:
            if self._closed:
                raise SandboxError("the sandbox was closed")
            if self._proc is None or self._proc.poll() is not None or self._ctl is None:
                self._start_locked()
            ctl = self._ctl
            assert ctl is not None
            try:
                _send(ctl, msg)
                if want_fd:
                    head, fds, _, _ = socket.recv_fds(ctl, 64, 2)
                    if not 1 <= len(fds) <= 2:
                        for f in fds:
                            os.close(f)
                        raise SandboxError("the zygote did not hand over a result pipe")
                    body = _frame_body(head, ctl)
                    return body, fds
                return _recv(ctl), []
            except (OSError, ValueError) as e:
                self._proc.kill() if self._proc else None
                self._proc = None
                raise SandboxError(f"lost the sandbox zygote: {e}") from e

    def _spawn(self, job: dict[str, Any]) -> tuple[int, int, int | None]:
        """Start a child: its pid (in the zygote's namespace), the read end of its result
        pipe, and a pidfd of it (None when the kernel has no pidfd_open)."""
        reply, fds = self._request({"op": "spawn", "job": job}, want_fd=True)
        self.spawned += 1
        return int(reply["pid"]), fds[0], fds[1] if len(fds) > 1 else None

    def _cpu_clock(self, pid: int, pidfd: int | None) -> _CpuClock:
        """The child's CPU clock, read through its pid in this process's PID namespace."""
        host = _pid_of(pidfd) if pidfd is not None else None
        if host is None and Layer.PIDNS not in self.layers.active():
            host = pid  # no PID namespace of its own: the zygote's pids are ours
        if host is None:
            raise SandboxError(
                "cannot read the children's CPU clocks here (their pids need pidfd_open, "
                "Linux 5.3+); use wall-clock limits (Limits.kind 'wall', --limit-kind wall)"
            )
        return _CpuClock(host)

    def _take_uid(self) -> int | None:
        """A uid no live child of this sandbox has (RLIMIT_NPROC counts per uid when the
        children cannot get user namespaces of their own)."""
        if os.geteuid() != 0:
            return None
        with self._uid_lock:
            for _ in range(UID_SLOTS - 1):
                slot = self._next_slot
                self._next_slot = (slot + 1) % (UID_SLOTS - 1)
                uid = self.config.uid_base + slot
                if uid not in self._live_uids:
                    self._live_uids.add(uid)
                    return uid
        raise SandboxError(f"all {UID_SLOTS - 1} sandbox uids are in use")

    def _give_uid(self, uid: int | None) -> None:
        if uid is not None:
            with self._uid_lock:
                self._live_uids.discard(uid)

    def _reap(self, pid: int) -> dict[str, Any]:
        try:
            return self._request({"op": "reap", "pid": pid})[0]
        except SandboxError:
            return {"status": None, "maxrss_kb": 0, "cpu": 0.0}

    # -- running ------------------------------------------------------------------------------

    def run(
        self,
        code: str,
        entry_point: str,
        inputs: Sequence[Sequence[Any]],
        limits: Limits | None = None,
        context: ModuleContext | None = None,
    ) -> BatchResult:
        """Run ``entry_point`` of ``code`` on every input; one Outcome per input, in order.

        ``context`` runs the program as a module of a project (see :class:`ModuleContext`).
        """
        lim = limits or Limits()
        enc = encode_inputs(inputs)
        n = len(enc)
        if lim.per_input_each is not None and len(lim.per_input_each) != n:
            raise ValueError("per_input_each must have one limit per input")
        res = BatchResult(outcomes=[])
        t0 = time.perf_counter()
        budget = _Budget(lim, time.monotonic())
        start: int | None = 0
        while start is not None:  # one child, plus one more after each hang or crash
            start = self._run_child(code, entry_point, enc, start, lim, res, budget, context)
            if start is not None and start >= n:
                break
            if start is not None and budget.spent(res, 0.0, time.monotonic()):
                _not_run(res, n, lim)
                break
        res.wall_seconds = time.perf_counter() - t0
        return res

    def _job(
        self,
        code: str,
        entry: str,
        enc: EncodedInputs,
        start: int,
        lim: Limits,
        timeouts: int = 0,
        context: ModuleContext | None = None,
        uid: int | None = None,
    ) -> dict[str, Any]:
        each = [lim.limit_of(i) for i in range(start, len(enc))]
        return {
            "kind": lim.kind.value,
            "wall_factor": lim.wall_factor,
            "context": context.to_json() if context is not None else None,
            "code": code,
            "entry_point": entry,
            "prelude": self.config.prelude,
            "inputs": list(enc[start:]),
            "start": start,
            "per_input": each,
            "cut": None if lim.cut_after is None else [lim.cut_after, lim.cut_limit],
            "timeouts": timeouts,
            "uid": uid,
            "limits": {
                "memory_mb": lim.memory_mb,
                "cpu_s": sum(each) + lim.load + 2.0,
                "fsize_mb": lim.fsize_mb,
                "frame_cap": lim.frame_cap,
                "load_s": lim.load,
                "tasks": lim.tasks,
                "scratch_mb": lim.scratch_mb,
                "scratch_inodes": lim.scratch_inodes,
            },
        }

    def _run_child(
        self,
        code: str,
        entry: str,
        enc: EncodedInputs,
        start: int,
        lim: Limits,
        res: BatchResult,
        budget: _Budget,
        context: ModuleContext | None = None,
    ) -> int | None:
        """Run one child from ``start``; return where to resume, or None when done."""
        timeouts = sum(o.status is Status.TIMEOUT for o in res.outcomes)
        uid = self._take_uid()
        try:
            pid, fd, pidfd = self._spawn(
                self._job(code, entry, enc, start, lim, timeouts, context, uid)
            )
        except BaseException:
            self._give_uid(uid)
            raise
        res.children += 1
        stop: _Stop | None = None
        load_failed: Outcome | None = None
        try:
            clock = self._cpu_clock(pid, pidfd) if lim.kind is LimitKind.CPU else None
            if pidfd is not None:
                os.close(pidfd)
                pidfd = None
            load_failed = self._collect(fd, start, len(enc), lim, res, budget, clock)
        except _Stop as s:
            stop = s
        finally:
            if pidfd is not None:
                os.close(pidfd)
            os.close(fd)
            stats = self._reap(pid)
            self._give_uid(uid)
            res.peak_rss_kb = max(res.peak_rss_kb, int(stats.get("maxrss_kb") or 0))
            res.cpu_seconds += float(stats.get("cpu") or 0.0)
        if load_failed is not None:
            res.outcomes.extend([load_failed] * (len(enc) - len(res.outcomes)))
            return None
        if stop is None:
            return None
        outcome = stop.outcome
        if outcome.status is Status.CRASH and outcome.error is None:
            outcome = Outcome(Status.CRASH, None, "Crash", _describe_status(stats), outcome.seconds)
        if stop.index >= len(enc):  # every input has its outcome; only the 'end' frame is missing
            res.notes.append(f"after the last input: {outcome.error_type}: {outcome.error}")
            return None
        if stop.index < 0:  # died or hung while loading: every remaining input shares it
            res.load_error = f"{outcome.error_type}: {outcome.error}"
            res.outcomes.extend([outcome] * (len(enc) - len(res.outcomes)))
            return None
        res.outcomes.append(outcome)
        if stop.budget_spent:
            _not_run(res, len(enc), lim)
            return None
        res.notes.append(f"input {stop.index}: {outcome.status.value}; resumed in a new child")
        return stop.index + 1

    def _collect(
        self,
        fd: int,
        start: int,
        n: int,
        lim: Limits,
        res: BatchResult,
        budget: _Budget,
        clock: _CpuClock | None = None,
    ) -> Outcome | None:
        """Read frames until the child ends. Returns an Outcome when loading failed.

        Wall-clock limits: an input's hard deadline is its limit + slack after the previous
        result was decoded. CPU-time limits (``clock``): the input is charged with the child's
        CPU time from the previous frame's reading to its own (each reading the child reports
        is clamped between readings of ``clock`` taken here, so a child can shift CPU time
        between its own inputs at most by what it used since the parent last looked); it is
        killed past limit + slack of CPU time, or past the wall-clock backstop; and a result
        charged with more than its limit is a timeout, whatever the child says.
        """
        buf = bytearray()
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        expect = -1  # -1: the load frame
        timeouts = sum(o.status is Status.TIMEOUT for o in res.outcomes)
        limit, cut = lim.load, False
        w_mark = time.monotonic()  # wall clock where the current input's time starts
        u_mark = 0.0  # the child's CPU clock where it starts (a child's clock starts at fork)
        # Bounds of the child's CPU readings (the child reads its clock, then writes the
        # frame): ``lo``, a reading taken before any byte of a frame not yet begun could have
        # been written; ``span``, (``lo`` when the frames being read began, the reading once
        # the last read had returned).
        lo = 0.0
        span = (0.0, 0.0)
        while True:
            try:
                frame = _take_frame(buf, lim.frame_cap)
            except _Oversize as e:
                raise _Stop(expect, _violation(str(e))) from None
            if frame is None:
                now = time.monotonic()
                u = clock.read() if clock is not None else 0.0
                used = u - u_mark if clock is not None else now - w_mark
                waiting = 0 <= expect < n
                if waiting and budget.spent(res, u, now):
                    why = f"the batch's {lim.batch:g} s{_of(lim)} budget ran out here; killed"
                    spent = Outcome(Status.TIMEOUT, None, "Timeout", why, used)
                    raise _Stop(expect, spent, budget_spent=True)
                wall_left = w_mark + lim.backstop(limit) + lim.slack - now
                if clock is not None and used > limit + lim.slack:
                    raise _Stop(expect, _cpu_timeout_outcome(expect, limit, lim, used))
                if wall_left <= 0:
                    if clock is not None:
                        raise _Stop(expect, _backstop_outcome(expect, limit, lim, used))
                    raise _Stop(expect, _timeout_outcome(expect, used))
                wait = wall_left
                if clock is not None:
                    wait = min(wait, max((limit + lim.slack - used) / _NCPU, _MIN_WAIT))
                if waiting:
                    wait = min(wait, budget.wait(res, u, now))
                if not poller.poll(max(wait, 0.0) * 1000):
                    if not buf:  # nothing had arrived: what comes was begun after `u`
                        lo = max(lo, u)
                    continue
                pre = clock.read() if clock is not None else 0.0
                chunk = os.read(fd, _RECV_CAP)
                if not chunk:
                    raise _Stop(expect, Outcome(Status.CRASH, seconds=used))
                if clock is not None:
                    # A frame already begun in ``buf`` keeps the lower bound it began under.
                    span = (lo if not buf else span[0], clock.read())
                    lo = max(lo, pre)
                buf += chunk
                continue
            arrived = time.monotonic()
            with _gc_paused():
                try:
                    msg = read_frame(frame)
                    kind = msg["k"]
                except (ValueError, TypeError, KeyError, RecursionError, MemoryError) as e:
                    why = f"unreadable frame ({type(e).__name__})"
                    raise _Stop(expect, _violation(why)) from None
                charged = 0.0
                u_frame = u_mark
                if clock is not None and kind in ("load", "r"):
                    u_frame = _clamp(msg.get("u"), max(span[0], u_mark), span[1])
                    charged = u_frame - u_mark
                outcome = None
                i = msg.get("i")
                if kind == "r" and 0 <= expect < n and type(i) is int and i == expect:
                    # Decoding counts in the input's time: the frame's budget stops at its
                    # deadline, and a result decoded past it is that input's timeout.
                    if clock is None:
                        deadline = w_mark + limit + lim.slack
                    else:  # the parent's own work is bounded in wall time from the arrival
                        deadline = arrived + limit + lim.slack
                    outcome = _outcome(msg, len(frame), deadline)
                    late = time.monotonic() > deadline
                    if late and outcome.status in (Status.OK, Status.ERROR):
                        outcome = _decoded_late(outcome)
                    if clock is not None:
                        outcome = _charge_cpu(outcome, charged, limit, cut, lim)
            if kind == "confine-failed":
                raise SandboxError(
                    f"the child could not confine itself: {_short(msg.get('e'), 500)}"
                )
            if expect == -1:
                if kind != "load":
                    raise _Stop(expect, _violation(f"expected the load frame, got {_short(kind)}"))
                if not msg.get("ok") or (clock is not None and charged > lim.load):
                    if msg.get("timeout") or msg.get("ok"):
                        return Outcome(
                            Status.TIMEOUT, None, "Timeout", "loading the program timed out"
                        )
                    etype, emsg = _error_pair(msg.get("e"))
                    res.load_error = f"{etype}: {emsg}"
                    return Outcome(Status.ERROR, None, etype, emsg)
                expect = start
            elif kind == "end":
                if expect != n:
                    raise _Stop(
                        expect, _violation(f"'end' after {expect - start} of {n - start} results")
                    )
                return None
            elif kind == "r" and expect < n:
                if outcome is None:
                    shown = _short(i)
                    raise _Stop(expect, _violation(f"result {shown} where {expect} was due"))
                if outcome.error_type == "ProtocolViolation":
                    # Stop this child: its later frames cannot be trusted to line up.
                    raise _Stop(expect, outcome)
                res.outcomes.append(outcome)
                timeouts += outcome.status is Status.TIMEOUT
                expect += 1
            else:
                raise _Stop(expect, _violation(f"unexpected frame kind {_short(kind)}"))
            # Measured after decoding, so the parent's own work never eats the next input's time.
            w_mark = time.monotonic()
            u_mark = u_frame
            limit, cut = lim.in_force(expect, timeouts) if expect < n else (1.0, False)


_NCPU = max(1, os.cpu_count() or 1)
"""How many CPUs a child can keep busy at once: the parent's next look at a child's CPU clock
is at most (time left) / this away."""
_MIN_WAIT = 0.002


class _CpuClock:
    """The CPU time (user + system, every thread, live or ended) of one child, from the
    kernel's process CPU clock (``clock_gettime`` on the clock id of its pid: what
    ``clock_getcpuclockid`` returns). The child cannot change it; it stays readable until the
    zygote reaps the child, which happens only when the parent asks."""

    __slots__ = ("clock_id", "last")

    def __init__(self, pid: int) -> None:
        self.clock_id = ((~pid) << 3) | 2  # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
        self.last = 0.0

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


def _clamp(claim: object, lo: float, hi: float) -> float:
    """A child's CPU reading, held to what the parent's own readings allow: at least ``lo``
    (the clock before the frame could have been written), at most ``hi`` (the clock once it
    had arrived). A missing or malformed reading counts as ``hi``."""
    if type(claim) not in (int, float) or not math.isfinite(claim):  # type: ignore[arg-type]
        return max(lo, hi)
    return min(max(float(claim), lo), max(lo, hi))  # type: ignore[arg-type]


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

    def spent(self, res: BatchResult, child_cpu: float, now: float) -> bool:
        end = self._wall_end()
        if end is None:
            return False
        if now >= end:
            return True
        if self.lim.kind is LimitKind.CPU:
            assert self.lim.batch is not None
            return res.cpu_seconds + child_cpu >= self.lim.batch
        return False

    def wait(self, res: BatchResult, child_cpu: float, now: float) -> float:
        """How long the parent may sleep before the budget could be spent."""
        end = self._wall_end()
        if end is None:
            return math.inf
        left = end - now
        if self.lim.kind is LimitKind.CPU:
            assert self.lim.batch is not None
            cpu_left = self.lim.batch - res.cpu_seconds - child_cpu
            left = min(left, max(cpu_left / _NCPU, _MIN_WAIT))
        return left


def _of(lim: Limits) -> str:
    return " CPU-time" if lim.kind is LimitKind.CPU else ""


def _charge_cpu(outcome: Outcome, charged: float, limit: float, cut: bool, lim: Limits) -> Outcome:
    """The parent's verdict on an input under CPU-time limits: more CPU time than its limit is
    a timeout whatever the child reported; ``seconds`` is the CPU time charged."""
    reduced = " (the reduced limit, after earlier timeouts)" if cut else ""
    if outcome.status is Status.TIMEOUT and outcome.error_type == "Timeout":
        if "decod" in (outcome.error or ""):
            why = outcome.error
        elif charged < limit:
            why = (
                f"timed out: slept or was blocked past the {lim.backstop(limit):g} s wall-clock "
                f"backstop ({charged:.3f} s of CPU time){reduced}"
            )
        else:
            why = f"timed out: {limit:g} s of CPU time{reduced}"
        return Outcome(Status.TIMEOUT, None, "Timeout", why, charged)
    if outcome.status in (Status.OK, Status.ERROR) and charged > limit:
        why = f"used {charged:.3f} s of CPU time, over its {limit:g} s limit{reduced}"
        return Outcome(Status.TIMEOUT, None, "Timeout", why, charged)
    return Outcome(outcome.status, outcome.value, outcome.error_type, outcome.error, charged)


def _short(x: object, n: int = 40) -> str:
    """A bounded rendering of a field of a child's frame (never the repr of a huge value)."""
    if type(x) is str:
        return repr(x[:n])
    if x is None or type(x) in (bool, int, float):
        return repr(x)[:n]
    return f"<{type(x).__name__}>"


def _error_pair(raw: object) -> tuple[str, str]:
    if type(raw) is list and len(raw) == 2 and all(type(x) is str for x in raw):
        return raw[0][:200], raw[1][:2000]
    return "Error", "(malformed error report)"


def _outcome(msg: dict[str, Any], nbytes: int = 0, deadline: float | None = None) -> Outcome:
    """The Outcome of a result frame's object; its value is decoded within a budget of
    DECODE_FACTOR x ``nbytes`` (the frame's size) + DECODE_FLOOR bytes, until ``deadline``."""
    t = msg.get("t", 0.0)
    if type(t) not in (int, float) or not 0 <= t < 1e9:
        return _violation("malformed time in a result")
    s = msg.get("s")
    if s == "ok":
        budget = _runner.Budget(DECODE_FACTOR * nbytes + DECODE_FLOOR, deadline)
        try:
            return Outcome(Status.OK, decode_value(msg.get("v"), budget), seconds=t)
        except _runner.OverBudget as e:
            return Outcome(
                Status.ERROR, None, "OutputTooLarge", f"{e} (its frame: {nbytes} bytes)", t
            )
        except _runner.DecodeTimeout:
            why = "decoding the result passed the input's deadline (decoding counts in its time)"
            return Outcome(Status.TIMEOUT, None, "Timeout", why, t)
        except (ValueError, TypeError, KeyError, RecursionError, MemoryError, OverflowError) as e:
            return _violation(f"undecodable result ({type(e).__name__}: {str(e)[:200]})")
    if s == "timeout":
        why = (
            "timed out at the reduced limit (after earlier timeouts)"
            if msg.get("c")
            else ("timed out")
        )
        return Outcome(Status.TIMEOUT, None, "Timeout", why, t)
    if s == "exc" and isinstance(msg.get("e"), list) and len(msg["e"]) == 2:
        etype, emsg = _error_pair(msg["e"])
        return Outcome(Status.ERROR, None, etype, emsg, t)
    return _violation(f"malformed result status {_short(s, 50)}")


def _decoded_late(outcome: Outcome) -> Outcome:
    why = "the result was decoded past the input's deadline (decoding counts in its time)"
    return Outcome(Status.TIMEOUT, None, "Timeout", why, outcome.seconds)


def _not_run(res: BatchResult, n: int, lim: Limits) -> None:
    left = n - len(res.outcomes)
    if left > 0:
        why = f"not run: the batch's {lim.batch:g} s{_of(lim)} budget was spent"
        res.outcomes.extend([Outcome(Status.TIMEOUT, None, "Timeout", why)] * left)
        res.notes.append(f"{left} input(s) not run: the batch budget was spent")


def _violation(why: str) -> Outcome:
    return Outcome(Status.CRASH, None, "ProtocolViolation", why)


def _timeout_outcome(index: int, seconds: float) -> Outcome:
    what = "loading the program" if index < 0 else "the input"
    return Outcome(
        Status.TIMEOUT, None, "Timeout", f"{what} hit the hard deadline; killed", seconds
    )


def _cpu_timeout_outcome(index: int, limit: float, lim: Limits, used: float) -> Outcome:
    what = "loading the program" if index < 0 else "the input"
    why = f"{what} used more than {limit:g} s + {lim.slack:g} s of CPU time (hard deadline); killed"
    return Outcome(Status.TIMEOUT, None, "Timeout", why, used)


def _backstop_outcome(index: int, limit: float, lim: Limits, used: float) -> Outcome:
    what = "loading the program" if index < 0 else "the input"
    why = (
        f"{what} slept or was blocked past the {lim.backstop(limit):g} s wall-clock backstop "
        f"({used:.3f} s of CPU time; hard deadline); killed"
    )
    return Outcome(Status.TIMEOUT, None, "Timeout", why, used)


def _describe_status(stats: dict[str, Any]) -> str:
    st = stats.get("status")
    if st is None:
        return "the child disappeared"
    if os.WIFSIGNALED(st):
        sig = os.WTERMSIG(st)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return f"the child was killed by {name}"
    return f"the child exited with status {os.WEXITSTATUS(st)} before reporting"


class _Oversize(Exception):
    pass


def _take_frame(buf: bytearray, cap: int) -> bytes | None:
    if len(buf) < 4:
        return None
    size = int.from_bytes(buf[:4], "big")
    if size > cap + 4096:
        raise _Oversize(f"a result frame of {size} bytes exceeds the {cap}-byte cap")
    if len(buf) < 4 + size:
        return None
    frame = bytes(buf[4 : 4 + size])
    del buf[: 4 + size]
    return frame


def _send(sock: socket.socket, obj: object) -> None:
    sock.sendall(_runner.pack(obj))


def _recv(sock: socket.socket) -> dict[str, Any]:
    head = _recv_exact(sock, 4)
    return _frame_body(head, sock)


def _frame_body(head: bytes, sock: socket.socket) -> dict[str, Any]:
    if len(head) < 4:
        head += _recv_exact(sock, 4 - len(head))
    size = int.from_bytes(head[:4], "big")
    body = head[4:]
    if len(body) < size:
        body += _recv_exact(sock, size - len(body))
    out = json.loads(body)
    if not isinstance(out, dict):
        raise ValueError("bad reply from the zygote")
    return out


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    data = _runner._recv_exact(sock, n)
    if data is None:
        raise ValueError("the zygote closed the connection")
    return data


def _drain(stream: Any) -> None:
    try:
        while stream.read(65536):
            pass
    except (OSError, ValueError):
        pass
