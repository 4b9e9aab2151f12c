"""Dialogs: help, a test's expected output, a new test, roll back, write back, review an edit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static, TextArea
from textual.widgets.option_list import Option

from utdebug.engine.program import Raises, check_shape
from utdebug.engine.session import EditReview
from utdebug.literals import LiteralError
from utdebug.synth.candidates import parameter_names
from utdebug.text_safety import visible
from utdebug.tui.actions import TRANSCRIPT_KEYS, display_keys, session_actions
from utdebug.tui.format import (
    foreign,
    parse_arguments,
    parse_expected,
    pre_post,
    safe_repr,
    unified_diff,
)
from utdebug.tui.widgets import code_view

DIALOG_CSS = """
    align: center middle;
    & > #dialog {
        width: 90%;
        max-width: 100;
        height: auto;
        max-height: 90%;
        border: thick $accent;
        background: $surface;
        padding: 0 1;
    }
    & .title { text-style: bold; margin-bottom: 1; }
    & .hint { color: $text-muted; margin-top: 1; }
    & .error { color: $error; height: auto; }
    & Input { margin: 0; }
    & .scroll { height: auto; max-height: 16; }
    & #help-body { max-height: 60vh; }
"""


def _input(placeholder: str, widget_id: str) -> Input:
    box = Input(placeholder=placeholder, id=widget_id, select_on_focus=False)
    box.cursor_blink = False  # nothing blinks: snapshots stay stable
    return box


class HelpScreen(ModalScreen[None]):
    """Every key of the app, what it does, and the command palette."""

    DEFAULT_CSS = "HelpScreen {" + DIALOG_CSS + "}"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark,f1", "close", "Close", id="utdebug.help.close"),
    ]

    def __init__(self, model_free: bool = False) -> None:
        super().__init__()
        self.model_free = model_free

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static("utdebug: keys", classes="title")
            with VerticalScroll(classes="scroll", id="help-body"):
                yield Static(help_table(self.model_free), id="help-table")
            yield Static(
                "ctrl+p opens the command palette with every action. escape closes this help.",
                classes="hint",
            )

    def action_close(self) -> None:
        self.dismiss(None)


def help_table(model_free: bool = False) -> Table:
    """Every action of the session's kind with its keys (``model_free``: a session without a
    model); the descriptions wrap at any width."""
    table = Table(box=None, expand=True, show_edge=False, pad_edge=False, header_style="bold")
    table.add_column("keys", no_wrap=True, style="bold")
    table.add_column("action", no_wrap=True)
    table.add_column("what it does", ratio=1)
    for spec in session_actions(model_free):
        table.add_row(display_keys(spec), spec.title, spec.help)
    for keys, title, what in TRANSCRIPT_KEYS:
        table.add_row(keys, title, what)
    return table


@dataclass(frozen=True, slots=True)
class Edited:
    """The expected output a person typed (a wrapper: ``None`` is a valid expected value)."""

    value: Any


class EditExpectedScreen(ModalScreen[Edited | None]):
    """Correct one test's expected output: a Python literal or a constructor-call value
    (:func:`~utdebug.tui.format.parse_expected`)."""

    DEFAULT_CSS = "EditExpectedScreen {" + DIALOG_CSS + "}"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="utdebug.edit.cancel"),
    ]

    def __init__(
        self,
        test_id: int,
        call: str,
        expected: Any,
        module_source: str | None = None,
        *,
        title: str | None = None,
        now: tuple[str, str] | None = None,
        prefill: str | None = None,
        raises: bool = False,
    ) -> None:
        """``title``, ``now`` (label, text) and ``prefill`` replace the test's own (a
        synthesised input's outcome that a person marks wrong); with ``raises`` the answer may
        also be ``raises ExceptionType`` (a :class:`~utdebug.engine.program.Raises`)."""
        super().__init__()
        self.raises = raises
        self.test_id = test_id
        self.call = call
        self.expected = expected
        self.module_source = module_source
        self.heading = title or f"Expected output of test #{test_id}"
        self.now = now or ("now expects: ", safe_repr(expected))
        self.prefill = visible(safe_repr(expected) if prefill is None else prefill)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(foreign(self.heading), classes="title")
            yield Static(Text.assemble(("call: ", "dim"), foreign(self.call, lines=True)))
            yield Static(Text.assemble((self.now[0], "dim"), foreign(self.now[1], lines=True)))
            # Pre-filled with the value now and selected: typing replaces it, an arrow key
            # keeps it to change a part.
            box = Input(
                self.prefill,
                placeholder="the correct output, as a Python literal"
                + (", or raises ValueError" if self.raises else ""),
                id="expected-input",
                select_on_focus=True,
            )
            box.cursor_blink = False
            yield box
            yield Static("", id="error", classes="error")
            yield Static("enter: save and run the tests again · escape: cancel", classes="hint")

    def on_mount(self) -> None:
        self.query_one("#expected-input", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        read = parse_outcome if self.raises else parse_expected
        try:
            value = read(event.value, self.module_source)
        except LiteralError as exc:
            self.query_one("#error", Static).update(foreign(f"not a value: {exc.message}"))
            return
        self.dismiss(Edited(value))

    def action_cancel(self) -> None:
        self.dismiss(None)


@dataclass(frozen=True, slots=True)
class NewTest:
    args: tuple[Any, ...]
    expected: Any


class AddTestScreen(ModalScreen[NewTest | None]):
    """A person's own test: the arguments and the expected output, as Python literals (or
    ``raises ExceptionType``)."""

    DEFAULT_CSS = "AddTestScreen {" + DIALOG_CSS + "}"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="utdebug.add.cancel"),
    ]

    def __init__(self, entry_point: str, module_source: str | None = None) -> None:
        super().__init__()
        self.entry_point = entry_point
        self.module_source = module_source

    def compose(self) -> ComposeResult:
        names = parameter_names(self.module_source or "", self.entry_point)
        example = ", ".join(str(n) for n in range(1, len(names) + 1)) if names else "1, 2"
        args = f"({example},)" if len(names) == 1 else f"({example})"
        call = f"{self.entry_point}({example})"
        with Vertical(id="dialog"):
            yield Static(
                foreign(f"Add a test of {self.entry_point}({', '.join(names)})"), classes="title"
            )
            yield Static(foreign(f"arguments: a tuple such as {args}, or a call such as {call}"))
            yield _input(f"{args}  or  {call}", "args-input")
            yield Static(Text("expected output: a Python literal, e.g. Point(1, 2), or raises X"))
            yield _input("3  or  raises ValueError", "expected-input")
            yield Static("", id="error", classes="error")
            yield Static("enter: next / save · escape: cancel", classes="hint")

    def on_mount(self) -> None:
        self.query_one("#args-input", Input).focus()

    def _args(self) -> tuple[Any, ...] | None:
        try:
            return parse_arguments(self.query_one("#args-input", Input).value, self.entry_point)
        except LiteralError as exc:
            self.query_one("#error", Static).update(foreign(f"arguments: {exc.message}"))
            return None

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        args = self._args()
        if args is None:
            self.query_one("#args-input", Input).focus()
            return
        if event.input.id == "args-input":
            self.query_one("#error", Static).update("")
            self.query_one("#expected-input", Input).focus()
            return
        try:
            expected = parse_outcome(event.value, self.module_source)
        except LiteralError as exc:
            self.query_one("#error", Static).update(foreign(f"expected output: {exc.message}"))
            return
        self.dismiss(NewTest(args, expected))

    def action_cancel(self) -> None:
        self.dismiss(None)


@dataclass(frozen=True, slots=True)
class NewProgram:
    """A person's test with setup: the setup statements, the call, the expected outcome (a
    value or a :class:`~utdebug.engine.program.Raises`) and an optional follow-up expression."""

    setup: str
    call: str
    expected: Any
    then: str | None = None


def parse_outcome(text: str, module_source: str | None = None) -> Any:
    """A person's expected outcome of a test with setup: a value (a Python literal or
    constructor calls, :func:`~utdebug.tui.format.parse_expected`), or
    ``raises ExceptionType``."""
    words = text.split()
    if len(words) == 2 and words[0] == "raises":
        if not all(part.isidentifier() for part in words[1].split(".")):
            raise LiteralError(f"{words[1]!r} is not an exception type's name")
        return Raises(words[1])
    return parse_expected(text, module_source)


class SetupArea(TextArea):
    """The setup's lines: enter adds a line, and on an empty last line (or in an empty
    setup) goes on to the call, as the dialog's hint says."""

    async def _on_key(self, event: events.Key) -> None:
        row = self.cursor_location[0]
        last = self.document.line_count - 1
        if event.key == "enter" and row == last and not self.document.get_line(row).strip():
            event.stop()
            event.prevent_default()
            self.text = self.text.rstrip()
            self.screen.focus_next()
            return
        await super()._on_key(event)


