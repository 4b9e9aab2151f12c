"""A test with setup is checked before any vote is spent on it (issue 29, item 11): it must call
the target as written (arity, ``await`` only on a coroutine function, a call at all) and its
setup must run once in the sandbox; a broken test is dropped with its reason, never voted on
and never counted against the code."""

from __future__ import annotations

from pathlib import Path

import pytest
from testkit.cart import cart_task, pytest_reply, run, votes

from utdebug.agents.scripted import ScriptedModel
from utdebug.engine import Executor, Session, Settings
from utdebug.engine.admission import call_problem, setup_problem
from utdebug.engine.events import TestDropped, TestKept, TestsRun
from utdebug.sandbox.config import Limits

GATE = """\
import datetime


class Gate:
    def __init__(self, prefixes=("/api",)):
        self.prefixes = list(prefixes)

    def allows(self, path, *, method="GET"):
        return any(path.startswith(p) for p in self.prefixes[1:])  # bug: skips the first

    async def fetch(self, key):
        return key

    @classmethod
    def open(cls, *prefixes):
        return cls(prefixes)

    @staticmethod
    def norm(path):
        return path.lower()

    @property
    def size(self):
        return len(self.prefixes)

    def __eq__(self, other):
        return self.prefixes == other.prefixes
"""


def problem(call: str, setup: str = "g = Gate()", entry: str = "allows", then: str | None = None):
    return call_problem(setup, call, then, code=GATE, entry_point=entry, class_name="Gate")


@pytest.mark.parametrize(
    ("call", "entry", "reason"),
    [
        ("g.allows('/api/x')", "allows", None),
        ("g.allows('/api/x', method='POST')", "allows", None),
        ("g.allows(path='/api/x')", "allows", None),
        ("Gate.allows(g, '/api/x')", "allows", None),  # self passed through the class
        ("await g.fetch(1)", "fetch", None),
        ("g.fetch(1)", "fetch", None),  # a coroutine is awaited by the runner
        ("Gate.open('/a', '/b')", "open", None),
        ("Gate.norm('/A')", "norm", None),
        ("g.norm('/A')", "norm", None),
        ("g.size", "size", None),
        ("g == Gate()", "__eq__", None),  # a dunder, through its operator
        ("g.allows(*paths)", "allows", None),  # not counted
        ("g.allows()", "allows", "missing a required argument: 'path'"),
        ("g.allows('/a', 'GET')", "allows", "too many positional arguments"),
        ("g.allows('/a', verb='GET')", "allows", "unexpected keyword argument 'verb'"),
        ("g.fetch()", "fetch", "missing a required argument: 'key'"),
        ("Gate.norm('/A', 1)", "norm", "too many positional arguments"),
        ("await g.allows('/api/x')", "allows", "awaits `Gate.allows`, which is not a coroutine"),
        ("g.prefixes", "allows", "it never calls `Gate.allows`"),
        ("len(g.prefixes)", "size", "it never reads the property `Gate.size`"),
    ],
)
def test_the_target_must_be_called_as_written(call: str, entry: str, reason: str | None) -> None:
    found = problem(call, entry=entry)
    if reason is None:
        assert found is None
    else:
        assert found is not None and reason in found, found


def test_only_calls_made_on_the_target_are_checked() -> None:
    """A method of the same name on another object (``d.get(k, 0)`` on a dict when the
    target is ``Cache.get``) is not held to the target's signature."""
    assert problem("g.allows('/a')", setup="g = Gate()\nseen = {}\nseen.allows(1, 2, 3)") is None
    assert problem("await session.allows('/a')", setup="g = Gate()") is None
    for setup in ("self.g = Gate()", "g: Gate = Gate.open('/a')"):
        call = setup.split(" ")[0].rstrip(":") + ".allows()"
        found = problem(call, setup=setup)
        assert found is not None and "missing a required argument" in found, (setup, found)
    found = problem("Gate().allows()", setup="")
    assert found is not None and "missing a required argument" in found


def test_a_call_of_the_target_in_the_setup_is_checked_too() -> None:
    assert problem("g.prefixes", setup="g = Gate()\ng.allows('/a')", then=None) is None
    found = problem("g.prefixes", setup="g = Gate()\ng.allows()")
    assert found is not None and "missing a required argument" in found


def _setup(executor: Executor, setup: str, call: str) -> str | None:
    return run(setup_problem(executor, GATE, setup, call, None, Limits()))


