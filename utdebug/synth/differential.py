"""Differential regression testing of one function: the base version's outcomes on synthesised
inputs against the head version's, as findings ("was 4, now 5", "now raises KeyError").

Inputs are synthesised from seeds and validated on the base (the reference); both versions run
only in the sandbox. An accept file records intended changes so that they are not reported
again. See docs/synth.md ("Differential regression testing").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from utdebug.sandbox.compare import CheckSpec, Semantics, contains_opaque
from utdebug.sandbox.config import Limits, ModuleContext, StagedTest
from utdebug.sandbox.executor import Sandbox
from utdebug.sandbox.frames import encode_inputs
from utdebug.sandbox.outcomes import Outcome, Status
from utdebug.sandbox.values import describe
from utdebug.synth.kinds import Kinds, try_kinds
from utdebug.synth.oracle import (
    PROGRAM_LIMITS,
    REFERENCE_LIMITS,
    Reference,
    differs,
    inconclusive,
    run_chosen,
    validate,
)
from utdebug.synth.synthesizer import synthesize
from utdebug.synth.values import canonical, input_key

__all__ = [
    "ACCEPT_VERSION",
    "AcceptError",
    "Accepts",
    "DiffResult",
    "DiffSettings",
    "Finding",
    "Version",
    "differential",
    "finding_of",
    "incomparable",
    "outcome_words",
    "raised_in_setup",
    "read_accepts",
    "write_accepts",
]

ACCEPT_VERSION = 1
"""The accept file's ``version``; a file of another version is refused."""


@dataclass(frozen=True, slots=True)
class Version:
    """One version of the function: the module's code as the sandbox runs it (as ``utdebug
    check`` loads it) and the function's name in it."""

    code: str
    entry_point: str
    revision: str = ""
    """The commit (or any label) this version is at; function-level accepts name it."""
    context: ModuleContext | None = None
    """Run it as a module of its project (its imports, helpers and data files)."""
    test: StagedTest | None = None
    """A test with setup that runs each input instead of calling ``entry_point`` (a method on
    a receiver it builds: :mod:`utdebug.synth.members`)."""

    def reference(self, name: str) -> Reference:
        """This version as a program :mod:`utdebug.synth.oracle` runs, named ``name``."""
        return Reference(self.code, self.entry_point, name, context=self.context, test=self.test)


@dataclass(frozen=True, slots=True)
class DiffSettings:
    """How many inputs, from what seed, and how outcomes compare."""

    count: int = 200
    seed: int = 0
    time_budget: float = 5.0
    """CPU seconds for generation (this process)."""
    check: CheckSpec = field(default_factory=CheckSpec)
    semantics: Semantics = Semantics.DATASET
    base_limits: Limits = REFERENCE_LIMITS
    head_limits: Limits = PROGRAM_LIMITS
    errors: bool = True
    """Also compare the inputs the base raised on (a clean exception, not a time-out or a
    crash): a head that returns there, or raises another class, is a finding."""
    elsewhere: Callable[[tuple[Any, ...]], bool] | None = None
    """For tests with setup: whether an input's setup calls something else that changed (a
    method called before the one compared). Where the head raises in such a setup, the input
    is that change's, not this function's: it is left out, with a note (elsewhere, a head
    that raises in the setup is a finding: what the function does there changed)."""
    view: Callable[[Any, Any], tuple[Any, Any]] | None = None
    """What of two returned values (the base's, the head's) is compared: for members, the
    receivers' state without the private attributes when the versions name them differently
    (:func:`utdebug.synth.members.member_view`). ``None``: the values whole."""
    replay: bool = False
    """The head runs every input the base's validation ran, in the same order, not only the
    ones compared: what a version's module- or class-level state holds (a class attribute
    that numbers instances, a constructor that counts before it fails) is then the same on
    both sides."""


@dataclass(frozen=True, slots=True)
class Finding:
    """An input whose outcome changed between the base and the head."""

    function: str
    args: tuple[Any, ...]
    before: str
    """The base's outcome in words: a value's ``repr`` or ``raises ValueError``."""
    after: str
    """The head's outcome in words (``times out``, ``crashes`` too)."""
    description: str
    """One line: ``was 4, now 5``, ``now raises KeyError``, ``no longer raises ValueError``."""
    size: int
    """The input's encoded size in bytes (findings come smallest first)."""

    @property
    def input_text(self) -> str:
        """The arguments as the accept file writes them (the same text in every process)."""
        return canonical(self.args)

    def to_json(self) -> dict[str, Any]:
        return {
            "function": self.function,
            "input": self.input_text,
            "before": self.before,
            "after": self.after,
            "description": self.description,
        }


