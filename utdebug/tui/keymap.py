"""The app's keymap and theme from the config file's ``[tui]`` section (no Textual here).

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
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from utdebug.agents.config import ConfigError, default_config_path
from utdebug.tui.actions import ACTIONS, BINDING_PREFIX


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
    unknown = sorted(set(section) - {"theme", "keys"})
    if unknown:
        raise ConfigError(
            f"{path}: [tui]: unknown key(s) {', '.join(unknown)} (known: theme, keys)"
        )
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
