"""What every command module shares: exit codes and the sandbox options.

The command line reads top-down: :mod:`utdebug.cli` builds the parser and dispatches to the
command modules (``check_cmd``, ``debug_cmd``, ``models_cmd``); they and ``cli`` import this
module, and this module imports none of them.
"""

from __future__ import annotations

import argparse
import os
from enum import IntEnum
from typing import Any

__all__ = ["Exit", "env_flag", "sandbox_config"]


class Exit(IntEnum):
    OK = 0
    FAILURE = 1
    """The command ran but what it checked failed."""
    USAGE = 2
    """Bad arguments, missing or corrupt data."""
    SANDBOX = 3
    """The sandbox cannot give the required isolation here."""
    INTERRUPTED = 130
    BROKEN_PIPE = 141
    """stdout was closed before the results were written (128 + SIGPIPE)."""


def env_flag(name: str) -> bool:
    """An environment variable that is on (``1``, ``true``, ``yes``, ``on``)."""
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def sandbox_config(args: argparse.Namespace) -> Any:
    """The :class:`~utdebug.sandbox.SandboxConfig` of ``--allow-weak-sandbox`` and
    ``--no-bwrap``."""
    from utdebug.sandbox import SandboxConfig

    return SandboxConfig(
        allow_weak=bool(args.allow_weak_sandbox),
        use_bwrap=False if args.no_bwrap else None,
    )
