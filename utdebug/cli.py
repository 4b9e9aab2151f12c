"""The ``utdebug`` command line: ``debug`` and ``demo`` (the interactive app), ``bench``
(headless benchmarks), ``check`` (functions of a git repository, for CI), ``train data``
(UTGen's training data), ``models`` (configured models) and ``doctor`` (sandbox layers).

stdout carries results (tables, or JSON with ``--json``); progress and diagnostics go to stderr.
When stdout is closed early (``utdebug bench --json | head``), the command stops quietly with
exit code 141 (128 + SIGPIPE, what a shell reports for a process a closed pipe ends).
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NoReturn

from utdebug.cli_common import Exit, usage_line
from utdebug.cli_common import console as output_console
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
        self.exit(2, usage_line(self.prog, message))


@dataclass(frozen=True, slots=True)
class Command:
    """A command of the table :data:`COMMANDS`: how its parser is added and how it runs (each
    imports its command module when it is called, and only then)."""

    add: Callable[[Any, argparse.ArgumentParser], None]
    """Adds the command's subparser (given the subparsers and the sandbox options)."""
    run: Callable[[argparse.Namespace, argparse.ArgumentParser], int]
    interrupted: str = "interrupted"
    """What Ctrl-C says: that it stopped, and how to go on from there."""


def _add_doctor(sub: Any, sandbox_opts: argparse.ArgumentParser) -> None:
    doctor = sub.add_parser(
        "doctor", parents=[sandbox_opts], help="show which sandbox layers are active here"
    )
    doctor.add_argument("--json", action="store_true", help="print the report as JSON")


def _add_bench(sub: Any, sandbox_opts: argparse.ArgumentParser) -> None:
    from utdebug import bench_cmd

    bench_cmd.add_parser(sub, sandbox_opts)


def _run_bench(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from utdebug import bench_cmd

    return bench_cmd.run(args)


def _add_models(sub: Any, sandbox_opts: argparse.ArgumentParser) -> None:
    from utdebug import models_cmd

    models_cmd.add_parser(sub)


def _run_models(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from utdebug import models_cmd

    return models_cmd.run(args)


def _add_debug(sub: Any, sandbox_opts: argparse.ArgumentParser) -> None:
    """``debug`` and ``demo``."""
    from utdebug import debug_cmd

    debug_cmd.add_parsers(sub, sandbox_opts)


def _run_debug(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from utdebug import debug_cmd

    return debug_cmd.run_debug(args) if args.command == "debug" else debug_cmd.run_demo(args)


def _add_check(sub: Any, sandbox_opts: argparse.ArgumentParser) -> None:
    from utdebug import check_cmd

    check_cmd.add_parser(sub, sandbox_opts)


def _run_check(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from utdebug import check_cmd

    return check_cmd.run(args)


def _add_train(sub: Any, sandbox_opts: argparse.ArgumentParser) -> None:
    from utdebug import train_cmd

    train_cmd.add_parser(sub, sandbox_opts)


def _run_train(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from utdebug import train_cmd

    return train_cmd.run(args, parser)


COMMANDS: dict[str, Command] = {
    "doctor": Command(_add_doctor, lambda args, parser: _doctor(args)),
    "bench": Command(
        _add_bench,
        _run_bench,
        "interrupted: finished problems are kept; rerun the same command to resume",
    ),
    "models": Command(_add_models, _run_models),
    "debug": Command(
        _add_debug,
        _run_debug,
        "interrupted: the session is saved; the same command takes it back",
    ),
    "demo": Command(
        _add_debug,
        _run_debug,
        "interrupted: the session is saved; the same command (with the same --dir) takes it back",
    ),
    "check": Command(
        _add_check,
        _run_check,
        "interrupted: the functions checked so far are cached; rerun the same command to go on",
    ),
    "train": Command(
        _add_train,
        _run_train,
        "interrupted: what is written is kept; rerun the same command to resume",
    ),
}
"""Every command, in the order ``utdebug --help`` lists them."""


def build_parser(only: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The parser of ``utdebug`` with the commands in ``only`` (``None``: every command, for
    ``utdebug --help`` and a mistyped command). A command left out is not imported."""
    from utdebug import __version__

    parser: argparse.ArgumentParser = _Parser(
        prog="utdebug",
        description="Find and fix bugs in a Python function with generated unit tests.",
    )
    parser.add_argument("--version", action="version", version=f"utdebug {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sandbox_opts = _sandbox_options()
    adders = [c.add for name, c in COMMANDS.items() if only is None or name in only]
    for add in dict.fromkeys(adders):  # debug and demo share one
        add(sub, sandbox_opts)
    return parser


def _commands_named(argv: Sequence[str]) -> tuple[str, ...] | None:
    """The commands whose parsers ``argv`` needs: the one it names; none before
    ``--version`` (it prints before any command is read); every one for ``--help`` before a
    command, a mistyped command or none."""
    for arg in argv:
        if arg == "--version":
            return ()
        if arg in ("-h", "--help"):
            return None
        if not arg.startswith("-"):
            return (arg,) if arg in COMMANDS else None
    return None


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


def _stdout_closed() -> None:
    """What rich does when stdout is closed mid-table: raise :class:`BrokenPipeError` so that
    :func:`main` ends with 141 (rich's own handler exits 1, which ``check`` uses for
    findings)."""
    raise BrokenPipeError


def main(argv: Sequence[str] | None = None) -> int:
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
    given = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_commands_named(given))
    _Parser.argv = given
    try:
        args = parser.parse_args(given)
    finally:
        _Parser.argv = []
    command = COMMANDS[args.command]
    # Every table and report goes through a rich Console: a closed stdout is one case here.
    # (Set once the command is known: --help and --version do not load rich.)
    from rich.console import Console

    Console.on_broken_pipe = lambda self: _stdout_closed()  # type: ignore[method-assign]
    try:
        return command.run(args, parser)
    except KeyboardInterrupt:
        print(command.interrupted, file=sys.stderr)
        return Exit.INTERRUPTED


def _doctor(args: argparse.Namespace) -> int:
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
        console = output_console()
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
