"""``utdebug train data``: build UTGen's training data (the pipeline is :mod:`utdebug.train`)."""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path
from typing import Any, Literal

from utdebug.cli_common import Exit, data_dir_problem, sandbox_config, sigterm_stops

__all__ = ["add_parser", "run"]


def add_parser(sub: Any, sandbox_opts: argparse.ArgumentParser) -> None:
    train = sub.add_parser(
        "train",
        help="UTGen's training data (train data)",
        description="Make supervised fine-tuning data for a unit-test generator (UTGen).",
    )
    tsub = train.add_subparsers(dest="train_command", required=True, metavar="COMMAND")
    data = tsub.add_parser(
        "data",
        parents=[sandbox_opts],
        help="build SFT data: corrupted code, failing unit tests, rationales",
        description="From problems with gold code: corrupt the code (stage I), find unit-test "
        "inputs on which the corrupted code fails (stage II, labelled by the gold code in the "
        "sandbox), explain the gold outputs (stage III), and write SFT shards, a validation "
        "file, a dataset card and TRL configurations into --out. Problems that overlap an "
        "evaluation split are dropped. Rerunning the same command resumes.",
    )
    _source_arguments(data.add_argument_group("source"))
    pipeline = data.add_argument_group("pipeline")
    _stage_arguments(pipeline)
    _run_arguments(pipeline)
    _output_arguments(data.add_argument_group("output"))


def _source_arguments(g: argparse._ArgumentGroup) -> None:
    """The problems: where they come from, which of them, the held-out share."""
    g.add_argument(
        "--source",
        required=True,
        choices=["mbpp+", "he+", "tulu3", "table"],
        help="mbpp+ (MbppPlus), he+ (HumanEval+), tulu3 (the Tulu-3 SFT mixture, filtered), "
        "table (a JSONL/Parquet file or folder of description, code[, entry_point])",
    )
    g.add_argument(
        "--source-path",
        type=Path,
        default=None,
        help="table: the file or folder (required); tulu3: a local copy (file or folder) "
        "instead of a download",
    )
    g.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="folder holding the dataset files (env UTDEBUG_DATA_DIR); otherwise the cache, "
        "then a download",
    )
    g.add_argument("--cache-dir", type=Path, default=None, help="env UTDEBUG_CACHE_DIR")
    g.add_argument("--no-verify", action="store_true", help="accept files whose sha256 differs")
    g.add_argument(
        "--max-prompt-tokens",
        type=int,
        default=2048,
        help="tulu3: longest prompt kept, in approximate tokens (default 2048)",
    )
    g.add_argument(
        "--decontaminate",
        default=None,
        metavar="SPLITS",
        help="evaluation splits to drop overlapping problems for: comma-separated from hard, "
        "mbpp, he, he+, mbpp+, or 'none' (default: all but the source's own)",
    )
    g.add_argument(
        "--problems",
        default=None,
        metavar="IDS",
        help="only these problems (comma-separated ids, e.g. mbpp+/3,mbpp+/8)",
    )
    g.add_argument("--limit", type=int, default=None, help="only the first N problems")
    g.add_argument(
        "--val-fraction",
        type=float,
        default=0.0,
        help="share of the problems held out for validation (never in the SFT shards; written "
        "to val.jsonl in the MBPP+Fix format)",
    )