@dataclass
class DiffResult:
    function: str
    compared: bool
    """Whether the two versions were compared at all (``False``: no base, nothing loaded, no
    input; ``message`` says why)."""
    message: str
    findings: list[Finding] = field(default_factory=list)
    """Changed outcomes not accepted, smallest input first."""
    accepted: list[Finding] = field(default_factory=list)
    """Changed outcomes the accept file covers."""
    inputs: int = 0
    """Inputs run on both versions."""
    emitted: int = 0
    """Inputs synthesised (valid or not)."""
    notes: list[str] = field(default_factory=list)
    incomparable: int = 0
    """Inputs on which a version returned a value the sandbox cannot send back (an object
    known only by its ``repr``, which the program writes): neither a change nor a match."""
    kinds: dict[str, list[str]] = field(default_factory=dict)
    """Per parameter no seed covered, the candidate kinds the base accepted."""
    setup_failed: int = 0
    """Inputs left out because the base raised in a test's setup (a receiver it could not
    build): what the base does not accept is not compared."""


class AcceptError(ValueError):
    """An accept file that cannot be read (the message says where and why)."""


@dataclass
class Accepts:
    """Intended changes: single outcomes (function, input, new outcome) and whole functions at
    a revision of the head (every change of the function at that revision)."""

    outcomes: dict[tuple[str, str], str] = field(default_factory=dict)
    """(function, input text) -> the head's outcome that was accepted there."""
    functions: dict[str, str] = field(default_factory=dict)
    """function -> the head revision at which all its changes are accepted."""

    def accept(self, finding: Finding) -> None:
        self.outcomes[(finding.function, finding.input_text)] = finding.after

    def accept_function(self, function: str, revision: str) -> None:
        if not revision:
            raise ValueError("a function-level accept needs the head's revision")
        self.functions[function] = revision

    def covers(self, finding: Finding, revision: str = "") -> bool:
        """Whether ``finding`` (of a head at ``revision``) is an accepted change: its function
        is accepted at this revision, or this input's new outcome is the accepted one (a
        later, different outcome is reported again)."""
        at = self.functions.get(finding.function)
        if at is not None and revision and at == revision:
            return True
        return self.outcomes.get((finding.function, finding.input_text)) == finding.after

    def to_json(self) -> dict[str, Any]:
        entries: list[dict[str, str]] = [
            {"function": f, "head": r} for f, r in sorted(self.functions.items())
        ]
        entries += [
            {"function": f, "input": i, "outcome": o} for (f, i), o in sorted(self.outcomes.items())
        ]
        return {"version": ACCEPT_VERSION, "accepted": entries}


