"""Do verdicts move with the machine's load? MBPP+Fix (Hard), idle, loaded, and side by side.

Run from the repository root, with nothing else running (check ``uptime``)::

    .venv/bin/python benchmarks/perf/determinism.py             # whole split, long on 2 cores
    .venv/bin/python benchmarks/perf/determinism.py --limit 3   # a quick check

The script evaluates the Hard split's buggy code and its gold code on the private tests (2 s
per input, 120 s per problem, as ``utdebug bench``) under CPU-time limits (the default) in
three conditions:

* ``idle``: on the idle machine;
* ``loaded``: while ``--hogs`` processes spin (default: four per core), each in a session of
  its own as unrelated jobs are;
* ``pair``: two runs of the same evaluation started at the same time (each with its own
  sandbox), as two bench runs on one machine are;

and once under wall-clock limits (the paper's harness) on the idle machine, for the wall time
CPU-time limits cost. The hogs are started and stopped by the script itself: stopped in a
``finally``, on SIGTERM/SIGHUP/Ctrl-C, and, if the script is killed, by the kernel (each hog
has ``PR_SET_PDEATHSIG``).

Printed lines (``--json``: one JSON object on stdout, the report on stderr):

* ``RUN <kind> <program> <condition>``: wall time, mean pass fraction, pass@1, timeouts;
* ``COMPARE <a> vs <b>: N of M inputs differ`` for the three comparisons (idle vs loaded,
  idle vs each run of the pair, the pair's two runs against each other), over both programs,
  with a few of the differing inputs, and ``TARGET cpu 0: PASS`` when none differ;
* ``WALL``: the main job's wall time under CPU-time limits idle and loaded, against the
  wall-clock kind idle (target: at most 1.3x);
* ``PUBLISHED``: the buggy code's mean pass fraction against the published 74.83 %
  (wall-clock, 2 s), and ``KIND``: the inputs whose verdicts differ between the two kinds on
  the idle machine, by problem, and the CPU and wall time the sandbox charged a few of them.

Exit status: 0 when every run completed, 2 when the dataset is missing, 3 when the sandbox
cannot start with every layer.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Any

from utdebug.benchmarks.evaluator import SplitData, evaluate_split
from utdebug.data.datasets import DatasetError, Problem, Split
from utdebug.data.private_tests import EvalSettings, WhichCode
from utdebug.data.splits import load_split
from utdebug.runs.records import SAMPLES, read_samples
from utdebug.sandbox import LimitKind, Limits, Sandbox, SandboxUnavailable, Semantics

REPO = Path(__file__).resolve().parents[2]
PUBLISHED_BUGGY = 0.7483
"""The buggy code's mean pass fraction on MBPP+Fix (Hard)'s private tests, as published."""
EXIT_OK, EXIT_USAGE, EXIT_SANDBOX = 0, 2, 3


def default_data_dir() -> Path:
    env = os.environ.get("UTDEBUG_DATA_DIR")
    return Path(env) if env else (REPO.parent / "shared" / "datasets")


# --- the CPU hog ------------------------------------------------------------------------------

HOG = "import os\nos.write(1, b'!')\nwhile True:\n    pass\n"


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: a hog never outlives this script


class _Stopped(BaseException):
    """SIGTERM/SIGHUP: unwind, so that every ``finally`` (the hogs' too) runs."""


def _on_signal(signum: int, frame: FrameType | None) -> None:
    raise _Stopped(signal.Signals(signum).name)


@contextlib.contextmanager
def cpu_hogs(n: int) -> Iterator[list[int]]:
    """``n`` spinning processes for the block's duration, stopped on every way out of it."""
    hogs: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(n):
            hogs.append(
                subprocess.Popen(
                    [sys.executable, "-I", "-c", HOG],
                    stdout=subprocess.PIPE,
                    preexec_fn=_die_with_parent,
                    start_new_session=True,  # its own scheduling group (autogroup)
                )
            )
        for h in hogs:  # every hog spins before the loaded run starts
            assert h.stdout is not None
            if h.stdout.read(1) != b"!":
                raise RuntimeError("a CPU hog did not start")
        yield [h.pid for h in hogs]
    finally:
        for h in hogs:
            with contextlib.suppress(OSError):
                h.kill()
        for h in hogs:
            h.wait()
            if h.stdout is not None:
                h.stdout.close()


# --- one evaluation ---------------------------------------------------------------------------


def evaluate(
    sb: Sandbox, problems: Sequence[Problem], program: WhichCode, lim: Limits, workers: int
) -> dict[str, Any]:
    """Letters per problem, mean pass fraction, pass@1, timeouts and wall time of one run."""
    settings = EvalSettings(semantics=Semantics.DATASET, limits=lim, max_details=0)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="utdebug-determinism-") as tmp:
        run = evaluate_split(
            sb,
            SplitData(problems[0].split, problems, {"determinism": "-"}),
            program,
            settings,
            Path(tmp),
            workers=workers,
        )
        records = read_samples(Path(tmp) / SAMPLES)
    wall = time.perf_counter() - t0
    errors = [r for r in records if r.get("error")]
    if errors:
        raise RuntimeError(f"problem errors: {errors[0]['task_id']}: {errors[0]['error']}")
    s = next(iter(run.summary.values()))
    return {
        "wall_seconds": round(wall, 2),
        "mean_pass_fraction": s["mean_pass_fraction"],
        "pass_at_1": s["pass_at_1"],
        "timeouts": s["timeouts"],
        "letters": {r["task_id"]: r["verdicts"] for r in records},
    }


