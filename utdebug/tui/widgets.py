"""The panels of the main screen. They only draw what the app's handlers give them."""

from __future__ import annotations

import ast
import bisect
import difflib
from collections.abc import Sequence
from typing import ClassVar

from rich.cells import cell_len
from rich.console import RenderableType
from rich.segment import Segment
from rich.style import Style
from rich.syntax import Syntax
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.coordinate import Coordinate
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import DataTable, Static, TabbedContent, TabPane
from textual.widgets.data_table import RowKey

from utdebug.engine.model import UnitTest
from utdebug.tui.format import (
    StatusPart,
    column_widths,
    fit_status,
    origin_text,
    safe_repr,
    shorten,
    unified_diff,
    vote_cell,
)
from utdebug.tui.state import CandidateRow, Entry, TimelineRow

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
        text = Text(title, style="bold")
        text.append("\n")
        lines = [line.strip() for line in description.strip().splitlines() if line.strip()]
        first = lines[0] + (" …" if len(lines) > 1 else "") if lines else "(no description)"
        text.append(first, style="italic")
        self.query_one("#task-text", Static).update(text)
        self.border_title = title

    def show_code(self, code: str, given: str, entry_point: str) -> None:
        if self._shown == (code, given):
            return
        self._shown = (code, given)
        changed = changed_lines(given, code)
        self.query_one("#code-view", Static).update(
            Syntax(
                code,
                "python",
                theme=SYNTAX_THEME,
                line_numbers=True,
                highlight_lines=set(changed),
            )
        )
        diff = unified_diff(given, code)
        view = self.query_one("#diff-view", Static)
        if diff:
            view.update(Syntax(diff, "diff", theme=SYNTAX_THEME))
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
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
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


class TestsPanel(Vertical):
    """The generated (and a person's) tests with their votes and status on the code in force.

    The input and expected columns share the width the terminal gives (an ellipsis marks a
    cut value: Enter opens the whole test)."""

    __test__ = False  # not a pytest class

    def compose(self) -> ComposeResult:
        yield Static("no tests yet", id="tests-summary")
        table: DataTable[str | Text] = DataTable(id="tests-table", cursor_type="row")
        yield table

    def on_mount(self) -> None:
        self._tests: list[UnitTest] = []
        self._summary = "no tests yet"
        self.query_text = ""
        """The search (``/``): only the tests that hold it are shown."""
        self._statuses: dict[int, str] = {}
        self._originals: set[int] = set()
        self._widths: dict[str, int] = {}
        self._fit_columns()

    @property
    def table(self) -> DataTable[str | Text]:
        return self.query_one("#tests-table", DataTable)

    def on_resize(self, event: events.Resize) -> None:
        if self._fit_columns():
            self._fill()

    def _fit_columns(self) -> bool:
        """(Re)make the columns for the table's width; whether they changed."""
        width = self.table.size.width or self.size.width or 80
        widths = column_widths(width - SCROLLBAR, TEST_COLUMNS_FIXED, TEST_COLUMNS_FLEX)
        if widths == self._widths:
            return False
        self._widths = widths
        table = self.table
        table.clear(columns=True)
        for name in TEST_COLUMN_ORDER:
            table.add_column(name, key=name, width=widths[name])
        return True

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
        self.query_one("#tests-summary", Static).update(summary)
        for t in shown:
            status = self._statuses.get(t.id, "")
            original = t.id in self._originals
            table.add_row(
                Text(str(t.id), style=ORIGINAL_STYLE) if original else str(t.id),
                shorten(t.call, w["input"]),
                shorten(safe_repr(t.expected), w["expected"]),
                Text(status, style=STATUS_STYLES.get(status, "")),
                vote_cell(t),
                Text(ORIGINAL_MARK, style=ORIGINAL_STYLE) if original else origin_text(t),
                key=str(t.id),
            )
        if keep is not None and any(t.id == keep for t in shown):
            table.move_cursor(row=table.get_row_index(str(keep)), animate=False)

    def selected_id(self) -> int | None:
        table = self.table
        if table.row_count == 0:
            return None
        row = min(max(table.cursor_row, 0), table.row_count - 1)
        key: RowKey = table.coordinate_to_cell_key(Coordinate(row, 0)).row_key
        return int(key.value) if key.value is not None else None


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
                shorten(row.reason, self._widths["reason"]),
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


