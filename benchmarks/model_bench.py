"""``utdebug bench --model M ...``: model-driven benchmark runs with rich output.

Modes (the positional argument of ``utdebug bench``):

Each mode has its run function here (:data:`utdebug.benchmarks.modes.MODES` names it); they
share one driver that loads the splits, builds and probes the models and starts the sandbox,
then runs the mode on each split:

- ``eval`` (default): the UTDebug loop on every problem; pass@1 and mean pass rate after each
  round, the intrinsic metrics of the tests the loop kept, calls, tokens, cost, wall time.
- ``intrinsic``: the paper's Table 1 protocol (no voting, no debugging; see
  :mod:`utdebug.benchmarks.intrinsic`).
- ``ablation``: the paper's Table 8 design: the full loop, without output voting and without
  backtracking, for the ``random`` and ``utgen`` test generators.
- ``voting``: output accuracy of the kept tests with and without voting over a grid of
  per-vote accuracies (``--model sim`` only: the per-vote accuracy is a parameter there).
- ``judge``: best-of-N selection with generated tests (:mod:`utdebug.benchmarks.best_of_n`).

Every table of a run with the simulated model is titled SIMULATED.

Before any problem starts, every model of the run (``--model``, ``--ut-model``) is probed with
one tiny call (:func:`utdebug.agents.preflight.preflight`): a model that cannot answer stops the
command with one line and exit 1, before the sandbox starts and before anything is written.
Sessions that a model error ended later are recorded as model errors, left out of the numbers,
reported apart, and retried by a rerun; the command then exits 1 with one line saying how many
and why.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rich.console import Console

from utdebug.agents.base import Meter, Model, ModelError
from utdebug.agents.sim import SIMULATED, SimParams
from utdebug.benchmarks.bench import (
    error_line,
    load_selected,
    local_workers,
    note_line,
    open_sandbox,
    recorded_progress,
    run_mode,
)
from utdebug.benchmarks.bench import (
    eval_settings as bench_eval_settings,
)
from utdebug.benchmarks.context import RunContext
from utdebug.benchmarks.debugging import DebugRun, FatalRunError, debug_split
from utdebug.benchmarks.modes import ModeContext
from utdebug.benchmarks.options import BenchOptions
from utdebug.benchmarks.report import (
    outcome_words,
    print_ablation,
    print_debug,
    print_intrinsic,
    print_selection,
    print_voting,
)
from utdebug.cli_common import Exit, console
from utdebug.data import splits
from utdebug.data.datasets import LoadedSplit, Split
from utdebug.data.private_tests import EvalSettings, ExpectedCache, PrivateTestRunner, VerdictCache
from utdebug.data.splits import ProblemKind
from utdebug.engine import Executor, Settings, UTMethod, Variant
from utdebug.runs.folder import (
    merge_model_errors,
    model_error_line,
    one_line,
    preflight_models,
)
from utdebug.sandbox import (
    LimitKind,
    Limits,
)

DEFAULT_CUT_AFTER = 3
"""Model-driven runs evaluate every round's code: after 3 timeouts of one program, its
remaining private inputs get at most --cut-limit seconds each (see docs/engine.md)."""


def engine_settings(options: BenchOptions, **over: Any) -> Settings:
    """The engine's settings of the loop, ranking and limit options (``over``: the mode's
    own)."""
    loop, rank, lim = options.loop, options.ranking, options.limits
    base = Settings(
        n=3 if loop.tests is None else loop.tests,
        k=loop.votes,
        threshold=loop.threshold,
        rounds=loop.rounds,
        variant=Variant(loop.variant),
        ut_method=UTMethod(loop.ut_method or "utgen"),
        backtrack=loop.backtrack,
        candidates=rank.candidates,
        ranker=rank.ranker,
        tie=rank.tie,
        beta0=rank.beta0,
        alpha_xy=rank.alpha_xy,
        limits=Limits(
            per_input=lim.timeout,
            memory_mb=min(lim.memory_mb, 1024),
            batch=30.0,
            kind=LimitKind(lim.kind),
        ),
    )
    return replace(base, **over)


def sim_params(options: BenchOptions, method: str | None = None, **over: Any) -> SimParams:
    sim = options.sim
    p = SimParams.for_method(
        method or options.loop.ut_method or "utgen",
        attack=sim.attack,
        out_acc=sim.out_acc,
        fix=sim.fix,
        regress=sim.regress,
        seed=sim.seed,
    )
    return replace(p, **over)


def build_model(
    spec_value: str, options: BenchOptions, meter: Meter, cache_dir: Path
) -> Model | None:
    """The model named by ``--model`` (``None`` for the simulated model, which each run builds
    over its own private tests)."""
    from utdebug.agents.choice import build_chosen, choice_of
    from utdebug.agents.config import resolve_model_spec

    choice = choice_of(resolve_model_spec(spec_value))
    if choice.simulated:
        return None
    cache = cache_dir if options.loop.use_cache else None
    return build_chosen(choice, meter=meter, cache_dir=cache)


def build_models(
    options: BenchOptions, meter: Meter, cache_dir: Path
) -> tuple[Model | None, Model | None]:
    """``--model`` and ``--ut-model`` (``None``: sim, or no separate test generator)."""
    model = build_model(options.model, options, meter, cache_dir)
    ut = options.loop.ut_model
    ut_model = build_model(ut, options, meter, cache_dir) if ut else None
    return model, ut_model


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:60] or "model"


def out_root(options: BenchOptions, split: Split) -> Path:
    """``--out DIR`` is the run folder of the split; with several ``--split``, each split gets
    ``DIR/<split>/`` (the same layout as plain evaluation)."""
    out = options.run.out
    assert out is not None
    return Path(out) / split.value if options.data.several else Path(out)


def out_dir_for(options: BenchOptions, split: Split, settings: Settings, tag: str = "") -> Path:
    """The run folder of one configuration: ``--out DIR`` (``DIR/<config>/`` for the several
    configurations of ablation and voting), else ``runs/debug/<settings>``."""
    if options.run.out is not None:
        root = out_root(options, split)
        return root / tag if tag else root
    he = f"-{options.data.he_variant}" if split is Split.HE else ""
    synth = options.loop.synth_inputs
    name = (
        f"{split.value}{he}-{_slug(options.model)}-{settings.ut_method.value}-"
        f"{settings.variant.value}-r{settings.rounds}-n{settings.n}-k{settings.k}"
        f"{'' if settings.backtrack else '-nobt'}"
        f"{_ranking_tag(settings)}"
        f"{f'-s{synth}' if synth else ''}"
    )
    return Path("runs") / "debug" / (f"{name}-{tag}" if tag else name)


def _ranking_tag(settings: Settings) -> str:
    if settings.candidates == 1:
        return ""
    tag = f"-c{settings.candidates}-{settings.ranker}-{settings.tie}"
    for name, v in (("b", settings.beta0), ("a", settings.alpha_xy)):
        if v is not None:
            tag += f"-{name}{v:g}"
    return tag


# --- the modes ------------------------------------------------------------------------------


def run_eval(ctx: ModeContext) -> int:
    """``utdebug bench --model M``: the UTDebug loop on every problem; its table."""
    return _run(ctx, _eval_split)


def run_intrinsic(ctx: ModeContext) -> int:
    """``utdebug bench intrinsic --model M``: the paper's Table 1 protocol."""
    return _run(ctx, _intrinsic_split)


