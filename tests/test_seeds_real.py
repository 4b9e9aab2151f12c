"""Seeds where real tests keep them (utdebug.synth.seeds, test_calls, seed_values): names bound
earlier in a test, parametrize tables, loops over literal tables, fixtures, setUp, doctests
that bind the input first, keyword arguments, enum members, functions and iterators; and
the bounds on what is read. No sandbox here, except where a value must cross into it."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from utdebug.sandbox.executor import Sandbox
from utdebug.sandbox.frames import decode_frame
from utdebug.sandbox.outcomes import Status
from utdebug.sandbox.values import EnumMember, IterOf, SourceFunction
from utdebug.synth import synthesize
from utdebug.synth.kinds import infer
from utdebug.synth.oracle import REFERENCE_LIMITS, run_batch
from utdebug.synth.seeds import (
    MAX_TEST_FILE_BYTES,
    gather,
    seeds_from_docstring,
    seeds_from_test_source,
    seeds_from_tests,
)
from utdebug.synth.test_calls import Target
from utdebug.synth.values import check_encodable, input_key, kind_of

MODULE = """
import enum


class Color(enum.Enum):
    RED = 1
    BLUE = 2


def f(xs, n=3, sep=","):
    return xs


def double(x):
    return 2 * x
"""
TARGET = Target.of(MODULE, "f", "shop.mod")


def read(test: str, target: Target = TARGET) -> list[tuple[Any, ...]]:
    return seeds_from_test_source(textwrap.dedent(test), "f", "t.py", target=target).inputs


# -- names bound earlier in the test -----------------------------------------------------------


def test_a_name_bound_a_line_earlier_is_its_value() -> None:
    seeds = read(
        """
        from shop.mod import f

        def test_it():
            x = [1, 2]
            y = x + [3]
            a, b = 4, 5
            b += 1
            assert f(y, b) == [1, 2, 3]
            z = y * 2
            z += [0]
            assert f(z[1:], -a) == 0
        """
    )
    assert seeds == [([1, 2, 3], 6), ([2, 3, 1, 2, 3, 0], -4)]


def test_a_name_rebound_in_a_branch_or_loop_is_not_guessed() -> None:
    s = seeds_from_test_source(
        textwrap.dedent(
            """
            def test_it(flag):
                x = [1]
                if flag:
                    x = [2]
                f(x)
                y = compute()
                f(y)
            """
        ),
        "f",
        "t.py",
        target=TARGET,
    )
    assert s.inputs == []
    assert len(s.skipped) == 2
    assert "bound in a branch" in s.skipped[0] and "compute()" in s.skipped[1]


def test_module_constants_setup_attributes_and_fixtures() -> None:
    seeds = read(
        """
        import pytest
        import unittest

        BASE = [4, 5]
        LONGER = BASE + [6]

        @pytest.fixture
        def data():
            d = {"a": 1}
            return d

        @pytest.fixture(params=[7, 8])
        def number(request):
            return request.param

        def test_fixture(data, number):
            f(data, number)

        def test_constant():
            f(LONGER)

        class TestCart(unittest.TestCase):
            limit = 9

            def setUp(self):
                self.xs = [7, 8]

            def test_it(self):
                self.assertEqual(f(self.xs, self.limit), 1)
        """
    )
    assert seeds == [({"a": 1}, 7), ({"a": 1}, 8), ([4, 5, 6],), ([7, 8], 9)]


# -- tables --------------------------------------------------------------------------------------


def test_parametrize_rows_passed_as_star_args_params_ids_and_stacks() -> None:
    seeds = read(
        """
        import pytest

        @pytest.mark.parametrize("args", [([1], 2), ([2], 3)], ids=["a", "b"])
        def test_star(args):
            assert f(*args)

        @pytest.mark.parametrize(["xs", "n"], [pytest.param([5], 6, id="p"), ([7], 8)])
        def test_param(xs, n):
            f(xs, n)

        @pytest.mark.parametrize("sep", ["-", "+"])
        @pytest.mark.parametrize("xs,n", [([0], 1)])
        def test_stacked(xs, n, sep):
            f(xs, n, sep)
        """
    )
    assert seeds == [([1], 2), ([2], 3), ([5], 6), ([7], 8), ([0], 1, "-"), ([0], 1, "+")]


def test_loops_over_literal_tables_and_subtests() -> None:
    seeds = read(
        """
        import unittest

        CASES = {"ab": 2, "c": 1}

        class T(unittest.TestCase):
            def test_table(self):
                for xs, n in [([1], 1), ([2, 3], 2)]:
                    with self.subTest(xs=xs):
                        self.assertEqual(f(xs, n), n)

            def test_items(self):
                for text, n in CASES.items():
                    f(text, n)

            def test_range(self):
                for i in range(2):
                    f([i] * i)
        """
    )
    assert seeds == [([1], 1), ([2, 3], 2), ("ab", 2), ("c", 1), ([],), ([1],)]


def test_doctests_that_bind_the_input_first() -> None:
    module = '''
def f(xs, n=3):
    """Sums.

    >>> data = [1, 2]
    >>> data += [5]
    >>> f(data)
    8
    >>> pairs = {"a": 1}
    >>> f(list(pairs), n=4)
    1
    """
'''
    s = seeds_from_docstring(module, "f", target=Target.of(module, "f"))
    assert s.inputs == [([1, 2, 5],), (["a"], 4)]
    assert [x.origin for x in s.items] == ["docstring line 5", "docstring line 8"]


# -- keyword arguments, module aliases, assertRaises --------------------------------------------


def test_keywords_module_aliases_and_assert_raises() -> None:
    seeds = read(
        """
        import pytest
        import shop.mod as m
        from shop import mod

        def test_it():
            m.f([1], n=7)
            mod.f([2], sep=";")
            with pytest.raises(ValueError):
                f(xs=[3])
            pytest.raises(ValueError, f, [4], 5)
            self.assertRaises(TypeError, mod.f, [6])
        """
    )
    assert seeds == [([1], 7), ([2], 3, ";"), ([3],), ([4], 5), ([6],)]


def test_a_keyword_the_function_cannot_take_by_position_is_skipped() -> None:
    module = "def f(xs, *, key=None):\n    return xs\n"
    s = seeds_from_test_source("f([1], key=len)\n", "f", "t.py", target=Target.of(module, "f"))
    assert s.inputs == [] and "keyword-only argument `key`" in s.skipped[0]


def test_gather_fills_literal_defaults_so_that_they_are_varied(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_f.py").write_text("from mod import f\n\ndef test_f():\n    f([1])\n")
    seeds = gather(MODULE, "f", tests=[tests / "test_f.py"], root=tmp_path, module="mod")
    assert seeds.inputs == [([1], 3, ",")]
    assert seeds.items[0].origin == "tests/test_f.py:4"
    base = "def f(xs, n=3):\n    return xs\n"  # the head added `sep`
    seeds = gather(MODULE, "f", tests=[tests / "test_f.py"], root=tmp_path, other_sources=[base])
    assert seeds.inputs == [([1], 3)]
    (tests / "test_f.py").write_text("from mod import f\n\ndef test_f():\n    f([1], n=7)\n")
    swapped = 'def f(xs, sep=",", n=3):\n    return xs\n'  # the head swapped two
    seeds = gather(MODULE, "f", tests=[tests / "test_f.py"], root=tmp_path, other_sources=[swapped])
    assert seeds.inputs == [] and "keyword argument `n`" in seeds.skipped[0]


# -- values the child re-creates -----------------------------------------------------------------


def test_enum_members_functions_and_iterators_are_read() -> None:
    seeds = read(
        """
        from shop.mod import Color, double, f
        from shop import mod

        def helper(v):
            return v + 1

        def test_it():
            f([Color.RED, mod.Color.BLUE])
            f(double, len)
            f(helper)
            k = 3
            f(lambda v: v * k)
            f(iter([1, 2]), (x * 2 for x in [1, 2]), range(1, 5))
        """
    )
    assert seeds[0] == ([EnumMember("Color", "RED"), EnumMember("Color", "BLUE")],)
    assert seeds[1] == (SourceFunction("", "double"), SourceFunction("", "len"))
    helper = seeds[2][0]
    assert helper.name == "helper" and "def helper(v):" in helper.source
    assert seeds[3] == (SourceFunction("lambda v: v * 3", "<lambda>"),)
    assert seeds[4] == (IterOf("iter", (1, 2)), IterOf("gen", (2, 4)), IterOf("range", (1, 5)))
    assert [kind_of(v) for v in seeds[4]] == ["iterator", "generator", "range"]
    for args in seeds:
        check_encodable(args)  # none is dropped as "not plain data"


def test_builtins_and_helpers_defined_in_a_test_are_functions() -> None:
    seeds = read(
        """
        def test_it():
            def inc(v):
                return v + 1

            f(inc, map, TypeError)
        """
    )
    (helper, *rest), *_ = seeds
    assert helper.name == "inc" and "def inc(v):" in helper.source
    assert rest == [SourceFunction("", "map"), SourceFunction("", "TypeError")]


def test_names_and_sources_too_long_for_the_codec_are_not_inputs() -> None:
    from utdebug.synth.values import Unencodable

    for value in (
        SourceFunction("lambda: 0" + " " * 100_000, "<lambda>"),
        SourceFunction("", "f" * 201),
        EnumMember("Color", "R" * 201),
    ):
        with pytest.raises(Unencodable, match="too long to send"):
            check_encodable((value,))


def test_a_class_that_is_not_an_enum_is_not_read_as_one() -> None:
    module = "class Box:\n    SIZE = 3\n\ndef f(x):\n    return x\n"
    s = seeds_from_test_source(
        "from mod import Box\nf(Box.SIZE)\n", "f", "t.py", target=Target.of(module, "f", "mod")
    )
    assert s.inputs == [] and "not an enum class" in s.skipped[0]


@pytest.fixture(scope="module")
def sb() -> Iterator[Sandbox]:
    with Sandbox() as box:
        yield box


CHILD = """
import enum


