"""``utdebug check`` without a model on the real history of pure-Python libraries.

    python -m utdebug.benchmarks.check_history [--list FILE] [--repos DIR] [--work DIR]
        [--library NAME] [--limit N] [--workers N] [--timeout S] [--rows FILE] [--json]
    python -m utdebug.benchmarks.check_history --summarize FILE [--json]

Each row of the list file (default ``benchmarks/data/check_history.toml``) is a commit of a
library, labelled by reading its diff: ``fix`` (with the functions whose behaviour it changes) or
``keep`` (meant to keep behaviour). The commit is checked out in a clone of its repository and
``utdebug check --changed --rev SHA --base SHA^ --no-model --no-cache --format json`` runs there,
with the library's import root on ``PYTHONPATH``. Printed per library and in total: fixes
reported on a fixed function, behaviour-keeping commits with a finding, the share of touched
library functions compared, the median seconds a commit, and why the rest were not compared.
See docs/check.md, "Measured on real history".
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import tomllib
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

DEFAULT_LIST = Path(__file__).resolve().parent / "data" / "check_history.toml"
REPOS_ENV = "UTDEBUG_HISTORY_REPOS"
"""A folder of local copies of the repositories (``fetch`` mirrors or plain clones)."""

RAN, DEPENDENCY_MISSING, TIMEOUT, CHECK_FAILED, NO_CLONE = (
    "ran",
    "dependency missing",
    "timed out",
    "check failed",
    "no clone",
)


@dataclass(frozen=True)
class Library:
    name: str
    url: str
    import_name: str
    paths: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()


@dataclass(frozen=True)
class Commit:
    library: str
    sha: str
    label: str
    """``fix`` or ``keep``."""
    functions: tuple[str, ...] = ()
    """For a fix: the functions whose behaviour it changes, ``path::qualname``."""
    reason: str = ""
    requires: tuple[str, ...] = ()


@dataclass(frozen=True)
class FunctionResult:
    """One function of a commit: whether check compared it with its base, and why not."""

    function: str
    compared: bool
    finding: bool
    reason: str | None = None
    new: bool = False
    """Not in the base revision: nothing to compare with (left out of the share)."""


@dataclass
class CommitResult:
    library: str
    sha: str
    label: str
    status: str
    seconds: float = 0.0
    functions: list[FunctionResult] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)
    detail: str = ""

    @property
    def finding(self) -> bool:
        return any(f.finding for f in self.functions)

    @property
    def fix_reported(self) -> bool:
        return any(f.finding and f.function in self.fixed for f in self.functions)


# -- the list file -------------------------------------------------------------------------------


def load_list(path: Path) -> tuple[dict[str, Library], list[Commit]]:
    """The libraries and the commits of a list file (TOML, see the default one)."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    libraries = {
        name: Library(
            name,
            str(lib["url"]),
            str(lib.get("import", name)),
            tuple(lib.get("paths", ())),
            tuple(lib.get("requires", ())),
        )
        for name, lib in data.get("libraries", {}).items()
    }
    commits = []
    for row in data.get("commits", []):
        commit = Commit(
            str(row["library"]),
            str(row["sha"]),
            str(row["label"]),
            tuple(row.get("functions", ())),
            str(row.get("reason", "")),
            tuple(row.get("requires", ())),
        )
        if commit.library not in libraries:
            raise ValueError(f"{path}: commit {commit.sha} names an unknown library")
        if commit.label not in ("fix", "keep") or (commit.label == "fix") != bool(commit.functions):
            raise ValueError(f"{path}: commit {commit.sha}: a fix names its functions, a keep none")
        commits.append(commit)
    return libraries, commits


# -- reading check's JSON report -----------------------------------------------------------------


def read_function(entry: dict[str, Any]) -> FunctionResult:
    """One function of ``check``'s JSON report: compared with its base or not (and why), and
    whether it has a finding. The one place that knows the report's shape: it prefers
    ``differential.compared`` and ``differential.changes`` and falls back on the status."""
    name = f"{entry.get('path', '?')}::{entry.get('qualname', '?')}"
    status = str(entry.get("status") or "")
    diff = entry.get("differential")
    diff = diff if isinstance(diff, dict) else {}
    changes = diff.get("changes")
    tests = entry.get("tests")
    finding = (
        (isinstance(changes, list) and len(changes) > 0)
        or (
            isinstance(tests, list) and any(isinstance(t, dict) and t.get("finding") for t in tests)
        )
        or status in ("findings", "changed")
    )
    compared = diff.get("compared")
    if not isinstance(compared, bool):
        compared = status in ("findings", "changed", "unchanged", "nondeterministic")
    compared = compared or finding
    reason = None
    if not compared:
        reason = str(diff.get("message") or entry.get("message") or status or "no reason given")
    return FunctionResult(name, compared, finding, reason)


