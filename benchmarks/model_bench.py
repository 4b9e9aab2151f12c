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
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from utdebug.agents.base import Meter, Metered, Model, ModelError
from utdebug.agents.sim import SIMULATED, SimParams
from utdebug.benchmarks.bench import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
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
from utdebug.benchmarks.debugging import (
    DebugRun,
    FatalRunError,
    PrivateTests,
    VerdictCache,
    debug_split,
)
from utdebug.benchmarks.evaluator import EvalSettings, ExpectedCache
from utdebug.benchmarks.scoring_verifiers import SETS as VERIFIER_SETS
from utdebug.data.datasets import (
    LoadedSplit,
    Split,
    default_cache_dir,
)
from utdebug.engine import Executor, Settings, UTMethod, Variant
from utdebug.engine.model import RANKERS
from utdebug.runs.folder import (
    merge_model_errors,
    model_error_line,
    one_line,
    preflight_models,
    print_json,
    reply_warning,
    simulated_note,
    usage_text,
)
from utdebug.sandbox import (
    LimitKind,
    Limits,
    Sandbox,
    SandboxConfig,
)

EXIT_MODEL = 1
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
    from utdebug.agents.cache import CachedModel, ResponseCache
    from utdebug.agents.config import build_litellm_model, resolve_model_spec
    from utdebug.agents.scripted import ScriptedModel

    spec = resolve_model_spec(spec_value)
    if spec.kind == "sim":
        return None
    model: Model
    if spec.kind == "scripted":
        assert spec.script_path is not None
        model = Metered(ScriptedModel.from_file(Path(spec.script_path)), meter)
    else:
        model = build_litellm_model(spec, meter)
        if args.no_cache:
            return model
        cache_dir.mkdir(parents=True, exist_ok=True)
        model = CachedModel(model, ResponseCache(cache_dir / "responses.sqlite"))
    return model


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


def run_model_bench(args: argparse.Namespace, cfg: SandboxConfig, stop: threading.Event) -> int:
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
        return EXIT_USAGE
    meter = Meter(cost_limit=args.cost_limit)
    from utdebug.agents.config import ConfigError

    try:
        model, ut_model = build_models(args, meter, cache_dir)
    except (ConfigError, OSError, ValueError) as e:
        error_line(err, "utdebug bench:", e)
        return EXIT_USAGE

    async def run_all() -> int:
        try:
            await preflight_models((model, ut_model), lambda s: note_line(err, s))
        except ModelError as e:
            error_line(err, "utdebug bench: the model cannot be used:", e)
            return EXIT_MODEL
        with open_sandbox(cfg, err) as sb:
            return await _main(
                args, sb, loaded, model, ut_model, meter, eval_settings, cache_dir, out, err, stop
            )

    return run_mode(err, "utdebug bench", run_all())


async def _main(
    args: argparse.Namespace,
    sb: Sandbox,
    loaded: list[LoadedSplit],
    model: Model | None,
    ut_model: Model | None,
    meter: Meter,
    eval_settings: EvalSettings,
    cache_dir: Path,
    out: Console,
    err: Console,
    stop: threading.Event,
) -> int:
    executor = Executor(sb, workers=local_workers(args))
    expected_cache = ExpectedCache(cache_dir / "he-expected")
    failed: list[tuple[dict[str, Any], int, str]] = []
    """Per run: its model errors, its problems, and what they are (sessions, problems)."""
    try:
        for ls in loaded:
            verdicts = VerdictCache(None if args.no_cache else cache_dir / "private-verdicts")
            private = PrivateTests(executor, eval_settings, expected_cache, verdicts)
            if args.mode == "intrinsic":
                from utdebug.benchmarks.intrinsic import print_intrinsic, run_intrinsic

                if ls.split is Split.CLASSEVAL:
                    from utdebug.benchmarks.classeval_debug import run_class_intrinsic

                    res = await run_class_intrinsic(
                        problems=ls.classes,
                        model=model,
                        args=args,
                        executor=executor,
                        eval_settings=eval_settings,
                        sim=sim_params(args) if model is None else None,
                    )
                    print_intrinsic(
                        out, ls.split, res, as_json=args.json, licence=ls.about.get("data_licence")
                    )
                    failed.append((res.model_errors_summary(), len(ls.classes), "problems"))
                    continue
                res = await run_intrinsic(
                    ls=ls,
                    model=model,
                    args=args,
                    private=private,
                    executor=executor,
                    sim=sim_params(args) if model is None else None,
                    err=err,
                )
                print_intrinsic(out, ls.split, res, as_json=args.json)
                failed.append((res.model_errors_summary(), len(ls.problems), "problems"))
                continue
            if args.mode == "judge":
                s = await _judge_one(args, ls, model, ut_model, executor, private, out, err)
                failed.append((s["model_errors"], s["problems"], "problems"))
                continue
            configs = _configs(args)
            runs: list[tuple[str, DebugRun]] = []
            for tag, settings, params in configs:
                run = await _debug_one(
                    args,
                    ls,
                    tag,
                    settings,
                    params,
                    model,
                    ut_model,
                    executor,
                    private,
                    eval_settings,
                    expected_cache,
                    err,
                )
                runs.append((tag, run))
                failed.append((run.summary["model_errors"], run.summary["problems"], "sessions"))
            if args.mode == "eval":
                print_debug(out, ls.split, runs[0][1], args, meter, as_json=args.json)
            elif args.mode == "ablation":
                print_ablation(out, ls.split, runs, as_json=args.json)
            else:
                print_voting(out, ls.split, runs, as_json=args.json)
    except (FatalRunError, ModelError) as e:
        error_line(
            err,
            "utdebug bench: the model cannot be used:",
            f"{one_line(e)} (finished problems are kept; fix the cause and rerun the same command)",
        )
        return EXIT_MODEL
    finally:
        executor.close()
    if stop.is_set():
        return EXIT_INTERRUPTED
    errors = merge_model_errors(m for m, _, _ in failed)
    if errors["count"]:
        total = sum(n for _, n, _ in failed)
        what = failed[0][2]
        error_line(err, "utdebug bench:", model_error_line(errors, total, what))
        return EXIT_MODEL
    return EXIT_OK


