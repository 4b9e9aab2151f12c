"""Hostile programs that try to forge their verdicts, and the parent that decides them.

Each test is an attack as a program would mount it: CPU time hidden in a partial frame or
behind a patched reporter, strings forged through surrogates, the parent's memory and work,
inputs read before their turn, a wall-clock limit or a CPU timer that the program defeats, a
starved program taken for a sleeping one, memory outside the address-space limit, the mount
table. The verdict must be the parent's, from its own readings.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from dataclasses import replace

from testkit import sandbox as H

from utdebug.sandbox import LimitKind, Limits, Sandbox, Status
from utdebug.sandbox.values import describe

LIM = Limits(per_input=1.0, load=5.0, memory_mb=1024, slack=0.5, wall_factor=20.0)
"""A backstop far away: these tests are about CPU time, however busy the machine is."""


def prog(src: str) -> str:
    return textwrap.dedent(src).lstrip("\n")


RESULT_FD = prog(
    """
    import fcntl, os, stat

    def _result_fd():  # the child's only pipe open for writing
        for fd in range(3, 64):
            try:
                st = os.fstat(fd)
            except OSError:
                continue
            if stat.S_ISFIFO(st.st_mode) and fcntl.fcntl(fd, fcntl.F_GETFL) & 3 == os.O_WRONLY:
                return fd
        raise RuntimeError("no result pipe")

    def _burn(s):  # s seconds of CPU time, with every timer of the child silenced
        import signal, time
        for sig in (signal.SIGALRM, signal.SIGPROF, signal.SIGVTALRM):
            signal.signal(sig, signal.SIG_IGN)
        t = time.process_time()
        while time.process_time() - t < s:
            pass
    """
)


# ---------------------------------------------------------------------------------------------
# 1-2. CPU time hidden from the parent
# ---------------------------------------------------------------------------------------------


def test_cpu_time_cannot_hide_in_a_partial_frame(sb: Sandbox) -> None:
    """The first byte of a forged frame at once, 1.3 s of CPU, then the rest of the frame
    with the CPU reading of its start: the parent's own reading charges the 1.3 s."""
    code = RESULT_FD + prog(
        """
        import json, time
        def f(x):
            u0 = time.clock_gettime(time.CLOCK_PROCESS_CPUTIME_ID)
            body = json.dumps({"k": "r", "i": 0, "s": "ok", "t": 0.0, "v": x, "u": u0}).encode()
            frame = len(body).to_bytes(4, "big") + body
            fd = _result_fd()
            os.write(fd, frame[:1])
            _burn(1.3)
            os.write(fd, frame[1:] + (17).to_bytes(4, "big") + b'{"k":"end","out":0}')
            os._exit(0)
        """
    )
    o = H.run1(sb, code, [5], LIM)
    assert o.status is Status.TIMEOUT, o
    assert o.seconds >= 1.3, o


def test_cpu_time_cannot_be_forged_through_the_reporter(sb: Sandbox) -> None:
    """Every closure cell and default of the reporter's functions that could format or read
    a CPU clock is replaced by one that says 0; the input spins 1.3 s and returns."""
    code = RESULT_FD + prog(
        """
        import sys, time, types
        def _zero(*a, **k):
            return 0.0
        def _zero_text(*a, **k):
            return "0.0"
        def _patch(fn):
            for c in fn.__closure__ or ():
                try:
                    v = c.cell_contents
                except ValueError:
                    continue
                if v is float.__repr__:
                    c.cell_contents = _zero_text
                elif callable(v) and getattr(v, "__name__", "") in (
                        "_cpu_clock", "clock_gettime", "perf_counter", "process_time"):
                    c.cell_contents = _zero
        def f(x):
            fr = sys._getframe(1)
            while fr is not None:
                for v in list(fr.f_locals.values()):
                    if isinstance(v, types.FunctionType):
                        _patch(v)
                fr = fr.f_back
            _burn(1.3)
            return x
        """
    )
    res = sb.run(code, "f", [[1], [2]], LIM)
    for o in res.outcomes:
        assert o.status is Status.TIMEOUT and o.seconds >= 1.3, res


# ---------------------------------------------------------------------------------------------
# 3. Strings
# ---------------------------------------------------------------------------------------------


def test_strings_cross_the_frame_losslessly(sb: Sandbox) -> None:
    code = prog(
        """
        def f(s):
            if s == "pair":
                return "\\ud83d" + "\\ude00" + "x"
            return [s, len(s), [hex(ord(c)) for c in s]]
        """
    )
    lone = "\ud83d\ude00"  # two lone surrogates, not an emoji
    res = sb.run(code, "f", [["pair"], [lone], ["😀"], ["\udcff"]], LIM)
    pair, back, emoji, single = res.outcomes
    assert pair.status is Status.OK and pair.value == "\ud83d\ude00x", pair
    assert pair.value != "😀x" and len(pair.value) == 3, pair
    assert back.value == [lone, 2, ["0xd83d", "0xde00"]], back
    assert emoji.value == ["😀", 1, ["0x1f600"]], emoji
    assert single.value == ["\udcff", 1, ["0xdcff"]], single


