"""Round 5 of the hostile programs: a test with setup is judged by facts the runner sends as
they happen, never by anything the program can reach afterwards.

Each attack below got a pass at 550dac7: the stage marker was a list any frame walk could
find, the test's builtins a dict its ``f_builtins`` handed out, and the holder of an async
stage's outcome a list ``gc`` could find. The stage an exception came from is now a constant
in the runner's own handler, sent to the parent before anything else runs; the builtins the
test reads are constants in its code. See docs/sandbox.md, "Integrity".
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from utdebug.engine import program
from utdebug.engine.program import Raises
from utdebug.sandbox import Limits, Sandbox, StagedTest, Status
from utdebug.sandbox.compare import CheckSpec
from utdebug.sandbox.outcomes import Outcome
from utdebug.sandbox.pinning import MARK, pin
from utdebug.sandbox.verdicts import Judged, Verdict

LIM = Limits(per_input=2.0, memory_mb=1024, slack=0.5, wall_factor=20.0)


def prog(src: str) -> str:
    return textwrap.dedent(src).lstrip("\n")


def _verdict(
    sb: Sandbox, module: str, setup: str, call: str, expected: Any, then: str | None = None
) -> tuple[Judged, Outcome]:
    res = sb.run(module, "", [()], LIM, test=program.staged_test(setup, call, then))
    return program.judge_program(res.outcomes[0], expected, CheckSpec()), res.outcomes[0]


# A setup whose constructor raises ValueError after trying to make it the call's: the test
# expects the call to raise ValueError, so only a setup the runner mistakes for the call
# passes.
RAISES_IN_SETUP = {
    "walks its frames and rewrites the stage marker": """
        import sys

        def _rig():
            f = sys._getframe(1)
            while f is not None:
                for v in list(f.f_locals.values()):
                    if type(v) is list and v and v[0] == "setup":
                        v[0] = "call"
                f = f.f_back
        """,
    "finds the stage marker with inspect.stack()": """
        import inspect

        def _rig():
            for info in inspect.stack():
                for v in list(info.frame.f_locals.values()):
                    if type(v) is list and v and v[0] == "setup":
                        v[0] = "call"
        """,
    "finds the stage marker with gc": """
        import gc

        def _rig():
            for o in gc.get_objects():
                if type(o) is list and len(o) == 1 and o[0] == "setup":
                    o[0] = "call"
        """,
    "rewrites the runner's locals with PyFrame_LocalsToFast": """
        import ctypes
        import sys

        def _rig():
            f = sys._getframe(1)
            while f is not None:
                local = f.f_locals
                hit = False
                for k, v in list(local.items()):
                    if v == "setup":
                        local[k] = "call"
                        hit = True
                    elif type(v) is list and v and v[0] == "setup":
                        v[0] = "call"
                if hit:
                    ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(f), ctypes.c_int(0))
                f = f.f_back
        """,
}

BOX_RAISING = """
    class Box:
        def __init__(self):
            _rig()
            raise ValueError("setup")

        def get(self):
            return 1
    """


@pytest.mark.parametrize("attack", sorted(RAISES_IN_SETUP))
def test_a_setup_that_raised_stays_the_setup(sb: Sandbox, attack: str) -> None:
    module = prog(RAISES_IN_SETUP[attack]) + prog(BOX_RAISING)
    judged, out = _verdict(sb, module, "b = Box()", "b.get()", Raises("ValueError"))
    assert judged.verdict is Verdict.FAIL, (attack, judged, out)
    assert out.raised is not None and out.raised.stage == "setup", out
    # the same attack in a call that raises is still the call's
    module = module.replace('raise ValueError("setup")', "pass").replace(
        "return 1", "_rig()\n        raise ValueError('call')"
    )
    judged, out = _verdict(sb, module, "b = Box()", "b.get()", Raises("ValueError"))
    assert judged.verdict is Verdict.PASS, (attack, judged, out)


def test_a_second_stage_report_is_a_broken_protocol(sb: Sandbox) -> None:
    """A setup that writes a report of its own (the call raised) on the result pipe before
    it raises: the runner's report follows, and two reports for one input are a crash."""
    module = prog(
        """
        import json
        import os
        import stat

        def _forge():
            body = json.dumps({"k": "x", "n": "ValueError", "x": ["call", ["ValueError",
                "Exception", "BaseException"], []]}).encode()
            for fd in range(3, 64):
                try:
                    if stat.S_ISFIFO(os.fstat(fd).st_mode):
                        os.write(fd, len(body).to_bytes(4, "big") + body)
                except OSError:
                    pass

        class Box:
            def __init__(self):
                _forge()
                raise ValueError("setup")

            def get(self):
                return 1
        """
    )
    judged, out = _verdict(sb, module, "b = Box()", "b.get()", Raises("ValueError"))
    assert judged.verdict is not Verdict.PASS, (judged, out)
    assert out.status is Status.CRASH, out


BUILTIN_REBINDING = {
    "through f_builtins": "sys._getframe(1).f_builtins",
    "through f_globals": "sys._getframe(1).f_globals",
}


