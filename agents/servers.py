"""What utdebug knows, or finds out, about a model server; no litellm, no model calls.

* :func:`provider_of`: the provider prefix of a litellm model string;
* :func:`is_local_url`, :func:`server_root`: where a server is;
* :func:`read_slots`: how many requests a server generates for at once, where it says so
  (llama.cpp's ``/props`` and ``/slots``; vLLM does not say, nor does Ollama's API: for a
  local Ollama, :func:`ollama_parallel` reads ``OLLAMA_NUM_PARALLEL`` from the environment);
* :func:`detect_server`: which server it is, from what it answers (llama.cpp's
  ``llama-server``, llama-cpp-python's server, Ollama, LM Studio, vLLM), with its slots where
  they are known (llama-cpp-python's server generates for one request at a time);
* the prefill probe: :data:`PROBE_PROMPT` with the assistant turn :data:`PROBE_PREFILL`, and
  :func:`continues_prefill`, which reads the answer.
"""

from __future__ import annotations

import ipaddress
import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

__all__ = [
    "OLLAMA_DEFAULT_BASE",
    "OLLAMA_PROVIDERS",
    "PROBE_PREFILL",
    "PROBE_PROMPT",
    "ServerInfo",
    "continues_prefill",
    "detect_server",
    "is_local_url",
    "ollama_parallel",
    "provider_of",
    "read_slots",
    "server_root",
]

OLLAMA_PROVIDERS = frozenset({"ollama", "ollama_chat"})
OLLAMA_DEFAULT_BASE = "http://localhost:11434"

PROBE_PROMPT = "Count from 1 to 10, separated by commas. Reply with the numbers only."
PROBE_PREFILL = "1, 2, 3, 4,"
"""The probe: a server that continues an assistant message answers `` 5, 6, ...``; one that
starts a new turn answers ``1, 2, 3, ...``."""


def provider_of(model: str) -> str:
    """The provider prefix of a litellm model string, without importing litellm.

    ``anthropic/claude-x`` -> ``anthropic``; bare names are guessed the way litellm routes the
    common ones (``claude-*`` -> anthropic, everything else -> openai).
    """
    if "/" in model:
        return model.split("/", 1)[0].lower()
    if model.startswith("claude"):
        return "anthropic"
    return "openai"


def is_local_url(url: str) -> bool:
    """``True`` for loopback, private-network and ``*.local`` hosts."""
    host = (urlparse(url).hostname or "").lower()
    if host in {"localhost", "0.0.0.0"} or host.endswith((".local", ".localhost")):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private or ip.is_link_local


def server_root(api_base: str) -> str:
    """``http://host:port/v1`` -> ``http://host:port`` (where llama.cpp serves ``/props``)."""
    base = api_base.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def read_slots(api_base: str, api_key: str | None = None, timeout: float = 2.0) -> int | None:
    """The number of requests the server generates for at once, where it says so: llama.cpp's
    ``GET /props`` (``total_slots``) or ``GET /slots`` (a list); ``None`` otherwise."""
    root = server_root(api_base)
    handlers: list[urllib.request.BaseHandler] = []
    if is_local_url(root):
        handlers.append(urllib.request.ProxyHandler({}))
    opener = urllib.request.build_opener(*handlers)
    for path in ("/props", "/slots"):
        req = urllib.request.Request(root + path, headers={"Accept": "application/json"})
        if api_key:
            req.add_header("Authorization", f"Bearer {api_key}")
        try:
            with opener.open(req, timeout=timeout) as resp:
                data = json.loads(resp.read(1 << 20))
        except (urllib.error.URLError, OSError, ValueError):
            continue
        if path == "/props" and isinstance(data, dict):
            n = data.get("total_slots")
            if isinstance(n, int) and not isinstance(n, bool) and n >= 1:
                return n
        if path == "/slots" and isinstance(data, list) and data:
            return len(data)
    return None


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """What a server said about itself (:func:`detect_server`)."""

    kind: str | None
    """``llama-server``, ``llama-cpp-python``, ``ollama``, ``lm-studio``, ``vllm``; ``None``:
    not recognised."""
    slots: int | None
    """Requests it generates for at once, where known (said by the server, or known of its
    kind); ``None``: unknown."""
    evidence: str = ""
    """What gave it away (for a diagnostic line)."""


