"""The typed events a session emits: the one API that front ends consume.

Every event is a frozen dataclass with a ``kind`` and serialises to JSON with
:func:`event_to_json`; a benchmark record's trace is the list of its events in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from utdebug.engine.model import UnitTest


@dataclass(frozen=True, slots=True)
class Event:
    kind: ClassVar[str] = "event"
    __test__: ClassVar[bool] = False  # "Test..." event names are not pytest classes
    quiet_defaults: ClassVar[tuple[str, ...]] = ()
    """Fields left out of :func:`event_to_json` while they hold their default (fields added
    later: records made before them read as before)."""


@dataclass(frozen=True, slots=True)
class SessionStarted(Event):
    kind: ClassVar[str] = "session_started"
    task_id: str
    model: str
    simulated: bool
    settings: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ModelCalled(Event):
    """One call to the model finished (``cached``: served from the response cache)."""

    kind: ClassVar[str] = "model_called"
    purpose: str
    n: int
    prompt_tokens: int
    completion_tokens: int
    cost: float | None
    cached: bool
    seconds: float


@dataclass(frozen=True, slots=True)
class TestProposed(Event):
    kind: ClassVar[str] = "test_proposed"
    round: int
    attempt: int
    call: str | None
    """The parsed call, or ``None`` when the reply did not parse."""
    reply: str
    reason: str | None = None
    """Why the proposal could not be parsed (``cut at the token limit: ...`` when the reply
    was cut)."""
    finish_reason: str = "stop"
    """As the model reported it (``length``: cut at the token limit)."""
    input_source: str = "model"
    """Where the input came from: ``model`` (the generator's reply) or ``synth:<source>``
    (a synthesised input: no generator call, ``reply`` says so; its output is voted)."""
    quiet_defaults: ClassVar[tuple[str, ...]] = ("input_source",)

    @property
    def synthesised(self) -> bool:
        return self.input_source.startswith("synth:")


@dataclass(frozen=True, slots=True)
class VoteCast(Event):
    kind: ClassVar[str] = "vote_cast"
    round: int
    attempt: int
    index: int
    answer: str | None
    """``repr`` of the predicted output, or ``None`` for an unparsable vote."""
    reply: str | None = None
    """The vote's reply, kept when the vote was refused."""
    reason: str | None = None
    """Why the vote was refused (``cut at the token limit: ...`` when the reply was cut)."""
    finish_reason: str = "stop"
    """As the model reported it (``length``: cut at the token limit)."""


@dataclass(frozen=True, slots=True)
class TestKept(Event):
    kind: ClassVar[str] = "test_kept"
    round: int
    attempt: int
    test: UnitTest


@dataclass(frozen=True, slots=True)
class TestDropped(Event):
    kind: ClassVar[str] = "test_dropped"
    round: int
    attempt: int
    call: str | None
    reason: str
    share: float | None = None


@dataclass(frozen=True, slots=True)
class TestsBuilt(Event):
    """The generated-test set for ``code_id`` is complete (possibly empty)."""

    kind: ClassVar[str] = "tests_built"
    round: int
    code_id: str
    tests: list[UnitTest]
    attempts: int


@dataclass(frozen=True, slots=True)
class TestsRun(Event):
    kind: ClassVar[str] = "tests_run"
    round: int
    code_id: str
    role: str
    """``current`` (the accepted code) or ``candidate`` (a proposed edit)."""
    passed: int
    total: int
    verdicts: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class EditProposed(Event):
    """A debugger reply and the program it proposes: in the paper variant the reply's edit
    merged into the code in force (:mod:`utdebug.agents.edits`), in the reference variant
    its code block as the whole program."""

    kind: ClassVar[str] = "edit_proposed"
    round: int
    code_id: str | None
    code: str | None
    reply: str
    feedback_test: int | None
    """Id of the generated test given as feedback (``None``: no feedback turn)."""
    reason: str | None = None
    """Why the reply gives no program (no code, the code does not parse, the edit changes
    nothing, it renames the function ...)."""
    candidate: int | None = None
    """Index of this sample among the round's candidates (``None``: one edit per round)."""
    replaced: list[str] = field(default_factory=list)
    """Paper variant: what of the code in force the edit replaced (``function f``) or removed
    (``removed the code's own assert at line 5 (calls f)``)."""
    added: list[str] = field(default_factory=list)
    """Paper variant: what the edit added to the module (``import math``, ``function g``)."""
    dropped: list[str] = field(default_factory=list)
    """Paper variant: what of the reply's code was left out (``assert at line 12``,
    ``function check_solution (unused)``)."""


@dataclass(frozen=True, slots=True)
class CandidatesRanked(Event):
    """The round's candidate edits, with the code in force, ranked against the tests.

    Row 0 of the passing matrix is the code in force; rows 1.. are the distinct candidates in
    sampling order. ``ranking`` is :meth:`utdebug.ranking.Ranking.to_json` (every group with
    its score, the winners and the selected rows); ``chosen`` is the row put forward (the
    first selected candidate), ``None`` when the ranking selected only the code in force.
    """

    kind: ClassVar[str] = "candidates_ranked"
    round: int
    code_ids: list[str]
    pass_rates: list[float]
    matrix: list[list[int]]
    ranking: dict[str, Any]
    chosen: int | None


@dataclass(frozen=True, slots=True)
class DisagreementsFound(Event):
    """The round's candidate edits and the code in force ran on synthesised inputs not yet
    tried: ``found`` of the ``checked`` inputs gave different outcomes across the ``programs``
    and go first in the queue of inputs to vote on (they can tell the candidates apart)."""

    kind: ClassVar[str] = "disagreements_found"
    round: int
    programs: int
    checked: int
    found: int
    inputs: list[str] = field(default_factory=list)
    """The calls of the first few disagreement inputs, as a test shows them."""


@dataclass(frozen=True, slots=True)
class EditAccepted(Event):
    kind: ClassVar[str] = "edit_accepted"
    round: int
    code_id: str
    pre: float | None
    post: float | None
    reason: str


@dataclass(frozen=True, slots=True)
class Backtracked(Event):
    kind: ClassVar[str] = "backtracked"
    round: int
    code_id: str | None
    pre: float | None
    post: float | None
    reason: str


@dataclass(frozen=True, slots=True)
class RoundFinished(Event):
    """The code in force after round ``round`` (round 0: the given code)."""

    kind: ClassVar[str] = "round_finished"
    round: int
    code_id: str
    code: str
    pass_rate: float | None
    """Pass rate of that code on the generated tests in force (``None``: no tests)."""


@dataclass(frozen=True, slots=True)
class TestChanged(Event):
    """A person edited a test's expected output, added, deleted or restored (undo) a test."""

    kind: ClassVar[str] = "test_changed"
    round: int
    action: str
    """``edited``, ``added``, ``deleted`` or ``restored``."""
    test: UnitTest


@dataclass(frozen=True, slots=True)
class RolledBack(Event):
    """A person went back to an earlier accepted version of the code."""

    kind: ClassVar[str] = "rolled_back"
    round: int
    version: int
    """Index into the session's versions (0: the given code)."""
    code_id: str
    code: str


@dataclass(frozen=True, slots=True)
class DoesNotLoad(Event):
    """The code does not load in the sandbox (a missing import, an error at module level, a
    folder the sandbox cannot see): the session stops after round 0, before any model call."""

    kind: ClassVar[str] = "does_not_load"
    round: int
    code_id: str
    error: str
    """The exception, ``Type: message``."""

    @property
    def line(self) -> str:
        return does_not_load_line(self.error)


def does_not_load_line(error: str) -> str:
    """The one line every front end says about code that does not load (``check`` prefixes
    ``not checked: ``)."""
    return f"its module does not load in the sandbox: {error}"


@dataclass(frozen=True, slots=True)
class Paused(Event):
    kind: ClassVar[str] = "paused"
    round: int


@dataclass(frozen=True, slots=True)
class Finished(Event):
    kind: ClassVar[str] = "finished"
    reason: str
    """``all_pass``, ``rounds``, ``no_tests``, ``judged_correct``, ``cancelled``, ``error``,
    ``does_not_load`` (:class:`DoesNotLoad` says why)."""
    code_id: str
    code: str
    rounds: int
    usage: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def event_to_json(event: Event) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": event.kind}
    quiet = event.quiet_defaults
    for f in fields(event):
        value = getattr(event, f.name)
        if f.name in quiet and value == f.default:
            continue
        out[f.name] = _plain(value)
    return out


def _plain(v: Any) -> Any:
    """JSON-ready data: objects with ``to_json``, containers, and ``repr`` of anything else."""
    if hasattr(v, "to_json"):
        return _plain(v.to_json())
    if isinstance(v, list | tuple):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if v is None or isinstance(v, bool | int | float | str):
        return v
    return repr(v)
