"""The ``utdebug`` command line: ``debug`` and ``demo`` (the interactive app), ``bench``
(headless benchmarks), ``check`` (functions of a git repository, for CI), ``train data``
(UTGen's training data), ``models`` (configured models) and ``doctor`` (sandbox layers).

stdout carries results (tables, or JSON with ``--json``); progress and diagnostics go to stderr.
When stdout is closed early (``utdebug bench --json | head``), the command stops quietly with
exit code 141 (128 + SIGPIPE, what a shell reports for a process a closed pipe ends).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import math
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, NoReturn, TextIO, cast

from utdebug.cli_common import Exit, data_dir_problem, sigterm_stops
from utdebug.cli_common import env_flag as _env_flag
from utdebug.cli_common import sandbox_config as _sandbox_config

__all__ = ["Exit", "build_parser", "main"]


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors name an unknown option first: ``bench --splitt hard``
    says ``unrecognized option --splitt (did you mean --split?)``, not that ``hard`` is an
    invalid mode."""

    argv: ClassVar[list[str]] = []
    """The arguments being parsed (set by :func:`_main` while it parses them: a later
    ``parser.error`` about a value is said as it is)."""

    def error(self, message: str) -> NoReturn:
        known = self._option_string_actions
        unknown = [
            a.split("=", 1)[0]
            for a in self.argv
            if a.startswith("--") and a != "--" and a.split("=", 1)[0] not in known
        ]
        if unknown:
            near = difflib.get_close_matches(unknown[0], [o for o in known if o[:2] == "--"], 1)
            message = f"unrecognized option {unknown[0]}" + (
                f" (did you mean {near[0]}?)" if near else ""
            )
        # One line, not the whole usage (a bad --split printed 40 lines of it).
        self.exit(2, f"{self.prog}: error: {message} ('{self.prog} --help' lists the options)\n")


