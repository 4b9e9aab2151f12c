"""``utdebug bench b4-sim``: the SIMULATED study of the B4 paper (section 5.1, Fig. 5).

Every number this module produces comes from matrices drawn from the paper's generative
process (Fig. 2, Eq. 3), never from a model or a benchmark, so every table and JSON document
it prints is labelled SIMULATED.

One **trial** draws a data point (x, y, E):

- x_i ~ Bern(θx) for the N solutions and y_j ~ Bern(θy) for the M tests;
- E_ij = y_j when x_i = 1 (a correct solution passes exactly the correct tests);
  when x_i = 0, E_ij ~ Bern(θ1) if y_j = 1 and Bern(θ0) if y_j = 0.

Every strategy of :mod:`utdebug.ranking` ranks the solutions from E alone; its pass@1 for the
trial is the fraction of correct solutions among the ones it selects (the expected pass@1 of a
uniform pick from them), and a point's pass@1 is the mean over its trials.

**Degenerate trials** (all N solutions correct, or all wrong) give every strategy the same
pass@1, so, like the authors' ``simulated.py``, they are skipped after drawing. Here they are
counted, and ``trials`` means *valid* trials: drawing goes on until ``trials`` non-degenerate
trials have been ranked (at most :data:`MAX_DRAWS_PER_TRIAL` x ``trials`` draws), and every
result reports "valid / drawn".

**Randomness.** One ``numpy.random.default_rng(seed)`` per point; trial t consumes the next
N + M + N·M uniforms (x, then y, then E row by row, with Bern(p) = ``u < p``). Matrices are drawn
in blocks, which gives exactly the numbers one-trial-at-a-time draws would, so a point with
fewer trials reproduces the first trials of a longer run with the same seed. The authors'
script is unseeded; its numbers cannot be reproduced exactly, only statistically.

**Speed.** :func:`batched_pass_at_1` ranks a whole block of trials at once with numpy (the same
consensus sets, scores and tie rules as :func:`utdebug.ranking.rank`, value for value; the
tests compare the two trial by trial). ``simulate(..., batched=False)`` calls
:func:`utdebug.ranking.rank_all` once per trial instead: the same numbers, about 10x slower.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from utdebug.benchmarks.b4_batched import BATCHED, batched_pass_at_1
from utdebug.benchmarks.modes import ModeContext, UsageError
from utdebug.benchmarks.options import B4SimOptions, BenchOptions
from utdebug.cli_common import Exit, console
from utdebug.ranking import (
    SIM_ALPHA_XY,
    SIM_BETA0,
    RankingError,
    Strategy,
    TieRule,
    rank_all,
)

SIMULATED: Final = "SIMULATED"

_DEFAULT: Final = B4SimOptions()
"""The paper's setting, as ``bench b4-sim`` runs it by default."""
DEFAULT_N: Final = _DEFAULT.solutions
DEFAULT_M: Final = _DEFAULT.tests
DEFAULT_THETA_X: Final = _DEFAULT.theta_x
DEFAULT_THETA_Y: Final = _DEFAULT.theta_y
DEFAULT_THETA_1: Final = _DEFAULT.theta_1
DEFAULT_THETA_0: Final = _DEFAULT.theta_0
DEFAULT_TRIALS: Final = _DEFAULT.trials

MAX_DRAWS_PER_TRIAL: Final = 100
"""Drawing stops with :class:`SimulationError` after ``MAX_DRAWS_PER_TRIAL * trials`` draws.
The fraction of valid draws is 1 − θx^N − (1 − θx)^N (0.89 at the defaults, 0.18 at the
hardest grid point N = 2, θx = 0.1), so the cap only stops settings where nearly every trial
is degenerate."""

_BLOCK_FLOATS: Final = 1 << 20
"""Uniforms drawn per block (8 MiB); the block size does not change any result."""

SWEEPS: Final[dict[str, tuple[float, ...]]] = {
    "N": (2, 5, 10, 20, 50, 100),
    "M": (5, 10, 20, 30, 50, 100),
    "theta_x": tuple(round(0.1 * k, 1) for k in range(1, 10)),
    "theta_y": tuple(round(0.1 * k, 1) for k in range(1, 10)),
}
"""The one-parameter sweeps of Fig. 5: each varies one parameter, the others stay at the
point given on the command line (the paper's defaults unless changed)."""

SWEEP_SYMBOL: Final = {"N": "N", "M": "M", "theta_x": "θx", "theta_y": "θy"}

