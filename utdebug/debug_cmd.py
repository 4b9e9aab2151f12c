"""``utdebug debug FILE::FUNCTION`` / ``utdebug debug --problem hard/6`` / ``utdebug demo``: the
interactive session (the Textual app in :mod:`utdebug.tui`).

``debug`` loads one function from a file (its docstring, signature and ``--task`` make the
task; fixes are written back there) or one benchmark problem, picks a model (``--model``, else
``UTDEBUG_MODEL``, else the config default), starts the sandbox and opens the app. With no
model chosen, or ``--model none``, the app opens without one: it synthesises inputs
(:mod:`utdebug.tui.synth`), shows what the code does on each, and a person marks the wrong
outcomes and writes the expected values (a person is the oracle); nothing calls a model. ``demo``
copies a bundled buggy function into a folder (``--dir``, else the same one in the cache)
and opens it with a scripted model that replays recorded replies: it works offline on a
fresh machine.

Before the app opens, a real model is probed with one tiny call
(:func:`utdebug.agents.preflight.preflight`): when it cannot answer, ``debug`` prints one line
and exits 1 instead of opening an app whose first call would fail. An unknown model or provider
is a usage error (exit 2).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from utdebug.agents.choice import ModelChoice
    from utdebug.tui.config import AppConfig, Started

DEMO_DIR = Path(__file__).resolve().parent / "demo"
DEMO_FILE = "median.py"
DEMO_FUNCTION = "median"
DEMO_SCRIPT = "script.json"
DEFAULT_SYNTH_INPUTS = 32
"""Synthesised inputs a session with a live model adds to UTGen's candidates."""


def add_parsers(subparsers: Any, sandbox_opts: argparse.ArgumentParser) -> None:
    """Register ``debug`` and ``demo`` on the CLI's subparsers."""
    d: argparse.ArgumentParser = subparsers.add_parser(
        "debug",
        parents=[sandbox_opts],
        help="debug one function interactively (FILE::FUNCTION, or --problem hard/6)",
        description="Open the interactive session on one function: watch the tests being "
        "generated and voted, correct an expected output, accept or reject edits, roll back, "
        "write the fix back (with a backup) and export the tests as a pytest file.",
    )
    d.add_argument("target", nargs="?", help="path/to/file.py::function")
    d.add_argument("--problem", help="a benchmark problem instead of a file (e.g. hard/6)")
    d.add_argument("--task", help="what the function should do (added to its docstring)")
    d.add_argument(
        "--model",
        default=None,
        help="a configured model name, a litellm model string, 'sim' (--problem only), "
        "'scripted:FILE', or 'none': no model, the app synthesises inputs and you judge their "
        "outcomes (default: UTDEBUG_MODEL, then the config file's default, else none)",
    )
    d.add_argument("--rounds", type=int, default=3, help="debugging rounds (default 3)")
    d.add_argument("-n", "--tests", type=int, default=3, help="generated tests per set (3)")
    d.add_argument("-k", "--votes", type=int, default=8, help="output votes per test (8)")
    d.add_argument(
        "--candidates", type=int, default=1, help="edits sampled and ranked per round (1)"
    )
    d.add_argument(
        "--synth-inputs",
        type=int,
        default=None,
        metavar="N",
        help="with a model: up to N synthesised inputs join UTGen's candidates, their outputs "
        "voted on by the model (32; 0: the model's inputs only; not with --model sim; a "
        "scripted model replays its recorded replies as recorded: 0 unless given)",
    )
    d.add_argument("--review", action="store_true", help="accept or reject every edit by hand")
    d.add_argument("--step", action="store_true", help="pause after round 0 (the first test set)")
    d.add_argument("--data-dir", type=Path, default=None, help="dataset folder (--problem)")
    d.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="where model responses are cached (<cache-dir>/responses.sqlite, the cache of "
        "'utdebug bench': reopening a function replays its calls); env UTDEBUG_CACHE_DIR",
    )
    d.add_argument(
        "--no-cache", action="store_true", help="do not use the response cache (ask the model)"
    )
    _session_options(d)
    demo: argparse.ArgumentParser = subparsers.add_parser(
        "demo",
        parents=[sandbox_opts],
        help="open the interactive session on a bundled example (offline)",
        description="Copy a bundled buggy function into a new folder and debug it with a "
        "scripted model that replays recorded replies (no network, no API key).",
    )
    demo.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="folder to copy the example into (default: <cache-dir>/demo, the same every time)",
    )
    demo.add_argument(
        "--step", action="store_true", help="pause after round 0 (the first test set)"
    )
    _session_options(demo)