class ProgramTestScreen(ModalScreen[NewProgram | None]):
    """A person's test with setup, new or edited: setup statements (several lines), one call,
    the expected outcome, and optionally an expression read after the call (``cart.items``).
    The parts are only parsed here; the sandbox runs them."""

    DEFAULT_CSS = "ProgramTestScreen {" + DIALOG_CSS + "& TextArea { height: 6; margin: 0; } }"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="utdebug.program.cancel"),
        Binding("ctrl+s", "save", "Save", id="utdebug.program.save"),
    ]

    def __init__(
        self,
        title: str,
        target: str,
        test: NewProgram | None = None,
        module_source: str | None = None,
    ) -> None:
        super().__init__()
        self.title_text = title
        self.target = target
        self.test = test
        self.module_source = module_source

    def compose(self) -> ComposeResult:
        t = self.test
        with Vertical(id="dialog"):
            yield Static(foreign(self.title_text), classes="title")
            yield Static(
                Text(
                    "setup: statements that build what the call needs (may be empty; enter on "
                    "an empty line goes on to the call)"
                )
            )
            setup = visible(t.setup, keep="\n\t") if t else ""
            area = SetupArea(setup, id="setup-input", language=None)
            area.cursor_blink = False
            yield area
            yield Static(Text(f"call: one expression, e.g. obj.{self.target.split('.')[-1]}(1)"))
            yield _input(f"e.g. obj.{self.target.split('.')[-1]}(1)", "call-input")
            yield Static(Text("expected: a value (3, Point(1, 2)), or raises ExceptionType"))
            yield _input("3  or  Point(1, 2)  or  raises KeyError", "expected-input")
            yield Static(
                Text("then (optional): an expression whose value after the call is compared")
            )
            yield _input("e.g. obj.items", "then-input")
            yield Static("", id="error", classes="error")
            yield Static("enter: next field / save · ctrl+s: save · escape: cancel", classes="hint")

    def on_mount(self) -> None:
        t = self.test
        if t is not None:
            self.query_one("#call-input", Input).value = visible(t.call)
            self.query_one("#expected-input", Input).value = visible(_outcome_text(t.expected))
            self.query_one("#then-input", Input).value = visible(t.then or "")
        self.query_one("#setup-input", TextArea).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        order = ["call-input", "expected-input", "then-input"]
        at = order.index(event.input.id or "call-input")
        if at < len(order) - 1:
            self.query_one(f"#{order[at + 1]}", Input).focus()
            return
        self.action_save()

    def action_save(self) -> None:
        error = self.query_one("#error", Static)
        setup = self.query_one("#setup-input", TextArea).text
        call = self.query_one("#call-input", Input).value.strip()
        then = self.query_one("#then-input", Input).value.strip() or None
        why = check_shape(setup, call, then)
        if why is not None:
            error.update(foreign(why))
            return
        try:
            expected = parse_outcome(
                self.query_one("#expected-input", Input).value, self.module_source
            )
        except LiteralError as exc:
            error.update(foreign(f"expected: {exc.message}"))
            self.query_one("#expected-input", Input).focus()
            return
        self.dismiss(NewProgram(setup, call, expected, then))

    def action_cancel(self) -> None:
        self.dismiss(None)


