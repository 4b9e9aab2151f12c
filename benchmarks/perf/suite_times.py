"""Where the test suite's time goes: CPU time and wall time per test file.

Run from the repository root::

    .venv/bin/python benchmarks/perf/suite_times.py                   # the README's test command
    .venv/bin/python benchmarks/perf/suite_times.py -- -n 0 tests/test_engine.py
    .venv/bin/python benchmarks/perf/suite_times.py --read runs/suite-times.jsonl

The script runs ``python -m pytest`` (with the arguments after ``--``) and loads itself into
every test process as a pytest plugin (``-p suite_times``). The plugin records, per test file,
the wall time and the CPU time (user + system) of the test process and of the children it
waited for (sandboxes, subprocesses) from the first test's setup to the last one's teardown,
and per process the CPU time spent before the first test (interpreter start, imports,
collection). The script prints lines like these (the figures illustrate the format)::

    SUITE wall 1047.0 s, cpu 2010.4 s, exit 0, load 15.8 (mean of samples), 2 cores
    PHASE start and collection: cpu 61.2 s in 3 processes
    PHASE tests: cpu 1921.0 s in 89 files
    PHASE the rest (the controller, workers' teardown): cpu 28.2 s
    AREA sandbox: 11 files, cpu 410.3 s (21 %), wall 890.1 s
    FILE tests/test_tui.py: 85 tests, cpu 212.4 s (self 150.1 + children 62.3), wall 600.2 s
    TEST tests/test_tui.py::test_whole_session: cpu 12.1 s, wall 30.2 s
    BOUND cpu / cores 1005.2 s; longest file 212.4 s of cpu

On a loaded machine the wall times say little; the CPU times hold whatever the load (a little
higher than on an idle machine). ``BOUND`` is what the suite needs at least on the cores it
had, were it all CPU: the larger of its CPU time over the cores and its longest file (a test
file's tests run in one process). ``--out FILE`` keeps the raw records (one JSON line per
process); ``--read FILE`` prints them again. Nothing here is imported by utdebug or the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ENV = "UTDEBUG_SUITE_TIMES"
"""The file each test process appends its records to (set by the script for the run)."""

AREAS = (
    ("app", ("test_tui", "test_target_kinds", "test_debug_loading", "test_foreign_text")),
    ("sandbox", ("test_sandbox", "test_structured_values", "test_evaluator")),
    ("check", ("test_check",)),
    ("train", ("test_train",)),
    ("static", ("test_static",)),
    ("bench and data", ("test_bench", "test_classeval", "test_datasets", "test_debug_bench")),
    ("model layer", ("test_corpus", "test_parsing", "test_litellm", "test_serving", "test_model")),
    ("engine", ("test_engine", "test_interactive", "test_debugging", "test_admission")),
    ("synth", ("test_synth", "test_utgen_synth")),
)
"""Test files by the area they cover (the first prefix that matches; the rest: other)."""

TOP_TESTS = 25


def cpu() -> tuple[float, float]:
    """(this process, the children it waited for): user + system seconds."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


# --- the plugin (in every test process) ----------------------------------------------------


@dataclass
class Spent:
    tests: int = 0
    wall: float = 0.0
    self_cpu: float = 0.0
    child_cpu: float = 0.0
    slow: int = 0


@dataclass
class Recorder:
    worker: str
    files: dict[str, Spent] = field(default_factory=lambda: defaultdict(Spent))
    tests: list[tuple[float, float, str]] = field(default_factory=list)
    collected: tuple[float, float] = (0.0, 0.0)

    def record(self) -> dict[str, Any]:
        me, kids = cpu()
        return {
            "worker": self.worker,
            "start_cpu": self.collected[0],
            "start_child_cpu": self.collected[1],
            "cpu": me,
            "child_cpu": kids,
            "files": {k: vars(v) for k, v in self.files.items()},
            "tests": sorted(self.tests, reverse=True)[:TOP_TESTS],
        }


_recorder: Recorder | None = None


def pytest_configure(config: Any) -> None:
    global _recorder
    if os.environ.get(ENV):
        _recorder = Recorder(os.environ.get("PYTEST_XDIST_WORKER", "main"))


def pytest_collection_finish(session: Any) -> None:
    if _recorder is not None:
        _recorder.collected = cpu()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: Any, nextitem: Any) -> Generator[None, object, object]:
    if _recorder is None:
        return (yield)
    wall0, (me0, kids0) = time.monotonic(), cpu()
    result = yield
    wall, (me, kids) = time.monotonic() - wall0, cpu()
    spent = _recorder.files[item.nodeid.split("::")[0]]
    spent.tests += 1
    spent.slow += item.get_closest_marker("slow") is not None
    spent.wall += wall
    spent.self_cpu += me - me0
    spent.child_cpu += kids - kids0
    _recorder.tests.append((me - me0 + kids - kids0, wall, item.nodeid))
    return result


