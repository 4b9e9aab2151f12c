"""Reading tests with setup from hand-written replies: every shape models write, and the
refusals with their reasons (utdebug.agents.reply_tests)."""

from __future__ import annotations

import pytest

from utdebug.agents.reply_syntax import ParsedValue, ParseFailure
from utdebug.agents.reply_tests import ParsedProgram, parse_program_test, parse_program_tests
from utdebug.agents.reply_votes import parse_vote


def block(code: str, prose: str = "The bug is in total.") -> str:
    return f"{prose}\n```python\n{code}```\n"


def parsed(reply: str, entry: str = "total") -> ParsedProgram:
    out = parse_program_test(reply, entry)
    assert isinstance(out, ParsedProgram), out
    return out


def refusal(reply: str, entry: str = "total") -> str:
    out = parse_program_test(reply, entry)
    assert isinstance(out, ParseFailure), out
    return out.reason


def expected(p: ParsedProgram) -> object:
    assert p.expected is not None
    return p.expected.value


def test_a_pytest_function() -> None:
    p = parsed(
        block(
            "from cart import Cart, Item\n\n\ndef test_total():\n    cart = Cart()\n"
            "    cart.add(Item(3))\n    assert cart.total() == 3\n"
        )
    )
    assert p.setup == "from cart import Cart, Item\ncart = Cart()\ncart.add(Item(3))"
    assert (p.call, expected(p), p.raises, p.then, p.name) == (
        "cart.total()", 3, None, None, "test_total",
    )  # fmt: skip


def test_the_first_test_of_several_and_the_value_on_the_left() -> None:
    p = parsed(block("def test_a():\n    assert 5 == add(2, 3)\n\ndef test_b():\n    assert 1\n"))
    assert (p.call, expected(p), p.name) == ("add(2, 3)", 5, "test_a")


def test_unittest_methods_with_set_up() -> None:
    p = parsed(
        block(
            "import unittest\n\n\nclass TestCart(unittest.TestCase):\n"
            "    def setUp(self):\n        self.cart = Cart()\n\n"
            "    def test_one(self):\n        self.cart.add(2)\n"
            "        self.assertEqual(self.cart.total(), 2)\n"
        )
    )
    assert "self = _UtdCase()" in p.setup and "self.cart = Cart()\nself.cart.add(2)" in p.setup
    assert (p.call, expected(p)) == ("self.cart.total()", 2)


@pytest.mark.parametrize(
    ("line", "call", "value"),
    [
        ("self.assertTrue(c.empty())", "c.empty()", True),
        ("self.assertFalse(c.empty())", "c.empty()", False),
        ("self.assertIsNone(c.total())", "c.total()", None),
        ("self.assertAlmostEqual(c.total(), 0.5)", "c.total()", 0.5),
        ("assert c.total() is None", "c.total()", None),
        ("assert not c.empty()", "c.empty()", False),
        ("assert c.empty()", "c.empty()", True),
        ("assert c.total() == pytest.approx(0.5)", "c.total()", 0.5),
    ],
)
def test_assertion_forms(line: str, call: str, value: object) -> None:
    p = parsed(
        block(
            f"class T(unittest.TestCase):\n    def test_x(self):\n        c = C()\n        {line}\n"
        )
    )
    assert (p.call, expected(p)) == (call, value)


def test_exceptions_pytest_raises_and_assert_raises() -> None:
    p = parsed(
        block(
            "def test_raises():\n    cart = Cart()\n    with pytest.raises(KeyError):\n"
            "        cart.remove('x')\n"
        )
    )
    assert (p.setup, p.call, p.raises, p.expected) == (
        "cart = Cart()",
        "cart.remove('x')",
        "KeyError",
        None,
    )
    p = parsed(
        block(
            "class T(unittest.TestCase):\n    def test_x(self):\n"
            "        self.assertRaises(ValueError, parse, '')\n"
        )
    )
    assert (p.call, p.raises) == ("parse('')", "ValueError")
    p = parsed(
        block(
            "class T(unittest.TestCase):\n    def test_x(self):\n"
            "        with self.assertRaises(ValueError):\n            parse('')\n"
        )
    )
    assert (p.call, p.raises) == ("parse('')", "ValueError")


