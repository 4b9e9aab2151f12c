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
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar

from utdebug.sandbox import _runner
from utdebug.sandbox.compare import exception_satisfies, stand_in
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
    parent from the kernel; a wall-clock backstop (``Limits.wall_factor`` x the limit of time
    asleep or blocked) ends a program that sleeps or blocks. Does not move with the machine's
    load."""
    WALL = "wall"
    """Wall-clock time, as the paper's harness: on a loaded machine, slow inputs may time out
    that pass on an idle one."""


@dataclass(frozen=True, slots=True)
class Raised:
    """What the child's runner read of an exception, with references it took before any
    program ran (see ``_runner._make_exc_facts``): the stage of a test with setup it came
    from (``setup``, ``call``, ``then``; None for a plain call), the builtin exception classes
    of its class's MRO, found by identity, and the module and qualified name of its other
    classes. Names a program gave its own classes are names; a builtin is a builtin only by
    identity."""

    stage: str | None
    builtins: tuple[str, ...]
    classes: tuple[tuple[str, str], ...]

    def satisfies(self, expected: str) -> bool:
        """Whether this exception satisfies "raises ``expected``", as ``except expected``
        would: a builtin name (``KeyError``, ``LookupError``) by identity with the builtin
        class, any other name (``InsufficientFunds``, ``json.JSONDecodeError``) by the last
        part of a class's qualified name (a class is often raised from a module other than
        the one that exports it). A module's own class named like a builtin satisfies no
        builtin name."""
        return exception_satisfies(self.builtins, self.classes, expected)

    @classmethod
    def of(cls, raw: object) -> Raised | None:
        """From a result frame's ``x`` (None when it is absent or malformed)."""
        facts = _runner.read_exc_facts(raw)
        return None if facts is None else cls(*facts)


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
    raised: Raised | None = None
    """For an ``error``: the exception as the runner read it (None for errors the parent
    made, or a child that sent no such facts)."""

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
    load: float | None = None
    """Seconds (of ``kind``) to execute the program's module-level code (its imports
    included); None: the largest per-input limit, so that work a program does at load time
    (computing answers for inputs it guesses) is held to what one input may take. A program
    over it does not load: every input is a ``timeout`` ("loading the program timed out")."""
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
    """CPU-time limits only: a program that sleeps or blocks is stopped (by the parent) once
    it has been asleep or blocked this many times its limit: wall time not spent on a CPU nor
    waiting for one, so a program starved of CPU on a loaded machine is not stopped."""

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

    def load_limit(self) -> float:
        """Seconds (of ``kind``) the module-level code may take: ``load``, or when that is
        None the largest per-input limit (work done at load time is never free)."""
        if self.load is not None:
            return self.load
        return max(self.per_input_each or (), default=self.per_input)

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


PROGRAM_FILE = "<program>"
"""The file name the child compiles a program's code under (its frames in a traceback)."""


@dataclass(frozen=True, slots=True)
class StagedTest:
    """A test with setup, run by the child's runner in stages (``Sandbox.run(test=...)``):
    ``setup`` (statements, may be empty), then ``call`` (one expression), then ``then`` (one
    expression, optional: its value is the result), in a copy of the module's namespace; what
    is awaitable is awaited (all stages on one event loop when any uses ``await``), a
    generator is consumed into a list of at most ``bound`` items. The parts are compiled
    before the program's code runs and run with the builtins as they were before it ran, and
    an exception's stage and classes are the runner's (:class:`Raised`), so neither the
    module nor a thread it starts decides them. ``args``: the name the test's code sees each
    input's arguments under (a tuple), when the test is run on several inputs."""

    setup: str
    call: str
    then: str | None = None
    bound: int = 100
    args: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "setup": self.setup,
            "call": self.call,
            "then": self.then,
            "bound": self.bound,
            "args": self.args,
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
    decoded_bytes: int = 0
    """What its decoded values may hold in the parent, as booked (see ``BATCH_DECODE``)."""


class SandboxError(RuntimeError):
    """The sandbox itself failed (not the program under test)."""


