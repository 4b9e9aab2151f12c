"""B4's simulated study, many trials at once: the ranking strategies' pass@1 on a block of trials.

:func:`batched_pass_at_1` ranks a whole block of drawn trials with numpy: the same consensus
sets, scores and tie rules as :func:`utdebug.ranking.rank`, value for value (the tests compare
the two trial by trial), about 10x faster than ranking trial by trial.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, cast

import numpy as np
from numpy.typing import NDArray

from utdebug.ranking import Strategy, TieRule
from utdebug.ranking.core import b4_log_score

BATCHED: Final = frozenset(
    {
        Strategy.B4,
        Strategy.CODET,
        Strategy.CODET_PAPER,
        Strategy.MAXPASS,
        Strategy.MOST_PASSED,
        Strategy.MBR_EXEC,
        Strategy.RANDOM,
    }
)
"""The strategies :func:`batched_pass_at_1` knows; others make :func:`simulate` rank trial by
trial with :func:`utdebug.ranking.rank_all`."""

_root_table: list[float] = [0.0]


def _roots(top: int) -> NDArray[np.float64]:
    """``k ** 0.5`` for k <= top with Python's (libm ``pow``) rounding, as the ranking uses for
    CodeT; ``np.sqrt`` differs in the last bit for a few k (the first is 2921)."""
    if len(_root_table) <= top:
        _root_table.extend(k**0.5 for k in range(len(_root_table), top + 1))
    return np.array(_root_table[: top + 1], dtype=np.float64)


def _row_words(e: NDArray[np.bool_]) -> NDArray[np.uint64]:
    """(B, N, M) → (B, N, W): each row packed into W = ⌈M/64⌉ 64-bit words (equal rows, equal
    words; W = 0 when M = 0)."""
    b, n = e.shape[:2]
    packed = np.packbits(e, axis=2)
    w = -(-packed.shape[2] // 8)
    buf = np.zeros((b, n, 8 * w), dtype=np.uint8)
    buf[:, :, : packed.shape[2]] = packed
    return buf.view(np.uint64)


def batched_pass_at_1(
    x: NDArray[np.bool_],
    e: NDArray[np.bool_],
    strategies: Sequence[Strategy],
    tie: TieRule,
    beta0: float,
    alpha_xy: float,
) -> NDArray[np.float64]:
    """pass@1 of every strategy (rows) on every trial (columns) of a batch x (B, N), E (B, N, M).

    Equal, value for value, to ``rank(E[t], s, tie=tie, beta0=beta0, alpha_xy=alpha_xy)
    .pass_at_1(x[t])`` (the tests check it on random and tie-heavy matrices): the same consensus
    sets in first-occurrence order, the same scores computed with the same operations in the
    same order (so exact ties coincide), the first top set (FIRST) or every top set (POOL)."""
    bsz, n, m = e.shape
    # Consensus sets of every trial at once: sort the rows by (trial, row bits), stably, so
    # each run of equal keys is one set and its first element is the set's first row.
    words = _row_words(e).reshape(bsz * n, -1)
    trial = np.repeat(np.arange(bsz), n)
    order = np.lexsort((*(words[:, w] for w in range(words.shape[1])), trial))
    new = np.ones(bsz * n, dtype=np.bool_)
    new[1:] = trial[order[1:]] != trial[order[:-1]]
    for w in range(words.shape[1]):
        col = words[order, w]
        new[1:] |= col[1:] != col[:-1]
    set_of = np.empty(bsz * n, dtype=np.intp)
    set_of[order] = np.cumsum(new) - 1  # set id of each row
    starts = np.flatnonzero(new)
    size = np.diff(np.append(starts, bsz * n))
    first_flat = order[starts]  # the first row of each set (flattened index)
    rows = np.arange(n)
    first = (first_flat[set_of] - trial * n).reshape(bsz, n)  # the first row equal to row i
    rep = first == rows  # row i opens a consensus set
    nx = size[set_of].reshape(bsz, n).astype(np.int64)
    correct = np.bincount(set_of, weights=x.reshape(-1), minlength=starts.size)
    correct_in_set = correct[set_of].reshape(bsz, n).astype(np.int64)
    ny = e.sum(axis=2, dtype=np.int64)  # tests passed by row i (= n_y of its set)
    xi = x.astype(np.int64)
    out = np.empty((len(strategies), bsz), dtype=np.float64)
    lazy: dict[str, NDArray[Any]] = {}

    def b4_scores() -> NDArray[np.float64]:
        c = e.sum(axis=1, dtype=np.int64)  # column sums
        cu = np.einsum("bnm,bm->bn", e.astype(np.int64), c)
        n1 = cu - nx * ny
        n0 = c.sum(axis=1, dtype=np.int64)[:, None] - cu
        return b4_log_score(n, m, nx, ny, n1, n0, beta0, alpha_xy)

    def pick_set(score: NDArray[np.float64]) -> NDArray[np.float64]:
        masked = np.where(rep, score, -np.inf)
        if tie is TieRule.FIRST:
            k = masked.argmax(axis=1)[:, None]
            hit = np.take_along_axis(correct_in_set, k, 1)[:, 0]
            return hit / np.take_along_axis(nx, k, 1)[:, 0]
        top = masked.max(axis=1, keepdims=True)
        chosen = masked == top  # the top sets, by their first row
        return _fraction(np.take_along_axis(chosen, first, 1), x)

    for k, s in enumerate(strategies):
        if s is Strategy.B4:
            out[k] = pick_set(b4_scores())
        elif s is Strategy.CODET:
            out[k] = pick_set(ny * _roots(n)[nx])
        elif s is Strategy.CODET_PAPER:
            out[k] = pick_set((nx * ny).astype(np.float64))
        elif s is Strategy.MBR_EXEC:
            out[k] = pick_set(nx.astype(np.float64))
        elif s in (Strategy.MAXPASS, Strategy.MOST_PASSED):
            if s is Strategy.MOST_PASSED and tie is TieRule.FIRST:
                out[k] = np.take_along_axis(xi, ny.argmax(axis=1)[:, None], 1)[:, 0] / 1
            else:
                if "top" not in lazy:
                    lazy["top"] = ny == ny.max(axis=1, keepdims=True)
                out[k] = _fraction(lazy["top"], x)
        elif s is Strategy.RANDOM:
            out[k] = xi.sum(axis=1) / n
        else:  # pragma: no cover - simulate() checks BATCHED first
            raise ValueError(f"no batched form for {s.value}")
    return out


def _fraction(selected: NDArray[np.bool_], x: NDArray[np.bool_]) -> NDArray[np.float64]:
    """Per trial: correct selected / selected."""
    return cast(
        NDArray[np.float64],
        (selected & x).sum(axis=1, dtype=np.int64) / selected.sum(axis=1, dtype=np.int64),
    )
