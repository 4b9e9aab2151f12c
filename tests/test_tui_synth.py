"""``utdebug debug`` without a model: the app synthesises inputs, shows what the code in force
does on each, and a person marks the wrong outcomes (a person is the oracle); nothing calls a
model. Driven by a Pilot with real sandbox runs."""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console
from testkit.app import MEAN, SIZE, free_app, inputs, select_input, table_rows
from testkit.wait import until
from textual.widgets import Input, Static

from utdebug.agents.base import Message, ModelError, ModelRequest
from utdebug.cli import main
from utdebug.engine import Executor
from utdebug.engine.model import UnitTest
from utdebug.tui.app import DebugApp
from utdebug.tui.config import NO_MODEL_LINE, NoModel
from utdebug.tui.details import TestDetail, detail_renderable
from utdebug.tui.format import origin_text
from utdebug.tui.screens import EditExpectedScreen, HelpScreen, help_table
from utdebug.tui.synth import collect_seeds, plan_for
from utdebug.tui.widgets import InputsPanel, StatusBar
from utdebug.workspace import LoadedFunction, load_function


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'stats'\n", encoding="utf-8")
    (tmp_path / "stats.py").write_text(MEAN, encoding="utf-8")
    return tmp_path


@pytest.fixture
def mean_fn(project: Path) -> LoadedFunction:
    return load_function(project / "stats.py", "mean")


def rendered(thing: Any) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(thing)
    return " ".join(console.export_text().split())


async def test_without_a_model_the_app_lists_synthesised_inputs_and_their_outcomes(
    executor: Executor, mean_fn: LoadedFunction
) -> None:
    app = free_app(mean_fn, executor)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.synth is not None, "inputs synthesised")
        synth = app.state.synth
        assert synth is not None and synth.seeds == 1 and synth.seed_origins == ["docstring"]
        assert 10 <= len(synth.rows) <= 40
        shown = inputs(app)
        assert len(shown) == len(synth.rows)
        # the doctest's input and what the buggy code gives on it
        seed = next(r for r in synth.rows if r.source == "seed")
        assert (seed.call, seed.outcome) == ("mean([1, 2, 3])", "1.5")
        assert [seed.call, "1.5", "seed", ""] == [shown[seed.number - 1][i] for i in (1, 2, 3, 4)]
        assert sum(r.source in ("mutation", "hypothesis") for r in synth.rows) > 5
        sizes = [len(r.call) for r in synth.rows]
        assert sizes[0] == min(sizes)  # smallest first
        hint = str(app.query_one("#inputs-hint", Static).content)
        assert (
            hint == f"{len(synth.rows)} inputs synthesised from 1 seed (docstring), smallest first"
        )
        status = app.query_one(StatusBar).plain
        assert "no model" in status and "m: an outcome is wrong" in status
        assert not app.state.started and app.state.tests == []
        assert app.query_one("#bottom-tabs").active == "tab-inputs"  # type: ignore[attr-defined]


async def test_a_person_marks_an_outcome_wrong_and_it_becomes_a_failing_synth_test(
    executor: Executor, mean_fn: LoadedFunction, project: Path
) -> None:
    session_file = project / "runs" / "s.session.json"
    app = free_app(mean_fn, executor, session_file=session_file)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.synth is not None, "inputs synthesised")
        row = select_input(app, "mean([1, 2, 3])")
        await pilot.press("m")
        await until(pilot, lambda: isinstance(app.screen, EditExpectedScreen), "the dialog")
        box = app.screen.query_one("#expected-input", Input)
        assert box.value == "1.5"  # the code's value, to correct
        box.value = "2.0"
        await pilot.press("enter")
        await until(pilot, lambda: app.state.total == 1 and not app.person_busy, "test run")
        (test,) = app.state.tests
        assert test.input_source == "synth:seed" and test.origin == "person"
        assert (test.args, test.expected) == (([1, 2, 3],), 2.0)
        assert app.state.statuses[test.id] == "fail"  # the buggy code gives 1.5
        assert app.state.passed == 0
        (shown,) = table_rows(app)
        assert shown[0] == str(test.id) and shown[3] == "fail" and shown[5] == "synth"
        assert "0/1" in str(app.query_one("#tests-summary", Static).content)
        assert app.state.synth_tests == {row.number: test.id}
        assert inputs(app)[row.number - 1][4] == f"#{test.id}"
        # the detail view says who gave the input and who gave the expected value
        text = rendered(detail_renderable(TestDetail(test, None, None, [])))
        assert "synthesised (seed, no model)" in text and "expected value is a person's" in text
        # marking it again says it is a test already
        await pilot.press("m")
        assert any("is test #" in n for n in app.notices)
        # exported like any person's test; the session file keeps where its input came from
        app.action_export_tests()
        exported = project / "test_mean_utdebug.py"
        assert "mean([1, 2, 3])" in exported.read_text(encoding="utf-8")
        saved = json.loads(session_file.read_text(encoding="utf-8"))
        assert "synth:seed" in json.dumps(saved)


