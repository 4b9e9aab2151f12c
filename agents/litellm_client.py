"""A :class:`~utdebug.agents.base.Model` for any provider litellm speaks to.

Hosted APIs (``openai/gpt-4o-mini``, ``anthropic/claude-...``), Ollama (``ollama/qwen2.5-coder``,
``ollama_chat/...``) and OpenAI-compatible local servers (vLLM, llama.cpp's server:
``openai/<name>`` with ``api_base="http://127.0.0.1:8000/v1"``, or ``hosted_vllm/<name>``).

litellm is imported lazily, on the first call (it takes seconds to import).

Policies (see ``docs/models.md``):

* **Samples.** A request for ``n`` samples returns exactly ``n`` completions. Where the provider
  takes ``n`` we ask for ``n`` in one call and top up with further calls when fewer choices come
  back (llama.cpp silently ignores ``n``); once a provider has shown it ignores ``n`` (in auto
  mode) the remaining and later samples are asked for one per call, concurrently. Providers
  litellm knows not to take ``n`` (Anthropic, Ollama) get one call per sample from the start.
  Sample ``i`` of a request uses ``seed = sampling.seed + sample_index + i`` when a seed is set,
  so top-ups never repeat a seed.
* **Retries.** litellm's and the OpenAI SDK's own retries are off (``num_retries=0``,
  ``max_retries=0``); ours are the only ones. Rate limits, timeouts, connection errors and 5xx
  are retried up to ``max_retries`` times (default 4, so at most 5 attempts) after an
  exponential back-off with jitter: before retry ``k`` (0-based) we wait a random time in
  ``[d/2, d]`` with ``d = min(cap, base * 2**k)`` (defaults base 1 s, cap 30 s: 0.5-1, 1-2, 2-4,
  4-8 s), or the server's ``Retry-After`` when longer (capped). Authentication, not-found,
  bad-request and context-length errors are never retried.
* **Cost.** The call's price is litellm's ``response_cost`` (computed from its bundled price
  map), else :func:`litellm.completion_cost`, else unknown (``None``: local or unmapped models).
  Tokens and cost of a call are split evenly across its choices (the sums are exact).
* **Prefill.** See :func:`guess_prefill_support`.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import urlparse

from .base import (
    Completion,
    ContextLengthExceeded,
    Meter,
    ModelAuthError,
    ModelBadRequest,
    ModelError,
    ModelNotFound,
    ModelRateLimited,
    ModelRequest,
    ModelTimeout,
    ModelUnavailable,
    Usage,
)

Sleep = Callable[[float], Awaitable[None]]

# Env vars of the providers users are likely to name, for error messages (litellm's
# validate_environment only names a variable when it is missing).
_PROVIDER_KEY_ENV = {
    "openai": "OPENAI_API_KEY",
    "text-completion-openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY",
    "fireworks_ai": "FIREWORKS_AI_API_KEY",
    "hosted_vllm": "HOSTED_VLLM_API_KEY",
}

# Providers whose chat endpoint continues a final assistant message.
_PREFILL_PROVIDERS = {"anthropic", "ollama", "ollama_chat", "hosted_vllm"}
# OpenAI-compatible providers (a local server is reached through one of these + api_base).
_OPENAI_COMPATIBLE = {"openai", "hosted_vllm"}


def _import_litellm() -> Any:
    """Import litellm (seconds), offline-first: its bundled price map, no debug chatter."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


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


def guess_prefill_support(model: str, api_base: str | None = None) -> bool:
    """Whether the model continues a trailing assistant message (assistant prefill).

    * Anthropic: yes (native prefill; the reply is the continuation only).
    * Ollama (``ollama/``, ``ollama_chat/``): yes (its chat templates leave a final assistant
      message open).
    * vLLM (``hosted_vllm/``) and OpenAI-compatible servers on a *local* ``api_base``
      (``openai/<name>`` + ``http://127.0.0.1:PORT/v1``: vLLM, llama.cpp's server): yes; we also
      send vLLM's ``continue_final_message=true, add_generation_prompt=false`` (llama.cpp
      continues a final assistant message by itself and ignores the extra fields).
    * OpenAI's own API, a remote ``api_base`` (an unknown proxy) and every other provider: no.

    Override with ``supports_prefill`` (constructor or config) when the guess is wrong.
    """
    provider = provider_of(model)
    if provider in _PREFILL_PROVIDERS:
        return True
    return provider == "openai" and api_base is not None and is_local_url(api_base)


