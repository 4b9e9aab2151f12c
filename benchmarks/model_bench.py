"""``utdebug bench --model M ...``: model-driven benchmark runs with rich output.

Modes (the positional argument of ``utdebug bench``):

- ``eval`` (default): the UTDebug loop on every problem; pass@1 and mean pass rate after each
  round, the intrinsic metrics of the tests the loop kept, calls, tokens, cost, wall time.
- ``intrinsic``: the paper's Table 1 protocol (no voting, no debugging; see
  :mod:`utdebug.benchmarks.intrinsic`).
- ``ablation``: the paper's Table 8 design: the full loop, without output voting and without
  backtracking, for the ``random`` and ``utgen`` test generators.
- ``voting``: output accuracy of the kept tests with and without voting over a grid of
  per-vote accuracies (``--model sim`` only: the per-vote accuracy is a parameter there).

Every table of a run with the simulated model is titled SIMULATED.

Before any problem starts, every model of the run (``--model``, ``--ut-model``) is probed with
one tiny call (:func:`utdebug.agents.preflight.preflight`): a model that cannot answer stops the
command with one line and exit 1, before the sandbox starts and before anything is written.
Sessions that a model error ended later are recorded as model errors, left out of the numbers,
reported apart, and retried by a rerun; the command then exits 1 with one line saying how many
and why.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
    progress_bar,
    run_mode,
)
from utdebug.benchmarks.bench import (
    eval_settings as bench_eval_settings,
)
from utdebug.benchmarks.context import RunContext
from utdebug.benchmarks.debugging import (
    SYNTH_INPUTS_HELP,
    SYNTH_INPUTS_MODES,
    DebugRun,
    FatalRunError,
    debug_split,
)
from utdebug.benchmarks.modes import ModeContext
from utdebug.benchmarks.report import (
    outcome_words,
    print_ablation,
    print_debug,
    print_intrinsic,
    print_selection,
    print_voting,
)
from utdebug.benchmarks.scoring_verifiers import SETS as VERIFIER_SETS
from utdebug.cli_common import Exit
from utdebug.data import splits
from utdebug.data.datasets import (
    LoadedSplit,
    Split,
    default_cache_dir,
)
from utdebug.data.private_tests import EvalSettings, ExpectedCache, PrivateTestRunner, VerdictCache
from utdebug.data.splits import ProblemKind
from utdebug.engine import Executor, Settings, UTMethod, Variant
from utdebug.engine.model import RANKERS
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


def add_arguments(bench: argparse.ArgumentParser) -> None:
    """The model-driven options of ``utdebug bench``."""
    g = bench.add_argument_group("model-driven runs (--model M)")
    g.add_argument(
        "--ut-method",
        choices=[m.value for m in UTMethod],
        default=None,
        help="test generator: utgen/prompted (failing-UT prompt, shows the code), "
        "random (no code shown), none (self-critique, no tests); default utgen (bench "
        "verify: random, the Scoring-Verifiers protocol)",
    )
    g.add_argument(
        "--ut-model",
        default=None,
        help="a separate model for test generation and voting (e.g. UTGen-trained)",
    )
    g.add_argument("--rounds", type=int, default=3, help="debugging rounds (default 3)")
    g.add_argument(
        "-n",
        "--tests",
        type=int,
        default=None,
        help="generated tests per set (default 3; bench judge: per solution, 3; bench verify: "
        "per problem, 10)",
    )
    g.add_argument(
        "-k",
        "--votes",
        type=int,
        default=8,
        help="output votes per test (default 8; 0 = no voting)",
    )
    g.add_argument(
        "--threshold",
        type=float,
        default=0.5,
        help="keep a test when its top answer has this share of the votes (0.5)",
    )
    g.add_argument(
        "--variant",
        choices=[v.value for v in Variant],
        default="paper",
        help="paper: the paper's algorithms; reference: the published code's "
        "behaviour (ties accepted, tests rebuilt per candidate, first failing test, "
        "4n tries with patience 3)",
    )
    g.add_argument("--no-backtrack", action="store_true", help="accept every edit")
    g.add_argument(
        "--problems-at-once",
        "--concurrency",
        dest="concurrency",
        type=int,
        default=16,
        metavar="N",
        help="problems debugged at once (16); the model's requests at once are its config "
        "entry's 'concurrency' (docs/models.md). --concurrency is this option's old name",
    )
    g.add_argument("--cost-limit", type=float, default=None, help="US dollars for the whole run")
    g.add_argument(
        "--no-cache",
        action="store_true",
        help="use neither the response cache (<cache-dir>/responses.sqlite) nor the "
        "private-test results of earlier runs (<cache-dir>/private-verdicts/)",
    )
    g.add_argument("--samples", type=int, default=3, help="intrinsic: UT samples per problem")
    g.add_argument("--synth-inputs", type=int, default=0, metavar="N", help=SYNTH_INPUTS_HELP)
    r = bench.add_argument_group("ranking (--candidates, bench judge, bench b4-sim)")
    r.add_argument(
        "--candidates",
        type=int,
        default=1,
        help="edits sampled per debugging round, ranked with --ranker against the generated "
        "tests (default 1: the paper's loop, no ranking)",
    )
    r.add_argument(
        "--ranker",
        choices=list(RANKERS),
        default="b4",
        help="how --candidates are ranked (default b4; see docs/ranking.md)",
    )
    r.add_argument(
        "--tie",
        choices=["first", "pool"],
        default="first",
        help="ranking ties: the first consensus set (default) or all top-tied sets pooled",
    )
    r.add_argument(
        "--beta0",
        type=float,
        default=None,
        help="B4's beta0 (default 1e4; 10 in b4-sim, as the paper's simulated study)",
    )
    r.add_argument(
        "--alpha-xy",
        type=float,
        default=None,
        help="B4's alpha_xy (default 1e3; 10 in b4-sim)",
    )
    r.add_argument(
        "-N",
        "--solutions",
        type=int,
        default=10,
        help="judge: solutions sampled per problem; b4-sim: solutions per trial (default 10)",
    )
    v = bench.add_argument_group("bench verify")
    v.add_argument(
        "--verify-file",
        type=Path,
        default=None,
        metavar="PATH",
        help="a Scoring-Verifiers JSON-lines file (its set is taken from the file name, or "
        "from --verify-set)",
    )
    v.add_argument(
        "--verify-set",
        choices=list(VERIFIER_SETS),
        default=None,
        help="a Scoring-Verifiers set; its file (HE-R.jsonl ...) is looked up in --data-dir / "
        "UTDEBUG_DATA_DIR / the cache, else downloaded from "
        "huggingface.co/datasets/nvidia/Scoring-Verifiers",
    )
    s = bench.add_argument_group("the simulated model (--model sim)")
    s.add_argument(
        "--sim-attack",
        type=float,
        default=None,
        help="P(a test input attacks the code); default by --ut-method (utgen 0.4196)",
    )
    s.add_argument(
        "--sim-out-acc",
        type=float,
        default=None,
        help="per-vote output accuracy; default by --ut-method (utgen 0.5804)",
    )
    s.add_argument(
        "--sim-fix", type=float, default=None, help="P(a fix, given right feedback); default 0.5"
    )
    s.add_argument(
        "--sim-regress",
        type=float,
        default=None,
        help="P(an edit made from wrong feedback also breaks other inputs); default 0.8",
    )
    s.add_argument("--seed", type=int, default=0, help="seed of the simulated model")
    s.add_argument(
        "--grid", default="0.2,0.3,0.4,0.6,0.7,0.8", help="voting: per-vote accuracies to compare"
    )


def check_arguments(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    if args.rounds < 0:
        parser.error("--rounds must be 0 or more")
    if args.tests is not None and args.tests < 1:
        parser.error("-n/--tests must be at least 1")
    if args.votes < 0:
        parser.error("-k/--votes must be 0 (no voting) or more")
    if not 0 < args.threshold <= 1:
        parser.error("--threshold must be in (0, 1]")
    if args.concurrency < 1:
        parser.error("--problems-at-once must be at least 1")
    cost = args.cost_limit
    if cost is not None and not (math.isfinite(cost) and cost >= 0):
        parser.error("--cost-limit must be 0 or a positive number of US dollars")
    if args.samples < 1:
        parser.error("--samples must be at least 1")
    if args.synth_inputs < 0 or (args.synth_inputs and args.mode not in SYNTH_INPUTS_MODES):
        parser.error("--synth-inputs applies to bench eval, ablation and voting (N >= 0)")
    if args.candidates < 1:
        parser.error("--candidates must be at least 1")
    if args.candidates > 1 and (args.variant != "paper" or args.ut_method == "none"):
        parser.error(
            "--candidates > 1 needs the paper variant and generated tests "
            "(not --variant reference, not --ut-method none)"
        )
    if args.solutions < 1:
        parser.error("-N/--solutions must be at least 1")
    for name in ("beta0", "alpha_xy"):
        v = getattr(args, name)
        if v is not None and not (math.isfinite(v) and v > 0):
            parser.error(f"--{name.replace('_', '-')} must be a positive number")
    for name in ("sim_attack", "sim_out_acc", "sim_fix", "sim_regress"):
        v = getattr(args, name)
        if v is not None and not 0 <= v <= 1:
            parser.error(f"--{name.replace('_', '-')} must be in [0, 1]")
    if args.ut_model == "sim":
        parser.error(
            "--ut-model sim is not supported: the simulated model plays every role "
            "(use --model sim)"
        )
    if args.mode == "voting" and args.model != "sim":
        parser.error("bench voting needs --model sim (it sweeps the per-vote accuracy)")


def engine_settings(args: argparse.Namespace, **over: Any) -> Settings:
    base = Settings(
        n=3 if args.tests is None else args.tests,
        k=args.votes,
        threshold=args.threshold,
        rounds=args.rounds,
        variant=Variant(args.variant),
        ut_method=UTMethod(args.ut_method or "utgen"),
        backtrack=not args.no_backtrack,
        candidates=args.candidates,
        ranker=args.ranker,
        tie=args.tie,
        beta0=args.beta0,
        alpha_xy=args.alpha_xy,
        limits=Limits(
            per_input=args.timeout,
            memory_mb=min(args.memory_mb, 1024),
            batch=30.0,
            kind=LimitKind(args.limit_kind),
        ),
    )
    return replace(base, **over)


def sim_params(args: argparse.Namespace, method: str | None = None, **over: Any) -> SimParams:
    p = SimParams.for_method(
        method or args.ut_method or "utgen",
        attack=args.sim_attack,
        out_acc=args.sim_out_acc,
        fix=args.sim_fix,
        regress=args.sim_regress,
        seed=args.seed,
    )
    return replace(p, **over)


def build_model(
    spec_value: str, args: argparse.Namespace, meter: Meter, cache_dir: Path
) -> Model | None:
    """The model named by ``--model`` (``None`` for ``sim``, which each run builds itself)."""
    from utdebug.agents import factory
    from utdebug.agents.config import resolve_model_spec

    spec = resolve_model_spec(spec_value)
    if factory.kind_of(spec).answers_from_gold:
        return None
    return factory.build_model(spec, meter, None if args.no_cache else cache_dir)


def build_models(
    args: argparse.Namespace, meter: Meter, cache_dir: Path
) -> tuple[Model | None, Model | None]:
    """``--model`` and ``--ut-model`` (``None``: sim, or no separate test generator)."""
    model = build_model(args.model, args, meter, cache_dir)
    ut_model = build_model(args.ut_model, args, meter, cache_dir) if args.ut_model else None
    return model, ut_model


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:60] or "model"


def out_root(args: argparse.Namespace, split: Split) -> Path:
    """``--out DIR`` is the run folder of the split; with several ``--split``, each split gets
    ``DIR/<split>/`` (the same layout as plain evaluation)."""
    assert args.out is not None
    several = len(args.split or ["hard"]) > 1
    return Path(args.out) / split.value if several else Path(args.out)


def out_dir_for(args: argparse.Namespace, split: Split, settings: Settings, tag: str = "") -> Path:
    """The run folder of one configuration: ``--out DIR`` (``DIR/<config>/`` for the several
    configurations of ablation and voting), else ``runs/debug/<settings>``."""
    if args.out is not None:
        root = out_root(args, split)
        return root / tag if tag else root
    he = f"-{args.he_variant}" if split is Split.HE else ""
    name = (
        f"{split.value}{he}-{_slug(args.model)}-{settings.ut_method.value}-"
        f"{settings.variant.value}-r{settings.rounds}-n{settings.n}-k{settings.k}"
        f"{'' if settings.backtrack else '-nobt'}"
        f"{_ranking_tag(settings)}"
        f"{f'-s{args.synth_inputs}' if args.synth_inputs else ''}"
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


def run(ctx: ModeContext) -> int:
    """``utdebug bench [MODE] --model M``: the modes that run a model on a split."""
    args, cfg, stop = ctx.args, ctx.sandbox, ctx.stop
    err = Console(stderr=True)
    out = Console() if sys.stdout.isatty() else Console(width=140)
    cache_dir = args.cache_dir or default_cache_dir()
    eval_settings = bench_eval_settings(
        args,
        cut_after=DEFAULT_CUT_AFTER if args.cut_after is None else (args.cut_after or None),
        cut_limit=args.cut_limit,
    )
    loaded, failed = load_selected(args, cache_dir, err, cfg, eval_settings.limits)
    if failed:
        return Exit.USAGE
    meter = Meter(cost_limit=args.cost_limit)
    from utdebug.agents.config import ConfigError

    try:
        model, ut_model = build_models(args, meter, cache_dir)
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
                args,
                model,
                ut_model,
                Executor(sb, workers=local_workers(args)),
                eval_settings,
                ExpectedCache(cache_dir / "he-expected"),
                cache_dir,
                out,
                err,
            )
            return await _main(bench, loaded, stop)

    return run_mode(err, "utdebug bench", run_all())


@dataclass(slots=True)
class _Bench:
    """What every split of one ``utdebug bench --model`` run shares."""

    args: argparse.Namespace
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
        folder = None if self.args.no_cache else self.cache_dir / "private-verdicts"
        return PrivateTestRunner(
            self.executor, self.eval_settings, self.expected_cache, VerdictCache(folder)
        )


async def _main(bench: _Bench, loaded: list[LoadedSplit], stop: threading.Event) -> int:
    err = bench.err
    try:
        for ls in loaded:
            await _run_split(bench, ls)
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


async def _run_split(bench: _Bench, ls: LoadedSplit) -> None:
    """The run (or runs: ablation, voting) of the mode on one split, then its table."""
    args, out = bench.args, bench.out
    private = bench.private_tests()
    if args.mode == "intrinsic":
        await _intrinsic_one(bench, ls, private)
        return
    if args.mode == "judge":
        s = await _judge_one(bench, ls, private)
        bench.failed.append((s["model_errors"], s["problems"], "problems"))
        return
    runs: list[tuple[str, DebugRun]] = []
    for tag, settings, params in _configs(args):
        run = await _debug_one(bench, ls, tag, settings, params, private)
        runs.append((tag, run))
        bench.failed.append((run.summary["model_errors"], run.summary["problems"], "sessions"))
    if args.mode == "eval":
        print_debug(out, ls.split, runs[0][1], as_json=args.json)
    elif args.mode == "ablation":
        print_ablation(out, ls.split, runs, as_json=args.json)
    else:
        print_voting(out, ls.split, runs, as_json=args.json)


async def _intrinsic_one(bench: _Bench, ls: LoadedSplit, private: PrivateTestRunner) -> None:
    from utdebug.benchmarks.intrinsic import run_intrinsic

    args, model, out = bench.args, bench.model, bench.out
    if splits.spec(ls.split).kind is ProblemKind.METHOD:
        from utdebug.benchmarks.classeval_debug import run_class_intrinsic

        res = await run_class_intrinsic(
            problems=ls.classes,
            model=model,
            args=args,
            executor=bench.executor,
            eval_settings=bench.eval_settings,
            sim=sim_params(args) if model is None else None,
        )
        print_intrinsic(out, ls.split, res, as_json=args.json, licence=ls.about.get("data_licence"))
        bench.failed.append((res.model_errors_summary(), len(ls.classes), "problems"))
        return
    res = await run_intrinsic(
        ls=ls,
        model=model,
        args=args,
        private=private,
        executor=bench.executor,
        sim=sim_params(args) if model is None else None,
        err=bench.err,
    )
    print_intrinsic(out, ls.split, res, as_json=args.json)
    bench.failed.append((res.model_errors_summary(), len(ls.problems), "problems"))


def rank_params(args: argparse.Namespace) -> dict[str, float]:
    """B4's hyperparameters given on the command line (the rest: the ranking defaults)."""
    out = {}
    if args.beta0 is not None:
        out["beta0"] = args.beta0
    if args.alpha_xy is not None:
        out["alpha_xy"] = args.alpha_xy
    return out


