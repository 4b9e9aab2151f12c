"""A person's part in a session: correcting, adding and deleting tests while paused, reviewing
edits by hand, rolling back to an earlier version (scripted model, real sandbox runs)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from testkit.scripted_add import (
    add_script,
    fix,
)
from testkit.wait import until

from utdebug.engine import Control, Executor, Session, Settings, Task
from utdebug.engine.control import SessionBusy
from utdebug.engine.events import (
    Backtracked,
    EditAccepted,
    EditProposed,
    RolledBack,
    TestChanged,
)
from utdebug.engine.session import EditReview
from utdebug.engine.state import SessionState

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
WORSE = "def add(a, b):\n    return 0\n"
TASK = Task("toy/add", "Return the sum of a and b.", "add(a, b)", "add", BUGGY)


async def until_paused(session: Session, task: asyncio.Task[Any]) -> None:
    await until(None, lambda: (session.idle and session.control.paused) or task.done(), "paused")
    assert not task.done(), task


def test_a_person_corrects_a_test_then_the_loop_goes_on(executor: Executor) -> None:
    async def go() -> tuple[Session, Any]:
        control = Control()
        control.step(1)  # round 0 (tests built and run), then pause
        s = Session(TASK, add_script([fix(WORSE), fix(FIXED)]), executor, Settings(rounds=2),
                    control=control)  # fmt: skip
        task = asyncio.create_task(s.run())
        await until_paused(s, task)
        assert [t.call for t in s.tests] == ["add(1, 2)", "add(2, 0)", "add(0, 5)"]
        assert s.tests[2].votes and s.tests[2].share == 1.0
        assert s.current_run is not None and s.current_run.rate == pytest.approx(2 / 3)
        wrong = s.tests[2]
        run = await s.set_expected(wrong.id, 5)
        assert run.rate == pytest.approx(1 / 3)  # the corrected test now fails the bug
        assert s.tests[2].origin == "person" and s.tests[2].expected == 5
        assert wrong.expected == -5  # the event's earlier test object is untouched
        control.resume()
        return s, await task

    s, result = asyncio.run(go())
    ev = result.events
    (changed,) = [e for e in ev if isinstance(e, TestChanged)]
    assert changed.action == "edited" and changed.test.expected == 5
    proposed = [e for e in ev if isinstance(e, EditProposed)]
    # Round 1's feedback is the corrected test (the last failing one).
    assert proposed[0].feedback_test == changed.test.id
    (bt,) = [e for e in ev if isinstance(e, Backtracked)]
    assert bt.round == 1 and bt.pre == pytest.approx(1 / 3)
    (acc,) = [e for e in ev if isinstance(e, EditAccepted)]
    assert acc.round == 2 and acc.post == pytest.approx(1.0)
    assert result.code.strip() == FIXED.strip()
    assert [v.round for v in s.versions] == [0, 2]


def test_add_delete_and_roll_back(executor: Executor) -> None:
    async def go() -> None:
        s = Session(TASK, add_script([fix(FIXED)], third="5"), executor, Settings(rounds=1))
        await s.run()
        assert s.code.strip() == FIXED.strip() and len(s.versions) == 2
        assert s.idle
        n = len(s.tests)
        run = await s.add_test((10, 5), 15)
        assert len(s.tests) == n + 1 and s.tests[-1].origin == "person"
        assert s.tests[-1].call == "add(10, 5)" and run.rate == 1.0
        run = await s.rollback(0)
        assert s.code == BUGGY and run.rate is not None and run.rate < 1.0
        assert isinstance(s.events[-2], RolledBack) and s.events[-2].version == 0
        before = run.passed
        run = await s.delete_test(s.tests[-1].id)  # the person's test fails on the bug
        assert len(s.tests) == n and run.passed == before
        with pytest.raises(KeyError):
            await s.delete_test(999)
        with pytest.raises(IndexError):
            await s.rollback(5)

    asyncio.run(go())


def test_the_session_holds_its_state(executor: Executor) -> None:
    """Composition, not inheritance: the session's values are its state's."""
    s = Session(TASK, add_script([]), executor, Settings(rounds=1))
    assert [c.__name__ for c in Session.__mro__ if c.__module__.startswith("utdebug")] == [
        "Session"
    ]
    assert isinstance(s.state, SessionState)
    assert s.tests is s.state.tests and s.events is s.state.events and s.code == TASK.code


def test_changes_are_refused_while_a_round_runs(executor: Executor) -> None:
    s = Session(TASK, add_script([]), executor, Settings(rounds=1))
    s.state._running = True  # as inside run(), between two checkpoints
    with pytest.raises(SessionBusy, match="pause"):
        asyncio.run(s.add_test((1, 1), 2))


def test_a_person_reviews_each_edit(executor: Executor) -> None:
    seen: list[EditReview] = []

    async def reject(review: EditReview) -> bool:
        seen.append(review)
        return False

    model = add_script([fix(FIXED)], third="5")
    s = Session(TASK, model, executor, Settings(rounds=1), review=reject)
    result = asyncio.run(s.run())
    (review,) = seen
    assert review.rule_accepts and review.post == pytest.approx(1.0)
    (bt,) = [e for e in result.events if isinstance(e, Backtracked)]
    assert bt.reason == "rejected by a person"
    assert result.code == BUGGY


class StallOnThirdTest:
    """The toy script, except that the third test proposal never answers (a slow model)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.simulated = inner.simulated
        self.supports_prefill = False
        self.ut_calls = 0

    async def complete(self, request: Any) -> Any:
        if request.purpose == "ut":
            self.ut_calls += 1
            if self.ut_calls == 3:
                await asyncio.Event().wait()
        return await self.inner.complete(request)


def test_a_session_cancelled_while_building_goes_on_with_the_tests_kept(
    executor: Executor,
) -> None:
    """Cancelled with 2 tests kept: going on finishes round 0 on those 2 tests, then debugs."""

    async def go() -> tuple[Session, int, Any]:
        model = StallOnThirdTest(add_script([fix(FIXED)], third="5"))
        s = Session(TASK, model, executor, Settings(rounds=2))  # type: ignore[arg-type]
        task = asyncio.create_task(s.run())
        await until(None, lambda: model.ut_calls == 3, "the third test proposal asked for")
        s.control.cancel()
        first = await task
        assert first.reason == "cancelled"
        assert [t.call for t in s.tests] == ["add(1, 2)", "add(2, 0)"]
        seen = len(s.events)
        more = await s.continue_rounds(1)
        return s, seen, more

    s, seen, more = asyncio.run(go())
    assert more.reason != "no_tests", more.reason
    later = more.events[seen:]
    from utdebug.engine.events import RoundFinished, TestsRun

    runs = [e for e in later if isinstance(e, TestsRun) and e.role == "current"]
    assert runs[0].total == 2 and runs[0].round == 0  # the kept tests, not 0/0
    assert [e.round for e in later if isinstance(e, RoundFinished)] == [0, 1]
    (acc,) = [e for e in later if isinstance(e, EditAccepted)]
    assert acc.round == 1 and s.code.strip() == FIXED.strip()
