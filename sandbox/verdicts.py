"""Per-input verdicts: a child's Outcome, judged in the parent against the expected value."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from utdebug.sandbox.compare import (
    CheckSpec,
    Semantics,
    budget_applies,
    compared_by_repr,
    outputs_match,
    within_budget,
)
from utdebug.sandbox.outcomes import Outcome, Status
from utdebug.sandbox.values import describe

REPR_NOTE = "compared by repr"
"""The detail of a verdict on a result the sandbox could not encode (or an expected value
known only by its text): such a result equals only an expected value of the same repr."""


class Verdict(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    """Wrong value, or the program raised (the detail says which)."""
    TIMEOUT = "timeout"
    CRASH = "crash"

    @property
    def letter(self) -> str:
        return {"pass": "P", "fail": "F", "timeout": "T", "crash": "C"}[self.value]


@dataclass(frozen=True, slots=True)
class Judged:
    verdict: Verdict
    detail: str | None = None
    """For a fail: ``returned <repr>`` or ``raised <Type>: <message>``; otherwise the reason.
    A result compared by its repr says so (``compared by repr``), also on a pass."""


def judge(
    outcome: Outcome,
    expected: Any,
    check: CheckSpec,
    semantics: Semantics = Semantics.DATASET,
    args: Sequence[Any] = (),
) -> Judged:
    if outcome.status is Status.OK:
        mode = Semantics(semantics)
        if budget_applies(check, mode) and not within_budget(outcome.value, expected):
            # judged without a full comparison (nor a walk for opaque parts): its cost is
            # bounded by the expected value's size, never by the program's
            return Judged(
                Verdict.FAIL,
                "returned a value far larger than expected: " + describe(outcome.value, 500),
            )
        by_repr = (
            not (check.never_asserts or check.poly_root)  # these compare no expected value
            and compared_by_repr(outcome.value, expected)
        )
        if outputs_match(outcome.value, expected, check, mode, args, sized=True):
            return Judged(Verdict.PASS, REPR_NOTE if by_repr else None)
        shown = "returned " + describe(outcome.value, 500)
        return Judged(Verdict.FAIL, f"{shown} ({REPR_NOTE})" if by_repr else shown)
    if outcome.status is Status.ERROR:
        # The dataset helper of MBPP 737/794 never asserts, but an exception still fails it.
        return Judged(Verdict.FAIL, f"raised {outcome.error_type}: {outcome.error}")
    if outcome.status is Status.TIMEOUT:
        return Judged(Verdict.TIMEOUT, outcome.error)
    return Judged(Verdict.CRASH, f"{outcome.error_type}: {outcome.error}")
