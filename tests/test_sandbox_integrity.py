"""Round 4 of the hostile programs: no program reads another, none decides its own verdict.

Each test is an attack that got through at 62dca08: a program that scans the memory it
inherits for earlier programs (a gold solution), module-level work that was free, a program
that raises the runner's own timeout under wall-clock limits. The tests of tests with setup
and of structural values are in tests/test_program_tests.py and
tests/test_structured_values.py.
"""

from __future__ import annotations

import textwrap
import uuid

import pytest
from testkit.wait import poll

from utdebug.sandbox import LimitKind, Limits, Sandbox, Status

LIM = Limits(per_input=2.0, memory_mb=1024, slack=0.5, wall_factor=20.0)


def prog(src: str) -> str:
    return textwrap.dedent(src).lstrip("\n")


# A program that reads every readable mapping of its own process (what a fork inherits from
# the zygote included) and counts the places where a marker's bytes occur.
SCANNER = prog(
    """
    import ctypes

    def scan(marker):
        needle = marker.encode()
        found = 0
        with open("/proc/self/maps") as f:
            regions = [line.split() for line in f]
        for parts in regions:
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            name = parts[5] if len(parts) > 5 else ""
            # the heap and anonymous memory: where a parsed job's text would be (a file's
            # mapping can end past the file's end, and reading there is a SIGBUS)
            if "r" not in parts[1] or hi - lo > 1 << 30 or name not in ("", "[heap]"):
                continue
            found += ctypes.string_at(lo, hi - lo).count(needle)
        return found
    """
)


def test_no_program_reads_an_earlier_one_from_inherited_memory(sb: Sandbox) -> None:
    """A 'gold solution' holding a marker runs first (with 0, 3 and 30 programs between);
    a later program scans its whole address space for the marker: it must not be there,
    beyond the copies its own argument brings."""
    for between in (0, 3, 30):
        marker = "GOLD" + uuid.uuid4().hex  # in no other program, input or test
        gold = prog(
            f"""
            SECRET = {marker!r} * 3
            def solve(x):
                return x + len(SECRET)
            """
        )
        res = sb.run(gold, "solve", [(1,)], LIM)
        assert res.outcomes[0].status is Status.OK, res
        for k in range(between):
            sb.run(f"def g(x):\n    return x * {k}\n", "g", [(k,)], LIM)
        # the scanner gets the marker split in two, so that its own input does not hold it
        half = len(marker) // 2
        code = SCANNER + "\n\ndef probe(a, b):\n    return scan(a + b)\n"
        res = sb.run(code, "probe", [(marker[:half], marker[half:])], LIM)
        out = res.outcomes[0]
        assert out.status is Status.OK, out
        # its own copy of the joined marker (the call's ``a + b`` and the bytes of it) only
        assert out.value <= 2, f"{out.value} copies of an earlier program ({between} between)"


def test_a_concurrent_program_is_not_readable_either(sb: Sandbox) -> None:
    """Two batches at once: the second scans while the first, holding the marker, sleeps."""
    import threading

    marker = "CONC" + uuid.uuid4().hex
    holder = prog(
        f"""
        import time
        SECRET = {marker!r} * 3
        def hold(s):
            time.sleep(s)
            return len(SECRET)
        """
    )
    done: list[object] = []
    t = threading.Thread(target=lambda: done.append(sb.run(holder, "hold", [(1.5,)], LIM)))
    t.start()
    try:
        half = len(marker) // 2
        code = SCANNER + "\n\ndef probe(a, b):\n    return scan(a + b)\n"
        res = sb.run(code, "probe", [(marker[:half], marker[half:])], LIM)
    finally:
        t.join()
    assert res.outcomes[0].status is Status.OK, res
    assert res.outcomes[0].value <= 2, res.outcomes[0]


def test_work_done_at_load_time_counts_against_the_load_limit(sb: Sandbox) -> None:
    """A module that spends 2.6 s of CPU at import (computing answers for inputs it guesses)
    does not load under the default load limit (the per-input limit, 2 s): every input is a
    timeout, none a pass."""
    code = prog(
        """
        import time
        t = time.process_time()
        ANSWERS = {}
        while time.process_time() - t < 2.6:
            ANSWERS[len(ANSWERS) % 1000] = 1
        def f(x):
            return x + 1
        """
    )
    res = sb.run(code, "f", [(1,), (2,)], LIM)
    assert [o.status for o in res.outcomes] == [Status.TIMEOUT, Status.TIMEOUT], res
    assert "load limit: 2 s CPU-time" in (res.outcomes[0].error or ""), res.outcomes[0]
    # a quick module still loads, and an explicit load limit still holds
    assert sb.run("def f(x):\n    return x + 1\n", "f", [(1,)], LIM).outcomes[0].value == 2
    lim = Limits(per_input=2.0, load=8.0, memory_mb=1024, slack=0.5, wall_factor=20.0)
    assert sb.run(code, "f", [(1,)], lim).outcomes[0].value == 2


