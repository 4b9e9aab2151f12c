"""``utdebug check``: generated tests against functions of a git repository, for CI.

``utdebug check PATH::FUNCTION ...`` checks the named functions; ``utdebug check --changed
[--base REF]`` checks the functions that the change from ``REF`` (default ``HEAD``: the
uncommitted changes) to the working tree touches. The report goes to stdout in the chosen
``--format`` (or to ``--output FILE``, with the human report on stdout); progress goes to
stderr. Exit codes: 0 no findings, 1 findings, 2 usage or environment error (including a
function that could not be checked, unless ``--allow-errors``, and a model that does not
answer the pre-flight probe: one tiny call before any function is checked, whatever
``--allow-errors`` says); a run stopped part-way by SIGTERM, SIGINT or its ``--deadline`` writes
a partial report and exits 143, 130 or 124. Each function is also compared with its base version on
synthesised inputs (differential testing: an input whose outcome changed is a finding); with no
model configured (or ``--no-model``) that comparison is the whole check. See ``docs/check.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from utdebug.cli_common import Exit, command_seconds, sandbox_config
from utdebug.cli_common import console as output_console
from utdebug.text_safety import no_workflow_commands, visible

DEFAULT_MIN_VOTES = 0.75


def add_parser(subparsers: Any, sandbox_opts: argparse.ArgumentParser) -> None:
    c: argparse.ArgumentParser = subparsers.add_parser(
        "check",
        parents=[sandbox_opts],
        help="generate tests that try to break functions of a git repository (for CI)",
        description="Generate tests (with voting) for the named functions, or the functions a "
        "git change touches, run them in the sandbox with the function's real module context, "
        "and report the failing tests whose expected output has a confident majority. "
        "Exit codes: 0 no findings, 1 findings, 2 usage or environment error; a run stopped "
        "part-way writes a partial report and exits 124 (--deadline), 130 (SIGINT) or 143 "
        "(SIGTERM).",
    )
    _target_arguments(c)
    _test_arguments(c)
    _differential_arguments(c)
    _output_arguments(c)


def _target_arguments(c: argparse.ArgumentParser) -> None:
    """Which functions ``check`` tests, at which revision, with which model."""
    c.add_argument("targets", nargs="*", metavar="PATH::FUNCTION", help="functions to check")
    c.add_argument("--changed", action="store_true", help="check the functions the change touches")
    c.add_argument(
        "--base",
        default=os.environ.get("UTDEBUG_BASE") or "HEAD",
        help="compare with this revision (default HEAD, env UTDEBUG_BASE); with a branch, "
        "the change since the merge base",
    )
    c.add_argument(
        "--no-merge-base",
        action="store_true",
        help="compare with --base itself, not with its merge base",
    )
    c.add_argument("--rev", default=None, help="check this commit instead of the working tree")
    c.add_argument(
        "--path",
        action="append",
        default=[],
        dest="paths",
        help="with --changed: only files under this repository path (repeatable)",
    )
    c.add_argument(
        "--model",
        default=None,
        help="a configured model name, a litellm model string or 'scripted:FILE' "
        "(default: UTDEBUG_MODEL, then the config file's default)",
    )


def _test_arguments(c: argparse.ArgumentParser) -> None:
    """How ``check`` tests a function, when a failing test is a finding, and ``--fix``."""
    c.add_argument("-n", "--tests", type=int, default=3, help="tests per function (3)")
    c.add_argument("-k", "--votes", type=int, default=8, help="output votes per test (8)")
    c.add_argument(
        "--threshold",
        type=float,
        default=0.5,
        help="keep a test when its expected output wins this share of the votes (0.5)",
    )
    c.add_argument(
        "--min-votes",
        type=float,
        default=DEFAULT_MIN_VOTES,
        help="a failing test is a finding when its expected output won at least this share "
        f"of the votes ({DEFAULT_MIN_VOTES})",
    )
    c.add_argument("--timeout", type=float, default=2.0, help="seconds per test run (2)")
    c.add_argument(
        "--task", default=None, help="what the function should do (with --changed: every function)"
    )
    c.add_argument(
        "--fix", action="store_true", help="run the debugging loop and write a patch file"
    )
    c.add_argument("--rounds", type=int, default=3, help="debugging rounds with --fix (3)")
    c.add_argument(
        "--patch",
        type=Path,
        default=Path("utdebug-fix.patch"),
        help="patch file written by --fix (default utdebug-fix.patch; apply it with git apply)",
    )
    c.add_argument(
        "--apply", action="store_true", help="with --fix: also write the fixes to the files"
    )


def _differential_arguments(c: argparse.ArgumentParser) -> None:
    """The comparison of each function with its base version (the whole check without a
    model)."""
    c.add_argument(
        "--no-model",
        action="store_true",
        help="use no model, even when one is configured: compare each function with its base "
        "version on synthesised inputs only (also what happens when no model is configured)",
    )
    c.add_argument(
        "--no-differential",
        action="store_true",
        help="with a model: do not also compare each function with its base version",
    )
    c.add_argument(
        "--synth-inputs",
        type=int,
        default=200,
        help="inputs synthesised per function for the comparison with its base (200)",
    )
    c.add_argument(
        "--accept",
        action="store_true",
        help="record the changed outcomes found as intended in the accept file (they are not "
        "reported as findings again)",
    )
    c.add_argument(
        "--accept-file",
        type=Path,
        default=None,
        help="the accept file (default: .utdebug/accepted.json in the repository)",
    )
    c.add_argument(
        "--min-compared",
        type=float,
        default=0.0,
        metavar="FRACTION",
        help="fail (exit 1) when fewer than this share of the changed functions were compared "
        "with their base version (default 0: never)",
    )


def _output_arguments(c: argparse.ArgumentParser) -> None:
    """Where ``check``'s report goes, the results cache, the exit code and progress."""
    from utdebug.check.formats import FORMATS

    c.add_argument("--format", choices=FORMATS, default="human", help="report format (human)")
    c.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        help="write the report there (the human report still goes to stdout)",
    )
    c.add_argument(
        "--report",
        action="append",
        default=[],
        metavar="FORMAT=PATH",
        help="also write the report in FORMAT to PATH (repeatable), e.g. sarif=utdebug.sarif",
    )
    c.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="results cache (default: $UTDEBUG_CACHE_DIR/check or ~/.cache/utdebug/check)",
    )
    c.add_argument("--no-cache", action="store_true", help="check every function again")
    c.add_argument(
        "--allow-errors",
        action="store_true",
        help="exit 0 (not 2) when some functions could not be checked but nothing was found",
    )
    c.add_argument(
        "--deadline",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop after SECONDS (from the command's start), write a partial report and exit "
        "124; SIGTERM and SIGINT do the same (exit 143, 130); a rerun goes on from the cache",
    )
    c.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")


def run(args: argparse.Namespace) -> int:
    from utdebug.agents.choice import NONE
    from utdebug.check.formats import render, write_human
    from utdebug.check.options import CheckError, CheckOptions, model_choice, model_info
    from utdebug.check.review import run_check
    from utdebug.check.stopping import Stopper

    def progress(msg: str) -> None:
        if not args.quiet:
            print(f"utdebug check: {visible(msg)}", file=sys.stderr, flush=True)

    try:
        files = ([(args.format, args.output)] if args.output is not None else []) + [
            _report_spec(x) for x in args.report
        ]
        _check_destinations(files, args.patch if args.fix else None)
        if args.deadline is not None and not args.deadline > 0:
            raise CheckError("--deadline must be more than 0 seconds")
        options = CheckOptions(
            targets=tuple(args.targets),
            changed=bool(args.changed),
            base=args.base,
            rev=args.rev,
            use_merge_base=not args.no_merge_base,
            paths=tuple(args.paths),
            min_votes=args.min_votes,
            tests=args.tests,
            votes=args.votes,
            threshold=args.threshold,
            timeout=args.timeout,
            task=args.task,
            fix=bool(args.fix),
            rounds=args.rounds,
            apply=bool(args.apply),
            patch=args.patch if args.fix else None,
            cache_dir=args.cache_dir,
            use_cache=not args.no_cache,
            allow_errors=bool(args.allow_errors),
            cwd=Path.cwd(),
            differential=not args.no_differential,
            accept=bool(args.accept),
            accept_file=args.accept_file,
            synth_inputs=args.synth_inputs,
            min_compared=args.min_compared,
        )
        from utdebug.check.targets import locate

        # usage errors, a folder outside git and a missing file before a model is built
        located = locate(options)
        model = None
        choice = NONE if args.no_model else model_choice(args.model)
        if choice.chosen:
            model = model_info(choice)
            _preflight(model.model, progress)
        elif args.fix:
            raise CheckError("--fix needs a model (--model, UTDEBUG_MODEL or the config file)")
        else:
            progress(
                "no model: comparing each function with its base version on synthesised inputs"
            )
        stop = Stopper(None if args.deadline is None else args.deadline - command_seconds())
        with stop.installed():
            report = run_check(
                options, model, sandbox_config(args), progress=progress, located=located, stop=stop
            )
    except CheckError as e:
        print(f"utdebug check: {visible(str(e))}", file=sys.stderr)
        return Exit.USAGE
    report = replace(report, seconds=command_seconds())  # the command's, start-up included
    for fmt, path in files:
        try:
            path.write_text(render(report, fmt), encoding="utf-8")
        except OSError as e:
            print(f"utdebug check: {visible(f'cannot write {path}: {e}')}", file=sys.stderr)
            return Exit.USAGE
        progress(f"{fmt} report written to {path}")
    if args.output is None and args.format != "human":
        sys.stdout.write(render(report, args.format))
        sys.stdout.flush()
    else:
        # rendered first: no line that rich wrapped may start a CI workflow command; to a
        # file or a pipe nothing is wrapped
        console = output_console(highlight=False)
        with console.capture() as captured:
            write_human(report, console)
        sys.stdout.write(no_workflow_commands(captured.get()))
        sys.stdout.flush()
    return report.exit_code()


def _preflight(model: Any, progress: Any) -> None:
    """Probe the model once before any function is checked: ``CheckError`` (exit 2, one line)
    when it cannot answer, so that a model that is down is not reported function by function
    (nor passed by ``--allow-errors``)."""
    import asyncio

    from utdebug.agents.base import ModelError
    from utdebug.agents.preflight import preflight
    from utdebug.check.options import CheckError
    from utdebug.runs.folder import one_line

    try:
        found = asyncio.run(preflight(model))
    except ModelError as e:
        raise CheckError(f"the model cannot be used: {one_line(e, 600)}") from None
    if found.note:
        progress(f"model {found.model}: {found.note}")


def _check_destinations(files: list[tuple[str, Path]], patch: Path | None) -> None:
    """``CheckError`` (exit 2, before any work) when a report or the patch would be written
    into a folder that does not exist, or onto a folder: check writes files, it never makes
    folders (as root, ``-o /nonexistent/dir/out.json`` made ``/nonexistent/dir``)."""
    from utdebug.check.options import CheckError

    named = [(f"the {fmt} report", path) for fmt, path in files]
    if patch is not None:
        named.append(("the patch", patch))
    for what, path in named:
        if path.is_dir():
            raise CheckError(f"cannot write {what} to {path}: it is a folder; name a file")
        if not path.parent.is_dir():
            raise CheckError(
                f"cannot write {what} to {path}: the folder {path.parent} does not exist "
                "(check makes no folders: create it first)"
            )


def _report_spec(text: str) -> tuple[str, Path]:
    from utdebug.check.formats import FORMATS
    from utdebug.check.options import CheckError

    fmt, sep, path = text.partition("=")
    if not sep or not path.strip():
        raise CheckError(f"--report {text!r}: write it as FORMAT=PATH (e.g. sarif=out.sarif)")
    if fmt not in FORMATS:
        raise CheckError(f"--report {text!r}: unknown format {fmt!r} ({', '.join(FORMATS)})")
    return fmt, Path(path)
