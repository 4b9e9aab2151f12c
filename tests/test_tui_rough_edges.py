"""The app's rough edges a new user hit (issue 29, items 3 and 6-8), each driven by a Pilot
with the scripted toy session of ``testkit.scripted_add`` and real sandbox runs:

- code that does not load stops the session after round 0 with one line, no model call;
- the rounds panel, the status bar and the transcript count the same rounds;
- after a roll back the status no longer says how the session had finished;
- a session taken back from its file says whether it had been paused or had finished, and
  its token counter goes on from where it was;
- an ``orig`` test's detail view offers no edit and no delete;
- Ctrl-C names the key that quits this app.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from testkit.app import SIZE, make_app, plain, summary, table_rows, timeline
from testkit.scripted_add import FIXED, SOURCE, add_script, fix
from testkit.wait import until

from utdebug.engine import Executor, Settings
from utdebug.tui.details import TestDetailScreen
from utdebug.tui.screens import EditExpectedScreen
from utdebug.tui.transcript import Transcript
from utdebug.workspace import LoadedFunction, load_function


@pytest.fixture
def calc(tmp_path: Path) -> LoadedFunction:
    path = tmp_path / "calc.py"
    path.write_text(SOURCE, encoding="utf-8")
    return load_function(path, "add")


LINE = (
    "its module does not load in the sandbox: "
    "ModuleNotFoundError: No module named 'not_a_real_package_xyz'"
)


async def test_code_that_does_not_load_stops_after_round_0_with_one_line(
    executor: Executor, tmp_path: Path
) -> None:
    path = tmp_path / "calc.py"
    path.write_text("import not_a_real_package_xyz\n\n\n" + SOURCE, encoding="utf-8")
    model = add_script([fix(FIXED)])
    app = make_app(load_function(path, "add"), model, executor, Settings(rounds=3))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.phase in ("finished", "error"), "the end")
        assert app.state.finish_reason == "does_not_load"
        assert model.requests == []  # not one model call on code that cannot run
        assert app._state_text() == f"stopped: {LINE}"
        assert LINE in app.notices
        assert timeline(app) == [["0", "—", "given code", "does not load"]]
        await pilot.press("r")  # going on is refused with the same line
        await pilot.pause()
        assert model.requests == []
        assert LINE in app.notices[-1]


async def test_the_rounds_panel_the_status_and_the_transcript_agree(
    executor: Executor, calc: LoadedFunction
) -> None:
    """Round 1's edit is accepted; round 2 builds new tests and they all pass: round 2 is a
    row of the rounds panel and the status's round, as in the transcript."""
    app = make_app(calc, add_script([fix(FIXED)], third="5"), executor, Settings(rounds=3))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.phase == "finished", "the end")
        said = [plain(e) for e in app.query_one(Transcript).entries]
        rounds = {int(m.group(1)) for line in said if (m := re.match(r"\[round (\d+)\]", line))}
        assert max(rounds) == 2
        assert [row[0] for row in timeline(app)] == ["0", "1", "2"]
        assert timeline(app)[2][2] == "new tests"
        assert app.state.rounds_done == 2
        assert "round 2 of 3" in [p.text for p in app.status_parts()]


async def test_after_a_roll_back_the_status_says_so(
    executor: Executor, calc: LoadedFunction
) -> None:
    app = make_app(calc, add_script([fix(FIXED)], third="5"), executor, Settings(rounds=2))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.phase == "finished", "the end")
        assert app._state_text() == "finished: every test passes"
        await pilot.press("b", "up", "enter")  # version 0: the given code
        await until(
            pilot, lambda: app.person_busy == 0 and app.state.code == SOURCE, "the roll back"
        )
        await until(pilot, lambda: app.state.passed is not None and app.state.passed < 3, "its run")
        assert "every test passes" not in app._state_text()
        assert app._state_text() == "rolled back to version 0 · r goes on from it"
        assert "1/3" in summary(app)


async def test_a_session_taken_back_says_how_it_was_left_and_keeps_its_tokens(
    executor: Executor, calc: LoadedFunction, tmp_path: Path
) -> None:
    saved = tmp_path / "runs" / "add.session.json"
    saved.parent.mkdir(parents=True)
    app = make_app(
        calc,
        add_script([fix(FIXED)], third="5"),
        executor,
        Settings(rounds=1),
        session_file=saved,
        step_first=True,
    )
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.phase == "paused", "the pause after round 0")
        assert app.session is not None
        tokens = app.session.usage.prompt_tokens
        assert tokens > 0
    paused = json.loads(saved.read_text())
    again = make_app(calc, add_script([fix(FIXED)], third="5"), executor, resume=paused)
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert again._state_text() == (
            "taken back from its file: paused after round 0 · r goes on, s runs one round"
        )
        assert again.session is not None
        assert again.session.usage.prompt_tokens == tokens  # not counted from 0 again
        await pilot.press("r")
        await until(pilot, lambda: again.state.phase == "finished", "the rest")
        assert again.session.usage.prompt_tokens > tokens
    app = make_app(
        calc, add_script([fix(FIXED)], third="5"), executor, Settings(rounds=1), session_file=saved
    )
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.phase == "finished", "the end")
    done = json.loads(saved.read_text())
    again = make_app(calc, add_script([]), executor, resume=done)
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert again._state_text() == "finished: every round ran (taken back) · r goes on"


async def test_an_orig_tests_detail_offers_no_edit_and_ctrl_c_names_q(
    executor: Executor, calc: LoadedFunction
) -> None:
    app = make_app(calc, add_script([fix(FIXED)], third="5"), executor, Settings(rounds=2))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.state.phase == "finished", "the end")
        await until(pilot, lambda: len(table_rows(app)) == 6, "the originals shown")
        assert table_rows(app)[0][5] == "orig"
        table = app.query_one("#tests-panel").table  # type: ignore[attr-defined]
        table.move_cursor(row=0, animate=False)
        await pilot.press("i")
        screen = app.screen
        assert isinstance(screen, TestDetailScreen) and not screen.editable
        hint = [str(s.content) for s in screen.query(".hint")]
        assert hint == ["a first test (orig): shown and run again, not edited · escape: close"]
        await pilot.press("e")  # not offered: nothing happens
        await pilot.pause()
        assert app.screen is screen and not isinstance(app.screen, EditExpectedScreen)
        await pilot.press("escape")
        table.move_cursor(row=3, animate=False)  # one of the session's tests
        await pilot.press("i")
        assert isinstance(app.screen, TestDetailScreen) and app.screen.editable
        await pilot.press("escape")
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.notices[-1] == "press q to quit (the session is saved as it goes)"
