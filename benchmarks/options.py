"""What ``utdebug bench`` was asked for, as one frozen value: :class:`BenchOptions`.

The command module (:mod:`utdebug.bench_cmd`) parses and checks the command line into it; the
modes read it and nothing else of the command line. Each mode's own options are a nested value
(``options.judge``, ``options.verify``, ``options.b4``, ...); what several modes share (the data,
the limits, the run folder, the debugging loop, the ranking, the simulated model) is a nested
value of its own. Every field has the command line's default, so a test builds the options it
needs with ``BenchOptions(mode="b4-sim", b4=B4SimOptions(trials=500))``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from utdebug.agents.choice import builtin_choice, names_simulated


@dataclass(frozen=True, slots=True)
class DataOptions:
    """Which splits and problems, and where their files are read from."""

    splits: tuple[str, ...] = ("hard",)
    """``--split`` (repeatable), else the mode's default split, else ``hard``."""
    data_dir: Path | None = None
    cache_dir: Path | None = None
    """``--cache-dir``; ``None``: :func:`utdebug.data.datasets.default_cache_dir`."""
    verify: bool = True
    """Check the files' sha256 (``--no-verify`` turns it off)."""
    he_variant: str = "body"
    val_file: Path | None = None
    classeval_seed: int = 0
    classeval_cap: int = 3
    problems: str | None = None
    """``--problems``: comma-separated task ids or numbers."""
    limit: int | None = None
    """``--limit``: only the first N problems."""

    def cache(self) -> Path:
        """The cache folder: ``--cache-dir``, else the default one."""
        from utdebug.data.datasets import default_cache_dir

        return self.cache_dir or default_cache_dir()

    @property
    def several(self) -> bool:
        """More than one split: each gets a folder of its own under ``--out``."""
        return len(self.splits) > 1


@dataclass(frozen=True, slots=True)
class LimitOptions:
    """The limits of the programs bench runs (``--timeout`` ... ``--cut-limit``)."""

    timeout: float = 2.0
    kind: str = "cpu"
    """``--limit-kind``: ``cpu`` or ``wall``."""
    memory_mb: int = 2048
    budget: float = 120.0
    """Seconds per problem; 0: no limit."""
    cut_after: int | None = None
    """``None``: the mode's default; 0: off."""
    cut_limit: float = 0.25


@dataclass(frozen=True, slots=True)
class RunOptions:
    """Where the run writes and runs, and how it prints."""

    out: Path | None = None
    workers: int | None = None
    """``None``: the number of cores (with ``--ray``: the cluster's CPUs)."""
    ray: str | None = None
    json: bool = False


@dataclass(frozen=True, slots=True)
class LoopOptions:
    """The debugging loop of model-driven runs (``--ut-method`` ... ``--synth-inputs``)."""

    ut_method: str | None = None
    """``None``: the mode's default (``utgen``; ``random`` for verify)."""
    ut_model: str | None = None
    rounds: int = 3
    tests: int | None = None
    """``-n/--tests``; ``None``: the mode's default."""
    votes: int = 8
    threshold: float = 0.5
    variant: str = "paper"
    backtrack: bool = True
    problems_at_once: int = 16
    cost_limit: float | None = None
    use_cache: bool = True
    """The response cache and the private-test results of earlier runs (``--no-cache``: off)."""
    synth_inputs: int = 0

    @property
    def simulated_ut_model(self) -> bool:
        """``--ut-model`` names the simulated model (which plays every role or none)."""
        return names_simulated(self.ut_model)


@dataclass(frozen=True, slots=True)
class RankingOptions:
    """How candidate edits or solutions are ranked (``--candidates`` ... ``--alpha-xy``)."""

    candidates: int = 1
    ranker: str = "b4"
    tie: Literal["first", "pool"] = "first"
    beta0: float | None = None
    alpha_xy: float | None = None

    def given(self) -> dict[str, float]:
        """B4's hyperparameters given on the command line (the rest: the ranking defaults)."""
        return {
            name: value
            for name, value in (("beta0", self.beta0), ("alpha_xy", self.alpha_xy))
            if value is not None
        }


@dataclass(frozen=True, slots=True)
class SimOptions:
    """The SIMULATED model's parameters (``--sim-*``, ``--seed``); ``None``: by UT method."""

    attack: float | None = None
    out_acc: float | None = None
    fix: float | None = None
    regress: float | None = None
    seed: int = 0


@dataclass(frozen=True, slots=True)
class IntrinsicOptions:
    """``bench intrinsic``: test samples per problem."""

    samples: int = 3


@dataclass(frozen=True, slots=True)
class JudgeOptions:
    """``bench judge``: solutions sampled per problem."""

    solutions: int = 10


@dataclass(frozen=True, slots=True)
class VotingOptions:
    """``bench voting``: the per-vote accuracies compared."""

    grid: tuple[float, ...] = (0.2, 0.3, 0.4, 0.6, 0.7, 0.8)


@dataclass(frozen=True, slots=True)
class VerifyOptions:
    """``bench verify``: the Scoring-Verifiers file, or set."""

    file: Path | None = None
    set: str | None = None


@dataclass(frozen=True, slots=True)
class B4SimOptions:
    """``bench b4-sim``: the simulated study's setting and sweeps (its seed is
    ``options.sim.seed``, its ranking ``options.ranking``)."""

    solutions: int = 10
    """N: solutions per trial (``-N/--solutions``, shared with judge)."""
    tests: int = 30
    """M: tests per simulated task (``-M/--sim-tests``)."""
    trials: int = 20_000
    sweep: str = "none"
    theta_x: float = 0.2
    theta_y: float = 0.3
    theta_1: float = 0.4
    theta_0: float = 0.1


@dataclass(frozen=True, slots=True)
class BenchOptions:
    """One ``utdebug bench`` command, parsed and checked."""

    mode: str = "eval"
    model: str = "none"
    """``--model``: a spec as given (``none``: no model)."""
    models: tuple[str, ...] | None = None
    """``--models``: the checkpoints of ``bench intrinsic``, in order."""
    gold: bool = False
    semantics: str = "dataset"
    data: DataOptions = field(default_factory=DataOptions)
    limits: LimitOptions = field(default_factory=LimitOptions)
    run: RunOptions = field(default_factory=RunOptions)
    loop: LoopOptions = field(default_factory=LoopOptions)
    ranking: RankingOptions = field(default_factory=RankingOptions)
    sim: SimOptions = field(default_factory=SimOptions)
    intrinsic: IntrinsicOptions = field(default_factory=IntrinsicOptions)
    judge: JudgeOptions = field(default_factory=JudgeOptions)
    voting: VotingOptions = field(default_factory=VotingOptions)
    verify: VerifyOptions = field(default_factory=VerifyOptions)
    b4: B4SimOptions = field(default_factory=B4SimOptions)

    @property
    def simulated(self) -> bool:
        """The SIMULATED model plays (``--model sim``)."""
        return names_simulated(self.model)

    @property
    def without_model(self) -> bool:
        """No model (``--model none``, the default)."""
        choice = builtin_choice(self.model)
        return choice is not None and not choice.chosen


__all__ = [
    "B4SimOptions",
    "BenchOptions",
    "DataOptions",
    "IntrinsicOptions",
    "JudgeOptions",
    "LimitOptions",
    "LoopOptions",
    "RankingOptions",
    "RunOptions",
    "SimOptions",
    "VerifyOptions",
    "VotingOptions",
]