async def test_keeping_a_right_outcome_makes_a_passing_test(
    executor: Executor, mean_fn: LoadedFunction
) -> None:
    app = free_app(mean_fn, executor)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.synth is not None, "inputs synthesised")
        synth = app.state.synth
        assert synth is not None
        ok = next(r for r in synth.rows if r.status == "ok" and r.source != "seed")
        select_input(app, ok.call)
        await pilot.press("g")
        await until(pilot, lambda: app.state.total == 1 and not app.person_busy, "test run")
        (test,) = app.state.tests
        assert test.input_source == f"synth:{ok.source}" and test.expected == ok.value
        assert app.state.statuses[test.id] == "pass"
        await pilot.press("u")  # undone like any added test
        await until(pilot, lambda: not app.state.tests and not app.person_busy, "undone")
        assert inputs(app)[ok.number - 1][4] == ""


async def test_model_actions_say_there_is_no_model_and_nothing_calls_one(
    executor: Executor, mean_fn: LoadedFunction
) -> None:
    app = free_app(mean_fn, executor)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.synth is not None, "inputs synthesised")
        for key in ("r", "s", "p", "x", "v", "y"):
            app.notices.clear()
            await pilot.press(key)
            assert app.notices == [NO_MODEL_LINE], key
        assert not app.state.started and app.session is not None
        assert app.session.usage.requests == 0
        assert "no model is configured" in NO_MODEL_LINE and "--model" in NO_MODEL_LINE
        # the footer offers the session's own actions, not the model's loop
        shown = {b.binding.action for b in app.screen.active_bindings.values() if b.binding.show}
        assert {"mark_wrong", "keep_test", "add_test"} <= shown
        assert not shown & {"run", "step", "pause"}
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "help")
        assert isinstance(app.screen, HelpScreen) and app.screen.model_free
        help_text = rendered(help_table(model_free=True))
        assert "Mark wrong" in help_text and "Run / resume" not in help_text
        assert "Mark wrong" not in rendered(help_table())
    with pytest.raises(ModelError, match="no model is configured"):
        await NoModel().complete(ModelRequest((Message("user", "hi"),)))


async def test_a_function_with_no_seeds_and_no_hints_says_nothing_could_be_synthesised(
    executor: Executor, tmp_path: Path
) -> None:
    path = tmp_path / "pick.py"
    path.write_text("def pick(a, b):\n    return a\n", encoding="utf-8")
    app = free_app(load_function(path, "pick"), executor)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.synth is not None, "synthesis done")
        assert app.state.synth is not None and app.state.synth.rows == []
        hint = str(app.query_one("#inputs-hint", Static).content)
        assert hint.startswith("nothing could be synthesised: no seed input")
        assert "a, b cannot be typed" in hint and "a adds a test by hand" in hint
        assert "nothing synthesised: a adds a test" in app.query_one(StatusBar).plain
        app.notices.clear()
        await pilot.press("m")
        assert app.notices == ["no synthesised input to judge: a adds a test by hand"]


def test_seeds_come_from_the_docstring_the_projects_tests_and_a_problem(
    project: Path,
) -> None:
    tests = project / "tests"
    tests.mkdir()
    (tests / "test_stats.py").write_text(
        "from stats import mean\n\ndef test_two():\n    assert mean([4, 6]) == 5\n",
        encoding="utf-8",
    )
    plan = plan_for("mean", path=project / "stats.py", project=project)
    seeds, origins = collect_seeds(plan)
    assert origins == ["docstring", "tests/test_stats.py"]
    assert seeds.inputs == [([1, 2, 3],), ([4, 6],)]
    problem = SimpleNamespace(test_list=["assert add(1, 2) == 3"], entry_point="add")
    seeds, origins = collect_seeds(plan_for("add", problem=problem))
    assert (seeds.inputs, origins) == ([(1, 2)], ["the problem's base inputs"])
    method = plan_for("total", class_name="Cart", program=True)
    assert method.refusal is not None and "setup" in method.refusal


def test_the_origin_column_says_where_the_input_came_from() -> None:
    model = UnitTest(1, (1,), "f(1)", 1)
    person = UnitTest(2, (1,), "f(1)", 1, origin="person", input_source="person")
    edited = UnitTest(3, (1,), "f(1)", 1, origin="person")
    synth = UnitTest(4, (1,), "f(1)", 1, origin="person", input_source="synth:mutation")
    assert [origin_text(t) for t in (model, person, edited, synth)] == [
        "model",
        "person",
        "person",
        "synth",
    ]


