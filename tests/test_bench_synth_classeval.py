"""``utdebug bench synth --split classeval``: the call sites of a method read from its tests
(setup kept, literal arguments synthesised), exposure of a corrupted method, no false alarm on
the gold class, problems that cannot be synthesised counted with their reason, records, summary
and resume; the published ClassEval+Fix with ``--limit 2`` where its build is in the cache."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from utdebug import cli
from utdebug.benchmarks import synth_bench
from utdebug.benchmarks.synth_classeval import expose_class_problem, groups_of, sites_of
from utdebug.data.classeval import DEFAULT_CAP, DEFAULT_SEED, DEFAULT_TRIES, fix_file_name
from utdebug.data.datasets import (
    CLASSEVAL_FILE,
    ClassFixProblem,
    MethodTarget,
    Provenance,
    Split,
)
from utdebug.sandbox import Limits, Sandbox

COUNTER = """class Counter:
    def __init__(self, start=0):
        self.value = start

    def add(self, n):
        self.value = self.value + n
        return self.value

    def _valid(self, n):
        return n >= 0

    def safe_add(self, n):
        if not self._valid(n):
            return None
        return self.add(n)
"""

COUNTER_TESTS = """import unittest
from math import floor


class CounterTestAdd(unittest.TestCase):
    def test_add_1(self):
        c = Counter(2)
        self.assertEqual(c.add(3), 5)

    def test_add_2(self):
        c = Counter(floor(0.5))
        c.add(1)
        self.assertEqual(c.value, 1)

    def test_add_3(self):
        c = self.fixture()
        self.assertEqual(c.add(1), 1)


class CounterTestValid(unittest.TestCase):
    def test_valid_1(self):
        self.assertIsNone(Counter().safe_add(-1))

    def test_valid_2(self):
        self.assertEqual(Counter(1).safe_add(2), 3)


class CounterTestMain(unittest.TestCase):
    def test_main(self):
        c = Counter(0)
        self.assertEqual(c.add(20), 20)
