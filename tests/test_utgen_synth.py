"""Synthesised inputs in UTGen's test sets (``Session(candidate_inputs=...)``), disagreement
inputs first with ``--candidates``, the synthesis helper for front ends, and ``bench
--synth-inputs`` with the SIMULATED model."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from testkit.scripted_add import fix, ut

from utdebug.agents.base import ModelRequest
from utdebug.agents.scripted import ScriptedModel
from utdebug.engine import Executor, Session, Settings, Task, event_to_json
from utdebug.engine.events import (
    DisagreementsFound,
    TestDropped,
    TestKept,
    TestProposed,
)
from utdebug.runs.records import SAMPLES, SUMMARY, read_samples
from utdebug.synth import candidate_inputs

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
ALT = "def add(a, b):\n    return a + b if a != 7 else -1\n"
TASK = Task("toy/add", "Return the sum of a and b.", "add(a, b)", "add", BUGGY)


def responder(split: tuple[int, int] | None = None) -> ScriptedModel:
    """The generator always proposes add(1, 2); votes say the sum of the call's arguments
    (read from the request's context), except on ``split``, where each vote differs; the
    debugger answers FIXED on even samples, ALT on odd ones."""

    def answer(req: ModelRequest, i: int) -> str:
        ctx = req.context if isinstance(req.context, dict) else {}
        if req.purpose == "ut":
            return ut("add(1, 2)", "3")
        if req.purpose == "vote":
            args = tuple(ctx.get("args", ()))
            value = sum(args) + (i % 4 if args == split else 0)
            return f"Adding.\nOutput: ```{value}```"
        if req.purpose == "debug":
            return fix(FIXED if i % 2 == 0 else ALT)
        raise AssertionError(req.purpose)

    return ScriptedModel(answer)


def kinds(events: list[Any], cls: type) -> list[Any]:
    return [e for e in events if isinstance(e, cls)]


def test_synthesised_inputs_become_voted_tests(executor: Executor) -> None:
    m = responder()
    inputs = [((4, 5), "synth:mutation"), ((7, 1), "synth:hypothesis")]
    s = Settings(n=3, k=4, rounds=0)
    result = asyncio.run(Session(TASK, m, executor, s, candidate_inputs=inputs).run())
    tests = result.tests
    # Every other attempt, the first one first: synth, model, synth.
    assert [t.args for t in tests] == [(4, 5), (1, 2), (7, 1)]
    assert [t.input_source for t in tests] == ["synth:mutation", "model", "synth:hypothesis"]
    assert [t.expected for t in tests] == [9, 3, 8]
    assert all(t.draws == 4 and t.share == 1.0 for t in tests)
    # A synthesised input costs no generator call: one proposal, three votes.
    purposes = [r.purpose for r in m.requests]
    assert purposes.count("ut") == 1 and purposes.count("vote") == 3
    vote_prompts = [r.messages[-1].content for r in m.requests if r.purpose == "vote"]
    assert "add(4, 5)" in vote_prompts[0]
    proposed = kinds(result.events, TestProposed)
    assert [p.input_source for p in proposed] == ["synth:mutation", "model", "synth:hypothesis"]
    assert proposed[0].reply == "synthesised input (mutation)" and proposed[0].synthesised
    records = [event_to_json(e) for e in result.events]
    props = [r for r in records if r["kind"] == "test_proposed"]
    assert props[0]["input_source"] == "synth:mutation" and "input_source" not in props[1]
    kept = [r["test"] for r in records if r["kind"] == "test_kept"]
    assert kept[0]["input_source"] == "synth:mutation" and "input_source" not in kept[1]
    assert kept[0]["args"] == "(4, 5)"


def test_a_split_vote_drops_the_synthesised_input(executor: Executor) -> None:
    m = responder(split=(7, 1))
    inputs = [((7, 1), "synth:mutation"), ((2, 2), "synth:seed")]
    s = Settings(n=2, k=4, rounds=0)
    result = asyncio.run(Session(TASK, m, executor, s, candidate_inputs=inputs).run())
    assert (7, 1) not in [t.args for t in result.tests]
    dropped = kinds(result.events, TestDropped)
    assert dropped[0].call == "add(7, 1)" and dropped[0].reason == "top answer has 1 of 4 votes"
    assert [(t.args, t.input_source) for t in result.tests] == [
        ((1, 2), "model"),
        ((2, 2), "synth:seed"),
    ]


def test_duplicates_votes_off_and_share_zero(executor: Executor) -> None:
    # the same input as the model's proposal: dropped before any vote
    m = responder()
    s = Settings(n=2, k=4, rounds=0, synth_share=1.0)
    inputs = [((3, 3), "synth:seed"), ((3, 3), "synth:mutation")]
    r = asyncio.run(Session(TASK, m, executor, s, candidate_inputs=inputs).run())
    assert [t.args for t in r.tests] == [(3, 3), (1, 2)]
    assert kinds(r.events, TestDropped)[0].reason == "duplicate input"
    assert [x.purpose for x in m.requests].count("vote") == 2
    # share 0: never taken; no voting: no output for them, never taken
    for settings in (Settings(n=2, k=4, rounds=0, synth_share=0.0), Settings(n=2, k=0, rounds=0)):
        r = asyncio.run(
            Session(TASK, responder(), executor, settings, candidate_inputs=inputs).run()
        )
        assert all(t.input_source == "model" for t in r.tests)
        assert not any(p.synthesised for p in kinds(r.events, TestProposed))
    with pytest.raises(ValueError, match="synth:<name>"):
        Session(TASK, responder(), executor, s, candidate_inputs=[((1, 1), "mutation")])
    with pytest.raises(ValueError, match="synth_share"):
        Settings(synth_share=1.5)


def test_no_candidate_inputs_records_as_before(executor: Executor) -> None:
    def run(**kw: Any) -> list[dict[str, Any]]:
        session = Session(TASK, responder(), executor, Settings(n=2, k=4, rounds=1), **kw)
        result = asyncio.run(session.run())
        return [event_to_json(e) for e in result.events if e.kind != "model_called"]

    plain, empty = run(), run(candidate_inputs=())
    assert plain == empty
    text = json.dumps(plain)
    assert "input_source" not in text and "synth" not in text
    settings = plain[0]["settings"]
    assert set(settings) == {
        "n", "k", "threshold", "rounds", "variant", "ut_method", "backtrack", "tries",
        "patience", "feedback", "per_input", "limit_kind", "rules",
    }  # fmt: skip
    assert Settings(synth_share=0.25).to_json()["synth_share"] == 0.25


def test_disagreement_inputs_run_first_with_candidates(executor: Executor) -> None:
    # (7, 0): FIXED gives 7, ALT gives -1, the code in force 7; the others agree everywhere.
    queue = [((2, 2), "synth:seed"), ((3, 0), "synth:mutation"), ((0, 0), "synth:mutation")]
    queue.append(((7, 0), "synth:hypothesis"))
    s = Settings(n=2, k=4, rounds=2, candidates=2)
    session = Session(TASK, responder(), executor, s, candidate_inputs=queue)
    result = asyncio.run(session.run())
    (found, *_) = kinds(result.events, DisagreementsFound)
    assert (found.round, found.programs, found.checked, found.found) == (1, 3, 3, 1)
    assert found.inputs == ["add(7, 0)"]
    round2 = [p for p in kinds(result.events, TestProposed) if p.round == 2 and p.synthesised]
    assert round2[0].call == "add(7, 0)"  # without the check: add(3, 0), the queue's order
    rec = event_to_json(found)
    assert rec["kind"] == "disagreements_found" and rec["found"] == 1
    kept2 = [e.test for e in kinds(result.events, TestKept) if e.round == 2]
    assert kept2[0].args == (7, 0) and kept2[0].expected == 7


def test_candidate_inputs_keep_raising_and_drop_hanging(executor: Executor) -> None:
    code = (
        "def f(xs, k):\n    if k == 3:\n        while True:\n            pass\n    return xs[k]\n"
    )
    made = candidate_inputs(
        executor.sandbox, code, "f", [([1, 2, 3, 4], 1), ([5, 6], 0)], count=40, seed=1
    )
    args = [a for a, _ in made.inputs]
    seeds = [(([1, 2, 3, 4], 1), "synth:seed"), (([5, 6], 0), "synth:seed")]
    assert made.inputs[-2:] == seeds  # the examples last: the least likely to expose a bug
    assert "synth:seed" not in [s for _, s in made.inputs[:-2]]
    assert all(src.startswith("synth:") for _, src in made.inputs)
    assert all(a[1] != 3 for a in args)  # the code loops there: dropped
    assert made.dropped.get("timed out", 0) >= 1
    assert any(a[1] >= len(a[0]) for a in args)  # raises IndexError: kept
    again = candidate_inputs(
        executor.sandbox, code, "f", [([1, 2, 3, 4], 1), ([5, 6], 0)], count=40, seed=1
    )
    assert again.inputs == made.inputs
    first = candidate_inputs(
        executor.sandbox, code, "f", [([1, 2, 3, 4], 1), ([5, 6], 0)], count=40, seed=1,
        seeds_last=False,
    )  # fmt: skip
    assert first.inputs[:2] == seeds and sorted(map(repr, first.inputs)) == sorted(
        map(repr, made.inputs)
    )
    assert candidate_inputs(executor.sandbox, code, "f", [], count=0).inputs == []


def test_bench_synth_inputs_records_the_sources(data_dir: Path, tmp_path: Path) -> None:
    args = [
        "bench", "--split", "hard", "--model", "sim", "--problems", "6,7",
        "--data-dir", str(data_dir), "--out", str(tmp_path), "--synth-inputs", "8",
        "--rounds", "1", "--json",
    ]  # fmt: skip
    r = subprocess.run(
        [sys.executable, "-m", "utdebug", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ),
    )
    assert r.returncode == 0, r.stderr
    summary = json.loads((tmp_path / SUMMARY).read_text())
    assert summary["label"] == "SIMULATED" and summary["problems"] == 2
    recs = read_samples(tmp_path / SAMPLES)
    assert len(recs) == 2
    sources: set[str] = set()
    for rec in recs:
        assert rec["label"] == "SIMULATED"
        about = rec["synth_inputs"]
        assert 0 < about["count"] <= 8 and sum(about["by_source"].values()) == about["count"]
        props = [e for e in rec["events"] if e["kind"] == "test_proposed"]
        sources |= {p["input_source"] for p in props if "input_source" in p}
        sources |= {t["input_source"] for t in rec["tests"] if "input_source" in t}
    assert sources and all(s.startswith("synth:") for s in sources)
    assert any(s != "model" for s in summary["input_sources"])
    bad = subprocess.run(
        [sys.executable, "-m", "utdebug", "bench", "intrinsic", "--model", "sim",
         "--synth-inputs", "4", "--data-dir", str(data_dir)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 2 and "--synth-inputs applies to bench eval" in bad.stderr


def test_the_queue_left_goes_into_the_snapshot(executor: Executor) -> None:
    inputs = [
        ((4, 5), "synth:mutation"),
        (([1, 2], "x"), "synth:hypothesis"),
        ((0, 0), "synth:seed"),
    ]
    s = Settings(n=1, k=4, rounds=0)
    session = Session(TASK, responder(), executor, s, candidate_inputs=inputs)
    asyncio.run(session.run())
    assert session.synth_queue == inputs[1:]
    state = json.loads(json.dumps(session.snapshot()))
    assert state["synth_queue"] == [["([1, 2], 'x')", "synth:hypothesis"], ["(0, 0)", "synth:seed"]]
    again = Session(TASK, responder(), executor, s)
    again.restore(state)
    assert again.synth_queue == inputs[1:]
    plain = Session(TASK, responder(), executor, s)
    asyncio.run(plain.run())
    assert "synth_queue" not in plain.snapshot()


def test_the_simulated_model_knows_the_registered_gold_outputs() -> None:
    from utdebug.agents.base import Message
    from utdebug.agents.sim import SimModel, SimParams, SimProblem
    from utdebug.engine import UnitTest

    async def oracle(task_id: str, code: str) -> list[tuple[bool, Any]]:
        return [(code == FIXED, 3)]

    params = SimParams(out_acc=1.0, fix=1.0, regress=0.0, seed=1)
    sim = SimModel(params, oracle, lambda _t, value, gold, _a: value == gold)
    sim.register(SimProblem("toy/add", "add", FIXED, BUGGY, ((1, 2),), (3,)))
    sim.register_outputs("toy/add", [((4, 5), 9)], [(0, 0)])

    def ask(purpose: Any, **ctx: Any) -> str:
        context = {"task_id": "toy/add", "code": BUGGY, **ctx}
        req = ModelRequest((Message("user", "?"),), purpose=purpose, context=context)
        return asyncio.run(sim.complete(req))[0].text

    assert "Output: ```9```" in ask("vote", args=(4, 5))  # votes from the gold output
    assert "Output" not in ask("vote", args=(0, 0))  # the gold code raised: no answer
    assert "Output: ```None```" in ask("vote", args=(8, 8))  # unknown: as before
    right = UnitTest(1, (4, 5), "add(4, 5)", 9)
    assert "return a + b" in ask("debug", feedback=right)  # right feedback: the fix
    wrong = UnitTest(1, (4, 5), "add(4, 5)", 10)
    assert "return a + b" not in ask("debug", feedback=wrong)
