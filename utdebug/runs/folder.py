"""What every model-driven benchmark run shares: the per-problem job loop and the summary head.

A run (``bench --model``, ``bench judge``, ``bench verify``) turns each problem not yet recorded
into a job: the record's fixed fields (``base``) and a coroutine that computes the rest. The
loop runs the jobs concurrently, appends one record per finished job, and stops starting new
ones once an error that every problem would hit has happened (credentials, unknown model, spent
budget): those problems are not recorded, so a rerun retries them.

A job that a model error ended (a timeout, a refused connection, a server that stopped) is
recorded with ``error_kind == "model"`` (with the session's partial trace when it has one): it
does not count in the run's numbers, the summary reports it apart (``model_errors``), the
command exits 1 with one line saying so, and a rerun of the same command tries it again
(resume skips only the other records; the last record of a key wins).
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from utdebug.agents.base import Model, ModelError
from utdebug.agents.sim import SIMULATED, SimParams
from utdebug.engine.session import FATAL_ERRORS
from utdebug.runs.records import (
    SAMPLES,
    SUMMARY,
    RunFolderError,
    SampleWriter,
    read_samples,
    write_summary,
)
from utdebug.sandbox.outcomes import SandboxError

ProgressFn = Callable[[str, dict[str, Any]], None]
"""``(kind, record)`` as a problem starts (kind ``start``, with the record's fixed fields) and
after each problem: kind ``done``, ``error`` or ``skipped``."""


class FatalRunError(Exception):
    """An error every problem would hit (credentials, unknown model, spent cost budget)."""


class SessionModelError(ModelError):
    """A session that a model error ended: recorded as a model error (retried by a rerun)
    with ``partial``, what the session did before (its events, usage), for diagnosis."""

    def __init__(self, error: str, partial: Mapping[str, Any] | None = None) -> None:
        super().__init__(error)
        self.error = error
        """The engine's description of the error (``ModelTimeout: ...``)."""
        self.partial = dict(partial or {})


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
    unwritable: list[RunFolderError] = []
    written = 0

    async def one(job: Job) -> None:
        nonlocal written
        async with sem:
            if fatal or unwritable or (stop is not None and stop.is_set()):
                return
            if on_record:
                on_record("start", job.base)
            rec = dict(job.base)
            try:
                rec |= {"error_kind": None} | await job.work()
            except (*FATAL_ERRORS, FatalRunError) as e:
                fatal.append(str(e) if isinstance(e, FatalRunError) else _describe(e))
                return
            except SessionModelError as e:
                rec |= e.partial | {"error_kind": "model", "error": e.error}
            except ModelError as e:
                rec |= {"error_kind": "model", "error": _describe(e)}
            except problem_errors as e:
                rec |= {"error_kind": "problem", "error": _describe(e)}
            except Exception as e:  # a bug or odd data in one problem: record it, go on
                rec |= {"error_kind": "problem", "error": f"unexpected {_describe(e)}"}
            if (stop is not None and stop.is_set()) or unwritable:
                return
            try:
                writer.write(rec)
            except RunFolderError as e:  # a full disk: no new job starts; the first one says
                unwritable.append(e)
                return
            written += 1
            if on_record:
                on_record("error" if rec["error_kind"] else "done", rec)

    await asyncio.gather(*(one(j) for j in jobs))
    if unwritable:
        raise unwritable[0]
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


@dataclass(frozen=True, slots=True)
class JobLoop:
    """How :func:`run_folder` runs its jobs (see :func:`record_jobs`)."""

    concurrency: int = 16
    on_record: ProgressFn | None = None
    stop: threading.Event | None = None
    problem_errors: tuple[type[BaseException], ...] = (SandboxError,)


class RunState(Protocol):
    """What :func:`run_folder` fills in: a run's folder, counts, summary and wall time."""

    out_dir: Path
    evaluated: int
    skipped: int
    summary: dict[str, Any]
    wall_seconds: float


async def run_folder(
    run: RunState,
    *,
    dataset_errors: Sequence[tuple[dict[str, Any], str]],
    jobs: Sequence[Job],
    summarize: Callable[[list[dict[str, Any]]], dict[str, Any]],
    extra: Mapping[str, Any],
    loop: JobLoop,
    started: float,
    sim: SimParams | None = None,
) -> None:
    """One model-driven run in ``run.out_dir``, whatever the mode (debugging, judging,
    verifying): the keys already recorded (a record a model error ended is tried again),
    :func:`record_run` over the dataset errors and the jobs, then, whatever happened, the
    summary rebuilt from the latest record of each of this run's keys (``summarize(records)``,
    then ``complete``, then ``extra``, then ``sim``: the simulated model's parameters, when it
    played) and written, also after a full disk (the summary then says it is incomplete and
    why; the error is raised). ``loop`` says how the jobs run; ``started`` is the run's
    ``perf_counter`` start."""
    samples_path = run.out_dir / SAMPLES
    done = {r.get("key") for r in read_samples(samples_path) if r.get("error_kind") != "model"}
    current: set[str] = set()
    failure: RunFolderError | None = None
    try:
        with SampleWriter(samples_path) as writer:
            run.evaluated, run.skipped = await record_run(
                writer,
                done,
                current,
                dataset_errors=dataset_errors,
                jobs=jobs,
                concurrency=loop.concurrency,
                on_record=loop.on_record,
                stop=loop.stop,
                problem_errors=loop.problem_errors,
            )
    except RunFolderError as e:  # a full disk: stop, keep what is written, say why
        failure = e
        raise
    finally:
        records = latest_records(samples_path, current)  # the last try wins
        run.summary = summarize(records)
        run.summary["complete"] = (
            len(records) == len(current) and not run.summary["model_errors"]["count"]
        )
        run.summary.update(extra)
        if sim is not None:
            run.summary["sim"] = sim.to_json()
        write_summary(run.out_dir / SUMMARY, run.summary, failure)
        run.wall_seconds = time.perf_counter() - started


def model_fields(model: str, simulated: bool) -> dict[str, Any]:
    """The fields of every record that say which model ran and whether it was simulated."""
    return {"model": model, "simulated": simulated, "label": SIMULATED if simulated else None}


def _describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


USAGE_KEYS = (
    "calls",
    "requests",
    "completions",
    "cached",
    "failures",
    "retries",
    "interrupted",
    "refused",
    "prompt_tokens",
    "completion_tokens",
    "cost",
)
"""The usage fields every summary has (0 when no record carries them): ``calls`` role-level
model calls, ``requests`` HTTP requests (top-ups and retries included), ``completions``
received, ``cached`` completions served from the response cache, ``failures`` model calls
that ended in an error after their retries, ``retries`` requests tried again after a transient
failure, ``interrupted`` replies that were no answer (empty, or cut off by the server) and
were asked again, ``refused`` replies that gave nothing usable (unparsable test proposals and
votes, edits with no program); tokens; ``cost`` in US dollars."""


def sum_usage(usages: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Every usage key the records carry, summed: numbers add up, ``cost_known`` holds when it
    holds for all, tables of counts (``by_purpose``) add up per key."""
    out: dict[str, Any] = {k: 0.0 if k == "cost" else 0 for k in USAGE_KEYS}
    known = True
    for u in usages:
        for k, v in u.items():
            if isinstance(v, bool):
                if k == "cost_known":
                    known = known and v
            elif isinstance(v, int | float):
                out[k] = out.get(k, 0) + v
            elif isinstance(v, Mapping):
                sub = out.setdefault(k, {})
                if isinstance(sub, dict):
                    for kk, vv in v.items():
                        if isinstance(vv, int | float) and not isinstance(vv, bool):
                            sub[str(kk)] = sub.get(str(kk), 0) + vv
    out["cost"] = round(float(out["cost"]), 6)
    out["cost_known"] = known
    return out


def one_line(text: object, limit: int = 240) -> str:
    """``text`` on one line (whitespace runs collapsed), cut to ``limit`` characters."""
    flat = re.sub(r"\s+", " ", str(text)).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def summarize_model_errors(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The records a model error ended: how many, the most common causes (first), which."""
    failed = [r for r in records if r.get("error_kind") == "model"]
    causes = Counter(one_line(r.get("error") or "unknown model error", 160) for r in failed)
    return {
        "count": len(failed),
        "causes": [{"error": e, "count": n} for e, n in causes.most_common(5)],
        "task_ids": [str(r.get("task_id")) for r in failed][:50],
    }


def summary_head(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The fields every run summary starts with: the SIMULATED label, problem and error counts,
    the first 50 problem errors, the model errors apart (``model_errors``: they are not in the
    run's numbers and a rerun retries them), and the usage summed over every record that has
    one (model errors included: their requests were made)."""
    records = list(records)
    ok = [r for r in records if r.get("error_kind") is None]
    problem = [r for r in records if r.get("error_kind") not in (None, "model")]
    sim = any(r.get("simulated") for r in records)
    return {
        "label": SIMULATED if sim else None,
        "simulated": sim,
        "problems": len(records),
        "evaluated": len(ok),
        "problem_errors": len(problem),
        "errors": [
            {"task_id": r["task_id"], "error": r.get("error"), "kind": r.get("error_kind")}
            for r in problem
        ][:50],
        "model_errors": summarize_model_errors(records),
        "usage": sum_usage(r["usage"] for r in records if isinstance(r.get("usage"), Mapping)),
    }


def latest_records(path: Path, keys: set[str]) -> list[dict[str, Any]]:
    """The records of ``keys`` in a samples file, the last record of each key only (a model
    error retried by a later run is replaced by the retry's record)."""
    latest: dict[Any, dict[str, Any]] = {}
    for r in read_samples(path):
        if r.get("key") in keys:
            latest.pop(r.get("key"), None)
            latest[r.get("key")] = r
    return list(latest.values())


def model_error_line(model_errors: Mapping[str, Any], total: int, what: str = "sessions") -> str:
    """The one line a run that had model errors ends with (on stderr, before exit 1)."""
    n = int(model_errors.get("count", 0))
    causes = list(model_errors.get("causes", []))
    why = one_line(causes[0]["error"], 120) if causes else "unknown"
    if len(causes) > 1:
        why += f"; {len(causes) - 1} other cause{'s' if len(causes) > 2 else ''}"
    return (
        f"{n} of {total} {what} ended by a model error ({why}); finished problems are kept; "
        "rerun the same command to retry them"
    )


def merge_model_errors(parts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Several runs' ``model_errors`` as one (ablation: one run per configuration)."""
    count = 0
    causes: Counter[str] = Counter()
    task_ids: list[str] = []
    for m in parts:
        count += int(m.get("count", 0))
        for c in m.get("causes", []):
            causes[str(c["error"])] += int(c["count"])
        task_ids += [str(t) for t in m.get("task_ids", [])]
    return {
        "count": count,
        "causes": [{"error": e, "count": n} for e, n in causes.most_common(5)],
        "task_ids": task_ids[:50],
    }


async def preflight_models(
    models: Iterable[Model | None], say: Callable[[str], None] | None = None
) -> None:
    """:func:`utdebug.agents.preflight.preflight` for each model (``None``: the simulated model,
    nothing to probe), before any problem starts; ``say`` gets what a probe found. Raises the
    probe's :class:`ModelError` (a one-line message) when a model cannot answer."""
    from utdebug.agents.preflight import preflight

    for model in models:
        if model is None:
            continue
        found = await preflight(model)
        if found.note and say is not None:
            say(f"model {found.model}: {found.note}")


def usage_text(u: Mapping[str, Any]) -> str:
    """Model usage for a table footer: completions, requests, failures, retries, tokens, cost."""
    return (
        f"{u.get('completions', 0)} completions (+{u.get('cached', 0)} from the cache) in "
        f"{u.get('calls', 0)} calls, {u.get('requests', 0)} requests, "
        f"{u.get('failures', 0)} failures, {u.get('retries', 0)} retries; tokens "
        f"{u.get('prompt_tokens', 0):,} in / {u.get('completion_tokens', 0):,} out, cost "
        f"${u.get('cost', 0.0):.4f}"
    )


REPLY_WARNING_SHARE = 0.05
"""More than this share of a run's replies empty, interrupted or unparsable: warn."""


def reply_warning(u: Mapping[str, Any]) -> str | None:
    """One warning line when more than a few percent (:data:`REPLY_WARNING_SHARE`, and at
    least 3) of a run's replies gave nothing usable, with the counts and the likely cause;
    ``None`` otherwise. ``u``: summed usage (``completions``, ``interrupted``, ``refused``)."""
    interrupted = int(u.get("interrupted", 0) or 0)
    refused = int(u.get("refused", 0) or 0)
    replies = int(u.get("completions", 0) or 0) + int(u.get("cached", 0) or 0) + interrupted
    bad = interrupted + refused
    if replies == 0 or bad < 3 or bad <= REPLY_WARNING_SHARE * replies:
        return None
    line = (
        f"warning: {bad} of {replies} model replies ({100 * bad / replies:.0f}%) "
        f"gave nothing usable: {interrupted} empty or cut off by the server (asked again), "
        f"{refused} unparsable or refused; "
    )
    if interrupted:
        return line + (
            "the server likely serves one request at a time and cuts a reply when another "
            "arrives (llama-cpp-python's server does): set concurrency = 1 for this model, or "
            "start the server with --interrupt_requests False"
        )
    return line + (
        "the model's replies do not follow the prompts' format (a small model?): see the "
        "refused replies' reasons in the event trace or the check report"
    )


__all__ = [
    "REPLY_WARNING_SHARE",
    "USAGE_KEYS",
    "FatalRunError",
    "Job",
    "JobLoop",
    "ProgressFn",
    "RunResult",
    "RunState",
    "SessionModelError",
    "latest_records",
    "merge_model_errors",
    "model_error_line",
    "model_fields",
    "one_line",
    "preflight_models",
    "record_jobs",
    "record_run",
    "reply_warning",
    "run_folder",
    "sum_usage",
    "summarize_model_errors",
    "summary_head",
    "usage_text",
]


def print_json(data: Any) -> None:
    """``data`` as indented JSON on stdout: the ``--json`` output of every bench mode (safe to
    print: :func:`~utdebug.text_safety.json_text`)."""
    from utdebug.text_safety import json_text

    sys.stdout.write(json_text(json.dumps(data, indent=2)) + "\n")


def simulated_note(model: str = "(sim)") -> str:
    """The sentence a table of simulated results starts with."""
    return (
        f"{SIMULATED}: these results come from the simulated model {model}, not from a "
        "language model."
    )