def read_accepts(path: Path) -> Accepts:
    """The accept file at ``path`` (an empty :class:`Accepts` when it does not exist);
    :class:`AcceptError` when it is not one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Accepts()
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AcceptError(f"{path}: not a readable JSON file: {exc}") from None
    if not isinstance(data, dict) or data.get("version") != ACCEPT_VERSION:
        raise AcceptError(f"{path}: not an accept file of version {ACCEPT_VERSION}")
    entries = data.get("accepted")
    if not isinstance(entries, list):
        raise AcceptError(f"{path}: 'accepted' must be a list")
    out = Accepts()
    for n, e in enumerate(entries, 1):
        if not isinstance(e, dict) or not all(isinstance(v, str) for v in e.values()):
            raise AcceptError(f"{path}: entry {n} is not an object of strings")
        if set(e) == {"function", "head"}:
            out.functions[e["function"]] = e["head"]
        elif set(e) == {"function", "input", "outcome"}:
            out.outcomes[(e["function"], e["input"])] = e["outcome"]
        else:
            raise AcceptError(
                f"{path}: entry {n} needs function + head, or function + input + outcome"
            )
    return out


def write_accepts(path: Path, accepts: Accepts) -> None:
    """Write ``accepts`` to ``path`` (sorted, indented: a file that diffs well in review)."""
    text = json.dumps(accepts.to_json(), indent=2, ensure_ascii=False, sort_keys=True)
    Path(path).write_text(text + "\n", encoding="utf-8")


def differential(
    sandbox: Sandbox,
    function: str,
    base: Version | None,
    head: Version,
    seeds: Sequence[Sequence[Any]],
    *,
    settings: DiffSettings | None = None,
    hints: Any = None,
    names: Sequence[str] = (),
    accepts: Accepts | None = None,
    kinds: Kinds | None = None,
) -> DiffResult:
    """Compare ``head`` with ``base`` on inputs synthesised from ``seeds`` (``function`` names
    it in findings and accepts, e.g. ``pkg/mod.py::name``). With no base, nothing is compared.
    ``kinds``: the parameters' candidate kinds (:mod:`utdebug.synth.kinds`); those of the
    parameters no seed covers are first tried on the base, and the inputs it accepts join the
    seeds. The same arguments give the same findings (as long as the time budget does not cut
    the synthesis short)."""
    cfg = settings or DiffSettings()
    if base is None:
        return DiffResult(function, False, "no base version: nothing was compared")
    ref = base.reference("base")
    trial = None
    if kinds is not None and kinds.uncovered(seeds):
        trial = try_kinds(sandbox, ref, kinds, seeds, cfg.base_limits, seed=cfg.seed)
        if trial.load_error:
            return DiffResult(
                function, False, f"the base version does not load: {trial.load_error}"
            )
        seeds = [*seeds, *trial.seeds]
    syn = synthesize(
        seeds,
        count=cfg.count,
        seed=cfg.seed,
        hints=hints,
        names=names,
        time_budget=cfg.time_budget,
    )
    notes = list(syn.notes) + ([trial.note()] if trial is not None else [])
    if not syn.inputs:
        refused = [name for name, kept in (trial.kept if trial else {}).items() if not kept]
        why = "no input could be synthesised"
        if refused:
            why = f"no seed input, and no kind of {', '.join(refused)} that the base accepts"
        return DiffResult(function, False, why, notes=notes)
    val = validate(
        sandbox, [ref], syn.inputs, limits=cfg.base_limits, check=cfg.check, semantics=cfg.semantics
    )
    if val.load_errors:
        why = val.load_errors[0].removeprefix("base: ")
        return DiffResult(
            function, False, f"the base version does not load: {why}", emitted=len(syn.inputs)
        )
    chosen = [i for i in range(len(val.inputs)) if val.valid[i] or _raised(val.reasons[i], cfg)]
    base_out = _base_outcomes(sandbox, ref, val.inputs, chosen, val.valid, val.outputs, cfg)
    unbuilt = [i for i in chosen if raised_in_setup(base_out[i])]
    if unbuilt:
        chosen = [i for i in chosen if i not in set(unbuilt)]
        left_out = _setup_note(unbuilt, base_out, every=not chosen)
        if not chosen:
            emitted = len(syn.inputs)
            return DiffResult(
                function, False, left_out, emitted=emitted, notes=notes, setup_failed=len(unbuilt)
            )
        notes.append(left_out)
    pairs = _pairs(sandbox, head, val.inputs, chosen, base_out, cfg, notes)
    opaque = [i for i, was, now in pairs if incomparable(was, now)]
    if opaque:
        notes.append(
            f"{len(opaque)} input(s) not compared: a version returned a value the sandbox "
            f"cannot send back (e.g. {outcome_words(base_out[opaque[0]])}), known only by its repr"
        )
    new, old = _findings(function, val.inputs, pairs, cfg, accepts or Accepts(), head.revision)
    ran = len(pairs) - len(opaque)
    message = (
        f"{len(new)} changed outcome(s) on {ran} inputs"
        + (f" ({len(old)} accepted)" if old else "")
        + (f" ({len(opaque)} not comparable)" if opaque else "")
    )
    if not ran:
        return DiffResult(
            function,
            False,
            f"no output could be compared: every value returned is one the sandbox cannot "
            f"send back ({len(opaque)} inputs)",
            emitted=len(syn.inputs),
            notes=notes,
            incomparable=len(opaque),
        )
    return DiffResult(
        function,
        True,
        message,
        new,
        old,
        ran,
        len(syn.inputs),
        notes,
        len(opaque),
        trial.kept if trial is not None else {},
        len(unbuilt),
    )


def _pairs(
    sandbox: Sandbox,
    head: Version,
    inputs: list[tuple[Any, ...]],
    chosen: list[int],
    base_out: dict[int, Outcome],
    cfg: DiffSettings,
    notes: list[str],
) -> list[tuple[int, Outcome, Outcome]]:
    """The head's outcome on each chosen input beside the base's (``notes`` gets a head that
    does not load); with ``cfg.replay`` the head runs every input, in the base's order. An
    input whose setup the head raised in is left out, with a note, where ``cfg.elsewhere``
    says that is another function's change."""
    ran_on = list(range(len(inputs))) if cfg.replay else chosen
    head_out, load_error, _, _ = run_chosen(
        sandbox, head.reference("head"), inputs, ran_on, cfg.head_limits
    )
    if load_error:
        notes.append(f"the head version does not load: {load_error}")
    pairs = [(i, base_out[i], head_out[i]) for i in chosen if i in head_out]
    if cfg.elsewhere is None:
        return pairs
    moved = [(i, now) for i, _, now in pairs if raised_in_setup(now) and cfg.elsewhere(inputs[i])]
    if moved:
        now = moved[0][1]
        notes.append(
            f"{len(moved)} input(s) not compared: the checked version raised in the setup, in "
            f"a call that changed before the one compared (e.g. {now.error_type}: "
            f"{(now.error or '')[:200]})"
        )
    left_out = {i for i, _ in moved}
    return [(i, was, now) for i, was, now in pairs if i not in left_out]


