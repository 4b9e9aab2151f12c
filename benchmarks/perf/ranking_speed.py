"""Speed of the vectorised B4 (and CodeT) ranking against the Algorithm 1 loop reference.

Run from the repository root::

    .venv/bin/python benchmarks/perf/ranking_speed.py                  # N = M = 100..400, ~1 min
    .venv/bin/python benchmarks/perf/ranking_speed.py --sizes 20,40 --matrices 2 \\
        --repeat-loop 1 --repeat-fast 5                                # a quick check

For each size N (N = M) it draws ``--matrices`` passing matrices from the B4 paper's generative
process at the simulated study's default parameters (θx = 0.2, θy = 0.3, θ1 = 0.4, θ0 = 0.1;
``numpy.random.default_rng(seed + N)``), then times with ``time.perf_counter``:

* **loop**: ``select_loop(E, "b4")`` — Algorithm 1 in plain Python (``b4_loop``) plus the strict
  ``>`` selection, ``--repeat-loop`` times per matrix;
* **vectorised**: ``rank(E, "b4")`` — the full :class:`~utdebug.ranking.Ranking` (every group
  built), ``--repeat-fast`` times per matrix after one warm-up call.

Each printed time is the median over all calls of all matrices of that size. Agreement means,
for every matrix: identical per-set log scores (``==`` on floats, ``b4_loop`` against
``b4_scores``) and identical selections under both tie rules. CodeT (reference formula
n_y · n_x ** 0.5) is timed and checked the same way. B4 uses ``--beta0``/``--alpha-xy``
(default B4(4,3)).

Printed lines, per size::

    N=M=400 loop 812.3 ms  vectorised 0.65 ms  speed-up 1250x  agree yes
    N=M=400 b4_scores only 0.40 ms  speed-up 2030x
    N=M=400 codet loop 20.1 ms  vectorised 0.31 ms  speed-up 65x  agree yes

(``b4_scores only``: the scores without building the Ranking's groups, against the same loop.
The CodeT loop is this project's plain loop, which groups rows with tuple equality and a dict;
it is much cheaper than Algorithm 1, so its speed-up is small.)

then ``TARGET speed-up at N=M=<largest size> >= 100x: PASS|MISS`` (B4).

Exit status: 0 whatever the speed; 1 when the two implementations disagree; 2 for bad options.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from utdebug.ranking import DEFAULT_ALPHA_XY, DEFAULT_BETA0, b4_scores, rank
from utdebug.ranking.reference import b4_loop, codet_loop, select_from_groups, select_loop

TARGET_X = 100.0
THETAS = (0.2, 0.3, 0.4, 0.1)  # θx, θy, θ1, θ0: the B4 paper's simulated defaults


def generate(rng: np.random.Generator, n: int, m: int) -> np.ndarray[Any, Any]:
    """One passing matrix from the B4 generative process (paper Fig. 2)."""
    tx, ty, t1, t0 = THETAS
    x = rng.random(n) < tx
    y = rng.random(m) < ty
    noise = rng.random((n, m)) < np.where(y, t1, t0)
    return np.where(x[:, None], y[None, :], noise)


def _times(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def _ms(seconds: float) -> str:
    ms = seconds * 1e3
    if ms >= 100:
        return f"{ms:.1f}"
    if ms >= 0.1:
        return f"{ms:.2f}"
    return f"{ms:.3f}"


def _agree_b4(E: np.ndarray[Any, Any], beta0: float, alpha_xy: float) -> bool:
    loop = b4_loop(E, beta0, alpha_xy)
    first, scores = b4_scores(E, beta0, alpha_xy)
    if first.tolist() != [mem[0] for mem, _ in loop] or scores.tolist() != [s for _, s in loop]:
        return False
    return all(
        rank(E, "b4", tie=tie, beta0=beta0, alpha_xy=alpha_xy).selected
        == select_from_groups(loop, tie)
        for tie in ("first", "pool")
    )


def _agree_codet(E: np.ndarray[Any, Any]) -> bool:
    loop = codet_loop(E)
    r = rank(E, "codet", tie="pool")
    got = {g.members: g.score for g in r.groups}
    if len(got) != len(loop) or any(got.get(mem) != s for mem, s in loop):
        return False
    return all(
        rank(E, "codet", tie=tie).selected == select_from_groups(loop, tie)
        for tie in ("first", "pool")
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100,200,300,400", help="comma-separated N (= M)")
    ap.add_argument("--matrices", type=int, default=5, help="matrices per size")
    ap.add_argument("--repeat-loop", type=int, default=3, help="loop calls per matrix")
    ap.add_argument("--repeat-fast", type=int, default=200, help="vectorised calls per matrix")
    ap.add_argument("--seed", type=int, default=1000, help="matrices use default_rng(seed + N)")
    ap.add_argument("--beta0", type=float, default=DEFAULT_BETA0)
    ap.add_argument("--alpha-xy", type=float, default=DEFAULT_ALPHA_XY)
    a = ap.parse_args()
    try:
        sizes = [int(s) for s in a.sizes.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--sizes must be comma-separated integers, got {a.sizes!r}")
    if not sizes or min(sizes) < 1 or min(a.matrices, a.repeat_loop, a.repeat_fast) < 1:
        ap.error("sizes, --matrices and the repeat counts must be >= 1")
    beta0, alpha = a.beta0, a.alpha_xy

    print(
        f"B4(beta0={beta0:g}, alpha_xy={alpha:g}) on B4-process matrices "
        f"(theta x/y/1/0 = {'/'.join(f'{t:g}' for t in THETAS)}), {a.matrices} per size, "
        f"loop x{a.repeat_loop}, vectorised x{a.repeat_fast}; medians of time.perf_counter"
    )
    all_agree = True
    speedups: dict[int, float] = {}
    for n in sizes:
        rng = np.random.default_rng(a.seed + n)
        mats = [generate(rng, n, n) for _ in range(a.matrices)]
        rows: dict[str, tuple[list[float], list[float], bool]] = {}
        scores_t: list[float] = []
        for label in ("b4", "codet"):
            loop_t: list[float] = []
            fast_t: list[float] = []
            agree = True
            for E in mats:
                if label == "b4":

                    def slow(E: Any = E) -> object:
                        return select_loop(E, "b4", "first", beta0, alpha)

                    def fast(E: Any = E) -> object:
                        return rank(E, "b4", beta0=beta0, alpha_xy=alpha)

                    def scores(E: Any = E) -> object:
                        return b4_scores(E, beta0, alpha)

                    scores()  # warm-up
                    scores_t += _times(scores, a.repeat_fast)
                    ok = _agree_b4(E, beta0, alpha)
                else:

                    def slow(E: Any = E) -> object:
                        return select_loop(E, "codet")

                    def fast(E: Any = E) -> object:
                        return rank(E, "codet")

                    ok = _agree_codet(E)
                loop_t += _times(slow, a.repeat_loop)
                fast()  # warm-up
                fast_t += _times(fast, a.repeat_fast)
                agree = agree and ok
            rows[label] = (loop_t, fast_t, agree)
        for label, (loop_t, fast_t, agree) in rows.items():
            lm, fm = statistics.median(loop_t), statistics.median(fast_t)
            x = lm / fm
            if label == "b4":
                speedups[n] = x
            all_agree = all_agree and agree
            name = "" if label == "b4" else f"{label} "
            print(
                f"N=M={n} {name}loop {_ms(lm)} ms  vectorised {_ms(fm)} ms  "
                f"speed-up {x:.0f}x  agree {'yes' if agree else 'NO'}",
                flush=True,
            )
            if label == "b4":
                sm = statistics.median(scores_t)
                print(f"N=M={n} b4_scores only {_ms(sm)} ms  speed-up {lm / sm:.0f}x", flush=True)
    top = max(sizes)
    verdict = "PASS" if speedups[top] >= TARGET_X else "MISS"
    print(f"TARGET speed-up at N=M={top} >= {TARGET_X:.0f}x: {verdict}")
    if not all_agree:
        print("DISAGREEMENT between the loop and the vectorised ranking", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
