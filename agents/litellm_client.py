"""A :class:`~utdebug.agents.base.Model` for any provider litellm speaks to.

Hosted APIs (``openai/gpt-4o-mini``, ``anthropic/claude-...``), Ollama (``ollama/qwen2.5-coder``,
``ollama_chat/...``) and OpenAI-compatible local servers (vLLM, llama.cpp's server:
``openai/<name>`` with ``api_base="http://127.0.0.1:8000/v1"``, or ``hosted_vllm/<name>``).

litellm is imported lazily, on the first call (it takes seconds to import).

Policies (see ``docs/models.md``):

* **Streaming and time limits.** One-sample calls are streamed (``stream=True``). The time limit
  counts from when the request is sent, not from when it joined utdebug's own queue: ``timeout``
  seconds for the first token (the server's queue and the prompt's processing), then at most
  ``stall_timeout`` seconds between tokens; a generation that keeps producing tokens is never
  cut by a wall clock (its token cap ends it). A reply that reaches its natural end
  (``request.end``, :mod:`utdebug.agents.endings`) is closed at once, which stops the server
  generating. Calls for several samples at once (providers that honour ``n``) are not streamed
  (litellm's stream wrapper keeps one choice) and get ``timeout`` for the whole call.
* **Concurrency.** Requests to one server go through its :class:`AdaptiveLimiter`, shared by
  every model object that talks to it: the server's own slot count where it says it
  (llama.cpp ``/props``), else additive increase while latency holds and halving on timeouts,
  429 and 503. ``concurrency`` is the most it ever allows.
* **Samples.** A request for ``n`` samples returns exactly ``n`` completions. Where the provider
  takes ``n`` we ask for ``n`` in one call and top up with further calls when fewer choices come
  back (llama.cpp silently ignores ``n``); once a provider has shown it ignores ``n`` (in auto
  mode), or says it is llama.cpp (``/props``), samples are asked for one per call. Providers
  litellm knows not to take ``n`` (Anthropic, Ollama) get one call per sample from the start.
  Sample ``i`` of a request uses ``seed = sampling.seed + sample_index + i`` when a seed is set,
  so top-ups never repeat a seed.
* **Retries.** litellm's and the OpenAI SDK's own retries are off (``num_retries=0``,
  ``max_retries=0``); ours are the only ones. A request the server had and was answering is
  never sent again (:class:`~utdebug.agents.base.ModelDropped`: the connection dropped after
  the request was sent, the stream stopped before its last chunk or stalled after its first
  tokens): the server may have generated, and billed, the reply. Rate limits, 5xx answers,
  timeouts before the first token and connections that were never made are retried up to
  ``max_retries`` times (default 4, so at most 5 attempts) after an
  exponential back-off with jitter: before retry ``k`` (0-based) we wait a random time in
  ``[d/2, d]`` with ``d = min(cap, base * 2**k)`` (defaults base 1 s, cap 30 s: 0.5-1, 1-2, 2-4,
  4-8 s), or the server's ``Retry-After`` when longer (capped). Authentication, not-found,
  bad-request and context-length errors are never retried. Requests, retries and failures are
  counted into the meters of the calling context (:func:`utdebug.agents.base.accounting`).
* **Sampling.** The configuration's ``temperature``, ``top_p`` and ``max_tokens`` (for every
  request, or by purpose) replace the caller's values; with ``extra`` they are part of
  :attr:`identity`, which names the model in the response cache.
* **Cost.** The call's price is litellm's (its bundled price map), else unknown (``None``:
  local or unmapped models). Tokens and cost of a call are split evenly across its choices.
* **Prefill** is decided by evidence: :meth:`probe` (run before a run, or lazily before the
  first prefilled request) asks the server to continue ``"1, 2, 3, 4,"`` and looks at whether
  it continued or started a new turn. ``supports_prefill`` in the configuration overrides it.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .base import (
    Completion,
    Meter,
    ModelError,
    ModelInterrupted,
    ModelRequest,
    ModelUnavailable,
    account,
    arrived,
)
from .cache import NEEDS
from .config import BUDGET_PURPOSES
from .limiter import AdaptiveLimiter, limiter_for
from .litellm_stream import Outcome, StreamLimits, answered_at_once, stream_reply
from .preflight import Preflight
from .provider_errors import PROVIDER_KEY_ENV, map_error, overloaded, retry_after
from .servers import (
    OLLAMA_DEFAULT_BASE,
    OLLAMA_PROVIDERS,
    PROBE_PREFILL,
    PROBE_PROMPT,
    ServerInfo,
    continues_prefill,
    detect_server,
    is_local_url,
    ollama_parallel,
    provider_of,
)

Sleep = Callable[[float], Awaitable[None]]

# OpenAI-compatible providers (a local server is reached through one of these + api_base).
_OPENAI_COMPATIBLE = {"openai", "hosted_vllm"}


def _import_litellm() -> Any:
    """Import litellm (seconds), offline-first: its bundled price map, no debug chatter."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


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


