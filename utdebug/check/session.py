"""A function checked with a model: its tests generated with voting and run, the debugging
loop with ``--fix``, the results cache (the model path of ``utdebug check``).

:class:`ModelCheck` loads the function from the checked revision's copy as every front end
does (:mod:`utdebug.workspace`), takes its result from the cache or runs an engine
:class:`~utdebug.engine.Session` on it, and gives its report; the session's outcome is a
:class:`~utdebug.check.results.SessionResult`, which is also what the cache keeps.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from utdebug.check.cache import ResultCache
from utdebug.check.fixes import Fixes
from utdebug.check.options import CheckError, CheckOptions, ModelInfo
from utdebug.check.report import FunctionReport, Status
from utdebug.check.results import (
    SessionResult,
    from_cache,
    function_report,
    judged_test,
    refused_replies,
    report_of,
)
from utdebug.check.targets import SKIPPED, Target, has_skip_pragma

if TYPE_CHECKING:
    from collections.abc import Sequence

    from utdebug.workspace import LoadedFunction

__all__ = ["ModelCheck", "load_head"]


def load_head(root: Path, t: Target, task: str | None) -> LoadedFunction | FunctionReport:
    """The target's function as loaded from the checked revision's copy ``root``, or its
    error report when it does not load (paths in the message as the repository names
    them)."""
    from utdebug.workspace import WorkspaceError, load_function

    file = root / t.path
    try:
        return load_function(file, t.qualname, task=task)
    except WorkspaceError as e:
        msg = str(e).replace(str(file), t.path)
        return function_report(t.path, t.qualname, Status.ERROR, msg, t.line, t.end_line)


class ModelCheck:
    """Checks functions with one model (see the module docstring)."""

    def __init__(
        self,
        options: CheckOptions,
        model: ModelInfo,
        settings: Any,
        root: Path,
        env_paths: Sequence[str],
        cache: ResultCache,
        fixes: Fixes,
    ) -> None:
        self.o = options
        self.model = model
        self.settings = settings
        self.root = root
        self.env_paths = env_paths
        self.cache = cache
        self.fixes = fixes
        self.usages: list[dict[str, Any]] = []
        """The usage of every session run (for the warning on replies that gave nothing)."""
        self.session: Any = None
        """The session of the function being checked (the progress lines read it)."""

    async def check(self, sb: Any, t: Target) -> FunctionReport:
        """``t``'s report: from the cache, or from a session run in ``sb`` (started here)."""
        from utdebug.project import module_location

        loaded = load_head(self.root, t, self.o.task)
        if isinstance(loaded, FunctionReport):
            return loaded
        line, end = loaded.start_line, loaded.end_line
        loaded = replace(loaded, path=Path(t.path))  # diffs labelled a/PATH, b/PATH
        if has_skip_pragma(loaded):
            return function_report(t.path, t.qualname, Status.SKIPPED, SKIPPED, line, end)
        name = module_location(self.root / t.path, self.root).name
        key = ResultCache.key(self.o, self.model.key, loaded, name)
        cached = self.cache.get(key)
        if cached is not None:
            rep = from_cache(cached, t.path, t.qualname, line, end, self.o.min_votes)
            if rep is not None:
                return self.fixes.take(rep, loaded, cached.get("fixed_code"))
        try:
            result = await self._session(sb, t, loaded, name)
        except Exception as e:  # a model or engine failure ends this function only
            from utdebug.agents.base import ModelError

            if not isinstance(e, ModelError):
                raise
            msg = f"not checked: the model failed: {type(e).__name__}: {e}"
            return function_report(t.path, t.qualname, Status.ERROR, msg, line, end)
        if result.cacheable:
            self.cache.put(key, result)
        rep = report_of(result, t.path, t.qualname, line, end, self.o.min_votes)
        return self.fixes.take(rep, loaded, result.fixed_code)

    async def _session(self, sb: Any, t: Target, loaded: Any, name: str) -> SessionResult:
        """Run a session on the function in ``sb`` (the first function not in the cache
        starts it)."""
        from utdebug.engine import Executor, Session
        from utdebug.project import sandbox_context
        from utdebug.sandbox import SandboxError, SandboxUnavailable

        try:
            sb.start()
        except (SandboxUnavailable, SandboxError) as e:
            raise CheckError(f"sandbox: {e}") from None
        # the one way every front end loads a user's module (utdebug.workspace)
        file = self.root / t.path
        ctx = sandbox_context(file, self.root, program=loaded.program, env_paths=self.env_paths)
        executor = Executor(sb, workers=2, context=ctx)
        task = replace(loaded.to_task(), description=_description(loaded, name))
        task = replace(task, task_id=f"{t.path}::{t.qualname}")
        session = Session(task, self.model.model, executor, self.settings)
        self.session = session
        try:
            return await self._result(session, task, loaded)
        finally:
            self.usages.append(session.usage_json())
            executor.close()

    async def _result(self, session: Any, task: Any, loaded: Any) -> SessionResult:
        from utdebug.engine.events import TestsBuilt

        code = task.code
        why = await session.does_not_load(code)
        if why is not None:  # nothing can run: no model call is spent on it
            # what it needs may be installed before the next run: not cached
            return SessionResult((), why, cacheable=False)
        stopped = None
        if self.o.fix:
            result = await session.run()
            built = [e for e in session.events if isinstance(e, TestsBuilt) and e.round == 0]
            if result.error is not None and not built:  # not even the tests were built
                from utdebug.agents.base import ModelError

                raise ModelError(result.error)
            stopped = result.error  # a later round failed: keep the tests and any fix so far
            tests = list(built[0].tests) if built else []
        else:
            tests = await session.generate_tests(code)
        run = await session.run_tests(code, tests, 0, "current")
        out = SessionResult(
            tuple(judged_test(t, j) for t, j in zip(tests, run.results, strict=True)),
            run.load_error,
            refused_replies(session),
            # "no test could be generated" is not kept: a rerun (after fixing the model's
            # configuration, say) asks the model again
            cacheable=stopped is None and bool(tests),
        )
        if self.o.fix:
            out = await self._fix(session, code, tests, run.rate, loaded, out, stopped)
        return out

    async def _fix(
        self,
        session: Any,
        code: str,
        tests: list[Any],
        pass_before: float | None,
        loaded: Any,
        out: SessionResult,
        stopped: str | None,
    ) -> SessionResult:
        """``out`` with the debugging loop's fix: the code in force (the module with the
        accepted edits merged in, so the patch holds everything they changed: the function,
        new imports, helpers, constants) and its pass rate."""
        from utdebug.check.report import FixResult

        final = session.code
        accepted = len(session.versions) - 1
        after = await session.run_tests(final, tests, 0, "current") if tests else None
        patch = fix_error = None
        if final.strip() != code.strip():
            from utdebug.workspace import WorkspaceError
            from utdebug.writeback import function_diff

            try:
                patch = function_diff(loaded, final) or None
            except WorkspaceError as e:
                fix_error = str(e)
        if stopped is not None:
            fix_error = f"the debugging loop stopped: {stopped}"
        after_rate = after.rate if after is not None else None
        return replace(
            out,
            fix=FixResult(pass_before, after_rate, accepted, patch),
            fixed_code=final if patch else None,
            fix_error=fix_error,
        )


def _description(loaded: Any, module: str) -> str:
    """The task: ``--task`` and the docstring (from the loader), plus the module it lives in."""
    text = loaded.description
    try:
        doc = ast.get_docstring(ast.parse(loaded.file_text)) or ""
    except SyntaxError:
        doc = ""
    context = f"`{loaded.qualname}` is part of the module `{module}`"
    if doc.strip():
        context += f", described as: {doc.strip().split(chr(10) + chr(10))[0]}"
    return f"{text}\n\n({context}.)"
