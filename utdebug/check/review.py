"""One ``utdebug check`` run: find the functions, test them in the sandbox, build the report.

The functions are the ones named (``PATH::FUNCTION``) or the ones a change touches
(``--changed``: :func:`utdebug.check.gitrepo.changed_functions`). A read-only copy of the
repository at the checked revision (the working tree, or ``--rev``) is bound into the sandbox,
and each function's module runs there *as that module* (its package, ``__file__``, the
repository's import roots on ``sys.path``, the repository as the working folder), so its own
imports, helpers and data files work; packages of the current environment are visible read-only.
Nothing of the repository is writable from the sandbox, and the working tree is only written
with ``--fix --apply``.

For each function the engine generates tests with voting (UTGen + self-consistency) and runs
them; a failing test whose expected output won at least ``min_votes`` of the votes is a finding.
``--fix`` runs the debugging loop and keeps a patch of the fix (``--apply`` writes it).

A function that cannot be checked is reported with the reason and the run goes on: a file that
does not parse, a module that does not load (a missing import), I/O that the sandbox blocks, a
model error. A function that never returns gets timeouts on its tests (2 s each by default):
failing tests, so findings when confident.

Results are cached under ``<cache>/check`` keyed by the function's source, its module's code,
the model and the settings; an unchanged function is not tested again (its cached tests are
judged again with the current ``min_votes``).
"""

from __future__ import annotations

import ast
import asyncio
import hashlib
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from utdebug.check.loading import Copies
from utdebug.check.options import CheckError, CheckOptions, ModelInfo
from utdebug.check.report import CheckReport, Comparison, FunctionReport, Status
from utdebug.check.results import (
    from_cache,
    from_data,
    function_report,
    refusals,
    refused_replies,
    result_json,
)
from utdebug.check.targets import Located, Target, locate, module_context

CACHE_VERSION = 2
"""Bumped when what a cached result means changes (old entries are then ignored). 2: fixes
are the debugger's edits merged into the module (:mod:`utdebug.agents.edits`)."""

SKIP_PRAGMA = re.compile(r"#\s*utdebug:\s*skip\b", re.IGNORECASE)
"""``# utdebug: skip`` on a function's ``def`` line (or the line above it) skips it."""

Progress = Callable[[str], None]

NO_MODEL = "none"
"""The report's model when the check runs without one (the comparison with the base only)."""

PROGRESS_SECONDS = 60.0
"""How often a function that is still being checked is said to be (progress on stderr)."""

if TYPE_CHECKING:
    from utdebug.check.differ import DiffOutcome, DiffRun
    from utdebug.workspace import LoadedFunction

_STATUS = {
    Comparison.CHANGED: Status.FINDINGS,
    Comparison.UNCHANGED: Status.OK,
    Comparison.NONDETERMINISTIC: Status.NONDETERMINISTIC,
    Comparison.NOT_COMPARED: Status.NOT_COMPARED,
}
"""Without a model, a function's status is what its comparison with the base found."""


def default_cache_dir() -> Path:
    from utdebug.data.datasets import default_cache_dir as base

    return base() / "check"


