"""Plain evaluation of a split: every problem's program on its private tests, as records.

``evaluate_split`` drives a whole split concurrently (one sandbox, a thread per worker; or a
Ray cluster through :mod:`utdebug.distributed`, a sandbox per worker process), appends one
record per problem to ``samples.jsonl`` (in this process only), skips problems already
recorded with the same key (resume), and rewrites ``summary.json`` from the samples at the end.
Running and judging one problem's private tests is :mod:`utdebug.data.private_tests`.
"""

from __future__ import annotations

import hashlib
import resource
import threading
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from utdebug.data.datasets import (
    ClassFixProblem,
    LoadedSplit,
    Problem,
    ProblemError,
    Split,
)
from utdebug.data.private_tests import (
    EvalSettings,
    ExpectedCache,
    ExpectedUnavailable,
    WhichCode,
    code_text,
    evaluate_class_problem,
    evaluate_problem,
    expected_values,
)
from utdebug.distributed import JobPool, LocalPool, PoolOptions, WorkerContext
from utdebug.runs.records import (
    SAMPLES,
    SUMMARY,
    RunFolderError,
    SampleWriter,
    read_samples,
    record_key,
    summarize,
    write_summary,
)
from utdebug.sandbox.executor import Sandbox
from utdebug.sandbox.outcomes import SandboxError


@dataclass(frozen=True, slots=True)
class EvalJob:
    """One problem to evaluate: all a worker needs, picklable (it travels to Ray workers)."""

    key: str
    """The record key: the driver writes one record per key and resumes by it."""
    problem: Problem | ClassFixProblem
    program: WhichCode
    settings: EvalSettings
    record: dict[str, Any]
    """The record's fields known before the run (key, split, task id, settings, sources)."""
    expected_cache: ExpectedCache


def failed_record(record: dict[str, Any], message: str, n_tests: int = 0) -> dict[str, Any]:
    """A record for a problem that could not be evaluated (it counts as a problem error)."""
    return record | {
        "error": message, "n_tests": n_tests, "passed": 0, "all_pass": False,
        "timeouts": 0, "crashes": 0,
    }  # fmt: skip


def evaluate_job(job: EvalJob, ctx: WorkerContext) -> dict[str, Any]:
    """Evaluate one problem in the sandbox of the process it runs in; the record to write."""
    p = job.problem
    try:
        sb = ctx.sandbox()
        code = code_text(p, job.program)
        if isinstance(p, ClassFixProblem):  # unittest methods: no expected values
            body = evaluate_class_problem(sb, p, code, job.settings)
        else:
            try:
                expected = expected_values(sb, p, job.settings, job.expected_cache)
            except ExpectedUnavailable as e:
                return failed_record(job.record, str(e), p.n_tests)
            body = evaluate_problem(sb, p, code, job.settings, expected)
    except SandboxError as e:  # the sandbox, not the program, failed: record, go on
        return failed_record(job.record, f"sandbox failure: {e}", p.n_tests)
    provenance = {"provenance": {"file": p.provenance.file, "row": p.provenance.row}}
    return job.record | provenance | {"error": None} | body


def worker_sandbox_layers(_: object, ctx: WorkerContext) -> tuple[str, list[str]]:
    """The mode and active layers of the sandbox of the worker this job runs on (started now:
    a worker whose sandbox lacks a required layer raises SandboxUnavailable)."""
    layers = ctx.sandbox().layers
    return layers.mode, sorted(str(layer) for layer in layers.active())


@dataclass(slots=True)
class SplitRun:
    split: Split
    program: WhichCode
    out_dir: Path
    evaluated: int = 0
    skipped: int = 0
    summary: dict[str, Any] = field(default_factory=dict)
    wall_seconds: float = 0.0
    evaluator_peak_rss_kb: int = 0
    peak_child_rss_kb: int = 0


ProgressFn = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True, slots=True)
class _SplitKeys:
    """The record keys and fixed record fields of one evaluation of a split."""

    split: Split
    program: WhichCode
    settings: EvalSettings
    sources: list[tuple[str, str]]
    about: dict[str, Any] | None

    def key(self, task_id: str, code: str) -> str:
        about = self.about
        return record_key(
            {
                "split": self.split.value,
                "task_id": task_id,
                "program": self.program.value,
                "code_sha256": hashlib.sha256(code.encode()).hexdigest(),
                "sources": self.sources,
                **self.settings.key_parts(),
                # ClassEval+Fix: which build (seed, cap, limits) chose the versions and tests
                **({"build": about["build"]} if about and "build" in about else {}),
            }
        )

    def base(self, task_id: str, key: str) -> dict[str, Any]:
        settings = self.settings
        return {"key": key, "split": self.split.value, "task_id": task_id,
                "program": self.program.value, "semantics": settings.semantics.value,
                "per_input_limit": settings.limits.per_input,
                "limit_kind": settings.limits.kind.value,
                "sources": dict(self.sources)}  # fmt: skip