DISPLAY: Final = {
    "b4": "B4",
    "codet": "CodeT",
    "codet_paper": "CodeT_paper",
    "maxpass": "MaxPass",
    "most_passed": "MostPassed",
    "mbr_exec": "MBR-exec",
    "random": "Random",
}
"""Table names of the strategies (JSON uses the :class:`Strategy` values)."""


class SimulationError(ValueError):
    """Bad parameters, or a setting where (nearly) every trial is degenerate."""


@dataclass(frozen=True, slots=True)
class Setting:
    """The generative process of one point: N solutions, M tests and the four θ's."""

    n: int = DEFAULT_N
    m: int = DEFAULT_M
    theta_x: float = DEFAULT_THETA_X
    theta_y: float = DEFAULT_THETA_Y
    theta_1: float = DEFAULT_THETA_1
    theta_0: float = DEFAULT_THETA_0

    def problems(self) -> list[str]:
        """What is wrong with these parameters (empty when they can be simulated)."""
        out: list[str] = []
        if self.n < 1:
            out.append(f"N (--solutions) must be at least 1, got {self.n}")
        elif self.n == 1:
            out.append(
                "N (--solutions) must be at least 2: with one solution every trial is "
                "degenerate (all solutions correct or all wrong)"
            )
        if self.m < 0:
            out.append(f"M (--sim-tests) must be 0 or more, got {self.m}")
        for name, value in self.thetas().items():
            if not 0.0 <= value <= 1.0:  # also rejects NaN
                out.append(f"{name} must lie in [0, 1], got {value}")
        if self.theta_x in (0.0, 1.0):
            out.append(
                f"theta_x = {self.theta_x:g} makes every trial degenerate (all solutions "
                "correct or all wrong); use a value strictly between 0 and 1"
            )
        return out

    def thetas(self) -> dict[str, float]:
        return {
            "theta_x": self.theta_x,
            "theta_y": self.theta_y,
            "theta_1": self.theta_1,
            "theta_0": self.theta_0,
        }

    def valid_fraction(self) -> float:
        """P(a drawn trial is not degenerate) = 1 − θx^N − (1 − θx)^N."""
        return 1.0 - self.theta_x**self.n - (1.0 - self.theta_x) ** self.n

    def random_pass_at_1(self) -> float:
        """Random's expected pass@1 over valid trials: E[k/N | 0 < k < N], k ~ Bin(N, θx).

        E[k/N] = θx and k/N = 1 exactly when k = N, so E[k/N; 0 < k < N] = θx − θx^N."""
        return (self.theta_x - self.theta_x**self.n) / self.valid_fraction()

    def label(self) -> str:
        return (
            f"N={self.n}, M={self.m}, θx={self.theta_x:g}, θy={self.theta_y:g}, "
            f"θ1={self.theta_1:g}, θ0={self.theta_0:g}"
        )


def draw(
    rng: np.random.Generator, setting: Setting, count: int
) -> tuple[NDArray[np.bool_], NDArray[np.bool_], NDArray[np.bool_]]:
    """``count`` trials of the generative process: x (count, N), y (count, M), E (count, N, M).

    Trial t uses the next N + M + N·M uniforms of ``rng`` (x, then y, then E row-major), so
    ``draw(rng, s, a + b)`` equals ``draw(rng, s, a)`` followed by ``draw(rng, s, b)``."""
    n, m = setting.n, setting.m
    u = rng.random((count, n + m + n * m))
    x = u[:, :n] < setting.theta_x
    y = u[:, n : n + m] < setting.theta_y
    ue = u[:, n + m :].reshape(count, n, m)
    # Where x_i = 0: Bern(θ1) on correct tests, Bern(θ0) on wrong ones.
    p_wrong = np.where(y, setting.theta_1, setting.theta_0)[:, None, :]
    e = np.where(x[:, :, None], y[:, None, :], ue < p_wrong)
    return x, y, e


def is_degenerate(x: NDArray[np.bool_]) -> bool:
    """All solutions correct, or all wrong: no strategy can do better than any other."""
    k = int(np.count_nonzero(x))
    return k == 0 or k == x.shape[0]


def _strategies(strategies: Iterable[Strategy | str] | None) -> tuple[Strategy, ...]:
    if strategies is None:
        return tuple(Strategy)
    out = tuple(Strategy(s) for s in strategies)
    if not out:
        raise SimulationError("no strategy to simulate")
    return out