def _stage_arguments(m: argparse._ArgumentGroup) -> None:
    """What makes stages I-III: the model or none, and how much of each stage."""
    m.add_argument(
        "--model",
        default=None,
        help="the model of stages I-III: a configured name, a litellm model string, "
        "'scripted:FILE' or 'sim' (the SIMULATED model); default: env UTDEBUG_MODEL, then "
        "the config file's default",
    )
    m.add_argument(
        "--perturb",
        choices=["ast", "model"],
        default="ast",
        help="stage I: ast (mutation operators, no model; default) or model (the model "
        "corrupts the code)",
    )
    m.add_argument(
        "--inputs",
        choices=["model", "dataset", "synth"],
        default=None,
        help="stage II: model (the model proposes test inputs), dataset (the source's own test "
        "inputs on which the corrupted code fails, no model) or synth (those and inputs "
        "synthesised from them, labelled by the gold code, no model); default: model when a "
        "model is named (--model, UTDEBUG_MODEL, the config file), else dataset",
    )
    m.add_argument(
        "--rationale",
        choices=["model", "none"],
        default=None,
        help="stage III: model (the model explains the gold output) or none (targets without a "
        "rationale, no model); default: model when a model is named, else none",
    )
    m.add_argument("--seed", type=int, default=0, help="seed (mutations, the simulated model)")
    m.add_argument("--corruptions", type=int, default=2, help="corrupted versions per problem (2)")
    m.add_argument("--attempts", type=int, default=5, help="UT replies per version (5)")
    m.add_argument(
        "--tests-per-code", type=int, default=1, help="failing tests kept per version (1)"
    )
    m.add_argument("--rationale-tries", type=int, default=1, help="rationales asked per test (1)")


def _run_arguments(m: argparse._ArgumentGroup) -> None:
    """How the problems run: limits, parallelism, the response cache, the simulated model."""
    m.add_argument(
        "--timeout", type=float, default=1.0, help="seconds per input in the sandbox (1)"
    )
    m.add_argument(
        "--limit-kind",
        choices=["cpu", "wall"],
        default="cpu",
        help="what --timeout measures (default: the program's CPU time)",
    )
    m.add_argument(
        "--concurrency",
        type=int,
        default=0,
        help="problems at once (default: the cores; with --ray: the cluster's CPUs)",
    )
    m.add_argument(
        "--ray",
        metavar="ADDRESS",
        default=None,
        help="run the problems on a Ray cluster: host:port of its head, ray://host:port, auto "
        "(the cluster this machine belongs to) or local-cluster (start one here for this run); "
        "each worker process runs its own sandbox, this process writes everything (needs pip "
        "install 'utdebug[ray]')",
    )
    m.add_argument(
        "--endpoint-limit", type=int, default=4, help="model calls at once per endpoint (4)"
    )
    m.add_argument(
        "--no-cache",
        action="store_true",
        help="real models: no response cache (<cache-dir>/responses.sqlite)",
    )
    m.add_argument(
        "--sim-attack",
        type=float,
        default=None,
        help="sim: P(a proposed input attacks the code) (default 0.4196)",
    )
    m.add_argument(
        "--sim-rationale-error",
        type=float,
        default=0.1,
        help="sim: P(a rationale states another output) (default 0.1)",
    )


def _output_arguments(o: argparse._ArgumentGroup) -> None:
    """What ``train data`` writes."""
    o.add_argument(
        "--out", type=Path, default=None, help="run folder (default runs/train/<config>)"
    )
    o.add_argument("--shard-size", type=int, default=10_000, help="examples per shard")
    o.add_argument("--parquet", action="store_true", help="also write Parquet shards (pyarrow)")
    o.add_argument("--json", action="store_true", help="print the dataset card as JSON")


