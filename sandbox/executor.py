"""The trusted side of the sandbox: start the zygote, run batches, decide what happened.

One :class:`Sandbox` owns one zygote (a warm fork server started with a clean environment,
inside bubblewrap when available). :meth:`Sandbox.run` asks it for one confined child per
(program, input batch), reads that child's result frames from a dedicated pipe with a hard
deadline per input, and, when the child dies or hangs at input *k*, records *k* and resumes a
fresh child at *k + 1*, so every input gets its own exact outcome. ``run`` is thread-safe:
the evaluator calls it from several threads at once.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import utdebug.sandbox._runner as _runner
from utdebug.sandbox.clocks import _CpuClock, _Lane, _pid_of, _SchedStat
from utdebug.sandbox.collector import (
    _Budget,
    _Reader,
    _Stop,
)
from utdebug.sandbox.config import (
    PREIMPORT,
    LimitKind,
    Limits,
    ModuleContext,
    SandboxConfig,
    StagedTest,
)
from utdebug.sandbox.frames import (
    EncodedInputs,
    _Feed,
    _frame_body,
    _program_frame,
    _recv,
    _send,
    encode_inputs,
)
from utdebug.sandbox.layers import (
    CHILD_ENV,
    HINTS,
    Layer,
    LayerReport,
    SandboxUnavailable,
    plan,
    report,
)
from utdebug.sandbox.outcomes import (
    BatchResult,
    Outcome,
    SandboxError,
    Status,
    _describe_status,
    _not_read,
    _not_run,
)

# The zygote reads its code from stdin, so its command line stays short and says what it is.
BOOTSTRAP = "import sys; exec(compile(sys.stdin.buffer.read(), '<utdebug-runner>', 'exec'))"


@functools.cache
def runner_source() -> bytes:
    return Path(_runner.__file__).read_bytes()


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


UID_SLOTS = 4096
"""Children's uids cycle through ``uid_base + (0 .. 4094)``; ``uid_base + 4095`` probes."""


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
        program = _program_frame(code, entry_point, context, test)
        binds = _binds(context)
        start: int | None = 0
        while start is not None:  # one child, plus one more after each hang or crash
            start = self._run_child(program, enc, start, lim, res, budget, binds)
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
        binds: list[list[str]] | None = None,
    ) -> dict[str, Any]:
        """What the zygote needs to start a child: limits and counts, never the program, its
        entry point or its module context (those go to the child alone, see
        :func:`_program_frame`), so the zygote's memory, which every child inherits, holds
        nothing of any job; ``binds``: the folders the child's confinement binds
        (:attr:`ModuleContext.bind`, two paths each)."""
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
            "binds": binds or [],
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
        program: bytes,
        enc: EncodedInputs,
        start: int,
        lim: Limits,
        res: BatchResult,
        budget: _Budget,
        binds: list[list[str]] | None = None,
    ) -> int | None:
        """Run one child from ``start`` (``program``: its first frame, see
        :func:`_program_frame`); return where to resume, or None when done."""
        timeouts = sum(o.status is Status.TIMEOUT for o in res.outcomes)
        uid = self._take_uid()
        lane = _Lane.open()
        try:
            spin = _runner.SPIN if lane.spread else 0
            pid, fd, in_fd, pidfd = self._spawn(
                self._job(enc, start, lim, timeouts, uid, spin, binds)
            )
        except BaseException:
            lane.close()
            self._give_uid(uid)
            raise
        res.children += 1
        stop: _Stop | None = None
        load_failed: Outcome | None = None
        sched: _SchedStat | None = None
        clock: _CpuClock | None = None
        cost_clock: _CpuClock | None = None
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
                if clock is None:  # what the parent may spend reading it follows its CPU time
                    cost_clock = _CpuClock(host)
            if pidfd is not None:
                os.close(pidfd)
                pidfd = None
            feed = _Feed(in_fd, enc)
            feed.queue(program)
            reader = _Reader(
                fd, start, len(enc), lim, res, budget, clock, sched, feed, lane, cost_clock
            )
            load_failed = reader.run()
        except _Stop as s:
            stop = s
        finally:
            lane.close()
            if pidfd is not None:
                os.close(pidfd)
            if sched is not None:
                sched.close()
            for c in (clock, cost_clock):
                if c is not None:
                    c.close()
            os.close(in_fd)
            os.close(fd)
            stats = self._reap(pid)
            self._give_uid(uid)
            res.peak_rss_kb = max(res.peak_rss_kb, int(stats.get("maxrss_kb") or 0))
            res.cpu_seconds += float(stats.get("cpu") or 0.0)
        return _resume_at(res, len(enc), lim, load_failed, stop, stats)


def _binds(context: ModuleContext | None) -> list[list[str]]:
    """The job's per-child bind (:attr:`ModuleContext.bind`): two absolute paths."""
    if context is None or context.bind is None:
        return []
    src, dst = context.bind
    if not (os.path.isabs(src) and os.path.isabs(dst)):
        raise SandboxError(f"a bind needs absolute paths, got {context.bind!r}")
    return [[os.path.realpath(src), dst]]


def _resume_at(
    res: BatchResult,
    n: int,
    lim: Limits,
    load_failed: Outcome | None,
    stop: _Stop | None,
    stats: dict[str, Any],
) -> int | None:
    """Record how a child ended (``stats``: its wait status); return the input to resume at
    in a new child, or None when the batch is done."""
    if load_failed is not None:
        res.outcomes.extend([load_failed] * (n - len(res.outcomes)))
        return None
    if stop is None:
        return None
    outcome = stop.outcome
    if outcome.status is Status.CRASH and outcome.error is None:
        outcome = Outcome(Status.CRASH, None, "Crash", _describe_status(stats), outcome.seconds)
    if stop.index >= n:  # every input has its outcome; only the 'end' frame is missing
        res.notes.append(f"after the last input: {outcome.error_type}: {outcome.error}")
        return None
    if stop.index < 0:  # died or hung while loading: every remaining input shares it
        res.load_error = f"{outcome.error_type}: {outcome.error}"
        res.outcomes.extend([outcome] * (n - len(res.outcomes)))
        return None
    res.outcomes.append(outcome)
    if stop.budget_spent:
        _not_run(res, n, lim)
        return None
    if stop.costly:  # a program whose frames cost the parent more than its share gets no more
        _not_read(res, n)
        return None
    res.notes.append(f"input {stop.index}: {outcome.status.value}; resumed in a new child")
    return stop.index + 1


def _drain(stream: Any) -> None:
    try:
        while stream.read(65536):
            pass
    except (OSError, ValueError):
        pass
