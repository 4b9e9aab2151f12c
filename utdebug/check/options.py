"""What one ``utdebug check`` run is asked to do (:class:`CheckOptions`), the model it uses
(:class:`ModelInfo`), and :class:`CheckError`, the one error that ends a run with exit code 2."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from utdebug.agents.choice import ModelChoice


class CheckError(Exception):
    """The run cannot go on (usage or environment): exit code 2; the message says why."""


@dataclass(frozen=True, slots=True)
class CheckOptions:
    targets: tuple[str, ...] = ()
    """``PATH::FUNCTION`` (paths relative to ``cwd`` or absolute)."""
    changed: bool = False
    base: str = "HEAD"
    rev: str | None = None
    """Check this commit instead of the working tree."""
    use_merge_base: bool = True
    paths: tuple[str, ...] = ()
    """``--changed`` only: limit to these repository paths (files or folders)."""
    min_votes: float = 0.75
    tests: int = 3
    votes: int = 8
    threshold: float = 0.5
    timeout: float = 2.0
    """Seconds per test."""
    task: str | None = None
    fix: bool = False
    rounds: int = 3
    apply: bool = False
    patch: Path | None = None
    """Where ``--fix`` writes the patch of every fix (None: not written)."""
    cache_dir: Path | None = None
    use_cache: bool = True
    allow_errors: bool = False
    cwd: Path = field(default_factory=Path.cwd)
    differential: bool = True
    """Also compare each function with its base version on synthesised inputs (always on
    without a model: it is then the whole check)."""
    accept: bool = False
    """Record the changed outcomes found into the accept file (they are then not findings)."""
    accept_file: Path | None = None
    """The accept file (``None``: ``.utdebug/accepted.json`` in the repository)."""
    synth_inputs: int = 200
    """Inputs synthesised per function for the comparison with its base."""
    min_compared: float = 0.0
    """The share of the changed functions that must be compared with their base version;
    fewer fails the run (exit code 1)."""


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """The model as the run needs it: the engine model, a name, and an identity for the cache."""

    model: Any
    name: str
    key: str
    """What identifies the model's answers (name, endpoint, sampling, a script's hash)."""
    simulated: bool


def validate_options(o: CheckOptions) -> None:
    if bool(o.targets) == o.changed:
        raise CheckError("give PATH::FUNCTION (one or more) or --changed, not both")
    if not 0.0 <= o.min_votes <= 1.0:
        raise CheckError("--min-votes must be between 0 and 1 (a share of the votes)")
    if not 0.0 <= o.threshold <= 1.0:
        raise CheckError("--threshold must be between 0 and 1")
    if o.tests < 1:
        raise CheckError("-n/--tests must be at least 1")
    if o.votes < 0 or o.rounds < 0:
        raise CheckError("-k/--votes and --rounds must be 0 or more")
    if o.timeout <= 0:
        raise CheckError("--timeout must be more than 0 seconds")
    if o.apply and not o.fix:
        raise CheckError("--apply needs --fix")
    if o.apply and o.rev is not None:
        raise CheckError("--apply writes the working tree: it cannot be used with --rev")
    if not 0.0 <= o.min_compared <= 1.0:
        raise CheckError("--min-compared must be between 0 and 1 (a share of the functions)")
    if o.synth_inputs < 1:
        raise CheckError("--synth-inputs must be at least 1")
    if o.paths and not o.changed:
        raise CheckError("--path limits --changed; name functions as PATH::FUNCTION instead")


def model_choice(spec_value: str | None) -> ModelChoice:
    """The model named by ``--model``, else ``UTDEBUG_MODEL``, else the config file (none when
    nothing names one: ``check`` runs without one); :class:`CheckError` for a broken config
    file."""
    from utdebug.agents.choice import resolve_choice
    from utdebug.agents.config import ConfigError

    try:
        return resolve_choice(spec_value)
    except ConfigError as e:
        raise CheckError(str(e)) from None


def model_info(choice: ModelChoice) -> ModelInfo:
    """Build the chosen model, with what identifies its answers."""
    from utdebug.agents.base import Meter
    from utdebug.agents.choice import build_chosen
    from utdebug.agents.config import ConfigError

    if choice.simulated:
        raise CheckError(
            "--model sim answers from a benchmark problem's gold solution; it cannot check "
            "your code: use a real model, or scripted:FILE for a dry run"
        )
    try:
        built = build_chosen(choice, meter=Meter())
        key = choice.cache_identity(built)
    except (ConfigError, ValueError, OSError) as e:
        raise CheckError(str(e)) from None
    if choice.replays:
        return ModelInfo(built, built.name, key, True)
    return ModelInfo(built, choice.name, key, bool(getattr(built, "simulated", False)))
