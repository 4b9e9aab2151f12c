"""Vectorised ranking of solutions from a passing matrix (B4, CodeT, MBR-exec, MaxPass, ...).

The semantics, defaults and bad-input answers are documented in :mod:`utdebug.ranking`. This
module holds the fast implementation; :mod:`utdebug.ranking.reference` holds plain loops that
it agrees with bit for bit.

How it is fast (O(N·M) plus one sort of N keys):

1. Identical rows are grouped by packing each row into ⌈M/8⌉ bytes (``np.packbits``), viewing
   the packed row as one integer (M <= 64) or one ``np.void`` scalar, and calling ``np.unique``
   on that 1-D array. The groups are then re-numbered in first-occurrence order.
2. With c the column sums of E, T = Σc and u_k the row of consensus set k:
   n_y = Σu_k, cu = u_k·c, **n1 = cu − n_x·n_y** (the set's own rows put exactly n_y ones on
   S_y) and **n0 = T − cu** (the set's own rows have no ones off S_y).
3. The four ``betaln`` terms are computed as arrays and added in Algorithm 1's reference order
   (x, y, E1, E0), so the scores are bit-identical to the loop and exact ties coincide.
"""

from __future__ import annotations

import math
import numbers
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "DEFAULT_ALPHA_XY",
    "DEFAULT_BETA0",
    "SIM_ALPHA_XY",
    "SIM_BETA0",
    "Group",
    "Ranking",
    "RankingError",
    "Strategy",
    "TieRule",
    "as_matrix",
    "b4_log_score",
    "b4_scores",
    "rank",
    "rank_all",
]


def betaln(a: Any, b: Any) -> Any:
    """``scipy.special.betaln``, imported on first use (keeps importing this module cheap)."""
    from scipy.special import betaln as scipy_betaln  # type: ignore[import-untyped]

    return scipy_betaln(a, b)


DEFAULT_BETA0 = 1e4
DEFAULT_ALPHA_XY = 1e3
SIM_BETA0 = 10.0
SIM_ALPHA_XY = 10.0


class RankingError(ValueError):
    """Every bad input to the ranking functions (matrix, strategy, tie rule, hyperparameters)."""


class Strategy(StrEnum):
    """How solutions are grouped and scored; see :mod:`utdebug.ranking`."""

    B4 = "b4"
    CODET = "codet"
    CODET_PAPER = "codet_paper"
    MAXPASS = "maxpass"
    MOST_PASSED = "most_passed"
    MBR_EXEC = "mbr_exec"
    RANDOM = "random"


class TieRule(StrEnum):
    """Which top groups are selected when several share the top score."""

    FIRST = "first"
    POOL = "pool"


CONSENSUS_STRATEGIES = frozenset(
    {Strategy.B4, Strategy.CODET, Strategy.CODET_PAPER, Strategy.MBR_EXEC}
)


# --------------------------------------------------------------------------------------------
# Validation


def _parse_enum(value: object, enum: type[Strategy] | type[TieRule], what: str) -> Any:
    if isinstance(value, enum):
        return value
    if isinstance(value, str):
        try:
            return enum(value.strip().lower())
        except ValueError:
            pass
    choices = ", ".join(repr(e.value) for e in enum)
    raise RankingError(f"unknown {what} {value!r}; choose one of: {choices}")


def parse_strategy(value: Strategy | str) -> Strategy:
    """``value`` as a :class:`Strategy` (case-insensitive); RankingError listing the choices."""
    return cast(Strategy, _parse_enum(value, Strategy, "strategy"))


def parse_tie(value: TieRule | str) -> TieRule:
    """``value`` as a :class:`TieRule` (case-insensitive); RankingError listing the choices."""
    return cast(TieRule, _parse_enum(value, TieRule, "tie rule"))


def check_param(name: str, value: object) -> float:
    """A B4 hyperparameter as a float: finite and > 0, else RankingError."""
    if isinstance(value, str | bytes) or not isinstance(value, numbers.Real):
        raise RankingError(f"{name} must be a real number, got {value!r}")
    f = float(value)
    if not math.isfinite(f) or f <= 0.0:
        raise RankingError(
            f"{name} must be finite and > 0 (the B4 paper recommends > 1), got {value!r}"
        )
    return f


