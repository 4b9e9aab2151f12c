"""Metrics of the Scoring-Verifiers benchmarks: how well a verifier scores candidate solutions.

Per problem there are n candidate solutions with *expected* scores ``e`` (the fraction of the
benchmark's predefined tests each passes) and *predicted* scores ``p`` (what the verifier says:
for a test generator, the fraction of its generated tests each passes). Both are numbers in
[0, 1]. :func:`score_problem` computes, for one problem:

- **Top-1** with tie-fractional credit: with T = {i : p_i = max p} (the verifier's tied top)
  and B* = {i : e_i = max e} (every expected maximiser), Top-1 = |T ∩ B*| / |T|: the chance
  that a uniformly random tie-break picks a truly best solution.
- **Bottom-1**: the same with minima.
- **Spearman's ρ** with average ranks for ties (the Pearson correlation of the average ranks;
  equal to ``scipy.stats.spearmanr``).
- **Kendall's τ-b** (tie-corrected; equal to ``scipy.stats.kendalltau``'s default).
- **MAE**: the mean of |e_i − p_i| over the problem's solutions.

:func:`aggregate` averages every metric **per problem** (each problem weighs the same however
many solutions it has): Top-1, Bottom-1 and MAE over all problems; ρ and τ over the problems
where they are defined (below). MAE is first averaged within each problem, then over problems;
the pooled MAE over all solutions at once (what the authors' ``evaluate.py`` prints as
``total_MAE``) is reported beside it as ``mae_pooled``. The two agree when every problem has
the same number of solutions (HE-R+, MBPP-R+: 5 each) and differ on HE-R and MBPP-R (2 to 5).

The undefined-ρ rule (the paper does not say; this is the project's decision):

- **n < 2**: nothing to rank. ρ and τ are ``None``; the problem is left out of the ρ/τ averages
  and counted in ``excluded_too_few``. (It still counts for Top-1, Bottom-1 and MAE, where a
  single solution is trivially first and last.)
- **constant expected scores** (every solution scores the same on the predefined tests): the
  true ranking is undefined; ρ and τ are ``None``, left out and counted in
  ``excluded_constant_expected``. This cannot happen in the released sets, whose expected
  scores are unique within a problem.
- **constant prediction** (the verifier gives every solution the same score, e.g. all pass or
  all fail its tests, or it produced no tests): ρ = τ = 0. A verifier that cannot tell the
  solutions apart earns no correlation credit; dropping such problems would reward giving up.
  Counted in ``constant_prediction``. (The authors' ``evaluate.py`` also maps the NaN of a
  constant prediction to 0; it maps n < 2 to 0 as well, where this module excludes it.)

No result is ever NaN. Bad input raises :class:`ValueError` with a message saying what is
wrong: different lengths, no solutions, non-finite values, scores outside [0, 1].

Ties are exact equality of the given floats (a test-pass fraction k/m is the same float for the
same k and m). The module is pure: numpy only, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "ProblemScores",
    "VerifierScores",
    "aggregate",
    "average_ranks",
    "kendall_tau_b",
    "score_problem",
    "spearman_rho",
]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class ProblemScores:
    """The metrics of one problem (see the module docstring for the rules)."""

    n: int
    """Number of candidate solutions."""
    top1: float
    bottom1: float
    spearman: float | None
    """``None`` when excluded: n < 2 or constant expected scores."""
    kendall: float | None
    mae: float
    constant_prediction: bool
    """The verifier gave every solution the same score (ρ = τ = 0 unless excluded)."""
    constant_expected: bool = False
    """Every solution has the same expected score (ρ, τ excluded)."""

    @property
    def ranked(self) -> bool:
        """Whether the problem counts in the ρ/τ averages."""
        return self.spearman is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "top1": self.top1,
            "bottom1": self.bottom1,
            "spearman": self.spearman,
            "kendall": self.kendall,
            "mae": self.mae,
            "constant_prediction": self.constant_prediction,
            "constant_expected": self.constant_expected,
        }


@dataclass(frozen=True, slots=True)
class VerifierScores:
    """Per-problem averages over a set of problems (``None`` means: no problem to average)."""

    problems: int
    solutions: int
    top1: float | None
    bottom1: float | None
    spearman: float | None
    """Mean over the ``ranked`` problems only."""
    kendall: float | None
    mae: float | None
    """Mean over problems of each problem's mean absolute error."""
    mae_pooled: float | None
    """Mean absolute error over all solutions at once (the authors' ``total_MAE``)."""
    ranked: int
    """Problems in the ρ/τ averages."""
    excluded_too_few: int
    """Problems with fewer than 2 solutions (left out of ρ/τ)."""
    excluded_constant_expected: int
    """Problems whose expected scores are all equal (left out of ρ/τ)."""
    constant_prediction: int
    """Ranked problems where the verifier gave every solution the same score (ρ = τ = 0)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "problems": self.problems,
            "solutions": self.solutions,
            "top1": self.top1,
            "bottom1": self.bottom1,
            "spearman": self.spearman,
            "kendall": self.kendall,
            "mae": self.mae,
            "mae_pooled": self.mae_pooled,
            "ranked": self.ranked,
            "excluded_too_few": self.excluded_too_few,
            "excluded_constant_expected": self.excluded_constant_expected,
            "constant_prediction": self.constant_prediction,
        }


def _vector(values: Sequence[float] | FloatArray, what: str) -> FloatArray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} scores must be numbers: {exc}") from None
    if arr.ndim != 1:
        raise ValueError(f"{what} scores must be a flat sequence, got shape {arr.shape}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{what} score {i} is not finite: {arr[i]!r}")
    out = np.flatnonzero((arr < 0.0) | (arr > 1.0))
    if out.size:
        i = int(out[0])
        raise ValueError(f"{what} score {i} is outside [0, 1]: {arr[i]!r}")
    return arr


def _check_pair(
    expected: Sequence[float] | FloatArray, predicted: Sequence[float] | FloatArray
) -> tuple[FloatArray, FloatArray]:
    e = _vector(expected, "expected")
    p = _vector(predicted, "predicted")
    if e.size != p.size:
        raise ValueError(
            f"expected and predicted scores differ in length: {e.size} expected, {p.size} predicted"
        )
    if e.size == 0:
        raise ValueError("a problem needs at least one solution (got 0 scores)")
    return e, p


def average_ranks(x: Sequence[float] | FloatArray) -> FloatArray:
    """1-based ranks of ``x`` in ascending order, tied values sharing their average rank."""
    arr = np.asarray(x, dtype=np.float64)
    n = arr.size
    if n == 0:
        return np.empty(0, dtype=np.float64)
    order = np.argsort(arr, kind="mergesort")
    sorted_x = arr[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_x[1:] != sorted_x[:-1], [True])))
    counts = np.diff(starts)
    averages = (starts[:-1] + starts[1:] + 1) / 2.0
    ranks = np.empty(n, dtype=np.float64)
    ranks[order] = np.repeat(averages, counts)
    return ranks


def _pearson(a: FloatArray, b: FloatArray) -> float:
    da, db = a - a.mean(), b - b.mean()
    denom = math.sqrt(float(np.dot(da, da)) * float(np.dot(db, db)))
    if denom == 0.0:
        return 0.0
    return min(1.0, max(-1.0, float(np.dot(da, db)) / denom))


def spearman_rho(x: Sequence[float] | FloatArray, y: Sequence[float] | FloatArray) -> float:
    """Spearman's ρ with average ranks (0.0 where a side is constant; see the module rule)."""
    return _pearson(average_ranks(x), average_ranks(y))


