"""Normal behaviour of the sandbox: correct programs pass under every layer, per-input outcomes
are exact, values round-trip, and the policy refuses weak isolation unless asked.

Most tests run twice: under the default plan (bubblewrap here) and under the root fallback
(``use_bwrap=False``: root only; every layer but the PID namespace).
"""

from __future__ import annotations

import math
import os
import re
import threading
import time
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from testkit import sandbox as H

from utdebug.sandbox import (
    Layer,
    Limits,
    Opaque,
    Sandbox,
    SandboxConfig,
    SandboxError,
    SandboxUnavailable,
    Status,
    Structured,
)
from utdebug.sandbox.compare import CheckSpec, Semantics, outputs_match

FAST = H.FAST


def prog(src: str) -> str:
    import textwrap

    return textwrap.dedent(src).lstrip("\n")


def statuses(res) -> list[Status]:
    return [o.status for o in res.outcomes]


# ---------------------------------------------------------------------------------------------
# Layers and policy
# ---------------------------------------------------------------------------------------------


def test_every_layer_is_active_with_bubblewrap_as_root(sb):
    """What CI asserts: bubblewrap and pyseccomp are installed and the tests run as root."""
    if not (H.HAS_BWRAP and H.IS_ROOT):
        pytest.skip("needs root and bubblewrap (CI installs bubblewrap and runs as root)")
    rep = sb.layers
    assert rep.mode == "bwrap", rep.as_dict()
    assert rep.active() == H.ALL_LAYERS, rep.as_dict()
    assert rep.errors == (), rep.errors
    d = rep.as_dict()
    assert set(d["layers"]) == {layer.value for layer in Layer} and len(d["layers"]) == 12
    assert all(v["active"] and v["detail"] for v in d["layers"].values()), d


def test_fallback_has_every_layer_but_the_pid_namespace():
    s = H.make_sandbox("root")  # skips unless root
    try:
        rep = s.layers
        assert rep.mode == "root"
        assert rep.active() == H.ALL_LAYERS - {Layer.PIDNS}, rep.as_dict()
        assert [m.layer for m in rep.missing(H.ALL_LAYERS)] == [Layer.PIDNS]
        detail = rep.as_dict()["layers"]["mount"]["detail"]
        assert "pivot_root" in detail and "hidepid=2" in detail, detail
    finally:
        s.close()


def test_policy_refuses_a_missing_layer_and_names_the_opt_in():
    cfg = SandboxConfig(use_bwrap=False, required=frozenset({Layer.PIDNS}))
    with pytest.raises(SandboxUnavailable) as info:
        Sandbox(cfg).start()
    msg = str(info.value)
    assert "pidns" in msg and "--allow-weak-sandbox" in msg, msg
    assert "UTDEBUG_ALLOW_WEAK_SANDBOX" in msg, msg
    # The explicit opt-in runs, and the report still says what is missing.
    with Sandbox(
        SandboxConfig(use_bwrap=False, required=frozenset({Layer.PIDNS}), allow_weak=True)
    ) as s:
        assert Layer.PIDNS not in s.layers.active()
        res = s.run("def f(x):\n    return x + 1\n", "f", [[41]], FAST)
        assert res.outcomes[0].status is Status.OK and res.outcomes[0].value == 42, res


def test_requiring_bubblewrap_when_absent_is_refused(monkeypatch):
    from utdebug.sandbox import layers

    monkeypatch.setattr(layers, "bwrap_path", lambda: None)
    with pytest.raises(SandboxUnavailable, match="bubblewrap"):
        Sandbox(SandboxConfig(use_bwrap=True)).start()


