"""Which model a run uses, and how to reach it: the model spec (:class:`ModelSpec`) that
:func:`utdebug.agents.factory.build_model` turns into a model.

Precedence: ``--model`` > env ``UTDEBUG_MODEL`` > ``default`` in the config file. The config
file is the one env ``UTDEBUG_CONFIG`` names (it must exist), else
``$XDG_CONFIG_HOME/utdebug/config.toml`` (``~/.config/utdebug/config.toml``) when present.

A model value is a NAME configured in the file, a built-in, or a raw litellm model string:

* ``sim``: the simulated model (offline; each run builds its own).
* ``scripted:PATH``: replays the JSON file PATH (a list of reply strings, or an object mapping
  purposes ``ut``/``vote``/``debug``/``critique``/``generate``/``chat``/``perturb``/
  ``rationale`` to lists; see :mod:`utdebug.agents.scripted`).
* anything else not configured, e.g. ``openai/gpt-4o-mini`` or ``ollama/qwen2.5-coder:7b``,
  is passed to litellm as is, with the defaults below.

The config file (TOML)::

    default = "local"                  # a NAME below, "sim" or "scripted:PATH"

    [models.local]
    model = "openai/qwen2.5-coder"     # litellm model string (required)
    api_base = "http://127.0.0.1:8000/v1"
    api_key_env = "VLLM_API_KEY"       # env var holding the key (default: litellm's choice)
    timeout = 120.0                    # seconds to the first token (or per unstreamed call)
    stall_timeout = 60.0               # seconds allowed between two tokens
    stream = true                      # stream one-sample calls (the time limits need it)
    max_retries = 4                    # retries of transient failures
    concurrency = 8                    # the most calls in flight to the server
    adaptive = true                    # adapt to the server (its slots, latency, 429/503)
    cost_limit = 2.0                   # US dollars per run
    supports_prefill = true            # default: guessed by provider
    supports_n = false                 # default: auto (trust n, top up)
    temperature = 0.2                  # replace utdebug's per-purpose sampling values
    top_p = 0.95
    max_tokens = 4096                  # or by purpose: { test = 1024, vote = 768, edit = 4096 }
    [models.local.extra]               # passed to litellm.acompletion as is
    extra_headers = { "X-Team" = "qa" }

Every key is checked: unknown keys, wrong types and an unknown ``default`` are errors
(:class:`ConfigError`, whose message names the file and key).
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

Kind = Literal["litellm", "sim", "scripted"]
BUILTIN_SIM = "sim"
SCRIPTED_PREFIX = "scripted:"

DEFAULT_TIMEOUT = 120.0
DEFAULT_STALL_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 4
DEFAULT_CONCURRENCY = 8


BUDGET_PURPOSES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "test": ("ut",),
        "vote": ("vote",),
        "edit": ("debug", "perturb"),
        "solution": ("generate",),
    }
)
"""The keys of a ``max_tokens`` table (a token budget by purpose), and the request purposes
each one sets: a test proposal, an output vote, an edit (and a corrupted version of gold code,
which is written like one), a best-of-N solution."""


class ConfigError(ValueError):
    """The model configuration is missing, malformed or names an unknown model."""


class NoModelChosen(ConfigError):
    """Neither ``--model``, ``UTDEBUG_MODEL`` nor the config file names a model."""


@dataclass(frozen=True, slots=True)
class ModelSpec:
    name: str
    """The name the user gave (a config NAME, ``sim``, ``scripted:PATH`` or the raw string)."""
    kind: Kind
    litellm_model: str | None = None
    api_base: str | None = None
    api_key_env: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    stall_timeout: float = DEFAULT_STALL_TIMEOUT
    stream: bool = True
    max_retries: int = DEFAULT_MAX_RETRIES
    concurrency: int = DEFAULT_CONCURRENCY
    adaptive: bool = True
    cost_limit: float | None = None
    supports_prefill: bool | None = None
    """``None``: decided by probing the server (``LiteLLMModel.probe``)."""
    supports_n: bool | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | Mapping[str, int] | None = field(default=None, hash=False)
    """Every request's token budget, or a budget by purpose (keys of
    :data:`BUDGET_PURPOSES`; the purposes not named keep utdebug's)."""
    script_path: Path | None = None
    """For ``scripted``: the JSON file."""
    extra: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), hash=False)
    source: str = ""
    """Where the choice came from, e.g. ``--model -> [models.local] in /home/u/.config/...``."""
    hint: str | None = None
    """A sentence for errors about this model (a raw string that a configured entry names with
    the ``api_base`` it lacks)."""


@dataclass(frozen=True, slots=True)
class ModelConfig:
    path: Path | None
    """The file read, or ``None`` when there is none."""
    default: str | None = None
    models: Mapping[str, ModelSpec] = field(default_factory=dict, hash=False)


# --- the config file ----------------------------------------------------------------------------

