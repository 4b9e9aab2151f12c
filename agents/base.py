"""The model protocol: messages in, ``n`` completions out.

Every model utdebug talks to (a litellm-backed provider, the scripted model, the simulated
model, a cache in front of any of them) implements :class:`Model`. Nothing here imports
litellm.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: str

    def to_json(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True, slots=True)
class Sampling:
    temperature: float = 0.7
    top_p: float = 0.9
    max_tokens: int = 8192
    stop: tuple[str, ...] = ()
    seed: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "stop": list(self.stop),
            "seed": self.seed,
        }


Purpose = Literal["ut", "vote", "debug", "critique", "generate", "chat", "perturb", "rationale"]
"""What a request is for; ``perturb`` (corrupting gold code) and ``rationale`` (explaining a
gold output) are the training-data pipeline's (:mod:`utdebug.train`)."""


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One request for ``n`` samples.

    ``prefill`` is the start of the assistant's reply, to be continued (used by the output
    predictor where the provider supports it). ``sample_index`` numbers the first sample, so
    that sample ``i`` of a request is cached and simulated independently of how samples were
    batched. ``context`` carries hints for simulated models only (never sent to a provider,
    never part of the cache key).
    """

    messages: tuple[Message, ...]
    n: int = 1
    sampling: Sampling = field(default_factory=Sampling)
    prefill: str | None = None
    purpose: Purpose = "chat"
    template_version: str = ""
    sample_index: int = 0
    context: Any = None
    end: str | None = None
    """The name of the reply's natural end (:mod:`utdebug.agents.endings`): a streamed reply
    is closed as soon as it has one (a test proposal with its output, a vote with its answer),
    instead of letting the model ramble to its token cap. Part of the cache key when set."""

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"n must be at least 1, got {self.n}")
        if not self.messages:
            raise ValueError("a request needs at least one message")

    def sample_key(self, model: str, i: int) -> str:
        """Hash of the full request for sample ``sample_index + i`` of ``model``."""
        body = {
            "model": model,
            "messages": [m.to_json() for m in self.messages],
            "sampling": self.sampling.to_json(),
            "prefill": self.prefill,
            "template_version": self.template_version,
            "sample": self.sample_index + i,
        }
        if self.end is not None:
            body["end"] = self.end
        raw = json.dumps(body, sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(raw).hexdigest()

    def with_n(self, n: int, start: int) -> ModelRequest:
        return replace(self, n=n, sample_index=start)


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    """US dollars, when the provider's price is known; ``None`` when unknown."""

    def __add__(self, other: Usage) -> Usage:
        cost = (
            None
            if self.cost is None and other.cost is None
            else ((self.cost or 0.0) + (other.cost or 0.0))
        )
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            cost,
        )


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    finish_reason: str = "stop"
    """``stop``, ``length`` (truncated), ``content_filter``, ``error`` ..."""
    usage: Usage = field(default_factory=Usage)
    """This sample's share of the call's usage."""
    model: str = ""
    """The model name the provider resolved (``gpt-4o-2024-08-06`` for ``gpt-4o``)."""
    simulated: bool = False
    cached: bool = False


@runtime_checkable
class Model(Protocol):
    name: str
    simulated: bool

    @property
    def supports_prefill(self) -> bool:
        """The model continues ``request.prefill`` as its own reply (assistant prefill)."""
        ...

    async def complete(self, request: ModelRequest) -> list[Completion]:
        """Exactly ``request.n`` completions, or raise :class:`ModelError`."""
        ...


# --- errors -----------------------------------------------------------------------------------


class ModelError(Exception):
    """A model call failed; ``retryable`` says whether trying again could help."""

    retryable = False

    def __init__(self, message: str, *, model: str = "") -> None:
        super().__init__(message)
        self.model = model


class ModelAuthError(ModelError):
    """Missing or rejected credentials. Never retried."""


class ModelNotFound(ModelError):
    """Unknown model or endpoint. Never retried."""


class ModelBadRequest(ModelError):
    """The provider rejected the request itself. Never retried."""


class ContextLengthExceeded(ModelBadRequest):
    """The conversation does not fit the model's context window."""


class ModelRateLimited(ModelError):
    retryable = True


class ModelTimeout(ModelError):
    retryable = True


class ModelUnavailable(ModelError):
    """Connection refused, 5xx, overloaded: transient."""

    retryable = True


class ModelInterrupted(ModelUnavailable):
    """The server ended a reply without an answer in it: an empty stream, or one cut to a few
    tokens while other requests to it were in flight (a one-slot server that interrupts the
    reply it is generating when a second request arrives, yet reports ``"stop"``). Retried,
    never used as a completion."""


class ModelDropped(ModelUnavailable):
    """The server had the request and was answering it when the reply stopped coming: the
    connection dropped after the request was sent, a stream ended before its last chunk, or a
    streamed reply stalled after its first tokens. Never sent again: the server may have
    generated (and billed) the reply, and a second send would be answered and paid again (see
    ``docs/models.md``, "Retries"). ``stalled``: the client cut a stalled stream (the server
    is overloaded)."""

    retryable = False

    def __init__(self, message: str, *, model: str = "", stalled: bool = False) -> None:
        super().__init__(message, model=model)
        self.stalled = stalled


class CostLimitExceeded(ModelError):
    """The run spent its cost budget; no further calls are made."""


