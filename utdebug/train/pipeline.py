"""One problem's training data: corrupted code (stage I), failing unit tests labelled by the
gold code in the sandbox (stage II), rationales (stage III) and the SFT targets.

:func:`process_problem` is the unit of work (``fn(job, ctx)`` of a runner); it returns the
problem's record, which the driver alone writes. The steps, the gold check and the validation
rows are described in ``docs/train.md`` (The pipeline, per problem).
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Coroutine
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from utdebug.agents import parsing, prompts
from utdebug.agents.base import (
    CostLimitExceeded,
    Meter,
    Metered,
    Model,
    ModelAuthError,
    ModelError,
    ModelNotFound,
)
from utdebug.agents.choice import SIMULATED_MODEL, build_chosen
from utdebug.agents.reply_tests import ParsedProgram
from utdebug.agents.roles import Perturber, Rationalizer, TaskText, UTGenerator
from utdebug.agents.sim import SIMULATED, SimModel, SimParams, SimProblem
from utdebug.distributed import WorkerContext
from utdebug.literals import canonical_repr
from utdebug.mutation import mutants, normalized_dump
from utdebug.sandbox import CheckSpec, Outcome, Sandbox, Semantics, Status
from utdebug.sandbox.compare import outputs_match
from utdebug.sandbox.executor import UID_SLOTS
from utdebug.sandbox.verdicts import Verdict, judge
from utdebug.train.settings import Job, Settings
from utdebug.train.texts import (
    VAL_TEST_HEAD,
    args_literal,
    build_target,
    call_source,
    literal_text,
    order_suspect,
    same_answer,
    strip_comments,
    uses_sets,
    verify_target,
)

__all__ = ["MAX_KNOWN_INPUTS", "process_problem", "second_sandbox"]

MAX_KNOWN_INPUTS = 100
SYNTH_INPUTS = 200
"""Stage II with ``--inputs synth``: candidate inputs synthesised a problem (besides its own)."""
SYNTH_CPU_SECONDS = 2.0
"""CPU seconds of generation a problem (CPU time: what comes out does not move with load)."""
"""Known inputs of a problem run on the gold code (for the simulated model and the validation
file): the first ones, in the source's order."""

T = TypeVar("T")
FATAL_ERRORS = (ModelAuthError, ModelNotFound, CostLimitExceeded)
"""Model errors every problem would hit: the run stops (as the benchmarks do)."""


# --- the worker ---------------------------------------------------------------------------------

_LOCAL = threading.local()
_SHARED_LOCK = threading.Lock()
_SHARED: dict[str, Model] = {}


def _loop() -> asyncio.AbstractEventLoop:
    """This thread's event loop, kept for the thread's life (a model client made on it is
    used on it again)."""
    loop: asyncio.AbstractEventLoop | None = getattr(_LOCAL, "loop", None)
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
        _LOCAL.loop = loop
    return loop


_SECOND_LOCK = threading.Lock()
_SECOND: dict[int, Sandbox] = {}


def second_sandbox(first: Sandbox) -> Sandbox:
    """A sandbox beside ``first`` (one per process, started on first use, closed at exit):
    its own zygote, so its own string-hash seed (the order of a set of strings differs), and
    its children's uids after ``first``'s."""
    with _SECOND_LOCK:
        sb = _SECOND.get(id(first))
        if sb is None:
            cfg = replace(first.config, uid_base=first.config.uid_base + UID_SLOTS)
            sb = _SECOND[id(first)] = Sandbox(cfg)
            sb.start()
            if len(_SECOND) == 1:
                atexit.register(_close_second)
        return sb


def _close_second() -> None:
    with _SECOND_LOCK:
        for sb in _SECOND.values():
            sb.close()
        _SECOND.clear()


