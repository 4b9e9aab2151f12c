"""Input synthesis: seeds, an envelope learned from them, candidate inputs from
type-aware mutation and Hypothesis strategies, and their validation on references in the
sandbox (consistency validation, outputs, exposure, a reduced suite); differential regression
testing of two versions (``differential``) and model-written generators (``generators``).
See docs/synth.md.

Used by ``bench synth``, ``train data --inputs synth``, through ``differential`` by ``check``,
and through ``candidates`` (:func:`candidate_inputs`) by the debugging loop's front ends (``bench
--synth-inputs``), which hand them to the engine's ``Session(candidate_inputs=...)``.
"""

from __future__ import annotations

from utdebug.synth import seeds
from utdebug.synth.candidates import CandidateInputs, candidate_inputs
from utdebug.synth.envelope import Envelope
from utdebug.synth.oracle import (
    Reference,
    Validation,
    differs,
    exposing_inputs,
    reduce_suite,
    validate,
)
from utdebug.synth.seeds import *  # noqa: F403  (its __all__, re-exported below)
from utdebug.synth.synthesizer import Candidate, Synthesis, synthesize

__all__ = [
    "Candidate",
    "CandidateInputs",
    "Envelope",
    "Reference",
    "Synthesis",
    "Validation",
    "candidate_inputs",
    "differs",
    "exposing_inputs",
    "reduce_suite",
    "synthesize",
    "validate",
]
__all__ += seeds.__all__
