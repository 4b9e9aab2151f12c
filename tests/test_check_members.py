"""``utdebug check --no-model`` on methods, properties, class methods, async functions,
generators and functions that return iterators: each against its base version, in real git
repositories and the sandbox (receivers built as the tests build them or by call sequences)."""

from __future__ import annotations

import json
from pathlib import Path

import git
import jsonschema
import pytest
from testkit.check_repo import check
from testkit.gitrepos import commit, new_repo

from utdebug.check.formats import schema
from utdebug.check.report import FunctionReport, Status
from utdebug.cli import main
from utdebug.cli_common import Exit

INVENTORY = '''"""A small inventory."""


class Item:
    def __init__(self, name, quantity):
        self.name = name
        self.quantity = quantity


class Inventory:
    def __init__(self):
        self.items = {}

    def add_item(self, name, quantity):
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        if name in self.items:
            self.items[name].quantity += quantity
        else:
            self.items[name] = Item(name, quantity)

    def remove_item(self, name, quantity):
        if name not in self.items:
            raise KeyError(name)
        item = self.items[name]
        if quantity > item.quantity:
            raise ValueError("not enough in stock")
        item.quantity -= quantity
        if item.quantity == 0:
            del self.items[name]
'''

REMOVE_REWRITTEN = """    def remove_item(self, name, quantity):
        item = self.items.get(name)
        if item is None:
            raise KeyError(name)
        if item.quantity < quantity:
            raise ValueError("not enough in stock")
        item.quantity = item.quantity - quantity
        if not item.quantity:
            del self.items[name]
"""

SHAPES = '''"""Members of every kind."""

import asyncio


class Rect:
    def __init__(self, w, h):
        self.w = w
        self.h = h

    @property
    def area(self):
        return self.w * self.h


class Temperature:
    def __init__(self, kelvin):
        self.kelvin = kelvin

    @classmethod
    def from_celsius(cls, c: float) -> "Temperature":
        return cls(c + 273.15)


async def scaled(x: int, factor: int) -> int:
    await asyncio.sleep(0)
    return x * factor


def chunks(xs, size):
    """Split ``xs`` into lists of ``size`` items.

    >>> list(chunks([1, 2, 3, 4, 5], 2))
    [[1, 2], [3, 4], [5]]
    """
    for i in range(0, len(xs), size):
        yield xs[i : i + size]
'''

SHAPES_CHANGED = (
    SHAPES.replace("return self.w * self.h", "return abs(self.w) * self.h")
    .replace("cls(c + 273.15)", "cls(c + 273)")
    .replace("return x * factor", "return x * factor + (1 if x > 10 else 0)")
    .replace(
        "    for i in range(0, len(xs), size):\n",
        "    for n, i in enumerate(range(0, len(xs), size)):\n"
        "        if n == 2:\n"
        '            raise ValueError("too many chunks")\n',
    )
)


def repo_with(tmp_path: Path, files: dict[str, str]) -> git.Repo:
    return new_repo(tmp_path, files)


def by_name(functions: tuple[FunctionReport, ...]) -> dict[str, FunctionReport]:
    return {f.qualname: f for f in functions}


def test_a_changed_method_with_no_tests_is_a_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The class's constructor and add_item build the receiver; remove_item's ``>`` became
    ``>=``: removing all of an item now raises."""
    repo = repo_with(tmp_path, {"inventory.py": INVENTORY})
    commit(repo, {"inventory.py": INVENTORY.replace("quantity > item", "quantity >= item")}, "c")
    monkeypatch.chdir(Path(repo.working_tree_dir or "."))
    argv = ["check", "--changed", "--rev", "HEAD", "--base", "HEAD~1", "--no-model", "-q"]
    assert main([*argv, "--synth-inputs", "80", "--format", "json"]) == Exit.FAILURE
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, schema())
    (f,) = data["functions"]
    assert f["qualname"] == "Inventory.remove_item" and f["status"] == "findings"
    changes = f["differential"]["changes"]
    assert changes and all(c["description"].startswith("now raises ValueError") for c in changes)
    for c in changes:  # each one adds an item, then removes all of it
        assert c["call"].startswith("o = Inventory(); ")
        assert "o.add_item(" in c["call"] and ".remove_item(" in c["call"]
    assert "o = Inventory(); o.add_item('a', 1); o.remove_item('a', 1)" in {
        c["call"] for c in changes
    }


def test_a_behaviour_keeping_rewrite_of_a_method_gives_no_finding(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"inventory.py": INVENTORY})
    start = INVENTORY.index("    def remove_item")
    (Path(repo.working_tree_dir or ".") / "inventory.py").write_text(
        INVENTORY[:start] + REMOVE_REWRITTEN
    )
    report = check(repo, tmp_path)
    (f,) = report.functions
    assert f.qualname == "Inventory.remove_item"
    assert f.differential is not None and f.differential.compared
    assert f.differential.inputs >= 20
    assert f.changes == () and f.status is Status.OK
    assert report.exit_code() == Exit.OK


def test_properties_classmethods_async_functions_and_generators_are_compared(
    tmp_path: Path,
) -> None:
    repo = repo_with(tmp_path, {"shapes.py": SHAPES})
    (Path(repo.working_tree_dir or ".") / "shapes.py").write_text(SHAPES_CHANGED)
    report = check(repo, tmp_path)
    found = by_name(report.functions)
    assert set(found) == {"Rect.area", "Temperature.from_celsius", "scaled", "chunks"}
    for f in found.values():
        assert f.differential is not None and f.differential.compared, f.message
        assert f.status is Status.FINDINGS and f.changes, f.qualname
    area = found["Rect.area"].changes
    assert all(c.call.startswith("o = Rect(") and c.call.endswith("; o.area") for c in area)
    assert any(c.description.startswith("was (") for c in area)  # the value and the state
    celsius = found["Temperature.from_celsius"].changes
    assert all(c.call.startswith("Temperature.from_celsius(") for c in celsius)
    assert all("Temperature(kelvin=" in c.before for c in celsius)
    for c in found["scaled"].changes:
        x, factor = eval(c.input)
        assert x > 10 and c.description == f"was {x * factor}, now {x * factor + 1}"
    # the generator's items are compared: a ValueError on its third item is a finding
    gen = found["chunks"].changes
    assert any(
        c.call == "chunks([1, 2, 3, 4, 5], 2)"
        and c.before == "[[1, 2], [3, 4], [5]]"
        and c.description == "now raises ValueError"
        for c in gen
    )
    assert report.exit_code() == Exit.FAILURE


def test_a_function_that_returns_an_iterator_is_consumed(tmp_path: Path) -> None:
    text = "def evens(xs: list[int]):\n    return filter(lambda x: x % 2 == 0, xs)\n"
    repo = repo_with(tmp_path, {"nums.py": text})
    (Path(repo.working_tree_dir or ".") / "nums.py").write_text(
        text.replace("x % 2 == 0", "x % 2 == 0 and x < 50")
    )
    (f,) = check(repo, tmp_path).functions
    assert f.differential is not None and f.differential.compared, f.message
    assert f.changes
    for c in f.changes:
        (xs,) = eval(c.input)
        assert any(x % 2 == 0 and x >= 50 for x in xs)
        assert c.before == repr([x for x in xs if x % 2 == 0])


LEDGER = """class Ledger:
    def __init__(self, config):
        self.limit = config["limit"]
        self.spent = 0

    def spend(self, amount):
        if self.spent + amount > self.limit:
            raise ValueError("over the limit")
        self.spent += amount
        return self.limit - self.spent