SESSIONS = Path("runs") / "debug"
"""Where sessions are saved as they happen (next to the run records, from the current folder)."""


def _session_options(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--resume",
        action="store_true",
        help=f"take back the saved session of this function ({SESSIONS}/; the same command "
        "again does it too) and fail when there is none",
    )
    g.add_argument("--fresh", action="store_true", help="start afresh, ignoring a saved session")


def session_file(prep: Any, args: argparse.Namespace) -> Path:
    """The session file of this function (or problem, or demo folder)."""
    import hashlib

    if prep.loaded is not None:
        where = str(Path(prep.loaded.path).resolve())
        name = f"{Path(prep.loaded.path).stem}-{prep.loaded.qualname}"
    else:
        where = name = f"problem-{prep.task.task_id}"
    digest = hashlib.sha256(where.encode()).hexdigest()[:10]
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in name)
    return SESSIONS / f"{safe}-{digest}.session.json"


def _saved(path: Path, prep: Any, args: argparse.Namespace) -> tuple[dict[str, Any] | None, str]:
    """The saved session to take back (``None``: start afresh) and what to say (else "")."""
    import json

    if getattr(args, "fresh", False):
        return None, ""
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if getattr(args, "resume", False):
            raise _UsageError(f"no saved session of this function ({path})") from None
        return None, ""
    except (OSError, ValueError) as e:
        raise _UsageError(
            f"cannot read the saved session {path}: {e} (--fresh ignores it)"
        ) from None
    if not isinstance(state, dict) or state.get("given") != prep.task.code:
        if getattr(args, "resume", False):
            raise _UsageError(
                f"the saved session {path} is of another version of the function (--fresh)"
            )
        return None, f"the function changed since {path} was saved: starting afresh"
    if state.get("finish_reason") == "does_not_load":  # nothing ran: nothing to take back
        return (
            None,
            f"the session saved in {path} stopped as its code did not load: starting afresh",
        )
    return state, f"taking back the session saved in {path} (--fresh starts afresh)"


@dataclass(slots=True)
class Prepared:
    task: Any
    model: ModelChoice
    loaded: Any
    settings: Any
    note: str | None = None
    problem: Any = None
    """The benchmark problem of ``--problem`` (its base inputs seed a session without a model;
    the simulated model answers from its gold solution)."""
    ready: Any = None
    """The model when it is made before the app opens (a scripted one: nothing to wait for);
    else the start-up work makes it."""


def _say(line: str) -> None:
    """One line on stderr, the text a program, a model or a file wrote in it made safe
    (:func:`~utdebug.text_safety.visible`)."""
    from utdebug.text_safety import visible

    print(visible(line), file=sys.stderr)


def run_debug(args: argparse.Namespace) -> int:
    from utdebug.cli_common import Exit

    try:
        prep = _prepare_debug(args)
    except _UsageError as e:
        _say(f"utdebug debug: {e}")
        return Exit.USAGE
    # The model is probed once the app has drawn its first screen (in the background, the
    # status says so); a model that cannot be used ends the app with one line and exit 1.
    return _open(args, prep, step_first=args.step, review=args.review, probe=True)


def _preflight(model: Any) -> tuple[str | None, str | None]:
    """Probe ``model`` once: (the one-line reason it cannot be used, else ``None``; what the
    probe found, else ``None``)."""
    import asyncio

    from utdebug.agents.base import ModelError
    from utdebug.agents.cache import CachedModel
    from utdebug.agents.preflight import preflight
    from utdebug.runs.folder import one_line

    if isinstance(model, CachedModel):  # probe the server itself, never the cache
        model = model.inner
    try:
        found = asyncio.run(preflight(model))
    except ModelError as e:
        return one_line(e, 600), None
    return None, f"model {found.model}: {found.note}" if found.note else None


