"""ClassEval's assertions are applied in the parent (issue 28, item 3).

A class under test that patches ``unittest``, hooks class creation, rebinds the names a
runner would use or returns objects that say yes to anything does not decide its verdict: the
module is the only program, the test code is rewritten to record its assertions' operands and
runs with the builtins as they were before the module ran, and the parent applies each
assertion on the decoded values. Every hostile class below got a pass from the old runner
(``TestCase(method).debug()`` in the child). The second part checks each rewritten assertion
kind, holding and not holding, as the parent applies it."""

from __future__ import annotations

import ast
from collections import Counter

import pytest

from utdebug.data.classeval_checks import judge_records
from utdebug.data.datasets import ClassFixProblem, MethodTarget, Provenance, Split
from utdebug.data.private_tests import EvalSettings, evaluate_class_problem
from utdebug.sandbox import Limits, Sandbox
from utdebug.sandbox.values import ExceptionValue, Opaque, Record, Structured

LIMITS = Limits(per_input=5.0, batch=120.0)


def _names(tests: str) -> tuple[tuple[str, str], ...]:
    tree = ast.parse(tests)
    return tuple(
        (c.name, f.name)
        for c in tree.body
        if isinstance(c, ast.ClassDef)
        for f in c.body
        if isinstance(f, ast.FunctionDef) and f.name.startswith("test")
    )


def _run(sb: Sandbox, code: str, tests: str) -> dict[str, object]:
    names = _names(tests)
    problem = ClassFixProblem(
        split=Split.CLASSEVAL,
        task_id="classeval/ClassEval_1/pop",
        class_task="ClassEval_1",
        target=MethodTarget("Stack", "pop", code),
        code=code,
        gold=code,
        test_code=tests,
        tests=names,
        target_tests=tuple(range(len(names))),
        mutation="by hand",
        provenance=Provenance("x", 1, ""),
    )
    return evaluate_class_problem(sb, problem, code, EvalSettings(limits=LIMITS, max_details=99))


# A stack whose pop is wrong (it returns the bottom item, not the top one).
STACK = """class Stack:
    def __init__(self):
        self.data = []

    def push(self, x):
        self.data.append(x)

    def pop(self):
        return self.data[0] if self.data else None

    def full(self):
        return len(self.data) >= 2
"""

TESTS = """import unittest


class StackTestPop(unittest.TestCase):
    def test_pop_1(self):
        s = Stack()
        s.push(1)
        s.push(2)
        self.assertEqual(s.pop(), 2)

    def test_pop_2(self):
        s = Stack()
        s.push(1)
        s.push(2)
        self.assertTrue(s.pop() == 2)
"""

# full() is right when it says so: what a liar's answer must not pass either way.
FULL_TESTS = """import unittest


class StackTestFull(unittest.TestCase):
    def test_full_1(self):
        s = Stack()
        self.assertTrue(s.full())

    def test_full_2(self):
        s = Stack()
        s.push(1)
        s.push(2)
        self.assertFalse(s.full())
"""

HOSTILE = {
    "patches TestCase.assertEqual and assertTrue": """
import unittest
unittest.TestCase.assertEqual = lambda self, *a, **k: None
unittest.TestCase.assertTrue = lambda self, *a, **k: None
""",
    "patches TestCase.debug": """
import unittest
unittest.TestCase.debug = lambda self: None
""",
    "hooks __init_subclass__ of TestCase": """
import unittest

def _quiet(cls, **kw):
    for name in list(vars(cls)):
        if name.startswith("test"):
            setattr(cls, name, lambda self: None)

unittest.TestCase.__init_subclass__ = classmethod(_quiet)
""",
    "hooks builtins.__build_class__": """
import builtins
_real = builtins.__build_class__

def _hook(func, name, *bases, **kw):
    cls = _real(func, name, *bases, **kw)
    for attr in list(vars(cls)):
        if attr.startswith(("test", "assert", "_ce")):
            setattr(cls, attr, lambda *a, **k: None)
    for attr in ("assertEqual", "assertTrue", "assertFalse"):
        setattr(cls, attr, lambda *a, **k: None)
    return cls

builtins.__build_class__ = _hook
""",
    "replaces the unittest module": """
import sys
import types

class _Case:
    def __init__(self, name="runTest"):
        pass

    def debug(self):
        pass

    def __getattr__(self, name):
        return lambda *a, **k: None

_fake = types.ModuleType("unittest")
_fake.TestCase = _Case
sys.modules["unittest"] = _fake
""",
    "rebinds the names a runner or a rewritten test would use": """
class _Fake:
    def __init__(self, *a, **k):
        pass

    def debug(self):
        pass

def globals():
    return {n: _Fake for n in ("StackTestPop", "StackTestFull")}

def _ce_check(*a, **k):
    pass

def _ce_run(*a, **k):
    return ([], None, False)

_ce_run_in = _ce_run
_ce_Case = _Fake
isinstance = lambda *a: True
len = lambda *a: 0
type = lambda *a: object
self = None
""",
    "returns an int subclass equal to anything": """
class _Int(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__

Stack.pop = lambda self: _Int(self.data[0])
""",
    "returns an object that claims to be an int": """
class _Claim:
    __class__ = property(lambda self: int)

    def __eq__(self, other):
        return True

    __hash__ = object.__hash__

Stack.pop = lambda self: _Claim()
""",
    "returns an object equal to anything": """
class _Yes:
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__

Stack.pop = lambda self: _Yes()
""",
}