def run_check(
    options: CheckOptions,
    model: ModelInfo | None,
    sandbox_config: Any,
    *,
    progress: Progress | None = None,
    located: Located | None = None,
) -> CheckReport:
    """Run the whole check (see the module docstring); :class:`CheckError` for exit code 2.
    ``located``: what :func:`locate` found already (else it is looked for here). ``model``
    ``None``: no model; each function is compared with its base version only."""
    from utdebug import __version__
    from utdebug.check import gitrepo

    say = progress or (lambda _msg: None)
    t0 = time.perf_counter()
    started = datetime.now(UTC).isoformat(timespec="seconds")
    found = located if located is not None else locate(options)
    repo, revision, base, targets = found.repo, found.revision, found.base, found.targets
    settings = _settings(options)
    differ = model is None or options.differential
    diff_base = _diff_base(options, repo, base) if differ else None
    accepts = _read_accepts(options, repo.root) if differ else None
    report_head: dict[str, Any] = {
        "tool_version": __version__,
        "model": model.name if model is not None else NO_MODEL,
        "simulated": model.simulated if model is not None else False,
        "repository": str(repo.root),
        "revision": revision or "working tree",
        "base": base if base is not None else diff_base,
        "min_votes": options.min_votes,
        "min_compared": options.min_compared,
        "settings": {
            "tests": options.tests,
            "votes": options.votes,
            "threshold": options.threshold,
            "timeout": options.timeout,
            "fix": options.fix,
            "rounds": options.rounds if options.fix else 0,
            "differential": differ,
            "synth_inputs": options.synth_inputs if differ else 0,
        },
        "started_at": started,
        "allow_errors": options.allow_errors,
    }
    todo = [t for t in targets if t.problem is None]
    results: dict[int, FunctionReport] = {
        i: t.problem for i, t in enumerate(targets) if t.problem is not None
    }
    if todo:
        tmp = Path(tempfile.mkdtemp(prefix="utdebug-check-"))
        try:
            say(f"copying the repository ({revision or 'working tree'}) for the sandbox")
            root = gitrepo.snapshot(repo, tmp / "repo", rev=revision)
            diff = None
            if differ:
                base_root = None
                if diff_base is not None:
                    say(f"copying the repository at the base ({diff_base[:12]}) for the sandbox")
                    base_root = gitrepo.snapshot(repo, tmp / "base", rev=diff_base)
                copies = Copies(tmp, root, base_root, diff_base, revision or "working tree")
                diff = _diff_run(options, copies, accepts, sandbox_config, repo.root)
            checker = _Checker(options, model, settings, repo, root, revision, say, diff)
            results |= checker.check_all(targets, sandbox_config)
        except gitrepo.GitError as e:
            raise CheckError(str(e)) from None
        finally:
            gitrepo.remove_snapshot(tmp)
    functions = tuple(results[i] for i in range(len(targets)))
    return CheckReport(functions=functions, seconds=time.perf_counter() - t0, **report_head)


def _diff_base(options: CheckOptions, repo: Any, base: str | None) -> str | None:
    """The revision each function is compared with: the change's base with ``--changed``,
    else ``--base`` itself (``None`` when the repository has no such commit)."""
    from utdebug.check import gitrepo

    if base is not None:
        return base
    try:
        return gitrepo.resolve(repo, options.base)
    except gitrepo.GitError:
        return None


def _diff_run(
    options: CheckOptions, copies: Copies, accepts: Any, sandbox_config: Any, repo_root: Path
) -> DiffRun:
    """What every function's comparison with its base shares: the copies, the two
    sandboxes both versions run in, the test files, the accept file, the settings."""
    from utdebug.check.differ import DiffRun
    from utdebug.check.runs import Runners
    from utdebug.project import environment_paths
    from utdebug.synth.differential import DiffSettings
    from utdebug.synth.seeds import find_test_files

    env_paths = environment_paths([repo_root])
    return DiffRun(
        copies,
        Runners(sandbox_config, copies, env_paths),
        tuple(find_test_files(copies.head)),
        accepts,
        DiffSettings(count=options.synth_inputs),
    )


def accept_path(options: CheckOptions, root: Path) -> Path:
    """The accept file: ``--accept-file`` (relative to the current folder), else
    ``.utdebug/accepted.json`` in the repository."""
    from utdebug.check.differ import ACCEPT_FILE

    if options.accept_file is None:
        return root / ACCEPT_FILE
    path = options.accept_file
    return path if path.is_absolute() else options.cwd / path


def _read_accepts(options: CheckOptions, root: Path) -> Any:
    from utdebug.synth.differential import AcceptError, read_accepts

    try:
        return read_accepts(accept_path(options, root))
    except AcceptError as e:
        raise CheckError(f"the accept file cannot be read: {e}") from None


def _settings(o: CheckOptions) -> Any:
    from utdebug.engine import Settings
    from utdebug.sandbox import Limits

    return Settings(
        n=o.tests,
        k=o.votes,
        threshold=o.threshold,
        rounds=o.rounds if o.fix else 0,
        limits=Limits(per_input=o.timeout, load=10.0, memory_mb=1024, batch=30.0 + 4 * o.timeout),
    )