def test_plain_setup_and_assert_and_a_follow_up_expression() -> None:
    p = parsed(block("cart = Cart()\ncart.add(3)\nassert cart.items == [3]\n"), entry="add")
    assert (p.setup, p.call, p.then, expected(p)) == (
        "cart = Cart()",
        "cart.add(3)",
        "cart.items",
        [3],
    )


def test_a_result_bound_to_a_name_is_the_call() -> None:
    p = parsed(block("def test_x():\n    c = Cart()\n    r = c.total()\n    assert r == 0\n"))
    assert (p.setup, p.call, expected(p)) == ("c = Cart()", "c.total()", 0)


def test_async_tests_keep_their_awaits() -> None:
    p = parsed(
        block("async def test_x():\n    c = Client()\n    assert await c.fetch('u') == b'ok'\n"),
        entry="fetch",
    )
    assert (p.call, expected(p)) == ("await c.fetch('u')", b"ok")


def test_compound_setup_statements_keep_their_shape() -> None:
    p = parsed(
        block(
            "def test_x():\n    c = Cart()\n    for i in range(3):\n        c.add(i)\n"
            "    assert c.total() == 3\n"
        )
    )
    assert p.setup == "c = Cart()\nfor i in range(3):\n    c.add(i)"


def test_earlier_assertions_are_dropped_from_the_setup() -> None:
    p = parsed(
        block(
            "def test_x():\n    c = Cart()\n    assert c.total() == 0\n    c.add(2)\n"
            "    assert c.total() == 2\n"
        )
    )
    assert (p.setup, expected(p)) == ("c = Cart()\nc.add(2)", 2)


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (
            "def test_x(cart):\n    assert cart.total() == 0\n",
            "the test uses fixtures (parameters cart)",
        ),
        (
            "@pytest.fixture\ndef cart():\n    return Cart()\n\n"
            "@pytest.mark.parametrize('n', [1])\ndef test_x():\n"
            "    assert Cart().total() == 0\n",
            "the test uses parametrized tests (@parametrize)",
        ),
        (
            "from unittest.mock import patch\n\ndef test_x():\n    with patch('x'):\n"
            "        assert total() == 0\n",
            "the test uses mocks (patch)",
        ),
        (
            "def test_x(monkeypatch):\n    assert total() == 0\n",
            "the test uses mocks (monkeypatch)",
        ),
        (
            "def test_x():\n    m = MagicMock()\n    assert total(m) == 0\n",
            "the test uses mocks (MagicMock)",
        ),
        ("def test_x():\n    assert Cart().total() > 2\n", "the assertion compares with Gt"),
        ("def test_x():\n    assert 1 + 1\n", "compares nothing"),
        ("def test_x():\n    c = Cart()\n", "has no assertion"),
        ("def test_x():\n    with pytest.raises():\n        f()\n", "names no exception type"),
        (
            "def test_x():\n    assert f() == open('x').read()\n",
            "`open` is not allowed",
        ),
        (
            "class T(unittest.TestCase):\n    def test_x(self):\n        self.assertIn(1, f())\n",
            "self.assertIn is not an assertion utdebug reads",
        ),
    ],
)
def test_refusals_say_why(code: str, reason: str) -> None:
    assert reason in refusal(block(code))


def test_a_reply_without_a_test() -> None:
    assert refusal("I think the bug is in the loop.").startswith("no test found")


def test_votes_are_values_or_exception_types() -> None:
    assert parse_vote("It raises.\nOutput: ```raises KeyError```", "c.total()") == "KeyError"
    assert (
        parse_vote("```\nraises json.JSONDecodeError\n```", "c.total()") == "json.JSONDecodeError"
    )
    value = parse_vote("Adding.\nOutput: ```[1, 2]```", "c.total()")
    assert isinstance(value, ParsedValue) and value.value == [1, 2]
    assert isinstance(parse_vote("no idea", "c.total()"), ParseFailure)


