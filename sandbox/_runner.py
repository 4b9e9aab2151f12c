"""The untrusted side of the sandbox: a fork server ("zygote") and its confined children.

This file is self-contained (standard library only, no utdebug imports) because the parent
starts the zygote as ``python -I -c <this file's source>`` inside the confinement, where the
utdebug package is not visible. The parent also imports it, to share the value codec.

Protocol (every message is a frame: 4-byte big-endian length + UTF-8 JSON):

parent -> zygote, on a Unix socket:
  {"op": "spawn", "job": {...}}      reply {"pid": N} with the read end of the child's result pipe
                                     attached (SCM_RIGHTS)
  {"op": "reap", "pid": N}           SIGKILL + wait4; reply {"status", "maxrss_kb", "cpu"}
  {"op": "info"}                     reply: what this zygote could set up
child -> parent, on its own result pipe (the only fd it keeps):
  {"k": "load", "ok": bool, "t": s[, "e": [type, msg], "timeout": bool]}
  {"k": "r", "i": index, "s": "ok"|"exc"|"timeout", "t": s[, "v": value][, "e": [type, msg]]}
  {"k": "end", "out": bytes printed}

The child never receives expected outputs; it only reports what the program returned. The
parent decodes plain values, checks ordering and sizes, and decides every verdict.
"""

from __future__ import annotations

import base64
import builtins
import contextlib
import json
import math
import os
import resource
import signal
import struct
import sys
import time

# ---------------------------------------------------------------------------------------------
# Value codec: tagged JSON of plain types. Encoding reads values through the *base* types'
# methods, so a subclass cannot lie about equality: the parent rebuilds plain values and
# compares those. Builtins are bound at import, before any untrusted code can patch them.
# ---------------------------------------------------------------------------------------------

MAX_DEPTH = 100
_BIG = 1 << 62


class EncodeError(Exception):
    pass


def encode(
    value: object,
    _depth: int = 0,
    _type=type,
    _int=int,
    _float=float,
    _str=str,
    _isinstance=isinstance,
    _isfinite=math.isfinite,
    _b64=base64.b64encode,
) -> object:
    """Encode ``value`` as JSON-able plain data with tags for non-JSON types."""
    if _depth > MAX_DEPTH:
        raise EncodeError("value nested too deeply")
    t = _type(value)
    if value is None or t is bool:
        return value
    if _isinstance(value, _int) and t is not bool:
        v = _int.__int__(value)  # the stored integer, whatever the subclass says
        if -_BIG < v < _BIG:
            return v
        return {"$int": v.__index__().__format__("x") if v >= 0 else "-" + (-v).__format__("x")}
    if _isinstance(value, _float):
        f = _float.__float__(value)
        if _isfinite(f):
            return f
        return {"$float": "nan" if f != f else ("inf" if f > 0 else "-inf")}
    if _isinstance(value, _str):
        return _str.__str__(value)
    d = _depth + 1
    if _isinstance(value, list):
        return [encode(x, d) for x in list.__iter__(value)]
    if _isinstance(value, tuple):
        return {"$tuple": [encode(x, d) for x in tuple.__iter__(value)]}
    if _isinstance(value, frozenset):
        return {"$frozenset": [encode(x, d) for x in frozenset.__iter__(value)]}
    if _isinstance(value, set):
        return {"$set": [encode(x, d) for x in set.__iter__(value)]}
    if _isinstance(value, dict):
        return {"$dict": [[encode(k, d), encode(v, d)] for k, v in dict.items(value)]}
    if _isinstance(value, complex):
        c = complex.__complex__(value)
        return {"$complex": [encode(c.real, d), encode(c.imag, d)]}
    if _isinstance(value, bytes):
        return {"$bytes": _b64(bytes(value)).decode("ascii")}
    if _isinstance(value, bytearray):
        return {"$bytearray": _b64(bytes(value)).decode("ascii")}
    np = sys.modules.get("numpy")
    if np is not None:
        if _isinstance(value, np.ndarray) and value.dtype.kind in "biufcU":
            return {
                "$ndarray": {
                    "dtype": value.dtype.str,
                    "shape": list(value.shape),
                    "v": encode(value.tolist(), d),
                }
            }
        if _isinstance(value, np.generic) and value.dtype.kind in "biufcU":
            return {"$np": [value.dtype.str, encode(value.item(), d)]}
    return {"$opaque": [_opaque_name(value), _opaque_text(value)]}


