"""The evaluator: run a program on a problem's private tests in the sandbox and judge each input.

``evaluate_split`` drives a whole split concurrently (one sandbox, a thread per worker; or a
Ray cluster through :mod:`utdebug.distributed`, a sandbox per worker process), appends one
record per problem to ``samples.jsonl`` (in this process only), skips problems already
recorded with the same key (resume), and rewrites ``summary.json`` from the samples at the end.
HE+Fix has no expected values in its files: they come from running the gold solution on the
same inputs in the sandbox first (cached on disk, keyed by the dataset hash and the gold code).
:class:`PrivateTestRunner` runs the private tests for a debugging run (each program once, shared,
its results kept on disk by :class:`VerdictCache`) with the same verdicts.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import resource
import threading
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from utdebug.agents.sim import Verdicts
from utdebug.data.classeval import run_tests
from utdebug.data.datasets import (
    BenchProblem,
    ClassFixProblem,
    LoadedSplit,
    Problem,
    ProblemError,
    Split,
)
from utdebug.distributed import JobPool, LocalPool, PoolOptions, WorkerContext
from utdebug.engine import Executor
from utdebug.literals import literal_value
from utdebug.runs.records import (
    SAMPLES,
    SUMMARY,
    RunFolderError,
    SampleWriter,
    read_samples,
    record_key,
    summarize,
    write_json_atomic,
    write_summary,
)
from utdebug.sandbox import _runner
from utdebug.sandbox.compare import Semantics, outputs_match
from utdebug.sandbox.config import Limits
from utdebug.sandbox.executor import Sandbox
from utdebug.sandbox.frames import decode_value
from utdebug.sandbox.outcomes import BatchResult, SandboxError, Status
from utdebug.sandbox.verdicts import Judged, Verdict, judge


class Program(StrEnum):
    CODE = "code"
    """The dataset's given (buggy) code."""
    GOLD = "gold"


@dataclass(frozen=True, slots=True)
class EvalSettings:
    semantics: Semantics = Semantics.DATASET
    limits: Limits = field(default_factory=Limits)
    gold_limits: Limits = field(default_factory=lambda: Limits(per_input=20.0, load=30.0))
    """Limits for computing HE+Fix expected values from the gold solution."""
    max_details: int = 20
    """Non-passing inputs described in full per record (the verdict string has them all)."""

    def key_parts(self) -> dict[str, Any]:
        lim = self.limits
        return {
            "semantics": self.semantics.value,
            "limit_kind": lim.kind.value,
            "per_input": lim.per_input,
            "load": lim.load_limit(),
            "memory_mb": lim.memory_mb,
            "batch": lim.batch,
            **({} if lim.cut_after is None else {"cut": [lim.cut_after, lim.cut_limit]}),
        }


class ExpectedUnavailable(Exception):
    pass


def program_text(problem: BenchProblem, program: Program) -> str:
    return problem.gold if program is Program.GOLD else problem.code


def evaluate_problem(
    sb: Sandbox,
    problem: Problem,
    code: str,
    settings: EvalSettings,
    expected: Sequence[Any],
) -> dict[str, Any]:
    """Run ``code`` on every private test of ``problem``; return the sample record body."""
    res = sb.run(code, problem.entry_point, problem.tests.inputs, settings.limits)
    return batch_record(res, judge_batch(res, problem, settings, expected), settings.max_details)


def judge_batch(
    res: BatchResult, problem: Problem, settings: EvalSettings, expected: Sequence[Any]
) -> list[Judged]:
    """The verdict of each private test of ``problem`` from one batch's outcomes."""
    tests = problem.tests
    return [
        judge(outcome, exp, tests.check, settings.semantics, args)
        for outcome, exp, args in zip(res.outcomes, expected, tests.inputs, strict=True)
    ]


