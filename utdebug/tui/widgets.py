"""The panels of the main screen. They only draw what the app's handlers give them."""

from __future__ import annotations

import ast
import difflib
from collections.abc import Sequence
from typing import Any, ClassVar

from rich.cells import cell_len
from rich.syntax import Syntax
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.coordinate import Coordinate
from textual.widgets import DataTable, Static, TabbedContent, TabPane
from textual.widgets.data_table import RowKey

from utdebug.engine.model import UnitTest
from utdebug.mutation import is_docstring
from utdebug.text_safety import visible
from utdebug.tui.format import (
    StatusPart,
    column_widths,
    fit_status,
    foreign,
    foreign_cell,
    origin_text,
    safe_repr,
    unified_diff,
    vote_cell,
)
from utdebug.tui.state import CandidateRow, TimelineRow
from utdebug.tui.synth import SynthRow

SYNTAX_THEME = "monokai"
OUTCOME_STYLES = {"accepted": "bold green", "backtracked": "bold yellow", "given code": "bold"}
STATUS_STYLES = {
    "pass": "bold green",
    "fail": "bold red",
    "error": "bold red",
    "timeout": "bold yellow",
    "crash": "bold magenta",
}


def code_view(code: str, lexer: str = "python", **options: Any) -> Syntax:
    """Code (a file's, a model's edit, a diff) highlighted, its control and bidirectional
    characters shown as escapes (:func:`~utdebug.text_safety.visible`)."""
    return Syntax(visible(code, keep="\n\t"), lexer, theme=SYNTAX_THEME, **options)


class CodePanel(Vertical):
    """The task, the code in force (highlighted) and a Diff tab (given code → code in force).

    When the code does not fit, the view scrolls to the lines that matter: the first line an
    edit changed, else the function being debugged (its ``def``), so that the function stays
    on screen at any terminal size."""

    def compose(self) -> ComposeResult:
        with TabbedContent(id="code-tabs", initial="tab-code"):
            with TabPane("Code", id="tab-code"), VerticalScroll(id="code-scroll"):
                yield Static(id="task-text")
                yield Static(id="code-view")
            with TabPane("Diff", id="tab-diff"), VerticalScroll(id="diff-scroll"):
                yield Static(id="diff-view")

    def on_mount(self) -> None:
        self._shown: tuple[str, str] | None = None
        self._focus = (1, 1)
        self._diff_focus = 0
        self._tries = 0

    def show_task(self, title: str, description: str) -> None:
        """The task line: the title and the description's first line (a docstring's summary;
        its examples and the rest are the model's to read, not the line's)."""
        text = foreign(title, style="bold")
        text.append("\n")
        lines = [line.strip() for line in description.strip().splitlines() if line.strip()]
        first = lines[0] + (" …" if len(lines) > 1 else "") if lines else "(no description)"
        text.append(foreign(first, style="italic"))
        self.query_one("#task-text", Static).update(text)
        self.border_title = foreign(title)

    def show_code(self, code: str, given: str, entry_point: str) -> None:
        if self._shown == (code, given):
            return
        self._shown = (code, given)
        changed = changed_lines(given, code)
        self.query_one("#code-view", Static).update(
            code_view(code, line_numbers=True, highlight_lines=set(changed))
        )
        diff = unified_diff(given, code)
        view = self.query_one("#diff-view", Static)
        if diff:
            view.update(code_view(diff, "diff"))
        else:
            view.update(Text("No changes: the code in force is the given code.", style="dim"))
        self._focus = (changed[0], changed[-1]) if changed else function_span(code, entry_point)
        self._diff_focus = first_change(diff)
        self._tries = 0
        self.call_after_refresh(self.scroll_to_focus)

    def scroll_to_focus(self) -> None:
        """Bring the lines that matter into the code view: the lines an edit changed, else
        the whole function (from its ``def`` when it is longer than the view), with a line
        of context above when there is room; and the Diff tab to its first changed line.
        Until the code view has taken the new code's height (a scroll past its old end
        would stop short of the lines), it tries again a moment later."""
        scroll = self.query_one("#code-scroll", VerticalScroll)
        task = self.query_one("#task-text", Static)
        above = task.outer_size.height if task.display else 0
        first, last = self._focus
        view = scroll.size.height
        top = first - 1  # 0-based row of the first line that matters
        spare = view - (last - first + 1)
        if spare > 0:
            top -= min(spare, 1 if spare < 4 else 2)
        y = above + max(top, 0)
        scroll.scroll_to(y=y, animate=False, immediate=True)
        diff = self.query_one("#diff-scroll", VerticalScroll)
        diff.scroll_to(y=self._diff_focus, animate=False, immediate=True)
        lines = len(self._shown[0].splitlines()) if self._shown else 0
        laid_out = scroll.virtual_size.height >= above + lines
        if (not laid_out or scroll.scroll_y < min(y, scroll.max_scroll_y)) and self._tries < 50:
            self._tries += 1
            self.set_timer(0.02, self.scroll_to_focus)

    def on_resize(self, event: events.Resize) -> None:
        self._tries = 0
        self.call_after_refresh(self.scroll_to_focus)

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self._tries = 0  # a hidden view had no height to scroll in
        self.call_after_refresh(self.scroll_to_focus)


