"""Building a set of generated unit tests (paper Algorithm 1, with self-consistency).

Per attempt: the UT generator proposes one test; its call is parsed (non-literal arguments are
evaluated in the sandbox); keyword arguments are bound to positions; a duplicate input is
dropped; then the output predictor draws ``k`` outputs and the test is kept when its top answer
has at least ``threshold`` of the draws. Without voting (``k = 0``) the output the generator
wrote itself is the expected value.

``paper`` variant: at most ``tries_factor x n`` attempts (3n), stop as soon as n tests are kept.
``reference`` variant: at most 4n attempts; like the published code, a set is "fulfilled" only
by one more kept test after it already holds n (so it keeps sampling), and the search stops
after ``patience`` attempts in a row that keep nothing once a first test was kept.

Synthesised candidate inputs (``candidate_inputs``: argument tuples with their
``synth:<source>``, made by a front end with :mod:`utdebug.synth`) take ``synth_share`` of the
attempts while any are left, first attempt first (0.5: every other attempt): such an attempt
skips the generator, and the input goes straight to the output predictor (the single-turn
prompt; ``k`` votes, the same threshold and the same duplicate rule). An attempt on a
synthesised input counts in the budget above like a proposal (the set still has at most
``tries`` attempts; the reference variant's patience counts it too). Inputs are taken in the
given order; without voting (``k = 0``) or for tasks tested with programs there is no output
for them, so none is taken. With no candidate inputs every attempt is as before.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from utdebug.agents import parsing
from utdebug.agents.parsing import Style
from utdebug.agents.reply_tests import ParsedProgram
from utdebug.agents.roles import (
    OutputPredictor,
    ProgramVote,
    Proposal,
    UTGenerator,
    Vote,
    program_listing,
)
from utdebug.engine.admission import call_problem, setup_problem
from utdebug.engine.events import Event, TestDropped, TestKept, TestProposed, VoteCast
from utdebug.engine.execution import Executor
from utdebug.engine.model import CandidateInput, Settings, Task, UnitTest, Variant, code_id
from utdebug.engine.program import Raises, check_shape
from utdebug.engine.voting import Tally, answer_key, keeps, tally
from utdebug.literals import canonical_repr
from utdebug.sandbox.values import describe

Emit = Callable[[Event], None]
Checkpoint = Callable[[], Awaitable[None]]
HintFn = Callable[..., Any]


def cut_reason(reason: str, finish_reason: str) -> str:
    """Why a reply did not parse, saying first when it was cut at the token limit."""
    return f"cut at the token limit: {reason}" if finish_reason == "length" else reason


@dataclass(slots=True)
class BuildResult:
    tests: list[UnitTest] = field(default_factory=list)
    attempts: int = 0
    synth_taken: int = 0
    """How many of the candidate inputs (from the front) the attempts took."""


@dataclass(frozen=True, slots=True)
class TestRound:
    """What every attempt of one round's test building shares (:func:`build_tests`)."""

    task: Task
    code: str
    round_no: int
    settings: Settings
    generator: UTGenerator
    predictor: OutputPredictor
    executor: Executor
    emit: Emit
    hint: HintFn
    candidates: Sequence[CandidateInput] = ()

    @property
    def style(self) -> Style:
        return "reference" if self.settings.variant is Variant.REFERENCE else "paper"


async def build_tests(
    r: TestRound, *, checkpoint: Checkpoint, next_id: Callable[[], int]
) -> BuildResult:
    """One set of up to ``settings.n`` tests for ``r.code`` (see the module's text);
    ``r.candidates``: synthesised inputs to vote on, in order (none are taken for a task
    tested with programs, or without voting)."""
    if r.candidates and (r.task.program or r.settings.k == 0):
        r = replace(r, candidates=())
    return await _Builder(r, next_id).run(checkpoint)


def call_text(entry_point: str, args: Sequence[Any]) -> str:
    """A synthesised input's call as tests show it: ``f(1, [2, 3])``."""
    return f"{entry_point}({', '.join(canonical_repr(a) for a in args)})"