class Color(enum.Enum):
    RED = 1
    BLUE = 2


def double(x):
    return 2 * x


def f(a, *rest):
    if isinstance(a, Color):
        return [a.name, a.value]
    if callable(a):
        return [a(*rest), type(a).__name__]
    return [list(a), type(a).__name__]
"""


def test_the_child_re_creates_enum_members_functions_and_iterators(sb: Sandbox) -> None:
    inputs = [
        (EnumMember("Color", "BLUE"),),
        (SourceFunction("lambda x: x + 1", "<lambda>"), 2),
        (SourceFunction("", "double"), 5),
        (SourceFunction("def helper(x):\n    return x * 10\n", "helper"), 3),
        (SourceFunction("", "len"), "abcd"),
        (IterOf("iter", (1, [2])),),
        (IterOf("gen", (3, 4)),),
        (IterOf("range", (0, 6, 2)),),
        ([EnumMember("Color", "RED")],),
        (EnumMember("Color", "GREEN"),),
    ]
    outcomes, load_error, _, _ = run_batch(sb, CHILD, "f", inputs, REFERENCE_LIMITS)
    assert load_error is None
    values = [o.value for o in outcomes]
    assert values[:8] == [
        ["BLUE", 2],
        [3, "function"],
        [10, "function"],
        [30, "function"],
        [4, "builtin_function_or_method"],
        [[1, [2]], "list_iterator"],
        [[3, 4], "generator"],
        [[0, 2, 4], "range"],
    ]
    assert values[8] == [[EnumMember("Color", "RED", "solution", 1)], "list"]
    assert outcomes[9].status is Status.ERROR and outcomes[9].error_type == "AttributeError"


def test_a_helper_never_replaces_a_name_of_the_module(sb: Sandbox) -> None:
    code = "def double(x):\n    return 2 * x\n\ndef f(g, x):\n    return [g(x), double(x)]\n"
    helper = SourceFunction("def double(x):\n    return 100\n", "double")
    (outcome,), _, _, _ = run_batch(sb, code, "f", [(helper, 3)], REFERENCE_LIMITS)
    assert outcome.value == [100, 6]


@pytest.mark.parametrize(
    "frame",
    [
        b'{"k":"r","i":0,"s":"ok","t":0.1,"v":{"$fn":["", "len", ""]}}',
        b'{"k":"r","i":0,"s":"ok","t":0.1,"v":{"$iter":["iter", [1, 2]]}}',
        b'{"k":"r","i":0,"s":"ok","t":0.1,"v":{"$iter":[["iter"], [1]]}}',
    ],
)
def test_input_forms_in_a_result_frame_are_refused(frame: bytes) -> None:
    outcome = decode_frame(frame)
    assert outcome.status is not Status.OK and "undecodable result" in (outcome.error or "")


def test_synthesis_varies_enum_members_iterators_and_functions() -> None:
    seeds = [
        (EnumMember("Color", "RED"), IterOf("iter", (1, 2, 3)), SourceFunction("", "abs")),
        (EnumMember("Color", "BLUE"), IterOf("gen", (4,)), SourceFunction("", "len")),
    ]
    syn = synthesize(seeds, count=40, seed=0)
    kinds = {tuple(kind_of(a) for a in c.args) for c in syn.candidates}
    assert ("enum", "iterator", "callable") in kinds and ("enum", "generator", "callable") in kinds
    assert len({input_key(c.args) for c in syn.candidates}) == len(syn.candidates) > 10
    assert {c.args[0].member for c in syn.candidates} == {"RED", "BLUE"}


# -- bounds ------------------------------------------------------------------------------------


def test_a_huge_literal_is_refused_before_it_is_evaluated() -> None:
    big = "[" + ", ".join(str(i) for i in range(50_000)) + "]"
    s = seeds_from_test_source(f"def test_it():\n    f({big})\n    f([1])\n", "f", "t.py")
    assert s.inputs == [([1],)]
    assert "characters (seeds are read up to" in s.skipped[0]


def test_values_built_by_a_test_are_bounded() -> None:
    s = seeds_from_test_source(
        "def test_it():\n    x = [0] * 10**9\n    f(x)\n"
        "    f(list(range(10**8)))\n    f(2**10**9)\n",
        "f",
        "t.py",
    )
    assert s.inputs == []
    assert len(s.skipped) == 3


def test_a_test_file_over_the_cap_is_not_parsed(tmp_path: Path) -> None:
    path = tmp_path / "test_big.py"
    path.write_text("f(1)\n" + "#" * MAX_TEST_FILE_BYTES)
    s = seeds_from_tests([path], "f", tmp_path)
    assert s.inputs == [] and s.skipped == [
        f"test_big.py: {path.stat().st_size:,} bytes, not read as seeds"
    ]
    source = "f(1)\n" + "x = 1\n" * (MAX_TEST_FILE_BYTES // 6 + 1)
    assert seeds_from_test_source(source, "f").skipped[0].endswith("not read as seeds")


def test_seed_reach_counts_the_call_sites_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from utdebug.benchmarks.seed_reach import main

    (tmp_path / "lib.py").write_text("def f(x):\n    return x\n\ndef g(x):\n    return x\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_lib.py").write_text(
        "from lib import f, g\n\n"
        "def test_f(tmp_path):\n    x = [1]\n    f(x)\n    f(tmp_path)\n    g(2)\n"
    )
    assert main([str(tmp_path), "--json", str(tmp_path / "rows.jsonl")]) == 0
    out = capsys.readouterr().out
    row = json.loads((tmp_path / "rows.jsonl").read_text())
    assert row | {"reasons": None, "cpu_seconds": None} == {
        "repository": tmp_path.name,
        "functions": 2,
        "called": 2,
        "seeded": 2,
        "sites": 3,
        "read": 2,
        "seeds": 2,
        "reasons": None,
        "cpu_seconds": None,
    }
    assert row["reasons"] == [["`…` is not a value read from the test (…)", 1]]
    assert " 66.7% " in out


def test_what_one_expression_builds_is_bounded_in_all() -> None:
    s = seeds_from_test_source(
        "def test_it():\n"
        "    f(['x' * 10**5 for _ in range(1000)])\n"
        "    f('a'.center(10**9))\n"
        "    f(''.join(['y' * 10**5] * 9))\n"
        "    f(1, 'ab')\n",
        "f",
        "t.py",
    )
    assert s.inputs == [(1, "ab")]  # one expression over the budget costs only itself
    assert [x.split(" at line")[0] for x in s.skipped] == [
        "t.py:2: an expression whose values hold over 1,000,000 items",
        "t.py:3: center() to a width of 1,000,000,000",
        "t.py:4: a join too long to build",
    ]


def test_sources_nested_too_deeply_are_skipped_not_raised() -> None:
    chain = "x" + " + 1" * 20_000
    s = seeds_from_test_source(f"def test_it():\n    y = {chain}\n    f(y)\n", "f", "t.py")
    assert s.inputs == [] and s.skipped
    assert infer(f"def f(x):\n    return {chain}\n", "f") is None


def test_tables_inside_tables_are_read_up_to_a_bound() -> None:
    from utdebug.synth.test_calls import MAX_WORK

    source = (
        "import pytest\n\n"
        "@pytest.mark.parametrize('a', list(range(200)))\n"
        "def test_it(a):\n"
        "    for b in range(200):\n"
        "        f(a, b)\n"
    )
    s = seeds_from_test_source(source, "f", "t.py")
    assert 0 < len(s.inputs) < MAX_WORK
    assert s.skipped[-1] == f"t.py: read for {MAX_WORK:,} rows and calls; the rest is not read"
