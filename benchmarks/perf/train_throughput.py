"""Throughput of the training-data pipeline (``utdebug train data``): problems/s and sandbox
executions/s, here and (``--ray``) on a Ray instance this script starts.

Run from the repository root::

    .venv/bin/python benchmarks/perf/train_throughput.py                  # 60 problems, ~1 min
    .venv/bin/python benchmarks/perf/train_throughput.py --problems 8     # a quick check
    .venv/bin/python benchmarks/perf/train_throughput.py --ray            # also on Ray

The jobs are the pipeline's own (:func:`utdebug.train.pipeline.process_problem`) on the first
``--problems`` MBPP+ problems that are not in MBPP+Fix (Hard) (the local
``MbppPlus-prerelease.jsonl.gz``), with AST-mutation corruptions and the SIMULATED model for
stages II-III (no language model: what is measured is the pipeline and the sandbox, not a
model's latency). Each pass runs every job through a runner of :mod:`utdebug.distributed`:

- **local**: ``--workers`` threads over one sandbox in this process (``utdebug train data``);
- with ``--ray``, **ray cold** and **ray warm**: a Ray instance on this machine
  (``local-cluster``, ``--workers`` CPUs); the cold pass pays for the worker processes and
  their sandboxes (each starts its own, and a second one for the string-hash check), the warm
  pass reuses them.

A sandbox execution is one input of one program run in a confined child; the records count
them. Printed: one ``PASS`` line per pass, and whether the passes' examples agree
(``AGREEMENT``: the pipeline is deterministic for a seed). Exit status: 0 done, 2 a usage or
dataset error or Ray missing, 3 the sandbox cannot start with all of its layers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from utdebug.data.datasets import DatasetError
from utdebug.distributed import JobPool, PoolOptions, PoolUnavailable, make_pool
from utdebug.sandbox import SandboxConfig, SandboxUnavailable
from utdebug.train.decontam import build_index
from utdebug.train.pipeline import process_problem
from utdebug.train.settings import Job, Settings, job_key
from utdebug.train.sources import load_mbpp_plus

REPO = Path(__file__).resolve().parents[2]
EXIT_OK, EXIT_USAGE, EXIT_SANDBOX = 0, 2, 3


@dataclass
class PassResult:
    name: str
    wall: float
    records: list[dict[str, Any]]

    @property
    def problems(self) -> int:
        return len(self.records)

    @property
    def executions(self) -> int:
        return sum(int(r["executions"]) for r in self.records)

    @property
    def examples(self) -> int:
        return sum(len(r["examples"]) for r in self.records)

    def line(self) -> str:
        return (
            f"PASS {self.name:9s} {self.problems} problems {self.executions:,} executions in "
            f"{self.wall:.2f} s: {self.problems / self.wall:.2f} problems/s, "
            f"{self.executions / self.wall:,.0f} executions/s, {self.examples} examples "
            "(SIMULATED)"
        )


def one_pass(name: str, runner: JobPool, jobs: list[Job]) -> PassResult:
    t0 = time.perf_counter()
    records: list[dict[str, Any]] = []
    for _, result in runner.map(process_problem, jobs):
        if isinstance(result, BaseException):
            raise result
        records.append(result)
    records.sort(key=lambda r: int(r["index"]))
    return PassResult(name, time.perf_counter() - t0, records)


def examples_of(p: PassResult) -> list[Any]:
    return [e for r in p.records for e in r["examples"]]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=None, help="default: $UTDEBUG_DATA_DIR, "
                    "else ../shared/datasets next to the repository")  # fmt: skip
    ap.add_argument("--problems", type=int, default=60, help="the first N problems (60)")
    ap.add_argument("--workers", type=int, default=2, help="threads / Ray workers (default 2)")
    ap.add_argument("--seed", type=int, default=0, help="the pipeline's seed (0)")
    ap.add_argument("--ray", action="store_true", help="also on a Ray instance started here")
    ap.add_argument("--json", action="store_true", help="the numbers as JSON on stdout")
    args = ap.parse_args(argv)
    if args.workers < 1 or args.problems < 1:
        ap.error("--workers and --problems must be at least 1")
    report = sys.stderr if args.json else sys.stdout
    env = os.environ.get("UTDEBUG_DATA_DIR")
    data_dir = args.data_dir or (Path(env) if env else REPO.parent / "shared" / "datasets")
    try:
        loaded = load_mbpp_plus(data_dir=data_dir, download=False)
        index = build_index(["hard"], data_dir=data_dir, cache_dir=None, download=False)
    except DatasetError as e:
        print(f"dataset error: {e}", file=sys.stderr)
        return EXIT_USAGE
    if index.splits["hard"]["status"] != "used":
        print(f"dataset error: {index.splits['hard']['reason']}", file=sys.stderr)
        return EXIT_USAGE
    problems = [p for p in loaded.problems if not index.matches(p)][: args.problems]
    settings = Settings(model="sim", perturb="ast", seed=args.seed)
    jobs = [Job(i, job_key(p, settings, False), p, settings) for i, p in enumerate(problems)]
    print(
        f"train_throughput: MBPP+ (not in MBPP+Fix (Hard)), {len(jobs)} problems, SIMULATED "
        f"model, AST perturbation; {args.workers} workers; {os.cpu_count()} CPUs; load average "
        f"{os.getloadavg()[0]:.2f}; python {sys.version.split()[0]}",
        file=report,
        flush=True,
    )
    passes: list[PassResult] = []
    starts: dict[str, float] = {}
    opts = PoolOptions(SandboxConfig(), concurrency=args.workers)
    try:
        with make_pool(None, opts) as local:
            passes.append(one_pass("local", local, jobs))
            print(passes[-1].line(), file=report, flush=True)
        if args.ray:
            t0 = time.perf_counter()
            with make_pool("local-cluster", opts) as ray:
                starts["ray"] = time.perf_counter() - t0
                print(f"START ray {starts['ray']:.2f} s ({ray.describe()})", file=report)
                for name in ("ray-cold", "ray-warm"):
                    passes.append(one_pass(name, ray, jobs))
                    print(passes[-1].line(), file=report, flush=True)
    except SandboxUnavailable as e:
        print(f"SANDBOX UNAVAILABLE: {e}", file=sys.stderr)
        return EXIT_SANDBOX
    except PoolUnavailable as e:
        print(f"RAY UNAVAILABLE: {e}", file=sys.stderr)
        return EXIT_USAGE
    base = examples_of(passes[0])
    agree = {p.name: examples_of(p) == base for p in passes[1:]}
    for name, same in agree.items():
        print(f"AGREEMENT local vs {name}: {'same examples' if same else 'EXAMPLES DIFFER'}",
              file=report)  # fmt: skip
    if args.json:
        payload = {
            "problems": len(jobs),
            "workers": args.workers,
            "simulated": True,
            "starts_s": starts,
            "passes": {
                p.name: {
                    "wall_s": p.wall,
                    "problems": p.problems,
                    "executions": p.executions,
                    "examples": p.examples,
                    "problems_per_s": p.problems / p.wall,
                    "executions_per_s": p.executions / p.wall,
                }
                for p in passes
            },
            "same_examples": agree,
        }
        print(json.dumps(payload, indent=1))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
