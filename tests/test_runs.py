"""The per-problem job loop shared by the model-driven runs (debug, judge, verify)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from utdebug.agents.base import ModelAuthError, ModelRateLimited
from utdebug.benchmarks.records import SAMPLES, SampleWriter, read_samples
from utdebug.benchmarks.runs import FatalRunError, Job, record_jobs, record_run, summary_head
from utdebug.sandbox.server import SandboxError


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
    assert sorted(seen) == [("done", "t/1"), ("error", "t/2"), ("error", "t/3"), ("error", "t/4")]
    head = summary_head(recs.values())
    assert head["label"] == "SIMULATED" and head["problems"] == 4 and head["evaluated"] == 1
    assert head["problem_errors"] == 3 and head["usage"]["calls"] == 2
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
    assert sorted(seen) == [("done", "t/1"), ("error", "t/row1"), ("skipped", "t/2")]
