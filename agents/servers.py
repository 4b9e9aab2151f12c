"""What utdebug knows, or finds out, about a model server; no litellm, no model calls.

* :func:`provider_of`: the provider prefix of a litellm model string;
* :func:`is_local_url`, :func:`server_root`: where a server is;
* :func:`read_slots`: how many requests a server generates for at once, where it says so
  (llama.cpp's ``/props`` and ``/slots``; vLLM does not say, nor does Ollama's API: for a
  local Ollama, :func:`ollama_parallel` reads ``OLLAMA_NUM_PARALLEL`` from the environment);
* the prefill probe: :data:`PROBE_PROMPT` with the assistant turn :data:`PROBE_PREFILL`, and
  :func:`continues_prefill`, which reads the answer.
"""

from __future__ import annotations

import ipaddress
import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from urllib.parse import urlparse

__all__ = [
    "OLLAMA_DEFAULT_BASE",
    "OLLAMA_PROVIDERS",
    "PROBE_PREFILL",
    "PROBE_PROMPT",
    "continues_prefill",
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
