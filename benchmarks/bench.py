"""``utdebug bench``: evaluate benchmark splits headlessly, with progress on stderr."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.progress import Task as ProgressTask
from rich.text import Text

from utdebug.benchmarks.evaluator import SplitData, SplitRun, evaluate_split, worker_sandbox_layers
from utdebug.benchmarks.modes import ModeContext
from utdebug.benchmarks.options import BenchOptions, DataOptions, RunOptions
from utdebug.benchmarks.report import print_eval
from utdebug.cli_common import Exit, console
from utdebug.data import splits
from utdebug.data.datasets import (
    DatasetError,
    HeVariant,
    LoadedSplit,
    Split,
)
from utdebug.data.private_tests import EvalSettings, ExpectedCache, WhichCode
from utdebug.data.splits import LoadRequest, ProblemKind
from utdebug.distributed import JobPool, PoolOptions, PoolUnavailable, WorkerLost, make_pool
from utdebug.runs.folder import ProgressFn
from utdebug.sandbox import (
    LimitKind,
    Limits,
    Sandbox,
    SandboxConfig,
    SandboxError,
    SandboxUnavailable,
    Semantics,
)
from utdebug.text_safety import markup, visible


def default_out_dir(split: Split, program: WhichCode, options: BenchOptions) -> Path:
    he = options.data.he_variant
    variant = f"-{he}" if split is Split.HE and program is WhichCode.CODE else ""
    lim = options.limits
    kind = "" if lim.kind == LimitKind.CPU.value else f"-{lim.kind}"
    return (
        Path("runs")
        / "bench"
        / f"{split.value}{variant}-{program.value}-{options.semantics}-t{lim.timeout:g}{kind}"
    )


def out_dir(options: BenchOptions, split: Split, default: Path) -> Path:
    """A split's run folder: ``--out DIR`` (``DIR/<split>/`` when several splits share it),
    else ``default``."""
    out = options.run.out
    if out is None:
        return default
    return out / split.value if options.data.several else out


def local_workers(run: RunOptions) -> int:
    """``--workers`` for a run on this machine: the number given, else the number of cores.
    (Unset, it means the cluster's CPUs with ``--ray``.)"""
    return run.workers if run.workers is not None else os.cpu_count() or 2


def select(loaded: LoadedSplit, spec: str | None, limit: int | None) -> LoadedSplit:
    problems = loaded.problems
    classes = loaded.classes
    if spec:
        wanted = {s.strip() for s in spec.split(",") if s.strip()}
        prefix = f"{loaded.split.value}/"
        # A method of a class: ClassEval_0/filter, or all the class's: ClassEval_0
        if splits.spec(loaded.split).kind is ProblemKind.METHOD:
            norm = {w if w.startswith(prefix) else prefix + w for w in wanted}
        else:
            norm = {w if "/" in w else prefix + w for w in wanted}
        problems = [p for p in problems if p.task_id in norm]
        classes = [c for c in classes if c.task_id in norm or prefix + c.class_task in norm]
        found = {p.task_id for p in problems} | {c.task_id for c in classes}
        unknown = norm - found - {prefix + c.class_task for c in classes}
        if unknown:
            raise DatasetError(
                f"unknown problem(s) in {loaded.split.value}: {', '.join(sorted(unknown))}"
            )
    if limit is not None:
        problems = problems[:limit]
        classes = classes[:limit]
    errors = loaded.errors if not spec and limit is None else []
    return LoadedSplit(loaded.split, problems, errors, loaded.sources, classes, loaded.about)


def error_line(err: Console, prefix: str, message: object) -> None:
    """``prefix message`` on stderr as exactly one line (never wrapped, no markup read from the
    message): what a command that stops prints."""
    from utdebug.runs.folder import one_line

    err.print(
        f"[red]{escape(prefix)}[/red] {markup(one_line(message, 600))}",
        soft_wrap=True,
        highlight=False,
    )


def sandbox_exit(err: Console, command: str, e: SandboxUnavailable | SandboxError) -> int:
    """What a bench mode prints when the sandbox cannot give the required isolation here
    (``SandboxUnavailable``: it says what to install) or failed (``SandboxError``); the exit
    code for both."""
    what = "" if isinstance(e, SandboxUnavailable) else " sandbox failure:"
    err.print(f"[red]{command}:{what}[/red] {markup(str(e))}")
    return Exit.SANDBOX


def eval_settings(options: BenchOptions, **limits: Any) -> EvalSettings:
    """How the private tests are run and compared, from ``--semantics``, ``--timeout``,
    ``--memory-mb``, ``--budget`` and ``--limit-kind``; ``limits``: the mode's further
    :class:`Limits` fields (its timeout cut)."""
    lim = options.limits
    return EvalSettings(
        semantics=Semantics(options.semantics),
        limits=Limits(
            per_input=lim.timeout,
            memory_mb=lim.memory_mb,
            batch=lim.budget or None,
            kind=LimitKind(lim.kind),
            **limits,
        ),
    )


@contextlib.contextmanager
def open_sandbox(cfg: SandboxConfig, err: Console) -> Iterator[Sandbox]:
    """This machine's sandbox, started, after one line on ``err`` naming its active layers."""
    with Sandbox(cfg) as sb:
        err.print(
            f"sandbox: {sb.layers.mode}; active layers: {', '.join(sorted(sb.layers.active()))}"
        )
        yield sb


RESUME_NOTE = "interrupted: finished problems are kept; rerun the same command to resume"


def run_mode(
    err: Console, command: str, main: Coroutine[Any, Any, int], interrupted: str = RESUME_NOTE
) -> int:
    """Run a bench mode's coroutine to its exit code: a sandbox that cannot start or failed
    ends in :func:`sandbox_exit`, Ctrl-C in the ``interrupted`` line and exit 130."""
    try:
        return asyncio.run(main)
    except (SandboxUnavailable, SandboxError) as e:
        return sandbox_exit(err, command, e)
    except KeyboardInterrupt:
        err.print(interrupted)
        return Exit.INTERRUPTED


def note_line(err: Console, text: str) -> None:
    """A diagnostic line on stderr, never wrapped."""
    err.print(markup(text), soft_wrap=True, highlight=False)


def traffic_line() -> str:
    """The model servers' live traffic in one short line (calls in flight / the concurrency
    limit, waiting, tokens/s, seconds per call); ``""`` when no real model was called (plain
    evaluation, the simulated and scripted models register no server)."""
    from utdebug.agents.traffic import snapshot_all

    snaps = snapshot_all()
    if len(snaps) == 1:
        return f"model: {snaps[0].describe()}"
    return " | ".join(f"{_short_endpoint(s.endpoint)}: {s.describe()}" for s in snaps)


def _short_endpoint(endpoint: str) -> str:
    return endpoint.split("://", 1)[-1].rstrip("/")[:40]


class TrafficColumn(ProgressColumn):
    """:func:`traffic_line`, redrawn about once a second by the progress display's own refresh,
    so that a slow model shows its calls in flight while no problem finishes."""

    max_refresh = 1.0

    def render(self, task: ProgressTask) -> Text:
        return Text(traffic_line(), style="cyan")


LOG_SECONDS = 60.0
"""How often the progress is said as a line on a stderr that is not a terminal."""

RUNNING_NAMED = 5
"""Problems still running that a progress line names (the longest-running first)."""


def _minutes(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 60}:{s % 60:02d}"


class ProgressLog:
    """A run's progress where no bar can be drawn (stderr is a CI log, a file): no bar, but a
    plain line every :data:`LOG_SECONDS` that names the problems still running and for how
    long (``hard utgen: 161/170 done · running: hard/12 (3:02), hard/40 (2:51) · last:
    hard/7 solved · 14:01 elapsed · model: ...``), and one line when the run ends."""

    def __init__(
        self,
        label: str,
        total: int,
        console: Console,
        done_words: Callable[[dict[str, Any]], str],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = Text.from_markup(label).plain
        self.total = total
        self.console = console
        self.done_words = done_words
        self.clock = clock
        self.started = clock()
        self.done = 0
        self.last = ""
        self.running: dict[str, float] = {}
        """Task id -> when it started, for the problems started and not yet ended."""
        self._lock = threading.Lock()
        self._quit = threading.Event()
        self._logger: threading.Thread | None = None

    def on_record(self, kind: str, rec: dict[str, Any]) -> None:
        """The run's ``on_record``: a problem started, or ended (done, error, skipped)."""
        task_id = str(rec.get("task_id", ""))
        with self._lock:
            if kind == "start":
                self.running[task_id] = self.clock()
                return
            self.running.pop(task_id, None)
            self.done += 1
            self.last = visible(last_words(kind, rec, self.done_words))

    def line(self) -> str:
        """Where the run is, in one line."""
        now = self.clock()
        with self._lock:
            parts = [f"{self.label}: {self.done}/{self.total} done"]
            oldest = sorted(self.running.items(), key=lambda item: item[1])
            if oldest:
                named = [
                    f"{visible(t)} ({_minutes(now - since)})" for t, since in oldest[:RUNNING_NAMED]
                ]
                more = len(oldest) - RUNNING_NAMED
                parts.append(
                    "running: " + ", ".join(named) + (f", +{more} more" if more > 0 else "")
                )
            if self.last:
                parts.append(f"last: {self.last}")
        parts.append(f"{_minutes(now - self.started)} elapsed")
        traffic = traffic_line()
        if traffic:
            parts.append(traffic)
        return " · ".join(parts)

    def say(self) -> None:
        self.console.print(self.line(), markup=False, highlight=False, soft_wrap=True)

    def __enter__(self) -> ProgressLog:
        self._quit.clear()
        self._logger = threading.Thread(target=self._log, name="progress-log", daemon=True)
        self._logger.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._quit.set()
        if self._logger is not None:
            self._logger.join(timeout=5)
            self._logger = None
        self.say()

    def _log(self) -> None:
        while not self._quit.wait(LOG_SECONDS):
            self.say()


def last_words(kind: str, rec: dict[str, Any], done_words: Callable[[dict[str, Any]], str]) -> str:
    """A problem that ended, in a few words: its task id, and ``done_words`` of its record, or
    its error kind."""
    task_id = str(rec.get("task_id", ""))
    if kind == "done":
        return f"{task_id} {done_words(rec)}"
    if kind == "error":
        return f"{task_id} {rec.get('error_kind') or 'problem'} error"
    return task_id


@contextlib.contextmanager
def recorded_progress(
    label: str, err: Console, total: int, done_words: Callable[[dict[str, Any]], str]
) -> Iterator[ProgressFn]:
    """A run's progress on ``err`` while the block runs, and the run's ``on_record`` that keeps
    it. On a terminal: a bar (done/total, the last problem that ended, the time, and the model
    servers' live traffic, redrawn while no problem ends); elsewhere, plain lines
    (:class:`ProgressLog`)."""
    if not err.is_terminal:
        with ProgressLog(label, total, err, done_words) as log:
            yield log.on_record
        return
    progress = Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[last]}", markup=False),
        TimeElapsedColumn(),
        TrafficColumn(),
        console=err,
        transient=False,
    )
    with progress:
        bar = progress.add_task("run", total=total, last="")

        def on_record(kind: str, rec: dict[str, Any]) -> None:
            if kind != "start":
                progress.update(bar, advance=1, last=visible(last_words(kind, rec, done_words)))

        yield on_record


