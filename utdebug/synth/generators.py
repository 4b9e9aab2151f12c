"""Klear-CodeTest's generator-validation loop with a model: the model writes a regular and a
corner input generator program; each runs in the sandbox; its inputs are checked (plain data,
inside the bounds) and validated on the references (kept only where all of them agree); what
went wrong goes back to the model for up to three repairs. A checker program for non-unique
outputs (written, then reviewed) may judge the references' disagreements.

The programs run only in the sandbox, with its limits. See docs/synth.md ("Generators").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from utdebug.agents.base import Message, Model, ModelError, ModelRequest, Purpose, Sampling, Usage
from utdebug.agents.parsing import extract_code
from utdebug.agents.synth_prompts import (
    CHECKER_ENTRY,
    GENERATOR_ENTRY,
    SYNTH_PROMPT_VERSION,
    GeneratorKind,
    SynthProblem,
    checker_prompt,
    checker_review_prompt,
    generator_prompt,
    repair_prompt,
)
from utdebug.sandbox.compare import CheckSpec, Semantics
from utdebug.sandbox.config import Limits
from utdebug.sandbox.executor import Sandbox
from utdebug.sandbox.outcomes import Outcome, Status
from utdebug.sandbox.values import describe
from utdebug.synth.envelope import Envelope
from utdebug.synth.oracle import REFERENCE_LIMITS, Reference, run_batch, validate
from utdebug.synth.values import Unencodable, check_encodable, input_key

__all__ = [
    "GENERATOR_LIMITS",
    "Attempt",
    "CheckerProgram",
    "GVResult",
    "GVSettings",
    "GeneratorRun",
    "generate_inputs",
    "run_generator",
]

GENERATOR_LIMITS = Limits(per_input=5.0, load=5.0, batch=10.0, frame_cap=4 << 20)
"""A generator program gets 5 s of CPU time and 4 MB of returned inputs."""


@dataclass(frozen=True, slots=True)
class GVSettings:
    regular: int = 80
    """Inputs asked of the regular generator (Klear: 80)."""
    corner: int = 20
    """Inputs asked of the corner generator (Klear: 20)."""
    repairs: int = 3
    """Repair rounds a generator gets after its first program."""
    checker: bool = False
    """Write a checker program for non-unique outputs (reviewed by a second call) and let it
    judge the inputs on which the references disagree."""
    flood: int = 10
    """A generator returning more than ``flood`` times what it was asked for is flooding: the
    rest is dropped, and that is a failure."""
    limits: Limits = GENERATOR_LIMITS
    reference_limits: Limits = REFERENCE_LIMITS
    check: CheckSpec = field(default_factory=CheckSpec)
    semantics: Semantics = Semantics.DATASET
    sampling: Sampling = field(default_factory=lambda: Sampling(temperature=0.7))


@dataclass(frozen=True, slots=True)
class Attempt:
    """One program of a generator: what it gave and the feedback lines it earned."""

    number: int
    """0 for the first program, 1.. for repairs."""
    code: str | None
    emitted: int
    valid: int
    feedback: tuple[str, ...]


@dataclass
class GeneratorRun:
    kind: GeneratorKind
    attempts: list[Attempt] = field(default_factory=list)
    inputs: list[tuple[Any, ...]] = field(default_factory=list)
    """Every input its programs emitted that passed the checks (before validation)."""

    @property
    def code(self) -> str | None:
        """The last program written."""
        return self.attempts[-1].code if self.attempts else None

    @property
    def repaired(self) -> bool:
        """A failing program was repaired: the last one earned no feedback."""
        return len(self.attempts) > 1 and not self.attempts[-1].feedback


@dataclass(frozen=True, slots=True)
class CheckerProgram:
    code: str
    draft: str
    """What the first call wrote (``code`` is the reviewed program)."""

    @property
    def changed_in_review(self) -> bool:
        return self.code.strip() != self.draft.strip()


@dataclass
class GVResult:
    inputs: list[tuple[Any, ...]]
    """Valid inputs: every reference ran them, and they agree (or the checker accepted)."""
    outputs: list[Any]
    """The first reference's value on each input."""
    generators: list[GeneratorRun]
    dropped: list[tuple[tuple[Any, ...], str]] = field(default_factory=list)
    """Inputs the references rejected or disagree on, with the reason."""
    checker: CheckerProgram | None = None
    judged: int = 0
    """Disagreements the checker accepted."""
    usage: Usage = field(default_factory=Usage)
    """Tokens (and cost) of every model call, from the model's usage."""
    calls: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def feedback(self) -> list[str]:
        """Every feedback line, as ``kind #n: line``."""
        return [
            f"{g.kind} #{a.number}: {line}"
            for g in self.generators
            for a in g.attempts
            for line in a.feedback
        ]


