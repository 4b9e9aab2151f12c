"""Driving the app in tests: building a ``DebugApp`` for a loaded function (with a model, or
without one) and reading its tables (``testkit.wait.until`` waits while it works)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from rich.syntax import Syntax
from textual.widgets import DataTable, Static

from utdebug.engine import Executor, Settings
from utdebug.tui.app import DebugApp
from utdebug.tui.config import AppConfig, NoModel
from utdebug.tui.synth import plan_for
from utdebug.tui.widgets import InputsPanel, RoundsTable, StatusBar, TestsPanel
from utdebug.workspace import LoadedFunction

SIZE = (120, 40)


def make_app(
    loaded: LoadedFunction,
    model: Any,
    executor: Executor,
    settings: Settings | None = None,
    **kw: Any,
) -> DebugApp:
    """The app on ``loaded`` with ``model`` (two rounds unless told), no animation, one theme."""
    app = DebugApp(
        loaded.to_task(),
        model,
        executor,
        settings or Settings(rounds=2),
        AppConfig(loaded=loaded, sandbox_layers=("test-layer",), **kw),
    )
    app.animation_level = "none"  # no tab-underline animation half way in a snapshot
    app.theme = "textual-dark"  # whatever TEXTUAL_THEME says
    return app


def free_app(loaded: LoadedFunction, executor: Executor, **kw: Any) -> DebugApp:
    """The app without a model: it synthesises inputs from the function's own project."""
    task = loaded.to_task()
    plan = plan_for(task.entry_point, path=Path(loaded.path), project=Path(loaded.path).parent)
    app = DebugApp(
        task,
        NoModel(),
        executor,
        Settings(rounds=2),
        AppConfig(loaded=loaded, synth=plan, **kw),
    )
    app.animation_level = "none"
    return app


def status(app: DebugApp) -> str:
    return app.query_one(StatusBar).plain


def summary(app: DebugApp) -> str:
    return str(app.query_one("#tests-summary", Static).content)


def rows(table: DataTable[Any]) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def table_rows(app: DebugApp) -> list[list[str]]:
    """id, input, expected, status, votes, origin."""
    return rows(app.query_one(TestsPanel).table)


def inputs(app: DebugApp) -> list[list[str]]:
    """The synthesised inputs table, as shown."""
    return rows(app.query_one(InputsPanel).table)


def timeline(app: DebugApp) -> list[list[str]]:
    """round, pass rate, outcome, reason."""
    return rows(app.query_one(RoundsTable))


def plain(entry: Any) -> str:
    """A transcript entry's text (a code block: its code)."""
    return str(entry.code if isinstance(entry, Syntax) else entry.plain)


def select_input(app: DebugApp, call: str) -> Any:
    """Put the inputs table's cursor on the row of ``call``; return that synthesised row."""
    assert app.state.synth is not None
    row = next(r for r in app.state.synth.rows if r.call == call)
    table = app.query_one(InputsPanel).table
    table.move_cursor(row=table.get_row_index(str(row.number)), animate=False)
    return row


MEAN = '''def mean(xs):
    """The mean of the numbers xs.

    >>> mean([1, 2, 3])
    2.0
    """
    return sum(xs) / (len(xs) + 1)
'''


def run_pytest(test_file: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", str(test_file), "-q", "-p", "no:cacheprovider"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
