"""``utdebug bench b4-sim``: the SIMULATED study of the B4 paper (section 5.1)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from utdebug.benchmarks import b4_batched, b4_sim
from utdebug.benchmarks.b4_sim import Setting, SimulationError, draw, is_degenerate, simulate
from utdebug.ranking import Strategy, TieRule, rank

BASELINES = [s.value for s in Strategy if s is not Strategy.B4]


def _run(argv: list[str]) -> int:
    """``utdebug bench b4-sim ARGV`` in this process."""
    from utdebug import cli

    return cli.main(["bench", "b4-sim", *argv])


# ---------------------------------------------------------------- the generative process


@pytest.mark.parametrize(
    "setting",
    [Setting(), Setting(n=7, m=13, theta_x=0.65, theta_y=0.55, theta_1=0.15, theta_0=0.8)],
)
def test_generator_matches_the_thetas(setting: Setting) -> None:
    x, y, e = draw(np.random.default_rng(7), setting, 20_000)
    assert x.shape == (20_000, setting.n) and e.shape == (20_000, setting.n, setting.m)
    # Consistency (Eq. 3): a correct solution passes exactly the correct tests.
    rows, sols = np.nonzero(x)
    assert rows.size > 0
    assert np.array_equal(e[rows, sols], y[rows])
    wrong = ~x[:, :, None]
    pos = wrong & y[:, None, :]
    neg = wrong & ~y[:, None, :]
    for got, want, count in (
        (x.mean(), setting.theta_x, x.size),
        (y.mean(), setting.theta_y, y.size),
        (e[pos].mean(), setting.theta_1, int(pos.sum())),
        (e[neg].mean(), setting.theta_0, int(neg.sum())),
    ):
        tol = 5 * math.sqrt(want * (1 - want) / count)  # 5 binomial standard errors
        assert abs(got - want) < tol, (got, want, tol)


def test_generator_extreme_thetas_are_deterministic() -> None:
    s = Setting(n=4, m=6, theta_x=0.5, theta_y=1.0, theta_1=0.0, theta_0=1.0)
    x, y, e = draw(np.random.default_rng(0), s, 200)
    assert y.all()
    # Every test correct and θ1 = 0: correct solutions pass all, wrong ones none.
    assert np.array_equal(e, np.broadcast_to(x[:, :, None], e.shape))


def test_blocks_draw_the_same_numbers_as_single_trials() -> None:
    s = Setting(n=3, m=4)
    whole = draw(np.random.default_rng(5), s, 6)
    rng = np.random.default_rng(5)
    parts = [draw(rng, s, k) for k in (1, 2, 3)]
    for i in range(3):
        assert np.array_equal(whole[i], np.concatenate([p[i] for p in parts]))


def test_degenerate() -> None:
    assert is_degenerate(np.array([True, True]))
    assert is_degenerate(np.array([False, False, False]))
    assert not is_degenerate(np.array([False, True, False]))


# ---------------------------------------------------------------- simulate


def _same(a: b4_sim.PointResult, b: b4_sim.PointResult) -> bool:
    da, db = a.as_dict(), b.as_dict()
    del da["seconds"], db["seconds"]
    return da == db


def test_seeding_is_reproducible() -> None:
    a = simulate(trials=300, seed=3)
    assert _same(a, simulate(trials=300, seed=3))
    assert not _same(a, simulate(trials=300, seed=4))


def test_degenerate_trials_are_skipped_and_counted() -> None:
    s = Setting(n=2, m=5, theta_x=0.5)  # half of the draws are degenerate
    r = simulate(s, trials=400, seed=11)
    assert r.trials == 400 and r.drawn > r.trials
    # Replay the same stream: the skipped draws are exactly the degenerate ones, and the last
    # drawn trial is the 400th valid one.
    x, _, _ = draw(np.random.default_rng(11), s, r.drawn)
    flags = [is_degenerate(row) for row in x]
    assert sum(flags) == r.degenerate == r.drawn - 400
    assert not flags[-1]
    assert r.as_dict()["trials_degenerate"] == r.degenerate


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n": 1}, "at least 2"),
        ({"m": -1}, "M"),
        ({"theta_1": 1.01}, "theta_1"),
        ({"trials": 0}, "--trials"),
        ({"beta0": 0.0}, "beta0"),
        ({"alpha_xy": math.inf}, "alpha_xy"),
    ],
)
def test_simulate_rejects_bad_parameters(kwargs: dict[str, float], message: str) -> None:
    fields = {k: v for k, v in kwargs.items() if k in Setting.__dataclass_fields__}
    rest = {k: v for k, v in kwargs.items() if k not in fields}
    with pytest.raises(SimulationError, match=message):
        simulate(Setting(**fields), **rest)  # type: ignore[arg-type]


def test_draw_cap_stops_hopeless_settings() -> None:
    with pytest.raises(SimulationError, match="degenerate"):
        simulate(Setting(n=2, theta_x=1e-4), trials=20, max_draws=100)


def _per_trial(
    x: np.ndarray, e: np.ndarray, tie: TieRule, beta0: float, alpha_xy: float
) -> np.ndarray:
    """pass@1 of every strategy on every trial, one ``rank`` call each (the ground truth)."""
    out = np.empty((len(Strategy), len(x)))
    for k, s in enumerate(Strategy):
        for t in range(len(x)):
            out[k, t] = rank(e[t], s, tie=tie, beta0=beta0, alpha_xy=alpha_xy).pass_at_1(x[t])
    return out


@pytest.mark.parametrize("tie", [TieRule.FIRST, TieRule.POOL])
@pytest.mark.parametrize(
    ("n", "m", "kind", "beta0", "alpha_xy"),
    [
        (6, 3, "iid", 10.0, 10.0),  # few tests: many equal rows, exact ties between sets
        (5, 0, "iid", 10.0, 10.0),  # no tests: one set of every solution
        (2, 1, "iid", 10.0, 10.0),
        (12, 9, "iid", 1e4, 1e3),  # the paper's real-data B4(4,3)
        (9, 64, "sim", 10.0, 10.0),  # exactly one 64-bit word per row
        (30, 65, "sim", 2.5, 0.5),  # two words per row
        (40, 30, "sim", 1e6, 1e3),
    ],
)
def test_batched_ranking_equals_rank_on_every_trial(
    n: int, m: int, kind: str, beta0: float, alpha_xy: float, tie: TieRule
) -> None:
    rng = np.random.default_rng(n * 1000 + m)
    trials = 60
    if kind == "iid":  # any 0/1 matrix, with any x (consistency is not needed to rank)
        e = rng.random((trials, n, m)) < rng.random((trials, 1, 1))
        x = rng.random((trials, n)) < 0.5
    else:
        x, _, e = draw(rng, Setting(n=n, m=m, theta_x=0.3, theta_y=0.4), trials)
    strategies = list(Strategy)
    got = b4_batched.batched_pass_at_1(x, e, strategies, tie, beta0, alpha_xy)
    want = _per_trial(x, e, tie, beta0, alpha_xy)
    assert np.array_equal(got, want), np.argwhere(got != want)[:5]


@pytest.mark.parametrize("tie", [TieRule.FIRST, TieRule.POOL])
def test_simulate_batched_equals_rank_all_per_trial(tie: TieRule) -> None:
    s = Setting(n=6, m=4, theta_x=0.4)
    fast = simulate(s, trials=300, seed=2, tie=tie)
    slow = simulate(s, trials=300, seed=2, tie=tie, batched=False)
    assert _same(fast, slow)
    # And the per-trial ground truth, replayed from the same stream.
    x, _, e = draw(np.random.default_rng(2), s, fast.drawn)
    keep = [i for i in range(fast.drawn) if not is_degenerate(x[i])]
    assert len(keep) == 300
    want = _per_trial(x[keep], e[keep], tie, 10.0, 10.0)
    for k, strat in enumerate(Strategy):
        assert fast.mean[strat.value] == want[k].mean(), strat


def test_progress_reports_every_valid_trial() -> None:
    seen: list[int] = []
    simulate(Setting(n=3), trials=250, seed=1, progress=seen.append)
    assert sum(seen) == 250


@pytest.fixture(scope="module")
def default_point() -> b4_sim.PointResult:
    return simulate(trials=4000, seed=0)


def test_b4_beats_every_baseline_at_the_default_point(
    default_point: b4_sim.PointResult,
) -> None:
    r = default_point
    assert set(r.b4_minus) == set(BASELINES)
    for s in BASELINES:
        d, se_paired = r.b4_minus[s]
        assert math.isclose(d, r.mean["b4"] - r.mean[s], abs_tol=1e-12)
        se_unpaired = math.hypot(r.se["b4"], r.se[s])
        assert d > 2 * se_paired and d > 2 * se_unpaired, (s, d, se_paired, se_unpaired)
    assert r.best() == ["b4"] and r.b4_beats_all()


@pytest.mark.parametrize(
    ("setting", "expected"),
    [(Setting(), 0.2240580), (Setting(n=3, theta_x=0.3), 0.273 / 0.63)],
)
def test_random_expectation_is_conditioned_on_valid_trials(
    setting: Setting, expected: float, default_point: b4_sim.PointResult
) -> None:
    assert math.isclose(setting.random_pass_at_1(), expected, rel_tol=1e-6)
    r = default_point if setting == Setting() else simulate(setting, trials=4000, seed=0)
    assert abs(r.mean["random"] - expected) < 3 * r.se["random"], (r.mean["random"], expected)


# ---------------------------------------------------------------- command line


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-N", "0"], "at least 1"),
        (["-N", "1"], "at least 2"),
        (["-M", "-1"], "--sim-tests"),
        (["--theta-y", "1.5"], "theta_y"),
        (["--theta-0", "nan"], "theta_0"),
        (["--theta-x", "0"], "degenerate"),
        (["--trials", "0"], "--trials"),
        (["--beta0", "-1"], "--beta0"),
    ],
)
def test_bad_arguments_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(argv) == 2
    cap = capsys.readouterr()
    assert message in cap.err and cap.out == ""


def test_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["--trials", "300", "--sweep", "N", "-M", "8"]) == 0
    out = capsys.readouterr().out
    assert out.count("SIMULATED") >= 3
    for name in b4_sim.DISPLAY.values():
        assert name in out
    assert "B4 beats every baseline at this point (N=10, M=8" in out
    assert "as N varies" in out and "N=100" in out


def test_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--trials", "200", "--json", "--sweep", "theta_x", "--tie", "pool", "--seed", "5"]
    assert _run(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["label"] == "SIMULATED"
    default = doc["default"]
    assert default["label"] == "SIMULATED" and default["tie"] == "pool" and default["seed"] == 5
    assert set(default["pass_at_1"]) == {s.value for s in Strategy}
    assert default["trials_valid"] == 200 and default["trials_drawn"] >= 200
    assert (default["beta0"], default["alpha_xy"]) == (10.0, 10.0)
    sweep = doc["sweeps"]["theta_x"]
    assert sweep["values"] == list(b4_sim.SWEEPS["theta_x"])
    assert [p["theta_x"] for p in sweep["points"]] == sweep["values"]
    assert all(p["label"] == "SIMULATED" for p in sweep["points"])
    # The sweep's θx = 0.2 point is the default point (same seed, same draws).
    at_default = sweep["points"][1]
    assert at_default["pass_at_1"] == default["pass_at_1"]


def test_utdebug_bench_b4_sim(capsys: pytest.CaptureFixture[str]) -> None:
    from utdebug import cli

    assert cli.main(["bench", "b4-sim", "--trials", "500"]) == 0
    cap = capsys.readouterr()
    assert "SIMULATED" in cap.out and "500 valid trials of" in cap.out
    assert "B4 beats every baseline at this point (N=10, M=30, θx=0.2" in cap.out
    assert "SIMULATED" in cap.err  # the progress line
    argv = ["bench", "b4-sim", "--trials", "300", "--json", "-N", "5", "-M", "7", "--seed", "3"]
    assert cli.main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["label"] == "SIMULATED"
    d = doc["default"]
    assert (d["N"], d["M"], d["seed"], d["trials_valid"]) == (5, 7, 3, 300)
    assert (d["beta0"], d["alpha_xy"]) == (b4_sim.SIM_BETA0, b4_sim.SIM_ALPHA_XY)
    assert cli.main(["bench", "b4-sim", "--trials", "0"]) == 2
    assert "--trials must be at least 1" in capsys.readouterr().err
