"""utdebug.synth.members and utdebug.synth.receivers: members of classes, async functions and
generators against their base version (the real sandbox), and the receivers and call
sequences they are run on (pure data)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from utdebug.sandbox.executor import Sandbox
from utdebug.synth.differential import DiffSettings, Version, differential
from utdebug.synth.members import MemberComparison, Shape, compare_member, locate
from utdebug.synth.receivers import (
    NO_RECIPE,
    constructor_signature,
    public_methods,
    recipes_from_tests,
    seed_signatures,
    sequences,
    signature_of,
)

SMALL = DiffSettings(count=80, seed=0)


@pytest.fixture(scope="module")
def sb() -> Iterator[Sandbox]:
    with Sandbox() as box:
        yield box


def compare(
    sb: Sandbox, base: str, head: str, qualname: str, tests: list[Path] | None = None
) -> MemberComparison:
    root = tests[0].parent if tests else Path("/nonexistent")
    return compare_member(
        sb,
        f"mod.py::{qualname}",
        qualname,
        Version(base, qualname, "base"),
        Version(head, qualname, "head"),
        tests or [],
        root,
        settings=SMALL,
    )


COUNTER = """class Counter:
    def __init__(self, start=0):
        self.n = start
        self.history = []

    def bump(self, by):
        self.n += by
        self.history.append(by)

    def reset(self):
        self.history.clear()
        self.n = 0
"""


def test_a_method_that_only_changes_state_is_compared_by_its_state(sb: Sandbox) -> None:
    """``reset`` returns None either way: its changed effect shows in the receiver's state."""
    head = COUNTER.replace("self.history.clear()\n", "")
    got = compare(sb, COUNTER, head, "Counter.reset")
    res = got.result
    assert res.compared and res.findings, res.message
    for f in res.findings:
        assert f.before.startswith("(None, {'history': [], 'n': 0})")
        assert "'history': [" in f.after and "'history': []" not in f.after
        assert got.call_text is not None
        assert got.call_text(f.args).endswith("; o.reset()")


def test_state_holds_objects_as_their_fields_and_leaves_out_what_is_not_plain(
    sb: Sandbox,
) -> None:
    code = """import threading


class Point:
    def __init__(self, x):
        self.x = x


class Box:
    def __init__(self):
        self.lock = threading.Lock()
        self.points = [Point(1)]

    def move(self, dx):
        for p in self.points:
            p.x += dx
"""
    head = code.replace("p.x += dx", "p.x += dx + (1 if dx > 2 else 0)")
    res = compare(sb, code, head, "Box.move").result
    assert res.compared and res.findings and not res.incomparable, res.message
    f = res.findings[0]
    assert "'lock'" not in f.before  # a lock is not plain data
    assert "{'__class__': 'Point', 'x': " in f.before


def test_an_infinite_generator_is_compared_on_its_first_items(sb: Sandbox) -> None:
    base = "def count(start):\n    n = start\n    while True:\n        yield n\n        n += 1\n"
    head = base.replace("n += 1", "n += 1 if n < start + 5 else 2")
    res = compare(sb, base, head, "count").result
    assert res.compared and res.findings, res.message
    assert all(f.before.startswith("[") and f.after.startswith("[") for f in res.findings)
    far = base.replace("n += 1", "n += 1 if n < start + 150 else 2")
    res = compare(sb, base, far, "count").result
    assert res.compared and not res.findings  # past the bound: not seen


def test_async_methods_async_generators_static_methods_and_constructors(sb: Sandbox) -> None:
    code = """import asyncio


class Scale:
    def __init__(self, factor: int):
        self.factor = factor * 2

    @staticmethod
    def clamp(x: int) -> int:
        return max(0, min(x, 10))

    async def steps(self, n: int):
        for i in range(min(n, 5)):
            yield i * self.factor

    async def times(self, x: int) -> int:
        await asyncio.sleep(0)
        return x * self.factor
"""
    head = code.replace("factor * 2", "factor * 2 + 1").replace("min(x, 10)", "min(x, 9)")
    head = head.replace("yield i * self.factor", "yield i + self.factor")
    ctor = compare(sb, code, head, "Scale.__init__").result
    assert ctor.compared and ctor.findings
    assert all(f.before.startswith("{'factor': ") for f in ctor.findings)
    clamp = compare(sb, code, head, "Scale.clamp").result
    assert clamp.compared and clamp.findings
    assert {f.description for f in clamp.findings} == {"was 10, now 9"}
    gen = compare(sb, code, head, "Scale.steps").result
    assert gen.compared and gen.findings, gen.message
    same = head.replace("factor * 2 + 1", "factor * 2")
    times = compare(sb, code, same.replace("x * self.factor", "x * self.factor + 1"), "Scale.times")
    assert times.result.compared and times.result.findings, times.result.message
    assert times.call_text is not None
    for f in times.result.findings:
        value, _ = eval(f.before)
        assert f.after.startswith(f"({value + 1}, ")
        assert times.call_text(f.args).endswith(f"; o.times({f.args[3][0]})")


