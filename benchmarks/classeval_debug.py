"""The UTDebug loop on ClassEval+Fix: one session per corrupted method.

The Task is the method target (the class's module, the method, ``program=True``): the model
writes tests with setup (build the object, call the method, expected outcome), votes on their
outcomes, and its edits are merged into the class. The code in force after every round is
judged on the class's kept ClassEval tests (:func:`evaluate_class_problem`, one test method per
sandbox input, verdict in the parent); round 0 is the corrupted code (the initial pass rate).

The SIMULATED model needs test programs it can propose and whose right outcomes it knows: they
are read from ClassEval's tests of the corrupted method (:func:`program_inputs`: the statements
before the first call of the method are the setup, that call is the call, and when its value is
dropped the first asserted expression after it is ``then``; ``setUp`` runs first, and the
``self.x`` it made are plain names), and their expected outcomes are
computed by running them on the canonical solution in the sandbox. These test programs are
what the simulated model knows; the debugging pass rates are always ClassEval's own tests.
"""

from __future__ import annotations

import ast
import asyncio
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from utdebug.agents.base import Model
from utdebug.agents.choice import SIMULATED_MODEL, build_chosen
from utdebug.agents.parsing import ParseFailure
from utdebug.agents.reply_tests import ParsedProgram
from utdebug.agents.roles import UTGenerator
from utdebug.agents.sim import ProgramInput, SimModel, SimParams, SimProblem
from utdebug.benchmarks.context import RunContext
from utdebug.benchmarks.debugging import DebugRun, SessionSetup, debug_jobs, debug_session
from utdebug.benchmarks.intrinsic import (
    GOLD_LIMITS,
    INTRINSIC_SAMPLING,
    IntrinsicResult,
    count_problem,
    proposals,
    sampled_method,
)
from utdebug.benchmarks.options import BenchOptions
from utdebug.data.classeval import DATA_LICENCE
from utdebug.data.datasets import ClassFixProblem, LoadedSplit
from utdebug.data.private_tests import EvalSettings, evaluate_class_problem
from utdebug.engine import Executor, Task, UnitTest
from utdebug.engine.program import Raises, judge_program, setup_failed
from utdebug.literals import literal_value
from utdebug.sandbox.compare import CheckSpec, Semantics, outputs_match
from utdebug.sandbox.config import Limits
from utdebug.sandbox.outcomes import Outcome, SandboxError, Status
from utdebug.sandbox.verdicts import Verdict
from utdebug.workspace import WorkspaceError, load_function

__all__ = [
    "ClassPrivate",
    "class_task",
    "debug_classeval_split",
    "program_inputs",
    "run_class_intrinsic",
]


MAX_CONCURRENCY = 4
"""At most this many ClassEval+Fix problems are debugged (or measured) at once, whatever
``--concurrency`` says above it: each test with setup and each private test of a class runs in
a child of its own, so more problems at once only queue on the sandbox."""


def class_task(problem: ClassFixProblem) -> Task:
    """The engine's Task for a problem: the method in its class's module, tested with
    programs, read as ``utdebug debug`` reads a method in a person's file."""
    with tempfile.TemporaryDirectory(prefix="utdebug-classeval-") as folder:
        path = Path(folder) / f"{problem.class_task.lower()}.py"
        path.write_text(problem.code, encoding="utf-8")
        task = load_function(path, problem.target.qualname).to_task()
    # ClassEval describes every method (its parameters, what it returns, doctest examples);
    # the corrupted class's code has no docstrings, so that description is the task's text
    description = problem.description or task.description
    return replace(task, task_id=problem.task_id, program=True, description=description)


def program_inputs(problem: ClassFixProblem) -> list[ProgramInput]:
    """Test programs read from ClassEval's tests of the corrupted method (see the module
    docstring); a test that still uses ``self`` (other than ``self.assert...``) before the
    call, or never calls the method, gives none. Distinct programs, in the tests' order."""
    tree = ast.parse(problem.test_code)
    wanted = {problem.tests[i] for i in problem.target_tests}
    out: list[ProgramInput] = []
    for _cls, _fn, stmts in unittest_methods(tree, wanted):
        body = [_Unself().visit(s) for s in stmts]
        found = _program_of(body, problem.target.method)
        if found is not None and found not in out:
            out.append(found)
    return out


