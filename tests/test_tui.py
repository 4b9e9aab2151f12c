"""The Textual front end driven by a Pilot: whole sessions with a scripted model and real sandbox
runs, a person's corrections, review by hand, errors, exports, and SVG snapshots.

Snapshots live in tests/snapshots/*.svg. A missing one is written and the test fails (so it is
never silently accepted); ``UTDEBUG_UPDATE_SNAPSHOTS=1`` rewrites them all. Review a written or
changed snapshot by opening the .svg in a browser before committing it.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.syntax import Syntax
from testkit.app import (
    SIZE,
    make_app,
    plain,
    rows,
    run_pytest,
    status,
    summary,
    table_rows,
    timeline,
)
from testkit.scripted_add import FIXED, SOURCE, add_script, fix
from testkit.wait import until
from textual import events
from textual.message_pump import MessagePump
from textual.widgets import Input, OptionList, Static, TabbedContent

from utdebug.agents.base import Completion, ModelRateLimited, ModelRequest, ModelUnavailable
from utdebug.agents.scripted import ScriptedModel
from utdebug.engine import Executor, Settings
from utdebug.tui.actions import ACTIONS, BINDING_PREFIX
from utdebug.tui.app import DebugApp
from utdebug.tui.changes import PersonChanges
from utdebug.tui.commands import DebugCommands
from utdebug.tui.config import AppConfig
from utdebug.tui.details import TestDetailScreen, detail_renderable
from utdebug.tui.driver import SessionDriver
from utdebug.tui.engine_events import EngineEvents
from utdebug.tui.format import unified_diff
from utdebug.tui.panels import PANELS
from utdebug.tui.screens import (
    AddTestScreen,
    EditExpectedScreen,
    HelpScreen,
    ReviewScreen,
    RollbackScreen,
    SearchScreen,
    WriteBackScreen,
)
from utdebug.tui.transcript import Transcript
from utdebug.tui.widgets import (
    CandidatesPanel,
    RoundsTable,
    TestsPanel,
    TooSmall,
)
from utdebug.workspace import LoadedFunction, load_function

SNAPSHOTS = Path(__file__).parent / "snapshots"
WORSE = "def add(a, b):\n    return 0\n"


# --- a whole session ------------------------------------------------------------------------


async def test_a_person_corrects_a_test_and_writes_the_fix_back(
    executor: Executor, calc: LoadedFunction, tmp_path: Path
) -> None:
    app = make_app(calc, add_script([fix(WORSE), fix(FIXED)]), executor, step_first=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.phase == "paused", "paused after round 0")
        assert app.session is not None and app.session.idle
        assert "paused after round 0" in status(app) and "SIMULATED" in status(app)
        assert "test-layer" in status(app)
        table = table_rows(app)
        assert [r[1] for r in table] == ["add(1, 2)", "add(2, 0)", "add(0, 5)"]
        assert [r[3] for r in table] == ["fail", "pass", "pass"]
        assert all(r[4] == "████████ 100%" for r in table)  # eight of eight votes
        assert all(r[5] == "model" for r in table)
        assert "2/3" in summary(app)
        assert "run with --candidates C" in str(app.query_one("#candidates-hint", Static).content)

        # The votes for add(0, 5) are wrong (-5): the person corrects them to 5.
        await pilot.press("down", "down", "e")
        assert isinstance(app.screen, EditExpectedScreen)
        box = app.screen.query_one("#expected-input", Input)
        assert box.value == "-5"  # pre-filled with the value now (typing replaces it)
        await pilot.press("5", "enter")
        await until(
            pilot, lambda: app.person_busy == 0 and app.state.passed == 1, "the edit re-run"
        )
        assert "1/3" in summary(app)
        assert table_rows(app)[2][2:4] == ["5", "fail"] and table_rows(app)[2][5] == "person"
        assert any(r[2] == "test edited" for r in timeline(app))

        await pilot.press("s")  # round 1: the worse edit is backtracked
        await until(
            pilot, lambda: app.state.phase == "paused" and app.state.rounds_done == 1, "round 1"
        )
        (r1,) = [r for r in timeline(app) if r[0] == "1"]
        assert r1[1:] == ["33% → 0%", "backtracked", "pass rate did not rise"]

        await pilot.press("s")  # round 2: the fix is accepted; that was the last round
        await until(pilot, lambda: app.state.phase == "finished", "the session finished")
        (r2,) = [r for r in timeline(app) if r[0] == "2"]
        assert r2[1:] == ["33% → 100%", "accepted", "pass rate rose"]
        assert "finished: every round ran" in status(app)
        assert [r[3] for r in table_rows(app)] == ["pass", "pass", "pass"]
        diff = app.query_one("#diff-view", Static).content
        assert isinstance(diff, Syntax) and "+    return a + b" in diff.code

        await pilot.press("P")  # a patch next to the file, the file untouched
        patch = tmp_path / "calc.py.utdebug.patch"
        assert patch.exists() and "+    return a + b" in patch.read_text()
        assert (tmp_path / "calc.py").read_text() == SOURCE

        await pilot.press("w")
        assert isinstance(app.screen, WriteBackScreen)
        await pilot.press("y")
        await pilot.pause()
        assert (tmp_path / "calc.py").read_text() == FIXED
        backup = tmp_path / "calc.py.utdebug.bak"
        assert backup.read_text() == SOURCE
        assert any(str(backup) in n for n in app.notices)
        await pilot.press("w")  # nothing left to write
        assert "already holds" in app.notices[-1]

        await pilot.press("t")
        exported = tmp_path / "test_add_utdebug.py"
        assert exported.exists() and "exported 3 tests" in app.notices[-1]

    passing = run_pytest(exported, tmp_path)
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert "3 passed" in passing.stdout
    (tmp_path / "calc.py").write_text(backup.read_text())  # the bug again
    failing = run_pytest(exported, tmp_path)
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "2 failed, 1 passed" in failing.stdout


async def test_add_roll_back_and_delete_after_the_session(
    executor: Executor, calc: LoadedFunction
) -> None:
    app = make_app(calc, add_script([fix(FIXED)], third="5"), executor, Settings(rounds=1))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.phase == "finished", "the session finished")
        assert app.state.finish_reason == "rounds" and "3/3" in summary(app)

        await pilot.press("a")
        assert isinstance(app.screen, AddTestScreen)
        await pilot.press(*"(10, 5", "enter")  # not a literal: the dialog says so
        assert "arguments" in str(app.screen.query_one("#error", Static).content)
        await pilot.press(")", "enter", "1", "5", "enter")
        await until(pilot, lambda: app.person_busy == 0 and app.state.total == 4, "the added test")
        assert table_rows(app)[3][1:4] == ["add(10, 5)", "15", "pass"]
        assert table_rows(app)[3][4:] == ["—", "person"]

        await pilot.press("b")
        assert isinstance(app.screen, RollbackScreen)
        assert app.screen.query_one(OptionList).option_count == 2
        await pilot.press("up", "enter")  # version 0: the given code
        await until(pilot, lambda: app.person_busy == 0 and app.state.passed == 1, "the roll back")
        assert app.state.code == SOURCE and "1/4" in summary(app)
        assert any(r[2] == "rolled back" for r in timeline(app))

        table = app.query_one(TestsPanel).table
        table.move_cursor(row=3)
        await pilot.press("d")
        await until(pilot, lambda: app.person_busy == 0 and app.state.total == 3, "the deletion")
        assert [r[1] for r in table_rows(app)] == ["add(1, 2)", "add(2, 0)", "add(0, 5)"]


# --- ranked candidates ----------------------------------------------------------------------


async def test_ranked_candidates_are_listed(executor: Executor, calc: LoadedFunction) -> None:
    model = add_script([fix(WORSE), fix(FIXED), fix(FIXED)], third="5")
    app = make_app(calc, model, executor, Settings(rounds=1, candidates=3))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.phase == "finished", "the session finished")
        panel = app.query_one(CandidatesPanel)
        got = rows(panel.table)
        # Row 0 the code in force, then the distinct candidates (the repeated fix once).
        assert [(r[0], r[1], r[3]) for r in got] == [
            ("1", "in force", "33%"),
            ("1", "#1", "0%"),
            ("1", "#2", "100%"),
        ]
        assert all(len(r[2]) == 12 for r in got)  # code ids
        assert "chosen" in got[2][5] and "chosen" not in got[0][5] + got[1][5]
        assert all(r[4] != "—" for r in got)  # every row has its group's score
        hint = str(panel.query_one("#candidates-hint", Static).content)
        assert "3 candidates per round, ranked by b4" in hint
        (r1,) = [r for r in timeline(app) if r[0] == "1"]
        assert r1[1:3] == ["33% → 100%", "accepted"]


# --- review by hand -------------------------------------------------------------------------


async def test_review_by_hand_waits_for_a_person(executor: Executor, calc: LoadedFunction) -> None:
    app = make_app(
        calc, add_script([fix(FIXED)], third="5"), executor, Settings(rounds=1), review=True
    )
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, ReviewScreen), "the review dialog")
        assert app.state.phase == "review" and app.session is not None and not app.session.idle
        await pilot.press("escape")  # decide later: the session keeps waiting
        assert not isinstance(app.screen, ReviewScreen)
        assert "awaiting review" in status(app)
        await pilot.press("e")
        assert app.notices[-1] == "pause first (p)"
        await pilot.press("n")
        await until(pilot, lambda: app.state.phase == "finished", "the session finished")
        (r1,) = [r for r in timeline(app) if r[0] == "1"]
        assert r1[2:] == ["backtracked", "rejected by a person"]
        assert app.state.code == SOURCE


async def test_the_review_shows_the_edit_merged_into_the_module(
    executor: Executor, tmp_path: Path
) -> None:
    # a function-only reply: the module's docstring and import are not shown as deleted
    path = tmp_path / "calc.py"
    path.write_text('"""Sums."""\n\nimport math\n\n\n' + SOURCE, encoding="utf-8")
    loaded = load_function(path, "add")
    model = add_script([fix(FIXED + "\n\nprint(add(1, 2))\n")], third="5")
    app = make_app(loaded, model, executor, Settings(rounds=1), review=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, ReviewScreen), "the review dialog")
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        diff = unified_diff(screen.code, screen.review.code)
        changed = [x for x in diff.splitlines() if x[:1] in "+-" and x[:3] not in ("---", "+++")]
        assert changed == ["-    return a - b", "+    return a + b"]
        await pilot.press("y")
        await until(pilot, lambda: app.state.phase == "finished", "the session finished")
        app.query_one("#bottom-tabs", TabbedContent).active = "tab-transcript"
        await pilot.pause()
        lines = [strip.text.rstrip() for strip in app.query_one(Transcript).lines]
        assert "  replaced: function add" in lines
        assert "  left out: print call at line 6" in lines
        await pilot.press("w", "y")
        await pilot.pause()
        assert path.read_text() == '"""Sums."""\n\nimport math\n\n\n' + FIXED


async def test_review_can_be_turned_on_while_running(
    executor: Executor, calc: LoadedFunction
) -> None:
    model = add_script([fix(FIXED)], third="5")
    app = make_app(calc, model, executor, Settings(rounds=1), step_first=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.phase == "paused", "paused after round 0")
        await pilot.press("v", "r")
        await until(pilot, lambda: isinstance(app.screen, ReviewScreen), "the review dialog")
        await pilot.press("y")
        await until(pilot, lambda: app.state.phase == "finished", "the session finished")
        (r1,) = [r for r in timeline(app) if r[0] == "1"]
        assert r1[2:] == ["accepted", "accepted by a person"]


# --- pause, cancel, quit -------------------------------------------------------------------


class GatedModel:
    """A scripted model whose calls wait until the test opens the gate."""

    simulated = True
    supports_prefill = True

    def __init__(self, inner: ScriptedModel) -> None:
        self.inner = inner
        self.name = inner.name
        self.gate = asyncio.Event()
        self.waiting = False

    async def complete(self, request: ModelRequest) -> list[Completion]:
        self.waiting = True
        await self.gate.wait()
        return await self.inner.complete(request)


async def test_pause_mid_round_then_cancel(executor: Executor, calc: LoadedFunction) -> None:
    model = GatedModel(add_script([]))
    app = make_app(calc, model, executor)  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: model.waiting, "the first model call")
        assert app.state.phase == "running"
        # A sign of life while the model is slow: what the session waits for, with a spinner.
        await until(
            pilot,
            lambda: "round 0 · proposing test 1 of 3 (proposal 1 of 9)" in status(app),
            "the activity line",
        )
        assert status(app)[0] in "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
        await pilot.press("p")
        # The call in flight is cancelled at once (it never answered: the gate is shut).
        await until(pilot, lambda: app.state.phase == "paused", "the pause")
        assert "paused in round 0" in status(app)
        assert app.session is not None and app.session.idle
        assert app.session.interrupted_calls == 1
        await pilot.press("x")
        await until(pilot, lambda: app.state.phase == "finished", "the cancellation")
        assert "finished: cancelled" in status(app)


async def test_quitting_mid_call_stops_the_session(
    executor: Executor, calc: LoadedFunction
) -> None:
    model = GatedModel(add_script([]))
    app = make_app(calc, model, executor)  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: model.waiting, "the first model call")
        await pilot.press("q")
    assert not app.is_running
    assert app.session is not None and app.session.idle


# --- errors ---------------------------------------------------------------------------------


class DownOnce:
    """The toy script behind a server that is down for the first edit call."""

    def __init__(self, inner: ScriptedModel) -> None:
        self.inner = inner
        self.name = inner.name
        self.simulated = True
        self.supports_prefill = True
        self.down = True

    async def complete(self, request: ModelRequest) -> list[Completion]:
        if request.purpose == "debug" and self.down:
            self.down = False
            raise ModelUnavailable("503: the server is down", model=self.name)
        return await self.inner.complete(request)


async def test_a_model_error_is_a_pause_and_r_asks_again(
    executor: Executor, calc: LoadedFunction
) -> None:
    model = DownOnce(add_script([fix(FIXED)], third="5"))
    app = make_app(calc, model, executor, Settings(rounds=1))  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.phase == "error", "the error")
        assert "stopped by ModelUnavailable" in status(app), status(app)
        assert app.state.finish_reason == "error"
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.press("e")  # the stopped session still takes a person's correction
        assert isinstance(app.screen, EditExpectedScreen)
        await pilot.press("x", "enter")  # a name, not a literal
        error = str(app.screen.query_one("#error", Static).content)
        assert error.startswith("not a value")
        await pilot.press("escape")
        assert not isinstance(app.screen, EditExpectedScreen)
        # The model can answer now: r asks again from the round the error cut short.
        await pilot.press("r")
        await until(pilot, lambda: app.state.phase == "finished", "the retried round")
        assert app.state.finish_reason != "error" and app.state.code == FIXED
        assert "round 1 of" in status(app) and "r2/" not in status(app)
        assert any(r[0] == "1" and r[2] == "accepted" for r in timeline(app))
        app.query_one("#bottom-tabs", TabbedContent).active = "tab-transcript"
        await pilot.pause()
        lines = [strip.text.rstrip() for strip in app.query_one(Transcript).lines]
        assert any(line.startswith("▸ [round 0] test proposal 1: add(1, 2) · ") for line in lines)
        assert any(line.startswith("  kept #1 add(1, 2) → 3 (votes: 8× 3") for line in lines)
        assert any(line.startswith("stopped by a model error: ModelUnavailable") for line in lines)


async def test_a_rate_limited_model_is_shown(executor: Executor, calc: LoadedFunction) -> None:
    def refuse(request: ModelRequest, i: int) -> str:
        raise ModelRateLimited("429: slow down", model="limited")

    app = make_app(calc, ScriptedModel(refuse, name="limited"), executor)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.phase == "error", "the error")
        assert "stopped by ModelRateLimited: 429: slow down" in status(app)
        await pilot.press("w")
        assert "nothing to write" in app.notices[-1]
        await pilot.press("t")
        assert app.notices[-1] == "no tests to export yet"


async def test_a_small_terminal_gets_a_message(executor: Executor, calc: LoadedFunction) -> None:
    app = make_app(calc, add_script([]), executor, autostart=False)
    async with app.run_test(size=(60, 20)) as pilot:
        message = app.query_one(TooSmall)
        assert message.display and not app.query_one("#body").display
        assert "terminal too small (80×24 needed" in str(message.content)
        await pilot.resize_terminal(80, 24)
        await until(pilot, lambda: not message.display, "the panels back")
        assert app.query_one("#body").display


async def test_without_a_source_file_nothing_is_written(
    executor: Executor, calc: LoadedFunction
) -> None:
    app = DebugApp(calc.to_task(), add_script([]), executor, config=AppConfig(autostart=False))
    async with app.run_test(size=SIZE) as pilot:
        assert "ready" in status(app)
        for key in ("w", "P", "t"):
            await pilot.press(key)
            assert app.notices[-1].startswith("no source file")


# --- keys and the command palette -----------------------------------------------------------


def test_every_binding_has_a_unique_id() -> None:
    ids = [b.id for b in DebugApp.BINDINGS if not isinstance(b, tuple)]  # type: ignore[union-attr]
    assert len(ids) == len(ACTIONS) and len(set(ids)) == len(ids)
    assert all(i is not None and i.startswith(BINDING_PREFIX) for i in ids)
    assert all(hasattr(DebugApp, f"action_{a.action.split('(')[0]}") for a in ACTIONS)


def test_the_app_holds_its_parts_instead_of_stacking_them() -> None:
    """The app is one class over the app's base; the engine's events, a person's changes
    and driving the session are plain objects it holds (no Textual in them)."""
    ours = [c.__name__ for c in DebugApp.__mro__ if c.__module__.startswith("utdebug")]
    assert ours == ["DebugApp", "AppBase"]
    for part in (EngineEvents, PersonChanges, SessionDriver):
        assert not issubclass(part, MessagePump), part


def test_a_panel_row_holds_its_key() -> None:
    """The panel keys are the panel table's rows: a new panel brings its key along."""
    keys = [(a.key, a.action, a.with_model) for a in ACTIONS if a.action.startswith("panel(")]
    rows = [(p.key, f"panel('{n}')", False if p.model_free else None) for n, p in PANELS.items()]
    assert keys == rows


