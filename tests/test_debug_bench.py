"""Model-driven benchmark runs from the command line: sim, scripted, resume, errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from testkit.wait import while_running

from utdebug.runs.records import SAMPLES, SUMMARY, read_samples

FAST = "6,7,9,11,12,16,58,61,63,68,69,70,72,74,77,89,92,93,99,100,103,109,113,118"
"""Hard problems whose given code runs quickly (no per-input timeouts)."""


def _default_sigint() -> None:
    """A shell runs background jobs with SIGINT ignored, and children inherit that: give the
    command under test the default Ctrl-C behaviour whatever started the test run."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def utdebug(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "utdebug", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def test_sim_run_is_labelled_recorded_and_resumes(data_dir: Path, tmp_path: Path) -> None:
    args = [
        "bench",
        "--split",
        "hard",
        "--model",
        "sim",
        "--problems",
        "6,7,9,11",
        "--data-dir",
        str(data_dir),
        "--out",
        str(tmp_path),
    ]
    r = utdebug(*args, "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)["summary"]
    assert s["label"] == "SIMULATED" and s["simulated"] is True
    assert s["problems"] == 4 and s["complete"] is True
    assert [x["round"] for x in s["rounds"]] == [0, 1, 2, 3]
    assert s["rounds"][0]["pass_at_1"] == 0.0  # the given code fails each of these
    assert 0.0 < s["rounds"][0]["mean_pass_rate"] < 1.0
    assert s["usage"]["calls"] > 0 and s["intrinsic"]["tests"] > 0
    recs = read_samples(tmp_path / SAMPLES)
    assert len(recs) == 4
    for rec in recs:
        assert rec["simulated"] is True and rec["label"] == "SIMULATED"
        kinds = [e["kind"] for e in rec["events"]]
        assert kinds[0] == "session_started" and kinds[-1] == "finished"
        assert "test_kept" in kinds and "round_finished" in kinds
        assert (
            "SIMULATED" in next(e for e in rec["events"] if e["kind"] == "test_proposed")["reply"]
        )
    assert json.loads((tmp_path / SUMMARY).read_text())["label"] == "SIMULATED"
    # The same command again: nothing is recomputed, the summary is identical.
    again = utdebug(*args)
    assert again.returncode == 0, again.stderr
    assert "SIMULATED" in again.stdout and "pass@1" in again.stdout
    assert len(read_samples(tmp_path / SAMPLES)) == 4
    assert json.loads((tmp_path / SUMMARY).read_text())["rounds"] == s["rounds"]


def test_sim_runs_are_deterministic_per_seed(data_dir: Path, tmp_path: Path) -> None:
    base = [
        "bench",
        "--split",
        "hard",
        "--model",
        "sim",
        "--problems",
        "12,16,58",
        "--data-dir",
        str(data_dir),
        "--json",
    ]
    a = json.loads(utdebug(*base, "--out", str(tmp_path / "a")).stdout)["summary"]
    b = json.loads(utdebug(*base, "--out", str(tmp_path / "b")).stdout)["summary"]
    assert a["rounds"] == b["rounds"] and a["intrinsic"] == b["intrinsic"]


def test_reference_variant_and_no_voting_run(data_dir: Path, tmp_path: Path) -> None:
    r = utdebug(
        "bench",
        "--split",
        "hard",
        "--model",
        "sim",
        "--problems",
        "61,63",
        "--variant",
        "reference",
        "-k",
        "0",
        "--no-backtrack",
        "--rounds",
        "2",
        "--data-dir",
        str(data_dir),
        "--out",
        str(tmp_path),
        "--json",
    )
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)["summary"]
    assert s["settings"]["variant"] == "reference" and s["settings"]["k"] == 0
    assert s["settings"]["backtrack"] is False and len(s["rounds"]) == 3
    rec = read_samples(tmp_path / SAMPLES)[0]
    assert not [e for e in rec["events"] if e["kind"] == "vote_cast"]


def test_intrinsic_protocol_with_sim(data_dir: Path) -> None:
    r = utdebug(
        "bench",
        "intrinsic",
        "--split",
        "hard",
        "--model",
        "sim",
        "--problems",
        FAST,
        "--data-dir",
        str(data_dir),
        "--json",
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["label"] == "SIMULATED" and out["samples"] == 3 * len(FAST.split(","))
    assert out["parsed"] == 1.0 and out["valid"] == 1.0
    for k in ("attack_rate", "output_accuracy", "accuracy_and_attack"):
        assert 0.0 < out[k] < 1.0
    assert out["accuracy_and_attack"] <= min(out["attack_rate"], out["output_accuracy"])


def test_voting_helps_above_half_and_hurts_below(data_dir: Path, tmp_path: Path) -> None:
    """Measured over many problems (the direction, not a value on one problem)."""
    r = utdebug(
        "bench",
        "voting",
        "--split",
        "hard",
        "--model",
        "sim",
        "--problems",
        FAST,
        "--grid",
        "0.3,0.75",
        "--data-dir",
        str(data_dir),
        "--out",
        str(tmp_path),
        "--json",
    )
    assert r.returncode == 0, r.stderr
    rows = {row["per_vote_accuracy"]: row for row in json.loads(r.stdout)["rows"]}
    low, high = rows[0.3], rows[0.75]
    assert low["voting"]["output_accuracy"] < low["single"]["output_accuracy"]
    assert high["voting"]["output_accuracy"] > high["single"]["output_accuracy"]


def test_scripted_model_file(data_dir: Path, tmp_path: Path) -> None:
    def ut(a: int, b: int, out: bool) -> str:
        call = f"differ_At_One_Bit_Pos({a}, {b})"
        return (
            f"## Unit Test\n### Input Arguments\nArguments: ```{call}```\n"
            f"### Output\nOutput: ```{out}```"
        )

    # The given code mishandles negative numbers: -1 ^ -2 == 1 differs in one bit.
    script = {
        "ut": [ut(-1, -2, True), ut(2, 4, False), ut(5, 4, True)] * 3,
        "vote": ["Output: ```True```"] * 8
        + ["Output: ```False```"] * 8
        + ["Output: ```True```"] * 56,
        "debug": [
            "```python\ndef differ_At_One_Bit_Pos(a, b):\n"
            "    x = a ^ b\n    return x > 0 and x & (x - 1) == 0\n```"
        ]
        * 3,
    }
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    r = utdebug(
        "bench",
        "--split",
        "hard",
        "--model",
        f"scripted:{path}",
        "--problems",
        "6",
        "--data-dir",
        str(data_dir),
        "--out",
        str(tmp_path / "run"),
        "--json",
    )
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)["summary"]
    assert s["rounds"][-1]["pass_at_1"] == 1.0  # the scripted fix is the gold behaviour
    assert s["problems"] == 1