def key_extra(args: argparse.Namespace, params: SimParams | None) -> dict[str, Any]:
    """What tells a run's records apart beyond its settings: the models, the simulation."""
    key_extra: dict[str, Any] = {"model": args.model, "ut_model": args.ut_model}
    if params is not None:
        key_extra["sim"] = params.to_json()
    if getattr(args, "synth_inputs", 0):
        key_extra["synth_inputs"] = args.synth_inputs
    return key_extra


def progress_label(text: str, params: SimParams | None) -> str:
    """A progress bar's label, marked SIMULATED when the simulated model plays."""
    return text + (f" [yellow]{SIMULATED}[/yellow]" if params is not None else "")


@contextmanager
def recorded_progress(
    label: str, err: Console, name: str, total: int, done_words: Callable[[dict[str, Any]], str]
) -> Iterator[Callable[[str, dict[str, Any]], None]]:
    """A progress bar on ``err`` while the block runs, and the run's ``on_record`` that
    advances it by one and shows the record's task id, with ``done_words`` of a done record or
    the error kind of an error record."""
    progress = progress_bar(label, err)
    with progress:
        bar = progress.add_task(name, total=total, last="")

        def on_record(kind: str, rec: dict[str, Any]) -> None:
            last = str(rec.get("task_id", ""))
            if kind == "done":
                last += f" {done_words(rec)}"
            elif kind == "error":
                last += f" {rec.get('error_kind')} error"
            progress.update(bar, advance=1, last=last)

        yield on_record