def unittest_methods(
    tree: ast.Module, wanted: set[tuple[str, str]]
) -> Iterator[tuple[ast.ClassDef, ast.FunctionDef, list[ast.stmt]]]:
    """The ``wanted`` (class, method) test methods of a unittest module, in order, each with
    its statements after its class's ``setUp`` body."""
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        set_up = next(
            (f.body for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "setUp"),
            [],
        )
        for fn in cls.body:
            if isinstance(fn, ast.FunctionDef) and (cls.name, fn.name) in wanted:
                yield cls, fn, [*set_up, *fn.body]


class _Unself(ast.NodeTransformer):
    """``self.x`` (the ``TestCase``'s attributes that ``setUp`` made) as a plain name ``x``;
    ``self.assert...`` is left as it is."""

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if (
            isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and not node.attr.startswith(("assert", "fail", "skip"))
        ):
            return ast.copy_location(ast.Name(node.attr, type(node.ctx)()), node)
        self.generic_visit(node)
        return node


def _uses_self(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "self" for n in ast.walk(node))


def method_call_in(stmt: ast.stmt, method: str) -> ast.Call | None:
    """The first call ``<receiver>.method(...)`` in ``stmt`` (``ast.walk`` order), else None."""
    return next(
        (
            n
            for n in ast.walk(stmt)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == method
        ),
        None,
    )


def _program_of(body: list[ast.stmt], method: str) -> ProgramInput | None:
    for i, stmt in enumerate(body):
        call = method_call_in(stmt, method)
        if call is None:
            continue
        setup = body[:i]
        if any(_uses_self(s) for s in setup) or _uses_self(call):
            return None
        then = None
        if isinstance(stmt, ast.Expr) and stmt.value is call and i + 1 < len(body):
            nxt = body[i + 1]
            if (
                isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Call)
                and isinstance(nxt.value.func, ast.Attribute)
                and nxt.value.func.attr.startswith("assert")
                and _uses_self(nxt.value.func)
                and nxt.value.args
                and not _uses_self(nxt.value.args[0])
            ):
                then = ast.unparse(nxt.value.args[0])
        return ProgramInput("\n".join(ast.unparse(s) for s in setup), ast.unparse(call), then)
    return None


def _unit(p: ProgramInput, expected: Any = None) -> UnitTest:
    return UnitTest(0, (), p.call, expected, setup=p.setup, then=p.then)


def _literal(value: Any) -> bool:
    try:
        literal_value(repr(value))
    except Exception:
        return False
    return True


def _gold_outcome(o: Outcome) -> tuple[bool, Any]:
    """(the gold program ran to an outcome a test can state, that outcome)."""
    if o.status is Status.OK and _literal(o.value):
        return True, o.value
    if o.status is Status.ERROR and o.error_type and not setup_failed(o):
        return True, Raises(o.error_type)
    return False, None


def matches(value: Any, gold: Any) -> bool:
    if isinstance(value, Raises) or isinstance(gold, Raises):
        return isinstance(value, Raises) and isinstance(gold, Raises) and value == gold
    try:
        return bool(outputs_match(value, gold, CheckSpec(), Semantics.DATASET, ()))
    except Exception:
        return False