@dataclass(frozen=True, slots=True)
class PointResult:
    """One simulated point: its parameters, and pass@1 per strategy over the valid trials."""

    setting: Setting
    trials: int
    """Valid (non-degenerate) trials averaged; always the number asked for."""
    drawn: int
    """Trials drawn, degenerate ones included."""
    seed: int
    beta0: float
    alpha_xy: float
    tie: str
    strategies: tuple[str, ...]
    mean: dict[str, float]
    """pass@1 per strategy (the :class:`Strategy` value), averaged over the valid trials."""
    se: dict[str, float]
    """Standard error of ``mean`` (sample s.d. / sqrt(trials); NaN with one trial)."""
    b4_minus: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Per baseline: mean of (B4 − baseline) over the same trials and its (paired) standard
    error. Empty when B4 was not simulated."""
    seconds: float = 0.0

    @property
    def degenerate(self) -> int:
        return self.drawn - self.trials

    def best(self) -> list[str]:
        """The strategies with the highest mean pass@1 (several when tied exactly)."""
        top = max(self.mean.values())
        return [s for s in self.strategies if self.mean[s] == top]

    def b4_beats_all(self) -> bool:
        """B4's mean pass@1 is above every other strategy's."""
        return bool(self.b4_minus) and all(d > 0 for d, _ in self.b4_minus.values())

    def b4_standing(self) -> str:
        """ "yes": B4 beats every baseline; "tied": none beats B4 but some equal it (e.g. where
        every strategy selects the correct set in every trial); "no": some baseline beats B4;
        "n/a": B4 was not simulated."""
        if not self.b4_minus:
            return "n/a"
        if self.b4_beats_all():
            return "yes"
        return "tied" if all(d >= 0 for d, _ in self.b4_minus.values()) else "no"

    def as_dict(self) -> dict[str, Any]:
        return {
            "label": SIMULATED,
            "N": self.setting.n,
            "M": self.setting.m,
            **self.setting.thetas(),
            "trials_valid": self.trials,
            "trials_drawn": self.drawn,
            "trials_degenerate": self.degenerate,
            "seed": self.seed,
            "beta0": self.beta0,
            "alpha_xy": self.alpha_xy,
            "tie": self.tie,
            "pass_at_1": {s: _finite(self.mean[s]) for s in self.strategies},
            "stderr": {s: _finite(self.se[s]) for s in self.strategies},
            "b4_minus": {
                s: {"mean": _finite(d), "stderr": _finite(e)} for s, (d, e) in self.b4_minus.items()
            },
            "best": self.best(),
            "b4_beats_every_baseline": self.b4_beats_all(),
            "b4_standing": self.b4_standing(),
            "random_expected": self.setting.random_pass_at_1(),
            "seconds": round(self.seconds, 3),
        }


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None


def _stderr(values: NDArray[np.float64]) -> float:
    if values.shape[0] < 2:
        return math.nan
    return float(np.std(values, ddof=1) / math.sqrt(values.shape[0]))


def simulate(
    setting: Setting | None = None,
    *,
    trials: int = DEFAULT_TRIALS,
    seed: int = 0,
    beta0: float = SIM_BETA0,
    alpha_xy: float = SIM_ALPHA_XY,
    tie: TieRule | str = TieRule.FIRST,
    strategies: Iterable[Strategy | str] | None = None,
    progress: Callable[[int], None] | None = None,
    max_draws: int | None = None,
    batched: bool = True,
) -> PointResult:
    """Simulate one point (``setting``, default :class:`Setting`): ``trials`` valid trials,
    every strategy ranked on each.

    ``batched`` (default) ranks a block of trials at once with :func:`batched_pass_at_1`;
    ``batched=False`` calls :func:`utdebug.ranking.rank_all` once per trial. Both give the same
    numbers (the block form is about 10x faster). ``progress`` is called with the number of
    valid trials finished since its last call. Raises :class:`SimulationError` for bad
    parameters, or when ``max_draws`` trials (default ``MAX_DRAWS_PER_TRIAL * trials``) were
    drawn before ``trials`` valid ones."""
    setting = setting or Setting()
    _check(setting, trials, beta0, alpha_xy)
    strats = _strategies(strategies)
    ranking = _Ranking(strats, TieRule(tie), float(beta0), float(alpha_xy))
    start = time.perf_counter()
    cap = MAX_DRAWS_PER_TRIAL * trials if max_draws is None else max_draws
    batched = batched and set(strats) <= BATCHED
    values, drawn = _trial_values(
        setting, np.random.default_rng(seed), ranking, trials, cap, batched, progress
    )
    names = tuple(s.value for s in strats)
    b4_minus: dict[str, tuple[float, float]] = {}
    if Strategy.B4 in strats:
        b4 = values[strats.index(Strategy.B4)]
        for k, s in enumerate(strats):
            if s is not Strategy.B4:
                d = b4 - values[k]
                b4_minus[s.value] = (float(d.mean()), _stderr(d))
    return PointResult(
        setting=setting,
        trials=trials,
        drawn=drawn,
        seed=seed,
        beta0=ranking.beta0,
        alpha_xy=ranking.alpha_xy,
        tie=ranking.tie.value,
        strategies=names,
        mean={s: float(values[k].mean()) for k, s in enumerate(names)},
        se={s: _stderr(values[k]) for k, s in enumerate(names)},
        b4_minus=b4_minus,
        seconds=time.perf_counter() - start,
    )


def _check(setting: Setting, trials: int, beta0: float, alpha_xy: float) -> None:
    """:class:`SimulationError` naming every parameter that cannot be simulated."""
    problems = setting.problems()
    if trials < 1:
        problems.append(f"--trials must be at least 1, got {trials}")
    for name, v in (("beta0", beta0), ("alpha_xy", alpha_xy)):
        if not (math.isfinite(v) and v > 0):
            problems.append(f"{name} must be a finite number > 0, got {v!r}")
    if problems:
        raise SimulationError("; ".join(problems))


@dataclass(frozen=True, slots=True)
class _Ranking:
    """How each trial is ranked: the strategies (in table order), the tie rule, B4's
    hyperparameters."""

    strategies: tuple[Strategy, ...]
    tie: TieRule
    beta0: float
    alpha_xy: float


def _trial_values(
    setting: Setting,
    rng: np.random.Generator,
    ranking: _Ranking,
    trials: int,
    cap: int,
    batched: bool,
    progress: Callable[[int], None] | None,
) -> tuple[NDArray[np.float64], int]:
    """Per strategy, the pass@1 of each of ``trials`` valid trials, drawn in blocks (at most
    ``cap`` draws); and how many trials were drawn."""
    n, m, strats = setting.n, setting.m, ranking.strategies
    # One contiguous row per strategy: its mean is bit-identical to the mean of a 1-D array of
    # the same per-trial values (pairwise summation depends on the memory layout).
    values = np.empty((len(strats), trials), dtype=np.float64)
    block = max(1, _BLOCK_FLOATS // (n + m + n * m))
    valid = drawn = 0
    while valid < trials:
        if drawn >= cap:
            raise SimulationError(
                f"only {valid} valid trials among {drawn} drawn ({setting.label()}): nearly "
                "every trial is degenerate (all solutions correct or all wrong)"
            )
        count = min(block, trials - valid, cap - drawn)
        xs, _, es = draw(rng, setting, count)
        k = xs.sum(axis=1)
        keep = np.flatnonzero((k > 0) & (k < n))[: trials - valid]
        # Trials drawn after the last one used do not count (the next point starts afresh).
        drawn += int(keep[-1]) + 1 if valid + keep.size == trials else count
        if keep.size == 0:
            continue
        if batched:
            values[:, valid : valid + keep.size] = batched_pass_at_1(
                xs[keep], es[keep], strats, ranking.tie, ranking.beta0, ranking.alpha_xy
            )
        else:
            for j, t in enumerate(keep.tolist()):
                rankings = rank_all(
                    es[t],
                    strategies=strats,
                    tie=ranking.tie,
                    beta0=ranking.beta0,
                    alpha_xy=ranking.alpha_xy,
                )
                values[:, valid + j] = [rankings[s].pass_at_1(xs[t]) for s in strats]
        valid += keep.size
        if progress is not None:
            progress(int(keep.size))
    return values, drawn


def sweep_setting(base: Setting, param: str, value: float) -> Setting:
    """``base`` with one parameter of :data:`SWEEPS` replaced."""
    if param == "N":
        return replace(base, n=int(value))
    if param == "M":
        return replace(base, m=int(value))
    if param == "theta_x":
        return replace(base, theta_x=float(value))
    if param == "theta_y":
        return replace(base, theta_y=float(value))
    raise SimulationError(f"unknown sweep {param!r} (choose from {', '.join(SWEEPS)})")


# ---------------------------------------------------------------- command line


def _usage_errors(options: BenchOptions, setting: Setting) -> list[str]:
    errors = setting.problems()
    trials = options.b4.trials
    if trials < 1:
        errors.append(f"--trials must be at least 1, got {trials}")
    for name, v in (("beta0", options.ranking.beta0), ("alpha-xy", options.ranking.alpha_xy)):
        if v is not None and not (math.isfinite(v) and v > 0):
            errors.append(f"--{name} must be a positive number, got {v}")
    return errors


def run(ctx: ModeContext) -> int:
    """``utdebug bench b4-sim``: the default point, then the chosen sweeps. Tables (or one JSON
    document with ``--json``) on stdout; progress and errors on stderr."""
    options = ctx.options
    err = console(stderr=True)
    out = console()
    b4 = options.b4
    setting = Setting(
        n=b4.solutions,
        m=b4.tests,
        theta_x=b4.theta_x,
        theta_y=b4.theta_y,
        theta_1=b4.theta_1,
        theta_0=b4.theta_0,
    )
    errors = _usage_errors(options, setting)
    if errors:
        raise UsageError("bench b4-sim: " + "; ".join(errors))
    start = time.perf_counter()
    try:
        default, swept = _points(options, setting, err)
    except (SimulationError, RankingError) as e:
        raise UsageError(f"bench b4-sim: {e}") from None
    total = time.perf_counter() - start
    if options.run.json:
        json.dump(_json_doc(default, swept, total), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return Exit.OK
    out.print(point_table(default))
    out.print(verdict(default))
    for p, rs in swept.items():
        out.print(sweep_table(p, rs))
    out.print(f"{SIMULATED}: total {total:.1f} s")
    return Exit.OK


def _points(
    options: BenchOptions, setting: Setting, err: Console
) -> tuple[PointResult, dict[str, list[PointResult]]]:
    """The default point (its line on ``err``), then each sweep of ``--sweep`` with a progress
    bar; a setting met twice is simulated once."""
    rank, trials, sweep = options.ranking, options.b4.trials, options.b4.sweep
    beta0 = SIM_BETA0 if rank.beta0 is None else float(rank.beta0)
    alpha_xy = SIM_ALPHA_XY if rank.alpha_xy is None else float(rank.alpha_xy)
    sweeps = list(SWEEPS) if sweep == "all" else [] if sweep == "none" else [sweep]
    cache: dict[Setting, PointResult] = {}

    def point(s: Setting, progress: Callable[[int], None] | None = None) -> PointResult:
        if s not in cache:
            cache[s] = simulate(
                s,
                trials=trials,
                seed=options.sim.seed,
                beta0=beta0,
                alpha_xy=alpha_xy,
                tie=rank.tie,
                progress=progress,
            )
        elif progress is not None:
            progress(trials)
        return cache[s]

    default = point(setting)
    err.print(
        f"b4-sim ({SIMULATED}): {setting.label()}: {default.trials:,} valid trials of "
        f"{default.drawn:,} drawn in {default.seconds:.1f} s"
    )
    swept: dict[str, list[PointResult]] = {}
    if sweeps:
        with _progress(err) as bar:
            tasks = {p: bar.add_task(f"sweep {p}", total=len(SWEEPS[p]) * trials) for p in sweeps}
            for p in sweeps:
                swept[p] = [
                    point(sweep_setting(setting, p, v), _advancer(bar, tasks[p])) for v in SWEEPS[p]
                ]
                if not err.is_terminal:  # no bar there: a line per sweep
                    err.print(f"b4-sim ({SIMULATED}): sweep {p}: {len(swept[p])} points done")
    return default, swept


def _json_doc(
    default: PointResult, swept: dict[str, list[PointResult]], total: float
) -> dict[str, Any]:
    return {
        "label": SIMULATED,
        "benchmark": "b4-sim",
        "source": "B4 paper, section 5.1 and Fig. 5 (generative process of Fig. 2 / Eq. 3)",
        "trials_mean": "valid (non-degenerate) trials per point; degenerate draws are "
        "skipped and counted",
        "default": default.as_dict(),
        "b4_beats_every_baseline": default.b4_beats_all(),
        "sweeps": {
            p: {"param": p, "values": list(SWEEPS[p]), "points": [r.as_dict() for r in rs]}
            for p, rs in swept.items()
        },
        "seconds": round(total, 3),
    }


def _advancer(bar: Progress, task: TaskID) -> Callable[[int], None]:
    def advance(k: int) -> None:
        bar.advance(task, k)

    return advance


def _progress(err: Console) -> Progress:
    """The sweeps' bars on a terminal; elsewhere (a log, a file) none."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=False,
        disable=not err.is_terminal,
    )