@pytest.mark.parametrize("attack", sorted(HOSTILE))
def test_a_hostile_class_does_not_decide_its_verdict(sb: Sandbox, attack: str) -> None:
    code = STACK + HOSTILE[attack]
    r = _run(sb, code, TESTS)
    assert r["verdicts"] == "FF", (attack, r["details"])
    # The same tests pass on a right pop, with the same hostile code around it.
    right = code.replace("return self.data[0] if", "return self.data[-1] if")
    if not attack.startswith("returns"):
        assert _run(sb, right, TESTS)["verdicts"] == "PP", attack


def test_a_module_global_that_shadows_a_builtin_does_not_answer_for_the_test(
    sb: Sandbox,
) -> None:
    tests = (
        "import unittest\n\n\nclass StackTestPush(unittest.TestCase):\n"
        "    def test_push(self):\n"
        "        s = Stack()\n"
        "        s.push(1)\n"
        "        self.assertEqual(len(s.data), 2)\n"
        "        self.assertEqual(sorted(s.data), [1, 1])\n"
    )
    shadow = STACK + "\n\nlen = lambda x: 2\nsorted = lambda x: [1, 1]\n"
    r = _run(sb, shadow, tests)
    assert r["verdicts"] == "F", r["details"]
    assert "assertEqual: 1 != 2" in str(r["details"])
    twice = STACK.replace("self.data.append(x)", "self.data += [x, x]")
    assert _run(sb, twice, tests)["verdicts"] == "P"


def test_a_class_that_silences_the_recorder_by_name_is_still_heard(sb: Sandbox) -> None:
    # The class reaches the test's namespace through its caller's frame and rebinds the
    # recorder's names for the rest of the test: the test's assertions do not call it by a
    # name, so the assertion after the call reports as before.
    hijack = STACK + (
        "\n\nimport sys\n\n_real_pop = Stack.pop\n\n\n"
        "def _pop(self):\n"
        "    g = sys._getframe(1).f_globals\n"
        "    for name in ('_ce_check', '_ce_after', '__sandbox_fact__'):\n"
        "        g[name] = lambda *a, **k: None\n"
        "    return _real_pop(self)\n\n\n"
        "Stack.pop = _pop\n"
    )
    tests = (
        "import unittest\n\n\nclass StackTestPop(unittest.TestCase):\n"
        "    def test_pop_3(self):\n"
        "        s = Stack()\n"
        "        s.push(1)\n"
        "        s.push(2)\n"
        "        s.pop()\n"
        "        self.assertEqual(s.data, [1])\n"
        "\n"
        "    def test_nothing_asserted(self):\n"
        "        Stack().push(1)\n"
    )
    r = _run(sb, hijack, tests)
    assert r["verdicts"] == "FP", r["details"]
    assert "line 10: assertEqual: [1, 2] != [1]" in str(r["details"])