def test_the_setup_runs_once_in_the_sandbox(executor: Executor) -> None:
    assert _setup(executor, "g = Gate()", "g.allows('/api')") is None
    once = "class _UtdCase:\n    pass\n\n\nself = _UtdCase()\ncls = type(self)\ncls.g = Gate()"
    assert _setup(executor, once, "self.g.allows('/api')") is None  # a setUpClass's setup
    missing = _setup(executor, "from gate_module import Gate\ng = Gate()", "g.allows('/a')")
    assert missing is not None and "ModuleNotFoundError" in missing
    assert "No module named 'gate_module'" in missing
    wrong = _setup(executor, "g = Gate(1, 2, 3)", "g.allows('/a')")
    assert wrong is not None and wrong.startswith("its setup raised TypeError")
    # an object the call is made on that the setup never built
    absent = _setup(executor, "class _C:\n    pass\nself = _C()", "self.Gate.allows('/a')")
    assert absent is not None and "`self.Gate`" in absent and "AttributeError" in absent
    # a library the setup calls raises: the test's fault
    lib = _setup(executor, "d = datetime.datetime.strptime('%Y', '2024')", "Gate().allows('/')")
    assert lib is not None and "ValueError" in lib


def test_an_exception_raised_inside_the_code_under_test_is_the_codes(executor: Executor) -> None:
    """A setup that fails inside the code under test (a typo in ``__init__``) found a bug:
    the test is admitted (and fails on that code), not dropped."""
    code = GATE.replace("self.prefixes = list(prefixes)", "self.prefixes = list(prefxes)")
    found = run(setup_problem(executor, code, "g = Gate()", "g.allows('/a')", None, Limits()))
    assert found is None


def test_broken_tests_are_dropped_before_any_vote(
    tmp_path: Path,
    module_executor: Executor,
) -> None:
    """Of six proposals, five cannot run as written: each is dropped with its reason, no vote
    is asked for them, and only the sixth is voted on, kept and run against the code."""
    _, task = cart_task(tmp_path)
    broken = [
        "from shopping_cart import Basket, Cart\n\n\ndef test_a():\n    cart = Cart()\n"
        "    assert cart.total() == 0\n",
        "class TestCart:\n    def test_b(self):\n        self.cart.add(Item(1))\n"
        "        assert self.Cart.total() == 1\n",
        "async def test_c():\n    cart = Cart()\n    assert await cart.total() == 0\n",
        "def test_d():\n    cart = Cart()\n    assert cart.total(Item(1)) == 1\n",
        "def test_e():\n    cart = Cart()\n    cart.add(Item(2))\n"
        "    assert len(cart.items) == 1\n",
    ]
    good = "def test_f():\n    cart = Cart()\n    cart.add(Item(3))\n    assert cart.total() == 3\n"
    model = ScriptedModel({"ut": [pytest_reply(b) for b in [*broken, good]], "vote": votes("3")})
    settings = Settings(n=1, k=4, rounds=0, tries_factor=6)
    result = run(Session(task, model, module_executor, settings).run())
    reasons = [e.reason for e in result.events if isinstance(e, TestDropped)]
    assert len(reasons) == 5, reasons
    assert "the test cannot run: its setup raised ModuleNotFoundError" in reasons[0]
    assert (
        "its setup raised AttributeError: '_UtdCase' object has no attribute 'cart'" in (reasons[1])
    )
    assert "awaits `Cart.total`, which is not a coroutine function" in reasons[2]
    assert "does not match `Cart.total()`" in reasons[3]
    assert "it never calls `Cart.total`" in reasons[4]
    assert sum(r.purpose == "vote" for r in model.requests) == 1  # one request, k samples
    (kept,) = [e.test for e in result.events if isinstance(e, TestKept)]
    assert kept.call == "cart.total()" and kept.expected == 3
    runs = [e for e in result.events if isinstance(e, TestsRun)]
    assert runs and all(r.total == 1 for r in runs)


