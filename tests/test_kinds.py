"""Kinds without hints (utdebug.synth.kinds): what defaults, docstrings, type aliases and the
body's use of each parameter say, and the trial on the base that keeps the kinds it accepts."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from testkit.check_repo import CLAMP

from utdebug.sandbox.executor import Sandbox
from utdebug.synth.differential import DiffResult, DiffSettings, Version, differential
from utdebug.synth.kinds import infer, try_kinds
from utdebug.synth.oracle import REFERENCE_LIMITS, Reference
from utdebug.synth.strategies import parse_hints


def kinds_of(source: str, name: str = "f") -> dict[str, tuple[str, ...]]:
    found = infer(source, name)
    assert found is not None
    return {p.name: p.kinds for p in found.params}


def test_defaults_give_kinds_and_a_number_tries_int_and_float() -> None:
    got = kinds_of('def f(x, n=3, sep=",", flag=False, key=None, ratio=0.5):\n    return x\n')
    assert got["n"] == ("int", "float")
    assert got["sep"] == ("str",)
    assert got["flag"] == ("bool",)
    assert got["ratio"] == ("float", "int")
    assert "none" in got["key"]  # a None default tries None (and what else is known)


def test_hints_guide_and_do_not_cage() -> None:
    source = "from typing import Optional\n\ndef f(num: int, xs: Optional[list[int]]):\n    pass\n"
    got = kinds_of(source)
    assert got["num"] == ("int", "float")  # a fix about floats is reachable
    assert got["xs"] == ("list", "none")


def test_type_aliases_are_read() -> None:
    source = (
        "from typing import TypeAlias\n"
        "Pos = int\n"
        "Num = int | float\n"
        "Pair = tuple[int, int]\n"
        "Names: TypeAlias = list[str]\n"
        "def f(p: Pos, n: Num, q: Pair, names: Names):\n    pass\n"
    )
    got = kinds_of(source)
    assert got == {
        "p": ("int", "float"),
        "n": ("int", "float"),
        "q": ("tuple",),
        "names": ("list[str]",),
    }
    hints = parse_hints(source, "f")
    assert hints["p"] is int and hints["q"] == tuple[int, int]


@pytest.mark.parametrize(
    "doc",
    [
        "Args:\n        a (int): first.\n        b (list of str, optional): names.\n",
        "Parameters\n    ----------\n    a : int\n        first.\n    b : list of str, optional\n",
        ":param int a: first.\n    :param b: names.\n    :type b: list of str, optional\n",
    ],
    ids=["google", "numpy", "sphinx"],
)
def test_docstring_parameter_sections(doc: str) -> None:
    got = kinds_of(f'def f(a, b):\n    """Do it.\n\n    {doc}    """\n    return a\n')
    assert got["a"] == ("int", "float")
    assert got["b"] == ("list[str]", "none")


def test_the_body_says_how_each_parameter_is_used() -> None:
    source = """
def f(text, items, total, table, mapping, n, seq, callback, anything):
    words = text.split()
    items.append(len(words))
    total += 1
    for key, value in table.items():
        mapping[key] = value
    if n > 3 and len(seq) and seq[0]:
        return callback(n)
    if not anything:
        return None
    return total
"""
    got = kinds_of(source)
    assert got["text"] == ("str",)
    assert got["items"] == ("list",)
    assert got["total"] == ("int", "float")
    assert got["table"] == ("dict",)
    assert got["mapping"] == ("list", "dict")  # x[k]: a sequence or a mapping
    assert got["n"] == ("int", "float")
    assert got["seq"] == ("str", "list", "tuple")  # sized and indexed by an int
    assert got["callback"] == ("callable",)
    assert got["anything"] == ("int", "str", "list", "float")  # `not x` says nothing


def test_clamp_without_hints_is_numeric_or_ordered() -> None:
    assert kinds_of(CLAMP, "clamp") == dict.fromkeys(("x", "lo", "hi"), ("int", "float", "str"))


@pytest.fixture(scope="module")
def sb() -> Iterator[Sandbox]:
    with Sandbox() as box:
        yield box


def test_the_trial_keeps_the_kinds_the_base_accepts(sb: Sandbox) -> None:
    source = "def f(x, y):\n    return x.bit_length() + len(y)\n"
    kinds = infer(source, "f")
    assert kinds is not None
    assert kinds.params[0].kinds == ("int", "str", "list", "float")  # nothing says: broadly
    trial = try_kinds(sb, Reference(source, "f", "base"), kinds, [], REFERENCE_LIMITS)
    assert trial.kept["x"] == ["int"]  # str, list, float have no bit_length()
    assert trial.dropped["x"] == ["float", "str", "list"]
    assert set(trial.kept["y"]) >= {"str", "list"} and not trial.dropped["y"]
    assert trial.seeds and all(type(s[0]) is int for s in trial.seeds)
    assert "dropped: TypeError/AttributeError" in trial.note()


def test_no_trial_where_the_seeds_cover_every_parameter(sb: Sandbox) -> None:
    kinds = infer("def f(x):\n    return x\n", "f")
    assert kinds is not None and kinds.uncovered([(1,)]) == []
    assert kinds.uncovered([(None,)]) == [0]  # None alone is not a kind to vary


def test_clamp_with_no_seed_and_no_hint_is_compared_and_the_change_found(sb: Sandbox) -> None:
    def compare(head: str) -> DiffResult:
        return differential(
            sb,
            "geom.py::clamp",
            Version(CLAMP, "clamp"),
            Version(head, "clamp"),
            [],
            settings=DiffSettings(count=80, seed=0),
            names=("x", "lo", "hi"),
            kinds=infer(CLAMP, "clamp"),
        )

    res = compare(CLAMP.replace("return hi\n", "return hi - 1\n"))
    assert res.compared and res.findings
    assert set(res.kinds["x"]) >= {"int", "float"}
    for f in res.findings:
        x, _, hi = f.args
        assert x > hi
    same = compare(CLAMP)
    assert same.compared and not same.findings


def test_a_defaulted_parameter_is_varied(sb: Sandbox) -> None:
    base = "def f(xs, step=1):\n    return xs[::step]\n"
    head = "def f(xs, step=1):\n    return xs[::step] if step < 3 else xs[::2]\n"
    res = differential(
        sb,
        "m.py::f",
        Version(base, "f"),
        Version(head, "f"),
        [([1, 2, 3, 4, 5, 6], 1)],  # the default filled in: gather's seeds
        settings=DiffSettings(count=120, seed=0),
        kinds=infer(base, "f"),
    )
    assert res.findings and all(f.args[1] >= 3 for f in res.findings)