def run_demo(args: argparse.Namespace) -> int:
    from utdebug.agents.choice import choice_of
    from utdebug.agents.config import ModelSpec
    from utdebug.agents.scripted import ScriptedModel
    from utdebug.cli_common import Exit
    from utdebug.engine import Settings
    from utdebug.workspace import load_function

    why = no_terminal()
    if why is not None:  # before any folder is made
        print(f"utdebug demo: the interactive app needs a terminal ({why})", file=sys.stderr)
        return Exit.USAGE
    folder = args.dir or default_demo_dir()
    try:
        target, kept = prepare_demo_folder(folder)
        loaded = load_function(target, DEMO_FUNCTION)
    except (OSError, ValueError) as e:
        _say(f"utdebug demo: {e}")
        return Exit.USAGE
    # The demo's model answers whatever the session asks: its recorded replies start again
    # when they run out (a rejected edit, more rounds after the end, a rebuilt test set).
    name = "demo (scripted replies)"
    model = ScriptedModel.from_file(DEMO_DIR / DEMO_SCRIPT, name=name, cycle=True)
    choice = choice_of(ModelSpec(name, "scripted", script_path=DEMO_DIR / DEMO_SCRIPT))
    prep = Prepared(
        loaded.to_task(), choice, loaded, Settings(), note=f"demo folder: {folder}", ready=model
    )
    if kept is not None:  # the session saved there ended in the fix now kept aside
        args.fresh, args.resume = True, False
    code = _open(args, prep, step_first=args.step, review=False)
    print(f"utdebug demo: the example and anything you wrote are in {folder}", file=sys.stderr)
    return code


def default_demo_dir() -> Path:
    """Where ``demo`` copies its example without ``--dir``: one folder in the cache, the same
    every time, so that the same command (or ``--resume``) takes the session back and runs
    leave no folders behind."""
    from utdebug.data.datasets import default_cache_dir

    return default_cache_dir() / "demo"