def differing(a: dict[str, str], b: dict[str, str]) -> list[tuple[str, int, str, str]]:
    """(task id, input, verdict in ``a``, verdict in ``b``) of every input that differs."""
    out = []
    for tid in sorted(a, key=_order):
        for i, (x, y) in enumerate(zip(a[tid], b[tid], strict=True)):
            if x != y:
                out.append((tid, i, x, y))
    return out


def _order(task_id: str) -> tuple[str, int]:
    head, _, num = task_id.rpartition("/")
    return (head, int(num)) if num.isdigit() else (task_id, -1)


def charged(
    sb: Sandbox, problem: Problem, indexes: Sequence[int], lim: Limits
) -> list[tuple[int, float, float]]:
    """(input, CPU seconds, wall seconds) the sandbox charges a few of ``problem``'s buggy
    code's inputs, each run alone (an explanation of why the two kinds disagree there)."""
    roomy = replace(lim, per_input=3 * lim.per_input)  # time it without cutting it short
    out = []
    for i in indexes:
        args = [problem.tests.inputs[i]]
        cpu = sb.run(problem.code, problem.entry_point, args, replace(roomy, kind=LimitKind.CPU))
        wall = sb.run(problem.code, problem.entry_point, args, replace(roomy, kind=LimitKind.WALL))
        out.append((i, cpu.outcomes[0].seconds, wall.outcomes[0].seconds))
    return out


