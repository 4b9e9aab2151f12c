"""ScriptedModel (replay, exhaustion, purposes, callables) and the response cache."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from utdebug.agents.base import (
    Completion,
    Message,
    Meter,
    Metered,
    Model,
    ModelRequest,
    Sampling,
    ScriptExhausted,
)
from utdebug.agents.cache import CachedModel, ResponseCache
from utdebug.agents.scripted import ScriptedModel


def req(n: int = 1, text: str = "write tests", **kw: object) -> ModelRequest:
    return ModelRequest(messages=(Message("user", text),), n=n, **kw)  # type: ignore[arg-type]


# --- ScriptedModel -------------------------------------------------------------------------------


async def test_replays_in_order_across_calls_then_exhausts() -> None:
    m = ScriptedModel(["a", "bb", "ccc"], name="demo")
    assert isinstance(m, Model) and m.supports_prefill and m.simulated
    first = await m.complete(req(2))
    assert [c.text for c in first] == ["a", "bb"]
    assert [c.text for c in await m.complete(req(1))] == ["ccc"]
    assert m.remaining() == 0 and m.calls == 2 and m.samples == 3
    with pytest.raises(ScriptExhausted, match="only 3 replies were given"):
        await m.complete(req(1))
    assert all(c.model == "demo" and c.simulated and c.usage.cost == 0.0 for c in first)


async def test_usage_is_estimated_from_lengths() -> None:
    m = ScriptedModel(["x" * 41])
    (c,) = await m.complete(req(1, text="y" * 20, prefill="z" * 4))
    assert c.usage.completion_tokens == 10 and c.usage.prompt_tokens == 6


async def test_exhaustion_consumes_nothing() -> None:
    m = ScriptedModel(["a", "b"])
    with pytest.raises(ScriptExhausted):
        await m.complete(req(3))
    assert [c.text for c in await m.complete(req(2))] == ["a", "b"]


async def test_routes_by_purpose() -> None:
    m = ScriptedModel({"ut": ["u1", "u2"], "debug": ["d1"]})
    assert [c.text for c in await m.complete(req(1, purpose="debug"))] == ["d1"]
    assert [c.text for c in await m.complete(req(2, purpose="ut"))] == ["u1", "u2"]
    with pytest.raises(ScriptExhausted, match=r"purpose 'debug'.*only 1 replies"):
        await m.complete(req(1, purpose="debug"))
    with pytest.raises(ScriptExhausted, match="no replies for purpose 'vote'"):
        await m.complete(req(1, purpose="vote"))
    assert m.remaining("ut") == 0


def test_rejects_malformed_scripts() -> None:
    with pytest.raises(ValueError, match="unknown purpose 'unit'"):
        ScriptedModel({"unit": ["x"]})
    with pytest.raises(ValueError, match="item 1 is not a string"):
        ScriptedModel(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="list of strings"):
        ScriptedModel("just one string")


async def test_callable_gets_request_and_absolute_sample_number() -> None:
    seen: list[tuple[str, int]] = []

    def reply(request: ModelRequest, i: int) -> str:
        seen.append((request.purpose, i))
        return f"{request.purpose}-{i}"

    m = ScriptedModel(reply)
    out = await m.complete(req(3, purpose="vote", sample_index=4))
    assert [c.text for c in out] == ["vote-4", "vote-5", "vote-6"]
    assert seen == [("vote", 4), ("vote", 5), ("vote", 6)]
    assert m.remaining() == -1


async def test_concurrent_calls_each_get_distinct_replies() -> None:
    replies = [f"r{i}" for i in range(60)]
    m = ScriptedModel(replies, delay=0.05)
    t0 = time.perf_counter()
    outs = await asyncio.gather(*(m.complete(req(2)) for _ in range(30)))
    elapsed = time.perf_counter() - t0
    served = sorted(c.text for o in outs for c in o)
    assert served == sorted(replies)
    # The 30 delays overlap: serial would take 1.5 s; half of that leaves a loaded machine room.
    assert 0.05 <= elapsed < 0.75


def test_from_file_formats(tmp_path: Path) -> None:
    flat = tmp_path / "flat.json"
    flat.write_text(json.dumps(["one", "two"]))
    m = ScriptedModel.from_file(flat)
    assert m.name == f"scripted:{flat}" and m.remaining() == 2

    per = tmp_path / "per.json"
    per.write_text(json.dumps({"ut": ["u"], "critique": ["c1", "c2"]}))
    m2 = ScriptedModel.from_file(per, name="p")
    assert m2.remaining("critique") == 2 and m2.remaining("ut") == 1

    bad = tmp_path / "bad.json"
    bad.write_text('["a",\n  oops]')
    with pytest.raises(ValueError, match=r"not valid JSON \(line 2"):
        ScriptedModel.from_file(bad)
    with pytest.raises(ValueError, match="no such file"):
        ScriptedModel.from_file(tmp_path / "missing.json")
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"ut": "not a list"}')
    with pytest.raises(ValueError, match="replies for 'ut' must be a list of strings"):
        ScriptedModel.from_file(wrong)


def test_a_script_file_may_say_how_slow_the_model_is(tmp_path: Path) -> None:
    """``"delay"`` in the file: the seconds each call takes. The identity a response cache
    names the model by is its replies' hash: other replies miss, another delay does not."""
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps({"delay": 0.25, "ut": ["u"]}))
    m = ScriptedModel.from_file(slow)
    assert m.delay == 0.25 and m.remaining("ut") == 1
    slow.write_text(json.dumps({"delay": 2, "ut": ["u"]}))
    assert ScriptedModel.from_file(slow).identity == m.identity
    slow.write_text(json.dumps({"ut": ["v"]}))
    assert ScriptedModel.from_file(slow).identity != m.identity
    for bad in ("-1", '"soon"', "true"):
        slow.write_text(f'{{"delay": {bad}, "ut": ["u"]}}')
        with pytest.raises(ValueError, match="delay must be a number of seconds >= 0"):
            ScriptedModel.from_file(slow)


