"""The target-kind table (utdebug.engine.target_kinds.KINDS): a row per kind, read where the kinds
used to be tested by name (the classifier's facts, test admission, check's comparison)."""

from __future__ import annotations

import ast

import pytest

from utdebug.check.members import is_member
from utdebug.check.targets import Target
from utdebug.engine.admission import call_problem
from utdebug.engine.target_kinds import KINDS, Binding, Comparing, TargetKind, classify

CLASS = """\
class Cart:
    def total(self, tax):
        return tax

    async def fetch(self, key):
        return key

    def items(self):
        yield 1

    @classmethod
    def empty(cls, size):
        return cls()

    @staticmethod
    def price(x):
        return x

    @property
    def size(self):
        return 0
"""

MODULE = """\
def plain(x):
    return x

async def waits(x):
    return x

def gen(x):
    yield x

async def agen(x):
    yield x
"""


def _defs(code: str) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    tree = ast.parse(code)
    return {
        n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def test_every_kind_has_one_row_in_order() -> None:
    assert list(KINDS) == list(TargetKind)
    assert all(row.kind is kind for kind, row in KINDS.items())


@pytest.mark.parametrize(
    ("name", "in_class", "kind", "label", "literal_args"),
    [
        ("plain", False, TargetKind.FUNCTION, "function", True),
        ("waits", False, TargetKind.ASYNC_FUNCTION, "async", False),
        ("gen", False, TargetKind.GENERATOR, "function", False),
        ("agen", False, TargetKind.ASYNC_GENERATOR, "async", False),
        ("total", True, TargetKind.METHOD, "method", False),
        ("fetch", True, TargetKind.ASYNC_METHOD, "async", False),
        ("items", True, TargetKind.GENERATOR, "method", False),
        ("empty", True, TargetKind.CLASSMETHOD, "classmethod", False),
        ("price", True, TargetKind.STATICMETHOD, "staticmethod", True),
        ("size", True, TargetKind.PROPERTY, "property", False),
    ],
)
def test_classified_facts_come_from_the_row(
    name: str, in_class: bool, kind: TargetKind, label: str, literal_args: bool
) -> None:
    node = _defs(CLASS if in_class else MODULE)[name]
    found = classify(node, in_class=in_class)
    assert found.kind is kind
    assert found.row is KINDS[kind]
    assert found.label == label
    assert found.literal_args is literal_args


def test_how_a_test_reaches_a_member_follows_its_binding() -> None:
    assert KINDS[TargetKind.PROPERTY].binding is Binding.READ
    assert KINDS[TargetKind.CLASSMETHOD].binding is Binding.CLASS
    assert KINDS[TargetKind.STATICMETHOD].binding is Binding.STATIC

    def problem(entry: str, setup: str, call: str) -> str | None:
        return call_problem(setup, call, None, code=CLASS, entry_point=entry, class_name="Cart")

    assert problem("size", "c = Cart()", "c.size") is None
    assert problem("size", "c = Cart()", "c.total(1)") == "it never reads the property `Cart.size`"
    assert problem("empty", "", "Cart.empty(3)") is None  # bound to the class through it
    assert problem("price", "", "Cart.price(3)") is None  # never bound
    assert problem("total", "c = Cart()", "c.total(1)") is None  # bound to the object
    wrong = problem("total", "", "Cart.total(1)")  # through the class: self is explicit
    assert wrong is not None and "does not match" in wrong


def test_check_compares_by_the_row() -> None:
    compared_by_values = {k for k, row in KINDS.items() if row.comparing is Comparing.VALUES}
    assert compared_by_values == {TargetKind.FUNCTION}
    for kind in (TargetKind.ASYNC_FUNCTION, TargetKind.GENERATOR, TargetKind.ASYNC_GENERATOR):
        assert is_member(Target("m.py", "f", shape=kind))
    assert not is_member(Target("m.py", "f", shape=TargetKind.FUNCTION))
    assert not is_member(Target("m.py", "f"))  # the file could not tell: compared by value
    assert is_member(Target("m.py", "C.f", shape=TargetKind.METHOD))
