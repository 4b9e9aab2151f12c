"""The evaluator and run records: verdicts per input, resume, summaries, bad rows."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
from testkit import sandbox as H

from utdebug.benchmarks.evaluator import SplitData, evaluate_split
from utdebug.data.datasets import (
    PrivateTests,
    Problem,
    ProblemError,
    Provenance,
    Split,
)
from utdebug.data.private_tests import EvalSettings, ExpectedCache, WhichCode
from utdebug.runs.records import (
    SAMPLES,
    SUMMARY,
    RunFolderError,
    SampleWriter,
    read_samples,
    summarize,
    write_json_atomic,
    write_summary,
)
from utdebug.sandbox import CheckSpec, LimitKind, Limits, Sandbox, Semantics

GOLD_ADD = "def add(a, b):\n    return a + b\n"


def make_problem(
    number: int,
    code: str,
    *,
    inputs: tuple[tuple[object, ...], ...] = ((1, 2), (3, 4), (10, -3)),
    expected: tuple[object, ...] | None = (3, 7, 7),
    gold: str = GOLD_ADD,
    entry: str = "add",
    check: CheckSpec | None = None,
    split: Split = Split.HARD,
) -> Problem:
    return Problem(
        split=split,
        task_id=f"{split.value}/{number}",
        number=number,
        prompt="Add two numbers.",
        signature=f"{entry}(a, b)",
        entry_point=entry,
        code=code,
        gold=gold,
        tests=PrivateTests(inputs, expected, check or CheckSpec()),
        test_list=(),
        provenance=Provenance("synthetic.jsonl", number, "0" * 64),
    )


SETTINGS = EvalSettings(limits=Limits(per_input=1.0, load=5.0))


def run(sb: Sandbox, problems: list[Problem], out: Path, **kw: object) -> dict[str, object]:
    data = SplitData(
        Split.HARD,
        problems,
        {"synthetic.jsonl": "0" * 64},
        kw.pop("errors", []),  # type: ignore[arg-type]
    )
    res = evaluate_split(
        sb,
        data,
        kw.pop("program", WhichCode.CODE),  # type: ignore[arg-type]
        kw.pop("settings", SETTINGS),  # type: ignore[arg-type]
        out,
        workers=kw.pop("workers", 2),  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )
    return {"run": res, "summary": next(iter(res.summary.values()))}


def test_verdicts_per_input_and_summary(sb: Sandbox, tmp_path: Path) -> None:
    problems = [
        make_problem(1, GOLD_ADD),
        make_problem(2, "def add(a, b):\n    return a - b if a > 5 else a + b\n"),
        make_problem(
            3, "def add(a, b):\n    if a == 3:\n        while True: pass\n    return a + b\n"
        ),
        make_problem(4, "def add(a, b):\n    return [a][b]\n"),
    ]
    out = run(sb, problems, tmp_path)
    recs = {r["task_id"]: r for r in read_samples(tmp_path / SAMPLES)}
    assert recs["hard/1"]["verdicts"] == "PPP"
    assert recs["hard/2"]["verdicts"] == "PPF"
    assert recs["hard/2"]["details"][0]["detail"] == "returned 13"
    assert recs["hard/3"]["verdicts"] == "PTP"
    assert recs["hard/4"]["verdicts"] == "FFF"
    assert recs["hard/4"]["details"][0]["detail"].startswith("raised IndexError")
    s = out["summary"]
    assert s["problems"] == 4 and s["tests"] == 12
    assert s["pass_at_1"] == pytest.approx(0.25)
    assert s["mean_pass_fraction"] == pytest.approx((1 + 2 / 3 + 2 / 3 + 0) / 4)
    assert s["timeouts"] == 1 and s["problems_with_timeouts"] == ["hard/3"]
    on_disk = json.loads((tmp_path / SUMMARY).read_text())
    assert on_disk == out["run"].summary  # type: ignore[attr-defined]


def test_resume_skips_recorded_problems(sb: Sandbox, tmp_path: Path) -> None:
    problems = [make_problem(i, GOLD_ADD) for i in range(1, 5)]
    first = run(sb, problems[:2], tmp_path)
    assert first["run"].evaluated == 2  # type: ignore[attr-defined]
    second = run(sb, problems, tmp_path)
    assert second["run"].evaluated == 2 and second["run"].skipped == 2  # type: ignore[attr-defined]
    assert len(read_samples(tmp_path / SAMPLES)) == 4
    assert second["summary"]["problems"] == 4  # type: ignore[index]
    # Other settings are other keys: nothing is skipped and the summary holds only them.
    other = EvalSettings(semantics=Semantics.REFERENCE, limits=Limits(per_input=1.0))
    third = run(sb, problems, tmp_path, settings=other)
    assert third["run"].evaluated == 4  # type: ignore[attr-defined]
    assert third["summary"]["problems"] == 4  # type: ignore[index]


def test_the_limit_kind_is_in_every_key_record_and_summary(sb: Sandbox, tmp_path: Path) -> None:
    cpu = SETTINGS
    wall = EvalSettings(limits=Limits(per_input=1.0, load=5.0, kind=LimitKind.WALL))
    assert cpu.limits.kind is LimitKind.CPU  # the default
    assert cpu.key_parts()["limit_kind"] == "cpu" and wall.key_parts()["limit_kind"] == "wall"
    assert {k: v for k, v in cpu.key_parts().items() if k != "limit_kind"} == {
        k: v for k, v in wall.key_parts().items() if k != "limit_kind"
    }
    problems = [make_problem(i, GOLD_ADD) for i in range(1, 3)]
    first = run(sb, problems, tmp_path, settings=cpu)
    assert first["summary"]["limit_kind"] == "cpu"  # type: ignore[index]
    # Runs of the two kinds never resume into each other: the wall-clock run evaluates all.
    second = run(sb, problems, tmp_path, settings=wall)
    assert second["run"].evaluated == 2 and second["run"].skipped == 0  # type: ignore[attr-defined]
    assert second["summary"]["limit_kind"] == "wall"  # type: ignore[index]
    recs = read_samples(tmp_path / SAMPLES)
    assert sorted(r["limit_kind"] for r in recs) == ["cpu", "cpu", "wall", "wall"]
    assert len({r["key"] for r in recs}) == 4
    # Records written before the kind was recorded were made under wall-clock limits.
    old = {k: v for k, v in recs[0].items() if k != "limit_kind"}
    assert summarize([old])["hard:code"]["limit_kind"] == "wall"


def test_torn_tail_from_a_crash_is_dropped_and_rerun(sb: Sandbox, tmp_path: Path) -> None:
    problems = [make_problem(i, GOLD_ADD) for i in range(1, 4)]
    run(sb, problems, tmp_path)
    path = tmp_path / SAMPLES
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2]) + lines[2][:25])  # the last write was cut short
    assert len(read_samples(path)) == 2
    again = run(sb, problems, tmp_path)
    assert again["run"].evaluated == 1  # type: ignore[attr-defined]
    assert len(read_samples(path)) == 3
    assert all(line.endswith(b"\n") for line in path.read_bytes().splitlines(keepends=True))


def test_bad_rows_are_recorded_and_the_run_goes_on(sb: Sandbox, tmp_path: Path) -> None:
    problems = [
        make_problem(1, "def add(a, b):\n    return a +\n"),  # syntax error in the code
        make_problem(2, "def plus(a, b):\n    return a + b\n"),  # no such entry point
        make_problem(3, GOLD_ADD),
    ]
    errors = [
        ProblemError(Split.HARD, "x.jsonl", 9, "hard/9", "test script: cannot extract inputs")
    ]
    out = run(sb, problems, tmp_path, errors=errors)
    recs = {r["task_id"]: r for r in read_samples(tmp_path / SAMPLES)}
    assert recs["hard/1"]["load_error"].startswith("SyntaxError")
    assert recs["hard/1"]["passed"] == 0
    assert "add" in recs["hard/2"]["load_error"]
    assert recs["hard/3"]["all_pass"]
    assert recs["hard/9"]["error"] == "x.jsonl, row 9: test script: cannot extract inputs"
    s = out["summary"]
    assert s["problem_errors"] == 1 and s["evaluated"] == 3  # type: ignore[index]
    assert s["errors"] == [{"task_id": "hard/9", "error": recs["hard/9"]["error"]}]  # type: ignore[index]


def test_gold_program_and_expected_from_gold(sb: Sandbox, tmp_path: Path) -> None:
    # HE-style: no expected values in the data; they come from the gold solution (cached).
    p = make_problem(5, "def add(a, b):\n    return a * b\n", expected=None, split=Split.HE)
    cache = ExpectedCache(tmp_path / "cache")
    res = evaluate_split(
        sb, SplitData(Split.HE, [p], {}), WhichCode.CODE, SETTINGS, tmp_path / "run",
        expected_cache=cache,
    )  # fmt: skip
    rec = read_samples(tmp_path / "run" / SAMPLES)[0]
    assert rec["verdicts"] == "FFF"  # 2, 12, -30 against 3, 7, 7
    assert cache.get(p) == [3, 7, 7]
    gold = evaluate_split(
        sb, SplitData(Split.HE, [p], {}), WhichCode.GOLD, SETTINGS, tmp_path / "gold",
        expected_cache=cache,
    )  # fmt: skip
    assert next(iter(gold.summary.values()))["pass_at_1"] == 1.0
    assert res.evaluated == 1


def test_gold_that_fails_is_a_problem_error(sb: Sandbox, tmp_path: Path) -> None:
    p = make_problem(
        6, GOLD_ADD, expected=None, gold="def add(a, b):\n    raise ValueError('no')\n"
    )
    res = evaluate_split(
        sb, SplitData(Split.HE, [p], {}), WhichCode.CODE, SETTINGS, tmp_path,
        expected_cache=ExpectedCache(None),
    )  # fmt: skip
    rec = read_samples(tmp_path / SAMPLES)[0]
    assert "gold solution gave no value for 3 input(s)" in rec["error"]
    assert next(iter(res.summary.values()))["problem_errors"] == 1


def test_summarize_from_records_alone() -> None:
    recs = [
        {"split": "hard", "program": "code", "task_id": "hard/2", "n_tests": 4, "passed": 4,
         "all_pass": True, "timeouts": 0, "crashes": 0, "error": None},
        {"split": "hard", "program": "code", "task_id": "hard/10", "n_tests": 2, "passed": 1,
         "all_pass": False, "timeouts": 1, "crashes": 0, "error": None},
        {"split": "hard", "program": "code", "task_id": "hard/3", "n_tests": 0, "passed": 0,
         "all_pass": False, "timeouts": 0, "crashes": 0, "error": "bad row"},
    ]  # fmt: skip
    s = summarize(recs)["hard:code"]
    assert s["problems"] == 3 and s["evaluated"] == 2 and s["tests"] == 6
    assert s["mean_pass_fraction"] == pytest.approx(0.75)
    assert s["pass_at_1"] == pytest.approx(0.5)
    assert s["not_all_pass"] == ["hard/10"]


def test_sample_writer_appends_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with SampleWriter(path) as w:
        w.write({"a": 1})
    path.write_bytes(path.read_bytes() + b'{"a": 2')  # torn
    with SampleWriter(path) as w:
        w.write({"a": 3})
    assert [r["a"] for r in read_samples(path)] == [1, 3]


def _disk_fills_after(monkeypatch: pytest.MonkeyPatch, room: int, err: int = errno.ENOSPC) -> None:
    """``os.write`` as on a disk with ``room`` bytes left: a short write, then ``err``."""
    real_write = os.write
    left = [room]

    def write(fd: int, data: bytes | memoryview) -> int:
        if left[0] <= 0:
            raise OSError(err, os.strerror(err))
        n = real_write(fd, bytes(data[: left[0]]))
        left[0] -= n
        return n

    monkeypatch.setattr(os, "write", write)


def test_a_full_disk_leaves_only_whole_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    with SampleWriter(path) as w:
        w.write({"a": 1})
    whole = path.read_bytes()
    _disk_fills_after(monkeypatch, 10)
    with SampleWriter(path) as w, pytest.raises(RunFolderError) as got:
        w.write({"a": 2, "pad": "x" * 100})
    # One line naming the file and the cause; the part that was written is cut off again.
    msg = str(got.value)
    assert msg == f"cannot write {path}: No space left on device (ENOSPC)" and "\n" not in msg
    assert got.value.errno == errno.ENOSPC and got.value.path == path
    assert path.read_bytes() == whole
    monkeypatch.undo()
    with SampleWriter(path) as w:  # with room again, the file goes on from a whole line
        w.write({"a": 3})
    assert [r["a"] for r in read_samples(path)] == [1, 3]


def test_a_failed_fsync_takes_the_record_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"

    def fsync(fd: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    with SampleWriter(path) as w:
        w.write({"a": 1})
        monkeypatch.setattr(os, "fsync", fsync)
        with pytest.raises(RunFolderError, match=r"Input/output error \(EIO\)"):
            w.write({"a": 2})
    assert [r["a"] for r in read_samples(path)] == [1]
    assert path.read_bytes().endswith(b"\n")


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_atomic_writes_give_the_mode_of_a_new_file(tmp_path: Path, umask: int, mode: int) -> None:
    # A temporary file renamed into place would stay 0o600 whatever the umask: a summary
    # (or a card, a shard) that others on the machine cannot read.
    old = os.umask(umask)
    try:
        write_json_atomic(tmp_path / SUMMARY, {"a": 1})
        write_json_atomic(tmp_path / SUMMARY, {"a": 2})  # replacing a file: the same mode
    finally:
        os.umask(old)
    assert (tmp_path / SUMMARY).stat().st_mode & 0o777 == mode
    assert json.loads((tmp_path / SUMMARY).read_text()) == {"a": 2}


def test_a_summary_that_cannot_be_written_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / SUMMARY
    write_json_atomic(path, {"old": True})
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(RunFolderError, match="No space left on device"):
        write_json_atomic(path, {"new": True})
    assert json.loads(path.read_text()) == {"old": True}
    assert sorted(p.name for p in tmp_path.iterdir()) == [SUMMARY]
    # Writing the summary of a run that stopped on a full disk: marked incomplete if it can
    # be written, and the first failure is the one reported if it cannot.
    failure = RunFolderError(tmp_path / SAMPLES, OSError(errno.ENOSPC, "No space left on device"))
    write_summary(path, {"complete": True}, failure)  # fsync still fails: no second error
    monkeypatch.setattr(os, "fsync", real_fsync)
    summary: dict[str, object] = {"g:1": {"complete": True}}
    write_summary(path, summary, failure, [summary["g:1"]])  # type: ignore[list-item]
    on_disk = json.loads(path.read_text())["g:1"]
    assert on_disk["complete"] is False and "No space left on device" in on_disk["incomplete"]


def test_a_full_disk_stops_the_split_with_a_summary_marked_incomplete(
    sb: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    problems = [make_problem(i, GOLD_ADD) for i in range(1, 7)]
    # Room for about two records; the summary (written with fsync'd json.dump) still fits.
    import utdebug.runs.records as records

    real_write = os.write
    room = [0]

    def write(fd: int, data: bytes | memoryview) -> int:
        if room[0] <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        n = real_write(fd, bytes(data[: room[0]]))
        room[0] -= n
        return n

    class Os:  # the records module's view of ``os``: only its writes see the full disk
        def __getattr__(self, name: str) -> object:
            return write if name == "write" else getattr(os, name)

    room[0] = 1500  # a record here is about 600 bytes
    monkeypatch.setattr(records, "os", Os())
    with pytest.raises(RunFolderError, match="No space left on device"):
        run(sb, problems, tmp_path, workers=1)
    kept = read_samples(tmp_path / SAMPLES)
    data = (tmp_path / SAMPLES).read_bytes()
    assert 0 < len(kept) < 6 and data.endswith(b"\n") and data.count(b"\n") == len(kept)
    summary = json.loads((tmp_path / SUMMARY).read_text())["hard:code"]
    assert summary["complete"] is False and summary["problems"] == len(kept)
    assert "No space left on device" in summary["incomplete"]
    monkeypatch.undo()
    again = run(sb, problems, tmp_path)
    assert again["run"].skipped == len(kept)  # type: ignore[attr-defined]
    assert again["summary"]["problems"] == 6 and again["summary"]["complete"] is True  # type: ignore[index]


def test_batch_budget_bounds_a_problem_that_times_out_everywhere(sb: Sandbox) -> None:
    code = "def f(x):\n    while True:\n        pass\n"
    lim = Limits(per_input=0.2, batch=1.0)
    res = sb.run(code, "f", [[i] for i in range(40)], lim)
    assert len(res.outcomes) == 40
    assert all(o.status.value == "timeout" for o in res.outcomes)
    ran = [o for o in res.outcomes if not (o.error or "").startswith("not run")]
    assert 3 <= len(ran) <= 6  # about 1 s of 0.2 s timeouts, then the budget is spent
    # the budget is CPU time: the children used about 1 s of it whatever the load; the wall
    # clock only gets a backstop with room for a loaded machine
    H.cpu_stopped(res, lim, 1.0)
    assert res.wall_seconds < H.roomy(2.5)
    assert any("budget" in n for n in res.notes)


def test_batch_budget_also_stops_a_hang_the_timer_cannot_break(sb: Sandbox) -> None:
    code = (
        "import signal\n"
        "def f(x):\n"
        "    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
        "    while True:\n"
        "        pass\n"
    )
    lim = Limits(per_input=5.0, batch=1.0)
    res = sb.run(code, "f", [[i] for i in range(10)], lim)
    H.cpu_stopped(res, lim, 1.0)  # stopped at the budget's 1 s of CPU time, whatever the load
    assert res.wall_seconds < H.roomy(2.5)
    assert "budget ran out" in (res.outcomes[0].error or "")
    assert all((o.error or "").startswith("not run") for o in res.outcomes[1:])
