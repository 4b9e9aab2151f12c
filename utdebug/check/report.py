"""What ``utdebug check`` found: one :class:`FunctionReport` per checked function.

A *finding* is a generated test that the function does not pass (wrong value, an exception or
no answer in time) and whose expected output won at least ``min_votes`` of the
self-consistency votes: a confident test that breaks the function. Tests that fail with a
weaker majority are kept in the report but are not findings.

Without a model, a function's status says what its comparison with its base version found:
changed (findings), unchanged on K inputs (ok), nondeterministic, or not compared (and why).

Exit codes (:meth:`CheckReport.exit_code`): 0 no findings, 1 findings (or fewer functions
compared with their base than ``min_compared`` asks), 2 a usage or environment error,
including a function that could not be checked (a module that does not load, I/O the sandbox
blocks, a model error), unless ``allow_errors`` is set; a run that was stopped before it
checked every function (:class:`Partial`) exits 124 (its deadline), 130 (SIGINT) or 143
(SIGTERM), whatever it found.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from utdebug.cli_common import Exit

SCHEMA_VERSION = 5
"""Version of the JSON report (``schema_version``); see ``utdebug/check/report.schema.json``."""


class Status(StrEnum):
    OK = "ok"
    """Tests ran; no finding."""
    FINDINGS = "findings"
    """At least one finding."""
    ERROR = "error"
    """The function could not be checked; ``message`` says why."""
    SKIPPED = "skipped"
    """Not checked on purpose (a method of a nested class, ``# utdebug: skip``)."""
    NOT_COMPARED = "not compared"
    """Without a model: not compared with its base version (``message`` says why)."""
    NONDETERMINISTIC = "nondeterministic"
    """Without a model: most inputs gave different outcomes in two runs of one version."""


class TestVerdict(StrEnum):
    __test__ = False  # not a pytest class
    PASS = "pass"
    FAIL = "fail"
    """Returned a different value."""
    ERROR = "error"
    """Raised an exception."""
    TIMEOUT = "timeout"
    """Did not return in time (or the batch ran out of time)."""
    CRASH = "crash"
    """The sandboxed child died."""


@dataclass(frozen=True, slots=True)
class TestResult:
    """One generated test and what the function did with it."""

    __test__: ClassVar[bool] = False  # not a pytest class
    id: int
    call: str
    """The call as the model wrote it, e.g. ``add(0, 5)``."""
    expected: str
    """``repr`` of the voted expected output."""
    share: float
    """Share of the votes the expected output won (1.0 without voting)."""
    draws: int
    """Votes drawn (0 without voting)."""
    verdict: TestVerdict
    actual: str | None = None
    """``returned <repr>``, ``raised <Type>: <message>``, or why it timed out; None on a pass."""
    finding: bool = False
    """Failed, with ``share >= min_votes``."""
    code: str | None = None
    """A test with setup (a method's, a property's ...): the test's code, setup lines then the
    assertion (``None`` for a literal-argument test, whose call says it all)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "call": self.call,
            "code": self.code,
            "expected": self.expected,
            "share": round(self.share, 4),
            "draws": self.draws,
            "verdict": self.verdict.value,
            "actual": self.actual,
            "finding": self.finding,
        }


@dataclass(frozen=True, slots=True)
class FixResult:
    """What ``--fix`` did for one function."""

    pass_before: float | None
    """Pass rate of the original on the generated tests."""
    pass_after: float | None
    """Pass rate of the code in force at the end."""
    accepted_edits: int
    patch: str | None
    """Unified diff (``a/PATH``, ``b/PATH``) of the function, or None when nothing improved."""
    applied: bool = False
    """The fix was written to the working tree (``--apply``)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "pass_before": self.pass_before,
            "pass_after": self.pass_after,
            "accepted_edits": self.accepted_edits,
            "patch": self.patch,
            "applied": self.applied,
        }


@dataclass(frozen=True, slots=True)
class Refusal:
    """Replies of the model that gave nothing usable: how many, for what, and why (never the
    replies' text)."""

    purpose: str
    """``ut`` (a test proposal), ``vote``, ``debug`` (an edit), or ``any`` (replies that were
    no answer: empty, or cut off by the server, and were asked again)."""
    reason: str
    count: int

    def to_json(self) -> dict[str, Any]:
        return {"purpose": self.purpose, "reason": self.reason, "count": self.count}