class _Builder:
    """One round's attempts and the set of tests they keep."""

    def __init__(self, r: TestRound, next_id: Callable[[], int]) -> None:
        self.r = r
        self.next_id = next_id
        self.reference = r.settings.variant is Variant.REFERENCE
        self.out = BuildResult()
        self.seen: set[str] = set()
        self.fulfilled = False
        self.target = code_id(r.code)

    def full(self) -> bool:
        return self.fulfilled or len(self.out.tests) >= self.r.settings.n

    async def run(self, checkpoint: Checkpoint) -> BuildResult:
        r = self.r
        patience = r.settings.patience
        text = r.task.text()
        for attempt in range(r.settings.tries):
            if self.fulfilled or (not self.reference and self.full()):
                break
            await checkpoint()
            self.out.attempts += 1
            if self._synth_turn(attempt):
                progress = await self._synth(attempt)
            else:
                sample = r.round_no * 1000 + attempt
                hint = r.hint("ut", code=r.code)
                prop = await r.generator.propose(text, r.code, sample_index=sample, hint=hint)
                if isinstance(prop.call, ParsedProgram):
                    progress = await self._programs(prop, prop.call, attempt)
                else:
                    progress = await self._call(prop, attempt)
            if self.reference and self.out.tests and not progress:
                patience -= 1
                if patience <= 0:
                    break
        return self.out

    def _synth_turn(self, attempt: int) -> bool:
        """Whether ``attempt`` takes a synthesised input: ``synth_share`` of the attempts,
        the first one first, while any are left."""
        if self.out.synth_taken >= len(self.r.candidates):
            return False
        share = self.r.settings.synth_share
        return math.ceil((attempt + 1) * share - 1e-9) > math.ceil(attempt * share - 1e-9)

    async def _synth(self, attempt: int) -> bool:
        """The next synthesised input: no generator call; its output is voted (a duplicate
        of an input already in the set is dropped before any vote)."""
        r = self.r
        args, source = r.candidates[self.out.synth_taken]
        self.out.synth_taken += 1
        args = tuple(args)
        call = call_text(r.task.entry_point, args)
        reply = f"synthesised input ({source.removeprefix('synth:')})"
        r.emit(TestProposed(r.round_no, attempt, call, reply, input_source=source))
        key = answer_key(list(args), r.style)
        if key in self.seen and len(self.out.tests) < r.settings.n:
            r.emit(TestDropped(r.round_no, attempt, call, "duplicate input"))
            return False
        votes = await r.predictor.predict_call(
            r.task.text(),
            call,
            r.settings.k,
            sample_index=r.round_no * 100_000 + attempt * 100,
            hint=r.hint("vote", code=r.code, args=args),
        )
        t = await _vote(r, votes, attempt, call)
        if t is None:
            return False
        kept = UnitTest(
            0, args, call, t.value, dict(t.counts), t.draws, t.share, "model", r.round_no,
            input_source=source,
        )  # fmt: skip
        return self.admit(kept, attempt, key, call, "duplicate input")

    def admit(self, kept: UnitTest, attempt: int, key: str, source: str | None, dup: str) -> bool:
        """Keep a test that passed its vote unless the set is already full (then the reference
        variant's set is fulfilled) or its key was seen; whether the attempt made progress."""
        if len(self.out.tests) >= self.r.settings.n:
            self.fulfilled = self.reference
            return True
        if key in self.seen:
            self.r.emit(TestDropped(self.r.round_no, attempt, source, dup, kept.share))
            return False
        self.seen.add(key)
        kept.id = self.next_id()
        kept.target = self.target
        self.out.tests.append(kept)
        self.r.emit(TestKept(self.r.round_no, attempt, kept))
        return True

    async def _programs(self, prop: Proposal, first: ParsedProgram, attempt: int) -> bool:
        """Every test of the reply (several test functions, a table of cases), until the set
        is full."""
        progress = False
        for test in (first, *prop.more):
            if test is not first and self.full():
                break
            kept = await _judge_program(self.r, test, prop, attempt)
            if kept is not None and self.admit(
                kept, attempt, test.key, kept.call, "duplicate test"
            ):
                progress = True
        return progress

    async def _call(self, prop: Proposal, attempt: int) -> bool:
        r = self.r
        call = prop.call
        if isinstance(call, parsing.ParsedCall):
            call = await r.executor.resolve_call(call, r.settings.parse_timeout)
        if isinstance(call, parsing.ParsedCall):
            bound = parsing.bind_arguments(call.args, call.kwargs, r.code, r.task.entry_point)
            if not self.reference and isinstance(bound, parsing.ParseFailure) and call.kwargs:
                call = bound
            elif isinstance(bound, tuple):
                call = parsing.ParsedCall(
                    args=tuple(bound), kwargs={}, source=call.source, pending=None
                )
        if isinstance(call, parsing.ParseFailure):
            reason = cut_reason(call.reason, prop.finish_reason)
            r.emit(TestProposed(r.round_no, attempt, None, prop.reply, reason, prop.finish_reason))
            r.emit(TestDropped(r.round_no, attempt, None, f"unparsable: {reason}"))
            return False
        assert not isinstance(call, ParsedProgram)
        r.emit(TestProposed(r.round_no, attempt, call.source, prop.reply, None, prop.finish_reason))
        kept = await _judge_outputs(r, call, prop, attempt)
        return kept is not None and self.admit(
            kept, attempt, answer_key(list(kept.args), r.style), call.source, "duplicate input"
        )