def _real_model(settings: Settings) -> tuple[Model, str]:
    """A scripted model (one per process: its replies are served in order) or a litellm model
    (one per thread, with its own event loop); and its endpoint name."""
    from utdebug.agents.config import resolve_model_spec
    from utdebug.agents.factory import build_model, kind_of

    spec = resolve_model_spec(settings.model)
    if kind_of(spec).replays_file:
        with _SHARED_LOCK:
            model = _SHARED.get(settings.model)
            if model is None:
                model = _SHARED[settings.model] = build_model(spec)
        return model, settings.model
    cache: dict[str, Model] = getattr(_LOCAL, "models", None) or {}
    _LOCAL.models = cache
    endpoint = spec.api_base or spec.litellm_model or spec.name
    model = cache.get(settings.model)
    if model is None:
        cache_dir = None if settings.cache_dir is None else Path(settings.cache_dir)
        model = build_model(spec, cache_dir=cache_dir)
        cache[settings.model] = model
    return model, endpoint


@dataclass(slots=True)
class _Test:
    """A failing unit test found in stage II."""

    attempt: int
    reply: str
    args: tuple[Any, ...]
    call: str
    gold: Any
    gold_literal: str
    corrupted: str
    """What the corrupted code did (``returned ...``, ``raised ...``, ``timeout``)."""
    model_call: str | None = None
    """The call as the reply wrote it (where its own test begins)."""


@dataclass(slots=True)
class _Version:
    """A corrupted version of the gold code."""

    code: str
    by: str
    note: str
    tests: list[_Test] = field(default_factory=list)
    attempts: list[dict[str, Any]] = field(default_factory=list)