def test_auth_error_is_one_clear_message(data_dir: Path, tmp_path: Path) -> None:
    env = {k: "" for k in ("OPENAI_API_KEY", "UTDEBUG_MODEL", "UTDEBUG_CONFIG")}
    r = utdebug(
        "bench",
        "--split",
        "hard",
        "--model",
        "openai/gpt-4o-mini",
        "--problems",
        "6,7,9",
        "--data-dir",
        str(data_dir),
        "--out",
        str(tmp_path),
        "--no-cache",
        env=env,
    )
    assert r.returncode == 1, r.stderr
    assert "OPENAI_API_KEY" in r.stderr
    # One line, before any problem starts (the pre-flight probe): no table, nothing written.
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stderr.startswith("utdebug bench: the model cannot be used:")
    assert r.stdout == "" and not (tmp_path / SAMPLES).exists()


def test_bad_arguments_are_usage_errors(data_dir: Path) -> None:
    for bad in (
        ["--rounds", "-1"],
        ["--sim-out-acc", "1.5"],
        ["-n", "0"],
        ["--threshold", "0"],
        ["--concurrency", "0"],
    ):
        r = utdebug("bench", "--model", "sim", *bad)
        assert r.returncode == 2, bad
    assert utdebug("bench", "intrinsic").returncode == 2  # needs --model
    assert utdebug("bench", "voting", "--model", "scripted:x.json").returncode == 2
    missing = utdebug(
        "bench",
        "--model",
        "scripted:/nonexistent.json",
        "--problems",
        "6",
        "--data-dir",
        str(data_dir),
    )
    assert missing.returncode == 2 and "no such file" in missing.stderr


@pytest.mark.slow
def test_interrupt_keeps_finished_problems_and_resumes(data_dir: Path, tmp_path: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "utdebug",
        "bench",
        "--split",
        "hard",
        "--model",
        "sim",
        "--problems",
        FAST,
        "--concurrency",
        "1",
        "--no-cache",  # a cold run: problems take long enough to be interrupted
        "--data-dir",
        str(data_dir),
        "--out",
        str(tmp_path),
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint
    )
    samples = tmp_path / SAMPLES
    while_running(proc, lambda: len(read_samples(samples)) >= 2, "two records written")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    kept = read_samples(samples)
    n = len(FAST.split(","))
    assert 2 <= len(kept) < n
    assert samples.read_bytes().endswith(b"\n")
    summary = json.loads((tmp_path / SUMMARY).read_text())
    assert summary["complete"] is False
    again = subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    s = json.loads(again.stdout)["summary"]
    assert s["problems"] == n and s["complete"] is True
    keys = [r["key"] for r in read_samples(samples)]
    assert len(keys) == len(set(keys)) == n  # finished problems were not redone


@pytest.mark.parametrize("mode", ["ablation"])
def test_ablation_table_is_labelled(data_dir: Path, tmp_path: Path, mode: str) -> None:
    r = utdebug(
        "bench",
        mode,
        "--split",
        "hard",
        "--model",
        "sim",
        "--problems",
        "6,7,9",
        "--rounds",
        "1",
        "--data-dir",
        str(data_dir),
        "--out",
        str(tmp_path),
    )
    assert r.returncode == 0, r.stderr
    assert "SIMULATED" in r.stdout
    for row in ("no voting", "no backtracking", "full"):
        assert row in r.stdout


@pytest.mark.parametrize("method", ["random", "prompted", "none"])
def test_every_ut_method_runs_with_sim(data_dir: Path, tmp_path: Path, method: str) -> None:
    r = utdebug("bench", "--split", "hard", "--model", "sim", "--ut-method", method,
                "--problems", "6,7,9", "--data-dir", str(data_dir), "--out", str(tmp_path),
                "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)["summary"]
    assert s["settings"]["ut_method"] == method and s["problems"] == 3
    kinds = {e["kind"] for rec in read_samples(tmp_path / SAMPLES) for e in rec["events"]}
    assert ("test_kept" in kinds) == (method != "none")