async def test_the_command_palette_runs_actions(executor: Executor, calc: LoadedFunction) -> None:
    app = make_app(calc, add_script([fix(FIXED)], third="5"), executor, autostart=False)
    async with app.run_test(size=SIZE) as pilot:
        provider = DebugCommands(app.screen)
        found = [hit.text async for hit in provider.discover()]
        assert len(found) == len(ACTIONS)
        hits = [hit async for hit in provider.search("step")]
        best = max(hits, key=lambda hit: hit.score)
        assert str(best.text) == "Step (s)"
        await best.command()  # runs the action: one round, then pause
        await until(pilot, lambda: app.state.phase == "paused", "paused after round 0")
        assert app.state.rounds_done == 0


# --- snapshots ------------------------------------------------------------------------------


def normalised(svg: str) -> str:
    """The SVG without what may differ between runs: Rich's hash-based ids."""
    return re.sub(r"terminal-\d+", "terminal", svg)


def compare_snapshot(app: DebugApp, name: str, failures: list[str], tmp_path: Path) -> None:
    svg = normalised(app.export_screenshot(title="utdebug"))
    path = SNAPSHOTS / f"{name}.svg"
    if os.environ.get("UTDEBUG_UPDATE_SNAPSHOTS") == "1" or not path.exists():
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(svg, encoding="utf-8")
        failures.append(f"wrote {path}: open it in a browser, check it, then run the tests again")
    elif path.read_text(encoding="utf-8") != svg:
        actual = tmp_path / f"{name}.actual.svg"
        actual.write_text(svg, encoding="utf-8")
        failures.append(
            f"{name}: the screen differs from {path} (now: {actual}); if the change is "
            f"intended, review it and rerun with UTDEBUG_UPDATE_SNAPSHOTS=1"
        )


