"""The command line, run as a user would: exit codes, stdout/stderr, files, resume."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from testkit.wait import while_running

from utdebug.runs.records import SAMPLES, SUMMARY, read_samples


def _default_sigint() -> None:
    """A shell runs background jobs with SIGINT ignored, and children inherit that: give the
    command under test the default Ctrl-C behaviour whatever started the test run."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def utdebug(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "utdebug", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def test_help_lists_commands() -> None:
    r = utdebug("--help")
    assert r.returncode == 0
    assert "bench" in r.stdout and "doctor" in r.stdout


def test_bench_json_then_resume(data_dir: Path, tmp_path: Path) -> None:
    args = ["bench", "--split", "hard", "--problems", "6,hard/7,9", "--data-dir", str(data_dir)]
    r = utdebug(*args, "--out", str(tmp_path), "--json")
    assert r.returncode == 0, r.stderr
    payload = json.loads(r.stdout)
    hard = payload["splits"]["hard"]
    assert hard["evaluated_now"] == 3 and hard["resumed"] == 0
    s = hard["summary"]
    assert s["problems"] == 3 and s["tests"] > 0
    assert 0.0 < s["mean_pass_fraction"] < 1.0  # buggy code: fails some tests
    assert len(read_samples(tmp_path / SAMPLES)) == 3
    assert json.loads((tmp_path / SUMMARY).read_text())["hard:code"] == s
    again = json.loads(utdebug(*args, "--out", str(tmp_path), "--json").stdout)["splits"]["hard"]
    assert again["evaluated_now"] == 0 and again["resumed"] == 3
    assert again["summary"] == s


