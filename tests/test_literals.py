"""Tests for utdebug.literals: the safe literal evaluator and the call parser."""

from __future__ import annotations

import ast
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from utdebug.literals import DEFAULT_MAX_DEPTH, LiteralError, literal_call, literal_value

ACCEPTED: list[tuple[str, Any]] = [
    ("1", 1),
    ("-1", -1),
    ("+2.5", 2.5),
    ("-0.0", -0.0),
    ("1e3", 1000.0),
    ("0x1F", 31),
    ("'text'", "text"),
    ('"a" "b"', "ab"),
    ("b'\\x00by'", b"\x00by"),
    ("True", True),
    ("False", False),
    ("None", None),
    ("...", Ellipsis),
    ("inf", math.inf),
    ("-inf", -math.inf),
    ("+inf", math.inf),
    ("math.inf", math.inf),
    ("-math.inf", -math.inf),
    ("np.inf", math.inf),
    ("-np.inf", -math.inf),
    ("numpy.inf", math.inf),
    ("float('inf')", math.inf),
    ("float('-inf')", -math.inf),
    ("-float('inf')", -math.inf),
    ("float(3)", 3.0),
    ("float(-2.5)", -2.5),
    ("float('1.5')", 1.5),
    ("1j", 1j),
    ("1+2j", 1 + 2j),
    ("-1-2j", -1 - 2j),
    ("1.5-0.5j", 1.5 - 0.5j),
    ("-3j", -3j),
    ("()", ()),
    ("(1,)", (1,)),
    ("[]", []),
    ("[1, -2, [3, (4, 5)]]", [1, -2, [3, (4, 5)]]),
    ("{}", {}),
    ("{'a': [1, {2: (3,)}], (1, 2): None}", {"a": [1, {2: (3,)}], (1, 2): None}),
    ("{1, 2, 2}", {1, 2}),
    ("set()", set()),
    ("set([1, 2, 2])", {1, 2}),
    ("set((1,))", {1}),
    ("set('ab')", {"a", "b"}),
    ("frozenset()", frozenset()),
    ("frozenset([1, 2])", frozenset({1, 2})),
    ("{frozenset([1])}", {frozenset({1})}),
    ("tuple()", ()),
    ("tuple([1, 2])", (1, 2)),
    ("list()", []),
    ("list((1, 2))", [1, 2]),
    ("list('ab')", ["a", "b"]),
    ("dict()", {}),
    ("dict(a=1, b=[2])", {"a": 1, "b": [2]}),
    ("dict([(1, 2)])", {1: 2}),
    ("[set(), {'k': set([1])}, (inf, -inf)]", [set(), {"k": {1}}, (math.inf, -math.inf)]),
    ("  [1, 2]\n", [1, 2]),
]


@pytest.mark.parametrize(("source", "expected"), ACCEPTED)
def test_accepted_constructs(source: str, expected: Any) -> None:
    value = literal_value(source)
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize(
    "source", ["nan", "-nan", "math.nan", "np.nan", "numpy.nan", "float('nan')", "-float('nan')"]
)
def test_nan_spellings(source: str) -> None:
    value = literal_value(source)
    assert isinstance(value, float)
    assert math.isnan(value)


def test_negative_zero_keeps_its_sign() -> None:
    assert math.copysign(1.0, literal_value("-0.0")) == -1.0


def test_accepts_parsed_nodes() -> None:
    expression = ast.parse("[1, inf, set([2])]", mode="eval")
    assert literal_value(expression.body) == [1, math.inf, {2}]
    assert literal_value(expression) == [1, math.inf, {2}]


REJECTED: list[tuple[str, str]] = [
    ("open('x')", "call to open()"),
    ("__import__('os')", "call to __import__()"),
    ("print(1)", "call to print()"),
    ("np.array([1])", "call to np.array()"),
    ("float('x')", "float()"),
    ("float([1])", "float() of list"),
    ("float(1j)", "float() of complex"),
    ("set(1)", "set() of int"),
    ("set([[1]])", "unhashable"),
    ("set([1], [2])", "at most one argument"),
    ("set(*[1])", "starred"),
    ("list(x=1)", "keyword argument"),
    ("x", "name `x`"),
    ("math", "name `math`"),
    ("os.path", "attribute access `os.path`"),
    ("math.pi", "attribute access `math.pi`"),
    ("np.e", "attribute access `np.e`"),
    ("(1).real", "attribute access"),
    ("2 ** 3", "operator **"),
    ("10**10**10", "operator **"),
    ("1 + 2", "operator +"),
    ("'a' * 10", "operator *"),
    ("[1] * 10**9", "operator *"),
    ("1 - 2", "operator -"),
    ("1j + 2", "operator +"),
    ("True + 1j", "operator +"),
    ("~1", "operator ~"),
    ("not True", "operator not"),
    ("-'a'", "unary - on str"),
    ("-True", "unary - on bool"),
    ("-[1]", "unary - on list"),
    ("[x for x in range(3)]", "list comprehension"),
    ("{x for x in ()}", "set comprehension"),
    ("{x: 1 for x in ()}", "dict comprehension"),
    ("(x for x in ())", "generator expression"),
    ("lambda: 1", "lambda"),
    ("f'{1}'", "f-string"),
    ("[1][0]", "subscript"),
    ("1 < 2", "comparison"),
    ("1 and 2", "boolean operator"),
    ("1 if True else 2", "conditional expression"),
    ("[*[1]]", "starred expression"),
    ("{**{}}", "dict unpacking"),
    ("{[1]: 2}", "unhashable dict key"),
    ("{[1]}", "unhashable"),
    ("1 +", "syntax error"),
    ("x = 1", "syntax error"),
    ("", "syntax error"),
]


