"""Model-driven benchmarks: the UTDebug loop on every problem of a split.

Each problem runs one :class:`~utdebug.engine.Session` (problems run concurrently, bounded);
the code in force after every round is evaluated on the private tests with the foundation's
evaluator (each distinct program once), and the tests the session kept are scored with the
gold solution in the sandbox (the intrinsic metrics: attack rate, output accuracy, both).
One record per problem, with the session's full event trace, is appended to
``samples.jsonl``; a rerun skips finished problems (resume); ``summary.json`` is recomputed
from the samples alone. A session that a model error ended (a timeout, a refused connection, a
server that stopped) is recorded as a model error with its partial trace: it is left out of
pass@1 and the other numbers, reported apart (``model_errors``), and a rerun tries it again.

Runs with the simulated model say SIMULATED in the records, the summary and every table.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from utdebug.agents.base import Model
from utdebug.agents.sim import SimModel, SimParams, SimProblem, Verdicts
from utdebug.benchmarks.evaluator import (
    EvalSettings,
    ExpectedCache,
    ExpectedUnavailable,
    expected_values,
)
from utdebug.data.datasets import Problem, ProblemError, Split
from utdebug.engine import (
    Executor,
    Session,
    Settings,
    Task,
    UnitTest,
    Variant,
    event_to_json,
)
from utdebug.engine.events import RoundFinished, TestKept
from utdebug.engine.model import code_id
from utdebug.literals import literal_value
from utdebug.runs.folder import (
    FatalRunError,
    Job,
    ProgressFn,
    SessionModelError,
    run_folder,
    summary_head,
)
from utdebug.runs.records import (
    RunFolderError,
    record_key,
    task_order,
    write_json_atomic,
)
from utdebug.sandbox import _runner
from utdebug.sandbox.compare import Semantics, outputs_match
from utdebug.sandbox.config import Limits
from utdebug.sandbox.executor import Sandbox
from utdebug.sandbox.frames import decode_value
from utdebug.sandbox.outcomes import SandboxError, Status
from utdebug.sandbox.verdicts import Verdict, judge

SIM_LABEL = "SIMULATED"


def task_from_problem(problem: Problem) -> Task:
    he = problem.split in (Split.HE, Split.HE_PLUS)
    return Task(
        task_id=problem.task_id,
        description=problem.prompt,
        signature=problem.signature,
        entry_point=problem.entry_point,
        code=problem.code,
        example=None if he or not problem.test_list else problem.test_list[0],
        he_stub=problem.prompt if he else None,
        reference_use_set=problem.tests.check.reference_use_set,
    )


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


class PrivateTests:
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
        for o, e, args in zip(res.outcomes, exp, p.tests.inputs, strict=True):
            j = judge(o, e, p.tests.check, self.settings.semantics, args)
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


def make_sim(params: SimParams, private: PrivateTests) -> SimModel:
    return SimModel(params, private.verdicts, private.matches)


def register_sim(sim: SimModel, problem: Problem, private: PrivateTests) -> None:
    sim.register(
        SimProblem(
            task_id=problem.task_id,
            entry_point=problem.entry_point,
            gold=problem.gold,
            given=problem.code,
            inputs=problem.tests.inputs,
            expected=tuple(private.expected(problem.task_id)),
        )
    )


# --- intrinsic metrics of the kept tests ------------------------------------------------------


async def score_tests(
    executor: Executor,
    problem: Problem,
    tests: Sequence[UnitTest],
    codes: dict[str, str],
    limits: Limits,
    private: PrivateTests | None = None,
) -> list[dict[str, Any]]:
    """Per kept test: valid (the gold code runs on it), attack (its target code's output
    differs from the gold output), correct (the expected output equals the gold output).

    A test whose input is one of the private inputs, against a program already evaluated on
    the private tests, is scored from those results instead of being run again.
    """
    if not tests:
        return []
    known: list[dict[str, Any] | None] = [
        _score_from_private(private, problem, t, codes) if private is not None else None
        for t in tests
    ]
    rest = [t for t, k in zip(tests, known, strict=True) if k is None]
    fresh = iter(await _score_run(executor, problem, rest, codes, limits))
    return [k if k is not None else next(fresh) for k in known]


def _score_from_private(
    private: PrivateTests, problem: Problem, t: UnitTest, codes: dict[str, str]
) -> dict[str, Any] | None:
    code = codes.get(t.target)
    i = private.index_of(problem.task_id, t.args)
    if code is None or i is None:
        return None
    r = private.result_if_known(problem.task_id, code)
    if r is None:
        return None
    gold = private.expected(problem.task_id)[i]
    return {
        "id": t.id,
        "valid": True,
        "attack": not r.verdicts[i][0],
        "correct": matches_gold(problem, t.expected, gold, t.args),
        "share": t.share,
    }


async def _score_run(
    executor: Executor,
    problem: Problem,
    tests: Sequence[UnitTest],
    codes: dict[str, str],
    limits: Limits,
) -> list[dict[str, Any]]:
    if not tests:
        return []
    gold = await executor.batch(problem.gold, problem.entry_point, [t.args for t in tests], limits)
    out: list[dict[str, Any]] = []
    by_target: dict[str, list[int]] = {}
    for i, t in enumerate(tests):
        by_target.setdefault(t.target, []).append(i)
    attack = [False] * len(tests)
    for target, idx in by_target.items():
        code = codes.get(target)
        if code is None:
            continue
        res = await executor.batch(code, problem.entry_point, [tests[i].args for i in idx], limits)
        for i, o in zip(idx, res.outcomes, strict=True):
            g = gold.outcomes[i]
            if g.status is Status.OK:
                j = judge(o, g.value, problem.tests.check, Semantics.DATASET, tests[i].args)
                attack[i] = j.verdict is not Verdict.PASS
    for i, t in enumerate(tests):
        g = gold.outcomes[i]
        valid = g.status is Status.OK
        correct = valid and matches_gold(problem, t.expected, g.value, t.args)
        out.append(
            {
                "id": t.id,
                "valid": valid,
                "attack": valid and attack[i],
                "correct": correct,
                "share": t.share,
            }
        )
    return out


# --- one problem ------------------------------------------------------------------------------


@dataclass(slots=True)
class DebugRun:
    split: Split
    out_dir: Path
    evaluated: int = 0
    skipped: int = 0
    summary: dict[str, Any] = field(default_factory=dict)
    wall_seconds: float = 0.0


async def debug_session(
    task: Task,
    given: str,
    model: Model,
    settings: Settings,
    executor: Executor,
    *,
    judge_round: Callable[[str], Awaitable[dict[str, Any]]],
    score: Callable[[list[UnitTest], dict[str, str]], Awaitable[list[dict[str, Any]]]],
    ut_model: Model | None = None,
) -> dict[str, Any]:
    """One session on ``task`` (whose given code is ``given``), then the record's body: the
    code in force after every round judged by ``judge_round(code)`` (round 0 is the given
    code), and the kept tests scored by ``score(tests, targets)`` (``targets``: each code a
    test may target, by its code id)."""
    session = Session(task, model, executor, settings, ut_model=ut_model)
    t0 = time.perf_counter()
    result = await session.run()
    seconds = time.perf_counter() - t0
    if result.fatal:
        raise FatalRunError(result.error or "the model failed")
    if result.reason == "error":
        # Not a debugged problem: recorded as a model error (a rerun retries it), with what
        # the session did before, for diagnosis.
        raise SessionModelError(
            result.error or "the model failed",
            {
                "finish": result.reason,
                "usage": session.usage_json(),
                "session_seconds": round(seconds, 3),
                "events": [event_to_json(ev) for ev in result.events],
            },
        )
    codes: dict[int, str] = {}
    for ev in result.events:
        if isinstance(ev, RoundFinished):
            codes[ev.round] = ev.code
    rounds = []
    code = given
    for r in range(settings.rounds + 1):
        code = codes.get(r, code)
        rounds.append(
            {
                "round": r,
                **await judge_round(code),
                "code": code if r == 0 or code != given else None,
            }
        )
    kept = [ev.test for ev in result.events if isinstance(ev, TestKept)]
    # Tests target the code they were built against: the given code, an accepted edit, or (in
    # the reference variant) a candidate; every one of them appears in some event.
    texts = [getattr(ev, "code", None) for ev in result.events]
    targets = {code_id(c): c for c in [given, *texts] if isinstance(c, str)}
    scores = await score(kept, targets)
    said = {}
    if result.load_error is not None:  # stopped after round 0: no model call was made
        from utdebug.engine.events import does_not_load_line

        said = {"load_error": does_not_load_line(result.load_error)}
    return {
        "finish": result.reason,
        "error": result.error,
        **said,
        "rounds": rounds,
        "tests": scores,
        "usage": session.usage_json(),
        "session_seconds": round(seconds, 3),
        "events": [event_to_json(ev) for ev in result.events],
    }


async def debug_problem(
    problem: Problem,
    model: Model,
    settings: Settings,
    executor: Executor,
    private: PrivateTests,
    *,
    ut_model: Model | None = None,
) -> dict[str, Any]:
    async def judge_round(code: str) -> dict[str, Any]:
        pr = await private.evaluate(problem.task_id, code)
        return {
            "pass_fraction": round(pr.pass_fraction, 6),
            "all_pass": pr.all_pass,
            "timeouts": pr.timeouts,
        }

    async def score(kept: list[UnitTest], targets: dict[str, str]) -> list[dict[str, Any]]:
        return await score_tests(executor, problem, kept, targets, settings.limits, private)

    return await debug_session(
        task_from_problem(problem),
        problem.code,
        model,
        settings,
        executor,
        judge_round=judge_round,
        score=score,
        ut_model=ut_model,
    )


# --- a whole split ----------------------------------------------------------------------------


def summarize_debug(records: Sequence[dict[str, Any]], rounds: int) -> dict[str, Any]:
    """The run's numbers from its records alone (in problem order, so that float sums do not
    depend on the order in which problems finished)."""
    records = sorted(records, key=lambda r: task_order(str(r["task_id"])))
    head = summary_head(records)
    ok = [r for r in records if r.get("error_kind") is None]
    per_round = []
    for i in range(rounds + 1):
        vals = [r["rounds"][i] for r in ok if len(r["rounds"]) > i]
        per_round.append(
            {
                "round": i,
                "pass_at_1": sum(v["all_pass"] for v in vals) / len(vals) if vals else 0.0,
                "solved": sum(v["all_pass"] for v in vals),
                "mean_pass_rate": sum(v["pass_fraction"] for v in vals) / len(vals)
                if vals
                else 0.0,
            }
        )
    tests = [t for r in ok for t in r["tests"]]
    n = len(tests)
    return head | {
        "rounds": per_round,
        "intrinsic": {
            "tests": n,
            "attack_rate": sum(t["attack"] for t in tests) / n if n else 0.0,
            "output_accuracy": sum(t["correct"] for t in tests) / n if n else 0.0,
            "accuracy_and_attack": sum(t["attack"] and t["correct"] for t in tests) / n
            if n
            else 0.0,
            "valid": sum(t["valid"] for t in tests) / n if n else 0.0,
            "tests_per_problem": n / len(ok) if ok else 0.0,
        },
        "finish": _count(r.get("finish") for r in ok),
    }


def _count(items: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for x in items:
        out[str(x)] = out.get(str(x), 0) + 1
    return out


async def debug_jobs(
    run: DebugRun,
    *,
    model: Model,
    settings: Settings,
    eval_settings: EvalSettings,
    sources: dict[str, str],
    key_extra: dict[str, Any],
    errors: Sequence[ProblemError],
    jobs: Sequence[tuple[str, str, Callable[[], Awaitable[dict[str, Any]]]]],
    sim_params: SimParams | None,
    concurrency: int,
    started: float,
    on_record: ProgressFn | None,
    problem_errors: tuple[type[BaseException], ...],
    close: Callable[[], None] | None = None,
    base_extra: dict[str, Any] | None = None,
    about: dict[str, Any] | None = None,
) -> None:
    """The records of a debugging run of ``run.split``: one per dataset error and one per job
    (``(task_id, given code, work)``), keyed by the split, the problem, its code, the
    datasets, the settings and ``key_extra``; ``base_extra`` goes in every record (before the
    settings) and ``about`` in the summary."""
    split = run.split
    simulated = bool(getattr(model, "simulated", False))
    dataset_sha = sorted(sources.items())

    def key_of(task_id: str, code: str) -> str:
        return record_key(
            {
                "split": split.value,
                "task_id": task_id,
                "code": code,
                "sources": dataset_sha,
                "settings": settings.to_json(),
                "eval": eval_settings.key_parts(),
                **key_extra,
            }
        )

    def base(task_id: str, key: str) -> dict[str, Any]:
        return {
            "key": key,
            "split": split.value,
            "task_id": task_id,
            "model": model.name,
            "simulated": simulated,
            "label": SIM_LABEL if simulated else None,
            **(base_extra or {}),
            "settings": settings.to_json(),
        }

    dataset_errors = []
    for err in errors:
        task_id = err.task_id or f"{split.value}/row{err.row}"
        message = f"{err.file}, row {err.row}: {err.message}"
        dataset_errors.append((base(task_id, key_of(task_id, f"row {err.row}")), message))
    extra: dict[str, Any] = {"model": model.name, "settings": settings.to_json(), **(about or {})}
    await run_folder(
        run,
        dataset_errors=dataset_errors,
        jobs=[Job(base(t, key_of(t, code)), work) for t, code, work in jobs],
        summarize=lambda records: summarize_debug(records, settings.rounds),
        extra=extra,
        sim=sim_params,
        concurrency=concurrency,
        started=started,
        on_record=on_record,
        problem_errors=problem_errors,
        close=close,
    )


async def debug_split(
    *,
    split: Split,
    problems: Sequence[Problem],
    errors: Sequence[ProblemError],
    model: Model | None,
    settings: Settings,
    sandbox: Sandbox,
    eval_settings: EvalSettings,
    out_dir: Path,
    sources: dict[str, str],
    key_extra: dict[str, Any],
    expected_cache: ExpectedCache,
    concurrency: int = 16,
    workers: int = 2,
    sim_params: SimParams | None = None,
    on_record: ProgressFn | None = None,
    executor: Executor | None = None,
    private: PrivateTests | None = None,
    ut_model: Model | None = None,
) -> DebugRun:
    """Debug every problem not yet recorded; rewrite the summary from the samples file.

    With ``sim_params`` the model is replaced by the simulated model built over these
    private tests (labelled SIMULATED everywhere).
    """
    t0 = time.perf_counter()
    run = DebugRun(split, out_dir)
    own_executor = executor is None
    if executor is None:
        executor = Executor(sandbox, workers=workers)
    if private is None:
        private = PrivateTests(executor, eval_settings, expected_cache)
    if sim_params is not None:
        model = make_sim(sim_params, private)
    if model is None:
        raise ValueError("debug_split needs a model or simulation parameters")

    async def work(p: Problem) -> dict[str, Any]:
        await private.add(p)
        if isinstance(model, SimModel):
            register_sim(model, p, private)
        return await debug_problem(p, model, settings, executor, private, ut_model=ut_model)

    await debug_jobs(
        run,
        model=model,
        settings=settings,
        eval_settings=eval_settings,
        sources=sources,
        key_extra=key_extra,
        errors=errors,
        jobs=[(p.task_id, p.code, partial(work, p)) for p in problems],
        sim_params=sim_params,
        concurrency=concurrency,
        started=t0,
        on_record=on_record,
        problem_errors=(ExpectedUnavailable, SandboxError),
        close=executor.close if own_executor else None,
    )
    return run


__all__ = [
    "DebugRun",
    "FatalRunError",
    "PrivateTests",
    "Variant",
    "debug_problem",
    "debug_split",
    "summarize_debug",
    "task_from_problem",
]