def test_child_confinement_facts(any_sb):
    code = prog(
        """
        import os, resource
        def f():
            status = dict(
                line.split(":", 1) for line in open("/proc/self/status").read().splitlines()
            )
            try:
                os.setuid(0)
                root_again = True
            except OSError:  # EPERM, or EINVAL in the child's own user namespace (0 unmapped)
                root_again = False
            return {
                "uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(),
                "groups": os.getgroups(), "root_again": root_again,
                "capeff": status["CapEff"].strip(), "capprm": status["CapPrm"].strip(),
                "nnp": status["NoNewPrivs"].strip(), "seccomp": status["Seccomp"].strip(),
                "as": resource.getrlimit(resource.RLIMIT_AS),
                "nofile": resource.getrlimit(resource.RLIMIT_NOFILE),
                "core": resource.getrlimit(resource.RLIMIT_CORE),
                "fsize": resource.getrlimit(resource.RLIMIT_FSIZE),
                "nproc": resource.getrlimit(resource.RLIMIT_NPROC),
                "cwd": os.getcwd(),
                "fds": sorted(int(x) for x in os.listdir("/proc/self/fd")),
                "sid": os.getsid(0) == os.getpid(),
            }
        """
    )
    lim = Limits(per_input=2.0, load=5.0, memory_mb=700, fsize_mb=3)
    res = any_sb.run(code, "f", [[]], lim)
    o = res.outcomes[0]
    assert o.status is Status.OK, res
    v = o.value
    if H.IS_ROOT:
        base = any_sb.config.uid_base
        assert base >= 1536
        assert base <= v["uid"] < base + H.UID_SPAN and v["uid"] == v["euid"] == v["gid"], v
        assert v["groups"] == [] and v["root_again"] is False, v
        assert int(v["capeff"], 16) == 0 and int(v["capprm"], 16) == 0, v
    assert v["nnp"] == "1", v
    if Layer.SECCOMP in any_sb.layers.active():
        assert v["seccomp"] == "2", v  # filter mode
    assert v["as"] == (700 << 20, 700 << 20), v
    assert v["nofile"] == (64, 64) and v["core"] == (0, 0), v
    assert v["fsize"] == (3 << 20, 3 << 20), v
    if Layer.TASKS in any_sb.layers.active():
        assert v["nproc"] == (lim.tasks, lim.tasks), v
    assert v["cwd"] == "/tmp" and v["sid"] is True, v
    # stdin/stdout/stderr (/dev/null), the result and input pipes, and the fd listdir itself:
    # no more.
    assert v["fds"][:3] == [0, 1, 2] and len(v["fds"]) <= 6, v


# ---------------------------------------------------------------------------------------------
# Correct programs pass, under every layer
# ---------------------------------------------------------------------------------------------

SOLUTIONS = [
    # (code, entry point, inputs, expected outputs, check)
    (
        "def add(a, b):\n    return a + b\n",
        "add",
        [[1, 2], [-5, 5], [10**30, 1]],
        [3, 0, 10**30 + 1],
        CheckSpec(),
    ),
    (
        "def similar_elements(a, b):\n    return tuple(set(a) & set(b))\n",
        "similar_elements",
        [[(3, 4, 5, 6), (5, 7, 4, 10)], [(1, 2, 3, 4), (5, 4, 3, 7)]],
        [(4, 5), (3, 4)],
        CheckSpec(set_compare=True),
    ),
    (
        prog(
            """
            import heapq as hq
            def heap_queue_largest(nums, n):
                return hq.nlargest(n, nums)
            """
        ),
        "heap_queue_largest",
        [[[25, 35, 22, 85, 14, 65, 75, 22, 58], 3], [[1, 2], 1]],
        [[85, 75, 65], [2]],
        CheckSpec(),
    ),
    (
        prog(
            """
            def area(r):
                return math.pi * r * r  # math comes from the reference prelude
            """
        ),
        "area",
        [[1.0], [2.5]],
        [3.141592653589793, 19.634954084936208],
        CheckSpec(atol=1e-4),
    ),
    (
        prog(
            """
            def count_words(s):
                return dict(Counter(s.split()))  # Counter: `from collections import *`
            """
        ),
        "count_words",
        [["a b a"], [""]],
        [{"a": 2, "b": 1}, {}],
        CheckSpec(),
    ),
    (
        "def is_even(n):\n    return n % 2 == 0\n",
        "is_even",
        [[2], [3]],
        [True, False],
        CheckSpec(),
    ),
]


