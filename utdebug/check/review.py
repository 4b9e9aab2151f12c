"""One ``utdebug check`` run: find the functions, check each one, build the report.

The stages: the functions (:func:`utdebug.check.targets.locate`: named, or touched by a
change) -> read-only copies of the repository at the checked revision and at the base
(:class:`utdebug.check.loading.Copies`) -> for each function, its tests from a model
(:mod:`utdebug.check.session`, with the cache and ``--fix``) and its comparison with its base
version (:mod:`utdebug.check.differ`: both versions, seeds, inputs, two runs of each, the
comparison) -> the report (:class:`~utdebug.check.report.CheckReport`).

A function that cannot be checked is reported with the reason and the run goes on. A run
stopped part-way (SIGTERM, SIGINT, its deadline: :mod:`utdebug.check.stopping`) reports what it
has, the functions it did not finish as errors that say so; every model reply goes through the
response cache as it arrives, so a rerun goes on from there. Nothing of
the repository is writable from the sandbox, and the working tree is only written with
``--fix --apply``. See ``docs/check.md``.
"""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from utdebug.check.cache import CACHE_VERSION, ResultCache, default_cache_dir
from utdebug.check.fixes import Fixes
from utdebug.check.loading import Copies
from utdebug.check.options import CheckError, CheckOptions, ModelInfo
from utdebug.check.report import CheckReport, Comparison, FunctionReport, Partial, Status
from utdebug.check.results import function_report
from utdebug.check.stopping import STOP_EXIT, Stopped, Stopper
from utdebug.check.targets import SKIPPED, Located, Target, has_skip_pragma, locate

if TYPE_CHECKING:
    from utdebug.check.differ import DiffOutcome, DiffRun
    from utdebug.check.session import ModelCheck

__all__ = ["CACHE_VERSION", "NO_MODEL", "accept_path", "default_cache_dir", "run_check"]

Progress = Callable[[str], None]

NO_MODEL = "none"
"""The report's model when the check runs without one (the comparison with the base only)."""

RESPONSES = "responses.sqlite"
"""The response cache's file in the cache folder: every model reply, by request."""

PROGRESS_SECONDS = 60.0
"""How often a function that is still being checked is said to be (progress on stderr)."""

_STATUS = {
    Comparison.CHANGED: Status.FINDINGS,
    Comparison.UNCHANGED: Status.OK,
    Comparison.NONDETERMINISTIC: Status.NONDETERMINISTIC,
    Comparison.NOT_COMPARED: Status.NOT_COMPARED,
}
"""Without a model, a function's status is what its comparison with the base found."""


@dataclass(frozen=True, slots=True)
class _Plan:
    """What the run is about, before any copy is made: the located functions, the base
    each is compared with, the accept file read."""

    located: Located
    differ: bool
    """Whether functions are compared with their base version."""
    diff_base: str | None
    accepts: Any


def run_check(
    options: CheckOptions,
    model: ModelInfo | None,
    sandbox_config: Any,
    *,
    progress: Progress | None = None,
    located: Located | None = None,
    stop: Stopper | None = None,
) -> CheckReport:
    """Run the whole check (see the module docstring); :class:`CheckError` for exit code 2.
    ``located``: what :func:`locate` found already (else it is looked for here). ``model``
    ``None``: no model; each function is compared with its base version only. ``stop``: the
    run's :class:`Stopper` (installed by the caller); once it stops the run, the report is
    partial."""
    say = progress or (lambda _msg: None)
    stop = stop or Stopper()
    t0 = time.perf_counter()
    started = datetime.now(UTC).isoformat(timespec="seconds")
    plan = _plan(options, model, located if located is not None else locate(options))
    targets = plan.located.targets
    results: dict[int, FunctionReport] = {
        i: t.problem for i, t in enumerate(targets) if t.problem is not None
    }
    try:
        stop.arm()  # what the run is about is known: from now on, a stop is a partial report
        if len(results) < len(targets):
            _check_all(options, model, sandbox_config, plan, say, stop, results)
    except Stopped:
        pass
    finally:
        stop.close()
    partial = None
    if stop.reason is not None:
        unfinished = [i for i in range(len(targets)) if i not in results]
        for i in unfinished:
            results[i] = _unfinished(targets[i], stop.reason, during=i == stop.working_on)
        partial = Partial(stop.reason, len(unfinished), STOP_EXIT[stop.reason])
        say(partial.message())
    functions = tuple(results[i] for i in range(len(targets)))
    return CheckReport(
        functions=functions,
        seconds=time.perf_counter() - t0,
        started_at=started,
        partial=partial,
        **_header(options, model, plan),
    )