# --- the command ----------------------------------------------------------------------------


@pytest.fixture
def no_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "empty.toml").write_text("", encoding="utf-8")
    monkeypatch.setenv("UTDEBUG_CONFIG", str(tmp_path / "empty.toml"))
    monkeypatch.delenv("UTDEBUG_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)


def opened_apps(monkeypatch: pytest.MonkeyPatch) -> list[DebugApp]:
    """Open no terminal app: record each app ``debug`` would run, after its start-up work
    (the sandbox; a model's probe) has run."""
    from utdebug import debug_cmd

    apps: list[DebugApp] = []

    def run(self: DebugApp) -> None:
        assert self.config.starting is not None
        started = self.config.starting()
        self.model = started.model
        apps.append(self)

    monkeypatch.setattr(debug_cmd, "no_terminal", lambda: None)
    monkeypatch.setattr(DebugApp, "run", run)
    return apps


@pytest.mark.usefixtures("no_config")
def test_debug_without_a_model_or_with_model_none_opens_the_app_without_one(
    mean_fn: LoadedFunction, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    apps = opened_apps(monkeypatch)
    target = f"{mean_fn.path}::mean"
    assert main(["debug", target]) == 0  # exited 2 with "no model chosen" before
    assert main(["debug", target, "--model", "none"]) == 0
    monkeypatch.setenv("UTDEBUG_MODEL", "none")
    assert main(["debug", target]) == 0
    assert len(apps) == 3
    for app in apps:
        assert app.model_free and isinstance(app.model, NoModel)
        plan = app.config.synth
        assert plan is not None and plan.entry_point == "mean" and plan.module_source == MEAN
        assert plan.project == mean_fn.path.parent.resolve()
    assert capsys.readouterr().err == ""


@pytest.mark.usefixtures("no_config")
def test_an_unknown_model_is_still_a_usage_error(
    mean_fn: LoadedFunction, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    apps = opened_apps(monkeypatch)
    code = main(["debug", f"{mean_fn.path}::mean", "--model", "scripted:missing.json"])
    assert code == 2 and "no such file" in capsys.readouterr().err
    assert apps == []
    with pytest.raises(SystemExit):
        main(["debug", "--help"])
    assert "'none': no model" in " ".join(capsys.readouterr().out.split())


async def test_a_session_taken_back_knows_which_inputs_are_tests_already(
    executor: Executor, mean_fn: LoadedFunction
) -> None:
    app = free_app(mean_fn, executor)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.synth is not None, "inputs synthesised")
        row = select_input(app, "mean([1, 2, 3])")
        await pilot.press("g")
        await until(pilot, lambda: app.state.total == 1 and not app.person_busy, "test run")
        saved = app.saved()
    again = free_app(mean_fn, executor, resume=saved)
    async with again.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: again.state.synth is not None, "inputs synthesised")
        (test,) = again.state.tests
        assert test.input_source == "synth:seed"
        assert again.state.synth_tests == {row.number: test.id}
        assert "no model" in again.query_one(StatusBar).plain
        again.notices.clear()
        select_input(again, "mean([1, 2, 3])")
        await pilot.press("m")
        assert again.notices == [f"input {row.number} is test #{test.id} already (e edits it)"]


def test_a_problem_without_a_model_is_seeded_by_its_base_inputs(
    data_dir: Path,
    executor: Executor,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    no_config: None,
) -> None:
    from utdebug.tui.synth import synthesize_outcomes

    apps = opened_apps(monkeypatch)
    assert main(["debug", "--problem", "hard/6", "--data-dir", str(data_dir)]) == 0
    (app,) = apps
    plan = app.config.synth
    assert app.model_free and plan is not None and plan.problem is not None
    result = synthesize_outcomes(plan, app.debug_task.code, executor.sandbox)
    assert result.seed_origins == ["the problem's base inputs"] and result.seeds >= 1
    assert len(result.rows) >= 10 and all(r.outcome for r in result.rows)


async def test_the_inputs_tab_comes_back_with_7_and_fits_a_small_terminal(
    executor: Executor, mean_fn: LoadedFunction
) -> None:
    app = free_app(mean_fn, executor)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.state.synth is not None, "inputs synthesised")
        tabs = app.query_one("#bottom-tabs")
        await pilot.press("6")
        assert tabs.active == "tab-transcript"  # type: ignore[attr-defined]
        await pilot.press("7")
        assert tabs.active == "tab-inputs"  # type: ignore[attr-defined]
        assert app.focused is app.query_one(InputsPanel).table
        await pilot.pause()
        assert app.query_one(InputsPanel).table.size.height >= 4  # rows to choose from