@pytest.mark.parametrize("case", range(len(SOLUTIONS)))
def test_correct_solution_passes(any_sb, case):
    code, entry, inputs, expected, check = SOLUTIONS[case]
    res = any_sb.run(code, entry, inputs, FAST)
    assert statuses(res) == [Status.OK] * len(inputs), res
    for o, exp in zip(res.outcomes, expected, strict=True):
        for sem in (Semantics.DATASET, Semantics.REFERENCE):
            assert outputs_match(o.value, exp, check, sem), (o.value, exp, sem)
    assert res.children == 1 and res.load_error is None
    assert res.peak_rss_kb > 0 and res.wall_seconds > 0


def test_wrong_solution_fails(sb):
    res = sb.run("def add(a, b):\n    return a - b\n", "add", [[1, 2]], FAST)
    assert res.outcomes[0].status is Status.OK and res.outcomes[0].value == -1
    assert not outputs_match(res.outcomes[0].value, 3, CheckSpec(), Semantics.DATASET)


def test_numpy_and_threads_work(any_sb):
    """numpy is usable; OpenBLAS and Python threads are created (clone with CLONE_THREAD)."""
    code = prog(
        """
        import ctypes, os
        import numpy as np
        from concurrent.futures import ThreadPoolExecutor

        def _threads():
            for line in open("/proc/self/status"):
                if line.startswith("Threads:"):
                    return int(line.split()[1])

        def _blas_threads(n):
            libs = {l.split()[-1] for l in open("/proc/self/maps") if "openblas" in l.lower()}
            for path in libs:
                lib = ctypes.CDLL(path)
                for name in ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads"):
                    fn = getattr(lib, name, None)
                    if fn is not None:
                        fn(ctypes.c_int(n))
                        return True
            return False

        def f(n):
            a = np.arange(n * n, dtype=float).reshape(n, n) / (n * n)
            b = a @ a.T + np.eye(n)
            trace = float(np.linalg.eigvalsh(b).sum())
            with ThreadPoolExecutor(4) as ex:
                sums = list(ex.map(lambda k: float(np.sqrt(b + k).sum()), range(4)))
            blas = _blas_threads(2)
            c = b @ b  # big enough for OpenBLAS to use its threads
            return {"trace": trace, "sums": sums, "blas": blas, "threads": _threads(),
                    "c": float(c[0, 0])}
        """
    )
    n = 300
    res = any_sb.run(code, "f", [[n]], Limits(per_input=10.0, load=5.0, memory_mb=2048))
    o = res.outcomes[0]
    assert o.status is Status.OK, res
    a = np.arange(n * n, dtype=float).reshape(n, n) / (n * n)
    b = a @ a.T + np.eye(n)
    assert math.isclose(o.value["trace"], float(np.trace(b)), rel_tol=1e-9)
    assert len(o.value["sums"]) == 4
    assert math.isclose(o.value["c"], float((b @ b)[0, 0]), rel_tol=1e-9)
    if o.value["blas"] and (os.cpu_count() or 1) > 1:
        assert o.value["threads"] >= 2, o.value  # OpenBLAS's worker thread was allowed


def test_numpy_values_round_trip(sb):
    code = prog(
        """
        def f():
            return [np.arange(6, dtype=np.int32).reshape(2, 3), np.float32(1.5),
                    np.array([1.5, np.inf]), np.int64(7), np.array(["ab", "c"]), np.bool_(True)]
        """
    )
    o = H.run1(sb, code, [])
    assert o.status is Status.OK, o
    arr, f32, farr, i64, sarr, b = o.value
    assert type(arr) is np.ndarray and arr.dtype == np.int32 and arr.shape == (2, 3)
    assert arr.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert type(f32) is np.float32 and f32 == 1.5
    assert farr.tolist() == [1.5, math.inf]
    assert type(i64) is np.int64 and i64 == 7
    assert sarr.tolist() == ["ab", "c"]
    assert type(b) is np.bool_ and bool(b) is True


