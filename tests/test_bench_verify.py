"""``utdebug bench verify`` end to end, offline: a scripted model and the simulated one, with
the real sandbox, on a tiny Scoring-Verifiers file (testkit.verifiers)."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import pytest
from testkit.verifiers import ROWS

from utdebug.cli import main
from utdebug.runs.records import SAMPLES, SUMMARY, read_samples
from utdebug.sandbox import Sandbox


@pytest.fixture(autouse=True)
def _sandbox_available(sb: Sandbox) -> None:
    """Skipped where the full sandbox cannot start (the runs below start their own)."""


def _ut(call: str, out: str) -> str:
    return (
        "## Unit Test\n\n### Input Arguments\nA plain case.\n"
        f"Arguments: ```{call}```\n\n### Output\nOutput: ```{out}```\n"
    )


# Three tests per problem, in problem order (concurrency 1, no voting):
# add: (1, 2) -> 3, (-1, 5) -> 4, (2, 2) -> 4   => passed 3, 2, 0 of 3
# is_even: 4 -> True, 3 -> False, 10 -> True     => passed 3, 3, 2, 0 of 3
# neg: 2 -> 5, 3 -> 5, 4 -> 5 (wrong outputs)    => passed 0, 0, 0 of 3 (a constant prediction)
SCRIPT = {
    "ut": [
        _ut("add(1, 2)", "3"),
        _ut("add(-1, 5)", "4"),
        _ut("add(2, 2)", "4"),
        _ut("is_even(4)", "True"),
        _ut("is_even(3)", "False"),
        _ut("is_even(10)", "True"),
        _ut("neg(2)", "5"),
        _ut("neg(3)", "5"),
        _ut("neg(4)", "5"),
    ]
}


def _write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _run(*argv: str) -> int:
    """``utdebug bench verify ARGV`` in this process."""
    return main(["bench", "verify", *argv])


def test_scripted_run_gives_the_hand_computed_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _write(tmp_path / "HE-R+.jsonl", ROWS)
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    out = tmp_path / "run"
    argv = [
        "--verify-file",
        str(data),
        "--model",
        f"scripted:{script}",
        "-n",
        "3",
        "-k",
        "0",
        "--concurrency",
        "1",
        "--out",
        str(out),
    ]
    assert _run(*argv, "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    s = doc["summary"]
    m = s["metrics"]
    # Per problem: Top-1 1, 1/2, 1/3; Bottom-1 1, 1, 1/3; rho 1, 4.5/sqrt(22.5), 0 (constant);
    # tau 1, 5/sqrt(30), 0; MAE 1/18, (1/4 + 1/6)/4, 1/2.
    assert m["problems"] == 3 and m["solutions"] == 10 and m["ranked"] == 3
    assert m["top1"] == pytest.approx((1 + 1 / 2 + 1 / 3) / 3)
    assert m["bottom1"] == pytest.approx((1 + 1 + 1 / 3) / 3)
    assert m["spearman"] == pytest.approx((1 + 4.5 / math.sqrt(22.5) + 0) / 3)
    assert m["kendall"] == pytest.approx((1 + 5 / math.sqrt(30) + 0) / 3)
    assert m["mae"] == pytest.approx((1 / 18 + (1 / 4 + 1 / 6) / 4 + 1 / 2) / 3)
    assert m["mae_pooled"] == pytest.approx((1 / 6 + 1 / 4 + 1 / 6 + 3 / 2) / 10)
    assert m["constant_prediction"] == 1 and m["excluded_too_few"] == 0
    assert s["tests"] == 9 and s["problems_without_tests"] == 0 and s["problem_errors"] == 0
    assert s["settings"]["ut_method"] == "random" and s["verify_tests"] == 3
    sha = hashlib.sha256(data.read_bytes()).hexdigest()
    assert doc["sha256"] == sha and s["sha256"] == sha and doc["set"] == "he-r+"
    # The scripted model is not a language model: the run says SIMULATED, like every offline run.
    assert doc["label"] == "SIMULATED"
    recs = {r["task_id"]: r for r in read_samples(out / SAMPLES)}
    assert set(recs) == {"Toy/0", "Toy/1", "Toy/2"}
    assert recs["Toy/0"]["passed"] == [3, 2, 0]
    assert recs["Toy/0"]["verdicts"] == ["PPP", "PFP", "FFF"]
    assert recs["Toy/1"]["predicted"] == pytest.approx([1.0, 1.0, 2 / 3, 0.0])
    assert recs["Toy/2"]["predicted"] == [0.0, 0.0, 0.0]
    assert recs["Toy/2"]["metrics"]["top1"] == pytest.approx(1 / 3)
    assert [t["call"] for t in recs["Toy/0"]["tests"]] == ["add(1, 2)", "add(-1, 5)", "add(2, 2)"]
    for r in recs.values():
        assert r["sha256"] == sha and r["label"] == "SIMULATED" and r["n_tests"] == 3
        assert r["expected"] == [
            c["average_test_score"] for c in ROWS[r["line"] - 1]["all_solutions"]
        ]
    assert json.loads((out / SUMMARY).read_text())["metrics"] == m
    # The same command again resumes: nothing is generated (the script is now empty, so any
    # model call would end its problem with an error) and the table shows the same run.
    script.write_text(json.dumps({"ut": []}), encoding="utf-8")
    assert _run(*argv) == 0
    text = capsys.readouterr().out
    assert "SIMULATED" in text and "Top-1 %" in text and "61.11" in text and "77.78" in text
    assert len(read_samples(out / SAMPLES)) == 3
    assert json.loads((out / SUMMARY).read_text())["metrics"] == m
    assert _run(*argv, "--json") == 0
    again = json.loads(capsys.readouterr().out)
    assert again["evaluated_now"] == 0 and again["resumed"] == 3


def test_prompted_tests_are_generated_per_candidate_and_pooled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _write(tmp_path / "HE-R.jsonl", ROWS)
    script = tmp_path / "script.json"
    # One test per candidate (ceil(3 / 3)); the second repeats the first and is dropped.
    replies = [_ut("add(1, 2)", "3"), _ut("add(1, 2)", "3"), _ut("add(-1, 5)", "4")]
    script.write_text(json.dumps({"ut": replies}), encoding="utf-8")
    argv = ["--verify-file", str(data), "--model", f"scripted:{script}", "-n", "3"]
    argv += ["-k", "0", "--ut-method", "prompted", "--problems", "Toy/0"]
    assert _run(*argv, "--out", str(tmp_path / "run"), "--json") == 0
    s = json.loads(capsys.readouterr().out)["summary"]
    assert s["settings"]["ut_method"] == "prompted" and s["problems"] == 1
    (rec,) = read_samples(tmp_path / "run" / SAMPLES)
    assert rec["tests_per_set"] == 1 and rec["n_tests"] == 2
    assert rec["predicted"] == [1.0, 0.5, 0.0]
    # Each UT prompt showed the candidate it was generated against.
    shown = [e for e in rec["events"] if e["kind"] == "tests_built"]
    assert len(shown) == 3


def test_sim_run_is_labelled_simulated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _write(tmp_path / "HE-R+.jsonl", ROWS)
    argv = ["--verify-file", str(data), "--model", "sim", "-n", "4", "-k", "3"]
    assert _run(*argv, "--out", str(tmp_path / "a")) == 0
    text = capsys.readouterr().out
    assert "SIMULATED: he-r+" in text and "simulated model 'sim'" in text
    recs = read_samples(tmp_path / "a" / SAMPLES)
    assert len(recs) == 3
    for r in recs:
        assert r["label"] == "SIMULATED" and r["simulated"] is True and r["error_kind"] is None
        assert all(0.0 <= x <= 1.0 for x in r["predicted"]) and r["n_tests"] >= 1
        proposed = [e for e in r["events"] if e["kind"] == "test_proposed"]
        assert proposed and all("SIMULATED" in e["reply"] for e in proposed)
        # The paper's protocol: the code is never shown to the test generator.
        assert r["settings"]["ut_method"] == "random"
    summary = json.loads((tmp_path / "a" / SUMMARY).read_text())
    assert summary["label"] == "SIMULATED" and summary["sim"]["seed"] == 0
    # Deterministic for a seed.
    assert _run(*argv, "--out", str(tmp_path / "b")) == 0
    capsys.readouterr()
    again = json.loads((tmp_path / "b" / SUMMARY).read_text())
    assert again["metrics"] == summary["metrics"]


def test_sim_is_refused_without_ground_truth_or_inputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        {k: v for k, v in r.items() if k not in ("canonical_solution", "base_input")} for r in ROWS
    ]
    data = _write(tmp_path / "HE-R+.jsonl", rows)
    assert _run("--verify-file", str(data), "--model", "sim", "--out", str(tmp_path / "o")) == 2
    err = capsys.readouterr().err
    assert "--model sim cannot run on HE-R+.jsonl" in err and "ground-truth" in err
    assert not (tmp_path / "o").exists()


def test_bad_rows_are_recorded_and_usage_errors_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = dict(ROWS[1], all_solutions=[{"solution": "def is_even(n): pass"}])
    data = _write(tmp_path / "mine.jsonl", [ROWS[0], bad])
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"ut": SCRIPT["ut"][:3]}), encoding="utf-8")
    argv = ["--verify-file", str(data), "--model", f"scripted:{script}", "-k", "0"]
    assert _run(*argv, "-n", "3", "--out", str(tmp_path / "r"), "--json") == 0
    s = json.loads(capsys.readouterr().out)["summary"]
    assert s["problems"] == 2 and s["evaluated"] == 1 and s["problem_errors"] == 1
    assert s["set"] is None and s["metrics"]["problems"] == 1
    (e,) = s["errors"]
    assert e["task_id"] == "Toy/1"
    assert (
        "mine.jsonl, line 2" in e["error"] and "all_solutions[0].average_test_score" in e["error"]
    )
    assert _run("--model", "sim") == 2
    assert "needs --verify-file PATH or --verify-set" in capsys.readouterr().err
    assert _run("--verify-file", str(data)) == 2  # no --model
    assert "needs --model" in capsys.readouterr().err
    assert _run("--verify-file", str(data), "--model", "sim", "--problems", "Toy/9") == 2
    assert "unknown problem(s) in mine.jsonl: Toy/9" in capsys.readouterr().err
    assert _run("--verify-file", str(tmp_path / "nope.jsonl"), "--model", "sim") == 2
    assert "no such file" in capsys.readouterr().err
