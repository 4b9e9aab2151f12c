"""A benchmark problem's private tests: running a program on them and judging each input.

One place runs them for every front end: the plain evaluation of a split
(``benchmarks/evaluator.py``), a debugging run's program of each round
(:class:`PrivateTestRunner`, each program once, its results kept on disk by
:class:`VerdictCache`) and the app's session on a benchmark problem. HE+Fix has no expected
values in its files: they come from running the gold solution on the same inputs first
(:class:`ExpectedCache`). Also a problem as the engine's Task, and the SIMULATED model's view of
a problem (its private verdicts).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from utdebug.agents.base import Model
from utdebug.agents.sim import SimModel, SimProblem, Verdicts
from utdebug.data.classeval import run_tests
from utdebug.data.datasets import (
    BenchProblem,
    ClassFixProblem,
    Problem,
    Split,
)
from utdebug.engine import Executor
from utdebug.engine.model import Task
from utdebug.literals import literal_value
from utdebug.runs.records import (
    RunFolderError,
    write_json_atomic,
)
from utdebug.sandbox import _runner
from utdebug.sandbox.compare import Semantics, outputs_match
from utdebug.sandbox.config import Limits
from utdebug.sandbox.executor import Sandbox
from utdebug.sandbox.frames import decode_value
from utdebug.sandbox.outcomes import BatchResult, Status
from utdebug.sandbox.verdicts import Judged, Verdict, judge


class WhichCode(StrEnum):
    """Which of a problem's two codes a plain evaluation runs (records call it ``program``)."""

    CODE = "code"
    """The dataset's given (buggy) code."""
    GOLD = "gold"
    """The dataset's reference solution."""


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


def code_text(problem: BenchProblem, which: WhichCode) -> str:
    return problem.gold if which is WhichCode.GOLD else problem.code


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


def register_sim(sim: Model, problem: Problem, private: PrivateTestRunner) -> None:
    """Tell the simulated model (built over ``private``) the gold solution of ``problem``."""
    assert isinstance(sim, SimModel)
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
