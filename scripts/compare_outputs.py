#!/usr/bin/env python3
"""Capture the outputs of five utdebug runs from a checkout, and compare two captures.

``capture OUTDIR`` runs, with the checkout it is launched from (the current folder's git
top level, or ``--tree``) first on ``PYTHONPATH``, only the command line (``python -m
utdebug``): a SIMULATED Hard run, a SIMULATED ClassEval run, plain Hard evaluation, ``check``
with a scripted model on a small git repository made here, and the demo in a pseudo-terminal
(its session file). Each job's files, stdout, stderr and exit code go to ``OUTDIR/<job>/``.

``compare BEFORE AFTER`` compares two captures job by job, timing, token and memory fields
aside (``DROPPED_KEYS``, ``TOKEN_KEYS``, ``TEXT_MASKS``; record order too: workers finish in
any order), and exits 1 when a job differs. Used to show that a refactor changes no output.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

DATA_DIR = Path("/work/shared/datasets")

HARD_SIM_LIMIT = 10
"""Problems of the SIMULATED Hard run (the whole split takes ~15 minutes on 2 loaded cores)."""
CLASSEVAL_SIM_LIMIT = 10
"""Problems of the SIMULATED ClassEval run (building ClassEval+Fix takes ~2 minutes)."""
HARD_PLAIN_LIMIT = 20
"""Problems of plain Hard evaluation (hard/20's seven timeouts included)."""

JOBS = ("hard_sim", "classeval_sim", "hard_plain", "check", "demo")

# -- what legitimately varies between two runs ----------------------------------------------

DROPPED_KEYS = frozenset(
    {
        # timings and timestamps
        "seconds",  # records, model-call events, the check report and its functions
        "cpu_seconds",  # records of plain evaluation
        "session_seconds",  # records of debugging runs
        "started_at",  # the check report (JSON)
        "startTimeUtc",  # the check report (SARIF)
        "endTimeUtc",
        # memory
        "peak_child_rss_kb",  # records of plain evaluation
    }
)
"""JSON object keys removed at any depth before comparing (records, summaries, reports,
session files), with ``TOKEN_KEYS``."""
TOKEN_KEYS = frozenset({"prompt_tokens", "completion_tokens"})
"""Token counts of records, summaries and model-call events (the simulated and scripted
models count characters / 4); dropped unless ``compare --keep-tokens``."""

TEXT_MASKS: tuple[tuple[str, str], ...] = (
    (r"wall \d[\d,.]* s", "wall <T> s"),  # bench stdout: "wall 20.1 s (this run)"
    (r"peak \d+ MiB, largest child \d+ MiB", "peak <M> MiB, largest child <M> MiB"),
    (r"\b\d{1,2}:\d\d:\d\d\b", "<CLOCK>"),  # session history times, progress clocks
    (r" · \d+(\.\d+)? s\b", " · <T> s"),  # session transcript: a model call's duration
    (r", \d+(\.\d+)? s; exit code", ", <T> s; exit code"),  # check's summary line
    (r' time="[\d.]+"', ' time="<T>"'),  # check's JUnit report
)
"""Regular expressions replaced in text (stdout, reports) and in JSON strings before
comparing; a table column of wall seconds ("wall s (this run)") is masked by
``_mask_wall_column``."""
TOKEN_MASK = (r"tokens [\d,]+ in / [\d,]+ out", "tokens <N> in / <N> out")
"""Token counts in bench's stdout; masked unless ``compare --keep-tokens``."""


class Rules(NamedTuple):
    """What a comparison leaves out: JSON keys, and text masks (pattern, replacement)."""

    keys: frozenset[str]
    masks: tuple[tuple[str, str], ...]


RULES = Rules(DROPPED_KEYS | TOKEN_KEYS, (*TEXT_MASKS, TOKEN_MASK))
KEEP_TOKENS = Rules(DROPPED_KEYS, TEXT_MASKS)

NOT_COMPARED = ("stderr.txt", "terminal.txt", "meta.json")
"""Files kept for information only: stderr (progress lines), the demo's terminal bytes and
each job's timing."""
NOT_COMPARED_DIRS = ("cache", ".git")
"""The job's own cache folder (responses, private verdicts, a home folder) and the check
repository's git folder; but ``COMPARED_CACHE``."""
COMPARED_CACHE = ("cache", "classeval-fix")
"""The ClassEval+Fix build file (the corrupted versions), made by the ClassEval run."""


# -- capture --------------------------------------------------------------------------------


def _tree(arg: str | None) -> Path:
    if arg:
        return Path(arg).resolve()
    top = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True
    )
    return Path(top.stdout.strip()).resolve()


