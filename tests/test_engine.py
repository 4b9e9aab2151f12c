"""The engine driven end to end by the scripted model, with real sandbox runs."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import pytest
from testkit.scripted_add import (
    add_script,
    fix,
    ut,
    votes,
)
from testkit.wait import until

from utdebug.agents.base import Message, ModelRateLimited, ModelRequest
from utdebug.agents.scripted import ScriptedModel
from utdebug.engine import (
    Control,
    Executor,
    Session,
    Settings,
    Task,
    UTMethod,
    Variant,
    event_to_json,
    stream,
)
from utdebug.engine.events import (
    Backtracked,
    EditAccepted,
    EditProposed,
    Finished,
    Paused,
    RoundFinished,
    TestDropped,
    TestKept,
    TestProposed,
    TestsBuilt,
    TestsRun,
    VoteCast,
)
from utdebug.engine.voting import answer_key, keeps, tally

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
WORSE = "def add(a, b):\n    return 0\n"
TASK = Task("toy/add", "Return the sum of a and b.", "add(a, b)", "add", BUGGY)


def kinds(events: list[Any], cls: type) -> list[Any]:
    return [e for e in events if isinstance(e, cls)]


def run(session: Session) -> Any:
    return asyncio.run(session.run())


# --- voting -----------------------------------------------------------------------------------


def test_answer_keys_are_type_aware() -> None:
    assert answer_key(1) == answer_key(1.0)
    assert answer_key(True) != answer_key(1)
    assert answer_key(math.nan) == answer_key(float("nan"))
    assert answer_key({3, 1, 2}) == answer_key({1, 2, 3})
    assert answer_key({"b": 1, "a": 2}) == answer_key({"a": 2, "b": 1})
    assert answer_key([1, 2]) != answer_key((1, 2))
    assert answer_key("1") != answer_key(1)
    assert answer_key(2**60) != answer_key(2**60 + 1)


def test_reference_keys_are_str() -> None:
    assert answer_key(1, "reference") != answer_key(1.0, "reference")
    assert answer_key(True, "reference") != answer_key(1, "reference")
    assert answer_key("1", "reference") == answer_key(1, "reference")


def test_tally_threshold_counts_unparsed_draws() -> None:
    four = [(True, 3)] * 4 + [(False, None)] * 4
    t = tally(four)
    assert (t.value, t.count, t.draws) == (3, 4, 8)
    assert keeps(t, 0.5)
    three = [(True, 3)] * 3 + [(True, 4)] * 2 + [(False, None)] * 3
    assert not keeps(tally(three), 0.5)
    assert not keeps(tally([(False, None)] * 8), 0.5)
    tie = tally([(True, 5), (True, 6), (True, 6), (True, 5)])
    assert tie.value == 5  # ties go to the first answer seen


# --- the paper loop ---------------------------------------------------------------------------


def test_paper_loop_fixes_the_code(executor: Executor) -> None:
    model = ScriptedModel(
        {
            "ut": [
                ut("add(1, 2)", "3"),
                ut("add(2, 2)", "4"),
                ut("add(0, 5)", "5"),
                ut("add(3, 3)", "6"),
                ut("add(7, 1)", "8"),
                ut("add(4, 0)", "4"),
            ],
            "vote": votes(*["3"] * 8)
            + votes(*["4"] * 6, "5", "5")
            + votes(*["5"] * 8)
            + votes(*["6"] * 8)
            + votes(*["8"] * 8)
            + votes(*["4"] * 8),
            "debug": [fix(FIXED)],
        }
    )
    session = Session(TASK, model, executor, Settings(rounds=3))
    result = run(session)
    ev = result.events
    assert result.reason == "all_pass"
    assert result.code.strip() == FIXED.strip()
    kept = kinds(ev, TestKept)
    assert [k.test.call for k in kept[:3]] == ["add(1, 2)", "add(2, 2)", "add(0, 5)"]
    assert kept[1].test.share == pytest.approx(0.75)
    assert len(kinds(ev, VoteCast)) == 8 * 6
    acc = kinds(ev, EditAccepted)
    assert len(acc) == 1
    assert acc[0].pre == pytest.approx(0.0)  # a - b fails all three tests
    assert acc[0].post == pytest.approx(1.0)
    # The paper feeds back the last failing test.
    assert kinds(ev, EditProposed)[0].feedback_test == kept[2].test.id
    feedback = next(r for r in model.requests if r.purpose == "debug").messages[-1].content
    assert "Input: [0, 5]" in feedback and "Output: -5" in feedback and "Expected: 5" in feedback
    # Tests are rebuilt against the accepted code in round 2, then all pass: round 2 ran
    # (built its tests), so it is finished too, and every front end counts the same rounds.
    assert [r.round for r in kinds(ev, RoundFinished)] == [0, 1, 2]
    assert kinds(ev, TestsBuilt)[-1].round == 2
    assert isinstance(ev[-1], Finished) and ev[-1].reason == "all_pass"
    json.dumps([event_to_json(e) for e in ev])  # the trace is JSON


def test_worse_edit_is_backtracked(executor: Executor) -> None:
    model = ScriptedModel(
        {
            "ut": [ut("add(1, 2)"), ut("add(2, 0)"), ut("add(0, 5)")],
            "vote": votes(*["3"] * 8) + votes(*["2"] * 8) + votes(*["5"] * 8),
            "debug": [fix(WORSE), "I am not sure what to change.", fix(WORSE)],
        }
    )
    session = Session(TASK, model, executor, Settings(rounds=3))
    result = run(session)
    ev = result.events
    assert result.code.strip() == BUGGY.strip()
    bt = kinds(ev, Backtracked)
    assert [b.reason for b in bt] == [
        "pass rate did not rise",
        "no code in the reply",
        "pass rate did not rise",
    ]
    assert bt[0].pre == pytest.approx(1 / 3) and bt[0].post == pytest.approx(0.0)
    # A rejected edit leaves no trace in the chat of the next request.
    debug_reqs = [r for r in model.requests if r.purpose == "debug"]
    assert len(debug_reqs[1].messages) == len(debug_reqs[0].messages)
    assert result.reason == "rounds"


def test_without_backtracking_every_edit_is_kept(executor: Executor) -> None:
    model = ScriptedModel(
        {
            "ut": [ut("add(1, 2)"), ut("add(2, 0)"), ut("add(0, 5)")] * 2,
            "vote": (votes(*["3"] * 8) + votes(*["2"] * 8) + votes(*["5"] * 8)) * 2,
            "debug": [fix(WORSE)],
        }
    )
    result = run(Session(TASK, model, executor, Settings(rounds=1, backtrack=False)))
    assert result.code.strip() == WORSE.strip()
    assert kinds(result.events, EditAccepted)[0].reason == "backtracking off"


def test_dropped_tests_unparsable_low_votes_duplicates(executor: Executor) -> None:
    model = ScriptedModel(
        {
            "ut": [
                "I would test it with some numbers.",
                ut("add(1, 2)"),
                ut("add(1, 2)"),
                ut("add(5, 5)"),
                ut("add(9, 9)"),
                ut("add(a=3, b=4)"),
                ut("add(0, 0)"),
                ut("add(1, 1)"),
                ut("add(2, 2)"),
            ],
            "vote": votes(*["3"] * 8)
            + votes(*["3"] * 8)
            + votes("10", "10", "10", "11", "12", "13", "x y", "14")
            + votes(*["18"] * 5, "17", "17", "16")
            + votes(*["7"] * 8),
            "debug": [fix(FIXED)],
        }
    )
    session = Session(TASK, model, executor, Settings(rounds=0))
    result = run(session)
    reasons = [d.reason for d in kinds(result.events, TestDropped)]
    assert reasons[0].startswith("unparsable")
    assert "duplicate input" in reasons
    assert "top answer has 3 of 8 votes" in reasons
    calls = [t.call for t in result.tests]
    assert calls == ["add(1, 2)", "add(9, 9)", "add(a=3, b=4)"]
    assert result.tests[2].args == (3, 4)  # keywords bound to positions
    assert sum(1 for e in result.events if isinstance(e, TestProposed)) == 6


def test_tries_are_capped_at_three_n(executor: Executor) -> None:
    model = ScriptedModel({"ut": ["no test here"] * 20, "vote": [], "debug": []})
    result = run(Session(TASK, model, executor, Settings(n=2, rounds=2)))
    assert len(kinds(result.events, TestProposed)) == 6
    assert result.reason == "no_tests"
    assert result.tests == []


def test_no_voting_uses_the_generators_own_output(executor: Executor) -> None:
    model = ScriptedModel(
        {
            "ut": [ut("add(1, 2)", "3"), ut("add(2, 3)", "5"), ut("add(4, 4)", "8")],
            "vote": [],
            "debug": [],
        }
    )
    result = run(Session(TASK, model, executor, Settings(k=0, rounds=0)))
    assert [t.expected for t in result.tests] == [3, 5, 8]
    assert not kinds(result.events, VoteCast)


def test_hostile_inputs_are_contained(executor: Executor) -> None:
    model = ScriptedModel(
        {
            "ut": [
                ut("add(10**10**10, 1)"),
                ut("add([0] * 10**10, 1)"),
                ut("add(__import__('os').system('touch /tmp/pwned'), 1)"),
                ut("add(1, 2)"),
                ut("add(2, 2)"),
                ut("add(3, 3)"),
            ],
            "vote": votes(*["3"] * 8) + votes(*["4"] * 8) + votes(*["6"] * 8),
            "debug": [],
        }
    )
    result = run(Session(TASK, model, executor, Settings(rounds=0)))
    reasons = [d.reason for d in kinds(result.events, TestDropped)]
    assert len(reasons) == 3 and all(r.startswith("unparsable") for r in reasons)
    assert [t.call for t in result.tests] == ["add(1, 2)", "add(2, 2)", "add(3, 3)"]


def test_a_test_that_hangs_times_out_and_the_loop_goes_on(executor: Executor) -> None:
    hang = "def add(a, b):\n    while a:\n        pass\n    return b\n"
    task = Task("toy/hang", "Return the sum.", "add(a, b)", "add", hang)
    model = ScriptedModel(
        {
            "ut": [ut("add(1, 2)"), ut("add(0, 2)"), ut("add(5, 0)")],
            "vote": votes(*["3"] * 8) + votes(*["2"] * 8) + votes(*["5"] * 8),
            "debug": [fix(FIXED)],
        }
    )
    s = Settings(rounds=1)
    s = Settings(rounds=1, limits=type(s.limits)(per_input=0.3, load=2.0, batch=5.0))
    result = run(Session(task, model, executor, s))
    first_run = kinds(result.events, TestsRun)[0]
    assert [v["verdict"] for v in first_run.verdicts] == ["timeout", "pass", "timeout"]
    fb = next(r for r in model.requests if r.purpose == "debug").messages[-1].content
    assert "Error: Timed out!" in fb
    assert result.code.strip() == FIXED.strip()


def test_a_program_that_eats_memory_fails_its_tests(executor: Executor) -> None:
    hog = "def add(a, b):\n    x = [0] * (10 ** 10)\n    return a + b\n"
    task = Task("toy/hog", "Return the sum.", "add(a, b)", "add", hog)
    model = ScriptedModel(
        {
            "ut": [ut("add(1, 2)"), ut("add(0, 2)"), ut("add(5, 0)")],
            "vote": votes(*["3"] * 8) + votes(*["2"] * 8) + votes(*["5"] * 8),
            "debug": [fix(FIXED)],
        }
    )
    result = run(Session(task, model, executor, Settings(rounds=1)))
    first_run = kinds(result.events, TestsRun)[0]
    assert {v["verdict"] for v in first_run.verdicts} == {"fail"}
    assert "MemoryError" in first_run.verdicts[0]["detail"]
    assert result.code.strip() == FIXED.strip()


def test_model_error_ends_the_session_with_a_reason(executor: Executor) -> None:
    def boom(req: ModelRequest, i: int) -> str:
        if req.purpose == "debug":
            raise ModelRateLimited("rate limited after 4 retries", model="scripted")
        if req.purpose == "ut":
            return ut(f"add({i % 1000}, 1)")
        return "Output: ```0```"

    result = run(Session(TASK, ScriptedModel(boom), executor, Settings(rounds=2)))
    assert result.reason == "error"
    assert result.error is not None and "rate limited" in result.error
    assert isinstance(result.events[-1], Finished)


# --- the reference variant --------------------------------------------------------------------


def test_reference_variant_accepts_ties_and_keeps_rejected_reply(executor: Executor) -> None:
    first_arg = "def add(a, b):\n    return a\n"
    model = ScriptedModel(
        {
            "ut": [ut("add(1, 2)"), ut("add(2, 0)"), ut("add(0, 5)"), ut("add(7, 7)")] * 3,
            "vote": (votes(*["3"] * 8) + votes(*["2"] * 8) + votes(*["5"] * 8) + votes(*["14"] * 8))
            * 3,
            "debug": [fix(BUGGY), fix(WORSE), fix(first_arg)],
        }
    )
    s = Settings(rounds=3, variant=Variant.REFERENCE)
    result = run(Session(TASK, model, executor, s))
    ev = result.events
    # Round 1 proposes the same code: a tie, accepted under the reference rule.
    acc = kinds(ev, EditAccepted)
    assert acc[0].round == 1 and acc[0].pre == acc[0].post
    bt = kinds(ev, Backtracked)
    assert bt and bt[0].round == 2
    # The reference feeds back the first failing test.
    first = next(r for r in model.requests if r.purpose == "debug")
    assert "Input: [1, 2]" in first.messages[-1].content
    # Round 0 duplicates the given code as a second assistant turn (a quirk kept on purpose).
    assert [m.role for m in first.messages] == ["user", "assistant", "assistant", "user"]
    # After the backtrack, the rejected reply stays and no feedback turn is added.
    third = [r for r in model.requests if r.purpose == "debug"][2]
    assert third.messages[-1].role == "assistant" and "return 0" in third.messages[-1].content
    assert [r.round for r in kinds(ev, RoundFinished)] == [0, 1, 2, 3]


def test_reference_variant_tries_four_n_with_patience(executor: Executor) -> None:
    model = ScriptedModel(
        {"ut": [ut("add(1, 2)")] * 20, "vote": votes(*["3"] * 8) * 20, "debug": []}
    )
    result = run(Session(TASK, model, executor, Settings(rounds=0, variant=Variant.REFERENCE)))
    # One test kept, then duplicates make no progress: patience 3 stops after 3 more tries.
    assert len(kinds(result.events, TestProposed)) == 4
    assert len(result.tests) == 1


# --- the none baseline ------------------------------------------------------------------------


def test_self_critique_baseline(executor: Executor) -> None:
    model = ScriptedModel(
        {
            "critique": [
                "Feedback: it subtracts. The above code is wrong, please fix it.",
                "Feedback: looks fine. The above code is correct.",
            ],
            "debug": [fix(FIXED)],
        }
    )
    result = run(Session(TASK, model, executor, Settings(ut_method=UTMethod.NONE)))
    assert result.reason == "judged_correct"
    assert result.code.strip() == FIXED.strip()
    assert kinds(result.events, TestKept) == []


# --- control ----------------------------------------------------------------------------------


def _endless() -> ScriptedModel:
    def reply(req: ModelRequest, i: int) -> str:
        if req.purpose == "ut":
            return ut(f"add({i % 1000}, {1 + i // 1000})")
        if req.purpose == "vote":
            return "Output: ```-1```"  # always wrong: the code never passes
        return fix(WORSE)

    return ScriptedModel(reply)


def test_step_pauses_after_one_round_then_cancel(executor: Executor) -> None:
    async def main() -> tuple[Any, list[Any]]:
        control = Control()
        control.step(1)
        session = Session(TASK, _endless(), executor, Settings(rounds=3), control=control)
        task = asyncio.create_task(session.run())
        await until(
            None,
            lambda: control.paused and any(isinstance(e, Paused) for e in session.events),
            "paused after round 0",
        )
        rounds = [e.round for e in session.events if isinstance(e, RoundFinished)]
        control.cancel()
        result = await task
        return result, rounds

    result, rounds_when_paused = asyncio.run(main())
    assert rounds_when_paused == [0]
    assert result.reason == "cancelled"


def test_stream_yields_events_in_order(executor: Executor) -> None:
    async def main() -> list[str]:
        session = Session(TASK, _endless(), executor, Settings(rounds=1))
        return [e.kind async for e in stream(session)]

    kinds_seen = asyncio.run(main())
    assert kinds_seen[0] == "session_started"
    assert kinds_seen[-1] == "finished"
    assert "tests_built" in kinds_seen and "backtracked" in kinds_seen


def test_settings_reject_bad_values() -> None:
    with pytest.raises(ValueError, match="n"):
        Settings(n=0)
    with pytest.raises(ValueError, match="threshold"):
        Settings(threshold=0)
    with pytest.raises(ValueError, match=r"k \(votes\)"):
        Settings(k=-1)
    assert Settings().tries == 9 and Settings(variant=Variant.REFERENCE).tries == 12


def test_messages_are_plain_dataclasses() -> None:
    assert Message("user", "x").to_json() == {"role": "user", "content": "x"}


def test_a_whole_session_through_litellm_mock_response(executor: Executor) -> None:
    """The real litellm client in the loop, offline: litellm's own mock_response."""
    from utdebug.agents.litellm_client import LiteLLMModel

    reply = (
        "Here is a corrected version:\n```python\ndef add(a, b):\n    return a + b\n```\n\n"
        "## Unit Test\n### Input Arguments\nArguments: ```add(1, 2)```\n\n"
        "### Output\nOutput: ```3```\n"
    )
    model = LiteLLMModel("openai/gpt-4o-mini", api_key="sk-test", mock_response=reply)
    assert model.supports_prefill is False  # votes use the separate prediction prompt
    session = Session(TASK, model, executor, Settings(n=1, rounds=2))
    result = run(session)
    assert result.reason == "all_pass", result.error
    assert result.code.strip() == FIXED.strip()
    assert kinds(result.events, TestKept)[0].test.expected == 3
    assert session.usage.calls >= 4 and session.usage.completion_tokens > 0
    assert session.calls_by_purpose.keys() >= {"ut", "vote", "debug"}