async def test_snapshots_of_the_main_screens(
    executor: Executor, calc: LoadedFunction, tmp_path: Path
) -> None:
    failures: list[str] = []
    app = make_app(calc, add_script([fix(WORSE), fix(FIXED)]), executor, step_first=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.phase == "paused", "paused after round 0")
        await pilot.pause()
        compare_snapshot(app, "paused_after_round_0", failures, tmp_path)
        await pilot.press("down", "down", "e")
        await pilot.pause()
        compare_snapshot(app, "edit_dialog", failures, tmp_path)
        await pilot.press("5", "enter")
        await until(
            pilot, lambda: app.person_busy == 0 and app.state.passed == 1, "the edit re-run"
        )
        await pilot.press("r")
        await until(pilot, lambda: app.state.phase == "finished", "the session finished")
        await pilot.pause()
        compare_snapshot(app, "finished", failures, tmp_path)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        compare_snapshot(app, "help", failures, tmp_path)
    assert not failures, "\n".join(failures)


# --- the import boundary --------------------------------------------------------------------


def test_importing_the_app_does_not_load_litellm() -> None:
    code = (
        "import sys, utdebug.tui.app\n"
        "assert 'textual' in sys.modules\n"
        "assert 'litellm' not in sys.modules, 'litellm was imported'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr


# --- every size, the detail view, undo, cancel, going on after the end -----------------------

FROZEN = 1000.0


def code_window(app: DebugApp) -> tuple[int, int]:
    """(the code line just above the view, how many code lines it shows)."""
    scroll = app.query_one("#code-scroll")
    task = app.query_one("#task-text", Static)
    above = task.outer_size.height if task.display else 0
    return int(scroll.scroll_offset.y) - above, scroll.size.height


def frozen_app(loaded: LoadedFunction, model: Any, executor: Executor, **kw: Any) -> DebugApp:
    """An app whose clock and timestamps stand still (spinners and times in snapshots)."""
    return make_app(loaded, model, executor, clock=lambda: FROZEN, stamp=lambda: "12:00:00", **kw)


@pytest.mark.parametrize(
    "size", [(80, 24), (100, 30), (120, 40), (160, 48)], ids=lambda s: f"{s[0]}x{s[1]}"
)
async def test_snapshots_at_every_size(
    executor: Executor, calc: LoadedFunction, tmp_path: Path, size: tuple[int, int]
) -> None:
    """The main screen and the detail view at 80x24, 100x30, 120x40 and 160x48: the buggy line
    of the code (``return a - b``, line 3) and every column of the tests table are on screen."""
    failures: list[str] = []
    app = frozen_app(calc, add_script([]), executor, step_first=True)
    name = f"{size[0]}x{size[1]}"
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: app.state.phase == "paused", "paused after round 0")
        await pilot.pause()
        top, height = code_window(app)
        assert top < 3 <= top + height, (top, height)  # line 3, ``return a - b``
        header = " ".join(str(c.label) for c in app.query_one(TestsPanel).table.columns.values())
        assert header.split() == ["id", "input", "expected", "status", "votes", "origin"]
        for column in app.query_one(TestsPanel).table.columns.values():
            assert column.width >= len(str(column.label)), column
        compare_snapshot(app, f"main_{name}", failures, tmp_path)
        await pilot.press("enter")  # the first row: add(1, 2), which fails
        await until(pilot, lambda: isinstance(app.screen, TestDetailScreen), "the detail view")
        await pilot.pause()
        compare_snapshot(app, f"detail_{name}", failures, tmp_path)
    assert not failures, "\n".join(failures)