def test_what_is_not_compared_says_why(sb: Sandbox) -> None:
    nested = "class A:\n    class B:\n        def m(self):\n            return 1\n"
    got = compare(sb, nested, nested.replace("1", "2"), "A.B.m")
    assert not got.result.compared
    assert got.result.message.startswith("nested class (A.B.m): ")
    same = compare(sb, COUNTER, COUNTER, "Counter.bump").result
    assert not same.compared and same.message.startswith("unchanged since the base")
    new = compare(sb, "x = 1\n", COUNTER, "Counter.bump").result
    assert new.message == "new function (no base version)"
    needs = COUNTER.replace("def __init__(self, start=0):", "def __init__(self, *, start):")
    got = compare(sb, needs, needs.replace("self.n += by", "self.n -= by"), "Counter.bump")
    assert got.result.message.startswith("no way to build a receiver: Counter() needs keyword")
    bad = COUNTER.replace("self.n = start", "self.n = start['n']")
    got = compare(sb, bad, bad.replace("self.n += by", "self.n -= by"), "Counter.bump")
    assert not got.result.compared
    assert got.result.message.startswith("no way to build a receiver: the base raised in the")


def test_a_class_level_counter_is_no_finding(sb: Sandbox) -> None:
    """Instances numbered by a class attribute, also when the constructor then fails: base
    and head run the same inputs in the same order, so a rewrite that keeps behaviour gives
    the same numbers."""
    code = """class Ticket:
    issued = 0

    def __init__(self, title):
        Ticket.issued += 1
        self.number = Ticket.issued
        self.title = title.strip()

    def label(self):
        return f"{self.number}: {self.title}"
"""
    head = code.replace(
        'return f"{self.number}: {self.title}"', "return str(self.number) + ': ' + self.title"
    )
    res = compare(sb, code, head, "Ticket.label").result
    assert res.compared and res.inputs >= 10 and not res.findings, res.findings[:1]


# --- receivers and sequences (no sandbox) ------------------------------------------------------

SETUP_TESTS = """import unittest
from unittest import mock

from shop import Cart


class TestCart(unittest.TestCase):
    def setUp(self):
        super().setUp()
        self.cart = Cart(3)
        self.cart.add("pen", 2)
        self.addCleanup(mock.patch.stopall)

    def test_total(self):
        self.assertEqual(self.cart.total(), 2)
"""

FIXTURE_TESTS = """import pytest

from shop import Cart


@pytest.fixture
def cart():
    c = Cart(5)
    c.add("ink", 1)
    return c


@pytest.fixture
def other(tmp_path):
    return Cart(tmp_path)


def test_cart(cart):
    cart.add("pen", 4)
"""


INLINE_TESTS = """from shop import Cart


def test_limit():
    limit = {"max": 3}
    cart = Cart(limit)
    cart.add("pen", 1)
    cart.add("ink", 2)
    assert cart.total() == 3
    cart.add("x", 9)


def test_checks_first():
    assert Cart(1).total() == 0
"""


