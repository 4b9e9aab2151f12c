"""utdebug.synth without the sandbox: envelope, mutators, strategies, seeds, determinism."""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import subprocess
import sys
import textwrap
import typing
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest

from utdebug.synth import (
    Envelope,
    seeds_from_args,
    seeds_from_docstring,
    seeds_from_problem,
    seeds_from_test_source,
    seeds_from_tests,
    seeds_from_text,
    synthesize,
)
from utdebug.synth.envelope import Node
from utdebug.synth.mutate import Ingredients, Mutator
from utdebug.synth.strategies import args_strategy, draw, hint_strategy, parse_hints
from utdebug.synth.values import Unencodable, check_encodable, input_key, kind_of

# -- envelope ---------------------------------------------------------------------------------


def test_envelope_learns_kinds_ranges_lengths_and_characters() -> None:
    env = Envelope.learn(
        [(3, "ab c", [1, 5]), (7, "xy", [2]), (5, "q", [])], names=("n", "s", "xs")
    )
    assert env.contains((4, "ba", [5, 1]))
    assert env.contains((3, "", [])) is False  # length 0 of s was never seen
    assert not env.contains((8, "ab", [1]))  # 8 is outside [3, 7]
    assert not env.contains((4, "aB", [1]))  # upper case was never seen
    assert not env.contains((4, "ab!", [1]))  # nor punctuation
    assert not env.contains((4, "ab", [1, 2, 3]))  # xs: length 3 is outside 0..2
    assert not env.contains((4, "ab", [9]))  # element outside [1, 5]
    assert not env.contains((4.0, "ab", [1]))  # a float where only ints were seen
    assert not env.contains((True, "ab", [1]))  # a bool is not an int
    assert not env.contains((4, "ab"))  # arity
    assert env.why_not((4, "ab", [9])) == "xs: element 9: 9 is outside [1, 5]"
    text = env.describe()
    assert "n: int in [3, 7]" in text
    assert "s: str of length 1..4, characters: lower, space" in text
    assert "xs: list of length 0..2 of (int in [1, 5])" in text


def test_envelope_nested_tuples_dicts_and_structural_values() -> None:
    env = Envelope.learn(
        [
            ({"a": (1, "x")}, dt.date(2024, 1, 1), Decimal("1.5"), Fraction(1, 3)),
            ({"bb": (2, "y"), "c": (0, "z")}, dt.date(2024, 3, 1), Decimal("2"), Fraction(2, 3)),
        ]
    )
    assert env.contains(({"q": (1, "z")}, dt.date(2024, 2, 1), Decimal("1.75"), Fraction(1, 2)))
    assert not env.contains(({"q": (1, "z", 3)}, dt.date(2024, 2, 1), Decimal(2), Fraction(1, 2)))
    assert not env.contains(({"q": (1, "z")}, dt.date(2025, 2, 1), Decimal(2), Fraction(1, 2)))
    assert not env.contains(({"q": (1, "z")}, dt.date(2024, 2, 1), Decimal(3), Fraction(1, 2)))
    assert "date in [2024-01-01, 2024-03-01]" in env.describe()
    assert "tuple of 2: (int in [0, 2]); (str of length 1..1, characters: lower)" in env.describe()


def test_envelope_special_floats_only_when_seen() -> None:
    env = Envelope.learn([(1.5,), (float("inf"),)])
    assert env.contains((float("inf"),))
    assert not env.contains((float("-inf"),))
    assert not env.contains((float("nan"),))
    assert env.contains((1.5,))


def test_widening_keeps_sign_kinds_and_classes() -> None:
    env = Envelope.learn([(3, "ab", [1, 2]), (10, "cde", [3])])
    core = env.widened()
    outer = env.widened(outer=True)
    assert core.contains((1, "a", [1]))
    assert not core.contains((0, "a", [1]))  # positive stays positive
    assert not core.contains((-1, "a", [1]))
    assert not core.contains((5, "", [1]))  # non-empty stays non-empty
    assert not core.contains((5, "A", [1]))  # classes kept
    assert outer.contains((-5, "A !", []))  # outer: either sign, more classes, empty
    assert outer.contains((2**40, "", []))
    assert not outer.contains((2**41, "", []))
    assert outer.contains((5.5, "a", [1.5]))  # floats where ints were seen
    assert not outer.contains((5, b"a", [1]))  # other kinds are not added
    assert not core.contains((5.0, "a", [1]))
    for args in [(3, "ab", [1, 2]), (10, "cde", [3])]:
        assert core.contains(args)
        assert outer.contains(args)
    fixed = Envelope.learn([("10:30",), ("23:59",)]).widened(outer=True)
    assert fixed.contains(("ab:c!",))
    assert not fixed.contains(("1:30",))  # strings that all had one length keep it