def _cell(mean: float, se: float, sep: str = " ± ") -> str:
    return f"{mean:.4f}{sep}{se:.4f}" if math.isfinite(se) else f"{mean:.4f}"


def _trials_caption(r: PointResult) -> str:
    return (
        f"{r.trials:,} valid trials of {r.drawn:,} drawn ({r.degenerate:,} degenerate skipped); "
        f"seed {r.seed}; β0={r.beta0:g}, α_xy={r.alpha_xy:g}; tie={r.tie}; {r.seconds:.1f} s"
    )


def point_table(r: PointResult) -> Table:
    """One point: pass@1 ± s.e. per strategy, B4's paired margin, the best one starred."""
    table = Table(
        title=f"{SIMULATED} — B4 paper §5.1: pass@1\n{r.setting.label()}",
        caption=f"{_trials_caption(r)}. Random expected {r.setting.random_pass_at_1():.4f}. "
        "★ = best.",
    )
    table.add_column("strategy")
    table.add_column("pass@1 ± s.e.", justify="right")
    table.add_column("B4 − strategy ± s.e. (paired)", justify="right")
    best = set(r.best())
    for s in r.strategies:
        name = DISPLAY.get(s, s) + (" ★" if s in best else "")
        margin = _cell(*r.b4_minus[s]) if s in r.b4_minus else ""
        cell = _cell(r.mean[s], r.se[s])
        table.add_row(
            f"[bold]{name}[/bold]" if s in best else name,
            f"[bold]{cell}[/bold]" if s in best else cell,
            margin,
        )
    return table


