"""``utdebug models``' list: every configured and built-in model, with a verdict on whether it
can be used (an API key variable for hosted providers; an HTTP probe of servers on request).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .config import (
    BUILTIN_SIM,
    ConfigError,
    Kind,
    ModelSpec,
    load_config,
    resolve_model_spec,
)
from .factory import build_litellm_model
from .servers import is_local_url, provider_of


@dataclass(frozen=True, slots=True)
class ModelStatus:
    spec: ModelSpec
    """The model listed (a built-in's spec names it and says where it comes from)."""
    ok: bool | None
    """``True`` usable, ``False`` not (missing key, unreachable), ``None`` not checked/unknown."""
    verdict: str
    default: bool = False
    server: dict[str, Any] | None = None
    """With ``--check``, for a model with a server that answered: what the probe found
    (``kind``, ``slots``, ``prefill``, ``limit``: the requests it will be sent at once)."""

    def to_json(self) -> dict[str, Any]:
        spec = self.spec
        return {
            "name": spec.name,
            "kind": spec.kind,
            "litellm_model": spec.litellm_model,
            "api_base": spec.api_base,
            "source": spec.source,
            "ok": self.ok,
            "verdict": self.verdict,
            "default": self.default,
            "server": self.server,
        }


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
    builtins: tuple[tuple[str, Kind, str], ...] = (
        (BUILTIN_SIM, "sim", "simulated model"),
        (scripted_name, "scripted", "replays a JSON file of replies"),
    )
    for name, kind, desc in builtins:
        builtin = ModelSpec(name=name, kind=kind, source=f"built-in ({desc})")
        is_default = chosen is not None and chosen.name == name
        out.append(ModelStatus(builtin, ok=True, verdict="built-in, offline", default=is_default))
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
    is_default = chosen is not None and chosen.name == spec.name
    return ModelStatus(spec, ok=ok, verdict=verdict, default=is_default, server=server)


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
