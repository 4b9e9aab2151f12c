"""The engine: one debugging session (UTGen + self-consistency + UTDebug) as a stream of events.

Front ends (the TUI, the benchmark, the CI check) build a :class:`Task`, pick a model and a
:class:`Settings`, run a :class:`Session` and consume its events. Nothing here imports
Textual or litellm.
"""

from utdebug.engine.control import Control, SessionCancelled
from utdebug.engine.events import Event, event_to_json
from utdebug.engine.execution import Executor, TestRun
from utdebug.engine.model import Settings, Task, UnitTest, UTMethod, Variant, code_id
from utdebug.engine.session import Session, SessionResult, stream

__all__ = [
    "Control",
    "Event",
    "Executor",
    "Session",
    "SessionCancelled",
    "SessionResult",
    "Settings",
    "Task",
    "TestRun",
    "UTMethod",
    "UnitTest",
    "Variant",
    "code_id",
    "event_to_json",
    "stream",
]
