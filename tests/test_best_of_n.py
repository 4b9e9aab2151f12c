"""Best-of-N judging (``utdebug bench judge``): the pipeline on a toy problem with a scripted
model, and the command on HumanEval+ with the simulated model."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from utdebug.agents.scripted import ScriptedModel
from utdebug.benchmarks.best_of_n import select_problem, summarize_selection
from utdebug.benchmarks.debugging import SessionSetup
from utdebug.data.datasets import PrivateTests as DataTests
from utdebug.data.datasets import Problem, Provenance, Split
from utdebug.data.private_tests import EvalSettings, ExpectedCache, PrivateTestRunner
from utdebug.data.splits import load_split
from utdebug.engine import Executor, Settings
from utdebug.runs.records import SAMPLES, read_samples
from utdebug.sandbox import Sandbox
from utdebug.sandbox.compare import CheckSpec

FIXED = "def add(a, b):\n    return a + b\n"
WORSE = "def add(a, b):\n    return 0\n"
WORSE2 = "def add(a, b):\n    return 0 * a\n"
WORSE3 = "def add(a, b):\n    return a * 0\n"
PROMPT = 'def add(a, b):\n    """Return the sum of a and b."""\n'

TOY = Problem(
    split=Split.HE_PLUS,
    task_id="he+/900",
    number=900,
    prompt=PROMPT,
    signature="add(a, b)",
    entry_point="add",
    code=PROMPT,
    gold=FIXED,
    tests=DataTests(((1, 2), (2, 0), (0, 5), (3, 3), (10, -4)), (3, 2, 5, 6, 6), CheckSpec()),
    test_list=(),
    provenance=Provenance("toy.jsonl", 1, "0" * 64),
)


def ut(call: str, out: str) -> str:
    return (
        "## Hypothesis\nEdge cases.\n\nError Pattern: none\n\n## Unit Test\n\n"
        f"### Input Arguments\nArguments: ```{call}```\n\n### Output\nOutput: ```{out}```\n"
    )


def sol(code: str) -> str:
    return f"Here is my solution.\n```python\n{code}```\n"


def test_the_pipeline_on_a_toy_problem(tmp_path: Path) -> None:
    # Five samples: a cluster of three different programs that all return 0 (wrong) and two
    # copies of the right one. Tests: one per distinct program, no voting.
    model = ScriptedModel(
        {
            "generate": [sol(WORSE), sol(FIXED), sol(WORSE2), sol(FIXED), sol(WORSE3)],
            "ut": [
                ut("add(1, 2)", "3"),
                ut("add(2, 0)", "2"),
                ut("add(1, 2)", "3"),  # a duplicate of the first test: pooled once
                ut("add(3, 3)", "6"),
            ],
        }
    )
    settings = Settings(n=1, k=0, rounds=0)

    async def go() -> dict[str, object]:
        with Sandbox() as sb:
            ex = Executor(sb, workers=2)
            try:
                private = PrivateTestRunner(ex, EvalSettings(), ExpectedCache(None))
                await private.add(TOY)
                setup = SessionSetup(model, settings, ex)
                return await select_problem(setup, TOY, private, n_solutions=5, rank_kw={})
            finally:
                ex.close()

    rec = asyncio.run(go())
    assert rec["correct"] == [False, True, False, True, False]
    assert rec["n_correct"] == 2
    assert [t["call"] for t in rec["tests"]] == ["add(1, 2)", "add(2, 0)", "add(3, 3)"]  # type: ignore[index]
    assert rec["matrix"] == ["000", "111", "000", "111", "000"]
    st = rec["strategies"]
    assert isinstance(st, dict)
    assert st["random"]["first"]["pass_at_1"] == pytest.approx(0.4)
    assert st["mbr_exec"]["first"]["pass_at_1"] == 0.0  # the biggest cluster is wrong
    assert st["mbr_exec"]["first"]["selected"] == [0, 2, 4]
    for s in ("most_passed", "maxpass", "codet", "codet_paper", "b4"):
        assert st[s]["first"]["pass_at_1"] == 1.0, s
        assert st[s]["pool"]["pass_at_1"] == 1.0, s
    assert st["most_passed"]["first"]["selected"] == [1]
    assert st["maxpass"]["first"]["selected"] == [1, 3]
    # The summary is the per-problem mean; this problem is discriminative.
    summary = summarize_selection([{"task_id": "he+/900", "error_kind": None, **rec}], 5)
    assert summary["discriminative"] == 1
    assert summary["strategies"]["b4"]["pass_at_1"] == 1.0
    assert summary["strategies"]["random"]["discriminative_pass_at_1"] == pytest.approx(0.4)
    assert summary["label"] is None  # a scripted model is not a simulation


def test_he_plus_split_loads_for_code_generation(data_dir: Path) -> None:
    ls = load_split("he+", data_dir=data_dir)
    assert len(ls.problems) == 164 and not ls.errors
    p = ls.problems[0]
    assert p.task_id == "he+/0" and p.entry_point == "has_close_elements"
    assert p.signature == "has_close_elements(numbers: List[float], threshold: float) -> bool"
    assert p.code == p.prompt and p.gold.startswith(p.prompt)
    assert len(p.tests.inputs) > 100 and p.tests.expected is None


def _utdebug(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "utdebug", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ),
    )


def test_judge_command_with_sim_is_labelled_and_resumes(data_dir: Path, tmp_path: Path) -> None:
    args = ["bench", "judge", "--model", "sim", "--problems", "0,2,4", "--data-dir",
            str(data_dir), "--out", str(tmp_path), "-N", "6"]  # fmt: skip
    r = _utdebug(*args, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    s = out["summary"]
    assert out["split"] == "he+"
    assert s["label"] == "SIMULATED" and s["problems"] == 3 and s["complete"]
    assert set(s["strategies"]) == {
        "random", "most_passed", "maxpass", "mbr_exec", "codet", "codet_paper", "b4"
    }  # fmt: skip
    for v in s["strategies"].values():
        assert 0.0 <= v["pass_at_1"] <= 1.0
    # --out DIR is the run folder itself (one split), as for every bench mode.
    recs = read_samples(tmp_path / SAMPLES)
    assert len(recs) == 3
    for rec in recs:
        assert rec["label"] == "SIMULATED" and len(rec["correct"]) == 6
        assert len(rec["matrix"]) == 6 and all(
            len(row) == len(rec["tests"]) for row in rec["matrix"]
        )
    # The same command again: every problem is skipped, the table is printed.
    again = _utdebug(*args)
    assert again.returncode == 0, again.stderr
    assert "SIMULATED" in again.stdout and "B4" in again.stdout
    assert "resumed 3 (already recorded, not run again)" in again.stdout
    assert len(read_samples(tmp_path / SAMPLES)) == 3


def test_he_plus_is_refused_outside_judge(data_dir: Path) -> None:
    r = _utdebug("bench", "--split", "he+", "--model", "sim", "--data-dir", str(data_dir))
    assert r.returncode == 2 and "bench judge" in r.stderr