def run_ablation(ctx: ModeContext) -> int:
    """``utdebug bench ablation --model M``: the full loop, without voting and without
    backtracking, for the random and utgen test generators."""
    return _run(ctx, _ablation_split)


def run_voting(ctx: ModeContext) -> int:
    """``utdebug bench voting --model sim``: output accuracy with and without voting."""
    return _run(ctx, _voting_split)


def run_judge(ctx: ModeContext) -> int:
    """``utdebug bench judge --model M``: best-of-N selection with generated tests."""
    return _run(ctx, _judge_split)


@dataclass(slots=True)
class _Bench:
    """What every split of one ``utdebug bench --model`` run shares."""

    options: BenchOptions
    model: Model | None
    ut_model: Model | None
    executor: Executor
    eval_settings: EvalSettings
    expected_cache: ExpectedCache
    cache_dir: Path
    out: Console
    err: Console
    failed: list[tuple[dict[str, Any], int, str]] = field(default_factory=list)
    """Per run: its model errors, its problems, and what they are (sessions, problems)."""

    def private_tests(self) -> PrivateTestRunner:
        """A split's private-test runner (its results shared by all the split's runs)."""
        use = self.options.loop.use_cache
        folder = self.cache_dir / "private-verdicts" if use else None
        return PrivateTestRunner(
            self.executor, self.eval_settings, self.expected_cache, VerdictCache(folder)
        )


SplitRun = Callable[[_Bench, LoadedSplit], Awaitable[None]]
"""A mode's work on one split: its run (or runs), its table, its model errors noted."""


