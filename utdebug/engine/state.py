"""A session's state and what a person may change in it while it is paused or ended.

:class:`SessionState` holds the code in force, the tests, the chat and the accepted versions,
emits events to the listeners, runs the tests, saves and restores itself
(:meth:`~SessionState.snapshot`) and applies a person's changes (expected values, new or
edited tests, a roll back). :class:`Interruptible` is the model as the session's roles see it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from utdebug.agents.base import Completion, Message, Meter, Model, ModelRequest
from utdebug.agents.roles import first_chat
from utdebug.engine.control import Control, SessionBusy
from utdebug.engine.events import Event, ModelCalled, Paused, RolledBack, TestChanged, TestsRun
from utdebug.engine.execution import Executor, TestRun
from utdebug.engine.model import Settings, Task, UnitTest, code_id
from utdebug.engine.program import check_shape

__all__ = ["CALL_CLOSE_SECONDS", "Interruptible", "Listener", "SessionState", "Version"]

Listener = Callable[[Event], None]


@dataclass(frozen=True, slots=True)
class Version:
    """An accepted version of the code (index 0: the given code) and the chat that led to it."""

    round: int
    code: str
    chat: tuple[Message, ...]


CALL_CLOSE_SECONDS = 0.25
"""How long a cancelled model call is given to close its stream before the session moves on."""


class Interruptible:
    """The session's model as its roles see it: a call in flight is cancelled as soon as the
    session is asked to pause or stop (the model client closes its stream); a paused call is
    asked again once the session resumes, a cancelled one ends the session."""

    def __init__(self, inner: Model, session: SessionState) -> None:
        self.inner = inner
        self.name = inner.name
        self.simulated = inner.simulated
        self._session = session

    @property
    def supports_prefill(self) -> bool:
        return self.inner.supports_prefill

    async def complete(self, request: ModelRequest) -> list[Completion]:
        control = self._session.control
        while True:
            if not (control.paused or control.cancelled):
                call = asyncio.ensure_future(self.inner.complete(request))
                halt = asyncio.ensure_future(control.halted())
                try:
                    await asyncio.wait((call, halt), return_when=asyncio.FIRST_COMPLETED)
                finally:
                    halt.cancel()
                    if not call.done():
                        call.cancel()
                        await asyncio.wait((call,), timeout=CALL_CLOSE_SECONDS)
                if call.done() and not call.cancelled():
                    return call.result()
                self._session.interrupted_calls += 1
            await self._session._checkpoint()  # Paused; raises SessionCancelled when cancelled


class SessionState:
    """A session's state: the code in force, its tests, chat and accepted versions, the
    events and usage so far; :class:`~utdebug.engine.session.Session` runs the loop on it."""

    def __init__(
        self,
        task: Task,
        executor: Executor,
        settings: Settings | None,
        control: Control | None,
        listeners: list[Listener] | None,
    ) -> None:
        self.task = task
        self.executor = executor
        self.settings = settings or Settings()
        self.control = control or Control()
        self.listeners: list[Listener] = list(listeners or [])
        self.events: list[Event] = []
        self.usage = Meter()
        """Calls, tokens and cost of this session's model calls."""
        self.calls_by_purpose: dict[str, int] = {}
        self._ids = 0
        self._round = 0
        self.interrupted_calls = 0
        """Model calls cut short by a pause or a cancellation (a paused one is asked again)."""
        self.tests: list[UnitTest] = []
        self.code = task.code
        self.chat: list[Message] = list(first_chat(task.text(), task.code))
        self.versions: list[Version] = [Version(0, self.code, tuple(self.chat))]
        """Every accepted version of the code, the given code first."""
        self.current_run: TestRun | None = None
        """The latest run of the code in force on ``tests``."""
        self._running = False
        self._waiting = False
        self._changed = False
        self._ended = False
        self._changes = 0
        """A person's changes so far (a round whose edit call they interrupted starts again)."""
        self._rebuild = False
        """Paper loop: the next round builds new tests (an edit was accepted)."""
        self._last_round = -1
        """The last round that finished (-1: none yet)."""

    # -- plumbing ---------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        self.events.append(event)
        for listener in self.listeners:
            listener(event)

    def _on_call(self, purpose: str, out: list[Completion], seconds: float) -> None:
        fresh = [c for c in out if not c.cached]
        if fresh:
            self.usage.record(fresh)
            self.calls_by_purpose[purpose] = self.calls_by_purpose.get(purpose, 0) + 1
        self.usage.record([c for c in out if c.cached], cached=True)
        costs = [c.usage.cost for c in out]
        cost = None if None in costs else sum(c for c in costs if c is not None)
        self.emit(
            ModelCalled(
                purpose,
                len(out),
                sum(c.usage.prompt_tokens for c in out),
                sum(c.usage.completion_tokens for c in out),
                cost,
                bool(out) and all(c.cached for c in out),
                round(seconds, 4),
            )
        )

    def _next_id(self) -> int:
        self._ids += 1
        return self._ids

    def hint(self, purpose: str, **kw: Any) -> dict[str, Any]:
        """What simulated models may read (``request.context``); real models ignore it."""
        return {
            "task_id": self.task.task_id,
            "purpose": purpose,
            "method": self.settings.ut_method.value,
            **kw,
        }

    async def _checkpoint(self) -> None:
        if self.control.paused and not self.control.cancelled:
            self.emit(Paused(self._round))
        self._waiting = True
        try:
            await self.control.wait()
        finally:
            self._waiting = False

    # -- a session that outlives its process ------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The state a person's session needs to go on in another process: the code in force,
        the tests (``UnitTest.to_json``, read back losslessly), the chat, the accepted
        versions, the rounds."""
        return {
            "code": self.code,
            "tests": [_test_json(t) for t in self.tests],
            "chat": [m.to_json() for m in self.chat],
            "versions": [
                {"round": v.round, "code": v.code, "chat": [m.to_json() for m in v.chat]}
                for v in self.versions
            ],
            "round": self._round,
            "last_round": self._last_round,
            "ids": self._ids,
            "rebuild": self._rebuild,
            "usage": self.usage.to_json(),
            "by_purpose": dict(self.calls_by_purpose),
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Take back a :meth:`snapshot`: the session is as it was, ended (it goes on with
        :meth:`continue_rounds`). A test whose record does not read back is left out."""
        self.code = str(state["code"])
        self.tests = [
            t for t in (_test_from(x, self.code) for x in state["tests"]) if t is not None
        ]
        self.chat = [Message(m["role"], m["content"]) for m in state["chat"]]
        self.versions = [
            Version(
                int(v["round"]),
                str(v["code"]),
                tuple(Message(m["role"], m["content"]) for m in v["chat"]),
            )
            for v in state["versions"]
        ] or [Version(0, self.task.code, tuple(self.chat))]
        self._round = int(state["round"])
        self._last_round = int(state["last_round"])
        self._ids = int(state["ids"])
        self._rebuild = bool(state.get("rebuild", False))
        usage = state.get("usage")
        if isinstance(usage, dict):  # the counters go on from where they were
            for name, value in usage.items():
                if hasattr(self.usage, name) and isinstance(value, bool | int | float):
                    setattr(self.usage, name, type(getattr(self.usage, name))(value))
        by_purpose = state.get("by_purpose")
        if isinstance(by_purpose, dict):
            self.calls_by_purpose = {str(k): int(v) for k, v in by_purpose.items()}
        self.current_run = None
        self._ended, self._running = True, False

    # -- a person's changes (while paused, or after the session ended) -----------------------

    @property
    def idle(self) -> bool:
        """No round is running: a person may change tests or roll back."""
        return not self._running or self._waiting

    def _check_idle(self) -> None:
        if not self.idle:
            raise SessionBusy("a round is running: pause the session first")

    def _test_index(self, test_id: int) -> int:
        for i, t in enumerate(self.tests):
            if t.id == test_id:
                return i
        raise KeyError(f"no test with id {test_id}")

    async def _rerun(self) -> TestRun:
        run = await self.run_tests(self.code, self.tests, self._round, "current")
        self._changed = True
        self._changes += 1
        return run

    async def set_expected(self, test_id: int, value: Any) -> TestRun:
        """A person's correction of a test's expected output; the tests run again."""
        self._check_idle()
        i = self._test_index(test_id)
        t = replace(self.tests[i], expected=value, origin="person")
        self.tests[i] = t
        self.emit(TestChanged(self._round, "edited", t))
        return await self._rerun()

    async def add_test(
        self, args: Sequence[Any], expected: Any, input_source: str = "person"
    ) -> TestRun:
        """A person's own test of the code in force; the tests run again. ``input_source``:
        where its input came from (``person``, or ``synth:<source>`` for a synthesised input
        whose expected value the person wrote)."""
        self._check_idle()
        args = tuple(args)
        call = f"{self.task.entry_point}({', '.join(repr(a) for a in args)})"
        t = UnitTest(
            self._next_id(),
            args,
            call,
            expected,
            origin="person",
            round=self._round,
            target=code_id(self.code),
            input_source=input_source,
        )
        self.tests.append(t)
        self.emit(TestChanged(self._round, "added", t))
        return await self._rerun()

    async def add_program_test(
        self,
        setup: str,
        call: str,
        expected: Any,
        then: str | None = None,
        input_source: str = "person",
    ) -> TestRun:
        """A person's own test program of the code in force (``expected``: a value or a
        :class:`~utdebug.engine.program.Raises`); its parts are only parsed here (the sandbox
        runs them). Raises ValueError with the reason when they do not parse. A call that
        should raise is such a test with no setup (``input_source`` as for :meth:`add_test`)."""
        self._check_idle()
        why = check_shape(setup, call, then)
        if why is not None:
            raise ValueError(why)
        t = UnitTest(
            self._next_id(),
            (),
            call.strip(),
            expected,
            origin="person",
            round=self._round,
            target=code_id(self.code),
            setup=setup,
            then=then.strip() if then is not None and then.strip() else None,
            input_source=input_source,
        )
        self.tests.append(t)
        self.emit(TestChanged(self._round, "added", t))
        return await self._rerun()

    async def set_program(
        self, test_id: int, setup: str, call: str, expected: Any, then: str | None = None
    ) -> TestRun:
        """A person's edit of a test program's setup, call and expected outcome."""
        self._check_idle()
        why = check_shape(setup, call, then)
        if why is not None:
            raise ValueError(why)
        i = self._test_index(test_id)
        t = replace(
            self.tests[i],
            args=(),
            setup=setup,
            call=call.strip(),
            then=then.strip() if then is not None and then.strip() else None,
            expected=expected,
            origin="person",
        )
        self.tests[i] = t
        self.emit(TestChanged(self._round, "edited", t))
        return await self._rerun()

    async def delete_test(self, test_id: int) -> TestRun:
        self._check_idle()
        t = self.tests.pop(self._test_index(test_id))
        self.emit(TestChanged(self._round, "deleted", t))
        return await self._rerun()

    async def restore_test(self, test: UnitTest, index: int | None = None) -> TestRun:
        """Put ``test`` back as it was (a person's undo): it replaces the test with its id, or,
        when that test is gone, goes back at ``index`` (the end by default); tests run again."""
        self._check_idle()
        try:
            self.tests[self._test_index(test.id)] = test
        except KeyError:
            at = len(self.tests) if index is None else min(max(index, 0), len(self.tests))
            self.tests.insert(at, test)
        self.emit(TestChanged(self._round, "restored", test))
        return await self._rerun()

    async def rollback(self, version: int) -> TestRun:
        """Make an earlier accepted version the code in force (its chat too); tests run again."""
        self._check_idle()
        if not 0 <= version < len(self.versions):
            raise IndexError(f"no version {version} (0..{len(self.versions) - 1})")
        v = self.versions[version]
        self.code, self.chat = v.code, list(v.chat)
        self.emit(RolledBack(self._round, version, code_id(v.code), v.code))
        return await self._rerun()

    async def run_tests(
        self, code: str, tests: list[UnitTest], round_no: int, role: str
    ) -> TestRun:
        run = await self.executor.run_tests(
            self.task, code, tests, self.settings.variant, self.settings.limits
        )
        if role == "current":
            self.current_run = run
        self.emit(
            TestsRun(
                round_no,
                code_id(code),
                role,
                run.passed,
                run.total,
                [
                    {"id": t.id, "verdict": j.verdict.value, "detail": j.detail}
                    for t, j in zip(tests, run.results, strict=True)
                ],
            )
        )
        return run


def _test_json(t: UnitTest) -> dict[str, Any]:
    return t.to_json()


def _test_from(x: dict[str, Any], code: str) -> UnitTest | None:
    """A test of a snapshot (``None``: one that does not read back). Values are read as
    expected values are (literals, constructor calls of ``code``'s classes, never evaluated);
    a test with setup keeps its setup, follow-up and expected exception."""
    try:
        return UnitTest.from_json(x, module_source=code)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
