"""The splits and how each is read: one table, split -> loader, problem kind, the modes it runs.

Commands look a split up here instead of testing its name: :func:`load` reads any split (the
public files through :mod:`utdebug.data.datasets`, ClassEval+Fix built in the sandbox through
:mod:`utdebug.data.classeval`, a validation file the user names).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from utdebug.data.classeval import DEFAULT_CAP, DEFAULT_SEED, load_classeval_fix
from utdebug.data.datasets import (
    DatasetError,
    HeVariant,
    LoadedSplit,
    Split,
    load_fix_file,
    load_split,
)
from utdebug.sandbox.config import Limits
from utdebug.sandbox.executor import Sandbox


class ProblemKind(StrEnum):
    FUNCTION = "function"
    """A function, tested by its private inputs and expected outputs (:class:`Problem`)."""
    METHOD = "method"
    """A method of a class, tested by unittest methods (:class:`ClassFixProblem`)."""


@dataclass(frozen=True, slots=True)
class LoadRequest:
    """Where and how to read a split (the command line's data options)."""

    cache_dir: Path
    data_dir: Path | None = None
    he_variant: HeVariant = HeVariant.BODY
    verify: bool = True
    val_file: Path | None = None
    """The validation split's file (``--val-file``)."""
    limits: Limits | None = None
    start_sandbox: Callable[[], Sandbox] | None = None
    """ClassEval+Fix: the sandbox its first build runs in (``None``: it cannot be built here)."""
    seed: int = DEFAULT_SEED
    cap: int = DEFAULT_CAP
    workers: int = 2
    say: Callable[[str], None] | None = None


Loader = Callable[[Split, LoadRequest], LoadedSplit]


@dataclass(frozen=True, slots=True)
class SplitSpec:
    split: Split
    kind: ProblemKind
    loader: Loader
    modes: frozenset[str]
    """The bench modes that take the split (``eval``: plain evaluation and the debugging
    loop)."""
    gold_only: bool = False
    """Plain evaluation takes it with ``--gold`` only (it has no buggy code)."""
    checkpoints: bool = True
    """``bench --models`` (checkpoint comparison) takes it."""
    refusal: str | None = None
    """What ``bench`` says when the split is named with a mode it does not take."""


def _public(split: Split, req: LoadRequest) -> LoadedSplit:
    return load_split(
        split,
        data_dir=req.data_dir,
        cache_dir=req.cache_dir,
        he_variant=req.he_variant,
        verify=req.verify,
    )


def _val(split: Split, req: LoadRequest) -> LoadedSplit:
    if req.val_file is None:
        raise DatasetError("--split val needs --val-file PATH (a file in the MBPP+Fix format)")
    return load_fix_file(req.val_file, split)


def _classeval(split: Split, req: LoadRequest) -> LoadedSplit:
    if req.start_sandbox is None or req.limits is None:
        raise DatasetError("ClassEval+Fix runs with plain evaluation and --gold only")
    return load_classeval_fix(
        data_dir=req.data_dir,
        cache_dir=req.cache_dir,
        verify=req.verify,
        limits=req.limits,
        start_sandbox=req.start_sandbox,
        seed=req.seed,
        cap=req.cap,
        workers=req.workers,
        say=req.say,
    )


_ALL_MODES = frozenset({"eval", "intrinsic", "ablation", "voting", "judge", "verify", "synth"})

SPLITS: dict[Split, SplitSpec] = {
    spec.split: spec
    for spec in (
        SplitSpec(Split.HARD, ProblemKind.FUNCTION, _public, _ALL_MODES),
        SplitSpec(Split.MBPP, ProblemKind.FUNCTION, _public, _ALL_MODES),
        SplitSpec(Split.HE, ProblemKind.FUNCTION, _public, _ALL_MODES),
        SplitSpec(
            Split.HE_PLUS,
            ProblemKind.FUNCTION,
            _public,
            frozenset({"judge"}),
            gold_only=True,
            refusal="--split he+ is HumanEval+ code generation (no buggy code): use it with "
            "'bench judge', or with --gold to check the loader and evaluator",
        ),
        SplitSpec(Split.VAL, ProblemKind.FUNCTION, _val, _ALL_MODES),
        SplitSpec(
            Split.CLASSEVAL,
            ProblemKind.METHOD,
            _classeval,
            frozenset({"eval", "intrinsic", "synth"}),
            checkpoints=False,
            refusal="--split classeval runs plain evaluation, --gold, the debugging loop (bench "
            "--model ...), bench intrinsic and bench synth; the other modes and --models do not "
            "take it",
        ),
    )
}


def spec(split: Split | str) -> SplitSpec:
    """The registry entry of ``split``."""
    return SPLITS[Split(split)]


def load(split: Split | str, req: LoadRequest) -> LoadedSplit:
    """Read ``split``; :class:`DatasetError` when its files cannot be read."""
    s = spec(split)
    return s.loader(s.split, req)


__all__ = ["SPLITS", "LoadRequest", "ProblemKind", "SplitSpec", "load", "spec"]
