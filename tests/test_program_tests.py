"""Tests that build what they call: program tests of methods, properties, async functions and
generators, end to end through the engine with the scripted model, and their isolation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from testkit.cart import CART, FIXED_TOTAL, cart_task, pytest_reply, run, votes
from testkit.scripted_add import fix

from utdebug.agents.scripted import ScriptedModel
from utdebug.engine import Executor, Session, Settings, UnitTest, Variant, event_to_json
from utdebug.engine.events import EditAccepted, TestDropped, TestKept
from utdebug.engine.model import Task
from utdebug.engine.program import Raises, check_shape
from utdebug.sandbox.config import Limits, ModuleContext
from utdebug.sandbox.verdicts import Verdict
from utdebug.workspace import load_function
from utdebug.writeback import write_back


def test_the_loop_fixes_a_method_with_tests_that_build_what_they_call(
    tmp_path: Path, module_executor: Executor
) -> None:
    path, task = cart_task(tmp_path)
    assert task.program and task.class_name == "Cart"
    model = ScriptedModel(
        {
            "ut": [
                pytest_reply(
                    "def test_total():\n    cart = Cart()\n    cart.add(Item(3))\n"
                    "    cart.add(Item(4))\n    assert cart.total() == 7\n"
                ),
                pytest_reply(
                    "import unittest\n\n\nclass TestCart(unittest.TestCase):\n"
                    "    def setUp(self):\n        self.cart = Cart()\n\n"
                    "    def test_one(self):\n        self.cart.add(Item(5))\n"
                    "        self.assertEqual(self.cart.total(), 5)\n"
                ),
                pytest_reply("def test_empty():\n    assert Cart().total() == 0\n"),
            ],
            "vote": votes("7") + votes("5") + votes("0"),
            "debug": [fix(FIXED_TOTAL)],
        }
    )
    session = Session(task, model, module_executor, Settings(n=3, k=4, rounds=1))
    result = run(session.run())
    kept = [e.test for e in result.events if isinstance(e, TestKept)]
    assert [t.call for t in kept[:3]] == ["cart.total()", "self.cart.total()", "Cart().total()"]
    assert kept[0].setup is not None and "cart.add(Item(3))" in kept[0].setup
    assert [t.expected for t in kept[:3]] == [7, 5, 0]
    # The prompt asked for a pytest function and showed the class and the imports.
    ut_prompt = next(r for r in model.requests if r.purpose == "ut").messages[0].content
    assert "pytest function" in ut_prompt and "import dataclasses" in ut_prompt
    assert "class Cart:" in ut_prompt and "`Cart.total`" in ut_prompt
    vote_prompt = next(r for r in model.requests if r.purpose == "vote").messages[0].content
    assert "result = cart.total()" in vote_prompt and "cart.add(Item(4))" in vote_prompt
    assert "return sum(" not in vote_prompt  # votes reason about a correct implementation
    # The feedback shows the failing test program.
    feedback = next(r for r in model.requests if r.purpose == "debug").messages[-1].content
    assert "cart = Cart()" in feedback or "self.cart = Cart()" in feedback
    (accepted,) = [e for e in result.events if isinstance(e, EditAccepted)]
    assert accepted.pre == pytest.approx(1 / 3) and accepted.post == 1.0
    assert "return sum(i.price for i in self.items)\n" in result.code
    # Records carry the program (JSON round trip); the fix merges into the class on disk.
    record = json.loads(json.dumps(kept[0].to_json()))
    assert record["setup"] == kept[0].setup and record["call"] == "cart.total()"
    json.dumps([event_to_json(e) for e in result.events])
    loaded = load_function(path, "Cart.total")
    written = write_back(loaded, result.code)
    assert "-        return sum(i.price for i in self.items[1:])" in written.diff
    assert "+        return sum(i.price for i in self.items)" in written.diff
    assert written.new_text.count("class Cart:") == 1


def test_refused_replies_are_dropped_with_their_reason(
    tmp_path: Path, module_executor: Executor
) -> None:
    _, task = cart_task(tmp_path)
    model = ScriptedModel(
        {
            "ut": [
                pytest_reply("def test_total(cart):\n    assert cart.total() == 0\n"),
                pytest_reply(
                    "from unittest.mock import patch\n\n\ndef test_x():\n"
                    "    with patch('cart.Cart'):\n        assert Cart().total() == 0\n"
                ),
                "I cannot write a test.",
            ],
            "vote": [],
        }
    )
    session = Session(task, model, module_executor, Settings(n=1, k=4, rounds=0, tries_factor=3))
    result = run(session.run())
    reasons = [e.reason for e in result.events if isinstance(e, TestDropped)]
    assert reasons[0].startswith("unparsable: the test uses fixtures (parameters cart)")
    assert reasons[1].startswith("unparsable: the test uses mocks")
    assert reasons[2].startswith("unparsable: no test found")


def program_run(executor: Executor, task: Task, tests: list[UnitTest]) -> list[Any]:
    run_ = run(executor.run_tests(task, task.code, tests, Variant.PAPER, Limits()))
    return list(run_.results)


def program(call: str, expected: Any, setup: str = "", then: str | None = None) -> UnitTest:
    return UnitTest(0, (), call, expected, setup=setup, then=then)


@pytest.mark.parametrize(
    ("target", "test", "verdict"),
    [
        (
            "Cart.total",
            program("c.total()", 4, "c = Cart()\nc.add(Item(3))\nc.add(Item(4))"),
            "pass",
        ),
        ("Cart.add", program("c.add(Item(2))", 1, "c = Cart()", then="len(c.items)"), "pass"),
        ("Cart.size", program("c.size", 2, "c = Cart()\nc.add(Item(1))\nc.add(Item(1))"), "pass"),
        ("Cart.atotal", program("await c.atotal()", 0, "c = Cart()"), "pass"),
        ("Cart.atotal", program("c.atotal()", 0, "c = Cart()"), "pass"),  # awaited
        (
            "Cart.prices",
            program("c.prices()", [1, 2], "c = Cart()\nc.add(Item(1))\nc.add(Item(2))"),
            "pass",
        ),
        ("Cart.__len__", program("len(c)", 0, "c = Cart()"), "pass"),
        (
            "Cart.total",
            program("c.total()", Raises("AttributeError"), "c = Cart()\nc.add(3)\nc.add(3)"),
            "pass",
        ),
        (
            "Cart.total",
            program("c.total()", Raises("Exception"), "c = Cart()\nc.add(3)\nc.add(3)"),
            "pass",
        ),
        ("Cart.total", program("c.total()", Raises("KeyError"), "c = Cart()"), "fail"),
        ("Cart.total", program("c.total()", Raises("TypeError"), "c = Cart(1)"), "fail"),
        ("Cart.total", program("c.total()", 0, "c = Cart()\nwhile True:\n    pass"), "timeout"),
    ],
)
def test_every_kind_of_call_runs_to_a_verdict(
    tmp_path: Path, module_executor: Executor, target: str, test: UnitTest, verdict: str
) -> None:
    _, task = cart_task(tmp_path, target)
    limits = Limits(per_input=0.5, load=5.0)
    (judged,) = run(
        module_executor.run_tests(task, task.code, [test], Variant.PAPER, limits)
    ).results
    assert judged.verdict is Verdict(verdict), judged
    if "Cart(1)" in (test.setup or ""):
        assert judged.detail is not None and judged.detail.startswith("setup raised TypeError")


def test_each_test_starts_from_a_fresh_import(tmp_path: Path, module_executor: Executor) -> None:
    """Class-level state, module globals and files a test's setup changes never reach the
    next test, nor the parent."""
    _, task = cart_task(tmp_path)
    leak = (
        "Cart.count = 100\nCart.total = lambda self: 42\n"
        "import sys\nsys.modules['leaked'] = 1\nc = Cart()"
    )
    tests = [
        program("c.total()", 42, leak),
        program("Cart.count", 1, "c = Cart()"),
        program("Cart().total()", 0),
        program("'leaked' in sys.modules", False, "import sys"),
    ]
    assert [j.verdict for j in program_run(module_executor, task, tests)] == [Verdict.PASS] * 4


def test_a_setup_cannot_reach_the_parent(tmp_path: Path, module_executor: Executor) -> None:
    _, task = cart_task(tmp_path)
    marker = tmp_path / "touched"
    tests = [
        program("c.total()", 0, f"open({str(marker)!r}, 'w').write('x')\nc = Cart()"),
        program(
            "c.total()", 0, "import socket\nsocket.create_connection(('127.0.0.1', 1))\nc = Cart()"
        ),
        program("c.total()", 0, "import os\nos.kill(os.getppid(), 9)\nc = Cart()"),
    ]
    results = program_run(module_executor, task, tests)
    assert all(j.verdict is Verdict.FAIL for j in results), results
    assert all((j.detail or "").startswith("setup raised") for j in results)
    assert not marker.exists()


def test_the_parent_only_parses_a_setup() -> None:
    assert check_shape("c = Cart()\nc.add(1)", "c.total()") is None
    assert "return" in (check_shape("return 1", "f()") or "")
    assert "yield" in (check_shape("yield 1", "f()") or "")
    assert "import *" in (check_shape("from os import *", "f()") or "")
    assert "does not parse" in (check_shape("c = (", "f()") or "")
    assert "not one expression" in (check_shape("", "x = 1") or "")
    assert check_shape("def helper():\n    return 1\n", "helper()") is None  # its own scope


def test_export_writes_pytest_functions_with_their_setup(tmp_path: Path) -> None:
    import subprocess
    import sys

    from utdebug.pytest_export import export_pytest

    path = tmp_path / "cart.py"
    path.write_text(CART.replace("self.items[1:]", "self.items"), encoding="utf-8")
    loaded = load_function(path, "Cart.total")
    tests = [
        UnitTest(1, (), "c.total()", 7, setup="c = Cart()\nc.add(Item(3))\nc.add(Item(4))"),
        UnitTest(2, (), "c.add(Item(2))", 1, setup="c = Cart()", then="len(c.items)"),
        UnitTest(3, (), "c.total()", Raises("AttributeError"), setup="c = Cart()\nc.add(3)"),
        UnitTest(4, (), "await c.atotal()", 0, setup="c = Cart()"),
        UnitTest(5, (), "c.prices()", [1, 2], setup="c = Cart()\nc.add(Item(1))\nc.add(Item(2))"),
        UnitTest(6, (), "c.total()", 99, setup="c = Cart()", origin="person"),  # fails
    ]
    out = export_pytest(loaded, tests, tmp_path / "test_cart_export.py")
    text = out.read_text(encoding="utf-8")
    assert "    c = Cart()\n    c.add(Item(3))\n" in text
    assert "with pytest.raises(AttributeError):" in text
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(out), "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "5 passed" in proc.stdout and "1 failed" in proc.stdout, proc.stdout
    assert "test_total_6" in proc.stdout


KINDS_SOURCE = """\
import dataclasses