class ClassPrivate:
    """ClassEval's kept tests of each problem (each program judged once), and the test
    programs the simulated model knows with their gold outcomes."""

    def __init__(self, executor: Executor, settings: EvalSettings) -> None:
        self.executor = executor
        self.settings = settings
        self.problems: dict[str, ClassFixProblem] = {}
        self.inputs: dict[str, tuple[ProgramInput, ...]] = {}
        self.expected: dict[str, tuple[Any, ...]] = {}
        self._results: dict[tuple[str, str], asyncio.Task[dict[str, Any]]] = {}
        self._verdicts: dict[tuple[str, str], asyncio.Task[list[tuple[bool, Any]]]] = {}

    async def add(self, problem: ClassFixProblem, *, programs: bool) -> None:
        self.problems[problem.task_id] = problem
        if not programs or problem.task_id in self.inputs:
            return
        kept: list[ProgramInput] = []
        values: list[Any] = []
        for p in program_inputs(problem):
            res = await self.executor.run_program(problem.gold, _unit(p), self.settings.limits)
            ok, value = _gold_outcome(res.outcomes[0])
            if ok:
                kept.append(p)
                values.append(value)
        self.inputs[problem.task_id] = tuple(kept)
        self.expected[problem.task_id] = tuple(values)

    async def evaluate(self, task_id: str, code: str) -> dict[str, Any]:
        """ClassEval's kept tests of the problem on ``code`` (the record body)."""
        key = (task_id, code)
        if key not in self._results:
            loop = asyncio.get_running_loop()
            p = self.problems[task_id]
            self._results[key] = asyncio.ensure_future(
                loop.run_in_executor(
                    None,
                    evaluate_class_problem,
                    self.executor.sandbox,
                    p,
                    code,
                    self.settings,
                )
            )
        return await asyncio.shield(self._results[key])

    def matches(self, task_id: str, value: Any, gold: Any, args: tuple[Any, ...]) -> bool:
        """A test program's outcome is the gold one, as the dataset's helper compares them."""
        return matches(value, gold)

    async def verdicts(self, task_id: str, code: str) -> list[tuple[bool, Any]]:
        """The simulated model's oracle: ``code`` on the known test programs."""
        key = (task_id, code)
        if key not in self._verdicts:
            self._verdicts[key] = asyncio.ensure_future(self._run_programs(task_id, code))
        return await asyncio.shield(self._verdicts[key])

    async def _run_programs(self, task_id: str, code: str) -> list[tuple[bool, Any]]:
        out = []
        for p, want in zip(self.inputs[task_id], self.expected[task_id], strict=True):
            res = await self.executor.run_program(code, _unit(p), self.settings.limits)
            o = res.outcomes[0]
            ok = judge_program(o, want, CheckSpec()).verdict is Verdict.PASS
            out.append((ok, o.value if o.status is Status.OK and _literal(o.value) else None))
        return out


def _class_sim(params: SimParams, private: ClassPrivate) -> Model:
    """The simulated model over the test programs it knows (``private`` is its oracle)."""
    return build_chosen(SIMULATED_MODEL, oracle=private, sim_params=params)


def _register_sim(model: SimModel, p: ClassFixProblem, private: ClassPrivate) -> None:
    model.register(
        SimProblem(
            task_id=p.task_id,
            entry_point=p.target.method,
            gold=p.gold,
            given=p.code,
            inputs=private.inputs[p.task_id],
            expected=private.expected[p.task_id],
        )
    )


async def score_class_tests(
    executor: Executor,
    problem: ClassFixProblem,
    tests: Sequence[UnitTest],
    codes: dict[str, str],
    limits: Limits,
) -> list[dict[str, Any]]:
    """Per kept test with setup: valid (the canonical class runs it to an outcome), correct
    (its expected outcome is the canonical class's), attack (the code it was written against
    does not give the canonical outcome)."""
    out = []
    for t in tests:
        g = await executor.run_program(problem.gold, t, limits)
        valid, gold = _gold_outcome(g.outcomes[0])
        correct = valid and judge_program(g.outcomes[0], t.expected, CheckSpec()).verdict is (
            Verdict.PASS
        )
        attack = False
        code = codes.get(t.target)
        if valid and code is not None:
            r = await executor.run_program(code, t, limits)
            attack = judge_program(r.outcomes[0], gold, CheckSpec()).verdict is not Verdict.PASS
        out.append(
            {"id": t.id, "valid": valid, "attack": attack, "correct": correct, "share": t.share}
        )
    return out


async def debug_class_problem(
    setup: SessionSetup, problem: ClassFixProblem, private: ClassPrivate
) -> dict[str, Any]:
    try:
        task = class_task(problem)
    except WorkspaceError as e:
        raise SandboxError(f"the corrupted class cannot be read as a method target: {e}") from None

    async def judge_round(code: str) -> dict[str, Any]:
        ev = await private.evaluate(problem.task_id, code)
        return {
            "pass_fraction": round(ev["pass_fraction"], 6),
            "all_pass": ev["all_pass"],
            "timeouts": ev["timeouts"],
            "target_passed": ev["target_passed"],
            "verdicts": ev["verdicts"],
        }

    async def score(kept: list[UnitTest], targets: dict[str, str]) -> list[dict[str, Any]]:
        limits = setup.settings.limits
        return await score_class_tests(setup.executor, problem, kept, targets, limits)

    body = await debug_session(setup, task, problem.code, judge_round=judge_round, score=score)
    return {
        "target": problem.target.qualname,
        "mutation": problem.mutation,
        "n_tests": len(problem.tests),
        "target_tests": len(problem.target_tests),
        "sim_programs": len(private.inputs.get(problem.task_id, ())),
        **body,
    }