def _run(ctx: ModeContext, per_split: SplitRun) -> int:
    """The driver every model-driven mode shares: the splits, the models (probed before
    anything starts), the sandbox, then ``per_split`` on each split; the exit code."""
    options, cfg, stop = ctx.options, ctx.sandbox, ctx.stop
    err = console(stderr=True)
    out = console()
    cache_dir = options.data.cache()
    lim = options.limits
    eval_settings = bench_eval_settings(
        options,
        cut_after=DEFAULT_CUT_AFTER if lim.cut_after is None else (lim.cut_after or None),
        cut_limit=lim.cut_limit,
    )
    loaded, failed = load_selected(options, err, cfg, eval_settings.limits)
    if failed:
        return Exit.USAGE
    meter = Meter(cost_limit=options.loop.cost_limit)
    from utdebug.agents.config import ConfigError

    try:
        model, ut_model = build_models(options, meter, cache_dir)
    except (ConfigError, OSError, ValueError) as e:
        error_line(err, "utdebug bench:", e)
        return Exit.USAGE

    async def run_all() -> int:
        try:
            await preflight_models((model, ut_model), lambda s: note_line(err, s))
        except ModelError as e:
            error_line(err, "utdebug bench: the model cannot be used:", e)
            return Exit.MODEL
        with open_sandbox(cfg, err) as sb:
            bench = _Bench(
                options,
                model,
                ut_model,
                Executor(sb, workers=local_workers(options.run)),
                eval_settings,
                ExpectedCache(cache_dir / "he-expected"),
                cache_dir,
                out,
                err,
            )
            return await _main(bench, loaded, stop, per_split)

    return run_mode(err, "utdebug bench", run_all())


async def _main(
    bench: _Bench, loaded: list[LoadedSplit], stop: threading.Event, per_split: SplitRun
) -> int:
    err = bench.err
    try:
        for ls in loaded:
            await per_split(bench, ls)
    except (FatalRunError, ModelError) as e:
        error_line(
            err,
            "utdebug bench: the model cannot be used:",
            f"{one_line(e)} (finished problems are kept; fix the cause and rerun the same command)",
        )
        return Exit.MODEL
    finally:
        bench.executor.close()
    if stop.is_set():
        return Exit.INTERRUPTED
    failed = bench.failed
    errors = merge_model_errors(m for m, _, _ in failed)
    if errors["count"]:
        total = sum(n for _, n, _ in failed)
        what = failed[0][2]
        error_line(err, "utdebug bench:", model_error_line(errors, total, what))
        return Exit.MODEL
    return Exit.OK


Config = tuple[str, Settings, SimParams | None]
"""One debugging run of a split: its tag (its folder under ``--out``), settings, simulation."""


async def _eval_split(bench: _Bench, ls: LoadedSplit) -> None:
    o = bench.options
    config = ("", engine_settings(o), sim_params(o) if o.simulated else None)
    ((_, run),) = await _debug_runs(bench, ls, [config])
    print_debug(bench.out, ls.split, run, as_json=o.run.json)


async def _ablation_split(bench: _Bench, ls: LoadedSplit) -> None:
    o = bench.options
    configs: list[Config] = []
    for method in ("random", "utgen"):
        base = engine_settings(o, ut_method=UTMethod(method))
        p = sim_params(o, method) if o.simulated else None
        configs += [
            (f"{method}-full", base, p),
            (f"{method}-no-voting", replace(base, k=0), p),
            (f"{method}-no-backtracking", replace(base, backtrack=False), p),
        ]
    runs = await _debug_runs(bench, ls, configs)
    print_ablation(bench.out, ls.split, runs, as_json=o.run.json)


async def _voting_split(bench: _Bench, ls: LoadedSplit) -> None:
    o = bench.options
    configs: list[Config] = []
    for acc in o.voting.grid:
        base = engine_settings(o, rounds=0)
        p = sim_params(o, out_acc=acc)
        configs += [(f"acc{acc:g}-k{base.k}", base, p), (f"acc{acc:g}-k0", replace(base, k=0), p)]
    runs = await _debug_runs(bench, ls, configs)
    print_voting(bench.out, ls.split, runs, as_json=o.run.json)


async def _debug_runs(
    bench: _Bench, ls: LoadedSplit, configs: list[Config]
) -> list[tuple[str, DebugRun]]:
    """One debugging run of the split per configuration, in turn (the private tests' results
    shared); each run's model errors noted."""
    private = bench.private_tests()
    runs: list[tuple[str, DebugRun]] = []
    for tag, settings, params in configs:
        run = await _debug_one(bench, ls, tag, settings, params, private)
        runs.append((tag, run))
        bench.failed.append((run.summary["model_errors"], run.summary["problems"], "sessions"))
    return runs


