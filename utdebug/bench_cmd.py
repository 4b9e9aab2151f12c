"""``utdebug bench``: its flags, their checks, and the mode they run.

``add_parser`` adds the command's options (the mode list and ``--split``'s choices come from the
mode table :data:`utdebug.benchmarks.modes.MODES` and the split table
:data:`utdebug.data.splits.SPLITS`); ``run`` checks them, freezes them into one
:class:`~utdebug.benchmarks.options.BenchOptions` and calls the function its mode's row names.
Only ``utdebug bench`` imports this module. Every usage error is one line, ``utdebug bench:
error: ...``, and exit code 2; see docs/architecture.md.
"""

from __future__ import annotations

import argparse
import math
import sys
import threading
from pathlib import Path
from typing import Any

from utdebug.benchmarks.modes import DEFAULT_MODE, MODES, Mode, ModeContext, UsageError, modes_help
from utdebug.benchmarks.options import (
    B4SimOptions,
    BenchOptions,
    DataOptions,
    IntrinsicOptions,
    JudgeOptions,
    LimitOptions,
    LoopOptions,
    RankingOptions,
    RunOptions,
    SimOptions,
    VerifyOptions,
    VotingOptions,
)
from utdebug.cli_common import Exit, data_dir_problem, sandbox_config, sigterm_stops, usage_line

PROG = "utdebug bench"
_D = BenchOptions()
"""The defaults of every option (the parser's defaults are read from it)."""


def add_parser(sub: Any, sandbox_opts: argparse.ArgumentParser) -> None:
    """``utdebug bench`` and its options."""
    bench: argparse.ArgumentParser = sub.add_parser(
        "bench",
        parents=[sandbox_opts],
        help="evaluate a benchmark split, or debug it with a model (--model M)",
        description="Without --model: evaluate the given (buggy) code, or the gold code, of a "
        "benchmark split on its private tests, in the sandbox. With --model M: run the UTDebug "
        "loop on every problem and report pass@1 after each round and the intrinsic metrics of "
        "the generated tests (modes intrinsic, ablation and voting run the paper's other "
        "protocols). Writes samples.jsonl and summary.json; rerunning with the same settings "
        "resumes.",
    )
    _problem_arguments(bench)
    _limit_arguments(bench)
    _run_arguments(bench)
    _loop_arguments(bench.add_argument_group("model-driven runs (--model M)"))
    _ranking_arguments(
        bench.add_argument_group("ranking (--candidates, bench judge, bench b4-sim)")
    )
    _verify_arguments(bench.add_argument_group("bench verify"))
    _sim_arguments(bench.add_argument_group("the simulated model (--model sim)"))
    _b4_sim_arguments(bench.add_argument_group("bench b4-sim (no model, no sandbox)"))


def _problem_arguments(bench: argparse.ArgumentParser) -> None:
    """What ``bench`` evaluates: the mode, the splits, the model, the comparison."""
    from utdebug.data.splits import SPLITS

    bench.add_argument(
        "mode", nargs="?", default=DEFAULT_MODE, choices=list(MODES), help=modes_help()
    )
    bench.add_argument(
        "--split",
        action="append",
        choices=[split.value for split in SPLITS],
        help="split to evaluate (repeatable; default: hard; bench judge: he+, HumanEval+ "
        "code generation; val: the file of --val-file; classeval: ClassEval+Fix, methods of "
        "classes with ClassEval's unittest tests, data CC BY-NC 4.0)",
    )
    bench.add_argument(
        "--classeval-seed",
        type=int,
        default=_D.data.classeval_seed,
        help="ClassEval+Fix: seed of the corrupted versions (default 0)",
    )
    bench.add_argument(
        "--classeval-cap",
        type=int,
        default=_D.data.classeval_cap,
        help="ClassEval+Fix: corrupted versions kept per class at most (default 3)",
    )
    bench.add_argument(
        "--val-file",
        type=Path,
        default=None,
        metavar="PATH",
        help="the val split: a file in the MBPP+Fix format, e.g. the val.jsonl of "
        "'utdebug train data --val-fraction F'",
    )
    bench.add_argument(
        "--model",
        default=_D.model,
        help="model for a debugging run: a name from the config file, a litellm model string, "
        "'sim' (the SIMULATED model, offline) or 'scripted:FILE'; 'none' (default) evaluates "
        "the code as given",
    )
    bench.add_argument(
        "--models",
        default=None,
        metavar="M1,M2,...",
        help="bench intrinsic: several models (e.g. the served checkpoints of a training "
        "run), each measured in turn; the one with the highest Acc. ∩ Attack is named best",
    )
    bench.add_argument("--gold", action="store_true", help="evaluate the gold solutions instead")
    bench.add_argument(
        "--semantics",
        choices=["dataset", "reference"],
        default=_D.semantics,
        help="output comparison: the dataset's own assertion helper (default) or the UTDebug "
        "authors' eval_exact_match",
    )


