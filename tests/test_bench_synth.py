"""``utdebug bench synth``: records, summary, exposure, false alarms and resume on a small
validation file (two problems in the MBPP+Fix format), in the real sandbox."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from utdebug import cli
from utdebug.benchmarks import synth_bench
from utdebug.data.datasets import PrivateTests, Problem, Provenance, Split
from utdebug.sandbox import CheckSpec
from utdebug.synth import seeds_from_problem

HELPER = """def assertion(out, exp, atol):
    if out != exp and atol != 0:
        assert np.allclose(out, exp, rtol=1e-07, atol=atol)
    else:
        assert out == exp, f"out: {out}, exp: {exp}"
"""


def _row(number: int, code: str) -> dict[str, Any]:
    test = (
        "import numpy as np\n\n"
        f"{HELPER}\n\ninputs = [[1, 2], [3, 4], [10, -3], [7, 7]]\nresults = [3, 7, 7, 14]\n"
        "for i, (inp, exp) in enumerate(zip(inputs, results)):\n"
        "    assertion(add(*inp), exp, 0)\n"
    )
    return {
        "task_id": number,
        "prompt": "Add two numbers.",
        "test_list": ["assert add(1, 2) == 3", "assert add(3, 4) == 7"],
        "test": test,
        "signature": "add(a, b)",
        "entry_point": "add",
        "canonical_solution": "def add(a, b):\n    return a + b\n",
        "code": code,
    }


BUGGY = "def add(a, b):\n    if a > 5:\n        return a - b\n    return a + b\n"
"""Wrong for some inputs inside the private inputs' envelope (``a`` up to 10)."""
GOLD_COPY = "def add(a, b):\n    return b + a\n"
"""A 'buggy' program that is right: it must not be exposed."""


@pytest.fixture
def val_file(tmp_path: Path) -> Path:
    path = tmp_path / "val.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (_row(1, BUGGY), _row(2, GOLD_COPY))))
    return path


@pytest.fixture(autouse=True)
def _small_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(synth_bench, "COUNT", 80)
    monkeypatch.setattr(synth_bench, "PER_PROBLEM", 6.0)


def _bench(val_file: Path, out: Path, *extra: str) -> int:
    argv = ["bench", "synth", "--split", "val", "--val-file", str(val_file), "--out", str(out)]
    return cli.main([*argv, *extra])


