"""``utdebug check`` with a slow model, stopped part-way: SIGTERM, SIGINT or ``--deadline``
writes a partial report in every format that says so, with its exit code, and a rerun asks the
model nothing the first run was answered (the replies are cached as they arrive).

Each test runs the real command line in a subprocess with a scripted model whose every call
takes a while; progress is read from the response cache, never from the clock.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import git
import jsonschema
import pytest
from testkit.scripted_add import ut, votes

from utdebug.check.formats import schema

MODULE = (
    'def zero(x):\n    """Always 0."""\n    return 0\n\n\n'
    'def none(x):\n    """Always 0 too."""\n    return 0\n'
)
TARGETS = ("calc.py::zero", "calc.py::none")
BACKSTOP = 600.0
"""Seconds after which a run that shows no progress fails the test (never reached when the
command works, however loaded the machine)."""


def write_script(path: Path, delay: float) -> None:
    """Replies that suit any order they are asked in: every test expects 0, every vote says
    0 (a rerun's script starts again from its first reply); ``delay`` seconds a call."""
    calls = [ut(f"{name}({i})", "0") for i in range(40) for name in ("zero", "none")]
    script = {"ut": calls, "vote": votes(*["0"] * 800), "delay": delay}
    path.write_text(json.dumps(script), encoding="utf-8")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    r = git.Repo.init(root)
    (root / "calc.py").write_text(MODULE, encoding="utf-8")
    r.index.add(["calc.py"])
    r.index.commit("calc", author=git.Actor("t", "t@example.com"))
    return root


def command(repo: Path, tmp_path: Path, *extra: str) -> list[str]:
    reports = [f"--report={fmt}={tmp_path / f'report.{fmt}'}" for fmt in FORMATS]
    return [
        sys.executable,
        "-m",
        "utdebug",
        "check",
        *TARGETS,
        "--model",
        f"scripted:{tmp_path / 'script.json'}",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--no-differential",
        "-n",
        "2",
        "-k",
        "4",
        *reports,
        *extra,
    ]


FORMATS = ("json", "junit", "github", "sarif")


def environment(repo: Path) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "UTDEBUG_MODEL")}
    config = repo.parent / "no-models.toml"
    config.write_text("", encoding="utf-8")
    return {**environ, "UTDEBUG_CONFIG": str(config)}


def replies(cache: Path) -> dict[str, float]:
    """Every cached reply's key and when it was written (none yet: empty)."""
    db = cache / "responses.sqlite"
    if not db.exists():
        return {}
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30.0) as c:
            rows = c.execute("SELECT key, created FROM completions").fetchall()
    except sqlite3.Error:  # not made yet
        return {}
    return {key: created for key, created in rows}


def finished_run(repo: Path, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Run the command to its end."""
    return subprocess.run(
        command(repo, tmp_path, *extra),
        cwd=repo,
        env=environment(repo),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=BACKSTOP,
    )


def stopped_run(repo: Path, tmp_path: Path, how: signal.Signals, after: int) -> tuple[int, str]:
    """Run the command; send ``how`` once ``after`` replies are cached; its exit code and
    stdout."""
    proc = subprocess.Popen(
        command(repo, tmp_path),
        cwd=repo,
        env=environment(repo),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        backstop = time.monotonic() + BACKSTOP
        while len(replies(tmp_path / "cache")) < after:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < backstop, "no reply was cached"
            time.sleep(0.05)  # polling the cache, not waiting for a time to pass
        proc.send_signal(how)
        out, err = proc.communicate(timeout=BACKSTOP)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert "PARTIAL REPORT" in err, err
    return proc.returncode, out


def assert_partial(tmp_path: Path, stdout: str, reason: str, code: int) -> None:
    """Every format says the report is partial, and why."""
    by = "its deadline (--deadline)" if reason == "deadline" else reason
    assert f"PARTIAL REPORT: the run was stopped by {by}" in stdout
    assert " of 2 functions checked: " in stdout  # the ones not finished are not counted
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema()).validate(report)
    assert report["exit_code"] == code
    assert report["partial"]["reason"] == reason
    assert report["partial"]["unfinished"] >= 1
    unfinished = [f for f in report["functions"] if "the run was stopped" in f["message"]]
    assert len(unfinished) == report["partial"]["unfinished"]
    assert all(f["status"] == "error" and f["line"] > 0 for f in unfinished)
    github = (tmp_path / "report.github").read_text(encoding="utf-8")
    assert "::error title=utdebug partial report::PARTIAL REPORT" in github
    sarif = json.loads((tmp_path / "report.sarif").read_text(encoding="utf-8"))
    invocation = sarif["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False and invocation["exitCode"] == code
    assert sarif["runs"][0]["properties"]["partial"]["reason"] == reason
    junit = ET.fromstring((tmp_path / "report.junit").read_text(encoding="utf-8"))
    props = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert (props.get("partial") or "").startswith("PARTIAL REPORT")


@pytest.mark.parametrize(
    ("how", "reason", "code"), [(signal.SIGTERM, "SIGTERM", 143), (signal.SIGINT, "SIGINT", 130)]
)
def test_a_stopped_run_reports_what_it_has_and_a_rerun_asks_nothing_again(
    repo: Path, tmp_path: Path, how: signal.Signals, reason: str, code: int
) -> None:
    write_script(tmp_path / "script.json", delay=2.0)
    # a test proposal and its 4 votes answered: the first function is still being checked
    returncode, stdout = stopped_run(repo, tmp_path, how, after=5)
    assert returncode == code, stdout
    assert_partial(tmp_path, stdout, reason, code)
    first = replies(tmp_path / "cache")
    assert len(first) >= 5

    write_script(tmp_path / "script.json", delay=0.0)  # the same replies: the same model
    rerun = finished_run(repo, tmp_path)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert report["partial"] is None
    assert [f["status"] for f in report["functions"]] == ["ok", "ok"]
    second = replies(tmp_path / "cache")
    # every reply of the first run was read back, not asked again (a reply asked again is
    # written again, with a later time); the rest of the work was asked
    assert {k: second[k] for k in first} == first
    assert len(second) > len(first)


def test_the_deadline_stops_the_run_with_a_partial_report(repo: Path, tmp_path: Path) -> None:
    write_script(tmp_path / "script.json", delay=30.0)  # no function can finish in time
    r = finished_run(repo, tmp_path, "--deadline", "1")
    assert r.returncode == 124, r.stdout + r.stderr
    assert_partial(tmp_path, r.stdout, "deadline", 124)


def test_a_deadline_must_be_positive(repo: Path, tmp_path: Path) -> None:
    write_script(tmp_path / "script.json", delay=0.0)
    r = finished_run(repo, tmp_path, "--deadline", "0")
    assert r.returncode == 2 and "--deadline must be more than 0 seconds" in r.stderr