@dataclasses.dataclass
class Point:
    x: int
    y: int


def shifted(p: Point, dx: int) -> Point:
    return Point(p.x + dx + 1, p.y)  # bug: one too far


async def fetch(n):
    return n * 3  # bug: twice


def evens(n):
    for i in range(n):
        if i % 2 == 1:  # bug: odd numbers
            yield i


async def aevens(n):
    for i in range(n):
        if i % 2 == 1:  # bug: odd numbers
            yield i


class Box:
    def __init__(self, items=()):
        self.items = list(items)

    def __len__(self):
        return len(self.items) + 1  # bug

    def __eq__(self, other):
        return isinstance(other, Box)  # bug: ignores the items

    @classmethod
    def of(cls, *xs):
        return cls(xs[1:])  # bug: drops the first

    @staticmethod
    def origin() -> Point:
        return Point(1, 0)  # bug

    @property
    def first(self):
        return self.items[-1]  # bug: the last

    async def drain(self):
        out = self.items[1:]  # bug
        self.items = []
        return out

    def each(self):
        yield from reversed(self.items)  # bug
"""

# target -> (a pytest reply's body, the voted expected outcome, the fixed definition)
KIND_CASES = {
    "shifted": (
        "    p = shifted(Point(1, 2), 3)\n    assert (p.x, p.y) == (4, 2)\n",
        "(4, 2)",
        "def shifted(p: Point, dx: int) -> Point:\n    return Point(p.x + dx, p.y)\n",
    ),
    "fetch": (
        "    assert await fetch(2) == 4\n",
        "4",
        "async def fetch(n):\n    return n * 2\n",
    ),
    "evens": (
        "    assert evens(5) == [0, 2, 4]\n",
        "[0, 2, 4]",
        "def evens(n):\n    for i in range(n):\n        if i % 2 == 0:\n            yield i\n",
    ),
    "aevens": (
        "    assert aevens(5) == [0, 2, 4]\n",
        "[0, 2, 4]",
        "async def aevens(n):\n    for i in range(n):\n        if i % 2 == 0:\n"
        "            yield i\n",
    ),
    "Box.__len__": (
        "    b = Box([1, 2])\n    assert len(b) == 2\n",
        "2",
        "class Box:\n    def __len__(self):\n        return len(self.items)\n",
    ),
    "Box.__eq__": (
        "    assert (Box([1]) == Box([2])) == False\n",
        "False",
        "class Box:\n    def __eq__(self, other):\n"
        "        return isinstance(other, Box) and self.items == other.items\n",
    ),
    "Box.of": (
        "    b = Box.of(1, 2)\n    assert b.items == [1, 2]\n",
        "[1, 2]",
        "class Box:\n    @classmethod\n    def of(cls, *xs):\n        return cls(xs)\n",
    ),
    "Box.origin": (
        "    o = Box.origin()\n    assert (o.x, o.y) == (0, 0)\n",
        "(0, 0)",
        "class Box:\n    @staticmethod\n    def origin() -> Point:\n        return Point(0, 0)\n",
    ),
    "Box.first": (
        "    assert Box([1, 2]).first == 1\n",
        "1",
        "class Box:\n    @property\n    def first(self):\n        return self.items[0]\n",
    ),
    "Box.drain": (
        "    b = Box([1, 2])\n    assert await b.drain() == [1, 2]\n",
        "[1, 2]",
        "class Box:\n    async def drain(self):\n        out = self.items\n"
        "        self.items = []\n        return out\n",
    ),
    "Box.each": (
        "    assert Box([1, 2]).each() == [1, 2]\n",
        "[1, 2]",
        "class Box:\n    def each(self):\n        yield from self.items\n",
    ),
}


@pytest.mark.parametrize("target", sorted(KIND_CASES))
def test_every_target_kind_is_tested_and_fixed_end_to_end(
    tmp_path: Path, module_executor: Executor, target: str
) -> None:
    """Each kind of target: loaded from its file, a test with setup from the scripted model,
    voted, run in the sandbox (failing on the bug), the fix merged into the module (a method
    into its class) and written back to the file, where the test passes."""
    body, outcome, fixed = KIND_CASES[target]
    path = tmp_path / "kinds.py"
    path.write_text(KINDS_SOURCE, encoding="utf-8")
    loaded = load_function(path, target)
    task = loaded.to_task()
    assert task.program
    model = ScriptedModel(
        {
            "ut": [pytest_reply(f"def test_it():\n{body}")],
            "vote": votes(outcome),
            "debug": [fix(fixed)],
        }
    )
    session = Session(task, model, module_executor, Settings(n=1, k=4, rounds=1))
    result = run(session.run())
    (accepted,) = [e for e in result.events if isinstance(e, EditAccepted)]
    assert (accepted.pre, accepted.post) == (0.0, 1.0), target
    written = write_back(loaded, result.code)
    assert written.new_text.count("class Box:") == 1 and "# bug" in written.new_text
    fixed_lines = [
        line for line in fixed.splitlines() if "def " not in line and "class" not in line
    ]
    assert all(line in written.new_text for line in fixed_lines)
    (kept,) = [e.test for e in result.events if isinstance(e, TestKept)]
    again = program_run(module_executor, written.loaded.to_task(), [kept])
    assert [j.verdict for j in again] == [Verdict.PASS]


def test_the_simulated_model_writes_tests_with_setup_and_the_loop_runs_offline(
    module_executor: Executor,
) -> None:
    """The SIMULATED model on a class: its tests are pytest functions built from the
    problem's private test programs, its votes predict their outcomes (exceptions too), its
    fix is the gold class; every reply says SIMULATED."""
    from utdebug.agents.sim import ProgramInput, SimModel, SimParams, SimProblem
    from utdebug.engine.program import judge_program
    from utdebug.sandbox.compare import CheckSpec

    gold = CART.replace("self.items[1:]", "self.items")
    inputs = (
        ProgramInput("c = Cart()\nc.add(Item(3))\nc.add(Item(4))", "c.total()"),
        ProgramInput("c = Cart()\nc.add(Item(5))", "c.total()"),
        ProgramInput("c = Cart()", "c.total()"),
        ProgramInput("c = Cart()\nc.add(Item(1))", "c.add(Item(2))", "c.total()"),
        ProgramInput("c = Cart()\nc.add(3)", "c.total()"),
    )
    expected: tuple[Any, ...] = (7, 5, 0, 3, Raises("AttributeError"))
    task = Task("cart/total", "Sum the prices.", "Cart.total(self)", "total", CART,
                class_name="Cart", program=True, target_kind="method")  # fmt: skip

    async def oracle(task_id: str, code: str) -> list[tuple[bool, Any]]:
        out = []
        for test, want in zip(inputs, expected, strict=True):
            unit = UnitTest(0, (), test.call, want, setup=test.setup, then=test.then)
            res = await module_executor.run_program(code, unit, Limits())
            judged = judge_program(res.outcomes[0], want, CheckSpec())
            out.append((judged.verdict is Verdict.PASS, res.outcomes[0].value))
        return out

    def matcher(task_id: str, value: Any, gold_value: Any, args: tuple[Any, ...]) -> bool:
        return bool(value == gold_value)

    sim = SimModel(SimParams.for_method("utgen", seed=3, attack=1.0, out_acc=1.0, fix=1.0),
                   oracle, matcher)  # fmt: skip
    sim.register(SimProblem(task.task_id, "total", gold, CART, inputs, expected))
    session = Session(task, sim, module_executor, Settings(n=3, k=4, rounds=2))
    result = run(session.run())
    kept = [e.test for e in result.events if isinstance(e, TestKept)]
    assert kept and all(t.program for t in kept)
    by_program = {(i.setup, i.call, i.then): w for i, w in zip(inputs, expected, strict=True)}
    assert all(by_program[(t.setup, t.call, t.then)] == t.expected for t in kept)
    assert result.reason == "all_pass"
    assert "self.items[1:]" not in result.code and "for i in self.items)" in result.code
    replies = [e for e in result.events if type(e).__name__ == "TestProposed"]
    assert replies and all("SIMULATED" in e.reply for e in replies)  # type: ignore[attr-defined]


def test_ranked_candidate_edits_of_a_method(tmp_path: Path, module_executor: Executor) -> None:
    """B4 ranks candidate edits of a method on its tests with setup."""
    from utdebug.engine.events import CandidatesRanked

    _, task = cart_task(tmp_path)
    wrong = "class Cart:\n    def total(self):\n        return 0\n"
    model = ScriptedModel(
        {
            "ut": [
                pytest_reply(
                    "def test_a():\n    c = Cart()\n    c.add(Item(2))\n    assert c.total() == 2\n"
                ),
                pytest_reply(
                    "def test_b():\n    c = Cart()\n    c.add(Item(1))\n    c.add(Item(1))\n"
                    "    assert c.total() == 2\n"
                ),
            ],
            "vote": votes("2") + votes("2"),
            "debug": [fix(wrong), fix(FIXED_TOTAL)],
        }
    )
    settings = Settings(n=2, k=4, rounds=1, candidates=2)
    result = run(Session(task, model, module_executor, settings).run())
    (ranked,) = [e for e in result.events if isinstance(e, CandidatesRanked)]
    assert ranked is not None
    (accepted,) = [e for e in result.events if isinstance(e, EditAccepted)]
    assert accepted.post == 1.0 and "for i in self.items)" in result.code


def test_a_module_in_an_import_cycle_through_its_package_loads() -> None:
    """A package whose __init__ imports names back from the module under test loads only when
    the package is imported first (ModuleContext.import_package), as a normal import does."""
    import shutil
    import tempfile

    # readable by the sandbox's own user (pytest's tmp_path is private to this one)
    tmp_path = Path(tempfile.mkdtemp(prefix="utdebug-cycle-"))
    tmp_path.chmod(0o755)
    try:
        _cycle(tmp_path)
    finally:
        shutil.rmtree(tmp_path)


def _cycle(tmp_path: Path) -> None:
    from utdebug.sandbox import Sandbox, SandboxConfig

    pkg = tmp_path / "shop"
    pkg.mkdir()
    # the package's __init__ imports Cart from the module under test, which imports from the
    # package: fine for a normal import, which runs __init__ first
    (pkg / "__init__.py").write_text("from .cart import Cart\n")
    (pkg / "util.py").write_text("SCALE = 2\n")
    code = "from .util import SCALE\n\n\nclass Cart:\n    def total(self):\n        return SCALE\n"
    (pkg / "cart.py").write_text(code)
    task = Task("t", "", "Cart.total(self)", "total", code, class_name="Cart", program=True)
    test = program("Cart().total()", 2)
    with Sandbox(SandboxConfig(mounts=(str(tmp_path.resolve()),))) as sb:
        for first, verdict in ((True, Verdict.PASS), (False, Verdict.FAIL)):
            ctx = ModuleContext(
                name="shop.cart", package="shop", path=(str(tmp_path.resolve()),),
                import_package=first,
            )  # fmt: skip
            ex = Executor(sb, workers=1, context=ctx)
            try:
                run_ = run(ex.run_tests(task, code, [test], Variant.PAPER, Limits()))
            finally:
                ex.close()
            assert run_.results[0].verdict is verdict, (first, run_)
            if not first:
                assert "ImportError" in (run_.load_error or ""), run_


def test_the_feedback_of_a_failing_setup_says_so(tmp_path: Path, module_executor: Executor) -> None:
    path = tmp_path / "acc.py"
    path.write_text(
        "class Acc:\n    def __init__(self, start):\n        self.n = strt\n\n"
        "    def get(self):\n        return self.n\n",
        encoding="utf-8",
    )
    task = load_function(path, "Acc.get").to_task()
    fixed = "class Acc:\n    def __init__(self, start):\n        self.n = start\n"
    model = ScriptedModel(
        {
            "ut": [pytest_reply("def test_get():\n    a = Acc(1)\n    assert a.get() == 1\n")],
            "vote": votes("1"),
            "debug": [fix(fixed)],
        }
    )
    result = run(Session(task, model, module_executor, Settings(n=1, k=4, rounds=1)).run())
    feedback = next(r for r in model.requests if r.purpose == "debug").messages[-1].content
    assert "a = Acc(1)\nresult = a.get()" in feedback
    assert "Output: Error in the setup: NameError: name 'strt' is not defined" in feedback
    (accepted,) = [e for e in result.events if isinstance(e, EditAccepted)]
    assert accepted.post == 1.0  # the fix of __init__ (a method the target uses) merged


def test_an_expected_object_written_as_a_constructor_call(
    tmp_path: Path, module_executor: Executor
) -> None:
    """``assert shifted(Point(1, 2), 3) == Point(4, 2)``: the expected value is read
    structurally with the module's classes (never evaluated) and compared with the object the
    sandbox reports."""
    path = tmp_path / "kinds.py"
    path.write_text(KINDS_SOURCE, encoding="utf-8")
    task = load_function(path, "shifted").to_task()
    _, _, fixed = KIND_CASES["shifted"]
    model = ScriptedModel(
        {
            "ut": [
                pytest_reply("def test_it():\n    assert shifted(Point(1, 2), 3) == Point(4, 2)\n")
            ],
            "debug": [fix(fixed)],
        }
    )
    result = run(Session(task, model, module_executor, Settings(n=1, k=0, rounds=1)).run())
    (kept,) = [e.test for e in result.events if isinstance(e, TestKept)]
    assert kept.call == "shifted(Point(1, 2), 3)"
    (accepted,) = [e for e in result.events if isinstance(e, EditAccepted)]
    assert (accepted.pre, accepted.post) == (0.0, 1.0)