class _Work:
    def __init__(self, job: Job, ctx: WorkerContext) -> None:
        self.job = job
        self.p = job.problem
        self.s = job.settings
        self.ctx = ctx
        self.sb: Sandbox = ctx.sandbox()
        self.limits = self.s.limits()
        self.check = CheckSpec(atol=self.p.atol)
        self.task = TaskText(self.p.description, self.p.signature, self.p.entry_point)
        self.counts: dict[str, Counter[str]] = {
            "problem": Counter(),
            "perturb": Counter(),
            "inputs": Counter(),
            "rationales": Counter(),
        }
        self.executions = 0
        self.batches = 0
        self.meter = Meter()
        self.versions: list[_Version] = []
        self.examples: list[dict[str, Any]] = []
        self.val: dict[str, Any] | None = None
        self.known: list[tuple[tuple[Any, ...], Any]] = []
        self.known_from: list[str] = []
        """Where each known input came from: ``dataset``, or ``synthesised (SOURCE)``."""
        self.model: Model | None = None
        self.endpoint = ""
        self.error: str | None = None
        self.error_kind: str | None = None
        self.fatal = False
        self.gold_error: str | None = None
        self.model_name = self.s.model
        self._verdicts: dict[str, list[tuple[bool, Any]]] = {}
        self._uses_sets: bool | None = None

    # -- the sandbox and the model --

    def run(
        self, code: str, inputs: list[tuple[Any, ...]], sb: Sandbox | None = None
    ) -> tuple[list[Outcome], str | None]:
        res = (sb or self.sb).run(code, self.p.entry_point, inputs, self.limits)
        self.batches += 1
        self.executions += len(res.outcomes)
        return res.outcomes, res.load_error

    def ask(self, coro: Coroutine[Any, Any, T]) -> T:
        with self.ctx.endpoint_slot(self.endpoint):
            return _loop().run_until_complete(coro)

    def setup_model(self) -> None:
        if self.s.sim:
            params = SimParams.for_method("utgen", attack=self.s.sim_attack, seed=self.s.seed)
            sim = build_chosen(
                SIMULATED_MODEL,
                oracle=self,
                sim_params=params,
                rationale_error=self.s.sim_rationale_error,
            )
            assert isinstance(sim, SimModel)
            sim.register(
                SimProblem(
                    task_id=self.p.problem_id,
                    entry_point=self.p.entry_point,
                    gold=self.p.code,
                    given=self.p.code,
                    inputs=tuple(a for a, _ in self.known),
                    expected=tuple(v for _, v in self.known),
                )
            )
            inner: Model = sim
            self.endpoint = sim.name
        else:
            inner, self.endpoint = _real_model(self.s)
        self.model = Metered(inner, self.meter)
        self.model_name = inner.name

    async def verdicts(self, task_id: str, code: str) -> list[tuple[bool, Any]]:
        """The simulated model's view of ``code``: its verdict on every known input (run once
        per program)."""
        hit = self._verdicts.get(code)
        if hit is not None:
            return hit
        outcomes, load_error = self.run(code, [a for a, _ in self.known])
        if load_error is not None:
            found = [(False, None) for _ in self.known]
        else:
            found = [
                (judge(o, v, self.check, Semantics.DATASET, a).verdict is Verdict.PASS, o.value)
                for o, (a, v) in zip(outcomes, self.known, strict=True)
            ]
        self._verdicts[code] = found
        return found

    def matches(self, task_id: str, value: Any, gold: Any, args: tuple[Any, ...]) -> bool:
        try:
            return bool(outputs_match(value, gold, self.check, Semantics.DATASET, args))
        except Exception:
            return False

    def hint(self, purpose: str, **extra: Any) -> dict[str, Any]:
        return {"task_id": self.p.problem_id, "purpose": purpose, **extra}

    # -- the steps --

    def go(self) -> None:
        if not self.gold_check():
            return
        if self.s.uses_model:
            self.setup_model()
        self.corrupt()
        if not self.versions:
            self.counts["problem"]["no corrupted version"] += 1
            return
        for v in self.versions:
            if self.s.inputs in ("dataset", "synth"):
                self.find_failing_in_dataset(v)
            else:
                self.find_failing(v)
        failing = [v for v in self.versions if v.tests]
        if not failing:
            self.counts["problem"]["no failing input"] += 1
            return
        if self.job.holdout:
            self.val = self.val_row(failing[0])
            self.counts["problem"]["validation row written" if self.val else "no val tests"] += 1
            return
        for i, v in enumerate(self.versions):
            for t in v.tests:
                if self.s.rationale == "none":
                    self.without_rationale(i, v, t)
                else:
                    self.rationalize(i, v, t)
        self.counts["problem"]["with examples" if self.examples else "no accepted rationale"] += 1

    def gold_check(self) -> bool:
        pool = list(self.p.inputs[:MAX_KNOWN_INPUTS])
        outcomes, load_error = self.run(self.p.code, pool)
        if load_error is not None:
            self.counts["problem"]["gold code fails to run"] += 1
            self.gold_error = load_error
            return False
        again, _ = self.run(self.p.code, pool, second_sandbox(self.sb)) if pool else ([], None)
        for args, o, o2 in zip(pool, outcomes, again, strict=True):
            if o.status is not Status.OK or o2.status is not Status.OK:
                continue
            if self._hash_order(o.value):
                continue  # not a label (whether the two seeds agree on it is chance)
            if not same_answer(o.value, o2.value):
                self.counts["problem"]["gold outputs depend on string hashing"] += 1
                return False
            if literal_text(o.value) is not None:
                self.known.append((args, o.value))
                self.known_from.append("dataset")
        if self.s.inputs == "synth":
            self.label_synthesised(pool)
        return True

    def label_synthesised(self, pool: list[tuple[Any, ...]]) -> None:
        """Inputs synthesised from the source's own (``utdebug.synth``: mutation and
        Hypothesis strategies inside their envelope), labelled by the gold code as the known
        inputs are: run in two sandboxes, kept when both return the same literal value."""
        from utdebug.synth import synthesize

        c = self.counts["inputs"]
        made = synthesize(
            [tuple(a) for a in pool],
            count=len(pool) + SYNTH_INPUTS,
            seed=_seed(self.s.seed, self.p.problem_id, "synth"),
            time_budget=SYNTH_CPU_SECONDS,
        )
        fresh = [x for x in made.candidates if x.source != "seed"]
        if not fresh:
            c["no input synthesised"] += 1
            return
        args = [x.args for x in fresh]
        outcomes, load_error = self.run(self.p.code, args)
        if load_error is not None:
            return
        again, _ = self.run(self.p.code, args, second_sandbox(self.sb))
        for x, o, o2 in zip(fresh, outcomes, again, strict=True):
            c["synthesised inputs tried"] += 1
            if o.status is not Status.OK or o2.status is not Status.OK:
                c["synthesised input invalid (the gold code fails on it)"] += 1
            elif self._hash_order(o.value) or not same_answer(o.value, o2.value):
                c["synthesised input: gold output not deterministic"] += 1
            elif literal_text(o.value) is None:
                c["synthesised input: gold output is not a literal"] += 1
            else:
                c["synthesised inputs labelled"] += 1
                self.known.append((x.args, o.value))
                self.known_from.append(f"synthesised ({x.source})")

    def _hash_order(self, value: Any) -> bool:
        """The gold builds sets and ``value`` is a sequence of texts: its order may be a set's
        (the second sandbox's seed can give the same order by chance)."""
        if self._uses_sets is None:
            self._uses_sets = uses_sets(self.p.code)
        return self._uses_sets and order_suspect(value)

    def corrupt(self) -> None:
        seen = {normalized_dump(self.p.code)}
        found: list[tuple[str, str, str]] = []
        c = self.counts["perturb"]
        if self.s.perturb == "ast":
            rng = random.Random(_seed(self.s.seed, self.p.fingerprint(), "ast"))
            for m in mutants(self.p.code, rng, self.s.corruptions):
                found.append((m.code, f"ast:{m.site.operator}", m.site.describe()))
            if len(found) < self.s.corruptions:
                c["ast: fewer mutation sites than asked"] += self.s.corruptions - len(found)
        else:
            assert self.model is not None
            gen = Perturber(self.model)
            replies = self.ask(
                gen.corrupt(
                    self.task,
                    self.p.code,
                    self.s.corruptions,
                    hint=self.hint("perturb", code=self.p.code),
                )
            )
            for r in replies:
                c["model replies"] += 1
                if r.code is None:
                    c[f"no code taken from the reply: {_coarse(r.reason or '')}"] += 1
                    continue
                by = f"model:{self.model_name}" + (f" ({SIMULATED})" if self.s.sim else "")
                found.append((strip_comments(r.code), by, r.reply[:400]))
        for code, by, note in found:
            dump = normalized_dump(code)
            if dump is None:
                c["does not parse"] += 1
                continue
            if dump in seen:
                c["same as the gold code or an earlier version"] += 1
                continue
            seen.add(dump)
            _, load_error = self.run(code, [])
            if load_error is not None:
                c["fails to load"] += 1
                continue
            c["kept"] += 1
            self.versions.append(_Version(code, by, note))

    def find_failing(self, v: _Version) -> None:
        assert self.model is not None
        c = self.counts["inputs"]
        gen = UTGenerator(self.model, "utgen")
        params = parsing.parameter_names(v.code, self.p.entry_point)
        seen: set[str] = set()
        for attempt in range(self.s.attempts):
            c["attempts"] += 1
            prop = self.ask(
                gen.propose(
                    self.task,
                    v.code,
                    sample_index=attempt,
                    hint=self.hint("ut", method="utgen", code=v.code),
                )
            )
            trace: dict[str, Any] = {"attempt": attempt, "reply": prop.reply}
            v.attempts.append(trace)
            call = prop.call
            if isinstance(call, ParsedProgram):  # never for this pipeline's literal tasks
                call = parsing.ParseFailure("a test program, not a literal-argument call")
            why = self._try_input(v, prop.reply, call, params, seen, attempt)
            trace["result"] = why or "kept"
            c[_coarse(why) if why else "kept"] += 1
            if len(v.tests) >= self.s.tests_per_code:
                break

    def _try_input(
        self,
        v: _Version,
        reply: str,
        call: parsing.ParsedCall | parsing.ParseFailure,
        params: list[str] | None,
        seen: set[str],
        attempt: int,
    ) -> str | None:
        if isinstance(call, parsing.ParseFailure):
            return f"no input in the reply: {call.reason}"
        written = call.source
        if call.pending is not None:
            self.batches += 1
            resolved = parsing.resolve_pending(self.sb, call)
            if isinstance(resolved, parsing.ParseFailure):
                return f"input not evaluable: {resolved.reason}"
            call = resolved
        bound = parsing.bind_arguments(call.args, call.kwargs, self.p.code, self.p.entry_point)
        if isinstance(bound, parsing.ParseFailure):
            return f"input not evaluable: {bound.reason}"
        args = tuple(bound)
        source = call_source(self.p.entry_point, args)
        if source is None:
            return "input not evaluable: an argument is not a literal"
        if source in seen:
            return "input already found"
        seen.add(source)
        gold, load_error = self.run(self.p.code, [args, args])
        if load_error is not None or gold[0].status is not Status.OK:
            what = load_error or gold[0].error_type or gold[0].status.value
            return f"input invalid: the gold code fails on it ({what})"
        if gold[1].status is not Status.OK or not same_answer(gold[1].value, gold[0].value):
            return "gold output not deterministic"
        lit = literal_text(gold[0].value)
        if lit is None:
            return "gold output is not a literal"
        if self._hash_order(gold[0].value):
            return "gold output may depend on string hashing"
        (other,), _ = self.run(self.p.code, [args], second_sandbox(self.sb))
        if other.status is not Status.OK or not same_answer(other.value, gold[0].value):
            return "gold output depends on string hashing"
        (bad,), _ = self.run(v.code, [args])
        verdict = judge(bad, gold[0].value, self.check, Semantics.DATASET, args)
        if verdict.verdict is Verdict.PASS:
            return "input does not attack"
        detail = _what_it_did(bad)
        v.tests.append(_Test(attempt, reply, args, source, gold[0].value, lit, detail, written))
        return None

    def find_failing_in_dataset(self, v: _Version) -> None:
        """Stage II without a model: the source's known inputs (those with a gold output that
        is a label, :meth:`gold_check`) run on the corrupted code in one batch; the ones where
        it differs from the gold code fail it. The shortest calls are kept (a small failing
        input is the test a person would write), ties in the source's order."""
        c = self.counts["inputs"]
        if not self.known:
            c["no known input with a label"] += 1
            return
        outcomes, load_error = self.run(v.code, [a for a, _ in self.known])
        if load_error is not None:
            c["the corrupted code fails to load"] += 1
            return
        failing: list[tuple[int, int, str, Any]] = []
        for n, ((args, gold), o) in enumerate(zip(self.known, outcomes, strict=True)):
            c["dataset inputs tried"] += 1
            source = call_source(self.p.entry_point, args)
            if source is None or literal_text(gold) is None:
                c["input or output is not a literal"] += 1
                continue
            if judge(o, gold, self.check, Semantics.DATASET, args).verdict is Verdict.PASS:
                c["input does not attack"] += 1
                continue
            failing.append((len(source), n, source, gold))
        failing.sort(key=lambda f: (f[0], f[1]))
        kept = 0
        for _, n, source, gold in failing:
            if kept == self.s.tests_per_code:
                c["failing, not kept (enough per version)"] += 1
                continue
            args = self.known[n][0]
            # A test is a call on its own: it must fail alone too, not only after the batch's
            # other inputs (state a corrupted function keeps between calls, or the batch's
            # reduced limit after its timeouts).
            (alone,), _ = self.run(v.code, [args])
            if judge(alone, gold, self.check, Semantics.DATASET, args).verdict is Verdict.PASS:
                c["fails only after other inputs"] += 1
                continue
            kept += 1
            c["kept"] += 1
            lit = literal_text(gold)
            assert lit is not None
            v.tests.append(_Test(n, "", args, source, gold, lit, _what_it_did(alone)))
            v.attempts.append({"attempt": n, "reply": None, "input": source, "result": "kept"})

    def without_rationale(self, i: int, v: _Version, t: _Test) -> None:
        """Stage III left out (the paper's variant without rationales): the target is the
        input and the gold output, checked like any other."""
        c = self.counts["rationales"]
        params = parsing.parameter_names(v.code, self.p.entry_point)
        target = build_target(t.reply, t.call, "", t.gold_literal, t.model_call)
        why = verify_target(target, self.p.entry_point, params, t.args, t.gold_literal)
        if why is None:
            c["none asked (left out)"] += 1
            self.examples.append(self.example(i, v, t, target, ""))
        else:
            c[_coarse(why)] += 1

    def rationalize(self, i: int, v: _Version, t: _Test) -> None:
        assert self.model is not None
        c = self.counts["rationales"]
        rat = Rationalizer(self.model)
        unit_input = t.call[len(self.p.entry_point) + 1 : -1]
        params = parsing.parameter_names(v.code, self.p.entry_point)
        for k in range(self.s.rationale_tries):
            c["asked"] += 1
            done = self.ask(
                rat.explain(
                    self.task,
                    unit_input,
                    t.gold_literal,
                    sample_index=k,
                    hint=self.hint("rationale", args=t.args, args_key=t.call, output=t.gold),
                )
            )
            why = self._check_rationale(done.text, done.finish_reason, t)
            if why is None:
                target = build_target(t.reply, t.call, done.text, t.gold_literal, t.model_call)
                why = verify_target(target, self.p.entry_point, params, t.args, t.gold_literal)
                if why is None:
                    c["accepted"] += 1
                    self.examples.append(self.example(i, v, t, target, done.text))
                    return
            c[_coarse(why)] += 1

    def _check_rationale(self, text: str, finish: str, t: _Test) -> str | None:
        if finish == "length":
            return "rationale cut at the token limit"
        if not text.strip():
            return "empty rationale"
        out = parsing.parse_output(text, call=t.call)
        if isinstance(out, parsing.ParsedValue):
            if out.pending:
                self.batches += 1
                out = parsing.resolve_pending(self.sb, out)
            if isinstance(out, parsing.ParsedValue) and not same_answer(out.value, t.gold):
                return "rationale states another answer"
        if isinstance(out, parsing.ParseFailure):
            self.counts["rationales"]["no answer stated (kept)"] += 1
        return None

    def example(self, i: int, v: _Version, t: _Test, target: str, rationale: str) -> dict[str, Any]:
        prompt = prompts.ut_prompt(
            "utgen",
            signature=self.p.signature,
            description=self.p.description,
            code=v.code,
            entry_point=self.p.entry_point,
        )
        meta = {
            "key": self.job.key,
            "problem_id": self.p.problem_id,
            "source": self.p.source,
            "version": i,
            "perturbed_by": v.by,
            "attempt": t.attempt,
            "call": t.call,
            "gold_output": t.gold_literal,
            "corrupted_code_did": t.corrupted,
            "model": self.model_name if self.s.uses_model else None,
            "stages": self.s.stage_sources(),
            **(
                {"input_source": self.known_from[t.attempt]}
                if self.s.inputs == "synth" and not t.reply
                else {}
            ),
            "simulated": self.s.simulated,
            "label": SIMULATED if self.s.simulated else None,
        }
        return {
            "messages": [
                {"role": "user", "content": prompt},
                {"role": "assistant", "content": target},
            ],
            "meta": meta,
        }

    def val_row(self, v: _Version) -> dict[str, Any] | None:
        """The problem in the MBPP+Fix format: the corrupted code as ``code``, the known inputs
        and the failing ones as its tests, expected values from the gold code."""
        tests: list[tuple[tuple[Any, ...], Any]] = []
        seen: set[str] = set()
        for args, value in [*self.known, *((t.args, t.gold) for t in v.tests)]:
            key = canonical_repr(args)
            if key not in seen and call_source("f", args) is not None:
                seen.add(key)
                tests.append((args, value))
        if not tests:
            return None
        inputs = "[" + ", ".join(args_literal(a) for a, _ in tests) + "]"
        results = "[" + ", ".join(literal_text(r) or "None" for _, r in tests) + "]"
        script = (
            f"{VAL_TEST_HEAD}\ninputs = {inputs}\nresults = {results}\n"
            "for i, (inp, exp) in enumerate(zip(inputs, results)):\n"
            f"    assertion({self.p.entry_point}(*inp), exp, {self.p.atol!r})\n"
        )
        return {
            "task_id": self.job.index + 1,
            "problem_id": self.p.problem_id,
            "prompt": self.p.description,
            "source_file": self.p.source,
            "test_imports": [],
            "test_list": [f"assert {t.call} == {t.gold_literal}" for t in v.tests],
            "test": script,
            "signature": self.p.signature,
            "entry_point": self.p.entry_point,
            "canonical_solution": self.p.code,
            "code": v.code,
            "perturbed_by": v.by,
        }

    def record(self, seconds: float) -> dict[str, Any]:
        return {
            "key": self.job.key,
            "index": self.job.index,
            "problem_id": self.p.problem_id,
            "source": self.p.source,
            "holdout": self.job.holdout,
            "model": self.s.model,
            "perturb": self.s.perturb,
            "simulated": self.s.simulated,
            "label": SIMULATED if self.s.simulated else None,
            "error_kind": self.error_kind,
            "error": self.error,
            "fatal": self.fatal,
            "gold_error": self.gold_error,
            "counts": {k: dict(v) for k, v in self.counts.items()},
            "versions": [
                {
                    "code": v.code,
                    "by": v.by,
                    "note": v.note,
                    "failing": [
                        {"call": t.call, "gold_output": t.gold_literal, "corrupted": t.corrupted}
                        for t in v.tests
                    ],
                    "attempts": v.attempts,
                }
                for v in self.versions
            ],
            "examples": self.examples,
            "val": self.val,
            "usage": self.meter.to_json(),
            "executions": self.executions,
            "batches": self.batches,
            "seconds": round(seconds, 3),
        }


