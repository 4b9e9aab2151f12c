"""What one program must not leave to the next, and what it must not take from its reporter.

Each class below was observed against the sandbox; each test runs a hostile program, then
checks both the host and a later, honest program in the same :class:`Sandbox`:

- System V IPC and POSIX message queues: no object outlives its child, none is visible to a
  later program, the host's shared memory does not grow (``ipc`` layer);
- the scratch space: every child has its own size-capped ``/tmp``; filling it, or leaving
  files in it, changes nothing for the next program (``scratch`` layer);
- tasks: a child holds at most ``Limits.tasks`` threads and processes (``tasks`` layer);
- the reporter: a program that patches builtins, ``json``, ``os`` or the runner's globals is
  still reported by value; the time its value takes to encode (a slow ``__repr__``) or its
  exception to render is the input's time;
- the mount table the child reads names nothing of the host.

Most tests run under bubblewrap and under the root fallback (``use_bwrap=False``).
"""

from __future__ import annotations

import ctypes
import os
import random
import sys
import textwrap
import time
from typing import Any

import pytest
from testkit import sandbox as H

from utdebug.sandbox import Layer, Limits, Sandbox, Status
from utdebug.sandbox.values import ExceptionValue

MODES = ["bwrap", "root"]
FAST = H.FAST


def prog(src: str) -> str:
    return textwrap.dedent(src).lstrip("\n")


@pytest.fixture
def fresh_sb(request):
    """A sandbox of its own (one per test), in the mode given by the test's ``mode``."""
    made: list[Sandbox] = []

    def make(mode: str, **kw: Any) -> Sandbox:
        s = H.make_sandbox(mode, **kw)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def test_doctor_layers_are_reported(any_sb):
    rep = any_sb.layers
    d = rep.as_dict()["layers"]
    for layer in (Layer.IPC, Layer.SCRATCH, Layer.TASKS):
        assert layer in rep.active(), d
        assert d[layer.value]["detail"], d
    assert "namespace" in d["tasks"]["detail"] or "uid" in d["tasks"]["detail"], d


# ---------------------------------------------------------------------------------------------
# 1. System V IPC and POSIX message queues
# ---------------------------------------------------------------------------------------------

LIBC = prog(
    """
    import ctypes, os
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
    libc.shmdt.argtypes = [ctypes.c_void_p]
    libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
    IPC_CREAT = 0o1000

    def _err(r):
        return [r, ctypes.get_errno()]
    """
)

IPC_HOG = LIBC + prog(
    """
    def f(key, mb, n):
        out = {"shm": []}
        for k in range(n):  # shared memory, touched, then detached: it outlives the mapping
            shmid = libc.shmget(key + k, mb << 20, IPC_CREAT | 0o666)
            if shmid < 0:
                out["shmget"] = _err(shmid)
                break
            addr = libc.shmat(shmid, None, 0)
            if addr is None or addr == ctypes.c_void_p(-1).value:
                out["shmat"] = _err(-1)
                continue
            ctypes.memset(addr, 1, mb << 20)
            libc.shmdt(addr)
            out["shm"].append(shmid)
        out["sem"] = _err(libc.semget(key, 4, IPC_CREAT | 0o666))
        out["msg"] = _err(libc.msgget(key, IPC_CREAT | 0o666))
        name = f"/utdebug-{key}".encode()
        out["mq"] = _err(libc.mq_open(name, os.O_CREAT | os.O_RDWR, 0o666, None))
        return out
    """
)

IPC_NS_HELD = prog(
    """
    import os
    import time

    def f(seconds):
        ns = os.readlink("/proc/self/ns/ipc")
        time.sleep(seconds)
        return ns
    """
)


def ipc_namespaces_of_two_live_children(sb: Sandbox, lim: Limits) -> tuple[str, str]:
    """The IPC namespaces of two children that are alive at the same time. (A namespace that
    is freed may give its inode number to the next one, so two children one after the other
    can show the same number without sharing anything.)"""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(sb.run, IPC_NS_HELD, "f", [[1.0]], lim) for _ in range(2)]
        a, b = (r.result().outcomes[0] for r in runs)
    assert a.status is Status.OK and b.status is Status.OK, (a, b)
    return a.value, b.value