def rank_params(args: argparse.Namespace) -> dict[str, float]:
    """B4's hyperparameters given on the command line (the rest: the ranking defaults)."""
    out = {}
    if args.beta0 is not None:
        out["beta0"] = args.beta0
    if args.alpha_xy is not None:
        out["alpha_xy"] = args.alpha_xy
    return out


async def _judge_one(
    args: argparse.Namespace,
    ls: LoadedSplit,
    model: Model | None,
    ut_model: Model | None,
    executor: Executor,
    private: PrivateTests,
    out: Console,
    err: Console,
) -> dict[str, Any]:
    from utdebug.benchmarks.judge import judge_split, print_judge

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
    label = f"[bold]{ls.split.value}[/bold] judge best-of-{args.solutions}"
    if params is not None:
        label += f" [yellow]{SIMULATED}[/yellow]"
    key_extra: dict[str, Any] = {"model": args.model, "ut_model": args.ut_model}
    if params is not None:
        key_extra["sim"] = params.to_json()
    progress = progress_bar(label, err)
    with progress:
        bar = progress.add_task("judge", total=total, last="")

        def on_record(kind: str, rec: dict[str, Any]) -> None:
            last = str(rec.get("task_id", ""))
            if kind == "done":
                last += f" {rec['n_correct']}/{len(rec['correct'])} right"
            elif kind == "error":
                last += f" {rec.get('error_kind')} error"
            progress.update(bar, advance=1, last=last)

        run = await judge_split(
            ls=ls,
            model=model,
            settings=settings,
            executor=executor,
            private=private,
            out_dir=out_dir,
            n_solutions=args.solutions,
            rank_kw=rank_params(args),
            key_extra=key_extra,
            concurrency=args.concurrency,
            sim_params=params,
            on_record=on_record,
            ut_model=ut_model,
        )
    if args.json or run.summary["evaluated"] or not run.summary["model_errors"]["count"]:
        print_judge(out, ls, run, as_json=args.json)
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
    args: argparse.Namespace,
    ls: LoadedSplit,
    tag: str,
    settings: Settings,
    params: SimParams | None,
    model: Model | None,
    ut_model: Model | None,
    executor: Executor,
    private: PrivateTests,
    eval_settings: EvalSettings,
    expected_cache: ExpectedCache,
    err: Console,
) -> DebugRun:
    out_dir = out_dir_for(args, ls.split, settings, tag)
    total = len(ls.problems) + len(ls.classes) + len(ls.errors)
    label = f"[bold]{ls.split.value}[/bold] {tag or settings.ut_method.value}"
    if params is not None:
        label += f" [yellow]{SIMULATED}[/yellow]"
    progress = progress_bar(label, err)
    with progress:
        bar = progress.add_task("debug", total=total, last="")

        def on_record(kind: str, rec: dict[str, Any]) -> None:
            last = rec.get("task_id", "")
            if kind == "done":
                last = f"{last} {outcome_words(rec)}"
            elif kind == "error":
                last = f"{last} {rec.get('error_kind')} error"
            progress.update(bar, advance=1, last=last)

        key_extra: dict[str, Any] = {"model": args.model, "ut_model": args.ut_model}
        if params is not None:
            key_extra["sim"] = params.to_json()
        if ls.split is Split.CLASSEVAL:
            from utdebug.benchmarks.classeval_debug import MAX_CONCURRENCY, debug_classeval_split

            return await debug_classeval_split(
                problems=ls.classes,
                errors=ls.errors,
                model=model,
                settings=settings,
                executor=executor,
                eval_settings=eval_settings,
                out_dir=out_dir,
                sources=ls.sources,
                about=ls.about,
                key_extra=key_extra,
                concurrency=min(args.concurrency, MAX_CONCURRENCY),
                sim_params=params,
                on_record=on_record,
                ut_model=ut_model,
            )
        return await debug_split(
            split=ls.split,
            problems=ls.problems,
            errors=ls.errors,
            model=model,
            settings=settings,
            sandbox=executor.sandbox,
            eval_settings=eval_settings,
            out_dir=out_dir,
            sources=ls.sources,
            key_extra=key_extra,
            expected_cache=expected_cache,
            concurrency=args.concurrency,
            sim_params=params,
            on_record=on_record,
            executor=executor,
            private=private,
            ut_model=ut_model,
        )


