"""What ``utdebug bench`` shows: the live traffic of a slow model on the progress line, and the
tables' words."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from rich.console import Console

from utdebug.agents.traffic import traffic_for
from utdebug.benchmarks.bench import progress_bar, traffic_line
from utdebug.benchmarks.debugging import DebugRun
from utdebug.benchmarks.report import print_voting
from utdebug.data.datasets import Split


def test_no_model_server_no_traffic_line() -> None:
    # Plain evaluation, the simulated and the scripted models register no server.
    assert traffic_line() == ""


def test_the_traffic_line_says_calls_in_flight_limit_speed_and_time_per_call() -> None:
    t = traffic_for("http://127.0.0.1:8080/v1", limit=2)
    assert traffic_line() == "model: 0/2 in flight"
    start = t.started()
    time.sleep(0.06)
    t.finished(start, 30, ok=True)
    t.started()  # one call still running
    line = traffic_line()
    assert line.startswith("model: 1/2 in flight, ") and "tok/s" in line
    assert line.endswith(" s/call")
    traffic_for("https://api.example.com/v1", limit=8)
    both = traffic_line()  # two servers (a --ut-model elsewhere): each named
    assert "127.0.0.1:8080/v1: 1/2 in flight" in both
    assert " | api.example.com/v1: 0/8 in flight" in both


def test_the_progress_line_refreshes_while_no_problem_finishes() -> None:
    t = traffic_for("http://127.0.0.1:8080/v1", limit=1)
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=200, color_system=None)
    progress = progress_bar("hard utgen", console)
    with progress:
        progress.add_task("debug", total=8, last="")
        time.sleep(0.3)
        seen_idle = "0/1 in flight" in buf.getvalue()
        t.started()  # a call goes out; no problem finishes, nobody updates the task
        time.sleep(1.5)
        during = buf.getvalue()  # drawn by the display's own refresh, before it stops
    assert seen_idle
    assert "1/1 in flight" in during


def test_voting_says_no_change_when_voting_changed_nothing() -> None:
    def run(acc: float) -> DebugRun:
        r = DebugRun(Path("x"))
        r.summary = {"intrinsic": {"output_accuracy": acc, "tests": 10}}
        return r

    runs = [
        ("acc0.3-k8", run(0.2)),
        ("acc0.3-k0", run(0.3)),
        ("acc0.5-k8", run(0.5)),
        ("acc0.5-k0", run(0.5)),
        ("acc0.8-k8", run(0.9)),
        ("acc0.8-k0", run(0.8)),
    ]
    buf = io.StringIO()
    print_voting(Console(file=buf, width=200), Split.HARD, runs, as_json=False)
    rows = {line.split("│")[1].strip(): line for line in buf.getvalue().splitlines() if "%" in line}
    assert "lowers" in rows["30%"]
    assert "no change" in rows["50%"] and "lowers" not in rows["50%"]
    assert "raises" in rows["80%"]


def test_a_problem_not_solved_is_said_so_whatever_its_own_tests_say() -> None:
    from utdebug.benchmarks.report import outcome_words

    solved = {"finish": "all_pass", "rounds": [{"all_pass": False}, {"all_pass": True}]}
    assert outcome_words(solved) == "solved"
    fooled = {"finish": "all_pass", "rounds": [{"all_pass": False}, {"all_pass": False}]}
    assert outcome_words(fooled) == "not solved (its generated tests pass)"
    broken = {"finish": "does_not_load", "rounds": [{"all_pass": False}]}
    assert outcome_words(broken) == "not solved (does not load)"


def test_without_a_terminal_the_progress_is_a_line_a_minute(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A CI log got nothing for 15-26 minutes: rich draws no bar on a file. Now one plain line
    every LOG_SECONDS (here made short), none on a terminal."""
    from utdebug.benchmarks import bench

    monkeypatch.setattr(bench, "LOG_SECONDS", 0.2)
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False, width=200, color_system=None)
    progress = progress_bar("[bold]hard[/bold] utgen", console)
    with progress:
        task = progress.add_task("debug", total=8, last="")
        progress.update(task, advance=3, last="hard/12 not solved (no tests)")
        deadline = time.monotonic() + 30
        while "hard utgen:" not in buf.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
    lines = [line for line in buf.getvalue().splitlines() if line.startswith("hard utgen:")]
    assert lines, buf.getvalue()
    assert lines[0].startswith("hard utgen: 3/8 done · last: hard/12 not solved (no tests) · 0:")
    shown = io.StringIO()
    terminal = Console(file=shown, force_terminal=True, width=200, color_system=None)
    with progress_bar("hard utgen", terminal) as again:
        again.add_task("debug", total=8, last="")
        time.sleep(0.5)
    assert "hard utgen:" not in shown.getvalue()  # the bar itself, drawn in place