async def test_the_detail_view_shows_everything_about_a_test(
    executor: Executor, calc: LoadedFunction
) -> None:
    app = frozen_app(calc, add_script([]), executor, step_first=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.state.phase == "paused", "paused after round 0")
        long_a, long_b = "x" * 250, "y" * 250
        assert app.session is not None
        await app.session.add_test((long_a, long_b), long_a + long_b)
        await until(pilot, lambda: len(app.state.tests) == 4, "the person's test")
        table = app.query_one(TestsPanel).table
        table.move_cursor(row=3)
        cell = str(table.get_row_at(3)[1])
        assert cell.endswith("…") and len(cell) < 100  # cut in the table, with a mark
        await pilot.press("i")
        await until(pilot, lambda: isinstance(app.screen, TestDetailScreen), "the detail view")
        assert isinstance(app.screen, TestDetailScreen)
        text = "".join(
            seg.text
            for seg in app.console.render(
                detail_renderable(app.screen.detail), app.console.options.update_width(60)
            )
        )
        flat = text.replace("\n", "").replace(" ", "")
        # The whole 500-character call and expected value, wrapped, nothing cut.
        assert f"add({long_a!r},{long_b!r})" in flat
        assert repr(long_a + long_b) in flat
        assert "person" in text and "12:00:00" in text
        await pilot.press("escape")
        table.move_cursor(row=0)
        await pilot.press("i")
        await until(pilot, lambda: isinstance(app.screen, TestDetailScreen), "the detail view")
        detail = app.screen.detail  # type: ignore[attr-defined]
        assert detail.votes is not None and detail.votes.counts() == [("3", 8)]
        assert detail.actual is not None and detail.actual.status == "fail"
        assert "-1" in (detail.actual.detail or "")  # what the buggy code returned
        assert [h.who for h in detail.history] == ["model"]
        shown = "".join(
            seg.text
            for seg in app.console.render(
                detail_renderable(detail), app.console.options.update_width(80)
            )
        )
        assert re.search(r"8 votes, 1 distinct answer\s", shown) and "(s)" not in shown


async def test_delete_then_undo_and_every_change_is_undoable(
    executor: Executor, calc: LoadedFunction
) -> None:
    app = frozen_app(calc, add_script([]), executor, step_first=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.phase == "paused", "paused after round 0")
        before = [(t.id, t.call, t.expected, t.origin) for t in app.state.tests]
        table = app.query_one(TestsPanel).table
        table.move_cursor(row=1)
        await pilot.press("d")
        await until(pilot, lambda: app.person_busy == 0 and len(app.state.tests) == 2, "the delete")
        assert "(u undoes)" in app.notices[-1]
        await pilot.press("u")
        await until(pilot, lambda: app.person_busy == 0 and len(app.state.tests) == 3, "the undo")
        assert [(t.id, t.call, t.expected, t.origin) for t in app.state.tests] == before
        assert app.state.passed == 2 and app.state.total == 3
        assert app.state.records.history[before[1][0]][-1].what.startswith("undid a change")
        # An edit, undone: the model's expected value and origin come back.
        table.move_cursor(row=2)
        await pilot.press("e")
        await pilot.pause()
        await pilot.press("5", "enter")  # the value now is selected: typing replaces it
        await until(
            pilot, lambda: app.person_busy == 0 and app.state.tests[2].origin == "person", "edit"
        )
        assert table_rows(app)[2][4] == "—" and table_rows(app)[2][5] == "person"
        await pilot.press("u")
        await until(
            pilot, lambda: app.person_busy == 0 and app.state.tests[2].origin == "model", "undo"
        )
        assert [(t.id, t.call, t.expected, t.origin) for t in app.state.tests] == before
        await pilot.press("u")
        await pilot.pause()
        assert app.notices[-1] == "nothing to undo"


class SleepyModel:
    """A model whose every call takes a minute (a slow server)."""

    name = "sleepy"
    simulated = True
    supports_prefill = True

    def __init__(self) -> None:
        self.started = 0
        self.cancelled = 0

    async def complete(self, request: ModelRequest) -> list[Completion]:
        self.started += 1
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        raise AssertionError("never answers in time")


async def test_cancel_during_a_slow_model_call_cancels_the_call(
    executor: Executor, calc: LoadedFunction
) -> None:
    """x during a minute-long model call ends the session at once: the call is cancelled, not
    waited for (the model never answers: the session can only end by cancelling it). How fast,
    on an idle machine, is benchmarks/perf/tui_startup.py's business."""
    model = SleepyModel()
    app = make_app(calc, model, executor)  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: model.started == 1, "the first model call")
        app.action_cancel_session()
        await until(pilot, lambda: app.state.phase == "finished", "the end")
        assert "finished: cancelled" in status(app)
        assert model.cancelled == 1  # the call itself was cancelled, not waited for


async def test_a_session_that_ended_goes_on_with_a_new_failing_test(
    executor: Executor, calc: LoadedFunction
) -> None:
    """After the end, a person adds a test the fix fails: s runs another round with it."""
    slightly = (
        'def add(a, b):\n    """Return the sum of a and b."""\n    return a + b if b != 7 else 0\n'
    )
    app = frozen_app(calc, add_script([fix(slightly), fix(FIXED)], third="5"), executor)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.phase == "finished", "the end")
        assert app.state.finish_reason == "all_pass" and "b != 7" in app.state.code
        assert app.session is not None
        await app.session.add_test((0, 7), 7)  # what the person knows the sum is
        await until(
            pilot,
            lambda: app.state.passed is not None and app.state.passed < len(app.state.tests),
            "add",
        )
        await pilot.press("s")
        await until(
            pilot, lambda: app.state.phase == "finished" and app.state.code == FIXED, "more rounds"
        )
        # One more round (s): the person's test failed, the edit fixed it and was accepted.
        assert app.state.finish_reason == "rounds" and app.state.passed == app.state.total == 4
        assert any(r[2] == "accepted" for r in timeline(app)[1:])