def reason_key(message: str, function: str = "") -> str:
    """``message`` without what is particular to one function, so that the same reason counts
    once: the function's name and path, parenthesised details, quoted names, numbers, and
    anything after the second ``: `` (an exception's own message)."""
    text = re.sub(r"^\s*(nothing was compared|not compared)\s*:\s*", "", message, flags=re.I)
    path, _, qualname = function.partition("::")
    for name in (path, qualname):
        if name:
            text = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", "<name>", text)
    while True:
        shorter = re.sub(r"\s*\([^()]*\)", "", text)
        if shorter == text:
            break
        text = shorter
    text = ": ".join(text.split(": ")[:2])
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "<name>", text)
    text = re.sub(r"\d+", "N", text)
    return text.strip() or "no reason given"


def is_test_file(path: str) -> bool:
    parts = path.split("/")
    name = parts[-1]
    return (
        any(p in ("tests", "test", "testing") for p in parts[:-1])
        or name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
    )


# -- clones --------------------------------------------------------------------------------------


def _git(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-c", "advice.detachedHead=false", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def repo_source(library: Library, repos: Path | None) -> str:
    """Where to clone ``library`` from: its copy under ``repos`` (``owner+name/repo``, the
    layout ``fetch`` gives, or ``owner+name``, or ``name``), else its URL."""
    if repos is not None:
        tail = library.url.rstrip("/").removesuffix(".git").split("/")
        owner_name = "+".join(tail[-2:])
        for cand in (repos / owner_name / "repo", repos / owner_name, repos / tail[-1]):
            if cand.is_dir():
                return str(cand)
    return library.url


class Clones:
    """One bare clone per library under ``work/repos`` and a throwaway clone per commit."""

    def __init__(self, work: Path, repos: Path | None) -> None:
        self.work = work
        self.repos = repos
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def bare(self, library: Library) -> Path:
        with self._guard:
            lock = self._locks.setdefault(library.name, threading.Lock())
        dest = self.work / "repos" / f"{library.name}.git"
        with lock:
            if not dest.is_dir():
                dest.parent.mkdir(parents=True, exist_ok=True)
                part = dest.with_suffix(".part")
                shutil.rmtree(part, ignore_errors=True)
                done = _git(
                    "clone", "--bare", "--quiet", repo_source(library, self.repos), str(part)
                )
                if done.returncode != 0:
                    raise RuntimeError(f"git clone failed: {done.stderr.strip()[-300:]}")
                part.rename(dest)
        return dest

    def checkout(self, library: Library, sha: str) -> Path:
        """A fresh clone of ``library`` with ``sha`` checked out (shares the bare clone's
        objects)."""
        bare = self.bare(library)
        dest = self.work / "runs" / f"{library.name}-{sha[:12]}"
        shutil.rmtree(dest, ignore_errors=True)
        dest.parent.mkdir(parents=True, exist_ok=True)
        for args, cwd in (
            (("clone", "--quiet", "--shared", "--no-checkout", str(bare), str(dest)), None),
            (("checkout", "--quiet", "--detach", sha), dest),
        ):
            done = _git(*args, cwd=cwd)
            if done.returncode != 0:
                raise RuntimeError(f"git {args[0]} failed: {done.stderr.strip()[-300:]}")
        return dest


def import_root(clone: Path, import_name: str) -> Path:
    """The folder that holds the library's top package or module: the clone or its ``src``."""
    for root in (clone, clone / "src"):
        if (root / import_name / "__init__.py").is_file() or (root / f"{import_name}.py").is_file():
            return root
    return clone


def missing_modules(python: str, names: Sequence[str]) -> list[str]:
    """The modules of ``names`` that ``python`` cannot find (none imported)."""
    if not names:
        return []
    if python == sys.executable:
        return [n for n in names if importlib.util.find_spec(n) is None]
    probe = (
        "import importlib.util, sys\n"
        "print(' '.join(m for m in sys.argv[1:] if not importlib.util.find_spec(m)))"
    )
    done = subprocess.run([python, "-c", probe, *names], capture_output=True, text=True)
    return done.stdout.split() if done.returncode == 0 else list(names)


# -- one commit ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    python: str
    timeout: float
    keep_clones: bool = False


def check_command(commit: Commit, library: Library, settings: Settings) -> list[str]:
    paths = [f"--path={p}" for p in library.paths]
    return [
        settings.python,
        "-m",
        "utdebug",
        "check",
        "--changed",
        "--rev",
        commit.sha,
        "--base",
        f"{commit.sha}^",
        "--no-model",
        "--no-cache",
        "--allow-errors",
        "-q",
        "--format",
        "json",
        *paths,
    ]


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int, str, str]:
    """Run ``cmd`` in its own process group; on timeout the whole group is killed (exit -9)."""
    with subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            return -9, out, err
        return proc.returncode, out, err