def test_the_runners_own_timeout_is_no_timeout_under_wall_clock_limits(sb: Sandbox) -> None:
    """A program that raises the child's own timeout exception right away, under wall-clock
    limits, gets an error, not a timeout: a timeout is the parent's finding only."""
    code = prog(
        """
        def f(x):
            import sys
            for cls in type.__subclasses__(BaseException):
                if cls.__name__ == "_Timeout":
                    raise cls()
            main = sys.modules.get("__main__")
            raise getattr(main, "_Timeout", RuntimeError)()
        """
    )
    lim = Limits(per_input=2.0, memory_mb=1024, slack=0.5, kind=LimitKind.WALL)
    out = sb.run(code, "f", [(1,)], lim).outcomes[0]
    assert out.status is Status.ERROR, out
    assert "not confirmed" in (out.error or ""), out


# ---------------------------------------------------------------------------------------------
# Tests with setup: the stage and the exception's class are the runner's, never the module's
# ---------------------------------------------------------------------------------------------


def _verdict(sb: Sandbox, module: str, setup: str, call: str, expected: object, then=None):  # type: ignore[no-untyped-def]
    from utdebug.engine import program
    from utdebug.sandbox.compare import CheckSpec

    res = sb.run(module, "", [()], LIM, test=program.staged_test(setup, call, then))
    return program.judge_program(res.outcomes[0], expected, CheckSpec()), res.outcomes[0]


RAISES_CASES = {
    # a failing setup must never satisfy "raises X"
    "module rebinds Exception": (
        "Exception = BaseException\nclass Box:\n    def __init__(self, n):\n"
        "        raise ValueError('no')\n    def get(self):\n        return 1\n",
        "b = Box(1)",
        "b.get()",
        "ValueError",
    ),
    "build_class hook renames the runner's classes": (
        "import builtins\n_orig = builtins.__build_class__\n"
        "def _hook(func, name, *a, **k):\n"
        "    return _orig(func, 'ValueError' if name.startswith('Utd') else name, *a, **k)\n"
        "builtins.__build_class__ = _hook\n"
        "class Box:\n    def __init__(self):\n        raise ValueError('setup')\n"
        "    def get(self):\n        return 1\n",
        "b = Box()",
        "b.get()",
        "ValueError",
    ),
    "a thread swaps the runner's globals": (
        "import sys, threading, time\n"
        "def _swap():\n"
        "    for _ in range(2000):\n"
        "        for m in list(sys.modules.values()):\n"
        "            d = getattr(m, '__dict__', {})\n"
        "            for k in list(d):\n"
        "                if 'setup' in k.lower() and 'utd' in k.lower():\n"
        "                    d[k] = lambda e: ValueError(str(e))\n"
        "        time.sleep(0.0005)\n"
        "threading.Thread(target=_swap, daemon=True).start()\n"
        "class Box:\n    def __init__(self):\n        time.sleep(0.05)\n"
        "        raise KeyError('setup')\n    def get(self):\n        return 1\n",
        "b = Box()",
        "b.get()",
        "ValueError",
    ),
    # a BaseException subclass named like a builtin is not that builtin
    "BaseException subclass named ValueError": (
        "class ValueError(BaseException):\n    pass\ndef f(x):\n    raise ValueError(x)\n",
        "",
        "f(1)",
        "ValueError",
    ),
    "own KeyError satisfies raises KeyError": (
        "class KeyError(Exception):\n    pass\ndef f(d, k):\n    raise KeyError(k)\n",
        "",
        "f({}, 1)",
        "KeyError",
    ),
    "own KeyError satisfies raises LookupError": (
        "class KeyError(Exception):\n    pass\ndef f(d, k):\n    raise KeyError(k)\n",
        "",
        "f({}, 1)",
        "LookupError",
    ),
    "a class renamed IndexError": (
        "class Oops(Exception):\n    pass\nOops.__name__ = Oops.__qualname__ = 'IndexError'\n"
        "def f(xs):\n    raise Oops('x')\n",
        "",
        "f([])",
        "IndexError",
    ),
}


@pytest.mark.parametrize("case", sorted(RAISES_CASES))
def test_a_module_cannot_satisfy_raises_with_what_it_names(sb: Sandbox, case: str) -> None:
    from utdebug.engine.program import Raises
    from utdebug.sandbox.verdicts import Verdict

    module, setup, call, name = RAISES_CASES[case]
    judged, out = _verdict(sb, module, setup, call, Raises(name))
    assert judged.verdict is Verdict.FAIL, (case, judged, out)


