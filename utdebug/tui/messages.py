"""Messages that workers post to the app (workers never touch widgets themselves)."""

from __future__ import annotations

import asyncio

from textual.message import Message

from utdebug.engine.events import Event
from utdebug.engine.session import EditReview


class EngineEvent(Message):
    """One event of the session, in the order the engine emitted it."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class ReviewRequested(Message):
    """The session waits for a person to accept or reject an edit (resolve ``decision``)."""

    def __init__(self, review: EditReview, decision: asyncio.Future[bool]) -> None:
        super().__init__()
        self.review = review
        self.decision = decision


class PersonDone(Message):
    """A person's change was applied and the tests ran again."""

    def __init__(self, what: str, passed: int, total: int) -> None:
        super().__init__()
        self.what = what
        self.passed = passed
        self.total = total


class PersonFailed(Message):
    """A person's change was refused by the engine (the message says why)."""

    def __init__(self, what: str, error: str) -> None:
        super().__init__()
        self.what = what
        self.error = error


class OriginalsRun(Message):
    """The first tests (kept after new ones were built) ran on the code ``code_id``: one
    ``(test id, status, detail)`` each, or ``error`` when the run failed."""

    def __init__(
        self, code_id: str, results: list[tuple[int, str, str | None]], error: str | None = None
    ) -> None:
        super().__init__()
        self.code_id = code_id
        self.results = results
        self.error = error
