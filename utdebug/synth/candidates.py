"""Candidate inputs for a debugging session: synthesised inputs the engine's test builder votes
on (``Session(candidate_inputs=...)``, :mod:`utdebug.engine.utgen`).

The code under test may be the buggy one, so it is no reference: an input is kept unless the
code under test times out or crashes on it (an input on which it raises may be just the test
that shows the bug: the model predicts what a correct function returns). Inputs the sandbox
cannot run in time are dropped, so a session never waits on them. The synthesised inputs come
in the synthesiser's order and the seeds last (``seeds_last``): a seed is an example the task
already shows and the given code usually passes, the least likely input to expose a bug. The
result is the same for the same arguments and ``seed``.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from utdebug.sandbox.config import Limits, ModuleContext
from utdebug.sandbox.executor import Sandbox
from utdebug.sandbox.outcomes import Status
from utdebug.synth.oracle import run_batch
from utdebug.synth.strategies import parse_hints
from utdebug.synth.synthesizer import Synthesis, synthesize

__all__ = [
    "CANDIDATE_LIMITS",
    "CandidateInputs",
    "candidate_inputs",
    "parameter_names",
    "screen",
    "synthesise_for",
]

CANDIDATE_LIMITS = Limits(per_input=1.0, load=5.0, batch=30.0, cut_after=2, cut_limit=0.1)
"""The code under test gets 1 s of CPU an input; after two time-outs 0.1 s each."""


@dataclass
class CandidateInputs:
    """What :func:`candidate_inputs` made, with what it left out and why."""

    inputs: list[tuple[tuple[Any, ...], str]] = field(default_factory=list)
    """``(args, "synth:<source>")``: what ``Session(candidate_inputs=...)`` takes."""
    dropped: dict[str, int] = field(default_factory=dict)
    """Inputs left out, by reason (``timed out``, ``crashed``)."""
    notes: list[str] = field(default_factory=list)
    """The synthesiser's notes (no seeds, untyped seeds ...) and a load error."""


def parameter_names(source: str, entry_point: str) -> tuple[str, ...]:
    """The positional parameter names of ``entry_point`` in ``source`` (a module or a bare
    signature); empty when neither parses."""
    text = source.strip()
    for candidate in (text, f"def {text.rstrip(':')}: pass"):
        try:
            tree = ast.parse(candidate)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and (
                node.name == entry_point
            ):
                return tuple(a.arg for a in [*node.args.posonlyargs, *node.args.args])
    return ()


def candidate_inputs(
    sandbox: Sandbox,
    source: str,
    entry_point: str,
    seeds: Sequence[Sequence[Any]],
    *,
    count: int = 32,
    seed: int = 0,
    time_budget: float = 2.0,
    limits: Limits = CANDIDATE_LIMITS,
    context: ModuleContext | None = None,
    seeds_last: bool = True,
) -> CandidateInputs:
    """Up to ``count`` synthesised inputs for ``entry_point`` of ``source`` (the code under
    test), from ``seeds`` (example argument tuples) and the function's type hints; each run
    once on ``source`` in the sandbox, and kept unless it timed out or crashed there.
    ``time_budget``: CPU seconds of synthesis (:func:`utdebug.synth.synthesize`);
    ``seeds_last``: the seeds after the synthesised inputs (else first). The two steps are
    :func:`synthesise_for` and :func:`screen`."""
    syn = synthesise_for(
        source, entry_point, seeds, count=count, seed=seed, time_budget=time_budget
    )
    return screen(sandbox, source, entry_point, syn, limits, context, seeds_last)


def synthesise_for(
    source: str,
    entry_point: str,
    seeds: Sequence[Sequence[Any]],
    *,
    count: int = 32,
    seed: int = 0,
    time_budget: float = 2.0,
) -> Synthesis:
    """The synthesis step alone (no sandbox). It reads source with ``ast``: on Python 3.11,
    call it from the thread that does the program's other ``ast`` work (the event loop's),
    not from a worker thread (CPython gh-106905: concurrent ``ast`` use can fail with
    ``SystemError: AST constructor recursion depth mismatch``)."""
    if count <= 0:
        return synthesize([], count=0)
    try:
        hints = parse_hints(source, entry_point)
    except SyntaxError:
        hints = {}
    return synthesize(
        [tuple(s) for s in seeds],
        count=count,
        seed=seed,
        hints=hints or None,
        names=parameter_names(source, entry_point),
        time_budget=time_budget,
    )


def screen(
    sandbox: Sandbox,
    source: str,
    entry_point: str,
    syn: Synthesis,
    limits: Limits = CANDIDATE_LIMITS,
    context: ModuleContext | None = None,
    seeds_last: bool = True,
) -> CandidateInputs:
    """The sandbox step alone: ``syn``'s inputs run once on ``source``; those it times out or
    crashes on are dropped (safe to call from a worker thread)."""
    out = CandidateInputs(notes=list(syn.notes))
    if not syn.candidates:
        return out
    outcomes, load_error, _, _ = run_batch(
        sandbox, source, entry_point, syn.inputs, limits, context=context
    )
    if load_error:  # nothing ran: the session says why the code does not load
        out.notes.append(f"the code does not load: {load_error}")
        return out
    for cand, o in zip(syn.candidates, outcomes, strict=True):
        if o.status in (Status.TIMEOUT, Status.CRASH):
            why = "timed out" if o.status is Status.TIMEOUT else "crashed"
            out.dropped[why] = out.dropped.get(why, 0) + 1
            continue
        out.inputs.append((cand.args, f"synth:{cand.source}"))
    if seeds_last:
        seeded = [c for c in out.inputs if c[1] == "synth:seed"]
        out.inputs = [c for c in out.inputs if c[1] != "synth:seed"] + seeded
    return out