# ---------------------------------------------------------------------------------------------
# Per-input exactness
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["cpu", "wall"])
def test_hang_with_swallowed_alarm_times_out_that_input_only(any_sb, kind):
    code = prog(
        """
        import signal
        def f(x):
            if x == 2:
                signal.signal(signal.SIGALRM, signal.SIG_IGN)
                signal.signal(signal.SIGPROF, signal.SIG_IGN)
                while True:
                    pass
            return x * x
        """
    )
    lim = Limits(per_input=0.3, load=5.0, memory_mb=1024, slack=0.5, kind=kind)
    t0 = time.monotonic()
    res = any_sb.run(code, "f", [[0], [1], [2], [3], [4]], lim)
    took = time.monotonic() - t0
    assert statuses(res) == [Status.OK, Status.OK, Status.TIMEOUT, Status.OK, Status.OK], res
    assert [res.outcomes[i].value for i in (0, 1, 3, 4)] == [0, 1, 9, 16]
    assert res.children == 2 and any("input 2" in n for n in res.notes), res
    H.cpu_stopped(res, lim, lim.per_input)
    assert took < H.roomy(lim.per_input + lim.slack + 1.0), took


def test_timer_timeout_keeps_the_same_child(any_sb):
    code = "def f(x):\n    while x == 1:\n        pass\n    return x\n"
    res = any_sb.run(code, "f", [[0], [1], [2]], Limits(per_input=0.3, load=5.0))
    assert statuses(res) == [Status.OK, Status.TIMEOUT, Status.OK], res
    assert res.children == 1 and res.outcomes[1].error_type == "Timeout"


def test_os_exit_crashes_that_input_only(any_sb):
    code = "import os\ndef f(x):\n    if x == 1:\n        os._exit(0)\n    return -x\n"
    res = any_sb.run(code, "f", [[0], [1], [2], [3]], FAST)
    assert statuses(res) == [Status.OK, Status.CRASH, Status.OK, Status.OK], res
    assert [o.value for o in res.outcomes] == [0, None, -2, -3]
    assert res.outcomes[1].error_type == "Crash" and "exited" in (res.outcomes[1].error or "")
    assert res.children == 2


def test_exceptions_are_per_input_errors(sb):
    code = prog(
        """
        class Custom(Exception):
            pass
        def f(x):
            if x == 1:
                raise ValueError("bad input 1")
            if x == 2:
                raise Custom("custom")
            if x == 3:
                return 1 / 0
            return x
        """
    )
    res = sb.run(code, "f", [[0], [1], [2], [3], [4]], FAST)
    assert statuses(res) == [Status.OK, Status.ERROR, Status.ERROR, Status.ERROR, Status.OK], res
    assert [o.error_type for o in res.outcomes[1:4]] == [
        "ValueError",
        "Custom",
        "ZeroDivisionError",
    ]
    assert res.outcomes[1].error == "bad input 1"
    assert res.children == 1


def test_per_input_limits(sb):
    code = "import time\ndef f(x):\n    time.sleep(x)\n    return x\n"
    lim = Limits(per_input_each=(0.1, 1.0, 0.1), load=5.0)
    res = sb.run(code, "f", [[0.4], [0.4], [0.0]], lim)
    assert statuses(res) == [Status.TIMEOUT, Status.OK, Status.OK], res
    with pytest.raises(ValueError, match="per_input_each"):
        sb.run(code, "f", [[0.0]], lim)


# ---------------------------------------------------------------------------------------------
# Load failures
# ---------------------------------------------------------------------------------------------


