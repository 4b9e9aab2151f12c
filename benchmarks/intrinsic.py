"""``utdebug bench intrinsic``: the paper's Table 1 protocol for a test generator.

Per problem, ``--samples`` independent UT replies (temperature 0.8, top-p 0.9, 2,560 tokens;
no voting; the expected output is the one the reply wrote). For each reply:

- **valid**: the gold solution runs on the input (1 s);
- **attack**: the input is valid and the given (buggy) code's output differs from the gold
  output under the problem's own comparison (an exception or a timeout also attacks);
- **output accuracy**: the reply's expected output equals the gold output;
- **accuracy ∩ attack**: both.

Denominators follow the published scripts: MBPP counts every sample (an unparsable reply is
False for all three); HE+Fix counts unparsable samples only in the attack denominator.

A problem counts only when all its samples were taken: one that a model error (a timeout, a
refused connection) or a failure of the sandbox cut short is left out of the rates and listed
apart (``model_errors``, ``errors``); the command then exits 1 (model errors). An error every
problem would hit (credentials, unknown model, spent budget) stops the run.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass, field, replace
from typing import Any

from rich.console import Console

from utdebug.agents import parsing
from utdebug.agents.base import Model, ModelError, Sampling
from utdebug.agents.choice import SIMULATED_MODEL, build_chosen
from utdebug.agents.roles import Proposal, TaskText, UTGenerator
from utdebug.agents.sim import SimParams
from utdebug.benchmarks.options import BenchOptions
from utdebug.data.datasets import LoadedSplit, Problem, Split
from utdebug.data.private_tests import (
    PrivateTestRunner,
    matches_gold,
    register_sim,
    task_from_problem,
)
from utdebug.engine import Executor
from utdebug.engine.session import FATAL_ERRORS
from utdebug.runs.folder import (
    FatalRunError,
    one_line,
    summarize_model_errors,
)
from utdebug.sandbox.compare import Semantics
from utdebug.sandbox.config import LimitKind, Limits
from utdebug.sandbox.outcomes import Status
from utdebug.sandbox.verdicts import Verdict, judge
from utdebug.text_safety import markup

INTRINSIC_SAMPLING = Sampling(temperature=0.8, top_p=0.9, max_tokens=2560)
GOLD_LIMITS = Limits(per_input=1.0, load=5.0, memory_mb=1024, batch=30.0)


@dataclass(slots=True)
class IntrinsicResult:
    method: str
    model: str
    simulated: bool
    samples: int = 0
    parsed: int = 0
    valid: int = 0
    attack: int = 0
    correct: int = 0
    both: int = 0
    he_rule: bool = False
    problems: int = 0
    errors: list[str] = field(default_factory=list)
    model_errors: list[tuple[str, str]] = field(default_factory=list)
    """(task id, error) of the problems a model error cut short (not in the rates)."""

    def tally(self, attack: bool, correct: bool) -> None:
        """Count one valid sample: whether it attacks the code, whether its output is right."""
        self.attack += attack
        self.correct += correct
        self.both += attack and correct

    def add(self, other: IntrinsicResult) -> None:
        """Count one finished problem's samples."""
        for name in ("samples", "parsed", "valid", "attack", "correct", "both"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.problems += 1

    def model_errors_summary(self) -> dict[str, Any]:
        return summarize_model_errors(
            {"task_id": t, "error": e, "error_kind": "model"} for t, e in self.model_errors
        )

    def rates(self) -> dict[str, float]:
        d_attack = self.samples
        d_acc = self.parsed if self.he_rule else self.samples
        return {
            "attack_rate": self.attack / d_attack if d_attack else 0.0,
            "output_accuracy": self.correct / d_acc if d_acc else 0.0,
            "accuracy_and_attack": self.both / d_acc if d_acc else 0.0,
            "parsed": self.parsed / self.samples if self.samples else 0.0,
            "valid": self.valid / self.samples if self.samples else 0.0,
        }


async def run_intrinsic(
    *,
    ls: LoadedSplit,
    model: Model | None,
    options: BenchOptions,
    private: PrivateTestRunner,
    executor: Executor,
    sim: SimParams | None,
    err: Console,
) -> IntrinsicResult:
    if model is None:
        if sim is None:
            raise ValueError("run_intrinsic needs a model or simulation parameters")
        model = build_chosen(SIMULATED_MODEL, oracle=private, sim_params=sim)
    method = sampled_method(options)
    style = "reference" if options.loop.variant == "reference" else "paper"
    gen = UTGenerator(model, method, style=style, sampling=INTRINSIC_SAMPLING)  # type: ignore[arg-type]
    res = IntrinsicResult(
        method, model.name, bool(getattr(model, "simulated", False)), he_rule=ls.split is Split.HE
    )
    sem = asyncio.Semaphore(max(1, options.loop.problems_at_once))
    limits = replace(GOLD_LIMITS, kind=LimitKind(options.limits.kind))

    async def samples(p: Problem) -> IntrinsicResult:
        own = IntrinsicResult(res.method, res.model, res.simulated, he_rule=res.he_rule)
        await private.add(p)
        if sim is not None:
            register_sim(model, p, private)
        await _one(p, gen, options.intrinsic.samples, executor, own, method, limits)
        return own

    async def problem(p: Problem) -> None:
        async with sem:
            await count_problem(res, p.task_id, samples(p), err)

    await asyncio.gather(*(problem(p) for p in ls.problems))
    return res


async def count_problem(
    res: IntrinsicResult,
    task_id: str,
    samples: Awaitable[IntrinsicResult],
    err: Console | None = None,
) -> None:
    """Add one problem's ``samples`` to ``res``. A model error leaves the problem out of the
    rates (the command exits 1); another error is recorded (and said on ``err``) and the run
    goes on; a fatal one stops the run."""
    try:
        own = await samples
    except FATAL_ERRORS as e:
        raise FatalRunError(f"{type(e).__name__}: {e}") from None
    except ModelError as e:
        res.model_errors.append((task_id, one_line(f"{type(e).__name__}: {e}")))
        return
    except Exception as e:  # a problem that errors is recorded; the run goes on
        res.errors.append(f"{task_id}: {type(e).__name__}: {e}")
        if err is not None:
            err.print(f"[yellow]{markup(task_id)}:[/yellow] {markup(f'{type(e).__name__}: {e}')}")
        return
    res.add(own)


def sampled_method(options: BenchOptions) -> str:
    """The prompt the samples are asked with: ``--ut-method`` (default ``utgen``); ``none``
    (no tests when debugging) samples with the ``prompted`` prompt."""
    method: str = options.loop.ut_method or "utgen"
    return method if method != "none" else "prompted"


async def proposals(
    gen: UTGenerator,
    task: TaskText,
    task_id: str,
    code: str,
    method: str,
    samples: int,
    res: IntrinsicResult,
) -> AsyncIterator[Proposal]:
    """``samples`` test replies for ``code``, each counted in ``res.samples``."""
    for i in range(samples):
        res.samples += 1
        yield await gen.propose(
            task,
            code,
            sample_index=i,
            hint={"task_id": task_id, "purpose": "ut", "method": method, "code": code},
        )


async def _one(
    p: Problem,
    gen: UTGenerator,
    samples: int,
    executor: Executor,
    res: IntrinsicResult,
    method: str,
    limits: Limits = GOLD_LIMITS,
) -> None:
    task = task_from_problem(p)
    async for prop in proposals(gen, task.text(), p.task_id, p.code, method, samples, res):
        call = prop.call
        if isinstance(call, parsing.ParsedCall):
            call = await executor.resolve_call(call, 1.0)
        source = call.source if isinstance(call, parsing.ParsedCall) else None
        out = parsing.parse_output(prop.reply, style=gen.style, call=source)
        if isinstance(out, parsing.ParsedValue):
            out = await executor.resolve_value(out, 1.0)
        if not isinstance(call, parsing.ParsedCall):
            continue
        bound = parsing.bind_arguments(call.args, call.kwargs, p.gold, p.entry_point)
        if isinstance(bound, parsing.ParseFailure):
            continue
        res.parsed += 1
        args = tuple(bound)
        gold = (await executor.batch(p.gold, p.entry_point, [args], limits)).outcomes[0]
        if gold.status is not Status.OK:
            continue
        res.valid += 1
        buggy = (await executor.batch(p.code, p.entry_point, [args], limits)).outcomes[0]
        attack = (
            judge(buggy, gold.value, p.tests.check, Semantics.DATASET, args).verdict
            is not Verdict.PASS
        )
        correct = isinstance(out, parsing.ParsedValue) and matches_gold(
            p, out.value, gold.value, args
        )
        res.tally(attack, correct)