async def _judge_program(
    r: TestRound, test: ParsedProgram, prop: Proposal, attempt: int
) -> UnitTest | None:
    """A test program's shape checked (parsed only), whether it calls the target as written
    and whether its setup runs (:mod:`utdebug.engine.admission`: dropped with the reason,
    before any vote), then its expected outcome voted (or, without voting, the one the
    generator wrote); None: dropped."""
    shown = program_listing(test.setup, test.call, test.then)
    why = check_shape(test.setup, test.call, test.then)
    if why is not None:
        r.emit(TestProposed(r.round_no, attempt, None, prop.reply, why, prop.finish_reason))
        r.emit(TestDropped(r.round_no, attempt, None, f"unparsable: {why}"))
        return None
    r.emit(TestProposed(r.round_no, attempt, shown, prop.reply, None, prop.finish_reason))
    broken = await _unusable(r, test, shown, attempt)
    if broken:
        return None

    def made(expected: Any, votes: dict[str, int], draws: int, share: float) -> UnitTest:
        return UnitTest(
            0, (), test.call, expected, votes, draws, share, "model", r.round_no,
            setup=test.setup, then=test.then,
        )  # fmt: skip

    if r.settings.k == 0:
        if test.raises is not None:
            return made(Raises(test.raises), {}, 0, 1.0)
        own = test.expected
        if own is not None and own.pending:
            resolved = await r.executor.resolve_value(own, r.settings.parse_timeout)
            if isinstance(resolved, parsing.ParseFailure):
                r.emit(TestDropped(r.round_no, attempt, shown, f"no output: {resolved.reason}"))
                return None
            own = resolved
        assert own is not None
        return made(own.value, {}, 0, 1.0)
    votes = await r.predictor.predict_program(
        r.task.text(),
        test,
        r.settings.k,
        sample_index=r.round_no * 100_000 + attempt * 100,
        hint=r.hint("vote", code=r.code, args_key=test.key),
        code=r.code,
    )
    t = await _vote(r, votes, attempt, shown)
    return None if t is None else made(t.value, dict(t.counts), t.draws, t.share)


async def _unusable(r: TestRound, test: ParsedProgram, shown: str, attempt: int) -> bool:
    """Before any vote: the test must call the target as written and its setup must run
    (else it is dropped with the reason)."""
    broken = call_problem(
        test.setup,
        test.call,
        test.then,
        code=r.code,
        entry_point=r.task.entry_point,
        class_name=r.task.class_name,
    )
    if broken is not None:
        r.emit(TestDropped(r.round_no, attempt, shown, f"the test cannot be used: {broken}"))
        return True
    limits = r.settings.limits
    broken = await setup_problem(r.executor, r.code, test.setup, test.call, test.then, limits)
    if broken is not None:
        r.emit(TestDropped(r.round_no, attempt, shown, f"the test cannot run: {broken}"))
        return True
    return False


async def _judge_outputs(
    r: TestRound, call: parsing.ParsedCall, prop: Proposal, attempt: int
) -> UnitTest | None:
    """The voted (or, without voting, the generator's own) expected output; None: dropped."""
    args = tuple(call.args)
    if r.settings.k == 0:
        own = parsing.parse_output(prop.reply, style=r.style, call=call.source)
        if isinstance(own, parsing.ParsedValue):
            own = await r.executor.resolve_value(own, r.settings.parse_timeout)
        if not isinstance(own, parsing.ParsedValue):
            why = cut_reason(own.reason, prop.finish_reason)
            r.emit(TestDropped(r.round_no, attempt, call.source, f"no output: {why}"))
            return None
        return UnitTest(0, args, call.source, own.value, {}, 0, 1.0, "model", r.round_no)
    votes = await r.predictor.predict(
        r.task.text(),
        r.generator.prompt(r.task.text(), r.code),
        prop.reply,
        call.source,
        r.settings.k,
        sample_index=r.round_no * 100_000 + attempt * 100,
        hint=r.hint("vote", code=r.code, args=args),
    )
    t = await _vote(r, votes, attempt, call.source)
    if t is None:
        return None
    return UnitTest(
        0, args, call.source, t.value, dict(t.counts), t.draws, t.share, "model", r.round_no
    )


async def _vote(
    r: TestRound, votes: Sequence[Vote | ProgramVote], attempt: int, shown: str
) -> Tally | None:
    """The draws resolved and tallied, one :class:`VoteCast` each (a ``str`` value: the
    exception a program's call raises); ``None``: the top answer has too few votes."""
    answers: list[tuple[bool, Any]] = []
    for i, v in enumerate(votes):
        value = v.value
        if isinstance(value, str):
            answers.append((True, Raises(value)))
            r.emit(
                VoteCast(r.round_no, attempt, i, f"raises {value}", finish_reason=v.finish_reason)
            )
            continue
        if isinstance(value, parsing.ParsedValue):
            value = await r.executor.resolve_value(value, r.settings.parse_timeout)
        if isinstance(value, parsing.ParsedValue):
            answers.append((True, value.value))
            shown_value = describe(value.value, 500)
            r.emit(VoteCast(r.round_no, attempt, i, shown_value, finish_reason=v.finish_reason))
        else:
            answers.append((False, None))
            why = cut_reason(value.reason, v.finish_reason)
            r.emit(VoteCast(r.round_no, attempt, i, None, v.text, why, v.finish_reason))
    t = tally(answers, r.style)
    if not keeps(t, r.settings.threshold):
        r.emit(
            TestDropped(
                r.round_no, attempt, shown, f"top answer has {t.count} of {t.draws} votes", t.share
            )
        )
        return None
    return t
