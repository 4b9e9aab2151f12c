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
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from utdebug.agents import parsing
from utdebug.agents.parsing import Style
from utdebug.agents.reply_tests import ParsedProgram
from utdebug.agents.roles import OutputPredictor, Proposal, UTGenerator, program_listing
from utdebug.engine import admission, program
from utdebug.engine.events import Event, TestDropped, TestKept, TestProposed, VoteCast
from utdebug.engine.execution import Executor
from utdebug.engine.model import Settings, Task, UnitTest, Variant, code_id
from utdebug.engine.voting import answer_key, keeps, tally
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


async def build_tests(
    *,
    task: Task,
    code: str,
    round_no: int,
    settings: Settings,
    generator: UTGenerator,
    predictor: OutputPredictor,
    executor: Executor,
    emit: Emit,
    checkpoint: Checkpoint,
    next_id: Callable[[], int],
    hint: HintFn,
) -> BuildResult:
    reference = settings.variant is Variant.REFERENCE
    n = settings.n
    out = BuildResult()
    seen: set[str] = set()
    patience = settings.patience
    fulfilled = False
    target = code_id(code)
    text = task.text()

    def admit(kept: UnitTest, key: str, source: str | None, duplicate: str) -> bool:
        """Keep a test that passed its vote unless the set is already full (then the reference
        variant's set is fulfilled) or its key was seen; whether the attempt made progress."""
        nonlocal fulfilled
        if len(out.tests) >= n:
            fulfilled = reference
            return True
        if key in seen:
            emit(TestDropped(round_no, attempt, source, duplicate, kept.share))
            return False
        seen.add(key)
        kept.id = next_id()
        kept.target = target
        out.tests.append(kept)
        emit(TestKept(round_no, attempt, kept))
        return True

    for attempt in range(settings.tries):
        if fulfilled or (not reference and len(out.tests) >= n):
            break
        await checkpoint()
        out.attempts += 1
        sample = round_no * 1000 + attempt
        prop = await generator.propose(text, code, sample_index=sample, hint=hint("ut", code=code))
        if isinstance(prop.call, ParsedProgram):
            # every test of the reply (several test functions, a table of cases), until the
            # set is full
            progress = False
            for test in (prop.call, *prop.more):
                if test is not prop.call and (fulfilled or len(out.tests) >= n):
                    break
                kept = await _judge_program(
                    task=task,
                    test=test,
                    prop=prop,
                    attempt=attempt,
                    round_no=round_no,
                    settings=settings,
                    predictor=predictor,
                    executor=executor,
                    emit=emit,
                    hint=hint,
                    code=code,
                )
                if kept is not None and admit(kept, test.key, kept.call, "duplicate test"):
                    progress = True
            if reference and out.tests and not progress:
                patience -= 1
                if patience <= 0:
                    break
            continue
        call = prop.call
        if isinstance(call, parsing.ParsedCall):
            call = await executor.resolve_call(call, settings.parse_timeout)
        if isinstance(call, parsing.ParsedCall):
            bound = parsing.bind_arguments(call.args, call.kwargs, code, task.entry_point)
            if not reference and isinstance(bound, parsing.ParseFailure) and call.kwargs:
                call = bound
            elif isinstance(bound, tuple):
                call = parsing.ParsedCall(
                    args=tuple(bound), kwargs={}, source=call.source, pending=None
                )
        if isinstance(call, parsing.ParseFailure):
            reason = cut_reason(call.reason, prop.finish_reason)
            emit(TestProposed(round_no, attempt, None, prop.reply, reason, prop.finish_reason))
            emit(TestDropped(round_no, attempt, None, f"unparsable: {reason}"))
            progress = False
        else:
            emit(TestProposed(round_no, attempt, call.source, prop.reply, None, prop.finish_reason))
            kept = await _judge_outputs(
                task=task,
                code=code,
                call=call,
                prop_reply=prop.reply,
                prop_finish_reason=prop.finish_reason,
                attempt=attempt,
                round_no=round_no,
                settings=settings,
                generator=generator,
                predictor=predictor,
                executor=executor,
                emit=emit,
                hint=hint,
            )
            progress = kept is not None and admit(
                kept,
                answer_key(list(kept.args), "reference" if reference else "paper"),
                call.source,
                "duplicate input",
            )
        if reference and out.tests and not progress:
            patience -= 1
            if patience <= 0:
                break
    return out


