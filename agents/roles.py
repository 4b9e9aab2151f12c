"""The agents of the method: UT generator, output predictor, debugger and self-critic.

Each role turns plain task text into :class:`~utdebug.agents.base.ModelRequest`s (prompts from
:mod:`utdebug.agents.prompts`), calls a :class:`~utdebug.agents.base.Model`, and parses the
replies (:mod:`utdebug.agents.parsing`, never ``eval``). ``hint`` is passed to the model as
``request.context``; only simulated models read it.

Output prediction continues the UT reply after its ``### Output`` header when the model
supports assistant prefill (the published method), and otherwise asks a separate prompt that
restates the task and the input call (documented in :mod:`utdebug.agents.prompts`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from utdebug.agents import parsing, prompts
from utdebug.agents.base import (
    Completion,
    Message,
    Model,
    ModelError,
    ModelRequest,
    Purpose,
    Sampling,
    account,
    prefill_supported,
)
from utdebug.agents.edits import MergedEdit, take_edit
from utdebug.agents.parsing import Style
from utdebug.agents.reply_tests import ParsedProgram, parse_program_tests
from utdebug.agents.reply_votes import parse_vote

CallHook = Callable[[str, list[Completion], float], None]
"""``(purpose, completions, seconds)`` after each model call."""

UT_SAMPLING = Sampling(temperature=0.7, top_p=0.9, max_tokens=1536)
"""A test proposal: a hypothesis, a call and an output (or a pytest function) fit in a few
hundred tokens; a reply cut at this cap is reported as cut (streamed replies also end where
their tests are complete, see :mod:`utdebug.agents.endings`)."""
VOTE_SAMPLING = Sampling(temperature=0.8, top_p=0.9, max_tokens=1024)
"""An output prediction: some reasoning and one value."""
DEBUG_SAMPLING = Sampling(temperature=0.7, top_p=0.9, max_tokens=2048)
"""An edit: the fixed function with a short explanation. The debugger raises the cap for long
code (:func:`edit_token_cap`)."""
GENERATE_SAMPLING = Sampling(temperature=0.8, top_p=0.95, max_tokens=2048)
"""Best-of-N solution sampling (``bench judge``): diverse samples of the same prompt."""
PERTURB_SAMPLING = Sampling(temperature=0.8, top_p=0.95, max_tokens=2048)
"""Corrupting gold code (training data, stage I): diverse wrong versions; the cap grows with
the code (:func:`edit_token_cap`)."""
RATIONALE_SAMPLING = Sampling(temperature=0.7, top_p=0.9, max_tokens=1024)
"""Explaining a gold output (training data, stage III): some step-by-step reasoning."""
MAX_EDIT_TOKENS = 8192


def edit_token_cap(code: str, floor: int) -> int:
    """Room for an edit of ``code``: twice its size in tokens (about 3 characters per token)
    plus 512 for the explanation, at least ``floor``, at most :data:`MAX_EDIT_TOKENS`."""
    return max(floor, min(MAX_EDIT_TOKENS, 2 * (len(code) // 3) + 512))


@dataclass(frozen=True, slots=True)
class TaskText:
    description: str
    signature: str
    entry_point: str
    example: str | None = None
    """An example assert shown in the code-generation prompt (MBPP's ``test_list[0]``)."""
    he_stub: str | None = None
    """For HumanEval-style tasks: the prompt stub shown instead of a description."""
    program: bool = False
    """Tests are small programs (setup, call, expected outcome), asked for as pytest
    functions (:func:`utdebug.agents.prompts.program_ut_prompt`)."""
    context: str | None = None
    """The class around a method, the module's imports, the types a function takes."""
    class_name: str | None = None
    target_kind: str = "function"


@dataclass(frozen=True, slots=True)
class Proposal:
    reply: str
    call: parsing.ParsedCall | ParsedProgram | parsing.ParseFailure
    """A literal-argument call, or, for a task tested with programs, the test program."""
    finish_reason: str
    more: tuple[ParsedProgram, ...] = ()
    """The reply's other tests (a task tested with programs: several test functions, or the
    rows of a table of cases a loop asserts on), in the reply's order."""


@dataclass(frozen=True, slots=True)
class Vote:
    text: str
    value: parsing.ParsedValue | parsing.ParseFailure
    finish_reason: str = "stop"
    """As the model reported it (``length``: cut at the token limit)."""


class _Role:
    purpose: Purpose = "chat"

    def __init__(self, model: Model, *, sampling: Sampling, on_call: CallHook | None = None):
        self.model = model
        self.sampling = sampling
        self.on_call = on_call

    async def _ask(
        self,
        messages: Sequence[Message],
        *,
        n: int = 1,
        prefill: str | None = None,
        sample_index: int = 0,
        hint: Any = None,
        purpose: Purpose | None = None,
        end: str | None = None,
        sampling: Sampling | None = None,
        template_version: str = prompts.PROMPT_VERSION,
    ) -> list[Completion]:
        req = ModelRequest(
            messages=tuple(messages),
            n=n,
            sampling=sampling or self.sampling,
            prefill=prefill,
            purpose=purpose or self.purpose,
            template_version=template_version,
            sample_index=sample_index,
            context=hint,
            end=end,
        )
        t0 = time.perf_counter()
        try:
            out = await self.model.complete(req)
        except ModelError:
            account(failures=1)
            raise
        if self.on_call is not None:
            self.on_call(req.purpose, out, time.perf_counter() - t0)
        return out


class UTGenerator(_Role):
    """Samples one unit test (input call + the model's own output) per call."""

    purpose: Purpose = "ut"

    def __init__(
        self,
        model: Model,
        method: str,
        *,
        style: Style = "paper",
        sampling: Sampling = UT_SAMPLING,
        on_call: CallHook | None = None,
    ) -> None:
        super().__init__(model, sampling=sampling, on_call=on_call)
        self.method = method
        self.style: Style = style

    def prompt(self, task: TaskText, code: str) -> str:
        if task.program:
            return prompts.program_ut_prompt(
                self.method,
                kind=task.target_kind,
                signature=task.signature,
                description=task.description,
                context=task.context,
                code=code,
                target=target_name(task),
            )
        return prompts.ut_prompt(
            self.method,
            signature=task.signature,
            description=task.description,
            code=code,
            entry_point=task.entry_point,
        )

    async def propose(
        self, task: TaskText, code: str, *, sample_index: int, hint: Any = None
    ) -> Proposal:
        msgs = (Message("user", self.prompt(task, code)),)
        if task.program:
            (c,) = await self._ask(
                msgs,
                sample_index=sample_index,
                hint=hint,
                end="program",
                template_version=prompts.PROGRAM_PROMPT_VERSION,
            )
            tests = parse_program_tests(c.text, task.entry_point, module_source=code)
            if isinstance(tests, parsing.ParseFailure):
                return Proposal(c.text, tests, c.finish_reason)
            return Proposal(c.text, tests[0], c.finish_reason, tuple(tests[1:]))
        (c,) = await self._ask(msgs, sample_index=sample_index, hint=hint, end="ut")
        params = parsing.parameter_names(code, task.entry_point)
        call = parsing.parse_call(c.text, task.entry_point, style=self.style, params=params)
        if isinstance(call, parsing.ParseFailure) and task.class_name:
            # a staticmethod with literal arguments, called through its class: Cart.tax(250)
            through = re.compile(
                rf"\b{re.escape(task.class_name)}\s*\.\s*(?={re.escape(task.entry_point)}\s*\()"
            )
            if through.search(c.text):
                again = parsing.parse_call(
                    through.sub("", c.text), task.entry_point, style=self.style, params=params
                )
                if not isinstance(again, parsing.ParseFailure):
                    call = again
        return Proposal(c.text, call, c.finish_reason)


class OutputPredictor(_Role):
    """Predicts a test's expected output ``k`` times (self-consistency votes)."""

    purpose: Purpose = "vote"

    def __init__(
        self,
        model: Model,
        *,
        style: Style = "paper",
        sampling: Sampling = VOTE_SAMPLING,
        on_call: CallHook | None = None,
    ) -> None:
        super().__init__(model, sampling=sampling, on_call=on_call)
        self.style: Style = style

    def uses_prefill(self, ut_reply: str) -> bool:
        return self.model.supports_prefill and prompts.output_prefill(ut_reply) is not None

    async def predict(
        self,
        task: TaskText,
        ut_prompt: str,
        ut_reply: str,
        call_source: str,
        k: int,
        *,
        sample_index: int = 0,
        hint: Any = None,
    ) -> list[Vote]:
        prefill = prompts.output_prefill(ut_reply)
        if self.style == "reference" and prefill is None:
            prefill = ut_reply  # the published code continues the whole reply
        if prefill is not None and await prefill_supported(self.model):
            msgs: tuple[Message, ...] = (Message("user", ut_prompt),)
            out = await self._ask(
                msgs, n=k, prefill=prefill, sample_index=sample_index, hint=hint, end="vote"
            )
        else:
            return await self.predict_call(
                task, call_source, k, sample_index=sample_index, hint=hint
            )
        return self._votes(out, call_source)

    async def predict_call(
        self, task: TaskText, call_source: str, k: int, *, sample_index: int = 0, hint: Any = None
    ) -> list[Vote]:
        """``k`` predictions of ``call_source``'s output from the task and the call alone (the
        single-turn prompt): for inputs no test generator wrote (synthesised inputs)."""
        text = prompts.output_prediction_prompt(
            signature=task.signature,
            description=task.description,
            call_source=call_source,
            entry_point=task.entry_point,
        )
        out = await self._ask(
            (Message("user", text),), n=k, sample_index=sample_index, hint=hint, end="vote"
        )
        return self._votes(out, call_source)

    def _votes(self, out: Sequence[Completion], call_source: str) -> list[Vote]:
        return [
            Vote(
                c.text,
                parsing.parse_output(c.text, style=self.style, call=call_source),
                c.finish_reason,
            )
            for c in out
        ]

    async def predict_program(
        self,
        task: TaskText,
        test: ParsedProgram,
        k: int,
        *,
        sample_index: int = 0,
        hint: Any = None,
        code: str | None = None,
    ) -> list[ProgramVote]:
        """``k`` predictions of a test program's outcome: a value, or an exception type
        (values written as constructor calls are read with the classes of ``code``, the code
        under test)."""
        text = prompts.program_vote_prompt(
            kind=task.target_kind,
            signature=task.signature,
            description=task.description,
            context=task.context,
            code=f"{task.signature}: ...  # the code under test",
            target=target_name(task),
            program=program_listing(test.setup, test.call, test.then),
            subject=test.then if test.then is not None else test.call,
        )
        out = await self._ask(
            (Message("user", text),),
            n=k,
            sample_index=sample_index,
            hint=hint,
            end="vote",
            template_version=prompts.PROGRAM_PROMPT_VERSION,
        )
        return [
            ProgramVote(c.text, parse_vote(c.text, test.call, module_source=code), c.finish_reason)
            for c in out
        ]


@dataclass(frozen=True, slots=True)
class ProgramVote:
    text: str
    value: parsing.ParsedValue | parsing.ParseFailure | str
    """The predicted value, or the name of the exception type predicted (a ``str``)."""
    finish_reason: str = "stop"


def target_name(task: TaskText) -> str:
    """How a test names the target: ``Cart.total`` for a method, ``f`` for a function."""
    return f"{task.class_name}.{task.entry_point}" if task.class_name else task.entry_point


def program_listing(setup: str, call: str, then: str | None) -> str:
    """A test program as the vote prompt shows it (setup, ``result = call``, follow-up)."""
    lines = [line for line in setup.splitlines()]
    if then is None:
        lines.append(f"result = {call.strip()}")
    else:
        lines += [call.strip(), f"result = {then.strip()}"]
    return "\n".join(lines).strip("\n")


class Debugger(_Role):
    """Proposes an edit from the chat history plus one feedback turn."""

    purpose: Purpose = "debug"

    def __init__(
        self, model: Model, *, sampling: Sampling = DEBUG_SAMPLING, on_call: CallHook | None = None
    ) -> None:
        super().__init__(model, sampling=sampling, on_call=on_call)

    async def edit(
        self,
        chat: Sequence[Message],
        *,
        into: EditTarget | None = None,
        sample_index: int = 0,
        hint: Any = None,
    ) -> ProposedEdit:
        """One sampled edit, merged into ``into`` (see :class:`ProposedEdit`)."""
        (c,) = await self._ask(
            chat, sample_index=sample_index, hint=hint, sampling=self._room(chat, into)
        )
        return ProposedEdit.of(c.text, into)

    async def edits(
        self,
        chat: Sequence[Message],
        n: int,
        *,
        into: EditTarget | None = None,
        sample_index: int = 0,
        hint: Any = None,
    ) -> list[ProposedEdit]:
        """``n`` sampled edits (one request, samples ``sample_index .. sample_index + n - 1``),
        each merged into ``into``."""
        out = await self._ask(
            chat, n=n, sample_index=sample_index, hint=hint, sampling=self._room(chat, into)
        )
        return [ProposedEdit.of(c.text, into) for c in out]

    def _room(self, chat: Sequence[Message], into: EditTarget | None) -> Sampling:
        """The sampling with a token cap that fits an edit of the code (see
        :func:`edit_token_cap`): the target's code, else the chat's longest assistant turn."""
        if into is not None:
            code = into.code
        else:
            code = max((m.content for m in chat if m.role == "assistant"), key=len, default="")
        cap = edit_token_cap(code, self.sampling.max_tokens)
        return replace(self.sampling, max_tokens=cap)


@dataclass(frozen=True, slots=True)
class EditTarget:
    """The code a debugger's edit is merged into: the code in force and its entry point
    (``class_name``: a staticmethod's class, see :mod:`utdebug.agents.edits`)."""

    code: str
    entry_point: str
    class_name: str | None = None


@dataclass(frozen=True, slots=True)
class ProposedEdit:
    """A debugger reply and the program it proposes.

    With an :class:`EditTarget` (the paper variant) ``code`` is the reply's edit merged into
    the target's code (:func:`utdebug.agents.edits.take_edit`): ``merged`` says what was
    replaced, added and dropped, and a refused edit has ``code`` ``None`` and the ``reason``.
    Without one (the reference variant, as published) ``code`` is the reply's first code block
    taken as the whole program (:func:`utdebug.agents.parsing.extract_code`).
    """

    reply: str
    code: str | None
    reason: str | None = None
    """Why the reply gives no program (``code`` is ``None``)."""
    merged: MergedEdit | None = None

    @classmethod
    def of(cls, reply: str, into: EditTarget | None) -> ProposedEdit:
        if into is None:
            code = parsing.extract_code(reply)
            return cls(reply, code, None if code is not None else "no code block")
        taken = take_edit(reply, into.code, into.entry_point, class_name=into.class_name)
        if isinstance(taken, MergedEdit):
            return cls(reply, taken.code, None, taken)
        return cls(reply, None, taken.reason)


class Critic(_Role):
    """The ``none`` baseline: the model judges the code itself (no unit tests)."""

    purpose: Purpose = "critique"

    def __init__(
        self, model: Model, *, sampling: Sampling = DEBUG_SAMPLING, on_call: CallHook | None = None
    ) -> None:
        super().__init__(model, sampling=sampling, on_call=on_call)

    async def critique(
        self, task: TaskText, code: str, *, sample_index: int = 0, hint: Any = None
    ) -> tuple[str, bool]:
        text = prompts.self_critique_prompt(description=task.description, code=code)
        (c,) = await self._ask((Message("user", text),), sample_index=sample_index, hint=hint)
        return c.text, parsing.critique_says_correct(c.text)


class Coder(_Role):
    """Writes solutions from the task alone (best-of-N judging samples ``n`` of them)."""

    purpose: Purpose = "generate"

    def __init__(
        self,
        model: Model,
        *,
        sampling: Sampling = GENERATE_SAMPLING,
        on_call: CallHook | None = None,
    ) -> None:
        super().__init__(model, sampling=sampling, on_call=on_call)

    async def solve(
        self, task: TaskText, n: int, *, sample_index: int = 0, hint: Any = None
    ) -> list[tuple[str, str | None]]:
        """``n`` sampled solutions: (reply, extracted code or ``None``)."""
        prompt = prompts.code_generation_prompt(
            signature=task.signature,
            description=task.description,
            example=task.example,
            he_stub=task.he_stub,
        )
        out = await self._ask((Message("user", prompt),), n=n, sample_index=sample_index, hint=hint)
        return [(c.text, parsing.extract_code(c.text)) for c in out]


@dataclass(frozen=True, slots=True)
class Corruption:
    """A corrupted version of gold code written by the model (training data, stage I).

    The reply's code is merged into the gold module like an edit
    (:func:`utdebug.agents.edits.take_edit`): a reply that gives only the function keeps the
    module's helpers and imports. ``code`` is ``None`` when the reply gives none (``reason``).
    """

    reply: str
    code: str | None
    reason: str | None
    finish_reason: str = "stop"


class Perturber(_Role):
    """Writes corrupted versions of gold code (the code-corruption prompt of Appendix H)."""

    purpose: Purpose = "perturb"

    def __init__(
        self,
        model: Model,
        *,
        sampling: Sampling = PERTURB_SAMPLING,
        on_call: CallHook | None = None,
    ) -> None:
        super().__init__(model, sampling=sampling, on_call=on_call)

    def prompt(self, task: TaskText, code: str) -> str:
        return prompts.corruption_prompt(
            signature=task.signature,
            description=task.description,
            code=code,
            entry_point=task.entry_point,
        )

    async def corrupt(
        self, task: TaskText, code: str, n: int, *, sample_index: int = 0, hint: Any = None
    ) -> list[Corruption]:
        """``n`` sampled corruptions of ``code`` (one request)."""
        cap = edit_token_cap(code, self.sampling.max_tokens)
        out = await self._ask(
            (Message("user", self.prompt(task, code)),),
            n=n,
            sample_index=sample_index,
            hint=hint,
            sampling=replace(self.sampling, max_tokens=cap),
            template_version=prompts.TRAIN_PROMPT_VERSION,
        )
        found = []
        for c in out:
            taken = take_edit(c.text, code, task.entry_point)
            if isinstance(taken, MergedEdit):
                found.append(Corruption(c.text, taken.code, None, c.finish_reason))
            else:
                found.append(Corruption(c.text, None, taken.reason, c.finish_reason))
        return found


class Rationalizer(_Role):
    """Explains why a gold output is right, given the whole unit test (post-hoc
    rationalization, the output-rationalization prompt of Appendix H)."""

    purpose: Purpose = "rationale"

    def __init__(
        self,
        model: Model,
        *,
        sampling: Sampling = RATIONALE_SAMPLING,
        on_call: CallHook | None = None,
    ) -> None:
        super().__init__(model, sampling=sampling, on_call=on_call)

    async def explain(
        self,
        task: TaskText,
        unit_input: str,
        unit_output: str,
        *,
        sample_index: int = 0,
        hint: Any = None,
    ) -> Completion:
        text = prompts.rationale_prompt(
            signature=task.signature,
            description=task.description,
            entry_point=task.entry_point,
            unit_input=unit_input,
            unit_output=unit_output,
        )
        (c,) = await self._ask(
            (Message("user", text),),
            sample_index=sample_index,
            hint=hint,
            template_version=prompts.TRAIN_PROMPT_VERSION,
        )
        return c


def first_chat(task: TaskText, code: str) -> tuple[Message, ...]:
    """The debugger's starting conversation: the code-generation prompt and the given code."""
    prompt = prompts.code_generation_prompt(
        signature=task.signature,
        description=task.description,
        example=task.example,
        he_stub=task.he_stub,
    )
    return prompts.initial_chat(prompt, code)