# --- output -----------------------------------------------------------------------------------

_NOT_SOLVED = {
    "all_pass": "its generated tests pass",
    "rounds": "every round ran",
    "no_tests": "no tests",
    "judged_correct": "judged correct",
    "does_not_load": "does not load",
    "cancelled": "cancelled",
}


def outcome_words(rec: dict[str, Any]) -> str:
    """How a debugged problem ended, for the progress line: ``solved`` (the code in force
    passes every private test), else ``not solved`` and why the session stopped (its own
    tests all passing is not solving it)."""
    rounds = rec.get("rounds") or [{}]
    if rounds[-1].get("all_pass"):
        return "solved"
    finish = str(rec.get("finish") or "")
    why = _NOT_SOLVED.get(finish, finish.replace("_", " "))
    return f"not solved ({why})" if why else "not solved"


def _title(text: str, simulated: bool) -> str:
    return f"{SIMULATED}: {text}" if simulated else text


def _sim_note(out: Console, simulated: bool) -> None:
    if simulated:
        out.print(simulated_note())


def print_debug(
    out: Console,
    split: Split,
    run: DebugRun,
    args: argparse.Namespace,
    meter: Meter,
    *,
    as_json: bool,
) -> None:
    s = run.summary
    warning = None if s["simulated"] else reply_warning(s["usage"])
    if warning is not None:
        Console(stderr=True).print(
            f"utdebug bench: [yellow]{escape(warning)}[/yellow]", soft_wrap=True
        )
    if as_json:
        print_json(
            {
                "split": split.value,
                "out_dir": str(run.out_dir),
                "wall_seconds": round(run.wall_seconds, 2),
                "evaluated_now": run.evaluated,
                "resumed": run.skipped,
                "summary": s,
            }
        )
        return
    if not s["evaluated"] and s["model_errors"]["count"]:
        return  # no problem finished: no table of zeros; the command says why on stderr
    _sim_note(out, s["simulated"])
    title = _title(f"{split.value}, {s['model']}, {s['settings']['ut_method']}", s["simulated"])
    t = Table(title=title, min_width=min(len(title) + 4, 120))  # the title on one line
    t.add_column("round", justify="right")
    t.add_column("pass@1", justify="right")
    t.add_column("mean pass rate", justify="right")
    for r in s["rounds"]:
        t.add_row(
            str(r["round"]),
            f"{100 * r['pass_at_1']:.2f}% ({r['solved']})",
            f"{100 * r['mean_pass_rate']:.2f}%",
        )
    out.print(t)
    i = s["intrinsic"]
    u = s["usage"]
    label = f"{SIMULATED} " if s["simulated"] else ""
    out.print(
        f"{label}{split.value}: intrinsic metrics of {i['tests']} kept tests "
        f"({i['tests_per_problem']:.2f} per problem): attack rate "
        f"{100 * i['attack_rate']:.2f}%, output accuracy {100 * i['output_accuracy']:.2f}%, "
        f"accuracy ∩ attack {100 * i['accuracy_and_attack']:.2f}%"
    )
    out.print(
        f"{label}{split.value}: {s['evaluated']} problems debugged, {s['problem_errors']} "
        f"problem errors, {s['model_errors']['count']} sessions ended by a model error (not "
        f"counted above); {resumed_text(run.skipped)}wall {run.wall_seconds:.1f} s (this run)"
    )
    out.print(f"{label}{split.value}: model: {usage_text(u)}")
    st = s["settings"]
    out.print(
        f"{label}{split.value}: settings: {st['variant']} variant, n={st['n']}, k={st['k']}, "
        f"threshold {st['threshold']}, rounds {st['rounds']}, backtracking "
        f"{'on' if st['backtrack'] else 'off'}, feedback = {st['feedback']} failing test"
    )
    for e in s["errors"][:10]:
        out.print(f"{split.value}: [yellow]problem error[/yellow] {e['task_id']}: {e['error']}")
    model_errors_footer(out, split.value, s["model_errors"], "sessions")
    if "data_licence" in s:
        out.print(f"{split.value}: data licence: {s['data_licence']}")
    out.print(f"{split.value}: samples and summary in {run.out_dir}/")


