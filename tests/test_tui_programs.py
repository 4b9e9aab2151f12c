"""The interactive session on a method: tests with setup in the table and the detail view, a
person's edit of a test's setup, call and expected outcome, and a person's new test with setup."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from testkit.app import SIZE, make_app, summary, table_rows
from testkit.scripted_add import fix
from testkit.wait import until
from textual.widgets import Input, Static, TextArea

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
        await until(pilot, lambda: app.state.phase == "finished", "the session finished")
        rows = table_rows(app)
        assert [r[1] for r in rows] == ["c.bump()", "c.bump(2)", "c.bump('x')"]
        assert [r[2] for r in rows[:2]] == ["1", "7"] and rows[2][2].startswith("raises Type")
        assert "3/3" in summary(app)  # the fix merged into the class passes them all
        assert "        self.n += by\n" in app.state.code

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
            pilot,
            lambda: app.person_busy == 0 and app.state.tests[1].origin == "person",
            "the edit",
        )
        edited = app.state.tests[1]
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
        await until(pilot, lambda: app.person_busy == 0 and app.state.total == 4, "the added test")
        added = app.state.tests[-1]
        assert (added.setup, added.call, added.expected) == (
            "c = Counter(1)",
            "c.bump(3)",
            Raises("ValueError"),
        )
        row = table_rows(app)[3]
        assert (row[1], row[2][:8], row[3]) == ("c.bump(3)", "raises V", "fail")


POINT = """\
from dataclasses import dataclass


@dataclass
class Point:
    x: int
    y: int

    def moved(self, dx):
        return Point(self.x + dx + 1, self.y)  # bug: one too far
"""

POINT_FIXED = (
    "from dataclasses import dataclass\n\n\n@dataclass\nclass Point:\n    x: int\n    y: int\n\n"
    "    def moved(self, dx):\n        return Point(self.x + dx, self.y)\n"
)


async def test_object_results_voted_and_typed_as_constructor_calls(
    executor: Executor, tmp_path: Path
) -> None:
    path = tmp_path / "point.py"
    path.write_text(POINT, encoding="utf-8")
    loaded = load_function(path, "Point.moved")
    scripted = ScriptedModel(
        {
            "ut": [
                "```python\ndef test_moved():\n    p = Point(1, 2)\n"
                "    assert p.moved(3) == Point(4, 2)\n```\n"
            ],
            # the votes write the object as a constructor call, positionally or with keywords
            "vote": ["Output: ```Point(4, 2)```"] * 5 + ["Output: ```Point(x=4, y=2)```"] * 3,
            "debug": [fix(POINT_FIXED)],
        }
    )
    app = make_app(loaded, scripted, executor, Settings(n=1, rounds=1))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.phase == "finished", "the session finished")
        voted = app.state.tests[0]
        assert voted.call == "p.moved(3)" and voted.draws == 8 and voted.share == 1.0
        assert "1/1" in summary(app)  # the fixed method returns Point(4, 2)

        # a person types an object as the expected outcome of a new test
        await pilot.press("a")
        assert isinstance(app.screen, ProgramTestScreen)
        screen: Any = app.screen
        screen.query_one("#setup-input", TextArea).text = "p = Point(0, 0)"
        screen.query_one("#call-input", Input).value = "p.moved(2)"
        screen.query_one("#expected-input", Input).value = "Point(7, 0)"
        screen.action_save()
        await until(pilot, lambda: app.person_busy == 0 and app.state.total == 2, "the added test")
        assert table_rows(app)[1][3] == "fail"  # moved(2) gives Point(2, 0)

        # ... and corrects it in the edit dialog, with keywords this time
        app.query_one("TestsPanel").table.move_cursor(row=1)  # type: ignore[attr-defined]
        await pilot.press("e")
        assert isinstance(app.screen, ProgramTestScreen)
        screen = app.screen
        assert screen.query_one("#expected-input", Input).value == "Point(x=7, y=0)"
        screen.query_one("#expected-input", Input).value = "Point(x=2, y=0)"
        screen.action_save()
        await until(
            pilot, lambda: app.person_busy == 0 and table_rows(app)[1][3] == "pass", "the edit"
        )


def test_a_persons_expected_value_may_be_a_constructor_call() -> None:
    import datetime

    import pytest

    from utdebug.literals import LiteralError, canonical_repr
    from utdebug.tui.format import parse_expected
    from utdebug.tui.screens import parse_outcome

    assert canonical_repr(parse_expected("Point(4, 2)", POINT)) == "Point(x=4, y=2)"
    assert parse_expected("date(2024, 1, 2)") == datetime.date(2024, 1, 2)
    assert parse_expected("[1, (2, 'a')]") == [1, (2, "a")]
    assert parse_outcome("raises KeyError", POINT) == Raises("KeyError")
    assert canonical_repr(parse_outcome("[Point(x=1, y=0)]", POINT)) == "[Point(x=1, y=0)]"
    with pytest.raises(LiteralError):
        parse_expected("Point(4, 2)")  # positional fields need the class's definition
    with pytest.raises(LiteralError):
        parse_outcome("open('x').read()", POINT)  # never evaluated


async def test_a_saved_session_keeps_its_tests_with_setup(
    executor: Executor, tmp_path: Path
) -> None:
    import json

    from utdebug.literals import canonical_repr

    path = tmp_path / "counter.py"
    path.write_text(COUNTER, encoding="utf-8")
    loaded = load_function(path, "Counter.bump")
    saved = tmp_path / "runs" / "bump.session.json"
    saved.parent.mkdir(parents=True)
    app = make_app(loaded, model(), executor, Settings(rounds=1), session_file=saved)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.phase == "finished", "the session finished")
        before = [t.to_json() for t in app.state.tests]
        rows = table_rows(app)
    assert [t["setup"] for t in before] == ["c = Counter()", "c = Counter(5)", "c = Counter()"]
    state = json.loads(saved.read_text())
    again = make_app(loaded, model(), executor, Settings(rounds=1), resume=state)
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert [t.to_json() for t in again.state.tests] == before
        assert again.state.tests[1].then == "c.n" and again.state.tests[2].expected == Raises(
            "TypeError"
        )
        assert [canonical_repr(t.expected) for t in again.state.tests[:2]] == ["1", "7"]
        assert table_rows(again) == rows
