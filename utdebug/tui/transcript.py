"""The transcript panel: the session's steps and the model's replies, with folds and a cursor."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import ClassVar

from rich.console import RenderableType
from rich.segment import Segment
from rich.style import Style
from rich.syntax import Syntax
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from utdebug.tui.format import foreign
from utdebug.tui.state import Entry
from utdebug.tui.widgets import code_view


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
    """A transcript entry as it is shown: a line, a header with its dim tail, or code (its
    control and bidirectional characters as escapes)."""
    if e.style == "code":
        return code_view(e.text, e.language, word_wrap=True)
    text = foreign(e.text, style=e.style, lines=True)
    if e.meta:
        text.append(foreign(e.meta, style="dim"))
    return text


def _plain(entry: RenderableType) -> str:
    if isinstance(entry, Syntax):
        return entry.code
    return entry.plain if isinstance(entry, Text) else str(entry)