@pytest.mark.parametrize("where", sorted(BUILTIN_REBINDING))
def test_the_target_cannot_rebind_the_tests_builtins(sb: Sandbox, where: str) -> None:
    module = prog(
        f"""
        import sys

        class Box:
            def __init__(self):
                self.items = []

            def add(self, x):
                self.items.append(x)
                names = {BUILTIN_REBINDING[where]}
                names["len"] = lambda v: 2
                names["sorted"] = lambda v: [1, 2]
                return x
        """
    )
    judged, out = _verdict(sb, module, "b = Box()", "b.add(1)", 2, then="len(b.items)")
    assert judged.verdict is Verdict.FAIL and out.value == 1, (judged, out)
    judged, out = _verdict(sb, module, "b = Box()", "b.add(1)", [1, 2], then="sorted(b.items)")
    assert judged.verdict is Verdict.FAIL and out.value == [1], (judged, out)
    # an honest box that holds two items passes the same tests
    honest = module.replace("self.items.append(x)", "self.items += [x, x + 1]")
    judged, _ = _verdict(sb, honest, "b = Box()", "b.add(1)", 2, then="len(b.items)")
    assert judged.verdict is Verdict.PASS, judged


def test_a_module_global_named_like_a_builtin_is_still_the_modules(sb: Sandbox) -> None:
    """As in Python, a name the module defines is the module's for the test too (a function
    called ``filter`` that the test calls), unless the test says builtins come first."""
    module = "def filter(xs):\n    return [x for x in xs if x > 1]\n"
    judged, out = _verdict(sb, module, "", "filter([1, 2, 3])", [2, 3])
    assert judged.verdict is Verdict.PASS, (judged, out)
    test = StagedTest(setup="", call="list(filter(None, [0, 1, 2]))", builtins_first=True)
    res = sb.run(module + "list = tuple\n", "", [()], LIM, test=test)
    assert res.outcomes[0].value == [1, 2], res.outcomes[0]


def test_a_patched_event_loop_cannot_hide_a_call_that_raised(sb: Sandbox) -> None:
    """The loop's ``run_until_complete`` patched to find the runner's holder of the stage's
    outcome and put a return in it after the call raised."""
    module = prog(
        """
        import asyncio

        _orig = asyncio.BaseEventLoop.run_until_complete

        def _rig(self, fut):
            box = None
            try:
                box = fut.get_coro().cr_frame.f_locals.get("box")
            except Exception:
                pass
            try:
                return _orig(self, fut)
            except BaseException:
                if type(box) is list:
                    box[:] = [(True, 2)]
                raise

        asyncio.BaseEventLoop.run_until_complete = _rig

        class Acc:
            def __init__(self):
                self.n = 0

            async def add(self, k):
                self.n += k
                raise ValueError("bad")
        """
    )
    judged, out = _verdict(sb, module, "a = Acc()", "a.add(2)", 2, then="a.n")
    assert judged.verdict is Verdict.FAIL, (judged, out)
    assert out.status is Status.ERROR and out.raised is not None, out
    assert out.raised.stage == "call", out


def test_a_program_under_a_test_cannot_set_a_trace_function(sb: Sandbox) -> None:
    """sys.settrace and sys.setprofile refuse one, and the sys module's first copy (which
    ``_imp.create_builtin`` would make again) is not to be had."""
    module = prog(
        """
        import importlib.machinery
        import sys

        def tries():
            out = []
            for how in ("settrace", "setprofile", "threading", "fresh sys"):
                try:
                    if how == "threading":
                        import threading
                        t = threading.Thread(target=lambda: None)
                        threading.settrace(lambda *a: None)
                        t.start()
                        t.join()
                        sys.settrace(lambda *a: None)
                    elif how == "fresh sys":
                        import _imp
                        m = importlib.machinery
                        spec = m.ModuleSpec("sys", m.BuiltinImporter)
                        _imp.create_builtin(spec).settrace(lambda *a: None)
                    else:
                        getattr(sys, how)(lambda *a: None)
                    out.append(how + ": set")
                except Exception as e:
                    out.append(how + ": " + type(e).__name__)
            return out
        """
    )
    _, out = _verdict(sb, module, "", "tries()", None)
    assert out.status is Status.OK, out
    assert not [x for x in out.value if x.endswith(": set")], out.value
    # the same program, called as a plain function, is not confined this way
    res = sb.run(module, "tries", [()], LIM)
    assert "settrace: set" in res.outcomes[0].value, res.outcomes[0]


def test_the_parent_pins_builtin_names_the_test_does_not_bind() -> None:
    """What is pinned: a builtin read by name that no enclosing scope of the test binds;
    never a name the test (or an enclosing function) binds, ``super``, or anything in a test
    with a star import."""
    (setup, call, then), pins = pin(
        ("n = len(xs)\ndef f(len):\n    return len\nclass C:\n    sorted = 1\n    x = sorted",
         "max(n, f(1))", None),
        ("exec", "eval", "eval"),
    )  # fmt: skip
    assert setup is not None and call is not None and then is None
    assert repr(MARK + "len") in setup.splitlines()[0] and "return len" in setup
    assert "x = sorted" in setup and repr(MARK + "max") in call
    assert set(pins) == {"len", "max"}
    _, none = pin(("from os import *\nn = len([])", "n", None), ("exec", "eval", "eval"))
    assert none == ()
    _, none = pin(("class C(B):\n    def f(self):\n        return super().f()", "1", None),
                  ("exec", "eval", "eval"))  # fmt: skip
    assert none == ()
    _, none = pin((f"x = {MARK + 'len'!r}\nn = len([])", "n", None), ("exec", "eval", "eval"))
    assert none == ()
