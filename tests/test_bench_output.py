"""What ``utdebug bench`` shows: the live traffic of a slow model on the progress line, and the
tables' words."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from testkit.wait import poll

from utdebug.agents.traffic import traffic_for
from utdebug.benchmarks import bench
from utdebug.benchmarks.bench import ProgressLog, recorded_progress, traffic_line
from utdebug.benchmarks.debugging import DebugRun
from utdebug.benchmarks.report import outcome_words, print_voting
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
    with recorded_progress("hard utgen", console, 8, outcome_words):
        poll(lambda: "0/1 in flight" in buf.getvalue(), "the idle line drawn")
        t.started()  # a call goes out; no problem finishes, nobody updates the task
        # drawn by the display's own refresh, before it stops
        poll(lambda: "1/1 in flight" in buf.getvalue(), "the call in flight drawn")


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


class _Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _record(task_id: str, finish: str = "all_pass") -> dict[str, Any]:
    return {"task_id": task_id, "finish": finish, "rounds": [{"all_pass": finish == "all_pass"}]}


def test_without_a_terminal_the_progress_names_the_problems_still_running() -> None:
    """A CI log sat at "161/170 done" for three minutes without saying which problems were
    still running: the line names them, the longest-running first, with their times."""
    clock = _Clock()
    console = Console(file=io.StringIO(), force_terminal=False, width=80, color_system=None)
    log = ProgressLog("[bold]hard[/bold] utgen", 170, console, outcome_words, clock)
    for i in range(1, 9):  # eight start, five seconds apart
        log.on_record("start", {"task_id": f"hard/{i}"})
        clock.now += 5
    log.on_record("done", _record("hard/1"))
    log.on_record("error", {"task_id": "hard/3", "error_kind": "model"})
    clock.now += 120
    assert log.line() == (
        "hard utgen: 2/170 done · running: hard/2 (2:35), hard/4 (2:25), hard/5 (2:20), "
        "hard/6 (2:15), hard/7 (2:10), +1 more · last: hard/3 model error · 2:40 elapsed"
    )
    for i in (2, 4, 5, 6, 7, 8):
        log.on_record("done", _record(f"hard/{i}", "does_not_load"))
    assert log.line() == (
        "hard utgen: 8/170 done · last: hard/8 not solved (does not load) · 2:40 elapsed"
    )


def test_without_a_terminal_no_bar_is_written_and_the_end_is_one_line() -> None:
    """The final progress bar was written into the log; now the run's last line is plain."""
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False, width=80, color_system=None)
    with recorded_progress("[bold]hard[/bold] utgen", console, 2, outcome_words) as on_record:
        for t in ("hard/6", "hard/7"):
            on_record("start", {"task_id": t})
        on_record("done", _record("hard/6"))
        on_record("skipped", {"task_id": "hard/7"})
    text = buf.getvalue()
    assert "━" not in text and "\r" not in text and "\x1b" not in text
    assert text.splitlines() == ["hard utgen: 2/2 done · last: hard/7 · 0:00 elapsed"]


def test_without_a_terminal_a_line_comes_every_log_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "LOG_SECONDS", 0.01)
    said = threading.Event()
    say = ProgressLog.say

    def say_and_tell(self: ProgressLog) -> None:
        say(self)
        said.set()

    monkeypatch.setattr(ProgressLog, "say", say_and_tell)
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False, width=80, color_system=None)
    with recorded_progress("hard utgen", console, 8, outcome_words) as on_record:
        on_record("start", {"task_id": "hard/12"})
        assert said.wait(30)  # said by the logger, while the run goes on
    lines = buf.getvalue().splitlines()
    assert len(lines) >= 2  # at least one while running, and the last one
    assert lines[0].startswith("hard utgen: 0/8 done · running: hard/12 (0:0")


def test_on_a_terminal_the_bar_is_drawn_in_place_and_no_line_is_said() -> None:
    shown = io.StringIO()
    terminal = Console(file=shown, force_terminal=True, width=200, color_system=None)
    with recorded_progress("hard utgen", terminal, 8, outcome_words) as on_record:
        on_record("start", {"task_id": "hard/[red]6"})
        on_record("done", _record("hard/[red]6"))
    text = shown.getvalue()
    assert "hard utgen:" not in text and "1/8" in text
    assert "hard/[red]6 solved" in text  # a task id is shown as it is, not read as markup


def test_the_pool_says_when_each_job_starts_before_it_comes_back() -> None:
    """Plain evaluation's progress names the problems still running: it hears of each job as
    the pool hands it to a worker (``started``), before its result."""
    from testkit.distributed_jobs import fails_on_odd

    from utdebug.distributed import LocalPool, PoolOptions
    from utdebug.sandbox import SandboxConfig

    events: list[tuple[str, int]] = []

    def started(job: int) -> None:
        events.append(("start", job))

    with LocalPool(PoolOptions(SandboxConfig(), concurrency=2)) as runner:
        for job, _ in runner.map(fails_on_odd, list(range(6)), started=started):
            events.append(("end", job))
    assert sorted(j for k, j in events if k == "start") == list(range(6))
    for job in range(6):
        assert events.index(("start", job)) < events.index(("end", job))
    assert [k for k, _ in events[:2]] == ["start", "start"]  # two in flight at once
