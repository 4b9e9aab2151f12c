"""A debugging session: the UTDebug loop (paper Algorithm 2) over one task.

``Session.run()`` drives the whole loop on a :class:`~utdebug.engine.state.SessionState` and
emits typed events (:mod:`utdebug.engine.events`) to its listeners;
:class:`~utdebug.engine.control.Control` pauses, steps and cancels it. The ``paper`` variant
follows Algorithm 2: tests are (re)built against the accepted code, the *last* failing test
is the feedback, a reply's edit is merged into the code in force (:mod:`utdebug.agents.edits`),
an edit is accepted only if the pass rate on the same tests strictly rises, and a rejected
edit leaves no trace in the chat. The ``reference`` variant reproduces the published code
(reference-implementation notes, section 7): round 0 is the given code, tests are rebuilt for
every new candidate before it is judged, ties are accepted, the *first* failing test is the
feedback, a reply's first code block is the whole new program, a rejected reply stays in the
chat, a set with no tests keeps resampling.

Synthesised inputs (``candidate_inputs``) wait in a queue each test set takes from, once per
session; with ``candidates > 1`` those the candidates disagree on go first
(:mod:`utdebug.engine.synthesised`, docs/synth.md).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import utdebug.engine.synthesised as synthesised
from utdebug.agents import prompts
from utdebug.agents.base import (
    CostLimitExceeded,
    Message,
    Meter,
    Model,
    ModelAuthError,
    ModelError,
    ModelNotFound,
    accounting,
)
from utdebug.agents.roles import (
    Coder,
    Critic,
    Debugger,
    EditTarget,
    OutputPredictor,
    ProposedEdit,
    UTGenerator,
    program_listing,
)
from utdebug.engine.control import Control, SessionBusy, SessionCancelled
from utdebug.engine.events import (
    Backtracked,
    CandidatesRanked,
    DisagreementsFound,
    DoesNotLoad,
    EditAccepted,
    EditProposed,
    Event,
    Finished,
    RoundFinished,
    SessionStarted,
    TestKept,
    TestProposed,
    TestsBuilt,
    VoteCast,
    does_not_load_line,
)
from utdebug.engine.execution import Executor, TestRun
from utdebug.engine.model import (
    CandidateInput,
    Settings,
    Task,
    UnitTest,
    UTMethod,
    Variant,
    code_id,
)
from utdebug.engine.state import Interruptible, Listener, SessionState, Version
from utdebug.engine.utgen import TestRound, build_tests, call_text
from utdebug.sandbox.verdicts import Verdict


@dataclass(slots=True)
class SessionResult:
    code: str
    reason: str
    rounds: int
    tests: list[UnitTest]
    events: list[Event]
    error: str | None = None
    fatal: bool = False
    """The error will recur on every session with this model (credentials, unknown model,
    spent budget): a front end running many sessions should stop and say so once."""
    load_error: str | None = None
    """The code does not load in the sandbox (``reason`` is ``does_not_load``): why."""


FATAL_ERRORS = (ModelAuthError, ModelNotFound, CostLimitExceeded)


@dataclass(frozen=True, slots=True)
class EditReview:
    """What a person reviewing edits by hand decides on (``Session(review=...)``)."""

    round: int
    code: str
    pre: float | None
    post: float | None
    rule_accepts: bool
    """What the backtracking rule alone would do."""


Reviewer = Callable[[EditReview], Awaitable[bool]]


class Session:
    """Runs the loop on its :attr:`state` (held, not inherited); the state's values and a
    person's changes are read and made through the session as well."""

    def __init__(
        self,
        task: Task,
        model: Model,
        executor: Executor,
        settings: Settings | None = None,
        *,
        control: Control | None = None,
        listeners: list[Listener] | None = None,
        ut_model: Model | None = None,
        review: Reviewer | None = None,
        candidate_inputs: Sequence[CandidateInput] = (),
    ) -> None:
        self.state = SessionState(task, executor, settings, control, listeners)
        """The code in force, the tests, the chat, the versions, the events and the usage; a
        person's changes apply to it (:class:`~utdebug.engine.state.SessionState`)."""
        # A person's changes are the state's, made through the session as well.
        self.set_expected = self.state.set_expected
        self.add_test = self.state.add_test
        self.add_program_test = self.state.add_program_test
        self.set_program = self.state.set_program
        self.delete_test = self.state.delete_test
        self.restore_test = self.state.restore_test
        self.rollback = self.state.rollback
        self.run_tests = self.state.run_tests
        self.model = model
        self.synth_queue: list[CandidateInput] = synthesised.checked_queue(candidate_inputs)
        """Synthesised inputs not yet taken by a test set, in the order they are taken."""
        self._last_fb: UnitTest | None = None
        """Reference variant: the test of the last feedback turn."""
        style = "reference" if self.state.settings.variant is Variant.REFERENCE else "paper"
        gen_model: Model = Interruptible(ut_model or model, self.state)
        model = Interruptible(model, self.state)
        method = self.state.settings.ut_method.value
        self.generator = UTGenerator(
            gen_model,
            "prompted" if method == "none" else method,
            style=style,  # type: ignore[arg-type]
            sampling=self.state.settings.ut_sampling,
            on_call=self.state._on_call,
        )
        self.predictor = OutputPredictor(
            gen_model,
            style=style,  # type: ignore[arg-type]
            sampling=self.state.settings.vote_sampling,
            on_call=self.state._on_call,
        )
        self.debugger = Debugger(
            model, sampling=self.state.settings.debug_sampling, on_call=self.state._on_call
        )
        self.critic = Critic(
            model, sampling=self.state.settings.debug_sampling, on_call=self.state._on_call
        )
        self.review = review
        """Decides on each proposed edit instead of the backtracking rule (paper variant)."""
        self._loads: dict[str, str | None] = {}
        """Code id -> why it does not load in the sandbox (``None``: it loads)."""
        self.load_error: str | None = None
        """Why the given code does not load (the session stopped after round 0), else None."""

    # -- the state, as the session's users read and change it (:attr:`state`) --------------

    @property
    def task(self) -> Task:
        return self.state.task

    @property
    def settings(self) -> Settings:
        return self.state.settings

    @property
    def control(self) -> Control:
        return self.state.control

    @property
    def listeners(self) -> list[Listener]:
        return self.state.listeners

    @property
    def events(self) -> list[Event]:
        return self.state.events

    @property
    def usage(self) -> Meter:
        return self.state.usage

    @property
    def calls_by_purpose(self) -> dict[str, int]:
        return self.state.calls_by_purpose

    @property
    def interrupted_calls(self) -> int:
        return self.state.interrupted_calls

    @property
    def tests(self) -> list[UnitTest]:
        return self.state.tests

    @property
    def code(self) -> str:
        return self.state.code

    @property
    def versions(self) -> list[Version]:
        return self.state.versions

    @property
    def current_run(self) -> TestRun | None:
        return self.state.current_run

    @property
    def idle(self) -> bool:
        return self.state.idle

    def snapshot(self) -> dict[str, Any]:
        """:meth:`SessionState.snapshot`, with the synthesised inputs not yet taken (if any)."""
        queue = (
            {"synth_queue": synthesised.queue_json(self.synth_queue)} if self.synth_queue else {}
        )
        return self.state.snapshot() | queue

    def restore(self, state: dict[str, Any]) -> None:
        self.state.restore(state)
        self.synth_queue = synthesised.queue_from_json(state.get("synth_queue"), self.state.code)

    async def _build(self, code: str, round_no: int) -> list[UnitTest]:
        kept: list[UnitTest] = []
        queue = self.synth_queue
        taken = 0

        def emit(event: Event) -> None:
            nonlocal taken
            if isinstance(event, TestKept):
                kept.append(event.test)
            elif isinstance(event, TestProposed) and event.synthesised:
                taken += 1
            self.state.emit(event)

        try:
            r = TestRound(
                self.state.task,
                code,
                round_no,
                self.state.settings,
                self.generator,
                self.predictor,
                self.state.executor,
                emit,
                self.state.hint,
                tuple(queue),
            )
            res = await build_tests(
                r, checkpoint=self.state._checkpoint, next_id=self.state._next_id
            )
        except (SessionCancelled, ModelError):
            self.synth_queue = queue[taken:]
            # Cut short: the tests kept so far become the set (a session that goes on uses
            # them; the code in force runs on them again first).
            if kept:
                self.state.tests = [*kept, *(t for t in self.state.tests if t.origin == "person")]
                self.state.current_run, self.state._rebuild = None, False
                self.state.emit(
                    TestsBuilt(round_no, code_id(code), list(self.state.tests), len(kept))
                )
            raise
        self.synth_queue = queue[taken:]
        # A person's tests stay when the model's are rebuilt.
        tests = [*res.tests, *(t for t in self.state.tests if t.origin == "person")]
        self.state.emit(TestsBuilt(round_no, code_id(code), tests, res.attempts))
        return tests

    async def sample_solutions(self, n: int) -> list[tuple[str, str | None]]:
        """``n`` solutions written from the task alone (best-of-N judging): (reply, code)."""
        coder = Coder(self.model, on_call=self.state._on_call)
        with accounting(self.state.usage):
            return await coder.solve(self.state.task.text(), n, hint=self.state.hint("generate"))

    async def generate_tests(self, code: str, round_no: int = 0) -> list[UnitTest]:
        """One self-consistent test set built against ``code``, outside the debugging loop
        (best-of-N judging and verifier scoring use it); its events go to the listeners."""
        with accounting(self.state.usage):
            return await self._build(code, round_no)

    def _feedback(self, tests: list[UnitTest], run: TestRun) -> tuple[UnitTest, str]:
        failing = run.failing()
        i = failing[0] if self.state.settings.feedback_rule == "first" else failing[-1]
        t, j = tests[i], run.results[i]
        if j.verdict is Verdict.FAIL and j.detail and j.detail.startswith("returned "):
            output = j.detail[len("returned ") :]
        elif j.detail and j.detail.startswith("raised "):
            output = "Error: " + j.detail.split(": ", 1)[-1]
        elif j.verdict is Verdict.TIMEOUT:
            output = "Error: Timed out!"
        else:
            output = f"Execution of {self.state.task.entry_point} crashed"
        if t.program:  # the test program itself is the input
            listing = program_listing(t.setup or "", t.call, t.then)
            if j.detail and j.detail.startswith("setup raised "):
                output = "Error in the setup: " + j.detail[len("setup raised ") :]
            elif j.detail and j.detail.startswith("raised "):  # keep the exception's type
                output = "Error: " + j.detail[len("raised ") :]
            text = prompts.debug_feedback(
                f"\n```python\n{listing}\n```",
                output,
                prompts.format_feedback_value(t.expected),
            )
            return t, text
        text = prompts.debug_feedback(
            prompts.format_feedback_input(list(t.args)),
            output,
            prompts.format_feedback_value(t.expected),
        )
        return t, text

    # -- the loop ---------------------------------------------------------------------------

    async def does_not_load(self, code: str | None = None) -> str | None:
        """Why ``code`` (default: the code in force) does not load in the sandbox, as
        ``Type: message``, else ``None``: the module is run once with no input (no model
        call; the answer is kept per code)."""
        code = self.state.code if code is None else code
        cid = code_id(code)
        if cid not in self._loads:
            t = self.state.task
            entry = t.class_name if t.program and t.class_name else t.entry_point
            res = await self.state.executor.batch(code, entry, [], self.state.settings.limits)
            self._loads[cid] = res.load_error
        return self._loads[cid]

    async def run(self) -> SessionResult:
        s = self.state.settings
        self.state.emit(
            SessionStarted(
                self.state.task.task_id,
                self.model.name,
                bool(getattr(self.model, "simulated", False)),
                s.to_json(),
            )
        )
        why = await self.does_not_load(self.state.task.code)
        if why is not None:  # nothing can run: no model call is spent on it
            self.load_error = why

            async def stop() -> str:
                self.state._round = 0
                self.state.emit(DoesNotLoad(0, code_id(self.state.code), why))
                self._round_finished(0, None)
                return "does_not_load"

            return await self._drive(stop)
        if s.ut_method is UTMethod.NONE:
            return await self._drive(self._run_critique)
        if s.variant is Variant.REFERENCE:
            return await self._drive(self._run_reference)
        return await self._drive(self._run_paper)

    def continue_refusal(self) -> str | None:
        """Why :meth:`continue_rounds` cannot start now, or ``None`` when it can."""
        if self.state._running:
            return "the session is running"
        if not self.state._ended:
            return "the session has not run yet: call run() first"
        if self.load_error is not None:
            return does_not_load_line(self.load_error)
        if (
            self.state.settings.variant is not Variant.PAPER
            or self.state.settings.ut_method is UTMethod.NONE
        ):
            return "only the paper variant's loop with generated tests can go on after it ended"
        return None

    async def continue_rounds(self, rounds: int = 1) -> SessionResult:
        """Go on after the session ended (paper variant): up to ``rounds`` more rounds on the
        tests and the code in force as a person left them (new or corrected tests, a roll
        back). Round numbers go on from the last round; a new ``finished`` event ends them."""
        why = self.continue_refusal()
        if why is not None:
            kind = (
                SessionBusy
                if self.state._running
                else RuntimeError
                if not self.state._ended
                else ValueError
            )
            raise kind(why)
        if rounds < 1:
            raise ValueError(f"rounds must be at least 1, got {rounds}")
        self.state.control.reopen()
        first = self.state._last_round + 1

        async def more() -> str:
            if first == 0:  # ended within round 0: finish it with the tests kept so far
                self.state._round = 0
                if not self.state.tests:
                    self.state.tests = await self._build(self.state.code, 0)
                zero = await self.state.run_tests(self.state.code, self.state.tests, 0, "current")
                self.state._changed, self.state._rebuild = False, False
                self._round_finished(0, zero.rate)
                return await self._paper_rounds(1, rounds, zero)
            run = self.state.current_run
            if run is None:
                run = await self.state.run_tests(
                    self.state.code, self.state.tests, self.state._round, "current"
                )
            self.state._changed = False
            return await self._paper_rounds(first, first + rounds - 1, run)

        return await self._drive(more)

    async def _drive(self, loop: Callable[[], Awaitable[str]]) -> SessionResult:
        """Run ``loop`` (it returns why it ended) and end with a ``finished`` event."""
        reason, error, fatal = "rounds", None, False
        self.state._running = True
        try:
            with accounting(self.state.usage):  # requests, retries and failures of this session
                reason = await loop()
        except SessionCancelled:
            reason = "cancelled"
        except asyncio.CancelledError:
            self.state._ended = True
            self._finish("cancelled", None)
            raise
        except ModelError as exc:
            reason, error = "error", f"{type(exc).__name__}: {exc}"
            fatal = isinstance(exc, FATAL_ERRORS)
        finally:
            self.state._running = False
        self.state._ended = True
        self._finish(reason, error)
        return SessionResult(
            self.state.code,
            reason,
            self.state._round,
            self.state.tests,
            self.state.events,
            error,
            fatal,
            self.load_error,
        )

    @property
    def ended(self) -> bool:
        """The session ran and finished (it may go on: :meth:`continue_rounds`)."""
        return self.state._ended and not self.state._running

    def _finish(self, reason: str, error: str | None) -> None:
        self.state.emit(
            Finished(
                reason,
                code_id(self.state.code),
                self.state.code,
                self.state._round,
                self.usage_json(),
                error,
            )
        )

    def usage_json(self) -> dict[str, Any]:
        """The session's calls, tokens and cost, with calls counted per purpose, and the
        replies refused (``refused``: test proposals, votes and edits that gave nothing
        usable; replies that were no answer at all are ``interrupted``)."""
        refused = sum(
            1
            for e in self.state.events
            if isinstance(e, TestProposed | VoteCast | EditProposed) and e.reason is not None
        )
        return (
            self.state.usage.to_json()
            | {"by_purpose": dict(self.state.calls_by_purpose)}
            | {"refused": refused}
        )

    def _round_finished(self, r: int, rate: float | None) -> None:
        self.state._last_round = r
        self.state.emit(RoundFinished(r, code_id(self.state.code), self.state.code, rate))
        self.state.control.round_done()

    async def _run_paper(self) -> str:
        self.state._round = 0
        self.state.tests = await self._build(self.state.code, 0)
        run = await self.state.run_tests(self.state.code, self.state.tests, 0, "current")
        self._round_finished(0, run.rate)
        self.state._rebuild = False
        return await self._paper_rounds(1, self.state.settings.rounds, run)

    async def _paper_rounds(self, first: int, last: int, run: TestRun) -> str:
        """Rounds ``first..last`` of the paper loop from ``run`` (the code in force's run)."""
        s = self.state.settings
        r = first
        while r <= last:
            self.state._round = r
            await self.state._checkpoint()
            if self.state._changed:  # a person changed the tests or the code while paused
                self.state._changed, self.state._rebuild = False, False
                run = self.state.current_run or await self.state.run_tests(
                    self.state.code, self.state.tests, r, "current"
                )
            rebuilt = self.state._rebuild
            if rebuilt:
                self.state.tests = await self._build(self.state.code, r)
                run = await self.state.run_tests(self.state.code, self.state.tests, r, "current")
                self.state._rebuild = False
            if not self.state.tests or not run.failing():
                if rebuilt:  # this round built new tests: it is a round that ran
                    self._round_finished(r, run.rate)
                return "all_pass" if self.state.tests else "no_tests"
            pre = run.rate
            fb_test, fb_text = self._feedback(self.state.tests, run)
            chat = [*self.state.chat, Message("user", fb_text)]
            hint = self.state.hint("debug", code=self.state.code, feedback=fb_test)
            changes = self.state._changes
            if s.candidates > 1:
                proposal = await self._ranked_edit(r, chat, fb_test, run, hint)
            else:
                proposal = await self._single_edit(r, chat, fb_test, hint)
            if self.state._changes != changes:
                # Paused within the call, a person changed the tests or the code: the
                # proposal answers an old question, so the round starts again.
                continue
            if isinstance(proposal, str):
                self.state.emit(Backtracked(r, None, pre, None, proposal))
                self._round_finished(r, pre)
                r += 1
                continue
            reply, new, cand = proposal
            post = cand.rate
            accept = not s.backtrack or (post or 0.0) > (pre or 0.0)
            why = "backtracking off" if not s.backtrack else "pass rate rose"
            no = "pass rate did not rise"
            if self.review is not None:
                accept = await self.review(EditReview(r, new, pre, post, accept))
                why, no = "accepted by a person", "rejected by a person"
            if accept:
                self.state.code = new
                self.state.chat = [*chat, Message("assistant", reply)]
                self.state.versions.append(Version(r, new, tuple(self.state.chat)))
                self.state.emit(EditAccepted(r, code_id(new), pre, post, why))
                run, self.state._rebuild = cand, True
                self.state.current_run = cand
                self._round_finished(r, post)
            else:
                self.state.emit(Backtracked(r, code_id(new), pre, post, no))
                self._round_finished(r, pre)
            r += 1
        return "rounds"

    async def _single_edit(
        self, r: int, chat: list[Message], fb_test: UnitTest, hint: dict[str, Any]
    ) -> tuple[str, str, TestRun] | str:
        """The paper's round: one sampled edit merged into the code in force, run on the
        tests (or why there is none)."""
        p = await self.debugger.edit(chat, into=self._target(), sample_index=r, hint=hint)
        self._proposed(r, p, fb_test.id)
        if p.code is None:
            return p.reason or "no code in the reply"
        return p.reply, p.code, await self.state.run_tests(p.code, self.state.tests, r, "candidate")

    def _target(self) -> EditTarget | None:
        """What an edit is merged into: the code in force (paper variant). The reference
        variant takes a reply's code block as the whole program, as published."""
        if self.state.settings.variant is Variant.REFERENCE:
            return None
        return EditTarget(self.state.code, self.state.task.entry_point, self.state.task.class_name)

    def _proposed(
        self, r: int, p: ProposedEdit, feedback: int | None, candidate: int | None = None
    ) -> None:
        m = p.merged
        self.state.emit(
            EditProposed(
                r,
                code_id(p.code) if p.code is not None else None,
                p.code,
                p.reply,
                feedback,
                p.reason,
                candidate,
                [*m.replaced, *(f"removed {x}" for x in m.removed)] if m else [],
                list(m.added) if m else [],
                list(m.dropped) if m else [],
            )
        )

    async def _ranked_edit(
        self,
        r: int,
        chat: list[Message],
        fb_test: UnitTest,
        run: TestRun,
        hint: dict[str, Any],
    ) -> tuple[str, str, TestRun] | str:
        """``candidates`` sampled edits ranked with the code in force on the generated tests.

        Each candidate is merged into the code in force; distinct merged programs (edits
        that change nothing are refused, repeats dropped) join the code in force as rows of a
        passing matrix; the ranker's selection names the candidate put forward: the first
        selected row after the code in force.
        """
        from utdebug.ranking import RankingError, rank

        s = self.state.settings
        c = s.candidates
        proposed = await self.debugger.edits(
            chat, c, into=self._target(), sample_index=r * c, hint=hint
        )
        seen = {self.state.code.strip()}  # programs that differ only in outer whitespace are one
        distinct: list[tuple[str, str]] = []
        for i, p in enumerate(proposed):
            self._proposed(r, p, fb_test.id, i)
            if p.code is not None and p.code.strip() not in seen:
                seen.add(p.code.strip())
                distinct.append((p.reply, p.code))
        if not distinct:
            return "no new code in any candidate"
        await self._disagreements(r, [self.state.code, *(new for _, new in distinct)])
        runs = await asyncio.gather(
            *(self.state.run_tests(new, self.state.tests, r, "candidate") for _, new in distinct)
        )
        rows = [run, *runs]
        matrix = [[int(j.verdict is Verdict.PASS) for j in tr.results] for tr in rows]
        kw: dict[str, Any] = {"tie": s.tie}
        if s.beta0 is not None:
            kw["beta0"] = s.beta0
        if s.alpha_xy is not None:
            kw["alpha_xy"] = s.alpha_xy
        try:
            ranking = rank(matrix, s.ranker, **kw)
        except RankingError as exc:  # a bug, not a model failure: say so in the trace
            return f"the candidates could not be ranked: {exc}"
        chosen = next((i for i in ranking.selected if i > 0), None)
        self.state.emit(
            CandidatesRanked(
                r,
                [code_id(self.state.code), *(code_id(new) for _, new in distinct)],
                [tr.rate or 0.0 for tr in rows],
                matrix,
                ranking.to_json(),
                chosen,
            )
        )
        if chosen is None:
            return f"the {s.ranker} ranking selected the code in force"
        reply, new = distinct[chosen - 1]
        return reply, new, runs[chosen - 1]

    async def _disagreements(self, r: int, programs: list[str]) -> None:
        """The inputs of the queue the code in force and the candidates disagree on go first
        (:mod:`utdebug.engine.synthesised`)."""
        n, entry = self.state.settings.disagreement_inputs, self.state.task.entry_point
        if not self.synth_queue[:n] or len(programs) < 2 or self.state.task.program:
            return
        got = await synthesised.disagreements_first(
            self.state.executor, entry, programs, self.synth_queue, n, self.state.settings.limits
        )
        self.synth_queue = got.queue
        shown = [call_text(entry, args) for args, _ in got.found[:5]]
        self.state.emit(DisagreementsFound(r, got.programs, got.checked, len(got.found), shown))

    async def _run_reference(self) -> str:
        s = self.state.settings
        given_reply = f"```\n{self.state.task.code}\n```"
        record: tuple[list[UnitTest], float] | None = None
        edited = True
        tests: list[UnitTest] = []
        for r in range(0, s.rounds + 1):
            self.state._round = r
            await self.state._checkpoint()
            if r == 0:
                cand, reply = self.state.task.code, given_reply
            else:
                # as published: the reply's code block is the whole program (no merge)
                proposal = await self.debugger.edit(
                    self.state.chat,
                    sample_index=r,
                    hint=self.state.hint("debug", code=self.state.code, feedback=self._last_fb),
                )
                reply, extracted = proposal.reply, proposal.code
                cand = extracted if extracted is not None else reply
                self.state.emit(
                    EditProposed(
                        r,
                        code_id(cand),
                        cand,
                        reply,
                        self._last_fb.id if self._last_fb else None,
                        None if extracted is not None else "no code block",
                    )
                )
            if edited:
                tests = await self._build(cand, r)
                self.state.tests = tests
            backtracked = False
            if record is not None:
                old_tests, old_rate = record
                cr = await self.state.run_tests(cand, old_tests, r, "candidate")
                if s.backtrack and (cr.rate or 0.0) < old_rate:
                    backtracked, edited = True, False
                    self.state.emit(
                        Backtracked(r, code_id(cand), old_rate, cr.rate, "pass rate fell")
                    )
                else:
                    why = "pass rate did not fall" if s.backtrack else "backtracking off"
                    self.state.code, edited = cand, True
                    self.state.versions.append(Version(r, cand, tuple(self.state.chat)))
                    self.state.emit(EditAccepted(r, code_id(cand), old_rate, cr.rate, why))
            else:
                if r > 0:
                    self.state.emit(EditAccepted(r, code_id(cand), None, None, "no tests to check"))
                self.state.code, edited = cand, True
            if not tests:
                record = None
                self._last_fb = None
                self._round_finished(r, None)
                continue
            run = await self.state.run_tests(self.state.code, tests, r, "current")
            if not run.failing():
                self._round_finished(r, run.rate)
                return "all_pass"
            self.state.chat.append(Message("assistant", reply))
            if not backtracked:
                fb_test, fb_text = self._feedback(tests, run)
                self._last_fb = fb_test
                self.state.chat.append(Message("user", fb_text))
            record = (tests, run.rate or 0.0)
            self._round_finished(r, run.rate)
        return "rounds"

    async def _run_critique(self) -> str:
        self.state._round = 0
        self._round_finished(0, None)
        for r in range(1, self.state.settings.rounds + 1):
            self.state._round = r
            await self.state._checkpoint()
            text, correct = await self.critic.critique(
                self.state.task.text(),
                self.state.code,
                sample_index=r,
                hint=self.state.hint("critique", code=self.state.code),
            )
            if correct:
                return "judged_correct"
            self.state.chat.append(Message("user", text))
            p = await self.debugger.edit(
                self.state.chat,
                into=self._target(),
                sample_index=r,
                hint=self.state.hint("debug", code=self.state.code, feedback=None),
            )
            self.state.chat.append(Message("assistant", p.reply))
            self._proposed(r, p, None)
            if p.code is not None:
                new = p.code
                self.state.code = new
                self.state.versions.append(Version(r, new, tuple(self.state.chat)))
                self.state.emit(EditAccepted(r, code_id(new), None, None, "self-feedback"))
            self._round_finished(r, None)
        return "rounds"


async def stream(session: Session) -> AsyncIterator[Event]:
    """Run ``session`` and yield its events as they happen."""
    queue: asyncio.Queue[Event | None] = asyncio.Queue()
    session.listeners.append(queue.put_nowait)
    task = asyncio.create_task(session.run())
    task.add_done_callback(lambda _t: queue.put_nowait(None))
    try:
        while (ev := await queue.get()) is not None:
            yield ev
        await task
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


__all__ = [
    "EditReview",
    "Reviewer",
    "Session",
    "SessionResult",
    "stream",
]