def verdict(r: PointResult) -> str:
    """Whether B4 beats every baseline at this point, with the smallest margin in s.e."""
    if not r.b4_minus:
        return f"{SIMULATED}: B4 was not simulated"
    s, (d, e) = min(r.b4_minus.items(), key=lambda kv: kv[1][0])
    z = f" = {d / e:.1f} paired s.e." if math.isfinite(e) and e > 0 else ""
    answer = {"yes": "yes", "tied": "no (tied with the best baseline)", "no": "NO"}[r.b4_standing()]
    return (
        f"{SIMULATED}: B4 beats every baseline at this point ({r.setting.label()}): {answer}; "
        f"smallest margin {d:+.4f}{z}, over {DISPLAY.get(s, s)}"
    )


def sweep_table(param: str, results: Sequence[PointResult]) -> Table:
    """One sweep: rows = strategies, one column per swept value; the best per column starred."""
    sym = SWEEP_SYMBOL.get(param, param)
    base = results[0].setting
    others = [
        f"{k}={v}"
        for k, v in (
            ("N", base.n),
            ("M", base.m),
            ("θx", f"{base.theta_x:g}"),
            ("θy", f"{base.theta_y:g}"),
            ("θ1", f"{base.theta_1:g}"),
            ("θ0", f"{base.theta_0:g}"),
        )
        if k != sym
    ]
    r0 = results[0]
    table = Table(
        title=f"{SIMULATED} — B4 paper Fig. 5: pass@1 ± s.e. as {sym} varies ({', '.join(others)})",
        caption=f"{r0.trials:,} valid trials per point; seed {r0.seed}; β0={r0.beta0:g}, "
        f"α_xy={r0.alpha_xy:g}; tie={r0.tie}; {sum(r.seconds for r in results):.1f} s. "
        "★ = best in the column.",
    )
    table.add_column("strategy")
    values = [_swept_value(param, r.setting) for r in results]
    for v in values:
        table.add_column(f"{sym}={v}", justify="right")
    bests = [set(r.best()) for r in results]
    for s in r0.strategies:
        cells = []
        for r, best in zip(results, bests, strict=True):
            c = _cell(r.mean[s], r.se[s], "±")
            cells.append(f"[bold]{c}★[/bold]" if s in best else c)
        table.add_row(DISPLAY.get(s, s), *cells)
    table.add_row("valid / drawn", *(f"{r.trials:,} / {r.drawn:,}" for r in results))
    standing = {"yes": "yes", "tied": "tied", "no": "[red]no[/red]", "n/a": "—"}
    table.add_row("B4 beats all", *(standing[r.b4_standing()] for r in results))
    return table


def _swept_value(param: str, s: Setting) -> str:
    return {
        "N": str(s.n),
        "M": str(s.m),
        "theta_x": f"{s.theta_x:g}",
        "theta_y": f"{s.theta_y:g}",
    }[param]
