"""The per-problem job loop shared by the model-driven runs (debug, judge, verify)."""

from __future__ import annotations

import asyncio
import errno
import json
from pathlib import Path
from typing import Any

import pytest

from utdebug.agents.base import ModelAuthError, ModelRateLimited
from utdebug.agents.sim import SimParams
from utdebug.runs import folder as runs
from utdebug.runs.folder import (
    FatalRunError,
    Job,
    JobLoop,
    RunResult,
    SessionModelError,
    latest_records,
    model_error_line,
    record_jobs,
    record_run,
    run_folder,
    sum_usage,
    summary_head,
)
from utdebug.runs.records import (
    SAMPLES,
    SUMMARY,
    RunFolderError,
    SampleWriter,
    read_samples,
)
from utdebug.sandbox.outcomes import SandboxError


def job(task_id: str, outcome: Any) -> Job:
    async def work() -> dict[str, Any]:
        await asyncio.sleep(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return {"value": outcome, "usage": {"calls": 2, "cost": 0.5}}

    return Job({"key": task_id, "task_id": task_id, "simulated": True}, work)


def test_records_bodies_and_errors_by_kind(tmp_path: Path) -> None:
    seen: list[tuple[str, str]] = []
    jobs = [
        job("t/1", 1),
        job("t/2", ModelRateLimited("slow down", model="m")),
        job("t/3", SandboxError("the zygote died")),
        job("t/4", KeyError("x")),
    ]
    with SampleWriter(tmp_path / SAMPLES) as w:
        n = asyncio.run(
            record_jobs(
                jobs, w, concurrency=2, on_record=lambda k, r: seen.append((k, r["task_id"]))
            )
        )
    assert n == 4
    recs = {r["task_id"]: r for r in read_samples(tmp_path / SAMPLES)}
    assert recs["t/1"]["error_kind"] is None and recs["t/1"]["value"] == 1
    assert recs["t/2"]["error_kind"] == "model" and "slow down" in recs["t/2"]["error"]
    assert recs["t/3"]["error_kind"] == "problem" and recs["t/3"]["error"].startswith("Sandbox")
    assert recs["t/4"]["error"].startswith("unexpected KeyError")
    ends = [(k, t) for k, t in seen if k != "start"]
    assert sorted(ends) == [("done", "t/1"), ("error", "t/2"), ("error", "t/3"), ("error", "t/4")]
    # Each job says when it starts, before it ends: a progress display names what is running.
    for k, t in ends:
        assert seen.index(("start", t)) < seen.index((k, t))
    assert [t for k, t in seen if k == "start"][:2] == ["t/1", "t/2"]  # two at once
    head = summary_head(recs.values())
    assert head["label"] == "SIMULATED" and head["problems"] == 4 and head["evaluated"] == 1
    # The model error is not a problem error: it is reported apart, and a rerun retries it.
    assert head["problem_errors"] == 2 and head["usage"]["calls"] == 2
    assert head["model_errors"]["count"] == 1 and head["model_errors"]["task_ids"] == ["t/2"]
    assert [e["task_id"] for e in head["errors"]] == ["t/3", "t/4"]
    assert head["usage"]["cost"] == 0.5  # only the problems that ran count


def test_an_error_every_problem_would_hit_stops_the_run(tmp_path: Path) -> None:
    jobs = [
        job("t/1", ModelAuthError("no key", model="m")),
        *(job(f"t/{i}", i) for i in range(2, 9)),
    ]
    with SampleWriter(tmp_path / SAMPLES) as w, pytest.raises(FatalRunError, match="no key"):
        asyncio.run(record_jobs(jobs, w, concurrency=1))
    # The failing problem is not recorded (a rerun retries it), nothing after it started.
    assert read_samples(tmp_path / SAMPLES) == []


def test_a_record_that_cannot_be_written_stops_the_run(tmp_path: Path) -> None:
    class FullDisk(SampleWriter):
        def write(self, record: Any) -> None:
            if record["task_id"] == "t/2":
                raise RunFolderError(self.path, OSError(errno.ENOSPC, "No space left on device"))
            super().write(record)

    started: list[str] = []

    def tracked(task_id: str) -> Job:
        inner = job(task_id, 1)

        async def work() -> dict[str, Any]:
            started.append(task_id)
            return await inner.work()

        return Job(inner.base, work)

    with FullDisk(tmp_path / SAMPLES) as w, pytest.raises(RunFolderError, match="ENOSPC"):
        asyncio.run(record_jobs([tracked(f"t/{i}") for i in range(1, 9)], w, concurrency=1))
    # What was written stays; no job starts after the failure (a rerun does the rest).
    assert [r["task_id"] for r in read_samples(tmp_path / SAMPLES)] == ["t/1"]
    assert started == ["t/1", "t/2"]


def test_a_run_skips_recorded_keys_and_records_dataset_rows(tmp_path: Path) -> None:
    seen: list[tuple[str, str]] = []
    current: set[str] = set()
    rows = [({"key": "row/1", "task_id": "t/row1"}, "row 1: no entry point")]
    jobs = [job("t/1", 1), job("t/2", 2)]
    with SampleWriter(tmp_path / SAMPLES) as w:
        written, skipped = asyncio.run(
            record_run(
                w,
                {"t/2"},
                current,
                dataset_errors=rows,
                jobs=jobs,
                concurrency=2,
                on_record=lambda k, r: seen.append((k, r["task_id"])),
            )
        )
    assert (written, skipped) == (1, 1)
    assert current == {"row/1", "t/1", "t/2"}
    recs = {r["key"]: r for r in read_samples(tmp_path / SAMPLES)}
    assert set(recs) == {"row/1", "t/1"}
    assert recs["row/1"]["error_kind"] == "dataset" and "no entry point" in recs["row/1"]["error"]
    assert sorted(seen) == [
        ("done", "t/1"),
        ("error", "t/row1"),
        ("skipped", "t/2"),
        ("start", "t/1"),
    ]


def test_a_session_a_model_error_ended_is_recorded_apart_and_retried(tmp_path: Path) -> None:
    trace = {"events": [{"kind": "session_started"}, {"kind": "finished"}], "usage": {"calls": 3}}
    failing = job("t/2", SessionModelError("ModelTimeout: no first token in 10 s", trace))
    with SampleWriter(tmp_path / SAMPLES) as w:
        asyncio.run(record_jobs([job("t/1", 1), failing], w, concurrency=1))
    rec = {r["task_id"]: r for r in read_samples(tmp_path / SAMPLES)}["t/2"]
    # The engine's description of the error, and the session's partial trace for diagnosis.
    assert rec["error_kind"] == "model" and rec["error"] == "ModelTimeout: no first token in 10 s"
    assert rec["events"] == trace["events"] and rec["usage"] == {"calls": 3}
    # A rerun skips only the finished record; the retry's record replaces the failed one.
    done = {r["key"] for r in read_samples(tmp_path / SAMPLES) if r["error_kind"] != "model"}
    current: set[str] = set()
    with SampleWriter(tmp_path / SAMPLES) as w:
        written, skipped = asyncio.run(
            record_run(
                w,
                done,
                current,
                dataset_errors=[],
                jobs=[job("t/1", 1), job("t/2", 2)],
                concurrency=1,
            )
        )
    assert (written, skipped) == (1, 1)
    latest = {r["task_id"]: r for r in latest_records(tmp_path / SAMPLES, current)}
    assert latest["t/2"]["error_kind"] is None and latest["t/2"]["value"] == 2
    head = summary_head(latest.values())
    assert head["model_errors"]["count"] == 0 and head["evaluated"] == 2
    # The samples file is append-only: it keeps both tries; the summary reads the last.
    assert len(read_samples(tmp_path / SAMPLES)) == 3


def test_the_summary_sums_every_usage_key_and_names_the_causes() -> None:
    def rec(i: int, kind: str | None, usage: dict[str, Any], error: str | None = None) -> Any:
        return {"task_id": f"t/{i}", "key": str(i), "error_kind": kind, "error": error,
                "usage": usage}  # fmt: skip

    u1 = {"calls": 4, "requests": 6, "completions": 5, "failures": 0, "retries": 1,
          "cached": 2, "prompt_tokens": 100, "completion_tokens": 50, "cost": 0.25,
          "cost_known": True, "by_purpose": {"ut": 2, "vote": 2}}  # fmt: skip
    u2 = {"calls": 2, "requests": 4, "completions": 1, "failures": 2, "retries": 2,
          "cost": 0.5, "cost_known": False, "by_purpose": {"ut": 1}, "new_counter": 7}  # fmt: skip
    records = [
        rec(1, None, u1),
        rec(2, "model", u2, "ModelTimeout: no first token within 10 s"),
        rec(3, "model", {}, "ModelTimeout: no first token within 10 s"),
        rec(4, "model", {}, "ModelUnavailable: connection refused"),
    ]
    head = summary_head(records)
    u = head["usage"]
    assert (u["calls"], u["requests"], u["completions"]) == (6, 10, 6)
    assert (u["failures"], u["retries"], u["cached"]) == (2, 3, 2)
    assert u["cost"] == 0.75 and u["cost_known"] is False
    assert u["by_purpose"] == {"ut": 3, "vote": 2} and u["new_counter"] == 7
    assert sum_usage([])["requests"] == 0  # every key is there even when nothing ran
    me = head["model_errors"]
    assert me["count"] == 3 and head["evaluated"] == 1 and head["problem_errors"] == 0
    assert me["causes"][0] == {"error": "ModelTimeout: no first token within 10 s", "count": 2}
    line = model_error_line(me, head["problems"])
    assert line.startswith("3 of 4 sessions ended by a model error (ModelTimeout: no first")
    assert "1 other cause" in line and line.endswith("rerun the same command to retry them")
    assert "\n" not in model_error_line({"count": 1, "causes": [{"error": "a\nb"}]}, 1)


def test_one_runner_resumes_retries_and_writes_the_summary_every_mode_reads(
    tmp_path: Path,
) -> None:
    rows = [({"key": "row/1", "task_id": "t/row1"}, "row 1: no entry point")]

    def once(outcome_2: Any) -> RunResult:
        run = RunResult(tmp_path)
        asyncio.run(
            run_folder(
                run,
                dataset_errors=rows,
                jobs=[job("t/1", 1), job("t/2", outcome_2)],
                summarize=summary_head,
                extra={"model": "m", "settings": {"k": 1}},
                sim=SimParams(),
                loop=JobLoop(concurrency=2),
                started=0.0,
            )
        )
        return run

    first = once(ModelRateLimited("slow down", model="m"))
    # The dataset row is recorded too, but only jobs count as evaluated.
    assert (first.evaluated, first.skipped) == (2, 0) and first.wall_seconds > 0
    s = first.summary
    # summarize's fields, then complete, then the mode's own fields, then the simulation's.
    assert list(s)[-4:] == ["complete", "model", "settings", "sim"]
    assert s["complete"] is False and s["model_errors"]["count"] == 1
    assert s["problem_errors"] == 1 and s["sim"] == SimParams().to_json()
    assert json.loads((tmp_path / SUMMARY).read_text()) == s
    # A rerun skips what finished and retries the model error; the summary reads the last try.
    again = once(2)
    assert (again.evaluated, again.skipped) == (1, 2)
    assert again.summary["complete"] is True and again.summary["evaluated"] == 2


def test_one_runner_keeps_what_it_wrote_when_the_disk_is_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class FullDisk(SampleWriter):
        def write(self, record: Any) -> None:
            if record["task_id"] == "t/2":
                raise RunFolderError(self.path, OSError(errno.ENOSPC, "No space left on device"))
            super().write(record)

    monkeypatch.setattr(runs, "SampleWriter", FullDisk)
    run = RunResult(tmp_path)
    with pytest.raises(RunFolderError, match="ENOSPC"):
        asyncio.run(
            run_folder(
                run,
                dataset_errors=[],
                jobs=[job(f"t/{i}", i) for i in range(1, 5)],
                summarize=summary_head,
                extra={"model": "m"},
                loop=JobLoop(concurrency=1),
                started=0.0,
            )
        )
    written = json.loads((tmp_path / SUMMARY).read_text())
    assert written["complete"] is False and "ENOSPC" in written["incomplete"]
    assert written["problems"] == 1 and written["model"] == "m"