def _split(total: int, k: int) -> list[int]:
    """``total`` split into ``k`` near-equal non-negative integers that sum to ``total``."""
    q, r = divmod(max(total, 0), k)
    return [q + (1 if i < r else 0) for i in range(k)]


def _first_leaf(group: BaseExceptionGroup[Any]) -> BaseException:
    """The first ModelError inside an exception group (else its first leaf)."""
    leaves: list[BaseException] = []

    def walk(g: BaseExceptionGroup[Any]) -> None:
        for e in g.exceptions:
            if isinstance(e, BaseExceptionGroup):
                walk(e)
            else:
                leaves.append(e)

    walk(group)
    for e in leaves:
        if isinstance(e, ModelError):
            return e
    return leaves[0]


class LiteLLMModel:
    """A litellm-backed model; see the module docstring for the policies."""

    simulated = False

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 4,
        backoff: tuple[float, float] = (1.0, 30.0),
        concurrency: int = 8,
        supports_n: bool | None = None,
        supports_prefill: bool | None = None,
        extra: Mapping[str, Any] | None = None,
        mock_response: Any = None,
        meter: Meter | None = None,
        sleep: Sleep | None = None,
        rng: random.Random | None = None,
        name: str | None = None,
    ) -> None:
        """
        :param model: a litellm model string (``provider/name``).
        :param api_key: the key itself; else the variable ``api_key_env`` names; else litellm
            reads the provider's usual variable. An OpenAI-compatible ``api_base`` with no key
            anywhere gets a placeholder key (local servers accept any).
        :param timeout: seconds per call.
        :param max_retries: retries of a transient failure (attempts = 1 + max_retries).
        :param backoff: (base, cap) seconds of the exponential back-off.
        :param concurrency: calls in flight at once (per model object).
        :param supports_n: ``None`` = auto (ask litellm; trust ``n`` but top up and learn).
        :param supports_prefill: ``None`` = :func:`guess_prefill_support`.
        :param extra: further keyword arguments for ``litellm.acompletion``.
        :param mock_response: passed to litellm (tests: a string, a dict, an exception).
        :param meter: checked before every call (cost limit); counts retries.
        :param sleep: the back-off sleep (tests inject a fake).
        :param name: the model's name (cache keys, reports); default ``model`` or
            ``model@api_base``.
        """
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.model = model
        self.api_base = api_base
        self.api_key_env = api_key_env
        if api_key is None and api_key_env:
            api_key = os.environ.get(api_key_env) or None
        self.api_key = api_key
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff = (float(backoff[0]), float(backoff[1]))
        self.concurrency = int(concurrency)
        self.supports_n = supports_n
        self.supports_prefill = (
            guess_prefill_support(model, api_base) if supports_prefill is None else supports_prefill
        )
        self.extra: dict[str, Any] = dict(extra or {})
        self.mock_response = mock_response
        self.meter = meter
        self._sleep: Sleep = sleep or asyncio.sleep
        self._rng = rng or random.Random()
        self.name = name or (f"{model}@{api_base}" if api_base else model)
        self.provider = provider_of(model)
        self._n_ignored = False
        self._n_native: bool | None = None
        self._sem: asyncio.Semaphore | None = None
        self._sem_loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return f"LiteLLMModel({self.name!r})"

    # --- the protocol -------------------------------------------------------------------------

    async def complete(self, request: ModelRequest) -> list[Completion]:
        ll = _import_litellm()
        messages: list[dict[str, str]] = [m.to_json() for m in request.messages]
        use_prefill = bool(request.prefill) and self.supports_prefill
        if use_prefill:
            assert request.prefill is not None
            messages.append({"role": "assistant", "content": request.prefill})
        results: list[Completion] = []
        while len(results) < request.n:
            start = len(results)
            missing = request.n - start
            if self._use_n(ll) and missing > 1:
                batches = [(start, missing)]
            else:
                batches = [(start + j, 1) for j in range(missing)]
            got = await self._gather(ll, messages, request, batches, use_prefill)
            before = len(results)
            for (_, k), comps in zip(batches, got, strict=True):
                if k > 1 and len(comps) < k and self.supports_n is None:
                    self._n_ignored = True  # this provider ignores n: one call per sample
                results.extend(comps[:k])
            if len(results) == before:
                raise ModelUnavailable(
                    f"{self.name}: the provider returned no choices", model=self.name
                )
        return results[: request.n]

    # --- internals ----------------------------------------------------------------------------

    def _use_n(self, ll: Any) -> bool:
        if self.supports_n is not None:
            return self.supports_n
        if self._n_ignored:
            return False
        if self._n_native is None:
            try:
                _, provider, _, _ = ll.get_llm_provider(model=self.model, api_base=self.api_base)
                params = ll.get_supported_openai_params(
                    model=self.model, custom_llm_provider=provider
                )
                self._n_native = params is None or "n" in params
            except Exception:
                self._n_native = True
        return self._n_native

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._sem is None or self._sem_loop is not loop:
            self._sem = asyncio.Semaphore(self.concurrency)
            self._sem_loop = loop
        return self._sem

    async def _gather(
        self,
        ll: Any,
        messages: list[dict[str, str]],
        request: ModelRequest,
        batches: list[tuple[int, int]],
        use_prefill: bool,
    ) -> list[list[Completion]]:
        if len(batches) == 1:
            offset, k = batches[0]
            return [await self._call(ll, messages, request, k, offset, use_prefill)]
        try:
            async with asyncio.TaskGroup() as tg:
                tasks = [
                    tg.create_task(self._call(ll, messages, request, k, offset, use_prefill))
                    for offset, k in batches
                ]
        except BaseExceptionGroup as eg:
            raise _first_leaf(eg) from None
        return [t.result() for t in tasks]

    def _kwargs(
        self,
        messages: list[dict[str, str]],
        request: ModelRequest,
        n: int,
        offset: int,
        use_prefill: bool,
    ) -> dict[str, Any]:
        s = request.sampling
        kw: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": s.temperature,
            "top_p": s.top_p,
            "max_tokens": s.max_tokens,
            "timeout": self.timeout,
            "num_retries": 0,
            "max_retries": 0,
            "drop_params": True,
        }
        if n > 1:
            kw["n"] = n
        if s.stop:
            kw["stop"] = list(s.stop)
        if s.seed is not None:
            kw["seed"] = s.seed + request.sample_index + offset
        if self.api_base:
            kw["api_base"] = self.api_base
        key = self.api_key
        if (
            key is None
            and self.api_base
            and self.provider in _OPENAI_COMPATIBLE
            and not os.environ.get(_PROVIDER_KEY_ENV[self.provider])
        ):
            key = "no-key"  # local servers accept any key; the OpenAI SDK insists on one
        if key is not None:
            kw["api_key"] = key
        if self.mock_response is not None:
            kw["mock_response"] = self.mock_response
        kw.update(self.extra)
        if use_prefill and self.provider in _OPENAI_COMPATIBLE and self.api_base:
            body = dict(kw.get("extra_body") or {})
            body.setdefault("continue_final_message", True)
            body.setdefault("add_generation_prompt", False)
            kw["extra_body"] = body
        return kw

    async def _call(
        self,
        ll: Any,
        messages: list[dict[str, str]],
        request: ModelRequest,
        n: int,
        offset: int,
        use_prefill: bool,
    ) -> list[Completion]:
        kwargs = self._kwargs(messages, request, n, offset, use_prefill)
        attempt = 0
        while True:
            if self.meter is not None:
                self.meter.check(self.name)
            try:
                async with self._semaphore():
                    resp = await asyncio.wait_for(
                        ll.acompletion(**kwargs), timeout=self.timeout * 1.5 + 5.0
                    )
            except ModelError:
                raise
            except Exception as e:  # litellm's exceptions, mapped below
                err = self._map_error(ll, e)
                if not err.retryable or attempt >= self.max_retries:
                    raise err from e
                if self.meter is not None:
                    self.meter.retries += 1
                await self._sleep(self._delay(attempt, e))
                attempt += 1
                continue
            return self._convert(ll, resp, request, use_prefill)

    def _delay(self, attempt: int, exc: BaseException) -> float:
        base, cap = self.backoff
        d = min(cap, base * 2.0**attempt)
        delay = d / 2 + self._rng.uniform(0.0, d / 2)
        retry_after = _retry_after(exc)
        if retry_after is not None:
            delay = max(delay, min(cap, retry_after))
        return delay

    def _convert(
        self, ll: Any, resp: Any, request: ModelRequest, use_prefill: bool
    ) -> list[Completion]:
        choices = list(getattr(resp, "choices", None) or [])
        if not choices:
            return []
        k = len(choices)
        usage = getattr(resp, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        cost = _cost_of(ll, resp)
        prompts, completions = _split(prompt, k), _split(completion, k)
        resolved = str(getattr(resp, "model", None) or self.model)
        out: list[Completion] = []
        for i, choice in enumerate(choices):
            message = getattr(choice, "message", None)
            text = str(getattr(message, "content", None) or "")
            if request.prefill and not use_prefill and text.startswith(request.prefill):
                # No prefill support: the model wrote the whole reply; keep what follows it.
                text = text[len(request.prefill) :]
            out.append(
                Completion(
                    text=text,
                    finish_reason=str(getattr(choice, "finish_reason", None) or "stop"),
                    usage=Usage(prompts[i], completions[i], None if cost is None else cost / k),
                    model=resolved,
                )
            )
        return out

    def _key_env(self, ll: Any) -> tuple[str, bool]:
        """The env var that should hold the key, and whether it is set."""
        if self.api_key_env:
            return self.api_key_env, bool(os.environ.get(self.api_key_env))
        provider = self.provider
        try:
            _, provider, _, _ = ll.get_llm_provider(model=self.model, api_base=self.api_base)
            missing = ll.validate_environment(model=self.model).get("missing_keys") or []
        except Exception:
            missing = []
        if missing:
            return str(missing[0]), False
        var = _PROVIDER_KEY_ENV.get(provider, f"{provider.upper()}_API_KEY")
        return var, bool(os.environ.get(var))

    def _map_error(self, ll: Any, e: BaseException) -> ModelError:
        """litellm's exception -> ours (the class says whether we retry)."""
        name = self.name
        detail = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if isinstance(e, asyncio.TimeoutError):
            return ModelTimeout(f"{name}: no answer within {self.timeout:g} s", model=name)
        if isinstance(e, ll.ContextWindowExceededError):
            return ContextLengthExceeded(f"{name}: the prompt is too long: {detail}", model=name)
        missing_credentials = "missing credentials" in detail.lower() or (
            "api key" in detail.lower() and "no key is set" in detail.lower()
        )
        if isinstance(e, ll.AuthenticationError | ll.PermissionDeniedError) or missing_credentials:
            var, is_set = self._key_env(ll)
            where = f" by the server at {self.api_base}" if self.api_base else ""
            if self.api_key is not None or is_set:
                msg = (
                    f"{name}: the API key was rejected{where}. Check {var} "
                    f"(or name another variable with api_key_env in the utdebug config)."
                )
            else:
                msg = (
                    f"{name}: no API key: set {var} (export {var}=...), "
                    f"or name another variable with api_key_env in the utdebug config."
                )
            return ModelAuthError(msg, model=name)
        if isinstance(e, ll.NotFoundError):
            return ModelNotFound(f"{name}: unknown model or endpoint: {detail}", model=name)
        if isinstance(e, ll.RateLimitError):
            return ModelRateLimited(f"{name}: rate limited: {detail}", model=name)
        if isinstance(e, ll.Timeout):
            return ModelTimeout(f"{name}: timed out after {self.timeout:g} s: {detail}", model=name)
        if isinstance(
            e,
            ll.APIConnectionError
            | ll.ServiceUnavailableError
            | ll.InternalServerError
            | ll.BadGatewayError,
        ):
            return ModelUnavailable(f"{name}: unavailable: {detail}", model=name)
        if isinstance(e, ll.BadRequestError | ll.UnprocessableEntityError):
            return ModelBadRequest(f"{name}: request rejected: {detail}", model=name)
        status = getattr(e, "status_code", None)
        if isinstance(status, int):
            if status in (408, 429) or status >= 500:
                return ModelUnavailable(f"{name}: HTTP {status}: {detail}", model=name)
            return ModelBadRequest(f"{name}: HTTP {status}: {detail}", model=name)
        return ModelError(f"{name}: {type(e).__name__}: {detail}", model=name)


def _retry_after(exc: BaseException) -> float | None:
    """Seconds from a ``Retry-After`` header on the error's response, if any."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        value = headers.get("retry-after")
        return None if value is None else float(value)
    except (TypeError, ValueError, AttributeError):
        return None


def _cost_of(ll: Any, resp: Any) -> float | None:
    """US dollars of the call when litellm knows the model's price, else ``None``."""
    hidden = getattr(resp, "_hidden_params", None) or {}
    cost = hidden.get("response_cost") if isinstance(hidden, dict) else None
    if cost is None:
        try:
            cost = ll.completion_cost(completion_response=resp)
        except Exception:
            return None
    try:
        return float(cost)
    except (TypeError, ValueError):
        return None