# ``owned_by`` of the models in ``GET /v1/models``, as each server writes it
_OWNERS = {
    "llamacpp": "llama-server",
    "me": "llama-cpp-python",
    "library": "ollama",
    "organization_owner": "lm-studio",
    "vllm": "vllm",
}
ONE_AT_A_TIME = frozenset({"llama-cpp-python"})
"""Servers that generate for one request at a time whatever they are asked (llama-cpp-python's
server holds one model behind one lock, and by default interrupts the reply it is generating
when a second request arrives)."""


def _get_json(
    opener: urllib.request.OpenerDirector, url: str, api_key: str | None, timeout: float
) -> tuple[Any, Mapping[str, str]] | None:
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    if api_key:
        req.add_header("Authorization", f"Bearer {api_key}")
    try:
        with opener.open(req, timeout=timeout) as resp:
            return json.loads(resp.read(1 << 20)), dict(resp.headers.items())
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _opener(url: str) -> urllib.request.OpenerDirector:
    handlers: list[urllib.request.BaseHandler] = []
    if is_local_url(url):
        handlers.append(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener(*handlers)


def detect_server(api_base: str, api_key: str | None = None, timeout: float = 2.0) -> ServerInfo:
    """Which server answers at ``api_base``, from what it answers: llama.cpp's ``/props``
    (``total_slots``) or ``/slots``; else the ``owned_by`` of ``GET {api_base}/models``
    (``llamacpp``, ``me`` for llama-cpp-python, ``library`` for Ollama,
    ``organization_owner`` for LM Studio, ``vllm``); else Ollama's ``/api/version`` and LM
    Studio's ``/api/v0/models``. Never raises: a server that says nothing is
    ``ServerInfo(None, None)``."""
    root = server_root(api_base)
    opener = _opener(root)
    got = _get_json(opener, root + "/props", api_key, timeout)
    if got is not None and isinstance(got[0], dict):
        n = got[0].get("total_slots")
        if isinstance(n, int) and not isinstance(n, bool) and n >= 1:
            return ServerInfo("llama-server", n, "/props total_slots")
    got = _get_json(opener, root + "/slots", api_key, timeout)
    if got is not None and isinstance(got[0], list) and got[0]:
        return ServerInfo("llama-server", len(got[0]), "/slots")
    base = api_base.rstrip("/")
    models = base + "/models" if base.endswith("/v1") else root + "/v1/models"
    got = _get_json(opener, models, api_key, timeout)
    if got is not None and isinstance(got[0], dict):
        data = got[0].get("data")
        owners = (
            {str(m.get("owned_by")) for m in data if isinstance(m, dict) and "owned_by" in m}
            if isinstance(data, list)
            else set()
        )
        for owner in sorted(owners):
            kind = _OWNERS.get(owner)
            if kind is not None:
                slots = 1 if kind in ONE_AT_A_TIME else None
                return ServerInfo(kind, slots, f"/v1/models owned_by {owner!r}")
        server = got[1].get("Server", got[1].get("server", ""))
        if "vllm" in server.lower():
            return ServerInfo("vllm", None, f"Server header {server!r}")
    got = _get_json(opener, root + "/api/version", api_key, timeout)
    if got is not None and isinstance(got[0], dict) and "version" in got[0]:
        return ServerInfo("ollama", None, "/api/version")
    got = _get_json(opener, root + "/api/v0/models", api_key, timeout)
    if got is not None and isinstance(got[0], dict) and isinstance(got[0].get("data"), list):
        return ServerInfo("lm-studio", None, "/api/v0/models")
    return ServerInfo(None, None)


def ollama_parallel(env: Mapping[str, str]) -> int | None:
    """``OLLAMA_NUM_PARALLEL`` from ``env`` (Ollama's own setting, which its API does not
    report): a local Ollama started from the same environment generates for that many requests
    at once. ``None`` when unset or not a positive integer."""
    raw = env.get("OLLAMA_NUM_PARALLEL", "").strip()
    try:
        n = int(raw)
    except ValueError:
        return None
    return n if n >= 1 else None


def continues_prefill(text: str) -> bool:
    """Whether the probe's answer continued ``PROBE_PREFILL`` (``" 5, 6, ..."``) rather than
    starting a new turn (``"1, 2, 3, ..."``)."""
    t = text.lstrip(" \t\n,")
    return t.startswith("5")