def evaluate_class_problem(
    sb: Sandbox, problem: ClassFixProblem, code: str, settings: EvalSettings
) -> dict[str, Any]:
    """Run ``code`` (the corrupted class, the gold class or a fix) on every private test of a
    ClassEval+Fix problem, one test method per input, each judged here from the sandbox's
    outcome (:func:`classeval.test_verdict`); the record body, with the corrupted method's
    own tests counted apart."""
    res, judged = run_tests(sb, code, problem.test_code, problem.tests, settings.limits)
    target_passed = sum(1 for i in problem.target_tests if judged[i].verdict is Verdict.PASS)
    return batch_record(res, judged, settings.max_details) | {
        "target": problem.target.qualname,
        "target_tests": len(problem.target_tests),
        "target_passed": target_passed,
        "mutation": problem.mutation,
    }


def batch_record(res: BatchResult, judged: Sequence[Judged], max_details: int) -> dict[str, Any]:
    """A sample record's body from one batch's verdicts: the counts, the verdict letters, the
    first ``max_details`` non-passing inputs described, the batch's time and memory."""
    letters: list[str] = []
    details: list[dict[str, Any]] = []
    counts = dict.fromkeys(Verdict, 0)
    for i, j in enumerate(judged):
        counts[j.verdict] += 1
        letters.append(j.verdict.letter)
        if j.verdict is not Verdict.PASS and len(details) < max_details:
            details.append({"i": i, "verdict": j.verdict.value, "detail": j.detail})
    n = len(judged)
    return {
        "n_tests": n,
        "passed": counts[Verdict.PASS],
        "pass_fraction": counts[Verdict.PASS] / n if n else 0.0,
        "all_pass": n > 0 and counts[Verdict.PASS] == n,
        "failed": counts[Verdict.FAIL],
        "timeouts": counts[Verdict.TIMEOUT],
        "crashes": counts[Verdict.CRASH],
        "load_error": res.load_error,
        "verdicts": "".join(letters),
        "details": details,
        "seconds": round(res.wall_seconds, 4),
        "cpu_seconds": round(res.cpu_seconds, 4),
        "children": res.children,
        "peak_child_rss_kb": res.peak_rss_kb,
    }


# --- HE+Fix expected values -------------------------------------------------------------------