def _outcome_text(expected: Any) -> str:
    return repr(expected) if isinstance(expected, Raises) else safe_repr(expected)


class RollbackScreen(ModalScreen[int | None]):
    """Pick an earlier accepted version of the code (0: the given code)."""

    DEFAULT_CSS = "RollbackScreen {" + DIALOG_CSS + "}"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="utdebug.rollback.cancel"),
    ]

    def __init__(self, versions: Sequence[tuple[str, str]], current: int | None) -> None:
        """``versions``: (label, code) of each version; ``current``: the one in force."""
        super().__init__()
        self.versions = list(versions)
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static("Roll back to an accepted version", classes="title")
            yield OptionList(
                *(
                    Option(foreign(label), id=str(i))
                    for i, (label, _code) in enumerate(self.versions)
                ),
                id="versions",
            )
            with VerticalScroll(classes="scroll"):
                yield Static(id="preview")
            yield Static("enter: roll back (the tests run again) · escape: cancel", classes="hint")

    def on_mount(self) -> None:
        options = self.query_one("#versions", OptionList)
        options.highlighted = self.current if self.current is not None else 0
        options.focus()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        _label, code = self.versions[event.option_index]
        self.query_one("#preview", Static).update(code_view(code, line_numbers=True))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option_index)

    def action_cancel(self) -> None:
        self.dismiss(None)


