"""Provider errors, as litellm raises them, turned into utdebug's :class:`ModelError` classes.

The class says whether a call is tried again (:attr:`ModelError.retryable`); the message is one
line that names the model and says what to do (which variable to set, which config entry has
the ``api_base`` a raw model string lacks). A connection that dropped after the request was
sent is :class:`ModelDropped`, never retried (:func:`sent_then_dropped`). :func:`overloaded`
says which errors mean the server is overloaded (the concurrency limiter then slows down).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from .base import (
    ContextLengthExceeded,
    ModelAuthError,
    ModelBadRequest,
    ModelDropped,
    ModelError,
    ModelNotFound,
    ModelRateLimited,
    ModelTimeout,
    ModelUnavailable,
)

__all__ = [
    "NOT_SENT_AGAIN",
    "PROVIDER_KEY_ENV",
    "error_detail",
    "key_env",
    "map_error",
    "overloaded",
    "retry_after",
    "sent_then_dropped",
]

NOT_SENT_AGAIN = (
    "not sent again: the server had the request and may have generated, and billed, its "
    "reply; a rerun asks again"
)
"""The end of a :class:`ModelDropped` message (why the client does not resend)."""

# Transport errors, by class name, of a connection that never reached the server (httpx,
# aiohttp, the socket layer): the request was not sent, so sending it again is safe.
_NOT_CONNECTED = {
    "ConnectError",
    "ConnectTimeout",
    "ClientConnectorError",
    "ClientConnectorDNSError",
    "ClientConnectorCertificateError",
    "ConnectionRefusedError",
    "gaierror",
}
# ... and of a connection that closed after the request was sent, before the whole response.
_DROPPED = {
    "ReadError",
    "WriteError",
    "RemoteProtocolError",
    "ServerDisconnectedError",
    "ClientPayloadError",
    "TransferEncodingError",
    "ContentLengthError",
    "ConnectionResetError",
    "BrokenPipeError",
    "IncompleteRead",
}

# Env vars of the providers users are likely to name, for error messages (litellm's
# validate_environment only names a variable when it is missing).
PROVIDER_KEY_ENV = {
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


def key_env(ll: Any, m: Any) -> tuple[str, bool]:
    """The env var that should hold ``m``'s key, and whether it is set."""
    if m.api_key_env:
        return m.api_key_env, bool(os.environ.get(m.api_key_env))
    provider = m.provider
    try:
        _, provider, _, _ = ll.get_llm_provider(model=m.model, api_base=m.api_base)
        missing = ll.validate_environment(model=m.model).get("missing_keys") or []
    except Exception:
        missing = []
    if missing:
        return str(missing[0]), False
    var = PROVIDER_KEY_ENV.get(provider, f"{provider.upper()}_API_KEY")
    return var, bool(os.environ.get(var))


def _chain(e: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    cur: BaseException | None = e
    while cur is not None and all(cur is not x for x in out) and len(out) < 20:
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def sent_then_dropped(e: BaseException) -> bool:
    """Whether ``e`` (as litellm raised it, with its causes) is a connection that closed after
    the request was sent and before the whole response came: the server had the request. A
    connection that was never made (refused, unknown host) is not."""
    names = {type(x).__name__ for x in _chain(e)}
    return bool(names & _DROPPED) and not names & _NOT_CONNECTED


def error_detail(e: BaseException, limit: int = 240) -> str:
    """The first line of ``e``'s message (its type's name when it has none), without the
    repetition litellm appends (``Original exception: ...``), at most ``limit`` characters."""
    text = str(e).strip()
    if not text:
        return type(e).__name__
    line = text.splitlines()[0].split(" Original exception:")[0].strip()
    return line if len(line) <= limit else line[: limit - 3] + "..."


def map_error(ll: Any, e: BaseException, m: Any) -> ModelError:
    """litellm's exception -> ours (the class says whether we retry); ``m`` is the
    :class:`~utdebug.agents.litellm_client.LiteLLMModel` that made the call."""
    name = m.name
    detail = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    if isinstance(e, asyncio.TimeoutError):
        return ModelTimeout(f"{name}: no answer within {m.timeout:g} s", model=name)
    if isinstance(e, ll.ContextWindowExceededError):
        return ContextLengthExceeded(f"{name}: the prompt is too long: {detail}", model=name)
    missing_credentials = "missing credentials" in detail.lower() or (
        "api key" in detail.lower() and "no key is set" in detail.lower()
    )
    if isinstance(e, ll.AuthenticationError | ll.PermissionDeniedError) or missing_credentials:
        var, is_set = key_env(ll, m)
        where = f" by the server at {m.api_base}" if m.api_base else ""
        if m.api_key is not None or is_set:
            msg = (
                f"{name}: the API key was rejected{where}. Check {var} "
                f"(or name another variable with api_key_env in the utdebug config)."
            )
        else:
            msg = (
                f"{name}: no API key: set {var} (export {var}=...), "
                f"or name another variable with api_key_env in the utdebug config."
            )
        if m.hint:
            msg = f"{msg} {m.hint}"
        return ModelAuthError(msg, model=name)
    if isinstance(e, ll.NotFoundError):
        return ModelNotFound(f"{name}: unknown model or endpoint: {detail}", model=name)
    if isinstance(e, ll.RateLimitError):
        return ModelRateLimited(f"{name}: rate limited: {detail}", model=name)
    if isinstance(e, ll.Timeout):
        return ModelTimeout(f"{name}: timed out after {m.timeout:g} s: {detail}", model=name)
    if sent_then_dropped(e):
        return ModelDropped(
            f"{name}: the connection dropped while the model was answering ({error_detail(e)}); "
            f"{NOT_SENT_AGAIN}",
            model=name,
        )
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
    if isinstance(e, ConnectionError | OSError):
        return ModelUnavailable(f"{name}: connection lost: {detail}", model=name)
    return ModelError(f"{name}: {type(e).__name__}: {detail}", model=name)


def overloaded(err: ModelError) -> bool:
    """The server is overloaded or not answering: slow down."""
    if isinstance(err, ModelDropped):
        return err.stalled
    return isinstance(err, ModelTimeout | ModelRateLimited) or (
        isinstance(err, ModelUnavailable) and ("503" in str(err) or "429" in str(err))
    )


def retry_after(exc: BaseException) -> float | None:
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
