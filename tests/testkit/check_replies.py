"""A scripted model for ``utdebug check``'s tests that answers by function: its test proposals
and votes are looked up from the function named in the prompt and the call being voted on, so
a cached (skipped) function does not shift anyone else's replies, and every call is counted."""

from __future__ import annotations

from typing import Any

from testkit.scripted_add import ut, votes
from utdebug.agents.base import ScriptExhausted
from utdebug.agents.scripted import ScriptedModel
from utdebug.check.options import ModelInfo

Specs = dict[str, list[tuple[str, str]]]
"""function name -> [(call, voted expected output)]."""


class Replies:
    """A scripted model that answers per function and counts its calls."""

    def __init__(
        self,
        specs: Specs,
        *,
        weak: set[str] = frozenset(),
        debug: str | None = None,
        ut_limit: int | None = None,
    ) -> None:
        self.specs = specs
        self.weak = weak
        """Calls whose votes split 5/3 (a 62.5% majority)."""
        self.debug = debug
        self.ut_limit = ut_limit
        """Test proposals served before the model fails (None: no limit)."""
        self.calls: list[str] = []

    def __call__(self, request: Any, i: int) -> str:
        self.calls.append(request.purpose)
        text = "\n".join(m.content for m in request.messages) + (request.prefill or "")
        if request.purpose == "ut":
            if self.ut_limit is not None and self.calls.count("ut") > self.ut_limit:
                raise ScriptExhausted("no more test proposals in this script")
            name = next(n for n in self.specs if f"`{n}` is part of the module" in text)
            call, out = self.specs[name][i % len(self.specs[name])]
            if "pytest function" in text:  # a method: a test that builds its object
                return (
                    f"```python\ndef test_it():\n    acc = Acc()\n    assert {call} == {out}\n```"
                )
            return ut(call, out)
        if request.purpose == "vote":
            for tests in self.specs.values():
                for call, out in tests:
                    if f"```{call}```" in text or f"result = {call}\n" in text:
                        j = i % 8
                        if call in self.weak and j >= 5:
                            return votes("12345")[0]
                        return votes(out)[0]
            raise AssertionError(f"vote for an unknown call: {text[-300:]}")
        if request.purpose == "debug" and self.debug is not None:
            return self.debug
        raise AssertionError(f"unexpected request {request.purpose}")

    def info(self, key: str = "replies-v1") -> ModelInfo:
        """The model as check runs it; ``key`` names it, for the results cache and for the
        response cache (another key: another model, whose replies are not those cached)."""
        model = ScriptedModel(self, name=f"scripted test model {key}")
        return ModelInfo(model, "scripted", key, True)