def load_selected(
    options: BenchOptions,
    err: Console,
    cfg: SandboxConfig | None = None,
    limits: Limits | None = None,
) -> tuple[list[LoadedSplit], list[str]]:
    """The splits of ``--split`` narrowed by ``--problems``/``--limit``, and the names of those
    that could not be read (reported on ``err``; one split's missing file does not stop the
    others). ClassEval+Fix is built in a sandbox of ``cfg`` under ``limits`` the first time."""
    data: DataOptions = options.data
    loaded: list[LoadedSplit] = []
    failed: list[str] = []
    req = LoadRequest(
        cache_dir=data.cache(),
        data_dir=data.data_dir,
        he_variant=HeVariant(data.he_variant),
        verify=data.verify,
        val_file=data.val_file,
        limits=limits,
        start_sandbox=None if cfg is None else lambda: Sandbox(cfg),
        seed=data.classeval_seed,
        cap=data.classeval_cap,
        workers=local_workers(options.run),
        say=lambda text: note_line(err, text),
    )
    for s in [Split(s) for s in data.splits]:
        try:
            loaded.append(select(splits.load(s, req), data.problems, data.limit))
        except DatasetError as e:
            error_line(err, f"utdebug bench: {s.value}:", e)
            failed.append(s.value)
    return loaded, failed


