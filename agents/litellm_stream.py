"""A litellm reply read into :class:`~utdebug.agents.base.Completion` objects: a streamed one
chunk by chunk under the first-token and stall time limits (closed at its natural end), or one
answered at once; with its tokens and cost. A stream that stops before its reply did (the
connection dropped, it ended without its last chunk, it stalled after its first tokens) is
:class:`~utdebug.agents.base.ModelDropped`: the server was answering, so it is never sent again.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from .base import Completion, ModelDropped, ModelError, ModelRequest, ModelTimeout, Usage
from .endings import reached
from .provider_errors import NOT_SENT_AGAIN, error_detail
from .traffic import Traffic


@dataclass(slots=True)
class Outcome:
    completions: list[Completion]
    first_token: float | None
    """Seconds to the first token (``None``: not streamed)."""
    duration: float
    tokens: int
    natural: bool = False
    """The streamed reply reached its natural end (it holds its answer)."""


@dataclass(frozen=True, slots=True)
class StreamLimits:
    """The model's name and model string, and the time limits of one streamed call."""

    name: str
    model: str
    timeout: float
    """Seconds to the first token, counted from ``start``."""
    stall_timeout: float
    """Seconds allowed between two tokens."""


def answered_at_once(
    ll: Any, resp: Any, request: ModelRequest | None, use_prefill: bool, model: str, start: float
) -> Outcome:
    """The outcome of a call answered in one response (not streamed)."""
    comps = convert(ll, resp, request, use_prefill, model)
    tokens = sum(c.usage.completion_tokens for c in comps)
    return Outcome(comps, None, time.monotonic() - start, tokens)


async def stream_reply(
    ll: Any,
    kwargs: dict[str, Any],
    request: ModelRequest | None,
    use_prefill: bool,
    start: float,
    limits: StreamLimits,
    traffic: Traffic,
) -> Outcome:
    """One streamed call: no first token within ``limits.timeout`` (from ``start``) is a
    :class:`ModelTimeout`; no token for ``limits.stall_timeout`` after the first, or a stream
    that stops before its reply did, is a :class:`ModelDropped`."""
    kw = dict(kwargs, stream=True, stream_options={"include_usage": True})
    # No token for this long: not answering. The SDK's own read timeout stays longer.
    kw["timeout"] = max(limits.timeout, limits.stall_timeout) + 10.0
    try:
        resp = await asyncio.wait_for(ll.acompletion(**kw), timeout=limits.timeout)
    except TimeoutError:
        raise _no_first_token(limits) from None
    if not hasattr(resp, "__aiter__"):  # a provider (or a mock) that answered at once
        return answered_at_once(ll, resp, request, use_prefill, limits.model, start)
    reply = _Reply(start, request, traffic)
    try:
        await _read(resp, reply, limits)
    except (ModelError, asyncio.CancelledError):
        raise
    except Exception as e:  # the stream was open: the server had the request and answered
        raise ModelDropped(
            f"{limits.name}: the connection dropped while the model was answering (after "
            f"{reply.chunks} chunk(s): {error_detail(e)}); {NOT_SENT_AGAIN}",
            model=limits.name,
        ) from e
    finally:
        await _close(resp)
    return reply.outcome(ll, use_prefill, limits)


async def _read(resp: Any, reply: _Reply, limits: StreamLimits) -> None:
    """Read the stream into ``reply`` until it ends or the reply reaches its natural end."""
    it = resp.__aiter__()
    while True:
        if reply.ttft is None:
            wait = limits.timeout - (time.monotonic() - reply.start)
        else:
            wait = limits.stall_timeout
        try:
            chunk = await asyncio.wait_for(it.__anext__(), timeout=max(wait, 0.001))
        except StopAsyncIteration:
            return
        except TimeoutError:
            if reply.ttft is None:
                raise _no_first_token(limits) from None
            raise ModelDropped(
                f"{limits.name}: stalled: no token for {limits.stall_timeout:g} s after "
                f"{reply.chunks} chunk(s); {NOT_SENT_AGAIN}",
                model=limits.name,
                stalled=True,
            ) from None
        if reply.take(chunk):
            return


