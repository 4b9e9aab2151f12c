"""The interactive session on a method: tests with setup in the table and the detail view, a
person's edit of a test's setup, call and expected outcome, and a person's new test with setup."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import Input, Static, TextArea

from tests.scripted_add import fix
from tests.test_tui import SIZE, make_app, summary, table_rows, until
from utdebug.agents.scripted import ScriptedModel
from utdebug.engine import Executor, Settings
from utdebug.engine.program import Raises
from utdebug.tui.details import TestDetailScreen, detail_renderable
from utdebug.tui.screens import ProgramTestScreen
from utdebug.workspace import load_function

COUNTER = '''\
class Counter:
    """Counts up from a start."""

    def __init__(self, start=0):
        self.n = start

    def bump(self, by=1):
        self.n += by + 1  # bug: one too many
        return self.n
'''

FIXED = "class Counter:\n    def bump(self, by=1):\n        self.n += by\n        return self.n\n"


def reply(body: str) -> str:
    return f"Testing bump.\n```python\ndef test_bump():\n{body}```\n"


def model() -> ScriptedModel:
    return ScriptedModel(
        {
            "ut": [
                reply("    c = Counter()\n    assert c.bump() == 1\n"),
                reply("    c = Counter(5)\n    c.bump(2)\n    assert c.n == 7\n"),
                reply(
                    "    c = Counter()\n    with pytest.raises(TypeError):\n        c.bump('x')\n"
                ),
            ],
            "vote": [
                f"Output: ```{v}```" for v in ["1"] * 8 + ["7"] * 8 + ["raises TypeError"] * 8
            ],
            "debug": [fix(FIXED)],
        }
    )


async def test_a_method_session_with_a_persons_tests_with_setup(
    executor: Executor, tmp_path: Path
) -> None:
    path = tmp_path / "counter.py"
    path.write_text(COUNTER, encoding="utf-8")
    loaded = load_function(path, "Counter.bump")
    app = make_app(loaded, model(), executor, Settings(rounds=1))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.phase == "finished", "the session finished")
        rows = table_rows(app)
        assert [r[1] for r in rows] == ["c.bump()", "c.bump(2)", "c.bump('x')"]
        assert [r[2] for r in rows[:2]] == ["1", "7"] and rows[2][2].startswith("raises Type")
        assert "3/3" in summary(app)  # the fix merged into the class passes them all
        assert "        self.n += by\n" in app.code

        # the detail view shows setup, call, follow-up and expected outcome
        app.query_one("TestsPanel").table.move_cursor(row=1)  # type: ignore[attr-defined]
        await pilot.press("i")
        await until(pilot, lambda: isinstance(app.screen, TestDetailScreen), "the detail view")
        assert isinstance(app.screen, TestDetailScreen)
        text = "".join(
            s.text
            for s in app.console.render(
                detail_renderable(app.screen.detail), app.console.options.update_width(100)
            )
        )
        assert "setup" in text and "c = Counter(5)" in text
        assert "then" in text and "c.n" in text and "c.bump(2)" in text
        await pilot.press("escape")

        # a person edits the test: a new setup, call and expected value
        await pilot.press("e")
        assert isinstance(app.screen, ProgramTestScreen)
        screen: Any = app.screen
        assert screen.query_one("#setup-input", TextArea).text == "c = Counter(5)"
        screen.query_one("#setup-input", TextArea).text = "c = Counter(10)"
        screen.query_one("#expected-input", Input).value = "12"
        screen.action_save()
        await until(
            pilot, lambda: app.person_busy == 0 and app.tests[1].origin == "person", "the edit"
        )
        edited = app.tests[1]
        assert (edited.setup, edited.expected, edited.origin) == ("c = Counter(10)", 12, "person")
        assert table_rows(app)[1][3] == "pass"

        # a person adds a test with setup; a bad one first: the dialog says why
        await pilot.press("a")
        assert isinstance(app.screen, ProgramTestScreen)
        screen = app.screen
        screen.query_one("#setup-input", TextArea).text = "c = Counter(1)\nreturn c"
        screen.query_one("#call-input", Input).value = "c.bump(3)"
        screen.query_one("#expected-input", Input).value = "4"
        screen.action_save()
        await pilot.pause()
        assert "return" in str(screen.query_one("#error", Static).content)
        screen.query_one("#setup-input", TextArea).text = "c = Counter(1)"
        screen.query_one("#expected-input", Input).value = "raises ValueError"
        screen.action_save()
        await until(pilot, lambda: app.person_busy == 0 and app.total == 4, "the added test")
        added = app.tests[-1]
        assert (added.setup, added.call, added.expected) == (
            "c = Counter(1)",
            "c.bump(3)",
            Raises("ValueError"),
        )
        row = table_rows(app)[3]
        assert (row[1], row[2][:8], row[3]) == ("c.bump(3)", "raises V", "fail")