def first_change(diff: str) -> int:
    """The 0-based row of the first ``-`` or ``+`` line of a unified diff, less a row of
    context (0 when there is none)."""
    for i, line in enumerate(diff.splitlines()):
        if line.startswith(("-", "+")) and not line.startswith(("---", "+++")):
            return max(i - 1, 0)
    return 0


def docstring_lines(code: str, entry_point: str) -> set[int]:
    """The lines (1-based) of ``entry_point``'s docstring: prose that may wrap or be cut,
    unlike its code."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == entry_point:
            body = node.body
            if body and is_docstring(body[0]):
                return set(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
            return set()
    return set()


def function_span(code: str, entry_point: str) -> tuple[int, int]:
    """The first (its first decorator) and last line of ``def entry_point`` in ``code``;
    ``(1, 1)`` when it is not found."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return 1, 1
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == entry_point:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            return first, node.end_lineno or first
    return 1, 1


def changed_lines(given: str, code: str) -> list[int]:
    """Lines of ``code`` (1-based) that differ from ``given``."""
    matcher = difflib.SequenceMatcher(None, given.splitlines(), code.splitlines(), autojunk=False)
    out: list[int] = []
    for op, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if op in ("replace", "insert"):
            out += range(j1 + 1, j2 + 1)
    return out


CODE_GUTTER = 10
"""Cells around a code line in the code panel: line number, marker, borders, scrollbar."""
SIDE_INPUT, SIDE_EXPECTED = 26, 12
"""The input and expected columns' widths side by side: a short call is whole there."""


def side_by_side_width(code: str, entry_point: str) -> tuple[int, int]:
    """(the terminal width from which the code and the tests stand side by side, the code
    panel's width there): the function's widest line whole beside a tests table whose input
    and expected columns hold a short call whole; narrower terminals stack them."""
    first, last = function_span(code, entry_point)
    prose = docstring_lines(code, entry_point)
    lines = [
        line
        for i, line in enumerate(code.splitlines()[first - 1 : last], start=first)
        if i not in prose
    ] or [""]
    code_width = max(40, max(cell_len(line.expandtabs()) for line in lines) + CODE_GUTTER)
    fixed = sum(w for _, w in TEST_COLUMNS_FIXED)
    columns = len(TEST_COLUMNS_FIXED) + len(TEST_COLUMNS_FLEX)
    tests_width = fixed + SIDE_INPUT + SIDE_EXPECTED + 2 * columns + SCROLLBAR + 2
    return code_width + tests_width, code_width