def _limit_arguments(bench: argparse.ArgumentParser) -> None:
    """The limits of ``bench``'s programs: time, memory, cuts."""
    bench.add_argument(
        "--timeout",
        type=float,
        default=_D.limits.timeout,
        help="seconds per test input (default 2, as the paper), of --limit-kind",
    )
    bench.add_argument(
        "--limit-kind",
        choices=["cpu", "wall"],
        default=_D.limits.kind,
        help="what --timeout, --budget, --cut-limit and the load limit measure: cpu (default: "
        "the program's CPU time, all its threads, as the kernel counts it; a wall-clock "
        "backstop of 3x stops a program only while all its threads sleep or block, never "
        "one running or waiting for a CPU; verdicts move with load only as far as the CPU "
        "time a computation needs does, e.g. through shared caches) or wall (wall-clock "
        "time, as the paper's harness)",
    )
    bench.add_argument(
        "--memory-mb",
        type=int,
        default=_D.limits.memory_mb,
        help="address-space limit per child",
    )
    bench.add_argument(
        "--budget",
        type=float,
        default=_D.limits.budget,
        help="seconds per problem (of --limit-kind); inputs not reached by then count as "
        "timeouts (default 120; 0 = no limit)",
    )
    bench.add_argument(
        "--cut-after",
        type=int,
        default=None,
        help="after this many timeouts of one program, run its remaining inputs with at most "
        "--cut-limit seconds each (default: off for plain evaluation, 3 for --model runs; "
        "0 = off)",
    )
    bench.add_argument(
        "--cut-limit",
        type=float,
        default=_D.limits.cut_limit,
        help="seconds per input after --cut-after timeouts (default 0.25)",
    )
    bench.add_argument(
        "--he-variant",
        choices=["body", "runnable"],
        default=_D.data.he_variant,
        help="HE+Fix buggy code: 'body' as published (does not load: 0%%) or 'runnable' "
        "(declaration + body)",
    )


def _run_arguments(bench: argparse.ArgumentParser) -> None:
    """Where ``bench`` reads and writes, where it runs, which problems, the output."""
    bench.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="folder holding the dataset files (env UTDEBUG_DATA_DIR); otherwise the cache, "
        "then a download from the public URLs",
    )
    bench.add_argument("--cache-dir", type=Path, default=None, help="env UTDEBUG_CACHE_DIR")
    bench.add_argument("--no-verify", action="store_true", help="accept files whose sha256 differs")
    bench.add_argument(
        "--out", type=Path, default=None, help="run folder (default: runs/bench/<config>)"
    )
    bench.add_argument(
        "--workers",
        type=int,
        default=None,
        help="parallel children (default: the number of cores; with --ray: the cluster's CPUs)",
    )
    bench.add_argument(
        "--ray",
        metavar="ADDRESS",
        default=None,
        help="evaluate on a Ray cluster (plain evaluation only): host:port of its head, "
        "ray://host:port, auto (the cluster this machine belongs to) or local-cluster (start "
        "one here for this run); each worker process runs its own sandbox, this process "
        "writes the records (needs pip install 'utdebug[ray]')",
    )
    bench.add_argument(
        "--problems", default=None, help="comma-separated task ids or numbers (e.g. hard/6,11)"
    )
    bench.add_argument("--limit", type=int, default=None, help="only the first N problems")
    bench.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")