@dataclass(slots=True)
class _Reply:
    """What a stream has said so far (the first choice only)."""

    start: float
    request: ModelRequest | None
    traffic: Traffic
    parts: list[str] = field(default_factory=list)
    finish: str | None = None
    usage: Any = None
    resolved: str | None = None
    ttft: float | None = None
    chunks: int = 0
    natural: bool = False

    def take(self, chunk: Any) -> bool:
        """Add one chunk; ``True`` when the reply reached its natural end."""
        self.resolved = self.resolved or getattr(chunk, "model", None)
        if getattr(chunk, "usage", None) is not None:
            self.usage = chunk.usage
        for choice in getattr(chunk, "choices", None) or []:
            if getattr(choice, "index", 0) != 0:
                continue
            delta = getattr(choice, "delta", None)
            content = getattr(delta, "content", None)
            if content and self._add(content):
                return True
            if getattr(choice, "finish_reason", None):
                self.finish = str(choice.finish_reason)
        return False

    def _add(self, content: str) -> bool:
        self.chunks += 1
        self.parts.append(content)
        if self.ttft is None:
            self.ttft = time.monotonic() - self.start
            self.traffic.first_token(self.start)
        else:
            self.traffic.token(self.start)
        request = self.request
        if request is not None and request.end is not None and ("`" in content or "\n" in content):
            at = reached(request.end, "".join(self.parts))
            if at is not None:
                self.parts = ["".join(self.parts)[:at]]
                self.finish = "stop"
                self.natural = True
                return True
        return False

    def outcome(self, ll: Any, use_prefill: bool, limits: StreamLimits) -> Outcome:
        if self.finish is None:  # the connection closed before the reply's last chunk
            raise ModelDropped(
                f"{limits.name}: the stream ended before the reply did ({self.chunks} chunk(s) "
                f"received); {NOT_SENT_AGAIN}",
                model=limits.name,
            )
        text = _without_prefill("".join(self.parts), self.request, use_prefill)
        usage = self.usage
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0) or self.chunks
        cost = getattr(usage, "cost", None) if usage is not None else None
        if cost is None:
            cost = _cost_per_token(ll, limits.model, prompt_tokens, completion_tokens)
        comp = Completion(
            text=text,
            finish_reason=self.finish or "stop",
            usage=Usage(prompt_tokens, completion_tokens, None if cost is None else float(cost)),
            model=str(self.resolved or limits.model),
        )
        duration = time.monotonic() - self.start
        return Outcome([comp], self.ttft, duration, completion_tokens, self.natural)


def _no_first_token(limits: StreamLimits) -> ModelTimeout:
    return ModelTimeout(
        f"{limits.name}: no first token within {limits.timeout:g} s (timeout); the server may "
        "be busy with other requests or the prompt long",
        model=limits.name,
    )


def _without_prefill(text: str, request: ModelRequest | None, use_prefill: bool) -> str:
    prefill = request.prefill if request is not None else None
    if prefill and not use_prefill and text.startswith(prefill):
        # No prefill support: the model wrote the whole reply; keep what follows it.
        return text[len(prefill) :]
    return text


def convert(
    ll: Any, resp: Any, request: ModelRequest | None, use_prefill: bool, model: str
) -> list[Completion]:
    """The choices of a response answered at once; its tokens and cost split evenly."""
    choices = list(getattr(resp, "choices", None) or [])
    if not choices:
        return []
    k = len(choices)
    usage = getattr(resp, "usage", None)
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
    completion = int(getattr(usage, "completion_tokens", 0) or 0)
    cost = _cost_of(ll, resp)
    prompts, completions = _split(prompt, k), _split(completion, k)
    resolved = str(getattr(resp, "model", None) or model)
    out: list[Completion] = []
    for i, choice in enumerate(choices):
        message = getattr(choice, "message", None)
        text = _without_prefill(str(getattr(message, "content", None) or ""), request, use_prefill)
        out.append(
            Completion(
                text=text,
                finish_reason=str(getattr(choice, "finish_reason", None) or "stop"),
                usage=Usage(prompts[i], completions[i], None if cost is None else cost / k),
                model=resolved,
            )
        )
    return out


def _split(total: int, k: int) -> list[int]:
    """``total`` split into ``k`` near-equal non-negative integers that sum to ``total``."""
    q, r = divmod(max(total, 0), k)
    return [q + (1 if i < r else 0) for i in range(k)]


async def _close(resp: Any) -> None:
    """Close a stream so that the server stops generating (it sees the connection close)."""
    for target in (getattr(resp, "completion_stream", None), resp):
        for name in ("aclose", "close"):
            fn = getattr(target, name, None)
            if fn is None:
                continue
            try:
                res = fn()
                if asyncio.iscoroutine(res):
                    await res
            except Exception:
                pass
            break


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


def _cost_per_token(ll: Any, model: str, prompt: int, completion: int) -> float | None:
    try:
        p, c = ll.cost_per_token(model=model, prompt_tokens=prompt, completion_tokens=completion)
        return float(p) + float(c)
    except Exception:
        return None