class _Session:
    """The model calls of one :func:`generate_inputs`, with their usage."""

    def __init__(self, model: Model, sampling: Sampling) -> None:
        self.model = model
        self.sampling = sampling
        self.usage = Usage()
        self.calls = 0

    async def ask(self, messages: Sequence[Message], purpose: Purpose = "generate") -> str:
        request = ModelRequest(
            tuple(messages),
            sampling=self.sampling,
            purpose=purpose,
            template_version=SYNTH_PROMPT_VERSION,
        )
        completions = await self.model.complete(request)
        self.calls += 1
        for c in completions:
            self.usage = self.usage + c.usage
        return completions[0].text


async def generate_inputs(
    model: Model,
    sandbox: Sandbox,
    problem: SynthProblem,
    references: Sequence[Reference],
    *,
    bounds: Envelope | None = None,
    settings: GVSettings | None = None,
) -> GVResult:
    """Regular and corner generators written by ``model``, run in ``sandbox``, their inputs
    validated on ``references`` (at least one; the first gives the outputs). ``bounds``: an
    envelope every input must be inside (e.g. the seeds' outer widening). A model error ends
    the generator (or the checker) it happened in, with a note; it is never raised."""
    cfg = settings or GVSettings()
    session = _Session(model, cfg.sampling)
    notes: list[str] = []
    checker = await _write_checker(session, problem, notes) if cfg.checker else None
    out = GVResult([], [], [], checker=checker, notes=notes)
    loop = _Loop(session, sandbox, problem, references, bounds, cfg, out)
    kinds: tuple[tuple[GeneratorKind, int], ...] = (
        ("regular", cfg.regular),
        ("corner", cfg.corner),
    )
    for kind, count in kinds:
        if count > 0:
            out.generators.append(GeneratorRun(kind))
            await _generate(loop, out.generators[-1], count)
    out.usage, out.calls = session.usage, session.calls
    return out


@dataclass
class _Loop:
    """What every generator of one :func:`generate_inputs` shares."""

    session: _Session
    sandbox: Sandbox
    problem: SynthProblem
    references: Sequence[Reference]
    bounds: Envelope | None
    cfg: GVSettings
    out: GVResult
    kept: dict[str, int] = field(default_factory=dict)
    """Keys of the inputs in ``out.inputs`` (validated once)."""


async def _generate(loop: _Loop, run: GeneratorRun, count: int) -> None:
    """The first program of one generator and its repairs; valid inputs go into ``loop.out``."""
    cfg, out = loop.cfg, loop.out
    messages = [Message("user", generator_prompt(run.kind, loop.problem, count))]
    for number in range(cfg.repairs + 1):
        try:
            reply = await loop.session.ask(messages)
        except ModelError as exc:
            out.notes.append(f"{run.kind}: the model failed: {exc}")
            return
        code = extract_code(reply)
        inputs: list[tuple[Any, ...]] = []
        if code is None:
            lines = ["the reply has no ```python block with the program"]
        else:
            inputs, lines = run_generator(
                loop.sandbox, code, count, cfg.limits, loop.bounds, cfg.flood
            )
        valid = _validate(loop, inputs) if inputs else 0
        if inputs and not valid:
            lines.append(f"none of the {len(inputs)} inputs is valid: {_first_reason(out)}")
        run.inputs += inputs
        run.attempts.append(Attempt(number, code, len(inputs), valid, tuple(lines)))
        if not lines:
            return
        messages += [Message("assistant", reply), Message("user", repair_prompt(lines))]