def _definitions(body: list[ast.stmt]) -> Iterable[ast.stmt]:
    """The statements of ``body`` and of the ``if``/``try``/``with`` blocks in it (not of
    functions or classes): where a definition can sit at one level."""
    for node in body:
        yield node
        if isinstance(node, ast.If | ast.Try | ast.TryStar | ast.With):
            handlers = [h.body for h in getattr(node, "handlers", [])]
            for block in (node.body, getattr(node, "orelse", []), *handlers):
                yield from _definitions(block)
            yield from _definitions(getattr(node, "finalbody", []))


def _defines(source: str, qualname: str) -> bool:
    """Whether ``source`` defines ``qualname`` (``f``, ``Class.method``), at its level or in
    an ``if``/``try``/``with`` block there."""
    try:
        body: list[ast.stmt] = ast.parse(source).body
    except (SyntaxError, ValueError):
        return False
    for part in qualname.split("."):
        found = [
            n
            for n in _definitions(body)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and n.name == part
        ]
        if not found:
            return False
        body = found[-1].body
    return True


def _in_base(clone: Path, sha: str, function: str) -> bool:
    path, _, qualname = function.partition("::")
    shown = _git("show", f"{sha}^:{path}", cwd=clone)
    return shown.returncode == 0 and _defines(shown.stdout, qualname)


def run_commit(
    commit: Commit, library: Library, clones: Clones, settings: Settings
) -> CommitResult:
    """Check one commit against its parent and read the report."""
    result = CommitResult(
        commit.library, commit.sha, commit.label, RAN, fixed=list(commit.functions)
    )
    missing = missing_modules(settings.python, [*library.requires, *commit.requires])
    if missing:
        result.status, result.detail = DEPENDENCY_MISSING, ", ".join(missing)
        return result
    try:
        clone = clones.checkout(library, commit.sha)
    except RuntimeError as exc:
        result.status, result.detail = NO_CLONE, str(exc)
        return result
    try:
        env = {
            **os.environ,
            "PYTHONPATH": str(import_root(clone, library.import_name)),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_OFFLINE_MODE": "true",
        }
        start = time.monotonic()
        code, out, err = _run(
            check_command(commit, library, settings), clone, env, settings.timeout
        )
        result.seconds = round(time.monotonic() - start, 2)
        if code == -9:
            result.status, result.detail = TIMEOUT, f"timed out after {settings.timeout:g} s"
            return result
        try:
            report = json.loads(out)
            entries = [e for e in report["functions"] if isinstance(e, dict)]
        except (ValueError, KeyError, TypeError):
            result.status = CHECK_FAILED
            result.detail = f"exit {code}: {(err.strip() or out.strip())[-300:]}"
            return result
        result.functions = _functions(entries, commit, clone)
    finally:
        if not settings.keep_clones:
            shutil.rmtree(clone, ignore_errors=True)
    return result


def _functions(
    entries: Iterable[dict[str, Any]], commit: Commit, clone: Path
) -> list[FunctionResult]:
    """The library functions of a report (test files and ``<module>`` entries left out), each
    marked new when the base revision does not define it, and the commit's fixed functions the
    report does not list, as not compared."""
    out: list[FunctionResult] = []
    for entry in entries:
        res = read_function(entry)
        path, _, qualname = res.function.partition("::")
        if is_test_file(path) or qualname == "<module>":
            continue
        if not res.compared and not _in_base(clone, commit.sha, res.function):
            res = FunctionResult(res.function, False, False, res.reason, new=True)
        out.append(res)
    listed = {f.function for f in out}
    for name in commit.functions:
        if name not in listed:
            out.append(FunctionResult(name, False, False, "not in check's report"))
    return out


# -- rows and the summary ------------------------------------------------------------------------