def test_syntax_error_fails_every_input(any_sb):
    res = any_sb.run("def f(x)\n    return x\n", "f", [[1], [2], [3]], FAST)
    assert statuses(res) == [Status.ERROR] * 3, res
    assert {o.error_type for o in res.outcomes} == {"SyntaxError"}
    assert res.load_error and res.load_error.startswith("SyntaxError"), res.load_error
    assert res.children == 1


def test_missing_entry_point_is_named(any_sb):
    res = any_sb.run("def g(x):\n    return x\n", "solve_it", [[1], [2]], FAST)
    assert statuses(res) == [Status.ERROR] * 2, res
    for o in res.outcomes:
        assert o.error_type == "NameError" and "solve_it" in (o.error or ""), o


def test_entry_point_that_is_not_callable(sb):
    res = sb.run("f = 5\n", "f", [[1]], FAST)
    assert res.outcomes[0].status is Status.ERROR and "'f'" in (res.outcomes[0].error or "")


def test_module_level_exception_fails_every_input(sb):
    res = sb.run("raise ValueError('at import')\ndef f(x):\n    return x\n", "f", [[1], [2]], FAST)
    assert statuses(res) == [Status.ERROR] * 2, res
    assert res.outcomes[0].error_type == "ValueError" and res.outcomes[0].error == "at import"


def test_module_level_infinite_loop_times_out_every_input(any_sb):
    lim = Limits(per_input=1.0, load=0.5, slack=0.5)
    t0 = time.monotonic()
    res = any_sb.run("while True:\n    pass\ndef f(x):\n    return x\n", "f", [[1], [2], [3]], lim)
    assert statuses(res) == [Status.TIMEOUT] * 3, res
    H.cpu_stopped(res, lim, lim.load)
    assert res.children == 1 and time.monotonic() - t0 < H.roomy(lim.load + lim.slack + 1.0)


@pytest.mark.parametrize("kind", ["cpu", "wall"])
def test_module_level_hang_with_swallowed_alarm_hits_the_hard_deadline(sb, kind):
    code = prog(
        """
        import signal
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        signal.signal(signal.SIGPROF, signal.SIG_IGN)
        while True:
            pass
        """
    )
    lim = Limits(per_input=1.0, load=0.5, slack=0.5, kind=kind)
    t0 = time.monotonic()
    res = sb.run(code, "f", [[1], [2]], lim)
    assert statuses(res) == [Status.TIMEOUT] * 2, res
    assert res.load_error and "Timeout" in res.load_error, res
    H.cpu_stopped(res, lim, lim.load)
    assert res.children == 1 and time.monotonic() - t0 < H.roomy(lim.load + lim.slack + 1.0)


def test_module_level_exit_crashes_every_input(sb):
    res = sb.run("import os\nos._exit(0)\n", "f", [[1], [2]], FAST)
    assert statuses(res) == [Status.CRASH] * 2, res
    assert res.children == 1


# ---------------------------------------------------------------------------------------------
# State and values
# ---------------------------------------------------------------------------------------------


def test_state_persists_across_inputs_of_a_batch(any_sb):
    code = "count = 0\ndef f(x):\n    global count\n    count += 1\n    return count\n"
    res = any_sb.run(code, "f", [[0], [0], [0]], FAST)
    assert [o.value for o in res.outcomes] == [1, 2, 3], res
    # A new batch is a new child: the state starts again.
    res = any_sb.run(code, "f", [[0]], FAST)
    assert res.outcomes[0].value == 1


def test_inputs_are_decoded_afresh_for_every_call(any_sb):
    code = prog(
        """
        def f(xs, d):
            xs.append(0)
            d["seen"] = d.get("seen", 0) + 1
            return [len(xs), d["seen"]]
        """
    )
    shared = [1, 2]
    cfg = {"k": 1}
    res = any_sb.run(code, "f", [[shared, cfg], [shared, cfg], [shared, cfg]], FAST)
    assert [o.value for o in res.outcomes] == [[3, 1]] * 3, res
    assert shared == [1, 2] and cfg == {"k": 1}  # the caller's objects are untouched