IPC_LOOK = LIBC + prog(
    """
    def rows(path):
        try:
            with open(path) as fh:
                return fh.read().splitlines()[1:]
        except OSError as e:
            return [type(e).__name__]

    def f(key):
        return {
            "shm": rows("/proc/sysvipc/shm"),
            "sem": rows("/proc/sysvipc/sem"),
            "msg": rows("/proc/sysvipc/msg"),
            "shm_by_key": _err(libc.shmget(key, 0, 0)),
            "mq_by_name": _err(libc.mq_open(f"/utdebug-{key}".encode(), os.O_RDWR)),
            "ipcns": os.readlink("/proc/self/ns/ipc"),
        }
    """
)


def _host_ipc_rows() -> dict[str, list[str]]:
    out = {}
    for kind in ("shm", "sem", "msg"):
        with open(f"/proc/sysvipc/{kind}") as fh:
            out[kind] = fh.read().splitlines()[1:]
    return out


def _host_shmem_kb() -> int:
    with open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith("Shmem:"):
                return int(line.split()[1])
    return 0


def _remove_host_ipc(keys: set[int]) -> None:
    """Remove objects a (broken) sandbox left in the host's IPC namespace under ``keys``."""
    libc = ctypes.CDLL(None, use_errno=True)
    for key in keys:
        libc.mq_unlink(f"/utdebug-{key}".encode())
    ipc_rmid = 0
    for kind, ctl in (("shm", libc.shmctl), ("sem", libc.semctl), ("msg", libc.msgctl)):
        for row in _host_ipc_rows()[kind]:
            parts = row.split()
            if len(parts) > 1 and int(parts[0]) in keys:
                if kind == "sem":
                    ctl(int(parts[1]), 0, ipc_rmid)
                else:
                    ctl(int(parts[1]), ipc_rmid, None)


@pytest.mark.parametrize("mode", MODES)
def test_ipc_objects_die_with_their_child_and_are_invisible_to_the_next(mode, fresh_sb):
    sb = fresh_sb(mode)
    key = random.randrange(1 << 20, 1 << 30)
    keys = {key, key + 1, key + 2}
    before_rows = _host_ipc_rows()
    before_kb = _host_shmem_kb()
    lim = Limits(per_input=10.0, load=5.0, memory_mb=1024)
    try:
        hog = sb.run(IPC_HOG, "f", [[key, 64, 3]], lim)
        assert hog.outcomes[0].status is Status.OK, hog
        grown_kb = _host_shmem_kb() - before_kb
        after_rows = _host_ipc_rows()
        look = sb.run(IPC_LOOK, "f", [[key]], lim)
        again = sb.run(IPC_LOOK, "f", [[key]], lim)
    finally:
        _remove_host_ipc(keys)
    made = hog.outcomes[0].value
    # Nothing of it is left on the host once its batch is over ...
    assert after_rows == before_rows, (made, after_rows)
    assert grown_kb < 96 << 10, f"host shared memory grew by {grown_kb} kB: {made}"
    # ... nor seen by the next program, whatever it looks with.
    seen = look.outcomes[0].value
    assert look.outcomes[0].status is Status.OK, look
    assert seen["shm"] == [] and seen["sem"] == [] and seen["msg"] == [], (made, seen)
    assert seen["shm_by_key"][0] == -1 and seen["mq_by_name"][0] == -1, (made, seen)
    assert again.outcomes[0].status is Status.OK, again
    # Each child has an IPC namespace of its own.
    a, b = ipc_namespaces_of_two_live_children(sb, lim)
    assert a != b, (a, b)


def test_ipc_calls_are_denied(any_sb):
    if Layer.SECCOMP not in any_sb.layers.active():
        pytest.skip("the IPC calls are denied by the seccomp layer")
    key = random.randrange(1 << 20, 1 << 30)
    try:
        o = H.run1(any_sb, IPC_HOG, [key, 1, 1])
    finally:
        _remove_host_ipc({key})
    assert o.status is Status.OK, o
    eperm = 1
    assert o.value["shm"] == [] and o.value["shmget"] == [-1, eperm], o.value
    for kind in ("sem", "msg", "mq"):
        assert o.value[kind] == [-1, eperm], o.value


# ---------------------------------------------------------------------------------------------
# 2. The scratch space
# ---------------------------------------------------------------------------------------------