@dataclass(frozen=True, slots=True)
class Change:
    """An input on which the checked version's outcome differs from the base version's (a
    differential finding): ``was 4, now 5``, ``now raises KeyError``."""

    call: str
    """The call, e.g. ``total([1, 2], 5)``."""
    input: str
    """The arguments as Python literals (the accept file's text)."""
    before: str
    """The base's outcome in words: a value's ``repr`` or ``raises ValueError``."""
    after: str
    """The checked version's outcome in words (``times out``, ``crashes`` too)."""
    description: str

    def to_json(self) -> dict[str, Any]:
        return {
            "call": self.call,
            "input": self.input,
            "before": self.before,
            "after": self.after,
            "description": self.description,
        }


@dataclass(frozen=True, slots=True)
class Unstable:
    """An input whose outcome differed between two runs of one version (nondeterministic):
    never a finding."""

    call: str
    input: str
    version: str
    """``base`` or ``head``: the version whose two runs differed (the first one found)."""
    first: str
    """That version's outcome in its first run, in words."""
    second: str
    """... and in its second run."""

    def to_json(self) -> dict[str, Any]:
        return {
            "call": self.call,
            "input": self.input,
            "version": self.version,
            "first": self.first,
            "second": self.second,
        }


class Comparison(StrEnum):
    """What a function's comparison with its base version found."""

    CHANGED = "changed"
    UNCHANGED = "unchanged"
    NONDETERMINISTIC = "nondeterministic"
    NOT_COMPARED = "not compared"


@dataclass(frozen=True, slots=True)
class Differential:
    """The function against its base version on synthesised inputs (differential testing)."""

    compared: bool
    """Whether the two versions ran at all (``False``: no base, no seed; ``message`` says why)."""
    message: str
    base: str | None = None
    """The base revision compared against (``None``: there was none)."""
    inputs: int = 0
    """Inputs run on both versions."""
    seeds: int = 0
    """Seed inputs found (the function's calls in the repository's tests and docstrings)."""
    changes: tuple[Change, ...] = ()
    """Changed outcomes not accepted, smallest input first: the findings."""
    accepted: tuple[Change, ...] = ()
    """Changed outcomes the accept file covers (not findings)."""
    notes: tuple[str, ...] = ()
    unstable: tuple[Unstable, ...] = ()
    """Inputs whose outcome differed between two runs of one version (not findings)."""
    outcome: Comparison = Comparison.NOT_COMPARED
    """What the comparison found: changed, unchanged, nondeterministic, not compared."""

    def to_json(self) -> dict[str, Any]:
        return {
            "compared": self.compared,
            "status": self.outcome.value,
            "message": self.message,
            "base": self.base,
            "inputs": self.inputs,
            "seeds": self.seeds,
            "changes": [c.to_json() for c in self.changes],
            "accepted": [c.to_json() for c in self.accepted],
            "nondeterministic": [u.to_json() for u in self.unstable],
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True)
class FunctionReport:
    """One function (``path::qualname``) and the outcome of checking it."""

    path: str
    """Path relative to the repository root, with ``/`` separators."""
    qualname: str
    line: int
    """First line of the function (its first decorator), 1-based; 0 when unknown."""
    end_line: int
    status: Status
    message: str
    """One line: what happened (``2 of 3 tests fail``, why it was not checked, ...)."""
    tests: tuple[TestResult, ...] = ()
    cached: bool = False
    """The result came from the cache (the function, its module and the model are unchanged)."""
    seconds: float = 0.0
    fix: FixResult | None = None
    refused: tuple[Refusal, ...] = ()
    """The model's replies that were refused while checking it, by purpose and reason."""
    differential: Differential | None = None
    """The function against its base version on synthesised inputs (None: not run)."""

    @property
    def target(self) -> str:
        return f"{self.path}::{self.qualname}"

    @property
    def findings(self) -> tuple[TestResult, ...]:
        return tuple(t for t in self.tests if t.finding)

    @property
    def changes(self) -> tuple[Change, ...]:
        """Changed outcomes against the base version (differential findings)."""
        return self.differential.changes if self.differential is not None else ()

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "qualname": self.qualname,
            "line": self.line,
            "end_line": self.end_line,
            "status": self.status.value,
            "message": self.message,
            "cached": self.cached,
            "seconds": round(self.seconds, 3),
            "tests": [t.to_json() for t in self.tests],
            "fix": self.fix.to_json() if self.fix is not None else None,
            "refused_replies": [r.to_json() for r in self.refused],
            "differential": self.differential.to_json() if self.differential else None,
        }