async def _judge_program(
    *,
    task: Task,
    test: ParsedProgram,
    prop: Proposal,
    attempt: int,
    round_no: int,
    settings: Settings,
    predictor: OutputPredictor,
    executor: Executor,
    emit: Emit,
    hint: HintFn,
    code: str,
) -> UnitTest | None:
    """A test program's shape checked (parsed only), whether it calls the target as written
    and whether its setup runs (:mod:`utdebug.engine.admission`: dropped with the reason,
    before any vote), then its expected outcome voted (or, without voting, the one the
    generator wrote); None: dropped."""
    shown = program_listing(test.setup, test.call, test.then)
    why = program.check_shape(test.setup, test.call, test.then)
    if why is not None:
        emit(TestProposed(round_no, attempt, None, prop.reply, why, prop.finish_reason))
        emit(TestDropped(round_no, attempt, None, f"unparsable: {why}"))
        return None
    emit(TestProposed(round_no, attempt, shown, prop.reply, None, prop.finish_reason))
    # before any vote: the test must call the target as written and its setup must run
    broken = admission.call_problem(
        test.setup,
        test.call,
        test.then,
        code=code,
        entry_point=task.entry_point,
        class_name=task.class_name,
    )
    if broken is not None:
        emit(TestDropped(round_no, attempt, shown, f"the test cannot be used: {broken}"))
        return None
    broken = await admission.setup_problem(
        executor, code, test.setup, test.call, test.then, settings.limits
    )
    if broken is not None:
        emit(TestDropped(round_no, attempt, shown, f"the test cannot run: {broken}"))
        return None

    def made(expected: Any, votes: dict[str, int], draws: int, share: float) -> UnitTest:
        return UnitTest(
            0, (), test.call, expected, votes, draws, share, "model", round_no,
            setup=test.setup, then=test.then,
        )  # fmt: skip

    if settings.k == 0:
        if test.raises is not None:
            return made(program.Raises(test.raises), {}, 0, 1.0)
        own = test.expected
        if own is not None and own.pending:
            resolved = await executor.resolve_value(own, settings.parse_timeout)
            if isinstance(resolved, parsing.ParseFailure):
                emit(TestDropped(round_no, attempt, shown, f"no output: {resolved.reason}"))
                return None
            own = resolved
        assert own is not None
        return made(own.value, {}, 0, 1.0)
    votes = await predictor.predict_program(
        task.text(),
        test,
        settings.k,
        sample_index=round_no * 100_000 + attempt * 100,
        hint=hint("vote", code=code, args_key=test.key),
        code=code,
    )
    answers: list[tuple[bool, Any]] = []
    for i, v in enumerate(votes):
        value = v.value
        if isinstance(value, str):
            answers.append((True, program.Raises(value)))
            emit(VoteCast(round_no, attempt, i, f"raises {value}", finish_reason=v.finish_reason))
            continue
        if isinstance(value, parsing.ParsedValue):
            value = await executor.resolve_value(value, settings.parse_timeout)
        if isinstance(value, parsing.ParsedValue):
            answers.append((True, value.value))
            emit(VoteCast(round_no, attempt, i, describe(value.value, 500),
                          finish_reason=v.finish_reason))  # fmt: skip
        else:
            answers.append((False, None))
            why = cut_reason(value.reason, v.finish_reason)
            emit(VoteCast(round_no, attempt, i, None, v.text, why, v.finish_reason))
    t = tally(answers, "reference" if settings.variant is Variant.REFERENCE else "paper")
    if not keeps(t, settings.threshold):
        emit(TestDropped(round_no, attempt, shown,
                         f"top answer has {t.count} of {t.draws} votes", t.share))  # fmt: skip
        return None
    return made(t.value, dict(t.counts), t.draws, t.share)


async def _judge_outputs(
    *,
    task: Task,
    code: str,
    call: parsing.ParsedCall,
    prop_reply: str,
    prop_finish_reason: str = "stop",
    attempt: int,
    round_no: int,
    settings: Settings,
    generator: UTGenerator,
    predictor: OutputPredictor,
    executor: Executor,
    emit: Emit,
    hint: HintFn,
) -> UnitTest | None:
    """The voted (or, without voting, the generator's own) expected output; None: dropped."""
    style: Style = "reference" if settings.variant is Variant.REFERENCE else "paper"
    args = tuple(call.args)
    if settings.k == 0:
        own = parsing.parse_output(prop_reply, style=style, call=call.source)
        if isinstance(own, parsing.ParsedValue):
            own = await executor.resolve_value(own, settings.parse_timeout)
        if not isinstance(own, parsing.ParsedValue):
            why = cut_reason(own.reason, prop_finish_reason)
            emit(TestDropped(round_no, attempt, call.source, f"no output: {why}"))
            return None
        return UnitTest(0, args, call.source, own.value, {}, 0, 1.0, "model", round_no)
    votes = await predictor.predict(
        task.text(),
        generator.prompt(task.text(), code),
        prop_reply,
        call.source,
        settings.k,
        sample_index=round_no * 100_000 + attempt * 100,
        hint=hint("vote", code=code, args=args),
    )
    answers: list[tuple[bool, Any]] = []
    for i, v in enumerate(votes):
        value = v.value
        if isinstance(value, parsing.ParsedValue):
            value = await executor.resolve_value(value, settings.parse_timeout)
        if isinstance(value, parsing.ParsedValue):
            answers.append((True, value.value))
            shown = describe(value.value, 500)
            emit(VoteCast(round_no, attempt, i, shown, finish_reason=v.finish_reason))
        else:
            answers.append((False, None))
            why = cut_reason(value.reason, v.finish_reason)
            emit(VoteCast(round_no, attempt, i, None, v.text, why, v.finish_reason))
    t = tally(answers, style)
    if not keeps(t, settings.threshold):
        emit(
            TestDropped(
                round_no,
                attempt,
                call.source,
                f"top answer has {t.count} of {t.draws} votes",
                t.share,
            )
        )
        return None
    return UnitTest(
        0, args, call.source, t.value, dict(t.counts), t.draws, t.share, "model", round_no
    )