def test_many_examples_keep_their_range_in_the_core() -> None:
    env = Envelope.learn([([-12, 0, 3, 17, 5, 6, 7, 8, 9],)])
    assert env.widened().contains(([-12, 17],))
    assert not env.widened().contains(([18],))  # 9 elements seen: their range is kept
    assert not Envelope.learn([(17,)]).contains((18,))
    assert Envelope.learn([(17,)]).widened().contains((18,))  # one scalar: widened


# -- values -------------------------------------------------------------------------------------


def test_encodable_checks() -> None:
    check_encodable((1, "a", [1.5, None], {"k": (b"x", {1, 2})}, dt.date(2020, 1, 1)))
    cyclic: list[object] = []
    cyclic.append(cyclic)
    deep: list[object] = []
    cur = deep
    for _ in range(100):
        nxt: list[object] = []
        cur.append(nxt)
        cur = nxt
    for bad in [(object(),), (lambda: 0,), (cyclic,), (deep,), ([{1: object()}],)]:
        with pytest.raises(Unencodable):
            check_encodable(bad)


def test_input_key_tells_types_apart() -> None:
    keys = {input_key(a) for a in [(1,), (1.0,), (True,), (0.0,), (-0.0,), ((1,),), ([1],)]}
    assert len(keys) == 7
    assert input_key(({"b", "a", "c"},)) == input_key(({"c", "b", "a"},))


# -- mutators -------------------------------------------------------------------------------------

MUTATION_CASES = [
    7,
    -3.25,
    True,
    "hello world",
    b"bytes!",
    [1, 2, 3],
    (1, "a"),
    (1, 2, 3, 4),
    {1, 2, 3},
    frozenset({"x", "y"}),
    {"a": 1, "b": 2},
    [[1, 2], [3]],
    dt.date(2024, 2, 29),
    dt.datetime(2024, 1, 1, 12, 30),
    dt.time(23, 59, 59),
    dt.timedelta(days=1),
    Decimal("1.25"),
    Fraction(2, 7),
]


@pytest.mark.parametrize("value", MUTATION_CASES, ids=lambda v: kind_of(v))
def test_each_mutator_keeps_the_kind_and_changes_the_value(value: object) -> None:
    node = Node()
    node.add(value)
    rng = random.Random(1)
    mutator = Mutator(Envelope.learn([(value,)]).widened(), rng, Ingredients())
    results = [mutator.mutate(value, node.widened()) for _ in range(60)]
    assert all(kind_of(r) == kind_of(value) for r in results)
    assert any(input_key((r,)) != input_key((value,)) for r in results)
    for r in results:
        check_encodable((r,))


def test_mutation_uses_ingredients() -> None:
    pool = Ingredients()
    pool.add(["needle", 12345])
    env = Envelope.learn([("abc", 1)]).widened()
    m = Mutator(env, random.Random(0), pool)
    seen = set()
    for _ in range(300):
        s, n = m.mutate_args(("abc", 1))
        seen.add(n)
        if "needle"[:2] in s or "needle" in s:
            seen.add("needle")
    assert 12345 in seen
    assert "needle" in seen


# -- strategies -----------------------------------------------------------------------------------


def test_value_strategies_stay_inside_the_envelope() -> None:
    env = Envelope.learn([(3, "ab", [1.5, 2.0], {"k": 1}), (9, "x y", [], {"z": 4, "w": 0})])
    bounds = env.widened()
    values = draw(args_strategy(bounds), 200, seed=3)
    assert len(values) > 50
    assert all(bounds.contains(v) for v in values)