# The facts a test is judged by go to the parent as each assertion is made. Each class below
# got 2 of 2 (or 1 of 1) passes at 550dac7, where the records were a list the class could
# reach (through a profile hook, the test's globals, gc, a closure) and a test method the
# class replaced, or cut short with the test's own Stop, reported nothing missing.
REWRITES = {
    "a profile hook rewrites the operand list in place": """
import sys

def _hook(frame, event, arg):
    if event == "call":
        v = frame.f_locals.get("vals")  # the operands' copies, as the recorder holds them
        if type(v) is list and len(v) >= 2:
            v[1] = v[0]
    return _hook

_real_init = Stack.__init__

def _init(self):
    _real_init(self)
    sys.setprofile(_hook)

Stack.__init__ = _init
""",
    "cProfile's timer rewrites the operands in place": """
import cProfile
import sys

def _timer():
    f = sys._getframe(1)
    while f is not None:
        for v in list(f.f_locals.values()):
            if type(v) is list and len(v) >= 2 and v[1] == 2:
                v[1] = v[0]
            if type(v) is tuple and len(v) >= 2 and type(v[1]) is list and v[1][1:2] == [2]:
                v[1][1] = v[1][0]
        f = f.f_back
    return 0.0

_real_init = Stack.__init__

def _init(self):
    _real_init(self)
    cProfile.Profile(timer=_timer).enable()

Stack.__init__ = _init
""",
    "a constructor rebinds the recorder through sys._getframe(2).f_globals": """
import sys

_real_init = Stack.__init__

def _init(self):
    _real_init(self)
    g = sys._getframe(2).f_globals
    for name in list(g):
        real = g[name]
        if ("check" in name or "fact" in name) and callable(real):
            def fake(kind, line, *args, _real=real, **kw):
                if args and type(args[0]) is tuple:  # the operands as one tuple
                    args = ((args[0][0],) * len(args[0]),) + args[1:]
                else:
                    args = (args[0],) * len(args) if args else args
                return _real(kind, line, *args, **kw)
            g[name] = fake

Stack.__init__ = _init
""",
}

# Assertions on objects the child does not check itself (a message that is an object): the
# test goes on past them, and a later call of the class rewrites what they recorded.
LATER_TESTS = """import unittest


class StackTestPop(unittest.TestCase):
    def test_pop_1(self):
        s = Stack()
        s.push(1)
        s.push(2)
        self.assertEqual([s.pop()], [2], msg=s)
        s.push(3)
"""

LATER = {
    "gc finds the records and rewrites them": """
import gc

_real_push = Stack.push

def _push(self, x):
    _real_push(self, x)
    for o in gc.get_objects():
        if type(o) is list and o and type(o[0]) is tuple and len(o[0]) == 5:
            for rec in o:
                if type(rec[2]) is list and len(rec[2]) >= 2:
                    rec[2][1] = rec[2][0]

Stack.push = _push
""",
    "the recorder's __closure__ gives the records away": """
import sys

_real_push = Stack.push

def _rewrite(fn, seen):
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        if id(v) in seen:
            continue
        seen.add(id(v))
        if type(v) is list and v and type(v[0]) is tuple and len(v[0]) == 5:
            for rec in v:
                if type(rec[2]) is list and len(rec[2]) >= 2:
                    rec[2][1] = rec[2][0]
        elif callable(v):
            _rewrite(v, seen)

def _push(self, x):
    _real_push(self, x)
    seen = set()
    for v in list(sys._getframe(1).f_globals.values()):
        if callable(v):
            _rewrite(v, seen)

Stack.push = _push
""",
}

# Assertions only in loops (none that every run must make): a test method the class
# replaces, or stops, asserts nothing.
LOOP_TESTS = """import unittest


class StackTestPop(unittest.TestCase):
    def setUp(self):
        self.s = Stack()

    def test_pop_loop(self):
        for x in (1, 2):
            self.s.push(x)
            self.assertEqual(self.s.pop(), x)
"""