# --- the script -------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="folder with MBPP+Fix_hard_test.jsonl (default: $UTDEBUG_DATA_DIR, "
        "else ../shared/datasets next to the repository)",
    )
    ap.add_argument("--limit", type=int, default=None, help="only the first N problems")
    ap.add_argument("--workers", type=int, default=2, help="evaluator threads (default 2)")
    ap.add_argument("--timeout", type=float, default=2.0, help="seconds per input (default 2)")
    ap.add_argument("--budget", type=float, default=120.0, help="seconds per problem (120)")
    ap.add_argument(
        "--hogs", type=int, default=None, help="spinning processes (default: one per core)"
    )
    ap.add_argument("--json", action="store_true", help="numbers as JSON on stdout")
    args = ap.parse_args(argv)
    report = sys.stderr if args.json else sys.stdout

    def say(line: str) -> None:
        print(line, file=report, flush=True)

    data_dir = args.data_dir or default_data_dir()
    try:
        loaded = load_split(Split.HARD, data_dir=data_dir, download=False)
    except DatasetError as e:
        print(f"dataset error: {e}", file=sys.stderr)
        return EXIT_USAGE
    problems = loaded.problems[: args.limit] if args.limit is not None else loaded.problems
    if not problems:
        print("no problems selected", file=sys.stderr)
        return EXIT_USAGE
    cores = len(os.sched_getaffinity(0))
    hogs = 4 * cores if args.hogs is None else args.hogs
    n_inputs = sum(len(p.tests.inputs) for p in problems)
    base = Limits(per_input=args.timeout, batch=args.budget or None)
    programs = [WhichCode.CODE, WhichCode.GOLD]
    say(
        f"determinism: MBPP+Fix (Hard) from {data_dir}: {len(problems)} problems, "
        f"{n_inputs:,} inputs per program; {cores} cores; {hogs} hogs; {args.workers} workers; "
        f"{args.timeout:g} s per input, {args.budget:g} s per problem; load average "
        f"{os.getloadavg()[0]:.2f}"
    )
    previous = {s: signal.signal(s, _on_signal) for s in (signal.SIGTERM, signal.SIGHUP)}
    # runs[condition][program]: conditions idle, loaded, pair-a, pair-b (CPU-time limits)
    # and wall-idle (wall-clock limits)
    runs: dict[str, dict[str, dict[str, Any]]] = {}
    cpu = replace(base, kind=LimitKind.CPU)

    def record(cond: str, program: WhichCode, r: dict[str, Any]) -> None:
        runs.setdefault(cond, {})[program.value] = r
        say(
            f"RUN {cond:9} {program.value:4} wall {r['wall_seconds']:7.1f} s  mean pass "
            f"fraction {100 * r['mean_pass_fraction']:6.2f}%  pass@1 "
            f"{100 * r['pass_at_1']:6.2f}%  timeouts {r['timeouts']}"
        )

    try:
        with Sandbox() as sb:
            for program in programs:
                record("idle", program, evaluate(sb, problems, program, cpu, args.workers))
                wall = replace(base, kind=LimitKind.WALL)
                record("wall-idle", program, evaluate(sb, problems, program, wall, args.workers))
            with cpu_hogs(hogs):
                for program in programs:
                    r = evaluate(sb, problems, program, cpu, args.workers)
                    record("loaded", program, r)
            for program in programs:
                a, b = _pair(problems, program, cpu, args.workers)
                record("pair-a", program, a)
                record("pair-b", program, b)
            numbers = _numbers(runs, problems, n_inputs, programs, args, cores, hogs)
            _explain(sb, problems, runs, base, numbers, say)
    except SandboxUnavailable as e:
        print(f"SANDBOX UNAVAILABLE: {e}", file=sys.stderr)
        return EXIT_SANDBOX
    except (_Stopped, KeyboardInterrupt) as e:
        print(f"stopped ({e or 'interrupted'}); the CPU hogs are stopped", file=sys.stderr)
        return 130
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    _print(numbers, say)
    if args.json:
        print(json.dumps(numbers, indent=2))
    return EXIT_OK


