"""Which model a run uses, and how to reach it.

Precedence: ``--model`` > env ``UTDEBUG_MODEL`` > ``default`` in the config file. The config
file is the one env ``UTDEBUG_CONFIG`` names (it must exist), else
``$XDG_CONFIG_HOME/utdebug/config.toml`` (``~/.config/utdebug/config.toml``) when present.

A model value is a NAME configured in the file, a built-in, or a raw litellm model string:

* ``sim``: the simulated model (offline; built by the caller).
* ``scripted:PATH``: replays the JSON file PATH (a list of reply strings, or an object mapping
  purposes ``ut``/``vote``/``debug``/``critique``/``generate``/``chat``/``perturb``/
  ``rationale`` to lists; see :mod:`utdebug.agents.scripted`; built by the caller).
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
    max_tokens = 4096
    [models.local.extra]               # passed to litellm.acompletion as is
    extra_headers = { "X-Team" = "qa" }

Every key is checked: unknown keys, wrong types and an unknown ``default`` are errors
(:class:`ConfigError`, whose message names the file and key).
"""

from __future__ import annotations

import json
import math
import os
import tomllib
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from .base import Meter, Metered, Model
from .litellm_client import LiteLLMModel, SamplingOverrides
from .servers import is_local_url, provider_of

Kind = Literal["litellm", "sim", "scripted"]
BUILTIN_SIM = "sim"
SCRIPTED_PREFIX = "scripted:"

DEFAULT_TIMEOUT = 120.0
DEFAULT_STALL_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 4
DEFAULT_CONCURRENCY = 8


class ConfigError(ValueError):
    """The model configuration is missing, malformed or names an unknown model."""


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
    max_tokens: int | None = None
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


