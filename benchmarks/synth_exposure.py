"""Model-free input synthesis on MBPP+Fix (Hard): how many buggy programs it exposes.

    python -m utdebug.benchmarks.synth_exposure --data-dir ../shared/datasets [--limit N] [-v]

For each problem, with the base inputs (the entry point's calls in ``test_list``) as the only
seeds and no model:

1. ``utdebug.synth.pipeline.synthesize_valid`` emits up to ``--count`` candidate inputs in two
   rounds (seeds, mutation, Hypothesis strategies inferred from the seeds' values, the
   signature's type hints) and validates them on the gold code, run twice (the second time in
   reverse order): an input is valid when both runs return and agree;
2. the buggy code runs the valid inputs; it is *exposed* when some outcome differs from the
   gold's (compared with the problem's own ``CheckSpec``);
3. *in the envelope* counts only exposing inputs inside the envelope of the problem's private
   inputs (base + plus: kinds, value ranges, lengths, character classes), which the
   synthesiser never sees;
4. the gold code runs the valid inputs once more as a program under test: any difference is a
   false alarm;
5. the reduced suite is the greedy cover of the in-envelope exposure.

Budgets are CPU time (this process's and the sandbox children's), so what comes out does not
move with the machine's load; the wall-clock times are printed beside them. Prints one line per
problem not exposed (all with ``-v``) and the totals; ``--json PATH`` writes every row. Not a
unit test: the whole split takes minutes.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from utdebug.data.datasets import Problem, load_split
from utdebug.sandbox.executor import Sandbox
from utdebug.sandbox.values import describe
from utdebug.synth import Envelope, Reference, exposing_inputs, reduce_suite, seeds_from_problem
from utdebug.synth.oracle import PROGRAM_LIMITS
from utdebug.synth.pipeline import synthesize_valid
from utdebug.synth.strategies import parse_hints


def _names(signature: str) -> tuple[str, ...]:
    try:
        tree = ast.parse(f"def {signature.strip().rstrip(':')}: pass")
    except SyntaxError:
        return ()
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    return tuple(a.arg for a in [*fn.args.posonlyargs, *fn.args.args])


def run_problem(sb: Sandbox, p: Problem, args: argparse.Namespace) -> dict[str, Any]:
    t0, p0 = time.monotonic(), time.process_time()
    seeds = seeds_from_problem(p)
    try:
        hints = parse_hints(p.signature, p.entry_point)
    except SyntaxError:
        hints = {}
    refs = [
        Reference(p.gold, p.entry_point, "gold"),
        Reference(p.gold, p.entry_point, "gold (reversed)", reverse=True),
    ]
    vs = synthesize_valid(
        sb,
        refs,
        seeds.inputs,
        count=args.count,
        seed=args.seed,
        hints=hints or None,
        names=_names(p.signature),
        time_budget=args.per_problem * args.synth_share,
        check=p.tests.check,
    )
    val = vs.validation
    t_valid = time.monotonic() - t0
    cpu_valid = time.process_time() - p0 + val.cpu_seconds
    stats: dict[str, float] = {}
    left = max(1.0, args.per_problem - cpu_valid)
    exposing = exposing_inputs(
        sb,
        p.code,
        p.entry_point,
        val,
        limits=dataclasses.replace(PROGRAM_LIMITS, batch=left / 2),
        check=p.tests.check,
        stats=stats,
    )
    alarms = exposing_inputs(
        sb,
        p.gold,
        p.entry_point,
        val,
        limits=dataclasses.replace(PROGRAM_LIMITS, batch=max(1.0, left / 2)),
        check=p.tests.check,
        stats=stats,
    )
    private = Envelope.learn(p.tests.inputs)
    in_env = [i for i in exposing if private.contains(val.inputs[i])]
    valid_in_env = sum(1 for i in val.valid_indices if private.contains(val.inputs[i]))
    suite = reduce_suite({"buggy": in_env}, val.inputs)
    sources: dict[str, int] = {}
    for i in in_env:
        src = vs.candidates[i].source
        sources[src] = sources.get(src, 0) + 1
    return {
        "task_id": p.task_id,
        "seeds": len(seeds.inputs),
        "emitted": len(val.inputs),
        "valid": len(val.valid_indices),
        "valid_in_envelope": valid_in_env,
        "disagree": len(val.disagreements),
        "rounds": [dataclasses.asdict(r) for r in vs.rounds],
        "exposed": bool(exposing),
        "exposed_in_envelope": bool(in_env),
        "exposing_sources": sources,
        "false_alarm": bool(alarms),
        "alarm_inputs": [describe(val.inputs[i], 200) for i in alarms[:3]],
        "suite": [describe(val.inputs[i], 300) for i in suite],
        "wall_synth_valid": t_valid,
        "cpu_synth_valid": cpu_valid,
        "wall_total": time.monotonic() - t0,
        "cpu_total": time.process_time() - p0 + val.cpu_seconds + stats.get("cpu_seconds", 0.0),
        "notes": vs.notes,
        "invalid_reasons": val.reason_counts(),
    }


def _line(r: dict[str, Any]) -> str:
    if r["exposed_in_envelope"]:
        flag = "EXPOSED"
    else:
        flag = "out-of-envelope" if r["exposed"] else "missed"
    reasons = dict(list(r["invalid_reasons"].items())[:2])
    return (
        f"{r['task_id']:>10} {flag:<15} seeds {r['seeds']} emitted {r['emitted']} "
        f"valid {r['valid']} (in env {r['valid_in_envelope']}) disagree {r['disagree']} "
        f"alarm {r['false_alarm']} suite {len(r['suite'])} "
        f"{r['cpu_total']:.1f}s cpu {r['wall_total']:.1f}s wall "
        f"{r['exposing_sources']} {r['notes'][:2]} {reasons}"
    )


def summarize(rows: list[dict[str, Any]], per_problem: float) -> list[str]:
    n = len(rows)
    emitted = sum(r["emitted"] for r in rows)
    valid = sum(r["valid"] for r in rows)
    wall = sum(r["wall_synth_valid"] for r in rows)
    cpu = sum(r["cpu_synth_valid"] for r in rows)
    exposed = [r for r in rows if r["exposed_in_envelope"]]
    sizes = [len(r["suite"]) for r in exposed]
    by_src: dict[str, int] = {}
    for r in rows:
        for s in r["exposing_sources"]:
            by_src[s] = by_src.get(s, 0) + 1
    over_cpu = [r["task_id"] for r in rows if r["cpu_total"] > per_problem]
    over_wall = [r["task_id"] for r in rows if r["wall_total"] > per_problem]
    return [
        f"problems                               {n}",
        f"buggy programs exposed (any valid)     {sum(r['exposed'] for r in rows)}",
        f"exposed inside the private envelope    {len(exposed)} of {n}",
        f"false alarms on the gold code          {sum(r['false_alarm'] for r in rows)}",
        f"validity                               {valid}/{emitted} = "
        f"{100 * valid / max(1, emitted):.1f} %",
        f"valid inputs inside the private env.   {sum(r['valid_in_envelope'] for r in rows)}",
        f"valid inputs/s, wall clock             {valid / max(1e-9, wall):.0f}"
        " (synthesis + validation)",
        f"valid inputs/s, CPU time               {valid / max(1e-9, cpu):.0f}"
        " (this process + the references' children)",
        f"reduced suite per exposed problem      mean "
        f"{statistics.mean(sizes) if sizes else 0:.2f}, max {max(sizes, default=0)}",
        f"problems over {per_problem:g} s                    "
        f"{len(over_cpu)} by CPU time {over_cpu[:5]}, {len(over_wall)} by wall clock",
        f"largest problem time                   "
        f"{max((r['cpu_total'] for r in rows), default=0):.1f} s CPU, "
        f"{max((r['wall_total'] for r in rows), default=0):.1f} s wall",
        f"problems with an exposing input, by source: {by_src}",
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--data-dir", type=Path, default=os.environ.get("UTDEBUG_DATA_DIR"))
    ap.add_argument("--limit", type=int, default=None, help="at most N problems")
    ap.add_argument("--start", type=int, default=0, help="skip the first N problems")
    ap.add_argument("--only", default=None, help="comma-separated task ids (hard/6,hard/7)")
    ap.add_argument("--count", type=int, default=600, help="candidate inputs a problem")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-problem", type=float, default=10.0, help="CPU seconds a problem")
    ap.add_argument(
        "--synth-share",
        type=float,
        default=0.5,
        help="part of --per-problem for synthesis and validation (the rest runs the programs)",
    )
    ap.add_argument("--json", type=Path, default=None, help="write every row to this file")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    split = load_split("hard", data_dir=args.data_dir, download=False)
    problems = split.problems
    if args.only:
        want = set(args.only.split(","))
        problems = [p for p in problems if p.task_id in want]
    problems = problems[args.start :]
    if args.limit:
        problems = problems[: args.limit]
    rows = []
    t0 = time.monotonic()
    with Sandbox() as sb:
        for p in problems:
            r = run_problem(sb, p, args)
            rows.append(r)
            if args.verbose or not r["exposed_in_envelope"] or r["false_alarm"]:
                print(_line(r), flush=True)
    print()
    for line in summarize(rows, args.per_problem):
        print(line)
    print(f"wall clock, whole run                  {time.monotonic() - t0:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, default=repr))
    return 0


if __name__ == "__main__":
    sys.exit(main())