def _unfinished(t: Target, reason: str, *, during: bool) -> FunctionReport:
    """The report of a function the run did not finish: an error that says why."""
    by = "its deadline (--deadline)" if reason == "deadline" else reason
    when = "while it was being checked" if during else "before it was checked"
    msg = f"not checked: the run was stopped by {by} {when}"
    if during:
        msg += "; the model's replies so far are cached: a rerun goes on from them"
    return function_report(t.path, t.qualname, Status.ERROR, msg, t.line, t.end_line)


def _plan(options: CheckOptions, model: ModelInfo | None, located: Located) -> _Plan:
    differ = model is None or options.differential
    diff_base = _diff_base(options, located.repo, located.base) if differ else None
    accepts = _read_accepts(options, located.repo.root) if differ else None
    return _Plan(located, differ, diff_base, accepts)


def _header(options: CheckOptions, model: ModelInfo | None, plan: _Plan) -> dict[str, Any]:
    """The report's fields about the run (the base is the one functions were compared with,
    named or changed)."""
    from utdebug import __version__

    located = plan.located
    return {
        "tool_version": __version__,
        "model": model.name if model is not None else NO_MODEL,
        "simulated": model.simulated if model is not None else False,
        "repository": str(located.repo.root),
        "revision": located.revision or "working tree",
        "base": located.base if located.base is not None else plan.diff_base,
        "min_votes": options.min_votes,
        "min_compared": options.min_compared,
        "settings": {
            "tests": options.tests,
            "votes": options.votes,
            "threshold": options.threshold,
            "timeout": options.timeout,
            "fix": options.fix,
            "rounds": options.rounds if options.fix else 0,
            "differential": plan.differ,
            "synth_inputs": options.synth_inputs if plan.differ else 0,
        },
        "allow_errors": options.allow_errors,
    }


