"""``utdebug check`` as a command: where its reports may go, the time it reports, its output to
a pipe. Each runs the real command line in a subprocess on a small git repository (no model:
each function is compared with its base version).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import git
import pytest

MODULE = 'def double(x):\n    """Twice x."""\n    return 2 * x\n'


def utdebug(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "UTDEBUG_MODEL")}
    return subprocess.run(
        [sys.executable, "-m", "utdebug", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**environ, "UTDEBUG_CONFIG": str(cwd / "no-models.toml")},
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository under a path far longer than 80 columns, with one committed module."""
    root = tmp_path / ("a-repository-with-a-long-name-" * 3) / "project"
    root.mkdir(parents=True)
    r = git.Repo.init(root)
    (root / "calc.py").write_text(MODULE, encoding="utf-8")
    (root / "no-models.toml").write_text("", encoding="utf-8")
    r.index.add(["calc.py", "no-models.toml"])
    r.index.commit("calc", author=git.Actor("t", "t@example.com"))
    return root


@pytest.mark.parametrize("how", [("-o", "{gone}/out.json"), ("--report", "sarif={gone}/x.sarif")])
def test_a_report_into_a_folder_that_does_not_exist_is_refused_first(
    repo: Path, tmp_path: Path, how: tuple[str, str]
) -> None:
    gone = tmp_path / "no-such-folder" / "below"
    flag, value = how
    r = utdebug(repo, "check", "calc.py::double", flag, value.format(gone=gone))
    assert r.returncode == 2, r.stderr
    assert f"the folder {gone} does not exist" in r.stderr
    assert "copying the repository" not in r.stderr  # refused before any work
    assert not gone.parent.exists()


def test_a_report_onto_a_folder_or_a_patch_into_nowhere_is_refused(
    repo: Path, tmp_path: Path
) -> None:
    r = utdebug(repo, "check", "calc.py::double", "-o", str(tmp_path))
    assert r.returncode == 2 and f"to {tmp_path}: it is a folder" in r.stderr
    patch = tmp_path / "nowhere" / "fix.patch"
    r = utdebug(repo, "check", "calc.py::double", "--fix", "--patch", str(patch))
    assert r.returncode == 2 and f"cannot write the patch to {patch}" in r.stderr
    assert not patch.parent.exists()


def test_the_time_reported_is_the_commands(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every format reports how long the command ran (:func:`command_seconds`: from the start
    of the process), not how long its run took after the start-up, the copies and the model's
    probe (10.7 s printed for a 33 s command)."""
    import utdebug.check_cmd
    from utdebug.cli import main

    monkeypatch.setattr(utdebug.check_cmd, "command_seconds", lambda: 33.25)
    monkeypatch.chdir(repo)
    monkeypatch.setenv("UTDEBUG_CONFIG", str(repo / "no-models.toml"))
    out = repo.parent / "r.json"
    assert main(["check", "-q", "calc.py::double", "--report", f"json={out}"]) == 0
    assert "33.2 s; exit code 0" in capsys.readouterr().out
    assert json.loads(out.read_text(encoding="utf-8"))["seconds"] == 33.25


def test_model_none_checks_without_a_model(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--model none`` is no model, as for ``debug`` and ``bench`` (it was taken for a litellm
    model string), also over a config file that names a default."""
    from utdebug.cli import main

    monkeypatch.chdir(repo)
    monkeypatch.delenv("UTDEBUG_MODEL", raising=False)
    config = repo.parent / "default.toml"
    config.write_text('default = "openai/gpt-4o-mini"\n', encoding="utf-8")
    monkeypatch.setenv("UTDEBUG_CONFIG", str(config))
    assert main(["check", "calc.py::double", "--model", "none", "--format", "json"]) == 0
    err = capsys.readouterr().err
    assert "no model: comparing each function with its base version" in err


def test_a_process_knows_how_long_it_has_run() -> None:
    """:func:`command_seconds` counts from the process's start: at least what was timed
    inside it (to the clock's hundredth of a second)."""
    code = (
        "import time; t = time.monotonic(); time.sleep(0.3); "
        "from utdebug.cli_common import command_seconds; "
        "print(command_seconds() - (time.monotonic() - t))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert float(r.stdout) >= -0.02


def test_piped_human_report_breaks_no_line(repo: Path) -> None:
    """To a pipe, the report's lines are whole: the summary (over 80 columns) is one line,
    not ``... 0 cached,`` and ``0.2 s; exit code 2 ...`` on the next."""
    (repo / "broken.py").write_text("def half(x):\n    return x /\n", encoding="utf-8")
    r = utdebug(repo, "check", "calc.py::double", "broken.py::half")
    summary = [line for line in r.stdout.splitlines() if "checked:" in line]
    assert len(summary) == 1, r.stdout
    assert len(summary[0]) > 80 and "cached, " in summary[0] and "exit code 2" in summary[0]
    assert "cannot parse broken.py: line 2, column" in r.stdout


def test_a_name_that_is_no_function_of_its_file_is_a_usage_error(repo: Path) -> None:
    """``FILE::nosuch`` is refused before any work (exit 2, the file's functions named), not
    reported as a checked function at line 0."""
    r = utdebug(repo, "check", "calc.py::double", "calc.py::nosuch", "--format", "json")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stdout == ""  # no report: nothing was checked
    assert "calc.py::nosuch: no function 'nosuch' in calc.py" in r.stderr
    assert "functions that can be debugged: double" in r.stderr
    assert "copying the repository" not in r.stderr


@pytest.mark.parametrize("changed", [False, True])
def test_a_syntax_error_is_reported_at_its_line_in_every_format(
    repo: Path, tmp_path: Path, changed: bool
) -> None:
    """A file whose line 2 does not parse is reported at line 2 (not 0, nor GitHub's 1),
    named (``FILE::half``) or changed (``FILE::<module>``)."""
    (repo / "broken.py").write_text("def half(x):\n    return x /\n", encoding="utf-8")
    out = {fmt: tmp_path / f"report.{fmt}" for fmt in ("json", "sarif", "junit", "github")}
    which = ["--changed"] if changed else ["broken.py::half"]
    reports = [f"--report={fmt}={path}" for fmt, path in out.items()]
    r = utdebug(repo, "check", *which, "-q", *reports)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "broken.py:2 " in r.stdout
    (function,) = json.loads(out["json"].read_text(encoding="utf-8"))["functions"]
    assert (function["line"], function["status"]) == (2, "error")
    sarif = json.loads(out["sarif"].read_text(encoding="utf-8"))
    (result,) = sarif["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 2
    assert "::warning file=broken.py,line=2,endLine=2," in out["github"].read_text("utf-8")
    assert 'line="2"' in out["junit"].read_text(encoding="utf-8")
