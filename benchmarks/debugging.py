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

With ``--synth-inputs N`` (``RunContext.synth_inputs``) each problem's session also gets up to N
synthesised candidate inputs (:func:`utdebug.synth.candidate_inputs`, seeded with the problem's
base inputs only, never its private tests); the record's ``synth_inputs`` says how many by
source, each kept test's score its ``input_source`` when it is synthesised, and the summary's
``input_sources`` the intrinsic metrics per source. The simulated model is given the gold
outputs on those inputs to vote with (:meth:`utdebug.agents.sim.SimModel.register_outputs`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from utdebug.agents.base import Model
from utdebug.agents.choice import SIMULATED_MODEL, build_chosen
from utdebug.agents.sim import SimModel, SimParams
from utdebug.benchmarks.context import RunContext
from utdebug.data.datasets import ClassFixProblem, LoadedSplit, Problem, ProblemError
from utdebug.data.private_tests import (
    EvalSettings,
    ExpectedUnavailable,
    PrivateTestRunner,
    matches_gold,
    register_sim,
    task_from_problem,
)
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
from utdebug.engine.model import CandidateInput, code_id
from utdebug.runs.folder import (
    FatalRunError,
    Job,
    JobLoop,
    RunResult,
    SessionModelError,
    model_fields,
    run_folder,
    summary_head,
)
from utdebug.runs.records import (
    record_key,
    task_order,
)
from utdebug.sandbox.compare import Semantics
from utdebug.sandbox.config import Limits
from utdebug.sandbox.outcomes import SandboxError, Status
from utdebug.sandbox.verdicts import Verdict, judge
from utdebug.synth import seeds_from_problem
from utdebug.synth.candidates import screen, synthesise_for

P = TypeVar("P", Problem, ClassFixProblem)
"""A problem of either kind a debugging run takes (:func:`debug_jobs`)."""

# --- intrinsic metrics of the kept tests ------------------------------------------------------


async def score_tests(
    executor: Executor,
    problem: Problem,
    tests: Sequence[UnitTest],
    codes: dict[str, str],
    limits: Limits,
    private: PrivateTestRunner | None = None,
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
    private: PrivateTestRunner, problem: Problem, t: UnitTest, codes: dict[str, str]
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


DebugRun = RunResult
"""What a debugging run did (records written, skipped, summary, wall time)."""


@dataclass(frozen=True, slots=True)
class SessionSetup:
    """What every debugging session of a run shares: the model (or the simulated one), the
    engine's settings, the executor, and the model that writes the tests when another."""

    model: Model
    settings: Settings
    executor: Executor
    ut_model: Model | None = None

    def session(self, task: Task, candidate_inputs: Sequence[CandidateInput] = ()) -> Session:
        """A session on ``task`` (``candidate_inputs``: synthesised inputs for its test sets)."""
        return Session(
            task,
            self.model,
            self.executor,
            self.settings,
            ut_model=self.ut_model,
            candidate_inputs=candidate_inputs,
        )


async def debug_session(
    setup: SessionSetup,
    task: Task,
    given: str,
    *,
    judge_round: Callable[[str], Awaitable[dict[str, Any]]],
    score: Callable[[list[UnitTest], dict[str, str]], Awaitable[list[dict[str, Any]]]],
    candidate_inputs: Sequence[CandidateInput] = (),
) -> dict[str, Any]:
    """One session of ``setup`` on ``task`` (whose given code is ``given``), then the record's
    body: the code in force after every round judged by ``judge_round(code)`` (round 0 is the
    given code), and the kept tests scored by ``score(tests, targets)`` (``targets``: each
    code a test may target, by its code id). ``candidate_inputs``: synthesised inputs for the
    session's test sets (``Session(candidate_inputs=...)``)."""
    settings = setup.settings
    session = setup.session(task, candidate_inputs)
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
    for t, sc in zip(kept, scores, strict=True):
        if t.input_source != "model":
            sc["input_source"] = t.input_source
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
    setup: SessionSetup,
    problem: Problem,
    private: PrivateTestRunner,
    *,
    candidate_inputs: Sequence[CandidateInput] = (),
) -> dict[str, Any]:
    async def judge_round(code: str) -> dict[str, Any]:
        pr = await private.evaluate(problem.task_id, code)
        return {
            "pass_fraction": round(pr.pass_fraction, 6),
            "all_pass": pr.all_pass,
            "timeouts": pr.timeouts,
        }

    async def score(kept: list[UnitTest], targets: dict[str, str]) -> list[dict[str, Any]]:
        limits = setup.settings.limits
        return await score_tests(setup.executor, problem, kept, targets, limits, private)

    return await debug_session(
        setup,
        task_from_problem(problem),
        problem.code,
        judge_round=judge_round,
        score=score,
        candidate_inputs=candidate_inputs,
    )


# --- synthesised candidate inputs -------------------------------------------------------------


async def synth_candidates(
    executor: Executor, problem: Problem, count: int, seed: int = 0
) -> tuple[list[CandidateInput], dict[str, Any]]:
    """Up to ``count`` candidate inputs for ``problem``'s given code, and what the record
    says of them (how many, by source, dropped)."""
    # synthesis in this thread (its ast work next to the loop's: CPython gh-106905), the
    # sandbox run in a worker thread
    code, entry = problem.code, problem.entry_point
    syn = synthesise_for(code, entry, seeds_from_problem(problem).inputs, count=count, seed=seed)
    made = await asyncio.to_thread(screen, executor.sandbox, code, entry, syn)
    by_source: dict[str, int] = {}
    for _, source in made.inputs:
        by_source[source] = by_source.get(source, 0) + 1
    about = {"count": len(made.inputs), "by_source": by_source, "dropped": made.dropped}
    return made.inputs, about


async def tell_sim(
    sim: SimModel, executor: Executor, problem: Problem, inputs: Sequence[CandidateInput]
) -> None:
    """The gold outputs on ``inputs`` for the simulated model's votes (it knows the gold
    outputs of the private inputs the same way)."""
    if not inputs:
        return
    args = [a for a, _ in inputs]
    res = await executor.batch(problem.gold, problem.entry_point, args, Limits(per_input=2.0))
    known = [(a, o.value) for a, o in zip(args, res.outcomes, strict=True) if o.status is Status.OK]
    unknown = [a for a, o in zip(args, res.outcomes, strict=True) if o.status is not Status.OK]
    sim.register_outputs(problem.task_id, known, unknown)


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
    sources = _by_source(tests) if any("synth_inputs" in r for r in ok) else {}
    return (
        head
        | sources
        | {
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
    )


def _by_source(tests: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """With synthesised inputs: the kept tests' intrinsic metrics per input source."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for t in tests:
        groups.setdefault(str(t.get("input_source", "model")), []).append(t)
    out = {}
    for source, ts in sorted(groups.items()):
        n = len(ts)
        out[source] = {
            "tests": n,
            "attack_rate": sum(t["attack"] for t in ts) / n,
            "output_accuracy": sum(t["correct"] for t in ts) / n,
            "accuracy_and_attack": sum(t["attack"] and t["correct"] for t in ts) / n,
        }
    return {"input_sources": out}


def _count(items: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for x in items:
        out[str(x)] = out.get(str(x), 0) + 1
    return out


def error_rows(
    ls: LoadedSplit, base: Callable[[str, ProblemError], dict[str, Any]]
) -> list[tuple[dict[str, Any], str]]:
    """A run's records of the rows of ``ls`` that could not become problems: (the record's
    fixed fields, ``base(task_id, row)``; what is wrong with the row)."""
    out = []
    for err in ls.errors:
        task_id = err.task_id or f"{ls.split.value}/row{err.row}"
        out.append((base(task_id, err), f"{err.file}, row {err.row}: {err.message}"))
    return out


async def debug_jobs(
    ctx: RunContext,
    ls: LoadedSplit,
    problems: Sequence[P],
    *,
    executor: Executor,
    eval_settings: EvalSettings,
    sim: Callable[[SimParams], Model],
    work: Callable[[SessionSetup, P], Awaitable[dict[str, Any]]],
    problem_errors: tuple[type[BaseException], ...],
    base_extra: dict[str, Any] | None = None,
) -> DebugRun:
    """A debugging run of ``problems`` (of ``ls``) in ``ctx.out_dir``, whatever their kind: the
    model is ``ctx.model``, or with ``ctx.sim_params`` the simulated model ``sim`` builds
    (labelled SIMULATED everywhere); ``work(setup, problem)`` is a problem's record body, its
    session's ``setup`` the model, ``ctx.settings``, ``executor`` and ``ctx.ut_model``.
    One record per dataset error of ``ls`` and one per problem not yet recorded, keyed by the
    split, the problem, its code, the datasets, the settings and ``ctx.key_extra``;
    ``base_extra`` goes in every record (before the settings) and ``ls.about`` in the summary,
    rewritten from the samples file."""
    started = time.perf_counter()
    split = ls.split
    run = DebugRun(ctx.out_dir)
    model = ctx.model if ctx.sim_params is None else sim(ctx.sim_params)
    if model is None:
        raise ValueError(f"debugging {split.value} needs a model or simulation parameters")
    settings = ctx.settings
    setup = SessionSetup(model, settings, executor, ctx.ut_model)
    simulated = bool(getattr(model, "simulated", False))
    dataset_sha = sorted(ls.sources.items())

    def key_of(task_id: str, code: str) -> str:
        return record_key(
            {
                "split": split.value,
                "task_id": task_id,
                "code": code,
                "sources": dataset_sha,
                "settings": settings.to_json(),
                "eval": eval_settings.key_parts(),
                **ctx.key_extra,
            }
        )

    def base(task_id: str, key: str) -> dict[str, Any]:
        return {
            "key": key,
            "split": split.value,
            "task_id": task_id,
            **model_fields(model.name, simulated),
            **(base_extra or {}),
            "settings": settings.to_json(),
        }

    dataset_errors = error_rows(ls, lambda t, err: base(t, key_of(t, f"row {err.row}")))
    extra: dict[str, Any] = {"model": model.name, "settings": settings.to_json(), **ls.about}
    await run_folder(
        run,
        dataset_errors=dataset_errors,
        jobs=[
            Job(base(p.task_id, key_of(p.task_id, p.code)), partial(work, setup, p))
            for p in problems
        ],
        summarize=lambda records: summarize_debug(records, settings.rounds),
        extra=extra,
        loop=JobLoop(ctx.concurrency, ctx.on_record, problem_errors=problem_errors),
        started=started,
        sim=ctx.sim_params,
    )
    return run


async def debug_split(
    ctx: RunContext, ls: LoadedSplit, *, executor: Executor, private: PrivateTestRunner
) -> DebugRun:
    """Debug every problem of ``ls`` not yet recorded (:func:`debug_jobs`), judged by
    ``private``'s tests; with ``ctx.sim_params`` the simulated model is built over them."""

    async def work(setup: SessionSetup, p: Problem) -> dict[str, Any]:
        model = setup.model
        await private.add(p)
        if isinstance(model, SimModel):
            register_sim(model, p, private)
        if not ctx.synth_inputs:
            return await debug_problem(setup, p, private)
        inputs, about = await synth_candidates(executor, p, ctx.synth_inputs)
        if isinstance(model, SimModel):
            await tell_sim(model, executor, p, inputs)
        rec = await debug_problem(setup, p, private, candidate_inputs=inputs)
        return {"synth_inputs": about, **rec}

    return await debug_jobs(
        ctx,
        ls,
        ls.problems,
        executor=executor,
        eval_settings=private.settings,
        sim=lambda params: build_chosen(SIMULATED_MODEL, oracle=private, sim_params=params),
        work=work,
        problem_errors=(ExpectedUnavailable, SandboxError),
    )


__all__ = [
    "DebugRun",
    "FatalRunError",
    "SessionSetup",
    "Variant",
    "debug_problem",
    "debug_split",
    "summarize_debug",
    "task_from_problem",
]