def _check(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    positive = {
        "corruptions": args.corruptions,
        "attempts": args.attempts,
        "tests-per-code": args.tests_per_code,
        "rationale-tries": args.rationale_tries,
        "shard-size": args.shard_size,
        "max-prompt-tokens": args.max_prompt_tokens,
        "endpoint-limit": args.endpoint_limit,
    }
    for name, value in positive.items():
        if value < 1:
            parser.error(f"--{name} must be at least 1")
    if args.concurrency < 0:
        parser.error("--concurrency must be 0 (the cores) or more")
    if args.limit is not None and args.limit < 0:
        parser.error("--limit must be 0 or more (the first N problems)")
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        parser.error("--timeout must be a positive number of seconds")
    if not 0 <= args.val_fraction < 1:
        parser.error("--val-fraction must be in [0, 1)")
    for name in ("sim_attack", "sim_rationale_error"):
        v = getattr(args, name)
        if v is not None and not 0 <= v <= 1:
            parser.error(f"--{name.replace('_', '-')} must be in [0, 1]")
    if args.source == "table" and args.source_path is None:
        parser.error("--source table needs --source-path FILE_OR_FOLDER")
    if args.decontaminate is not None and args.decontaminate.strip() != "none":
        from utdebug.train.decontam import EVAL_SPLITS

        bad = [s for s in args.decontaminate.split(",") if s.strip() not in EVAL_SPLITS]
        if bad:
            parser.error(
                f"--decontaminate: unknown split(s) {', '.join(bad)}; choose from "
                f"{', '.join(EVAL_SPLITS)} or 'none'"
            )
    if args.parquet:
        import importlib.util

        if importlib.util.find_spec("pyarrow") is None:
            parser.error("--parquet needs pyarrow (pip install pyarrow)")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", text).strip("_")[:60] or "model"


def _default_out(args: argparse.Namespace, model: str, inputs: str, rationale: str) -> Path:
    """``runs/train/<source>-<model>-<perturb>[-inputs-dataset|synth][-no-rationale]-s<seed>``."""
    stages = (f"-inputs-{inputs}" if inputs in ("dataset", "synth") else "") + (
        "-no-rationale" if rationale == "none" else ""
    )
    return (
        Path("runs") / "train" / f"{args.source}-{_slug(model)}-{args.perturb}{stages}-s{args.seed}"
    )


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    _check(args, parser)
    problem = data_dir_problem(args.data_dir)
    if problem is not None:
        print(f"utdebug train data: {problem}", file=sys.stderr)
        return Exit.USAGE
    from utdebug.agents.choice import ModelChoice, check_chosen, choice_of
    from utdebug.agents.config import ConfigError, resolve_model_spec
    from utdebug.agents.sim import SimParams
    from utdebug.data.datasets import default_cache_dir
    from utdebug.train.driver import run_train_data
    from utdebug.train.settings import NO_MODEL, Settings

    explicit = args.inputs is not None and args.rationale is not None
    model_free = args.inputs in ("dataset", "synth")
    if explicit and args.perturb == "ast" and model_free and args.rationale == "none":
        if args.model is not None:
            print(
                f"utdebug train data: --model {args.model}: no stage uses a model (--perturb ast "
                f"--inputs {args.inputs} --rationale none)",
                file=sys.stderr,
            )
            return Exit.USAGE
        choice: ModelChoice | None = None
    else:
        try:
            choice = choice_of(resolve_model_spec(args.model))
        except ConfigError as e:
            named = args.model is not None or "no model chosen" not in str(e)
            if named or args.perturb == "model" or "model" in (args.inputs, args.rationale):
                print(f"utdebug train data: {e}", file=sys.stderr)
                return Exit.USAGE
            choice = None  # nothing names a model: the stages that need none
        try:
            if choice is not None:
                check_chosen(choice)
        except ConfigError as e:
            print(f"utdebug train data: {e}", file=sys.stderr)
            return Exit.USAGE
    inputs: Literal["model", "dataset", "synth"]
    rationale: Literal["model", "none"]
    if choice is None:
        model = NO_MODEL
        inputs, rationale = args.inputs or "dataset", args.rationale or "none"
    else:
        model = choice.name
        inputs, rationale = args.inputs or "model", args.rationale or "model"
    sim_attack = args.sim_attack
    if choice is not None and choice.simulated and sim_attack is None:
        sim_attack = SimParams.for_method("utgen").attack
    cache_dir = args.cache_dir or default_cache_dir()
    settings = Settings(
        model=model,
        perturb=args.perturb,
        inputs=inputs,
        rationale=rationale,
        corruptions=args.corruptions,
        attempts=args.attempts,
        tests_per_code=args.tests_per_code,
        rationale_tries=args.rationale_tries,
        seed=args.seed,
        timeout=args.timeout,
        limit_kind=args.limit_kind,
        sim_attack=sim_attack,
        sim_rationale_error=args.sim_rationale_error,
        cache_dir=None if args.no_cache or choice is None or not choice.cached else str(cache_dir),
    )
    if args.out is None:
        args.out = _default_out(args, model, inputs, rationale)
    with sigterm_stops() as stop:
        return run_train_data(args, settings, sandbox_config(args), stop)