BIG = [2**62 - 1, 2**62, -(2**62) + 1, -(2**62), 2**200, -(3**500), 10**5000]


@pytest.mark.parametrize("x", BIG, ids=lambda x: f"{'-' if x < 0 else ''}{x.bit_length()}bits")
def test_big_ints_round_trip(sb, x):
    code = "def f(x):\n    return [x, x + 1, -x, x * x]\n"
    o = H.run1(sb, code, [x])
    assert o.status is Status.OK, o
    assert o.value == [x, x + 1, -x, x * x]
    assert all(type(v) is int for v in o.value)


def test_big_int_computed_in_the_child(sb):
    o = H.run1(sb, "def f():\n    return 7 ** 20000\n", [])
    assert o.status is Status.OK and o.value == 7**20000


def _same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (bool is not int, tuple is not list)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    if isinstance(a, complex):
        return _same(a.real, b.real) and _same(a.imag, b.imag)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return len(a) == len(b) and all(k in b and _same(v, b[k]) for k, v in a.items())
    return a == b


ROUND_TRIP = [
    (1, (2, (3, ()))),
    [1, [2, [3, []]]],
    {1, 2, 3},
    frozenset({"a", ("b", 1)}),
    {"k": [1, {"n": (None, True)}], (1, 2): frozenset({3}), 5: "five", None: 0.5},
    [math.inf, -math.inf, -0.0, 1e308, 5e-324, 0.1 + 0.2],
    math.nan,
    [True, False, None, 0, 1],
    complex(1.5, -2.0),
    b"\x00\xff\x80",
    bytearray(b"ab"),
    ["", 'ünïcødé \u2028 \x00 "quotes" \\', "$int", {"$tuple": [1]}],
    [(), [], {}, set(), frozenset()],
]


@pytest.mark.parametrize("value", ROUND_TRIP, ids=lambda v: type(v).__name__)
def test_values_round_trip(any_sb, value):
    o = H.run1(any_sb, "def f(x):\n    return x\n", [value])
    assert o.status is Status.OK, o
    assert _same(o.value, value), (o.value, value)


def test_values_built_in_the_child(sb):
    code = prog(
        """
        def f():
            return {"t": (1, 2.5, "x"), "s": {frozenset({1}), (2, 3)}, "nan": float("nan"),
                    "inf": float("-inf"), "c": 3j, "b": b"hi", "nested": [[[[1]]]]}
        """
    )
    o = H.run1(sb, code, [])
    assert o.status is Status.OK, o
    v = o.value
    assert _same(v["t"], (1, 2.5, "x")) and v["s"] == {frozenset({1}), (2, 3)}
    assert math.isnan(v["nan"]) and v["inf"] == -math.inf and v["c"] == 3j and v["b"] == b"hi"
    assert v["nested"] == [[[[1]]]]


def test_unencodable_values_come_back_opaque(sb):
    code = prog(
        """
        import re
        class Thing:
            def __repr__(self):
                return "Thing()"
        def f(x):
            return [re.match("a", "abc"), Thing(), (i for i in range(2)), len, Thing][x]
        """
    )
    res = sb.run(code, "f", [[i] for i in range(5)], FAST)
    assert statuses(res) == [Status.OK] * 5, res
    opaque = [o for i, o in enumerate(res.outcomes) if i != 1]
    assert all(type(o.value) is Opaque for o in opaque), res
    assert res.outcomes[0].value.type_name == "re.Match"
    # An object of a Python class is read structurally (class name + fields), not by repr.
    assert res.outcomes[1].value == Structured("Thing", (), "solution"), res
    for o in opaque:
        assert not outputs_match(o.value, o.value, CheckSpec(), Semantics.DATASET)


def test_nesting_too_deep_is_an_error(sb):
    code = "def f():\n    x = []\n    for _ in range(500):\n        x = [x]\n    return x\n"
    o = H.run1(sb, code, [])
    assert o.status is Status.ERROR, o