@dataclass(frozen=True, slots=True)
class SamplingOverrides:
    """Sampling values from the configuration that replace the callers' in every request;
    ``max_tokens`` for every request, or by purpose (a table keyed by
    :data:`~utdebug.agents.config.BUDGET_PURPOSES`)."""

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | Mapping[str, int] | None = field(default=None, hash=False)

    def tokens_for(self, purpose: str) -> int | None:
        """The configured token budget of a request for ``purpose`` (``None``: utdebug's)."""
        if not isinstance(self.max_tokens, Mapping):
            return self.max_tokens
        for key, purposes in BUDGET_PURPOSES.items():
            if purpose in purposes and key in self.max_tokens:
                return int(self.max_tokens[key])
        return None

    def to_json(self) -> dict[str, Any]:
        budget = self.max_tokens
        return {
            k: v
            for k, v in (
                ("temperature", self.temperature),
                ("top_p", self.top_p),
                ("max_tokens", dict(budget) if isinstance(budget, Mapping) else budget),
            )
            if v is not None
        }


@dataclass(frozen=True, slots=True)
class ClientSettings:
    """How a :class:`LiteLLMModel` calls its server: time limits, retries, concurrency and the
    configuration's sampling values (``ValueError`` for values out of range)."""

    timeout: float = 120.0
    """Seconds to the first token (streamed calls), or for the whole call."""
    stall_timeout: float = 60.0
    """Seconds allowed between two tokens of a streamed call."""
    stream: bool = True
    """Stream one-sample calls (the time limits above need it)."""
    max_retries: int = 4
    """Retries of a transient failure (attempts = 1 + max_retries)."""
    backoff: tuple[float, float] = (1.0, 30.0)
    """(base, cap) seconds of the exponential back-off."""
    concurrency: int = 8
    """The most calls in flight to the model's server at once."""
    adaptive: bool = True
    """Adapt the concurrency to the server (see :mod:`.limiter`); ``False``: always
    ``concurrency``."""
    supports_n: bool | None = None
    """``None`` = auto (ask litellm; trust ``n`` but top up and learn)."""
    supports_prefill: bool | None = None
    """``None`` = decided by :meth:`LiteLLMModel.probe`."""
    sampling: SamplingOverrides = field(default_factory=SamplingOverrides)
    """The configuration's sampling values (replace the callers')."""
    extra: Mapping[str, Any] = field(default_factory=dict, hash=False)
    """Further keyword arguments for ``litellm.acompletion``."""

    def __post_init__(self) -> None:
        if self.timeout <= 0:
            raise ValueError(f"timeout must be positive, got {self.timeout}")
        if self.stall_timeout <= 0:
            raise ValueError(f"stall_timeout must be positive, got {self.stall_timeout}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency}")


def no_answer(
    text: str, finish: str, purpose: str, *, overlapped: bool, natural: bool = False
) -> str | None:
    """Why a completion is not an answer but a reply the server cut off, else ``None``.

    Empty (or blank) is never an answer, whatever ``finish`` says. A reply that stopped far
    below what its purpose needs (:data:`NEEDS`) while other requests to the same server were
    in flight (``overlapped``) is one a one-slot server interrupted; one that reached its
    natural end, or holds a fenced value, is whole.
    """
    body = text.strip()
    if not body:
        return f"an empty reply (finish_reason {finish!r})"
    if not overlapped or natural or finish != "stop":
        return None
    needs = NEEDS.get(purpose, 0)
    if len(body) < needs and body.count("```") < 2:
        return f"a reply cut to {len(body)} character(s) while other requests were in flight"
    return None