# ---------------------------------------------------------------------------------------------
# 4. The parent's memory and work
# ---------------------------------------------------------------------------------------------


def test_a_batch_of_large_results_holds_bounded_memory_in_the_parent(sb: Sandbox) -> None:
    """Twenty-four results of ~0.5 MB of nested empty lists: the decoded values a batch keeps
    are bounded (what one largest result may hold), later ones fail as OutputTooLarge."""
    bound = 32 * (16 << 20) + (1 << 20)  # what one result of the largest frame may hold
    per = 170_000  # "[]," each: ~0.5 MB frames, ~10 MB in the parent once decoded
    code = f"def f(x):\n    return [[] for _ in range({per})]\n"
    n = bound // (64 * per) + 8
    res = sb.run(code, "f", [[i] for i in range(n)], replace(LIM, per_input=5.0))
    ok = [o for o in res.outcomes if o.status is Status.OK]
    refused = [o for o in res.outcomes if o.error_type == "OutputTooLarge"]
    assert len(ok) + len(refused) == n, res.outcomes[:3]
    assert refused and "batch" in (refused[0].error or ""), refused[:1]
    assert len(ok) * 64 * per <= bound, len(ok)
    assert all(len(o.value) == per for o in ok)


def test_describing_a_huge_value_renders_only_what_it_shows() -> None:
    """A failing value is cut before it is rendered: 200,000 elements cost as many reprs as
    the 500 characters shown, not one per element."""
    calls = [0]

    class Counted:
        def __repr__(self) -> str:
            calls[0] += 1
            return "c"

    text = describe([Counted()] * 200_000, 500)
    assert len(text) <= 500 and text.startswith("[c, c, c"), text[:40]
    assert calls[0] < 1_000, calls[0]
    nested = describe([[[]] * 1000] * 1000, 100)
    assert len(nested) <= 100 and nested.startswith("[[[], []"), nested


# ---------------------------------------------------------------------------------------------
# 5. Inputs before their turn
# ---------------------------------------------------------------------------------------------


def test_inputs_are_not_readable_before_their_turn(sb: Sandbox) -> None:
    """At load time, and while input 0 runs, the program looks through every frame and
    object it can reach for the batch's other inputs."""
    code = prog(
        """
        import gc, sys
        def _look():
            gc.collect()
            seen = []
            fr = sys._getframe()
            while fr is not None:
                try:
                    seen.append(repr(fr.f_locals)[:2_000_000])
                except Exception:
                    pass
                fr = fr.f_back
            for o in gc.get_objects():
                if type(o) in (dict, list, tuple):
                    try:
                        seen.append(repr(o)[:100_000])
                    except Exception:
                        pass
            return "".join(seen)
        AT_LOAD = _look()
        def f(x):
            now = _look()
            # Built at run time (a constant would be in the program's own code); the indexes
            # of the inputs seen are returned (no marker stays behind in the child).
            parts = ([7300000, 1937], [8400000, 2948], [9500000, 3959])
            return [k for k, p in enumerate(parts) if str(sum(p)) in AT_LOAD + now]
        """
    )
    res = sb.run(code, "f", [[6200926], [7301937], [8402948], [9503959]], LIM)
    assert [o.status for o in res.outcomes] == [Status.OK] * 4, res
    for k, o in enumerate(res.outcomes):  # input k may see inputs up to k, never later ones
        assert all(seen < k for seen in o.value), (k, o)
    assert 2 in res.outcomes[3].value, res.outcomes[3]  # the look itself works


# ---------------------------------------------------------------------------------------------
# 6. Wall-clock limits a program ignores
# ---------------------------------------------------------------------------------------------


def test_a_wall_clock_limit_is_enforced_by_the_parent(sb: Sandbox) -> None:
    code = prog(
        """
        import signal, time
        def f(s):
            signal.signal(signal.SIGALRM, signal.SIG_IGN)
            time.sleep(s)
            return s
        """
    )
    lim = replace(LIM, kind=LimitKind.WALL)
    res = sb.run(code, "f", [[1.3], [0.01]], lim)
    slow, quick = res.outcomes
    assert slow.status is Status.TIMEOUT, slow
    assert "wall-clock" in (slow.error or "") or "hard deadline" in (slow.error or ""), slow
    assert quick.status is Status.OK and quick.value == 0.01, quick


# ---------------------------------------------------------------------------------------------
# 7. A timeout the parent has not seen
# ---------------------------------------------------------------------------------------------


def test_a_timeout_is_one_only_when_the_parents_reading_reached_the_limit(sb: Sandbox) -> None:
    """The program raises the child's own timeout exception after 0.1 s: no timeout."""
    code = prog(
        """
        import gc, time
        def f(x):
            t = time.process_time()
            while time.process_time() - t < 0.1:
                pass
            for o in gc.get_objects():
                if isinstance(o, type) and o.__name__ == "_Timeout":
                    raise o()
            return "no timeout class found"
        """
    )
    o = H.run1(sb, code, [1], LIM)
    assert o.status is not Status.TIMEOUT, o
    assert o.seconds < LIM.per_input, o


