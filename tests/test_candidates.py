"""Ranked candidate edits in the UTDebug loop (``Settings.candidates``), with real sandbox runs."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from testkit.scripted_add import (
    fix,
    ut,
    votes,
)

from utdebug.agents.scripted import ScriptedModel
from utdebug.engine import Executor, Session, Settings, Task, UTMethod, Variant, event_to_json
from utdebug.engine.events import (
    Backtracked,
    CandidatesRanked,
    EditAccepted,
    EditProposed,
    TestsRun,
)

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
WORSE = "def add(a, b):\n    return 0\n"
PARTIAL = "def add(a, b):\n    return a + b if a else 0\n"
TASK = Task("toy/add", "Return the sum of a and b.", "add(a, b)", "add", BUGGY)


# add(1, 2) = 3, add(2, 0) = 2 (the buggy code passes it), add(0, 5) = 5
TESTS = [ut("add(1, 2)", "3"), ut("add(2, 0)", "2"), ut("add(0, 5)", "5")]
VOTES = votes(*["3"] * 8) + votes(*["2"] * 8) + votes(*["5"] * 8)


def kinds(events: list[Any], cls: type) -> list[Any]:
    return [e for e in events if isinstance(e, cls)]


def model(debug: list[str], rebuild: bool = True) -> ScriptedModel:
    return ScriptedModel(
        {"ut": TESTS * (2 if rebuild else 1), "vote": VOTES * (2 if rebuild else 1), "debug": debug}
    )


def test_one_candidate_is_the_paper_loop_unchanged() -> None:
    assert Settings(candidates=1).to_json() == Settings().to_json()
    assert "candidates" not in Settings().to_json()
    assert Settings(candidates=4).to_json()["candidates"] == 4


def test_candidates_are_ranked_and_the_winner_accepted(executor: Executor) -> None:
    m = model([fix(WORSE), fix(FIXED), fix(FIXED), "no code here"])
    s = Settings(rounds=2, candidates=4, ranker="b4")
    result = asyncio.run(Session(TASK, m, executor, s).run())
    ev = result.events
    debug = [r for r in m.requests if r.purpose == "debug"]
    assert len(debug) == 1 and debug[0].n == 4 and debug[0].sample_index == 4
    proposed = kinds(ev, EditProposed)
    assert [p.candidate for p in proposed] == [0, 1, 2, 3]
    assert proposed[3].code is None and proposed[3].reason == "no code in the reply"
    (ranked,) = kinds(ev, CandidatesRanked)
    # Row 0 the code in force, then the distinct candidates in sampling order.
    assert ranked.matrix == [[0, 1, 0], [0, 0, 0], [1, 1, 1]]
    assert ranked.pass_rates == pytest.approx([1 / 3, 0.0, 1.0])
    assert ranked.chosen == 2
    assert ranked.ranking["strategy"] == "b4"
    assert len(ranked.ranking["groups"]) == 3  # every consensus set is scored
    # Two candidate runs (the duplicate fix is run once).
    assert len([e for e in kinds(ev, TestsRun) if e.role == "candidate"]) == 2
    (acc,) = kinds(ev, EditAccepted)
    assert acc.post == pytest.approx(1.0) and acc.pre == pytest.approx(1 / 3)
    assert result.code.strip() == FIXED.strip()
    assert result.reason == "all_pass"
    json.dumps([event_to_json(e) for e in ev])


WORSE2 = "def add(a, b):\n    return 0 * a\n"


def test_a_winner_that_does_not_raise_the_pass_rate_is_backtracked(executor: Executor) -> None:
    # MBR-exec picks the biggest cluster: two different programs that both return 0.
    m = model([fix(WORSE), fix(PARTIAL), fix(WORSE2)], rebuild=False)
    s = Settings(rounds=1, candidates=3, ranker="mbr_exec")
    result = asyncio.run(Session(TASK, m, executor, s).run())
    (ranked,) = kinds(result.events, CandidatesRanked)
    assert ranked.matrix == [[0, 1, 0], [0, 0, 0], [1, 1, 0], [0, 0, 0]]
    assert ranked.chosen == 1  # WORSE, the first member of the winning set
    assert ranked.ranking["selected"] == [1, 3]
    (bt,) = kinds(result.events, Backtracked)
    assert bt.reason == "pass rate did not rise"
    assert bt.pre == pytest.approx(1 / 3) and bt.post == pytest.approx(0.0)
    assert result.code == BUGGY


def test_the_ranking_may_keep_the_code_in_force(executor: Executor) -> None:
    m = model([fix(WORSE), fix(WORSE2)], rebuild=False)
    s = Settings(rounds=1, candidates=2, ranker="maxpass")
    result = asyncio.run(Session(TASK, m, executor, s).run())
    (ranked,) = kinds(result.events, CandidatesRanked)
    assert ranked.ranking["selected"] == [0]
    assert ranked.chosen is None
    (bt,) = kinds(result.events, Backtracked)
    assert bt.reason == "the maxpass ranking selected the code in force"
    assert result.code == BUGGY


def test_a_candidate_in_the_same_consensus_set_is_no_rise(executor: Executor) -> None:
    same = "def add(a, b):\n    return a - b if b else a\n"
    same2 = "def add(a, b):\n    return (a - b) * 1\n"
    m = model([fix(same), fix(same2), fix(WORSE)], rebuild=False)
    s = Settings(rounds=1, candidates=3, ranker="mbr_exec", tie="first")
    result = asyncio.run(Session(TASK, m, executor, s).run())
    (ranked,) = kinds(result.events, CandidatesRanked)
    assert ranked.matrix[0] == ranked.matrix[1] == ranked.matrix[2] == [0, 1, 0]
    assert ranked.ranking["selected"] == [0, 1, 2]
    assert ranked.chosen == 1
    (bt,) = kinds(result.events, Backtracked)
    assert bt.reason == "pass rate did not rise"


def test_no_code_in_any_candidate(executor: Executor) -> None:
    m = model(["I cannot help.", fix(BUGGY)], rebuild=False)
    result = asyncio.run(Session(TASK, m, executor, Settings(rounds=1, candidates=2)).run())
    (bt,) = kinds(result.events, Backtracked)
    assert bt.reason == "no new code in any candidate"
    assert not kinds(result.events, CandidatesRanked)


def test_candidate_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Settings(candidates=0)
    with pytest.raises(ValueError, match="paper variant"):
        Settings(candidates=2, variant=Variant.REFERENCE)
    with pytest.raises(ValueError, match="generated tests"):
        Settings(candidates=2, ut_method=UTMethod.NONE)
    with pytest.raises(ValueError, match="unknown ranker"):
        Settings(candidates=2, ranker="best")
    with pytest.raises(ValueError, match="tie rule"):
        Settings(tie="last")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="beta0"):
        Settings(beta0=0.0)
    with pytest.raises(ValueError, match="alpha_xy"):
        Settings(alpha_xy=float("nan"))