def resumed_text(skipped: int) -> str:
    """``resumed N (already recorded, not run again); `` when a rerun skipped records."""
    return f"resumed {skipped} (already recorded, not run again); " if skipped else ""


def model_errors_footer(out: Console, where: str, errors: dict[str, Any], what: str) -> None:
    """The footer line that names the model errors a table leaves out (nothing when none)."""
    n = errors.get("count", 0)
    if not n:
        return
    causes = "; ".join(f"{c['error']} ×{c['count']}" for c in errors.get("causes", [])[:3])
    out.print(
        f"{where}: [yellow]{n} {what} ended by a model error[/yellow] and are not in the "
        f"numbers above ({escape(causes)}); a rerun of the same command retries them"
    )


def print_ablation(
    out: Console, split: Split, runs: list[tuple[str, DebugRun]], *, as_json: bool
) -> None:
    rows = []
    for tag, run in runs:
        method, _, what = tag.partition("-")
        final = run.summary["rounds"][-1]
        rows.append(
            {
                "method": method,
                "config": what,
                "pass_at_1": final["pass_at_1"],
                "mean_pass_rate": final["mean_pass_rate"],
                "simulated": run.summary["simulated"],
                "out_dir": str(run.out_dir),
                "wall_seconds": round(run.wall_seconds, 2),
                "model_errors": run.summary["model_errors"],
            }
        )
    sim = any(r["simulated"] for r in rows)
    if as_json:
        print_json({"split": split.value, "label": SIMULATED if sim else None, "rows": rows})
        return
    _sim_note(out, sim)
    variant = runs[0][1].summary["settings"]["variant"] if runs else "?"
    t = Table(title=_title(f"{split.value}: ablation (Table 8 design), {variant} variant", sim))
    for c in ("UT method", "configuration", "pass@1", "Δ", "mean pass rate"):
        t.add_column(c, justify="left" if c in ("UT method", "configuration") else "right")
    full: dict[str, float] = {}
    for r in rows:
        if r["config"] == "full":
            full[r["method"]] = r["pass_at_1"]
        delta = r["pass_at_1"] - full.get(r["method"], r["pass_at_1"])
        t.add_row(
            r["method"],
            r["config"].replace("-", " "),
            f"{100 * r['pass_at_1']:.2f}%",
            "" if r["config"] == "full" else f"{100 * delta:+.2f}",
            f"{100 * r['mean_pass_rate']:.2f}%",
        )
    out.print(t)
    model_errors_footer(
        out, split.value, merge_model_errors(r["model_errors"] for r in rows), "sessions"
    )


def print_voting(
    out: Console, split: Split, runs: list[tuple[str, DebugRun]], *, as_json: bool
) -> None:
    rows: dict[str, dict[str, Any]] = {}
    for tag, run in runs:
        acc, _, k = tag.partition("-")
        i = run.summary["intrinsic"]
        row = rows.setdefault(acc, {"per_vote_accuracy": float(acc[3:])})
        row["voting" if k != "k0" else "single"] = {
            "output_accuracy": i["output_accuracy"],
            "tests": i["tests"],
        }
    if as_json:
        print_json({"split": split.value, "label": SIMULATED, "rows": list(rows.values())})
        return
    _sim_note(out, True)
    t = Table(title=_title(f"{split.value}: output accuracy of kept tests", True))
    for c in ("per-vote accuracy", "no voting", "voting", "effect", "tests (voting)"):
        t.add_column(c, justify="right")
    for row in rows.values():
        single = row.get("single", {}).get("output_accuracy", 0.0)
        voted = row.get("voting", {}).get("output_accuracy", 0.0)
        t.add_row(
            f"{100 * row['per_vote_accuracy']:.0f}%",
            f"{100 * single:.2f}%",
            f"{100 * voted:.2f}%",
            "raises" if voted > single else "lowers" if voted < single else "no change",
            str(row.get("voting", {}).get("tests", 0)),
        )
    out.print(t)
