"""Shared helpers of the sandbox test suites (a plain module; the tests import it).

- :func:`make_sandbox` starts a sandbox in one of two modes: ``"bwrap"`` (the default plan:
  bubblewrap when installed) or ``"root"`` (``use_bwrap=False``: the root-only fallback, a
  tmpfs mount namespace + a network namespace created by the zygote, no PID namespace).
  Every sandbox the suites start gets a *private* uid range (``uid_base``), so the scan for
  leftover sandbox processes cannot be confused by other sandboxes running on the same
  machine (other test sessions, benchmarks).
- :class:`HostGuard` plants canary files on the host, names paths a hostile program will try
  to create, and checks afterwards that the host was not touched: canaries intact, no new
  file, nothing owned by a sandbox uid in the shared writable folders, no sandbox process
  left alive.
"""

from __future__ import annotations

import os
import random
import shutil
import stat
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from utdebug.sandbox import (
    Layer,
    Limits,
    Outcome,
    Sandbox,
    SandboxConfig,
    SandboxUnavailable,
    Status,
)
from utdebug.sandbox.layers import seccomp_binding

ALL_LAYERS = frozenset(Layer)
IS_ROOT = os.geteuid() == 0
HAS_BWRAP = shutil.which("bwrap") is not None
HAS_SECCOMP_BINDING = seccomp_binding() is not None
UID_SPAN = 4096
"""The sandbox cycles its children's uids through ``uid_base + (0 .. 4095)``."""

REPO = Path(__file__).resolve().parents[2]
# The offline datasets (as tests/conftest.py finds them); they may be absent (then the checks
# that their content never reaches a child are vacuous, the "cannot open" checks still hold).
DATASET_DIR = Path(os.environ.get("UTDEBUG_DATA_DIR") or REPO.parent / "shared" / "datasets")
DATASET_FILE = DATASET_DIR / "MBPP+Fix_hard_test.jsonl"

# Fast limits for the suites: small per-input budgets keep the hard-deadline cases short.
FAST = Limits(per_input=1.0, load=5.0, memory_mb=1024, slack=0.5)

# The root fallback has no PID namespace; it must have every other layer.
FALLBACK_REQUIRED = ALL_LAYERS - {Layer.PIDNS}


def private_uid_base() -> int:
    """A uid range nobody else on this machine uses (well above any real or default uid)."""
    return 1_000_000 + random.randrange(0, 200_000) * UID_SPAN


def sandbox_config(mode: str, **kw: Any) -> SandboxConfig:
    kw.setdefault("uid_base", private_uid_base())
    if mode == "bwrap":
        return SandboxConfig(**kw)
    if mode == "root":
        # The brief's policy for the fallback: opt in to weak isolation, but require every
        # layer except the PID namespace (checked by :func:`check_fallback_layers`).
        kw.setdefault("allow_weak", True)
        kw.setdefault("required", FALLBACK_REQUIRED)
        return SandboxConfig(use_bwrap=False, **kw)
    raise ValueError(mode)


def skip_unless_mode_possible(mode: str) -> None:
    if mode == "bwrap" and not HAS_BWRAP:
        pytest.skip("bubblewrap (`bwrap`) is not installed on this machine")
    if mode == "root" and not IS_ROOT:
        pytest.skip("the root fallback needs root (it builds a mount namespace itself)")


def check_fallback_layers(sb: Sandbox) -> None:
    """With allow_weak the sandbox starts whatever it has: insist on the real layers."""
    rep = sb.layers
    assert rep.mode == "root", rep.as_dict()
    missing = FALLBACK_REQUIRED - rep.active()
    assert not missing, f"the root fallback lacks {sorted(missing)}: {rep.as_dict()}"


def make_sandbox(mode: str, **kw: Any) -> Sandbox:
    """Start a sandbox in ``mode`` (skips when the mode cannot exist on this machine)."""
    skip_unless_mode_possible(mode)
    sb = Sandbox(sandbox_config(mode, **kw))
    try:
        sb.start()
    except SandboxUnavailable as e:
        if mode == "bwrap" and not (IS_ROOT and HAS_SECCOMP_BINDING):
            pytest.skip(f"the full sandbox is not available here: {e}")
        raise
    if mode == "root":
        try:
            check_fallback_layers(sb)
        except BaseException:
            sb.close()
            raise
    return sb


