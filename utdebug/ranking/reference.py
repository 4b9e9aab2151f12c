"""Plain-Python loop versions of the ranking strategies: the reference for tests and benchmarks.

:func:`b4_loop` is Algorithm 1 of the B4 paper taken literally: for each distinct row ŷ (in
first-occurrence order) it builds x̂ by comparing every row with ŷ, collects the entries of E1
and E0 by walking the rows outside x̂, counts n1, n0, n_x and n_y, and scores the set with four
scalar ``scipy.special.betaln`` calls added in the order x, y, E1, E0. :func:`select_loop`
applies a tie rule the way the reference code does (FIRST: a strict ``>`` over the sets in
order, as in Algorithm 1; POOL: every set whose score ``==`` the maximum).

Nothing here is fast (O(K·N·M) Python work for K distinct rows); the vectorised
:mod:`utdebug.ranking.core` must agree with it bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import compress
from typing import NamedTuple

from numpy.typing import ArrayLike

from utdebug.ranking.core import (
    DEFAULT_ALPHA_XY,
    DEFAULT_BETA0,
    Strategy,
    TieRule,
    as_matrix,
    betaln,
    check_param,
    parse_strategy,
    parse_tie,
)

__all__ = [
    "SetCounts",
    "b4_counts_loop",
    "b4_loop",
    "b4_score_loop",
    "codet_loop",
    "codet_paper_loop",
    "consensus_sets_loop",
    "groups_loop",
    "maxpass_loop",
    "mbr_loop",
    "most_passed_loop",
    "random_loop",
    "select_from_groups",
    "select_loop",
]


Row = tuple[int, ...]
Scored = list[tuple[tuple[int, ...], float]]


def _rows(E: ArrayLike) -> list[Row]:
    """The validated rows of E as tuples of Python ints 0/1."""
    return [tuple(row) for row in as_matrix(E).astype(int).tolist()]


def consensus_sets_loop(E: ArrayLike) -> list[tuple[Row, tuple[int, ...]]]:
    """(ŷ, members) of every distinct row ŷ, in first-occurrence order."""
    rows = _rows(E)
    distinct: list[Row] = []
    seen: set[Row] = set()
    for row in rows:  # Algorithm 1, line 1: Deduplicate
        if row not in seen:
            seen.add(row)
            distinct.append(row)
    out = []
    for y_hat in distinct:
        members = tuple(i for i, row in enumerate(rows) if row == y_hat)
        out.append((y_hat, members))
    return out


class SetCounts(NamedTuple):
    """Algorithm 1's counts for one consensus set."""

    members: tuple[int, ...]
    y_hat: Row
    n_x: int
    n_y: int
    n1: int
    size1: int  # |E1|
    n0: int
    size0: int  # |E0|


def b4_counts_loop(E: ArrayLike) -> list[SetCounts]:
    """Algorithm 1, lines 1-8, for every consensus set in first-occurrence order."""
    rows = _rows(E)
    distinct: list[Row] = []
    seen: set[Row] = set()
    for row in rows:  # line 1: Deduplicate, keeping first-occurrence order
        if row not in seen:
            seen.add(row)
            distinct.append(row)
    out: list[SetCounts] = []
    for y_hat in distinct:
        x_hat = [1 if row == y_hat else 0 for row in rows]  # line 4
        y_bar = tuple(1 - v for v in y_hat)
        e1: list[int] = []
        e0: list[int] = []
        for i, row in enumerate(rows):  # lines 5-6
            if x_hat[i] == 0:
                e1.extend(compress(row, y_hat))
                e0.extend(compress(row, y_bar))
        members = tuple(i for i, x in enumerate(x_hat) if x)
        out.append(
            SetCounts(members, y_hat, sum(x_hat), sum(y_hat), sum(e1), len(e1), sum(e0), len(e0))
        )
    return out


def b4_score_loop(c: SetCounts, n: int, m: int, beta0: float, alpha_xy: float) -> float:
    """log of Eq. (10) for one set: four scalar betaln calls, summed in the order x, y, E1, E0."""
    px = float(betaln(c.n_x + alpha_xy, n - c.n_x + 1))
    py = float(betaln(c.n_y + alpha_xy, m - c.n_y + 1))
    p1 = float(betaln(c.n1 + 1, c.size1 - c.n1 + 1))
    p0 = float(betaln(c.n0 + 1, c.size0 - c.n0 + beta0))
    return px + py + p1 + p0