class ScriptExhausted(ModelError):
    """A scripted model was asked for more replies than it was given."""


# --- accounting -------------------------------------------------------------------------------


@dataclass(slots=True)
class Meter:
    """Calls, tokens and cost of a run, shared by every model of that run."""

    cost_limit: float | None = None
    calls: int = 0
    completions: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    cost_known: bool = True
    failures: int = 0
    """Model calls that ended in an error (after their retries)."""
    retries: int = 0
    """Requests tried again after a transient failure."""
    requests: int = 0
    """Requests sent to a provider (each retry and each top-up call is one)."""
    interrupted: int = 0
    """Replies refused as no answer (empty, or cut short by the server) and asked again."""

    def check(self, model: str = "") -> None:
        if self.cost_limit is not None and self.cost >= self.cost_limit:
            raise CostLimitExceeded(
                f"cost limit reached: ${self.cost:.4f} spent of ${self.cost_limit:.4f}",
                model=model,
            )

    def record(self, completions: Sequence[Completion], *, cached: bool = False) -> None:
        if cached:
            self.cached += len(completions)
            return
        self.calls += 1
        self.completions += len(completions)
        for c in completions:
            self.prompt_tokens += c.usage.prompt_tokens
            self.completion_tokens += c.usage.completion_tokens
            if c.usage.cost is None:
                self.cost_known = False
            else:
                self.cost += c.usage.cost

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "completions": self.completions,
            "cached": self.cached,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost": round(self.cost, 6),
            "cost_known": self.cost_known,
            "failures": self.failures,
            "retries": self.retries,
            "requests": self.requests,
            "interrupted": self.interrupted,
        }


_ACCOUNTS: ContextVar[tuple[Meter, ...]] = ContextVar("utdebug_accounts", default=())


@contextlib.contextmanager
def accounting(meter: Meter) -> Iterator[Meter]:
    """Count the requests, retries and failures of model calls made in this context (and in
    tasks started from it) into ``meter`` too; a session wraps its run in this."""
    token = _ACCOUNTS.set((*_ACCOUNTS.get(), meter))
    try:
        yield meter
    finally:
        _ACCOUNTS.reset(token)


def account(
    *, requests: int = 0, retries: int = 0, failures: int = 0, interrupted: int = 0
) -> None:
    """Add to every meter of the current :func:`accounting` context (each meter once)."""
    seen: set[int] = set()
    for m in _ACCOUNTS.get():
        if id(m) in seen:
            continue
        seen.add(id(m))
        m.requests += requests
        m.retries += retries
        m.failures += failures
        m.interrupted += interrupted


SampleSink = Callable[[ModelRequest, int, Sequence[Completion]], None]
"""``(request, offset, completions)``: samples ``offset..`` of ``request`` have arrived."""

_SINKS: ContextVar[tuple[SampleSink, ...]] = ContextVar("utdebug_sample_sinks", default=())


@contextlib.contextmanager
def samples_to(sink: SampleSink) -> Iterator[None]:
    """Hand ``sink`` the samples of the model calls made in this context as each call
    answers, before the whole request does (a response cache keeps the votes already answered
    when the rest of the request fails or is cancelled). A sink checks ``request`` is its
    own."""
    token = _SINKS.set((*_SINKS.get(), sink))
    try:
        yield
    finally:
        _SINKS.reset(token)


def arrived(request: ModelRequest, offset: int, completions: Sequence[Completion]) -> None:
    """Samples ``offset..`` of ``request`` arrived (a model that answers a request in several
    calls says so after each): every sink of the current :func:`samples_to` context hears it."""
    for sink in _SINKS.get():
        sink(request, offset, completions)


def identity_of(model: Model) -> str:
    """What a response cache names ``model`` by: the ``identity`` of the innermost model that
    has one (a litellm model: its name plus its extra arguments and sampling overrides), else
    the model's name. Wrappers are looked through."""
    inner: Any = model
    for _ in range(10):
        ident = getattr(inner, "identity", None)
        if isinstance(ident, str) and ident:
            return ident
        if not hasattr(inner, "inner"):
            break
        inner = inner.inner
    return model.name


async def prefill_supported(model: Model) -> bool:
    """Whether ``model`` continues an assistant prefill, decided by evidence where the model can
    find out (a litellm model probes its server once); wrappers are looked through."""
    inner: Any = model
    for _ in range(10):
        decide = getattr(inner, "decide_prefill", None)
        if decide is not None:
            return bool(await decide())
        if not hasattr(inner, "inner"):
            break
        inner = inner.inner
    return bool(model.supports_prefill)


class Metered:
    """Wraps a model: checks the cost limit before each call and records usage after it."""

    def __init__(self, inner: Model, meter: Meter) -> None:
        self.inner = inner
        self.meter = meter
        self.name = inner.name
        self.simulated = inner.simulated

    @property
    def supports_prefill(self) -> bool:
        return self.inner.supports_prefill

    async def complete(self, request: ModelRequest) -> list[Completion]:
        self.meter.check(self.name)
        try:
            out = await self.inner.complete(request)
        except ModelError:
            self.meter.failures += 1
            raise
        fresh = [c for c in out if not c.cached]
        if fresh:
            self.meter.record(fresh)
        self.meter.record([c for c in out if c.cached], cached=True)
        return out