def build_parser() -> argparse.ArgumentParser:
    from utdebug import __version__

    parser: argparse.ArgumentParser = _Parser(
        prog="utdebug",
        description="Find and fix bugs in a Python function with generated unit tests.",
    )
    parser.add_argument("--version", action="version", version=f"utdebug {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sandbox_opts = _sandbox_options()
    doctor = sub.add_parser(
        "doctor", parents=[sandbox_opts], help="show which sandbox layers are active here"
    )
    doctor.add_argument("--json", action="store_true", help="print the report as JSON")

    _add_bench(sub, sandbox_opts)

    from utdebug import check_cmd, debug_cmd, models_cmd, train_cmd

    models_cmd.add_parser(sub)
    debug_cmd.add_parsers(sub, sandbox_opts)
    check_cmd.add_parser(sub, sandbox_opts)
    train_cmd.add_parser(sub, sandbox_opts)
    return parser


def _sandbox_options() -> argparse.ArgumentParser:
    """``--allow-weak-sandbox`` and ``--no-bwrap``, shared by the commands that run code."""
    sandbox_opts = argparse.ArgumentParser(add_help=False)
    sandbox_opts.add_argument(
        "--allow-weak-sandbox",
        action="store_true",
        default=_env_flag("UTDEBUG_ALLOW_WEAK_SANDBOX"),
        help="run untrusted code even if some sandbox layers are missing "
        "(env UTDEBUG_ALLOW_WEAK_SANDBOX=1)",
    )
    sandbox_opts.add_argument(
        "--no-bwrap", action="store_true", help="do not use bubblewrap (use the fallback layers)"
    )
    return sandbox_opts


def _add_bench(sub: Any, sandbox_opts: argparse.ArgumentParser) -> None:
    bench = sub.add_parser(
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
    _bench_problem_arguments(bench)
    _bench_limit_arguments(bench)
    _bench_run_arguments(bench)
    from utdebug.benchmarks import b4_sim
    from utdebug.benchmarks.model_bench import add_arguments

    add_arguments(bench)
    b4_sim.add_arguments(bench.add_argument_group("bench b4-sim (no model, no sandbox)"))


def _bench_problem_arguments(bench: argparse.ArgumentParser) -> None:
    """What ``bench`` evaluates: the mode, the splits, the model, the comparison."""
    from utdebug.benchmarks.modes import DEFAULT_MODE, MODES, modes_help

    bench.add_argument(
        "mode",
        nargs="?",
        default=DEFAULT_MODE,
        choices=list(MODES),
        help=modes_help(),
    )
    bench.add_argument(
        "--split",
        action="append",
        choices=["hard", "mbpp", "he", "he+", "val", "classeval"],
        help="split to evaluate (repeatable; default: hard; bench judge: he+, HumanEval+ "
        "code generation; val: the file of --val-file; classeval: ClassEval+Fix, methods of "
        "classes with ClassEval's unittest tests, data CC BY-NC 4.0)",
    )
    bench.add_argument(
        "--classeval-seed",
        type=int,
        default=0,
        help="ClassEval+Fix: seed of the corrupted versions (default 0)",
    )
    bench.add_argument(
        "--classeval-cap",
        type=int,
        default=3,
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
        default="none",
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
        default="dataset",
        help="output comparison: the dataset's own assertion helper (default) or the UTDebug "
        "authors' eval_exact_match",
    )


def _bench_limit_arguments(bench: argparse.ArgumentParser) -> None:
    """The limits of ``bench``'s programs: time, memory, cuts."""
    bench.add_argument(
        "--timeout",
        type=float,
        default=2.0,
        help="seconds per test input (default 2, as the paper), of --limit-kind",
    )
    bench.add_argument(
        "--limit-kind",
        choices=["cpu", "wall"],
        default="cpu",
        help="what --timeout, --budget, --cut-limit and the load limit measure: cpu (default: "
        "the program's CPU time, all its threads, as the kernel counts it; a wall-clock "
        "backstop of 3x stops a program only while all its threads sleep or block, never "
        "one running or waiting for a CPU; verdicts move with load only as far as the CPU "
        "time a computation needs does, e.g. through shared caches) or wall (wall-clock "
        "time, as the paper's harness)",
    )
    bench.add_argument("--memory-mb", type=int, default=2048, help="address-space limit per child")
    bench.add_argument(
        "--budget",
        type=float,
        default=120.0,
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
        default=0.25,
        help="seconds per input after --cut-after timeouts (default 0.25)",
    )
    bench.add_argument(
        "--he-variant",
        choices=["body", "runnable"],
        default="body",
        help="HE+Fix buggy code: 'body' as published (does not load: 0%%) or 'runnable' "
        "(declaration + body)",
    )


def _bench_run_arguments(bench: argparse.ArgumentParser) -> None:
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


def _stdout_closed() -> None:
    """What rich does when stdout is closed mid-table: raise :class:`BrokenPipeError` so that
    :func:`main` ends with 141 (rich's own handler exits 1, which ``check`` uses for
    findings)."""
    raise BrokenPipeError


def main(argv: Sequence[str] | None = None) -> int:
    from rich.console import Console

    # Every table and report goes through a rich Console: a closed stdout is one case here.
    Console.on_broken_pipe = lambda self: _stdout_closed()  # type: ignore[method-assign]
    try:
        code = _main(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader of stdout went away (``| head``): no traceback, and no second error when
        # Python flushes stdout at exit.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return Exit.BROKEN_PIPE
    return code


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    _Parser.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(argv)
    finally:
        _Parser.argv = []
    try:
        if args.command == "doctor":
            return _doctor(args)
        if args.command == "bench":
            with _guarded_output():
                return _bench(args, parser)
        if args.command == "models":
            from utdebug import models_cmd

            return models_cmd.run(args)
        if args.command == "check":
            from utdebug import check_cmd

            return check_cmd.run(args)
        if args.command == "train":
            from utdebug import train_cmd

            return train_cmd.run(args, parser)
        if args.command in ("debug", "demo"):
            from utdebug import debug_cmd

            return (
                debug_cmd.run_debug(args) if args.command == "debug" else debug_cmd.run_demo(args)
            )
    except KeyboardInterrupt:
        print(interrupted_line(args.command), file=sys.stderr)
        return Exit.INTERRUPTED
    parser.error(f"unknown command {args.command!r}")


INTERRUPTED = {
    "bench": "interrupted: finished problems are kept; rerun the same command to resume",
    "check": "interrupted: the functions checked so far are cached; rerun the same command "
    "to go on",
    "debug": "interrupted: the session is saved; the same command takes it back",
    "demo": "interrupted: the session is saved; the same command (with the same --dir) takes "
    "it back",
    "train": "interrupted: what is written is kept; rerun the same command to resume",
}


def interrupted_line(command: str | None) -> str:
    """What Ctrl-C says: that it stopped, and how to go on from there."""
    return INTERRUPTED.get(command or "", "interrupted")


def _doctor(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from utdebug.sandbox import Sandbox, SandboxError, SandboxUnavailable
    from utdebug.sandbox.layers import HINTS, hint

    cfg = _sandbox_config(args)
    # The doctor reports; it never refuses, so it always starts with allow_weak.
    from dataclasses import replace

    sb = Sandbox(replace(cfg, allow_weak=True))
    try:
        rep = sb.start()
        probe = sb.run("def f(x):\n    return x + 1\n", "f", [[41]])
        works = probe.outcomes[0].value == 42
    except (SandboxUnavailable, SandboxError) as e:
        print(f"utdebug doctor: {e}", file=sys.stderr)
        return Exit.SANDBOX
    finally:
        sb.close()
    missing = rep.missing(cfg.required)

    def hints(state: Any) -> str:
        return hint(state.layer, rep.mode == "bwrap") if state.layer in HINTS else state.detail

    if args.json:
        print(
            json.dumps(
                rep.as_dict()
                | {
                    "probe_ok": works,
                    "missing": [s.layer.value for s in missing],
                    "hints": {s.layer.value: hints(s) for s in missing},
                },
                indent=2,
            )
        )
    else:
        table = Table(title=f"utdebug sandbox layers (mode: {rep.mode})")
        table.add_column("layer")
        table.add_column("active")
        table.add_column("detail")
        for s in rep.states:
            table.add_row(s.layer.value, "yes" if s.active else "[red]no[/red]", s.detail)
        console = Console()
        console.print(table)
        console.print(f"probe program ran: {'yes' if works else 'NO'}")
        for note in rep.errors:
            console.print(f"[yellow]note:[/yellow] {note}")
        if missing:
            console.print(
                "[red]missing layers:[/red] "
                + ", ".join(s.layer.value for s in missing)
                + " — utdebug refuses to run untrusted code unless --allow-weak-sandbox is given"
            )
            for s in missing:
                console.print(f"  {s.layer.value}: {hints(s)}")
    if not works:
        return Exit.SANDBOX
    return Exit.OK if not missing or cfg.allow_weak else Exit.SANDBOX


@contextlib.contextmanager
def _guarded_output() -> Iterator[None]:
    """stdout and stderr through :class:`~utdebug.text_safety.GuardedStream` while the block
    runs: whatever a bench mode prints (a problem's error, a model's message, a task id that
    rich wrapped onto a line of its own), no line of it is a CI workflow command."""
    from utdebug.text_safety import GuardedStream

    out, err = sys.stdout, sys.stderr
    sys.stdout = cast(TextIO, GuardedStream(out))
    sys.stderr = cast(TextIO, GuardedStream(err))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


def _bench(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        parser.error("--timeout must be a positive number of seconds")
    if args.workers is not None and args.workers < 1:
        parser.error("--workers must be at least 1")
    if not (math.isfinite(args.budget) and args.budget >= 0):
        parser.error("--budget must be 0 (no limit) or a positive number of seconds")
    if args.cut_after is not None and args.cut_after < 0:
        parser.error("--cut-after must be 0 (off) or positive")
    if not (math.isfinite(args.cut_limit) and args.cut_limit > 0):
        parser.error("--cut-limit must be a positive number of seconds")
    if args.memory_mb < 1:
        parser.error("--memory-mb must be at least 1")
    if args.limit is not None and args.limit < 0:
        parser.error("--limit must be 0 or more (the first N problems)")
    if "val" in (args.split or []) and args.val_file is None:
        parser.error("--split val needs --val-file PATH (a file in the MBPP+Fix format)")
    if args.val_file is not None and "val" not in (args.split or []):
        parser.error("--val-file is read for --split val")
    if args.classeval_cap < 1:
        parser.error("--classeval-cap must be at least 1")
    if args.models is not None:
        if args.mode != "intrinsic":
            parser.error("--models is for bench intrinsic (checkpoint selection)")
        if args.model != "none":
            parser.error("give --model or --models, not both")
        if not [m for m in args.models.split(",") if m.strip()]:
            parser.error("--models needs at least one model")
    if args.mode != "b4-sim":
        problem = data_dir_problem(args.data_dir)
        if problem is not None:
            print(f"utdebug bench: {problem}", file=sys.stderr)
            return Exit.USAGE
    from utdebug.runs.records import RunFolderError

    try:
        with sigterm_stops() as stop:
            return _bench_mode(args, parser, stop)
    except RunFolderError as e:
        # A full disk (or a file-size limit): one line; the samples file holds only whole
        # records, so the same command resumes once there is room. Else --out is no folder.
        print(f"utdebug bench: {e}; {e.advice}", file=sys.stderr)
        return Exit.USAGE


def _bench_mode(
    args: argparse.Namespace, parser: argparse.ArgumentParser, stop: threading.Event
) -> int:
    """Run the mode of the table :data:`utdebug.benchmarks.modes.MODES`, after the checks its
    row and the split registry (:mod:`utdebug.data.splits`) ask for."""
    from utdebug.benchmarks.modes import MODES, ModeContext

    mode = MODES[args.mode]
    if args.ray and not (mode.ray and args.model == "none"):
        parser.error(
            "--ray runs the plain evaluation (bench without a mode or --model) on a cluster; "
            "the other modes and --model runs run on this machine: drop --ray"
        )
    if mode.model_free:
        return mode.load(mode.plain)(ModeContext(args, _sandbox_config(args), stop))
    if mode.default_split is not None and not args.split:
        args.split = [mode.default_split]
    _check_splits(args, parser)
    if args.model == "none" and mode.plain is not None:
        return mode.load(mode.plain)(ModeContext(args, _sandbox_config(args), stop))
    from utdebug.benchmarks.model_bench import check_arguments

    if args.models is not None:
        check_arguments(args, parser)
        return mode.load(mode.with_models)(ModeContext(args, _sandbox_config(args), stop))
    if args.model == "none":
        print(
            f"utdebug bench {args.mode}: needs --model: --model sim for an offline try "
            "(SIMULATED), or a model of yours ('utdebug models' lists them; docs/models.md)",
            file=sys.stderr,
        )
        return Exit.USAGE
    if args.gold:
        parser.error("--gold evaluates the gold code; it does not combine with --model")
    check_arguments(args, parser)
    return mode.load(mode.with_model)(ModeContext(args, _sandbox_config(args), stop))


def _check_splits(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Each named split takes the mode (its row of the split registry), else a usage error."""
    from utdebug.data.splits import SPLITS

    for spec in SPLITS.values():
        if spec.split.value not in (args.split or []):
            continue
        takes = args.mode in spec.modes and (args.models is None or spec.checkpoints)
        if not (takes or (spec.gold_only and args.gold)):
            parser.error(spec.refusal or f"--split {spec.split.value} does not take {args.mode}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