# --- the cache -----------------------------------------------------------------------------------


def counting_model(name: str = "m") -> ScriptedModel:
    return ScriptedModel(lambda r, i: f"{r.messages[0].content}#{i}", name=name)


async def test_rerun_hits_the_cache(tmp_path: Path) -> None:
    inner = counting_model()
    cache = ResponseCache(tmp_path / "c.sqlite")
    m = CachedModel(inner, cache)
    first = await m.complete(req(3))
    assert [c.text for c in first] == ["write tests#0", "write tests#1", "write tests#2"]
    assert not any(c.cached for c in first) and inner.calls == 1 and len(cache) == 3
    again = await m.complete(req(3))
    assert [c.text for c in again] == [c.text for c in first]
    assert all(c.cached for c in again) and inner.calls == 1
    assert again[0].model == "m" and again[0].simulated and again[0].usage == first[0].usage
    cache.close()
    # Persistent: a new cache object on the same file still hits (WAL mode).
    with ResponseCache(tmp_path / "c.sqlite") as reopened:
        inner2 = counting_model()
        out = await CachedModel(inner2, reopened).complete(req(2))
        assert inner2.calls == 0 and all(c.cached for c in out)
        (mode,) = reopened._db.execute("PRAGMA journal_mode").fetchone()
        assert mode == "wal"


async def test_partial_hits_ask_only_for_the_rest(tmp_path: Path) -> None:
    inner = counting_model()
    m = CachedModel(inner, ResponseCache(tmp_path / "c.sqlite"))
    await m.complete(req(2))
    out = await m.complete(req(5))
    assert [c.cached for c in out] == [True, True, False, False, False]
    assert [c.text for c in out] == [f"write tests#{i}" for i in range(5)]
    sub = inner.requests[-1]
    assert (sub.n, sub.sample_index) == (3, 2)