def _what_it_did(o: Outcome) -> str:
    """What a program did on an input, the same text in every run: no measured times, sets in
    sorted order."""
    if o.status is Status.OK:
        text = canonical_repr(o.value)
        return "returned " + (text if len(text) <= 300 else text[:300] + "...")
    if o.status is Status.ERROR:
        return f"raised {o.error_type}"
    return o.status.value


def _seed(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:8], "big")


_COARSE = re.compile(r"^([^:(]*?)(?:[:(].*)?$", re.S)


def _coarse(reason: str) -> str:
    """A reason without its details, for counting (``input invalid: ... (TypeError)`` ->
    ``input invalid``)."""
    m = _COARSE.match(reason.strip())
    return (m.group(1) if m else reason).strip() or "unknown"


def process_problem(job: Job, ctx: WorkerContext) -> dict[str, Any]:
    """Stages I-III for one problem (the module docstring); the problem's record. A model
    error (a timeout, a refused connection, a spent script) ends the problem with
    ``error_kind`` ``model``: a rerun tries it again."""
    t0 = time.perf_counter()
    w = _Work(job, ctx)
    try:
        w.go()
    except ModelError as e:
        w.error_kind = "model"
        w.error = f"{type(e).__name__}: {e}"
        w.fatal = isinstance(e, FATAL_ERRORS)
    return w.record(time.perf_counter() - t0)