def _env(tree: Path, cache: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("UTDEBUG_", "GIT_", "PYTHON")) and k not in ("COLUMNS", "LINES")
    }
    env.update(
        PYTHONPATH=str(tree),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        LITELLM_OFFLINE_MODE="true",
        UTDEBUG_DATA_DIR=str(DATA_DIR),
        UTDEBUG_CACHE_DIR=str(cache),
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        HOME=str(cache / "home"),
        TERM="xterm-256color",
        PYTHONHASHSEED="0",
        COLUMNS="200",  # wide enough that no line of stdout wraps around a time
    )
    return env


def _utdebug(*args: str) -> list[str]:
    return [sys.executable, "-m", "utdebug", *args]


def _run(cmd: list[str], job: Path, env: dict[str, str], cwd: Path | None = None) -> int:
    started = time.monotonic()
    done = subprocess.run(cmd, cwd=cwd or job, env=env, capture_output=True, text=True)
    (job / "stdout.txt").write_text(done.stdout, encoding="utf-8")
    (job / "stderr.txt").write_text(done.stderr, encoding="utf-8")
    (job / "exit_code.txt").write_text(f"{done.returncode}\n", encoding="utf-8")
    _meta(job, cmd, time.monotonic() - started)
    return done.returncode


def _meta(job: Path, cmd: list[str], seconds: float) -> None:
    meta = job / "meta.json"
    old = json.loads(meta.read_text()) if meta.exists() else {"commands": []}
    old["commands"].append({"cmd": cmd, "seconds": round(seconds, 1)})
    meta.write_text(json.dumps(old, indent=1) + "\n", encoding="utf-8")


def job_hard_sim(job: Path, env: dict[str, str]) -> int:
    return _run(
        _utdebug(
            "bench", "--split", "hard", "--model", "sim", "--data-dir", str(DATA_DIR),
            "--cache-dir", str(job / "cache"), "--out", "run", "--limit", str(HARD_SIM_LIMIT),
        ),
        job,
        env,
    )  # fmt: skip


def job_classeval_sim(job: Path, env: dict[str, str]) -> int:
    return _run(
        _utdebug(
            "bench", "--split", "classeval", "--model", "sim", "--data-dir", str(DATA_DIR),
            "--cache-dir", str(job / "cache"), "--out", "run",
            "--limit", str(CLASSEVAL_SIM_LIMIT),
        ),
        job,
        env,
    )  # fmt: skip


def job_hard_plain(job: Path, env: dict[str, str]) -> int:
    return _run(
        _utdebug(
            "bench", "--split", "hard", "--data-dir", str(DATA_DIR),
            "--cache-dir", str(job / "cache"), "--out", "run", "--limit", str(HARD_PLAIN_LIMIT),
        ),
        job,
        env,
    )  # fmt: skip


BASE_STATS = '''"""Small statistics helpers."""


def mean(xs):
    """The arithmetic mean of a non-empty list."""
    return sum(xs) / len(xs)


def spread(xs):
    """The largest value minus the smallest."""
    return max(xs) - min(xs)
'''

HEAD_STATS = BASE_STATS.replace(
    "    return max(xs) - min(xs)\n",
    "    ordered = sorted(xs)\n    return ordered[-1] - ordered[1]\n",
)
"""The head commit changes ``spread`` (it skips the smallest value: a bug)."""

SPREAD_FIX = (
    "def spread(xs):\n"
    '    """The largest value minus the smallest."""\n'
    "    ordered = sorted(xs)\n"
    "    return ordered[-1] - ordered[0]\n"
)

