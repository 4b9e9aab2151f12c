"""The panels of the main screen. They only draw what the app's handlers give them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.syntax import Syntax
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.coordinate import Coordinate
from textual.widgets import DataTable, RichLog, Static, TabbedContent, TabPane
from textual.widgets.data_table import RowKey

from utdebug.engine.model import UnitTest
from utdebug.tui.format import safe_repr, shorten, unified_diff, vote_bar

SYNTAX_THEME = "monokai"
OUTCOME_STYLES = {"accepted": "bold green", "backtracked": "bold yellow", "given code": "bold"}
STATUS_STYLES = {
    "pass": "bold green",
    "fail": "bold red",
    "error": "bold red",
    "timeout": "bold yellow",
    "crash": "bold magenta",
}


class CodePanel(Vertical):
    """The task, the code in force (highlighted) and a Diff tab (given code → code in force)."""

    def compose(self) -> ComposeResult:
        with TabbedContent(id="code-tabs", initial="tab-code"):
            with TabPane("Code", id="tab-code"), VerticalScroll(id="code-scroll"):
                yield Static(id="task-text")
                yield Static(id="code-view")
            with TabPane("Diff", id="tab-diff"), VerticalScroll(id="diff-scroll"):
                yield Static(id="diff-view")

    def show_task(self, title: str, description: str) -> None:
        text = Text(title, style="bold")
        text.append("\n")
        text.append(description.strip() or "(no description)", style="italic")
        self.query_one("#task-text", Static).update(text)

    def show_code(self, code: str, given: str) -> None:
        self.query_one("#code-view", Static).update(
            Syntax(code, "python", theme=SYNTAX_THEME, line_numbers=True)
        )
        diff = unified_diff(given, code)
        view = self.query_one("#diff-view", Static)
        if diff:
            view.update(Syntax(diff, "diff", theme=SYNTAX_THEME))
        else:
            view.update(Text("No changes: the code in force is the given code.", style="dim"))


class TestsPanel(Vertical):
    """The generated (and a person's) tests with their votes and status on the code in force."""

    __test__ = False  # not a pytest class

    def compose(self) -> ComposeResult:
        yield Static("no tests yet", id="tests-summary")
        table: DataTable[str | Text] = DataTable(id="tests-table", cursor_type="row")
        yield table

    def on_mount(self) -> None:
        table = self.table
        for name, width in (
            ("id", 3),
            ("input", 16),
            ("expected", 12),
            ("status", 7),
            ("votes", 13),
            ("origin", 6),
        ):
            table.add_column(name, key=name, width=width)

    @property
    def table(self) -> DataTable[str | Text]:
        return self.query_one("#tests-table", DataTable)

    def show(self, tests: Sequence[UnitTest], statuses: dict[int, str], summary: str) -> None:
        self.query_one("#tests-summary", Static).update(summary)
        table = self.table
        keep = self.selected_id()
        table.clear()
        for t in tests:
            status = statuses.get(t.id, "")
            table.add_row(
                str(t.id),
                shorten(t.call, 40),
                shorten(safe_repr(t.expected), 24),
                Text(status, style=STATUS_STYLES.get(status, "")),
                vote_bar(t),
                t.origin,
                key=str(t.id),
            )
        if keep is not None and any(t.id == keep for t in tests):
            table.move_cursor(row=table.get_row_index(str(keep)), animate=False)

    def selected_id(self) -> int | None:
        table = self.table
        if table.row_count == 0:
            return None
        row = min(max(table.cursor_row, 0), table.row_count - 1)
        key: RowKey = table.coordinate_to_cell_key(Coordinate(row, 0)).row_key
        return int(key.value) if key.value is not None else None


@dataclass(frozen=True, slots=True)
class TimelineRow:
    round: str
    rates: str
    outcome: str
    reason: str


class RoundsTable(DataTable[str | Text]):
    """One row per round (and per change by a person): pass rate before → after, the outcome."""

    def on_mount(self) -> None:
        self.cursor_type = "none"
        for name, width in (("round", 5), ("pass rate", 11), ("outcome", 12), ("reason", 44)):
            self.add_column(name, key=name, width=width)

    def show(self, rows: Sequence[TimelineRow]) -> None:
        self.clear()
        for row in rows:
            self.add_row(
                row.round,
                row.rates,
                Text(row.outcome, style=OUTCOME_STYLES.get(row.outcome, "")),
                row.reason,
            )
        if rows:
            self.scroll_end(animate=False, immediate=True)


@dataclass(frozen=True, slots=True)
class CandidateRow:
    round: int
    row: int
    code_id: str
    pass_rate: str
    score: str
    mark: str


class CandidatesPanel(Vertical):
    """The ranked candidate edits of each round (``--candidates C`` with C > 1)."""

    def compose(self) -> ComposeResult:
        yield Static(id="candidates-hint")
        table: DataTable[str | Text] = DataTable(id="candidates-table", cursor_type="none")
        yield table

    def on_mount(self) -> None:
        table = self.table
        for name, width in (
            ("round", 5),
            ("row", 8),
            ("code id", 12),
            ("pass rate", 9),
            ("score", 12),
            ("", 18),
        ):
            table.add_column(name, key=name or "mark", width=width)

    @property
    def table(self) -> DataTable[str | Text]:
        return self.query_one("#candidates-table", DataTable)

    def show(self, rows: Sequence[CandidateRow], hint: str) -> None:
        self.query_one("#candidates-hint", Static).update(Text(hint, style="dim"))
        table = self.table
        table.clear()
        for c in rows:
            table.add_row(
                str(c.round),
                "in force" if c.row == 0 else f"#{c.row}",
                c.code_id,
                c.pass_rate,
                c.score,
                Text(c.mark, style="bold green" if "chosen" in c.mark else ""),
            )


class Transcript(RichLog):
    """The model's replies and the session's steps, appended as events arrive."""


class StatusBar(Static):
    """Model, state, round, tokens and cost, sandbox layers."""


class TooSmall(Static):
    """Shown instead of the panels when the terminal is smaller than the layout needs."""


class Frame(Vertical):
    """Everything above the footer: the panels (``#body``), or :class:`TooSmall` instead of
    them while the terminal is smaller than ``min_size`` (checked on every resize)."""

    def __init__(self, min_size: tuple[int, int], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.min_size = min_size

    def on_resize(self, event: events.Resize) -> None:
        self.fit()

    def fit(self) -> None:
        width, height = self.screen.size
        min_width, min_height = self.min_size
        small = width < min_width or height < min_height
        self.query_one("#body").display = not small
        message = self.query_one(TooSmall)
        message.display = small
        message.update(
            f"terminal too small ({min_width}×{min_height} needed, this one is "
            f"{width}×{height}): make the window bigger"
        )