def _records(out: Path) -> list[dict[str, Any]]:
    lines = (out / "samples.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_records_summary_exposure_and_resume(
    val_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert _bench(val_file, out) == 0
    recs = {r["task_id"]: r for r in _records(out)}
    assert set(recs) == {"val/1", "val/2"}
    assert all(r["error_kind"] is None for r in recs.values())
    buggy, right = recs["val/1"], recs["val/2"]
    assert buggy["exposed"] and buggy["exposed_in_envelope"]
    assert 1 <= len(buggy["suite"]) <= 5
    assert not right["exposed"]
    assert not buggy["false_alarm"] and not right["false_alarm"]
    assert buggy["valid"] > 0 and buggy["emitted"] <= 80
    summary = json.loads((out / "summary.json").read_text())
    for key in ("problems", "exposed", "exposed_in_envelope", "false_alarms", "validity"):
        assert key in summary
    assert summary["problems"] == 2
    assert summary["exposed_in_envelope"] == 1
    assert summary["false_alarms"] == 0
    assert 0.9 <= summary["validity"] <= 1.0
    assert summary["valid_inputs_per_s"] > 0
    assert summary["reduced_suite"]["problems"] == 1
    assert summary["reduced_suite"]["max"] == len(buggy["suite"])
    assert summary["by_source"]
    assert summary["complete"] is True
    table = capsys.readouterr().out
    assert "bench synth" in table and "val" in table

    # The same command again evaluates nothing: every problem is resumed by its key.
    assert _bench(val_file, out, "--json") == 0
    again = json.loads(capsys.readouterr().out)
    assert again[0]["evaluated_now"] == 0
    assert again[0]["resumed"] == 2
    assert len(_records(out)) == 2
    assert again[0]["summary"]["exposed_in_envelope"] == 1


def test_limit_and_model_refused(
    val_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "one"
    assert _bench(val_file, out, "--limit", "1") == 0
    assert [r["task_id"] for r in _records(out)] == ["val/1"]
    capsys.readouterr()
    assert _bench(val_file, tmp_path / "m", "--model", "sim") == 2
    err = capsys.readouterr().err
    assert "SIMULATED model" in err and "cannot write generator programs" in err
    assert not (tmp_path / "m").exists()


def _generator(body: str) -> str:
    return f"```python\ndef generate():\n    {body}\n```\n"


def test_a_scripted_models_generators_are_one_more_source(
    val_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--model scripted:FILE``: the generator programs (one repaired from its error) add
    inputs with the source ``generator``; tokens and calls are in the records and the summary."""
    script = tmp_path / "script.json"
    replies = [
        _generator("return [(a, rnd(b)) for a in range(6, 11) for b in range(3)]"),
        _generator("return [(a, b) for a in range(6, 11) for b in range(-3, 4)]"),
        _generator("return [(0, 0), (10, -3), (-1, 1)]"),
        _generator("return [(2, 2), (9, 9)]"),
        _generator("return [(10, 7)]"),
    ]
    script.write_text(json.dumps({"generate": replies}))
    out = tmp_path / "gen"
    assert _bench(val_file, out, "--model", f"scripted:{script}", "--limit", "2", "--json") == 0
    summary = json.loads(capsys.readouterr().out)[0]["summary"]
    recs = {r["task_id"]: r for r in _records(out)}
    first = recs["val/1"]
    gen = first["generator"]
    assert gen["model_calls"] == 3 and gen["repaired"] == ["regular"]
    assert gen["feedback"][0].startswith("regular #0: generate() raised NameError")
    assert gen["tokens"]["total"] > 0 and gen["valid"] > 0
    assert first["source_counts"]["generator"]["valid"] == gen["valid"]
    assert first["source_counts"]["generator"]["emitted"] == gen["new"]
    assert first["label"] == "SIMULATED" and first["model"].startswith("scripted:")
    assert recs["val/2"]["generator"]["model_calls"] == 2
    assert not any(r["false_alarm"] for r in recs.values())
    assert summary["model_calls"] == 5 and summary["tokens"]["total"] > 0
    assert summary["generator_inputs"]["valid"] == sum(
        r["generator"]["valid"] for r in recs.values()
    )
    assert summary["source_counts"]["generator"]["valid"] > 0
    assert summary["label"] == "SIMULATED"
    # the model-free key is unchanged; a model's run is keyed by the model
    assert "model" not in synth_bench.ExposureSettings().to_json()


def test_he_needs_runnable_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["bench", "synth", "--split", "he"]) == 2
    assert "--he-variant runnable" in capsys.readouterr().err


def test_he_plus_does_not_take_synth(capsys: pytest.CaptureFixture[str]) -> None:
    """HumanEval+ has no buggy code; ClassEval+Fix takes synth (test_bench_synth_classeval)."""
    assert cli.main(["bench", "synth", "--split", "he+"]) == 2
    assert capsys.readouterr().err.startswith("utdebug bench: error: --split he+ is HumanEval+")


def test_seeds_from_the_prompt_without_test_list() -> None:
    """HE+Fix has no ``test_list``: its prompt's doctest examples are the base inputs."""
    p = Problem(
        split=Split.HE,
        task_id="he/0",
        number=0,
        prompt='def add(a, b):\n    """Add.\n    >>> add(1, 2)\n    3\n    """\n',
        signature="add(a, b)",
        entry_point="add",
        code="def add(a, b):\n    return a - b\n",
        gold="def add(a, b):\n    return a + b\n",
        tests=PrivateTests(((1, 2),), (3,), CheckSpec()),
        test_list=(),
        provenance=Provenance("synthetic.jsonl", 0, "0" * 64),
    )
    assert seeds_from_problem(p).inputs == [(1, 2)]
    with_list = dataclasses.replace(p, test_list=("assert add(4, 5) == 9",))
    assert seeds_from_problem(with_list).inputs == [(4, 5)]