async def test_gap_in_hits_asks_from_the_first_missing_sample(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    r = req(4)
    for i in (0, 2):
        cache.put(r.sample_key("m", i), Completion(text=f"old{i}", model="m"))
    inner = counting_model()
    out = await CachedModel(inner, cache).complete(r)
    assert (inner.requests[-1].n, inner.requests[-1].sample_index) == (3, 1)
    # Hits keep their cached text; the rest is fresh.
    assert [c.text for c in out] == ["old0", "write tests#1", "old2", "write tests#3"]
    assert [c.cached for c in out] == [True, False, True, False]


async def test_sample_index_batches_share_the_cache(tmp_path: Path) -> None:
    inner = counting_model()
    m = CachedModel(inner, ResponseCache(tmp_path / "c.sqlite"))
    await m.complete(req(2, sample_index=0))
    await m.complete(req(2, sample_index=2))
    out = await m.complete(req(4))
    assert all(c.cached for c in out) and inner.calls == 2


@pytest.mark.parametrize(
    "changed",
    [
        {"sampling": Sampling(temperature=0.2)},
        {"template_version": "ut-v2"},
        {"prefill": "assert "},
        {"text": "write other tests"},
    ],
)
async def test_changed_request_misses(tmp_path: Path, changed: dict[str, Any]) -> None:
    inner = counting_model()
    m = CachedModel(inner, ResponseCache(tmp_path / "c.sqlite"))
    await m.complete(req(1))
    out = await m.complete(req(1, **changed))
    assert inner.calls == 2 and not out[0].cached


async def test_other_model_name_misses(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    a, b = counting_model("model-a"), counting_model("model-b")
    await CachedModel(a, cache).complete(req(1))
    out = await CachedModel(b, cache).complete(req(1))
    assert b.calls == 1 and not out[0].cached and len(cache) == 2


async def test_error_completions_are_not_stored(tmp_path: Path) -> None:
    class Flaky:
        name = "flaky"
        simulated = True
        supports_prefill = False

        async def complete(self, request: ModelRequest) -> list[Completion]:
            return [Completion(text="", finish_reason="error")] * request.n

    cache = ResponseCache(tmp_path / "c.sqlite")
    await CachedModel(Flaky(), cache).complete(req(2))
    assert len(cache) == 0


async def test_replies_that_are_no_answer_are_not_stored_nor_replayed(tmp_path: Path) -> None:
    """An empty reply (a server that was interrupted, a reply cut at its token limit before
    any content) is not an answer: not stored; one stored by an earlier version is ignored."""
    replies = iter(["", "  \n", "an answer", "again"])

    class Server:
        name = "server"
        simulated = False
        supports_prefill = False
        calls = 0

        async def complete(self, request: ModelRequest) -> list[Completion]:
            Server.calls += 1
            finish = "length" if Server.calls == 2 else "stop"
            return [Completion(text=next(replies), finish_reason=finish)]

    cache = ResponseCache(tmp_path / "c.sqlite")
    model = CachedModel(Server(), cache)
    assert (await model.complete(req(1)))[0].text == ""
    assert (await model.complete(req(1)))[0].text == "  \n"
    assert len(cache) == 0
    assert (await model.complete(req(1)))[0].text == "an answer"
    assert len(cache) == 1
    # an entry an earlier version wrote for another request, empty: asked again
    key = req(1, text="other").sample_key(model.identity, 0)
    cache.put(key, Completion(text=""))
    assert cache.get(key) is None
    out = await model.complete(req(1, text="other"))
    assert out[0].text == "again" and not out[0].cached and Server.calls == 4
    assert cache.get(key) is not None and cache.get(key).text == "again"  # type: ignore[union-attr]


async def test_metered_counts_cached_samples_apart(tmp_path: Path) -> None:
    meter = Meter()
    m = Metered(CachedModel(counting_model(), ResponseCache(tmp_path / "c.sqlite")), meter)
    await m.complete(req(2))
    await m.complete(req(3))
    assert (meter.calls, meter.completions, meter.cached) == (2, 3, 2)


async def test_concurrent_requests_share_one_cache(tmp_path: Path) -> None:
    inner = counting_model()
    m = CachedModel(inner, ResponseCache(tmp_path / "c.sqlite"))
    outs = await asyncio.gather(*(m.complete(req(2, text=f"p{i}")) for i in range(20)))
    assert [o[1].text for o in outs] == [f"p{i}#1" for i in range(20)]
    assert len(m.cache) == 40


# Fragments of the kind a one-slot server behind a proxy cut off (written here, not taken from
# any corpus): an opening clause, a sentence stopped mid-way.
FRAGMENTS = {
    "vote": ["Let me trace", "First, a correct `Ledger.balance` would add up each entry and"],
    "ut": ["We write a test of `Ledger.post(self, entry)` that builds a ledger with two entries, "
           "posts a third one and then checks that the balance is the sum of the three, because "
           "the method under test should"],
}  # fmt: skip
WHOLE = {
    "vote": ["The value is:\n```python\nFalse\n```", "So the result is `0.0`."],
    "ut": ["```python\ndef test_x():\n    assert Cart().total() == 0\n```"],
}


async def test_a_servers_fragment_is_never_stored_nor_replayed(tmp_path: Path) -> None:
    """A reply that stopped shorter than its purpose needs, or mid-sentence with no code
    block, is not stored, whatever the model's concurrency (the cache does not know it); whole
    replies are; a fragment an earlier version stored is asked again."""
    texts: list[str] = []
    for purpose in ("vote", "ut"):
        texts[:] = [*FRAGMENTS[purpose], *WHOLE[purpose]]

        class Server:
            name = "server"
            simulated = False
            supports_prefill = False

            async def complete(self, request: ModelRequest) -> list[Completion]:
                return [Completion(text=texts.pop(0)) for _ in range(request.n)]

        cache = ResponseCache(tmp_path / f"{purpose}.sqlite")
        model = CachedModel(Server(), cache)
        for i, fragment in enumerate(FRAGMENTS[purpose]):
            (c,) = await model.complete(req(1, text=f"f{i}", purpose=purpose))
            assert c.text == fragment and not c.cached
        assert len(cache) == 0
        for i, whole in enumerate(WHOLE[purpose]):
            (c,) = await model.complete(req(1, text=f"w{i}", purpose=purpose))
            assert c.text == whole
        assert len(cache) == len(WHOLE[purpose])
        again = await model.complete(req(1, text="w0", purpose=purpose))
        assert again[0].cached and again[0].text == WHOLE[purpose][0]
        # a fragment stored by an earlier version is not replayed: the sample is asked again
        key = req(1, text="old", purpose=purpose).sample_key(model.identity, 0)
        cache.put(key, Completion(text=FRAGMENTS[purpose][0]))
        texts[:] = WHOLE[purpose]
        (c,) = await model.complete(req(1, text="old", purpose=purpose))
        assert not c.cached and c.text == WHOLE[purpose][0]


async def test_short_replies_of_scripted_models_and_chat_are_stored(tmp_path: Path) -> None:
    """Only a server's replies can be fragments: a scripted model's short replies, and a
    reply cut at the token limit, are stored as before; ``chat`` needs nothing."""
    cache = ResponseCache(tmp_path / "c.sqlite")
    scripted = CachedModel(ScriptedModel({"vote": ["5"], "ut": ["u1"]}), cache)
    await scripted.complete(req(1, text="v", purpose="vote"))
    await scripted.complete(req(1, text="u", purpose="ut"))
    assert len(cache) == 2

    class Server:
        name = "server"
        simulated = False
        supports_prefill = False

        async def complete(self, request: ModelRequest) -> list[Completion]:
            finish = "length" if request.purpose == "ut" else "stop"
            return [Completion(text="To determine", finish_reason=finish)]

    server = CachedModel(Server(), cache)
    await server.complete(req(1, text="a", purpose="ut"))  # cut at its token limit: kept
    await server.complete(req(1, text="b"))  # chat
    assert len(cache) == 4
