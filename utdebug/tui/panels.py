"""The app's panels in one table: each one's key, where it sits (its tabs and tab), the widget
a bottom tab holds, what its key focuses and how it is drawn from
:class:`~utdebug.tui.state.AppState`. ``compose``, the panel keys (``action_panel`` and their
rows of the actions table) and every redraw go through :data:`PANELS`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from textual.widget import Widget

from utdebug.tui.state import AppState
from utdebug.tui.transcript import Transcript
from utdebug.tui.widgets import CandidatesPanel, CodePanel, InputsPanel, RoundsTable, TestsPanel

CANDIDATES_HINT = "run with --candidates C to rank several edits"


def draw_code(panel: CodePanel, state: AppState) -> None:
    panel.show_code(state.shown_code(), state.task.code, state.task.entry_point)


def draw_tests(panel: TestsPanel, state: AppState) -> None:
    panel.show(
        state.tests,
        {**state.statuses, **state.original_statuses},
        state.pass_summary(),
        state.originals,
    )


def draw_rounds(table: RoundsTable, state: AppState) -> None:
    table.show(list(state.timeline.values()))


def draw_candidates(panel: CandidatesPanel, state: AppState) -> None:
    s = state.settings
    if s.candidates <= 1:
        hint = f"one edit per round: {CANDIDATES_HINT}"
    elif not state.candidate_rows:
        hint = f"{s.candidates} candidates per round, ranked by {s.ranker}: no ranking yet"
    else:
        hint = f"{s.candidates} candidates per round, ranked by {s.ranker}"
    panel.show(state.candidate_rows, hint)


def draw_inputs(panel: InputsPanel, state: AppState) -> None:
    if state.synth is None:
        hint = (
            "synthesising inputs from the docstring's examples and the project's tests…"
            if state.synthesising
            else "no synthesised inputs yet"
        )
        panel.show(hint, [], {})
        return
    ids = {t.id for t in state.tests}
    made = {n: i for n, i in state.synth_tests.items() if i in ids}  # an undone one is not
    panel.show(state.synth.headline(), state.synth.rows, made)


def draw_transcript(transcript: Transcript, state: AppState) -> None:
    """Append the state's entries the transcript does not show yet."""
    transcript.add_entries(state.transcript[len(transcript.entries) :])


def the_table(panel: TestsPanel | InputsPanel) -> Widget:
    """What a key of a panel with a table focuses: its table."""
    return panel.table


def itself(widget: Widget) -> Widget:
    """What a key of a panel that takes the focus itself focuses."""
    return widget


@dataclass(frozen=True, slots=True)
class Panel:
    """One panel: its key and help line, the tabs and the tab it is shown by (``None``:
    always on screen), its widget (a bottom tab's is made by ``compose`` under ``title``),
    what its key focuses and how it is drawn."""

    key: str
    help: str
    widget: type[Widget]
    tabs: str | None = None
    pane: str | None = None
    title: str = ""
    widget_id: str = ""
    draw: Callable[[Any, AppState], None] | None = None
    focus: Callable[[Any], Widget] | None = None
    """What its key focuses, from its widget (``None``: the focus stays)."""
    fits_layout: bool = False
    """Drawing it fits the layout to it (side by side or stacked)."""
    model_free: bool = False
    """Only a session without a model has it."""
    footer: str | None = None
    """Its key's label in the footer (``None``: not there)."""
    key_display: str | None = None


BOTTOM = "bottom-tabs"
PANELS: dict[str, Panel] = {
    "code": Panel(
        "1",
        "Show the code in force (keys 1 to 6 go to the six panels)",
        CodePanel,
        "code-tabs",
        "tab-code",
        draw=draw_code,
        fits_layout=True,
        footer="Panels",
        key_display="1-6",
    ),
    "diff": Panel("2", "Show the diff: given → in force", CodePanel, "code-tabs", "tab-diff"),
    "tests": Panel("3", "Move to the tests table", TestsPanel, draw=draw_tests, focus=the_table),
    "rounds": Panel(
        "4",
        "Show the rounds",
        RoundsTable,
        BOTTOM,
        "tab-rounds",
        "Rounds",
        "rounds-table",
        draw_rounds,
    ),
    "candidates": Panel(
        "5",
        "Show the ranking",
        CandidatesPanel,
        BOTTOM,
        "tab-candidates",
        "Candidates",
        "candidates-panel",
        draw_candidates,
    ),
    "transcript": Panel(
        "6",
        "Show every prompt reply, vote and decision",
        Transcript,
        BOTTOM,
        "tab-transcript",
        "Transcript",
        "transcript",
        draw_transcript,
        focus=itself,
    ),
    "inputs": Panel(
        "7",
        "Without a model: show the synthesised inputs and their outcomes",
        InputsPanel,
        BOTTOM,
        "tab-inputs",
        "Inputs",
        "inputs-panel",
        draw_inputs,
        focus=the_table,
        model_free=True,
    ),
}
"""Every panel by the name its key shows it by (``panel('rounds')``), in drawing order (and
in the help screen's)."""


def panels(model_free: bool) -> list[str]:
    """The panels of a session of this kind (``model_free``: without a model)."""
    return [name for name, p in PANELS.items() if model_free or not p.model_free]


def bottom_tabs(model_free: bool = False) -> list[tuple[str, str, Widget]]:
    """The bottom tabs: each one's title, tab id and a new widget for it (a session without
    a model: its synthesised inputs first)."""
    tabs = [PANELS[name] for name in panels(model_free) if PANELS[name].tabs == BOTTOM]
    tabs.sort(key=lambda p: not p.model_free)
    return [(p.title, p.pane or "", p.widget(id=p.widget_id)) for p in tabs]
