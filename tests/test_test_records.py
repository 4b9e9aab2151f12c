"""A test's record (``UnitTest.to_json``) reads back (``UnitTest.from_json``) as the same
test, for every kind of test: literal-argument tests and tests with setup, values that are
literals, objects read structurally, exceptions, values too long for the shown text."""

from __future__ import annotations

import datetime
import json
import math
from decimal import Decimal
from typing import Any

import pytest

from utdebug.engine import UnitTest
from utdebug.engine.program import Raises
from utdebug.expected_values import expected_value, expected_value_or_repr
from utdebug.literals import LiteralError, canonical_repr

MODULE = """\
import enum
from collections import namedtuple
from dataclasses import dataclass

Pair = namedtuple("Pair", "a b")


@dataclass
class Point:
    x: int
    y: int


class Color(enum.Enum):
    RED = 1
"""


def obj(text: str) -> Any:
    return expected_value(text, module_source=MODULE)


def round_trip(t: UnitTest, module_source: str | None = MODULE) -> UnitTest:
    record = json.loads(json.dumps(t.to_json()))  # what a JSON record holds
    back = UnitTest.from_json(record, module_source=module_source)
    assert back.to_json() == t.to_json()
    assert (back.id, back.call, back.votes, back.draws, back.share) == (
        t.id, t.call, t.votes, t.draws, t.share,
    )  # fmt: skip
    assert (back.origin, back.round, back.target, back.setup, back.then) == (
        t.origin, t.round, t.target, t.setup, t.then,
    )  # fmt: skip
    assert canonical_repr(back.args) == canonical_repr(t.args)
    assert [type(a) for a in back.args] == [type(a) for a in t.args]
    assert canonical_repr(back.expected) == canonical_repr(t.expected)
    assert type(back.expected) is type(t.expected)
    return back


@pytest.mark.parametrize(
    "expected",
    [
        3, 1.0, -0.0, True, None, "a'b\n", b"\x00", 1 + 2j, 10**40,
        [1, (2,), {"k": {3, 1, 2}}], frozenset({"b", "a"}), (), float("inf"),
        "x" * 5000,  # longer than the shown text
    ],
)  # fmt: skip
def test_literal_tests_read_back(expected: Any) -> None:
    t = UnitTest(7, (1, "a", [2.5, None], {"s": {1, 2}}), "f(1, 'a', ...)", expected,
                 {"k1": 5, "k2": 2}, 8, 5 / 8, "model", 2, "abc123")  # fmt: skip
    back = round_trip(t)
    assert back.expected == expected and back.args == t.args
    assert back.share == 5 / 8  # the record rounds it; the votes give it back exactly


def test_a_nan_expected_value_reads_back() -> None:
    back = round_trip(UnitTest(1, (float("nan"),), "f(nan)", float("nan")))
    assert math.isnan(back.expected) and math.isnan(back.args[0])


@pytest.mark.parametrize(
    "expected",
    [
        Raises("KeyError"),
        Raises("json.JSONDecodeError"),
        obj("Point(4, 2)"),
        obj("[Point(1, 2), Color.RED]"),
        obj("Pair(1, 'b')"),
        datetime.date(2024, 1, 2),
        Decimal("1.5"),
        expected_value_or_repr("re.compile('a+')"),  # known by its text only
        {"a": 1},
    ],
)
def test_tests_with_setup_read_back(expected: Any) -> None:
    t = UnitTest(3, (), "c.move(3)", expected, {}, 0, 1.0, "person", 1, "t",
                 setup="c = Cart()\nc.add(Point(1, 2))", then="c.items")  # fmt: skip
    round_trip(t)
    round_trip(UnitTest(4, (), "await c.total()", expected, setup=""))


def test_a_namedtuple_needs_its_class_definition() -> None:
    t = UnitTest(3, (), "pair()", obj("Pair(1, 'b')"), setup="")
    record = t.to_json()
    back = UnitTest.from_json(record)  # without the module: known by its text only
    assert canonical_repr(back.expected) == "Pair(a=1, b='b')"
    assert type(back.expected) is not type(t.expected)


def test_records_that_are_not_tests_are_refused() -> None:
    good = UnitTest(1, (1,), "f(1)", 2).to_json()
    with pytest.raises(KeyError):
        UnitTest.from_json({k: v for k, v in good.items() if k != "call"})
    with pytest.raises(ValueError, match="origin"):
        UnitTest.from_json(good | {"origin": "robot"})
    with pytest.raises(ValueError, match="tuple"):
        UnitTest.from_json(good | {"args": "[1]"})
    with pytest.raises(LiteralError):
        UnitTest.from_json(good | {"args": "(__import__('os'),)"})


@pytest.mark.parametrize(
    ("origin", "source", "written"),
    [
        ("model", "model", None),
        ("person", "person", None),
        ("model", "synth:mutation", "synth:mutation"),
        ("person", "synth:hypothesis", "synth:hypothesis"),
        ("person", "model", "model"),  # a model's test whose expected value a person set
    ],
)
def test_where_the_input_came_from_reads_back(origin: str, source: str, written: Any) -> None:
    t = UnitTest(4, (3,), "f(3)", 9, origin=origin, input_source=source)  # type: ignore[arg-type]
    record = json.loads(json.dumps(t.to_json()))
    assert record.get("input_source") == written  # the default for the origin is not written
    assert UnitTest.from_json(record).input_source == source


def test_an_unknown_input_source_is_refused() -> None:
    record = UnitTest(4, (3,), "f(3)", 9).to_json() | {"input_source": "oracle"}
    with pytest.raises(ValueError, match="input source"):
        UnitTest.from_json(record)