def prepare_demo_folder(folder: Path) -> tuple[Path, Path | None]:
    """Put the bundled example into ``folder``: (its path, where a copy that was changed since
    was kept, else ``None``). A changed copy (a fix written back) is kept beside it and the
    example starts from the original, with a new session: the saved one ended in that change."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / DEMO_FILE
    original = (DEMO_DIR / DEMO_FILE).read_bytes()
    kept = None
    if target.exists() and target.read_bytes() != original:
        kept = _free_name(target)
        target.replace(kept)
        print(
            f"utdebug demo: {target} was changed since the demo copied it; starting from "
            f"the original again, with a new session (the changed file is kept as {kept.name})",
            file=sys.stderr,
        )
    if not target.exists():
        shutil.copyfile(DEMO_DIR / DEMO_FILE, target)
    return target, kept


def _free_name(path: Path) -> Path:
    """``median.py.1``, ``median.py.2``... the first that does not exist."""
    n = 1
    while path.with_name(f"{path.name}.{n}").exists():
        n += 1
    return path.with_name(f"{path.name}.{n}")


class _UsageError(Exception):
    pass


def _prepare_debug(args: argparse.Namespace) -> Prepared:
    from utdebug.engine import Settings

    if (args.target is None) == (args.problem is None):
        raise _UsageError("give FILE::FUNCTION or --problem ID (one of them)")
    for name in ("rounds", "votes"):
        if getattr(args, name) < 0:
            raise _UsageError(f"--{name} must be 0 or more")
    if args.tests < 1 or args.candidates < 1:
        raise _UsageError("-n/--tests and --candidates must be at least 1")
    if (getattr(args, "synth_inputs", None) or 0) < 0:
        raise _UsageError("--synth-inputs must be 0 or more (0: the model's inputs only)")
    settings = Settings(n=args.tests, k=args.votes, rounds=args.rounds, candidates=args.candidates)
    if args.target is not None:
        from utdebug.workspace import WorkspaceError, load_function, parse_target

        try:
            path, qualname = parse_target(args.target)
            loaded = load_function(path, qualname, task=args.task)
        except WorkspaceError as e:
            raise _UsageError(str(e)) from None
        choice = _choose(args)
        if choice.simulated:
            raise _UsageError(
                "--model sim answers from a benchmark problem's gold solution: use it with "
                "--problem (or try 'utdebug demo')"
            )
        return Prepared(loaded.to_task(), choice, loaded, settings, ready=_ready(choice, args))
    return _prepare_problem(args, settings)


def _choose(args: argparse.Namespace) -> ModelChoice:
    """The model of the session (none when nothing names one, or ``--model none``: the app
    opens without one). A live model is made behind the app's first screen (checking its
    provider imports litellm, which takes seconds); a name litellm's price list does not know
    is checked here, before the app opens."""
    from utdebug.agents.choice import check_chosen, resolve_choice
    from utdebug.agents.config import ConfigError

    try:
        choice = resolve_choice(args.model)
        if not choice.offline and not _routable_at_a_glance(choice.shown_name):
            check_chosen(choice)
    except (ConfigError, ValueError) as e:
        raise _UsageError(f"{e} (for an offline try: 'utdebug demo')") from None
    return choice


def _ready(choice: ModelChoice, args: argparse.Namespace) -> Any:
    """A model that replays a file, made now (nothing to wait for); else ``None``."""
    return _model(choice, args) if choice.replays else None


def _routable_at_a_glance(model: str) -> bool:
    """Whether litellm's own price list (a JSON file in its package, read without importing
    litellm, which takes seconds) names ``model``, or the provider of ``PROVIDER/MODEL``. The
    full check (:func:`~utdebug.agents.factory.check_provider`) is made behind the app's first
    screen; a name this does not know is checked before it, so that a typo is refused before
    anything is drawn, as ``check`` and ``bench`` refuse it."""
    import importlib.util
    import json

    found = importlib.util.find_spec("litellm")
    if found is None or found.origin is None:
        return False
    prices = Path(found.origin).parent / "model_prices_and_context_window_backup.json"
    try:
        known = json.loads(prices.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(known, dict):
        return False
    if model in known:
        return True
    provider = model.split("/", 1)[0] if "/" in model else None
    return provider is not None and any(
        isinstance(v, dict) and v.get("litellm_provider") == provider for v in known.values()
    )


def _model(choice: ModelChoice, args: argparse.Namespace) -> Any:
    """The model of ``choice`` (not the simulated one: :func:`_sim_for`), a live one behind
    the response cache unless ``--no-cache``."""
    from utdebug.agents.base import Meter
    from utdebug.agents.choice import build_chosen
    from utdebug.agents.config import ConfigError
    from utdebug.agents.factory import with_cache

    try:
        model = build_chosen(choice, meter=Meter())
    except (ConfigError, ValueError) as e:
        raise _UsageError(f"{e} (for an offline try: 'utdebug demo')") from None
    if getattr(args, "no_cache", False) or not choice.cached:
        return model
    # The same cache and keys as 'utdebug bench': reopening a function replays its calls.
    from utdebug.data.datasets import default_cache_dir

    cache_dir = args.cache_dir or default_cache_dir()
    try:
        return with_cache(model, cache_dir)
    except (OSError, ValueError) as e:
        _say(f"utdebug debug: no response cache ({e}); every call goes to the model")
        return model


def _prepare_problem(args: argparse.Namespace, settings: Any) -> Prepared:
    from utdebug.cli_common import data_dir_problem
    from utdebug.data.datasets import DatasetError, Split
    from utdebug.data.private_tests import task_from_problem
    from utdebug.data.splits import load_split

    problem_dir = data_dir_problem(args.data_dir)
    if problem_dir is not None:
        raise _UsageError(problem_dir)
    wanted = str(args.problem)
    split_name, _, number = wanted.rpartition("/")
    split_name = split_name or "hard"
    try:
        ls = load_split(Split(split_name), data_dir=args.data_dir, cache_dir=args.cache_dir)
    except ValueError:
        raise _UsageError(f"unknown split {split_name!r} in --problem {wanted}") from None
    except DatasetError as e:
        raise _UsageError(str(e)) from None
    problem = next((p for p in ls.problems if p.task_id == f"{split_name}/{number}"), None)
    if problem is None:
        raise _UsageError(f"no problem {wanted} in the {split_name} split")
    choice = _choose(args)
    ready = _ready(choice, args)
    return Prepared(
        task_from_problem(problem), choice, None, settings, problem=problem, ready=ready
    )


def no_terminal() -> str | None:
    """Why the app cannot open here (stdin or stdout is not a terminal), else ``None``."""
    if not sys.stdin.isatty():
        return "stdin is not a terminal"
    if not sys.stdout.isatty():
        return "stdout is not a terminal"
    return None


def _open(
    args: argparse.Namespace,
    prep: Prepared,
    *,
    step_first: bool,
    review: bool,
    probe: bool = False,
) -> int:
    """Open the app at once; the sandbox starts and the model is probed (``probe``) behind
    its first screen. A sandbox that cannot start (exit 3) or a model that cannot be used
    (exit 1) ends the app with one line, said again here on exit."""
    from utdebug.cli_common import Exit, sandbox_config
    from utdebug.tui.app import DebugApp
    from utdebug.tui.config import NoModel, Started, StartupFailed

    why = no_terminal()
    if why is not None:
        print(
            f"utdebug {args.command}: the interactive app needs a terminal ({why}); for runs "
            "without one use 'utdebug check' or 'utdebug bench'",
            file=sys.stderr,
        )
        return Exit.USAGE
    owned: list[Any] = []  # the sandbox and the executor, closed after the app

    def starting() -> Started:
        from utdebug.sandbox import SandboxError, SandboxUnavailable

        try:
            sb, report, executor = open_sandbox(prep, sandbox_config(args))
        except (SandboxUnavailable, SandboxError) as e:
            raise StartupFailed(f"utdebug: {e}", Exit.SANDBOX) from None
        owned.extend((sb, executor))
        choice, model, note = prep.model, prep.ready, prep.note
        if not choice.chosen:  # nothing calls it
            return Started(NoModel(), executor, sorted(report.active()), len(report.states))
        if model is None and choice.simulated:  # the simulated model over its tests
            model = _sim_for(choice, prep.problem, executor)
        elif model is None:  # a live model, made here
            try:
                model = _model(choice, args)
            except _UsageError as e:
                raise StartupFailed(f"utdebug {args.command}: {e}", Exit.USAGE) from None
        if probe and not getattr(model, "simulated", False):
            problem, found = _preflight(model)
            if problem is not None:
                raise StartupFailed(
                    f"utdebug {args.command}: the model cannot be used: {problem}", Exit.FAILURE
                )
            note = found or note
        return Started(model, executor, sorted(report.active()), len(report.states), note)

    config = _app_config(args, prep, starting, step_first=step_first, review=review)
    if isinstance(config, int):
        return config
    model = prep.ready
    if not prep.model.chosen:
        model = NoModel()
    elif model is None:  # made by the start-up work; its name until then
        model = _Pending(prep.model.shown_name)
    app = DebugApp(
        prep.task,
        model,
        None,  # type: ignore[arg-type]  # the start-up work gives the executor
        prep.settings,
        config,
    )
    try:
        app.run()
    finally:
        for thing in reversed(owned):
            thing.close()
    if app.startup_failure is not None:
        _say(app.startup_failure.line)
        return app.startup_failure.exit_code
    return Exit.OK


def _app_config(
    args: argparse.Namespace,
    prep: Prepared,
    starting: Callable[[], Started],
    *,
    step_first: bool,
    review: bool,
) -> AppConfig | int:
    """How the app opens: the config file's [tui] keys and theme, the session file and a
    saved session to take back (an exit code where they cannot be read)."""
    from utdebug.agents.config import ConfigError
    from utdebug.cli_common import Exit
    from utdebug.tui.config import AppConfig, load_tui_config

    try:
        tui = load_tui_config()
    except ConfigError as e:
        _say(f"utdebug {args.command}: {e}")
        return Exit.USAGE
    saved_at = session_file(prep, args)
    try:
        resume, said = _saved(saved_at, prep, args)
    except _UsageError as e:
        _say(f"utdebug {args.command}: {e}")
        return Exit.USAGE
    if said:
        _say(f"utdebug {args.command}: {said}")
    with contextlib.suppress(OSError):
        saved_at.parent.mkdir(parents=True, exist_ok=True)
    return AppConfig(
        loaded=prep.loaded,
        review=review,
        step_first=step_first,
        starting=starting,
        session_file=saved_at,
        resume=resume,
        keymap=tui.keys,
        theme=tui.theme,
        synth=_synth_plan(prep),
        candidates=_candidates_plan(prep, getattr(args, "synth_inputs", 0)),
    )


def _synth_plan(prep: Prepared) -> Any:
    """What a session without a model synthesises inputs from (``None``: it has a model)."""
    if prep.model.chosen:
        return None
    return _plan(prep)


def _candidates_plan(prep: Prepared, asked: int | None) -> Any:
    """What a session with a model synthesises UTGen's candidate inputs from (``None``: none,
    without a model, with ``--synth-inputs 0`` or with the SIMULATED model, which knows the
    gold outputs of the private inputs only). Unless asked, 32, and none for a scripted model
    (its recorded replies answer the requests of the run they were recorded in)."""
    choice = prep.model
    recorded = choice.replays and not getattr(prep.ready, "cycle", False)  # not the demo's
    count = asked if asked is not None else (0 if recorded else DEFAULT_SYNTH_INPUTS)
    if count <= 0 or not choice.chosen or choice.simulated:
        return None
    return dataclasses.replace(_plan(prep), count=count)


def _plan(prep: Prepared) -> Any:
    from utdebug.tui.synth import plan_for

    task = prep.task
    if prep.loaded is None:
        return plan_for(task.entry_point, problem=prep.problem, program=task.program)
    from utdebug.project import project_folder

    path = Path(prep.loaded.path).resolve()
    return plan_for(
        task.entry_point,
        path=path,
        project=project_folder(path),
        class_name=task.class_name,
        program=task.program,
        kind=task.target_kind,
    )


class _Pending:
    """The simulated model's name and label until the start-up work has made it."""

    simulated = True
    supports_prefill = False

    def __init__(self, name: str) -> None:
        self.name = name

    async def complete(self, request: Any) -> Any:  # pragma: no cover - never called
        raise RuntimeError("the simulated model is not ready yet")