class EncodedInputs(tuple[str, ...]):
    """Inputs encoded once (JSON text per input); decoded afresh in the child for every call."""

    __slots__ = ()


def encode_inputs(inputs: Sequence[Sequence[Any]]) -> EncodedInputs:
    if isinstance(inputs, EncodedInputs):
        return inputs
    dump, enc = _runner.dumps, _runner.encode  # compact, ASCII, no NaN: as json.dumps would
    return EncodedInputs(dump(enc(list(args))) for args in inputs)


def decode_value(data: object, budget: _runner.Budget | None = None) -> Any:
    """Decode a tagged value; ``budget`` bounds what a result from a child may cost."""
    return _runner.decode(data, stand_in, budget)


DECODE_FACTOR = 32
"""Decoding a result frame may allocate at most this many times its bytes (plus
DECODE_FLOOR) in the parent; parsing its JSON costs at most about as much again."""
DECODE_FLOOR = 1 << 20
BATCH_DECODE = DECODE_FACTOR * (16 << 20) + DECODE_FLOOR
"""What the decoded results of one batch may hold in the parent, in all: as much as one
result of the largest frame (16 MiB) may. Each ``ok`` result books what its decoding
charged (containers, arrays, big ints: their sizes) plus LEAF_FACTOR x its frame's bytes
(the numbers and strings of the parsed JSON); once the batch's is spent, later values are
``OutputTooLarge`` errors, and are not kept."""
LEAF_FACTOR = 8

_gc_lock = threading.Lock()
_gc_pauses = [0, False]  # decoders in flight; whether the collector was on before the first


def _gc_pause() -> None:
    """No cyclic garbage collection while a frame is parsed and decoded (until the matching
    :func:`_gc_resume`).

    A frame of millions of small containers otherwise triggers collection after collection
    (each scanning everything the process holds), making the parse many times slower while
    it holds the GIL. Threads share the pause; the last one out restores the collector.
    """
    with _gc_lock:
        if _gc_pauses[0] == 0:
            _gc_pauses[1] = gc.isenabled()
            gc.disable()
        _gc_pauses[0] += 1


def _gc_resume() -> None:
    with _gc_lock:
        _gc_pauses[0] -= 1
        if _gc_pauses[0] == 0 and _gc_pauses[1]:
            gc.enable()


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """:func:`_gc_pause` for the ``with`` block."""
    _gc_pause()
    try:
        yield
    finally:
        _gc_resume()