def run_generator(
    sandbox: Sandbox,
    code: str,
    count: int,
    limits: Limits = GENERATOR_LIMITS,
    bounds: Envelope | None = None,
    flood: int = 10,
) -> tuple[list[tuple[Any, ...]], list[str]]:
    """Run ``generate()`` of ``code`` in the sandbox: the distinct inputs that are argument
    tuples of plain data inside ``bounds``, and one feedback line per kind of failure."""
    outcomes, load_error, _, _ = run_batch(sandbox, code, GENERATOR_ENTRY, [()], limits)
    if load_error:
        return [], [f"the program does not load: {_cut(load_error)}"]
    o = outcomes[0]
    if o.status is not Status.OK:
        return [], [_failure(o, limits, count)]
    if not isinstance(o.value, list | tuple):
        what = type(o.value).__name__
        return [], [f"{GENERATOR_ENTRY}() returned a value of type {what}, not a list of tuples"]
    values = list(o.value)
    lines: list[str] = []
    cap = max(1, flood * count)
    if len(values) > cap:
        lines.append(
            f"{GENERATOR_ENTRY}() returned {len(values)} inputs, more than {cap} "
            f"({flood} times the {count} asked for): only the first {cap} were read"
        )
        values = values[:cap]
    if not values:
        lines.append(f"{GENERATOR_ENTRY}() returned no inputs")
    inputs, problems = _checked(values, bounds)
    for what, (n, example) in problems.items():
        lines.append(f"{n} of {len(values)} inputs {what} (e.g. {example})")
    return inputs, lines


def _checked(
    values: list[Any], bounds: Envelope | None
) -> tuple[list[tuple[Any, ...]], dict[str, tuple[int, str]]]:
    """The values that are inputs, and per kind of problem its count and a first example."""
    inputs: list[tuple[Any, ...]] = []
    seen: set[str] = set()
    problems: dict[str, tuple[int, str]] = {}

    def bad(what: str, example: str) -> None:
        n, first = problems.get(what, (0, example))
        problems[what] = (n + 1, first)

    for i, v in enumerate(values):
        if not isinstance(v, tuple | list):
            bad("are not argument tuples", f"input {i}: {describe(v, 100)}")
            continue
        args = tuple(v)
        try:
            check_encodable(args)
        except Unencodable as exc:
            bad("are not plain values the function can be called with", f"input {i}: {exc}")
            continue
        why = bounds.why_not(args) if bounds is not None else None
        if why is not None:
            bad("are outside the input domain", f"{describe(args, 100)}: {why}")
            continue
        key = input_key(args)
        if key not in seen:
            seen.add(key)
            inputs.append(args)
    return inputs, problems


def _failure(o: Outcome, limits: Limits, count: int) -> str:
    if o.status is Status.TIMEOUT:
        return (
            f"{GENERATOR_ENTRY}() was stopped at the sandbox's time limit "
            f"({limits.per_input:g} s): an endless loop, or too much work for {count} inputs"
        )
    if o.status is Status.CRASH:
        return f"{GENERATOR_ENTRY}() crashed: {_cut(o.error or '')}"
    if o.error_type == "OutputTooLarge":
        return (
            f"{GENERATOR_ENTRY}() returned more than the sandbox takes ({_cut(o.error or '')}): "
            f"return {count} inputs of moderate size"
        )
    return f"{GENERATOR_ENTRY}() raised {o.error_type}: {_cut(o.error or '')}"