def test_cpu_timeouts_of_sandboxes_side_by_side_are_charged_their_limit() -> None:
    """Two sandboxes spinning at once: each timeout is charged at least its limit (a
    tick-sampled timer fires early when processes share the CPUs)."""
    boxes = [H.make_sandbox("bwrap") for _ in range(2)]
    code = "def f(x):\n    while True:\n        pass\n"
    lim = replace(LIM, per_input=0.7)
    results: list[object] = []

    def go(box: Sandbox) -> None:
        results.append(box.run(code, "f", [[i] for i in range(4)], lim))

    try:
        ts = [threading.Thread(target=go, args=(b,)) for b in boxes]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    finally:
        for b in boxes:
            b.close()
    assert len(results) == 2
    for res in results:
        for o in res.outcomes:  # type: ignore[attr-defined]
            assert o.status is Status.TIMEOUT and o.seconds >= lim.per_input, o


# ---------------------------------------------------------------------------------------------
# 8. Starved, not sleeping
# ---------------------------------------------------------------------------------------------


def _die_with_parent() -> None:
    import ctypes

    ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


@contextlib.contextmanager
def hogs_on_one_cpu(n: int) -> Iterator[None]:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", "while True: pass"],
            preexec_fn=_die_with_parent,
            start_new_session=True,
        )
        for _ in range(n)
    ]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_a_starved_program_is_not_taken_for_a_sleeping_one() -> None:
    """The sandbox and three CPU hogs share one CPU: a program that needs 0.6 s of CPU time
    takes far longer than its 1.5 s wall-clock backstop, all of it running or waiting to
    run. It passes; a program that sleeps is still stopped."""
    cpu = min(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})  # the zygote and its children inherit it
    try:
        box = H.make_sandbox("bwrap")
    finally:
        os.sched_setaffinity(0, before)
    code = prog(
        """
        import time
        def f(how, s):
            if how == "sleep":
                time.sleep(s)
                return s
            t = time.process_time()
            while time.process_time() - t < s:
                pass
            return s
        """
    )
    lim = Limits(per_input=1.0, load=5.0, memory_mb=1024, slack=0.5, wall_factor=1.0)
    try:
        with hogs_on_one_cpu(3):
            res = box.run(code, "f", [["spin", 0.6], ["sleep", 30]], lim)
    finally:
        box.close()
    spun, slept = res.outcomes
    assert spun.status is Status.OK and spun.value == 0.6, spun
    assert res.wall_seconds > lim.backstop(1.0) + lim.slack, res  # it really was starved
    assert slept.status is Status.TIMEOUT and "slept or was blocked" in (slept.error or ""), slept


# ---------------------------------------------------------------------------------------------
# 9. Memory outside the address-space limit
# ---------------------------------------------------------------------------------------------


def test_memfd_memory_is_not_available(sb: Sandbox) -> None:
    code = prog(
        """
        import os
        def f():
            written, errors = 0, []
            for _ in range(4):
                try:
                    fd = os.memfd_create("x")
                    written += os.write(fd, b"x" * (4 << 20))
                except OSError as e:
                    errors.append(type(e).__name__)
            return [written, errors]
        """
    )
    o = H.run1(sb, code, [], LIM)
    assert o.status is Status.OK, o
    assert o.value[0] == 0 and o.value[1] == ["PermissionError"] * 4, o


# ---------------------------------------------------------------------------------------------
# 10. The mount table
# ---------------------------------------------------------------------------------------------


def test_no_mount_table_is_readable_through_other_tasks(sb: Sandbox) -> None:
    code = prog(
        """
        import os, threading
        def _read(p):
            try:
                with open(p) as fh:
                    return fh.read()
            except OSError as e:
                return type(e).__name__
        def f():
            out = {}
            for p in os.listdir("/proc"):
                if p.isdigit():
                    for name in ("mountinfo", "mounts", "mountstats"):
                        out[f"/proc/{p}/{name}"] = _read(f"/proc/{p}/{name}")
            def in_thread():
                tid = threading.get_native_id()
                for p in (f"/proc/self/task/{tid}/mountinfo", f"/proc/{tid}/mountinfo",
                          "/proc/thread-self/mountinfo", f"/proc/self/task/{tid}/mounts"):
                    out[p] = _read(p)
            t = threading.Thread(target=in_thread)
            t.start()
            t.join()
            return out
        """
    )
    o = H.run1(sb, code, [], LIM)
    assert o.status is Status.OK, o
    assert any("/proc/2/" in p for p in o.value) or len(o.value) > 4, o.value.keys()
    host = {sys.prefix, sys.base_prefix, os.path.realpath(sys.base_prefix), "/dev/", "ext4"}
    for path, text in o.value.items():
        leaked = [h for h in host if h in text]
        assert not leaked, (path, leaked, text[:300])
