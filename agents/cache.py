"""A response cache: an sqlite file of completions keyed by request and sample number.

Sample ``i`` of a request is stored under ``request.sample_key(identity, i)``: the hash of the
model's identity (its name, plus for a litellm model the extra arguments and sampling overrides
of its configuration), messages, sampling parameters, prefill, template version, natural end
and absolute sample number (``sample_index + i``). A rerun of the same request therefore
hits, while a change of any of these (another temperature, another prompt template version)
misses.

Only answers are kept (:func:`short_of`), whatever the model's concurrency settings: a
completion with no text (an empty reply, one the server interrupted, one cut at the token limit
before any content) is never stored, nor is a server's reply that stopped shorter than its
purpose needs (:data:`NEEDS`) or that stopped mid-sentence with no complete code block (a
fragment a server cut off: behind a proxy that hides the server's kind, the model layer cannot
always tell that the server interrupted it). Such entries written by earlier versions are
ignored on read (the request is asked again). Replies of simulated and scripted models are
never fragments: they are stored as they are, when not empty.

The file uses WAL mode, so readers and a writer in other processes do not block each other; in
one process, a lock serialises use of the connection (calls are short and local, so they run in
the event loop's thread).
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from .base import Completion, Model, ModelRequest, Usage, identity_of, samples_to

_SCHEMA = """
CREATE TABLE IF NOT EXISTS completions (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    finish_reason TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cost REAL,
    model TEXT NOT NULL,
    simulated INTEGER NOT NULL,
    created REAL NOT NULL
)
"""


NEEDS: dict[str, int] = {
    "ut": 40,
    "vote": 16,
    "debug": 20,
    "critique": 20,
    "generate": 20,
    "perturb": 20,
    "rationale": 8,
}
"""Characters a reply for each purpose needs at least, unless it holds a fenced value (a test
proposal needs a call and an output, an edit some code; a vote may be short, but not shorter
than ``Output: ```1``````). ``chat`` (and any other purpose) needs nothing."""

_ENDS_WHOLE = re.compile(r"(?:[.!?;:)\]}>\"'`*|]|\d|\bTrue|\bFalse|\bNone)\Z")
"""How a whole reply ends: a sentence's or a block's end, a value."""


def is_answer(text: str) -> bool:
    """Whether a completion's text holds something (it is not empty or blank)."""
    return bool(text.strip())


def short_of(text: str, purpose: str, finish: str = "stop") -> str | None:
    """Why a server's completion for ``purpose`` is not an answer to store (``None``: it is).

    Empty is never an answer. A completion that stopped (``finish`` ``stop``) is a fragment
    when it is shorter than :data:`NEEDS` says, or when it ends mid-sentence (``To determine``,
    ``... The method checks if``), unless it holds a complete fenced block. A completion cut
    at the token limit (``length``) holds what the model wrote in its allowance: it is kept."""
    body = text.strip()
    if not body:
        return f"an empty reply (finish_reason {finish!r})"
    if purpose not in NEEDS or finish != "stop" or body.count("```") >= 2:
        return None
    if len(body) < NEEDS[purpose]:
        return f"a reply of {len(body)} character(s), shorter than a {purpose} reply needs"
    if not _ENDS_WHOLE.search(body):
        return f"a reply that stops mid-sentence ({body[-30:]!r}) with no code block"
    return None


def storable(completion: Completion, purpose: str) -> bool:
    """Whether ``completion`` (of a request for ``purpose``) may be stored and replayed."""
    if completion.finish_reason == "error" or not is_answer(completion.text):
        return False
    if completion.simulated:
        return True
    return short_of(completion.text, purpose, completion.finish_reason) is None