def _findings(
    function: str,
    inputs: list[tuple[Any, ...]],
    pairs: list[tuple[int, Outcome, Outcome]],
    cfg: DiffSettings,
    acc: Accepts,
    revision: str,
) -> tuple[list[Finding], list[Finding]]:
    """The changed outcomes, smallest input first: those not accepted, and those accepted."""
    found = [
        f
        for i, was, now in pairs
        if not incomparable(was, now)
        and (f := finding_of(function, inputs[i], was, now, cfg)) is not None
    ]
    found.sort(key=lambda f: (f.size, input_key(f.args)))
    return [f for f in found if not acc.covers(f, revision)], [
        f for f in found if acc.covers(f, revision)
    ]


def _setup_note(unbuilt: list[int], base_out: dict[int, Outcome], *, every: bool) -> str:
    example = base_out[unbuilt[0]]
    why = f"e.g. {example.error_type}: {(example.error or '')[:200]}"
    if every:
        return f"the base raised in the setup on every input ({len(unbuilt)}; {why})"
    return f"{len(unbuilt)} input(s) left out: the base raised in the setup ({why})"


def raised_in_setup(o: Outcome) -> bool:
    """The base raised in a test's setup (never for a plain call, which has none)."""
    return o.status is Status.ERROR and o.raised is not None and o.raised.stage == "setup"


def incomparable(was: Outcome, now: Outcome) -> bool:
    """Both versions returned values that hold an object the sandbox could not encode: its
    text is the program's ``repr``, which proves neither a change nor a match (an ``Opaque``
    never equals anything, so each such input would read as a change). A plain value on one
    side and such an object on the other is a change."""
    return (
        was.status is Status.OK
        and now.status is Status.OK
        and contains_opaque(was.value)
        and contains_opaque(now.value)
    )


def _raised(reason: str | None, cfg: DiffSettings) -> bool:
    return cfg.errors and reason is not None and reason.startswith("reference base raised ")


def _base_outcomes(
    sandbox: Sandbox,
    base: Reference,
    inputs: list[tuple[Any, ...]],
    chosen: Iterable[int],
    valid: list[bool],
    outputs: list[Any],
    cfg: DiffSettings,
) -> dict[int, Outcome]:
    """The base's outcome on each chosen input: its value where it was valid; where it raised,
    the exception, run again (validation keeps only the reason's text)."""
    out = {i: Outcome(Status.OK, outputs[i]) for i in chosen if valid[i]}
    raised = [i for i in chosen if not valid[i]]
    if raised:
        again, _, _, _ = run_chosen(sandbox, base, inputs, raised, cfg.base_limits)
        out.update(again)
    return out


def finding_of(
    function: str, args: tuple[Any, ...], was: Outcome, now: Outcome, cfg: DiffSettings
) -> Finding | None:
    if was.status is Status.OK:
        if cfg.view is not None and now.status is Status.OK:
            was_value, now_value = cfg.view(was.value, now.value)
            was, now = replace(was, value=was_value), replace(now, value=now_value)
        if not differs(now, was.value, args, cfg.check, cfg.semantics) or _same_text(was, now):
            return None
    elif was.status is Status.ERROR:
        if now.status is Status.ERROR and now.error_type == was.error_type:
            return None
        if now.status is Status.TIMEOUT and inconclusive(now):
            return None
    else:  # the base timed out or crashed on a second run: says nothing
        return None
    before, after = outcome_words(was), outcome_words(now)
    return Finding(
        function, args, before, after, _description(was, now, before, after), _size(args)
    )


def _same_text(was: Outcome, now: Outcome) -> bool:
    """Both versions returned values of the same canonical text: the same value, whatever
    its comparison says (``nan`` never equals ``nan``, a state that holds one neither)."""
    if now.status is not Status.OK:
        return False
    try:
        return canonical(was.value) == canonical(now.value)
    except Exception:  # a value whose text cannot be made: compared as it compares
        return False


def outcome_words(o: Outcome) -> str:
    if o.status is Status.OK:
        return describe(o.value, 200)
    if o.status is Status.ERROR:
        return f"raises {o.error_type}"
    return "times out" if o.status is Status.TIMEOUT else "crashes"


def _description(was: Outcome, now: Outcome, before: str, after: str) -> str:
    if was.status is Status.OK:
        return f"was {before}, now {after}" if now.status is Status.OK else f"now {after}"
    if now.status is Status.OK:
        return f"no longer {before}"
    return f"now {after} instead of raising {was.error_type}"


def _size(args: tuple[Any, ...]) -> int:
    try:
        return len(encode_inputs([args])[0])
    except Exception:  # every synthesised input encodes; a safe order all the same
        return len(canonical(args))