def read_frame(frame: bytes) -> dict[str, Any]:
    """The JSON object of one result frame; ValueError (or RecursionError) for anything else."""
    # strict UTF-8 (a UnicodeDecodeError is a ValueError), one JSON value, nothing around it
    msg = _runner.loads(frame.decode("utf-8"))
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
_READ_SMALL = 1 << 16
_GC_SMALL = 4096
"""Frames up to this size are parsed without pausing the garbage collector (too few
containers to set it off more than once)."""
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
                    head, fds, _, _ = socket.recv_fds(ctl, 64, 3)
                    if not 2 <= len(fds) <= 3:
                        for f in fds:
                            os.close(f)
                        raise SandboxError("the zygote did not hand over a child's pipes")
                    body = _frame_body(head, ctl)
                    return body, fds
                return _recv(ctl), []
            except (OSError, ValueError) as e:
                self._proc.kill() if self._proc else None
                self._proc = None
                raise SandboxError(f"lost the sandbox zygote: {e}") from e

    def _spawn(self, job: dict[str, Any]) -> tuple[int, int, int, int | None]:
        """Start a child: its pid (in the zygote's namespace), the read end of its result
        pipe, the write end of its input pipe, and a pidfd of it (None when the kernel has no
        pidfd_open)."""
        reply, fds = self._request({"op": "spawn", "job": job}, want_fd=True)
        self.spawned += 1
        return int(reply["pid"]), fds[0], fds[1], fds[2] if len(fds) > 2 else None

    def _host_pid(self, pid: int, pidfd: int | None) -> int | None:
        """The child's pid in this process's PID namespace (None when it cannot be known)."""
        host = _pid_of(pidfd) if pidfd is not None else None
        if host is None and Layer.PIDNS not in self.layers.active():
            host = pid  # no PID namespace of its own: the zygote's pids are ours
        return host

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
        test: StagedTest | None = None,
    ) -> BatchResult:
        """Run ``entry_point`` of ``code`` on every input; one Outcome per input, in order.

        ``context`` runs the program as a module of a project (see :class:`ModuleContext`).
        ``test``: instead of calling ``entry_point``, the runner runs this test with setup on
        each input (give one empty input): see :class:`StagedTest`.
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
            start = self._run_child(code, entry_point, enc, start, lim, res, budget, context, test)
            if start is not None and start >= n:
                break
            if start is not None and budget.spent(res, 0.0, time.monotonic()):
                _not_run(res, n, lim)
                break
        res.wall_seconds = time.perf_counter() - t0
        return res

    def _job(
        self,
        enc: EncodedInputs,
        start: int,
        lim: Limits,
        timeouts: int = 0,
        uid: int | None = None,
        spin: int = 0,
    ) -> dict[str, Any]:
        """What the zygote needs to start a child: limits and counts, never the program, its
        entry point or its module context (those go to the child alone, see
        :func:`_program_frame`), so the zygote's memory, which every child inherits, holds
        nothing of any job."""
        each = [lim.limit_of(i) for i in range(start, len(enc))]
        return {
            "kind": lim.kind.value,
            "wall_factor": lim.wall_factor,
            "prelude": self.config.prelude,
            "n": len(enc) - start,
            "start": start,
            "per_input": each,
            "cut": None if lim.cut_after is None else [lim.cut_after, lim.cut_limit],
            "timeouts": timeouts,
            "uid": uid,
            "spin": spin,
            "limits": {
                "memory_mb": lim.memory_mb,
                "cpu_s": sum(each) + lim.load_limit() + 2.0,
                "fsize_mb": lim.fsize_mb,
                "frame_cap": lim.frame_cap,
                "load_s": lim.load_limit(),
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
        test: StagedTest | None = None,
    ) -> int | None:
        """Run one child from ``start``; return where to resume, or None when done."""
        timeouts = sum(o.status is Status.TIMEOUT for o in res.outcomes)
        uid = self._take_uid()
        lane = _Lane.open()
        try:
            spin = _runner.SPIN if lane.spread else 0
            pid, fd, in_fd, pidfd = self._spawn(self._job(enc, start, lim, timeouts, uid, spin))
        except BaseException:
            lane.close()
            self._give_uid(uid)
            raise
        res.children += 1
        stop: _Stop | None = None
        load_failed: Outcome | None = None
        sched: _SchedStat | None = None
        clock: _CpuClock | None = None
        try:
            host = self._host_pid(pid, pidfd)
            if lim.kind is LimitKind.CPU:
                if host is None:
                    raise SandboxError(
                        "cannot read the children's CPU clocks here (their pids need "
                        "pidfd_open, Linux 5.3+); use wall-clock limits (Limits.kind 'wall', "
                        "--limit-kind wall)"
                    )
                clock, sched = _CpuClock(host), _SchedStat(host)
            if host is not None:
                lane.attach(host)
            if pidfd is not None:
                os.close(pidfd)
                pidfd = None
            feed = _Feed(in_fd, enc)
            feed.queue(_program_frame(code, entry, context, test))
            load_failed = self._collect(
                fd, start, len(enc), lim, res, budget, clock, sched, feed, lane
            )
        except _Stop as s:
            stop = s
        finally:
            lane.close()
            if pidfd is not None:
                os.close(pidfd)
            if sched is not None:
                sched.close()
            if clock is not None:
                clock.close()
            os.close(in_fd)
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
        sched: _SchedStat | None = None,
        feed: _Feed | None = None,
        lane: _Lane | None = None,
    ) -> Outcome | None:
        """Read frames until the child ends. Returns an Outcome when loading failed.

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
        buf = bytearray()
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        if feed is not None and feed.pending:  # the program itself, not all written yet
            poller.register(feed.fd, select.POLLOUT)
        expect = -1  # -1: the load frame
        timeouts = sum(o.status is Status.TIMEOUT for o in res.outcomes)
        limit, cut = lim.load_limit(), False
        w_mark = time.monotonic()  # wall clock where the current input's time starts
        u_mark = 0.0  # the child's CPU clock where it starts (a child's clock starts at fork)
        if sched is not None:
            sched.reset(w_mark, 0.0)
        quick_until = 0.0  # until then, the parent only waits for the child's frame
        spin = 0  # how many more times to try the result pipe (yielding) before polling it
        os.set_blocking(fd, False)
        while True:
            try:
                frame = _take_frame(buf, lim.frame_cap)
            except _Oversize as e:
                raise _Stop(expect, _violation(str(e))) from None
            if frame is None:
                now = time.monotonic()
                if now < quick_until:  # nothing can have run out yet (see _quick_until)
                    if spin:  # a quick input's frame is often here already: no poll then
                        spin -= 1
                        try:
                            chunk = os.read(fd, _want(buf))
                        except BlockingIOError:
                            os.sched_yield()
                            continue
                        if not chunk:  # the child is gone: the full look below says so
                            quick_until = 0.0
                        buf += chunk
                        continue
                    if not _pump(poller, fd, buf, feed, quick_until - now):
                        quick_until = 0.0  # the child is gone: the full look below says so
                    continue
                if lane is not None and lane.pinned and now - w_mark >= _FIRST_LOOK:
                    lane.child(False)  # a slow input: every CPU for it (and its threads)
                u = clock.read() if clock is not None else 0.0
                used = u - u_mark if clock is not None else now - w_mark
                waiting = 0 <= expect < n
                if waiting and budget.spent(res, u, now):
                    why = f"the batch's {lim.batch:g} s{_of(lim)} budget ran out here; killed"
                    spent = Outcome(Status.TIMEOUT, None, "Timeout", why, used)
                    raise _Stop(expect, spent, budget_spent=True)
                if clock is not None:
                    if used > limit + lim.slack:
                        raise _Stop(expect, _cpu_timeout_outcome(expect, limit, lim, used))
                    back = lim.backstop(limit)
                    if sched is not None and sched.first_look():
                        slept, queued = 0.0, 0.0
                        if now - w_mark >= _FIRST_LOOK:
                            slept, queued = sched.slept(now, u, back)
                        else:  # a quick input never needs the file; a slow one is read soon
                            back = min(back, _FIRST_LOOK)
                    elif sched is not None:
                        slept, queued = sched.slept(now, u, back)
                    else:
                        slept, queued = max(0.0, now - w_mark - used), 0.0
                    if slept >= lim.backstop(limit):
                        out = _backstop_outcome(expect, limit, lim, used, slept, queued)
                        raise _Stop(expect, out)
                    wait = min(back - slept, max((limit + lim.slack - used) / _NCPU, _MIN_WAIT))
                else:
                    wall_left = w_mark + limit + lim.slack - now
                    if wall_left <= 0:
                        raise _Stop(expect, _timeout_outcome(expect, used))
                    wait = wall_left
                if waiting:
                    wait = min(wait, budget.wait(res, u, now))
                if not _pump(poller, fd, buf, feed, max(wait, 0.0)):
                    raise _Stop(expect, Outcome(Status.CRASH, seconds=used))
                continue
            arrived = time.monotonic()
            paused = len(frame) > _GC_SMALL
            if paused:
                _gc_pause()
            try:
                try:
                    msg = read_frame(frame)
                    kind = msg["k"]
                except (ValueError, TypeError, KeyError, RecursionError, MemoryError) as e:
                    why = f"unreadable frame ({type(e).__name__})"
                    raise _Stop(expect, _violation(why)) from None
                # The child yielded its CPU just before it wrote this frame (the kernel then
                # brought its clock up to date) and now waits for its next input, yielding
                # between tries: the reading is exact to a few microseconds.
                c = clock.read() if clock is not None else 0.0
                charged = c - u_mark
                outcome = None
                i = msg.get("i")
                sent_at = None
                if clock is not None and kind == "r" and i == expect and 0 <= i < n - 1:
                    # Under CPU-time limits the next input goes out before this result is
                    # decoded (the decoding is the parent's work, not the child's time).
                    if lane is not None:
                        lane.repin()
                    sent_at = time.monotonic()
                    if feed is not None and not feed.send(expect + 1):
                        poller.register(feed.fd, select.POLLOUT)
                if kind == "r" and 0 <= expect < n and type(i) is int and i == expect:
                    # Decoding counts in the input's time: the frame's budget stops at its
                    # deadline, and a result decoded past it is that input's timeout.
                    if clock is None:
                        deadline = w_mark + limit + lim.slack
                    else:  # the parent's own work is bounded in wall time from the arrival
                        deadline = arrived + limit + lim.slack
                    outcome = _outcome(msg, len(frame), deadline, res)
                    late = time.monotonic() > deadline
                    if late and outcome.status in (Status.OK, Status.ERROR):
                        outcome = _decoded_late(outcome)
                    if clock is not None:
                        if outcome.status is Status.TIMEOUT and charged < limit:
                            # A timeout the charge does not reach yet: the child may still be
                            # on its CPU with a reading that lags (a loaded parent's settle
                            # wait can pass before it is off); read again once it is.
                            c = clock.settled(_CONFIRM)
                            charged = c - u_mark
                        outcome = _charge_cpu(outcome, charged, limit, cut, lim)
                    else:
                        outcome = _charge_wall(outcome, arrived - w_mark, limit, cut)
            finally:
                if paused:
                    _gc_resume()
            if kind == "confine-failed":
                raise SandboxError(
                    f"the child could not confine itself: {_short(msg.get('e'), 500)}"
                )
            if expect == -1:
                if kind != "load":
                    raise _Stop(expect, _violation(f"expected the load frame, got {_short(kind)}"))
                over = charged if clock is not None else arrived - w_mark
                if not msg.get("ok") or over > limit:
                    if msg.get("timeout") or msg.get("ok"):
                        why = f"loading the program timed out (load limit: {limit:g} s{_of(lim)})"
                        return Outcome(Status.TIMEOUT, None, "Timeout", why)
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
            u_mark = c
            limit, cut = lim.in_force(expect, timeouts) if expect < n else (1.0, False)
            # The next input's time starts when it is sent: under wall-clock limits after the
            # decoding, so the parent's own work never eats into it.
            w_mark = sent_at if sent_at is not None else time.monotonic()
            if sched is not None:
                sched.reset(w_mark, c)
            if sent_at is None and expect < n and feed is not None:
                if lane is not None:
                    lane.repin()
                if not feed.send(expect):
                    poller.register(feed.fd, select.POLLOUT)
            quick_until = _quick_until(lim, limit, budget, res, c, w_mark) if expect < n else 0.0
            spin = _SPIN if lane is not None and lane.spread else 1