def test_hints_are_read_from_source_and_drawn() -> None:
    hints = parse_hints("f(a: int, b: list[str] | None, c: 'Dict[str, float]', d, e: Foo)", "f")
    assert hints["a"] is int
    assert hints["b"] == typing.Optional[list[str]]  # noqa: UP045
    assert hints["c"] == typing.Dict[str, float]  # noqa: UP006
    assert "d" not in hints
    assert "e" not in hints
    values = draw(hint_strategy(hints["b"]), 50, seed=0)
    assert all(v is None or all(isinstance(x, str) for x in v) for v in values)


def test_dataclass_hints_use_from_type() -> None:
    from dataclasses import dataclass

    @dataclass
    class Point:
        x: int
        y: int

    values = draw(hint_strategy(Point), 10, seed=0)
    assert values
    assert all(isinstance(v, Point) for v in values)


# -- the synthesiser ---------------------------------------------------------------------------


def test_synthesize_emits_seeds_first_then_inside_the_bounds() -> None:
    seeds = [(3, [1, 2, 3]), (5, [4]), (1, [2, 2])]
    syn = synthesize(seeds, count=150, seed=1)
    assert syn.inputs[:3] == seeds
    assert len(syn.inputs) == 150
    assert len({input_key(a) for a in syn.inputs}) == 150
    assert all(syn.bounds.contains(a) for a in syn.inputs)
    assert all(
        c.outer or (syn.core is not None and syn.core.contains(c.args)) for c in syn.candidates
    )
    assert {"seed", "mutation", "hypothesis"} <= set(syn.by_source())
    assert not syn.notes


def test_synthesize_untyped_falls_back_and_says_so() -> None:
    syn = synthesize([], count=20)
    assert syn.inputs == []
    assert "cannot be typed" in syn.notes[0]
    syn = synthesize([(object(),)], count=20)
    assert syn.inputs == []
    assert any("seed 1 dropped" in n for n in syn.notes)
    typed = synthesize([], count=20, hints={"a": int, "b": str}, names=("a", "b"))
    assert len(typed.inputs) == 20
    assert all(isinstance(a, int) and isinstance(b, str) for a, b in typed.inputs)
    assert "type hints only" in typed.notes[0]


def test_hints_with_seeds_are_bounded() -> None:
    syn = synthesize([(1,), (20,)], count=80, hints=[int], seed=2)
    assert "hint" in syn.by_source()
    assert all(syn.bounds.contains(a) for a in syn.inputs)


def test_a_generator_that_emits_unencodable_values_or_raises_is_noted() -> None:
    cyclic: list[object] = []
    cyclic.append(cyclic)

    def bad_values() -> typing.Iterator[object]:
        yield (777_777,)
        yield (object(),)
        yield (cyclic,)
        yield "not a tuple"
        yield [888_888]

    def raises() -> typing.Iterator[object]:
        yield (999_999,)
        raise RuntimeError("generator broke")

    syn = synthesize(
        [(1,), (5,)], count=30, extra_sources={"gen": bad_values, "boom": raises}, seed=0
    )
    by_source = syn.by_source()
    assert by_source["gen"] == 2
    assert by_source["boom"] == 1
    assert syn.rejected["gen: not encodable"] == 2
    assert syn.rejected["gen: not an argument tuple"] == 1
    assert any("boom: raised RuntimeError: generator broke after 1 values" in n for n in syn.notes)
    assert any(n.startswith("gen: values that cannot be sent") for n in syn.notes)


def test_deep_or_huge_seeds_do_not_hang() -> None:
    deep: list[object] = [1]
    for _ in range(500):
        deep = [deep]
    syn = synthesize([(deep,), ("x" * 100_000,)], count=30, time_budget=5)
    assert any("nested deeper" in n for n in syn.notes)
    assert syn.inputs[0] == ("x" * 100_000,)


_DETERMINISM = """
import json, sys, datetime
from utdebug.synth import synthesize
from utdebug.synth.values import canonical
seeds = [({"b", "a"}, "xy", 3, [1.5, 2.0]), ({"c"}, "hello", -2, [])]
seeds.append(({"d", "e", "f"}, "", 9, [0.0]))
syn = synthesize(seeds, count=120, seed=int(sys.argv[1]))
print(json.dumps([canonical(a) + "|" + c.source for a, c in zip(syn.inputs, syn.candidates)]))
"""