def test_real_exceptions_still_satisfy_raises(sb: Sandbox) -> None:
    """The honest cases: a builtin and its base classes, a module's own exception class, one
    of the standard library's (by module and name)."""
    from utdebug.engine.program import Raises
    from utdebug.sandbox.verdicts import Verdict

    module = (
        "import json\nclass Broke(ValueError):\n    pass\n"
        "def f(how):\n    if how == 'key':\n        return {}[how]\n"
        "    if how == 'json':\n        return json.loads('{')\n    raise Broke(how)\n"
    )
    for call, name in (
        ("f('key')", "KeyError"),
        ("f('key')", "LookupError"),
        ("f('key')", "Exception"),
        ("f('own')", "Broke"),
        ("f('own')", "ValueError"),
        ("f('json')", "json.JSONDecodeError"),
        ("f('json')", "JSONDecodeError"),
        ("f('json')", "ValueError"),
    ):
        judged, out = _verdict(sb, module, "", call, Raises(name))
        assert judged.verdict is Verdict.PASS, (call, name, judged, out)
    judged, _ = _verdict(sb, module, "", "f('key')", Raises("IndexError"))
    assert judged.verdict is Verdict.FAIL


def test_a_failing_setup_is_reported_as_the_setup(sb: Sandbox) -> None:
    from utdebug.engine.program import Raises, setup_failed
    from utdebug.sandbox.verdicts import Verdict

    module = prog(
        """
        class Box:
            def __init__(self, n):
                self.n = n
            def get(self):
                raise KeyError(1)
        """
    )
    judged, out = _verdict(sb, module, "b = Box()", "b.get()", Raises("TypeError"))
    assert setup_failed(out) and out.error_type == "TypeError", out
    assert judged.verdict is Verdict.FAIL and (judged.detail or "").startswith("setup raised")
    judged, out = _verdict(sb, module, "b = Box(1)", "b.get()", Raises("KeyError"))
    assert judged.verdict is Verdict.PASS and out.raised is not None
    assert out.raised.stage == "call"


def test_patching_asyncio_cannot_hide_a_call_that_raised(sb: Sandbox) -> None:
    """``asyncio.Runner.run`` patched to swallow what the coroutine raised: the call still
    counts as raising, and the ``then`` value is never compared instead."""
    from utdebug.sandbox.verdicts import Verdict

    module = (
        "import asyncio\n_orig = asyncio.Runner.run\n"
        "def _quiet(self, coro, **k):\n    try:\n        return _orig(self, coro, **k)\n"
        "    except BaseException:\n        return None\n"
        "asyncio.Runner.run = _quiet\n"
        "class Acc:\n    def __init__(self):\n        self.n = 0\n"
        "    async def add(self, k):\n        self.n += k\n        raise ValueError('bad')\n"
    )
    judged, out = _verdict(sb, module, "a = Acc()", "a.add(2)", 2, then="a.n")
    assert judged.verdict is Verdict.FAIL, (judged, out)
    assert out.error_type == "ValueError" and out.raised is not None, out
    assert out.raised.stage == "call", out
    # an honest async method still passes, with await in the setup too
    honest = prog(
        """
        class Acc:
            def __init__(self):
                self.n = 0
            async def add(self, k):
                self.n += k
                return self.n
        """
    )
    judged, _ = _verdict(sb, honest, "a = Acc()\nawait a.add(1)", "a.add(2)", 3, then="a.n")
    assert judged.verdict is Verdict.PASS, judged


# ---------------------------------------------------------------------------------------------
# Judging has a budget: bounded by the expected value's size, not the program's result
# ---------------------------------------------------------------------------------------------


def test_a_result_far_larger_than_expected_fails_without_a_full_comparison() -> None:
    from utdebug.sandbox.compare import CheckSpec, value_size, within_budget
    from utdebug.sandbox.outcomes import Outcome
    from utdebug.sandbox.verdicts import Verdict, judge

    expected = [float(i) for i in range(300)]
    huge = [[0.5] * 1000 for _ in range(2000)]  # 2 million floats
    assert not within_budget(huge, expected)
    # the size walk stops at its cap: it never visits the whole result
    assert value_size(huge, 1000) < 5000
    judged = judge(Outcome(Status.OK, huge), expected, CheckSpec())
    assert judged.verdict is Verdict.FAIL and "far larger" in (judged.detail or "")
    # within the budget the comparison is as before: equal passes, a close one too
    assert judge(Outcome(Status.OK, list(expected)), expected, CheckSpec()).verdict is Verdict.PASS
    near = [x + 1e-9 for x in expected]
    assert judge(Outcome(Status.OK, near), expected, CheckSpec()).verdict is Verdict.PASS
    # the dataset's quirks that need no size stay: a scalar against an expected [] passes
    assert judge(Outcome(Status.OK, 5), [], CheckSpec()).verdict is Verdict.PASS