def _pair(
    problems: Sequence[Problem], program: WhichCode, lim: Limits, workers: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two runs of one evaluation started at the same time, each with its own sandbox."""
    out: list[dict[str, Any] | BaseException | None] = [None, None]
    go = threading.Barrier(2)

    def one(k: int) -> None:
        try:
            with Sandbox() as box:
                go.wait()
                out[k] = evaluate(box, problems, program, lim, workers)
        except BaseException as e:  # reported in the caller's thread
            out[k] = e

    threads = [threading.Thread(target=one, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in out:
        if isinstance(r, BaseException):
            raise r
    a, b = out
    assert isinstance(a, dict)
    assert isinstance(b, dict)
    return a, b


COMPARISONS = (("idle", "loaded"), ("idle", "pair-a"), ("idle", "pair-b"), ("pair-a", "pair-b"))


def _numbers(
    runs: dict[str, dict[str, dict[str, Any]]],
    problems: Sequence[Problem],
    n_inputs: int,
    programs: Sequence[WhichCode],
    args: argparse.Namespace,
    cores: int,
    hogs: int,
) -> dict[str, Any]:
    compare: dict[str, dict[str, Any]] = {}
    for a, b in COMPARISONS:
        by: dict[str, Any] = {"examples": []}
        for program in programs:
            d = differing(runs[a][program.value]["letters"], runs[b][program.value]["letters"])
            by[program.value] = len(d)
            by["examples"] += [
                {"program": program.value, "task_id": t, "i": i, a: x, b: y}
                for t, i, x, y in d[:20]
            ]
        by["total"] = sum(by[p.value] for p in programs)
        compare[f"{a} vs {b}"] = by
    walls = {
        cond: sum(runs[cond][p.value]["wall_seconds"] for p in programs)
        for cond in ("idle", "loaded", "wall-idle")
    }
    return {
        "problems": len(problems),
        "inputs_per_program": n_inputs,
        "cores": cores,
        "hogs": hogs,
        "workers": args.workers,
        "limit_s": args.timeout,
        "budget_s": args.budget,
        "compare": compare,
        "wall_seconds": walls,
        "cpu_idle_over_wall_idle": round(walls["idle"] / max(walls["wall-idle"], 1e-9), 3),
        "runs": {
            cond: {p: {x: v for x, v in r.items() if x != "letters"} for p, r in by.items()}
            for cond, by in runs.items()
        },
        "published_buggy_mean_pass_fraction": PUBLISHED_BUGGY,
        "cpu_target_met": all(c["total"] == 0 for c in compare.values()),
    }


def _explain(
    sb: Sandbox,
    problems: Sequence[Problem],
    runs: dict[str, dict[str, dict[str, Any]]],
    lim: Limits,
    numbers: dict[str, Any],
    say: Callable[[str], None],
) -> None:
    """The buggy code's inputs whose verdicts differ between the kinds (idle), by problem,
    and what the sandbox charges a few of them under each kind."""
    d = differing(runs["idle"]["code"]["letters"], runs["wall-idle"]["code"]["letters"])
    by_task: dict[str, Counter[str]] = {}
    for tid, _, c, w in d:
        by_task.setdefault(tid, Counter())[f"{w}->{c}"] += 1
    numbers["kinds_differ"] = {
        "inputs": len(d),
        "by_problem": {t: dict(c) for t, c in by_task.items()},
    }
    index = {p.task_id: p for p in problems}
    samples = []
    for tid in list(by_task)[:5]:
        idx = [i for t, i, _, _ in d if t == tid][:2]
        for i, cpu_s, wall_s in charged(sb, index[tid], idx, lim):
            samples.append({"task_id": tid, "i": i, "cpu_s": cpu_s, "wall_s": wall_s})
    numbers["kinds_differ"]["charged"] = samples


def _print(numbers: dict[str, Any], say: Callable[[str], None]) -> None:
    n = numbers["inputs_per_program"]
    for name, by in numbers["compare"].items():
        say(
            f"COMPARE {name}: {by['total']} of {2 * n:,} inputs differ "
            f"(buggy {by['code']}, gold {by['gold']}; CPU-time limits)"
        )
        if by["examples"]:
            a, b = name.split(" vs ")
            shown = ", ".join(
                f"{e['program']} {e['task_id']}#{e['i']} {e[a]}->{e[b]}" for e in by["examples"][:8]
            )
            say(f"  {shown}")
    w = numbers["wall_seconds"]
    say(
        f"WALL main job (buggy + gold): cpu idle {w['idle']:.1f} s, cpu loaded "
        f"{w['loaded']:.1f} s, wall-clock kind idle {w['wall-idle']:.1f} s; cpu idle / wall "
        f"idle = {numbers['cpu_idle_over_wall_idle']:.2f} (target at most 1.3: "
        f"{'PASS' if numbers['cpu_idle_over_wall_idle'] <= 1.3 else 'MISS'})"
    )
    runs = numbers["runs"]
    code = runs["idle"]["code"]["mean_pass_fraction"]
    wall = runs["wall-idle"]["code"]["mean_pass_fraction"]
    subset = "" if numbers["problems"] == 170 else f" (only {numbers['problems']} problems here)"
    say(
        f"PUBLISHED buggy mean pass fraction {100 * PUBLISHED_BUGGY:.2f}% (wall-clock, 2 s); "
        f"here cpu {100 * code:.2f}% ({100 * (code - PUBLISHED_BUGGY):+.2f}), wall "
        f"{100 * wall:.2f}% ({100 * (wall - PUBLISHED_BUGGY):+.2f}) (idle){subset}"
    )
    kd = numbers.get("kinds_differ", {})
    say(f"KIND buggy code, cpu vs wall (idle): {kd.get('inputs', 0)} inputs differ")
    for tid, moves in kd.get("by_problem", {}).items():
        say(f"  {tid}: " + ", ".join(f"{m} x{c}" for m, c in sorted(moves.items())))
    for s in kd.get("charged", []):
        say(f"  {s['task_id']}#{s['i']}: {s['cpu_s']:.3f} s CPU time, {s['wall_s']:.3f} s wall")
    total = sum(c["total"] for c in numbers["compare"].values())
    verdict = "PASS" if numbers["cpu_target_met"] else "MISS"
    say(f"TARGET cpu 0 differing inputs in every comparison ({total} in all): {verdict}")


if __name__ == "__main__":
    sys.exit(main())