FILL = prog(
    """
    import os
    def f(tag):
        with open(f"/tmp/left-{tag}", "w") as fh:
            fh.write("left behind")
        written = 0
        chunk = b"\\0" * (1 << 20)
        try:
            for k in range(1000):
                with open(f"/tmp/fill-{tag}-{k}", "wb") as fh:
                    for _ in range(8):  # 8 MiB per file, under the file-size limit
                        fh.write(chunk)
                        fh.flush()
                        written += 1
        except OSError as e:
            return [written, type(e).__name__, e.errno]
        return [written, None, None]
    """
)

HONEST = prog(
    """
    import os, tempfile
    def f(tag):
        with tempfile.NamedTemporaryFile("w+") as fh:
            fh.write("x" * 100000)
            fh.flush()
            fh.seek(0)
            n = len(fh.read())
        kept = f"/tmp/kept-{tag}"
        if not os.path.exists(kept):  # first input of the batch
            with open(kept, "w") as fh:
                fh.write("mine")
        st = os.statvfs(tempfile.gettempdir())
        return [n, sorted(os.listdir("/tmp")), st.f_bavail * st.f_frsize, tempfile.gettempdir()]
    """
)


@pytest.mark.parametrize("mode", MODES)
def test_a_full_scratch_space_does_not_fail_the_next_program(mode, fresh_sb):
    sb = fresh_sb(mode)
    tag = f"{random.randrange(1 << 30):x}"
    lim = Limits(per_input=10.0, load=5.0, memory_mb=1024, fsize_mb=16)
    scratch_mb = 64  # Limits().scratch_mb
    fill = sb.run(FILL, "f", [[tag]], lim)
    o = fill.outcomes[0]
    assert o.status is Status.OK, fill
    written, err, errno = o.value
    assert err == "OSError" and errno == 28, o.value  # ENOSPC: the scratch space is capped ...
    assert written <= scratch_mb, o.value  # ... at Limits.scratch_mb
    # A later, honest program in the same sandbox: a fresh, empty /tmp of its own, that stays
    # its own across the inputs of its batch.
    res = sb.run(HONEST, "f", [[tag], [tag]], lim)
    assert [x.status for x in res.outcomes] == [Status.OK, Status.OK], res
    first, second = (x.value for x in res.outcomes)
    assert first[0] == 100000 and first[3] == "/tmp", first
    own = sorted([f"kept-{tag}", *H.tmp_skeleton()])  # a checkout under /tmp: its path too
    assert first[1] == own, f"files left by another program are visible: {first[1]}"
    assert second[1] == own, second
    assert first[2] >= (scratch_mb - 4) << 20, first


def test_scratch_size_follows_the_limits(any_sb):
    tag = f"{random.randrange(1 << 30):x}"
    lim = Limits(per_input=10.0, load=5.0, memory_mb=1024, scratch_mb=12)
    o = any_sb.run(FILL, "f", [[tag]], lim).outcomes[0]
    assert o.status is Status.OK and o.value[1:] == ["OSError", 28], o
    assert o.value[0] <= 12, o.value


def test_scratch_file_count_is_capped(any_sb):
    code = prog(
        """
        import os
        def f():
            n = 0
            try:
                while n < 100000:
                    open(f"/tmp/{n}", "w").close()
                    n += 1
            except OSError as e:
                return [n, e.errno]
            return [n, None]
        """
    )
    lim = Limits(per_input=10.0, load=5.0, scratch_inodes=500)
    o = any_sb.run(code, "f", [[]], lim).outcomes[0]
    assert o.status is Status.OK and o.value[1] == 28 and o.value[0] < 500, o


def test_project_folders_under_tmp_stay_visible_and_read_only(tmp_path):
    """A read-only mount under /tmp (a project copy, a venv) is bound again into each child's
    own /tmp."""
    assert str(tmp_path).startswith("/tmp/"), tmp_path
    (tmp_path / "data.txt").write_text("project data")
    tmp_path.chmod(0o755)  # pytest makes it 0700; the children run as another uid
    (tmp_path / "data.txt").chmod(0o644)
    for mode in MODES:
        sb = H.make_sandbox(mode, mounts=(str(tmp_path),))
        try:
            code = prog(
                """
                def f(p):
                    text = open(p + "/data.txt").read()
                    try:
                        open(p + "/new.txt", "w")
                        wrote = True
                    except OSError:
                        wrote = False
                    return [text, wrote]
                """
            )
            o = H.run1(sb, code, [str(tmp_path)])
            assert o.status is Status.OK and o.value == ["project data", False], (mode, o)
        finally:
            sb.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.txt"]