def test_shapes_that_differ_are_not_broadcast_into_a_huge_comparison() -> None:
    """A (3000, 1) array against 3,000 expected floats would broadcast to 9 million
    elements (np.allclose and != build several such arrays): the parent refuses it, with
    little memory, and the verdict is a fail."""
    import tracemalloc

    import numpy as np

    from utdebug.sandbox.compare import CheckSpec, outputs_match

    expected = [float(i) for i in range(3000)]
    column = np.arange(3000, dtype=np.float64).reshape(3000, 1)
    tracemalloc.start()
    try:
        ok = outputs_match(column, expected, CheckSpec())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert ok is False
    assert peak < 8 << 20, f"{peak} bytes at the peak"
    # small broadcasts still compare as numpy would: with a tolerance, a scalar matches a
    # list of identical floats
    assert outputs_match(2.0, [2.0, 2.0], CheckSpec())
    assert not outputs_match(2.0, [2.0, 3.0], CheckSpec())


# ---------------------------------------------------------------------------------------------
# Structural values carry their class's identity, not the names a program writes
# ---------------------------------------------------------------------------------------------

STRUCTURAL = prog(
    """
    import dataclasses, enum, pathlib

    class Color(enum.Enum):
        RED = 1
        GREEN = 2

    @dataclasses.dataclass
    class Point:
        x: int
        y: int

    class Impostor:
        __qualname__ = "Point"
        def __init__(self):
            self.x, self.y = 1, 2

    def gold(kind):
        return {"enum": Color.RED, "path": pathlib.PurePosixPath("/a/b"), "obj": Point(1, 2)}[kind]

    def forged(kind):
        if kind == "enum":
            g = Color.GREEN
            object.__setattr__(g, "_name_", "RED")
            return g
        if kind == "path":
            p = pathlib.PurePosixPath("/etc/passwd")
            str(p)
            object.__setattr__(p, "_str", "/a/b")
            return p
        return Impostor()
    """
)


def test_structural_values_are_compared_by_what_the_class_holds(sb: Sandbox) -> None:
    from utdebug.sandbox.compare import CheckSpec, outputs_match

    kinds = [("enum",), ("path",), ("obj",)]
    gold = sb.run(STRUCTURAL, "gold", kinds, LIM).outcomes
    forged = sb.run(STRUCTURAL, "forged", kinds, LIM).outcomes
    for (kind,), want, got in zip(kinds, gold, forged, strict=True):
        assert want.status is Status.OK and got.status is Status.OK, (want, got)
        assert not outputs_match(got.value, want.value, CheckSpec()), (kind, got.value)
        # the gold value still equals itself when run again
        again = sb.run(STRUCTURAL, "gold", [(kind,)], LIM).outcomes[0]
        assert outputs_match(again.value, want.value, CheckSpec()), kind


# ---------------------------------------------------------------------------------------------
# The wall-clock backstop never fires on a program that computes
# ---------------------------------------------------------------------------------------------


def test_a_runnable_thread_is_never_taken_for_a_sleeping_one() -> None:
    """The check behind the backstop: a process that computes is runnable (state R, on a
    CPU or waiting for one), one that sleeps is not; the parent fires the backstop only on
    the second, whatever its sums of wall, CPU and run-queue time say."""
    import subprocess
    import sys
    import time

    from utdebug.sandbox.clocks import _SchedStat

    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    nap = subprocess.Popen(
        [sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE,
    )
    try:
        assert nap.stdout is not None and nap.stdout.readline() == b"ready\n"
        busy, idle = _SchedStat(spin.pid), _SchedStat(nap.pid)
        try:
            assert busy.runnable()
            # the sleeper is asleep once its print is done (on a loaded machine, soon after)
            poll(lambda: not idle.runnable(), "the sleeper asleep", 30)
            assert not idle.runnable()
            # sums that reach the backstop: the runnable one is looked at again instead
            # (the first look reads the baseline; the next is made as if 10 s later)
            for s in (busy, idle):
                s.reset(time.monotonic(), 0.0)
                s.slept(time.monotonic(), 0.0, 1.0)
            slept, _ = busy.slept(time.monotonic() + 10.0, 0.0, 1.0)
            assert slept < 1.0, slept
            slept, _ = idle.slept(time.monotonic() + 10.0, 0.0, 1.0)
            assert slept >= 1.0, slept
        finally:
            busy.close()
            idle.close()
    finally:
        spin.kill()
        nap.kill()
        spin.wait()
        nap.wait()