class Transcript(ScrollView, can_focus=True):
    """The session's steps and the model's replies, appended as events arrive, with a cursor.

    Each entry is a line (or a wrapped paragraph) or a block of code. A model call is a *fold*:
    its header (``[round 0] test proposal 1: add(1, 2) · model call · 412 chars · 1.2 s``) is
    one line, the reply's entries (its prose, its code highlighted) are its body, shown under
    the header while the fold is open. The cursor is on one visible entry: up/down (j/k) move
    it, Enter (or a click on a header) opens and closes a fold; the app copies the entry
    under the cursor (:meth:`cursor_text`).

    What was written is kept and laid out again for the width the widget has whenever that
    width changes: an entry written while its tab was hidden (no width yet) wraps at the width
    it gets when shown, not at a guess."""

    DEFAULT_CSS = """
    Transcript {
        background: $surface;
        color: $foreground;
        overflow-y: scroll;
        &:focus { background-tint: $foreground 5%; }
    }
    Transcript > .transcript--cursor { background: $foreground 10%; }
    Transcript:focus > .transcript--cursor { background: $foreground 22%; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {"transcript--cursor"}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("home", "cursor_to(0)", "First", show=False),
        Binding("end", "cursor_to(-1)", "Last", show=False),
        Binding("enter", "toggle_fold", "Open/close", show=False),
    ]

    BODY_INDENT = 2
    """Cells a fold's body is indented by, under its header."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.entries: list[RenderableType] = []
        """Everything written, in order (a fold's header, then its body's entries)."""
        self.owner: list[int | None] = []
        """For each entry, the header of the fold whose body holds it (``None``: none)."""
        self.heads: set[int] = set()
        """The entries that are a fold's header."""
        self.opened: set[int] = set()
        """The folds shown open (by their header)."""
        self.cursor: int | None = None
        """The entry under the cursor (a visible one); ``None`` before the first entry."""
        self.found: int | None = None
        """The entry the last search moved to."""
        self._width = 0
        """The width the entries are laid out at (0: not laid out yet)."""
        self._strips: dict[tuple[int, bool], list[Strip]] = {}
        """Entry (and, for a header, open or not) -> its lines at :attr:`_width`."""
        self.shown: list[int] = []
        """The entries shown, in order (a closed fold's body is not)."""
        self.starts: list[int] = []
        """The first line of each visible entry."""
        self._height = 0

    # -- writing ----------------------------------------------------------------------------

    def add(self, entry: RenderableType) -> int:
        """Append ``entry`` (laid out now if the width is known, else once it is); its index."""
        return self._append(entry, None)

    def add_fold(self, header: RenderableType, body: Sequence[RenderableType]) -> int:
        """Append a fold, closed: ``header`` (one line while closed) over ``body``; the
        header's index."""
        head = self._append(header, None, head=True)
        for entry in body:
            self._append(entry, head)
        return head

    def add_entries(self, entries: Sequence[Entry]) -> None:
        """Append the state's transcript entries (a ``body`` entry goes in the last fold)."""
        for e in entries:
            if e.kind == "body" and self.heads:
                self._append(entry_renderable(e), max(self.heads))
            else:
                self._append(entry_renderable(e), None, head=e.kind == "head")

    def _append(self, entry: RenderableType, parent: int | None, head: bool = False) -> int:
        index = len(self.entries)
        at_last = self.cursor is None or self.cursor == self._last_shown()
        follow = self._width == 0 or self.is_vertical_scroll_end
        self.entries.append(entry)
        self.owner.append(parent)
        if head:
            self.heads.add(index)
        showing = parent is None or parent in self.opened
        if showing and at_last:
            self.cursor = index
        if self._width and showing:
            self.starts.append(self._height)
            self.shown.append(index)
            self._height += len(self._lines_of(index))
            self.virtual_size = Size(self._width, self._height)
            if follow:
                self.scroll_end(animate=False, immediate=True, x_axis=False)
            self.refresh()
        elif not self._width:
            self.call_after_refresh(self.sync)
        return index

    def _last_shown(self) -> int | None:
        """The last entry shown (laid out or not)."""
        for i in range(len(self.entries) - 1, -1, -1):
            head = self.owner[i]
            if head is None or head in self.opened:
                return i
        return None

    # -- laying out -------------------------------------------------------------------------

    def sync(self) -> None:
        """Lay the entries out for the width there is now (all again when it changed)."""
        width = self.scrollable_content_region.width
        if width <= 0:
            return
        if width != self._width:
            follow = self._width == 0 or self.is_vertical_scroll_end
            self._width = width
            self._strips.clear()
            self._layout()
            if follow:
                self.scroll_end(animate=False, immediate=True, x_axis=False)

    def _layout(self) -> None:
        """Which entries are shown and where each starts (the fold state changed)."""
        self.shown = [i for i, p in enumerate(self.owner) if p is None or p in self.opened]
        self.starts = []
        height = 0
        if self._width:
            for i in self.shown:
                self.starts.append(height)
                height += len(self._lines_of(i))
        self._height = height
        self.virtual_size = Size(self._width, height)
        self.refresh()

    def _lines_of(self, index: int) -> list[Strip]:
        is_open = index in self.opened
        key = (index, is_open)
        lines = self._strips.get(key)
        if lines is None:
            lines = self._render_entry(index, is_open)
            self._strips[key] = lines
        return lines

    def _render_entry(self, index: int, is_open: bool) -> list[Strip]:
        width = self._width
        entry = self.entries[index]
        indent = 0
        renderable: RenderableType
        if index in self.heads:
            header = entry.copy() if isinstance(entry, Text) else Text(_plain(entry))
            line = Text.assemble(("▾ " if is_open else "▸ "), header)
            if not is_open:  # one line
                line.no_wrap, line.overflow = True, "ellipsis"
            renderable = line
        else:
            renderable = entry
            if self.owner[index] is not None:
                indent = min(self.BODY_INDENT, max(width - 10, 0))
        console = self.app.console
        options = console.options.update_width(max(width - indent, 1))
        lines = list(Segment.split_lines(console.render(renderable, options)))
        strips = Strip.from_lines(lines) if lines else [Strip.blank(width - indent)]
        pad = [Segment(" " * indent)] if indent else []
        return [
            Strip([*pad, *strip]).adjust_cell_length(width)
            if indent
            else strip.adjust_cell_length(width)
            for strip in strips
        ]

    def on_resize(self, event: events.Resize) -> None:
        self.call_after_refresh(self.sync)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self.refresh()

    @property
    def lines(self) -> list[Strip]:
        """Every line laid out, in order (what scrolls)."""
        return [strip for i in self.shown for strip in self._lines_of(i)]

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        line = scroll_y + y
        if not self.starts or line >= self._height or line < 0:
            return Strip.blank(width, self.rich_style)
        row = bisect.bisect_right(self.starts, line) - 1
        index = self.shown[row]
        strip = self._lines_of(index)[line - self.starts[row]]
        strip = strip.crop_extend(scroll_x, scroll_x + width, self.rich_style)
        if index == self.cursor:
            cursor = self.get_component_rich_style("transcript--cursor")
            strip = Strip(Segment.apply_style(strip, post_style=Style(bgcolor=cursor.bgcolor)))
        return strip.apply_style(self.rich_style)

    # -- the cursor -------------------------------------------------------------------------

    def entry_at(self, line: int) -> int | None:
        """The visible entry shown on ``line`` of the whole transcript."""
        if not self.starts or not 0 <= line < self._height:
            return None
        return self.shown[bisect.bisect_right(self.starts, line) - 1]

    def move_cursor(self, index: int) -> None:
        """Put the cursor on entry ``index`` (opening the fold that hides it) and bring it
        into view."""
        head = self.owner[index]
        if head is not None and head not in self.opened:
            self.opened.add(head)
            self._layout()
        self.cursor = index
        self._show(index)
        self.refresh()

    def _show(self, index: int) -> None:
        if index not in self.shown:
            return
        row = self.shown.index(index)
        top = self.starts[row]
        bottom = top + len(self._lines_of(index))
        view = self.scrollable_content_region.height
        y = self.scroll_y
        if top < y:
            y = top
        elif bottom > y + view:
            y = min(top, bottom - view)
        self.scroll_to(y=y, animate=False, immediate=True)

    def action_cursor(self, step: int) -> None:
        if not self.shown:
            return
        row = self.shown.index(self.cursor) if self.cursor in self.shown else len(self.shown)
        self.move_cursor(self.shown[min(max(row + step, 0), len(self.shown) - 1)])

    def action_cursor_to(self, row: int) -> None:
        if self.shown:
            self.move_cursor(self.shown[row])

    def action_toggle_fold(self) -> None:
        """Open or close the fold under the cursor (its header or its body)."""
        if self.cursor is None:
            return
        head = self.cursor if self.cursor in self.heads else self.owner[self.cursor]
        if head is not None:
            self.toggle(head)

    def toggle(self, head: int) -> None:
        """Open the fold whose header is ``head``, or close it (the cursor goes to it)."""
        if head in self.opened:
            self.opened.discard(head)
        else:
            self.opened.add(head)
        self.cursor = head
        self._layout()
        self._show(head)

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        index = self.entry_at(int(self.scroll_y) + offset.y)
        if index is None:
            return
        self.cursor = index
        if index in self.heads:
            self.toggle(index)
        self.refresh()

    def is_open(self, head: int) -> bool:
        return head in self.opened

    def cursor_text(self) -> str | None:
        """The entry under the cursor as text: a fold's header with its whole body (a
        reply's code in a fence), else the entry itself (a code block: its code)."""
        if self.cursor is None:
            return None
        if self.cursor not in self.heads:
            return _plain(self.entries[self.cursor])
        parts = [_plain(self.entries[self.cursor])]
        for i, p in enumerate(self.owner):
            if p == self.cursor:
                e = self.entries[i]
                parts.append(f"```\n{e.code}\n```" if isinstance(e, Syntax) else _plain(e))
        return "\n\n".join(parts)

    # -- search -----------------------------------------------------------------------------

    def find(self, query: str, forward: bool = True) -> int | None:
        """Move the cursor to the next (or previous) entry holding ``query`` (case ignored),
        after the one found last, opening the fold that holds it; its index, or ``None``
        when none holds it."""
        q = query.casefold()
        hits = [i for i, e in enumerate(self.entries) if q in _plain(e).casefold()]
        if not hits:
            return None
        at = self.found
        if forward:
            after = [i for i in hits if at is None or i > at]
            self.found = after[0] if after else hits[0]
        else:
            before = [i for i in hits if at is not None and i < at]
            self.found = before[-1] if before else hits[-1]
        self.move_cursor(self.found)
        if self.found in self.shown:  # the entry found at the top, as before
            row = self.shown.index(self.found)
            self.scroll_to(y=self.starts[row], animate=False, immediate=True)
        return self.found

    def kind(self, index: int) -> str:
        """``head`` (a fold's header), ``body`` (in a fold) or ``""`` (a line of its own)."""
        if index in self.heads:
            return "head"
        return "" if self.owner[index] is None else "body"


def entry_renderable(e: Entry) -> Text | Syntax:
    """A transcript entry as it is shown: a line, a header with its dim tail, or code."""
    if e.style == "code":
        return Syntax(e.text, e.language, theme=SYNTAX_THEME, word_wrap=True)
    text = Text(e.text, style=e.style)
    if e.meta:
        text.append(e.meta, style="dim")
    return text


def _plain(entry: RenderableType) -> str:
    if isinstance(entry, Syntax):
        return entry.code
    return entry.plain if isinstance(entry, Text) else str(entry)


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
        for piece, style in fit_status(self.parts, width):
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