@dataclass(frozen=True, slots=True)
class Loading:
    """How the sandbox loads the code of a session: the folders it binds read-only and the
    module the code runs as (``None``: a benchmark problem, run as a bare program)."""

    mounts: tuple[str, ...] = ()
    context: Any = None


def loading(prep: Prepared) -> Loading:
    """A file's target runs exactly as ``utdebug check`` runs it (:mod:`utdebug.workspace`):
    its project folder bound read-only, the file imported as the module it is (registered in
    ``sys.modules``, its package's relative imports, ``from __future__ import annotations``,
    dataclasses), whatever the target's kind."""
    from utdebug.project import environment_paths, project_folder, sandbox_context, sandbox_mounts

    if prep.loaded is None:
        return Loading()
    path = Path(prep.loaded.path).resolve()
    project = project_folder(path)
    env = environment_paths([project])
    ctx = sandbox_context(path, project, program=prep.task.program, env_paths=env)
    return Loading(sandbox_mounts(project, env), ctx)


def open_sandbox(prep: Prepared, config: Any) -> tuple[Any, Any, Any]:
    """Start the sandbox of ``prep`` (``config`` with the mounts :func:`loading` needs):
    ``(the sandbox, its start report, an executor that runs the code as it must)``; the
    caller closes the executor, then the sandbox."""
    from dataclasses import replace

    from utdebug.engine import Executor
    from utdebug.sandbox import Sandbox

    how = loading(prep)
    sb = Sandbox(replace(config, mounts=(*config.mounts, *how.mounts)))
    try:
        report = sb.start()
    except BaseException:
        sb.close()
        raise
    return sb, report, Executor(sb, workers=2, context=how.context)


def _sim_for(choice: ModelChoice, problem: Any, executor: Any) -> Any:
    """The simulated model over ``problem``'s private tests (its oracle)."""
    import asyncio

    from utdebug.agents.choice import build_chosen
    from utdebug.data.private_tests import (
        EvalSettings,
        ExpectedCache,
        PrivateTestRunner,
        register_sim,
    )

    private = PrivateTestRunner(executor, EvalSettings(), ExpectedCache(None))
    asyncio.run(private.add(problem))
    sim = build_chosen(choice, oracle=private)
    register_sim(sim, problem, private)
    return sim
