"""The semantics-preserving rewrites ``benchmarks/check_synth.py`` commits over gold code: each
one changes the syntax tree (so ``check`` compares something) and keeps every output."""

from __future__ import annotations

import ast
from typing import Any

import pytest

from utdebug.benchmarks.check_synth import REWRITES, name_returned_values

SAMPLES: list[tuple[str, str, list[tuple[Any, ...]]]] = [
    (
        "def evens(xs):\n    out = []\n    for x in xs:\n        if x % 2 == 0:\n"
        "            out.append(x * 10)\n    return out\n",
        "evens",
        [([],), ([1, 2, 3, 4],), ([0, -2, 7],)],
    ),
    (
        "def pick(n, k):\n    if n > k:\n        return [i * i for i in range(n) if i != k]\n"
        "    else:\n        return sum(range(k)) - n\n",
        "pick",
        [(5, 2), (2, 5), (0, 0), (7, 7)],
    ),
    (
        "def safe_div(a, b):\n    try:\n        return a / b\n    except ZeroDivisionError:\n"
        "        return float('inf') if a >= 0 else -a\n    finally:\n        pass\n",
        "safe_div",
        [(1, 2), (3, 0), (-4, 0)],
    ),
    (
        "def count(s):\n    return len([c for c in s if c.isupper()]) + s.count('a')\n",
        "count",
        [("",), ("aBcA",), ("xyz",)],
    ),
]


def _run(code: str, name: str, args: tuple[Any, ...]) -> Any:
    ns: dict[str, Any] = {}
    exec(compile(code, "<sample>", "exec"), ns)  # our own sample code, not a program under test
    try:
        return ("value", ns[name](*args))
    except Exception as e:  # the exception is part of the outcome
        return ("raises", type(e).__name__)


@pytest.mark.parametrize("kind", sorted(REWRITES))
@pytest.mark.parametrize(("code", "name", "inputs"), SAMPLES, ids=[s[1] for s in SAMPLES])
def test_each_rewrite_keeps_every_output(
    kind: str, code: str, name: str, inputs: list[tuple[Any, ...]]
) -> None:
    new = REWRITES[kind](code)
    if new is None:
        return  # nothing to rewrite here: the benchmark skips it
    ast.parse(new)
    for args in inputs:
        assert _run(new, name, args) == _run(code, name, args), (kind, new)


def test_naming_returned_values_changes_the_tree_of_one_line_functions() -> None:
    code = "def add(a, b):\n    return a + b\n"
    new = name_returned_values(code)
    assert new is not None
    assert ast.dump(ast.parse(new)) != ast.dump(ast.parse(code))
    assert "result0_ = a + b" in new and "return result0_" in new
    assert _run(new, "add", (2, 3)) == ("value", 5)
    # a bare name or a constant is already named: nothing to do
    assert name_returned_values("def f(x):\n    return x\n") is None
    assert name_returned_values("def g():\n    return 3\n") is None


def test_rewrites_apply_to_most_functions() -> None:
    """At least one rewrite that changes the tree applies to each sample (the benchmark needs
    100 or more compared rewrites from 170 problems)."""
    for code, _name, _ in SAMPLES:
        changed = [
            k
            for k, rw in REWRITES.items()
            if k != "reformat"
            and (new := rw(code)) is not None
            and ast.dump(ast.parse(new)) != ast.dump(ast.parse(code))
        ]
        assert changed, code