async def test_the_demo_model_answers_when_every_edit_is_rejected(
    executor: Executor, tmp_path: Path
) -> None:
    """A person rejects every edit of the demo: the demo's model keeps answering and the
    session ends normally after its rounds."""
    import shutil

    from utdebug.debug_cmd import DEMO_DIR, DEMO_FILE, DEMO_FUNCTION, DEMO_SCRIPT

    shutil.copyfile(DEMO_DIR / DEMO_FILE, tmp_path / DEMO_FILE)
    loaded = load_function(tmp_path / DEMO_FILE, DEMO_FUNCTION)
    model = ScriptedModel.from_file(DEMO_DIR / DEMO_SCRIPT, cycle=True)
    app = make_app(loaded, model, executor, Settings(), review=True)
    async with app.run_test(size=SIZE) as pilot:
        rejected = 0
        while app.state.phase not in ("finished", "error"):
            await until(
                pilot,
                lambda: app.pending_review is not None or app.state.phase in ("finished", "error"),
                "an edit to review, or the end",
            )
            review = app.pending_review
            if review is not None:
                await pilot.press("n")
                rejected += 1
                await until(pilot, lambda r=review: app.pending_review is not r, "edit rejected")
        assert app.state.phase == "finished", (app.state.phase, app.state.error)
        assert app.state.finish_reason == "rounds" and rejected == 3
        assert app.state.code == loaded.to_task().code  # nothing was accepted


class StallOnThirdTest:
    """The toy script, except that the third test proposal never answers (a slow model)."""

    def __init__(self, inner: ScriptedModel) -> None:
        self.inner = inner
        self.name = inner.name
        self.simulated = True
        self.supports_prefill = True
        self.ut_calls = 0

    async def complete(self, request: ModelRequest) -> list[Completion]:
        if request.purpose == "ut":
            self.ut_calls += 1
            if self.ut_calls == 3:
                await asyncio.Event().wait()
        return await self.inner.complete(request)


async def test_going_on_after_a_cancel_uses_the_tests_kept(
    executor: Executor, calc: LoadedFunction
) -> None:
    """x once 2 tests are kept, then r: round 0 ends on those 2 tests (not 0/0, not
    "no tests"), the rounds go on and the status counts the same rounds as the transcript."""
    model = StallOnThirdTest(add_script([fix(FIXED)], third="5"))
    app = make_app(calc, model, executor, Settings(rounds=1))  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        await until(
            pilot, lambda: model.ut_calls == 3 and len(app.state.tests) == 2, "2 tests kept"
        )
        await pilot.press("x")
        await until(pilot, lambda: app.state.phase == "finished", "the cancellation")
        assert "finished: cancelled" in status(app)
        await pilot.press("r")
        await until(pilot, lambda: app.state.phase == "finished", "the rounds after the cancel")
        assert app.state.total == 2 and len(table_rows(app)) == 2
        assert app.state.finish_reason != "no_tests" and app.state.code == FIXED
        assert "round 1 of 1" in status(app), status(app)
        assert [r[0] for r in timeline(app)] == ["0", "1"]


def test_words_on_screen_are_words() -> None:
    from utdebug.tui.format import finish_words, plural

    assert plural(1, "test") == "1 test" and plural(2, "test") == "2 tests"
    assert plural(0, "more round") == "0 more rounds"
    assert finish_words("all_pass") == "every test passes"
    assert finish_words("no_tests") == "no tests to debug with"
    assert "_" not in finish_words("some_new_reason")


async def test_a_file_changed_on_disk_is_said_before_the_diff(
    executor: Executor, calc: LoadedFunction
) -> None:
    app = make_app(calc, add_script([fix(FIXED)], third="5"), executor, Settings(rounds=1))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.phase == "finished", "the end")
        assert app.state.code == FIXED
        calc.path.write_text(SOURCE + "\n# changed by a person\n", encoding="utf-8")
        await pilot.press("w")
        await pilot.pause()
        assert not isinstance(app.screen, WriteBackScreen)  # no stale diff to say y to
        assert "changed on disk since it was loaded" in app.notices[-1]
        await pilot.press("P")
        await pilot.pause()
        assert "changed on disk" in app.notices[-1]
        assert not calc.path.with_name("calc.py.utdebug.patch").exists()


async def test_panels_give_back_room_follow_rounds_and_wrap_the_transcript(
    executor: Executor, calc: LoadedFunction
) -> None:
    """At 100x30: 4 then 3 gives the tests table its rows back; the rounds panel follows its
    newest row; the transcript, hidden while the session ran, wraps at its own width."""
    app = make_app(calc, add_script([fix(FIXED)], third="5"), executor, Settings(rounds=1))
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.state.phase == "finished", "the end")
        assert app.session is not None
        for i in range(4):  # more rows than the shrunk rounds panel shows
            await app.session.add_test((i, 100), i + 100)
            await pilot.pause()
        rounds = app.query_one(RoundsTable)
        await until(pilot, lambda: rounds.max_scroll_y > 0, "a rounds panel that scrolls")
        await until(pilot, lambda: rounds.scroll_y == rounds.max_scroll_y, "the newest row")
        await pilot.press("4")
        await pilot.pause()
        await pilot.press("3")
        await pilot.pause()
        table = app.query_one(TestsPanel).table
        assert table.size.height >= 5, table.size
        await pilot.press("6")
        transcript = app.query_one(Transcript)
        await until(pilot, lambda: len(transcript.lines) > 0, "the transcript laid out")
        edit = next(i for i, e in enumerate(transcript.entries) if "] edit" in plain(e))
        transcript.move_cursor(edit)
        await pilot.press("enter")  # the edit's reply, open
        lines = [strip.text.rstrip() for strip in transcript.lines]
        # Whole lines, not wrapped at a guessed 40 columns.
        assert "  kept #1 add(1, 2) → 3 (votes: 8× 3; share 100%)" in lines, lines
        assert any(line.startswith("      return a + b") for line in lines)  # under its header
        # The edit's code is highlighted as Python; the reply's prose stays plain text.
        assert any(isinstance(e, Syntax) and "return a + b" in e.code for e in transcript.entries)


def test_side_by_side_only_when_the_code_and_a_short_call_fit() -> None:
    from utdebug.debug_cmd import DEMO_DIR, DEMO_FILE
    from utdebug.tui.widgets import side_by_side_width

    demo = (DEMO_DIR / DEMO_FILE).read_text()
    need, code_width = side_by_side_width(demo, "median")
    widest = max(len(line) for line in demo.splitlines()[6:])  # its code, not its docstring
    assert code_width >= widest + 5  # line numbers and the marker
    assert 120 < need <= 160  # 120x40 stacks (a call and the code whole), 160x48 does not
    wide = "def f(x):\n    return [x] + " + " + ".join(f"[{i}]" for i in range(30)) + "\n"
    assert side_by_side_width(wide, "f")[0] > 160  # such code always stacks


async def test_layout_at_120x40_stacks_the_demo_and_shows_whole_calls(
    executor: Executor, tmp_path: Path
) -> None:
    import shutil

    from utdebug.debug_cmd import DEMO_DIR, DEMO_FILE, DEMO_FUNCTION, DEMO_SCRIPT

    shutil.copyfile(DEMO_DIR / DEMO_FILE, tmp_path / DEMO_FILE)
    loaded = load_function(tmp_path / DEMO_FILE, DEMO_FUNCTION)
    for size, stacked in (((120, 40), True), ((160, 48), False)):
        model = ScriptedModel.from_file(DEMO_DIR / DEMO_SCRIPT, cycle=True)
        app = make_app(loaded, model, executor, Settings(), step_first=True)
        async with app.run_test(size=size) as pilot:
            await until(pilot, lambda a=app: a.state.phase == "paused", "round 0")  # type: ignore[misc]
            assert app.query_one("#frame").has_class("-narrow") == stacked, size
            rows = table_rows(app)
            assert rows and all("…" not in row[1] for row in rows), rows  # every call whole