class ExpectedCache:
    """Expected outputs computed from gold solutions, stored as codec JSON per problem."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder

    def _path(self, problem: Problem) -> Path | None:
        if self.folder is None:
            return None
        h = hashlib.sha256(
            f"{problem.provenance.sha256}\0{problem.task_id}\0{problem.gold}".encode()
        ).hexdigest()[:24]
        return self.folder / f"{problem.task_id.replace('/', '-')}-{h}.json"

    def get(self, problem: Problem) -> list[Any] | None:
        path = self._path(problem)
        if path is None or not path.exists():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            values = [decode_value(v) for v in data["expected"]]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return values if len(values) == len(problem.tests.inputs) else None

    def put(self, problem: Problem, values: Sequence[Any]) -> None:
        path = self._path(problem)
        if path is None:
            return
        # A cache: a file that cannot be written (a full disk) is computed again next time.
        with contextlib.suppress(RunFolderError):
            write_json_atomic(
                path, {"task_id": problem.task_id, "expected": [_runner.encode(v) for v in values]}
            )


def expected_values(
    sb: Sandbox, problem: Problem, settings: EvalSettings, cache: ExpectedCache
) -> Sequence[Any]:
    if problem.tests.expected is not None:
        return problem.tests.expected
    cached = cache.get(problem)
    if cached is not None:
        return cached
    res = sb.run(problem.gold, problem.entry_point, problem.tests.inputs, settings.gold_limits)
    bad = [(i, o) for i, o in enumerate(res.outcomes) if o.status is not Status.OK]
    if bad:
        i, o = bad[0]
        raise ExpectedUnavailable(
            f"the gold solution gave no value for {len(bad)} input(s); first: input {i}: "
            f"{o.status.value} {o.error_type or ''} {o.error or ''}".strip()
        )
    values = [o.value for o in res.outcomes]
    cache.put(problem, values)
    return values


# --- private tests of a debugging run ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PrivateResult:
    verdicts: tuple[tuple[bool, Any], ...]
    letters: str
    pass_fraction: float
    all_pass: bool
    timeouts: int
    load_error: str | None
    seconds: float
    cached: bool = False


class VerdictCache:
    """Private-test results of programs, on disk: one JSON file per (dataset file, problem,
    program text, evaluation settings). A program evaluated by any earlier run (the given code,
    the gold solution, a common fix) is not run again. ``None``: no cache."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder

    def _path(self, problem: Problem, code: str, settings: EvalSettings) -> Path | None:
        if self.folder is None:
            return None
        raw = json.dumps(
            [problem.provenance.sha256, problem.task_id, code, settings.key_parts()], sort_keys=True
        )
        h = hashlib.sha256(raw.encode()).hexdigest()[:32]
        return self.folder / problem.task_id.replace("/", "-") / f"{h}.json"

    def get(self, problem: Problem, code: str, settings: EvalSettings) -> PrivateResult | None:
        path = self._path(problem, code, settings)
        if path is None or not path.exists():
            return None
        try:
            d = json.loads(path.read_text(encoding="utf-8"))
            values = [None if v is None else decode_value(v) for v in d["values"]]
            letters = str(d["letters"])
            if len(letters) != len(problem.tests.inputs) or len(values) != len(letters):
                return None
            verdicts = tuple((c == "P", v) for c, v in zip(letters, values, strict=True))
            return PrivateResult(
                verdicts,
                letters,
                float(d["pass_fraction"]),
                bool(d["all_pass"]),
                int(d["timeouts"]),
                d["load_error"],
                0.0,
                cached=True,
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, problem: Problem, code: str, settings: EvalSettings, r: PrivateResult) -> None:
        path = self._path(problem, code, settings)
        if path is None:
            return
        # A cache: a file that cannot be written (a full disk) is computed again next time.
        with contextlib.suppress(RunFolderError):
            self._write(path, problem, r)

    @staticmethod
    def _write(path: Path, problem: Problem, r: PrivateResult) -> None:
        write_json_atomic(
            path,
            {
                "task_id": problem.task_id,
                "letters": r.letters,
                "values": [None if v is None else _runner.encode(v) for _, v in r.verdicts],
                "pass_fraction": r.pass_fraction,
                "all_pass": r.all_pass,
                "timeouts": r.timeouts,
                "load_error": r.load_error,
                "seconds": round(r.seconds, 4),
            },
        )


def _storable(value: Any) -> Any:
    """``value`` if it survives the on-disk codec and reads back as a literal, else None."""
    try:
        _runner.encode(value)
        literal_value(repr(value))
    except Exception:
        return None
    return value