class WriteBackScreen(ModalScreen[bool]):
    """The diff that writing the fix back would make; ``y`` writes it."""

    DEFAULT_CSS = "WriteBackScreen {" + DIALOG_CSS + "}"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Write", id="utdebug.write.yes"),
        Binding("n,escape", "answer(False)", "Cancel", id="utdebug.write.no"),
    ]

    def __init__(self, path: str, diff: str) -> None:
        super().__init__()
        self.path = path
        self.diff = diff

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(foreign(f"Write the fix back to {self.path}?"), classes="title")
            with VerticalScroll(classes="scroll"):
                yield Static(code_view(self.diff, "diff"))
            yield Static(
                "y: write it (the original is kept as a .utdebug.bak file) · n / escape: cancel",
                classes="hint",
            )

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class ReviewScreen(ModalScreen[bool | None]):
    """An edit awaiting a person's decision: its diff and the pass rate before → after."""

    DEFAULT_CSS = "ReviewScreen {" + DIALOG_CSS + "}"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Accept", id="utdebug.review.accept"),
        Binding("n", "answer(False)", "Reject", id="utdebug.review.reject"),
        Binding("escape", "later", "Later", id="utdebug.review.later"),
    ]

    def __init__(self, review: EditReview, code: str) -> None:
        super().__init__()
        self.review = review
        """The proposed edit (its code, round and pass rates)."""
        self.code = code
        """The code in force, which the edit would replace."""

    def compose(self) -> ComposeResult:
        r = self.review
        rule = "accept it" if r.rule_accepts else "backtrack"
        with Vertical(id="dialog"):
            yield Static(f"Round {r.round}: review the proposed edit", classes="title")
            yield Static(
                f"pass rate on the tests {pre_post(r.pre, r.post)}; "
                f"the backtracking rule alone would {rule}"
            )
            diff = unified_diff(self.code, r.code, "in force", "proposed")
            with VerticalScroll(classes="scroll"):
                yield Static(
                    code_view(diff, "diff")
                    if diff
                    else Text("the proposal is the code in force", style="dim")
                )
            yield Static(
                "y: accept · n: reject · escape: decide later (y / n on the main screen)",
                classes="hint",
            )

    def action_answer(self, accept: bool) -> None:
        self.dismiss(accept)

    def action_later(self) -> None:
        self.dismiss(None)


class SearchScreen(ModalScreen[str | None]):
    """``/``: what to look for in the tests (they are filtered) and the transcript (``n`` /
    ``N`` move from one match to the next); empty shows everything again."""

    DEFAULT_CSS = "SearchScreen {" + DIALOG_CSS + "}"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="utdebug.search.cancel"),
    ]

    def __init__(self, query: str) -> None:
        super().__init__()
        self.query_text = query

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static("Search the tests and the transcript", classes="title")
            box = Input(
                self.query_text,
                placeholder="text in a call, an expected value or the transcript",
                id="search-input",
                select_on_focus=True,
            )
            box.cursor_blink = False
            yield box
            yield Static(
                "enter: search (empty: show everything) · n / N: next / previous · escape",
                classes="hint",
            )

    def on_mount(self) -> None:
        self.query_one("#search-input", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)