SKIPS = {
    "setUp's constructor replaces the test method": """
import sys

_real_init = Stack.__init__

def _init(self):
    _real_init(self)
    case = sys._getframe(1).f_locals.get("self")
    if case is not None:
        type(case).test_pop_loop = lambda self: None

Stack.__init__ = _init
""",
    "the replaced test method tells an end it takes from the test's code": """
import sys

_real_init = Stack.__init__

def _init(self):
    _real_init(self)
    case = sys._getframe(1).f_locals.get("self")
    if case is None:
        return
    cls = type(case)
    told = [c for c in cls.test_pop_loop.__code__.co_consts if callable(c)]

    def fake(self):
        for tell in told:
            try:
                tell("end", 0, ("StackTestPop", "test_pop_loop"))
                tell("done", 0)
            except Exception:
                pass

    cls.test_pop_loop = fake

Stack.__init__ = _init
""",
    "pop raises the test's own Stop": """
import sys

def _stop_class():
    f = sys._getframe(1)
    while f is not None:
        for v in list(f.f_globals.values()):
            for cell in getattr(v, "__closure__", None) or ():
                try:
                    c = cell.cell_contents
                except ValueError:
                    continue
                if isinstance(c, type) and c.__name__ == "Stop":
                    return c
        f = f.f_back
    return AssertionError

def _pop(self):
    raise _stop_class()()

Stack.pop = _pop
""",
}


@pytest.mark.parametrize(
    ("attack", "tests", "verdicts"),
    [*((a, TESTS, "FF") for a in REWRITES), *((a, LATER_TESTS, "F") for a in LATER),
     *((a, LOOP_TESTS, "F") for a in SKIPS)],
)  # fmt: skip
def test_a_class_cannot_rewrite_what_its_tests_asserted(
    sb: Sandbox, attack: str, tests: str, verdicts: str
) -> None:
    hostile = {**REWRITES, **LATER, **SKIPS}[attack]
    r = _run(sb, STACK + hostile, tests)
    assert r["verdicts"] == verdicts, (attack, r["details"])


def test_the_facts_are_the_operands_when_asserted(sb: Sandbox) -> None:
    """What the runner copies is what the assertion was given: a list the class changes
    after the assertion is reported as it was; the right stack passes the same tests."""
    right = STACK.replace("return self.data[0] if", "return self.data[-1] if")
    for tests in (LATER_TESTS, LOOP_TESTS):
        assert _run(sb, right, tests)["verdicts"] == "P", tests
    later = right + LATER["gc finds the records and rewrites them"].replace(
        "rec[2][1] = rec[2][0]", "rec[2][1] = [99]"
    )
    assert _run(sb, later, LATER_TESTS)["verdicts"] == "P"


def test_a_bool_that_lies_decides_neither_assert_true_nor_assert_false(sb: Sandbox) -> None:
    # __bool__ answers what the calling assertion wants (unittest's assertTrue/assertFalse
    # call bool() on it in the child): both tests passed before.
    liar = STACK.replace(
        "        return len(self.data) >= 2",
        "        return _Liar()",
    ) + (
        "\n\nclass _Liar:\n"
        "    def __bool__(self):\n"
        "        import sys\n"
        "        return 'assertFalse' not in sys._getframe(1).f_code.co_name\n"
    )
    r = _run(sb, liar, FULL_TESTS)
    assert r["verdicts"] == "FF", r["details"]
    assert "its class's own code" in str(r["details"])
    assert _run(sb, STACK, FULL_TESTS)["verdicts"] == "FF"  # the honest answers are wrong
    honest = STACK.replace("len(self.data) >= 2", "len(self.data) < 2")
    assert _run(sb, honest, FULL_TESTS)["verdicts"] == "PP"


BOX = """import collections

import numpy as np


class Box:
    def __init__(self):
        self.items = [3, 1, 2]

    def nums(self):
        return list(self.items)

    def same(self):
        return self.items

    def empty(self):
        return []

    def name(self):
        return "box"

    def none(self):
        return None

    def half(self):
        return 0.1 + 0.2

    def mapping(self):
        return {"a": 1}

    def bad(self):
        raise ValueError("bad value")

    def big(self):
        return np.int64(7)

    def queue(self):
        return collections.deque([1, 2])
"""

