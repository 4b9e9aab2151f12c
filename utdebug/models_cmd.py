"""``utdebug models [--check] [--json]``: the configured and built-in models, and whether each
can be reached (an HTTP probe of local servers with ``--check``; API key variables of hosted
providers). See docs/models.md for the config file.

Exit codes: 0 listed; 1 with ``--check`` when the model used by default (``--model`` not
given: env ``UTDEBUG_MODEL``, else the config's ``default``) cannot be used (its server does not
answer, or its API key variable is not set) or when there is none, so that ``utdebug models
--check`` works as a health check; 2 a broken config file.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``models`` on the CLI's subparsers (``parser.add_subparsers(...)``)."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "models",
        help="list the configured models and whether they can be reached",
        description="List the models of the config file (UTDEBUG_CONFIG, else "
        "~/.config/utdebug/config.toml), the built-ins (sim, scripted:PATH) and the current "
        "choice (UTDEBUG_MODEL), with a verdict: API key set for hosted providers; with --check, "
        "an HTTP probe of local servers (2 s). Exit codes: 0 listed; 1 with --check when the "
        "default model cannot be used or none is chosen; 2 a broken config file.",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="probe models with an api_base over HTTP (2 s each); exit 1 when the default "
        "model cannot be used or none is chosen",
    )
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    return p


def run(args: argparse.Namespace) -> int:
    from utdebug.agents.config import ConfigError
    from utdebug.agents.model_list import list_models
    from utdebug.cli_common import Exit, console

    try:
        statuses = list_models(check=bool(getattr(args, "check", False)))
    except ConfigError as e:
        print(f"utdebug models: {e}", file=sys.stderr)
        return Exit.USAGE
    check = bool(getattr(args, "check", False))
    default = next((s for s in statuses if s.default), None)
    # a health check fails when there is no model to use at all, too
    unusable = check and (default is None or default.ok is False)
    code = Exit.FAILURE if unusable else Exit.OK
    if getattr(args, "json", False):
        print(json.dumps({"models": [s.to_json() for s in statuses]}, indent=2))
        if unusable and default is None:
            print(f"utdebug models: {NO_MODEL}", file=sys.stderr)
        return code

    from rich.markup import escape
    from rich.table import Table

    table = Table(title="utdebug models")
    for col in ("", "name", "litellm model", "source", "status"):
        table.add_column(col)
    for s in statuses:
        colour = {True: "green", False: "red", None: "yellow"}[s.ok]
        table.add_row(
            "*" if s.default else "",
            escape(s.spec.name),
            escape(s.spec.litellm_model or "-")
            + (f"\n{escape(s.spec.api_base)}" if s.spec.api_base else ""),
            escape(s.spec.source),
            f"[{colour}]{escape(s.verdict)}[/{colour}]",
        )
    out = console()
    out.print(table)
    if not any(s.default for s in statuses):
        out.print("no model chosen: pass --model, set UTDEBUG_MODEL or a config default")
    else:
        out.print("* = the model used when --model is not given")
    if unusable and default is not None:
        print(
            f"utdebug models: the default model {default.spec.name} cannot be used: "
            f"{default.verdict}",
            file=sys.stderr,
        )
    elif unusable:
        print(f"utdebug models: {NO_MODEL}", file=sys.stderr)
    return code


NO_MODEL = (
    "no model is chosen: pass --model, set UTDEBUG_MODEL or a config default "
    "(docs/models.md, 'Connect your first model')"
)
