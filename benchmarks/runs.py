"""What every model-driven benchmark run shares: the per-problem job loop and the summary head.

A run (``bench --model``, ``bench judge``, ``bench verify``) turns each problem not yet recorded
into a job: the record's fixed fields (``base``) and a coroutine that computes the rest. The
loop runs the jobs concurrently, appends one record per finished job, and stops starting new
ones once an error that every problem would hit has happened (credentials, unknown model, spent
budget): those problems are not recorded, so a rerun retries them.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from utdebug.agents.base import ModelError
from utdebug.agents.sim import SIMULATED
from utdebug.benchmarks.records import SampleWriter
from utdebug.engine.session import FATAL_ERRORS
from utdebug.sandbox.server import SandboxError

ProgressFn = Callable[[str, dict[str, Any]], None]
"""``(kind, record)`` after each problem: kind ``done``, ``error`` or ``skipped``."""


class FatalRunError(Exception):
    """An error every problem would hit (credentials, unknown model, spent cost budget)."""


@dataclass(slots=True)
class RunResult:
    """What a run did: records written now, problems skipped as already recorded, the summary
    recomputed from the samples file, and the wall time."""

    out_dir: Path
    evaluated: int = 0
    skipped: int = 0
    summary: dict[str, Any] = field(default_factory=dict)
    wall_seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class Job:
    base: dict[str, Any]
    """The record's fixed fields (key, task id, model, labels)."""
    work: Callable[[], Awaitable[dict[str, Any]]]
    """Computes the rest of the record."""


async def record_jobs(
    jobs: Sequence[Job],
    writer: SampleWriter,
    *,
    concurrency: int,
    on_record: ProgressFn | None = None,
    stop: threading.Event | None = None,
    problem_errors: tuple[type[BaseException], ...] = (SandboxError,),
) -> int:
    """Run ``jobs`` (at most ``concurrency`` at once) and append one record per finished job:
    ``base | {"error_kind": None} | body``, or the error with ``error_kind`` ``model`` (a model
    error a rerun tries again) or ``problem`` (anything else: odd data, a sandbox failure, a
    bug). Returns how many records were written; raises :class:`FatalRunError` after the jobs
    in flight when one hit an error every problem would hit. With ``stop`` set, jobs not yet
    finished are dropped (an interrupted run keeps what it finished)."""
    sem = asyncio.Semaphore(max(1, concurrency))
    fatal: list[str] = []
    written = 0

    async def one(job: Job) -> None:
        nonlocal written
        async with sem:
            if fatal or (stop is not None and stop.is_set()):
                return
            rec = dict(job.base)
            try:
                rec |= {"error_kind": None} | await job.work()
            except (*FATAL_ERRORS, FatalRunError) as e:
                fatal.append(str(e) if isinstance(e, FatalRunError) else _describe(e))
                return
            except ModelError as e:
                rec |= {"error_kind": "model", "error": _describe(e)}
            except problem_errors as e:
                rec |= {"error_kind": "problem", "error": _describe(e)}
            except Exception as e:  # a bug or odd data in one problem: record it, go on
                rec |= {"error_kind": "problem", "error": f"unexpected {_describe(e)}"}
            if stop is not None and stop.is_set():
                return
            writer.write(rec)
            written += 1
            if on_record:
                on_record("error" if rec["error_kind"] else "done", rec)

    await asyncio.gather(*(one(j) for j in jobs))
    if fatal:
        raise FatalRunError(fatal[0])
    return written


async def record_run(
    writer: SampleWriter,
    done: set[Any],
    current: set[str],
    *,
    dataset_errors: Sequence[tuple[dict[str, Any], str]],
    jobs: Sequence[Job],
    concurrency: int,
    on_record: ProgressFn | None = None,
    stop: threading.Event | None = None,
    problem_errors: tuple[type[BaseException], ...] = (SandboxError,),
) -> tuple[int, int]:
    """One run over a split or file: every record key goes into ``current``; a key already in
    ``done`` is skipped (and reported as ``skipped``); a dataset row that could not become a
    problem is recorded as a ``dataset`` error (``(base record, message)``); the jobs left run
    through :func:`record_jobs`. Returns (problems recorded now, records skipped)."""
    skipped = 0
    todo: list[Job] = []
    for base, message in dataset_errors:
        current.add(base["key"])
        if base["key"] in done:
            skipped += 1
            if on_record:
                on_record("skipped", base)
            continue
        rec = base | {"error_kind": "dataset", "error": message}
        writer.write(rec)
        if on_record:
            on_record("error", rec)
    for job in jobs:
        current.add(job.base["key"])
        if job.base["key"] in done:
            skipped += 1
            if on_record:
                on_record("skipped", job.base)
        else:
            todo.append(job)
    written = await record_jobs(
        todo,
        writer,
        concurrency=concurrency,
        on_record=on_record,
        stop=stop,
        problem_errors=problem_errors,
    )
    return written, skipped


def _describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def summary_head(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The fields every run summary starts with: the SIMULATED label, problem and error counts,
    the first 50 errors, and calls, tokens and cost summed over the problems that ran."""
    records = list(records)
    ok = [r for r in records if r.get("error_kind") is None]
    usage: dict[str, Any] = {
        "calls": 0,
        "cached": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cost": 0.0,
    }
    for r in ok:
        for k in usage:
            usage[k] += r.get("usage", {}).get(k, 0)
    sim = any(r.get("simulated") for r in records)
    return {
        "label": SIMULATED if sim else None,
        "simulated": sim,
        "problems": len(records),
        "evaluated": len(ok),
        "problem_errors": len(records) - len(ok),
        "errors": [
            {"task_id": r["task_id"], "error": r.get("error")}
            for r in records
            if r.get("error_kind") is not None
        ][:50],
        "usage": usage,
    }


__all__ = [
    "FatalRunError",
    "Job",
    "ProgressFn",
    "RunResult",
    "record_jobs",
    "record_run",
    "summary_head",
]


def print_json(data: Any) -> None:
    """``data`` as indented JSON on stdout: the ``--json`` output of every bench mode."""
    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")


def simulated_note(model: str = "(sim)") -> str:
    """The sentence a table of simulated results starts with."""
    return (
        f"{SIMULATED}: these results come from the simulated model {model}, not from a "
        "language model."
    )