async def debug_classeval_split(
    ctx: RunContext, ls: LoadedSplit, *, executor: Executor, eval_settings: EvalSettings
) -> DebugRun:
    """Debug every ClassEval+Fix problem of ``ls`` not yet recorded (:func:`debug_jobs`); the
    records carry the data licence and the summary the build's counts (``ls.about``)."""
    private = ClassPrivate(executor, eval_settings)

    async def work(setup: SessionSetup, p: ClassFixProblem) -> dict[str, Any]:
        model = setup.model
        await private.add(p, programs=isinstance(model, SimModel))
        if isinstance(model, SimModel):
            _register_sim(model, p, private)
        return await debug_class_problem(setup, p, private)

    return await debug_jobs(
        ctx,
        ls,
        ls.classes,
        executor=executor,
        eval_settings=eval_settings,
        sim=lambda params: _class_sim(params, private),
        work=work,
        problem_errors=(SandboxError,),
        base_extra={"data_licence": DATA_LICENCE},
    )


# --- intrinsic metrics of tests with setup --------------------------------------------------------


async def run_class_intrinsic(
    *,
    problems: Sequence[ClassFixProblem],
    model: Model | None,
    options: BenchOptions,
    executor: Executor,
    eval_settings: EvalSettings,
    sim: SimParams | None,
) -> Any:
    """``bench intrinsic`` on ClassEval+Fix: per corrupted method, ``--samples`` test replies
    (no voting; the expected outcome is the one the reply wrote). A sample is parsed when the
    reply gives a test program; valid when the canonical class runs it to an outcome; it
    attacks when the corrupted class's outcome is not the canonical one; its output is
    accurate when its expected outcome is the canonical one (every sample is a denominator,
    as MBPP's rule)."""
    private = ClassPrivate(executor, eval_settings)
    if model is None:
        if sim is None:
            raise ValueError("run_class_intrinsic needs a model or simulation parameters")
        model = _class_sim(sim, private)
    method = sampled_method(options)
    gen = UTGenerator(model, method, sampling=INTRINSIC_SAMPLING)
    res = IntrinsicResult(method, model.name, bool(getattr(model, "simulated", False)))
    sem = asyncio.Semaphore(max(1, min(options.loop.problems_at_once, MAX_CONCURRENCY)))
    limits = replace(GOLD_LIMITS, kind=eval_settings.limits.kind)

    async def samples(p: ClassFixProblem) -> IntrinsicResult:
        await private.add(p, programs=isinstance(model, SimModel))
        if isinstance(model, SimModel):
            _register_sim(model, p, private)
        own = IntrinsicResult(res.method, res.model, res.simulated)
        await _class_samples(p, gen, method, executor, limits, options.intrinsic.samples, own)
        return own

    async def problem(p: ClassFixProblem) -> None:
        async with sem:
            await count_problem(res, p.task_id, samples(p))

    await asyncio.gather(*(problem(p) for p in problems))
    return res


async def _class_samples(
    p: ClassFixProblem,
    gen: UTGenerator,
    method: str,
    executor: Executor,
    limits: Limits,
    samples: int,
    own: IntrinsicResult,
) -> None:
    """``samples`` test replies for ``p``, each counted in ``own``: parsed, valid (the
    canonical class runs it to an outcome), attacking, accurate."""
    task = class_task(p)
    async for prop in proposals(gen, task.text(), p.task_id, p.code, method, samples, own):
        t = prop.call
        if not isinstance(t, ParsedProgram):
            continue
        expected: Any
        if t.raises is not None:
            expected = Raises(t.raises)
        elif t.expected is None:
            continue
        else:
            value = await executor.resolve_value(t.expected, 1.0)
            if isinstance(value, ParseFailure):
                continue
            expected = value.value
        own.parsed += 1
        unit = UnitTest(0, (), t.call, expected, setup=t.setup, then=t.then)
        g = (await executor.run_program(p.gold, unit, limits)).outcomes[0]
        valid, gold = _gold_outcome(g)
        if not valid:
            continue
        own.valid += 1
        b = (await executor.run_program(p.code, unit, limits)).outcomes[0]
        attack = judge_program(b, gold, CheckSpec()).verdict is not Verdict.PASS
        correct = judge_program(g, expected, CheckSpec()).verdict is Verdict.PASS
        own.tally(attack, correct)
