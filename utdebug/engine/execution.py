"""Running generated tests in the sandbox from async code.

The sandbox is synchronous and thread-safe; :class:`Executor` runs its batches on a small
thread pool so that many sessions can share one sandbox without blocking the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from utdebug.agents import parsing
from utdebug.engine.model import Task, UnitTest, Variant
from utdebug.engine.program import check_shape, judge_program, staged_test
from utdebug.sandbox.compare import Semantics
from utdebug.sandbox.config import Limits, ModuleContext
from utdebug.sandbox.executor import Sandbox
from utdebug.sandbox.outcomes import BatchResult, Outcome, Status
from utdebug.sandbox.verdicts import Judged, Verdict, judge


@dataclass(frozen=True, slots=True)
class TestRun:
    """Verdicts of one program on a list of generated tests (in the tests' order)."""

    results: tuple[Judged, ...]
    load_error: str | None = None

    @property
    def passed(self) -> int:
        return sum(j.verdict is Verdict.PASS for j in self.results)

    @property
    def total(self) -> int:
        return len(self.results)

    @property
    def rate(self) -> float | None:
        return self.passed / self.total if self.total else None

    def failing(self) -> list[int]:
        return [i for i, j in enumerate(self.results) if j.verdict is not Verdict.PASS]


class Executor:
    """Async front of a shared :class:`Sandbox` with at most ``workers`` batches at once.

    ``context`` runs every program as a module of the user's project (its imports, helpers
    and data files work): see :class:`utdebug.sandbox.ModuleContext`.
    """

    def __init__(
        self, sandbox: Sandbox, workers: int = 2, *, context: ModuleContext | None = None
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.sandbox = sandbox
        self.context = context
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="utdebug-exec")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    async def batch(
        self, code: str, entry_point: str, inputs: Sequence[Sequence[Any]], limits: Limits
    ) -> BatchResult:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._pool, self.sandbox.run, code, entry_point, inputs, limits, self.context
        )

    async def resolve_call(
        self, parsed: parsing.ParsedCall, timeout: float
    ) -> parsing.ParsedCall | parsing.ParseFailure:
        """Evaluate non-literal call arguments in the sandbox (literal ones pass through)."""
        if parsed.pending is None:
            return parsed
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._pool, lambda: parsing.resolve_pending(self.sandbox, parsed, timeout=timeout)
        )

    async def resolve_value(
        self, parsed: parsing.ParsedValue, timeout: float
    ) -> parsing.ParsedValue | parsing.ParseFailure:
        """Evaluate a non-literal expected output in the sandbox (literals pass through)."""
        if not parsed.pending:
            return parsed
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._pool, lambda: parsing.resolve_pending(self.sandbox, parsed, timeout=timeout)
        )

    async def run_tests(
        self, task: Task, code: str, tests: Sequence[UnitTest], variant: Variant, limits: Limits
    ) -> TestRun:
        if not tests:
            return TestRun(())
        semantics = Semantics.REFERENCE if variant is Variant.REFERENCE else Semantics.DATASET
        plain = [t for t in tests if not t.program]
        if len(plain) == len(tests):
            res = await self.batch(code, task.entry_point, [t.args for t in tests], limits)
            judged = tuple(
                judge(o, t.expected, t.check(task, variant), semantics, t.args)
                for o, t in zip(res.outcomes, tests, strict=True)
            )
            return TestRun(judged, res.load_error)
        results: dict[int, Judged] = {}
        load_error: str | None = None
        if plain:
            res = await self.batch(code, task.entry_point, [t.args for t in plain], limits)
            load_error = res.load_error
            for o, t in zip(res.outcomes, plain, strict=True):
                results[id(t)] = judge(o, t.expected, t.check(task, variant), semantics, t.args)
        programs = [t for t in tests if t.program]
        runs = await asyncio.gather(*(self.run_program(code, t, limits) for t in programs))
        for t, res in zip(programs, runs, strict=True):
            (outcome,) = res.outcomes
            results[id(t)] = judge_program(outcome, t.expected, t.check(task, variant), semantics)
            load_error = load_error or res.load_error
        return TestRun(tuple(results[id(t)] for t in tests), load_error)

    async def run_program(self, code: str, test: UnitTest, limits: Limits) -> BatchResult:
        """One program test in a child of its own: a fresh import of ``code``, then the test,
        run in stages by the sandbox's runner (:func:`utdebug.engine.program.staged_test`);
        its setup, call and follow-up expression all count in the input's limit. A test whose
        parts do not parse is an error outcome (nothing is run)."""
        setup = test.setup or ""
        why = check_shape(setup, test.call, test.then)
        if why is not None:
            return BatchResult([Outcome(Status.ERROR, None, "TestShapeError", why)])
        staged = staged_test(setup, test.call, test.then)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._pool,
            lambda: self.sandbox.run(code, "", [()], limits, self.context, staged),
        )
