"""Throughput here and on Ray: problems/s and sandbox executions/s of the plain evaluation.

Run from the repository root (needs ``pip install -e '.[ray]'``; ``.[dev]`` has it)::

    .venv/bin/python benchmarks/perf/distributed_throughput.py                 # all 170, ~3 min
    .venv/bin/python benchmarks/perf/distributed_throughput.py --problems 10   # a quick check

The same jobs run three times, each into a fresh run folder: ``evaluate_split`` on MBPP+Fix
(Hard)'s first ``--problems`` problems (the gold code by default, ``--buggy`` for the given
code) on their private tests,

- **local**: one started :class:`Sandbox` in this process, ``--workers`` threads (the default
  path of ``utdebug bench``);
- **ray cold** and **ray warm**: a Ray instance this script starts on this machine
  (``local-cluster``: one node, ``--workers`` CPUs, so as many worker processes) and stops at
  the end. Each worker process starts its own sandbox on its first job: the cold pass pays for
  the worker processes and their sandboxes, the warm pass reuses them.

A sandbox execution is one input of one program run in a confined child. The script prints
one line per pass (``PASS ...``), whether the passes' verdicts agree input for input
(``AGREEMENT``), and a ``PROJECTED`` line, which is arithmetic, not a measurement: the time
for ``--project`` problems when each makes ``--calls`` model calls of ``--latency`` seconds to
``--endpoints`` endpoints that each serve ``--endpoint-limit`` calls at once (the runner's
per-endpoint bound), against the sandbox rate measured here (warm Ray pass); the larger of
the two bounds the run from below.

Exit status: 0 when the passes completed, 2 for a usage or dataset error or Ray missing,
3 when the sandbox cannot start with all of its layers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from utdebug.benchmarks.evaluator import SplitData, evaluate_split
from utdebug.data.datasets import DatasetError, Problem, Split
from utdebug.data.private_tests import EvalSettings, WhichCode
from utdebug.data.splits import load_split
from utdebug.distributed import JobPool, PoolOptions, PoolUnavailable, make_pool
from utdebug.runs.records import SAMPLES, read_samples
from utdebug.sandbox import Limits, Sandbox, SandboxConfig, SandboxUnavailable

REPO = Path(__file__).resolve().parents[2]
EXIT_OK, EXIT_USAGE, EXIT_SANDBOX = 0, 2, 3
# engine_speed.py on MBPP+Fix (Hard) at default settings: 1,551 model calls for 170 sessions.
CALLS_PER_PROBLEM = 1551 / 170


@dataclass
class PassResult:
    name: str
    wall: float
    problems: int
    executions: int
    verdicts: dict[str, str]

    @property
    def problems_per_s(self) -> float:
        return self.problems / self.wall

    @property
    def executions_per_s(self) -> float:
        return self.executions / self.wall

    def line(self) -> str:
        return (
            f"PASS {self.name:9s} {self.problems} problems {self.executions:,} executions in "
            f"{self.wall:.2f} s: {self.problems_per_s:.2f} problems/s, "
            f"{self.executions_per_s:,.0f} executions/s"
        )


def one_pass(
    name: str,
    target: Sandbox | JobPool,
    problems: list[Problem],
    program: WhichCode,
    settings: EvalSettings,
    sources: dict[str, str],
    workers: int,
    out: Path,
) -> PassResult:
    t0 = time.perf_counter()
    data = SplitData(Split.HARD, problems, sources)
    run = evaluate_split(target, data, program, settings, out, workers=workers)
    wall = time.perf_counter() - t0
    if run.evaluated != len(problems):
        raise RuntimeError(f"{name}: evaluated {run.evaluated} of {len(problems)}")
    records = read_samples(out / SAMPLES)
    verdicts = {r["task_id"]: r.get("verdicts", "") for r in records}
    executions = sum(len(v) for v in verdicts.values())
    return PassResult(name, wall, len(records), executions, verdicts)


def differing_inputs(a: PassResult, b: PassResult) -> dict[str, int]:
    """Per problem, the inputs whose verdicts differ between two passes (only those that do)."""
    out: dict[str, int] = {}
    for t, mine in a.verdicts.items():
        theirs = b.verdicts.get(t, "")
        n = sum(x != y for x, y in zip(mine, theirs, strict=False)) + abs(len(mine) - len(theirs))
        if n:
            out[t] = n
    return out


def projection(args: argparse.Namespace, warm: PassResult) -> dict[str, float]:
    model_s = args.project * args.calls * args.latency / (args.endpoints * args.endpoint_limit)
    sandbox_s = args.project / warm.problems_per_s
    return {
        "problems": args.project,
        "calls_per_problem": args.calls,
        "latency_s": args.latency,
        "endpoints": args.endpoints,
        "endpoint_limit": args.endpoint_limit,
        "model_bound_h": model_s / 3600,
        "sandbox_bound_h": sandbox_s / 3600,
        "projected_h": max(model_s, sandbox_s) / 3600,
    }


def default_data_dir() -> Path:
    env = os.environ.get("UTDEBUG_DATA_DIR")
    return Path(env) if env else (REPO.parent / "shared" / "datasets")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=None, help="default: $UTDEBUG_DATA_DIR, "
                    "else ../shared/datasets next to the repository")  # fmt: skip
    ap.add_argument("--problems", type=int, default=None, help="the first N problems (all)")
    ap.add_argument("--workers", type=int, default=2, help="threads / Ray workers (default 2)")
    ap.add_argument("--buggy", action="store_true", help="the given code instead of the gold")
    ap.add_argument("--timeout", type=float, default=2.0, help="seconds per input (default 2)")
    ap.add_argument("--project", type=int, default=48_300, help="problems to project (48,300)")
    ap.add_argument("--latency", type=float, default=2.0, help="seconds per model call (2)")
    ap.add_argument("--calls", type=float, default=CALLS_PER_PROBLEM,
                    help=f"model calls per problem (default {CALLS_PER_PROBLEM:.1f}: "
                    "engine_speed.py's count on the Hard split)")  # fmt: skip
    ap.add_argument("--endpoints", type=int, default=1, help="model endpoints (default 1)")
    ap.add_argument("--endpoint-limit", type=int, default=4,
                    help="calls in flight per endpoint (default 4, PoolOptions')")  # fmt: skip
    ap.add_argument("--json", action="store_true", help="the numbers as JSON on stdout")
    args = ap.parse_args(argv)
    if args.workers < 1 or args.endpoints < 1 or args.endpoint_limit < 1 or args.latency < 0:
        ap.error("--workers, --endpoints and --endpoint-limit must be >= 1, --latency >= 0")
    report = sys.stderr if args.json else sys.stdout
    data_dir = args.data_dir or default_data_dir()
    try:
        loaded = load_split(Split.HARD, data_dir=data_dir, download=False)
    except DatasetError as e:
        print(f"dataset error: {e}", file=sys.stderr)
        return EXIT_USAGE
    problems = loaded.problems[: args.problems] if args.problems else loaded.problems
    program = WhichCode.CODE if args.buggy else WhichCode.GOLD
    settings = EvalSettings(limits=Limits(per_input=args.timeout))
    print(
        f"distributed_throughput: MBPP+Fix (Hard) {program.value} code, {len(problems)} problems; "
        f"{args.workers} workers; {os.cpu_count()} CPUs; load average "
        f"{os.getloadavg()[0]:.2f}; python {sys.version.split()[0]}",
        file=report,
        flush=True,
    )
    passes: list[PassResult] = []
    with tempfile.TemporaryDirectory(prefix="utdebug-throughput-") as tmp:
        folder = Path(tmp)

        def run(name: str, target: Sandbox | JobPool) -> PassResult:
            res = one_pass(
                name, target, problems, program, settings, loaded.sources, args.workers,
                folder / name,
            )  # fmt: skip
            print(res.line(), file=report, flush=True)
            passes.append(res)
            return res

        try:
            t0 = time.perf_counter()
            with Sandbox(SandboxConfig()) as sb:
                local_start = time.perf_counter() - t0
                print(f"START local sandbox {local_start:.2f} s", file=report)
                run("local", sb)
            t0 = time.perf_counter()
            opts = PoolOptions(SandboxConfig(), concurrency=args.workers)
            with make_pool("local-cluster", opts) as runner:
                ray_start = time.perf_counter() - t0
                print(f"START ray {ray_start:.2f} s ({runner.describe()})", file=report)
                run("ray-cold", runner)
                warm = run("ray-warm", runner)
        except SandboxUnavailable as e:
            print(f"SANDBOX UNAVAILABLE: {e}", file=sys.stderr)
            return EXIT_SANDBOX
        except PoolUnavailable as e:
            print(f"RAY UNAVAILABLE: {e}", file=sys.stderr)
            return EXIT_USAGE
    local = passes[0]
    per_problem = {p.name: differing_inputs(local, p) for p in passes[1:]}
    diffs = {name: sum(d.values()) for name, d in per_problem.items()}
    for name, d in per_problem.items():
        where = ", ".join(f"{t}: {n}" for t, n in sorted(d.items()))
        print(
            f"AGREEMENT local vs {name}: {diffs[name]} of {local.executions:,} inputs differ"
            + (f" ({where})" if where else ""),
            file=report,
        )
    ratio = warm.executions_per_s / local.executions_per_s
    print(f"RATIO ray-warm / local executions/s {ratio:.2f}x", file=report)
    proj = projection(args, warm)
    print(
        f"PROJECTED (arithmetic, not a measurement) {args.project:,} problems x "
        f"{args.calls:.1f} calls x {args.latency:g} s / ({args.endpoints} endpoints x "
        f"{args.endpoint_limit} in flight) = {proj['model_bound_h']:.1f} h model-bound; "
        f"sandbox-bound at the ray-warm rate of {args.workers} workers: "
        f"{proj['sandbox_bound_h']:.2f} h; at least {proj['projected_h']:.1f} h",
        file=report,
    )
    if args.json:
        payload: dict[str, Any] = {
            "problems": len(problems),
            "program": program.value,
            "workers": args.workers,
            "local_sandbox_start_s": local_start,
            "ray_start_s": ray_start,
            "passes": {
                p.name: {
                    "wall_s": p.wall,
                    "problems": p.problems,
                    "executions": p.executions,
                    "problems_per_s": p.problems_per_s,
                    "executions_per_s": p.executions_per_s,
                }
                for p in passes
            },
            "differing_inputs": diffs,
            "differing_by_problem": per_problem,
            "ratio_ray_warm_local": ratio,
            "projection": proj,
        }
        print(json.dumps(payload, indent=1))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