def test_bench_gold_table(data_dir: Path, tmp_path: Path) -> None:
    r = utdebug(
        "bench", "--split", "hard", "--gold", "--limit", "4", "--data-dir", str(data_dir),
        "--out", str(tmp_path),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "100.00%" in r.stdout  # the gold code passes everything
    assert "sandbox: bwrap" in r.stderr or "sandbox:" in r.stderr


def test_missing_data_is_a_clear_usage_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    r = utdebug(
        "bench", "--split", "hard", "--data-dir", str(tmp_path / "empty"),
        env={"UTDEBUG_CACHE_DIR": str(tmp_path / "cache")},
    )  # fmt: skip
    # Offline: the download fails with a clear message naming the file; no traceback.
    assert r.returncode == 2
    assert "MBPP+Fix_hard_test.jsonl" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("mode", [[], ["--model", "sim"], ["verify", "--verify-set", "he-r+"]])
def test_a_data_dir_that_does_not_exist_is_one_line(
    mode: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from utdebug.cli import main

    nowhere = tmp_path / "nowhere"
    code = main(["bench", *mode, "--split", "hard", "--data-dir", str(nowhere)])
    err = capsys.readouterr().err
    assert code == 2
    assert (
        err == f"utdebug bench: --data-dir {nowhere} does not exist: name the folder that "
        "holds the dataset files\n"
    )
    assert not (tmp_path / "cache").exists()  # no download was tried
    # The interactive app on a benchmark problem says the same before loading anything.
    code = main(["debug", "--problem", "hard/6", "--model", "sim", "--data-dir", str(nowhere)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"utdebug debug: --data-dir {nowhere} does not exist")
    assert len(err.splitlines()) == 1


def test_checksum_mismatch_and_no_verify(data_dir: Path, tmp_path: Path) -> None:
    src = (data_dir / "MBPP+Fix_hard_test.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in src[:3]]
    rows[0]["test"] = "inputs = [open('/etc/passwd')]\nresults = [1]\n"  # not extractable
    rows[1]["code"] = "def broken(:\n"  # syntax error
    bad = tmp_path / "data"
    bad.mkdir()
    lines = [json.dumps(r) for r in rows] + ["{not json"]
    (bad / "MBPP+Fix_hard_test.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = utdebug("bench", "--split", "hard", "--data-dir", str(bad), "--out", str(tmp_path / "o"))
    assert r.returncode == 2
    assert "sha256" in r.stderr and "Traceback" not in r.stderr
    r = utdebug(
        "bench", "--split", "hard", "--data-dir", str(bad), "--no-verify", "--json",
        "--out", str(tmp_path / "o"),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)["splits"]["hard"]["summary"]
    assert s["problems"] == 4 and s["problem_errors"] == 2 and s["evaluated"] == 2
    recs = {x["task_id"]: x for x in read_samples(tmp_path / "o" / SAMPLES)}
    first = recs[f"hard/{rows[0]['task_id']}"]
    assert "row 1" in first["error"]
    syntax = recs[f"hard/{rows[1]['task_id']}"]
    assert syntax["load_error"].startswith("SyntaxError") and syntax["passed"] == 0
    assert any("row 4" in (x.get("error") or "") for x in recs.values())


def test_unknown_problem_is_a_usage_error(data_dir: Path, tmp_path: Path) -> None:
    r = utdebug("bench", "--problems", "hard/99999", "--data-dir", str(data_dir))
    assert r.returncode == 2
    assert "hard/99999" in r.stderr


def test_bad_numbers_are_rejected() -> None:
    r = utdebug("bench", "--timeout", "0")
    assert r.returncode == 2 and "--timeout" in r.stderr


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["--limit", "-1"], "--limit"),  # [:-1] would have run 169 of 170 problems
        (["--timeout", "-1"], "--timeout"),
        (["--timeout", "nan"], "--timeout"),
        (["--workers", "0"], "--workers"),
        (["--budget", "-5"], "--budget"),
        (["--cut-limit", "inf"], "--cut-limit"),
        (["--memory-mb", "0"], "--memory-mb"),
        (["--model", "sim", "--cost-limit", "-1"], "--cost-limit"),
        (["verify", "--model", "sim", "--limit", "-2"], "--limit"),
        (["voting", "--model", "sim", "--grid", "0.2,x"], "--grid"),  # was a traceback
    ],
)
def test_numbers_out_of_range_are_usage_errors(
    argv: list[str], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every bench usage error is one line with one prefix, as argparse's own for bench (``bench
    --workers 0`` said ``utdebug: error: ...``, others ``utdebug bench: ...``)."""
    from utdebug.cli import main

    assert main(["bench", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("utdebug bench: error: ")
    assert option in err and err.endswith("('utdebug bench --help' lists the options)\n")


def test_limit_0_runs_nothing(data_dir: Path, tmp_path: Path) -> None:
    r = utdebug("bench", "--limit", "0", "--data-dir", str(data_dir), "--out", str(tmp_path),
                "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["splits"]["hard"]["summary"] == {}


def test_a_closed_stdout_ends_quietly_with_141(tmp_path: Path) -> None:
    # The reader is gone before anything is written (``| head`` that has read enough).
    proc = subprocess.Popen(
        [sys.executable, "-m", "utdebug", "bench", "b4-sim", "--trials", "20", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert "Traceback" not in err and "BrokenPipeError" not in err
    assert "Exception ignored" not in err


@pytest.mark.parametrize(
    "argv",
    [["doctor"], ["models"], ["bench", "b4-sim", "--trials", "20"]],
    ids=["doctor", "models", "b4-sim"],
)
def test_a_closed_stdout_exits_141_for_human_readable_output(argv: list[str]) -> None:
    """Tables and reports go through rich, whose own handler of a closed stdout exits 1
    (which ``check`` uses for findings): every command ends with 141 instead."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "utdebug", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_OFFLINE_MODE": "true"},
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert "Traceback" not in err and "Exception ignored" not in err


def test_a_full_disk_is_one_line_exit_2_and_a_rerun_resumes(data_dir: Path, tmp_path: Path) -> None:
    """The real command under a file-size limit (RLIMIT_FSIZE: writes past it fail with
    EFBIG, as writes to a full disk fail with ENOSPC): one line naming the file and the cause,
    exit 2, only whole records, a summary marked incomplete; with room again, it resumes."""
    out = tmp_path / "run"
    args = [
        "bench", "--split", "hard", "--problems", "6,7,9,11", "--workers", "1",
        "--data-dir", str(data_dir), "--out", str(out),
    ]  # fmt: skip
    limited = (
        "import resource, runpy, sys\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4000, resource.RLIM_INFINITY))\n"
        "sys.argv = ['utdebug', *sys.argv[1:]]\n"
        "runpy.run_module('utdebug', run_name='__main__')\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", limited, *args], capture_output=True, text=True, timeout=300
    )
    samples = out / SAMPLES
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and "OSError" not in r.stderr, r.stderr
    lines = [line for line in r.stderr.splitlines() if line.startswith("utdebug bench:")]
    assert lines == [
        f"utdebug bench: cannot write {samples}: File too large (EFBIG); finished problems are "
        "kept: make room and rerun the same command to resume"
    ], r.stderr
    data = samples.read_bytes()
    kept = read_samples(samples)
    assert 1 <= len(kept) < 4 and data.endswith(b"\n") and data.count(b"\n") == len(kept)
    summary = json.loads((out / SUMMARY).read_text())["hard:code"]
    assert summary["complete"] is False and summary["problems"] == len(kept)
    assert "File too large" in summary["incomplete"]
    again = utdebug(*args, "--json")
    assert again.returncode == 0, again.stderr
    hard = json.loads(again.stdout)["splits"]["hard"]
    assert hard["resumed"] == len(kept) and hard["evaluated_now"] == 4 - len(kept)
    assert hard["summary"]["complete"] is True and "incomplete" not in hard["summary"]


