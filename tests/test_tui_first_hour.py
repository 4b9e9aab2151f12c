"""The app's rough edges a new user met in the first hour, each driven by a Pilot with the
scripted toy session of ``testkit.scripted_add`` (or a session without a model) and real
sandbox runs:

- ``t`` exports every test the table shows, the first tests that showed the bug included;
"""

from __future__ import annotations

from pathlib import Path

import pytest
from testkit.scripted_add import add_script, fix

from tests.test_tui import FIXED, SIZE, SOURCE, make_app, run_pytest, until
from utdebug.engine import Executor, Settings
from utdebug.workspace import LoadedFunction, load_function


@pytest.fixture
def calc(tmp_path: Path) -> LoadedFunction:
    path = tmp_path / "calc.py"
    path.write_text(SOURCE, encoding="utf-8")
    return load_function(path, "add")


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