# (assertion statement holding on Box, the same assertion not holding)
KINDS = {
    "equal": ("self.assertEqual(b.nums(), [3, 1, 2])", "self.assertEqual(b.nums(), [1, 2, 3])"),
    "not_equal": ("self.assertNotEqual(b.nums(), [1])", "self.assertNotEqual(b.nums(), [3, 1, 2])"),
    "true": ("self.assertTrue(b.nums())", "self.assertTrue(b.empty())"),
    "false": ("self.assertFalse(b.empty())", "self.assertFalse(b.nums())"),
    "is": ("self.assertIs(b.same(), b.items)", "self.assertIs(b.nums(), b.items)"),
    "is_not": ("self.assertIsNot(b.nums(), b.items)", "self.assertIsNot(b.same(), b.items)"),
    "is_none": ("self.assertIsNone(b.none())", "self.assertIsNone(b.name())"),
    "is_not_none": ("self.assertIsNotNone(b.name())", "self.assertIsNotNone(b.none())"),
    "in": ("self.assertIn(1, b.nums())", "self.assertIn(5, b.nums())"),
    "not_in": ("self.assertNotIn(5, b.nums())", "self.assertNotIn(1, b.nums())"),
    "almost": ("self.assertAlmostEqual(b.half(), 0.3)", "self.assertAlmostEqual(b.half(), 0.31)"),
    "almost_places": (
        "self.assertAlmostEqual(b.half(), 0.301, places=2)",
        "self.assertAlmostEqual(b.half(), 0.31, 2)",
    ),
    "almost_delta": (
        "self.assertAlmostEqual(b.half(), 0.31, delta=0.02)",
        "self.assertAlmostEqual(b.half(), 0.31, delta=0.001)",
    ),
    "not_almost": (
        "self.assertNotAlmostEqual(b.half(), 0.4)",
        "self.assertNotAlmostEqual(b.half(), 0.3)",
    ),
    "greater": ("self.assertGreater(len(b.nums()), 2)", "self.assertGreater(len(b.nums()), 3)"),
    "greater_equal": (
        "self.assertGreaterEqual(b.half(), 0.3)",
        "self.assertGreaterEqual(b.half(), 0.5)",
    ),
    "less": ("self.assertLess(b.half(), 0.5)", "self.assertLess(b.half(), 0.3)"),
    "less_equal": (
        "self.assertLessEqual(1, min(b.nums()))",
        "self.assertLessEqual(2, b.nums()[1])",
    ),
    "isinstance": ("self.assertIsInstance(b.mapping(), dict)", "self.assertIsInstance(b, dict)"),
    "isinstance_own": ("self.assertIsInstance(b, Box)", "self.assertIsInstance(b.nums(), Box)"),
    "not_isinstance": (
        "self.assertNotIsInstance(b.nums(), (dict, str))",
        "self.assertNotIsInstance(b.nums(), (dict, list))",
    ),
    "count_equal": (
        "self.assertCountEqual(b.nums(), [1, 2, 3])",
        "self.assertCountEqual(b.nums(), [1, 2, 2])",
    ),
    "dict_equal": (
        "self.assertDictEqual(b.mapping(), {'a': 1})",
        "self.assertDictEqual(b.mapping(), {'a': 2})",
    ),
    "list_equal": (
        "self.assertListEqual(b.nums(), [3, 1, 2])",
        "self.assertListEqual(b.nums(), (3, 1, 2))",
    ),
    "set_equal": (
        "self.assertSetEqual(set(b.nums()), {1, 2, 3})",
        "self.assertSetEqual(set(b.nums()), {1, 2})",
    ),
    "tuple_equal": (
        "self.assertTupleEqual(tuple(b.nums()), (3, 1, 2))",
        "self.assertTupleEqual(tuple(b.nums()), (3, 1))",
    ),
    "sequence_equal": (
        "self.assertSequenceEqual(b.nums(), (3, 1, 2))",
        "self.assertSequenceEqual(b.nums(), (3, 2, 1))",
    ),
    "multi_line_equal": (
        "self.assertMultiLineEqual(b.name(), 'box')",
        "self.assertMultiLineEqual(b.name(), 'bin')",
    ),
    "regex": ("self.assertRegex(b.name(), '^b.x$')", "self.assertRegex(b.name(), '^c')"),
    "raises_with": (
        "with self.assertRaises(ValueError) as cm:\n            b.bad()\n"
        "        self.assertEqual(str(cm.exception), 'bad value')",
        "with self.assertRaises(KeyError):\n            b.bad()",
    ),
    "raises_base": (
        "with self.assertRaises(Exception):\n            b.bad()",
        "with self.assertRaises(ValueError):\n            b.name()",
    ),
    "raises_call": (
        "self.assertRaises(ValueError, b.bad)",
        "self.assertRaises(ValueError, b.name)",
    ),
    "numpy_and_types": (
        "self.assertEqual(b.big(), 7)\n        self.assertEqual(type(b.name()), str)",
        "self.assertEqual(type(b.name()), int)",
    ),
    "deque": (
        "self.assertEqual(b.queue(), collections.deque([1, 2]))",
        "self.assertEqual(b.queue(), [1, 2])",
    ),
    "copied_when_asserted": (
        "x = b.same()\n        self.assertEqual(x, [3, 1, 2])\n        x.append(4)",
        "x = b.same()\n        self.assertEqual(x, [3, 1, 2, 4])\n        x.append(4)",
    ),
    "fail": ("pass", "self.fail('no')"),
    "first_failure_wins": (
        "self.assertEqual(1, 1)\n        self.assertTrue(b.name())",
        "self.assertEqual(b.nums(), [])\n        raise KeyError('later')",
    ),
    "raised": ("self.assertEqual(b.name(), 'box')", "b.bad()"),
}


