"""Wall time of a SIMULATED debugging run of MBPP+Fix (Hard), cold and warm.

Run from the repository root::

    .venv/bin/python benchmarks/perf/sim_speed.py              # whole split, ~3-4 min
    .venv/bin/python benchmarks/perf/sim_speed.py --limit 5    # a quick check

It runs ``utdebug bench --split hard --model sim`` (default settings: UTGen, n=3, k=8, three
rounds, private tests evaluated after every round) twice in a subprocess with a fresh, empty
cache folder: **cold** (every program is run in the sandbox) and **warm** (private-test results
of the first run are reused). It prints both wall times, pass@1 and the mean pass
rate after each round of both runs, and ``TARGET cold < 180 s: PASS|MISS``. The two runs agree
up to timing: time limits are wall-clock, so the verdict of an input that runs close to its
limit (a few Hard programs take 1-4 s per input) can differ between two executions, and the
generated tests of the warm run are executed again. All results come from the simulated
model, not a language model.

Exit status: 0 when both runs completed (whatever the target), 1 when a run failed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
TARGET_S = 180.0


def _run(args: list[str], cache: Path, out: Path) -> tuple[float, dict[str, Any]]:
    cmd = [
        sys.executable,
        "-m",
        "utdebug",
        "bench",
        "--split",
        "hard",
        "--model",
        "sim",
        "--cache-dir",
        str(cache),
        "--out",
        str(out),
        "--json",
        *args,
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(
        cmd,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1800,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_OFFLINE_MODE": "true"},
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        print(proc.stderr[-2000:], file=sys.stderr)
        raise SystemExit(1)
    return wall, json.loads(proc.stdout)["summary"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--data-dir",
        default=os.environ.get("UTDEBUG_DATA_DIR") or str(REPO.parent / "shared" / "datasets"),
    )
    ap.add_argument("--limit", type=int, default=None, help="only the first N problems")
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON")
    a = ap.parse_args()
    extra = ["--data-dir", a.data_dir] + (["--limit", str(a.limit)] if a.limit else [])
    with tempfile.TemporaryDirectory(prefix="utdebug-sim-speed-") as tmp:
        cache = Path(tmp) / "cache"
        cold, s1 = _run(extra, cache, Path(tmp) / "cold")
        warm, s2 = _run(extra, cache, Path(tmp) / "warm")
    same = s1["rounds"] == s2["rounds"]
    numbers = {
        "label": "SIMULATED",
        "problems": s1["problems"],
        "cold_seconds": round(cold, 1),
        "warm_seconds": round(warm, 1),
        "target_seconds": TARGET_S,
        "cold_met": cold < TARGET_S,
        "results_agree": same,
        "pass_at_1": [r["pass_at_1"] for r in s1["rounds"]],
        "mean_pass_rate": [r["mean_pass_rate"] for r in s1["rounds"]],
        "warm_pass_at_1": [r["pass_at_1"] for r in s2["rounds"]],
        "warm_mean_pass_rate": [r["mean_pass_rate"] for r in s2["rounds"]],
        "load_average": os.getloadavg()[0],
    }
    if a.json:
        print(json.dumps(numbers, indent=2))
    else:
        print(f"SIMULATED run of {s1['problems']} Hard problems (default settings)")
        print(
            f"COLD {cold:.1f} s   WARM {warm:.1f} s   (load average {numbers['load_average']:.2f})"
        )
        for r, w in zip(s1["rounds"], s2["rounds"], strict=True):
            print(
                f"  round {r['round']}: pass@1 {100 * r['pass_at_1']:.2f}% "
                f"(warm {100 * w['pass_at_1']:.2f}%)  mean pass rate "
                f"{100 * r['mean_pass_rate']:.2f}% (warm {100 * w['mean_pass_rate']:.2f}%)"
            )
        print(f"RESULTS {'AGREE' if same else 'DIFFER (timing; see the module docstring)'}")
        print(f"TARGET cold < {TARGET_S:g} s: {'PASS' if cold < TARGET_S else 'MISS'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