def _opaque_name(value: object) -> str:
    try:
        t = type(value)
        return f"{t.__module__}.{t.__qualname__}"[:200]
    except BaseException:
        return "<unknown type>"


def _opaque_text(value: object) -> str:
    try:
        return str(repr(value))[:500]
    except BaseException:
        return f"<{_opaque_name(value)} object>"


def no_opaque(type_name: str, text: str) -> object:
    raise ValueError(f"an opaque {type_name} cannot be an input")


def decode(data: object, make_opaque=no_opaque, _depth: int = 0) -> object:
    """Inverse of :func:`encode`. Raises ValueError on anything that is not a known form.

    ``make_opaque(type_name, text)`` builds the stand-in for an unencodable result.
    """
    if _depth > MAX_DEPTH + 2:
        raise ValueError("value nested too deeply")
    t = type(data)
    if data is None or t in (bool, int, float, str):
        return data
    d = _depth + 1
    if t is list:
        return [decode(x, make_opaque, d) for x in data]  # type: ignore[attr-defined]
    if t is not dict or len(data) != 1:  # type: ignore[arg-type]
        raise ValueError(f"unexpected {t.__name__} in a result")
    ((tag, body),) = data.items()  # type: ignore[attr-defined]
    if tag == "$int" and type(body) is str:
        neg = body.startswith("-")
        v = int(body[1:] if neg else body, 16)
        return -v if neg else v
    if tag == "$float" and body in ("nan", "inf", "-inf"):
        return float(body)
    if type(body) is not list and tag != "$ndarray":
        if tag in ("$bytes", "$bytearray") and type(body) is str:
            raw = base64.b64decode(body.encode("ascii"), validate=True)
            return raw if tag == "$bytes" else bytearray(raw)
        raise ValueError(f"malformed {tag!r} in a result")
    if tag == "$tuple":
        return tuple(decode(x, make_opaque, d) for x in body)
    if tag == "$set":
        return set(_distinct_hashes([decode(x, make_opaque, d) for x in body]))
    if tag == "$frozenset":
        return frozenset(_distinct_hashes([decode(x, make_opaque, d) for x in body]))
    if tag == "$dict":
        if not all(type(pair) is list and len(pair) == 2 for pair in body):
            raise ValueError("malformed $dict in a result")
        keys = _distinct_hashes([decode(pair[0], make_opaque, d) for pair in body])
        return dict(zip(keys, (decode(pair[1], make_opaque, d) for pair in body), strict=True))
    if tag == "$complex" and len(body) == 2:
        re_, im = (decode(x, make_opaque, d) for x in body)
        if type(re_) is not float or type(im) is not float:
            raise ValueError("malformed $complex in a result")
        return complex(re_, im)
    if tag == "$opaque" and len(body) == 2 and all(type(x) is str for x in body):
        return make_opaque(body[0], body[1])
    if tag == "$np" and len(body) == 2 and type(body[0]) is str:
        import numpy as np

        value = decode(body[1], make_opaque, d)
        if body[0] in NUMERIC_DTYPES:
            return np.dtype(body[0]).type(value)
        if body[0].lstrip("<>|=").startswith("U") and type(value) is str:
            return np.str_(value)
        raise ValueError(f"numpy scalar of dtype {body[0][:20]!r} not accepted")
    if tag == "$ndarray" and type(body) is dict:
        return _decode_ndarray(body, make_opaque, d)
    raise ValueError(f"unknown tag {tag!r} in a result")


NUMERIC_DTYPES = frozenset(
    p + c
    for p in "<>|="
    for c in ("b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16")
)


def _distinct_hashes(items: list) -> list:  # type: ignore[type-arg]
    """Refuse elements whose hashes collide en masse (a real set or dict never sends those).

    Unequal values with equal hashes make building a set quadratic: a hostile child could
    otherwise spend the parent's CPU outside every deadline.
    """
    if len(items) > 256 and len({hash(x) for x in items}) < len(items) // 2:
        raise ValueError("a set or dict whose elements' hashes collide")
    return items