def _loop_arguments(g: argparse._ArgumentGroup) -> None:
    """The model-driven options: the debugging loop and its test generator."""
    from utdebug.engine.model import UTMethod, Variant

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
    g.add_argument(
        "--rounds", type=int, default=_D.loop.rounds, help="debugging rounds (default 3)"
    )
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
        default=_D.loop.votes,
        help="output votes per test (default 8; 0 = no voting)",
    )
    g.add_argument(
        "--threshold",
        type=float,
        default=_D.loop.threshold,
        help="keep a test when its top answer has this share of the votes (0.5)",
    )
    g.add_argument(
        "--variant",
        choices=[v.value for v in Variant],
        default=_D.loop.variant,
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
        default=_D.loop.problems_at_once,
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
    g.add_argument(
        "--samples",
        type=int,
        default=_D.intrinsic.samples,
        help="intrinsic: UT samples per problem",
    )
    g.add_argument(
        "--synth-inputs",
        type=int,
        default=_D.loop.synth_inputs,
        metavar="N",
        help="up to N synthesised inputs a problem that the test sets vote on too (eval, "
        "ablation, voting; function splits; default 0: none; docs/synth.md)",
    )


def _ranking_arguments(r: argparse._ArgumentGroup) -> None:
    """How candidate edits (and judge's solutions) are ranked."""
    from utdebug.engine.model import RANKERS

    r.add_argument(
        "--candidates",
        type=int,
        default=_D.ranking.candidates,
        help="edits sampled per debugging round, ranked with --ranker against the generated "
        "tests (default 1: the paper's loop, no ranking)",
    )
    r.add_argument(
        "--ranker",
        choices=list(RANKERS),
        default=_D.ranking.ranker,
        help="how --candidates are ranked (default b4; see docs/ranking.md)",
    )
    r.add_argument(
        "--tie",
        choices=["first", "pool"],
        default=_D.ranking.tie,
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
        default=_D.judge.solutions,
        help="judge: solutions sampled per problem; b4-sim: solutions per trial (default 10)",
    )


def _verify_arguments(v: argparse._ArgumentGroup) -> None:
    from utdebug.benchmarks.scoring_verifiers import SETS

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
        choices=list(SETS),
        default=None,
        help="a Scoring-Verifiers set; its file (HE-R.jsonl ...) is looked up in --data-dir / "
        "UTDEBUG_DATA_DIR / the cache, else downloaded from "
        "huggingface.co/datasets/nvidia/Scoring-Verifiers",
    )


def _sim_arguments(s: argparse._ArgumentGroup) -> None:
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
    s.add_argument("--seed", type=int, default=_D.sim.seed, help="seed of the simulated model")
    s.add_argument(
        "--grid",
        default=",".join(f"{v:g}" for v in _D.voting.grid),
        help="voting: per-vote accuracies to compare",
    )


