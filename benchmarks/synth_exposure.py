"""Model-free input synthesis on MBPP+Fix (Hard): a quick script over ``bench synth``'s code.

    python -m utdebug.benchmarks.synth_exposure --data-dir ../shared/datasets [--limit N] [-v]

The per-problem measurement is :func:`utdebug.benchmarks.synth_bench.expose_problem` (the
numbers of ``utdebug bench synth``, which also writes records, resumes and writes
``summary.json``); this script writes nothing but ``--json``, and takes ``--only``, ``--start``,
``--count``, ``--per-problem`` and ``--synth-share`` for experiments. Prints one line per
problem not exposed (all with ``-v``) and the totals. Not a unit test: the whole split takes
minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from utdebug.benchmarks.synth_bench import (
    COUNT,
    PER_PROBLEM,
    SYNTH_SHARE,
    ExposureSettings,
    expose_problem,
    problem_flag,
    summarize_synth,
)
from utdebug.data.splits import load_split
from utdebug.sandbox.executor import Sandbox
from utdebug.text_safety import visible


def _line(r: dict[str, Any]) -> str:
    reasons = dict(list(r["invalid_reasons"].items())[:2])
    return (
        f"{r['task_id']:>10} {problem_flag(r):<15} seeds {r['seeds']} emitted {r['emitted']} "
        f"valid {r['valid']} (in env {r['valid_in_envelope']}) disagree {r['disagree']} "
        f"alarm {r['false_alarm']} suite {len(r['suite'])} "
        f"{r['cpu_total']:.1f}s cpu {r['wall_total']:.1f}s wall "
        f"{r['exposing_sources']} {r['notes'][:2]} {reasons}"
    )


def summary_lines(s: dict[str, Any]) -> list[str]:
    rs = s["reduced_suite"]
    return [
        f"problems                               {s['problems']}",
        f"buggy programs exposed (any valid)     {s['exposed']}",
        f"exposed inside the private envelope    {s['exposed_in_envelope']} of {s['problems']}",
        f"false alarms on the gold code          {s['false_alarms']}",
        f"validity                               {s['valid']}/{s['emitted']} = "
        f"{100 * s['validity']:.1f} %",
        f"valid inputs inside the private env.   {s['valid_in_envelope']}",
        f"valid inputs/s, wall clock             {s['valid_inputs_per_s']:.0f}"
        " (synthesis + validation)",
        f"valid inputs/s, CPU time               {s['valid_inputs_per_cpu_s']:.0f}"
        " (this process + the references' children)",
        f"reduced suite per exposed problem      mean {rs['mean']:.2f}, max {rs['max']}",
        f"problems over the CPU budget           {len(s['over_budget'])} {s['over_budget'][:5]}",
        f"largest problem time                   {s['max_cpu_seconds']:.1f} s CPU, "
        f"{s['max_wall_seconds']:.1f} s wall",
        f"problems with an exposing input, by source: {s['by_source']}",
    ]


@dataclass(frozen=True, slots=True)
class Options:
    """This script's command line (see :func:`main`)."""

    data_dir: Path | None = None
    limit: int | None = None
    start: int = 0
    only: str | None = None
    count: int = COUNT
    seed: int = 0
    per_problem: float = PER_PROBLEM
    synth_share: float = SYNTH_SHARE
    json: Path | None = None
    verbose: bool = False


def parse(argv: list[str] | None = None) -> Options:
    """The command line, as :class:`Options`."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--data-dir", type=Path, default=os.environ.get("UTDEBUG_DATA_DIR"))
    ap.add_argument("--limit", type=int, default=None, help="at most N problems")
    ap.add_argument("--start", type=int, default=0, help="skip the first N problems")
    ap.add_argument("--only", default=None, help="comma-separated task ids (hard/6,hard/7)")
    ap.add_argument("--count", type=int, default=COUNT, help="candidate inputs a problem")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-problem", type=float, default=PER_PROBLEM, help="CPU seconds a problem")
    ap.add_argument(
        "--synth-share",
        type=float,
        default=SYNTH_SHARE,
        help="part of --per-problem for synthesis and validation (the rest runs the programs)",
    )
    ap.add_argument("--json", type=Path, default=None, help="write every row to this file")
    ap.add_argument("-v", "--verbose", action="store_true")
    return Options(**vars(ap.parse_args(argv)))


def main(argv: list[str] | None = None) -> int:
    opts = parse(argv)
    settings = ExposureSettings(opts.count, opts.seed, opts.per_problem, opts.synth_share)
    split = load_split("hard", data_dir=opts.data_dir, download=False)
    problems = split.problems
    if opts.only:
        want = set(opts.only.split(","))
        problems = [p for p in problems if p.task_id in want]
    problems = problems[opts.start :]
    if opts.limit:
        problems = problems[: opts.limit]
    rows = []
    t0 = time.monotonic()
    with Sandbox() as sb:
        for p in problems:
            r = {"task_id": p.task_id} | expose_problem(sb, p, settings)
            rows.append(r)
            if opts.verbose or not r["exposed_in_envelope"] or r["false_alarm"]:
                print(visible(_line(r)), flush=True)
    print()
    for line in summary_lines(summarize_synth(rows, settings)):
        print(line)
    print(f"wall clock, whole run                  {time.monotonic() - t0:.0f} s")
    if opts.json:
        opts.json.write_text(json.dumps(rows, indent=1, default=repr))
    return 0


if __name__ == "__main__":
    sys.exit(main())