def run1(
    sb: Sandbox, code: str, args: list[Any], limits: Limits = FAST, entry: str = "f"
) -> Outcome:
    """Run one input; return its Outcome."""
    res = sb.run(code, entry, [args], limits)
    assert len(res.outcomes) == 1, res
    return res.outcomes[0]


def assert_sandbox_works(sb: Sandbox) -> None:
    """The evaluator and the sandbox are still fine: a normal program runs correctly."""
    res = sb.run("def f(x):\n    return x * 2 + 1\n", "f", [[20], [-3]], FAST)
    assert [o.status for o in res.outcomes] == [Status.OK, Status.OK], res
    assert [o.value for o in res.outcomes] == [41, -5], res


# ---------------------------------------------------------------------------------------------
# Host-side checks
# ---------------------------------------------------------------------------------------------


def _status_uids(pid: str) -> tuple[list[int], str] | None:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:  # gone, or not readable
        return None
    uids: list[int] = []
    name = "?"
    state = "?"
    for line in text.splitlines():
        if line.startswith("Uid:"):
            uids = [int(x) for x in line.split()[1:]]
        elif line.startswith("Name:"):
            name = line.split(None, 1)[1] if " " in line or "\t" in line else "?"
        elif line.startswith("State:"):
            state = line.split(None, 1)[1]
    return uids, f"{name} ({state})"