def _is_01_object(v: object) -> bool:
    if isinstance(v, bool | np.bool_):
        return True
    if isinstance(v, str | bytes) or not isinstance(v, numbers.Real):
        return False
    try:
        return bool(v == 0 or v == 1)
    except (TypeError, ValueError):  # pragma: no cover - exotic Real subclasses
        return False


def _where(index: tuple[int, ...]) -> str:
    if len(index) == 2:
        return f"row {index[0]}, column {index[1]}"
    return f"index {index[0]}"


def _bad_value(v: object, index: tuple[int, ...], what: str) -> RankingError:
    return RankingError(
        f"{what} must hold only 0/1 values (bool, int or float); found {v!r} "
        f"({type(v).__name__}) at {_where(index)}"
    )


def _as_bool(a: NDArray[Any], what: str) -> NDArray[np.bool_]:
    """Validate that every entry of ``a`` is 0/1 and return it as a bool array."""
    kind = a.dtype.kind
    if kind == "b":
        return np.ascontiguousarray(a, dtype=np.bool_)
    if kind in "iuf":
        bad = (a != 0) & (a != 1)  # NaN compares unequal to both
        if bad.any():
            index = tuple(int(i) for i in np.argwhere(bad)[0])
            raise _bad_value(a[index].item(), index, what)
        return np.ascontiguousarray(a == 1)
    if a.size == 0:
        return np.zeros(a.shape, dtype=np.bool_)
    if kind == "O":
        out = np.empty(a.shape, dtype=np.bool_)
        for index in np.ndindex(a.shape):
            v = a[index]
            if not _is_01_object(v):
                raise _bad_value(v, tuple(int(i) for i in index), what)
            out[index] = bool(v == 1)
        return out
    first = (0,) * a.ndim
    raise _bad_value(a[first].item() if kind != "V" else a[first], first, what)


def as_matrix(E: ArrayLike) -> NDArray[np.bool_]:
    """``E`` validated as a bool array of shape (N, M) with N >= 1 (M = 0 is allowed).

    Accepts bool, int and float 0/1 entries (also in nested lists and object arrays). Raises
    :class:`RankingError` for a non-2-D or ragged input, N = 0, or any other value (2, 0.5, -1,
    NaN, strings, None, ...), naming the first bad value and its position.
    """
    try:
        a = np.asarray(E)
    except (ValueError, TypeError) as exc:
        raise RankingError(f"E is not a rectangular N x M matrix: {exc}") from exc
    if a.ndim != 2:
        raise RankingError(
            f"E must be a 2-D passing matrix (N solutions x M tests), got {a.ndim}-D "
            f"shape {a.shape}"
        )
    if a.shape[0] == 0:
        raise RankingError(f"E has no rows (N = 0, shape {a.shape}): there is no solution to rank")
    return _as_bool(a, "E")


# --------------------------------------------------------------------------------------------
# Results


def _json_float(x: float) -> float | str:
    if math.isfinite(x):
        return x
    if math.isnan(x):  # pragma: no cover - scores are never NaN
        return "nan"
    return "-inf" if x < 0 else "inf"


@dataclass(frozen=True, slots=True)
class Group:
    """One group of solutions and its score.

    ``members``: row (solution) indices, ascending. ``score``: B4's log score (natural log of
    Eq. 10 without constants), otherwise the strategy's score. ``passed``: for consensus sets,
    the column indices of the tests the set's row passes (S_y); None for MaxPass, MostPassed
    and Random groups. ``n_x``: len(members). ``n_y``: len(passed) or None. ``n1``/``n0``: B4's
    counts of ones in E1/E0 (None for other strategies).
    """

    members: tuple[int, ...]
    score: float
    passed: tuple[int, ...] | None
    n_x: int
    n_y: int | None
    n1: int | None = None
    n0: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "members": list(self.members),
            "score": _json_float(self.score),
            "passed": None if self.passed is None else list(self.passed),
            "n_x": self.n_x,
            "n_y": self.n_y,
            "n1": self.n1,
            "n0": self.n0,
        }