TEST_COLUMNS_FIXED = (("id", 3), ("status", 7), ("votes", 13), ("origin", 6))
TEST_COLUMNS_FLEX = (("input", 3.0, 10), ("expected", 2.0, 8))
TEST_COLUMN_ORDER = ("id", "input", "expected", "status", "votes", "origin")
SCROLLBAR = 1
ORIGINAL_MARK, ORIGINAL_STYLE = "orig", "bold italic yellow"
"""The origin cell of a first test that new tests replaced (the summary line says what it
means: ``orig: the first tests, 3/3 pass``)."""


class FittedTable(Vertical):
    """A panel around one row-cursor table whose columns share the width the terminal gives:
    the fixed ones as they are, the flexible ones by weight (:func:`column_widths`); a resize
    that changes the widths remakes the columns and fills the rows again (``_fill``)."""

    HINT_ID: ClassVar[str]
    HINT: ClassVar[str]
    """The line over the table until there is something to show."""
    TABLE_ID: ClassVar[str]
    COLUMNS_FIXED: ClassVar[tuple[tuple[str, int], ...]]
    COLUMNS_FLEX: ClassVar[tuple[tuple[str, float, int], ...]]
    COLUMN_ORDER: ClassVar[tuple[str, ...]]

    def compose(self) -> ComposeResult:
        yield Static(self.HINT, id=self.HINT_ID)
        table: DataTable[str | Text] = DataTable(id=self.TABLE_ID, cursor_type="row")
        yield table

    def on_mount(self) -> None:
        self._widths: dict[str, int] = {}
        self._fit_columns()

    @property
    def table(self) -> DataTable[str | Text]:
        return self.query_one(f"#{self.TABLE_ID}", DataTable)

    def on_resize(self, event: events.Resize) -> None:
        if self._fit_columns():
            self._fill()

    def _fit_columns(self) -> bool:
        """(Re)make the columns for the table's width; whether they changed."""
        width = self.table.size.width or self.size.width or 80
        widths = column_widths(width - SCROLLBAR, self.COLUMNS_FIXED, self.COLUMNS_FLEX)
        if widths == self._widths:
            return False
        self._widths = widths
        table = self.table
        table.clear(columns=True)
        for name in self.COLUMN_ORDER:
            table.add_column(name, key=name, width=widths[name])
        return True

    def _fill(self) -> None:
        raise NotImplementedError

    def _selected_key(self) -> int | None:
        """The row under the cursor, by its key (an int: a test's id, an input's number)."""
        table = self.table
        if table.row_count == 0:
            return None
        row = min(max(table.cursor_row, 0), table.row_count - 1)
        key: RowKey = table.coordinate_to_cell_key(Coordinate(row, 0)).row_key
        return int(key.value) if key.value is not None else None


