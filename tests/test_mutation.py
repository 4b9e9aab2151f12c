"""AST mutation operators (model-free corruption of gold code, training data stage I)."""

from __future__ import annotations

import ast
import random

import pytest

from utdebug.mutation import OPERATORS, apply, mutants, normalized_dump, sites

CODE = '''import math


def f(xs: list, k: int = 2) -> int:
    """Sum the first k items when all are positive."""
    # a comment that must survive
    total = 0
    for i in range(len(xs[1:-1])):
        if xs[i] > 0 and k <= i:
            total += xs[i] * k
    return max(total, min(xs)) if not xs == [] else math.floor(total / 2)
'''


def _changed_line(before: str, after: str) -> tuple[str, str]:
    pairs = [(a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b]
    assert len(pairs) == 1, pairs
    return pairs[0]


def test_every_operator_finds_its_sites() -> None:
    found = {s.operator for s in sites(CODE)}
    assert found == set(OPERATORS)


@pytest.mark.parametrize(
    ("operator", "before", "after"),
    [
        ("comparison", "xs[i] > 0", "xs[i] >= 0"),
        ("comparison", "k <= i", "k < i"),
        ("arithmetic", "total += xs[i] * k", "total -= xs[i] * k"),
        ("arithmetic", "xs[i] * k", "xs[i] + k"),
        ("constant", "0", "total = 1"),
        ("slice", "1:-1", "2:-1"),
        ("slice", "1:-1", "1:"),
        ("condition", "xs[i] > 0 and k <= i", "k <= i"),
        ("condition", "not xs == []", "xs == []"),
        ("swap_args", "max(total, min(xs))", "max(min(xs), total)"),
        ("builtin", "max(total, min(xs))", "min(total, min(xs))"),
    ],
)
def test_operator_examples(operator: str, before: str, after: str) -> None:
    matching = [s for s in sites(CODE) if s.operator == operator and s.before == before]
    assert matching, [s.describe() for s in sites(CODE) if s.operator == operator]
    results = {apply(CODE, s) for s in matching}
    assert any(after in r for r in results), results


def test_a_change_is_spliced_and_the_rest_keeps_its_text() -> None:
    (site,) = [s for s in sites(CODE) if s.describe().startswith("comparison at line 9")][:1]
    new = apply(CODE, site)
    old_line, new_line = _changed_line(CODE, new)
    assert old_line == "        if xs[i] > 0 and k <= i:"
    assert new_line == "        if xs[i] >= 0 and k <= i:"
    assert "# a comment that must survive" in new
    assert '"""Sum the first k items when all are positive."""' in new


def test_parentheses_keep_the_grouping_only_where_needed() -> None:
    code = "def f(a, b, c):\n    return c - a * b\n"
    (mult,) = [s for s in sites(code) if s.operator == "arithmetic" and s.before == "a * b"]
    assert apply(code, mult) == "def f(a, b, c):\n    return c - (a + b)\n"
    (minus,) = [s for s in sites(code) if s.before == "c - a * b"]
    assert apply(code, minus) == "def f(a, b, c):\n    return c + a * b\n"
    guard = "def g(a, b):\n    if a < b:\n        return 1\n    return 2\n"
    (cmp,) = [s for s in sites(guard) if s.operator == "comparison"]
    assert apply(guard, cmp) == guard.replace("a < b", "a <= b")


def test_negative_constants_change_as_one_number() -> None:
    code = "def f(xs):\n    return xs[-1]\n"
    changed = {apply(code, s) for s in sites(code) if s.operator == "constant"}
    assert changed == {"def f(xs):\n    return xs[0]\n", "def f(xs):\n    return xs[-2]\n"}


def test_imports_docstrings_annotations_and_defaults_are_left_alone() -> None:
    code = (
        'import os\n\n\ndef f(x: int = 3) -> "list[int]":\n    """Return 1 + 2."""\n    return x\n'
    )
    assert sites(code) == []


def test_mutants_parse_differ_and_are_seeded() -> None:
    first = mutants(CODE, random.Random(7), 2)
    again = mutants(CODE, random.Random(7), 2)
    assert [m.code for m in first] == [m.code for m in again]
    assert len(first) == 2
    dumps = {normalized_dump(m.code) for m in first}
    assert len(dumps) == 2 and normalized_dump(CODE) not in dumps
    for m in first:
        ast.parse(m.code)
    other = [m.code for m in mutants(CODE, random.Random(8), 2)]
    assert other != [m.code for m in first]


def test_operators_take_turns_so_constants_do_not_crowd_out_the_rest() -> None:
    ops = [mutants(CODE, random.Random(seed), 1)[0].site.operator for seed in range(60)]
    assert len(set(ops)) >= 5


def test_code_without_sites_or_that_does_not_parse_gives_no_mutant() -> None:
    assert mutants("def f(x):\n    return x\n", random.Random(0), 2) == []
    assert mutants("def f(:\n", random.Random(0), 2) == []
    assert sites("def f(:\n") == []


def test_a_docstring_change_is_not_a_different_program() -> None:
    a = 'def f():\n    """One."""\n    return 1\n'
    b = 'def f():\n    """Two."""\n    return 1\n'
    assert normalized_dump(a) == normalized_dump(b)
    assert normalized_dump("def f(:") is None


def test_mutants_can_be_kept_within_the_lines_of_one_method() -> None:
    code = (
        "class C:\n"
        "    def a(self, x):\n"
        "        return x + 1 if x > 0 else x - 1\n"
        "\n"
        "    def b(self, y):\n"
        "        return y * 2 < 10\n"
    )
    inside = mutants(code, random.Random(3), 50, lines=(5, 6))
    assert inside and all(5 <= m.site.line <= 6 for m in inside)
    assert all(m.code.splitlines()[:4] == code.splitlines()[:4] for m in inside)
    everywhere = mutants(code, random.Random(3), 50)
    assert {m.site.line for m in everywhere} == {3, 6}
    assert mutants(code, random.Random(3), 50, lines=(4, 4)) == []