async def test_the_first_screen_comes_before_the_sandbox_and_the_probe(
    executor: Executor, calc: LoadedFunction
) -> None:
    """The app draws at once and says it is starting; the session begins when the start-up
    work (the sandbox, the model's probe) is done."""
    import threading

    from utdebug.tui.config import Started

    gate = threading.Event()
    model = add_script([fix(FIXED)], third="5")

    def starting() -> Started:
        gate.wait(30)
        return Started(model, executor, ("test-layer",), 1, "model scripted: probed")

    app = make_app(calc, model, None, Settings(rounds=1), starting=starting)  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "starting: the sandbox and the model's probe" in status(app)
        assert summary(app) == "no tests yet" and app.session is None
        await pilot.press("r")
        assert "still starting" in app.notices[-1]
        gate.set()
        await until(pilot, lambda: app.state.phase == "finished", "the session after the start-up")
        assert app.state.code == FIXED and "sandbox" in status(app)


async def test_a_model_that_cannot_be_used_ends_the_app_with_one_line(
    executor: Executor, calc: LoadedFunction
) -> None:
    from utdebug.tui.config import Started, StartupFailed

    def starting() -> Started:
        raise StartupFailed("utdebug debug: the model cannot be used: 401 no key", 1)

    app = make_app(calc, add_script([]), None, starting=starting)  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.startup_failure is not None, "the start-up failed")
    assert app.return_code == 1
    assert app.startup_failure is not None
    assert app.startup_failure.line == "utdebug debug: the model cannot be used: 401 no key"


