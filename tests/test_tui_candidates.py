"""``utdebug debug`` with a model: synthesised inputs join UTGen's candidates (their outputs
voted on by the model), the tests table says where each input came from, and the transcript
says how many joined. Driven by a Pilot with real sandbox runs and a scripted model."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from testkit.scripted_add import ut
from testkit.wait import until

from utdebug.agents.base import ModelRequest
from utdebug.agents.scripted import ScriptedModel
from utdebug.cli import main
from utdebug.engine import Executor, Settings
from utdebug.tui.app import DebugApp
from utdebug.tui.config import AppConfig
from utdebug.tui.synth import plan_for
from utdebug.tui.widgets import TestsPanel
from utdebug.workspace import LoadedFunction, load_function

ADD = '''def add(a, b):
    """The sum of a and b.

    >>> add(1, 2)
    3
    """
    return a - b
'''


@pytest.fixture
def add_fn(tmp_path: Path) -> LoadedFunction:
    (tmp_path / "calc.py").write_text(ADD, encoding="utf-8")
    return load_function(tmp_path / "calc.py", "add")


def summing_model() -> ScriptedModel:
    """The generator proposes add(10, 20); every vote says the sum of the call's arguments."""

    def answer(req: ModelRequest, _i: int) -> str:
        if req.purpose == "ut":
            return ut("add(10, 20)", "30")
        if req.purpose == "vote":
            ctx = req.context if isinstance(req.context, dict) else {}
            return f"Adding.\nOutput: ```{sum(ctx.get('args', ()))}```"
        raise AssertionError(req.purpose)

    return ScriptedModel(answer)


async def test_synthesised_inputs_join_utgen_and_the_table_says_so(
    executor: Executor, add_fn: LoadedFunction
) -> None:
    task = add_fn.to_task()
    plan = dataclasses.replace(plan_for("add", path=Path(add_fn.path)), count=6)
    model = summing_model()
    app = DebugApp(
        task,
        model,
        executor,
        Settings(rounds=0, n=4, k=2),
        AppConfig(loaded=add_fn, candidates=plan),
    )
    app.animation_level = "none"
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.state.phase in ("finished", "error"), "the end")
        assert app.session is not None
        tests = app.session.tests
        sources = [t.input_source for t in tests]
        assert "model" in sources
        synth = [t for t in tests if t.input_source.startswith("synth:")]
        assert synth, sources
        for t in synth:  # voted on by the model: its sum, which the buggy code does not give
            assert t.origin == "model" and t.expected == sum(t.args) and t.draws == 2
        table = app.query_one(TestsPanel).table
        origins = [str(table.get_row_at(i)[-1]) for i in range(table.row_count)]
        assert origins.count("synth") == len(synth)
        said = [e.text for e in app.state.transcript]
        assert any("synthesised inputs join UTGen's candidates" in t for t in said), said
    # the synthesised inputs cost no generator call: fewer "ut" requests than tests
    purposes = [r.purpose for r in model.requests]
    assert purposes.count("ut") < len(tests)


@pytest.fixture
def no_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "empty.toml").write_text("", encoding="utf-8")
    monkeypatch.setenv("UTDEBUG_CONFIG", str(tmp_path / "empty.toml"))
    monkeypatch.delenv("UTDEBUG_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.mark.usefixtures("no_config")
def test_debug_with_a_model_plans_synthesised_candidates(
    add_fn: LoadedFunction, monkeypatch: pytest.MonkeyPatch
) -> None:
    from utdebug import debug_cmd

    configs: list[AppConfig] = []
    monkeypatch.setattr(debug_cmd, "no_terminal", lambda: None)
    monkeypatch.setattr(DebugApp, "run", lambda self: configs.append(self.config))
    script = str(debug_cmd.DEMO_DIR / debug_cmd.DEMO_SCRIPT)
    target = f"{add_fn.path}::add"
    assert main(["debug", target, "--model", f"scripted:{script}"]) == 0
    assert main(["debug", target, "--model", f"scripted:{script}", "--synth-inputs", "5"]) == 0
    assert main(["debug", target, "--model", f"scripted:{script}", "--synth-inputs", "0"]) == 0
    assert main(["debug", target, "--model", "none"]) == 0
    plans = [c.candidates for c in configs]
    assert plans[0] is None  # a scripted model replays its replies as recorded: none unless asked
    assert plans[1] is not None and plans[1].count == 5 and plans[1].entry_point == "add"
    assert plans[2] is None and plans[3] is None  # --synth-inputs 0; no model
    assert configs[3].synth is not None


def test_a_live_model_gets_32_synthesised_inputs_unless_told(
    add_fn: LoadedFunction, tmp_path: Path
) -> None:
    from utdebug import debug_cmd
    from utdebug.agents.choice import NONE, ModelChoice, resolve_choice

    env = {"XDG_CONFIG_HOME": str(tmp_path / "no-config")}

    def prep(choice: ModelChoice, ready: Any = None) -> Any:
        return debug_cmd.Prepared(add_fn.to_task(), choice, add_fn, Settings(), ready=ready)

    live = prep(resolve_choice("openai/gpt-4o-mini", env=env))  # made behind the first screen
    plan = debug_cmd._candidates_plan(live, None)
    assert plan is not None and plan.count == debug_cmd.DEFAULT_SYNTH_INPUTS == 32
    assert debug_cmd._candidates_plan(live, 0) is None
    scripted = resolve_choice(f"scripted:{tmp_path / 'replies.json'}", env=env)
    assert debug_cmd._candidates_plan(prep(scripted), None) is None
    assert debug_cmd._candidates_plan(prep(resolve_choice("sim", env=env)), 8) is None
    assert debug_cmd._candidates_plan(prep(NONE), 8) is None