def _program_frame(
    code: str, entry: str, context: ModuleContext | None, test: StagedTest | None
) -> bytes:
    """The program, its entry point, its module context and its test with setup: the first
    frame on the child's input pipe, read by the child alone after the fork (never by the
    zygote)."""
    doc: dict[str, Any] = {"code": code, "entry_point": entry}
    if context is not None:
        doc["context"] = context.to_json()
    if test is not None:
        doc["test"] = test.to_json()
    return json.dumps(doc).encode("ascii")


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


_NCPU = max(1, os.cpu_count() or 1)
"""How many CPUs a child can keep busy at once: the parent's next look at a child's CPU clock
is at most (time left) / this away."""
_MIN_WAIT = 0.002
_SPIN = 200
"""How many times the parent tries the result pipe for an input's frame (yielding its CPU
between tries: a few hundred microseconds in all) before it polls, when the child runs on
another CPU (see :class:`_Lane`; the child's side does the same, ``_runner.SPIN``). Where the
two share a CPU it tries once."""
_SETTLE = 0.0003
"""How long the parent waits for a child that has written its frame to leave its CPU (it
needs microseconds; one that waits for a CPU reads exactly already)."""
_CONFIRM = 0.05
"""How long the parent waits for a child that reported a timeout its CPU clock does not show yet
to leave its CPU (a rare path: an honest child blocks on its input pipe within microseconds)."""
_FIRST_LOOK = 0.005
"""The parent reads a slow input's schedstat baseline at most this long after sending it."""


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
        ``reset`` (the run-queue waits before that are not counted: at most that much)."""
        wall = now - self.w0
        off_cpu = max(0.0, wall - (cpu - self.busy0))
        if math.isnan(self.queued0):
            got = self._read()
            self.queued0 = got[1] if got is not None else 0.0
            return off_cpu, 0.0
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


class _Feed:
    """The child's inputs, sent one at a time on its input pipe (non-blocking: a child that
    does not read cannot stall the parent)."""

    __slots__ = ("enc", "fd", "pending")

    def __init__(self, fd: int, enc: EncodedInputs) -> None:
        self.fd, self.enc, self.pending = fd, enc, memoryview(b"")
        os.set_blocking(fd, False)

    def send(self, i: int) -> bool:
        """Queue input ``i`` and write what the pipe takes now; True when all is written."""
        return self.queue(self.enc[i].encode("utf-8"))

    def queue(self, data: bytes) -> bool:
        """Queue one frame (4-byte length + ``data``) and write what the pipe takes now."""
        self.pending = memoryview(len(data).to_bytes(4, "big") + data)
        return self.flush()

    def flush(self) -> bool:
        try:
            while self.pending:
                self.pending = self.pending[os.write(self.fd, self.pending) :]
        except BlockingIOError:
            return False
        except OSError:  # the child is gone: its result pipe says so
            self.pending = memoryview(b"")
        return True


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
        end = self._wall_end()
        if end is None:
            return math.inf
        left = end - now
        if self.lim.kind is LimitKind.CPU:
            assert self.lim.batch is not None
            left = min(left, (self.lim.batch - res.cpu_seconds - child_cpu) / _NCPU)
        return left

    def spent(self, res: BatchResult, child_cpu: float, now: float) -> bool:
        return self.left(res, child_cpu, now) <= 0

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
    """The parent's verdict on an input under CPU-time limits, from its own readings of the
    child's CPU clock: more CPU time than its limit is a timeout whatever the child reported,
    and a timeout the child reports is one only when the charge has reached the limit;
    ``seconds`` is the CPU time charged."""
    reduced = " (the reduced limit, after earlier timeouts)" if cut else ""
    if outcome.status is Status.TIMEOUT and outcome.error_type == "Timeout":
        if "decod" in (outcome.error or ""):
            why = outcome.error
        elif charged < limit:
            why = (
                f"reported a timeout after {charged:.3f} s of CPU time, short of its {limit:g} s "
                f"limit{reduced}: not confirmed by the child's CPU clock"
            )
            return Outcome(Status.ERROR, None, "Timeout", why, charged)
        else:
            why = f"timed out: {limit:g} s of CPU time{reduced}"
        return Outcome(Status.TIMEOUT, None, "Timeout", why, charged)
    if outcome.status in (Status.OK, Status.ERROR) and charged > limit:
        why = f"used {charged:.3f} s of CPU time, over its {limit:g} s limit{reduced}"
        return Outcome(Status.TIMEOUT, None, "Timeout", why, charged)
    return replace(outcome, seconds=charged)


def _charge_wall(outcome: Outcome, took: float, limit: float, cut: bool) -> Outcome:
    """The parent's verdict under wall-clock limits: a result that arrived more than its
    limit after its input was sent is a timeout, whatever the child reported (a program may
    ignore its timer), and a timeout the child reports is one only when that much time has
    passed (a program can raise the child's own timeout exception); ``seconds`` is the
    child's measure, at most the parent's."""
    reported = outcome.status is Status.TIMEOUT and outcome.error_type == "Timeout"
    if reported and took < limit and "decod" not in (outcome.error or ""):
        why = (
            f"reported a timeout after {took:.3f} s of wall-clock time, short of its "
            f"{limit:g} s limit: not confirmed by the parent's clock"
        )
        return Outcome(Status.ERROR, None, "Timeout", why, took)
    if outcome.status in (Status.OK, Status.ERROR) and took > limit:
        reduced = " (the reduced limit, after earlier timeouts)" if cut else ""
        why = f"took {took:.3f} s of wall-clock time, over its {limit:g} s limit{reduced}"
        return Outcome(Status.TIMEOUT, None, "Timeout", why, took)
    if outcome.seconds > took:
        return replace(outcome, seconds=took)
    return outcome


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


def _outcome(
    msg: dict[str, Any],
    nbytes: int = 0,
    deadline: float | None = None,
    batch: BatchResult | None = None,
) -> Outcome:
    """The Outcome of a result frame's object; its value is decoded within a budget of
    DECODE_FACTOR x ``nbytes`` (the frame's size) + DECODE_FLOOR bytes, until ``deadline``.
    The decoded values of one ``batch`` stay in its result: together they may hold at most
    :data:`BATCH_DECODE` bytes (each booked at its frame's budget)."""
    t = msg.get("t", 0.0)
    if type(t) not in (int, float) or not 0 <= t < 1e9:
        return _violation("malformed time in a result")
    s = msg.get("s")
    if s == "ok":
        leaves = LEAF_FACTOR * nbytes  # the numbers and strings a parsed frame holds, at most
        if batch is not None and batch.decoded_bytes + leaves > BATCH_DECODE:
            return _batch_full(nbytes, t)
        budget = _runner.Budget(DECODE_FACTOR * nbytes + DECODE_FLOOR, deadline)
        try:
            value = decode_value(msg.get("v"), budget)
            if batch is not None:
                held = leaves + budget.total - budget.left
                if batch.decoded_bytes + held > BATCH_DECODE:
                    return _batch_full(nbytes, t)
                batch.decoded_bytes += held
            return Outcome(Status.OK, value, seconds=t)
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
        return Outcome(Status.ERROR, None, etype, emsg, t, Raised.of(msg.get("x")))
    return _violation(f"malformed result status {_short(s, 50)}")


def _batch_full(nbytes: int, t: float) -> Outcome:
    why = (
        f"the batch's results would hold more than {BATCH_DECODE} bytes in the parent "
        f"(this one's frame: {nbytes} bytes)"
    )
    return Outcome(Status.ERROR, None, "OutputTooLarge", why, t)


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


def _backstop_outcome(
    index: int, limit: float, lim: Limits, used: float, slept: float, queued: float
) -> Outcome:
    what = "loading the program" if index < 0 else "the input"
    why = (
        f"{what} slept or was blocked past the {lim.backstop(limit):g} s wall-clock backstop "
        f"({slept:.2f} s asleep or blocked, {used:.3f} s of CPU time, {queued:.2f} s waiting "
        "for a CPU; hard deadline); killed"
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


def _pump(poller: select.poll, fd: int, buf: bytearray, feed: _Feed | None, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for the child's result pipe (and for room in its input
    pipe while an input is only partly written); add what arrived to ``buf``. False once the
    result pipe has ended (the child is gone)."""
    for efd, _ in poller.poll(timeout * 1000):
        if efd == fd:
            chunk = os.read(fd, _want(buf))
            if not chunk:
                return False
            buf += chunk
        elif feed is not None and feed.flush():
            poller.unregister(feed.fd)
    return True


def _want(buf: bytearray) -> int:
    """How many bytes to ask the result pipe for: 64 KiB, or the rest of a larger frame whose
    header is here (at most _RECV_CAP). Asking for more than a frame needs costs an allocation
    of that size per read, which the allocator maps and unmaps (page faults on every frame)."""
    if len(buf) >= 4:
        left = int.from_bytes(buf[:4], "big") + 4 - len(buf)
        if left > _READ_SMALL:
            return min(left, _RECV_CAP)
    return _READ_SMALL


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