def _kind_tests(which: int) -> str:
    methods = "".join(
        f"    def test_{kind}(self):\n        b = Box()\n        {pair[which]}\n\n"
        for kind, pair in KINDS.items()
    )
    return f"import collections\nimport unittest\n\n\nclass BoxTest(unittest.TestCase):\n{methods}"


def test_each_assertion_kind_is_applied_in_the_parent(sb: Sandbox) -> None:
    holding = _run(sb, BOX, _kind_tests(0))
    assert holding["verdicts"] == "P" * len(KINDS), holding["details"]
    failing = _run(sb, BOX, _kind_tests(1))
    assert failing["verdicts"] == "F" * len(KINDS), failing["details"]
    details = {
        list(KINDS)[d["i"]]: d["detail"]
        for d in failing["details"]  # type: ignore[attr-defined]
    }
    # The detail names the assertion and shows both operands.
    assert details["equal"].endswith("assertEqual: [3, 1, 2] != [1, 2, 3]")
    assert "assertIn: 5 not found in [3, 1, 2]" in details["in"]
    # another exception than the expected one goes on up, as in unittest
    assert details["raises_with"] == "raised ValueError: bad value"
    assert "assertRaises: ValueError not raised" in details["raises_base"]
    assert "fail() called: 'no'" in details["fail"]
    assert "assertEqual: [3, 1, 2] != []" in details["first_failure_wins"]
    assert details["raised"] == "raised ValueError: bad value"
    assert "assertIsInstance: Box(items=[3, 1, 2]) is not a dict" in details["isinstance"]
    assert "[3, 1, 2] != [3, 1, 2, 4]" in details["copied_when_asserted"]