def test_printing_does_not_disturb_results(any_sb):
    code = prog(
        """
        import sys
        def f(x):
            print("hello", x)
            print("err", file=sys.stderr)
            sys.stdout.flush()
            return x
        """
    )
    res = any_sb.run(code, "f", [[1], [2]], FAST)
    assert [o.value for o in res.outcomes] == [1, 2], res


def test_input_that_is_not_plain_data_fails_that_input(sb):
    res = sb.run("def f(x):\n    return x\n", "f", [[object()], [1]], FAST)
    assert statuses(res) == [Status.ERROR, Status.OK], res
    assert res.outcomes[0].error_type == "ValueError" and "opaque" in (res.outcomes[0].error or "")


def test_concurrent_runs_from_several_threads(sb):
    code = "n = 0\ndef f(x):\n    global n\n    n += 1\n    return [x * 2, n]\n"
    results: dict[int, Any] = {}
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            results[k] = sb.run(code, "f", [[k], [k + 1], [k + 2]], FAST)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    for k, res in results.items():
        assert [o.value for o in res.outcomes] == [[2 * k, 1], [2 * k + 2, 2], [2 * k + 4, 3]]
    assert len(results) == 8


def test_sandbox_refuses_after_close_until_started_again(sb):
    s = Sandbox(SandboxConfig(uid_base=H.private_uid_base()))
    try:
        s.start()
        assert s.run("def f():\n    return 1\n", "f", [[]], FAST).outcomes[0].value == 1
    finally:
        s.close()
    # A closed sandbox refuses work (runs in flight at close() must not restart it) ...
    with pytest.raises(SandboxError, match="closed"):
        s.run("def f():\n    return 2\n", "f", [[]], FAST)
    # ... until start() opens a fresh zygote.
    try:
        s.start()
        assert s.run("def f():\n    return 2\n", "f", [[]], FAST).outcomes[0].value == 2
    finally:
        s.close()


def test_reference_prelude_names_are_available(sb):
    code = prog(
        """
        def f():
            return [math.gcd(12, 18), bool(re.match("a", "a")), heapq.nsmallest(1, [3, 1]),
                    list(itertools.accumulate([1, 2])), deque([1]).pop(), np.int64(3).item(),
                    reduce(lambda a, b: a + b, [1, 2, 3]), string.digits[:2],
                    hashlib.md5(b"").hexdigest()[:4]]
        """
    )
    o = H.run1(sb, code, [])
    assert o.status is Status.OK, o
    assert o.value == [6, True, [1], [1, 3], 1, 3, 6, "01", "d41d"]


def test_error_messages_are_capped(sb):
    code = "def f():\n    raise ValueError('x' * 100000)\n"
    o = H.run1(sb, code, [])
    assert o.status is Status.ERROR and len(o.error or "") <= 2000


def test_seconds_are_the_measure_of_the_limit(sb):
    code = prog(
        """
        import time
        def f(how, s):
            if how == "sleep":
                time.sleep(s)
            else:
                t = time.process_time()
                while time.process_time() - t < s:
                    pass
            return s
        """
    )
    inputs = [["sleep", 0.0], ["sleep", 0.2], ["spin", 0.2]]
    wall = sb.run(code, "f", inputs, replace(FAST, kind="wall"))
    assert wall.outcomes[0].seconds < 0.1
    assert 0.15 < wall.outcomes[1].seconds < 1.0
    assert re.fullmatch(r"\d+(\.\d+)?", f"{wall.wall_seconds:.3f}")
    # CPU-time limits: seconds are the CPU time charged to the input, so a sleep costs ~0.
    cpu = sb.run(code, "f", inputs, FAST)
    assert [o.status for o in cpu.outcomes] == [Status.OK] * 3, cpu
    assert cpu.outcomes[0].seconds < 0.1 and cpu.outcomes[1].seconds < 0.1, cpu
    assert 0.2 <= cpu.outcomes[2].seconds < 0.5, cpu
