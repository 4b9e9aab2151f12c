"""scripts/compare_outputs.py: what its comparison ignores (timings, tokens, memory, the
capture folder, record order) and what it does not (any other change)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "compare_outputs.py"


@pytest.fixture(scope="module")
def co() -> ModuleType:
    spec = importlib.util.spec_from_file_location("compare_outputs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["compare_outputs"] = module
    spec.loader.exec_module(module)
    return module


def record(task: str, seconds: float, passed: int) -> dict[str, object]:
    return {
        "task_id": task,
        "passed": passed,
        "seconds": seconds,
        "provenance": {"file": "x"},
        "usage": {"calls": 2, "prompt_tokens": int(seconds * 100), "completion_tokens": 3},
        "events": [{"kind": "model_called", "seconds": seconds, "cached": False}],
    }


def write_capture(root: Path, *, seconds: float, passed: int, order: int = 1) -> Path:
    job = root / "hard_sim"
    (job / "run").mkdir(parents=True)
    (job / "cache").mkdir()
    (job / "cache" / "responses.sqlite").write_text(str(seconds))  # never compared
    records = [record("hard/6", seconds, passed), record("hard/7", seconds * 2, 3)][::order]
    (job / "run" / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    summary = {"split": "hard", "usage": {"prompt_tokens": 9 * seconds}, "out": str(root)}
    (job / "run" / "summary.json").write_text(json.dumps(summary))
    (job / "stdout.txt").write_text(
        f"SIMULATED hard: 2 problems debugged; wall {seconds} s (this run)\n"
        f"model: tokens {int(seconds * 1000):,} in / 5 out, cost $0.0000\n"
        f"samples and summary in {root}/hard_sim/run/\n"
    )
    (job / "stderr.txt").write_text(f"progress 0:00:{int(seconds):02d}\n")
    (job / "exit_code.txt").write_text("0\n")
    return root


def test_times_tokens_paths_and_record_order_are_not_differences(
    co: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = write_capture(tmp_path / "a", seconds=1.5, passed=4)
    after = write_capture(tmp_path / "bb", seconds=12.25, passed=4, order=-1)
    assert co.compare(before, after, ["hard_sim"]) == 0
    assert capsys.readouterr().out.startswith("hard_sim: same")


def test_any_other_change_is_a_difference(
    co: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = write_capture(tmp_path / "a", seconds=1.5, passed=4)
    after = write_capture(tmp_path / "b", seconds=1.5, passed=5)
    assert co.compare(before, after, ["hard_sim"]) == 1
    out = capsys.readouterr().out
    assert "hard_sim: DIFFERENT" in out and "passed: 4 != 5" in out
    (after / "hard_sim" / "run" / "samples.jsonl").unlink()
    (after / "hard_sim" / "stdout.txt").write_text("something else\n")
    assert co.compare(before, after, ["hard_sim"]) == 1
    out = capsys.readouterr().out
    assert "run/samples.jsonl: only before" in out and "stdout.txt" in out


def test_masks_and_dropped_keys(co: ModuleType) -> None:
    text = (
        "1 function checked: 3 findings, 0 cached, 2.5 s; exit code 1\n"
        '<testcase name="t" time="0.642">\n'
        "[round 0] test proposal 1 · model call · 199 chars · 0.0 s\n"
        "hard: memory: evaluator peak 102 MiB, largest child 63 MiB\n"
    )
    assert co.normalise_text(text, []) == [
        "1 function checked: 3 findings, 0 cached, <T> s; exit code 1",
        '<testcase name="t" time="<T>">',
        "[round 0] test proposal 1 · model call · 199 chars · <T> s",
        "hard: memory: evaluator peak <M> MiB, largest child <M> MiB",
    ]
    saved = {"history": {"1": [["02:29:05", "model", "proposed"]]}, "started_at": "x", "n": 1}
    assert co.normalise_json(saved, []) == {
        "history": {"1": [["<CLOCK>", "model", "proposed"]]},
        "n": 1,
    }


def test_a_wall_seconds_column_of_another_width_is_the_same_table(co: ModuleType) -> None:
    def table(wall: str) -> str:
        return (
            f"┃ split ┃ problems ┃ {'wall s (this run)':>{max(17, len(wall))}} ┃\n"
            f"│ hard  │       20 │ {wall:>{max(17, len(wall))}} │\n"
        )

    assert co.normalise_text(table("55.6"), []) == co.normalise_text(
        table("1234567890123456789.5"), []
    )
    assert co.normalise_text(table("55.6"), []) != co.normalise_text(
        table("55.6").replace("20", "21"), []
    )


def test_token_counts_differ_only_with_keep_tokens(
    co: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = write_capture(tmp_path / "a", seconds=1.5, passed=4)
    after = write_capture(tmp_path / "b", seconds=1.5, passed=4)
    samples = after / "hard_sim" / "run" / "samples.jsonl"
    samples.write_text(
        samples.read_text().replace('"completion_tokens": 3', '"completion_tokens": 4')
    )
    assert co.compare(before, after, ["hard_sim"]) == 0
    assert co.compare(before, after, ["hard_sim"], co.KEEP_TOKENS) == 1
    assert "completion_tokens: 3 != 4" in capsys.readouterr().out


def test_the_classeval_build_file_is_compared_the_rest_of_the_cache_is_not(
    co: ModuleType, tmp_path: Path
) -> None:
    job = tmp_path / "classeval_sim"
    (job / "cache" / "classeval-fix").mkdir(parents=True)
    (job / "cache" / "classeval-fix" / "ClassEval+Fix.jsonl").write_text("{}\n")
    (job / "cache" / "responses.sqlite").write_text("x")
    (job / "stderr.txt").write_text("progress\n")
    assert list(co.job_files(job)) == ["cache/classeval-fix/ClassEval+Fix.jsonl"]
