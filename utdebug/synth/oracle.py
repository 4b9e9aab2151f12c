"""Validity and oracle (G-V's consistency validation), exposure and suite reduction.

- An input is **valid** when every reference runs it in the sandbox without an error, a
  time-out or a crash, and, with two or more references, when their outputs agree (compared
  with :func:`utdebug.sandbox.compare.outputs_match`, both ways). The expected output is the
  first reference's.
- A program is **exposed** by a valid input when its outcome there differs from the
  reference's: it raises, times out or crashes, or its value does not match.
- A **reduced suite** is a greedy cover: the fewest inputs (smallest first among equals) that
  expose every program the whole set exposes.

Each program runs once over all the inputs (one ``Sandbox.run`` per program): batches are cheap,
starting a child is not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from utdebug.sandbox.compare import CheckSpec, Semantics, outputs_match
from utdebug.sandbox.config import Limits, ModuleContext, StagedTest
from utdebug.sandbox.executor import Sandbox
from utdebug.sandbox.frames import encode_inputs
from utdebug.sandbox.outcomes import Outcome, Status
from utdebug.sandbox.values import describe
from utdebug.synth.values import cost_order, size_of

__all__ = [
    "REFERENCE_LIMITS",
    "Reference",
    "Validation",
    "differs",
    "exposing_inputs",
    "inconclusive",
    "reduce_suite",
    "run_batch",
    "run_chosen",
    "validate",
]

REFERENCE_LIMITS = Limits(per_input=1.0, load=5.0, batch=60.0, cut_after=2, cut_limit=0.1)
"""EvalPlus keeps an input only if the reference runs it within 1 s; after two time-outs the
rest of a batch gets 0.1 s each, so a reference that is slow on many inputs costs little."""


@dataclass(frozen=True, slots=True)
class Reference:
    code: str
    entry_point: str
    name: str = "reference"
    reverse: bool = False
    """Run the inputs in reverse order (largest first; normally the smallest run first): a
    second run of one program then catches outputs that depend on state left by earlier
    inputs."""
    context: ModuleContext | None = None
    """Run it as a module of a project (:class:`~utdebug.sandbox.config.ModuleContext`)."""
    test: StagedTest | None = None
    """A test with setup that runs each input instead of calling ``entry_point`` (a method of a
    class: build the object, call the method; the input's arguments under ``test.args``)."""


@dataclass
class Validation:
    inputs: list[tuple[Any, ...]]
    valid: list[bool]
    outputs: list[Any]
    """The first reference's value for each valid input (None elsewhere)."""
    reasons: list[str | None]
    """Why each invalid input is invalid."""
    seconds: float = 0.0
    load_errors: list[str] = field(default_factory=list)
    costs: list[float] = field(default_factory=list)
    """The first reference's time on each input (its limit's measure; 0 where not run)."""
    cpu_seconds: float = 0.0
    """CPU time of the references' children, all runs."""

    @property
    def valid_indices(self) -> list[int]:
        return [i for i, ok in enumerate(self.valid) if ok]

    @property
    def disagreements(self) -> list[int]:
        return [i for i, r in enumerate(self.reasons) if r and r.startswith("references disagree")]

    @property
    def rate(self) -> float:
        return sum(self.valid) / len(self.valid) if self.valid else 0.0

    def reason_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.reasons:
            if r:
                key = r.split(":")[0]
                out[key] = out.get(key, 0) + 1
        return out


def run_batch(
    sandbox: Sandbox,
    code: str,
    entry: str,
    inputs: Sequence[tuple[Any, ...]],
    limits: Limits,
    reverse: bool = False,
    context: ModuleContext | None = None,
    test: StagedTest | None = None,
) -> tuple[list[Outcome], str | None, float, float]:
    """One ``Sandbox.run`` of ``entry`` (or of ``test``, a test with setup) over ``inputs``: the
    outcomes in ``inputs`` order, the load error, the wall and the CPU seconds."""
    # smallest first: what a spent batch budget or the reduced limit after time-outs costs is
    # then the largest inputs
    order = cost_order(list(inputs))
    if reverse:
        order.reverse()
    enc = encode_inputs([inputs[i] for i in order])
    res = sandbox.run(code, entry, enc, limits, context, test)
    outcomes: list[Outcome] = [Outcome(Status.CRASH)] * len(inputs)
    for pos, i in enumerate(order):
        outcomes[i] = res.outcomes[pos]
    return outcomes, res.load_error, res.wall_seconds, res.cpu_seconds


def run_chosen(
    sandbox: Sandbox,
    program: Reference,
    inputs: Sequence[tuple[Any, ...]],
    chosen: Sequence[int],
    limits: Limits,
) -> tuple[dict[int, Outcome], str | None, float, float]:
    """:func:`run_batch` of ``program`` (its order, context and test with setup) over the
    inputs at the indices ``chosen`` (each once) only: their outcomes by index, in ``chosen``
    order, the load error, the wall and the CPU seconds."""
    ran, load_error, wall, cpu = run_batch(
        sandbox,
        program.code,
        program.entry_point,
        [inputs[i] for i in chosen],
        limits,
        program.reverse,
        program.context,
        program.test,
    )
    return dict(zip(chosen, ran, strict=True)), load_error, wall, cpu


def validate(
    sandbox: Sandbox,
    references: Sequence[Reference],
    inputs: Sequence[tuple[Any, ...]],
    *,
    limits: Limits = REFERENCE_LIMITS,
    check: CheckSpec | None = None,
    semantics: Semantics = Semantics.DATASET,
) -> Validation:
    """Run every reference over ``inputs`` (one batch each) and keep the inputs all of them
    run and agree on. The first reference runs every input, each later one only the inputs
    still valid. Raises ValueError without a reference."""
    if not references:
        raise ValueError("validation needs at least one reference")
    spec = check or CheckSpec()
    inputs = [tuple(a) for a in inputs]
    n = len(inputs)
    runs: list[list[Outcome]] = []
    load_errors: list[str] = []
    seconds = cpu_seconds = 0.0
    valid = [True] * n
    reasons: list[str | None] = [None] * n
    for ref in references:
        chosen = [i for i in range(n) if valid[i]]
        outcomes = [Outcome(Status.OK)] * n
        if chosen:
            ran, load_error, wall, cpu = run_chosen(sandbox, ref, inputs, chosen, limits)
            seconds += wall
            cpu_seconds += cpu
            if load_error:
                load_errors.append(f"{ref.name}: {load_error}")
            for i, o in ran.items():
                outcomes[i] = o
        runs.append(outcomes)
        for i in chosen:
            o = outcomes[i]
            if o.status is not Status.OK:
                valid[i] = False
                what = {
                    "error": f"raised {o.error_type}",
                    "timeout": "timed out",
                    "crash": "crashed",
                }
                how = what.get(o.status.value, o.status.value)
                reasons[i] = f"reference {ref.name} {how}: {(o.error or '')[:200]}"
    for i in range(n):
        if not valid[i]:
            continue
        first = runs[0][i].value
        for ref, outcomes in zip(references[1:], runs[1:], strict=True):
            other = outcomes[i].value
            if not (
                outputs_match(other, first, spec, semantics, inputs[i])
                and outputs_match(first, other, spec, semantics, inputs[i])
            ):
                valid[i] = False
                reasons[i] = (
                    f"references disagree: {references[0].name} gave {describe(first, 200)}, "
                    f"{ref.name} gave {describe(other, 200)}"
                )
                break
    outputs = [runs[0][i].value if valid[i] else None for i in range(n)]
    costs = [runs[0][i].seconds for i in range(n)]
    return Validation(inputs, valid, outputs, reasons, seconds, load_errors, costs, cpu_seconds)


def differs(
    outcome: Outcome,
    expected: Any,
    args: Sequence[Any],
    check: CheckSpec | None = None,
    semantics: Semantics = Semantics.DATASET,
) -> bool:
    """Whether a program's outcome on a valid input differs from the reference's value. A
    time-out that says nothing about the program (an input not run because its batch's budget
    was spent, or stopped at the reduced limit after earlier time-outs) is not a difference."""
    if outcome.status is Status.TIMEOUT and inconclusive(outcome):
        return False
    if outcome.status is not Status.OK:
        return True
    return not outputs_match(outcome.value, expected, check or CheckSpec(), semantics, args)


def inconclusive(outcome: Outcome) -> bool:
    """A time-out of an input that was not run, that the batch's budget ended, or that hit
    only the reduced limit."""
    text = outcome.error or ""
    return outcome.status is Status.TIMEOUT and (
        text.startswith("not run") or "reduced limit" in text or "budget ran out" in text
    )


PROGRAM_LIMITS = Limits(per_input=2.0, load=5.0, batch=60.0, cut_after=3, cut_limit=0.25)
"""A program under test gets the benchmarks' 2 s per input."""


def exposing_inputs(
    sandbox: Sandbox,
    code: str,
    entry_point: str,
    validation: Validation,
    *,
    indices: Sequence[int] | None = None,
    limits: Limits = PROGRAM_LIMITS,
    check: CheckSpec | None = None,
    semantics: Semantics = Semantics.DATASET,
    stats: dict[str, float] | None = None,
    test: StagedTest | None = None,
) -> list[int]:
    """Indices (into ``validation.inputs``) of the valid inputs on which the program's outcome
    differs from the reference's. ``indices`` narrows the inputs run (default: all valid);
    ``stats`` (if given) gets the run's ``cpu_seconds`` and ``wall_seconds`` added; ``test``
    runs each input as that test with setup (as :attr:`Reference.test`)."""
    chosen = [
        i
        for i in (indices if indices is not None else validation.valid_indices)
        if validation.valid[i]
    ]
    if not chosen:
        return []
    program = Reference(code, entry_point, "program", test=test)
    outcomes, _, wall, cpu = run_chosen(sandbox, program, validation.inputs, chosen, limits)
    if stats is not None:
        stats["cpu_seconds"] = stats.get("cpu_seconds", 0.0) + cpu
        stats["wall_seconds"] = stats.get("wall_seconds", 0.0) + wall
    return [
        i
        for i, o in outcomes.items()
        if differs(o, validation.outputs[i], validation.inputs[i], check, semantics)
    ]


def reduce_suite(
    exposures: Mapping[str, Sequence[int]], inputs: Sequence[tuple[Any, ...]]
) -> list[int]:
    """Greedy set cover: input indices that together expose every program of ``exposures``
    (program -> indices of the inputs exposing it); each step takes the input exposing the
    most programs not yet exposed, the smallest (:func:`size_of`) among equals."""
    left = {name for name, idx in exposures.items() if idx}
    by_input: dict[int, set[str]] = {}
    for name, idx in exposures.items():
        for i in idx:
            by_input.setdefault(i, set()).add(name)
    suite: list[int] = []
    while left:
        best = min(by_input, key=lambda i: (-len(by_input[i] & left), size_of(inputs[i]), i))
        gained = by_input[best] & left
        if not gained:
            break
        suite.append(best)
        left -= gained
    return suite
