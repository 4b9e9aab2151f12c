"""How the app is configured and opened: the config file's ``[tui]`` section (keys and theme,
:func:`load_tui_config`; no Textual here), :class:`AppConfig` (everything but the task, the
model, the executor and the settings) and what the start-up work hands back
(:class:`Started`) or raises (:class:`StartupFailed`).

::

    [tui]
    theme = "gruvbox"            # a Textual theme (an unknown one is said, with the list)
    [tui.keys]                   # an action's id (the help screen's list) = its key(s)
    run = "f5"
    write-back = "ctrl+w"
    search = "slash,ctrl+f"

Unknown keys and ids are errors that name the file and the key (:class:`ConfigError`).
"""

from __future__ import annotations

import os
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from utdebug.agents.base import Completion, Model, ModelError, ModelRequest
from utdebug.agents.config import ConfigError, default_config_path, reject_unknown_keys
from utdebug.engine.execution import Executor
from utdebug.tui.actions import ACTIONS, BINDING_PREFIX
from utdebug.tui.synth import SynthPlan
from utdebug.workspace import LoadedFunction


@dataclass(frozen=True, slots=True)
class Started:
    """What the start-up work hands the app: the model to use (probed), the executor over a
    started sandbox and the sandbox's layers."""

    model: Model
    executor: Executor
    sandbox_layers: Sequence[str] = ()
    sandbox_total: int | None = None
    note: str | None = None
    """What the probe found, for the transcript."""


class StartupFailed(Exception):
    """The app cannot start: one line and the command's exit code (1: the model cannot be
    used, 3: the sandbox)."""

    def __init__(self, line: str, exit_code: int) -> None:
        super().__init__(line)
        self.line = line
        self.exit_code = exit_code


NO_MODEL_LINE = (
    "no model is configured: this session synthesises inputs and you judge their outcomes "
    "(m, g, a); for generated tests and fixes open it again with --model M (docs/models.md)"
)
"""What a model action (run, step, pause, cancel, review) says in a session without a model."""


class NoModel:
    """The model of a session without one: nothing asks it (the app offers no model
    action); a call that reaches it anyway fails with :data:`NO_MODEL_LINE`."""

    name = "no model"
    simulated = False
    supports_prefill = False

    async def complete(self, request: ModelRequest) -> list[Completion]:
        raise ModelError(NO_MODEL_LINE, model=self.name)


def _wall_clock() -> str:
    return time.strftime("%H:%M:%S")


@dataclass(frozen=True, slots=True)
class AppConfig:
    """Everything about how the app runs besides what it debugs."""

    loaded: LoadedFunction | None = None
    """The source file of the function (write back and export need it)."""
    sandbox_layers: Sequence[str] = ()
    sandbox_total: int | None = None
    """How many layers the sandbox has in all (the short status form: ``sandbox 8/8``)."""
    autostart: bool = True
    review: bool = False
    """Review each edit by hand."""
    step_first: bool = False
    clock: Callable[[], float] = time.monotonic
    """Seconds for the spinner and elapsed times (tests freeze it)."""
    stamp: Callable[[], str] = _wall_clock
    """Wall-clock time of a test's history entries (tests freeze it)."""
    starting: Callable[[], Started] | None = None
    """Work done after the first screen is drawn, in a thread (the sandbox, the model's
    probe): its :class:`Started` replaces the model, the executor and the sandbox layers;
    a :class:`StartupFailed` ends the app with its line and exit code."""
    session_file: Path | None = None
    """Where the session is saved as it happens (``None``: nowhere)."""
    save_every_s: float = 1.0
    """While the session works, the file is written at most this often (the events between
    are folded into the next write); it is written at once when the session stops, pauses or
    waits for a person, and when the app closes."""
    resume: dict[str, Any] | None = None
    """A saved session to take back instead of starting a new one."""
    keymap: dict[str, str] | None = None
    theme: str | None = None
    synth: SynthPlan | None = None
    """A session without a model (``None``: with one): inputs are synthesised from this
    plan, their outcomes on the code in force listed, and a person says which are wrong."""

    candidates: SynthPlan | None = None
    """A session with a model: up to ``candidates.count`` inputs synthesised from this plan
    join UTGen's candidates before the session starts (``Session.synth_queue``)."""

    @property
    def model_free(self) -> bool:
        return self.synth is not None


@dataclass(frozen=True, slots=True)
class TuiConfig:
    theme: str | None = None
    keys: dict[str, str] = field(default_factory=dict)
    """Binding id (``utdebug.run``) -> keys, for ``App.set_keymap``."""


def load_tui_config(env: Mapping[str, str] | None = None) -> TuiConfig:
    """The ``[tui]`` section of the config file (``UTDEBUG_CONFIG`` or the default path)."""
    env = os.environ if env is None else env
    named = env.get("UTDEBUG_CONFIG")
    path = Path(named).expanduser() if named else default_config_path(env)
    if not path.is_file():
        return TuiConfig()
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except (tomllib.TOMLDecodeError, OSError) as e:
        raise ConfigError(f"{path}: {e}") from None
    return parse_tui(data.get("tui", {}), path)


def parse_tui(section: object, path: Path) -> TuiConfig:
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [tui] must be a table")
    reject_unknown_keys(section, ("theme", "keys"), f"{path}: [tui]")
    theme = section.get("theme")
    if theme is not None and not isinstance(theme, str):
        raise ConfigError(f"{path}: [tui] theme must be a string (a Textual theme's name)")
    keys = section.get("keys", {})
    if not isinstance(keys, dict):
        raise ConfigError(f"{path}: [tui.keys] must be a table of action id = key(s)")
    ids = {a.id for a in ACTIONS}
    out: dict[str, str] = {}
    for action, key in keys.items():
        if action not in ids:
            raise ConfigError(
                f"{path}: [tui.keys] unknown action {action!r} (known: {', '.join(sorted(ids))})"
            )
        if not isinstance(key, str) or not key.strip():
            raise ConfigError(f'{path}: [tui.keys] {action} must be a key such as "f5"')
        out[BINDING_PREFIX + action] = key.strip()
    return TuiConfig(theme, out)
