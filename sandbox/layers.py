"""Which protection layers the sandbox can put around untrusted code on this machine.

The layers, outermost first (``utdebug doctor`` prints them):

- ``clean_env``: the zygote starts with an empty environment (no API keys, no dataset paths).
- ``mount``: the child sees a minimal file tree (``/usr``, the interpreter's folders
  read-only, a private ``/tmp``; nothing else): bubblewrap's, or, without bubblewrap and as
  root, one the zygote builds itself (a tmpfs root, ``pivot_root``, ``/proc`` with
  ``hidepid=2``).
- ``pidns``: a private PID namespace (bubblewrap): daemons die with the sandbox and
  ``kill(getppid())`` cannot reach the evaluator.
- ``netns``: a private network namespace with only ``lo``.
- ``uid_drop``: as root, ``setgroups([])``, ``setgid``, ``setuid`` to a sandbox uid per child
  (not needed, and reported as such, when utdebug itself does not run as root).
- ``seccomp``: a deny-list syscall filter (no sockets, no signals to others, no fork/exec,
  threads allowed); needs a libseccomp binding (``pyseccomp``) and ``libseccomp.so.2``.
- ``rlimits``: address space, CPU, file size, open files, no core dumps.
- ``session``: a new session and death with the parent (``PR_SET_PDEATHSIG``).
- ``ipc``: no System V IPC or POSIX message-queue object outlives a child or is seen by
  another: each child has its own IPC namespace, and seccomp denies those calls outright.
- ``scratch``: each child has its own size-capped ``/tmp`` (a fresh tmpfs in its own mount
  namespace, gone when it ends; its mount table reads as empty).
- ``tasks``: a cap on the tasks (processes and threads) a child holds: RLIMIT_NPROC, counted
  in the child's own user namespace (or, as root without one, per child uid).
- ``cpu_clock``: verdicts from the parent's own readings: it reads each child's CPU clock
  (through a pidfd) and its main thread's ``schedstat``, and sends the inputs one at a time
  (the child waits for each without using CPU time, so every charge is exact and no input is
  readable before its turn); the child's timer is a POSIX timer on its process CPU clock.

The last three come from the zygote's start-up probe (throw-away children that try them); they
need unprivileged user namespaces, or root without bubblewrap.

By default every layer is required; a missing one is an error that says how to get it, unless
the user opts in to weaker isolation (``allow_weak``: ``--allow-weak-sandbox`` or
``UTDEBUG_ALLOW_WEAK_SANDBOX=1``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from dataclasses import dataclass, field
from enum import StrEnum


class Layer(StrEnum):
    CLEAN_ENV = "clean_env"
    MOUNT = "mount"
    PIDNS = "pidns"
    NETNS = "netns"
    UID_DROP = "uid_drop"
    SECCOMP = "seccomp"
    RLIMITS = "rlimits"
    SESSION = "session"
    IPC = "ipc"
    SCRATCH = "scratch"
    TASKS = "tasks"
    CPU_CLOCK = "cpu_clock"


DEFAULT_REQUIRED = frozenset(Layer)

HINTS: dict[Layer, str] = {
    Layer.MOUNT: "install bubblewrap (apt-get install bubblewrap), or run as root",
    Layer.PIDNS: "install bubblewrap (apt-get install bubblewrap)",
    Layer.NETNS: "install bubblewrap, or run as root, to get a network namespace",
    Layer.SECCOMP: "pip install pyseccomp (needs the system's libseccomp2)",
    Layer.UID_DROP: "run as root so children can drop to a sandbox uid",
}
_USERNS_HINT = (
    "enable unprivileged user namespaces (sysctl user.max_user_namespaces > 0; on Debian "
    "kernel.unprivileged_userns_clone=1; on Ubuntu 24.04+ "
    "kernel.apparmor_restrict_unprivileged_userns=0), or run as root without bubblewrap"
)
HINTS[Layer.IPC] = _USERNS_HINT + ", or " + HINTS[Layer.SECCOMP]
HINTS[Layer.SCRATCH] = _USERNS_HINT
HINTS[Layer.TASKS] = _USERNS_HINT
HINTS[Layer.CPU_CLOCK] = (
    "needs Linux 5.3+ (pidfd_open), /proc/<pid>/schedstat (CONFIG_SCHED_INFO) and "
    "timer_create; or use wall-clock limits (--limit-kind wall)"
)


@dataclass(frozen=True, slots=True)
class LayerState:
    layer: Layer
    active: bool
    detail: str


@dataclass(frozen=True, slots=True)
class LayerReport:
    """What a started sandbox really has (confirmed by the zygote, not only predicted)."""

    states: tuple[LayerState, ...]
    mode: str
    """``bwrap``, ``root`` (root without bubblewrap: the zygote isolates itself) or ``plain``."""
    errors: tuple[str, ...] = ()

    def active(self) -> frozenset[Layer]:
        return frozenset(s.layer for s in self.states if s.active)

    def missing(self, required: frozenset[Layer]) -> list[LayerState]:
        return [s for s in self.states if s.layer in required and not s.active]

    def as_dict(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "layers": {
                s.layer.value: {"active": s.active, "detail": s.detail} for s in self.states
            },
            "errors": list(self.errors),
        }


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot give the isolation the user asked for."""


