"""The app's rough edges a new user met in the first hour, each driven by a Pilot with the
scripted toy session of ``testkit.scripted_add`` (or a session without a model) and real
sandbox runs:

- ``t`` exports every test the table shows, the first tests that showed the bug included;
- without a model, ``m`` (and ``a``) can say that an input should raise (``raises X``);
- in the dialog of a test with setup, enter on an empty setup line goes on to the call, as
  its hint says (the call and the expected value ended up in the setup);
- the add-test dialog's example has as many arguments as the function takes;
- after a person's edit makes a test fail, the status no longer says "every test passes";
- votes the session counted as one answer (``7`` and ``7.0``) are one answer on screen;
- without a model, an async function's refusal to synthesise inputs says what it is;
- with ``--model sim``, the Code view marks no blank line above the function as changed;
- whole words: ``test undone`` in the rounds panel, ``0/1 test passes``, ``q Quit`` in the
  80-column footer, the token count in the status bar at 100 columns;
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from testkit.app import (
    MEAN,
    SIZE,
    free_app,
    make_app,
    run_pytest,
    select_input,
    status,
    summary,
    timeline,
)
from testkit.scripted_add import FIXED, add_script, fix
from testkit.wait import until
from textual.app import App, ComposeResult
from textual.widgets import Input, Static
from textual.widgets._footer import FooterKey

from utdebug.agents.scripted import ScriptedModel
from utdebug.engine import Executor, Settings
from utdebug.engine.program import Raises
from utdebug.tui.details import TestDetail, detail_renderable
from utdebug.tui.format import StatusPart, fit_status
from utdebug.tui.screens import AddTestScreen, EditExpectedScreen, NewProgram, ProgramTestScreen
from utdebug.tui.widgets import TestsPanel
from utdebug.workspace import LoadedFunction, load_function


@pytest.fixture
def mean_fn(tmp_path: Path) -> LoadedFunction:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'stats'\n", encoding="utf-8")
    (tmp_path / "stats.py").write_text(MEAN, encoding="utf-8")
    return load_function(tmp_path / "stats.py", "mean")


async def test_export_holds_the_first_tests_that_showed_the_bug(
    executor: Executor, calc: LoadedFunction, tmp_path: Path
) -> None:
    """An accepted fix makes the session build new tests: the first ones (which failed on
    the given code) stay in the table as ``orig``, and ``t`` exports them too."""
    app = make_app(calc, add_script([fix(FIXED)], third="5"), executor, Settings(rounds=2))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.phase == "finished", "the end")
        assert [t.id for t in app.state.originals] == [1, 2, 3]
        await pilot.press("t")
        await pilot.pause()
        assert "exported 6 tests" in app.notices[-1], app.notices
    exported = (tmp_path / "test_add_utdebug.py").read_text(encoding="utf-8")
    assert "add(1, 2)" in exported and "add(3, 4)" in exported
    (tmp_path / "calc.py").write_text(FIXED, encoding="utf-8")
    passing = run_pytest(tmp_path / "test_add_utdebug.py", tmp_path)
    assert "6 passed" in passing.stdout, passing.stdout + passing.stderr


async def test_without_a_model_m_says_an_input_should_raise(
    executor: Executor, mean_fn: LoadedFunction
) -> None:
    """``m`` took only values ("not a value: syntax error" for ``raises IndexError``): now the
    input becomes a test that expects the exception (a test with no setup), which the code in
    force fails when it does not raise it."""
    app = free_app(mean_fn, executor)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.synth is not None, "inputs synthesised")
        row = select_input(app, "mean([1, 2, 3])")
        await pilot.press("m")
        await until(pilot, lambda: isinstance(app.screen, EditExpectedScreen), "dialog")
        app.screen.query_one("#expected-input", Input).value = "raises ValueError"
        await pilot.press("enter")
        await until(pilot, lambda: app.state.total == 1 and not app.person_busy, "run")
        (test,) = app.state.tests
        assert test.expected == Raises("ValueError") and test.call == "mean([1, 2, 3])"
        assert test.input_source == row.input_source and test.origin == "person"
        assert app.state.statuses[test.id] == "fail"  # the code returns 1.5: no ValueError
        assert app.state.synth_tests == {row.number: test.id}


class Host(App[None]):
    """An app that shows one dialog and keeps what it returned."""

    def __init__(self, dialog: Any) -> None:
        super().__init__()
        self.dialog, self.result, self.done = dialog, None, False

    def compose(self) -> ComposeResult:
        yield Static("host")

    def on_mount(self) -> None:
        def keep(result: Any) -> None:
            self.result, self.done = result, True

        self.push_screen(self.dialog, keep)


async def test_enter_on_an_empty_setup_line_goes_on_to_the_call() -> None:
    host = Host(ProgramTestScreen("Add a test of Cart.add", "Cart.add"))
    async with host.run_test(size=SIZE) as pilot:
        await pilot.pause()
        hint = str(host.screen.query_one(".hint", Static).content)
        assert hint.startswith("enter: next field / save"), hint
        await pilot.press(*"c = Cart()", "enter", "enter")  # a line, then an empty one
        assert host.focused is not None and host.focused.id == "call-input"
        await pilot.press(*"c.add(2)", "enter", *"raises KeyError", "enter", "enter")
        await pilot.pause()
    assert host.done and host.result == NewProgram("c = Cart()", "c.add(2)", Raises("KeyError"))


async def test_the_add_dialog_gives_as_many_arguments_as_the_function_takes() -> None:
    code = "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n"
    host = Host(AddTestScreen("clamp", code))
    async with host.run_test(size=SIZE) as pilot:
        await pilot.pause()
        args = host.screen.query_one("#args-input", Input)
        assert args.placeholder == "(1, 2, 3)  or  clamp(1, 2, 3)", args.placeholder
        await pilot.press(*"(5, 0, 3)", "enter", *"raises TypeError", "enter")
        await pilot.pause()
    assert host.done and host.result is not None
    assert (host.result.args, host.result.expected) == ((5, 0, 3), Raises("TypeError"))


async def test_after_an_edit_that_fails_a_test_the_status_says_how_many_pass_now(
    executor: Executor, calc: LoadedFunction
) -> None:
    app = make_app(calc, add_script([fix(FIXED)], third="5"), executor, Settings(rounds=2))
    async with app.run_test(size=(160, 40)) as pilot:  # the whole status line fits
        await until(pilot, lambda: app.state.phase == "finished", "the end")
        assert status(app).startswith("finished: every test passes")
        app.query_one(TestsPanel).table.move_cursor(row=3)  # add(3, 4), after the originals
        await pilot.press("e")
        await until(pilot, lambda: isinstance(app.screen, EditExpectedScreen), "the dialog")
        await pilot.press("8", "enter")
        await until(pilot, lambda: app.state.passed == 2 and not app.person_busy, "the rerun")
        assert "2/3 tests pass" in summary(app)
        shown = status(app)
        assert "every test passes" not in shown, shown
        assert shown.startswith("finished: every test passed; now 2/3 tests pass"), shown
        assert "2/3 tests pass now" in app.notices[-1], app.notices
        await pilot.press("u")  # undone: the rounds panel says it in whole words
        await until(pilot, lambda: app.state.passed == 3 and not app.person_busy, "the undo")
        assert [r[2] for r in timeline(app)][-2:] == ["test edited", "test undone"]
        assert status(app).startswith("finished: every test passes")


async def test_votes_counted_as_one_answer_are_one_answer_on_screen(
    executor: Executor, calc: LoadedFunction
) -> None:
    """Seven votes say ``7.0`` and one ``7``: one answer for the vote (share 100%), and one
    on screen (it was "7× 7.0, 1× 7" and "2 distinct answers")."""
    from testkit.scripted_add import ut, votes

    model = ScriptedModel(
        {"ut": [ut("add(3, 4)", "7")], "vote": votes(*["7.0"] * 7, "7"), "debug": []}
    )
    app = make_app(calc, model, executor, Settings(n=1, k=8, rounds=0))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.phase == "finished", "the end")
        (test,) = app.state.tests
        assert test.share == 1.0
        kept = [e.text for e in app.state.transcript if "kept #" in e.text]
        assert len(kept) == 1 and "(votes: 8× 7.0; share 100%)" in kept[0], kept
        detail = TestDetail(test, None, app.state.records.votes.get(test.id), [])
        assert detail.votes is not None and detail.votes.counts() == [("7.0", 8)]
        console = app.console
        text = "".join(
            seg.text
            for seg in console.render(detail_renderable(detail), console.options.update_width(100))
        )
        assert "8 votes, 1 distinct answer" in " ".join(text.split()), text


async def test_the_80_column_footer_keeps_quit(executor: Executor, calc: LoadedFunction) -> None:
    app = make_app(calc, add_script([]), executor, step_first=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.state.phase == "paused", "paused")
        keys = {k.key: k for k in app.screen.query(FooterKey)}
        for key in ("question_mark", "q"):
            region = keys[key].region
            assert region.width > 0 and region.right <= 80, (key, region)


def test_a_long_activity_gives_way_to_the_token_count() -> None:
    """At 100 columns a long "what the session does now" cut the token count off the status
    bar: now the activity is shortened first."""
    parts = [
        StatusPart(
            "⠋ round 1 · voting on median([4, 1, 3, 2, 9, 8, 7]) (8 votes): 3/8 answered · 41.2 s"
        ),
        StatusPart("round 1 of 2", "round 1/2"),
        StatusPart("qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b"),
        StatusPart("tokens 13.3k in / 2,410 out", "13.3k/2,410 tok"),
        StatusPart("cost unknown", None, optional=True),
        StatusPart("sandbox: ipc, scratch, tasks", "sandbox 3/3", optional=True),
    ]
    line = "".join(text for text, _ in fit_status(parts, 98))
    assert len(line) <= 98 and "13.3k/2,410 tok" in line, line
    assert line.startswith("⠋ round 1 · voting on median(") and "…" in line, line


def test_an_async_function_says_why_it_gets_no_synthesised_inputs(tmp_path: Path) -> None:
    """It said "only plain functions ... (this one's tests need a setup)" of an async function
    with a doctest, without saying what the function is."""
    from utdebug.debug_cmd import Prepared, _plan

    path = tmp_path / "fetch.py"
    path.write_text(
        'async def fetch(n):\n    """Twice n.\n\n    >>> asyncio.run(fetch(2))\n    4\n    """\n'
        "    return n * 3\n",
        encoding="utf-8",
    )
    loaded = load_function(path, "fetch")
    refusal = _plan(Prepared(loaded.to_task(), None, loaded, Settings())).refusal
    assert refusal is not None and "fetch is an async function" in refusal, refusal
    assert "its tests need a setup" in refusal and "this one" not in refusal


def test_a_simulated_edit_shows_no_changed_blank_lines_above_the_function() -> None:
    """A benchmark problem's code starts with a line break; the simulated model's edit merged
    into it was shown with three, and the Code view marked two empty lines as changed."""
    from utdebug.agents.edits import merge_edit
    from utdebug.agents.sim import shown_code, special_case
    from utdebug.tui.widgets import changed_lines

    given = "\ndef add(a, b):\n    return a - b\n"
    merged = merge_edit(given, special_case(given, "add", (0, 5), 5), "add")
    assert not isinstance(merged, str) and hasattr(merged, "code")
    shown, said = shown_code(merged.code, "add")
    assert said and shown == given
    assert changed_lines(given, shown) == []