def test_limit_kind_wall_is_recorded_and_runs_apart(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from utdebug.cli import main

    argv = ["bench", "--problems", "6", "--data-dir", str(data_dir), "--out", str(tmp_path)]
    assert main([*argv, "--limit-kind", "wall", "--json"]) == 0
    wall = json.loads(capsys.readouterr().out)
    assert wall["limit_kind"] == "wall"
    assert wall["splits"]["hard"]["summary"]["limit_kind"] == "wall"
    assert main(argv) == 0  # the default, CPU time: not resumed from the wall-clock record
    table = capsys.readouterr().out
    assert "2 s of CPU time per input" in table and "hard: resumed:" not in table
    kinds = [r["limit_kind"] for r in read_samples(tmp_path / SAMPLES)]
    assert kinds == ["wall", "cpu"]
    assert json.loads((tmp_path / SUMMARY).read_text())["hard:code"]["limit_kind"] == "cpu"


def test_plain_table_says_what_code_ran_and_a_resumed_run_says_so(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from utdebug.cli import main

    argv = ["bench", "--problems", "6,7", "--data-dir", str(data_dir), "--out", str(tmp_path)]
    assert main(argv) == 0
    first = " ".join(capsys.readouterr().out.split())
    assert "given (buggy) code on the private tests" in first and "code code" not in first
    assert "resumed:" not in first
    assert main([*argv, "--gold"]) == 0
    assert "gold code on the private tests" in " ".join(capsys.readouterr().out.split())
    assert main(argv) == 0
    # Words, whatever the width the output was wrapped at (a long temporary path moves them).
    again = " ".join(capsys.readouterr().out.split())
    # Nothing ran: the table says 0 run now and 2 resumed, and a line says what that means.
    assert "hard: resumed: 2 problems were already recorded" in again
    assert "0 ran now" in again and "(the wall time of this command)" in again


def test_doctor_reports_every_layer_active() -> None:
    # CI installs bubblewrap and pyseccomp and runs as root: there, every layer must be on.
    if not os.environ.get("CI") and (shutil.which("bwrap") is None or os.geteuid() != 0):
        pytest.skip("needs bubblewrap and root (required when CI is set)")
    r = utdebug("doctor", "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["mode"] == "bwrap" and rep["probe_ok"] is True and rep["missing"] == []
    assert all(v["active"] for v in rep["layers"].values())


def test_doctor_without_bwrap_names_what_is_missing() -> None:
    r = utdebug("doctor", "--no-bwrap")
    assert "pidns" in r.stdout
    if os.geteuid() == 0:
        # Root without bubblewrap: the tmpfs fallback; the PID namespace is what is missing.
        assert r.returncode == 3
        assert "missing layers" in r.stdout and "--allow-weak-sandbox" in r.stdout
        ok = utdebug("doctor", "--no-bwrap", "--allow-weak-sandbox")
        assert ok.returncode == 0


def test_one_unreadable_split_does_not_stop_the_others(data_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    shutil.copy(data_dir / "MBPP+Fix_hard_test.jsonl", folder)
    (folder / "humanevalpack_python.jsonl").mkdir()  # unreadable as a file
    shutil.copy(data_dir / "HumanEvalPlus.jsonl.gz", folder)
    r = utdebug(
        "bench", "--split", "he", "--split", "hard", "--limit", "2", "--data-dir", str(folder),
        "--out", str(tmp_path / "o"), "--json",
    )  # fmt: skip
    assert r.returncode == 2
    assert "humanevalpack_python.jsonl" in r.stderr and "Traceback" not in r.stderr
    payload = json.loads(r.stdout)
    assert list(payload["splits"]) == ["hard"]
    assert payload["splits"]["hard"]["summary"]["problems"] == 2


def test_no_bench_module_reads_the_command_line() -> None:
    """The bench modes read the frozen BenchOptions that bench_cmd parses, never an argparse
    namespace (there were 203 ``args.`` reads); the speed scripts under perf/ are scripts of
    their own and are not looked at."""
    import re

    folder = Path(__file__).resolve().parents[1] / "benchmarks"
    reads = {
        path.name: len(re.findall(r"(?<![\w.])args\.", path.read_text(encoding="utf-8")))
        for path in sorted(folder.glob("*.py"))
    }
    assert len(reads) > 15
    assert {name: n for name, n in reads.items() if n} == {}


def test_each_mode_has_a_run_function_of_its_own() -> None:
    """Five modes pointed at one run that dispatched again on the mode: each row now names its
    own function, and every function a row names exists."""
    from utdebug.benchmarks.modes import MODES, Mode

    entries = [e for m in MODES.values() for e in (m.plain, m.with_model, m.with_models) if e]
    assert len(entries) == len(set(entries))
    for entry in entries:
        assert callable(Mode.load(entry)), entry


def test_importing_the_core_loads_no_ui_or_model_library() -> None:
    code = (
        "import sys, utdebug, utdebug.sandbox, utdebug.benchmarks.evaluator, utdebug.cli,"
        " utdebug.engine, utdebug.agents.config, utdebug.benchmarks.model_bench,"
        " utdebug.benchmarks.bench, utdebug.distributed;"
        "bad = [m for m in ('textual', 'litellm', 'ray') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_keeps_finished_records_and_rerun_resumes(
    data_dir: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    problems = "6,7,9,11,12,16,20,58,61,63,68,123"
    cmd = [
        sys.executable, "-m", "utdebug", "bench", "--split", "hard", "--problems", problems,
        "--workers", "1", "--timeout", "0.3", "--data-dir", str(data_dir), "--out", str(tmp_path),
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint
    )
    samples = tmp_path / SAMPLES
    while_running(proc, lambda: len(read_samples(samples)) >= 2, "two records written")
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    kept = read_samples(samples)
    assert 2 <= len(kept) < 12
    assert samples.read_bytes().endswith(b"\n")  # only whole records
    summary = json.loads((tmp_path / SUMMARY).read_text())["hard:code"]
    assert summary["complete"] is False and summary["problems"] == len(kept)
    again = subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    hard = json.loads(again.stdout)["splits"]["hard"]
    assert hard["resumed"] == len(kept) and hard["evaluated_now"] == 12 - len(kept)
    assert hard["summary"]["problems"] == 12 and hard["summary"]["complete"] is True


def test_every_bench_option_the_ranking_doc_names_exists() -> None:
    """docs/ranking.md documents ``bench`` (judge, verify, b4-sim, --candidates): every option
    it names is one the command accepts."""
    import argparse
    import re

    from utdebug.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    known = {s for a in sub.choices["bench"]._actions for s in a.option_strings}
    doc = (Path(__file__).resolve().parents[1] / "docs" / "ranking.md").read_text()
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*[a-z0-9](?![\w*-])", doc))
    assert named and named <= known, sorted(named - known)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_doctor_without_bwrap_does_not_say_install_it_when_it_is_installed() -> None:
    r = utdebug("doctor", "--no-bwrap", "--allow-weak-sandbox")
    assert r.returncode in (0, 3), r.stderr
    assert "install bubblewrap" not in r.stdout
    j = json.loads(utdebug("doctor", "--no-bwrap", "--json").stdout)
    assert j["mode"] != "bwrap"
    for layer in ("pidns", "mount", "netns"):
        assert "install bubblewrap" not in j["hints"].get(layer, "")
    if "pidns" in j["hints"]:
        assert "drop --no-bwrap" in j["hints"]["pidns"]


def test_a_mistyped_option_is_named_before_the_value_it_takes() -> None:
    r = utdebug("bench", "--splitt", "hard")
    assert r.returncode == 2
    last = r.stderr.strip().splitlines()[-1]
    assert "unrecognized option --splitt (did you mean --split?)" in last, last
    assert "invalid choice" not in r.stderr


def test_an_out_that_is_no_folder_is_not_told_to_make_room(data_dir: Path, tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    for out in (a_file, Path("/proc/utdebug-no-such-folder")):
        r = utdebug("bench", "--limit", "1", "--data-dir", str(data_dir), "--out", str(out))
        assert r.returncode == 2, r.stderr
        last = r.stderr.strip().splitlines()[-1]
        assert "make room" not in last and "--out must name a folder" in last, last


def test_a_checkpoint_error_is_said_in_full(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from utdebug.benchmarks.checkpoints import Checkpoint, _print_selection

    error = (
        "openai/gpt-4o-mini: no API key: set OPENAI_API_KEY (export OPENAI_API_KEY=...), or "
        "name another variable with api_key_env in the utdebug config."
    )
    out = Console(width=100, record=True, file=io.StringIO())
    _print_selection(out, {"hard": [Checkpoint("openai/gpt-4o-mini", error=error)]}, as_json=False)
    text = " ".join(out.export_text().split())
    assert error in text


# --- what a new user hit on the command line (issue 29) ----------------------------------------


def test_a_bad_value_is_one_line_not_the_whole_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from utdebug.cli import main

    with pytest.raises(SystemExit) as e:
        main(["bench", "--split", "nope"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "usage:" not in err
    assert err.startswith("utdebug bench: error: argument --split: invalid choice: 'nope'")
    assert "'utdebug bench --help' lists the options" in err


@pytest.mark.parametrize("mode", ["intrinsic", "ablation"])
def test_a_mode_without_a_model_says_what_to_pass(
    mode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from utdebug.cli import main

    assert main(["bench", mode, "--split", "hard"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "usage:" not in err
    assert err.startswith(
        f"utdebug bench: error: bench {mode} needs --model: --model sim for an offline try"
    )


def test_ctrl_c_says_that_rerunning_goes_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from utdebug import check_cmd
    from utdebug.cli import main

    def interrupted(args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(check_cmd, "run", interrupted)
    assert main(["check", "--changed"]) == 130
    assert capsys.readouterr().err == (
        "interrupted: the functions checked so far are cached; rerun the same command to go on\n"
    )


def test_problems_at_once_is_named_for_what_it_is_and_the_old_name_still_works() -> None:
    from utdebug.cli import build_parser

    parser = build_parser()
    new = parser.parse_args(["bench", "--model", "sim", "--problems-at-once", "3"])
    old = parser.parse_args(["bench", "--model", "sim", "--concurrency", "5"])
    assert (new.concurrency, old.concurrency) == (3, 5)
    bench = next(
        a
        for a in parser._subparsers._group_actions[0].choices["bench"]._actions  # type: ignore[union-attr]
        if a.dest == "concurrency"
    )
    assert "problems debugged at once" in (bench.help or "")
