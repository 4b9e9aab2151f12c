"""utdebug.synth.differential with the real sandbox: findings, accepts, rewrites that change
nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from utdebug.sandbox.executor import Sandbox
from utdebug.synth.differential import (
    AcceptError,
    Accepts,
    DiffSettings,
    Version,
    differential,
    read_accepts,
    write_accepts,
)

FN = "pkg/mod.py::f"
SMALL = DiffSettings(count=60, seed=0)


def v(code: str, revision: str = "") -> Version:
    return Version(code, "f", revision)


PLUS_ONE = "def f(x):\n    return x + 1\n"
PLUS_TWO_IF_BIG = "def f(x):\n    return x + 2 if x > 4 else x + 1\n"


def test_a_changed_function_gives_findings_smallest_first(sb: Sandbox) -> None:
    res = differential(sb, FN, v(PLUS_ONE), v(PLUS_TWO_IF_BIG), [(3,), (10,)], settings=SMALL)
    assert res.compared and res.findings and res.inputs > 0
    for f in res.findings:
        (x,) = f.args
        assert x > 4
        assert f.description == f"was {x + 1}, now {x + 2}"
        assert f.function == FN
    sizes = [f.size for f in res.findings]
    assert sizes == sorted(sizes)
    assert res.message.startswith(f"{len(res.findings)} changed outcome(s) on ")


def test_raising_and_no_longer_raising_are_described(sb: Sandbox) -> None:
    base = "def f(d, k):\n    return d.get(k, 0)\n"
    head = "def f(d, k):\n    return d[k]\n"
    res = differential(sb, FN, v(base), v(head), [({"a": 1}, "a"), ({"b": 2}, "c")], settings=SMALL)
    assert res.findings
    assert {f.description for f in res.findings} == {"now raises KeyError"}
    assert all(f.args[1] not in f.args[0] for f in res.findings)

    strict = "def f(x):\n    if x < 0:\n        raise ValueError('negative')\n    return x\n"
    res = differential(
        sb, FN, v(strict), v("def f(x):\n    return x\n"), [(3,), (8,)], settings=SMALL
    )
    assert res.findings
    assert {f.description for f in res.findings} == {"no longer raises ValueError"}
    assert all(f.args[0] < 0 for f in res.findings)
    assert all(f.before == "raises ValueError" for f in res.findings)


def test_an_accepted_finding_is_not_reported_again(sb: Sandbox, tmp_path: Path) -> None:
    seeds = [(3,), (10,)]
    first = differential(sb, FN, v(PLUS_ONE), v(PLUS_TWO_IF_BIG), seeds, settings=SMALL)
    accepts = Accepts()
    accepts.accept(first.findings[0])
    path = tmp_path / "accepted.json"
    write_accepts(path, accepts)
    data = json.loads(path.read_text())
    assert data["version"] == 1
    assert data["accepted"] == [
        {"function": FN, "input": first.findings[0].input_text, "outcome": first.findings[0].after}
    ]
    again = differential(
        sb, FN, v(PLUS_ONE), v(PLUS_TWO_IF_BIG), seeds, settings=SMALL, accepts=read_accepts(path)
    )
    assert [f.args for f in again.accepted] == [first.findings[0].args]
    assert [f.args for f in again.findings] == [f.args for f in first.findings[1:]]
    assert again.message.endswith("(1 accepted)")
    # a later, different outcome on that input is reported again
    other = "def f(x):\n    return x + 3 if x > 4 else x + 1\n"
    third = differential(sb, FN, v(PLUS_ONE), v(other), seeds, settings=SMALL, accepts=accepts)
    assert not third.accepted and len(third.findings) == len(first.findings)


def test_a_function_accepted_at_a_head_revision(sb: Sandbox, tmp_path: Path) -> None:
    accepts = Accepts()
    accepts.accept_function(FN, "abc123")
    path = tmp_path / "accepted.json"
    write_accepts(path, accepts)
    loaded = read_accepts(path)
    seeds = [(3,), (10,)]
    at = differential(
        sb, FN, v(PLUS_ONE), v(PLUS_TWO_IF_BIG, "abc123"), seeds, settings=SMALL, accepts=loaded
    )
    assert at.findings == [] and at.accepted
    later = differential(
        sb, FN, v(PLUS_ONE), v(PLUS_TWO_IF_BIG, "def456"), seeds, settings=SMALL, accepts=loaded
    )
    assert later.findings and not later.accepted


def test_accept_files_that_are_not_one_are_refused(tmp_path: Path) -> None:
    assert read_accepts(tmp_path / "missing.json") == Accepts()
    bad = tmp_path / "bad.json"
    for text, why in [
        ("{", "not a readable JSON file"),
        ('{"version": 2, "accepted": []}', "not an accept file of version 1"),
        ('{"version": 1, "accepted": {}}', "'accepted' must be a list"),
        ('{"version": 1, "accepted": [{"function": "f"}]}', "entry 1 needs"),
        ('{"version": 1, "accepted": [{"function": 1, "head": "x"}]}', "entry 1 is not"),
    ]:
        bad.write_text(text)
        with pytest.raises(AcceptError, match=why):
            read_accepts(bad)
    with pytest.raises(ValueError, match="needs the head's revision"):
        Accepts().accept_function(FN, "")


def test_no_base_compares_nothing(sb: Sandbox) -> None:
    res = differential(sb, FN, None, v(PLUS_ONE), [(1,)], settings=SMALL)
    assert not res.compared and res.findings == []
    assert res.message == "no base version: nothing was compared"


def test_a_base_that_does_not_load_compares_nothing(sb: Sandbox) -> None:
    res = differential(sb, FN, v("def f(x):\n    return (\n"), v(PLUS_ONE), [(1,)], settings=SMALL)
    assert not res.compared
    assert res.message.startswith("the base version does not load: ")


def test_findings_are_the_same_for_a_seed(sb: Sandbox) -> None:
    runs = [
        differential(sb, FN, v(PLUS_ONE), v(PLUS_TWO_IF_BIG), [(3,), (10,)], settings=SMALL)
        for _ in range(2)
    ]
    assert [f.to_json() for f in runs[0].findings] == [f.to_json() for f in runs[1].findings]


# Semantics-preserving rewrites: (seeds, base, head); none may give a finding.
REWRITES: list[tuple[list[tuple[object, ...]], str, str]] = [
    (  # renamed variables
        [([1, 2, 3],), ([5],)],
        "def f(xs):\n    t = 0\n    for x in xs:\n        t += x\n    return t\n",
        "def f(values):\n    total = 0\n    for value in values:\n        total += value\n"
        "    return total\n",
    ),
    (  # reformatted
        [(2, 3), (10, -4)],
        "def f(a, b):\n    return a*b+(a-b)\n",
        "def f(a,\n      b):\n\n    return (a * b\n            + (a - b))\n",
    ),
    (  # loop -> comprehension
        [([1, 2, 3, 4],), ([7, 8],)],
        "def f(xs):\n    out = []\n    for x in xs:\n        if x % 2 == 0:\n"
        "            out.append(x * x)\n    return out\n",
        "def f(xs):\n    return [x * x for x in xs if x % 2 == 0]\n",
    ),
    (  # loop -> sum()
        [([1, 2, 3],), ([10, 20],)],
        "def f(xs):\n    t = 0\n    for x in xs:\n        t = t + x\n    return t\n",
        "def f(xs):\n    return sum(xs)\n",
    ),
    (  # if/else -> conditional expression
        [(3,), (-7,)],
        "def f(x):\n    if x >= 0:\n        return x\n    else:\n        return -x\n",
        "def f(x):\n    return x if x >= 0 else -x\n",
    ),
    (  # string building -> join
        [(["ab", "c"],), (["x"],)],
        "def f(parts):\n    s = ''\n    for p in parts:\n        s += p.upper()\n    return s\n",
        "def f(parts):\n    return ''.join(p.upper() for p in parts)\n",
    ),
    (  # max loop -> max(default=)
        [([3, 9, 2],), ([4],)],
        "def f(xs):\n    best = None\n    for x in xs:\n        if best is None or x > best:\n"
        "            best = x\n    return best\n",
        "def f(xs):\n    return max(xs, default=None)\n",
    ),
    (  # counting loop -> dict comprehension
        [(["a", "b", "a"],), (["z"],)],
        "def f(words):\n    d = {}\n    for w in words:\n        d[w] = d.get(w, 0) + 1\n"
        "    return d\n",
        "def f(words):\n    return {w: words.count(w) for w in words}\n",
    ),
    (  # while over indices -> comprehension
        [([1, 2],), ([4, 5, 6],)],
        "def f(xs):\n    i = 0\n    acc = []\n    while i < len(xs):\n"
        "        acc.append(xs[i] * 3)\n        i += 1\n    return acc\n",
        "def f(xs):\n    return [x * 3 for x in xs]\n",
    ),
    (  # slicing -> reversed()
        [("hello",), ("ab c",)],
        "def f(s):\n    return s[::-1]\n",
        "def f(s):\n    return ''.join(reversed(s))\n",
    ),
    (  # early return -> any()
        [([1, 5, 9], 5), ([2], 3)],
        "def f(xs, t):\n    for x in xs:\n        if x == t:\n            return True\n"
        "    return False\n",
        "def f(xs, t):\n    return any(x == t for x in xs)\n",
    ),
    (  # sorted copy -> list.sort on a copy, a helper extracted
        [([3, 1, 2],), ([9, -1],)],
        "def f(xs):\n    return sorted(xs)[:2]\n",
        "def _two(ys):\n    return ys[:2]\n\ndef f(xs):\n    ys = list(xs)\n    ys.sort()\n"
        "    return _two(ys)\n",
    ),
]


@pytest.mark.parametrize("n", range(len(REWRITES)))
def test_semantics_preserving_rewrites_give_no_findings(sb: Sandbox, n: int) -> None:
    seeds, base, head = REWRITES[n]
    res = differential(sb, FN, v(base), v(head), seeds, settings=SMALL)
    assert res.compared and res.inputs > 10
    assert [f.description for f in res.findings] == []
    assert res.message == f"0 changed outcome(s) on {res.inputs} inputs"


def test_an_unchanged_function_gives_no_findings(sb: Sandbox) -> None:
    res = differential(
        sb, FN, v(PLUS_TWO_IF_BIG), v(PLUS_TWO_IF_BIG), [(3,), (10,)], settings=SMALL
    )
    assert res.compared and res.findings == [] and res.accepted == []


def test_a_rewrite_that_is_not_quite_the_same_is_caught(sb: Sandbox) -> None:
    # ``while i < n`` runs for a float ``n``; ``range(n)`` raises: the outer bounds try floats
    base = (
        "def f(n):\n    i = 0\n    acc = []\n    while i < n:\n        acc.append(i)\n"
        "        i += 1\n    return acc\n"
    )
    head = "def f(n):\n    return list(range(n))\n"
    res = differential(sb, FN, v(base), v(head), [(5,), (12,)], settings=SMALL)
    assert res.findings
    assert {f.description for f in res.findings} == {"now raises TypeError"}
    assert all(isinstance(f.args[0], float) for f in res.findings)


MATCH = "import re\n\n\ndef f(s):\n    return re.search('a+', s)\n"
MATCH_NAMED = "import re\n\n\ndef f(s):\n    found = re.search('a+', s)\n    return found\n"


def test_objects_the_sandbox_cannot_send_back_are_not_comparable(sb: Sandbox) -> None:
    """Both versions return ``re.Match`` objects (known only by their repr, which the program
    writes): no finding on them, they are counted and noted; a match that became a plain value
    is still a change."""
    seeds = [("xaay",), ("bbb",)]
    res = differential(sb, FN, v(MATCH), v(MATCH_NAMED), seeds, settings=SMALL)
    assert res.compared and not res.findings, [f.description for f in res.findings]
    assert res.incomparable > 0
    assert "not comparable" in res.message
    assert any("cannot send back" in n for n in res.notes)
    as_text = "import re\n\n\ndef f(s):\n    m = re.search('a+', s)\n    return m and m.group()\n"
    res = differential(sb, FN, v(MATCH), v(as_text), seeds, settings=SMALL)
    assert any(f.description.startswith("was <re.Match") for f in res.findings)


def test_only_objects_the_sandbox_cannot_send_back_compare_nothing(sb: Sandbox) -> None:
    code = "def f(x):\n    return object()\n"
    res = differential(
        sb,
        FN,
        v(code),
        v(code.replace("object()", "(lambda: x)")),
        [(1,), (2,)],
        settings=SMALL,
    )
    assert not res.compared and res.incomparable > 0
    assert res.message.startswith("no output could be compared")