def b4_loop(
    E: ArrayLike, beta0: float = DEFAULT_BETA0, alpha_xy: float = DEFAULT_ALPHA_XY
) -> Scored:
    """(members, log score) of every consensus set, in Algorithm 1's iteration order."""
    b = check_param("beta0", beta0)
    a = check_param("alpha_xy", alpha_xy)
    counts = b4_counts_loop(E)
    n = sum(c.n_x for c in counts)
    m = len(counts[0].y_hat)
    return [(c.members, b4_score_loop(c, n, m, b, a)) for c in counts]


def codet_loop(E: ArrayLike) -> Scored:
    """CodeT as in the B4 reference code: n_y * n_x ** 0.5 per consensus set."""
    return [(mem, sum(y) * len(mem) ** 0.5) for y, mem in consensus_sets_loop(E)]


def codet_paper_loop(E: ArrayLike) -> Scored:
    """CodeT as written in the B4 paper: n_x * n_y per consensus set."""
    return [(mem, float(len(mem) * sum(y))) for y, mem in consensus_sets_loop(E)]


def mbr_loop(E: ArrayLike) -> Scored:
    """MBR-exec: n_x per consensus set."""
    return [(mem, float(len(mem))) for _, mem in consensus_sets_loop(E)]


def maxpass_loop(E: ArrayLike) -> Scored:
    """MaxPass: solutions grouped by row sum (first-occurrence order of the sums), score = sum."""
    by_sum: dict[int, list[int]] = {}
    for i, row in enumerate(_rows(E)):
        by_sum.setdefault(sum(row), []).append(i)
    return [(tuple(mem), float(s)) for s, mem in by_sum.items()]


def most_passed_loop(E: ArrayLike) -> Scored:
    """MostPassed: every solution its own group, score = row sum."""
    return [((i,), float(sum(row))) for i, row in enumerate(_rows(E))]


def random_loop(E: ArrayLike) -> Scored:
    """Random: one group of every solution, score 0.0."""
    return [(tuple(range(len(_rows(E)))), 0.0)]


def groups_loop(
    E: ArrayLike,
    strategy: Strategy | str,
    beta0: float = DEFAULT_BETA0,
    alpha_xy: float = DEFAULT_ALPHA_XY,
) -> Scored:
    """The loop groups of ``strategy`` in first-occurrence order (before sorting)."""
    s = parse_strategy(strategy)
    if s is Strategy.B4:
        return b4_loop(E, beta0, alpha_xy)
    loops: dict[Strategy, Callable[[ArrayLike], Scored]] = {
        Strategy.CODET: codet_loop,
        Strategy.CODET_PAPER: codet_paper_loop,
        Strategy.MBR_EXEC: mbr_loop,
        Strategy.MAXPASS: maxpass_loop,
        Strategy.MOST_PASSED: most_passed_loop,
        Strategy.RANDOM: random_loop,
    }
    return loops[s](E)


def select_loop(
    E: ArrayLike,
    strategy: Strategy | str = Strategy.B4,
    tie: TieRule | str = TieRule.FIRST,
    beta0: float = DEFAULT_BETA0,
    alpha_xy: float = DEFAULT_ALPHA_XY,
) -> tuple[int, ...]:
    """The rows selected by the loop version of ``strategy`` under ``tie``, ascending."""
    return select_from_groups(groups_loop(E, strategy, beta0, alpha_xy), tie)


def select_from_groups(groups: Scored, tie: TieRule | str = TieRule.FIRST) -> tuple[int, ...]:
    """The selection from loop groups listed in first-occurrence order (see :func:`groups_loop`).

    FIRST: the first group with the maximum score (a strict ``>`` scan, as in Algorithm 1).
    POOL: every group whose score ``==`` the maximum, pooled and sorted.
    """
    t = parse_tie(tie)
    if t is TieRule.FIRST:
        best: tuple[int, ...] = ()
        best_score = float("-inf")
        for members, score in groups:  # Algorithm 1, lines 10-11: strict '>'
            if not best or score > best_score:
                best, best_score = members, score
        return best
    top = max(score for _, score in groups)
    return tuple(sorted(i for members, score in groups if score == top for i in members))