class ResponseCache:
    """Completions by sample key, in the sqlite file ``path`` (created with its folder)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(_SCHEMA)
            self._db.commit()

    def get_many(self, keys: Iterable[str]) -> dict[str, Completion]:
        """The stored completions among ``keys`` (marked ``cached=True``)."""
        wanted = list(dict.fromkeys(keys))
        out: dict[str, Completion] = {}
        with self._lock:
            for i in range(0, len(wanted), 500):
                chunk = wanted[i : i + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    "SELECT key, text, finish_reason, prompt_tokens, completion_tokens, cost, "
                    f"model, simulated FROM completions WHERE key IN ({marks})",
                    chunk,
                ).fetchall()
                for key, text, finish, pt, ct, cost, model, simulated in rows:
                    if not is_answer(text):
                        continue  # an earlier version stored a non-answer: ask again
                    out[key] = Completion(
                        text=text,
                        finish_reason=finish,
                        usage=Usage(int(pt), int(ct), cost),
                        model=model,
                        simulated=bool(simulated),
                        cached=True,
                    )
        return out

    def get(self, key: str) -> Completion | None:
        return self.get_many([key]).get(key)

    def put_many(self, items: Iterable[tuple[str, Completion]]) -> None:
        now = time.time()
        rows = [
            (
                key,
                c.text,
                c.finish_reason,
                c.usage.prompt_tokens,
                c.usage.completion_tokens,
                c.usage.cost,
                c.model,
                int(c.simulated),
                now,
            )
            for key, c in items
        ]
        if not rows:
            return
        with self._lock:
            self._db.executemany(
                "INSERT OR REPLACE INTO completions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows
            )
            self._db.commit()

    def put(self, key: str, completion: Completion) -> None:
        self.put_many([(key, completion)])

    def __len__(self) -> int:
        with self._lock:
            (count,) = self._db.execute("SELECT COUNT(*) FROM completions").fetchone()
        return int(count)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CachedModel:
    """``inner`` behind a :class:`ResponseCache`: only missing samples reach ``inner``.

    For a request of ``n`` samples whose samples ``j..`` are missing from the first missing
    one on, ``inner`` is asked for ``request.with_n(n - j, start=sample_index + j)``; samples
    found in the cache keep their cached text even when ``inner`` produced them again (a gap in
    the hits). Completions with ``finish_reason == "error"``, and those that are no answer
    (:func:`storable`: empty, or a server's fragment shorter than its purpose needs), are not
    stored; such a stored entry is not replayed (the sample is asked again). A model that
    answers a request in several calls (one per sample) has each call's samples stored as it
    answers (:func:`~utdebug.agents.base.samples_to`): the votes already answered are kept when
    the rest of the request fails or is cancelled.
    """

    def __init__(self, inner: Model, cache: ResponseCache) -> None:
        self.inner = inner
        self.cache = cache
        self.name = inner.name
        self.simulated = inner.simulated
        self.identity = identity_of(inner)
        """What the cache keys name the model by: the model's ``identity`` when it has one (a
        litellm model adds its extra arguments and sampling overrides), else its name."""

    @property
    def supports_prefill(self) -> bool:
        return self.inner.supports_prefill

    async def complete(self, request: ModelRequest) -> list[Completion]:
        keys = [request.sample_key(self.identity, i) for i in range(request.n)]
        hits = {
            k: c
            for k, c in self.cache.get_many(keys).items()
            if storable(c, request.purpose)  # an earlier version stored a fragment: ask again
        }
        missing = [i for i, k in enumerate(keys) if k not in hits]
        if not missing:
            return [hits[k] for k in keys]
        first = missing[0]
        sub = request.with_n(request.n - first, start=request.sample_index + first)

        stored: set[int] = set()

        def keep(offset: int, completions: Sequence[Completion]) -> None:
            new = [
                i
                for i in range(first + offset, min(first + offset + len(completions), len(keys)))
                if i not in stored and keys[i] not in hits
            ]
            stored.update(new)
            self.cache.put_many(
                (keys[i], completions[i - first - offset])
                for i in new
                if storable(completions[i - first - offset], request.purpose)
            )

        def arrived(req: ModelRequest, offset: int, completions: Sequence[Completion]) -> None:
            if req is sub:  # a sample answered while the rest of the request is still asked
                keep(offset, completions)

        with samples_to(arrived):
            fresh = await self.inner.complete(sub)
        if len(fresh) != sub.n:
            raise RuntimeError(f"{self.name} returned {len(fresh)} completions for n={sub.n}")
        keep(0, fresh)
        out: list[Completion] = [hits[k] for k in keys[:first]]
        for j, c in enumerate(fresh):
            out.append(hits.get(keys[first + j], c))
        return out