def pytest_sessionfinish(session: Any) -> None:
    path = os.environ.get(ENV)
    if _recorder is None or not path or (_recorder.worker == "main" and not _recorder.files):
        return  # the xdist controller runs no test: the script counts it as the rest
    line = json.dumps(_recorder.record()) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


# --- the script ----------------------------------------------------------------------------


def area(path: str) -> str:
    name = Path(path).name
    for label, prefixes in AREAS:
        if name.startswith(prefixes):
            return label
    return "other"


def report(records: list[dict[str, Any]], suite: dict[str, Any]) -> list[str]:
    files: dict[str, dict[str, Any]] = {}
    for r in records:
        for name, s in r["files"].items():
            files[name] = {**s, "cpu": s["self_cpu"] + s["child_cpu"], "worker": r["worker"]}
    test_cpu = sum(f["cpu"] for f in files.values())
    start = sum(r["start_cpu"] + r["start_child_cpu"] for r in records)
    total = suite.get("cpu") or test_cpu + start
    cores = suite.get("cores") or 2
    lines = [
        f"SUITE wall {suite.get('wall', 0.0):.1f} s, cpu {total:.1f} s, exit "
        f"{suite.get('exit', '?')}, load {suite.get('load', 0.0):.1f} (mean of samples), "
        f"{cores} cores",
        f"PHASE start and collection: cpu {start:.1f} s in {len(records)} processes",
        f"PHASE tests: cpu {test_cpu:.1f} s in {len(files)} files",
        f"PHASE the rest (the controller, workers' teardown): cpu "
        f"{max(0.0, total - test_cpu - start):.1f} s",
    ]
    by_area: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for name, f in files.items():
        by_area[area(name)].append(f)
    for label, fs in sorted(by_area.items(), key=lambda kv: -sum(f["cpu"] for f in kv[1])):
        c = sum(f["cpu"] for f in fs)
        lines.append(
            f"AREA {label}: {len(fs)} files, cpu {c:.1f} s ({100 * c / max(test_cpu, 1e-9):.0f} %),"
            f" wall {sum(f['wall'] for f in fs):.1f} s"
        )
    for name, f in sorted(files.items(), key=lambda kv: -kv[1]["cpu"]):
        slow = f", {f['slow']} slow" if f["slow"] else ""
        lines.append(
            f"FILE {name}: {f['tests']} tests{slow}, cpu {f['cpu']:.1f} s (self "
            f"{f['self_cpu']:.1f} + children {f['child_cpu']:.1f}), wall {f['wall']:.1f} s, "
            f"{f['worker']}"
        )
    tests = sorted((t for r in records for t in r["tests"]), reverse=True)[:TOP_TESTS]
    lines += [f"TEST {nodeid}: cpu {c:.1f} s, wall {w:.1f} s" for c, w, nodeid in tests]
    longest = max((f["cpu"] for f in files.values()), default=0.0)
    lines.append(f"BOUND cpu / cores {total / cores:.1f} s; longest file {longest:.1f} s of cpu")
    return lines


def sample_load(stop: threading.Event, into: list[float]) -> None:
    while True:
        into.append(os.getloadavg()[0])
        if stop.wait(10.0):
            return


def run(pytest_args: list[str], out: Path) -> dict[str, Any]:
    env = {**os.environ, ENV: str(out)}
    here = str(Path(__file__).resolve().parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
    loads: list[float] = []
    stop = threading.Event()
    sampler = threading.Thread(target=sample_load, args=(stop, loads), daemon=True)
    sampler.start()
    wall0, kids0 = time.monotonic(), cpu()[1]
    cmd = [sys.executable, "-m", "pytest", "-p", "suite_times", *pytest_args]
    proc = subprocess.run(cmd, env=env, check=False)  # in the repository root, as run
    wall, kids = time.monotonic() - wall0, cpu()[1]
    stop.set()
    sampler.join()
    return {
        "wall": wall,
        "cpu": kids - kids0,
        "exit": proc.returncode,
        "load": sum(loads) / max(len(loads), 1),
        "cores": len(os.sched_getaffinity(0)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="keep the raw records in this file")
    parser.add_argument("--read", type=Path, help="print the records of an earlier run")
    parser.add_argument("pytest_args", nargs="*", help="arguments for pytest (after --)")
    args = parser.parse_args(argv)
    if args.read:
        lines = args.read.read_text().splitlines()
        suite = json.loads(lines[0]) if lines and '"suite"' in lines[0] else {}
        records = [json.loads(x) for x in lines if x and '"suite"' not in x]
        print("\n".join(report(records, suite.get("suite", {}))))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp) / "suite-times.jsonl"
        out.unlink(missing_ok=True)
        suite = run(args.pytest_args, out)
        records = [json.loads(x) for x in out.read_text().splitlines() if x] if out.exists() else []
        out.write_text("".join(json.dumps(x) + "\n" for x in [{"suite": suite}, *records]))
        print("\n".join(report(records, suite)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