async def _intrinsic_split(bench: _Bench, ls: LoadedSplit) -> None:
    from utdebug.benchmarks import intrinsic

    o, model, out = bench.options, bench.model, bench.out
    sim = sim_params(o) if model is None else None
    if splits.spec(ls.split).kind is ProblemKind.METHOD:
        from utdebug.benchmarks.classeval_debug import run_class_intrinsic

        res = await run_class_intrinsic(
            problems=ls.classes,
            model=model,
            options=o,
            executor=bench.executor,
            eval_settings=bench.eval_settings,
            sim=sim,
        )
        licence = ls.about.get("data_licence")
        print_intrinsic(out, ls.split, res, as_json=o.run.json, licence=licence)
        bench.failed.append((res.model_errors_summary(), len(ls.classes), "problems"))
        return
    res = await intrinsic.run_intrinsic(
        ls=ls,
        model=model,
        options=o,
        private=bench.private_tests(),
        executor=bench.executor,
        sim=sim,
        err=bench.err,
    )
    print_intrinsic(out, ls.split, res, as_json=o.run.json)
    bench.failed.append((res.model_errors_summary(), len(ls.problems), "problems"))


def key_extra(options: BenchOptions, params: SimParams | None) -> dict[str, Any]:
    """What tells a run's records apart beyond its settings: the models, the simulation."""
    key_extra: dict[str, Any] = {"model": options.model, "ut_model": options.loop.ut_model}
    if params is not None:
        key_extra["sim"] = params.to_json()
    if options.loop.synth_inputs:
        key_extra["synth_inputs"] = options.loop.synth_inputs
    return key_extra


def progress_label(text: str, params: SimParams | None) -> str:
    """A progress bar's label, marked SIMULATED when the simulated model plays."""
    return text + (f" [yellow]{SIMULATED}[/yellow]" if params is not None else "")


async def _judge_split(bench: _Bench, ls: LoadedSplit) -> None:
    from utdebug.benchmarks.best_of_n import select_split

    o = bench.options
    n_solutions = o.judge.solutions
    settings = engine_settings(o, rounds=0)
    params = sim_params(o) if o.simulated else None
    if o.run.out is not None:
        out_dir = out_root(o, ls.split)
    else:
        name = (
            f"{ls.split.value}-{_slug(o.model)}-{settings.ut_method.value}-"
            f"N{n_solutions}-n{settings.n}-k{settings.k}"
        )
        out_dir = Path("runs") / "judge" / name
    total = len(ls.problems) + len(ls.errors)
    label = progress_label(f"[bold]{ls.split.value}[/bold] judge best-of-{n_solutions}", params)
    with recorded_progress(
        label, bench.err, total, lambda rec: f"{rec['n_correct']}/{len(rec['correct'])} right"
    ) as on_record:
        ctx = RunContext(
            model=bench.model,
            settings=settings,
            out_dir=out_dir,
            key_extra=key_extra(o, params),
            concurrency=o.loop.problems_at_once,
            sim_params=params,
            on_record=on_record,
            ut_model=bench.ut_model,
        )
        run = await select_split(
            ctx,
            ls,
            executor=bench.executor,
            private=bench.private_tests(),
            n_solutions=n_solutions,
            rank_kw=o.ranking.given(),
        )
    if o.run.json or run.summary["evaluated"] or not run.summary["model_errors"]["count"]:
        print_selection(bench.out, ls.split, run, as_json=o.run.json)
    s = run.summary
    bench.failed.append((s["model_errors"], s["problems"], "problems"))


async def _debug_one(
    bench: _Bench,
    ls: LoadedSplit,
    tag: str,
    settings: Settings,
    params: SimParams | None,
    private: PrivateTestRunner,
) -> DebugRun:
    o = bench.options
    total = len(ls.problems) + len(ls.classes) + len(ls.errors)
    label = progress_label(
        f"[bold]{ls.split.value}[/bold] {tag or settings.ut_method.value}", params
    )
    with recorded_progress(label, bench.err, total, outcome_words) as on_record:
        ctx = RunContext(
            model=bench.model,
            settings=settings,
            out_dir=out_dir_for(o, ls.split, settings, tag),
            key_extra=key_extra(o, params),
            concurrency=o.loop.problems_at_once,
            sim_params=params,
            on_record=on_record,
            ut_model=bench.ut_model,
            synth_inputs=o.loop.synth_inputs,
        )
        if splits.spec(ls.split).kind is ProblemKind.METHOD:
            from utdebug.benchmarks.classeval_debug import MAX_CONCURRENCY, debug_classeval_split

            ctx = replace(ctx, concurrency=min(o.loop.problems_at_once, MAX_CONCURRENCY))
            return await debug_classeval_split(
                ctx, ls, executor=bench.executor, eval_settings=bench.eval_settings
            )
        return await debug_split(ctx, ls, executor=bench.executor, private=private)