def run(ctx: ModeContext) -> int:
    """``utdebug bench`` (plain evaluation of the code or the gold code)."""
    options, cfg, stop = ctx.options, ctx.sandbox, ctx.stop
    err = console(stderr=True)
    # Results on stdout: a file or pipe gets a table as wide as its cells need.
    out = console()
    program = WhichCode.GOLD if options.gold else WhichCode.CODE
    lim = options.limits
    settings = eval_settings(options, cut_after=lim.cut_after or None, cut_limit=lim.cut_limit)
    try:
        loaded, failed = load_selected(options, err, cfg, settings.limits)
    except (SandboxUnavailable, SandboxError) as e:  # building ClassEval+Fix
        return sandbox_exit(err, "utdebug bench", e)
    if not loaded:
        return Exit.USAGE
    runs: list[SplitRun] = []
    try:
        with _evaluator(options.run, cfg, err) as sb:
            for ls in loaded:
                folder = out_dir(options, ls.split, default_out_dir(ls.split, program, options))
                runs.append(_run_one(sb, ls, program, settings, folder, options, stop, err))
                if stop.is_set():
                    break
    except PoolUnavailable as e:  # no Ray, or the cluster cannot be reached
        error_line(err, "utdebug bench:", e)
        return Exit.USAGE
    except WorkerLost as e:
        error_line(
            err,
            "utdebug bench:",
            f"{e}; finished problems are kept: rerun the same command to resume",
        )
        return Exit.FAILURE
    except (SandboxUnavailable, SandboxError) as e:
        return sandbox_exit(err, "utdebug bench", e)
    print_eval(out, runs, program, settings, as_json=options.run.json)
    return run_exit(err, stop, failed)