def _b4_sim_arguments(group: argparse._ArgumentGroup) -> None:
    """The options of ``utdebug bench b4-sim`` (``-N/--solutions``, ``--seed``, ``--beta0``,
    ``--alpha-xy``, ``--tie`` and ``--json`` are shared with other modes)."""
    from utdebug.benchmarks.b4_sim import SWEEPS

    def grid(param: str) -> str:
        return ",".join(f"{v:g}" for v in SWEEPS[param])

    b4 = _D.b4
    group.add_argument(
        "-M",
        "--sim-tests",
        dest="sim_tests",
        type=int,
        default=b4.tests,
        help=f"b4-sim: tests per simulated task (default {b4.tests})",
    )
    group.add_argument(
        "--trials",
        type=int,
        default=b4.trials,
        help="b4-sim: valid (non-degenerate) trials per point; degenerate draws are skipped "
        f"and counted (default {b4.trials:,})",
    )
    group.add_argument(
        "--sweep",
        choices=["none", *SWEEPS, "all"],
        default=b4.sweep,
        help="b4-sim: also vary one parameter at a time as in the paper's Fig. 5, the others "
        f"at the point given (N: {grid('N')}; M: {grid('M')}; theta_x, theta_y: 0.1..0.9 "
        "step 0.1; all: the four in turn; default none)",
    )
    for flag, default, what in (
        ("--theta-x", b4.theta_x, "P(a solution is correct)"),
        ("--theta-y", b4.theta_y, "P(a test is correct)"),
        ("--theta-1", b4.theta_1, "P(a wrong solution passes a correct test)"),
        ("--theta-0", b4.theta_0, "P(a wrong solution passes a wrong test)"),
    ):
        group.add_argument(flag, type=float, default=default, help=f"b4-sim: {what} ({default})")


# --- from the command line to the options ----------------------------------------------------


def options_from(args: argparse.Namespace) -> BenchOptions:
    """The frozen options of a parsed ``bench`` command line (unchecked; :func:`run` checks
    them). The split is ``--split``, else the mode's default split, else ``hard``."""
    mode = MODES[args.mode]
    splits = tuple(args.split or [mode.default_split or "hard"])
    models = None if args.models is None else tuple(m.strip() for m in args.models.split(","))
    return BenchOptions(
        mode=args.mode,
        model=args.model,
        models=None if models is None else tuple(m for m in models if m),
        gold=args.gold,
        semantics=args.semantics,
        data=DataOptions(
            splits=splits,
            data_dir=args.data_dir,
            cache_dir=args.cache_dir,
            verify=not args.no_verify,
            he_variant=args.he_variant,
            val_file=args.val_file,
            classeval_seed=args.classeval_seed,
            classeval_cap=args.classeval_cap,
            problems=args.problems,
            limit=args.limit,
        ),
        limits=LimitOptions(
            timeout=args.timeout,
            kind=args.limit_kind,
            memory_mb=args.memory_mb,
            budget=args.budget,
            cut_after=args.cut_after,
            cut_limit=args.cut_limit,
        ),
        run=RunOptions(out=args.out, workers=args.workers, ray=args.ray, json=args.json),
        loop=LoopOptions(
            ut_method=args.ut_method,
            ut_model=args.ut_model,
            rounds=args.rounds,
            tests=args.tests,
            votes=args.votes,
            threshold=args.threshold,
            variant=args.variant,
            backtrack=not args.no_backtrack,
            problems_at_once=args.concurrency,
            cost_limit=args.cost_limit,
            use_cache=not args.no_cache,
            synth_inputs=args.synth_inputs,
        ),
        ranking=RankingOptions(
            candidates=args.candidates,
            ranker=args.ranker,
            tie=args.tie,
            beta0=args.beta0,
            alpha_xy=args.alpha_xy,
        ),
        sim=SimOptions(
            attack=args.sim_attack,
            out_acc=args.sim_out_acc,
            fix=args.sim_fix,
            regress=args.sim_regress,
            seed=args.seed,
        ),
        intrinsic=IntrinsicOptions(samples=args.samples),
        judge=JudgeOptions(solutions=args.solutions),
        voting=VotingOptions(grid=_grid(args.grid)),
        verify=VerifyOptions(file=args.verify_file, set=args.verify_set),
        b4=B4SimOptions(
            solutions=args.solutions,
            tests=args.sim_tests,
            trials=args.trials,
            sweep=args.sweep,
            theta_x=args.theta_x,
            theta_y=args.theta_y,
            theta_1=args.theta_1,
            theta_0=args.theta_0,
        ),
    )


