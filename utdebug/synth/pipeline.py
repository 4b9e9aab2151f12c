"""Synthesis with validation in the loop (a model-free G-V): a first round of candidates runs on
the references, and a second round is generated inside the envelope of the inputs they
accepted cheaply, mutating those inputs. What the references reject (errors, time-outs,
disagreement) and what they are slow on is how the second round learns the function's domain
and its cost, as Klear's generators learn from execution feedback; nothing is written by a
model here.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from utdebug.sandbox.compare import CheckSpec, Semantics
from utdebug.sandbox.config import Limits
from utdebug.sandbox.executor import Sandbox
from utdebug.synth.envelope import Envelope
from utdebug.synth.oracle import REFERENCE_LIMITS, Reference, Validation, validate
from utdebug.synth.synthesizer import Candidate, SynthSettings, synthesize
from utdebug.synth.values import input_key

__all__ = ["Round", "RoundSettings", "ValidSynthesis", "synthesize_valid"]


@dataclass(frozen=True, slots=True)
class Round:
    emitted: int
    valid: int
    seconds: float
    bounds: str
    """The bounds this round emitted within, in words."""


@dataclass
class ValidSynthesis:
    candidates: list[Candidate]
    validation: Validation
    """Over every emitted candidate, in ``candidates`` order."""
    envelope: Envelope
    """Learned from the seeds."""
    rounds: list[Round] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def valid_inputs(self) -> list[tuple[Any, ...]]:
        return [self.validation.inputs[i] for i in self.validation.valid_indices]


def _merge(vals: list[Validation]) -> Validation:
    return Validation(
        [x for v in vals for x in v.inputs],
        [x for v in vals for x in v.valid],
        [x for v in vals for x in v.outputs],
        [x for v in vals for x in v.reasons],
        sum(v.seconds for v in vals),
        [x for v in vals for x in v.load_errors],
        [x for v in vals for x in v.costs],
        sum(v.cpu_seconds for v in vals),
    )


@dataclass(frozen=True, slots=True)
class RoundSettings:
    """How :func:`synthesize_valid` splits its work (defaults as measured in docs/synth.md)."""

    first_share: float = 0.3
    """The part of ``count`` the first round emits, from the seeds' widened envelope."""
    outer_share: float = 0.15
    """The part of a round's candidates that may lie outside the core widening."""
    limits: Limits = REFERENCE_LIMITS
    """The references' limits (each round's batch budget is cut to the time left)."""


@dataclass
class _Job:
    """What both rounds share: where they run, on what, and the CPU-time budget spent so far
    (this process's and the references' children's)."""

    sandbox: Sandbox
    references: Sequence[Reference]
    seeds: Sequence[Sequence[Any]]
    hints: Any
    names: Sequence[str]
    check: CheckSpec | None
    semantics: Semantics
    cfg: RoundSettings
    time_budget: float
    p0: float = field(default_factory=time.process_time)
    children: float = 0.0

    def left_cpu(self) -> float:
        return self.time_budget - (time.process_time() - self.p0) - self.children

    def validate(self, inputs: Sequence[tuple[Any, ...]], per_ref: float) -> Validation:
        limits = self.cfg.limits
        return validate(
            self.sandbox,
            self.references,
            inputs,
            limits=dataclasses.replace(limits, batch=min(limits.batch or per_ref, per_ref)),
            check=self.check,
            semantics=self.semantics,
        )


def synthesize_valid(
    sandbox: Sandbox,
    references: Sequence[Reference],
    seeds: Sequence[Sequence[Any]],
    *,
    count: int = 400,
    seed: int = 0,
    time_budget: float = 8.0,
    check: CheckSpec | None = None,
    semantics: Semantics = Semantics.DATASET,
    hints: Any = None,
    names: Sequence[str] = (),
    settings: RoundSettings | None = None,
) -> ValidSynthesis:
    """Two rounds, within ``time_budget`` seconds of CPU time (this process's generation and
    the references' children; CPU time does not move with the machine's load):

    1. ``settings.first_share`` of ``count`` from the seeds' widened envelope, validated;
    2. the rest drawn as the first round was, kept only inside the envelope of the inputs the
       references accepted within a per-input cost the remaining time allows, with those
       inputs as mutation parents; as many as the remaining time allows at the cost the first
       round measured, validated.
    """
    t0 = time.monotonic()
    cfg = settings or RoundSettings()
    job = _Job(sandbox, references, seeds, hints, names, check, semantics, cfg, time_budget)
    syn1 = synthesize(
        seeds,
        count=max(1, int(count * cfg.first_share)),
        seed=seed,
        hints=hints,
        names=names,
        time_budget=time_budget * 0.2,
        settings=SynthSettings(outer_share=cfg.outer_share),
    )
    val1 = job.validate(syn1.inputs, max(0.5, job.left_cpu() * 0.4 / max(1, len(references))))
    job.children += val1.cpu_seconds
    rounds = [
        Round(
            len(syn1.inputs), len(val1.valid_indices), time.monotonic() - t0, syn1.bounds.describe()
        )
    ]
    notes = list(syn1.notes)
    cands = list(syn1.candidates)
    vals = [val1]
    left = count - len(cands)
    if left > 0 and val1.valid_indices:
        new, val2, second = _second_round(job, val1, cands, left, seed + 1, notes)
        rounds.append(second)
        cands += new
        vals.append(val2)
    elif not val1.valid_indices:
        notes.append("the references accepted no input of the first round: no second round")
    return ValidSynthesis(cands, _merge(vals), syn1.envelope, rounds, notes, time.monotonic() - t0)


def _second_round(
    job: _Job,
    val1: Validation,
    cands: list[Candidate],
    left: int,
    seed: int,
    notes: list[str],
) -> tuple[list[Candidate], Validation, Round]:
    """Up to ``left`` more candidates inside the envelope of what the first round's references
    accepted cheaply, as many as the time left allows at the cost it measured, validated."""
    t1 = time.monotonic()
    n_refs = max(1, len(job.references))
    accepted = val1.valid_indices
    remaining = max(0.0, job.left_cpu())
    # what an input may cost the references so that `left` of them fit in the time left
    afford = remaining * 0.6 / n_refs / left
    costs = [val1.costs[i] for i in accepted]
    cheap = [val1.inputs[i] for i in accepted if val1.costs[i] <= max(afford, 0.002)]
    if len(cheap) < len(accepted):
        notes.append(
            f"second round: {len(accepted) - len(cheap)} accepted inputs cost the reference "
            f"more than {afford * 1000:.1f} ms each and do not bound it"
        )
    typical = (
        statistics.median([c for c in costs if c <= max(afford, 0.002)] or costs) if costs else 0.0
    )
    n2 = left if typical <= 0 else min(left, int(remaining * 0.6 / n_refs / max(typical, 1e-4)))
    hull = Envelope.learn(cheap or [val1.inputs[i] for i in accepted], job.names)
    syn2 = synthesize(
        job.seeds,
        count=max(0, n2),
        seed=seed,
        hints=job.hints,
        names=job.names,
        time_budget=max(0.2, job.left_cpu() * 0.3),
        settings=SynthSettings(
            outer_share=job.cfg.outer_share,
            accept=hull,
            parents_extra=cheap,
            exclude={input_key(c.args) for c in cands},
        ),
    )
    new = [c for c in syn2.candidates if c.source != "seed"][:left]
    val2 = job.validate([c.args for c in new], max(0.5, job.left_cpu() / n_refs))
    notes += [n for n in syn2.notes if n not in notes]
    second = Round(len(new), len(val2.valid_indices), time.monotonic() - t1, hull.describe())
    return new, val2, second
