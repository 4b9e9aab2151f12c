"""Compare the runs of both versions: changed outcomes, and nondeterminism found, not reported.

For each input the base answered, in order:

- an input not really run (a time-out that says nothing: the batch's budget spent, the reduced
  limit after earlier time-outs) in any run is left out;
- when both versions return an object the sandbox cannot send back (known only by its
  ``repr``), the input is *not comparable*;
- when one version's runs disagree (:func:`same_outcome`: another value, even by a float's
  last bit, another exception, a time-out once), the input is *nondeterministic*: listed as
  such, never a finding (an object known only by its ``repr`` is the same when the texts
  agree but for memory addresses, ``<map object at 0x7f...>``);
- otherwise the versions' first runs are compared (:func:`utdebug.synth.differential.finding_of`):
  a changed outcome is a finding, unless the accept file covers it.

A function whose nondeterministic inputs are as many as the inputs compared (or more) is
nondeterministic as a whole: its changed outcomes are not findings either (their inputs only
seemed stable).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from utdebug.check.report import Comparison as Verdict
from utdebug.check.report import Unstable
from utdebug.sandbox.compare import contains_opaque
from utdebug.sandbox.outcomes import Outcome, Status
from utdebug.sandbox.values import describe
from utdebug.synth.differential import Finding, finding_of, incomparable, outcome_words
from utdebug.synth.oracle import inconclusive
from utdebug.synth.values import canonical, input_key

if TYPE_CHECKING:
    from utdebug.check.runs import Run, Runs
    from utdebug.synth.differential import Accepts, DiffSettings

__all__ = ["Compared", "compare_runs", "same_outcome"]

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
"""The memory address in a default ``repr`` (``<function f at 0x7f...>``): another in every
child, so no sign of nondeterminism."""


@dataclass(frozen=True, slots=True)
class Compared:
    """What the runs of both versions show (the compare stage's value)."""

    verdict: Verdict
    inputs: int
    """Inputs compared: both versions stable and comparable."""
    findings: tuple[Finding, ...]
    """Changed outcomes not accepted, smallest input first."""
    accepted: tuple[Finding, ...]
    unstable: tuple[Unstable, ...]
    """Nondeterministic inputs, smallest first."""
    incomparable: int
    not_run: int
    """Inputs left out: a time-out that says nothing in some run."""
    hidden: int = 0
    """Changed outcomes not reported because the function is nondeterministic."""
    example: str = ""
    """An object's text when inputs were not comparable (for the note)."""


def same_outcome(a: Outcome, b: Outcome) -> bool:
    """Whether two runs of one version gave the same outcome: the same exception class, or
    equal values, exactly (floats to the bit: one version's code on one input gives the same
    float every time unless something varies; objects known only by their text by that
    text, memory addresses left out)."""
    if a.status is not b.status:
        return False
    if a.status is Status.ERROR:
        return a.error_type == b.error_type
    if a.status is not Status.OK:
        return True  # both timed out or both crashed
    if contains_opaque(a.value) or contains_opaque(b.value):
        return _ADDRESS.sub("", describe(a.value)) == _ADDRESS.sub("", describe(b.value))
    try:
        return _equal(a.value, b.value)
    except Exception:  # a value whose comparison fails: not known to be the same
        return False


def _equal(a: Any, b: Any) -> bool:
    """``a == b`` with floats compared exactly (``nan`` equal to itself) inside containers."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(v, b[k]) for k, v in a.items())
    if type(a).__module__ == "numpy":
        import numpy as np

        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    return bool(a == b)


def _unstable(runs: tuple[Run, ...], i: int) -> tuple[Outcome, Outcome] | None:
    """Two outcomes of one version's runs on input ``i`` that differ (None: all agree)."""
    seen = [r.outcomes[i] for r in runs if i in r.outcomes]
    first = seen[0]
    return next(((first, o) for o in seen[1:] if not same_outcome(first, o)), None)


def _said_nothing(runs: Runs, i: int) -> bool:
    return any(i in r.outcomes and inconclusive(r.outcomes[i]) for r in (*runs.base, *runs.head))


def compare_runs(
    function: str, name: str, runs: Runs, cfg: DiffSettings, accepts: Accepts, revision: str
) -> Compared:
    """See the module docstring: ``function`` names findings and accepts
    (``path::qualname``), ``name`` the calls; ``revision`` is the checked one's."""
    found: list[Finding] = []
    unstable: list[tuple[tuple[Any, ...], Unstable]] = []
    opaque: list[int] = []
    not_run = 0
    for i in runs.chosen:
        args = runs.inputs[i]
        if _said_nothing(runs, i):
            not_run += 1
            continue
        was, now = runs.base[0].outcomes[i], runs.head[0].outcomes[i]
        if incomparable(was, now):
            opaque.append(i)
            continue
        for version, vruns in (("base", runs.base), ("head", runs.head)):
            differ = _unstable(vruns, i)
            if differ is not None:
                call = f"{name}({', '.join(canonical(a) for a in args)})"
                first, second = (outcome_words(o) for o in differ)
                unstable.append((args, Unstable(call, canonical(args), version, first, second)))
                break
        else:
            change = finding_of(function, args, was, now, cfg)
            if change is not None:
                found.append(change)
    found.sort(key=lambda f: (f.size, input_key(f.args)))
    unstable.sort(key=lambda u: (len(u[1].input), input_key(u[0])))
    compared = len(runs.chosen) - not_run - len(opaque) - len(unstable)
    example = describe(runs.base[0].outcomes[opaque[0]].value, 200) if opaque else ""
    flaky = tuple(u for _, u in unstable)
    if flaky and len(flaky) >= compared:
        return Compared(
            Verdict.NONDETERMINISTIC, compared, (), (), flaky, len(opaque), not_run,
            len(found), example,
        )  # fmt: skip
    new = tuple(f for f in found if not accepts.covers(f, revision))
    old = tuple(f for f in found if accepts.covers(f, revision))
    if new:
        verdict = Verdict.CHANGED
    elif compared:
        verdict = Verdict.UNCHANGED
    else:
        verdict = Verdict.NOT_COMPARED
    return Compared(verdict, compared, new, old, flaky, len(opaque), not_run, 0, example)
