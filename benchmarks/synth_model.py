"""``utdebug bench synth --model M``: model-written generator programs beside model-free synthesis.

With a model, each problem also gets Klear-CodeTest's generator–validation loop
(:func:`utdebug.synth.generators.generate_inputs`): a regular and a corner generator program
written from the signature, the description, the seeds, and the seeds' envelope in words, run
in the sandbox, repaired from execution feedback (up to three rounds), their inputs kept inside
the seeds' outer widening and validated on the same references as the synthesised ones. The
valid inputs join the problem's inputs with the source ``generator``; what the references
rejected counts against validity like any other emitted input. The record says the tokens, the
model calls, the feedback lines and the generators' counts.

The SIMULATED model answers from the gold code's private tests and cannot write programs: it
is refused (see :func:`refusal`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from utdebug.agents.base import Model
from utdebug.agents.synth_prompts import SynthProblem
from utdebug.sandbox.executor import Sandbox
from utdebug.synth import Envelope, Reference, Validation
from utdebug.synth.generators import GVSettings, generate_inputs
from utdebug.synth.values import input_key

__all__ = ["GENERATOR", "ModelInputs", "merge", "model_inputs", "source_counts"]

GENERATOR = "generator"
"""The source of an input a model-written generator program emitted."""


@dataclass
class ModelInputs:
    """What the generators added to one problem (or one group of a method's problem)."""

    validation: Validation
    """Their emitted inputs not already synthesised: the valid ones (with the first
    reference's outputs), then the dropped ones (with the reason)."""
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def sources(self) -> list[str]:
        return [GENERATOR] * len(self.validation.inputs)


async def model_inputs(
    model: Model,
    sb: Sandbox,
    problem: SynthProblem,
    references: Sequence[Reference],
    *,
    bounds: Envelope | None,
    known: Sequence[tuple[Any, ...]],
    settings: GVSettings | None = None,
) -> ModelInputs:
    """Run the generator–validation loop for one problem; inputs already in ``known`` (the
    synthesised ones) are left out of its validation."""
    res = await generate_inputs(model, sb, problem, references, bounds=bounds, settings=settings)
    seen = {input_key(a) for a in known}
    inputs: list[tuple[Any, ...]] = []
    valid: list[bool] = []
    outputs: list[Any] = []
    reasons: list[str | None] = []
    kept = [(args, True, out, None) for args, out in zip(res.inputs, res.outputs, strict=True)]
    dropped = [(args, False, None, why) for args, why in res.dropped]
    for args, ok, out, why in [*kept, *dropped]:
        key = input_key(args)
        if key not in seen:
            seen.add(key)
            inputs.append(args)
            valid.append(ok)
            outputs.append(out)
            reasons.append(why)
    val = Validation(inputs, valid, outputs, reasons, costs=[0.0] * len(inputs))
    record = {
        "tokens": {
            "prompt": res.usage.prompt_tokens,
            "completion": res.usage.completion_tokens,
            "total": res.usage.prompt_tokens + res.usage.completion_tokens,
            "cost": res.usage.cost,
        },
        "model_calls": res.calls,
        "emitted": sum(a.emitted for g in res.generators for a in g.attempts),
        "new": len(inputs),
        "valid": sum(valid),
        "repaired": [g.kind for g in res.generators if g.repaired],
        "attempts": {g.kind: len(g.attempts) for g in res.generators},
        "feedback": res.feedback[:20],
        "notes": res.notes,
    }
    return ModelInputs(val, record)


def merge(a: Validation, b: Validation) -> Validation:
    """``a``'s inputs, then ``b``'s (one validation over both)."""
    return Validation(
        a.inputs + b.inputs,
        a.valid + b.valid,
        a.outputs + b.outputs,
        a.reasons + b.reasons,
        a.seconds + b.seconds,
        a.load_errors + b.load_errors,
        (a.costs or [0.0] * len(a.inputs)) + (b.costs or [0.0] * len(b.inputs)),
        a.cpu_seconds + b.cpu_seconds,
    )


def source_counts(sources: Sequence[str], valid: Sequence[bool]) -> dict[str, dict[str, int]]:
    """Per source: inputs emitted and valid."""
    out: dict[str, dict[str, int]] = {}
    for src, ok in zip(sources, valid, strict=True):
        c = out.setdefault(src, {"emitted": 0, "valid": 0})
        c["emitted"] += 1
        c["valid"] += int(ok)
    return dict(sorted(out.items()))