def run_exit(err: Console, stop: threading.Event, failed: list[str]) -> Exit:
    """A run's exit code once its tables are printed: interrupted, splits not evaluated, or
    OK, each with its line on stderr."""
    if stop.is_set():
        err.print("stopped early; rerun the same command to resume")
        return Exit.INTERRUPTED
    if failed:
        err.print(f"[red]not evaluated:[/red] {', '.join(failed)} (see the errors above)")
        return Exit.USAGE
    return Exit.OK


@contextlib.contextmanager
def _evaluator(run: RunOptions, cfg: SandboxConfig, err: Console) -> Iterator[Sandbox | JobPool]:
    """This machine's sandbox, or with ``--ray`` a runner over the cluster (whose workers each
    start their own sandbox: one of them is asked for its layers before any problem runs)."""
    if not run.ray:
        with open_sandbox(cfg, err) as sb:
            yield sb
        return
    with make_pool(run.ray, PoolOptions(cfg, concurrency=run.workers or 0)) as runner:
        note_line(err, runner.describe())
        for _, layers in runner.map(worker_sandbox_layers, [None]):
            if isinstance(layers, BaseException):
                raise layers
            mode, active = layers
            note_line(err, f"sandbox (on a Ray worker): {mode}; active layers: {', '.join(active)}")
        yield runner


def _run_one(
    sb: Sandbox | JobPool,
    ls: LoadedSplit,
    program: WhichCode,
    settings: EvalSettings,
    out_dir: Path,
    options: BenchOptions,
    stop: threading.Event,
    err: Console,
) -> SplitRun:
    total = len(ls.problems) + len(ls.classes) + len(ls.errors)
    label = f"[bold]{ls.split.value}[/bold] {program.value}"
    with recorded_progress(label, err, total, _passed) as on_record:
        try:
            return evaluate_split(
                sb,
                SplitData.of(ls),
                program,
                settings,
                out_dir,
                workers=local_workers(options.run),
                expected_cache=ExpectedCache(options.data.cache() / "he-expected"),
                on_record=on_record,
                stop=stop,
            )
        except KeyboardInterrupt:
            stop.set()
            raise


def _passed(rec: dict[str, Any]) -> str:
    """A plain evaluation's record, in the progress: its inputs passed of its inputs."""
    return f"{rec['passed']}/{rec['n_tests']}"
