"""Rank plausible solutions with plausible tests: B4 and the heuristics it is compared with.

This package is pure: it imports only numpy and scipy (never the model layer or the sandbox).

Input
-----
A passing matrix E of N solutions (rows) × M tests (columns); E[i, j] = 1 when solution i
passes test j. Bool, int and float 0/1 entries are accepted (:func:`as_matrix`).

A **consensus set** is one distinct row ŷ of E: S_x = every solution whose row equals ŷ
(n_x = |S_x|) and S_y = the tests with ŷ_j = 1 (n_y = |S_y|). Sets are listed in
*first-occurrence order* (the order in which their first row appears in E). The all-zero row
(solutions passing no test) is a consensus set like any other.

Strategies (:class:`Strategy`)
------------------------------
- ``b4`` — B4 (Chen et al., ASE'24, Algorithm 1): each consensus set is scored with the log of
  the paper's Eq. (10), without normalising constants:
  ``betaln(n_x+α_xy, N−n_x+1) + betaln(n_y+α_xy, M−n_y+1) + betaln(n1+1, |E1|−n1+1)
  + betaln(n0+1, |E0|−n0+β0)``, summed in that order. E1 (E0) are the entries of rows outside
  S_x in columns inside (outside) S_y, and n1 (n0) count their ones. So θ1 ~ Beta(1, 1),
  θ0 ~ Beta(1, β0), θx, θy ~ Beta(α_xy, 1).
- ``codet`` — **CodeT (reference code)**: n_y · √n_x. This is what the B4 authors' code
  (and CodeT's own agreement code) computes and what the paper's numbers come from. The root is
  taken as ``n_x ** 0.5`` with Python/libm ``pow`` rounding, bit-exact with that code (it
  differs from ``sqrt`` in the last bit for a few n_x, the first being 2921).
- ``codet_paper`` — **CodeT (B4 paper text)**: n_x · n_y, the "capacity" of the set, as the B4
  paper describes CodeT.
- ``mbr_exec`` — MBR-exec: n_x, the size of the cluster of identical pass/fail rows (over the
  generated tests, not program outputs).
- ``maxpass`` — MaxPass: solutions grouped by their number of passed tests, score = that number;
  the top group is every solution with the most passes (``passed``/``n_y`` are None).
- ``most_passed`` — the UTDebug paper's best-of-N rule: every solution is its own group with
  score = its number of passes. Under FIRST it picks the first solution with the most passes;
  under POOL it selects exactly MaxPass's top group.
- ``random`` — one group of all solutions, score 0.0: pass@1 = the fraction of correct ones.

Tie rules (:class:`TieRule`)
----------------------------
Groups are sorted by score with a *stable* sort, so groups with exactly equal (``==``) scores
keep first-occurrence order.

- ``first`` — the single first top group. This is the B4 authors' ``simulated.py`` and
  Algorithm 1's strict ``if Score > Score*``.
- ``pool`` — every group whose score equals the top score, pooled. This is the authors'
  ``main.py`` (real-data evaluation).

pass@1
------
:meth:`Ranking.pass_at_1` is the fraction of correct solutions among :attr:`Ranking.selected`:
the expected pass@1 of picking one selected solution uniformly at random (``c/n`` of the
authors' estimator with n selected, c correct).

Defaults, and why
-----------------
``DEFAULT_BETA0 = 1e4`` and ``DEFAULT_ALPHA_XY = 1e3`` are B4(4,3), the paper's real-data
setting (with B4(5,3) and B4(6,3)): its hyperparameter ablation (Fig. 6) finds β0 best around
1e4-1e6 and α_xy = 1e3 near the best on HumanEval and MBPP. ``SIM_BETA0 = SIM_ALPHA_XY = 10``
is the paper's simulated study (and its running example). Algorithm 1 asks for β0 > 1 and
α_xy > 1 (β0 ≫ 1 encodes that incorrect solutions rarely pass incorrect tests; α_xy ≫ 1
rewards larger consensus sets); any finite value > 0 is accepted here.

Bad input
---------
Every bad input raises :class:`RankingError` (a ``ValueError``) with a clear message; no score
is ever NaN.

- E not 2-D, or ragged → RankingError. N = 0 (no rows) → RankingError.
- An entry other than 0/1 (2, 0.5, −1, NaN, a string, None, ...) → RankingError naming the
  first bad value and its row and column.
- M = 0 is allowed: every row is the empty row, so there is one consensus set holding every
  solution; every strategy selects all solutions and pass@1 = the fraction correct (as Random),
  except ``most_passed`` under FIRST, which by its definition picks solution 0 (all solutions
  tie at 0 passes).
- N = 1 gives one group. All-pass and all-fail rows are ordinary consensus sets.
- ``beta0`` or ``alpha_xy`` not a finite number > 0 → RankingError (validated for every
  strategy, used by B4 only).
- An unknown strategy or tie-rule string → RankingError listing the choices (matching is
  case-insensitive).
- ``pass_at_1`` with ``len(correct) != N`` or non-0/1 values → RankingError.

Implementations
---------------
:mod:`utdebug.ranking.core` is vectorised (O(N·M) plus one sort of N packed row keys);
:mod:`utdebug.ranking.reference` holds plain loops (Algorithm 1 literally) that it agrees with
bit for bit, scores and selections alike.
"""

from __future__ import annotations

from utdebug.ranking import core
from utdebug.ranking.core import *  # noqa: F403  (its __all__, re-exported below)

__all__ = list(core.__all__)
