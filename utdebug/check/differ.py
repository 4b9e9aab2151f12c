"""Differential regression testing in ``utdebug check``: the checked version of each function
against its base version on synthesised inputs, with no model at all.

The stages, each a frozen value: the function's two versions (:func:`utdebug.check.versions.pair`)
-> seeds and kinds (:func:`gather_seeds`: the function's calls in the repository's test files,
the ``>>>`` examples of its docstring at both revisions, a model's test calls, the type hints,
candidate kinds of unhinted parameters) -> the kinds the base accepts as more seeds
(:func:`try_kinds_on_base`) -> inputs (:func:`synthesise`) -> both versions run twice
(:func:`utdebug.check.runs.run_twice`) -> the comparison
(:func:`utdebug.check.comparison.compare_runs`) -> the report's
:class:`~utdebug.check.report.Differential`. An input whose outcome changed is a finding
(``was 4, now 5``, ``now raises KeyError``), smallest input first; one whose outcome changed
between two runs of one version is nondeterministic, listed, never a finding. Intended changes
are recorded in the accept file (:data:`ACCEPT_FILE`, in the repository) and are not reported
again.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from utdebug.check.comparison import Compared, compare_runs
from utdebug.check.loading import Copies
from utdebug.check.report import Change, Comparison, Differential
from utdebug.check.runs import LATER_RUNS_CPU, Runners, Runs, rerun, run_twice
from utdebug.check.targets import Target
from utdebug.check.versions import NotCompared, Pair, pair
from utdebug.synth.differential import Accepts, DiffSettings, Finding
from utdebug.synth.values import input_key

if TYPE_CHECKING:
    from utdebug.synth.kinds import Kinds

__all__ = [
    "ACCEPT_FILE",
    "DiffOutcome",
    "DiffRun",
    "Inputs",
    "SeedSet",
    "compare_function",
    "gather_seeds",
    "literals",
    "synthesise",
    "try_kinds_on_base",
]

ACCEPT_FILE = ".utdebug/accepted.json"
"""Where intended changes are recorded, relative to the repository root (``--accept``)."""


@dataclass(frozen=True, slots=True)
class DiffRun:
    """What every function's comparison in one run shares."""

    copies: Copies
    runners: Runners
    tests: tuple[Path, ...]
    """The checked revision's test files (seeds)."""
    accepts: Accepts
    settings: DiffSettings


@dataclass(frozen=True, slots=True)
class SeedSet:
    """The seeds stage's value: example inputs and what the parameters are."""

    inputs: tuple[tuple[Any, ...], ...]
    names: tuple[str, ...]
    """The positional parameters."""
    hints: Mapping[str, Any] | None
    """Their type hints, when every one has a usable one (else ``None``)."""
    kinds: Kinds | None = None
    """The candidate kinds of the parameters (those the base takes too)."""
    notes: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()
    """Parameters no seed covers of which the base accepted no candidate kind."""
    constants: tuple[Any, ...] = ()
    """The literals of both versions' code (:func:`literals`), for mutation to use."""


@dataclass(frozen=True, slots=True)
class Inputs:
    """The synthesis stage's value: the inputs both versions run."""

    inputs: tuple[tuple[Any, ...], ...]
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DiffOutcome:
    """A function's comparison with its base: the report's part, the findings as the
    library gives them (for ``--accept``), and whether it failed as an error."""

    differential: Differential
    findings: tuple[Finding, ...] = ()
    error: bool = False


def gather_seeds(
    pair: Pair, tests: Sequence[Path], root: Path, model_calls: Sequence[str] = ()
) -> SeedSet | NotCompared:
    """The seeds stage: the function's calls in the test files (``tests``, under ``root``),
    the examples of its docstring at both revisions and a model's test calls
    (``f(1, [2])``), with the positional arguments it takes; the type hints, and the candidate
    kinds of parameters without one (:mod:`utdebug.synth.kinds`)."""
    from utdebug.synth.kinds import infer
    from utdebug.synth.seeds import gather
    from utdebug.synth.strategies import parse_hints

    qualname = pair.target.qualname
    seeds = gather(
        pair.head.text,
        qualname,
        tests=tests,
        root=root,
        module=pair.head.module.name if pair.head.module else "",
        other_sources=(pair.base.text,),
        model_calls=model_calls,
    )
    kinds = infer(pair.head.text, qualname)
    if kinds is not None:  # only the parameters the base takes too are tried on it
        base_args = pair.base.node.args
        kinds = kinds.first(len(base_args.posonlyargs) + len(base_args.args))
    names = pair.names
    inputs = [s for s in seeds.inputs if _fits(pair.head.node, len(s))]
    if not names and not inputs:
        inputs = [()]
    try:
        hints = parse_hints(pair.head.text, qualname)
    except SyntaxError:
        hints = {}
    typed = bool(names) and all(n in hints for n in names)
    if not inputs and not typed and kinds is None:
        untyped = ", ".join(n for n in names if n not in hints)
        return NotCompared(
            "no seed input (no call of it with literal arguments in the repository's tests or "
            f"its docstring) and its parameters cannot be typed ({untyped} without a usable "
            "type hint)"
        )
    return SeedSet(
        tuple(tuple(s) for s in inputs),
        tuple(names),
        hints if typed else None,
        kinds,
        constants=literals(pair.base.node, pair.head.node),
    )