"""

LEDGER_TESTS = """import unittest

from ledger import Ledger


class TestLedger(unittest.TestCase):
    def setUp(self):
        self.ledger = Ledger({"limit": 10})

    def test_spend(self):
        self.assertEqual(self.ledger.spend(4), 6)
"""


def test_a_receiver_is_built_as_the_tests_set_it_up(tmp_path: Path) -> None:
    """No synthesised argument builds a Ledger (it needs a dict with a limit); the tests'
    setUp does."""
    repo = repo_with(tmp_path, {"ledger.py": LEDGER})
    root = Path(repo.working_tree_dir or ".")
    (root / "ledger.py").write_text(LEDGER.replace("> self.limit", ">= self.limit"))
    (f,) = check(repo, tmp_path).functions
    assert f.differential is not None and not f.differential.compared
    assert f.message.startswith("not compared: no way to build a receiver: ")
    assert "KeyError" in f.message or "TypeError" in f.message
    commit(repo, {"ledger.py": LEDGER, "tests/test_ledger.py": LEDGER_TESTS}, "tests")
    (root / "ledger.py").write_text(LEDGER.replace("> self.limit", ">= self.limit"))
    (f,) = check(repo, tmp_path).functions
    assert f.differential is not None and f.differential.compared, f.message
    assert f.changes
    assert any(c.call.startswith("ledger = Ledger({'limit': 10}); o = ledger; ") for c in f.changes)


LEXER = """class Lexer:
    def __init__(self):
        self.tokens = []

    def tokenize(self, text):
        self._pos = 0
        for word in text.split():
            self.tokens.append(word)
            self._pos += len(word) + 1
        return len(self.tokens)
"""


def test_renamed_private_attributes_are_no_change(tmp_path: Path) -> None:
    """``_pos`` renamed ``_position`` (a refactoring): the private attributes are left out of
    the state compared, the public ones and the value still compared."""
    repo = repo_with(tmp_path, {"lexer.py": LEXER})
    (Path(repo.working_tree_dir or ".") / "lexer.py").write_text(
        LEXER.replace("self._pos", "self._position")
    )
    report = check(repo, tmp_path)
    (f,) = report.functions
    assert f.qualname == "Lexer.tokenize" and f.status is Status.OK, f.message
    assert f.differential is not None and f.differential.inputs >= 20


def test_a_changed_public_attribute_beside_renamed_private_ones_is_a_finding(
    tmp_path: Path,
) -> None:
    repo = repo_with(tmp_path, {"lexer.py": LEXER})
    head = LEXER.replace("self._pos", "self._position").replace(
        "self.tokens.append(word)", "self.tokens.append(word * 2)"
    )
    (Path(repo.working_tree_dir or ".") / "lexer.py").write_text(head)
    report = check(repo, tmp_path)
    (f,) = report.functions
    assert f.status is Status.FINDINGS and f.changes, f.message
    assert all("_pos" not in c.before for c in f.changes)


DICE = """import random


class Dice:
    def __init__(self):
        self.rolls = []

    def roll(self, sides):
        value = random.randint(1, 6)
        self.rolls.append(value)
        return value
"""


def test_a_nondeterministic_method_after_a_rename_is_no_finding(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"dice.py": DICE})
    (Path(repo.working_tree_dir or ".") / "dice.py").write_text(DICE.replace("value", "face"))
    report = check(repo, tmp_path)
    (f,) = report.functions
    assert f.qualname == "Dice.roll" and not f.changes, f.message
    assert f.status is Status.NONDETERMINISTIC, f.message
    assert f.differential is not None and f.differential.unstable
    assert report.exit_code() == Exit.OK