class _Checker:
    def __init__(
        self,
        options: CheckOptions,
        model: ModelInfo | None,
        settings: Any,
        repo: Any,
        root: Path,
        revision: str | None,
        say: Progress,
        diff: DiffRun | None = None,
    ) -> None:
        from utdebug.project import environment_paths

        self.o = options
        self.model = model
        self.settings = settings
        self.repo = repo
        self.root = root
        self.revision = revision
        self.say = say
        self.cache_dir = (options.cache_dir or default_cache_dir()) if options.use_cache else None
        self.patches: list[str] = []
        self.usages: list[dict[str, Any]] = []
        """The usage of every session run (for the warning on replies that gave nothing)."""
        self.session: Any = None
        """The session of the function being checked (the progress lines read it)."""
        self.env_paths = environment_paths([repo.root])
        """Packages outside the interpreter's prefix: mounted, and on the module's sys.path
        (the sandbox's interpreter runs isolated, without PYTHONPATH or user site-packages)."""
        self.diff = diff
        """The comparison with the base, if any."""
        self.accepted_now = 0
        """Changed outcomes this run recorded into the accept file (``--accept``)."""

    def check_all(self, targets: list[Target], sandbox_config: Any) -> dict[int, FunctionReport]:
        from utdebug.project import sandbox_mounts
        from utdebug.sandbox import Sandbox

        mounts = sandbox_mounts(self.root, self.env_paths)
        sb = Sandbox(replace(sandbox_config, mounts=mounts))  # started on first use
        out: dict[int, FunctionReport] = {}
        todo = [(i, t) for i, t in enumerate(targets) if t.problem is None]
        try:
            for j, (i, t) in enumerate(todo, 1):
                self.say(f"[{j}/{len(todo)}] {t.path}::{t.qualname}")
                t0 = time.perf_counter()
                label = f"[{j}/{len(todo)}] {t.path}::{t.qualname}"
                rep = asyncio.run(self._beating(self._check(sb, t), label))
                if not rep.cached:
                    rep = replace(rep, seconds=time.perf_counter() - t0)
                self.say(f"[{j}/{len(todo)}] {t.path}::{t.qualname}: {rep.message}")
                out[i] = rep
        finally:
            sb.close()
            if self.diff is not None:
                self.diff.runners.close()
        if self.o.accept and self.diff is not None:
            self._write_accepts()
        if self.model is not None and not self.model.simulated:
            from utdebug.runs.folder import reply_warning, sum_usage

            warning = reply_warning(sum_usage(self.usages))
            if warning is not None:
                self.say(warning)
        if self.o.patch is not None and self.o.fix:
            self._write_patch()
        return out

    async def _beating(self, work: Any, label: str) -> FunctionReport:
        """``work``, saying every :data:`PROGRESS_SECONDS` that it goes on and how far (a
        slow model can take many minutes on one function: a CI log is not silent)."""
        t0 = time.monotonic()

        async def beat() -> None:
            while True:
                await asyncio.sleep(PROGRESS_SECONDS)
                self.say(
                    f"{label}: still checking ({self._doing()}, {time.monotonic() - t0:.0f} s)"
                )

        beating = asyncio.create_task(beat())
        try:
            return await work  # type: ignore[no-any-return]
        finally:
            beating.cancel()

    def _doing(self) -> str:
        """How far the function being checked is: model calls, tests kept."""
        from utdebug.engine.events import ModelCalled, TestKept

        session = self.session
        if session is None:
            return "starting"
        calls = sum(isinstance(e, ModelCalled) for e in session.events)
        kept = sum(isinstance(e, TestKept) for e in session.events)
        return f"{calls} model call(s), {kept} test(s) kept"

    def _write_patch(self) -> None:
        """The patch of this run's fixes; with no fix no file is written, and a patch file
        left at that path by an earlier run is removed (it is not this run's result)."""
        assert self.o.patch is not None
        path = self.o.patch if self.o.patch.is_absolute() else self.o.cwd / self.o.patch
        if not self.patches:
            try:
                stale = path.is_file()
                path.unlink(missing_ok=True)
            except OSError as e:
                raise CheckError(f"cannot remove the old patch file {path}: {e}") from None
            self.say(
                f"no fix found: no patch written; removed {path}, left by an earlier run"
                if stale
                else f"no fix found: no patch written ({path} does not exist)"
            )
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(self.patches), encoding="utf-8")
        except OSError as e:
            raise CheckError(f"cannot write the patch file {path}: {e}") from None
        self.say(f"patch with {len(self.patches)} fix(es) written to {path}")

    def _write_accepts(self) -> None:
        from utdebug.synth.differential import write_accepts

        path = accept_path(self.o, self.repo.root)
        if not self.accepted_now:
            self.say(f"--accept: no changed outcome to record ({path} left as it was)")
            return
        assert self.diff is not None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_accepts(path, self.diff.accepts)
        except OSError as e:
            raise CheckError(f"cannot write the accept file {path}: {e}") from None
        self.say(f"--accept: {self.accepted_now} changed outcome(s) recorded in {path}")

    async def _check(self, sb: Any, t: Target) -> FunctionReport:
        if self.model is None:
            rep = self._without_model(t)
        else:
            rep = await self._check_model(sb, t)
        if self.diff is None or rep.status not in (Status.OK, Status.FINDINGS):
            return rep
        # with a model, the calls of its literal-argument tests are seeds as well
        calls = [x.call for x in rep.tests if x.code is None]
        found = self._compare(t, calls)
        diff = found.differential
        if self.model is not None:
            with_model = Status.FINDINGS if diff.changes else rep.status
            return replace(rep, status=with_model, differential=diff)
        status = Status.ERROR if found.error else _STATUS[diff.outcome]
        return replace(rep, status=status, message=diff.message, differential=diff)

    def _load(self, t: Target) -> LoadedFunction | FunctionReport:
        """The target's function as loaded from the head's copy, or its error report when it
        does not load (paths in the message as the repository names them)."""
        from utdebug.workspace import WorkspaceError, load_function

        file = self.root / t.path
        try:
            return load_function(file, t.qualname, task=self.o.task)
        except WorkspaceError as e:
            msg = str(e).replace(str(file), t.path)
            return function_report(t.path, t.qualname, Status.ERROR, msg, t.line, t.end_line)

    def _without_model(self, t: Target) -> FunctionReport:
        """The function's report before its comparison with the base: an error when it does
        not load, skipped with ``# utdebug: skip``."""
        loaded = self._load(t)
        if isinstance(loaded, FunctionReport):
            return loaded
        line, end = loaded.start_line, loaded.end_line
        if _has_skip_pragma(loaded):
            return function_report(
                t.path, t.qualname, Status.SKIPPED, "skipped: '# utdebug: skip'", line, end
            )
        return function_report(t.path, t.qualname, Status.OK, "", line, end)

    def _compare(self, t: Target, model_calls: Sequence[str] = ()) -> DiffOutcome:
        """The function against its base version; with ``--accept`` its changed outcomes are
        recorded (and reported as accepted, not as findings)."""
        from utdebug.check.differ import compare_function

        assert self.diff is not None
        found = compare_function(self.diff, t, model_calls)
        diff = found.differential
        if self.o.accept and found.findings:
            for f in found.findings:
                self.diff.accepts.accept(f)
            self.accepted_now += len(found.findings)
            diff = replace(
                diff,
                changes=(),
                accepted=diff.accepted + diff.changes,
                outcome=Comparison.UNCHANGED,
                message=f"{diff.message}; {len(found.findings)} recorded as intended (--accept)",
            )
            found = replace(found, differential=diff, findings=())
        return found

    async def _check_model(self, sb: Any, t: Target) -> FunctionReport:
        assert self.model is not None

        file = self.root / t.path
        loaded = self._load(t)
        if isinstance(loaded, FunctionReport):
            return loaded
        line, end = loaded.start_line, loaded.end_line
        loaded = replace(loaded, path=Path(t.path))  # diffs labelled a/PATH, b/PATH
        if _has_skip_pragma(loaded):
            return function_report(
                t.path, t.qualname, Status.SKIPPED, "skipped: '# utdebug: skip'", line, end
            )
        from utdebug.project import module_location, sandbox_context

        name = module_location(file, self.root).name
        key = self._key(loaded, name)
        cached = self._cache_get(key)
        if cached is not None:
            rep = from_cache(cached, t.path, t.qualname, line, end, self.o.min_votes)
            if rep is not None:
                return await self._maybe_apply(rep, loaded, cached.get("fixed_code"))
        from utdebug.engine import Executor, Session
        from utdebug.sandbox import SandboxError, SandboxUnavailable

        try:
            sb.start()  # the first function not in the cache starts it; no-op afterwards
        except (SandboxUnavailable, SandboxError) as e:
            raise CheckError(f"sandbox: {e}") from None

        # the one way every front end loads a user's module (utdebug.workspace)
        ctx = sandbox_context(file, self.root, program=loaded.program, env_paths=self.env_paths)
        executor = Executor(sb, workers=2, context=ctx)
        task = replace(loaded.to_task(), description=_description(loaded, name))
        task = replace(task, task_id=f"{t.path}::{t.qualname}")
        session = Session(task, self.model.model, executor, self.settings)
        self.session = session
        try:
            data = await self._run_session(session, task, loaded)
        except Exception as e:  # a model or engine failure ends this function only
            from utdebug.agents.base import ModelError

            if not isinstance(e, ModelError):
                raise
            msg = f"not checked: the model failed: {type(e).__name__}: {e}"
            return function_report(t.path, t.qualname, Status.ERROR, msg, line, end)
        finally:
            executor.close()
        if data["cacheable"]:
            self._cache_put(key, data)
        rep = from_data(data, t.path, t.qualname, line, end, self.o.min_votes)
        rep = replace(rep, refused=refusals(data))
        return await self._maybe_apply(rep, loaded, data.get("fixed_code"))

    async def _run_session(self, session: Any, task: Any, loaded: Any) -> dict[str, Any]:
        try:
            return await self._session_data(session, task, loaded)
        finally:
            self.usages.append(session.usage_json())

    async def _session_data(self, session: Any, task: Any, loaded: Any) -> dict[str, Any]:
        from utdebug.engine.events import TestsBuilt

        code = task.code
        why = await session.does_not_load(code)
        if why is not None:  # nothing can run: no model call is spent on it
            return {
                "version": CACHE_VERSION,
                "load_error": why,
                "tests": [],
                "cacheable": False,  # what it needs may be installed before the next run
                "refused": [],
                "fixed_code": None,
                "fix": None,
            }
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
        data: dict[str, Any] = {
            "version": CACHE_VERSION,
            "load_error": run.load_error,
            "tests": [result_json(t, j) for t, j in zip(tests, run.results, strict=True)],
            # "no test could be generated" is not kept: a rerun (after fixing the model's
            # configuration, say) asks the model again
            "cacheable": stopped is None and bool(tests),
            "refused": refused_replies(session),
            "fixed_code": None,
            "fix": None,
        }
        if self.o.fix:
            # the code in force: the module with the accepted edits merged in, so the patch
            # holds everything they changed (the function, new imports, helpers, constants)
            final = session.code
            accepted = len(session.versions) - 1
            after = await session.run_tests(final, tests, 0, "current") if tests else None
            patch = None
            if final.strip() != code.strip():
                from utdebug.workspace import WorkspaceError
                from utdebug.writeback import function_diff

                try:
                    patch = function_diff(loaded, final) or None
                except WorkspaceError as e:
                    data["fix_error"] = str(e)
            data["fixed_code"] = final if patch else None
            if stopped is not None:
                data["fix_error"] = f"the debugging loop stopped: {stopped}"
            data["fix"] = {
                "pass_before": run.rate,
                "pass_after": after.rate if after is not None else None,
                "accepted_edits": accepted,
                "patch": patch,
            }
        return data

    async def _maybe_apply(
        self, rep: FunctionReport, loaded: Any, fixed_code: str | None
    ) -> FunctionReport:
        if rep.fix is None or rep.fix.patch is None:
            return rep
        self.patches.append(rep.fix.patch)
        if not self.o.apply or fixed_code is None:
            return rep
        from utdebug.workspace import WorkspaceError, load_function
        from utdebug.writeback import write_back

        target = self.repo.root / rep.path
        try:
            now = load_function(target, rep.qualname)
            if now.source != loaded.source:
                raise WorkspaceError(f"{rep.path} changed while it was checked: not applying")
            write_back(now, fixed_code, backup=False)
        except WorkspaceError as e:
            return replace(rep, message=f"{rep.message}; fix not applied: {e}")
        return replace(rep, fix=replace(rep.fix, applied=True), message=rep.message + "; applied")

    # -- cache ------------------------------------------------------------------------------

    def _key(self, loaded: Any, module: str) -> str:
        o = self.o
        assert self.model is not None
        blob = {
            "v": CACHE_VERSION,
            "model": self.model.key,
            "function": loaded.source,
            "module": module_context(loaded.module_code, loaded.entry_point),
            "module_name": module,
            "task": o.task,
            "tests": o.tests,
            "votes": o.votes,
            "threshold": o.threshold,
            "timeout": o.timeout,
            "fix": o.rounds if o.fix else None,
        }
        return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()

    def _cache_path(self, key: str) -> Path | None:
        return None if self.cache_dir is None else self.cache_dir / key[:2] / f"{key}.json"

    def _cache_get(self, key: str) -> dict[str, Any] | None:
        path = self._cache_path(key)
        if path is None:
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None  # missing or unreadable: checked again and rewritten
        if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
            return None
        return data

    def _cache_put(self, key: str, data: dict[str, Any]) -> None:
        path = self._cache_path(key)
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f)
            os.replace(tmp, path)
        except OSError as e:  # a read-only cache must not fail the check
            self.say(f"warning: cannot write the cache entry {path}: {e}")


