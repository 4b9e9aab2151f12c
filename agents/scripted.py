"""A model that replays given replies: for tests, demos and speed benchmarks.

``ScriptedModel(["a", "b"])`` serves ``a`` then ``b`` (one reply per sample, in order across
calls); ``ScriptedModel({"ut": [...], "debug": [...]})`` serves each purpose from its own list;
``ScriptedModel(fn)`` asks ``fn(request, sample_number)`` where ``sample_number`` is
``request.sample_index + i`` for the request's ``i``-th sample.

Replies are what the model *adds*: with a prefill, a reply is the continuation of the prefill.

The JSON file of ``--model scripted:PATH`` holds a list of strings, or an object mapping purposes
(``ut``, ``vote``, ``debug``, ``critique``, ``generate``, ``chat``, ``perturb``,
``rationale``) to lists of strings, and optionally ``"delay"``: the seconds each call takes (a
slow model, to try a deadline or an interruption).

:attr:`ScriptedModel.identity` (what a response cache names it by) is a hash of its replies:
a script whose replies changed misses, one whose delay changed does not.

With ``cycle=True`` a list that runs out starts again from its first reply (the bundled demo:
its model answers whatever a session asks, however often a person rejects an edit or goes
on after the end); otherwise running out is :class:`ScriptExhausted`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import get_args

from .base import Completion, ModelRequest, Purpose, ScriptExhausted, Usage

Responder = Callable[[ModelRequest, int], str]
PURPOSES: tuple[str, ...] = get_args(Purpose)
_ALL = "*"


class ScriptedModel:
    """Replays replies; see the module docstring."""

    simulated = True

    def __init__(
        self,
        replies: Sequence[str] | Mapping[str, Sequence[str]] | Responder,
        *,
        name: str = "scripted",
        delay: float = 0.0,
        supports_prefill: bool = True,
        cycle: bool = False,
    ) -> None:
        self.name = name
        self.cycle = cycle
        self.delay = float(delay)
        self.supports_prefill = supports_prefill
        self._fn: Responder | None = None
        self._scripts: dict[str, list[str]] = {}
        if callable(replies):
            self._fn = replies
        elif isinstance(replies, Mapping):
            for purpose, items in replies.items():
                if purpose not in PURPOSES:
                    raise ValueError(
                        f"unknown purpose {purpose!r} in the script (known: {', '.join(PURPOSES)})"
                    )
                self._scripts[purpose] = _strings(items, f"replies for {purpose!r}")
        else:
            self._scripts[_ALL] = _strings(replies, "replies")
        self._next: dict[str, int] = dict.fromkeys(self._scripts, 0)
        replies_hash = hashlib.sha256(json.dumps(self._scripts, sort_keys=True).encode())
        self.identity = name if self._fn is not None else f"{name} {replies_hash.hexdigest()}"
        """The model's name and a hash of its replies (a callable's: its name)."""
        self._lock = threading.Lock()
        self.calls = 0
        self.samples = 0
        self.requests: list[ModelRequest] = []
        """Every request received, in order (for tests)."""

    @classmethod
    def from_file(
        cls, path: str | Path, *, name: str | None = None, delay: float = 0.0, cycle: bool = False
    ) -> ScriptedModel:
        """Load the JSON script of ``--model scripted:PATH``; ``ValueError`` when malformed."""
        p = Path(path).expanduser()
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ValueError(f"scripted model: no such file: {p}") from None
        except (OSError, UnicodeDecodeError) as e:
            raise ValueError(f"scripted model: cannot read {p}: {e}") from None
        except json.JSONDecodeError as e:
            raise ValueError(
                f"scripted model: {p} is not valid JSON (line {e.lineno}, column {e.colno}): "
                f"{e.msg}"
            ) from None
        if not isinstance(data, list | dict):
            raise ValueError(
                f"scripted model: {p} must hold a list of strings or an object mapping "
                "purposes to lists of strings"
            )
        if isinstance(data, dict) and "delay" in data:
            data = dict(data)
            given = data.pop("delay")
            ok = isinstance(given, int | float) and not isinstance(given, bool)
            if not ok or not math.isfinite(given) or given < 0:
                raise ValueError(
                    f"scripted model: {p}: delay must be a number of seconds >= 0, got {given!r}"
                )
            delay = max(delay, float(given))
        try:
            return cls(data, name=name or f"scripted:{p}", delay=delay, cycle=cycle)
        except ValueError as e:
            raise ValueError(f"scripted model: {p}: {e}") from None

    def remaining(self, purpose: str | None = None) -> int:
        """Replies not served yet (for ``purpose``, or in the shared list); -1 for a callable."""
        if self._fn is not None:
            return -1
        key = _ALL if _ALL in self._scripts else (purpose or "")
        with self._lock:
            script = self._scripts.get(key, [])
            return len(script) - self._next.get(key, 0)

    async def complete(self, request: ModelRequest) -> list[Completion]:
        texts = self._take(request)
        if self.delay > 0:
            await asyncio.sleep(self.delay)
        prompt_chars = sum(len(m.content) for m in request.messages) + len(request.prefill or "")
        prompt_tokens = prompt_chars // 4
        return [
            Completion(
                text=t,
                finish_reason="stop",
                usage=Usage(prompt_tokens, len(t) // 4, 0.0),
                model=self.name,
                simulated=True,
            )
            for t in texts
        ]

    def _take(self, request: ModelRequest) -> list[str]:
        n = request.n
        with self._lock:
            self.calls += 1
            self.requests.append(request)
            if self._fn is None:
                key = _ALL if _ALL in self._scripts else request.purpose
                script = self._scripts.get(key)
                if script is None:
                    raise ScriptExhausted(
                        f"{self.name}: no replies for purpose {request.purpose!r} "
                        f"(the script has: {', '.join(sorted(self._scripts))})",
                        model=self.name,
                    )
                start = self._next[key]
                if self.cycle and script:
                    self._next[key] = start + n
                    self.samples += n
                    return [script[(start + i) % len(script)] for i in range(n)]
                if start + n > len(script):
                    what = "" if key == _ALL else f" for purpose {request.purpose!r}"
                    raise ScriptExhausted(
                        f"{self.name}: script exhausted{what}: asked for reply {start + n} "
                        f"but only {len(script)} replies were given",
                        model=self.name,
                    )
                self._next[key] = start + n
                self.samples += n
                return script[start : start + n]
            self.samples += n
        fn = self._fn
        return [_check_reply(fn(request, request.sample_index + i)) for i in range(n)]


def _strings(items: object, what: str) -> list[str]:
    if isinstance(items, str) or not isinstance(items, Sequence):
        raise ValueError(f"{what} must be a list of strings")
    out = list(items)
    bad = [i for i, x in enumerate(out) if not isinstance(x, str)]
    if bad:
        raise ValueError(f"{what} must be a list of strings (item {bad[0]} is not a string)")
    return out


def _check_reply(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"a scripted responder must return str, got {type(value).__name__}")
    return value
