"""The app's parts that hold no Textual, tested without booting the app: the engine-event
handlers fold an event into the app's state and ask for the panels it changes."""

from __future__ import annotations

from typing import Any

from utdebug.engine.events import RoundFinished
from utdebug.engine.model import Settings, Task, code_id
from utdebug.tui.activity import Progress
from utdebug.tui.engine_events import EngineEvents
from utdebug.tui.state import AppState

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TASK = Task("toy/add", "Return the sum of a and b.", "add(a, b)", "add", BUGGY)


class StandIn:
    """What the handlers read of the app: its state and progress; what they ask it to draw
    and note is written down."""

    def __init__(self) -> None:
        self.state = AppState(TASK, Settings())
        self.progress = Progress()
        self.drawn: list[str] = []
        self.notes: list[str] = []

    def _note(self, text: str, style: str = "") -> None:
        self.notes.append(text)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_draw_"):
            return lambda: self.drawn.append(name.removeprefix("_draw_"))
        raise AttributeError(name)


def test_a_finished_round_is_folded_into_the_state_without_the_app() -> None:
    app = StandIn()
    events = EngineEvents(app)  # type: ignore[arg-type]
    events.fold(RoundFinished(1, code_id(FIXED), FIXED, 1.0))
    assert app.state.code == FIXED and app.state.rounds_done == 1
    assert app.progress.round == 2
    assert app.state.timeline["r1"].outcome == "finished"
    assert app.drawn == ["timeline", "code"]
