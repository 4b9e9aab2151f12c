"""``utdebug bench verify``: score a test generator as a verifier (Scoring-Verifiers protocol).

For each problem of a Scoring-Verifiers file (HE-R, HE-R+, MBPP-R, MBPP-R+; see
:mod:`utdebug.benchmarks.scoring_verifiers`):

1. **Generate tests** with the engine's test generator (:meth:`Session.generate_tests`, the
   same UTGen prompts, parsing and self-consistency voting ``-k`` as a debugging run).
   Default: the paper's protocol, the ``random`` UT method, which never shows a solution, and
   ``-n/--tests`` (default 10) tests per problem. With ``--ut-method utgen|prompted`` the
   prompt shows code: tests are then generated against each candidate solution in turn,
   ⌈n / #solutions⌉ each, and pooled (a test equal to an earlier one in input *and* expected
   output is dropped), so a problem can get slightly more than n tests.
2. **Run every generated test against every candidate** in the sandbox (``--timeout`` seconds
   per test, default 2; the paper used 3 s). A test that fails, raises, times out or crashes
   counts as failed; a candidate that does not load fails every test.
3. **Estimated score** of a candidate = the fraction of the generated tests it passes. A
   problem where no test could be built gives every candidate 0 (a constant prediction: ρ = τ
   = 0 under the rule of :mod:`utdebug.ranking.verifiers`, Top-1 = 1/n).
4. **Metrics** against the file's expected scores (Top-1, Spearman ρ, Bottom-1, MAE, Kendall
   τ), computed per problem and averaged over problems.

One record per problem (expected and predicted scores, the tests, each candidate's verdicts,
the metrics, usage and the generation events) is appended to ``samples.jsonl`` in the run
folder (``--out DIR``, default ``runs/verify/<file>-<model>-<method>-n<N>-k<k>``); a rerun with
the same settings skips finished problems; ``summary.json`` is recomputed from the samples
alone. Every record carries the data file's sha256. The model is probed before any problem
starts (one line and exit 1 when it cannot answer); a problem that a model error cut short is
left out of the metrics, reported apart (``model_errors``) and retried by a rerun, and the
command exits 1 with one line saying how many.

``--model sim`` (SIMULATED) needs the problem's ground-truth solution and predefined test
inputs: the gold outputs are computed by running the ground truth in the sandbox, and the
simulated model proposes those inputs and votes on their outputs (:mod:`utdebug.agents.sim`).
A file where no problem has both is refused; single problems without them are recorded as
problem errors. Every record, summary and table of such a run says SIMULATED.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console

from utdebug.agents.base import Meter, Model, ModelError
from utdebug.agents.choice import SIMULATED_MODEL, build_chosen
from utdebug.agents.sim import SimModel, SimParams, SimProblem, Verdicts
from utdebug.benchmarks.bench import (
    error_line,
    local_workers,
    note_line,
    open_sandbox,
    run_mode,
)
from utdebug.benchmarks.context import RunContext
from utdebug.benchmarks.modes import ModeContext, UsageError
from utdebug.benchmarks.options import BenchOptions
from utdebug.benchmarks.report import print_verify
from utdebug.benchmarks.scoring_verifiers import (
    SETS,
    VerifierDataError,
    VerifierProblem,
    VerifierSet,
    load_verifier_file,
    load_verifier_set,
)
from utdebug.cli_common import Exit, console
from utdebug.engine import Executor, Session, Settings, Task, UnitTest, UTMethod, event_to_json
from utdebug.engine.voting import answer_key
from utdebug.ranking.verifiers import ProblemScores, aggregate, score_problem
from utdebug.runs.folder import (
    FatalRunError,
    Job,
    JobLoop,
    RunResult,
    model_error_line,
    model_fields,
    one_line,
    preflight_models,
    run_folder,
    summary_head,
)
from utdebug.runs.records import (
    record_key,
)
from utdebug.sandbox import (
    CheckSpec,
    LimitKind,
    Limits,
    SandboxConfig,
    Semantics,
    Status,
)
from utdebug.sandbox.compare import outputs_match
from utdebug.sandbox.verdicts import Verdict, judge

__all__ = [
    "DEFAULT_TESTS",
    "VerifyRun",
    "run",
    "summarize_verify",
    "verify_problem",
]

DEFAULT_TESTS = 10
"""Generated tests per problem (the paper's main setting)."""
ORACLE_CUT_AFTER = 3
"""The simulated model's oracle runs programs on every predefined input (HE-R+: ~760): after
3 timeouts a program's remaining inputs get at most 0.25 s each, as in model-driven runs."""


def _check(options: BenchOptions) -> None:
    """What verify asks of the command line beyond what every model-driven mode does."""
    if options.verify.file is None and options.verify.set is None:
        raise UsageError(
            "bench verify needs --verify-file PATH or --verify-set {" + ",".join(SETS) + "}"
        )
    if options.loop.ut_method not in (None, UTMethod.RANDOM, UTMethod.UTGEN, UTMethod.PROMPTED):
        raise UsageError("bench verify generates tests with --ut-method random, utgen or prompted")


# --- the simulated model's oracle -------------------------------------------------------------


class SimOracle:
    """Gold outputs and private verdicts of programs on the problems' predefined inputs."""

    def __init__(self, executor: Executor, limits: Limits) -> None:
        self.executor = executor
        self.limits = limits
        self._inputs: dict[str, tuple[tuple[Any, ...], ...]] = {}
        self._gold: dict[str, tuple[Any, ...]] = {}
        self._check: dict[str, CheckSpec] = {}
        self._entries: dict[str, str] = {}
        self._runs: dict[tuple[str, str], asyncio.Future[Verdicts]] = {}

    async def add(self, p: VerifierProblem) -> SimProblem:
        """Run the ground truth on the predefined inputs; keep the inputs it answers."""
        reason = p.sim_problem_reason()
        if reason is not None:
            raise ValueError(f"cannot simulate {p.task_id}: {reason}")
        assert p.ground_truth is not None
        res = await self.executor.batch(p.ground_truth, p.entry_point, p.tests.inputs, self.limits)
        kept = [
            (args, o.value)
            for args, o in zip(p.tests.inputs, res.outcomes, strict=True)
            if o.status is Status.OK
        ]
        if not kept:
            why = res.load_error or "it raised or timed out on every input"
            raise ValueError(
                f"cannot simulate {p.task_id}: the ground truth gives no output on the "
                f"predefined inputs ({why})"
            )
        self._inputs[p.task_id] = tuple(a for a, _ in kept)
        self._gold[p.task_id] = tuple(v for _, v in kept)
        self._check[p.task_id] = CheckSpec(atol=p.tests.atol, poly_root=p.tests.poly_root)
        self._entries[p.task_id] = p.entry_point
        return SimProblem(
            task_id=p.task_id,
            entry_point=p.entry_point,
            gold=p.ground_truth,
            given=p.ground_truth,
            inputs=self._inputs[p.task_id],
            expected=self._gold[p.task_id],
        )

    async def verdicts(self, task_id: str, code: str) -> Verdicts:
        key = (task_id, code)
        fut = self._runs.get(key)
        if fut is None:
            fut = asyncio.ensure_future(self._run(task_id, code))
            self._runs[key] = fut
        return await asyncio.shield(fut)

    async def _run(self, task_id: str, code: str) -> Verdicts:
        inputs, gold, check = self._inputs[task_id], self._gold[task_id], self._check[task_id]
        res = await self.executor.batch(code, self._entries[task_id], inputs, self.limits)
        out: list[tuple[bool, Any]] = []
        for o, g, args in zip(res.outcomes, gold, inputs, strict=True):
            ok = judge(o, g, check, Semantics.DATASET, args).verdict is Verdict.PASS
            out.append((ok, o.value if o.status is Status.OK else None))
        return out

    def matches(self, task_id: str, value: Any, gold: Any, args: tuple[Any, ...]) -> bool:
        try:
            return bool(outputs_match(value, gold, self._check[task_id], Semantics.DATASET, args))
        except Exception:
            return False


# --- one problem ------------------------------------------------------------------------------


def task_for(p: VerifierProblem) -> Task:
    """The engine's task: the prompt as the description (HumanEval stubs also as ``he_stub``);
    ``code`` is the ground truth (else the first candidate): under the ``random`` method it is
    never shown, only used to bind keyword arguments to positions."""
    code = p.ground_truth if p.ground_truth is not None else p.candidates[0].code
    return Task(
        task_id=p.task_id,
        description=p.prompt,
        signature=p.signature,
        entry_point=p.entry_point,
        code=code,
        he_stub=p.prompt if p.he_style else None,
    )


def _test_key(t: UnitTest) -> str:
    return answer_key(list(t.args)) + "\0" + answer_key(t.expected)


def tests_per_set(settings: Settings, n_tests: int, n_solutions: int) -> int:
    """Tests asked of each generation: n for ``random``; ⌈n / #solutions⌉ per candidate."""
    if settings.ut_method is UTMethod.RANDOM:
        return n_tests
    return math.ceil(n_tests / n_solutions)


async def verify_problem(
    p: VerifierProblem,
    model: Model,
    settings: Settings,
    executor: Executor,
    n_tests: int,
    *,
    ut_model: Model | None = None,
) -> dict[str, Any]:
    """Generate tests, run them on every candidate, score; the body of the problem's record."""
    task = task_for(p)
    per = tests_per_set(settings, n_tests, len(p.candidates))
    session = Session(task, model, executor, replace(settings, n=per), ut_model=ut_model)
    targets = (
        [task.code] if settings.ut_method is UTMethod.RANDOM else [c.code for c in p.candidates]
    )
    t0 = time.perf_counter()
    tests: list[UnitTest] = []
    seen: set[str] = set()
    for round_no, code in enumerate(targets):
        for t in await session.generate_tests(code, round_no):
            key = _test_key(t)
            if key not in seen:
                seen.add(key)
                tests.append(t)
    runs = await asyncio.gather(
        *(
            executor.run_tests(task, c.code, tests, settings.variant, settings.limits)
            for c in p.candidates
        )
    )
    passed = [r.passed for r in runs]
    predicted = [k / len(tests) if tests else 0.0 for k in passed]
    scores = score_problem(p.expected, predicted)
    return {
        "n_solutions": len(p.candidates),
        "expected": list(p.expected),
        "predicted": predicted,
        "passed": passed,
        "n_tests": len(tests),
        "tests_per_set": per,
        "ranks": [c.rank for c in p.candidates],
        "verdicts": ["".join(j.verdict.letter for j in r.results) for r in runs],
        "load_errors": [r.load_error for r in runs],
        "tests": [t.to_json() for t in tests],
        "metrics": scores.to_json(),
        "usage": session.usage_json(),
        "seconds": round(time.perf_counter() - t0, 3),
        "events": [event_to_json(ev) for ev in session.events],
    }


# --- summary ----------------------------------------------------------------------------------


def _problem_scores(rec: dict[str, Any]) -> ProblemScores:
    return score_problem(rec["expected"], rec["predicted"])


def summarize_verify(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The run's numbers from its records alone (metrics recomputed from the scores, in file
    order, so that sums do not depend on the order in which problems finished)."""
    records = sorted(records, key=lambda r: (int(r.get("line", 0)), str(r.get("task_id"))))
    head = summary_head(records)
    ok = [r for r in records if r.get("error_kind") is None]
    agg = aggregate(_problem_scores(r) for r in ok)
    tests = sum(int(r["n_tests"]) for r in ok)
    return head | {
        "metrics": agg.to_json(),
        "tests": tests,
        "tests_per_problem": tests / len(ok) if ok else 0.0,
        "problems_without_tests": sum(1 for r in ok if not r["n_tests"]),
    }


# --- a whole file -----------------------------------------------------------------------------


VerifyRun = RunResult
"""What a verify run did (records written, skipped, summary, wall time)."""


async def verify_set(
    ctx: RunContext,
    vs: VerifierSet,
    problems: Sequence[VerifierProblem],
    *,
    n_tests: int,
    executor: Executor,
    oracle_limits: Limits | None = None,
    include_errors: bool = True,
) -> VerifyRun:
    """Score every problem not yet recorded; rewrite the summary from the samples file."""
    t0 = time.perf_counter()
    run = VerifyRun(ctx.out_dir)
    model, settings, sim_params = ctx.model, ctx.settings, ctx.sim_params
    oracle: SimOracle | None = None
    if sim_params is not None:
        oracle = SimOracle(executor, oracle_limits or settings.limits)
        model = build_chosen(SIMULATED_MODEL, oracle=oracle, sim_params=sim_params)
    if model is None:
        raise ValueError("verify_set needs a model or simulation parameters")
    simulated = bool(getattr(model, "simulated", False)) or sim_params is not None
    base_settings = settings.to_json()

    where = {"bench": "verify", "set": vs.name, "file": vs.file_name, "sha256": vs.sha256}

    def key_of(task_id: str, what: str) -> str:
        return record_key(
            {
                **where,
                "task_id": task_id,
                "what": what,
                "tests": n_tests,
                "settings": base_settings,
                **ctx.key_extra,
            }
        )

    def base(task_id: str, key: str, line: int) -> dict[str, Any]:
        return {
            "key": key,
            **where,
            "task_id": task_id,
            "line": line,
            **model_fields(model.name, simulated),
            "settings": base_settings,
            "verify_tests": n_tests,
        }

    async def work(p: VerifierProblem) -> dict[str, Any]:
        if oracle is not None:
            assert isinstance(model, SimModel)
            model.register(await oracle.add(p))
        return await verify_problem(p, model, settings, executor, n_tests, ut_model=ctx.ut_model)

    dataset_errors = []
    for err in vs.errors if include_errors else []:
        task_id = err.task_id or f"line {err.line}"
        key = key_of(task_id, f"row error at line {err.line}")
        dataset_errors.append((base(task_id, key, err.line), str(err)))
    jobs = [
        Job(
            base(p.task_id, key_of(p.task_id, json.dumps([c.code for c in p.candidates])), p.line),
            partial(work, p),
        )
        for p in problems
    ]
    await run_folder(
        run,
        dataset_errors=dataset_errors,
        jobs=jobs,
        summarize=summarize_verify,
        extra=_summary_extra(vs, model.name, base_settings, n_tests),
        loop=JobLoop(ctx.concurrency, ctx.on_record, ctx.stop),
        started=t0,
        sim=sim_params,
    )
    return run


def _summary_extra(
    vs: VerifierSet, model: str, settings: dict[str, Any], n_tests: int
) -> dict[str, Any]:
    """What a verify summary says beyond the numbers: the set, its file, the model, settings."""
    return {
        "bench": "verify",
        "set": vs.name,
        "file": str(vs.path),
        "sha256": vs.sha256,
        "url": vs.url,
        "model": model,
        "settings": settings,
        "verify_tests": n_tests,
        "estimated_score": "fraction of the generated tests passed; a test that raises, "
        "times out or crashes counts as failed",
    }


# --- the command ------------------------------------------------------------------------------


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", text).strip("_")[:60] or "model"


def _out_dir(options: BenchOptions, vs: VerifierSet, settings: Settings, n: int) -> Path:
    if options.run.out is not None:
        return Path(options.run.out)
    stem = vs.path.name.removesuffix(".jsonl")
    name = (
        f"{_slug(stem)}-{_slug(options.model)}-{settings.ut_method.value}-"
        f"{settings.variant.value}-n{n}-k{settings.k}"
    )
    return Path("runs") / "verify" / name


def _select(
    vs: VerifierSet, spec: str | None, limit: int | None
) -> tuple[list[VerifierProblem], list[str]]:
    problems = list(vs.problems)
    unknown: list[str] = []
    if spec:
        wanted = [s.strip() for s in spec.split(",") if s.strip()]
        chosen: list[VerifierProblem] = []
        for w in wanted:
            hits = [
                p
                for p in problems
                if p.task_id == w or (w.isdigit() and p.task_id.rpartition("/")[2] == w)
            ]
            if not hits:
                unknown.append(w)
            chosen += [p for p in hits if p not in chosen]
        order = {id(p): i for i, p in enumerate(problems)}
        problems = sorted(chosen, key=lambda p: order[id(p)])
    if limit is not None:
        problems = problems[:limit]
    return problems, unknown


def _load(options: BenchOptions) -> VerifierSet:
    verify = options.verify
    if verify.file is not None:
        return load_verifier_file(verify.file, verify.set)
    assert verify.set is not None  # _check refuses neither
    data = options.data
    return load_verifier_set(verify.set, data_dir=data.data_dir, cache_dir=data.cache())


def _usable(options: BenchOptions, vs: VerifierSet) -> tuple[list[VerifierProblem], str | None]:
    """The problems of ``--problems``/``--limit``, or why the run cannot start (an unknown
    problem; ``--model sim`` on problems it cannot simulate)."""
    problems, unknown = _select(vs, options.data.problems, options.data.limit)
    if unknown:
        return problems, f"unknown problem(s) in {vs.file_name}: {', '.join(unknown)}"
    if options.simulated and not any(p.sim_problem_reason() is None for p in problems):
        first = problems[0].sim_problem_reason() if problems else "no problems selected"
        return problems, (
            f"--model sim cannot run on {vs.file_name}: the simulated model needs each "
            "problem's ground-truth solution and predefined test inputs, and no selected "
            f"problem has both ({first}). Use a real model, or a file with "
            "`canonical_solution` and `base_input`/`test_list`."
        )
    return problems, None


def _oracle_limits(options: BenchOptions) -> Limits:
    """The limits of the simulated model's oracle runs (the ground truth on each input)."""
    lim = options.limits
    return Limits(
        per_input=lim.timeout,
        load=5.0,
        memory_mb=min(lim.memory_mb, 1024),
        batch=120.0,
        cut_after=ORACLE_CUT_AFTER,
        cut_limit=lim.cut_limit,
        kind=LimitKind(lim.kind),
    )


@dataclass(frozen=True, slots=True)
class _Plan:
    """A verify run, ready to start: the set and its problems, the models, the settings."""

    vs: VerifierSet
    problems: list[VerifierProblem]
    model: Model | None
    ut_model: Model | None
    settings: Settings
    n_tests: int
    params: SimParams | None


def run(ctx: ModeContext) -> int:
    """``utdebug bench verify``: exit 0 on success, 1 model failure, 2 usage/data, 3 sandbox,
    130 interrupted."""
    options, cfg, stop = ctx.options, ctx.sandbox, ctx.stop
    from utdebug.agents.config import ConfigError
    from utdebug.benchmarks.model_bench import build_models, engine_settings, sim_params

    _check(options)
    err = console(stderr=True)
    say = partial(error_line, err, "utdebug bench:")
    try:
        vs = _load(options)
    except (VerifierDataError, ValueError) as e:
        say(e)
        return Exit.USAGE
    problems, problem = _usable(options, vs)
    if problem is not None:
        say(problem)
        return Exit.USAGE
    try:
        meter = Meter(cost_limit=options.loop.cost_limit)
        model, ut_model = build_models(options, meter, options.data.cache())
    except (ConfigError, OSError, ValueError) as e:
        say(e)
        return Exit.USAGE
    tests = options.loop.tests
    n = DEFAULT_TESTS if tests is None else int(tests)
    method = UTMethod(options.loop.ut_method or UTMethod.RANDOM.value)
    try:
        settings = engine_settings(options, n=n, rounds=0, candidates=1, ut_method=method)
    except ValueError as e:
        say(e)
        return Exit.USAGE
    params = sim_params(options, method.value) if options.simulated else None
    plan = _Plan(vs, problems, model, ut_model, settings, n, params)
    return run_mode(err, "utdebug bench", _verify(options, cfg, stop, plan, err))


async def _verify(
    options: BenchOptions,
    cfg: SandboxConfig,
    stop: threading.Event,
    plan: _Plan,
    err: Console,
) -> int:
    """The models probed, the set scored in this machine's sandbox, the table; the exit code."""
    try:
        await preflight_models((plan.model, plan.ut_model), lambda s: note_line(err, s))
    except ModelError as e:
        error_line(err, "utdebug bench: the model cannot be used:", e)
        return Exit.MODEL
    with open_sandbox(cfg, err) as sb:
        executor = Executor(sb, workers=local_workers(options.run))
        try:
            run = await _verify_set(options, stop, plan, executor, err)
        except FatalRunError as e:
            error_line(
                err,
                "utdebug bench: the model cannot be used:",
                f"{one_line(e)} (finished problems are kept; fix the cause and rerun the "
                "same command)",
            )
            return Exit.MODEL
        finally:
            executor.close()
    errors = run.summary["model_errors"]
    if options.run.json or run.summary["evaluated"] or not errors["count"]:
        out = console()
        print_verify(out, plan.vs, run, as_json=options.run.json)
    if stop.is_set():
        err.print("stopped early; rerun the same command to resume")
        return Exit.INTERRUPTED
    if errors["count"]:
        line = model_error_line(errors, run.summary["problems"], "problems")
        error_line(err, "utdebug bench:", line)
        return Exit.MODEL
    return Exit.OK


async def _verify_set(
    options: BenchOptions,
    stop: threading.Event,
    plan: _Plan,
    executor: Executor,
    err: Console,
) -> VerifyRun:
    """:func:`verify_set` on the plan's problems, with a progress bar on ``err``."""
    from utdebug.benchmarks.bench import recorded_progress
    from utdebug.benchmarks.model_bench import key_extra, progress_label

    vs, settings = plan.vs, plan.settings
    include_errors = not options.data.problems and options.data.limit is None
    label = progress_label(
        f"[bold]verify[/bold] {vs.file_name} {settings.ut_method.value}", plan.params
    )
    total = len(plan.problems) + (len(vs.errors) if include_errors else 0)
    with recorded_progress(
        label, err, total, lambda rec: f"top-1 {rec['metrics']['top1']:.2f}"
    ) as on_record:
        ctx = RunContext(
            model=plan.model,
            settings=settings,
            out_dir=_out_dir(options, vs, settings, plan.n_tests),
            key_extra=key_extra(options, plan.params),
            concurrency=options.loop.problems_at_once,
            sim_params=plan.params,
            on_record=on_record,
            ut_model=plan.ut_model,
            stop=stop,
        )
        return await verify_set(
            ctx,
            vs,
            plan.problems,
            n_tests=plan.n_tests,
            executor=executor,
            oracle_limits=_oracle_limits(options),
            include_errors=include_errors,
        )
