"""Synthesised inputs for a session without a model (no Textual here): a person is the oracle.

Seeds come from the function's docstring (doctest examples), the calls of it in its
project's own test files and, for ``--problem``, the problem's base inputs
(:mod:`utdebug.synth.seeds`); :func:`utdebug.synth.synthesize` grows them into a modest number
of candidate inputs (values made here, from data), and one sandbox run of the code in force
gives each one's outcome. The app lists them smallest first; a person marks a wrong outcome
and writes the expected value, or keeps a right one, and either becomes a session test whose
``input_source`` is ``synth:<source>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from utdebug.sandbox.config import Limits, ModuleContext
from utdebug.sandbox.executor import Sandbox
from utdebug.sandbox.outcomes import Outcome, Status
from utdebug.sandbox.values import describe
from utdebug.synth.candidates import parameter_names
from utdebug.synth.oracle import run_batch
from utdebug.synth.seeds import (
    Seeds,
    find_test_files,
    seeds_from_docstring,
    seeds_from_problem,
    seeds_from_tests,
)
from utdebug.synth.strategies import parse_hints
from utdebug.synth.synthesizer import Candidate, synthesize
from utdebug.synth.values import input_key, size_of

SYNTH_LIMITS = Limits(per_input=1.0, load=5.0, batch=20.0, cut_after=2, cut_limit=0.1)
"""The code in force on the synthesised inputs: 1 s each (EvalPlus's bound), 0.1 s after two
time-outs, 20 s for the whole batch."""

MAX_TEST_FILES = 200
"""At most this many test files of the project are read for seeds."""


@dataclass(frozen=True, slots=True)
class SynthPlan:
    """Where a session's seeds come from and how many inputs to make."""

    entry_point: str
    module_source: str | None = None
    """The function's file (its docstring's examples, its type hints)."""
    project: Path | None = None
    """The function's project: its test files' calls of the function are seeds."""
    problem: Any = None
    """A benchmark problem (``--problem``): its base inputs are seeds."""
    count: int = 40
    time_budget: float = 2.0
    """Seconds of CPU time for making the inputs (their run is bounded by the sandbox)."""
    seed: int = 0
    refusal: str | None = None
    """Why nothing can be synthesised for this target at all (a method, a program task)."""


@dataclass(frozen=True, slots=True)
class SynthRow:
    """One synthesised input and what the code in force does on it."""

    number: int
    args: tuple[Any, ...]
    call: str
    source: str
    """``seed``, ``mutation``, ``hypothesis``, ``hint`` (:class:`utdebug.synth.Candidate`)."""
    status: str
    """``ok``, ``error``, ``timeout`` or ``crash``."""
    value: Any = None
    """What it returned (``status == "ok"``)."""
    outcome: str = ""
    """In words: ``4``, ``raises ZeroDivisionError: division by zero``, ``times out``."""

    @property
    def input_source(self) -> str:
        return f"synth:{self.source}"


@dataclass
class SynthResult:
    rows: list[SynthRow] = field(default_factory=list)
    seeds: int = 0
    seed_origins: list[str] = field(default_factory=list)
    """Where the seeds came from, in short (``docstring``, ``tests/test_calc.py``)."""
    notes: list[str] = field(default_factory=list)
    """What could not be done and why (the synthesiser's notes among them)."""
    code: str = ""
    """The code the outcomes are of."""

    def headline(self) -> str:
        """One line: how many inputs, from which seeds; or that nothing could be made."""
        if not self.rows:
            why = "; ".join(self.notes) or "no input could be made"
            return f"nothing could be synthesised: {why}. a adds a test by hand"
        where = ", ".join(self.seed_origins) or "type hints"
        seeds = f"{self.seeds} seed{'' if self.seeds == 1 else 's'}"
        return f"{len(self.rows)} inputs synthesised from {seeds} ({where}), smallest first"


def plan_for(
    entry_point: str,
    *,
    path: Path | None = None,
    project: Path | None = None,
    problem: Any = None,
    class_name: str | None = None,
    program: bool = False,
    kind: str = "function",
) -> SynthPlan:
    """The plan of a file's function (``path``) or a benchmark problem (``kind``: the
    target's kind, :class:`~utdebug.engine.target_kinds.TargetKind`'s value)."""
    refusal = None
    if class_name is not None or program:
        what = (
            f"{entry_point} takes objects"
            if kind == "function"
            else f"{entry_point} is {'an' if kind[0] in 'aeiou' else 'a'} {kind}"
        )
        refusal = (
            "inputs are synthesised for plain functions called with literal arguments, and "
            f"{what}: its tests need a setup"
        )
    source = None
    if path is not None:
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            refusal = refusal or f"{path} cannot be read ({exc.__class__.__name__})"
    return SynthPlan(entry_point, source, project, problem, refusal=refusal)


def collect_seeds(plan: SynthPlan) -> tuple[Seeds, list[str]]:
    """The plan's seeds and where they came from, in short."""
    seeds = Seeds()
    origins: list[str] = []
    if plan.module_source is not None:
        found = seeds_from_docstring(plan.module_source, plan.entry_point)
        if found.items:
            origins.append("docstring")
        seeds.extend(found)
    if plan.project is not None:
        found = seeds_from_tests(
            find_test_files(plan.project, MAX_TEST_FILES), plan.entry_point, plan.project
        )
        files = sorted({s.origin.rsplit(":", 1)[0] for s in found.items})
        origins += files[:3] + ([f"{len(files) - 3} more test files"] if len(files) > 3 else [])
        seeds.extend(found)
    if plan.problem is not None:
        found = seeds_from_problem(plan.problem)
        if found.items:
            origins.append("the problem's base inputs")
        seeds.extend(found)
    return seeds, origins


def outcome_text(o: Outcome) -> str:
    if o.status is Status.OK:
        return describe(o.value, 400)
    if o.status is Status.ERROR:
        message = (o.error or "").strip().splitlines()
        tail = f": {message[-1][:200]}" if message else ""
        return f"raises {o.error_type or 'an error'}{tail}"
    if o.status is Status.TIMEOUT:
        return "times out"
    return "crashes"


def synthesize_outcomes(
    plan: SynthPlan, code: str, sandbox: Sandbox, context: ModuleContext | None = None
) -> SynthResult:
    """Seeds, candidates and their outcomes on ``code`` (run in ``sandbox``), smallest first.
    Never raises for bad input: what could not be done is in the result's notes. The two
    steps are :func:`synthesise_inputs` and :func:`run_outcomes`."""
    result, cands = synthesise_inputs(plan, code)
    return run_outcomes(result, cands, plan, sandbox, context)


def synthesise_inputs(plan: SynthPlan, code: str) -> tuple[SynthResult, list[Candidate]]:
    """The synthesis step (seeds, type hints, candidates; no sandbox). It reads source with
    ``ast``: on Python 3.11 call it from the event loop's thread, never from a worker thread
    beside it (CPython gh-106905: concurrent ``ast`` use can fail with ``SystemError: AST
    constructor recursion depth mismatch``)."""
    out = SynthResult(code=code)
    if plan.refusal is not None:
        out.notes.append(plan.refusal)
        return out, []
    seeds, out.seed_origins = collect_seeds(plan)
    names = list(parameter_names(plan.module_source or code, plan.entry_point))
    inputs = [s for s in seeds.inputs if not names or len(s) == len(names)]
    out.seeds = len(inputs)
    try:
        hints: dict[str, Any] = parse_hints(plan.module_source or code, plan.entry_point)
    except SyntaxError:
        hints = {}
    typed = bool(names) and all(n in hints for n in names)
    if not inputs and not typed:
        untyped = ", ".join(n for n in names if n not in hints) or "its parameters"
        out.notes.append(
            "no seed input (no doctest example, no call with literal arguments in the "
            f"project's tests) and {untyped} cannot be typed (no usable type hint)"
        )
        return out, []
    syn = synthesize(
        inputs,
        count=plan.count,
        seed=plan.seed,
        hints=hints if typed else None,
        names=names,
        time_budget=plan.time_budget,
    )
    out.notes += syn.notes
    return out, list(syn.candidates)


def run_outcomes(
    result: SynthResult,
    cands: list[Candidate],
    plan: SynthPlan,
    sandbox: Sandbox,
    context: ModuleContext | None = None,
) -> SynthResult:
    """The sandbox step: ``cands`` run once on ``result.code``; the rows, smallest first (safe
    in a worker thread)."""
    if not cands:
        return result
    outcomes, load_error, _wall, _cpu = run_batch(
        sandbox,
        result.code,
        plan.entry_point,
        [c.args for c in cands],
        SYNTH_LIMITS,
        context=context,
    )
    if load_error:
        result.notes.append(f"the code does not load: {load_error}")
    order = sorted(
        range(len(cands)), key=lambda i: (size_of(cands[i].args), input_key(cands[i].args))
    )
    for n, i in enumerate(order, start=1):
        c, o = cands[i], outcomes[i]
        call = f"{plan.entry_point}({', '.join(describe(a, 2000) for a in c.args)})"
        result.rows.append(
            SynthRow(n, c.args, call, c.source, o.status.value, o.value, outcome_text(o))
        )
    return result