# key -> (accepted types, description for errors)
_NUM = (int, float)
_KEYS: dict[str, tuple[tuple[type, ...], str]] = {
    "model": ((str,), "a string (litellm model)"),
    "api_base": ((str,), "a string (URL)"),
    "api_key_env": ((str,), "a string (env var name)"),
    "timeout": (_NUM, "a positive number of seconds"),
    "stall_timeout": (_NUM, "a positive number of seconds"),
    "stream": ((bool,), "true or false"),
    "max_retries": ((int,), "an integer >= 0"),
    "concurrency": ((int,), "an integer >= 1"),
    "adaptive": ((bool,), "true or false"),
    "cost_limit": (_NUM, "a number >= 0 (US dollars)"),
    "supports_prefill": ((bool,), "true or false"),
    "supports_n": ((bool,), "true or false"),
    "temperature": (_NUM, "a number >= 0"),
    "top_p": (_NUM, "a number in (0, 1]"),
    "max_tokens": (
        (int, dict),
        f"an integer >= 1, or a table of them by purpose ({', '.join(BUDGET_PURPOSES)})",
    ),
    "extra": ((dict,), "a table"),
}


def default_config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path("~/.config").expanduser())
    return Path(base) / "utdebug" / "config.toml"


def load_config(env: Mapping[str, str] | None = None) -> ModelConfig:
    """Read the config file (``UTDEBUG_CONFIG`` or the default path); empty when absent."""
    env = os.environ if env is None else env
    named = env.get("UTDEBUG_CONFIG")
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            raise ConfigError(f"UTDEBUG_CONFIG names {path}, which does not exist")
    else:
        path = default_config_path(env)
        if not path.is_file():
            return ModelConfig(path=None)
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e}") from None
    return parse_config(data, path)


def parse_config(data: Mapping[str, Any], path: Path) -> ModelConfig:
    # tui: the app's own section
    reject_unknown_keys(data, ("default", "models", "tui"), str(path), "top-level key(s)")
    default = data.get("default")
    if default is not None and not isinstance(default, str):
        raise ConfigError(f"{path}: 'default' must be a string, got {_tname(default)}")
    tables = data.get("models", {})
    if not isinstance(tables, dict):
        raise ConfigError(f"{path}: 'models' must be a table of [models.NAME] tables")
    models: dict[str, ModelSpec] = {}
    for name, table in tables.items():
        where = f"{path}: [models.{name}]"
        if name == BUILTIN_SIM or name.startswith(SCRIPTED_PREFIX) or not name.strip():
            raise ConfigError(f"{where}: the name {name!r} is reserved or empty")
        if not isinstance(table, dict):
            raise ConfigError(f"{where} must be a table")
        models[name] = _spec_from_table(name, table, where, str(path))
    if default is not None and not (
        default in models or default == BUILTIN_SIM or default.startswith(SCRIPTED_PREFIX)
    ):
        known = ", ".join([*sorted(models), BUILTIN_SIM, "scripted:PATH"])
        raise ConfigError(f"{path}: default = {default!r} is not a configured model ({known})")
    return ModelConfig(path=path, default=default, models=MappingProxyType(models))


def reject_unknown_keys(
    table: Mapping[str, Any], known: Sequence[str], where: str, what: str = "key(s)"
) -> None:
    """Raise :class:`ConfigError` naming ``table``'s keys that are not ``known``."""
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise ConfigError(
            f"{where}: unknown {what} {', '.join(unknown)} (known: {', '.join(known)})"
        )


def _tname(v: object) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}.get(
        type(v), type(v).__name__
    )


def _spec_from_table(name: str, table: Mapping[str, Any], where: str, path: str) -> ModelSpec:
    reject_unknown_keys(table, tuple(_KEYS), where)
    for key, value in table.items():
        types, desc = _KEYS[key]
        bad_bool = isinstance(value, bool) and bool not in types
        if bad_bool or not isinstance(value, types):
            raise ConfigError(f"{where}: {key} must be {desc}, got {_tname(value)} {value!r}")
    if "model" not in table or not table["model"].strip():
        raise ConfigError(f"{where}: 'model' (the litellm model string) is required")

    def num(key: str, ok: bool) -> None:
        if key in table and not (ok and math.isfinite(float(table[key]))):
            raise ConfigError(f"{where}: {key} must be {_KEYS[key][1]}, got {table[key]!r}")

    num("timeout", "timeout" not in table or table["timeout"] > 0)
    num("stall_timeout", "stall_timeout" not in table or table["stall_timeout"] > 0)
    num("max_retries", "max_retries" not in table or table["max_retries"] >= 0)
    num("concurrency", "concurrency" not in table or table["concurrency"] >= 1)
    num("cost_limit", "cost_limit" not in table or table["cost_limit"] >= 0)
    num("temperature", "temperature" not in table or table["temperature"] >= 0)
    num("top_p", "top_p" not in table or 0 < table["top_p"] <= 1)
    budget = _budget(table.get("max_tokens"), where)
    t = table

    def opt_float(key: str) -> float | None:
        return float(t[key]) if key in t else None

    return ModelSpec(
        name=name,
        kind="litellm",
        litellm_model=t["model"].strip(),
        api_base=t.get("api_base"),
        api_key_env=t.get("api_key_env"),
        timeout=float(t.get("timeout", DEFAULT_TIMEOUT)),
        stall_timeout=float(t.get("stall_timeout", DEFAULT_STALL_TIMEOUT)),
        stream=bool(t.get("stream", True)),
        max_retries=int(t.get("max_retries", DEFAULT_MAX_RETRIES)),
        concurrency=int(t.get("concurrency", DEFAULT_CONCURRENCY)),
        adaptive=bool(t.get("adaptive", True)),
        cost_limit=opt_float("cost_limit"),
        supports_prefill=t.get("supports_prefill"),
        supports_n=t.get("supports_n"),
        temperature=opt_float("temperature"),
        top_p=opt_float("top_p"),
        max_tokens=budget,
        extra=MappingProxyType(dict(t.get("extra", {}))),
        source=f"[models.{name}] in {path}",
    )