# ---------------------------------------------------------------------------------------------
# 3. Tasks
# ---------------------------------------------------------------------------------------------

THREADS = prog(
    """
    import threading, time
    threading.stack_size(1 << 16)  # small stacks: the address-space limit is no cap here
    def f(upto):
        n = 0
        try:
            while n < upto:
                threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
                n += 1
        except RuntimeError as e:
            return [n, threading.active_count(), str(e)]
        return [n, threading.active_count(), None]
    """
)


def test_tasks_are_capped_and_the_cap_holds_across_inputs(any_sb):
    lim = Limits(per_input=10.0, load=5.0, memory_mb=1024)
    cap = 64  # Limits().tasks: the child's own thread and 63 more
    t0 = time.monotonic()
    res = any_sb.run(THREADS, "f", [[3000], [3000]], lim)
    took = time.monotonic() - t0
    assert [o.status for o in res.outcomes] == [Status.OK, Status.OK], res
    (n0, alive0, err0), (n1, alive1, err1) = (o.value for o in res.outcomes)
    assert n0 <= cap - 1 and alive0 <= cap and err0 == "can't start new thread", res.outcomes[0]
    # The threads of input 0 are still alive in input 1 (state persists): still the same cap.
    assert n1 == 0 and alive1 <= cap and err1 == "can't start new thread", res.outcomes[1]
    assert res.children == 1 and took < H.roomy(5), took


def test_task_cap_follows_the_limits(any_sb):
    o = H.run1(any_sb, THREADS, [2000], Limits(per_input=10.0, load=5.0, tasks=10))
    assert o.status is Status.OK, o
    assert o.value[:2] == [9, 10] and o.value[2] == "can't start new thread", o


