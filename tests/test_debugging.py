"""The model-driven benchmark harness, driven in-process (scripted and simulated models)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from utdebug.agents.base import ModelRequest
from utdebug.agents.scripted import ScriptedModel
from utdebug.agents.sim import SimParams
from utdebug.benchmarks.context import RunContext
from utdebug.benchmarks.debugging import (
    _score_run,
    debug_split,
    score_tests,
)
from utdebug.data.datasets import LoadedSplit, Split
from utdebug.data.private_tests import EvalSettings, ExpectedCache, PrivateTestRunner, VerdictCache
from utdebug.data.splits import load_split
from utdebug.engine import Executor, Settings, UnitTest, code_id
from utdebug.runs.records import SAMPLES, read_samples
from utdebug.sandbox import Limits, Sandbox

FAST = ["hard/6", "hard/7", "hard/9", "hard/11", "hard/12", "hard/16"]


@pytest.fixture(scope="module")
def hard(data_dir: Path) -> LoadedSplit:
    return load_split(Split.HARD, data_dir=data_dir)


def _problems(hard: LoadedSplit, ids: list[str]) -> list[Any]:
    by_id = {p.task_id: p for p in hard.problems}
    return [by_id[i] for i in ids]


def _run(
    hard: LoadedSplit,
    sb: Sandbox,
    out: Path,
    model: Any,
    ids: list[str],
    settings: Settings,
    sim_params: SimParams | None = None,
    *,
    executor: Executor | None = None,
    private: PrivateTestRunner | None = None,
) -> Any:
    ex = executor or Executor(sb)
    try:
        return asyncio.run(
            debug_split(
                RunContext(model=model, settings=settings, out_dir=out, sim_params=sim_params),
                LoadedSplit(Split.HARD, _problems(hard, ids), [], hard.sources),
                executor=ex,
                private=private or PrivateTestRunner(ex, EvalSettings(), ExpectedCache(None)),
            )
        )
    finally:
        if executor is None:
            ex.close()


def test_a_problem_that_errors_is_recorded_and_the_run_goes_on(
    hard: LoadedSplit, sb: Sandbox, tmp_path: Path
) -> None:
    def reply(req: ModelRequest, i: int) -> str:
        if req.context["task_id"] == "hard/7":
            raise RuntimeError("a bug in a plug-in model")
        return "I cannot think of a test."  # unparsable: no tests, the session stops

    run = _run(hard, sb, tmp_path, ScriptedModel(reply), FAST[:3], Settings(rounds=1))
    recs = {r["task_id"]: r for r in read_samples(tmp_path / SAMPLES)}
    assert set(recs) == set(FAST[:3])
    assert recs["hard/7"]["error_kind"] == "problem"
    assert "a bug in a plug-in model" in recs["hard/7"]["error"]
    assert recs["hard/6"]["error_kind"] is None and recs["hard/6"]["finish"] == "no_tests"
    assert run.summary["problem_errors"] == 1 and run.summary["evaluated"] == 2


def test_private_results_are_cached_across_runs(
    hard: LoadedSplit, sb: Sandbox, tmp_path: Path
) -> None:
    cache = VerdictCache(tmp_path / "verdicts")
    settings = Settings(rounds=2)

    def run_once(out: str) -> tuple[dict[str, Any], int, int]:
        ex = Executor(sb)
        private = PrivateTestRunner(ex, EvalSettings(), ExpectedCache(None), cache)
        r = _run(
            hard,
            sb,
            tmp_path / out,
            None,
            FAST,
            settings,
            sim_params=SimParams(),
            executor=ex,
            private=private,
        )
        ex.close()
        return r.summary, private.evaluations, private.cached

    first, ran1, hits1 = run_once("a")
    second, ran2, hits2 = run_once("b")
    assert ran1 > 0 and hits1 == 0
    assert ran2 == 0 and hits2 == ran1  # nothing ran twice
    assert second["rounds"] == first["rounds"]
    assert second["intrinsic"] == first["intrinsic"]  # the simulation does not see the cache
    assert second["label"] == "SIMULATED"


def test_scores_from_private_results_match_running_the_tests(
    hard: LoadedSplit, sb: Sandbox
) -> None:
    (p,) = _problems(hard, ["hard/11"])
    ex = Executor(sb)

    async def main() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        private = PrivateTestRunner(ex, EvalSettings(), ExpectedCache(None))
        await private.add(p)
        await private.evaluate(p.task_id, p.code)
        exp = private.expected(p.task_id)
        tests = [
            UnitTest(
                i, p.tests.inputs[i], "call", exp[i] if i % 2 else "wrong", target=code_id(p.code)
            )
            for i in range(len(p.tests.inputs))
        ]
        codes = {code_id(p.code): p.code}
        quick = await score_tests(ex, p, tests, codes, Limits(), private)
        slow = await _score_run(ex, p, tests, codes, Limits())
        return quick, slow

    quick, slow = asyncio.run(main())
    ex.close()
    assert quick == slow
    assert any(s["attack"] for s in quick) and not all(s["attack"] for s in quick)
    assert [s["correct"] for s in quick] == [bool(i % 2) for i in range(len(quick))]


def test_the_simulated_models_stand_ins_are_said_not_shown() -> None:
    """What the app shows of a simulated edit: the code without the wrappers and renamed
    copies, each wrap said as one line, whether the edit was merged into the module (the
    paper variant) or is a whole program, however many wraps are stacked."""
    from utdebug.agents.edits import merge_edit
    from utdebug.agents.sim import SIM_HELPER, flawed, regressed, shown_code, special_case

    code = (
        'import math\n\n\ndef add(a, b):\n    """Sum."""\n    return a - b\n\n\n'
        "def f():\n    return 1\n"
    )
    once = special_case(code, "add", (0, 5), 5)
    stacked = special_case(regressed(once, "add"), "add", (1, 2), 3)
    merged = merge_edit(code, stacked, "add")
    assert SIM_HELPER.search(merged.code)  # type: ignore[union-attr]
    for wrapped in (once, stacked, merged.code, flawed(code, "add", 3)):  # type: ignore[union-attr]
        shown, said = shown_code(wrapped, "add")
        assert shown == code and not SIM_HELPER.search(shown)
        assert said and all(line.startswith("SIMULATED ") for line in said)
    assert shown_code(stacked, "add")[1] == [
        "SIMULATED edit: add(0, 5) returns 5, a special case the simulated model adds (as an "
        "overfit edit would); not code to keep",
        "SIMULATED edit: about half of all inputs of add get a wrong value (a regression the "
        "simulated model makes); not code to keep",
        "SIMULATED edit: add(1, 2) returns 3, a special case the simulated model adds (as an "
        "overfit edit would); not code to keep",
    ]
    assert shown_code(code, "add") == (code, [])


def test_a_bench_record_of_code_that_does_not_load_says_why(executor: Executor) -> None:
    """The session stops after round 0, before any model call; the record says why in the
    line check prints."""
    from utdebug.benchmarks.debugging import SessionSetup, debug_session
    from utdebug.engine import Task

    code = "import not_a_real_package_xyz\n\n\ndef add(a, b):\n    return a - b\n"
    task = Task("toy/add", "Return the sum of a and b.", "add(a, b)", "add", code)
    model = ScriptedModel([])  # any call would fail: none is made
    judged: list[str] = []

    async def judge_round(c: str) -> dict[str, Any]:
        judged.append(c)
        return {"all_pass": False, "pass_fraction": 0.0}

    async def score(tests: list[UnitTest], targets: dict[str, str]) -> list[dict[str, Any]]:
        return []

    rec = asyncio.run(
        debug_session(
            SessionSetup(model, Settings(rounds=2), executor),
            task,
            code,
            judge_round=judge_round,
            score=score,
        )
    )
    assert rec["finish"] == "does_not_load"
    assert rec["load_error"] == (
        "its module does not load in the sandbox: "
        "ModuleNotFoundError: No module named 'not_a_real_package_xyz'"
    )
    assert rec["usage"]["calls"] == 0 and model.requests == []
    assert judged == [code] * 3  # every round's code is the given code, as recorded before