def test_votes_a_person_reads_raises_in_a_python_block_and_a_sentence_ending_in_a_value() -> None:
    """The prompt's own answer format in a ```python block (6 of 48 votes in a real run), and
    "... the value of `...` at the end ... is `0.0`."; the placeholder is no answer."""
    fenced = "So it raises.\n\nTherefore, the final answer is:\n```python\nraises ValueError\n```"
    assert parse_vote(fenced, "await f.get(r)") == "ValueError"
    assert parse_vote("Final answer:\n```py\nraises KeyError\n```\n", "c.total()") == "KeyError"
    sentence = (
        "1. The balance starts at `10.0`.\n2. `withdraw(10.0)` subtracts it.\n\nTherefore, the "
        "value of `acct.balance` at the end, for a **correct** implementation of "
        "`Account.withdraw(self, amount)`, is `0.0`."
    )
    value = parse_vote(sentence, "acct.balance")
    assert isinstance(value, ParsedValue) and value.value == 0.0
    # the prompt's question restated as the answer decides over values stated on the way
    traced = (
        "1. `acct = Account(10.0)` opens the account.\n2. `acct.withdraw(10.0)` returns `None` "
        "and takes the money out.\n\nTherefore, the value of `acct.balance` at the end, for a "
        "**correct** implementation of `Account.withdraw`, is `0.0`."
    )
    for subject in ("acct.withdraw(10.0)", "acct.balance"):
        value = parse_vote(traced, subject)
        assert isinstance(value, ParsedValue) and value.value == 0.0, (subject, value)
    block_after = "So the value of `r` at the end is:\n\n```python\nraises KeyError\n```\n"
    assert parse_vote(block_after, "r") == "KeyError"
    marked_later = traced + "\n\nOutput: ```1.5```"
    later = parse_vote(marked_later, "acct.balance")
    assert isinstance(later, ParsedValue) and later.value == 1.5
    said = "3. **Result**:\n   - The return value of `ledger.memo()` is an empty string.\n"
    empty = parse_vote(said, "ledger.memo()")
    assert isinstance(empty, ParsedValue) and empty.value == ""
    listed = parse_vote("So it returns an empty list because nothing matched.", "c.items()")
    assert isinstance(listed, ParsedValue) and listed.value == []
    assert isinstance(
        parse_vote("It returns an empty dict if no key matches.", "c.f()"), ParseFailure
    )
    for placeholder in ("```raises ExceptionType```", "```python\nraises ExceptionTypeError\n```"):
        refused = parse_vote(f"Therefore, the final answer is:\n\n{placeholder}\n", "c.total()")
        assert isinstance(refused, ParseFailure) and "placeholder" in refused.reason


_OBJECTS = """\
import enum
from dataclasses import dataclass


@dataclass
class Point:
    x: int
    y: int


class Color(enum.Enum):
    RED = 1
    BLUE = 2
"""


@pytest.mark.parametrize(
    ("reply", "shown"),
    [
        ("Moving it.\nOutput: ```Point(4, 2)```", "Point(x=4, y=2)"),
        ("Final Answer: Point(x=4, y=2)", "Point(x=4, y=2)"),
        ("It is the red one:\n```python\nColor.RED\n```", "Color.RED"),
        ("Output: `date(2024, 1, 2)`", "datetime.date(2024, 1, 2)"),
        ("It returns `Decimal('1.5')`.", "Decimal('1.5')"),
        ("Output: ```[Point(1, 2), Point(3, 4)]```", "[Point(x=1, y=2), Point(x=3, y=4)]"),
    ],
)
def test_votes_on_objects_are_read_structurally(reply: str, shown: str) -> None:
    from utdebug.literals import canonical_repr

    value = parse_vote(reply, "p.moved()", module_source=_OBJECTS)
    assert isinstance(value, ParsedValue) and not value.pending
    assert canonical_repr(value.value) == shown


def test_object_votes_group_by_their_fields() -> None:
    from utdebug.engine.voting import tally

    votes = [
        "Output: ```Point(4, 2)```",
        "Output: ```Point(x=4, y=2)```",
        "Output: ```Point(2, 4)```",
    ]
    read = [parse_vote(v, "p.moved()", module_source=_OBJECTS) for v in votes]
    assert all(isinstance(v, ParsedValue) for v in read)
    t = tally([(True, v.value) for v in read if isinstance(v, ParsedValue)])
    assert t.count == 2 and len(t.counts) == 2


