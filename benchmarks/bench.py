"""``utdebug bench``: evaluate benchmark splits headlessly, with progress on stderr."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.progress import Task as ProgressTask
from rich.text import Text

from utdebug.benchmarks.evaluator import SplitData, SplitRun, evaluate_split, worker_sandbox_layers
from utdebug.benchmarks.modes import ModeContext
from utdebug.benchmarks.report import print_eval
from utdebug.cli_common import Exit
from utdebug.data import splits
from utdebug.data.datasets import (
    DatasetError,
    HeVariant,
    LoadedSplit,
    Split,
    default_cache_dir,
)
from utdebug.data.private_tests import EvalSettings, ExpectedCache, WhichCode
from utdebug.data.splits import LoadRequest, ProblemKind
from utdebug.distributed import JobPool, PoolOptions, PoolUnavailable, WorkerLost, make_pool
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


def default_out_dir(split: Split, program: WhichCode, args: argparse.Namespace) -> Path:
    variant = f"-{args.he_variant}" if split is Split.HE and program is WhichCode.CODE else ""
    kind = "" if args.limit_kind == LimitKind.CPU.value else f"-{args.limit_kind}"
    return (
        Path("runs")
        / "bench"
        / f"{split.value}{variant}-{program.value}-{args.semantics}-t{args.timeout:g}{kind}"
    )


def local_workers(args: argparse.Namespace) -> int:
    """``--workers`` for a run on this machine: the number given, else the number of cores.
    (Unset, it means the cluster's CPUs with ``--ray``.)"""
    workers: int | None = args.workers
    return workers if workers is not None else os.cpu_count() or 2


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


def eval_settings(args: argparse.Namespace, **limits: Any) -> EvalSettings:
    """How the private tests are run and compared, from ``--semantics``, ``--timeout``,
    ``--memory-mb``, ``--budget`` and ``--limit-kind``; ``limits``: the mode's further
    :class:`Limits` fields (its timeout cut)."""
    return EvalSettings(
        semantics=Semantics(args.semantics),
        limits=Limits(
            per_input=args.timeout,
            memory_mb=args.memory_mb,
            batch=args.budget or None,
            kind=LimitKind(args.limit_kind),
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


class LoggedProgress(Progress):
    """A rich progress bar that, on a console that is not a terminal (a CI log, a file: rich
    draws nothing there until the end), says where it is as one plain line every
    :data:`LOG_SECONDS` instead (``hard utgen: 3/170 · hard/12 solved · 4:01 · model: ...``).
    A task's ``last`` field (the last problem's id and outcome) is plain text, shown safely
    (:func:`~utdebug.text_safety.visible`)."""

    def __init__(self, label: str, *columns: Any, **kw: Any) -> None:
        super().__init__(*columns, **kw)
        self.label = Text.from_markup(label).plain
        self._quit = threading.Event()
        self._logger: threading.Thread | None = None

    def update(self, task_id: TaskID, **changes: Any) -> None:
        if "last" in changes:
            changes["last"] = visible(str(changes["last"]))
        super().update(task_id, **changes)

    def start(self) -> None:
        super().start()
        if not self.console.is_terminal and self._logger is None:
            self._quit.clear()
            self._logger = threading.Thread(target=self._log, name="progress-log", daemon=True)
            self._logger.start()

    def stop(self) -> None:
        self._quit.set()
        if self._logger is not None:
            self._logger.join(timeout=5)
            self._logger = None
        super().stop()

    def _log(self) -> None:
        while not self._quit.wait(LOG_SECONDS):
            self.console.print(self.line(), markup=False, highlight=False, soft_wrap=True)

    def line(self) -> str:
        """Where the run is, in one line."""
        parts = [self.label + ":"]
        for task in self.tasks:
            total = "?" if task.total is None else f"{task.total:.0f}"
            parts.append(f"{task.completed:.0f}/{total} done")
            last = task.fields.get("last")
            if last:
                parts.append(f"last: {visible(str(last))}")
            elapsed = int(task.elapsed or 0)
            parts.append(f"{elapsed // 60}:{elapsed % 60:02d} elapsed")
        traffic = traffic_line()
        if traffic:
            parts.append(traffic)
        return " · ".join(parts).replace(": · ", ": ", 1)


def progress_bar(label: str, err: Console) -> Progress:
    """The per-split progress bar on stderr: label, bar, done/total, last problem, time, and
    the model servers' live traffic (runs with a real model); on a stderr that is not a
    terminal, a line a minute (:class:`LoggedProgress`)."""
    return LoggedProgress(
        label,
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[last]}", markup=False),
        TimeElapsedColumn(),
        TrafficColumn(),
        console=err,
        transient=False,
    )


def load_selected(
    args: argparse.Namespace,
    cache_dir: Path,
    err: Console,
    cfg: SandboxConfig | None = None,
    limits: Limits | None = None,
) -> tuple[list[LoadedSplit], list[str]]:
    """The splits of ``--split`` narrowed by ``--problems``/``--limit``, and the names of those
    that could not be read (reported on ``err``; one split's missing file does not stop the
    others). ClassEval+Fix is built in a sandbox of ``cfg`` under ``limits`` the first time."""
    loaded: list[LoadedSplit] = []
    failed: list[str] = []
    req = LoadRequest(
        cache_dir=cache_dir,
        data_dir=args.data_dir,
        he_variant=HeVariant(args.he_variant),
        verify=not args.no_verify,
        val_file=args.val_file,
        limits=limits,
        start_sandbox=None if cfg is None else lambda: Sandbox(cfg),
        seed=args.classeval_seed,
        cap=args.classeval_cap,
        workers=local_workers(args),
        say=lambda text: note_line(err, text),
    )
    for s in [Split(s) for s in (args.split or ["hard"])]:
        try:
            loaded.append(select(splits.load(s, req), args.problems, args.limit))
        except DatasetError as e:
            error_line(err, f"utdebug bench: {s.value}:", e)
            failed.append(s.value)
    return loaded, failed


def run(ctx: ModeContext) -> int:
    """``utdebug bench`` (plain evaluation of the code or the gold code)."""
    args, cfg, stop = ctx.args, ctx.sandbox, ctx.stop
    err = Console(stderr=True)
    # Results on stdout: a file or pipe gets a table wide enough not to wrap.
    out = Console() if sys.stdout.isatty() else Console(width=120)
    program = WhichCode.GOLD if args.gold else WhichCode.CODE
    cache_dir = args.cache_dir or default_cache_dir()
    settings = eval_settings(args, cut_after=args.cut_after or None, cut_limit=args.cut_limit)
    try:
        loaded, failed = load_selected(args, cache_dir, err, cfg, settings.limits)
    except (SandboxUnavailable, SandboxError) as e:  # building ClassEval+Fix
        return sandbox_exit(err, "utdebug bench", e)
    if not loaded:
        return Exit.USAGE
    runs: list[SplitRun] = []
    try:
        with _evaluator(args, cfg, err) as sb:
            for ls in loaded:
                if args.out is None:
                    out_dir = default_out_dir(ls.split, program, args)
                else:  # one folder per split when several share --out
                    out_dir = args.out / ls.split.value if len(loaded) > 1 else args.out
                runs.append(
                    _run_one(sb, ls, program, settings, out_dir, args, cache_dir, stop, err)
                )
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
    print_eval(out, runs, program, settings, as_json=args.json)
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
def _evaluator(
    args: argparse.Namespace, cfg: SandboxConfig, err: Console
) -> Iterator[Sandbox | JobPool]:
    """This machine's sandbox, or with ``--ray`` a runner over the cluster (whose workers each
    start their own sandbox: one of them is asked for its layers before any problem runs)."""
    if not args.ray:
        with open_sandbox(cfg, err) as sb:
            yield sb
        return
    with make_pool(args.ray, PoolOptions(cfg, concurrency=args.workers or 0)) as runner:
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
    args: argparse.Namespace,
    cache_dir: Path,
    stop: threading.Event,
    err: Console,
) -> SplitRun:
    total = len(ls.problems) + len(ls.classes) + len(ls.errors)
    progress = progress_bar(f"[bold]{ls.split.value}[/bold] {program.value}", err)
    with progress:
        task = progress.add_task("eval", total=total, last="")

        def on_record(kind: str, rec: dict[str, Any]) -> None:
            last = rec.get("task_id", "")
            if kind == "done":
                last = f"{last} {rec['passed']}/{rec['n_tests']}"
            elif kind == "error":
                last = f"{last} error"
            progress.update(task, advance=1, last=last)

        try:
            return evaluate_split(
                sb,
                SplitData.of(ls),
                program,
                settings,
                out_dir,
                workers=local_workers(args),
                expected_cache=ExpectedCache(cache_dir / "he-expected"),
                on_record=on_record,
                stop=stop,
            )
        except KeyboardInterrupt:
            stop.set()
            raise