class TestsPanel(FittedTable):
    """The generated (and a person's) tests with their votes and status on the code in force.

    The input and expected columns share the width the terminal gives (an ellipsis marks a
    cut value: Enter opens the whole test)."""

    __test__ = False  # not a pytest class

    HINT_ID = "tests-summary"
    HINT = "no tests yet"
    TABLE_ID = "tests-table"
    COLUMNS_FIXED = TEST_COLUMNS_FIXED
    COLUMNS_FLEX = TEST_COLUMNS_FLEX
    COLUMN_ORDER = TEST_COLUMN_ORDER

    def on_mount(self) -> None:
        self._tests: list[UnitTest] = []
        self._summary = "no tests yet"
        self.query_text = ""
        """The search (``/``): only the tests that hold it are shown."""
        self._statuses: dict[int, str] = {}
        self._originals: set[int] = set()
        super().on_mount()

    def show(
        self,
        tests: Sequence[UnitTest],
        statuses: dict[int, str],
        summary: str,
        originals: Sequence[UnitTest] = (),
    ) -> None:
        """``tests`` are the session's; ``originals`` the first tests that new ones replaced
        (listed first, their origin ``orig``)."""
        self._summary = summary
        self._originals = {t.id for t in originals}
        self._tests, self._statuses = [*originals, *tests], dict(statuses)
        self._fill()

    def search(self, query: str) -> None:
        """Show only the tests whose call or expected value holds ``query`` (``""``: all)."""
        self.query_text = query
        self._fill()

    def matches(self, t: UnitTest) -> bool:
        q = self.query_text.casefold()
        return not q or q in t.call.casefold() or q in safe_repr(t.expected).casefold()

    def _fill(self) -> None:
        table = self.table
        keep = self.selected_id()
        table.clear()
        w = self._widths
        shown = [t for t in self._tests if self.matches(t)]
        summary = self._summary
        if self.query_text:
            summary += f" · /{self.query_text}: {len(shown)} of {len(self._tests)} shown"
        self.query_one("#tests-summary", Static).update(foreign(summary))
        for t in shown:
            status = self._statuses.get(t.id, "")
            original = t.id in self._originals
            table.add_row(
                Text(str(t.id), style=ORIGINAL_STYLE) if original else str(t.id),
                foreign_cell(t.call, w["input"]),
                foreign_cell(safe_repr(t.expected), w["expected"]),
                Text(status, style=STATUS_STYLES.get(status, "")),
                vote_cell(t),
                Text(ORIGINAL_MARK, style=ORIGINAL_STYLE) if original else origin_text(t),
                key=str(t.id),
            )
        if keep is not None and any(t.id == keep for t in shown):
            table.move_cursor(row=table.get_row_index(str(keep)), animate=False)

    def selected_id(self) -> int | None:
        return self._selected_key()


INPUT_COLUMNS_FIXED = (("#", 3), ("source", 10), ("test", 6))
INPUT_COLUMNS_FLEX = (("input", 3.0, 10), ("outcome", 2.0, 10))
INPUT_COLUMN_ORDER = ("#", "input", "outcome", "source", "test")
OUTCOME_ERROR_STYLE = "bold red"


class InputsPanel(FittedTable):
    """A session without a model: the synthesised inputs, smallest first, with what the code
    in force does on each (a value, ``raises X``) and the test a person made of it."""

    HINT_ID = "inputs-hint"
    HINT = "no synthesised inputs yet"
    TABLE_ID = "inputs-table"
    COLUMNS_FIXED = INPUT_COLUMNS_FIXED
    COLUMNS_FLEX = INPUT_COLUMNS_FLEX
    COLUMN_ORDER = INPUT_COLUMN_ORDER

    def on_mount(self) -> None:
        self._rows: list[SynthRow] = []
        self._made: dict[int, int] = {}
        super().on_mount()

    def show(self, hint: str, rows: Sequence[SynthRow], made: dict[int, int]) -> None:
        """``made``: the row number -> the test a person made of it."""
        self.query_one("#inputs-hint", Static).update(foreign(hint, style="dim"))
        self._rows, self._made = list(rows), dict(made)
        self._fill()

    def _fill(self) -> None:
        table = self.table
        keep = self.selected_number()
        table.clear()
        w = self._widths
        for r in self._rows:
            style = "" if r.status == "ok" else OUTCOME_ERROR_STYLE
            made = self._made.get(r.number)
            table.add_row(
                str(r.number),
                foreign_cell(r.call, w["input"]),
                foreign_cell(r.outcome, w["outcome"], style),
                r.source,
                f"#{made}" if made is not None else "",
                key=str(r.number),
            )
        if keep is not None and any(r.number == keep for r in self._rows):
            table.move_cursor(row=table.get_row_index(str(keep)), animate=False)

    def selected_number(self) -> int | None:
        return self._selected_key()

    def selected(self) -> SynthRow | None:
        number = self.selected_number()
        return next((r for r in self._rows if r.number == number), None)


ROUND_COLUMNS_FIXED = (("round", 5), ("pass rate", 11), ("outcome", 12))
ROUND_COLUMNS_FLEX = (("reason", 1.0, 20),)