CHECK_TESTS = [
    ("spread([3, 1, 2])", "2"),
    ("spread([5])", "0"),
    ("spread([10, -4, 7, 0])", "14"),
]


def _ut(call: str, out: str) -> str:
    return (
        "## Hypothesis\nThe smallest value may be skipped.\n\nError Pattern: lists of any "
        "length\n\n## Unit Test\n\n"
        f"### Input Arguments\nArguments: ```{call}```\n\n### Output\nOutput: ```{out}```\n"
    )


def check_script() -> dict[str, list[str]]:
    """Replies of the scripted model: the test proposals and their votes (8 per test: seven
    agree, one dissents), several rounds' worth, and a fix for ``--fix``."""
    tests = CHECK_TESTS * 4
    votes = []
    for _, out in tests:
        votes += [f"Sorting and subtracting.\nOutput: ```{out}```"] * 7
        votes.append("Taking the middle.\nOutput: ```1```")
    debug = [f"The index should be 0.\n```python\n{SPREAD_FIX}```\n"] * 3
    return {"ut": [_ut(c, o) for c, o in tests], "vote": votes, "debug": debug}


def _git(repo: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def _make_repo(repo: Path, env: dict[str, str]) -> None:
    """A git repository with a base and a head commit, fixed names and dates."""
    repo.mkdir(parents=True)
    genv = dict(
        env,
        GIT_AUTHOR_NAME="Compare",
        GIT_AUTHOR_EMAIL="compare@example.com",
        GIT_COMMITTER_NAME="Compare",
        GIT_COMMITTER_EMAIL="compare@example.com",
        GIT_AUTHOR_DATE="2024-01-01T00:00:00Z",
        GIT_COMMITTER_DATE="2024-01-01T00:00:00Z",
    )
    _git(repo, genv, "init", "-q", "-b", "main")
    (repo / "stats.py").write_text(BASE_STATS, encoding="utf-8")
    _git(repo, genv, "add", "-A")
    _git(repo, genv, "commit", "-q", "-m", "base")
    (repo / "stats.py").write_text(HEAD_STATS, encoding="utf-8")
    _git(repo, genv, "add", "-A")
    _git(repo, genv, "commit", "-q", "-m", "head: spread sorts")


def job_check(job: Path, env: dict[str, str]) -> int:
    repo = job / "repo"
    _make_repo(repo, env)
    (job / "script.json").write_text(json.dumps(check_script(), indent=1), encoding="utf-8")
    reports = job / "reports"
    reports.mkdir()
    return _run(
        _utdebug(
            "check", "--changed", "--base", "HEAD~1", "--model", "scripted:../script.json",
            "--cache-dir", str(job / "cache" / "check"), "--fix",
            "--patch", "../reports/fix.patch",
            "--format", "json", "-o", "../reports/report.json",
            "--report", "junit=../reports/report.xml",
            "--report", "sarif=../reports/report.sarif",
            "--report", "github=../reports/report.github.txt",
        ),
        job,
        env,
        cwd=repo,
    )  # fmt: skip


def job_demo(job: Path, env: dict[str, str]) -> int:
    """``utdebug demo`` in a pseudo-terminal (120x40): it runs its rounds; once the session
    file says it finished, ``q`` ends the app. Its screen is kept in terminal.txt."""
    import fcntl
    import pty
    import struct
    import termios

    cmd = _utdebug("demo", "--dir", "work")
    env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}  # the pty's size
    started = time.monotonic()
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(
        cmd, cwd=job, env=env, stdin=slave, stdout=slave, stderr=slave, start_new_session=True
    )
    os.close(slave)
    screen = bytearray()
    sessions = job / "runs" / "debug"
    deadline = time.monotonic() + 240
    quit_sent = 0.0

    def finished() -> bool:
        for f in sessions.glob("*.session.json"):
            try:
                return json.loads(f.read_text()).get("finish_reason") is not None
            except ValueError:
                return False
        return False

    while proc.poll() is None and time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                screen += os.read(master, 65536)
            except OSError:
                break
        if finished() and time.monotonic() - quit_sent > 5:
            time.sleep(1.0)  # the last save and screen
            os.write(master, b"q")
            quit_sent = time.monotonic()
    if proc.poll() is None:
        proc.kill()
    code = proc.wait()
    os.close(master)
    (job / "terminal.txt").write_bytes(bytes(screen))
    (job / "exit_code.txt").write_text(f"{code}\n", encoding="utf-8")
    _meta(job, cmd, time.monotonic() - started)
    return code


