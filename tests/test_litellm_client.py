"""LiteLLMModel through litellm's real call path (``mock_response=``), offline."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from utdebug.agents.base import (
    ContextLengthExceeded,
    CostLimitExceeded,
    Message,
    Meter,
    Metered,
    ModelAuthError,
    ModelBadRequest,
    ModelNotFound,
    ModelRateLimited,
    ModelRequest,
    ModelTimeout,
    ModelUnavailable,
    Sampling,
    accounting,
)
from utdebug.agents.litellm_client import ClientSettings, LiteLLMModel, SamplingOverrides
from utdebug.agents.loopback_server import LLMServer
from utdebug.agents.servers import PROBE_PREFILL, PROBE_PROMPT, continues_prefill


@pytest.fixture(scope="module")
def ll() -> Any:
    import litellm  # once per module: seconds

    return litellm


class Recorder:
    """Stands in for ``litellm.acompletion``: records kwargs, optionally raises scripted errors
    first, then calls the real function (which serves ``mock_response``)."""

    def __init__(self, real: Any, errors: list[BaseException] | None = None) -> None:
        self.real = real
        self.errors = list(errors or [])
        self.calls: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.hold = 0.0

    async def __call__(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.hold:
                await asyncio.sleep(self.hold)
            if self.errors:
                raise self.errors.pop(0)
            return await self.real(**kwargs)
        finally:
            self.in_flight -= 1


@pytest.fixture
def rec(ll: Any, monkeypatch: pytest.MonkeyPatch) -> Recorder:
    r = Recorder(ll.acompletion)
    monkeypatch.setattr(ll, "acompletion", r)
    return r


class FakeSleep:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def req(n: int = 1, **kw: Any) -> ModelRequest:
    return ModelRequest(messages=(Message("user", "write a test"),), n=n, **kw)


def model(name: str = "openai/gpt-4o-mini", **kw: Any) -> tuple[LiteLLMModel, FakeSleep]:
    sleep = FakeSleep()
    kw.setdefault("mock_response", "hello")
    tuned = {k: kw.pop(k) for k in list(kw) if k in ClientSettings.__dataclass_fields__}
    settings = ClientSettings(**tuned)
    return LiteLLMModel(name, settings, sleep=sleep, rng=random.Random(0), **kw), sleep


async def test_n_choices_with_usage_cost_and_resolved_model(ll: Any, rec: Recorder) -> None:
    m, _ = model()
    out = await m.complete(req(3, sampling=Sampling(temperature=0.3, seed=5, stop=("END",))))
    assert [c.text for c in out] == ["hello"] * 3
    assert len(rec.calls) == 1
    call = rec.calls[0]
    assert call["n"] == 3 and call["seed"] == 5 and call["stop"] == ["END"]
    assert call["temperature"] == 0.3 and call["num_retries"] == 0 and call["max_retries"] == 0
    assert call["timeout"] == 120.0
    assert all(c.model == "gpt-4o-mini" and c.finish_reason == "stop" for c in out)
    assert not any(c.simulated or c.cached for c in out)
    # The call's usage is split across its three choices, exactly.
    assert sum(c.usage.prompt_tokens for c in out) == 10
    assert sum(c.usage.completion_tokens for c in out) == 20
    costs = [c.usage.cost for c in out]
    assert all(c is not None and c > 0 for c in costs)
    prompt_price = ll.model_cost["gpt-4o-mini"]["input_cost_per_token"]
    output_price = ll.model_cost["gpt-4o-mini"]["output_cost_per_token"]
    assert sum(c or 0 for c in costs) == pytest.approx(10 * prompt_price + 20 * output_price)


async def test_unpriced_local_model_has_unknown_cost(rec: Recorder) -> None:
    m, _ = model("openai/my-local-coder", api_base="http://127.0.0.1:8000/v1")
    assert m.name == "openai/my-local-coder@http://127.0.0.1:8000/v1"
    out = await m.complete(req(1))
    assert out[0].text == "hello" and out[0].usage.cost is None
    # Local servers accept any key; the OpenAI SDK needs one.
    assert rec.calls[0]["api_key"] == "no-key"
    assert rec.calls[0]["api_base"] == "http://127.0.0.1:8000/v1"


def test_probe_answers_are_read_as_continued_or_restarted() -> None:
    assert continues_prefill(" 5, 6, 7, 8, 9, 10")
    assert continues_prefill("5, 6, 7")
    assert continues_prefill("\n5,6")
    # llama-cpp-python's server: a new turn that starts again
    assert not continues_prefill("1, 2, 3, 4, 5")
    assert not continues_prefill("Sure! 1, 2, 3")
    assert not continues_prefill("")
    assert not LiteLLMModel(
        "anthropic/claude-x", ClientSettings(supports_prefill=False)
    ).supports_prefill


async def test_prefill_is_decided_by_one_probe(rec: Recorder) -> None:
    m, _ = model("anthropic/claude-3-5-haiku-20241022", mock_response=" 5, 6, 7, 8, 9, 10")
    assert not m.supports_prefill  # no evidence yet
    await m.complete(req(2, prefill="assert f(3) == ("))
    await m.complete(req(1, prefill="assert f(4) == ("))
    probe, *calls = rec.calls
    assert probe["messages"] == [
        {"role": "user", "content": PROBE_PROMPT},
        {"role": "assistant", "content": PROBE_PREFILL},
    ]
    assert probe["max_tokens"] == 16 and probe["temperature"] == 0.0
    assert m.supports_prefill
    # one probe for the model's life; every later request carries its prefill
    assert len(calls) == 3
    assert all(c["messages"][-1]["role"] == "assistant" for c in calls)
    # Anthropic takes no n: one call per sample.
    assert all("n" not in c for c in calls)


async def test_a_server_that_restarts_the_turn_gets_no_prefill(rec: Recorder) -> None:
    m, _ = model("openai/qwen", api_base="http://127.0.0.1:9/v1", mock_response="1, 2, 3, 4, 5")
    out = await m.complete(req(1, prefill="assert f(3) == "))
    probe, call = rec.calls
    assert probe["messages"][-1] == {"role": "assistant", "content": PROBE_PREFILL}
    assert probe["extra_body"] == {"continue_final_message": True, "add_generation_prompt": False}
    assert not m.supports_prefill
    assert call["messages"][-1]["role"] == "user" and "extra_body" not in call
    assert out[0].text == "1, 2, 3, 4, 5"


async def test_configured_prefill_is_not_probed(rec: Recorder) -> None:
    m, _ = model("anthropic/claude-3-5-haiku-20241022", mock_response=" 42)", supports_prefill=True)
    out = await m.complete(req(2, prefill="assert f(3) == ("))
    assert len(rec.calls) == 2
    sent = [c["messages"] for c in rec.calls]
    assert all(s[-1] == {"role": "assistant", "content": "assert f(3) == ("} for s in sent)
    assert [c.text for c in out] == [" 42)", " 42)"]  # the continuation only


async def test_prefill_on_local_openai_server_asks_vllm_to_continue(rec: Recorder) -> None:
    m, _ = model(
        "openai/qwen", api_base="http://127.0.0.1:9/v1", mock_response="7", supports_prefill=True
    )
    await m.complete(req(1, prefill="x = "))
    assert rec.calls[0]["messages"][-1]["role"] == "assistant"
    assert rec.calls[0]["extra_body"] == {
        "continue_final_message": True,
        "add_generation_prompt": False,
    }


async def test_without_prefill_support_the_echoed_prefill_is_stripped(rec: Recorder) -> None:
    m, _ = model(mock_response="assert f(3) == 42", supports_prefill=False)
    assert not m.supports_prefill
    out = await m.complete(req(1, prefill="assert f(3) == "))
    assert rec.calls[0]["messages"][-1]["role"] == "user"
    assert out[0].text == "42"


async def test_one_sample_calls_are_streamed_and_config_sampling_wins(rec: Recorder) -> None:
    m, _ = model(
        "openai/gpt-4o-mini",
        mock_response="hello world",
        sampling=SamplingOverrides(temperature=0.1, max_tokens=77),
        extra={"user": "ci"},
    )
    out = await m.complete(req(1, sampling=Sampling(temperature=0.9, top_p=0.5, max_tokens=9)))
    call = rec.calls[0]
    assert call["stream"] is True and call["stream_options"] == {"include_usage": True}
    assert call["temperature"] == 0.1 and call["max_tokens"] == 77 and call["top_p"] == 0.5
    assert call["user"] == "ci"
    assert out[0].text == "hello world" and out[0].usage.completion_tokens > 0
    assert out[0].usage.cost is not None and out[0].usage.cost > 0
    # the overrides and extra arguments name the model in the response cache
    assert m.identity.startswith("openai/gpt-4o-mini ") and '"max_tokens": 77' in m.identity
    assert '"extra": {"user": "ci"}' in m.identity
    assert LiteLLMModel("openai/gpt-4o-mini").identity == "openai/gpt-4o-mini"


async def test_rate_limit_is_retried_then_succeeds(ll: Any, rec: Recorder) -> None:
    rec.errors = [
        ll.RateLimitError("slow down", llm_provider="openai", model="gpt-4o-mini"),
        ll.RateLimitError("slow down", llm_provider="openai", model="gpt-4o-mini"),
    ]
    meter = Meter()
    m, sleep = model(meter=meter)
    out = await m.complete(req(2))
    assert [c.text for c in out] == ["hello", "hello"]
    assert len(rec.calls) == 3 and meter.retries == 2
    # Exponential back-off with jitter: [0.5, 1] then [1, 2] seconds.
    assert len(sleep.delays) == 2
    assert 0.5 <= sleep.delays[0] <= 1.0 and 1.0 <= sleep.delays[1] <= 2.0


async def test_timeout_is_retried(ll: Any, rec: Recorder) -> None:
    rec.errors = [ll.Timeout("read timeout", model="gpt-4o-mini", llm_provider="openai")]
    m, sleep = model(timeout=7.0, stall_timeout=3.0)
    out = await m.complete(req(1))
    assert out[0].text == "hello" and len(rec.calls) == 2 and len(sleep.delays) == 1
    # streamed: utdebug times the first token and the stalls; the SDK's own limit is looser
    assert rec.calls[0]["timeout"] == 17.0 and rec.calls[0]["stream"] is True


@pytest.mark.parametrize(
    ("make", "ours"),
    [
        (lambda ll: ll.RateLimitError("429", llm_provider="openai", model="m"), ModelRateLimited),
        (lambda ll: ll.Timeout("t", model="m", llm_provider="openai"), ModelTimeout),
        (
            lambda ll: ll.APIConnectionError("refused", llm_provider="openai", model="m"),
            ModelUnavailable,
        ),
        (
            lambda ll: ll.ServiceUnavailableError("503", llm_provider="openai", model="m"),
            ModelUnavailable,
        ),
        (
            lambda ll: ll.InternalServerError("500", llm_provider="openai", model="m"),
            ModelUnavailable,
        ),
    ],
)
async def test_transient_errors_exhaust_the_retries(
    ll: Any, rec: Recorder, make: Callable[[Any], BaseException], ours: type[Exception]
) -> None:
    # Through litellm's own mock path: every attempt raises.
    meter = Meter()
    m, sleep = model(mock_response=make(ll), max_retries=3, meter=meter)
    with pytest.raises(ours) as info:
        await m.complete(req(1))
    assert info.value.retryable  # type: ignore[attr-defined]
    assert len(rec.calls) == 4 and len(sleep.delays) == 3 and meter.retries == 3


async def test_auth_error_is_not_retried_and_names_the_env_var(
    ll: Any, rec: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    bad = ll.AuthenticationError("Incorrect API key provided", llm_provider="openai", model="m")
    m, sleep = model(mock_response=bad)
    with pytest.raises(ModelAuthError) as info:
        await m.complete(req(3))
    assert len(rec.calls) == 1 and sleep.delays == []
    msg = str(info.value)
    assert "OPENAI_API_KEY" in msg and "set" in msg and "\n" not in msg
    assert not info.value.retryable

    monkeypatch.setenv("MY_TEAM_KEY", "sk-wrong")
    m2, _ = model(mock_response=bad, api_key_env="MY_TEAM_KEY")
    with pytest.raises(ModelAuthError, match=r"rejected\. Check MY_TEAM_KEY"):
        await m2.complete(req(1))
    assert rec.calls[-1]["api_key"] == "sk-wrong"


async def test_missing_anthropic_key_is_an_auth_error(
    rec: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No mock: litellm itself refuses before any request (no network).
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    m = LiteLLMModel("anthropic/claude-3-5-haiku-20241022", sleep=FakeSleep())
    with pytest.raises(ModelAuthError, match="no API key: set ANTHROPIC_API_KEY"):
        await m.complete(req(1))
    assert len(rec.calls) == 1


@pytest.mark.parametrize(
    ("make", "ours"),
    [
        (
            lambda ll: ll.ContextWindowExceededError("too long", model="m", llm_provider="openai"),
            ContextLengthExceeded,
        ),
        (
            lambda ll: ll.NotFoundError("no such model", model="m", llm_provider="openai"),
            ModelNotFound,
        ),
        (lambda ll: ll.BadRequestError("bad", model="m", llm_provider="openai"), ModelBadRequest),
    ],
)
async def test_permanent_errors_are_not_retried(
    ll: Any, rec: Recorder, make: Callable[[Any], BaseException], ours: type[Exception]
) -> None:
    meter = Meter()
    m, sleep = model(mock_response=make(ll), meter=meter)
    with pytest.raises(ours):
        await m.complete(req(2))
    assert len(rec.calls) == 1 and sleep.delays == [] and meter.retries == 0


async def test_context_length_is_a_bad_request(ll: Any, rec: Recorder) -> None:
    exc = ll.ContextWindowExceededError("too long", model="m", llm_provider="openai")
    m, _ = model(mock_response=exc)
    with pytest.raises(ModelBadRequest, match="too long"):
        await m.complete(req(1))


ONE_CHOICE = {
    "model": "qwen-local",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "x"}, "finish_reason": "length"}
    ],
    "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
}


async def test_top_up_when_the_server_ignores_n(rec: Recorder) -> None:
    # Like llama.cpp's server: asked for 3, returns 1.
    m, _ = model("openai/qwen", api_base="http://127.0.0.1:8080/v1", mock_response=ONE_CHOICE)
    out = await m.complete(req(3, sampling=Sampling(seed=7), sample_index=10))
    assert len(out) == 3
    assert all(c.text == "x" and c.finish_reason == "length" for c in out)
    assert all(c.model == "qwen-local" and c.usage.prompt_tokens == 12 for c in out)
    assert rec.calls[0]["n"] == 3
    assert all("n" not in c for c in rec.calls[1:]) and len(rec.calls) == 3
    # Distinct seeds: seed + sample_index + i.
    assert rec.calls[0]["seed"] == 17 and sorted(c["seed"] for c in rec.calls[1:]) == [18, 19]
    # Learned: the next request asks one sample per call from the start.
    rec.calls.clear()
    await m.complete(req(2))
    assert len(rec.calls) == 2 and all("n" not in c for c in rec.calls)


async def test_explicit_supports_n_true_keeps_asking_for_the_rest(rec: Recorder) -> None:
    m, _ = model(
        "openai/qwen",
        api_base="http://127.0.0.1:8080/v1",
        mock_response=ONE_CHOICE,
        supports_n=True,
    )
    out = await m.complete(req(3))
    assert len(out) == 3
    assert [c.get("n") for c in rec.calls] == [3, 2, None]


async def test_concurrency_limit_is_respected(rec: Recorder) -> None:
    rec.hold = 0.02
    m, _ = model(concurrency=2, supports_n=False)
    outs = await asyncio.gather(*(m.complete(req(3)) for _ in range(3)))
    assert [len(o) for o in outs] == [3, 3, 3]
    assert len(rec.calls) == 9
    assert rec.max_in_flight == 2


async def test_cost_limit_stops_further_calls(rec: Recorder) -> None:
    meter = Meter(cost_limit=1e-6)
    inner, _ = model(meter=meter)
    m = Metered(inner, meter)
    await m.complete(req(1))
    assert meter.cost > meter.cost_limit  # type: ignore[operator]
    with pytest.raises(CostLimitExceeded):
        await m.complete(req(1))
    # The model itself checks too (e.g. between top-up calls), without the Metered wrapper.
    with pytest.raises(CostLimitExceeded):
        await inner.complete(req(1))
    assert len(rec.calls) == 1
    assert meter.calls == 1 and meter.completions == 1


async def test_failures_are_counted_by_metered(ll: Any, rec: Recorder) -> None:
    meter = Meter()
    bad = ll.BadRequestError("bad", model="m", llm_provider="openai")
    m = Metered(model(mock_response=bad, meter=meter)[0], meter)
    with pytest.raises(ModelBadRequest):
        await m.complete(req(1))
    assert meter.failures == 1 and meter.calls == 0


def test_retry_after_header_lengthens_the_wait(ll: Any) -> None:
    import httpx

    resp = httpx.Response(429, headers={"retry-after": "12"}, request=httpx.Request("POST", "x"))
    exc = ll.RateLimitError("slow", llm_provider="openai", model="m", response=resp)
    m = LiteLLMModel(
        "openai/gpt-4o-mini", ClientSettings(backoff=(1.0, 30.0)), rng=random.Random(1)
    )
    assert m._delay(0, exc) == 12.0
    m_capped = LiteLLMModel("openai/gpt-4o-mini", ClientSettings(backoff=(1.0, 5.0)))
    assert m_capped._delay(0, exc) == 5.0
    assert 8.0 <= m._delay(4, ValueError()) <= 16.0


def test_constructor_validates() -> None:
    with pytest.raises(ValueError, match="concurrency"):
        LiteLLMModel("openai/x", ClientSettings(concurrency=0))
    with pytest.raises(ValueError, match="timeout"):
        LiteLLMModel("openai/x", ClientSettings(timeout=0))


# --- a real HTTP round trip: a local OpenAI-compatible server (like llama-server) ---------------


@pytest.fixture
def server(ll: Any) -> Any:
    s = LLMServer(responder=lambda body: "42)")
    yield s
    s.close()


async def test_local_server_round_trip_with_prefill_slots_and_retry(server: LLMServer) -> None:
    server.statuses = [503]
    meter = Meter()
    sleep = FakeSleep()
    m = LiteLLMModel(
        "openai/qwen",
        ClientSettings(supports_prefill=True),
        api_base=server.base,
        sleep=sleep,
        meter=meter,
    )
    with accounting(Meter()) as session:
        out = await m.complete(req(3, prefill="assert f(1) == (", sampling=Sampling(seed=3)))
    assert [c.text for c in out] == ["42)"] * 3
    assert out[0].usage.cost is None  # an unpriced local model
    assert out[0].usage.completion_tokens == 1  # one 4-character token
    assert meter.retries == 1 and len(sleep.delays) == 1
    assert session.retries == 1 and session.requests == 4
    # /props says one slot: llama.cpp's server, which ignores n: one streamed call per sample
    assert m.slots == 1 and m.limiter.limit == 1 and server.max_active == 1
    assert all("n" not in b and b["stream"] is True for b in server.bodies)
    assert sorted(b["seed"] for b in server.bodies[1:]) == [3, 4, 5]
    first = server.bodies[1]
    assert first["messages"][-1] == {"role": "assistant", "content": "assert f(1) == ("}
    assert first["continue_final_message"] is True and first["add_generation_prompt"] is False


async def test_local_server_rejecting_the_key(
    server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.statuses = [401]
    monkeypatch.setenv("LOCAL_KEY", "sk-wrong")
    m = LiteLLMModel(
        "openai/qwen", api_base=server.base, api_key_env="LOCAL_KEY", sleep=FakeSleep()
    )
    with pytest.raises(ModelAuthError) as info:
        await m.complete(req(1))
    assert len(server.bodies) == 1
    assert str(info.value) == (
        f"openai/qwen@{server.base}: the API key was rejected by the server at {server.base}. "
        "Check LOCAL_KEY (or name another variable with api_key_env in the utdebug config)."
    )


async def test_a_fragment_is_not_cached_whatever_the_concurrency(
    ll: Any, rec: Recorder, tmp_path: Path
) -> None:
    """With ``concurrency = 2, adaptive = false`` (a proxy that hides the server's kind) a reply
    the server cut off is returned, but never stored: a rerun asks again."""
    from utdebug.agents.cache import CachedModel, ResponseCache

    fragment = "Step one: a correct `Ledger.balance` adds the entries and then"
    for concurrency in (1, 2):
        m, _ = model(
            "openai/qwen",
            api_base="http://127.0.0.1:9/v1",
            mock_response=fragment,
            concurrency=concurrency,
            adaptive=False,
            supports_n=False,
        )
        cache = ResponseCache(tmp_path / f"c{concurrency}.sqlite")
        cached = CachedModel(m, cache)
        out = await asyncio.gather(
            *(cached.complete(req(1, purpose="vote", sample_index=i)) for i in range(2))
        )
        assert [o[0].text for o in out] == [fragment, fragment]
        assert len(cache) == 0
