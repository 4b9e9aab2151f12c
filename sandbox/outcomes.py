"""What a sandboxed input did (:class:`Outcome`, :class:`BatchResult`), and the parent's
verdicts on a child's report against its own clocks (see ``docs/sandbox.md``)."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

import utdebug.sandbox._runner as _runner
from utdebug.sandbox.config import LimitKind, Limits
from utdebug.sandbox.values import exception_satisfies


class Status(StrEnum):
    OK = "ok"
    """The program returned a value."""
    ERROR = "error"
    """The program raised (or failed to load)."""
    TIMEOUT = "timeout"
    CRASH = "crash"
    """The child died, or broke the result protocol, while running this input."""


@dataclass(frozen=True, slots=True)
class Raised:
    """What the child's runner read of an exception, with references it took before any
    program ran (see ``_runner._make_exc_facts``): the stage of a test with setup it came
    from (``setup``, ``call``, ``then``; None for a plain call), the builtin exception classes
    of its class's MRO, found by identity, and the module and qualified name of its other
    classes. Names a program gave its own classes are names; a builtin is a builtin only by
    identity."""

    stage: str | None
    builtins: tuple[str, ...]
    classes: tuple[tuple[str, str], ...]

    def satisfies(self, expected: str) -> bool:
        """Whether this exception satisfies "raises ``expected``", as ``except expected``
        would: a builtin name (``KeyError``, ``LookupError``) by identity with the builtin
        class, any other name (``InsufficientFunds``, ``json.JSONDecodeError``) by the last
        part of a class's qualified name (a class is often raised from a module other than
        the one that exports it). A module's own class named like a builtin satisfies no
        builtin name."""
        return exception_satisfies(self.builtins, self.classes, expected)

    @classmethod
    def of(cls, raw: object) -> Raised | None:
        """From a result frame's ``x`` (None when it is absent or malformed)."""
        facts = _runner.read_exc_facts(raw)
        return None if facts is None else cls(*facts)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one input did. ``value`` is plain, decoded data (or an ``Opaque``).

    ``seconds`` is the measure the input's limit was checked against: under CPU-time limits
    the CPU time the parent charged to the input (from the end of the previous input's report
    to the end of this one's: decoding its arguments, the call, encoding its value); under
    wall-clock limits the wall time of the call and the encoding of its value, as the child
    measured it. 0 for an input that was not run.
    """

    status: Status
    value: Any = None
    error_type: str | None = None
    error: str | None = None
    seconds: float = 0.0
    raised: Raised | None = None
    """For an ``error``: the exception as the runner read it (None for errors the parent
    made, or a child that sent no such facts)."""
    facts: tuple[Any, ...] = ()
    """A test with setup's assertion facts, decoded, in the order the child sent them as they
    happened (see docs/sandbox.md, "Integrity"): ``[kind, line, operands, keyword operands,
    identity, classes, hooked]``, or None for one too large to send."""

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"status": self.status.value, "t": round(self.seconds, 6)}
        if self.error_type is not None:
            d["error_type"] = self.error_type
            d["error"] = self.error
        return d


@dataclass(slots=True)
class BatchResult:
    outcomes: list[Outcome]
    children: int = 0
    """Confined children used (1 + one per resume after a crash or hang)."""
    peak_rss_kb: int = 0
    """Largest resident set of any of this batch's children."""
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    load_error: str | None = None
    notes: list[str] = field(default_factory=list)
    decoded_bytes: int = 0
    """What its decoded values may hold in the parent, as booked (see ``BATCH_DECODE``)."""
    parent_seconds: float = 0.0
    """The parent's CPU time reading its children's frames (measured for large frames,
    estimated for small ones; see ``collector.PARENT_FACTOR``)."""


class SandboxError(RuntimeError):
    """The sandbox itself failed (not the program under test)."""


def _of(lim: Limits) -> str:
    return " CPU-time" if lim.kind is LimitKind.CPU else ""


def _charge_cpu(outcome: Outcome, charged: float, limit: float, cut: bool, lim: Limits) -> Outcome:
    """The parent's verdict on an input under CPU-time limits, from its own readings of the
    child's CPU clock: more CPU time than its limit is a timeout whatever the child reported,
    and a timeout the child reports is one only when the charge has reached the limit;
    ``seconds`` is the CPU time charged."""
    reduced = " (the reduced limit, after earlier timeouts)" if cut else ""
    if outcome.status is Status.TIMEOUT and outcome.error_type == "Timeout":
        if "decod" in (outcome.error or ""):
            why = outcome.error
        elif charged < limit:
            why = (
                f"reported a timeout after {charged:.3f} s of CPU time, short of its {limit:g} s "
                f"limit{reduced}: not confirmed by the child's CPU clock"
            )
            return Outcome(Status.ERROR, None, "Timeout", why, charged)
        else:
            why = f"timed out: {limit:g} s of CPU time{reduced}"
        return Outcome(Status.TIMEOUT, None, "Timeout", why, charged)
    if outcome.status in (Status.OK, Status.ERROR) and charged > limit:
        why = f"used {charged:.3f} s of CPU time, over its {limit:g} s limit{reduced}"
        return Outcome(Status.TIMEOUT, None, "Timeout", why, charged)
    return replace(outcome, seconds=charged)


def _charge_wall(outcome: Outcome, took: float, limit: float, cut: bool) -> Outcome:
    """The parent's verdict under wall-clock limits: a result that arrived more than its
    limit after its input was sent is a timeout, whatever the child reported (a program may
    ignore its timer), and a timeout the child reports is one only when that much time has
    passed (a program can raise the child's own timeout exception); ``seconds`` is the
    child's measure, at most the parent's."""
    reported = outcome.status is Status.TIMEOUT and outcome.error_type == "Timeout"
    if reported and took < limit and "decod" not in (outcome.error or ""):
        why = (
            f"reported a timeout after {took:.3f} s of wall-clock time, short of its "
            f"{limit:g} s limit: not confirmed by the parent's clock"
        )
        return Outcome(Status.ERROR, None, "Timeout", why, took)
    if outcome.status in (Status.OK, Status.ERROR) and took > limit:
        reduced = " (the reduced limit, after earlier timeouts)" if cut else ""
        why = f"took {took:.3f} s of wall-clock time, over its {limit:g} s limit{reduced}"
        return Outcome(Status.TIMEOUT, None, "Timeout", why, took)
    if outcome.seconds > took:
        return replace(outcome, seconds=took)
    return outcome


def _short(x: object, n: int = 40) -> str:
    """A bounded rendering of a field of a child's frame (never the repr of a huge value)."""
    if type(x) is str:
        return repr(x[:n])
    if x is None or type(x) in (bool, int, float):
        return repr(x)[:n]
    return f"<{type(x).__name__}>"


def _error_pair(raw: object) -> tuple[str, str]:
    if type(raw) is list and len(raw) == 2 and all(type(x) is str for x in raw):
        return raw[0][:200], raw[1][:2000]
    return "Error", "(malformed error report)"


def _decoded_late(outcome: Outcome) -> Outcome:
    why = "the result was decoded past the input's deadline (decoding counts in its time)"
    return Outcome(Status.TIMEOUT, None, "Timeout", why, outcome.seconds)


def _not_run(res: BatchResult, n: int, lim: Limits) -> None:
    left = n - len(res.outcomes)
    if left > 0:
        why = f"not run: the batch's {lim.batch:g} s{_of(lim)} budget was spent"
        res.outcomes.extend([Outcome(Status.TIMEOUT, None, "Timeout", why)] * left)
        res.notes.append(f"{left} input(s) not run: the batch budget was spent")


def _not_read(res: BatchResult, n: int) -> None:
    left = n - len(res.outcomes)
    if left > 0:
        why = "not run: an earlier result of the batch was too costly for the parent to read"
        res.outcomes.extend([Outcome(Status.ERROR, None, "OutputTooLarge", why)] * left)
        res.notes.append(f"{left} input(s) not run: a result was too costly to read")


def _violation(why: str) -> Outcome:
    return Outcome(Status.CRASH, None, "ProtocolViolation", why)


def _timeout_outcome(index: int, seconds: float) -> Outcome:
    what = "loading the program" if index < 0 else "the input"
    return Outcome(
        Status.TIMEOUT, None, "Timeout", f"{what} hit the hard deadline; killed", seconds
    )


def _cpu_timeout_outcome(index: int, limit: float, lim: Limits, used: float) -> Outcome:
    what = "loading the program" if index < 0 else "the input"
    why = f"{what} used more than {limit:g} s + {lim.slack:g} s of CPU time (hard deadline); killed"
    return Outcome(Status.TIMEOUT, None, "Timeout", why, used)


def _backstop_outcome(
    index: int, limit: float, lim: Limits, used: float, slept: float, queued: float
) -> Outcome:
    what = "loading the program" if index < 0 else "the input"
    why = (
        f"{what} slept or was blocked past the {lim.backstop(limit):g} s wall-clock backstop "
        f"({slept:.2f} s asleep or blocked, {used:.3f} s of CPU time, {queued:.2f} s waiting "
        "for a CPU; hard deadline); killed"
    )
    return Outcome(Status.TIMEOUT, None, "Timeout", why, used)


def _describe_status(stats: dict[str, Any]) -> str:
    st = stats.get("status")
    if st is None:
        return "the child disappeared"
    if os.WIFSIGNALED(st):
        sig = os.WTERMSIG(st)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return f"the child was killed by {name}"
    return f"the child exited with status {os.WEXITSTATUS(st)} before reporting"