def _run_synth(seed: int, hash_seed: str) -> list[str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    out = subprocess.run(
        [sys.executable, "-c", _DETERMINISM, str(seed)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=300,
    )
    result: list[str] = json.loads(out.stdout)
    return result


def test_deterministic_for_a_seed_across_processes_and_hash_seeds() -> None:
    a = _run_synth(7, "1")
    b = _run_synth(7, "2")
    c = _run_synth(8, "1")
    assert a == b
    assert len(a) == 120
    assert a != c


# -- seeds ---------------------------------------------------------------------------------------


def test_seeds_from_docstring_examples() -> None:
    source = textwrap.dedent(
        '''
        def f(xs, k=1):
            """Sum.

            >>> f([1, 2], 3)
            6
            >>> f(
            ...     [4],
            ...     5)
            9
            >>> f(undefined_name)
            >>> g(1)
            """
        '''
    )
    seeds = seeds_from_docstring(source, "f")
    assert seeds.inputs == [([1, 2], 3), ([4], 5)]
    assert seeds.items[0].origin == "docstring line 3"
    assert len(seeds.skipped) == 1
    assert "docstring line 9" in seeds.skipped[0]


def test_seeds_from_examples_written_without_doctest() -> None:
    """HumanEval's later prompts write ``f(x) => y`` / ``f(x) ➞ y``: with no ``>>>`` example,
    the calls in the docstring's text are the seeds (86 of HE+Fix's 158 prompts had none)."""
    source = textwrap.dedent(
        '''
        def digitSum(s):
            """Sum of the upper characters' codes.

            Examples:
                digitSum("") => 0
                digitSum("abAB") => 131
                digitSum(s) for a string s ➞ an int
            """
        '''
    )
    seeds = seeds_from_docstring(source, "digitSum")
    assert seeds.inputs == [("",), ("abAB",)]
    assert all(s.origin.startswith("docstring offset") for s in seeds.items)
    assert len(seeds.skipped) == 1  # digitSum(s): not a literal
    with_doctest = source.replace('digitSum("") => 0', '>>> digitSum("x")')
    assert seeds_from_docstring(with_doctest, "digitSum").inputs == [("x",)]


def test_seeds_from_examples_written_as_prose() -> None:
    """LeetCode-style and HumanEval-style examples: every parameter named with a literal on
    one line, or an ``Input:`` line with the arguments in order."""
    source = textwrap.dedent(
        '''
        def top(arr, k):
            """The k largest.

            Example 1:
                Input: arr = [-3, -4, 5], k = 3
                Output: [-4, -3, 5]
            For arr = [4, -4, 4] and k = 2 the output should be [4, 4]
            Input: [1, 2], 1
            Input: arr = unknown, k = 1
            Note: 0 <= k <= len(arr)
            """
        '''
    )
    seeds = seeds_from_docstring(source, "top")
    assert seeds.inputs == [([-3, -4, 5], 3), ([4, -4, 4], 2), ([1, 2], 1)]
    assert seeds.items[0].origin == "docstring example line 4"  # of the docstring
    one = 'def count(s):\n    """Examples:\n    For s = "AB" the output should be 1.\n    """\n'
    assert seeds_from_docstring(one, "count").inputs == [("AB",)]


def test_seeds_from_test_files(tmp_path: Path) -> None:
    test = textwrap.dedent(
        """
        import pytest
        from datetime import date
        from mod import f

        CASES = [1, 2]
        LIMIT = 10

        def test_plain():
            assert f(3, "x") == 4
            assert mod.f(LIMIT, "y") == 5
            assert f(date(2024, 1, 2), "z")
            assert f(compute(), "w")

        @pytest.mark.parametrize("n, s", [(5, "a"), (6, "b")])
        def test_rows(n, s):
            assert f(n, s)

        @pytest.mark.parametrize("n", CASES)
        def test_named(n):
            f(n, "c")
        """
    )
    seeds = seeds_from_test_source(test, "f", "tests/test_mod.py")
    assert sorted(map(repr, seeds.inputs)) == sorted(
        map(
            repr,
            [
                (3, "x"),
                (10, "y"),
                (dt.date(2024, 1, 2), "z"),
                (5, "a"),
                (6, "b"),
                (1, "c"),
                (2, "c"),
            ],
        )
    )
    assert any(o.origin == "tests/test_mod.py:10" for o in seeds.items)
    assert len(seeds.skipped) == 1
    path = tmp_path / "test_x.py"
    path.write_text(test)
    (tmp_path / "broken.py").write_bytes(b"\xff\xfe")
    from_files = seeds_from_tests([path, tmp_path / "broken.py"], "f", root=tmp_path)
    assert len(from_files.inputs) == 7
    assert from_files.items[0].origin.startswith("test_x.py:")
    assert "broken.py: unreadable" in from_files.skipped[-1]


def test_seeds_from_text_and_problem_and_args() -> None:
    prompt = "Write f. For example f([1, 2], 'a(b)') returns 3 and f( [] , 'x') returns 0."
    assert seeds_from_text(prompt, "f").inputs == [([1, 2], "a(b)"), ([], "x")]

    class Problem:
        entry_point = "g"
        test_list = ("assert g(1, [2]) == 3", "assert set(g(2, [])) == set()", "assert g(x=1)")

    seeds = seeds_from_problem(Problem())
    assert seeds.inputs == [(1, [2]), (2, [])]
    assert "keyword arguments" in seeds.skipped[0]
    assert seeds_from_args([[1, 2], [3, 4]]).inputs == [(1, 2), (3, 4)]


def test_hard_problems_have_base_seeds(data_dir: Path) -> None:
    from utdebug.data.splits import load_split

    split = load_split("hard", data_dir=data_dir, download=False)
    counts = [len(seeds_from_problem(p).inputs) for p in split.problems]
    assert len(counts) == 170
    assert min(counts) >= 1
    assert sum(counts) == 533  # 3.1 a problem; hard/803 writes two as `14*14`, computed


def test_leaf_mutation_of_a_tuple_of_another_length() -> None:
    env = Envelope.learn([((1, 2),), ((3, 4),)]).widened()
    m = Mutator(env, random.Random(0), Ingredients())
    for _ in range(50):
        out = m.mutate_leaf((1, 2, 3), env.params[0])
        assert kind_of(out) == "tuple"
        assert len(out) == 3


def test_scaling_and_leaf_mutations_keep_shapes() -> None:
    from utdebug.synth.mutate import _scale

    matrix = [[1, -2], [3, 4]]
    env = Envelope.learn([(matrix,), ([[5, 6], [7, 8]],)]).widened(outer=True)
    m = Mutator(env, random.Random(3), Ingredients())
    outs = [m.mutate_leaf(matrix, env.params[0]) for _ in range(100)]
    assert all([len(row) for row in out] == [2, 2] for out in outs)
    assert all(
        sum(a != b for r, s in zip(out, matrix, strict=False) for a, b in zip(r, s, strict=False))
        <= 1
        for out in outs
    )
    assert _scale(([1, -2.5], {"k": 3}, "s", True), 1000, 0) == (
        [1000, -2500.0],
        {"k": 3000},
        "s",
        True,
    )


def test_draws_do_not_depend_on_the_literals_of_loaded_modules(tmp_path, monkeypatch):
    """Hypothesis mixes constants read from every local module in the process into its draws;
    the synthesiser's draws must depend on the seed alone, so loading a module full of string
    literals changes nothing."""
    from hypothesis import strategies as hst

    from utdebug.synth.strategies import draw

    strategy = hst.lists(hst.text(max_size=20), max_size=4)
    before = draw(strategy, 400, seed=7)
    markers = [f"q{i}Zj" for i in range(200)]
    (tmp_path / "lots_of_literals.py").write_text(
        "WORDS = [\n" + "".join(f"    {m!r},\n" for m in markers) + "]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    importlib.import_module("lots_of_literals")
    after = draw(strategy, 400, seed=7)
    seen = {s for values in after for s in values}
    assert not seen & set(markers)
    assert after == before