@dataclass(frozen=True, slots=True)
class Plan:
    """How the zygote will be started (decided before starting it)."""

    mode: str
    argv_prefix: tuple[str, ...]
    zygote_config: dict[str, object] = field(default_factory=dict)
    is_root: bool = False


def bwrap_path() -> str | None:
    return shutil.which("bwrap") or next(
        (p for p in ("/usr/bin/bwrap", "/usr/local/bin/bwrap") if os.access(p, os.X_OK)), None
    )


BWRAP_LAYERS = frozenset({Layer.MOUNT, Layer.PIDNS, Layer.NETNS})
"""Layers that bubblewrap gives (their hint is to install it)."""


def hint(layer: Layer, bwrap_used: bool) -> str:
    """What to do to get ``layer``; bubblewrap installed but not used (``--no-bwrap``) is
    said as such, never "install bubblewrap"."""
    if layer in BWRAP_LAYERS and not bwrap_used and bwrap_path() is not None:
        return "bubblewrap is installed but not used (--no-bwrap): drop --no-bwrap"
    return HINTS.get(layer, "")


def seccomp_binding() -> str | None:
    for name in ("pyseccomp", "seccomp"):
        if importlib.util.find_spec(name) is not None:
            return name
    return None


def interpreter_dirs() -> list[str]:
    """Folders the interpreter needs to start and import its packages, outermost only."""
    dirs = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    dirs |= {os.path.abspath(p) for p in (sys.prefix, sys.base_prefix)}
    return [d for d in outermost(list(dirs)) if not d.startswith("/usr/")]


def inside(path: str, roots: list[str]) -> bool:
    """``path`` is one of ``roots`` or lies under one of them."""
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def outermost(dirs: list[str], covered: list[str] | None = None) -> list[str]:
    """``dirs`` without the ones inside another (or inside ``covered``), shortest first."""
    out: list[str] = []
    for d in sorted(set(dirs), key=len):
        if not inside(d, [*(covered or []), *out]):
            out.append(d)
    return out


def visible_dirs(mounts: tuple[str, ...]) -> list[str]:
    """Host folders bound read-only besides ``/usr``: the interpreter's, then the mounts not
    already inside one of them."""
    interp = interpreter_dirs()
    return interp + outermost(list(mounts), ["/usr", *interp])


def _ancestors(path: str) -> list[str]:
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def bwrap_argv(bwrap: str, is_root: bool, mounts: tuple[str, ...] = ()) -> list[str]:
    argv = [
        bwrap,
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--cap-drop",
        "ALL",
    ]
    if is_root:
        # Real root, no user namespace: keep only what the zygote needs to drop each child to
        # its own uid and to kill it afterwards (bwrap's --uid inside a user namespace is
        # cosmetic for host files, so the real uid must change).
        argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_KILL"]
    else:
        argv += ["--unshare-user"]
    argv += ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    for f in ("/etc/ld.so.cache", "/etc/localtime"):
        argv += ["--ro-bind-try", f, f]
    # /tmp first: an interpreter (a venv in a checkout) may live under /tmp, and a later
    # --tmpfs /tmp would cover its bind.
    argv += ["--perms", "1777", "--size", str(64 << 20), "--tmpfs", "/tmp"]
    made: set[str] = set()
    for d in visible_dirs(mounts):
        for a in _ancestors(d):
            if a not in made:
                argv += ["--perms", "0755", "--dir", a]
                made.add(a)
        argv += ["--ro-bind", d, d]
    argv += ["--dev", "/dev", "--proc", "/proc", "--chdir", "/tmp"]
    for k, v in CHILD_ENV.items():
        argv += ["--setenv", k, v]
    return [*argv, "--"]


CHILD_ENV = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "MALLOC_ARENA_MAX": "2",
}


def plan(use_bwrap: bool | None = None, mounts: tuple[str, ...] = ()) -> Plan:
    """Decide how to start the zygote on this machine (``mounts``: extra read-only folders)."""
    is_root = os.geteuid() == 0
    bwrap = bwrap_path() if use_bwrap is not False else None
    if use_bwrap and bwrap is None:
        raise SandboxUnavailable("bubblewrap was requested but `bwrap` is not installed")
    # Read-only folders under /tmp (a venv, a project copy): each child binds them again into
    # its own /tmp.
    tmp_keep = outermost([d for d in visible_dirs(mounts) if inside(d, ["/tmp"]) and d != "/tmp"])
    if bwrap is not None:
        argv = tuple(bwrap_argv(bwrap, is_root, mounts))
        return Plan("bwrap", argv, {"tmp_keep": tmp_keep}, is_root)
    if is_root:
        cfg: dict[str, object] = {
            "unshare_net": True,
            "unshare_ipc": True,
            "minimal_root": True,
            "keep": visible_dirs(mounts),
            "tmp_keep": tmp_keep,
        }
        return Plan("root", (), cfg, is_root)
    return Plan("plain", (), {"tmp_keep": tmp_keep}, is_root)