async def _judge_one(bench: _Bench, ls: LoadedSplit, private: PrivateTestRunner) -> dict[str, Any]:
    from utdebug.benchmarks.best_of_n import select_split

    args = bench.args
    settings = engine_settings(args, rounds=0)
    params = sim_params(args) if args.model == "sim" else None
    if args.out is not None:
        out_dir = out_root(args, ls.split)
    else:
        name = (
            f"{ls.split.value}-{_slug(args.model)}-{settings.ut_method.value}-"
            f"N{args.solutions}-n{settings.n}-k{settings.k}"
        )
        out_dir = Path("runs") / "judge" / name
    total = len(ls.problems) + len(ls.errors)
    label = progress_label(f"[bold]{ls.split.value}[/bold] judge best-of-{args.solutions}", params)
    with recorded_progress(
        label,
        bench.err,
        "judge",
        total,
        lambda rec: f"{rec['n_correct']}/{len(rec['correct'])} right",
    ) as on_record:
        ctx = RunContext(
            model=bench.model,
            settings=settings,
            out_dir=out_dir,
            key_extra=key_extra(args, params),
            concurrency=args.concurrency,
            sim_params=params,
            on_record=on_record,
            ut_model=bench.ut_model,
        )
        run = await select_split(
            ctx,
            ls,
            executor=bench.executor,
            private=private,
            n_solutions=args.solutions,
            rank_kw=rank_params(args),
        )
    if args.json or run.summary["evaluated"] or not run.summary["model_errors"]["count"]:
        print_selection(bench.out, ls.split, run, as_json=args.json)
    return run.summary