async def test_the_session_file_is_not_rewritten_after_every_event(
    executor: Executor, calc: LoadedFunction, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the session works its events are folded into one write (``save_every_s``, here
    an hour); the file is written when the session stops, and holds its end state."""
    import json

    from utdebug.runs import records

    writes: list[str] = []
    real = records.write_text_atomic

    def counted(path: Path, text: str) -> None:
        writes.append(app.state.phase.value)
        real(path, text)

    monkeypatch.setattr(records, "write_text_atomic", counted)
    saved = tmp_path / "add.session.json"
    events = 0
    app = make_app(
        calc,
        add_script([fix(FIXED)], third="5"),
        executor,
        Settings(rounds=1),
        session_file=saved,
        save_every_s=3600.0,
    )

    async with app.run_test(size=SIZE) as pilot:
        assert app.session is not None

        def count(_event: object) -> None:
            nonlocal events
            events += 1

        app.session.listeners.append(count)
        await until(pilot, lambda: app.state.phase == "finished", "the end")
        await pilot.pause()
        assert json.loads(saved.read_text()) == json.loads(json.dumps(app.saved()))
    busy = [w for w in writes if w in ("running", "pausing", "starting")]
    assert events >= 10  # votes, runs, the edit ...: each was a whole write before
    assert len(busy) <= 1, writes  # the first write; the rest were folded into the end's
    assert writes[-1] == "finished"


async def test_a_saved_session_is_taken_back_whole(
    executor: Executor, calc: LoadedFunction, tmp_path: Path
) -> None:
    import json

    saved = tmp_path / "runs" / "add.session.json"
    saved.parent.mkdir(parents=True)
    app = make_app(
        calc, add_script([], third="5"), executor, Settings(rounds=1), session_file=saved
    )
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.phase in ("finished", "error"), "the end")
        assert app.session is not None
        await app.session.set_expected(app.state.tests[0].id, 30)  # a person's correction
        await until(pilot, lambda: app.state.tests[0].expected == 30, "the correction")
        await pilot.press("s")  # fails again (no edit replies): the state is saved as it goes
        await until(pilot, lambda: app.state.phase == "error", "the second stop")
        before = (table_rows(app), timeline(app), app.state.records.history[app.state.tests[0].id])
    state = json.loads(saved.read_text())
    again = make_app(
        calc, add_script([fix(FIXED)], third="5"), executor, Settings(rounds=1), resume=state
    )
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "taken back" in status(again)
        assert table_rows(again) == before[0]
        assert timeline(again) == before[1]
        assert again.state.records.history[again.state.tests[0].id] == before[2]
        assert again.state.tests[0].expected == 30 and again.state.tests[0].origin == "person"
        transcript = again.query_one(Transcript)
        lines = [plain(e) for e in transcript.entries]
        said = "[round 0] test proposal 1: add(1, 2) · model call · 151 chars · "
        head = next(i for i, line in enumerate(lines) if line.startswith(said))
        assert transcript.kind(head) == "head" and transcript.kind(head + 1) == "body"
        assert not transcript.is_open(head)  # a model call is one line again
        await pilot.press("r")  # and it goes on from there
        await until(pilot, lambda: again.state.phase == "finished", "more rounds")
        assert again.state.code == FIXED


async def test_copy_a_test_and_run_it_again(executor: Executor, calc: LoadedFunction) -> None:
    app = make_app(calc, add_script([], third="5"), executor, Settings(rounds=0))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.phase in ("finished", "error"), "the end")
        await pilot.press("down", "down", "c")
        assert app.copied == "add(0, 5)" and "copied the call of test #3" in app.notices[-1]
        await pilot.press("o")
        assert app.copied == "5"
        await pilot.press("T")
        assert app.copied is not None and "def test_" in app.copied and "(0, 5)" in app.copied
        await pilot.press("R")
        await until(pilot, lambda: "on the code in force" in app.notices[-1], "the re-run")
        assert app.notices[-1] == "test #3 on the code in force: returned -5"


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_search_filters_the_tests_and_finds_in_the_transcript(
    executor: Executor, calc: LoadedFunction, tmp_path: Path, size: tuple[int, int]
) -> None:
    """/ filters the tests and n / N move between matches in the transcript; snapshots of
    the search and of the transcript at 80x24 and 120x40."""
    failures: list[str] = []
    name = f"{size[0]}x{size[1]}"
    app = make_app(
        calc,
        add_script([], third="5"),
        executor,
        Settings(rounds=0),
        clock=lambda: FROZEN,
        stamp=lambda: "12:00:00",
    )
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: app.state.phase in ("finished", "error"), "the end")
        await pilot.press("slash")
        assert isinstance(app.screen, SearchScreen)
        await pilot.press(*"0, 5")
        compare_snapshot(app, f"search_{name}", failures, tmp_path)
        await pilot.press("enter")
        await pilot.pause()
        assert [r[1] for r in table_rows(app)] == ["add(0, 5)"]
        assert "/0, 5: 1 of 3 shown" in summary(app)
        await pilot.press("6")
        await pilot.pause()
        transcript = app.query_one(Transcript)
        await pilot.press("n")
        first = transcript.found
        assert first is not None and "0, 5" in transcript.entries[first].plain  # type: ignore[union-attr]
        await pilot.press("n")
        assert transcript.found is not None and transcript.found > first
        await pilot.press("N")
        assert transcript.found == first
        compare_snapshot(app, f"transcript_{name}", failures, tmp_path)
        await pilot.press("slash", "backspace", "enter")  # empty: every test again
        await pilot.pause()
        assert len(table_rows(app)) == 3
    assert not failures, failures


async def test_a_simulated_wrapper_edit_is_said_not_shown_and_never_written_back(
    executor: Executor, calc: LoadedFunction
) -> None:
    """The simulated model's stand-ins (a renamed copy of the function and a wrapper with a
    lookup table) are how the simulation behaves as an overfit edit would: the Code and Diff
    views say so in one line instead of showing them, and w refuses to write them back."""
    wrapper = (
        'def _sim_prev_add_0123abcd(a, b):\n    """Return the sum of a and b."""\n'
        "    return a - b\n\n\ndef add(a, b):\n    if (a, b) == (0, 5):\n        return 5\n"
        "    return _sim_prev_add_0123abcd(a, b)\n"
    )
    app = make_app(calc, add_script([fix(wrapper)], third="5"), executor, Settings(rounds=1))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.phase == "finished", "the end")
        assert "_sim_prev_add" in app.state.code  # what runs
        said = (
            "# SIMULATED edit: add(0, 5) returns 5, a special case the simulated model adds "
            "(as an overfit edit would); not code to keep\n"
        )
        assert app.state.shown_code() == SOURCE + "\n" + said  # what a person reads
        shown = app.query_one("#code-view", Static).content
        assert isinstance(shown, Syntax) and "_sim_" not in shown.code
        diff = app.query_one("#diff-view", Static).content
        assert isinstance(diff, Syntax) and "_sim_" not in diff.code
        assert "+# SIMULATED edit: add(0, 5) returns 5" in diff.code
        await pilot.press("w")
        await pilot.pause()
        assert "never written back" in app.notices[-1]
        assert calc.path.read_text(encoding="utf-8") == SOURCE


async def test_keymap_and_theme_from_the_config_file(
    executor: Executor, calc: LoadedFunction, tmp_path: Path
) -> None:
    from utdebug.agents.config import ConfigError
    from utdebug.tui.config import load_tui_config

    config = tmp_path / "config.toml"
    config.write_text('[tui]\ntheme = "gruvbox"\n[tui.keys]\nrun = "f5"\nsearch = "ctrl+f"\n')
    tui = load_tui_config({"UTDEBUG_CONFIG": str(config)})
    assert tui.theme == "gruvbox" and tui.keys == {"utdebug.run": "f5", "utdebug.search": "ctrl+f"}
    app = DebugApp(
        calc.to_task(),
        add_script([], third="5"),
        executor,
        Settings(rounds=0),
        AppConfig(loaded=calc, autostart=False, keymap=tui.keys, theme=tui.theme),
    )
    async with app.run_test(size=SIZE) as pilot:
        assert app.theme == "gruvbox"
        await pilot.press("f5")  # run, rebound
        await until(pilot, lambda: app.state.phase in ("finished", "error"), "the run from f5")
        await pilot.press("ctrl+f")
        assert isinstance(app.screen, SearchScreen)
    config.write_text('[tui.keys]\nrunn = "f5"\n')
    with pytest.raises(ConfigError, match="unknown action 'runn'"):
        load_tui_config({"UTDEBUG_CONFIG": str(config)})


async def test_the_mouse_clicks_rows_tabs_and_scrolls(
    executor: Executor, calc: LoadedFunction
) -> None:
    app = make_app(calc, add_script([], third="5"), executor, Settings(rounds=0))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.phase in ("finished", "error"), "the end")
        table = app.query_one(TestsPanel).table
        # A click on the third row selects it (the header is row 0 on screen).
        await pilot.click(table, offset=(5, 3))
        await pilot.pause()
        assert table.cursor_row == 2 and app.query_one(TestsPanel).selected_id() == 3
        await pilot.click("#bottom-tabs Tab#--content-tab-tab-transcript")
        await pilot.pause()
        assert app.query_one("#bottom-tabs", TabbedContent).active == "tab-transcript"
        transcript = app.query_one(Transcript)
        for head in sorted(transcript.heads):  # every model call open: more than fits
            transcript.toggle(head)
        await until(pilot, lambda: transcript.max_scroll_y > 0, "a transcript that scrolls")
        transcript.scroll_home(animate=False, immediate=True)
        await pilot.pause()
        await pilot.mouse_down(transcript)  # focus, then the wheel
        for _ in range(3):
            await pilot._post_mouse_events([events.MouseScrollDown], transcript)
        await pilot.pause()
        assert transcript.scroll_y > 0
        await pilot.click("#code-tabs Tab#--content-tab-tab-diff")
        await pilot.pause()
        assert app.query_one("#code-tabs", TabbedContent).active == "tab-diff"


async def test_the_task_line_is_the_docstrings_first_line(
    executor: Executor, tmp_path: Path
) -> None:
    path = tmp_path / "stats.py"
    path.write_text(
        'def mean(xs):\n    """Return the mean of xs.\n\n    >>> mean([2, 3])\n     2.5\n    """\n'
        "    return sum(xs) / (len(xs) + 1)\n",
        encoding="utf-8",
    )
    loaded = load_function(path, "mean")
    app = frozen_app(loaded, add_script([]), executor, step_first=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        shown = str(app.query_one("#task-text", Static).render())
    assert "Return the mean of xs. …" in shown
    assert "2.5" not in shown and ">>>" not in shown


async def test_an_engine_event_after_the_screen_is_gone_is_dropped(
    executor: Executor, calc: LoadedFunction
) -> None:
    """The session may still run while the app closes: an event it sends once the transcript
    is gone (here: the moment the transcript unmounts) is dropped, not raised (it was
    ``NoMatches: 'Transcript'`` in a loaded test run)."""
    from textual.message import Message

    from utdebug.engine.events import SessionStarted
    from utdebug.tui.messages import EngineEvent

    app = make_app(calc, add_script([]), executor, step_first=True)
    late: list[Message] = []

    def send_once_the_transcript_unmounts(message: Message) -> None:
        if isinstance(message, events.Unmount) and isinstance(message._sender, Transcript):
            late.append(EngineEvent(SessionStarted("late", "m", True, {})))
            app.post_message(late[-1])

    async with app.run_test(size=SIZE, message_hook=send_once_the_transcript_unmounts) as pilot:
        await until(pilot, lambda: app.state.phase == "paused", "paused after round 0")
    assert len(late) == 1  # sent, and the app closed without an error
    assert not any("late" in str(entry) for entry in app.state.transcript)


async def test_the_first_tests_stay_marked_after_new_tests_are_built(
    executor: Executor, calc: LoadedFunction, tmp_path: Path
) -> None:
    """An accepted edit makes the session build new tests; the first tests (those that showed
    the bug) stay in the table, marked ``orig``, run on the code in force (the fix holds on
    them), and the saved session brings them back."""
    import json

    saved = tmp_path / "runs" / "add.session.json"
    saved.parent.mkdir(parents=True)
    app = make_app(
        calc,
        add_script([fix(FIXED)], third="5"),
        executor,
        Settings(rounds=2),
        session_file=saved,
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.state.phase == "finished", "the end")
        assert [t.id for t in app.state.tests] == [4, 5, 6]  # the session's tests now
        await until(
            pilot, lambda: [r[3] for r in table_rows(app)[:3]] == ["pass"] * 3, "the originals run"
        )
        shown = table_rows(app)
        assert [r[0] for r in shown] == ["1", "2", "3", "4", "5", "6"]
        assert [r[1] for r in shown[:3]] == ["add(1, 2)", "add(2, 0)", "add(0, 5)"]
        assert [r[5] for r in shown] == ["orig"] * 3 + ["model"] * 3
        assert "orig: the first tests, 3/3 pass" in summary(app)
        history = app.state.records.history[1][-1].what
        assert "new tests were built" in history and "kept" in history
        table = app.query_one(TestsPanel).table
        table.move_cursor(row=0, animate=False)
        await pilot.press("R")  # an original runs again on the code in force
        await until(pilot, lambda: "on the code in force" in app.notices[-1], "the re-run")
        assert app.notices[-1] == "test #1 on the code in force: passes: returns the expected value"
        await pilot.press("c")
        assert app.copied == "add(1, 2)"
        await pilot.press("d")  # not one of the session's tests: it cannot be deleted
        await pilot.pause()
        assert "original test" in app.notices[-1] and len(table_rows(app)) == 6
        await pilot.press("b", "up", "enter")  # back to the given code: the originals fail
        await until(
            pilot,
            lambda: [r[3] for r in table_rows(app)[:3]] == ["fail", "pass", "fail"],
            "the originals run on the given code",
        )
        assert "orig: the first tests, 1/3 pass" in summary(app)
        before = table_rows(app)
    state = json.loads(saved.read_text())
    assert [t["id"] for t in state["originals"]] == [1, 2, 3]
    again = make_app(calc, add_script([]), executor, Settings(rounds=1), resume=state)
    async with again.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert table_rows(again) == before
        assert [t.id for t in again.state.tests] == [4, 5, 6]


def cursor_lines(transcript: Transcript) -> list[int]:
    """The transcript's lines (of the whole transcript) drawn with the cursor's background."""
    cursor = transcript.get_component_rich_style("transcript--cursor").bgcolor
    out = []
    for y in range(transcript._height):  # every line, scrolled into view or not
        transcript.scroll_to(y=y, animate=False, immediate=True)
        row = y - int(transcript.scroll_y)
        if any(s.style and s.style.bgcolor == cursor for s in transcript.render_line(row)):
            out.append(y)
    return out


async def test_the_transcript_has_a_cursor_and_copies_the_entry_under_it(
    executor: Executor, calc: LoadedFunction
) -> None:
    app = make_app(calc, add_script([fix(FIXED)], third="5"), executor, Settings(rounds=1))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.phase == "finished", "the end")
        await pilot.press("6")
        transcript = app.query_one(Transcript)
        await until(pilot, lambda: transcript.size.width > 0, "the transcript shown")
        assert app.focused is transcript
        entries = [plain(e) for e in transcript.entries]
        last = transcript.shown[-1]
        assert entries[last] == "finished: every round ran" and transcript.cursor == last
        await pilot.press("up", "k")  # two entries up
        accepted = entries.index("[round 1] edit accepted: pass rate rose")
        candidate = entries.index("  candidate 184dc2fe6e1d passes 3/3")
        assert transcript.cursor == candidate
        await pilot.press("j")
        assert transcript.cursor == accepted
        # The cursor's line is highlighted, and only it.
        row = transcript.shown.index(accepted)
        assert cursor_lines(transcript) == [transcript.starts[row]]
        await pilot.press("c")  # the copy keys copy the entry under the cursor
        assert app.clipboard == "[round 1] edit accepted: pass rate rose" == app.copied
        assert "copied the transcript entry" in app.notices[-1]
        # A model call copies whole: its line, then the reply (its code in a fence).
        edit = next(i for i, e in enumerate(entries) if e.startswith("[round 1] edit (feedback"))
        await pilot.press("k", "k", "k")
        assert transcript.cursor == edit
        await pilot.press("T")
        assert app.clipboard.startswith("[round 1] edit (feedback: test #3) · model call · ")
        assert "Here is the fix." in app.clipboard
        assert f"```\n{FIXED.rstrip()}\n```" in app.clipboard
        await pilot.press("enter", "j", "j")  # open: the cursor goes into the reply, to its code
        assert transcript.cursor == edit + 2
        await pilot.press("o")
        assert app.clipboard == FIXED.rstrip()
        # The tests table has the focus back: the copy keys copy a test again.
        await pilot.press("3", "c")
        assert app.clipboard == "add(1, 2)"


EDIT_LINE = "▸ [round 1] edit (feedback: test #3) · model call · 100 chars · 0.0 s"


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_a_model_call_is_one_line_that_opens_by_key_and_by_click(
    executor: Executor, calc: LoadedFunction, tmp_path: Path, size: tuple[int, int]
) -> None:
    """Each model call is one line (what it was, how long its reply, how long it took);
    Enter or a click opens it on the reply, whose code stays highlighted, and closes it.
    Snapshots of the transcript with every call closed, then one open."""
    failures: list[str] = []
    name = f"{size[0]}x{size[1]}"
    app = make_app(
        calc,
        add_script([fix(FIXED)], third="5"),
        executor,
        Settings(rounds=1),
        clock=lambda: FROZEN,
        stamp=lambda: "12:00:00",
    )
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: app.state.phase == "finished", "the end")
        await pilot.press("6")
        transcript = app.query_one(Transcript)
        await until(pilot, lambda: transcript.size.width > 0, "the transcript shown")

        def shown() -> list[str]:
            return [strip.text.rstrip() for strip in transcript.lines]

        calls = [line for line in shown() if " · model call · " in line]
        assert calls == [
            "▸ [round 0] test proposal 1: add(1, 2) · model call · 151 chars · 0.0 s",
            "▸ [round 0] test proposal 2: add(2, 0) · model call · 151 chars · 0.0 s",
            "▸ [round 0] test proposal 3: add(0, 5) · model call · 151 chars · 0.0 s",
            EDIT_LINE,
        ]
        assert not any("Hypothesis" in line or "return a + b" in line for line in shown())
        compare_snapshot(app, f"transcript_folded_{name}", failures, tmp_path)
        edit = next(i for i in transcript.heads if "] edit" in plain(transcript.entries[i]))
        await pilot.press("k", "k", "k", "k")  # from the last line up to the edit
        assert transcript.cursor == edit
        await pilot.press("enter")
        assert transcript.is_open(edit)
        lines = shown()
        at = lines.index(EDIT_LINE.replace("▸", "▾"))
        assert lines[at + 1 : at + 5] == [
            "  Here is the fix.",
            "  def add(a, b):",
            '      """Return the sum of a and b."""',
            "      return a + b",
        ]
        # The code is still highlighted as Python: the keyword has its own colour.
        y = transcript.starts[transcript.shown.index(edit + 2)]
        transcript.scroll_to(y=y, animate=False, immediate=True)
        strip = transcript.render_line(y - int(transcript.scroll_y))
        colours = {s.style.color for s in strip if s.text.strip() and s.style}
        assert len(colours) >= 2, colours  # "def", "add" and "(a, b):" are not one colour
        await pilot.pause()
        compare_snapshot(app, f"transcript_open_{name}", failures, tmp_path)
        await pilot.press("enter")
        assert not transcript.is_open(edit)
        assert EDIT_LINE in shown()
        assert not any("return a + b" in line for line in shown())
        # The mouse: a click on a call's line opens it, a second click closes it.
        first = min(transcript.heads)
        transcript.scroll_home(animate=False, immediate=True)
        await pilot.pause()
        line = transcript.starts[transcript.shown.index(first)]
        await pilot.click(transcript, offset=(10, line))
        await pilot.pause()
        assert transcript.is_open(first) and transcript.cursor == first
        assert "  ## Hypothesis" in shown()
        await pilot.click(transcript, offset=(10, line + 2))  # in the reply: the cursor
        await pilot.pause()
        assert transcript.is_open(first) and transcript.cursor == first + 1
        await pilot.click(transcript, offset=(10, line))
        await pilot.pause()
        assert not transcript.is_open(first) and "  ## Hypothesis" not in shown()
    assert not failures, "\n".join(failures)