_RETRIED = (Comparison.NOT_COMPARED, Comparison.UNCHANGED)
"""Verdicts after which inputs whose values were known only by their text are run again as
a member's are (an iterator consumed, a returned function called on probes); an unchanged
function takes that verdict only when it finds changes."""

LITERALS = 60
"""At most this many literals of the code are given to mutation."""


def literals(*nodes: ast.AST) -> tuple[Any, ...]:
    """The numbers and short texts (1 to 40 characters) written in ``nodes`` (both versions of
    a function: the head's new ``'!='`` too), docstrings left out, each once, in order."""
    docs = {
        id(n.body[0].value)
        for node in nodes
        for n in ast.walk(node)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    out: dict[str, Any] = {}
    for node in nodes:
        for n in ast.walk(node):
            if not isinstance(n, ast.Constant) or id(n) in docs:
                continue
            v = n.value
            text = isinstance(v, str) and 0 < len(v) <= 40
            if text or (type(v) in (int, float) and v == v):
                out.setdefault(repr(v), v)
    return tuple(out.values())[:LITERALS]


def try_kinds_on_base(run: DiffRun, pair: Pair, seeds: SeedSet) -> SeedSet | NotCompared:
    """The kinds stage: inputs of the candidate kinds of the parameters no seed covers, run on
    the base (:func:`utdebug.synth.kinds.try_kinds`); the ones it accepts join the seeds, and a
    note says which kinds it kept."""
    from utdebug.synth.kinds import try_kinds

    kinds = seeds.kinds
    if kinds is None or not kinds.uncovered(seeds.inputs):
        return seeds
    sandbox, base = run.runners.program(0, pair, True)
    cfg = run.settings
    trial = try_kinds(sandbox, base, kinds, seeds.inputs, cfg.base_limits, seed=cfg.seed)
    if trial.load_error:
        return NotCompared(f"the base version does not load: {trial.load_error}")
    refused = [name for name, kept in trial.kept.items() if not kept]
    return replace(
        seeds,
        inputs=(*seeds.inputs, *(tuple(s) for s in trial.seeds)),
        notes=(*seeds.notes, trial.note()),
        refused=tuple(refused),
    )


def _fits(fn: Any, n: int) -> bool:
    """Whether ``n`` positional arguments fit the function's signature."""
    a = fn.args
    positional = len(a.posonlyargs) + len(a.args)
    required = positional - len(a.defaults)
    return required <= n and (n <= positional or a.vararg is not None)


def synthesise(seeds: SeedSet, cfg: DiffSettings) -> Inputs | NotCompared:
    """The synthesis stage: ``cfg.count`` inputs from the seeds (the same seeds and settings
    give the same inputs, as long as the time budget does not cut it short)."""
    from utdebug.synth.synthesizer import SynthSettings, synthesize

    syn = synthesize(
        seeds.inputs,
        count=cfg.count,
        seed=cfg.seed,
        hints=seeds.hints,
        names=seeds.names,
        time_budget=cfg.time_budget,
        settings=SynthSettings(constants=seeds.constants),
    )
    if not syn.inputs:
        why = "no input could be synthesised"
        if seeds.refused:
            why = f"no seed input, and no kind of {', '.join(seeds.refused)} that the base accepts"
        return NotCompared(why, seeds=len(seeds.inputs))
    return Inputs(tuple(syn.inputs), (*syn.notes, *seeds.notes))


def compare_function(run: DiffRun, target: Target, model_calls: Sequence[str] = ()) -> DiffOutcome:
    """Compare ``target`` at the checked revision with its base version (the stages in the
    module docstring). ``model_calls``: the calls of a model's tests of the function
    (``f(1, [2])``), seeds as well."""
    from utdebug.check.members import compare_member, is_member

    base = run.copies.base_sha
    if is_member(target):
        got = compare_member(run, target)
        return _not_compared(got, base) if isinstance(got, NotCompared) else got
    both = pair(target, run.copies)
    if isinstance(both, NotCompared):
        return _not_compared(both, base)
    seeds = gather_seeds(both, run.tests, run.copies.head, model_calls)
    if isinstance(seeds, NotCompared):
        return _not_compared(seeds, base)
    found = len(seeds.inputs)
    seeds = try_kinds_on_base(run, both, seeds)
    if isinstance(seeds, NotCompared):
        return _not_compared(seeds, base, found)
    inputs = synthesise(seeds, run.settings)
    if isinstance(inputs, NotCompared):
        return _not_compared(inputs, base, found)
    runs = run_twice(run.runners, both, inputs.inputs, run.settings)
    if isinstance(runs, NotCompared):
        return _not_compared(runs, base, found)
    result = _compare(run, both, runs)
    if result.findings and result.unstable:  # some inputs were not stable: confirm the changes
        changed = {input_key(f.args) for f in result.findings}
        again = [i for i in runs.chosen if input_key(runs.inputs[i]) in changed]
        result = _compare(run, both, rerun(run.runners, both, runs, again, run.settings))
    if result.incomparable and not result.findings and result.verdict in _RETRIED:
        # values known by repr: iterators consumed there, functions called on probes
        got = compare_member(run, target)
        if not isinstance(got, NotCompared) and (
            result.verdict is Comparison.NOT_COMPARED or got.findings
        ):
            return got
    notes = [*inputs.notes, *_notes(target, result, runs, bool(run.runners.binds))]
    return DiffOutcome(
        _report(result, base, found, notes, target.qualname),
        result.findings,
    )


def _compare(run: DiffRun, both: Pair, runs: Runs) -> Compared:
    t = both.target
    return compare_runs(
        f"{t.path}::{t.qualname}",
        t.qualname,
        runs,
        run.settings,
        run.accepts,
        run.copies.head_revision,
    )


def _not_compared(why: NotCompared, base: str | None, seeds: int = 0) -> DiffOutcome:
    if why.unchanged:
        return DiffOutcome(Differential(False, why.reason, base, outcome=Comparison.UNCHANGED))
    seeds = seeds or why.seeds
    message = f"not compared: {why.reason}"
    return DiffOutcome(Differential(False, message, base, seeds=seeds), error=why.error)


def _notes(target: Target, found: Compared, runs: Runs, binds: bool) -> list[str]:
    notes = []
    if runs.left_out:
        notes.append(
            f"{runs.left_out} input(s) left out: the base's first run spent {LATER_RUNS_CPU:g} s "
            "of CPU time on the cheaper ones"
        )
    if target.reads:
        notes.append(
            f"changed through the module-level name(s) it reads: {', '.join(target.reads)}"
        )
    if found.incomparable:
        notes.append(
            f"{found.incomparable} input(s) not compared: a version returned a value the "
            f"sandbox cannot send back (e.g. {found.example}), known only by its repr"
        )
    if found.hidden:
        notes.append(
            f"{found.hidden} input(s) gave a changed outcome, not reported: the function is "
            "nondeterministic"
        )
    if not binds:
        notes.append(
            "each version was loaded at one path through a link (the sandbox cannot bind a "
            "folder per child): os.path.realpath(__file__) names each version's own copy"
        )
    return notes


def _report(
    found: Compared, base: str | None, seeds: int, notes: list[str], name: str
) -> Differential:
    """The compare stage's value as the report's :class:`Differential`."""
    changes = tuple(change(f, name) for f in found.findings)
    accepted = tuple(change(f, name) for f in found.accepted)
    extra = "".join(
        f" ({n} {what})"
        for n, what in (
            (len(found.accepted), "accepted"),
            (found.incomparable, "not comparable"),
            (found.not_run, "cut short"),
            (len(found.unstable), "nondeterministic"),
        )
        if n
    )
    if found.verdict is Comparison.NONDETERMINISTIC:
        u = found.unstable[0]
        message = (
            f"nondeterministic: {len(found.unstable)} of {len(found.unstable) + found.inputs} "
            f"inputs gave different outcomes in two runs of one version (e.g. {u.call}: "
            f"{u.first}, then {u.second})"
        )
    elif found.verdict is Comparison.CHANGED:
        message = f"{len(changes)} changed outcome(s) on {found.inputs} inputs{extra}"
    elif found.verdict is Comparison.UNCHANGED:
        message = f"unchanged on {found.inputs} inputs{extra}"
    elif found.incomparable:
        message = (
            "not compared: no output could be compared: every value returned is one the "
            f"sandbox cannot send back ({found.incomparable} inputs)"
        )
    else:
        message = f"not compared: no input could be run on both versions{extra}"
    compared = found.verdict in (Comparison.CHANGED, Comparison.UNCHANGED)
    return Differential(
        compared,
        message,
        base,
        found.inputs,
        seeds,
        changes,
        accepted,
        tuple(notes),
        found.unstable,
        found.verdict,
    )


def change(
    f: Finding, name: str, call_text: Callable[[tuple[Any, ...]], str] | None = None
) -> Change:
    """A library finding as the report's :class:`Change` (``call_text``: the input as the
    code that runs it, for a member)."""
    from utdebug.synth.values import canonical

    call = call_text(f.args) if call_text else f"{name}({', '.join(canonical(a) for a in f.args)})"
    return Change(call, f.input_text, f.before, f.after, f.description)