def _budget(value: object, where: str) -> int | Mapping[str, int] | None:
    """``max_tokens`` as configured: an integer >= 1, or a table of them keyed by
    :data:`BUDGET_PURPOSES` (an unknown key, or a value that is no such integer, is an
    error)."""
    if value is None:
        return None
    table: dict[str, object] = dict(value) if isinstance(value, dict) else {"": value}
    if isinstance(value, dict):
        reject_unknown_keys(value, tuple(BUDGET_PURPOSES), f"{where}: max_tokens", "purpose(s)")
    budgets: dict[str, int] = {}
    for key, n in table.items():
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            name = f"max_tokens.{key}" if key else "max_tokens"
            raise ConfigError(f"{where}: {name} must be an integer >= 1, got {n!r}")
        budgets[key] = n
    return MappingProxyType(budgets) if isinstance(value, dict) else budgets[""]


# --- resolution ---------------------------------------------------------------------------------


def resolve_model_spec(
    cli_value: str | None,
    *,
    env: Mapping[str, str] | None = None,
    default: str | None = None,
) -> ModelSpec:
    """The model to use: ``--model`` > env ``UTDEBUG_MODEL`` > config ``default`` > ``default``.

    ``ConfigError`` when nothing names a model, or the config file is broken.
    """
    env = os.environ if env is None else env
    config = load_config(env)
    if cli_value is not None and cli_value.strip():
        return spec_for(cli_value.strip(), config, "--model")
    if env.get("UTDEBUG_MODEL", "").strip():
        return spec_for(env["UTDEBUG_MODEL"].strip(), config, "env UTDEBUG_MODEL")
    if config.default is not None:
        return spec_for(config.default, config, f"default in {config.path}")
    if default is not None:
        return spec_for(default, config, "built-in default")
    raise NoModelChosen(
        'no model chosen: pass --model NAME, set UTDEBUG_MODEL, or set default = "NAME" in '
        f"{default_config_path(env)} (run 'utdebug models' to list them)"
    )


def spec_for(value: str, config: ModelConfig, how: str) -> ModelSpec:
    """The spec of a model value (configured NAME, built-in or raw litellm string)."""
    if value == BUILTIN_SIM:
        return ModelSpec(name=value, kind="sim", source=f"{how} (built-in)")
    if value.startswith(SCRIPTED_PREFIX):
        raw = value[len(SCRIPTED_PREFIX) :].strip()
        if not raw:
            raise ConfigError(f"{how}: 'scripted:' needs a path to a JSON file")
        return ModelSpec(
            name=value,
            kind="scripted",
            script_path=Path(raw).expanduser(),
            source=f"{how} (built-in)",
        )
    if value in config.models:
        spec = config.models[value]
        return _replace_source(spec, f"{how} -> {spec.source}")
    if not value.strip() or any(c.isspace() for c in value):
        raise ConfigError(f"{how}: {value!r} is not a model name or litellm model string")
    return ModelSpec(
        name=value,
        kind="litellm",
        litellm_model=value,
        source=f"{how} (litellm)",
        hint=_entry_hint(value, config),
    )


def _entry_hint(value: str, config: ModelConfig) -> str | None:
    """For a raw ``provider/NAME`` without an ``api_base``: the configured entries that reach a
    server (``NAME`` itself, or an entry whose model string is ``value``)."""
    _, _, rest = value.partition("/")
    entries = [
        spec
        for name, spec in config.models.items()
        if spec.api_base and (name in (rest, value) or spec.litellm_model == value)
    ]
    if not entries:
        return None
    spec = entries[0]
    return (
        f"No api_base was given for {value!r}; the config entry {spec.name!r} "
        f"({spec.source.split(' in ', 1)[-1]}) has api_base = {spec.api_base!r}: "
        f"use --model {spec.name}."
    )


def _replace_source(spec: ModelSpec, source: str) -> ModelSpec:
    from dataclasses import replace

    return replace(spec, source=source)