@dataclass(frozen=True, slots=True)
class ModelStatus:
    name: str
    kind: Kind
    litellm_model: str | None
    api_base: str | None
    source: str
    ok: bool | None
    """``True`` usable, ``False`` not (missing key, unreachable), ``None`` not checked/unknown."""
    verdict: str
    default: bool = False
    server: dict[str, Any] | None = None
    """With ``--check``, for a model with a server that answered: what the probe found
    (``kind``, ``slots``, ``prefill``, ``limit``: the requests it will be sent at once)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "litellm_model": self.litellm_model,
            "api_base": self.api_base,
            "source": self.source,
            "ok": self.ok,
            "verdict": self.verdict,
            "default": self.default,
            "server": self.server,
        }


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
    "max_tokens": ((int,), "an integer >= 1"),
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
    unknown = sorted(set(data) - {"default", "models", "tui"})  # tui: the app's own section
    if unknown:
        raise ConfigError(
            f"{path}: unknown top-level key(s) {', '.join(unknown)} (known: default, models, tui)"
        )
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


def _tname(v: object) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}.get(
        type(v), type(v).__name__
    )


def _spec_from_table(name: str, table: Mapping[str, Any], where: str, path: str) -> ModelSpec:
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(_KEYS)})"
        )
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
    num("max_tokens", "max_tokens" not in table or table["max_tokens"] >= 1)
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
        max_tokens=t.get("max_tokens"),
        extra=MappingProxyType(dict(t.get("extra", {}))),
        source=f"[models.{name}] in {path}",
    )


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
    raise ConfigError(
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


# --- building -----------------------------------------------------------------------------------


def build_litellm_model(spec: ModelSpec, meter: Meter | None = None) -> Model:
    """A :class:`LiteLLMModel` for ``spec``, wrapped in :class:`Metered` when given a meter.

    The spec's ``cost_limit`` tightens the meter's (the lower of the two applies). ``sim`` and
    ``scripted`` specs are built by the caller: ``ValueError`` here.
    """
    if spec.kind != "litellm" or not spec.litellm_model:
        raise ValueError(f"{spec.name!r} is a {spec.kind} model; build it with its own class")
    check_provider(spec)
    model = LiteLLMModel(
        spec.litellm_model,
        api_base=spec.api_base,
        api_key_env=spec.api_key_env,
        timeout=spec.timeout,
        stall_timeout=spec.stall_timeout,
        stream=spec.stream,
        max_retries=spec.max_retries,
        concurrency=spec.concurrency,
        adaptive=spec.adaptive,
        supports_n=spec.supports_n,
        supports_prefill=spec.supports_prefill,
        sampling=SamplingOverrides(spec.temperature, spec.top_p, spec.max_tokens),
        extra=dict(spec.extra),
        meter=meter,
        hint=spec.hint,
    )
    if meter is None:
        return model
    if spec.cost_limit is not None:
        current = meter.cost_limit
        meter.cost_limit = spec.cost_limit if current is None else min(current, spec.cost_limit)
    return Metered(model, meter)


def check_provider(spec: ModelSpec) -> None:
    """``ConfigError`` when litellm cannot route the spec's model string (an unknown provider,
    or a bare name it does not know). Imports litellm (seconds)."""
    from .litellm_client import _import_litellm

    model = spec.litellm_model or spec.name
    ll = _import_litellm()
    try:
        ll.get_llm_provider(model=model, api_base=spec.api_base)
    except Exception:
        provider = model.split("/", 1)[0] if "/" in model else None
        known = "openai, anthropic, ollama, ollama_chat, hosted_vllm, gemini, mistral, groq, ..."
        where = f" ({spec.source})" if spec.source else ""
        if provider is not None:
            raise ConfigError(
                f"unknown provider {provider!r} in the model {model!r}{where}: write "
                f"PROVIDER/MODEL with a provider litellm knows ({known}; "
                "https://docs.litellm.ai/docs/providers), or a NAME from the config file"
            ) from None
        raise ConfigError(
            f"unknown model {model!r}{where}: litellm cannot tell its provider; write "
            f"PROVIDER/MODEL ({known}), or a NAME from the config file"
        ) from None


# --- listing ------------------------------------------------------------------------------------


def list_models(check: bool = False, *, env: Mapping[str, str] | None = None) -> list[ModelStatus]:
    """Every configured model, the built-ins, and the env/default choice when it is a raw string.

    Verdicts: models with an ``api_base`` (and Ollama) are probed with an HTTP GET of
    ``{api_base}/models`` (Ollama: ``/api/tags``), 2 s timeout, only with ``check=True``; hosted
    providers: whether the API key variable is set (``litellm.validate_environment``, no
    network); ``sim`` and ``scripted:PATH``: "built-in, offline".
    """
    env = os.environ if env is None else env
    config = load_config(env)
    try:
        chosen: ModelSpec | None = resolve_model_spec(None, env=env)
    except ConfigError:
        chosen = None
    specs: list[ModelSpec] = list(config.models.values())
    if chosen is not None and chosen.kind == "litellm" and chosen.name not in config.models:
        specs.append(chosen)
    out = [_status(s, check, env, chosen) for s in specs]
    scripted_name = (
        chosen.name if chosen is not None and chosen.kind == "scripted" else "scripted:PATH"
    )
    for name, kind, desc in (
        (BUILTIN_SIM, "sim", "simulated model"),
        (scripted_name, "scripted", "replays a JSON file of replies"),
    ):
        out.append(
            ModelStatus(
                name=name,
                kind=kind,  # type: ignore[arg-type]
                litellm_model=None,
                api_base=None,
                source=f"built-in ({desc})",
                ok=True,
                verdict="built-in, offline",
                default=chosen is not None and chosen.name == name,
            )
        )
    return out


def _status(
    spec: ModelSpec, check: bool, env: Mapping[str, str], chosen: ModelSpec | None
) -> ModelStatus:
    model = spec.litellm_model or spec.name
    ok: bool | None
    server: dict[str, Any] | None = None
    provider = provider_of(model)
    base = spec.api_base
    if provider in {"ollama", "ollama_chat"}:
        base = base or env.get("OLLAMA_API_BASE") or "http://localhost:11434"
    if base is not None:
        if check:
            probe = "/api/tags" if provider in {"ollama", "ollama_chat"} else "/models"
            key = env.get(spec.api_key_env) if spec.api_key_env else None
            ok, verdict = probe_url(base.rstrip("/") + probe, key)
            if ok and spec.kind == "litellm" and spec.litellm_model:
                ok, verdict, server = _server_verdict(spec, verdict)
        else:
            ok, verdict = None, "not checked (use --check)"
    else:
        ok, verdict = _key_verdict(model, spec.api_key_env, env)
    return ModelStatus(
        name=spec.name,
        kind=spec.kind,
        litellm_model=spec.litellm_model,
        api_base=spec.api_base,
        source=spec.source,
        ok=ok,
        verdict=verdict,
        default=chosen is not None and chosen.name == spec.name,
        server=server,
    )


def _server_verdict(spec: ModelSpec, reachable: str) -> tuple[bool, str, dict[str, Any] | None]:
    """The model's probe (one tiny completion, as before a run): which server it is, its
    slots, whether it continues a prefill, and the requests utdebug will send it at once."""
    import asyncio

    from .base import ModelError
    from .limiter import forget_limiter, known_endpoints

    before = known_endpoints()
    model: Any = None
    try:
        model = build_litellm_model(spec)
        found = asyncio.run(model.probe())
    except ModelError as e:
        return False, f"{reachable}, but it cannot answer: {e}", None
    except ConfigError as e:
        return False, str(e), None
    finally:
        if model is not None and model.endpoint not in before:
            forget_limiter(model.endpoint)  # a listing leaves no limit behind for a run
    server = {
        "kind": found.server,
        "slots": found.slots,
        "prefill": found.prefill,
        "limit": found.limit,
    }
    kind = found.server or "server not recognised"
    slots = f"{found.slots} slot(s)" if found.slots is not None else "slots not said"
    prefill = "continues a prefill" if found.prefill else "does not continue a prefill"
    start = ""
    if found.slots is None and spec.adaptive:  # adaptive = false keeps the limit where it is
        start = ", rising while whole replies hold"
    text = f"{reachable}; {kind}, {slots}, {prefill}; {found.limit} request(s) at once{start}"
    return True, text, server


def _key_verdict(
    model: str, api_key_env: str | None, env: Mapping[str, str]
) -> tuple[bool | None, str]:
    if api_key_env:
        if env.get(api_key_env):
            return True, f"API key set ({api_key_env})"
        return False, f"missing API key: set {api_key_env}"
    from .litellm_client import _import_litellm

    ll = _import_litellm()
    try:
        found = ll.validate_environment(model=model)
    except Exception as e:  # an unknown provider
        return None, f"cannot tell ({type(e).__name__})"
    missing = list(found.get("missing_keys") or [])
    if found.get("keys_in_environment") and not missing:
        return True, "API key set"
    if missing:
        return False, "missing API key: set " + " and ".join(missing)
    return None, "unknown (litellm does not know this provider's key)"


def probe_url(url: str, api_key: str | None = None, timeout: float = 2.0) -> tuple[bool, str]:
    """GET ``url``: (reachable, verdict). Local URLs bypass HTTP proxies."""
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    if api_key:
        req.add_header("Authorization", f"Bearer {api_key}")
    handlers: list[urllib.request.BaseHandler] = []
    if is_local_url(url):
        handlers.append(urllib.request.ProxyHandler({}))
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(req, timeout=timeout) as resp:
            body = resp.read(1 << 20)
            status = resp.status
    except urllib.error.HTTPError as e:
        if e.code in (401, 403):
            return False, f"reachable, but HTTP {e.code} (needs an API key) at {url}"
        return False, f"HTTP {e.code} at {url}"
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        return False, f"unreachable: {reason} ({url})"
    count = _count_models(body)
    more = f", {count} model(s)" if count is not None else ""
    return True, f"reachable (HTTP {status}{more})"


def _count_models(body: bytes) -> int | None:
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if isinstance(data, dict):
        for key in ("data", "models"):
            if isinstance(data.get(key), list):
                return len(data[key])
    return None