def test_recipes_come_from_setup_bodies_fixtures_and_test_bodies(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    files = []
    for name, text in (("a", INLINE_TESTS), ("b", SETUP_TESTS), ("c", FIXTURE_TESTS)):
        files.append(tmp_path / "tests" / f"test_{name}.py")
        files[-1].write_text(text)
    recipes = recipes_from_tests(files, "Cart", tmp_path)
    assert [r.origin for r in recipes] == [
        "tests/test_b.py:8 (setUp)",
        "tests/test_c.py:7 (cart)",
        "tests/test_a.py:4 (test_limit)",
    ]
    setup, fixture, inline = recipes
    assert setup.body == "cart = Cart(3)\ncart.add('pen', 2)\n_utd_o = cart"
    assert setup.imports == ("from shop import Cart",)  # unittest and mock left out
    assert fixture.body == "c = Cart(5)\nc.add('ink', 1)\n_utd_o = c"
    assert inline.body == (
        "limit = {'max': 3}\ncart = Cart(limit)\ncart.add('pen', 1)\ncart.add('ink', 2)\n"
        "_utd_o = cart"
    )
    assert recipes_from_tests(files, "Basket", tmp_path) == []


def test_sequences_reuse_values_and_are_the_same_in_every_run(tmp_path: Path) -> None:
    tree = ast.parse(COUNTER + "\n\ndef test():\n    Counter(4).bump(7)\n")
    cls = tree.body[0]
    assert isinstance(cls, ast.ClassDef)
    ctor = constructor_signature(cls)
    assert ctor is not None and [p.name for p in ctor.params] == ["start"]
    steps = public_methods(cls)
    assert [s.name for s in steps] == ["bump", "reset"]
    test_file = tmp_path / "test_counter.py"
    test_file.write_text("from counter import Counter\n\n\ndef test():\n    Counter(4).bump(7)\n")
    call = signature_of(cls.body[1], bound=True)  # type: ignore[arg-type]
    assert (
        seed_signatures([ctor, call, *steps], [test_file], tmp_path, 0) == 3
    )  # Counter(4), bump(7) as the call and as a step
    assert ctor.seeds == [(4,)] and call.seeds == [(7,)]
    assert all(n in call.pools["by"] for n in (7, 6, 8, 14))  # the seed and its neighbours
    one = sequences(0, ctor, steps, call, count=50, seed=3)
    assert one == sequences(0, ctor, steps, call, count=50, seed=3)
    assert len(one) == 50
    assert all(r == NO_RECIPE and len(args) <= 1 for r, _, _, args in one)
    reused = [
        (made, args)
        for _, _, made, args in one
        if args and any(name == "bump" and xs and xs[0] == args[0] for name, xs in made)
    ]
    assert len(reused) >= 5  # the call meets earlier calls on the same value


def test_locate_tells_members_apart() -> None:
    tree = ast.parse(
        "class C:\n"
        "    @property\n    def p(self):\n        return 1\n"
        "    @p.setter\n    def p(self, v):\n        pass\n"
        "    @classmethod\n    def make(cls):\n        return cls()\n"
        "    async def go(self):\n        return 1\n"
        "def g():\n    yield 1\n"
    )
    shapes = {q: locate(tree, q) for q in ("C.p", "C.make", "C.go", "g", "C.nope", "D.m")}
    p = shapes["C.p"]
    assert not isinstance(p, str) and p.shape is Shape.PROPERTY and p.setter is not None
    make, go, g = shapes["C.make"], shapes["C.go"], shapes["g"]
    assert not isinstance(make, str) and make.shape is Shape.CLASS
    assert not isinstance(go, str) and go.shape is Shape.METHOD and go.is_async
    assert not isinstance(g, str) and g.shape is Shape.FUNCTION
    assert shapes["C.nope"] == "nope is not a member of C"
    assert shapes["D.m"] == "D is not a module-level class"


def test_sequences_grow_from_the_ones_the_base_accepted() -> None:
    """Randoop's feedback: each new sequence extends an accepted one (its receiver and its
    calls), most with one call more, none of them again."""
    cls = ast.parse(COUNTER).body[0]
    assert isinstance(cls, ast.ClassDef)
    ctor = constructor_signature(cls)
    steps = public_methods(cls)
    call = signature_of(cls.body[1], bound=True)  # type: ignore[arg-type]
    for sig in (ctor, call, *steps):
        assert sig is not None
        sig.fill_pools(0)
    accepted = [(NO_RECIPE, (5,), (("bump", (2,)),), (1,)), (NO_RECIPE, (), (), (3,))]
    grown = sequences(0, ctor, steps, call, count=30, seed=1, grow=accepted)
    assert len(grown) == 30 and not set(map(repr, grown)) & set(map(repr, accepted))
    for r, made_ctor, made, _ in grown:
        parent = next(a for a in accepted if a[1] == made_ctor)
        assert r == NO_RECIPE and made[: len(parent[2])] == parent[2]
    assert sum(len(g[2]) > len(a[2]) for g in grown for a in accepted if a[1] == g[1]) >= 10


def test_a_change_in_a_call_before_the_one_compared_is_not_its_finding(sb: Sandbox) -> None:
    """``bump`` now raises on big steps; ``reset``, unchanged, is compared on sequences that
    call ``bump`` first: those the checked version fails in the setup are left out."""
    head = COUNTER.replace(
        "        self.n += by\n",
        "        if by > 5:\n            raise ValueError(by)\n        self.n += by\n",
    )
    res = compare(sb, COUNTER, head, "Counter.reset").result
    assert res.compared and res.inputs >= 10 and res.findings == []
    assert any("the checked version raised in the setup" in n for n in res.notes)
    bump = compare(sb, COUNTER, head, "Counter.bump").result
    assert bump.findings and {f.description for f in bump.findings} == {"now raises ValueError"}


def test_a_method_the_constructor_calls_is_compared_through_it(sb: Sandbox) -> None:
    """The receiver cannot be built any more because the method compared, which the
    constructor calls, now raises: a finding on that method."""
    code = """class Deck:
    def __init__(self):
        self.cards = self.fresh()

    def fresh(self):
        return [rank + suit for suit in "SH" for rank in "A23"]
"""
    head = code.replace("rank + suit", "rank - suit")
    res = compare(sb, code, head, "Deck.fresh").result
    assert res.compared and res.findings, res.message
    assert {f.description for f in res.findings} == {"now raises TypeError"}


def test_nan_on_both_sides_is_no_change(sb: Sandbox) -> None:
    """``nan`` never equals itself: a value (or a receiver's state) that holds one is the
    same outcome when both versions give it."""
    top = "import math\n\n\ndef spread(xs: list[float]) -> float:\n"
    base = top + "    return math.nan if not xs else max(xs) - min(xs)\n"
    head = top + "    if xs:\n        return max(xs) - min(xs)\n    return math.nan\n"
    res = differential(
        sb,
        "mod.py::spread",
        Version(base, "spread"),
        Version(head, "spread"),
        [([],), ([1.5, 2.0],)],
        settings=SMALL,
    )
    assert res.compared and res.inputs >= 10 and res.findings == []