class RoundsTable(DataTable[str | Text]):
    """One row per round (and per change by a person): pass rate before → after, the outcome;
    the reason takes the width that is left."""

    def on_mount(self) -> None:
        self.cursor_type = "none"
        self._rows: list[TimelineRow] = []
        self._widths: dict[str, int] = {}
        self._fit_columns()

    def on_resize(self, event: events.Resize) -> None:
        if self._fit_columns():
            self.show(self._rows)

    def _fit_columns(self) -> bool:
        width = self.size.width or 80
        widths = column_widths(width - SCROLLBAR, ROUND_COLUMNS_FIXED, ROUND_COLUMNS_FLEX)
        if widths == self._widths:
            return False
        self._widths = widths
        self.clear(columns=True)
        for name in ("round", "pass rate", "outcome", "reason"):
            self.add_column(name, key=name, width=widths[name])
        return True

    def show(self, rows: Sequence[TimelineRow]) -> None:
        self._rows = list(rows)
        self.clear()
        for row in rows:
            self.add_row(
                row.round,
                row.rates,
                Text(row.outcome, style=OUTCOME_STYLES.get(row.outcome, "")),
                foreign_cell(row.reason, self._widths["reason"]),
            )
        if rows:  # follow the newest row once the table knows its new height
            self.call_after_refresh(self.scroll_end, animate=False, immediate=True)


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


class StatusBar(Static):
    """State, round, model, tokens, cost, sandbox: one line that always fits (long forms when
    there is room, short ones otherwise; ``I`` shows the details)."""

    def on_mount(self) -> None:
        self.parts: list[StatusPart] = []

    def show(self, parts: Sequence[StatusPart]) -> None:
        self.parts = list(parts)
        self.refresh()

    def render(self) -> Text:
        width = max(self.content_size.width, 1)
        text = Text(no_wrap=True, overflow="ellipsis")
        parts = [
            StatusPart(visible(p.text), visible(p.short) if p.short else p.short, p.style)
            for p in self.parts
        ]
        for piece, style in fit_status(parts, width):
            text.append(piece, style=style)
        return text

    @property
    def plain(self) -> str:
        """The line as shown now (tests read it)."""
        return self.render().plain


class TooSmall(Static):
    """Shown instead of the panels when the terminal is smaller than the layout needs."""


class Frame(Vertical):
    """Everything above the footer: the panels (``#body``), or :class:`TooSmall` instead of
    them while the terminal is smaller than ``min_size`` (checked on every resize)."""

    def __init__(
        self,
        min_size: tuple[int, int],
        *,
        narrow_width: int = 0,
        short_height: int = 0,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.min_size = min_size
        self.narrow_width = narrow_width
        """Under this width the frame has the class ``-narrow`` (the app sets it from what
        side by side needs: :func:`side_by_side_width`)."""
        self.code_width: int | None = None
        """The code panel's width side by side (``None``: the CSS decides)."""
        self.short_height = short_height
        """Under this height the frame has the class ``-short``."""

    def on_resize(self, event: events.Resize) -> None:
        self.fit()

    def fit(self) -> None:
        width, height = self.screen.size
        min_width, min_height = self.min_size
        small = width < min_width or height < min_height
        # The app's CSS lays the panels out by these classes (stacked, shrunk).
        narrow = width < self.narrow_width
        self.set_class(narrow, "-narrow")
        if self.code_width is not None:  # side by side, the tests get what they need
            panel = self.query_one("#code-panel")
            tests = self.narrow_width - self.code_width
            panel.styles.width = "1fr" if narrow else max(self.code_width, width - tests)
        self.set_class(height < self.short_height, "-short")
        self.query_one("#body").display = not small
        message = self.query_one(TooSmall)
        message.display = small
        message.update(
            f"terminal too small ({min_width}×{min_height} needed, this one is "
            f"{width}×{height}): make the window bigger"
        )