def _decode_ndarray(body: dict, make_opaque, depth: int) -> object:  # type: ignore[type-arg]
    import numpy as np

    dtype, shape = body.get("dtype"), body.get("shape")
    if type(dtype) is not str or type(shape) is not list or len(shape) > 32:
        raise ValueError("malformed $ndarray in a result")
    if not all(type(k) is int and k >= 0 for k in shape):
        raise ValueError("malformed $ndarray shape in a result")
    data = decode(body.get("v"), make_opaque, depth)
    if dtype in NUMERIC_DTYPES:
        arr = np.array(data, dtype=np.dtype(dtype))
    elif dtype.lstrip("<>|=").startswith("U"):
        # The width comes from the data, never from the child's word (a '<U500000000' would
        # make the parent allocate gigabytes).
        arr = np.array(data, dtype=str)
    else:
        raise ValueError(f"ndarray of dtype {dtype[:20]!r} not accepted")
    if math.prod(shape) != arr.size:
        raise ValueError("$ndarray shape does not match its data")
    return arr.reshape(tuple(shape))


# ---------------------------------------------------------------------------------------------
# Framing
# ---------------------------------------------------------------------------------------------

_HDR = struct.Struct(">I")


def pack(obj: object) -> bytes:
    raw = json.dumps(obj, separators=(",", ":"), allow_nan=False).encode("utf-8")
    return _HDR.pack(len(raw)) + raw


def _write_all(fd: int, data: bytes, _write=os.write) -> None:
    view = memoryview(data)
    while view:
        n = _write(fd, view)
        view = view[n:]


# ---------------------------------------------------------------------------------------------
# Linux confinement helpers (ctypes; Python 3.11 has no os.unshare)
# ---------------------------------------------------------------------------------------------

PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
MNT_DETACH = 2

_libc = None


def libc():
    global _libc
    if _libc is None:
        import ctypes

        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _check(ret: int, what: str) -> None:
    if ret != 0:
        import ctypes

        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def prctl(option: int, arg: int) -> None:
    _check(libc().prctl(option, arg, 0, 0, 0), "prctl")


def unshare(flags: int) -> None:
    _check(libc().unshare(flags), "unshare")


