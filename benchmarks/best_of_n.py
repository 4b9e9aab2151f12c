"""``utdebug bench judge``: best-of-N selection with generated tests (UTDebug paper Table 3).

Per problem (HumanEval+ by default, ``--split he+``):

1. the model writes ``N`` solutions from the task alone (``-N``, default 10; temperature 0.8);
   a reply without code is a solution that fails every test;
2. tests are generated against each distinct solution (``-n`` per solution, default 3, with
   the engine's self-consistency voting, ``-k``) and pooled, duplicates removed (same input
   and expected output) — the paper's protocol; identical solutions get identical prompts, so
   generating once per distinct program is what per-sample generation with a cache gives;
3. every solution runs on every pooled test in the sandbox: the passing matrix (rows = the
   ``N`` samples in sampling order, duplicates kept, as cluster sizes are evidence);
4. each solution is checked on the private tests (HumanEval+: ~775 per problem);
5. every strategy of :mod:`utdebug.ranking` selects from the matrix and scores the expected
   pass@1 of its selection (the fraction of correct solutions in it), under both tie rules.

``random`` is the pass@1 of one random sample (the fraction of correct samples);
``most_passed`` is the paper's rule (the first sample that passes the most generated tests);
``maxpass`` pools every sample with the most passes. "Discriminative" problems (B4 paper) are
those with some right and some wrong samples: only there can a strategy make a difference.
Runs with the simulated model are labelled SIMULATED everywhere.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from functools import partial
from typing import Any

from utdebug.agents.choice import SIMULATED_MODEL, build_chosen
from utdebug.agents.sim import SimModel
from utdebug.benchmarks.context import RunContext
from utdebug.benchmarks.debugging import SessionSetup, error_rows
from utdebug.data.datasets import LoadedSplit, Problem
from utdebug.data.private_tests import PrivateTestRunner, register_sim, task_from_problem
from utdebug.engine import Executor, UnitTest, code_id
from utdebug.ranking import Strategy, TieRule, rank_all
from utdebug.runs.folder import (
    Job,
    JobLoop,
    RunResult,
    model_fields,
    run_folder,
    summary_head,
)
from utdebug.runs.records import (
    record_key,
    task_order,
)
from utdebug.sandbox.verdicts import Verdict

STRATEGIES: tuple[Strategy, ...] = (
    Strategy.RANDOM,
    Strategy.MOST_PASSED,
    Strategy.MAXPASS,
    Strategy.MBR_EXEC,
    Strategy.CODET,
    Strategy.CODET_PAPER,
    Strategy.B4,
)
"""The strategies compared, in table order."""


SelectionRun = RunResult
"""What a judge run did (records written, skipped, summary, wall time)."""


def _test_key(t: UnitTest) -> str:
    return repr((t.args, t.expected))


async def select_problem(
    setup: SessionSetup,
    problem: Problem,
    private: PrivateTestRunner,
    *,
    n_solutions: int,
    rank_kw: dict[str, float],
) -> dict[str, Any]:
    """Sample, test, rank and score one problem with ``setup``'s model and settings; the body
    of its record."""
    settings, executor = setup.settings, setup.executor
    task = task_from_problem(problem)
    session = setup.session(task)
    t0 = time.perf_counter()
    replies = await session.sample_solutions(n_solutions)
    codes = [code if code is not None else "" for _, code in replies]
    distinct = list(dict.fromkeys(c for c in codes if c))
    # Private verdicts of each distinct program (the sim's oracle shares these results).
    results = await asyncio.gather(*(private.evaluate(task.task_id, c) for c in distinct))
    right = {c: r.all_pass for c, r in zip(distinct, results, strict=True)}
    correct = [bool(c) and right[c] for c in codes]
    # Tests against every distinct solution, pooled without duplicates.
    tests: list[UnitTest] = []
    seen: set[str] = set()
    for c in distinct:
        for t in await session.generate_tests(c):
            if (k := _test_key(t)) not in seen:
                seen.add(k)
                tests.append(t)
    rows: dict[str, list[int]] = {}
    if tests:
        runs = await asyncio.gather(
            *(
                executor.run_tests(task, c, tests, settings.variant, settings.limits)
                for c in distinct
            )
        )
        for c, run in zip(distinct, runs, strict=True):
            rows[c] = [int(j.verdict is Verdict.PASS) for j in run.results]
    matrix = [rows.get(c, [0] * len(tests)) for c in codes]
    strategies: dict[str, Any] = {}
    for tie in TieRule:
        ranked = rank_all(matrix, STRATEGIES, tie=tie, **rank_kw)
        for strategy, ranking in ranked.items():
            entry = strategies.setdefault(strategy.value, {})
            entry[tie.value] = {
                "pass_at_1": ranking.pass_at_1(correct),
                "selected": list(ranking.selected),
            }
            if tie is TieRule.FIRST:
                entry["top_score"] = ranking.groups[0].score if ranking.groups else None
    return {
        "solutions": [code_id(c) if c else None for c in codes],
        "programs": {code_id(c): c for c in distinct},
        "correct": correct,
        "n_correct": sum(correct),
        "tests": [t.to_json() for t in tests],
        "matrix": ["".join(map(str, row)) for row in matrix],
        "strategies": strategies,
        "usage": session.usage_json(),
        "seconds": round(time.perf_counter() - t0, 3),
    }


def summarize_selection(records: Sequence[dict[str, Any]], n_solutions: int) -> dict[str, Any]:
    """Mean expected pass@1 per strategy and tie rule, over all and discriminative problems."""
    records = sorted(records, key=lambda r: task_order(str(r["task_id"])))
    head = summary_head(records)
    ok = [r for r in records if r.get("error_kind") is None]
    disc = [r for r in ok if 0 < r["n_correct"] < len(r["correct"])]

    def mean(rs: Sequence[dict[str, Any]], s: str, tie: str) -> float:
        return sum(r["strategies"][s][tie]["pass_at_1"] for r in rs) / len(rs) if rs else 0.0

    table = {
        s.value: {
            "pass_at_1": mean(ok, s.value, "first"),
            "pass_at_1_pooled": mean(ok, s.value, "pool"),
            "discriminative_pass_at_1": mean(disc, s.value, "first"),
            "discriminative_pass_at_1_pooled": mean(disc, s.value, "pool"),
        }
        for s in STRATEGIES
    }
    return head | {
        "discriminative": len(disc),
        "solutions_per_problem": n_solutions,
        "tests_per_problem": sum(len(r["tests"]) for r in ok) / len(ok) if ok else 0.0,
        "problems_without_tests": sum(1 for r in ok if not r["tests"]),
        "strategies": table,
    }


async def select_split(
    ctx: RunContext,
    ls: LoadedSplit,
    *,
    executor: Executor,
    private: PrivateTestRunner,
    n_solutions: int,
    rank_kw: dict[str, float],
) -> SelectionRun:
    """Judge every problem not yet recorded; rewrite the summary from the samples file."""
    t0 = time.perf_counter()
    run = SelectionRun(ctx.out_dir)
    settings, key_extra = ctx.settings, ctx.key_extra
    model = ctx.model
    if ctx.sim_params is not None:
        model = build_chosen(SIMULATED_MODEL, oracle=private, sim_params=ctx.sim_params)
    if model is None:
        raise ValueError("select_split needs a model or simulation parameters")
    simulated = bool(getattr(model, "simulated", False))

    def key_of(p: Problem) -> str:
        return record_key(
            {
                "mode": "judge",
                "split": ls.split.value,
                "task_id": p.task_id,
                "prompt": p.prompt,
                "sources": sorted(ls.sources.items()),
                "settings": settings.to_json(),
                "solutions": n_solutions,
                "rank": rank_kw,
                "eval": private.settings.key_parts(),
                **key_extra,
            }
        )

    def base(task_id: str, key: str) -> dict[str, Any]:
        fixed = {"key": key, "split": ls.split.value, "task_id": task_id}
        return fixed | model_fields(model.name, simulated)

    setup = SessionSetup(model, settings, executor, ctx.ut_model)

    async def work(p: Problem) -> dict[str, Any]:
        await private.add(p)
        if isinstance(model, SimModel):
            register_sim(model, p, private)
        return await select_problem(setup, p, private, n_solutions=n_solutions, rank_kw=rank_kw)

    dataset_errors = error_rows(
        ls, lambda t, err: base(t, record_key({"mode": "judge", "error_row": err.row, **key_extra}))
    )
    jobs = [Job(base(p.task_id, key_of(p)), partial(work, p)) for p in ls.problems]
    extra: dict[str, Any] = {
        "model": model.name,
        "settings": settings.to_json(),
        "ranking": rank_kw,
    }
    await run_folder(
        run,
        dataset_errors=dataset_errors,
        jobs=jobs,
        summarize=lambda records: summarize_selection(records, n_solutions),
        extra=extra,
        loop=JobLoop(ctx.concurrency, ctx.on_record),
        started=t0,
        sim=ctx.sim_params,
    )
    return run


__all__ = ["STRATEGIES", "SelectionRun", "select_problem", "select_split"]