def row(result: CommitResult) -> dict[str, Any]:
    return {**asdict(result), "finding": result.finding, "fix_reported": result.fix_reported}


def from_row(data: dict[str, Any]) -> CommitResult:
    functions = [FunctionResult(**f) for f in data.get("functions", [])]
    keys = ("library", "sha", "label", "status", "seconds", "fixed", "detail")
    return CommitResult(**{k: data[k] for k in keys if k in data}, functions=functions)


def read_rows(path: Path) -> list[CommitResult]:
    if not path.is_file():
        return []
    return [from_row(json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def _tally(results: Sequence[CommitResult]) -> dict[str, Any]:
    ran = [r for r in results if r.status == RAN]
    fixes = [r for r in results if r.label == "fix"]
    keeps = [r for r in results if r.label == "keep"]
    functions = [f for r in ran for f in r.functions]
    old = [f for f in functions if not f.new]
    reasons = Counter(reason_key(f.reason or "", f.function) for f in old if not f.compared)
    return {
        "commits": len(results),
        "ran": len(ran),
        "not_run": dict(Counter(r.status for r in results if r.status != RAN)),
        "fixes": len(fixes),
        "fixes_reported": sum(r.fix_reported for r in fixes),
        "fixes_with_any_finding": sum(r.finding for r in fixes),
        "keeps": len(keeps),
        "keeps_with_finding": sum(r.finding for r in keeps),
        "functions": len(old),
        "compared": sum(f.compared for f in old),
        "new_functions": len(functions) - len(old),
        "median_seconds": round(statistics.median([r.seconds for r in ran]), 1) if ran else None,
        "reasons": dict(reasons.most_common()),
    }


def summarize(results: Sequence[CommitResult]) -> dict[str, Any]:
    """Per library and in total: the counts, and why functions were not compared."""
    libraries = sorted({r.library for r in results}, key=[r.library for r in results].index)
    return {
        "libraries": {lib: _tally([r for r in results if r.library == lib]) for lib in libraries},
        "total": _tally(results),
    }


def _share(part: int, whole: int) -> str:
    return f"{part} of {whole} ({100 * part / whole:.0f} %)" if whole else "-"


def render(summary: dict[str, Any], reasons: int = 10) -> str:
    head = (
        "library",
        "commits",
        "fixes reported",
        "keeps with a finding",
        "functions compared",
        "median s",
        "not run",
    )
    lines = [head]
    for name, t in [*summary["libraries"].items(), ("total", summary["total"])]:
        not_run = ", ".join(f"{n} {s}" for s, n in sorted(t["not_run"].items())) or "-"
        lines.append(
            (
                name,
                f"{t['commits']} ({t['fixes']} fix, {t['keeps']} keep)",
                _share(t["fixes_reported"], t["fixes"]),
                _share(t["keeps_with_finding"], t["keeps"]),
                _share(t["compared"], t["functions"]),
                "-" if t["median_seconds"] is None else f"{t['median_seconds']:.1f}",
                not_run,
            )
        )
    widths = [max(len(row[i]) for row in lines) for i in range(len(head))]
    out = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in lines
    ]
    total = summary["total"]
    out.append(
        f"new functions (not in the base, left out of the share): {total['new_functions']}; "
        f"fixes with a finding anywhere: {total['fixes_with_any_finding']} of {total['fixes']}"
    )
    return "\n".join(out + _reasons_table(summary, reasons))


def _reasons_table(summary: dict[str, Any], reasons: int) -> list[str]:
    """The ``reasons`` most common reasons functions were not compared, counted per library
    and in total."""
    top = list(summary["total"]["reasons"].items())[:reasons]
    if not top:
        return []
    names = list(summary["libraries"])
    head = [*(n[:8] for n in names), "total"]
    out = [f"why functions were not compared (the {len(top)} most common):"]
    out.append("  ".join(f"{h:>8}" for h in head))
    for reason, n in top:
        counts = [summary["libraries"][lib]["reasons"].get(reason, 0) for lib in names]
        out.append("  ".join(f"{c:>8}" for c in [*counts, n]) + f"  {reason}")
    return out


# -- the command ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Options:
    """This script's command line (see :func:`main`)."""

    list_file: Path
    repos: Path | None
    work: Path
    library: list[str]
    limit: int | None
    workers: int
    timeout: float
    python: str
    rows: Path | None
    summarize: Path | None
    reasons: int
    keep_clones: bool
    json: bool


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument(
        "--list", dest="list_file", type=Path, default=DEFAULT_LIST, help="the list file (TOML)"
    )
    ap.add_argument(
        "--repos",
        type=Path,
        default=Path(os.environ[REPOS_ENV]) if os.environ.get(REPOS_ENV) else None,
        help=f"a folder of local copies of the repositories (env {REPOS_ENV}); else their URLs",
    )
    cache = Path(os.environ.get("UTDEBUG_CACHE_DIR") or Path.home() / ".cache" / "utdebug")
    ap.add_argument("--work", type=Path, default=cache / "history", help="where clones go")
    ap.add_argument("--library", action="append", default=[], help="only this library")
    ap.add_argument("--limit", type=int, default=None, help="the first N commits (after --library)")
    ap.add_argument("--workers", type=int, default=1, help="commits checked at once (1)")
    ap.add_argument("--timeout", type=float, default=600.0, help="wall seconds a commit (600)")
    ap.add_argument("--python", default=sys.executable, help="the Python that runs utdebug")
    ap.add_argument(
        "--rows",
        type=Path,
        default=None,
        help="append a JSON line per commit; commits already there are not checked again",
    )
    ap.add_argument("--summarize", type=Path, default=None, help="only summarize a rows file")
    ap.add_argument("--reasons", type=int, default=10, help="reasons to print (10)")
    ap.add_argument("--keep-clones", action="store_true", help="leave each commit's clone")
    ap.add_argument("--json", action="store_true", help="the summary and rows as JSON on stdout")
    return ap


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _progress(i: int, n: int, res: CommitResult) -> str:
    old = [f for f in res.functions if not f.new]
    return (
        f"[{i}/{n}] {res.library} {res.sha[:10]} {res.label}: {res.status}, {res.seconds:.1f} s, "
        f"compared {sum(f.compared for f in old)} of {len(old)}"
        + (", finding" if res.finding else "")
        + (f" ({res.detail})" if res.detail else "")
    )


def check_all(
    commits: Sequence[Commit],
    libraries: dict[str, Library],
    opts: Options,
    log: TextIO,
) -> list[CommitResult]:
    """Every commit's result, in the list's order: those already in ``--rows`` as they are
    there, the others checked (``--workers`` at once) and appended to it."""
    done = {(r.library, r.sha): r for r in read_rows(opts.rows)} if opts.rows else {}
    settings = Settings(opts.python, opts.timeout, opts.keep_clones)
    clones = Clones(opts.work, opts.repos)
    todo = [c for c in commits if (c.library, c.sha) not in done]
    with ThreadPoolExecutor(max(1, opts.workers)) as pool:
        futures = [pool.submit(run_commit, c, libraries[c.library], clones, settings) for c in todo]
        for i, fut in enumerate(as_completed(futures), 1):
            res = fut.result()
            done[(res.library, res.sha)] = res
            if opts.rows:
                opts.rows.parent.mkdir(parents=True, exist_ok=True)
                with opts.rows.open("a") as fh:
                    fh.write(json.dumps(row(res)) + "\n")
            print(_progress(i, len(todo), res), file=log, flush=True)
    return [done[(c.library, c.sha)] for c in commits]


def _emit(summary: dict[str, Any], results: Sequence[CommitResult], opts: Options) -> None:
    if opts.json:
        print(json.dumps({**summary, "commits": [row(r) for r in results]}, indent=1))
    else:
        print(render(summary, opts.reasons))


def main(argv: list[str] | None = None) -> int:
    opts = Options(**vars(_parser().parse_args(argv)))
    log = sys.stderr if opts.json else sys.stdout
    if opts.summarize is not None:
        rows = read_rows(opts.summarize)
        _emit(summarize(rows), rows, opts)
        return 0
    libraries, commits = load_list(opts.list_file)
    unknown = sorted(set(opts.library) - set(libraries))
    if unknown:
        print(f"unknown library: {', '.join(unknown)}", file=sys.stderr)
        return 2
    commits = [c for c in commits if not opts.library or c.library in opts.library]
    commits = commits[: opts.limit] if opts.limit is not None else commits
    load_start, start = _load(), time.monotonic()
    print(f"load average at start: {' '.join(map(str, load_start))}", file=log, flush=True)
    results = check_all(commits, libraries, opts, log)
    wall, load_end = round(time.monotonic() - start, 1), _load()
    summary = summarize(results)
    summary.update(load_start=load_start, load_end=load_end, seconds=wall)
    _emit(summary, results, opts)
    print(f"{wall:.1f} s; load average at end: {' '.join(map(str, load_end))}", file=log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