def _check_all(
    options: CheckOptions,
    model: ModelInfo | None,
    sandbox_config: Any,
    plan: _Plan,
    say: Progress,
    stop: Stopper,
    results: dict[int, FunctionReport],
) -> None:
    """Copy the repository (and its base), then check every function that needs it (into
    ``results``, each as it is done)."""
    from utdebug.check import gitrepo

    repo, revision = plan.located.repo, plan.located.revision
    tmp = Path(tempfile.mkdtemp(prefix="utdebug-check-"))
    try:
        say(f"copying the repository ({revision or 'working tree'}) for the sandbox")
        root = gitrepo.snapshot(repo, tmp / "repo", rev=revision)
        diff = None
        if plan.differ:
            base_root = None
            if plan.diff_base is not None:
                say(f"copying the repository at the base ({plan.diff_base[:12]}) for the sandbox")
                base_root = gitrepo.snapshot(repo, tmp / "base", rev=plan.diff_base)
            copies = Copies(tmp, root, base_root, plan.diff_base, revision or "working tree")
            diff = _diff_run(options, copies, plan.accepts, sandbox_config, repo.root)
        checker = _Checker(options, model, repo.root, root, say, diff, stop)
        checker.check_all(plan.located.targets, sandbox_config, results)
    except gitrepo.GitError as e:
        raise CheckError(str(e)) from None
    finally:
        gitrepo.remove_snapshot(tmp)


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
    """Checks the functions of one run one by one (progress on the way), then writes what
    the run keeps: the accept file, the patch."""

    def __init__(
        self,
        options: CheckOptions,
        model: ModelInfo | None,
        repo_root: Path,
        root: Path,
        say: Progress,
        diff: DiffRun | None,
        stop: Stopper,
    ) -> None:
        from utdebug.project import environment_paths

        self.o = options
        self.repo_root = repo_root
        self.root = root
        self.say = say
        self.env_paths = environment_paths([repo_root])
        """Packages outside the interpreter's prefix: mounted, and on the module's sys.path
        (the sandbox's interpreter runs isolated, without PYTHONPATH or user site-packages)."""
        self.fixes = Fixes(options, repo_root, say)
        self.stop = stop
        self.model: ModelCheck | None = None
        self.replies: Any = None
        """The response cache every model reply goes through (``None``: ``--no-cache``)."""
        if model is not None:
            from utdebug.check.session import ModelCheck

            folder = (options.cache_dir or default_cache_dir()) if options.use_cache else None
            cache = ResultCache(folder, say)
            if folder is not None:
                model = self._cached(model, folder)
            self.model = ModelCheck(
                options, model, _settings(options), root, self.env_paths, cache, self.fixes
            )
        self.simulated = model is not None and model.simulated
        self.diff = diff
        """The comparison with the base, if any."""
        self.accepted_now = 0
        """Changed outcomes this run recorded into the accept file (``--accept``)."""

    def _cached(self, model: ModelInfo, folder: Path) -> ModelInfo:
        """``model`` answering through the response cache ``folder/responses.sqlite``, as
        bench and the app do: each reply is kept as it arrives (a run stopped part-way loses
        none), and a rerun asks the model nothing it answered before."""
        from utdebug.agents.cache import CachedModel, ResponseCache

        try:
            self.replies = ResponseCache(folder / RESPONSES)
        except (OSError, sqlite3.Error) as e:  # a read-only cache must not fail the check
            self.say(f"warning: cannot open the response cache {folder / RESPONSES}: {e}")
            return model
        return replace(model, model=CachedModel(model.model, self.replies))

    def check_all(
        self, targets: list[Target], sandbox_config: Any, out: dict[int, FunctionReport]
    ) -> None:
        """Check every function that needs it into ``out`` (each as it is done); a stopped
        run (:class:`Stopped`) leaves the rest out and writes neither patch nor accept file."""
        from utdebug.project import sandbox_mounts
        from utdebug.sandbox import Sandbox

        mounts = sandbox_mounts(self.root, self.env_paths)
        sb = Sandbox(replace(sandbox_config, mounts=mounts))  # started on first use
        todo = [(i, t) for i, t in enumerate(targets) if t.problem is None]
        try:
            for j, (i, t) in enumerate(todo, 1):
                self.stop.check()
                label = f"[{j}/{len(todo)}] {t.path}::{t.qualname}"
                self.say(label)
                t0 = time.perf_counter()
                self.stop.working_on = i
                rep = self.stop.run(self._beating(self._check(sb, t), label))
                if not rep.cached:
                    rep = replace(rep, seconds=time.perf_counter() - t0)
                self.say(f"{label}: {rep.message}")
                out[i] = rep
                self.stop.working_on = None
        except Stopped:
            if (self.o.patch is not None and self.o.fix) or self.o.accept:
                self.say("stopped: neither the patch nor the accept file is written")
            raise
        finally:
            sb.close()
            if self.diff is not None:
                self.diff.runners.close()
        if self.replies is not None:
            self.replies.close()
        self._finish()

    def _finish(self) -> None:
        """The accept file, the warning on replies that gave nothing, the patch."""
        if self.o.accept and self.diff is not None:
            self._write_accepts()
        if self.model is not None and not self.simulated:
            from utdebug.runs.folder import reply_warning, sum_usage

            warning = reply_warning(sum_usage(self.model.usages))
            if warning is not None:
                self.say(warning)
        if self.o.patch is not None and self.o.fix:
            self.fixes.write()

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

        session = self.model.session if self.model is not None else None
        if session is None:
            return "starting"
        calls = sum(isinstance(e, ModelCalled) for e in session.events)
        kept = sum(isinstance(e, TestKept) for e in session.events)
        return f"{calls} model call(s), {kept} test(s) kept"

    def _write_accepts(self) -> None:
        from utdebug.synth.differential import write_accepts

        path = accept_path(self.o, self.repo_root)
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
        """One function: its model's tests (or its head loaded), then its comparison with
        its base."""
        if self.model is None:
            rep = self._without_model(t)
        else:
            rep = await self.model.check(sb, t)
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

    def _without_model(self, t: Target) -> FunctionReport:
        """The function's report before its comparison with the base: an error when it does
        not load, skipped with ``# utdebug: skip``."""
        from utdebug.check.session import load_head

        loaded = load_head(self.root, t, self.o.task)
        if isinstance(loaded, FunctionReport):
            return loaded
        line, end = loaded.start_line, loaded.end_line
        if has_skip_pragma(loaded):
            return function_report(t.path, t.qualname, Status.SKIPPED, SKIPPED, line, end)
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