def processes_with_uid(lo: int, hi: int) -> list[tuple[int, list[int], str]]:
    """Host processes whose real, effective, saved or fs uid is in ``[lo, hi)``."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        got = _status_uids(pid)
        if got is None:
            continue
        uids, what = got
        if any(lo <= u < hi for u in uids):
            found.append((int(pid), uids, what))
    return found


def assert_no_sandbox_processes(sb: Sandbox, grace: float = 3.0) -> None:
    """No process of this sandbox's uid range is alive on the host once a batch is done.

    (This is the brief's "no process of uid >= 1536" check, narrowed to the sandbox's own
    private range so that other sandboxes running on the machine cannot make it flaky.)
    """
    lo = sb.config.uid_base
    deadline = time.monotonic() + grace
    while True:
        left = processes_with_uid(lo, lo + UID_SPAN)
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert not left, f"sandbox processes still alive on the host: {left}"


def files_owned_by(lo: int, hi: int, dirs: Iterable[Path]) -> list[str]:
    """Entries (one level deep) of ``dirs`` owned by a uid in ``[lo, hi)``."""
    out = []
    for d in dirs:
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            try:
                st = os.lstat(d / n)
            except OSError:
                continue
            if lo <= st.st_uid < hi or lo <= st.st_gid < hi:
                out.append(str(d / n))
    return out


WATCHED_DIRS = [Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"), REPO, REPO.parent, Path("/")]


@dataclass
class HostGuard:
    """Canaries on the host and the paths a hostile program will try to create.

    ``canaries``: world-writable files (mode 0666) in /tmp, /var/tmp and /dev/shm, plus an
    owner-only (0600) one: only the mount layer keeps a program from deleting the former.
    ``forbidden``: paths that must not exist on the host afterwards.
    """

    token: str
    canaries: dict[str, bytes] = field(default_factory=dict)
    forbidden: list[str] = field(default_factory=list)
    _cleanup: list[str] = field(default_factory=list)

    @classmethod
    def plant(cls) -> HostGuard:
        tok = uuid.uuid4().hex[:16]
        g = cls(tok)
        for d in ("/tmp", "/var/tmp", "/dev/shm"):
            if not os.path.isdir(d):
                continue
            p = f"{d}/utdebug-canary-{tok}"
            data = f"canary {tok} in {d}\n".encode()
            with open(p, "wb") as fh:
                fh.write(data)
            os.chmod(p, 0o666)
            g.canaries[p] = data
            g._cleanup.append(p)
        p = f"/tmp/utdebug-canary-root-{tok}"
        data = f"root-only canary {tok}\n".encode()
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, data)
        os.close(fd)
        g.canaries[p] = data
        g._cleanup.append(p)
        # A world-writable directory the program may try to drop files into.
        dpath = f"/tmp/utdebug-canary-dir-{tok}"
        os.mkdir(dpath)
        os.chmod(dpath, 0o1777)
        g._cleanup.append(dpath)
        g.forbidden = [
            f"/tmp/utdebug-pwn-{tok}",
            f"/var/tmp/utdebug-pwn-{tok}",
            f"/dev/shm/utdebug-pwn-{tok}",
            f"{dpath}/utdebug-pwn-{tok}",
            f"{REPO}/utdebug-pwn-{tok}",
            f"{REPO.parent}/utdebug-pwn-{tok}",  # the test's cwd's parent (/work)
            f"/utdebug-pwn-{tok}",  # the child's cwd (/tmp)'s parent
            f"{REPO}/.venv/utdebug-pwn-{tok}",  # read-only bound into bubblewrap
            f"/root/utdebug-pwn-{tok}",
        ]
        return g

    @property
    def canary_dir(self) -> str:
        return f"/tmp/utdebug-canary-dir-{self.token}"

    def check(self, uid_lo: int | None = None) -> None:
        problems = []
        for p, data in self.canaries.items():
            try:
                got = Path(p).read_bytes()
            except OSError as e:
                problems.append(f"canary {p} is gone ({e})")
                continue
            if got != data:
                problems.append(f"canary {p} was changed: {got[:80]!r}")
            st = os.stat(p)
            if st.st_uid != os.geteuid():
                problems.append(f"canary {p} changed owner to {st.st_uid}")
        for p in self.forbidden:
            if os.path.lexists(p):
                problems.append(f"the program created {p} on the host")
        try:
            extra = os.listdir(self.canary_dir)
        except OSError as e:
            problems.append(f"canary dir {self.canary_dir}: {e}")
        else:
            if extra:
                problems.append(f"new files in {self.canary_dir}: {extra}")
        if uid_lo is not None:
            owned = files_owned_by(uid_lo, uid_lo + UID_SPAN, WATCHED_DIRS)
            if owned:
                problems.append(f"files owned by a sandbox uid on the host: {owned}")
        assert not problems, "the host was touched: " + "; ".join(problems)

    def remove(self) -> None:
        extra = [p + sfx for p in [*self.forbidden, *self.canaries] for sfx in (".d", ".moved")]
        for p in [*self.forbidden, *extra, *self._cleanup]:
            try:
                if os.path.isdir(p) and not os.path.islink(p):
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    os.unlink(p)
            except OSError:
                pass


def file_mode(path: str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


# ---------------------------------------------------------------------------------------------
# Time in tests that must hold on a loaded machine
# ---------------------------------------------------------------------------------------------

ROOM = 4.0
"""How much longer than on an idle machine a wall-clock bound in a test allows: on a machine
shared with other test runs, CI jobs or four CPU hogs per core, a child gets a fraction of a
core. Where CPU time is what is meant, the tests check CPU time (:func:`cpu_stopped`); the
wall-clock bound is a backstop that only catches a real hang."""


def roomy(seconds: float) -> float:
    """A wall-clock bound of ``seconds`` on an idle machine, with room for a loaded one."""
    return ROOM * seconds + 2.0


def cpu_stopped(res: Any, lim: Limits, seconds: float) -> None:
    """A hang was stopped at its deadline of ``seconds`` (+ slack) of its limit's kind: under
    CPU-time limits the batch's children used little more CPU time than that, whatever the
    load (the wall time only gets a roomy backstop, checked by the caller)."""
    from utdebug.sandbox import LimitKind

    if lim.kind is LimitKind.CPU:
        assert res.cpu_seconds < seconds + lim.slack + 1.0, res


def tmp_skeleton() -> list[str]:
    """Names in a child's ``/tmp`` that are not scratch space: the first folders of the
    read-only folders under ``/tmp`` it needs (a checkout's virtual environment there)."""
    from utdebug.sandbox.layers import plan

    keep = plan().zygote_config.get("tmp_keep") or []
    return sorted({d[len("/tmp/") :].split("/")[0] for d in keep})  # type: ignore[attr-defined]