def test_reference_variant_without_backtracking_accepts_a_worse_edit(executor: Executor) -> None:
    model = ScriptedModel(
        {
            "ut": [ut("add(1, 2)"), ut("add(2, 0)"), ut("add(0, 5)")] * 3,
            "vote": (votes(*["3"] * 8) + votes(*["2"] * 8) + votes(*["5"] * 8)) * 3,
            "debug": [fix(WORSE)] * 3,
        }
    )
    s = Settings(rounds=1, variant=Variant.REFERENCE, backtrack=False)
    result = run(Session(TASK, model, executor, s))
    assert result.code.strip() == WORSE.strip()
    acc = kinds(result.events, EditAccepted)
    assert acc[-1].reason == "backtracking off" and acc[-1].post < acc[-1].pre
    assert not kinds(result.events, Backtracked)


def test_code_that_does_not_load_stops_after_round_0_without_a_model_call(
    executor: Executor,
) -> None:
    """Nothing of code that does not load can run: the session says why after round 0 and
    asks the model nothing (issue 29: three rounds of paid calls, each backtracked)."""
    from dataclasses import replace

    from utdebug.engine.events import DoesNotLoad

    model = add_script([fix(FIXED)])
    task = replace(TASK, code="import no_such_module_here\n\n" + TASK.code)
    session = Session(task, model, executor, Settings(rounds=3))
    result = run(session)
    assert result.reason == "does_not_load"
    assert result.load_error == "ModuleNotFoundError: No module named 'no_such_module_here'"
    assert model.requests == []  # not one model call
    (said,) = kinds(result.events, DoesNotLoad)
    assert said.line == (
        "its module does not load in the sandbox: "
        "ModuleNotFoundError: No module named 'no_such_module_here'"
    )
    assert [r.round for r in kinds(result.events, RoundFinished)] == [0]
    assert session.continue_refusal() == said.line
    missing = replace(TASK, code="def plus(a, b):\n    return a + b\n")  # no add at all
    result = run(Session(missing, model, executor, Settings(rounds=1)))
    assert result.reason == "does_not_load"
    assert result.load_error == "NameError: the program defines no function 'add'"