def _configs(args: argparse.Namespace) -> list[tuple[str, Settings, SimParams | None]]:
    sim = args.model == "sim"
    if args.mode == "eval":
        s = engine_settings(args)
        return [("", s, sim_params(args) if sim else None)]
    if args.mode == "ablation":
        out = []
        for method in ("random", "utgen"):
            base = engine_settings(args, ut_method=UTMethod(method))
            p = sim_params(args, method) if sim else None
            out += [
                (f"{method}-full", base, p),
                (f"{method}-no-voting", replace(base, k=0), p),
                (f"{method}-no-backtracking", replace(base, backtrack=False), p),
            ]
        return out
    grid = [float(x) for x in args.grid.split(",") if x.strip()]
    out = []
    for acc in grid:
        base = engine_settings(args, rounds=0)
        p = sim_params(args, out_acc=acc)
        out += [(f"acc{acc:g}-k{base.k}", base, p), (f"acc{acc:g}-k0", replace(base, k=0), p)]
    return out


async def _debug_one(
    bench: _Bench,
    ls: LoadedSplit,
    tag: str,
    settings: Settings,
    params: SimParams | None,
    private: PrivateTestRunner,
) -> DebugRun:
    args = bench.args
    total = len(ls.problems) + len(ls.classes) + len(ls.errors)
    label = progress_label(
        f"[bold]{ls.split.value}[/bold] {tag or settings.ut_method.value}", params
    )
    with recorded_progress(label, bench.err, "debug", total, outcome_words) as on_record:
        ctx = RunContext(
            model=bench.model,
            settings=settings,
            out_dir=out_dir_for(args, ls.split, settings, tag),
            key_extra=key_extra(args, params),
            concurrency=args.concurrency,
            sim_params=params,
            on_record=on_record,
            ut_model=bench.ut_model,
            synth_inputs=args.synth_inputs,
        )
        if splits.spec(ls.split).kind is ProblemKind.METHOD:
            from utdebug.benchmarks.classeval_debug import MAX_CONCURRENCY, debug_classeval_split

            ctx = replace(ctx, concurrency=min(args.concurrency, MAX_CONCURRENCY))
            return await debug_classeval_split(
                ctx, ls, executor=bench.executor, eval_settings=bench.eval_settings
            )
        return await debug_split(ctx, ls, executor=bench.executor, private=private)