CAPTURES: dict[str, Callable[[Path, dict[str, str]], int]] = {
    "hard_sim": job_hard_sim,
    "classeval_sim": job_classeval_sim,
    "hard_plain": job_hard_plain,
    "check": job_check,
    "demo": job_demo,
}


def capture(out: Path, tree: Path, jobs: list[str]) -> int:
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    head = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    probe = [sys.executable, "-c", "import utdebug; print(utdebug.__file__)"]
    found = subprocess.run(
        probe, cwd=out, env=_env(tree, out), capture_output=True, text=True
    ).stdout.strip()
    if not found.startswith(f"{tree}{os.sep}"):
        print(f"capture: utdebug is imported from {found or '?'}, not from {tree}", file=sys.stderr)
        return 2
    done: dict[str, Any] = {}
    info: dict[str, Any] = {
        "tree": str(tree),
        "commit": head,
        "utdebug": found,
        "python": sys.executable,
        "jobs": done,
    }
    for name in jobs:
        job = out / name
        if job.exists():
            shutil.rmtree(job)
        job.mkdir()
        cache = job / "cache"
        (cache / "home").mkdir(parents=True)
        started = time.monotonic()
        code = CAPTURES[name](job, _env(tree, cache))
        seconds = round(time.monotonic() - started, 1)
        done[name] = {"exit_code": code, "seconds": seconds}
        print(f"{name}: exit {code}, {seconds} s", flush=True)
    (out / "capture.json").write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    return 0


# -- compare --------------------------------------------------------------------------------


def _mask_wall_column(lines: list[str]) -> list[str]:
    """Rich tables with a "wall s" column: its cells become ``<T>``, and runs of spaces and
    rules collapse, so that a wider or narrower time moves no other text."""
    if not any("wall s" in line for line in lines):
        return lines
    out = []
    for line in lines:
        if line[:1] in "┃│┏┡└" or line.startswith(("┃", "│")):
            cells = line.split("│")
            if len(cells) > 2 and re.fullmatch(r"\s*\d[\d,.]*\s*", cells[-2]):
                cells[-2] = " <T> "
            line = "│".join(cells)
            line = re.sub(r" {2,}", " ", line)
            line = re.sub(r"([━─])\1+", r"\1", line)
        out.append(line)
    return out


def normalise_text(text: str, roots: list[str], rules: Rules = RULES) -> list[str]:
    for root in roots:
        text = text.replace(root, "<OUT>")
    for pattern, repl in rules.masks:
        text = re.sub(pattern, repl, text)
    return _mask_wall_column(text.splitlines())


def normalise_json(value: Any, roots: list[str], rules: Rules = RULES) -> Any:
    if isinstance(value, dict):
        return {k: normalise_json(v, roots, rules) for k, v in value.items() if k not in rules.keys}
    if isinstance(value, list):
        return [normalise_json(v, roots, rules) for v in value]
    if isinstance(value, str):
        for root in roots:
            value = value.replace(root, "<OUT>")
        for pattern, repl in rules.masks:
            value = re.sub(pattern, repl, value)
        return value
    return value


def _record_key(record: Any) -> str:
    return json.dumps(record, sort_keys=True)


def _by_name(records: list[Any]) -> dict[str, Any] | None:
    """Records by ``task_id`` (and ``program``, ``kind``) where these name each one once, so
    that a difference names its record; else ``None``."""
    named = {}
    for r in records:
        if not isinstance(r, dict) or "task_id" not in r:
            return None
        name = ":".join(str(r[k]) for k in ("task_id", "program", "kind") if k in r)
        if name in named:
            return None
        named[name] = r
    return named