@dataclass(frozen=True, slots=True)
class Partial:
    """Why a run stopped before it checked every function, and how far it got."""

    reason: str
    """``SIGTERM``, ``SIGINT`` or ``deadline`` (``--deadline``)."""
    unfinished: int
    """Functions not checked because the run stopped (reported as errors that say so)."""
    exit_code: Exit

    def message(self) -> str:
        by = "its deadline (--deadline)" if self.reason == "deadline" else self.reason
        return (
            f"PARTIAL REPORT: the run was stopped by {by}; {self.unfinished} "
            f"function{'' if self.unfinished == 1 else 's'} not checked; the model's replies "
            "so far are cached: rerun the same command to go on"
        )

    def to_json(self) -> dict[str, Any]:
        return {"reason": self.reason, "unfinished": self.unfinished, "message": self.message()}


@dataclass(frozen=True, slots=True)
class CheckReport:
    """The whole run."""

    tool_version: str
    model: str
    simulated: bool
    """The model is scripted or simulated (not a language model): said in every output."""
    repository: str
    """Absolute path of the repository's working tree."""
    revision: str
    """What was checked: ``working tree`` or a commit sha."""
    base: str | None
    """The commit the change was taken against (``--changed``), else None."""
    min_votes: float
    settings: dict[str, Any] = field(default_factory=dict)
    """Engine settings that shaped the tests (n, k, threshold, rounds)."""
    functions: tuple[FunctionReport, ...] = ()
    started_at: str = ""
    """ISO 8601 UTC time the run started."""
    seconds: float = 0.0
    allow_errors: bool = False
    min_compared: float = 0.0
    """The share of the changed functions that must be compared with their base version
    (``--min-compared``); fewer is a failure (exit code 1)."""
    partial: Partial | None = None
    """The run was stopped before it checked every function (``None``: it was not)."""

    @property
    def changed_functions(self) -> tuple[FunctionReport, ...]:
        """The library functions the comparison with the base is about: all but the files
        that do not parse, the functions of test files (not compared before any comparison
        began: no ``differential``) and the functions whose syntax tree (and module context)
        is the base's."""
        return tuple(
            f
            for f in self.functions
            if f.qualname != "<module>"
            and not (f.status is Status.NOT_COMPARED and f.differential is None)
            and not (
                f.differential is not None
                and f.differential.outcome is Comparison.UNCHANGED
                and not f.differential.compared
            )
        )

    @property
    def compared(self) -> int:
        """Changed functions compared with their base version (on at least one input)."""
        return sum(
            f.differential is not None and f.differential.compared for f in self.changed_functions
        )

    @property
    def compared_too_few(self) -> bool:
        """Fewer changed functions were compared than ``min_compared`` asks."""
        total = len(self.changed_functions)
        return bool(total) and self.compared < self.min_compared * total

    @property
    def findings(self) -> int:
        """Findings of every kind: confident failing tests and changed outcomes."""
        return sum(len(f.findings) + len(f.changes) for f in self.functions)

    @property
    def changes(self) -> int:
        return sum(len(f.changes) for f in self.functions)

    @property
    def errors(self) -> int:
        return sum(f.status is Status.ERROR for f in self.functions)

    def count(self, status: Status) -> int:
        return sum(f.status is status for f in self.functions)

    def exit_code(self) -> Exit:
        if self.partial is not None:
            return self.partial.exit_code
        if self.findings or self.compared_too_few:
            return Exit.FAILURE
        if self.errors and not self.allow_errors:
            return Exit.USAGE
        return Exit.OK

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "utdebug", "version": self.tool_version},
            "model": self.model,
            "simulated": self.simulated,
            "repository": self.repository,
            "revision": self.revision,
            "base": self.base,
            "min_votes": self.min_votes,
            "min_compared": self.min_compared,
            "settings": dict(self.settings),
            "started_at": self.started_at,
            "seconds": round(self.seconds, 3),
            "summary": {
                "functions": len(self.functions),
                "ok": self.count(Status.OK),
                "findings": self.findings,
                "functions_with_findings": self.count(Status.FINDINGS),
                "errors": self.errors,
                "skipped": self.count(Status.SKIPPED),
                "cached": sum(f.cached for f in self.functions),
                "changed_outcomes": self.changes,
                "changed_functions": len(self.changed_functions),
                "compared": self.compared,
                "not_compared": self.count(Status.NOT_COMPARED),
                "nondeterministic": self.count(Status.NONDETERMINISTIC),
            },
            "exit_code": self.exit_code(),
            "partial": self.partial.to_json() if self.partial is not None else None,
            "functions": [f.to_json() for f in self.functions],
        }