@pytest.mark.parametrize(("source", "fragment"), REJECTED)
def test_rejected_constructs(source: str, fragment: str) -> None:
    with pytest.raises(LiteralError) as info:
        literal_value(source)
    assert fragment in str(info.value)


def test_error_names_line_and_column() -> None:
    with pytest.raises(LiteralError) as info:
        literal_value("[1,\n 2, open('x')]")
    assert "call to open() is not allowed in a literal at line 2, column 5" in str(info.value)
    assert info.value.lineno == 2
    assert info.value.col == 5


def test_literal_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="name `y`"):
        literal_value("y")


def test_power_tower_is_rejected_quickly_without_computing() -> None:
    # If this were evaluated it would never finish; rejection is immediate.
    with pytest.raises(LiteralError, match=r"\*\*"):
        literal_value("[1, 2, 9**9**9**9]")


def _nested(depth: int) -> str:
    return "[" * depth + "0" + "]" * depth


def test_nesting_at_the_limit_is_accepted() -> None:
    value = literal_value(_nested(DEFAULT_MAX_DEPTH))
    for _ in range(DEFAULT_MAX_DEPTH):
        assert isinstance(value, list)
        value = value[0]
    assert value == 0


@pytest.mark.parametrize("depth", [DEFAULT_MAX_DEPTH + 1, 150, 5000])
def test_too_deep_is_rejected(depth: int) -> None:
    with pytest.raises(LiteralError, match="nest"):
        literal_value(_nested(depth))


def test_deep_unary_chain_is_rejected() -> None:
    with pytest.raises(LiteralError, match="nest"):
        literal_value("-" * 100_000 + "1")


def test_too_deep_node_is_rejected_without_parsing() -> None:
    node: ast.expr = ast.Constant(0)
    for _ in range(1000):
        node = ast.List(elts=[node], ctx=ast.Load())
    with pytest.raises(LiteralError, match="nesting deeper than 100"):
        literal_value(node)


def test_configurable_depth_limit() -> None:
    assert literal_value("[[1]]", max_depth=2) == [[1]]
    with pytest.raises(LiteralError, match="deeper than 1 levels"):
        literal_value("[[1]]", max_depth=1)


def test_too_long_is_rejected_before_parsing() -> None:
    with pytest.raises(LiteralError, match="too long"):
        literal_value("[" + "1," * 20 + "]", max_length=10)
    assert literal_value("[1, 2]", max_length=6) == [1, 2]


def test_default_length_limit_is_50_mb() -> None:
    source = " " * 50_000_001
    with pytest.raises(LiteralError, match="limit 50,000,000"):
        literal_value(source)


def test_huge_decimal_integer_is_rejected() -> None:
    with pytest.raises(LiteralError, match="syntax error"):
        literal_value("1" * 5000)


def test_null_byte_is_rejected() -> None:
    with pytest.raises(LiteralError):
        literal_value("'a\x00b'")


def test_non_expression_node_is_rejected() -> None:
    with pytest.raises(LiteralError, match="expected an expression node"):
        literal_value(ast.Pass())  # type: ignore[arg-type]


# -- literal_call -----------------------------------------------------------------------------


def test_literal_call_positional_and_keywords() -> None:
    args, kwargs = literal_call("f(1, -2.5, [3, (4,)], key='v', other=set())", "f")
    assert args == (1, -2.5, [3, (4,)])
    assert kwargs == {"key": "v", "other": set()}


def test_literal_call_zero_arguments() -> None:
    assert literal_call("f()", "f") == ((), {})
    assert literal_call("  f( )\n", "f") == ((), {})


def test_literal_call_special_values_and_nesting() -> None:
    args, kwargs = literal_call("solve({'a': [inf, -inf]}, float('-inf'), n=-3)", "solve")
    assert args == ({"a": [math.inf, -math.inf]}, -math.inf)
    assert kwargs == {"n": -3}


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ("g(1)", "found a call to g()"),
        ("a.f(1)", "found a call to a.f()"),
        ("1", "expected a call to f()"),
        ("[f(1)]", "expected a call to f()"),
        ("f(*[1])", "starred argument"),
        ("f(**{'a': 1})", "keyword unpacking"),
        ("f(x)", "name `x`"),
        ("f(1)(2)", "expected a call to f()"),
        ("f(1); f(2)", "syntax error"),
        ("f(1)\nf(2)", "syntax error"),
        ("f(2**100)", "operator **"),
        ("f(open('x'))", "call to open()"),
    ],
)
def test_literal_call_rejections(source: str, fragment: str) -> None:
    with pytest.raises(LiteralError) as info:
        literal_call(source, "f")
    assert fragment in str(info.value)


def test_literal_call_length_limit() -> None:
    with pytest.raises(LiteralError, match="too long"):
        literal_call("f(" + "1," * 100 + ")", "f", max_length=50)


def test_literal_call_depth_counts_the_call() -> None:
    assert literal_call("f([1])", "f", max_depth=2) == (([1],), {})
    with pytest.raises(LiteralError, match="nesting"):
        literal_call("f([[1]])", "f", max_depth=2)


# -- property: repr round-trips ------------------------------------------------------------------

_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=10)
    | st.binary(max_size=10)
    | st.complex_numbers(allow_nan=False, allow_infinity=False)
)
_hashables = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=3),
    max_leaves=8,
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(_hashables, inner, max_size=3)
        | st.sets(_hashables, max_size=3)
    ),
    max_leaves=20,
)


@given(_values)
def test_repr_round_trips(value: Any) -> None:
    assert literal_value(repr(value)) == value