def test_task_cap_is_per_child_not_per_sandbox(any_sb):
    """Two batches at once, each with threads up to its cap: neither takes the other's."""
    import threading

    lim = Limits(per_input=10.0, load=5.0, memory_mb=1024)
    hold = prog(
        """
        import threading, time
        threading.stack_size(1 << 16)
        def f(upto, wait):
            n = 0
            try:
                while n < upto:
                    threading.Thread(target=time.sleep, args=(wait,), daemon=True).start()
                    n += 1
            except RuntimeError:
                pass
            time.sleep(wait)
            return n
        """
    )
    out: dict[int, Any] = {}

    def go(k: int) -> None:
        out[k] = any_sb.run(hold, "f", [[2000, 1.0]], lim)

    threads = [threading.Thread(target=go, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for k in range(2):
        o = out[k].outcomes[0]
        assert o.status is Status.OK and o.value == 63, (k, o)  # Limits().tasks - 1


# ---------------------------------------------------------------------------------------------
# 5. The reporter
# ---------------------------------------------------------------------------------------------

PATCHER = prog(
    """
    import builtins, json, os, sys, __main__

    def f(x, what):
        if what == "builtins":
            for name in ("isinstance", "type", "repr", "str", "len", "list", "dict", "tuple",
                         "int", "float", "enumerate", "callable", "memoryview", "bytes", "set"):
                setattr(builtins, name, lambda *a, **k: True)
        elif what == "json":
            json.dumps = lambda *a, **k: "{}"
            json.loads = lambda *a, **k: [7]
            json.JSONEncoder.encode = lambda *a, **k: "{}"
            json.JSONEncoder.iterencode = lambda *a, **k: iter(["{}"])
            json.encoder.c_make_encoder = None
            json.decoder.JSONDecoder.decode = lambda *a, **k: [7]
        elif what == "os":
            os.write = lambda fd, data: len(data)
            os._exit = lambda *a: None
        elif what == "runner":
            for name in ("encode", "decode", "pack", "dumps", "loads", "_write_all", "_exc_info",
                         "_Timeout", "_on_alarm", "_answer", "_result_frame", "_input_caller",
                         "_send_load", "_run_inputs"):
                setattr(__main__, name, lambda *a, **k: "forged")
        elif what == "raise":
            builtins.isinstance = lambda *a: True
            builtins.type = lambda *a: int
            raise ValueError("after patching")
        return [x, x * 2, {"k": (x, "v")}]
    """
)


@pytest.mark.parametrize("what", ["builtins", "json", "os", "runner", "raise"])
def test_patched_builtins_do_not_break_the_reporter(any_sb, what):
    res = any_sb.run(PATCHER, "f", [[1, what], [2, "none"], [3, "none"]], FAST)
    assert len(res.outcomes) == 3 and res.children == 1, res
    if what == "raise":
        o = res.outcomes[0]
        assert o.status is Status.ERROR, res
        assert o.error_type == "ValueError" and o.error == "after patching", o
    else:
        assert res.outcomes[0].status is Status.OK, res
        assert res.outcomes[0].value == [1, 2, {"k": (1, "v")}], res
    # The inputs after it are decoded and reported by value too.
    assert [o.value for o in res.outcomes[1:]] == [[2, 4, {"k": (2, "v")}], [3, 6, {"k": (3, "v")}]]


SLOW_REPR = prog(
    """
    import time
    def busy(s):  # spends s seconds of CPU time (and at least as much wall time)
        t = time.process_time()
        while time.process_time() - t < s:
            pass
    class Slow(Exception):  # an exception object: reported by its class and its text
        def __init__(self, s):
            self.s = s
        def __repr__(self):
            if self.s is None:
                while True:
                    pass
            busy(self.s)
            return "slow"
        __str__ = __repr__
    class Bad(Exception):
        def __str__(self):
            while True:
                pass
    def f(call, rep):
        busy(call)
        if rep == "raise":
            raise Bad()
        return Slow(rep)
    """
)


@pytest.mark.parametrize("kind", ["cpu", "wall"])
def test_encoding_time_counts_in_the_input(any_sb, kind):
    lim = Limits(per_input=1.0, load=5.0, memory_mb=1024, slack=0.5, kind=kind)
    # Wall-clock limits move with the load: there the slow __repr__ stays far from the limit.
    rep = 0.4 if kind == "cpu" else 0.1
    res = any_sb.run(SLOW_REPR, "f", [[0.0, rep], [0.6, 0.6], [0.0, 0.0]], lim)
    slow, over, quick = res.outcomes
    assert slow.status is Status.OK and type(slow.value) is ExceptionValue, res
    assert slow.value.message == "slow" and slow.seconds >= rep, slow
    # 0.6 s in the call and 0.6 s in __repr__: together past the 1 s limit.
    assert over.status is Status.TIMEOUT, res
    assert quick.status is Status.OK and quick.seconds < 0.3, quick
    assert res.children == 1, res


@pytest.mark.parametrize("rep", [None, "raise"], ids=["looping repr", "looping exception str"])
def test_a_looping_repr_or_str_is_the_inputs_timeout(any_sb, rep):
    lim = Limits(per_input=0.5, load=5.0, memory_mb=1024, slack=0.5)
    t0 = time.monotonic()
    res = any_sb.run(SLOW_REPR, "f", [[0.0, rep], [0.0, 0.0]], lim)
    took = time.monotonic() - t0
    first, second = res.outcomes
    assert first.status is Status.TIMEOUT and first.seconds >= 0.45, res
    # The child's own timer stopped it: no kill, no new child, the next input runs.
    assert res.children == 1 and second.status is Status.OK, res
    H.cpu_stopped(res, lim, lim.per_input)
    assert took < H.roomy(lim.per_input + 1.0), took


def test_a_looping_load_error_str_times_out_the_load(any_sb):
    code = "class Bad(Exception):\n    def __str__(self):\n        while True: pass\nraise Bad()\n"
    lim = Limits(per_input=0.5, load=0.5, memory_mb=1024, slack=0.5)
    t0 = time.monotonic()
    res = any_sb.run(code, "f", [[1], [2]], lim)
    assert [o.status for o in res.outcomes] == [Status.TIMEOUT] * 2, res
    H.cpu_stopped(res, lim, lim.load)
    assert res.children == 1 and time.monotonic() - t0 < H.roomy(1.5), res


# ---------------------------------------------------------------------------------------------
# 8. The mount table
# ---------------------------------------------------------------------------------------------

MOUNTS = prog(
    """
    import os
    def f():
        out = {}
        pid = os.getpid()
        for p in ("/proc/self/mountinfo", "/proc/self/mounts", "/proc/self/mountstats",
                  "/proc/mounts", "/proc/thread-self/mountinfo", f"/proc/{pid}/mountinfo",
                  f"/proc/{pid}/task/{pid}/mountinfo", f"/proc/self/task/{pid}/mounts"):
            try:
                with open(p) as fh:
                    out[p] = fh.read()
            except OSError as e:
                out[p] = type(e).__name__
        return out
    """
)


def test_the_mount_table_names_nothing_of_the_host(any_sb):
    o = H.run1(any_sb, MOUNTS, [])
    assert o.status is Status.OK, o
    host = {sys.prefix, sys.base_prefix, os.path.realpath(sys.base_prefix), "/dev/", "ext4"}
    for path, text in o.value.items():
        leaked = [h for h in host if h in text]
        assert not leaked, (path, leaked, text[:300])


# ---------------------------------------------------------------------------------------------
# Where user namespaces are not available
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def forced(monkeypatch):
    """Make the zygote try only the given ways to isolate its children (see _runner.isolate)."""
    from utdebug.sandbox import executor, layers

    real = layers.plan

    def force(strategies: list[str]) -> None:
        def plan(*a: Any, **k: Any) -> layers.Plan:
            p = real(*a, **k)
            cfg = dict(p.zygote_config)
            cfg["isolation"] = strategies
            return layers.Plan(p.mode, p.argv_prefix, cfg, p.is_root)

        monkeypatch.setattr(executor, "plan", plan)

    return force


def test_without_per_child_namespaces_the_layers_say_so_and_the_policy_refuses(forced):
    from utdebug.sandbox import SandboxConfig, SandboxUnavailable

    H.skip_unless_mode_possible("bwrap")
    forced([])
    with pytest.raises(SandboxUnavailable) as info:
        Sandbox(SandboxConfig(uid_base=H.private_uid_base())).start()
    msg = str(info.value)
    assert "scratch" in msg and "tasks" in msg and "user namespaces" in msg, msg
    assert "--allow-weak-sandbox" in msg, msg
    with Sandbox(SandboxConfig(uid_base=H.private_uid_base(), allow_weak=True)) as s:
        rep = s.layers
        active = rep.active()
        assert Layer.SCRATCH not in active and Layer.TASKS not in active, rep.as_dict()
        d = rep.as_dict()["layers"]
        assert "max_user_namespaces" in d["tasks"]["detail"], d
        if Layer.SECCOMP in active:  # no object can be made: the IPC layer still holds
            assert Layer.IPC in active and "seccomp" in d["ipc"]["detail"], d
        H.assert_sandbox_works(s)


def test_the_root_way_in_the_fallback(forced):
    """Root without bubblewrap and without user namespaces: namespaces made as root before the
    uid drop, and the task cap per child uid."""
    H.skip_unless_mode_possible("root")
    forced(["root"])
    s = H.make_sandbox("root")
    try:
        rep = s.layers
        assert {Layer.IPC, Layer.SCRATCH, Layer.TASKS} <= rep.active(), rep.as_dict()
        assert "uid" in rep.as_dict()["layers"]["tasks"]["detail"], rep.as_dict()
        lim = Limits(per_input=10.0, load=5.0, memory_mb=1024, tasks=16)
        o = H.run1(s, THREADS, [2000], lim)
        assert o.status is Status.OK and o.value[0] <= 15, o
        tag = f"{random.randrange(1 << 30):x}"
        assert s.run(FILL, "f", [[tag]], lim).outcomes[0].value[1:] == ["OSError", 28]
        honest = H.run1(s, HONEST, [tag], lim)
        own = sorted([f"kept-{tag}", *H.tmp_skeleton()])
        assert honest.status is Status.OK and honest.value[1] == own, honest
        a, b = ipc_namespaces_of_two_live_children(s, lim)
        assert a != b, (a, b)
        o = H.run1(s, MOUNTS, [])
        assert o.status is Status.OK, o
        assert all(v == "" or v.endswith("Error") for v in o.value.values()), o
        H.assert_no_sandbox_processes(s)
    finally:
        s.close()


def test_the_root_way_is_refused_inside_bubblewrap(forced):
    """Bubblewrap's zygote holds no CAP_SYS_ADMIN: the root way fails there, and says so."""
    from utdebug.sandbox import SandboxConfig

    H.skip_unless_mode_possible("bwrap")
    if not H.IS_ROOT:
        pytest.skip("as root only")
    forced(["root"])
    with Sandbox(SandboxConfig(uid_base=H.private_uid_base(), allow_weak=True)) as s:
        rep = s.layers
        assert Layer.SCRATCH not in rep.active(), rep.as_dict()
        assert any("root:" in e for e in rep.errors), rep.errors
        H.assert_sandbox_works(s)
