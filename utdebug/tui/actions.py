"""The app's actions in one table: key bindings, the help screen and the command palette."""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding

from utdebug.tui.panels import PANELS


@dataclass(frozen=True, slots=True)
class ActionSpec:
    """One thing a person can do: its binding id, default key(s), action name and texts."""

    id: str
    key: str
    action: str
    title: str
    help: str
    footer: str | None = None
    """Short label in the footer (``None``: not there; every action is in the help screen
    and the command palette)."""
    key_display: str | None = None
    free_footer: str | None = None
    """Its footer label in a session without a model (where it matters more)."""
    with_model: bool | None = None
    """``True``: an action of the model's loop (a session without a model does not show it in
    the footer and says why when its key is pressed); ``False``: only a session without a
    model has it (synthesised inputs); ``None``: every session."""


def panel_actions() -> list[ActionSpec]:
    """The panel keys, one a row of :data:`~utdebug.tui.panels.PANELS`."""
    return [
        ActionSpec(
            f"panel-{name}",
            p.key,
            f"panel('{name}')",
            f"{name.capitalize()} panel",
            p.help,
            p.footer,
            key_display=p.key_display,
            with_model=False if p.model_free else None,
        )
        for name, p in PANELS.items()
    ]


ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec(
        "run",
        "r",
        "run",
        "Run / resume",
        "Start the session, resume it when paused, or go on after it ended (new or "
        "corrected tests start more rounds)",
        "Run",
        with_model=True,
    ),
    ActionSpec(
        "pause",
        "p",
        "pause",
        "Pause",
        "Pause now: a model call in flight is cancelled and asked again on resume",
        "Pause",
        with_model=True,
    ),
    ActionSpec(
        "step",
        "s",
        "step",
        "Step",
        "Run one more round, then pause (also after the end)",
        "Step",
        with_model=True,
    ),
    ActionSpec(
        "cancel", "x", "cancel_session", "Cancel", "Cancel the session (at once)", with_model=True
    ),
    ActionSpec(
        "detail",
        "i",
        "show_test",
        "Test detail",
        "The selected test in full: call, expected value and its votes, what the code in "
        "force does, origin, history (also Enter on a row)",
        "Detail",
    ),
    ActionSpec(
        "edit-test", "e", "edit_test", "Edit expected", "Correct the selected test's output", "Edit"
    ),
    ActionSpec(
        "add-test", "a", "add_test", "Add test", "Add a test of your own", free_footer="Add"
    ),
    ActionSpec(
        "mark-wrong",
        "m",
        "mark_wrong",
        "Mark wrong",
        "Without a model: the selected synthesised input's outcome is wrong; write what it "
        "should be (it becomes a test)",
        "Wrong",
        with_model=False,
    ),
    ActionSpec(
        "keep-test",
        "g",
        "keep_test",
        "Keep as test",
        "Without a model: the selected synthesised input's outcome is right; keep it as a test",
        "Keep",
        with_model=False,
    ),
    ActionSpec(
        "copy-call",
        "c",
        "copy('call')",
        "Copy call",
        "Copy the selected test's call; in the transcript (focused), the entry under its "
        "cursor (o and T too)",
    ),
    ActionSpec(
        "copy-expected", "o", "copy('expected')", "Copy expected", "Copy its expected output"
    ),
    ActionSpec(
        "copy-test", "T", "copy('test')", "Copy test", "Copy the selected test as a pytest test"
    ),
    ActionSpec(
        "rerun-test",
        "R",
        "rerun_test",
        "Re-run test",
        "Run the selected test again on the code in force (what it returns or raises)",
    ),
    ActionSpec(
        "delete-test", "d", "delete_test", "Delete test", "Delete the selected test (u undoes)"
    ),
    ActionSpec(
        "undo",
        "u",
        "undo",
        "Undo",
        "Undo a person's last change: an edit, an added or deleted test, a roll back",
        "Undo",
    ),
    ActionSpec(
        "toggle-review",
        "v",
        "toggle_review",
        "Review by hand",
        "Review each edit by hand (on/off)",
        with_model=True,
    ),
    ActionSpec(
        "accept",
        "y",
        "accept_edit",
        "Accept edit",
        "Accept the edit awaiting review",
        with_model=True,
    ),
    ActionSpec(
        "reject",
        "n",
        "reject_edit",
        "Reject edit / next match",
        "Reject the edit awaiting review; else go to the next match of the search",
    ),
    ActionSpec(
        "search",
        "slash",
        "search",
        "Search",
        "Filter the tests by text and find it in the transcript (n / N: next / previous)",
        "Search",
        key_display="/",
    ),
    ActionSpec("search-back", "N", "search_next(False)", "Previous match", "The previous match"),
    ActionSpec("rollback", "b", "rollback", "Roll back", "Go back to an earlier accepted version"),
    ActionSpec(
        "write-back", "w", "write_back", "Write back", "Write the fix into the source file", "Write"
    ),
    ActionSpec("export-patch", "P", "export_patch", "Export patch", "Write <file>.utdebug.patch"),
    ActionSpec(
        "export-tests", "t", "export_tests", "Export tests", "Write test_<function>_utdebug.py"
    ),
    *panel_actions(),
    ActionSpec(
        "info",
        "I",
        "session_info",
        "Session info",
        "Model, settings, every sandbox layer, usage, files: what the status bar shortens",
    ),
    ActionSpec(
        "help", "question_mark,f1", "show_help", "Help", "Show the keys", "Help", key_display="?"
    ),
    ActionSpec("quit", "q", "quit", "Quit", "Leave utdebug", "Quit"),
)
"""Every action of :class:`~utdebug.tui.app.DebugApp`, in the order the help screen lists them."""


def session_actions(model_free: bool) -> list[ActionSpec]:
    """The actions a session of this kind offers (``model_free``: without a model)."""
    return [a for a in ACTIONS if a.with_model is not model_free]


TRANSCRIPT_KEYS: tuple[tuple[str, str, str], ...] = (
    ("↑ ↓, k j", "Transcript cursor", "In the transcript (6): move the cursor entry by entry"),
    (
        "Enter, click",
        "Open / close",
        "In the transcript: open a model call's line on its reply (its code highlighted), "
        "close it again",
    ),
    ("Home, End", "First / last", "In the transcript: the first / the newest entry"),
)
"""The transcript's own keys (its bindings, not actions: the help screen lists them too)."""

BINDING_PREFIX = "utdebug."
"""Binding ids are ``utdebug.<id>`` (``App.set_keymap`` rebinds them)."""


FOOTER_FIRST = ("help", "quit")
"""Shown first in the footer, so that a narrow terminal (80 columns) keeps them."""


def bindings(model_free: bool = False) -> list[Binding]:
    """The key bindings, in the footer's order: :data:`FOOTER_FIRST`, then the table's. The
    footer shows the actions of the session's kind (``model_free``: without a model)."""
    first = [a for a in ACTIONS if a.id in FOOTER_FIRST]
    rest = [a for a in ACTIONS if a.id not in FOOTER_FIRST]
    out = []
    for a in (*first, *rest):
        footer = a.footer or (a.free_footer if model_free else None)
        out.append(
            Binding(
                a.key,
                a.action,
                footer or a.title,
                show=footer is not None and a.with_model is not model_free,
                key_display=a.key_display,
                id=BINDING_PREFIX + a.id,
            )
        )
    return out


def display_keys(spec: ActionSpec) -> str:
    """The keys of an action as a person types them (``?, F1``)."""
    names = {"question_mark": "?", "f1": "F1", "slash": "/"}
    return ", ".join(names.get(k, k) for k in spec.key.split(","))