def _has_skip_pragma(loaded: Any) -> bool:
    """``# utdebug: skip`` on the line above the function, a decorator line or its ``def``."""
    lines = loaded.file_text.splitlines()
    window = []
    for n in range(max(loaded.start_line - 1, 1), loaded.end_line + 1):
        text = lines[n - 1] if n <= len(lines) else ""
        window.append(text)
        if n >= loaded.start_line and re.match(rf"\s*def\s+{loaded.entry_point}\b", text):
            break
    return any(SKIP_PRAGMA.search(x) for x in window)


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


def model_chosen(spec_value: str | None) -> bool:
    """Whether ``--model``, ``UTDEBUG_MODEL`` or the config file names a model (when none does,
    ``check`` runs without one); :class:`CheckError` for a broken config file."""
    from utdebug.agents.config import ConfigError, resolve_model_spec

    try:
        resolve_model_spec(spec_value)
    except ConfigError as e:
        if str(e).startswith("no model chosen"):
            return False
        raise CheckError(str(e)) from None
    return True


def model_info(spec_value: str | None) -> ModelInfo:
    """Build the model named by ``--model`` (else ``UTDEBUG_MODEL``, else the config default)."""
    from utdebug.agents.base import Meter
    from utdebug.agents.config import ConfigError, resolve_model_spec
    from utdebug.agents.factory import build_model, kind_of

    try:
        spec = resolve_model_spec(spec_value)
        kind = kind_of(spec)
        if kind.answers_from_gold:
            raise CheckError(
                "--model sim answers from a benchmark problem's gold solution; it cannot check "
                "your code: use a real model, or scripted:FILE for a dry run"
            )
        built = build_model(spec, Meter())
        if kind.replays_file:
            assert spec.script_path is not None
            digest = hashlib.sha256(Path(spec.script_path).read_bytes()).hexdigest()
            return ModelInfo(built, built.name, f"scripted:{digest}", True)
    except (ConfigError, ValueError, OSError) as e:
        raise CheckError(str(e)) from None
    from utdebug.agents.base import identity_of

    # the model's identity: its string, server, and the config's sampling values and extras
    key = json.dumps([spec.litellm_model, identity_of(built)])
    return ModelInfo(built, spec.name, key, bool(getattr(built, "simulated", False)))