def load_file(path: Path, roots: list[str], rules: Rules = RULES) -> Any:
    """A file's comparable content: JSON (records of a ``.jsonl`` file sorted, as workers
    finish in any order), else masked text lines."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".jsonl":
        records = [
            normalise_json(json.loads(line), roots, rules) for line in text.splitlines() if line
        ]
        return _by_name(records) or sorted(records, key=_record_key)
    if path.suffix in (".json", ".sarif"):
        try:
            return normalise_json(json.loads(text), roots, rules)
        except ValueError:
            pass
    return normalise_text(text, roots, rules)


def job_files(job: Path) -> Iterator[str]:
    for path in sorted(job.rglob("*")):
        rel = path.relative_to(job)
        if not path.is_file():
            continue
        if rel.parts[0] in NOT_COMPARED_DIRS and rel.parts[:2] != COMPARED_CACHE:
            continue
        if rel.name in NOT_COMPARED or ".git" in rel.parts:
            continue
        yield str(rel)


def _session_name(rel: str) -> str:
    """A session file's name holds a digest of the demo folder's absolute path."""
    return re.sub(r"-[0-9a-f]{10}\.session\.json$", "-<digest>.session.json", rel)


def diff(a: Any, b: Any, where: str, out: list[str], most: int) -> None:
    if len(out) >= most:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                out.append(f"{where}.{k}: only in {'after' if k not in a else 'before'}")
            else:
                diff(a[k], b[k], f"{where}.{k}", out, most)
            if len(out) >= most:
                return
    elif isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            diff(x, y, f"{where}[{i}]", out, most)
            if len(out) >= most:
                return
        if len(a) != len(b):
            out.append(f"{where}: {len(a)} items before, {len(b)} after")
    elif a != b or type(a) is not type(b):
        out.append(f"{where}: {_short(a)} != {_short(b)}")


def _short(x: Any) -> str:
    s = repr(x)
    return s if len(s) <= 200 else s[:200] + "..."


def compare_job(before: Path, after: Path, most: int = 10, rules: Rules = RULES) -> list[str]:
    roots_a = [str(before.parent.resolve()), str(before.parent)]
    roots_b = [str(after.parent.resolve()), str(after.parent)]
    files_a = {_session_name(f): f for f in job_files(before)}
    files_b = {_session_name(f): f for f in job_files(after)}
    out: list[str] = []
    for name in sorted(set(files_a) | set(files_b)):
        if name not in files_b:
            out.append(f"{name}: only before")
        elif name not in files_a:
            out.append(f"{name}: only after")
        else:
            a = load_file(before / files_a[name], roots_a, rules)
            b = load_file(after / files_b[name], roots_b, rules)
            diff(a, b, name, out, most)
        if len(out) >= most:
            break
    return out


def compare(before: Path, after: Path, jobs: list[str], rules: Rules = RULES) -> int:
    differ = 0
    for name in jobs:
        a, b = before / name, after / name
        if not a.is_dir() or not b.is_dir():
            print(f"{name}: missing in {'before' if not a.is_dir() else 'after'}")
            differ += 1
            continue
        found = compare_job(a, b, rules=rules)
        if found:
            differ += 1
            print(f"{name}: DIFFERENT")
            for line in found:
                print(f"  {line}")
        else:
            print(f"{name}: same ({len(list(job_files(a)))} files)")
    return 1 if differ else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("capture", help="run the jobs from this checkout into OUTDIR")
    c.add_argument("outdir", type=Path)
    c.add_argument("--tree", help="the checkout to run (default: the current git top level)")
    c.add_argument("--job", action="append", choices=JOBS, help="only these jobs (repeatable)")
    d = sub.add_parser("compare", help="compare two captures; exit 1 when a job differs")
    d.add_argument("before", type=Path)
    d.add_argument("after", type=Path)
    d.add_argument("--job", action="append", choices=JOBS, help="only these jobs (repeatable)")
    d.add_argument(
        "--keep-tokens", action="store_true", help="compare token counts too (TOKEN_KEYS)"
    )
    args = p.parse_args(argv)
    jobs = args.job or list(JOBS)
    if args.command == "capture":
        return capture(args.outdir, _tree(args.tree), jobs)
    return compare(args.before, args.after, jobs, KEEP_TOKENS if args.keep_tokens else RULES)


if __name__ == "__main__":
    sys.exit(main())