"""

TESTS = (
    ("CounterTestAdd", "test_add_1"),
    ("CounterTestAdd", "test_add_2"),
    ("CounterTestAdd", "test_add_3"),
    ("CounterTestValid", "test_valid_1"),
    ("CounterTestValid", "test_valid_2"),
    ("CounterTestMain", "test_main"),
)

ADD_BUG = COUNTER.replace("self.value = self.value + n", "self.value = self.value + n % 7")
"""Right for the seeds (3 and 1), wrong for an argument of 7 or more: only synthesised
arguments expose it, inside the envelope of the class's tests (``add(20)`` in the class's
main test, which is not a seed)."""


def _problem(method: str, code: str) -> ClassFixProblem:
    own = f"CounterTest{method.strip('_').capitalize()}"
    return ClassFixProblem(
        Split.CLASSEVAL,
        f"classeval/ClassEval_9/{method}",
        "ClassEval_9",
        MethodTarget("Counter", method, code),
        code,
        COUNTER,
        COUNTER_TESTS,
        TESTS,
        tuple(i for i, t in enumerate(TESTS) if t[0] == own),
        "test",
        Provenance("x", 10, "0" * 64),
    )


def test_sites_keep_the_setup_and_take_out_the_literal_arguments() -> None:
    p = _problem("add", COUNTER)
    sites, skipped = sites_of(p, [p.tests[i] for i in p.target_tests])
    assert [s.test for s in sites] == ["CounterTestAdd.test_add_1", "CounterTestAdd.test_add_2"]
    first, second = sites
    # the constructor's and the call's literal arguments are the input; the receiver's state
    # after the call is compared with the call's value
    assert first.setup == "c = Counter(_utd_a[0])"
    assert first.call == "(c.add(_utd_a[1]), _utd_state(c))"
    assert first.args == (2, 3) and first.labels == ("init:0", "call:0")
    # a value that is not a literal stays code; the test code's imports come with the site
    assert second.setup == "c = Counter(floor(0.5))" and second.args == (1,)
    assert second.imports == "from math import floor"
    # a test that still needs the TestCase gives no site, with the reason
    assert skipped == {"the setup needs the TestCase (self)": 1}
    groups = groups_of(sites)
    assert [len(g.seeds) for g in groups] == [1, 1]
    assert groups[0].text((5, 4)) == "c = Counter(5); (c.add(4), _utd_state(c))"
    # a method its tests reach only through another method has no call site
    valid = _problem("_valid", COUNTER)
    assert sites_of(valid, [valid.tests[i] for i in valid.target_tests])[0] == []


def test_a_corrupted_method_is_exposed_and_the_gold_class_is_not() -> None:
    with Sandbox() as sb:
        bug = expose_class_problem(sb, _problem("add", ADD_BUG), 80, 0, 6.0, 0.5)
        same = expose_class_problem(sb, _problem("add", COUNTER), 80, 0, 6.0, 0.5)
        none = expose_class_problem(sb, _problem("_valid", COUNTER), 80, 0, 6.0, 0.5)
    assert bug["exposed"] and bug["exposed_in_envelope"]
    assert bug["not_synthesisable"] is None
    # the seeds alone do not expose it: a synthesised argument does
    assert set(bug["exposing_sources"]) - {"seed"}
    assert bug["valid"] > bug["seeds"] == 2 and bug["emitted"] <= 80
    assert 1 <= len(bug["suite"]) <= 2 and "Counter(" in bug["suite"][0]
    assert not bug["false_alarm"]
    # both setups ran on the gold class (the second needs the test code's import)
    assert [g["valid"] > 0 for g in bug["groups"]] == [True, True]
    assert not same["exposed"] and not same["false_alarm"] and same["valid"] > 2
    assert none["not_synthesisable"] and "does not call _valid" in none["not_synthesisable"]
    assert none["emitted"] == 0 and not none["exposed"]


@pytest.fixture(autouse=True)
def _small_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(synth_bench, "COUNT", 60)
    monkeypatch.setattr(synth_bench, "PER_PROBLEM", 4.0)


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


def test_bench_synth_takes_classeval_records_and_resumes(
    small_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "run"
    argv = ["bench", "synth", "--split", "classeval", "--data-dir", str(small_dir)]
    argv += ["--no-verify", "--out", str(out)]
    assert cli.main(argv) == 0
    every = _records(out)
    # the fixture's broken row is a dataset error; every corrupted version has a record
    assert [r["task_id"] for r in every if r["error_kind"]] == ["classeval/ClassEval_2"]
    recs = [r for r in every if r["error_kind"] is None]
    assert recs and all(r["task_id"].startswith("classeval/ClassEval_") for r in recs)
    assert not any(r["false_alarm"] for r in recs)
    summary = json.loads((out / "summary.json").read_text())
    for key in (
        "problems",
        "exposed",
        "exposed_in_envelope",
        "false_alarms",
        "validity",
        "valid_inputs_per_s",
        "not_synthesisable",
    ):
        assert key in summary
    assert summary["problems"] == len(recs) and summary["false_alarms"] == 0
    assert summary["exposed_in_envelope"] >= 1 and summary["valid"] > 0
    assert summary["not_synthesisable"] == sum(1 for r in recs if r["not_synthesisable"])
    assert "classeval" in capsys.readouterr().out
    assert cli.main([*argv, "--json"]) == 0
    again = json.loads(capsys.readouterr().out)[0]
    assert again["evaluated_now"] == 0 and again["resumed"] == len(every)


def _published_build(data_dir: Path) -> Path | None:
    """The build file of the published ClassEval+Fix that ``bench`` reads (default seed, cap
    and limits) in ``~/.cache/utdebug``, if a run there made it (building it takes minutes)."""
    data = data_dir / CLASSEVAL_FILE
    if not data.exists():
        return None
    sha = hashlib.sha256(data.read_bytes()).hexdigest()
    name = fix_file_name(sha, DEFAULT_SEED, DEFAULT_CAP, DEFAULT_TRIES, Limits(per_input=2.0))
    path = Path.home() / ".cache" / "utdebug" / "classeval-fix" / name
    return path if path.exists() else None


def test_the_published_split_with_limit_2(data_dir: Path, tmp_path: Path) -> None:
    build = _published_build(data_dir)
    if build is None:
        pytest.skip("ClassEval+Fix's build is not in ~/.cache/utdebug (bench --split classeval)")
    cache = tmp_path / "cache"
    (cache / "classeval-fix").mkdir(parents=True)
    shutil.copy(build, cache / "classeval-fix" / build.name)
    out = tmp_path / "real"
    argv = ["bench", "synth", "--split", "classeval", "--data-dir", str(data_dir)]
    argv += ["--cache-dir", str(cache), "--limit", "2", "--out", str(out)]
    assert cli.main(argv) == 0
    recs = _records(out)
    assert len(recs) == 2 and not any(r["false_alarm"] for r in recs)
    assert all(r["valid"] > 0 for r in recs)


def test_a_model_is_refused_with_classeval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"generate": []}))
    argv = ["bench", "synth", "--split", "classeval", "--model", f"scripted:{script}"]
    assert cli.main(argv) == 2
    assert "--split classeval runs model-free" in capsys.readouterr().err


def test_the_model_refusal_follows_the_split_rows_problem_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refusal reads the split's row (its problem kind), not its name: a method split
    under any name is refused."""
    from dataclasses import replace

    from utdebug.data import splits
    from utdebug.data.datasets import Split

    hard = splits.SPLITS[Split.HARD]
    monkeypatch.setitem(splits.SPLITS, Split.HARD, replace(hard, kind=splits.ProblemKind.METHOD))
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"generate": []}))
    argv = ["bench", "synth", "--split", "hard", "--model", f"scripted:{script}"]
    assert cli.main(argv) == 2
    assert "runs model-free" in capsys.readouterr().err