def report(plan_: Plan, info: dict[str, object]) -> LayerReport:
    """Combine the plan with what the started zygote says it has."""
    raw_errors = info.get("errors")
    errors = tuple(str(e) for e in raw_errors) if isinstance(raw_errors, list) else ()
    ifaces = info.get("ifaces")
    only_lo = isinstance(ifaces, list) and all(i == "lo" for i in ifaces)
    mode = plan_.mode
    bw = mode == "bwrap"
    mount_ok = bw or info.get("mount") == "minimal-root"
    states = [
        LayerState(Layer.CLEAN_ENV, True, "empty environment; no secrets or data paths passed"),
        LayerState(
            Layer.MOUNT,
            mount_ok,
            "bubblewrap: /usr + interpreter read-only, private /tmp"
            if bw
            else "private root (pivot_root): /usr + interpreter read-only, private /tmp, "
            "/proc with hidepid=2"
            if mount_ok
            else "none: " + hint(Layer.MOUNT, bw),
        ),
        LayerState(
            Layer.PIDNS, bw, "bubblewrap PID namespace" if bw else "none: " + hint(Layer.PIDNS, bw)
        ),
        LayerState(
            Layer.NETNS,
            only_lo,
            f"interfaces: {', '.join(ifaces)}"  # type: ignore[arg-type]
            if only_lo
            else f"none (interfaces: {ifaces}): " + hint(Layer.NETNS, bw),
        ),
        LayerState(
            Layer.UID_DROP,
            True,
            "children run as their own uid >= 1536, no groups"
            if plan_.is_root
            else f"not needed: utdebug runs as uid {os.geteuid()}",
        ),
        LayerState(
            Layer.SECCOMP,
            bool(info.get("seccomp")),
            "deny-list: sockets, signals, fork/exec, namespaces, memfd (threads allowed)"
            if info.get("seccomp")
            else "none: " + HINTS[Layer.SECCOMP],
        ),
        LayerState(Layer.RLIMITS, True, "address space, CPU, file size, open files, no core"),
        LayerState(Layer.SESSION, True, "new session, killed with the parent"),
        *_isolation_states(info),
        _cpu_clock_state(info),
    ]
    return LayerReport(tuple(states), mode, errors)


def _cpu_clock_state(info: dict[str, object]) -> LayerState:
    missing = [k for k in ("pidfd", "schedstat", "cpu_timer") if not info.get(k)]
    if missing:
        return LayerState(
            Layer.CPU_CLOCK, False, f"none ({', '.join(missing)}): " + HINTS[Layer.CPU_CLOCK]
        )
    return LayerState(
        Layer.CPU_CLOCK,
        True,
        "the parent's own readings of each child's CPU clock (pidfd) and schedstat decide; "
        "inputs sent one at a time; a POSIX timer on the process CPU clock",
    )


def _isolation_states(info: dict[str, object]) -> list[LayerState]:
    """The per-child layers, as the zygote's start-up probe found them."""
    raw = info.get("isolation")
    iso: dict[str, object] = raw if isinstance(raw, dict) else {}
    strategy = iso.get("strategy")
    how = {
        "userns": "the child's own user namespace",
        "root": "namespaces made as root before the uid drop",
    }.get(str(strategy), "")
    seccomp_ipc = bool(info.get("seccomp_ipc"))
    denied = "System V IPC and POSIX message-queue calls denied (seccomp)"
    if strategy and iso.get("ipc"):
        ipc = LayerState(
            Layer.IPC,
            True,
            f"a private IPC namespace per child ({how})" + (f"; {denied}" if seccomp_ipc else ""),
        )
    elif seccomp_ipc:
        ipc = LayerState(Layer.IPC, True, f"{denied}; no per-child IPC namespace")
    else:
        ipc = LayerState(Layer.IPC, False, "none: " + HINTS[Layer.IPC])
    if strategy and iso.get("scratch"):
        masked = (
            "; a /proc of its own (no other task's entry, mount table hidden)"
            if iso.get("mountinfo") and iso.get("proc_own")
            else "; mount table hidden"
            if iso.get("mountinfo")
            else ""
        )
        scratch = LayerState(
            Layer.SCRATCH,
            True,
            f"a fresh tmpfs /tmp per child, size-capped (Limits.scratch_mb), gone with it{masked}",
        )
    else:
        scratch = LayerState(
            Layer.SCRATCH, False, "none (one /tmp shared by all children): " + HINTS[Layer.SCRATCH]
        )
    if strategy == "userns" and iso.get("tasks"):
        tasks = LayerState(
            Layer.TASKS,
            True,
            "RLIMIT_NPROC (Limits.tasks) counted in the child's own user namespace",
        )
    elif strategy == "root" and iso.get("tasks"):
        tasks = LayerState(
            Layer.TASKS, True, "RLIMIT_NPROC (Limits.tasks) per child uid (one uid per live child)"
        )
    else:
        tasks = LayerState(Layer.TASKS, False, "none: " + HINTS[Layer.TASKS])
    return [ipc, scratch, tasks]