@dataclass(frozen=True, slots=True)
class SplitData:
    """What one evaluation reads of a split: its problems, the rows that did not load, the
    files it came from (name -> sha256) and what its summary says about the data."""

    split: Split
    problems: Sequence[Problem | ClassFixProblem]
    sources: Mapping[str, str]
    errors: Sequence[ProblemError] = ()
    about: dict[str, Any] | None = None
    """ClassEval+Fix: its licence and counts."""

    @classmethod
    def of(cls, ls: LoadedSplit) -> SplitData:
        """All of a loaded split: its function problems and its classes."""
        return cls(ls.split, [*ls.problems, *ls.classes], ls.sources, ls.errors, ls.about or None)


def evaluate_split(
    sb: Sandbox | JobPool,
    data: SplitData,
    program: WhichCode,
    settings: EvalSettings,
    out_dir: Path,
    *,
    workers: int = 2,
    expected_cache: ExpectedCache | None = None,
    on_record: ProgressFn | None = None,
    stop: threading.Event | None = None,
) -> SplitRun:
    """Evaluate every problem of ``data`` not yet recorded; rewrite the summary from the
    samples file.

    ``sb`` is a started :class:`Sandbox` (``workers`` threads share it) or a
    :class:`~utdebug.distributed.JobPool` (a Ray cluster: each worker process evaluates with its
    own sandbox; ``workers`` is then the runner's own concurrency). Either way only this
    process writes ``samples.jsonl`` and ``summary.json``, with the same records and keys.
    """
    split, problems, errors, about = data.split, data.problems, data.errors, data.about
    sources = dict(data.sources)
    t0 = time.perf_counter()
    samples_path = out_dir / SAMPLES
    done = {r.get("key") for r in read_samples(samples_path)}
    run = SplitRun(split, program, out_dir)
    cache = expected_cache or ExpectedCache(None)
    keys = _SplitKeys(split, program, settings, sorted(sources.items()), about)
    current: set[str] = set()
    failure: RunFolderError | None = None
    with SampleWriter(samples_path) as writer:
        for err in errors:
            task = err.task_id or f"{split.value}/row{err.row}"
            key = keys.key(task, f"row {err.row}")
            current.add(key)
            if key in done:
                run.skipped += 1
                continue
            rec = failed_record(keys.base(task, key), f"{err.file}, row {err.row}: {err.message}")
            writer.write(rec)
            if on_record:
                on_record("error", rec)
        todo: list[EvalJob] = []
        for p in problems:
            key = keys.key(p.task_id, code_text(p, program))
            current.add(key)
            if key in done:
                run.skipped += 1
                if on_record:
                    on_record("skipped", {"task_id": p.task_id})
            else:
                todo.append(EvalJob(key, p, program, settings, keys.base(p.task_id, key), cache))
        # Largest problems first: a long problem started last would set the run's tail.
        todo.sort(key=lambda job: -job.problem.n_tests)
        if isinstance(sb, Sandbox):
            runner: JobPool = LocalPool(
                PoolOptions(sb.config, concurrency=max(1, workers)), sandbox=sb
            )
        else:
            runner = sb
        started = None if on_record is None else _announce(on_record)
        try:
            results = runner.map(evaluate_job, todo, stop=stop, started=started)
            _write_results(run, results, writer, on_record)
        except RunFolderError as e:  # a full disk: stop, keep what is written, say why
            failure = e
            raise
        finally:
            _write_summary(run, current, about, failure)
    run.wall_seconds = time.perf_counter() - t0
    run.evaluator_peak_rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return run


def _announce(on_record: ProgressFn) -> Callable[[EvalJob], None]:
    """``on_record("start", ...)`` as the pool hands each job to a worker."""

    def started(job: EvalJob) -> None:
        on_record("start", job.record)

    return started


def _write_results(
    run: SplitRun,
    results: Generator[tuple[EvalJob, dict[str, Any] | BaseException], None, None],
    writer: SampleWriter,
    on_record: ProgressFn | None,
) -> None:
    """One record per job as the runner finishes it (a job a cluster ran twice: once)."""
    written: set[str] = set()
    try:
        for job, outcome in results:
            if isinstance(outcome, BaseException):
                raise outcome
            if job.key in written:  # one record per key, whatever a cluster ran twice
                continue
            writer.write(outcome)
            written.add(job.key)
            run.evaluated += 1
            run.peak_child_rss_kb = max(run.peak_child_rss_kb, outcome.get("peak_child_rss_kb", 0))
            if on_record:
                on_record("done", outcome)
    finally:
        # On Ctrl-C (or a record that cannot be written), do not wait for the problems in
        # flight: their records are simply not written, and a rerun evaluates them.
        results.close()


def _write_summary(
    run: SplitRun, current: set[str], about: dict[str, Any] | None, failure: RunFolderError | None
) -> None:
    # Only this configuration's records: an output folder reused with other settings
    # keeps its old lines, but they do not leak into this summary.
    records = [r for r in read_samples(run.out_dir / SAMPLES) if r.get("key") in current]
    run.summary = summarize(records)
    for group in run.summary.values():
        group["complete"] = len(records) == len(current)
        group.update(about or {})
    write_summary(run.out_dir / SUMMARY, run.summary, failure, run.summary.values())
