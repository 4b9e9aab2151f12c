"""Model-free input synthesis on MBPP+Fix (Hard): how many buggy programs it exposes.

    python -m utdebug.benchmarks.synth_exposure --data-dir ../shared/datasets [--limit N]

For each problem, with the base inputs (the calls in ``test_list``) as the only seeds:

1. ``utdebug.synth.synthesize`` emits up to ``--count`` candidate inputs (seeds, mutation,
   Hypothesis strategies inferred from the seeds' values, the signature's type hints);
2. the gold code runs them twice in the sandbox (the second time in reverse order):
   an input is valid when both runs return and agree (consistency validation);
3. the buggy code runs the valid inputs; it is *exposed* when some outcome differs from the
   gold's (compared with the problem's own ``CheckSpec``);
4. *in the envelope* counts only exposing inputs inside the envelope of the problem's private
   inputs (base + plus: kinds, value ranges, lengths, character classes), which the
   synthesiser never sees;
5. the gold code runs the valid inputs once more as a program under test: any difference is a
   false alarm;
6. the reduced suite is the greedy cover of the in-envelope exposure.

Prints one line per problem (``-v``) and the totals. Not a unit test: it takes minutes.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from utdebug.benchmarks.datasets import Problem, load_split
from utdebug.sandbox.server import Sandbox
from utdebug.synth import Envelope, Reference, exposing_inputs, reduce_suite, seeds_from_problem
from utdebug.synth.oracle import PROGRAM_LIMITS, REFERENCE_LIMITS, validate
from utdebug.synth.pipeline import synthesize_valid
from utdebug.synth.strategies import parse_hints
from utdebug.synth.synthesizer import synthesize


def _names(signature: str, entry: str) -> tuple[str, ...]:
    import ast

    try:
        tree = ast.parse(f"def {signature.strip().rstrip(':')}: pass")
    except SyntaxError:
        return ()
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    return tuple(a.arg for a in [*fn.args.posonlyargs, *fn.args.args])


def run_problem(sb: Sandbox, p: Problem, args: argparse.Namespace) -> dict[str, Any]:
    t0 = time.monotonic()
    seeds = seeds_from_problem(p)
    names = _names(p.signature, p.entry_point)
    try:
        hints = parse_hints(p.signature, p.entry_point)
    except SyntaxError:
        hints = {}
    refs = [
        Reference(p.gold, p.entry_point, "gold"),
        Reference(p.gold, p.entry_point, "gold (reversed)", reverse=True),
    ]
    ref_limits = dataclasses.replace(REFERENCE_LIMITS, batch=args.per_problem / 8)
    if args.one_round:
        syn = synthesize(
            seeds.inputs,
            count=args.count,
            seed=args.seed,
            hints=hints or None,
            names=names,
            time_budget=args.synth_budget,
        )
        val = validate(sb, refs, syn.inputs, limits=ref_limits, check=p.tests.check)
        cands, notes = syn.candidates, syn.notes
    else:
        vs = synthesize_valid(
            sb,
            refs,
            seeds.inputs,
            count=args.count,
            seed=args.seed,
            hints=hints or None,
            names=names,
            time_budget=args.per_problem * 0.5,
            check=p.tests.check,
        )
        val, cands, notes = vs.validation, vs.candidates, vs.notes
    t_synth = 0.0
    t_valid = time.monotonic() - t0
    left = max(1.0, args.per_problem - (time.monotonic() - t0))
    prog_limits = dataclasses.replace(PROGRAM_LIMITS, batch=left / 2.5)
    exposing = exposing_inputs(
        sb, p.code, p.entry_point, val, limits=prog_limits, check=p.tests.check
    )
    left = max(1.0, args.per_problem - (time.monotonic() - t0))
    alarms = exposing_inputs(
        sb,
        p.gold,
        p.entry_point,
        val,
        limits=dataclasses.replace(PROGRAM_LIMITS, batch=left),
        check=p.tests.check,
    )
    private = Envelope.learn(p.tests.inputs)
    in_env = [i for i in exposing if private.contains(val.inputs[i])]
    valid_in_env = sum(1 for i in val.valid_indices if private.contains(val.inputs[i]))
    suite = reduce_suite({"buggy": in_env}, val.inputs)
    sources_exposing: dict[str, int] = {}
    for i in in_env:
        src = cands[i].source
        sources_exposing[src] = sources_exposing.get(src, 0) + 1
    return {
        "task_id": p.task_id,
        "seeds": len(seeds.inputs),
        "emitted": len(val.inputs),
        "valid": len(val.valid_indices),
        "valid_in_envelope": valid_in_env,
        "disagree": len(val.disagreements),
        "exposed": bool(exposing),
        "exposed_in_envelope": bool(in_env),
        "exposing_sources": sources_exposing,
        "false_alarm": bool(alarms),
        "suite": len(suite),
        "suite_inputs": [val.inputs[i] for i in suite],
        "t_synth": t_synth,
        "t_gen_valid": t_valid,
        "t_total": time.monotonic() - t0,
        "notes": notes,
        "invalid_reasons": val.reason_counts(),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", type=Path, default=os.environ.get("UTDEBUG_DATA_DIR"))
    ap.add_argument("--limit", type=int, default=None, help="first N problems only")
    ap.add_argument("--start", type=int, default=0, help="skip the first N problems")
    ap.add_argument("--only", default=None, help="comma-separated task ids (hard/6,hard/7)")
    ap.add_argument("--count", type=int, default=400, help="candidate inputs a problem")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-problem", type=float, default=10.0, help="seconds a problem")
    ap.add_argument("--synth-budget", type=float, default=3.0, help="seconds of generation")
    ap.add_argument(
        "--one-round", action="store_true", help="no second round from the accepted inputs"
    )
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
                flag = (
                    "EXPOSED"
                    if r["exposed_in_envelope"]
                    else ("out-of-envelope" if r["exposed"] else "missed")
                )
                print(
                    f"{r['task_id']:>10} {flag:<15} seeds {r['seeds']} emitted {r['emitted']} "
                    f"valid {r['valid']} (in env {r['valid_in_envelope']}) "
                    f"disagree {r['disagree']} "
                    f"alarm {r['false_alarm']} suite {r['suite']} {r['t_total']:.1f}s "
                    f"{r['exposing_sources']} {r['notes'][:2]} "
                    f"{dict(list(r['invalid_reasons'].items())[:2])}",
                    flush=True,
                )
    wall = time.monotonic() - t0
    n = len(rows)
    emitted = sum(r["emitted"] for r in rows)
    valid = sum(r["valid"] for r in rows)
    gen_valid_time = sum(r["t_gen_valid"] for r in rows)
    exposed_rows = [r for r in rows if r["exposed_in_envelope"]]
    print()
    print(f"problems                          {n}")
    print(f"buggy programs exposed            {sum(r['exposed'] for r in rows)} (any valid input)")
    print(f"exposed inside private envelope   {len(exposed_rows)} of {n}")
    print(f"false alarms on gold code         {sum(r['false_alarm'] for r in rows)}")
    rate = 100 * valid / max(1, emitted)
    print(f"validity                          {valid}/{emitted} = {rate:.1f} %")
    print(f"valid inputs in private envelope  {sum(r['valid_in_envelope'] for r in rows)}")
    print(f"valid inputs/s (synth+validation) {valid / max(1e-9, gen_valid_time):.0f}")
    sizes = [r["suite"] for r in exposed_rows]
    if sizes:
        print(
            f"reduced suite per exposed problem mean {statistics.mean(sizes):.2f}, max {max(sizes)}"
        )
    slow = [r["task_id"] for r in rows if r["t_total"] > args.per_problem]
    print(f"problems over {args.per_problem:g} s: {len(slow)} {slow[:10]}")
    print(
        f"max problem time {max((r['t_total'] for r in rows), default=0):.1f} s; wall {wall:.0f} s"
    )
    by_src: dict[str, int] = {}
    for r in rows:
        for s, k in r["exposing_sources"].items():
            if k:
                by_src[s] = by_src.get(s, 0) + 1
    print(f"problems with an exposing input, by source: {by_src}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