def _cut(text: str, n: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _validate(loop: _Loop, inputs: list[tuple[Any, ...]]) -> int:
    """Validate ``inputs`` on the references; the valid ones (and the disagreements the
    checker accepts) go into ``out``, the others into ``out.dropped``. Returns how many were
    valid."""
    cfg, out, kept = loop.cfg, loop.out, loop.kept
    fresh = [a for a in inputs if input_key(a) not in kept]
    if not fresh:
        return len(inputs)
    val = validate(
        loop.sandbox,
        loop.references,
        fresh,
        limits=cfg.reference_limits,
        check=cfg.check,
        semantics=cfg.semantics,
    )
    accepted = {i: val.outputs[i] for i in val.valid_indices}
    if out.checker is not None and val.disagreements:
        disputed = [fresh[i] for i in val.disagreements]
        judged = _judge(loop.sandbox, out.checker, loop.references, disputed, cfg)
        for i, value in zip(val.disagreements, judged, strict=True):
            if value is not _REJECTED:
                accepted[i] = value
                out.judged += 1
    for i, args in enumerate(fresh):
        if i in accepted:
            kept[input_key(args)] = len(out.inputs)
            out.inputs.append(args)
            out.outputs.append(accepted[i])
        else:
            out.dropped.append((args, val.reasons[i] or "invalid"))
    return len(inputs) - len(fresh) + len(accepted)


def _first_reason(out: GVResult) -> str:
    return out.dropped[-1][1] if out.dropped else "the references rejected them"


_REJECTED = object()


def _judge(
    sandbox: Sandbox,
    checker: CheckerProgram,
    references: Sequence[Reference],
    inputs: list[tuple[Any, ...]],
    cfg: GVSettings,
) -> list[Any]:
    """For each input the references disagree on: the first reference's value when the checker
    (run in the sandbox) accepts every other reference's value against it, else
    :data:`_REJECTED`."""
    runs = [
        run_batch(
            sandbox, r.code, r.entry_point, inputs, cfg.reference_limits, r.reverse, r.context
        )[0]
        for r in references
    ]
    verdict: list[Any] = [
        runs[0][j].value if all(run[j].status is Status.OK for run in runs) else _REJECTED
        for j in range(len(inputs))
    ]
    cases = [
        (j, (inputs[j], run[j].value, runs[0][j].value))
        for run in runs[1:]
        for j in range(len(inputs))
        if verdict[j] is not _REJECTED
    ]
    if not cases:
        return verdict
    try:
        judged, _, _, _ = run_batch(
            sandbox, checker.code, CHECKER_ENTRY, [c for _, c in cases], cfg.reference_limits
        )
    except Exception:  # an output that cannot be sent back in: not judged
        return [_REJECTED] * len(inputs)
    for (j, _), o in zip(cases, judged, strict=True):
        if not (o.status is Status.OK and o.value is True):
            verdict[j] = _REJECTED
    return verdict


async def _write_checker(
    session: _Session, problem: SynthProblem, notes: list[str]
) -> CheckerProgram | None:
    """Klear's two-stage checker: written by one call, reviewed (and repaired) by a second."""
    try:
        draft_reply = await session.ask([Message("user", checker_prompt(problem))])
        draft = extract_code(draft_reply)
        if draft is None:
            notes.append("checker: the reply has no ```python block: no checker")
            return None
        review = await session.ask(
            [Message("user", checker_review_prompt(problem, draft))], purpose="critique"
        )
    except ModelError as exc:
        notes.append(f"checker: the model failed: {exc}")
        return None
    if review.strip().upper().startswith("LGTM"):
        return CheckerProgram(draft, draft)
    fixed = extract_code(review)
    if fixed is None:
        notes.append("checker: the review neither approved nor repaired it: the draft is used")
        return CheckerProgram(draft, draft)
    return CheckerProgram(fixed, draft)
