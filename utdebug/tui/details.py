"""Screens that show everything about one thing: a test (Enter or ``i`` on the tests table)
and the session (``I``: model, settings, sandbox layers, usage, files). Long values wrap and
the screens scroll: nothing is cut."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from utdebug.engine.model import UnitTest
from utdebug.engine.program import Raises
from utdebug.tui.format import actual_text, foreign, origin_text, plural, safe_repr
from utdebug.tui.records import Actual, HistoryEntry, Votes

DETAIL_CSS = """
    align: center middle;
    & > #dialog {
        width: 94%;
        max-width: 120;
        height: auto;
        max-height: 94%;
        border: thick $accent;
        background: $surface;
        padding: 0 1;
    }
    & .title { text-style: bold; }
    & .hint { color: $text-muted; }
    & #body { height: auto; max-height: 75vh; }
"""

LABEL_WIDTH = 10


@dataclass(frozen=True, slots=True)
class TestDetail:
    """Everything the detail view shows about one test."""

    __test__ = False  # not a pytest class

    test: UnitTest
    actual: Actual | None
    votes: Votes | None
    history: Sequence[HistoryEntry]


def detail_renderable(d: TestDetail) -> RenderableType:
    """The test's full call, expected value and votes, what the code in force does on it,
    its origin and history, as a two-column grid whose values wrap (never cut)."""
    t = d.test
    grid = Table.grid(padding=(0, 1), expand=True)
    grid.add_column(style="dim", width=LABEL_WIDTH, no_wrap=True)
    grid.add_column(ratio=1, overflow="fold")
    if t.program:
        grid.add_row("setup", foreign(t.setup or "(none)", lines=True))
        grid.add_row("call", foreign(t.call, lines=True))
        if t.then is not None:
            grid.add_row("then", foreign(f"{t.then}  (its value after the call is compared)"))
    else:
        grid.add_row("call", foreign(t.call, lines=True))
        grid.add_row("arguments", foreign(", ".join(safe_repr(a) for a in t.args) or "(none)"))
    expected = foreign(
        repr(t.expected) if isinstance(t.expected, Raises) else safe_repr(t.expected)
    )
    if t.origin == "person":
        expected.append("  (a person's value)", style="bold cyan")
    grid.add_row("expected", expected)
    status = d.actual.status if d.actual else ""
    actual = foreign(actual_text(status, d.actual.detail if d.actual else None), lines=True)
    if d.actual is not None:
        actual.stylize("bold green" if status == "pass" else "bold red")
        actual.append(f"  (code in force {d.actual.code_id})", style="dim")
    grid.add_row("actual", actual)
    grid.add_row("votes", _votes_text(t, d.votes))
    grid.add_row("origin", foreign(_origin_line(t)))
    grid.add_row("history", _history_text(d.history))
    return grid


def _origin_line(t: UnitTest) -> str:
    who = origin_text(t)
    if who == "synth":
        source = t.input_source.partition(":")[2] or "?"
        expected = "a person's" if t.origin == "person" else "the model's vote"
        return (
            f"synth (test #{t.id}): the input was synthesised ({source}, no model); the "
            f"expected value is {expected}"
        )
    if who == "person":
        return f"person (test #{t.id}; the expected value is a person's, not the model's vote)"
    return f"model (round {t.round}, generated against code {t.target or '?'})"


def _votes_text(t: UnitTest, votes: Votes | None) -> Text:
    out = Text()
    if votes is None or votes.draws == 0:
        if t.origin == "person" and t.draws == 0:
            return Text("none: a person's test")
        if t.draws == 0:
            return Text("no voting: the expected value is the generator's own output")
        out.append(f"{t.share:.0%} of {t.draws} votes for the kept answer")
        return out
    if t.origin == "person":
        out.append("the model's votes before a person set the expected value:\n", style="dim")
    kept = safe_repr(t.expected)
    counts = votes.counts()
    out.append(f"{plural(votes.draws, 'vote')}, {plural(len(counts), 'distinct answer')}")
    for answer, n in counts:
        out.append(f"\n{n}× ", style="bold")
        out.append(foreign(answer))
        if answer == kept and t.origin != "person":
            out.append("  ← kept", style="green")
    if votes.refused:
        out.append(f"\n{len(votes.refused)} refused:", style="yellow")
        for reason in votes.refused:
            out.append(foreign(f"\n  {reason}", style="yellow", lines=True))
    return out


def _history_text(history: Sequence[HistoryEntry]) -> Text:
    if not history:
        return Text("nothing recorded")
    out = Text()
    for i, h in enumerate(history):
        if i:
            out.append("\n")
        out.append(f"{h.when} ", style="dim")
        out.append(f"{h.who}: ", style="bold cyan" if h.who == "person" else "bold")
        out.append(foreign(h.what, lines=True))
    return out


class TestDetailScreen(ModalScreen[str | None]):
    """One test, in full. ``e`` edits its expected value, ``d`` deletes it (both undoable)."""

    __test__ = False  # not a pytest class

    DEFAULT_CSS = "TestDetailScreen {" + DETAIL_CSS + "}"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter,q,i", "close", "Close", id="utdebug.detail.close"),
        Binding("e", "choose('edit')", "Edit expected", id="utdebug.detail.edit"),
        Binding("d", "choose('delete')", "Delete", id="utdebug.detail.delete"),
    ]

    def __init__(self, detail: TestDetail, *, editable: bool = True) -> None:
        super().__init__()
        self.detail = detail
        self.editable = editable
        """``False``: a test of the first set that new tests replaced (``orig``): it is no
        longer the session's, so it is shown, never edited or deleted."""

    def compose(self) -> ComposeResult:
        t = self.detail.test
        hint = (
            "e: edit the expected value · d: delete · escape: close"
            if self.editable
            else "a first test (orig): shown and run again, not edited · escape: close"
        )
        with Vertical(id="dialog"):
            yield Static(f"Test #{t.id} ({origin_text(t)})", classes="title")
            with VerticalScroll(id="body"):
                yield Static(detail_renderable(self.detail), id="detail")
            yield Static(hint, classes="hint")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return action != "choose" or self.editable  # an orig test: neither offered nor run

    def action_close(self) -> None:
        self.dismiss(None)

    def action_choose(self, what: str) -> None:
        self.dismiss(what)


def info_renderable(rows: Sequence[tuple[str, str]]) -> RenderableType:
    grid = Table.grid(padding=(0, 1), expand=True)
    grid.add_column(style="dim", width=12, no_wrap=True)
    grid.add_column(ratio=1, overflow="fold")
    for label, value in rows:
        grid.add_row(label, foreign(value, lines=True))
    return Group(grid)


class SessionInfoScreen(ModalScreen[None]):
    """The details the status bar shortens: model, settings, sandbox layers, usage, files."""

    DEFAULT_CSS = "SessionInfoScreen {" + DETAIL_CSS + "}"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter,q,I", "close", "Close", id="utdebug.info.close"),
    ]

    def __init__(self, rows: Sequence[tuple[str, str]]) -> None:
        super().__init__()
        self.rows = list(rows)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static("utdebug: this session", classes="title")
            with VerticalScroll(id="body"):
                yield Static(info_renderable(self.rows), id="info")
            yield Static("escape: close · utdebug doctor checks the sandbox", classes="hint")

    def action_close(self) -> None:
        self.dismiss(None)