def mount(src: str, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    c = libc()
    _check(
        c.mount(
            src.encode(),
            target.encode(),
            fstype.encode() if fstype else None,
            flags,
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def build_minimal_root(keep: list[str]) -> None:
    """Fallback file-system isolation when bubblewrap is absent (root only).

    In a new mount namespace, build a minimal tree on a tmpfs (what bubblewrap would build):
    ``/usr``, the top-level library links, ``/etc/ld.so.cache`` and the interpreter's folders
    (``keep``) read-only; a few device nodes; a private ``/tmp`` (64 MiB); a fresh ``/proc``
    with ``hidepid=2`` (children see only their own processes); then ``pivot_root`` into it.
    Nothing else of the host (home folders, data, sockets, the repository) exists there.
    """
    unshare(CLONE_NEWNS)
    mount("none", "/", None, MS_REC | MS_PRIVATE)
    # The new root is a tmpfs laid, in this namespace only, over a host folder that holds none
    # of the folders to bind (a venv may live under /tmp, for example).
    new = next(
        d
        for d in ("/mnt", "/media", "/srv", "/opt", "/var/tmp", "/tmp", "/home")
        if os.path.isdir(d) and not os.path.islink(d) and not any(_under(k, d) for k in keep)
    )
    mount("tmpfs", new, "tmpfs", MS_NOSUID, "mode=0755,size=64m")

    def bind(src: str, readonly: bool = True) -> None:
        dst = new + src
        if os.path.isdir(src):
            os.makedirs(dst, 0o755, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(dst), 0o755, exist_ok=True)
            with open(dst, "a"):
                pass
        mount(src, dst, None, MS_BIND | MS_REC)
        if readonly:
            mount("none", dst, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID)

    bind("/usr")
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            os.symlink(os.readlink(top), new + top)
        elif os.path.isdir(top):
            bind(top)
    for f in ("/etc/ld.so.cache", "/etc/localtime"):
        if os.path.isfile(f):
            bind(f)
    for d in keep:
        if os.path.isdir(d) and not d.startswith("/usr/"):
            bind(d)
    for dev in ("null", "zero", "full", "random", "urandom"):
        bind("/dev/" + dev, readonly=False)
    os.mkdir(new + "/proc", 0o555)
    mount("proc", new + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2")
    os.makedirs(new + "/tmp", exist_ok=True)  # exists already when a kept folder is under /tmp
    os.chmod(new + "/tmp", 0o1777)
    os.mkdir(new + "/.old")
    _check(
        libc().syscall(_SYS_PIVOT_ROOT[_machine()], new.encode(), (new + "/.old").encode()),
        "pivot_root",
    )
    os.chdir("/")
    _check(libc().umount2(b"/.old", MNT_DETACH), "umount the old root")
    os.rmdir("/.old")


_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41}


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _machine() -> str:
    return os.uname().machine


def seccomp_filter():
    """A deny-list filter (default allow; listed calls fail with EPERM, clone3 with ENOSYS).

    Denied: sockets, ptrace and cross-process memory, bpf/perf/userfaultfd/keyrings, mounts and
    namespaces, module and kexec calls, personality, every way to signal a process, new
    sessions and process groups, fork/vfork/execve, and clone without CLONE_THREAD (threads
    still work). Returns None when no libseccomp binding is importable.
    """
    try:
        import pyseccomp as sc
    except Exception:
        try:
            import seccomp as sc  # Debian's python3-seccomp
        except Exception:
            return None
    import errno

    f = sc.SyscallFilter(defaction=sc.ALLOW)
    eperm = sc.ERRNO(errno.EPERM)
    deny = [
        "socket", "socketpair", "io_uring_setup", "io_uring_enter", "io_uring_register",
        "ptrace", "process_vm_readv", "process_vm_writev", "bpf", "perf_event_open",
        "userfaultfd", "add_key", "request_key", "keyctl", "mount", "umount2", "pivot_root",
        "chroot", "unshare", "setns", "kexec_load", "kexec_file_load", "init_module",
        "finit_module", "delete_module", "personality", "kill", "tkill", "tgkill",
        "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open", "pidfd_send_signal",
        "pidfd_getfd", "setsid", "setpgid", "fork", "vfork", "execve", "execveat",
        "open_by_handle_at", "name_to_handle_at", "mount_setattr", "move_mount", "fsopen",
        "fsmount", "open_tree", "quotactl", "swapon", "swapoff", "reboot", "acct",
        "settimeofday", "clock_settime", "adjtimex", "syslog", "vhangup",
    ]  # fmt: skip
    for name in deny:
        try:
            f.add_rule(eperm, name)
        except Exception:
            continue
    clone_thread = 0x00010000
    f.add_rule(eperm, "clone", sc.Arg(0, sc.MASKED_EQ, clone_thread, 0))
    with contextlib.suppress(Exception):  # a libseccomp too old to know clone3
        f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")  # glibc falls back to clone
    return f


# ---------------------------------------------------------------------------------------------
# The child: confine, load the program, run the inputs, report
# ---------------------------------------------------------------------------------------------


class _Timeout(BaseException):
    pass


def _on_alarm(signum, frame):
    raise _Timeout


class _Sink:
    """stdout/stderr replacement: swallows everything, counts the bytes."""

    def __init__(self) -> None:
        self.count = 0

    def write(self, s: object) -> int:
        try:
            n = len(s)  # type: ignore[arg-type]
        except Exception:
            n = 0
        self.count += n
        return n

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def _exc_info(e: BaseException) -> list[str]:
    try:
        name = type(e).__name__
    except BaseException:
        name = "Exception"
    try:
        msg = str(e)[:1000]
    except BaseException:
        msg = "<unprintable>"
    return [str(name)[:200], msg]


def confine(job: dict, result_fd: int, state: dict) -> None:  # type: ignore[type-arg]
    """Runs in the forked child, before any untrusted byte. Order matters."""
    os.setsid()
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != state["zygote_pid"]:  # the zygote died between fork and prctl
        os._exit(1)
    devnull = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    keep = sorted({0, 1, 2, result_fd})
    lo = 3
    for fd in keep[3:]:
        os.closerange(lo, fd)
        lo = fd + 1
    os.closerange(lo, 65536)
    lim = job["limits"]
    mem = int(lim["memory_mb"]) << 20
    cpu = math.ceil(lim["cpu_s"])
    for res, soft, hard in (
        (resource.RLIMIT_AS, mem, mem),
        (resource.RLIMIT_CPU, cpu, cpu + 2),
        (resource.RLIMIT_FSIZE, int(lim["fsize_mb"]) << 20, int(lim["fsize_mb"]) << 20),
        (resource.RLIMIT_NOFILE, 64, 64),
        (resource.RLIMIT_CORE, 0, 0),
    ):
        resource.setrlimit(res, (soft, hard))
    uid = job.get("uid")
    if uid is not None and os.getuid() == 0:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        try:
            os.setuid(0)
        except PermissionError:
            pass
        else:
            os._exit(3)
    os.chdir("/tmp" if os.path.isdir("/tmp") else "/")
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    flt = state.get("seccomp")
    if flt is not None:
        flt.load()


def run_job(job: dict, fd: int) -> None:  # type: ignore[type-arg]
    """Load the program and run the inputs; one frame per input, strictly in order."""
    sink = _Sink()
    sys.stdout = sys.stderr = sink  # type: ignore[assignment]
    sys.stdin = None  # type: ignore[assignment]
    signal.signal(signal.SIGALRM, _on_alarm)
    setitimer, real = signal.setitimer, signal.ITIMER_REAL
    now = time.perf_counter
    write, dumps, loads = _write_all, json.dumps, json.loads
    hdr = _HDR.pack
    cap = int(job["limits"]["frame_cap"])
    limits = job["per_input"]
    sys.set_int_max_str_digits(0)

    ctx = job.get("context")
    g: dict = {"__name__": "solution", "__builtins__": builtins}  # type: ignore[type-arg]
    if ctx:  # a module of the user's project (sandbox.ModuleContext)
        mod = type(sys)(ctx["name"])
        g = mod.__dict__
        g.update({"__builtins__": builtins, "__package__": ctx.get("package")})
        if ctx.get("file"):
            g["__file__"] = ctx["file"]
    t0 = now()
    setitimer(real, float(job["limits"]["load_s"]))
    try:
        if ctx:
            sys.modules[ctx["name"]] = mod
            sys.path[:0] = list(ctx.get("path") or [])
            if ctx.get("cwd"):
                os.chdir(ctx["cwd"])
        exec(job["prelude"], g)
        exec(compile(job["code"], "<program>", "exec"), g)
        fn = g.get(job["entry_point"])
        if not callable(fn):
            raise NameError(f"the program defines no function {job['entry_point']!r}")
        setitimer(real, 0)
        load = {"k": "load", "ok": True, "t": now() - t0}
    except _Timeout:
        load = {"k": "load", "ok": False, "timeout": True, "t": now() - t0, "e": ["Timeout", ""]}
    except BaseException as e:
        setitimer(real, 0)
        load = {"k": "load", "ok": False, "t": now() - t0, "e": _exc_info(e)}
    write(fd, pack(load))
    if not load["ok"]:
        os._exit(0)

    start = int(job["start"])
    cut = job.get("cut")  # [after N timeouts, at most S seconds per input] or None
    timeouts = int(job.get("timeouts") or 0)
    for j, text in enumerate(job["inputs"]):
        i = start + j
        rec: dict = {"k": "r", "i": i}  # type: ignore[type-arg]
        limit = float(limits[j])
        if cut is not None and timeouts >= int(cut[0]) and float(cut[1]) < limit:
            limit = float(cut[1])
            rec["c"] = 1
        try:
            args = decode(loads(text))
            t1 = now()
            setitimer(real, limit)
            try:
                out = fn(*args)
            finally:
                setitimer(real, 0)
                rec["t"] = now() - t1
            setitimer(real, limit)
            try:
                rec["v"] = encode(out)
            finally:
                setitimer(real, 0)
            rec["s"] = "ok"
        except _Timeout:
            rec["s"] = "timeout"
            timeouts += 1
        except BaseException as e:
            rec["s"] = "exc"
            rec["e"] = _exc_info(e)
        rec.setdefault("t", 0.0)
        try:
            raw = dumps(rec, separators=(",", ":"), allow_nan=False).encode("utf-8")
        except BaseException as e:
            raw = dumps({"k": "r", "i": i, "s": "exc", "t": rec["t"], "e": _exc_info(e)}).encode()
        if len(raw) > cap:
            small = {"k": "r", "i": i, "s": "exc", "t": rec["t"]}
            small["e"] = ["OutputTooLarge", f"result is {len(raw)} bytes; the cap is {cap}"]
            raw = dumps(small).encode()
        write(fd, hdr(len(raw)) + raw)
    write(fd, pack({"k": "end", "out": sink.count}))
    os._exit(0)


def child_main(job: dict, fd: int, state: dict) -> None:  # type: ignore[type-arg]
    try:
        confine(job, fd, state)
    except BaseException as e:
        try:
            _write_all(fd, pack({"k": "confine-failed", "e": _exc_info(e)}))
        finally:
            os._exit(4)
    try:
        run_job(job, fd)
    finally:
        os._exit(0)


# ---------------------------------------------------------------------------------------------
# The zygote
# ---------------------------------------------------------------------------------------------


def zygote(ctl_fd: int, config: dict) -> None:  # type: ignore[type-arg]
    import socket

    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    state: dict = {"zygote_pid": os.getpid()}  # type: ignore[type-arg]
    info: dict = {"pid": os.getpid(), "uid": os.getuid(), "errors": []}  # type: ignore[type-arg]
    if config.get("unshare_net"):
        try:
            unshare(CLONE_NEWNET)
            info["netns"] = True
        except OSError as e:
            info["errors"].append(f"netns: {e}")
    if config.get("minimal_root"):
        try:
            build_minimal_root(config["keep"])
            info["mount"] = "minimal-root"
        except (OSError, KeyError) as e:
            info["errors"].append(f"mount: {e}")
    try:
        info["ifaces"] = [name for _, name in socket.if_nameindex()]
    except OSError as e:
        info["ifaces"] = None
        info["errors"].append(f"interfaces: {e}")
    for name in config.get("preimport", []):
        try:
            __import__(name)
        except Exception as e:
            info["errors"].append(f"preimport {name}: {e}")
    try:
        state["seccomp"] = seccomp_filter()
        info["seccomp"] = state["seccomp"] is not None
    except Exception as e:
        info["seccomp"] = False
        info["errors"].append(f"seccomp: {e}")
    ctl = socket.socket(fileno=ctl_fd)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    while True:
        hdr = _recv_exact(ctl, 4)
        if hdr is None:
            os._exit(0)
        body = _recv_exact(ctl, _HDR.unpack(hdr)[0])
        if body is None:
            os._exit(0)
        msg = json.loads(body)
        op = msg.get("op")
        if op == "spawn":
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                ctl.close()
                os.close(r)
                child_main(msg["job"], w, state)
            os.close(w)
            socket.send_fds(ctl, [pack({"pid": pid})], [r])
            os.close(r)
        elif op == "reap":
            pid = int(msg["pid"])
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            try:
                _, status, ru = os.wait4(pid, 0)
                reply = {
                    "status": status,
                    "maxrss_kb": ru.ru_maxrss,
                    "cpu": ru.ru_utime + ru.ru_stime,
                }
            except ChildProcessError:
                reply = {"status": None, "maxrss_kb": 0, "cpu": 0.0}
            ctl.sendall(pack(reply))
        elif op == "info":
            ctl.sendall(pack(info))
        else:
            ctl.sendall(pack({"error": f"unknown op {op!r}"}))


def _recv_exact(sock, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        b = sock.recv(n - len(buf))
        if not b:
            return None
        buf += b
    return bytes(buf)


if __name__ == "__main__":
    _ctl, _config = int(sys.argv[1]), json.loads(sys.argv[2])
    zygote(_ctl, _config)