class LiteLLMModel:
    """A litellm-backed model; see the module docstring for the policies."""

    simulated = False

    def __init__(
        self,
        model: str,
        settings: ClientSettings | None = None,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        mock_response: Any = None,
        meter: Meter | None = None,
        sleep: Sleep | None = None,
        rng: random.Random | None = None,
        name: str | None = None,
        hint: str | None = None,
    ) -> None:
        """
        :param model: a litellm model string (``provider/name``).
        :param settings: time limits, retries, concurrency and sampling (:class:`ClientSettings`).
        :param api_key: the key itself; else the variable ``api_key_env`` names; else litellm
            reads the provider's usual variable. An OpenAI-compatible ``api_base`` with no key
            anywhere gets a placeholder key (local servers accept any).
        :param mock_response: passed to litellm (tests: a string, a dict, an exception).
        :param meter: checked before every call (cost limit); counts retries.
        :param sleep: the back-off sleep (tests inject a fake).
        :param name: the model's name (reports); default ``model`` or ``model@api_base``.
        :param hint: a sentence added to authentication errors (e.g. that a configured entry
            has the ``api_base`` this raw model string lacks).
        """
        s = settings or ClientSettings()
        self.model = model
        self.api_base = api_base
        self.api_key_env = api_key_env
        if api_key is None and api_key_env:
            api_key = os.environ.get(api_key_env) or None
        self.api_key = api_key
        self.timeout = float(s.timeout)
        self.stall_timeout = float(s.stall_timeout)
        self.stream = s.stream
        self.max_retries = int(s.max_retries)
        self.backoff = (float(s.backoff[0]), float(s.backoff[1]))
        self.concurrency = int(s.concurrency)
        self.adaptive = s.adaptive
        self.supports_n = s.supports_n
        self._prefill_config = s.supports_prefill
        self._prefill_probed: bool | None = None
        self._probe_lock: asyncio.Lock | None = None
        self._probe_loop: asyncio.AbstractEventLoop | None = None
        self.overrides = s.sampling
        self.extra: dict[str, Any] = dict(s.extra)
        self.mock_response = mock_response
        self.meter = meter
        self.hint = hint
        self._sleep: Sleep = sleep or asyncio.sleep
        self._rng = rng or random.Random()
        self.name = name or (f"{model}@{api_base}" if api_base else model)
        self.provider = provider_of(model)
        self._n_ignored = False
        self._n_native: bool | None = None
        base = api_base or (OLLAMA_DEFAULT_BASE if self.provider in OLLAMA_PROVIDERS else None)
        self.endpoint = base.rstrip("/") if base else f"{self.provider}:{model}"
        self.local = base is not None and is_local_url(base)
        self.limiter: AdaptiveLimiter = limiter_for(
            self.endpoint,
            maximum=self.concurrency,
            initial=1 if self.local else min(4, self.concurrency),
            adaptive=s.adaptive,
        )
        self._slots_read = base is None
        self.slots: int | None = None
        self.server: ServerInfo | None = None
        """Which server answers at ``api_base`` (:func:`detect_server`), once read."""

    def __repr__(self) -> str:
        return f"LiteLLMModel({self.name!r})"

    @property
    def identity(self) -> str:
        """The name plus what changes the replies besides the request (for cache keys)."""
        parts: dict[str, Any] = {}
        if self.overrides.to_json():
            parts["sampling"] = self.overrides.to_json()
        if self.extra:
            parts["extra"] = self.extra
        if not parts:
            return self.name
        return f"{self.name} {json.dumps(parts, sort_keys=True, default=repr)}"

    @property
    def supports_prefill(self) -> bool:
        """Configured, else what the probe found (``False`` until it ran)."""
        if self._prefill_config is not None:
            return self._prefill_config
        return bool(self._prefill_probed)

    # --- the protocol -------------------------------------------------------------------------

    async def complete(self, request: ModelRequest) -> list[Completion]:
        ll = _import_litellm()
        await self._read_slots()
        messages: list[dict[str, str]] = [m.to_json() for m in request.messages]
        use_prefill = bool(request.prefill) and await self.decide_prefill()
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

    # --- evidence: slots and prefill -----------------------------------------------------------

    async def _read_slots(self) -> None:
        if self._slots_read:
            return
        self._slots_read = True
        base = self.api_base or OLLAMA_DEFAULT_BASE
        if self.mock_response is not None and not self.local:
            return
        if self.provider in OLLAMA_PROVIDERS:
            # Ollama does not tell clients its parallelism; a local one started from the same
            # environment shares OLLAMA_NUM_PARALLEL with us
            slots = ollama_parallel(os.environ) if self.local else None
            self.server = ServerInfo("ollama", slots, "the provider")
            if slots is not None:
                self.slots = slots
                self.limiter.set_slots(slots)
            return
        info = await asyncio.to_thread(detect_server, base, self.api_key)
        self.server = info
        if info.slots is not None:
            self.slots = info.slots
            self.limiter.set_slots(info.slots)
        if info.kind in ("llama-server", "llama-cpp-python") and self.supports_n is None:
            self._n_ignored = True  # llama.cpp's servers: one choice per request

    def _lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._probe_lock is None or self._probe_loop is not loop:
            self._probe_lock = asyncio.Lock()
            self._probe_loop = loop
        return self._probe_lock

    async def decide_prefill(self) -> bool:
        """Whether to send prefills: configured, else probed once (see :meth:`probe`)."""
        if self._prefill_config is not None:
            return self._prefill_config
        if self._prefill_probed is None:
            async with self._lock():
                if self._prefill_probed is None:
                    await self._probe_prefill(retries=self.max_retries)
        return bool(self._prefill_probed)

    async def probe(self) -> Preflight:
        """One tiny call: can the model answer, does it continue a prefill, how many slots
        does its server have. Raises :class:`ModelError` (one line) when it cannot answer."""
        t0 = time.monotonic()
        await self._read_slots()
        async with self._lock():
            text = await self._probe_prefill(retries=min(1, self.max_retries))
        seconds = time.monotonic() - t0
        notes = [f"answered in {seconds:.1f} s"]
        if self._prefill_config is None:
            notes.append(
                "continues a prefill" if self._prefill_probed else "does not continue a prefill"
            )
        if self.server is not None and self.server.kind is not None:
            notes.append(self.server.kind)
        if self.slots is not None:
            notes.append(f"{self.slots} slot(s)")
        elif self.adaptive:
            notes.append(f"slots unknown: starts at {self.limiter.limit} in flight")
        if text is None:
            notes.append("empty probe answer")
        return Preflight(
            model=self.name,
            seconds=seconds,
            prefill=self.supports_prefill,
            slots=self.slots,
            note=", ".join(notes),
            server=self.server.kind if self.server is not None else None,
            limit=self.limiter.limit,
        )

    async def _probe_prefill(self, *, retries: int) -> str | None:
        """The probe call; sets ``_prefill_probed`` (unless configured). Returns its text."""
        ll = _import_litellm()
        probing = self._prefill_config is None or self._prefill_config
        messages = [{"role": "user", "content": PROBE_PROMPT}]
        if probing:
            messages.append({"role": "assistant", "content": PROBE_PREFILL})
        kwargs = self._kwargs_raw(
            messages,
            temperature=0.0,
            top_p=1.0,
            max_tokens=16,
            stop=None,
            n=1,
            seed=None,
            prefill=probing,
        )
        outcome = await self._attempts(ll, kwargs, None, False, retries=retries)
        text = outcome.completions[0].text if outcome.completions else ""
        if self._prefill_config is None:
            self._prefill_probed = continues_prefill(text)
        return text or None

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

    async def _gather(
        self,
        ll: Any,
        messages: list[dict[str, str]],
        request: ModelRequest,
        batches: list[tuple[int, int]],
        use_prefill: bool,
    ) -> list[list[Completion]]:
        async def one(offset: int, k: int) -> list[Completion]:
            comps = await self._call(ll, messages, request, k, offset, use_prefill)
            arrived(request, offset, comps[:k])
            return comps

        if len(batches) == 1:
            offset, k = batches[0]
            return [await one(offset, k)]
        try:
            async with asyncio.TaskGroup() as tg:
                tasks = [tg.create_task(one(offset, k)) for offset, k in batches]
        except BaseExceptionGroup as eg:
            raise _first_leaf(eg) from None
        return [t.result() for t in tasks]

    def _kwargs_raw(
        self,
        messages: list[dict[str, str]],
        *,
        temperature: float,
        top_p: float,
        max_tokens: int,
        stop: list[str] | None,
        n: int,
        seed: int | None,
        prefill: bool,
    ) -> dict[str, Any]:
        kw: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": temperature,
            "top_p": top_p,
            "max_tokens": max_tokens,
            "timeout": self.timeout,
            "num_retries": 0,
            "max_retries": 0,
            "drop_params": True,
        }
        if n > 1:
            kw["n"] = n
        if stop:
            kw["stop"] = stop
        if seed is not None:
            kw["seed"] = seed
        if self.api_base:
            kw["api_base"] = self.api_base
        key = self.api_key
        if (
            key is None
            and self.api_base
            and self.provider in _OPENAI_COMPATIBLE
            and not os.environ.get(PROVIDER_KEY_ENV[self.provider])
        ):
            key = "no-key"  # local servers accept any key; the OpenAI SDK insists on one
        if key is not None:
            kw["api_key"] = key
        if self.mock_response is not None:
            kw["mock_response"] = self.mock_response
        kw.update(self.extra)
        if prefill and self.provider in _OPENAI_COMPATIBLE and self.api_base:
            body = dict(kw.get("extra_body") or {})
            body.setdefault("continue_final_message", True)
            body.setdefault("add_generation_prompt", False)
            kw["extra_body"] = body
        return kw

    def _kwargs(
        self,
        messages: list[dict[str, str]],
        request: ModelRequest,
        n: int,
        offset: int,
        use_prefill: bool,
    ) -> dict[str, Any]:
        s = request.sampling
        o = self.overrides
        budget = o.tokens_for(request.purpose)
        return self._kwargs_raw(
            messages,
            temperature=s.temperature if o.temperature is None else o.temperature,
            top_p=s.top_p if o.top_p is None else o.top_p,
            max_tokens=s.max_tokens if budget is None else budget,
            stop=list(s.stop) or None,
            n=n,
            seed=None if s.seed is None else s.seed + request.sample_index + offset,
            prefill=use_prefill,
        )

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
        outcome = await self._attempts(ll, kwargs, request, use_prefill, retries=self.max_retries)
        return outcome.completions

    async def _attempts(
        self,
        ll: Any,
        kwargs: dict[str, Any],
        request: ModelRequest | None,
        use_prefill: bool,
        *,
        retries: int,
    ) -> Outcome:
        """One call with its retries; each attempt holds a slot of the server's limiter."""
        attempt = 0
        while True:
            if self.meter is not None:
                self.meter.check(self.name)
            await self.limiter.acquire()
            others, mark = self.limiter.active - 1, self.limiter.started
            traffic = self.limiter.traffic
            start = traffic.started()
            account(requests=1)
            outcome: Outcome | None = None
            err: ModelError | None = None
            cause: BaseException | None = None
            cut = False
            try:
                outcome = await self._attempt(ll, kwargs, request, use_prefill, start)
                if request is not None:
                    overlapped = others > 0 or self.limiter.started > mark
                    outcome, why = self._answers_only(outcome, request, overlapped)
                    if why is not None:
                        cut = overlapped
                        err = cause = ModelInterrupted(
                            f"{self.name}: interrupted: {why}", model=self.name
                        )
            except ModelError as e:
                err, cause = e, e
            except Exception as e:  # litellm's exceptions, mapped below
                err, cause = map_error(ll, e, self), e
            finally:
                self.limiter.release(
                    first_token=outcome.first_token if outcome is not None else None,
                    duration=outcome.duration if outcome is not None else None,
                    overloaded=err is not None and not cut and overloaded(err),
                    interrupted=cut,
                )
                traffic.finished(start, outcome.tokens if outcome else 0, ok=outcome is not None)
            if outcome is not None:
                return outcome
            assert err is not None
            assert cause is not None
            if not err.retryable or attempt >= retries:
                if err is cause:
                    raise err
                raise err from cause
            if self.meter is not None:
                self.meter.retries += 1
            account(retries=1)
            await self._sleep(self._delay(attempt, cause))
            attempt += 1

    def _answers_only(
        self, outcome: Outcome, request: ModelRequest, overlapped: bool
    ) -> tuple[Outcome | None, str | None]:
        """``outcome`` without the completions that are no answer (:func:`no_answer`), each
        counted as interrupted; ``(None, why)`` when none is left."""
        kept: list[Completion] = []
        why: str | None = None
        for c in outcome.completions:
            reason = no_answer(
                c.text,
                c.finish_reason,
                request.purpose,
                overlapped=overlapped,
                natural=outcome.natural,
            )
            if reason is None:
                kept.append(c)
            else:
                why = why or reason
                account(interrupted=1)
                if self.meter is not None:
                    self.meter.interrupted += 1
        if not kept and why is not None:
            return None, why
        if len(kept) < len(outcome.completions):
            outcome.completions = kept  # the top-up asks again for the missing samples
        return outcome, None

    async def _attempt(
        self,
        ll: Any,
        kwargs: dict[str, Any],
        request: ModelRequest | None,
        use_prefill: bool,
        start: float,
    ) -> Outcome:
        streamed = self.stream and "n" not in kwargs
        if not streamed:
            resp = await asyncio.wait_for(
                ll.acompletion(**kwargs), timeout=self.timeout * 1.5 + 5.0
            )
            return answered_at_once(ll, resp, request, use_prefill, self.model, start)
        limits = StreamLimits(self.name, self.model, self.timeout, self.stall_timeout)
        return await stream_reply(
            ll, kwargs, request, use_prefill, start, limits, self.limiter.traffic
        )

    def _delay(self, attempt: int, exc: BaseException) -> float:
        base, cap = self.backoff
        d = min(cap, base * 2.0**attempt)
        delay = d / 2 + self._rng.uniform(0.0, d / 2)
        wait = retry_after(exc)
        if wait is not None:
            delay = max(delay, min(cap, wait))
        return delay
