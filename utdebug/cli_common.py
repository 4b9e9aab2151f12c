"""What every command module shares: exit codes, the sandbox options, the usage-error line,
the dataset folder's check, SIGTERM as Ctrl-C, the rich console a command prints through,
how long the command has run.

The command line reads top-down: :mod:`utdebug.cli` builds the parser and dispatches to the
command modules (``bench_cmd``, ``check_cmd``, ``debug_cmd``, ``models_cmd``, ``train_cmd``);
they and ``cli`` import this module, and this module imports none of them.
"""

from __future__ import annotations

import argparse
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "Exit",
    "command_seconds",
    "console",
    "data_dir_problem",
    "env_flag",
    "sandbox_config",
    "sigterm_stops",
    "usage_line",
]


_IMPORTED = time.monotonic()

UNWRAPPED_WIDTH = 100_000
"""The width a console writing to a file or a pipe lays tables out in: no limit in practice."""


class Exit(IntEnum):
    OK = 0
    FAILURE = 1
    """The command ran but what it checked failed."""
    MODEL = 1
    """A model could not be used (a model-driven benchmark mode; the same code as FAILURE)."""
    USAGE = 2
    """Bad arguments, missing or corrupt data."""
    SANDBOX = 3
    """The sandbox cannot give the required isolation here."""
    DEADLINE = 124
    """A run stopped by its own deadline (as ``timeout(1)``)."""
    INTERRUPTED = 130
    TERMINATED = 143
    """A run stopped by SIGTERM (128 + 15)."""
    BROKEN_PIPE = 141
    """stdout was closed before the results were written (128 + SIGPIPE)."""


def env_flag(name: str) -> bool:
    """An environment variable that is on (``1``, ``true``, ``yes``, ``on``)."""
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def usage_line(prog: str, message: str) -> str:
    """How a command says that its command line is wrong: one line (not the whole usage),
    ``PROG: error: MESSAGE ('PROG --help' lists the options)``."""
    return f"{prog}: error: {message} ('{prog} --help' lists the options)\n"


def sandbox_config(args: argparse.Namespace) -> Any:
    """The :class:`~utdebug.sandbox.SandboxConfig` of ``--allow-weak-sandbox`` and
    ``--no-bwrap``."""
    from utdebug.sandbox import SandboxConfig

    return SandboxConfig(
        allow_weak=bool(args.allow_weak_sandbox),
        use_bwrap=False if args.no_bwrap else None,
    )


def data_dir_problem(data_dir: Path | None) -> str | None:
    """Why the dataset folder named by ``--data-dir`` (else ``UTDEBUG_DATA_DIR``) cannot be
    used, or ``None`` (no folder named, or it exists)."""
    if data_dir is not None:
        how, folder = "--data-dir", Path(data_dir).expanduser()
    elif os.environ.get("UTDEBUG_DATA_DIR"):
        how, folder = "UTDEBUG_DATA_DIR", Path(os.environ["UTDEBUG_DATA_DIR"]).expanduser()
    else:
        return None
    if folder.is_dir():
        return None
    what = "is not a folder" if folder.exists() else "does not exist"
    return f"{how} {folder} {what}: name the folder that holds the dataset files"


@contextmanager
def sigterm_stops() -> Iterator[threading.Event]:
    """While the block runs, SIGTERM is like Ctrl-C: the event it gives is set (so that work
    in flight is dropped, finished records are kept) and :class:`KeyboardInterrupt` is raised;
    the previous handler is put back after."""
    stop = threading.Event()

    def on_sigterm(signum: int, frame: Any) -> None:
        stop.set()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGTERM, previous)


def console(*, stderr: bool = False, **options: Any) -> Console:
    """The rich console of a command's stdout (``stderr``: its stderr). On a terminal, rich's
    own (the terminal's width). To a file or a pipe (a CI log), no width limit: a line is
    never broken inside a sentence or a path, and a table takes the width its cells need
    (rich's default there is 80 columns, which split messages and truncated paths)."""
    from rich.console import Console

    made = Console(stderr=stderr, **options)
    if made.is_terminal:
        return made
    return Console(stderr=stderr, width=UNWRAPPED_WIDTH, soft_wrap=True, **options)


def command_seconds() -> float:
    """Wall seconds since this process started: the interpreter's start and the imports
    included, so the time a command reports is the time a person who timed it saw. Where the
    system does not say (no ``/proc``), since this module was imported."""
    try:
        stat = Path("/proc/self/stat").read_text(encoding="ascii")
        start_ticks = int(stat[stat.rindex(")") + 2 :].split()[19])  # field 22: starttime
        uptime = float(Path("/proc/uptime").read_text(encoding="ascii").split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return time.monotonic() - _IMPORTED