def _grid(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise UsageError(f"--grid takes comma-separated numbers, not {text!r}") from None


# --- the checks --------------------------------------------------------------------------------


def _check_common(o: BenchOptions) -> None:
    """What every mode asks of the limits, the data options and ``--models``."""
    lim, data = o.limits, o.data
    if not (math.isfinite(lim.timeout) and lim.timeout > 0):
        raise UsageError("--timeout must be a positive number of seconds")
    if o.run.workers is not None and o.run.workers < 1:
        raise UsageError("--workers must be at least 1")
    if not (math.isfinite(lim.budget) and lim.budget >= 0):
        raise UsageError("--budget must be 0 (no limit) or a positive number of seconds")
    if lim.cut_after is not None and lim.cut_after < 0:
        raise UsageError("--cut-after must be 0 (off) or positive")
    if not (math.isfinite(lim.cut_limit) and lim.cut_limit > 0):
        raise UsageError("--cut-limit must be a positive number of seconds")
    if lim.memory_mb < 1:
        raise UsageError("--memory-mb must be at least 1")
    if data.limit is not None and data.limit < 0:
        raise UsageError("--limit must be 0 or more (the first N problems)")
    if "val" in data.splits and data.val_file is None:
        raise UsageError("--split val needs --val-file PATH (a file in the MBPP+Fix format)")
    if data.val_file is not None and "val" not in data.splits:
        raise UsageError("--val-file is read for --split val")
    if data.classeval_cap < 1:
        raise UsageError("--classeval-cap must be at least 1")
    if o.models is not None:
        if MODES[o.mode].with_models is None:
            raise UsageError("--models is for bench intrinsic (checkpoint selection)")
        if not o.without_model:
            raise UsageError("give --model or --models, not both")
        if not o.models:
            raise UsageError("--models needs at least one model")


def _check_model_driven(o: BenchOptions) -> None:
    """What a run with ``--model`` or ``--models`` asks of the loop, ranking and simulation."""
    loop, rank = o.loop, o.ranking
    if loop.rounds < 0:
        raise UsageError("--rounds must be 0 or more")
    if loop.tests is not None and loop.tests < 1:
        raise UsageError("-n/--tests must be at least 1")
    if loop.votes < 0:
        raise UsageError("-k/--votes must be 0 (no voting) or more")
    if not 0 < loop.threshold <= 1:
        raise UsageError("--threshold must be in (0, 1]")
    if loop.problems_at_once < 1:
        raise UsageError("--problems-at-once must be at least 1")
    cost = loop.cost_limit
    if cost is not None and not (math.isfinite(cost) and cost >= 0):
        raise UsageError("--cost-limit must be 0 or a positive number of US dollars")
    if o.intrinsic.samples < 1:
        raise UsageError("--samples must be at least 1")
    if loop.synth_inputs < 0 or (loop.synth_inputs and not MODES[o.mode].synth_inputs):
        raise UsageError("--synth-inputs applies to bench eval, ablation and voting (N >= 0)")
    if rank.candidates < 1:
        raise UsageError("--candidates must be at least 1")
    if rank.candidates > 1 and (loop.variant != "paper" or loop.ut_method == "none"):
        raise UsageError(
            "--candidates > 1 needs the paper variant and generated tests "
            "(not --variant reference, not --ut-method none)"
        )
    if o.judge.solutions < 1:
        raise UsageError("-N/--solutions must be at least 1")
    for name, v in (("beta0", rank.beta0), ("alpha-xy", rank.alpha_xy)):
        if v is not None and not (math.isfinite(v) and v > 0):
            raise UsageError(f"--{name} must be a positive number")
    sim = o.sim
    for name, p in (
        ("sim-attack", sim.attack),
        ("sim-out-acc", sim.out_acc),
        ("sim-fix", sim.fix),
        ("sim-regress", sim.regress),
    ):
        if p is not None and not 0 <= p <= 1:
            raise UsageError(f"--{name} must be in [0, 1]")
    if loop.simulated_ut_model:
        raise UsageError(
            "--ut-model sim is not supported: the simulated model plays every role "
            "(use --model sim)"
        )
    if MODES[o.mode].simulated_only and not o.simulated:
        raise UsageError(f"bench {o.mode} needs --model sim (it sweeps the per-vote accuracy)")


def _check_splits(o: BenchOptions) -> None:
    """Each named split takes the mode (its row of the split registry), else a usage error."""
    from utdebug.data.splits import SPLITS

    for spec in SPLITS.values():
        if spec.split.value not in o.data.splits:
            continue
        takes = o.mode in spec.modes and (o.models is None or spec.checkpoints)
        if not (takes or (spec.gold_only and o.gold)):
            raise UsageError(spec.refusal or f"--split {spec.split.value} does not take {o.mode}")


def _entry(mode: Mode, o: BenchOptions) -> str:
    """The ``module:function`` that runs ``o`` (after the checks the choice asks for)."""
    if o.run.ray and not (mode.ray and o.without_model):
        raise UsageError(
            "--ray runs the plain evaluation (bench without a mode or --model) on a cluster; "
            "the other modes and --model runs run on this machine: drop --ray"
        )
    if mode.model_free:
        assert mode.plain is not None
        return mode.plain
    _check_splits(o)
    if o.without_model and mode.plain is not None:
        return mode.plain
    if o.models is not None:
        _check_model_driven(o)
        assert mode.with_models is not None
        return mode.with_models
    if o.without_model or mode.with_model is None:
        raise UsageError(
            f"bench {o.mode} needs --model: --model sim for an offline try (SIMULATED), or a "
            "model of yours ('utdebug models' lists them; docs/models.md)"
        )
    if o.gold:
        raise UsageError("--gold evaluates the gold code; it does not combine with --model")
    _check_model_driven(o)
    return mode.with_model


# --- running it ------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    """``utdebug bench``: the checked options, then the mode's run function; its exit code."""
    try:
        options = options_from(args)
        _check_common(options)
    except UsageError as e:
        return usage_error(e)
    mode = MODES[options.mode]
    problem = None if mode.model_free else data_dir_problem(options.data.data_dir)
    if problem is not None:
        print(f"{PROG}: {problem}", file=sys.stderr)
        return Exit.USAGE
    try:
        entry = _entry(mode, options)
    except UsageError as e:
        return usage_error(e)
    from utdebug.runs.records import RunFolderError

    try:
        with sigterm_stops() as stop:
            return _run_mode(entry, options, args, stop)
    except RunFolderError as e:
        # A full disk (or a file-size limit): one line; the samples file holds only whole
        # records, so the same command resumes once there is room. Else --out is no folder.
        print(f"{PROG}: {e}; {e.advice}", file=sys.stderr)
        return Exit.USAGE


def _run_mode(
    entry: str, options: BenchOptions, args: argparse.Namespace, stop: threading.Event
) -> int:
    from utdebug.text_safety import guarded_output

    run_fn = Mode.load(entry)
    try:
        with guarded_output():  # no line a mode prints is a CI workflow command
            return run_fn(ModeContext(options, sandbox_config(args), stop))
    except UsageError as e:  # a mode's own check (its data, its settings)
        return usage_error(e)


def usage_error(e: UsageError) -> int:
    """``utdebug bench: error: ...`` on stderr, as argparse says a bad value; exit code 2."""
    sys.stderr.write(usage_line(PROG, str(e)))
    return Exit.USAGE


__all__ = ["PROG", "add_parser", "options_from", "run"]