def test_object_votes_without_the_class_stay_unread() -> None:
    # Positional fields need the class's definition: without it the text is left pending.
    value = parse_vote("Output: ```Point(4, 2)```", "p.moved()")
    assert isinstance(value, ParsedValue) and value.pending
    # Code that is not a value is still no answer.
    assert isinstance(
        parse_vote(
            "```python\np = Point(1, 2)\np.moved()\n```", "p.moved()", module_source=_OBJECTS
        ),
        ParseFailure,
    )


def test_comparing_with_an_object_the_setup_built_is_the_call() -> None:
    # ``b`` is no value to predict: the comparison itself is the call, expected True
    t = parse_program_test(block("def test_eq():\n    a, b = Cart(), Cart()\n    assert a == b\n"),
                           "__eq__")  # fmt: skip
    assert isinstance(t, ParsedProgram)
    assert (t.setup, t.call, t.then) == ("a, b = Cart(), Cart()", "a == b", None)
    assert t.expected is not None and t.expected.value is True and not t.expected.pending
    t = parse_program_test(
        block("def test_add():\n    c = Cart()\n    want = [1]\n    c.add(1)\n"
              "    assert c.items == want\n"), "add",
    )  # fmt: skip
    assert isinstance(t, ParsedProgram)
    assert (t.call, t.then) == ("c.add(1)", "c.items == want")
    # an expression of builtins alone is still computed apart, as before
    t = parse_program_test(block("def test_f():\n    assert f(2) == sorted([3, 1])\n"), "f")
    assert isinstance(t, ParsedProgram) and t.expected is not None and t.expected.pending


# --- every test a person can read (issue 29, item 11) ---------------------------------------

CODE = (
    "class Cart:\n    def total(self):\n        return 0\n\n    def add(self, n):\n        pass\n"
)


def every(reply: str, entry: str = "total") -> list[ParsedProgram]:
    out = parse_program_tests(reply, entry, module_source=CODE)
    assert isinstance(out, list), out
    return out


def test_fixtures_that_only_build_values_are_inlined() -> None:
    (p,) = every(
        block(
            "import pytest\n\n\n@pytest.fixture\ndef items():\n    return [1, 2]\n\n\n"
            "@pytest.fixture\ndef cart(items):\n    c = Cart()\n    for i in items:\n"
            "        c.add(i)\n    yield c\n\n\ndef test_total(cart):\n"
            "    assert cart.total() == 3\n"
        )
    )
    assert p.setup == "items = [1, 2]\nc = Cart()\nfor i in items:\n    c.add(i)\ncart = c"
    assert (p.call, expected(p)) == ("cart.total()", 3)
    # a fixture that is not in the reply, or that mocks, is still refused
    assert "the test uses fixtures (parameters cart)" in refusal(
        block("def test_x(cart):\n    assert cart.total() == 0\n")
    )
    assert "uses mocks" in refusal(
        block(
            "@pytest.fixture\ndef cart(mocker):\n    return mocker.Mock()\n\n\n"
            "def test_x(cart):\n    assert cart.total() == 0\n"
        )
    )


def test_a_unittest_class_with_helpers() -> None:
    (p,) = every(
        block(
            "import unittest\n\n\nclass TestCart(unittest.TestCase):\n    LIMIT = 2\n\n"
            "    def setUp(self):\n        self.cart = self.make(self.LIMIT)\n\n"
            "    def make(self, n):\n        c = Cart()\n        for i in range(n):\n"
            "            c.add(i)\n        return c\n\n    def test_total(self):\n"
            "        self.assertEqual(self.cart.total(), 1)\n"
        )
    )
    assert "class _UtdCase:\n    LIMIT = 2\n\n    def make(self, n):" in p.setup
    assert p.setup.endswith("self = _UtdCase()\n\nself.cart = self.make(self.LIMIT)")
    assert (p.call, expected(p)) == ("self.cart.total()", 1)