class PrivateTestRunner:
    """Evaluates programs on the private tests, each (problem, program) once, shared by all."""

    def __init__(
        self,
        executor: Executor,
        settings: EvalSettings,
        expected_cache: ExpectedCache,
        verdict_cache: VerdictCache | None = None,
    ) -> None:
        self.executor = executor
        self.settings = settings
        self.expected_cache = expected_cache
        self.verdict_cache = verdict_cache or VerdictCache(None)
        self.cached = 0
        self._problems: dict[str, Problem] = {}
        self._expected: dict[str, Sequence[Any]] = {}
        self._results: dict[tuple[str, str], asyncio.Future[PrivateResult]] = {}
        self._index: dict[str, dict[str, int]] = {}
        self.evaluations = 0

    async def add(self, problem: Problem) -> None:
        """Register a problem (HE+Fix: computes the expected values from the gold code)."""
        self._problems[problem.task_id] = problem
        if problem.task_id not in self._expected:
            loop = asyncio.get_running_loop()
            self._expected[problem.task_id] = await loop.run_in_executor(
                None,
                expected_values,
                self.executor.sandbox,
                problem,
                self.settings,
                self.expected_cache,
            )

    def expected(self, task_id: str) -> Sequence[Any]:
        return self._expected[task_id]

    async def evaluate(self, task_id: str, code: str) -> PrivateResult:
        key = (task_id, code)
        fut = self._results.get(key)
        if fut is None:
            fut = asyncio.get_running_loop().create_future()
            self._results[key] = fut
            try:
                fut.set_result(await self._evaluate(task_id, code))
            except BaseException as exc:
                del self._results[key]
                fut.set_exception(exc)
                fut.exception()  # mark retrieved: the caller re-raises it below
                raise
        return await asyncio.shield(fut)

    async def verdicts(self, task_id: str, code: str) -> Verdicts:
        return (await self.evaluate(task_id, code)).verdicts

    async def _evaluate(self, task_id: str, code: str) -> PrivateResult:
        p = self._problems[task_id]
        hit = self.verdict_cache.get(p, code, self.settings)
        if hit is not None:
            self.cached += 1
            return hit
        r = await self._run(p, code)
        self.verdict_cache.put(p, code, self.settings, r)
        return r

    def result_if_known(self, task_id: str, code: str) -> PrivateResult | None:
        fut = self._results.get((task_id, code))
        if fut is None or not fut.done() or fut.cancelled() or fut.exception() is not None:
            return None
        return fut.result()

    def index_of(self, task_id: str, args: tuple[Any, ...]) -> int | None:
        idx = self._index.get(task_id)
        if idx is None:
            p = self._problems[task_id]
            idx = self._index[task_id] = {}
            for i, a in enumerate(p.tests.inputs):
                idx.setdefault(repr(list(a)), i)
        return idx.get(repr(list(args)))

    async def _run(self, p: Problem, code: str) -> PrivateResult:
        exp = self._expected[p.task_id]
        t0 = time.perf_counter()
        res = await self.executor.batch(code, p.entry_point, p.tests.inputs, self.settings.limits)
        self.evaluations += 1
        verdicts, letters, timeouts = [], [], 0
        for o, j in zip(res.outcomes, judge_batch(res, p, self.settings, exp), strict=True):
            ok = j.verdict is Verdict.PASS
            verdicts.append((ok, _storable(o.value) if o.status is Status.OK else None))
            letters.append(j.verdict.letter)
            timeouts += j.verdict is Verdict.TIMEOUT
        n = len(verdicts)
        passed = sum(ok for ok, _ in verdicts)
        return PrivateResult(
            tuple(verdicts),
            "".join(letters),
            passed / n if n else 0.0,
            n > 0 and passed == n,
            timeouts,
            res.load_error,
            time.perf_counter() - t0,
        )

    def matches(self, task_id: str, value: Any, gold: Any, args: tuple[Any, ...]) -> bool:
        return matches_gold(self._problems[task_id], value, gold, args)


def matches_gold(problem: Problem, value: Any, gold: Any, args: Sequence[Any]) -> bool:
    """``value`` is the gold output under the problem's own comparison (an exception inside the
    comparison counts as a mismatch)."""
    try:
        return bool(outputs_match(value, gold, problem.tests.check, Semantics.DATASET, args))
    except Exception:
        return False


# --- whole splits -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EvalJob:
    """One problem to evaluate: all a worker needs, picklable (it travels to Ray workers)."""

    key: str
    """The record key: the driver writes one record per key and resumes by it."""
    problem: Problem | ClassFixProblem
    program: Program
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
        code = program_text(p, job.program)
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
    program: Program
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
    program: Program
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
    program: Program,
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
            key = keys.key(p.task_id, program_text(p, program))
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
        try:
            _write_results(run, runner.map(evaluate_job, todo, stop=stop), writer, on_record)
        except RunFolderError as e:  # a full disk: stop, keep what is written, say why
            failure = e
            raise
        finally:
            _write_summary(run, current, about, failure)
    run.wall_seconds = time.perf_counter() - t0
    run.evaluator_peak_rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return run


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