@dataclass(frozen=True, slots=True)
class Ranking:
    """Every group of one strategy, best first (equal scores keep first-occurrence order)."""

    strategy: Strategy
    tie: TieRule
    groups: tuple[Group, ...]
    params: dict[str, float]
    n: int
    m: int

    @property
    def winners(self) -> tuple[Group, ...]:
        """FIRST: the first top group; POOL: every group whose score equals the top score."""
        if self.tie is TieRule.FIRST:
            return self.groups[:1]
        top = self.groups[0].score
        out: list[Group] = []
        for g in self.groups:
            if g.score != top:
                break
            out.append(g)
        return tuple(out)

    @property
    def selected(self) -> tuple[int, ...]:
        """Row indices of the winners' members, ascending."""
        winners = self.winners
        if len(winners) == 1:
            return winners[0].members
        return tuple(sorted(i for g in winners for i in g.members))

    def pass_at_1(self, correct: Sequence[bool] | Sequence[int] | NDArray[Any]) -> float:
        """Fraction of ``selected`` that are correct: the expected pass@1 of a uniform pick.

        ``correct`` holds one 0/1 (or bool) value per solution (row); RankingError otherwise.
        """
        try:
            c = np.asarray(correct)
        except (ValueError, TypeError) as exc:
            raise RankingError(f"correct is not a flat sequence: {exc}") from exc
        if c.ndim != 1 or c.shape[0] != self.n:
            raise RankingError(
                f"correct must hold one value per solution (N = {self.n}), got shape {c.shape}"
            )
        ok = _as_bool(c, "correct")
        sel = self.selected
        return float(np.count_nonzero(ok[list(sel)])) / len(sel)

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe dict (ints, lists, finite floats or the string "-inf")."""
        return {
            "strategy": self.strategy.value,
            "tie": self.tie.value,
            "params": {k: _json_float(v) for k, v in self.params.items()},
            "n": self.n,
            "m": self.m,
            "selected": list(self.selected),
            "groups": [g.to_json() for g in self.groups],
        }


# --------------------------------------------------------------------------------------------
# Row grouping


def _row_keys(e: NDArray[np.bool_]) -> NDArray[Any]:
    """One hashable-by-sort key per row: equal keys iff equal rows."""
    n, m = e.shape
    if m == 0:
        return np.zeros(n, dtype=np.uint8)
    packed = np.packbits(e, axis=1)
    w = packed.shape[1]
    for size, dt in ((1, np.uint8), (2, np.uint16), (4, np.uint32), (8, np.uint64)):
        if w <= size:
            if w < size:
                buf = np.zeros((n, size), dtype=np.uint8)
                buf[:, :w] = packed
                packed = buf
            return np.ascontiguousarray(packed).view(dt).reshape(n)
    return np.ascontiguousarray(packed).view(np.dtype((np.void, w))).reshape(n)


class _Rows:
    """Consensus sets of one validated matrix, shared by every strategy (see :func:`rank_all`)."""

    def __init__(self, e: NDArray[np.bool_]) -> None:
        self.e = e
        self.n, self.m = (int(x) for x in e.shape)
        keys = _row_keys(e)
        _, idx, inv, cnt = np.unique(
            keys, return_index=True, return_inverse=True, return_counts=True
        )
        order = np.argsort(idx, kind="stable")
        self.first: NDArray[np.intp] = idx[order]
        self.counts: NDArray[np.int64] = cnt[order].astype(np.int64)
        relabel = np.empty(order.shape[0], dtype=np.intp)
        relabel[order] = np.arange(order.shape[0])
        self.inverse: NDArray[np.intp] = relabel[np.asarray(inv).reshape(-1)]
        self.k = int(self.first.shape[0])
        self.u: NDArray[np.bool_] = e[self.first]
        self.n_y: NDArray[np.int64] = self.u.sum(axis=1, dtype=np.int64)
        self.row_sums: NDArray[np.int64] = e.sum(axis=1, dtype=np.int64)
        self._b4_counts: tuple[NDArray[np.int64], NDArray[np.int64]] | None = None
        self._members: list[tuple[int, ...]] | None = None
        self._passed: list[tuple[int, ...]] | None = None

    def b4_counts(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """(n1, n0) of every consensus set, in closed form from the column sums."""
        if self._b4_counts is None:
            c = self.e.sum(axis=0, dtype=np.int64)
            total = int(c.sum())
            # Integer-valued float64 products are exact here (every partial sum <= N*M < 2**53).
            cu = (self.u.astype(np.float64) @ c.astype(np.float64)).astype(np.int64)
            self._b4_counts = (cu - self.counts * self.n_y, total - cu)
        return self._b4_counts

    def members(self) -> list[tuple[int, ...]]:
        if self._members is None:
            rows = np.argsort(self.inverse, kind="stable").tolist()
            ends = np.cumsum(self.counts).tolist()
            starts = [0, *ends[:-1]]
            self._members = [tuple(rows[a:b]) for a, b in zip(starts, ends, strict=True)]
        return self._members

    def passed(self) -> list[tuple[int, ...]]:
        if self._passed is None:
            # 1-D flatnonzero is several times faster than 2-D nonzero; column = flat % M.
            cols = (np.flatnonzero(self.u) % max(self.m, 1)).tolist()
            ends = np.cumsum(self.n_y).tolist()
            starts = [0, *ends[:-1]]
            self._passed = [tuple(cols[a:b]) for a, b in zip(starts, ends, strict=True)]
        return self._passed


_sqrt_lock = threading.Lock()
_sqrt_table: NDArray[np.float64] = np.array([k**0.5 for k in range(1025)], dtype=np.float64)


def _pow_half(nx: NDArray[np.int64]) -> NDArray[np.float64]:
    """``nx ** 0.5`` with Python's (libm ``pow``) rounding, which is what the reference uses.

    ``np.sqrt`` and numpy's SIMD ``power`` differ from libm ``pow`` in the last bit for a few
    integers (the first is 2921), so the values come from a table built with Python floats.
    """
    global _sqrt_table
    table = _sqrt_table
    top = int(nx.max()) if nx.size else 0
    if top >= table.shape[0]:
        with _sqrt_lock:
            size = max(top + 1, 2 * _sqrt_table.shape[0])
            table = np.array([k**0.5 for k in range(size)], dtype=np.float64)
            _sqrt_table = table
    return table[nx]


def b4_log_score(
    n: Any, m: Any, nx: Any, ny: Any, n1: Any, n0: Any, beta0: float, alpha_xy: float
) -> NDArray[np.float64]:
    """B4's log score (Eq. 10 without constants) from a consensus set's counts, element-wise
    over arrays of any shape: the four ``betaln`` terms added in the order x, y, E1, E0 (every
    caller gets the same bits for the same counts)."""
    e1 = (n - nx) * ny
    e0 = (n - nx) * (m - ny)
    px = betaln(nx + alpha_xy, n - nx + 1)
    py = betaln(ny + alpha_xy, m - ny + 1)
    p1 = betaln(n1 + 1, e1 - n1 + 1)
    p0 = betaln(n0 + 1, e0 - n0 + beta0)
    return cast(NDArray[np.float64], px + py + p1 + p0)


def _b4_log_scores(rows: _Rows, beta0: float, alpha_xy: float) -> NDArray[np.float64]:
    n1, n0 = rows.b4_counts()
    return b4_log_score(rows.n, rows.m, rows.counts, rows.n_y, n1, n0, beta0, alpha_xy)


def _consensus_scores(rows: _Rows, strategy: Strategy, beta0: float, alpha_xy: float) -> Any:
    if strategy is Strategy.B4:
        return _b4_log_scores(rows, beta0, alpha_xy)
    if strategy is Strategy.CODET:
        return rows.n_y * _pow_half(rows.counts)
    if strategy is Strategy.CODET_PAPER:
        return (rows.counts * rows.n_y).astype(np.float64)
    return rows.counts.astype(np.float64)  # MBR-exec


def _rank_rows(
    rows: _Rows, strategy: Strategy, tie: TieRule, beta0: float, alpha_xy: float
) -> Ranking:
    groups: list[Group]
    if strategy in CONSENSUS_STRATEGIES:
        scores = np.asarray(_consensus_scores(rows, strategy, beta0, alpha_xy), dtype=np.float64)
        order = np.argsort(-scores, kind="stable").tolist()
        s = scores.tolist()
        members, passed = rows.members(), rows.passed()
        nx, ny = rows.counts.tolist(), rows.n_y.tolist()
        if strategy is Strategy.B4:
            n1, n0 = (a.tolist() for a in rows.b4_counts())
            groups = [Group(members[k], s[k], passed[k], nx[k], ny[k], n1[k], n0[k]) for k in order]
        else:
            groups = [Group(members[k], s[k], passed[k], nx[k], ny[k]) for k in order]
    elif strategy is Strategy.MAXPASS:
        vals, inv, cnt = np.unique(rows.row_sums, return_inverse=True, return_counts=True)
        inv = np.asarray(inv).reshape(-1)
        by_group = np.argsort(inv, kind="stable").tolist()
        ends = np.cumsum(cnt).tolist()
        starts = [0, *ends[:-1]]
        v, c = vals.tolist(), cnt.tolist()
        groups = [
            Group(tuple(by_group[starts[k] : ends[k]]), float(v[k]), None, c[k], None)
            for k in range(len(v) - 1, -1, -1)
        ]
    elif strategy is Strategy.MOST_PASSED:
        order = np.argsort(-rows.row_sums, kind="stable").tolist()
        sums = rows.row_sums.tolist()
        groups = [Group((i,), float(sums[i]), None, 1, None) for i in order]
    else:  # RANDOM
        groups = [Group(tuple(range(rows.n)), 0.0, None, rows.n, None)]
    params = {"beta0": beta0, "alpha_xy": alpha_xy} if strategy is Strategy.B4 else {}
    return Ranking(strategy, tie, tuple(groups), params, rows.n, rows.m)


# --------------------------------------------------------------------------------------------
# Public functions


def rank(
    E: ArrayLike,
    strategy: Strategy | str = Strategy.B4,
    *,
    tie: TieRule | str = TieRule.FIRST,
    beta0: float = DEFAULT_BETA0,
    alpha_xy: float = DEFAULT_ALPHA_XY,
) -> Ranking:
    """Rank the solutions (rows) of passing matrix ``E`` with ``strategy``.

    ``tie`` decides :attr:`Ranking.winners`; ``beta0`` and ``alpha_xy`` are B4's
    hyperparameters (validated for every strategy, used only by B4).
    """
    return rank_all(E, (strategy,), tie=tie, beta0=beta0, alpha_xy=alpha_xy)[
        parse_strategy(strategy)
    ]


def rank_all(
    E: ArrayLike,
    strategies: Iterable[Strategy | str] = tuple(Strategy),
    *,
    tie: TieRule | str = TieRule.FIRST,
    beta0: float = DEFAULT_BETA0,
    alpha_xy: float = DEFAULT_ALPHA_XY,
) -> dict[Strategy, Ranking]:
    """:func:`rank` for several strategies at once; the rows are grouped only once."""
    chosen = [parse_strategy(s) for s in strategies]
    t = parse_tie(tie)
    b = check_param("beta0", beta0)
    a = check_param("alpha_xy", alpha_xy)
    rows = _Rows(as_matrix(E))
    return {s: _rank_rows(rows, s, t, b, a) for s in dict.fromkeys(chosen)}


def b4_scores(
    E: ArrayLike, beta0: float = DEFAULT_BETA0, alpha_xy: float = DEFAULT_ALPHA_XY
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """B4 log score of every consensus set.

    Returns (first-occurrence row index of each distinct row, in first-occurrence order; the
    set's log score), the same order as Algorithm 1's loop.
    """
    b = check_param("beta0", beta0)
    a = check_param("alpha_xy", alpha_xy)
    rows = _Rows(as_matrix(E))
    return rows.first.copy(), _b4_log_scores(rows, b, a)