def test_a_table_of_cases_in_one_reply_gives_several_tests(
    tmp_path: Path,
    module_executor: Executor,
) -> None:
    """One proposal whose asserts run in a loop over three cases: three tests, each voted on
    and kept, from one model call."""
    _, task = cart_task(tmp_path)
    table = (
        "def test_total():\n    cases = [([3], 3), ([3, 4], 7), ([], 0)]\n"
        "    for prices, want in cases:\n        cart = Cart()\n        for p in prices:\n"
        "            cart.add(Item(p))\n        assert cart.total() == want\n"
    )
    model = ScriptedModel(
        {"ut": [pytest_reply(table)], "vote": votes("3") + votes("7") + votes("0")}
    )
    result = run(Session(task, model, module_executor, Settings(n=3, k=4, rounds=0)).run())
    kept = [e.test for e in result.events if isinstance(e, TestKept)]
    assert [t.expected for t in kept] == [3, 7, 0]
    assert "for p in [3, 4]:" in (kept[1].setup or "")
    assert sum(r.purpose == "ut" for r in model.requests) == 1


INVENTORY = """\
class Inventory:
    def __init__(self):
        self.items = {}

    def add_item(self, name, qty):
        self.items[name] = self.items.get(name, 0) + qty

    def remove_item(self, name, qty):
        if qty >= self.items.get(name, 0):  # bug: removing the whole stock is refused
            raise ValueError(f"not enough {name}")
        self.items[name] -= qty
"""


def test_the_tests_that_expose_a_methods_bug_are_read_kept_and_fail_on_it(
    tmp_path: Path,
    module_executor: Executor,
) -> None:
    """The issue's case in small: a real model's method tests came as module-level setup, a
    table of cases and a ``pytest.raises`` block (the proposals whose inputs exposed the bug
    were among these), and one awaited a synchronous method. Now the broken one is dropped
    before any vote, the others are read and kept, and the bug shows: removing the whole
    stock fails on the code."""
    from utdebug.workspace import load_function

    path = tmp_path / "inventory.py"
    path.write_text(INVENTORY, encoding="utf-8")
    task = load_function(path, "Inventory.remove_item").to_task()
    replies = [
        "import asyncio\n\n\nasync def test_async():\n    inv = Inventory()\n"
        "    inv.add_item('apple', 3)\n    assert await inv.remove_item('apple', 1) is None\n",
        "import pytest\nfrom inventory import Inventory\n\ninv = Inventory()\n"
        "inv.add_item('apple', 3)\n\n\ndef test_remove_all():\n"
        "    inv.remove_item('apple', 3)\n    assert inv.items == {'apple': 0}\n",
        "def test_remove():\n    cases = [(1, 2), (3, 0)]\n    for qty, left in cases:\n"
        "        inv = Inventory()\n        inv.add_item('apple', 3)\n"
        "        inv.remove_item('apple', qty)\n        assert inv.items['apple'] == left\n",
        "import pytest\n\n\ndef test_too_many():\n    inv = Inventory()\n"
        "    inv.add_item('apple', 1)\n    with pytest.raises(ValueError) as e:\n"
        "        inv.remove_item('apple', 2)\n    assert 'not enough' in str(e.value)\n",
    ]
    model = ScriptedModel(
        {
            "ut": [pytest_reply(r) for r in replies],
            "vote": votes("{'apple': 0}") + votes("2") + votes("0") + votes("raises ValueError"),
        }
    )
    settings = Settings(n=4, k=4, rounds=0, tries_factor=2)
    result = run(Session(task, model, module_executor, settings).run())
    dropped = [e.reason for e in result.events if isinstance(e, TestDropped)]
    assert dropped == [
        "the test cannot be used: it awaits `Inventory.remove_item`, which is not a coroutine "
        "function"
    ]
    kept = [e.test for e in result.events if isinstance(e, TestKept)]
    assert [(t.call, t.then) for t in kept] == [
        ("inv.remove_item('apple', 3)", "inv.items"),
        ("inv.remove_item('apple', 1)", "inv.items['apple']"),
        ("inv.remove_item('apple', 3)", "inv.items['apple']"),
        ("inv.remove_item('apple', 2)", None),
    ]
    assert kept[0].setup == "inv = Inventory()\ninv.add_item('apple', 3)"  # module-level setup
    assert str(kept[3].expected) == "raises ValueError"
    (ran,) = [e for e in result.events if isinstance(e, TestsRun)]
    verdicts = [v["verdict"] for v in ran.verdicts]
    assert verdicts == ["fail", "pass", "fail", "pass"], ran.verdicts
    assert "ValueError: not enough apple" in (ran.verdicts[0]["detail"] or "")
    assert sum(r.purpose == "vote" for r in model.requests) == 4  # none for the dropped one