def test_a_unittest_class_set_up_once() -> None:
    (p,) = every(
        block(
            "class TestCart(unittest.TestCase):\n    @classmethod\n"
            "    def setUpClass(cls):\n        cls.cart = Cart()\n\n"
            "    def test_total(self):\n        self.assertEqual(self.cart.total(), 0)\n"
        )
    )
    assert p.setup.endswith("self = _UtdCase()\n\ncls = type(self)\ncls.cart = Cart()")
    assert (p.call, expected(p)) == ("self.cart.total()", 0)


def test_asserts_in_a_loop_over_a_table_of_cases_are_several_tests() -> None:
    tests = every(
        block(
            "def test_total():\n    cases = [([], 0), ([1, 2], 3), ([5], 5)]\n"
            "    for items, want in cases:\n        cart = Cart()\n        for i in items:\n"
            "            cart.add(i)\n        assert cart.total() == want, f'{items}'\n"
        )
    )
    assert [(t.setup, t.call, expected(t)) for t in tests] == [
        ("cart = Cart()\nfor i in []:\n    cart.add(i)", "cart.total()", 0),
        ("cart = Cart()\nfor i in [1, 2]:\n    cart.add(i)", "cart.total()", 3),
        ("cart = Cart()\nfor i in [5]:\n    cart.add(i)", "cart.total()", 5),
    ]
    by_dict = every(
        block(
            "def test_add():\n    cart = Cart()\n    for n, want in {1: None, 2: None}.items():\n"
            "        assert cart.add(n) == want\n"
        ),
        entry="add",
    )
    assert [(t.call, expected(t)) for t in by_dict] == [
        ("cart.add(1)", None),
        ("cart.add(2)", None),
    ]
    assert "asserts in a loop over cases it does not list" in refusal(
        block("def test_x():\n    for n in load():\n        assert Cart().total() == n\n")
    )


def test_module_level_setup_and_every_test_function() -> None:
    tests = every(
        block(
            "from cart import Cart\n\ncart = Cart()\ncart.add(2)\n\n\n"
            "def test_total():\n    assert cart.total() == 2\n\n\n"
            "def test_patched():\n    with patch('cart.Cart'):\n"
            "        assert cart.total() == 0\n\n\n"
            "def test_again():\n    cart.add(3)\n    assert cart.total() == 5\n\n\n"
            "test_total()\nunittest.main()\n"
        )
    )
    # the import of the code under test is left out (the test runs in its module); the test
    # with a mock is refused, the others are read
    assert [(t.setup, t.call, expected(t)) for t in tests] == [
        ("cart = Cart()\ncart.add(2)", "cart.total()", 2),
        ("cart = Cart()\ncart.add(2)\ncart.add(3)", "cart.total()", 5),
    ]


def test_the_code_under_test_as_the_reply_rewrote_it_is_not_part_of_the_setup() -> None:
    (p,) = every(
        block(
            "class Cart:\n    def total(self):\n        return 42\n\n\ndef helper():\n"
            "    return Cart()\n\n\ndef test_total():\n    assert helper().total() == 0\n"
        )
    )
    assert p.setup == "def helper():\n    return Cart()"
    assert p.call == "helper().total()"


def test_a_raises_block_whose_exception_is_then_inspected() -> None:
    p = parsed(
        block(
            "import pytest\n\n\ndef test_total():\n    cart = Cart()\n"
            "    with pytest.raises(ValueError) as e:\n        cart.total()\n"
            "    assert 'empty' in str(e.value)\n"
        )
    )
    assert (p.setup, p.call, p.raises, p.expected) == (
        "cart = Cart()",
        "cart.total()",
        "ValueError",
        None,
    )


def test_a_test_that_does_not_parse_does_not_hide_the_others() -> None:
    tests = every(
        block(
            "class TestCart:\n    def test_broken(self):\n        assert Cart().total({) == 1\n\n"
            "    def test_empty(self):\n        c = Cart()\n        assert c.total() == 0\n"
        )
    )
    assert [(t.call, expected(t)) for t in tests] == [("c.total()", 0)]