def kendall_tau_b(x: Sequence[float] | FloatArray, y: Sequence[float] | FloatArray) -> float:
    """Kendall's τ-b (0.0 where a side is constant; see the module rule)."""
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    n = a.size
    if n < 2:
        return 0.0
    iu = np.triu_indices(n, k=1)
    sa = np.sign(a[:, None] - a[None, :])[iu]
    sb = np.sign(b[:, None] - b[None, :])[iu]
    pairs = sa.size
    untied_a = int(np.count_nonzero(sa))
    untied_b = int(np.count_nonzero(sb))
    if untied_a == 0 or untied_b == 0 or pairs == 0:
        return 0.0
    s = float(np.dot(sa, sb))
    return min(1.0, max(-1.0, s / math.sqrt(float(untied_a) * float(untied_b))))


def _extreme_credit(e: FloatArray, p: FloatArray, top: bool) -> float:
    target = e.max() if top else e.min()
    chosen = p == (p.max() if top else p.min())
    hits = np.count_nonzero(chosen & (e == target))
    return float(hits) / float(np.count_nonzero(chosen))


def score_problem(
    expected: Sequence[float] | FloatArray, predicted: Sequence[float] | FloatArray
) -> ProblemScores:
    """The metrics of one problem; ``ValueError`` for bad input (see the module docstring)."""
    e, p = _check_pair(expected, predicted)
    n = int(e.size)
    constant_p = bool(np.all(p == p[0]))
    constant_e = bool(np.all(e == e[0]))
    rho: float | None
    tau: float | None
    if n < 2 or constant_e:
        rho = tau = None
    elif constant_p:
        rho = tau = 0.0
    else:
        rho = spearman_rho(e, p)
        tau = kendall_tau_b(e, p)
    return ProblemScores(
        n=n,
        top1=_extreme_credit(e, p, top=True),
        bottom1=_extreme_credit(e, p, top=False),
        spearman=rho,
        kendall=tau,
        mae=float(np.mean(np.abs(e - p))),
        constant_prediction=constant_p,
        constant_expected=constant_e,
    )


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def aggregate(scores: Iterable[ProblemScores]) -> VerifierScores:
    """Per-problem averages (in the given order; sums are exact with ``math.fsum``)."""
    items = list(scores)
    ranked = [s for s in items if s.ranked]
    total_abs = math.fsum(s.mae * s.n for s in items)
    solutions = sum(s.n for s in items)
    return VerifierScores(
        problems=len(items),
        solutions=solutions,
        top1=_mean([s.top1 for s in items]),
        bottom1=_mean([s.bottom1 for s in items]),
        spearman=_mean([s.spearman for s in ranked if s.spearman is not None]),
        kendall=_mean([s.kendall for s in ranked if s.kendall is not None]),
        mae=_mean([s.mae for s in items]),
        mae_pooled=total_abs / solutions if solutions else None,
        ranked=len(ranked),
        excluded_too_few=sum(1 for s in items if s.n < 2),
        excluded_constant_expected=sum(1 for s in items if s.n >= 2 and s.constant_expected),
        constant_prediction=sum(1 for s in ranked if s.constant_prediction),
    )