def test_the_parent_reads_values_not_what_the_class_says() -> None:
    """judge_records on decoded values, as the sandbox's codec gives them."""
    point = Structured("Point", (("x", 1), ("y", 2)), "solution")
    other = Structured("Point", (("x", 1), ("y", 3)), "solution")
    opaque = Opaque("Gen", "<anything at all>")

    def verdict(*records: tuple[object, ...], raised: object = None) -> str:
        j = judge_records((list(records), raised, False), None)
        return j.verdict.value + ("" if j.detail is None else ": " + j.detail)

    # objects of the module's classes compare by class and fields, not by their __eq__
    assert verdict(("assertEqual", 3, [point, point], {}, None)) == "pass"
    assert verdict(("assertEqual", 3, [point, other], {}, None)).startswith(
        "fail: line 3: assertEqual: Point(x=1, y=2) != Point(x=1, y=3)"
    )
    # an object the sandbox could not read decides neither equal nor not equal
    assert verdict(("assertEqual", 1, [opaque, opaque], {}, None)).startswith("fail")
    assert verdict(("assertNotEqual", 1, [opaque, 2], {}, None)).startswith("fail")
    assert verdict(("assertIn", 1, [opaque, [opaque]], {}, None)).startswith("fail")
    # an object's truth is its class's own code: neither true nor false
    assert "its class's own code" in verdict(("assertTrue", 1, [point], {}, None))
    assert "its class's own code" in verdict(("assertFalse", 1, [point], {}, None))
    assert verdict(("assertTrue", 1, [[0]], {}, None)) == "pass"
    # identity is what the test's own `is` found in the child
    assert verdict(("assertIs", 1, [[1], [1]], {}, True)) == "pass"
    assert verdict(("assertIs", 1, [[1], [1]], {}, False)).startswith("fail")
    assert verdict(("assertIs", 1, [[1], [1]], {}, "yes")).startswith("fail")
    # isinstance by the classes' facts: a builtin by identity, others by module and name
    facts = [[["c", "solution", "Point"], ["b", "object"]], [["b", "dict"]]]
    assert verdict(("assertIsInstance", 1, [point, None], {}, facts)).startswith("fail")
    own = [[["c", "solution", "Point"], ["b", "object"]], [["c", "solution", "Point"]]]
    assert verdict(("assertIsInstance", 1, [point, None], {}, own)) == "pass"
    # a class operand and a deque come back as the runner's records
    str_ref = Record((("b", "str"),), "ClassFact", ("class_fact",), "__main__")
    int_ref = Record((("b", "int"),), "ClassFact", ("class_fact",), "__main__")
    assert verdict(("assertEqual", 1, [str_ref, str_ref], {}, None)) == "pass"
    assert verdict(("assertEqual", 1, [str_ref, int_ref], {}, None)).startswith("fail")
    dq = Record(([1, 2],), "DequeItems", ("deque_items",), "__main__")
    assert verdict(("assertEqual", 1, [dq, dq], {}, None)) == "pass"
    assert verdict(("assertEqual", 1, [dq, [1, 2]], {}, None)).startswith("fail")
    # the first record that does not hold decides; then what the test raised
    error = ExceptionValue("KeyError", "'k'", ("KeyError", "LookupError", "Exception"), ())
    assert verdict(
        ("assertEqual", 1, [1, 1], {}, None),
        ("assertTrue", 2, [False], {}, None),
        ("assertTrue", 3, [opaque], {}, None),
        raised=error,
    ).startswith("fail: line 2: assertTrue")
    assert (
        verdict(("assertEqual", 1, [1, 1], {}, None), raised=error) == "fail: raised KeyError: 'k'"
    )
    # raises: a builtin by identity; a module's own class named like a builtin is not one
    fake = ExceptionValue("KeyError", "", ("Exception",), (("solution", "KeyError"),))
    assert verdict(("assertRaises", 1, [error], {}, [["b", "LookupError"]])) == "pass"
    assert verdict(("assertRaises", 1, [fake], {}, [["b", "KeyError"]])).startswith("fail")
    assert verdict(("assertRaises", 1, [None], {}, [["b", "KeyError"]])).endswith("not raised")
    # an unknown assertion, a malformed report, a record that is missing
    assert verdict(("assertLogs", 1, [], {}, None)).startswith("fail")
    assert judge_records("pass", None).verdict.value == "fail"
    assert judge_records(([], None, False), Counter({4: 1})).verdict.value == "fail"
    assert judge_records(([], None, False), Counter()).verdict.value == "pass"


def test_a_test_stops_at_its_first_failed_assertion_as_in_unittest(sb: Sandbox) -> None:
    # The rest of a failed test and its tearDown do not run: the next test (same folder) sees
    # no file, as under unittest.
    tests = (
        "import os\nimport unittest\n\n\nclass BoxTest(unittest.TestCase):\n"
        "    def tearDown(self):\n"
        "        open('down', 'w').close()\n\n"
        "    def test_a(self):\n"
        "        self.assertEqual(Box().nums(), [], msg='m')\n"
        "        open('marker', 'w').close()\n\n"
        "    def test_b(self):\n"
        "        self.assertFalse(os.path.exists('marker'))\n"
        "        self.assertFalse(os.path.exists('down'))\n\n"
        "    def test_c(self):\n"
        "        self.assertAlmostEqual(Box().half(), 1.0, places=2)\n"
        "        open('marker', 'w').close()\n\n"
        "    def test_d(self):\n"
        "        self.assertGreater(2, len(Box().nums()))\n"
        "        open('marker', 'w').close()\n\n"
        "    def test_e(self):\n"
        "        self.assertFalse(os.path.exists('marker'))\n"
    )
    r = _run(sb, BOX, tests)
    assert r["verdicts"] == "FPFFP", r["details"]
    assert "line 10: assertEqual: [3, 1, 2] != [] : 'm'" in str(r["details"])
