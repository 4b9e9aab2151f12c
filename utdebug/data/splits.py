"""The splits and how each is read: one table, split -> its files, reader, problem kind and the
modes it runs.

Commands look a split up here instead of testing its name: :func:`load` resolves a split's
files (:func:`utdebug.data.datasets.resolve_file`: the data folder, the cache, else a download)
and hands them to the split's reader, which makes the :class:`LoadedSplit` (the public files
through :mod:`utdebug.data.datasets`, ClassEval+Fix built in the sandbox through
:mod:`utdebug.data.classeval`, a validation file the user names). ``bench --split``'s choices
are this table's keys. A new split is its name in :class:`~utdebug.data.datasets.Split`, one
row here and its reader in a module of its own (see CONTRIBUTING.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from utdebug.data.classeval import read_classeval_fix
from utdebug.data.datasets import (
    CLASSEVAL_FILE,
    HARD_FILE,
    HE_PACK_FILE,
    HE_PLUS_FILE,
    MBPP_FILE,
    HeVariant,
    LoadedSplit,
    LoadRequest,
    Reader,
    Split,
    default_cache_dir,
    enum_value,
    read_he_fix,
    read_he_plus,
    read_mbpp_fix,
    read_val,
    resolve_file,
)


class ProblemKind(StrEnum):
    FUNCTION = "function"
    """A function, tested by its private inputs and expected outputs (:class:`Problem`)."""
    METHOD = "method"
    """A method of a class, tested by unittest methods (:class:`ClassFixProblem`)."""


@dataclass(frozen=True, slots=True)
class SplitSpec:
    split: Split
    kind: ProblemKind
    files: tuple[str, ...]
    """The public files the reader is given, resolved, in this order (names of
    :data:`~utdebug.data.datasets.SOURCES`)."""
    reader: Reader
    """Makes the split from its resolved files and the request."""
    modes: frozenset[str]
    """The bench modes that take the split (``eval``: plain evaluation and the debugging
    loop)."""
    gold_only: bool = False
    """Plain evaluation takes it with ``--gold`` only (it has no buggy code)."""
    checkpoints: bool = True
    """``bench --models`` (checkpoint comparison) takes it."""
    refusal: str | None = None
    """What ``bench`` says when the split is named with a mode it does not take."""


_ALL_MODES = frozenset({"eval", "intrinsic", "ablation", "voting", "judge", "verify", "synth"})

SPLITS: dict[Split, SplitSpec] = {
    spec.split: spec
    for spec in (
        SplitSpec(Split.HARD, ProblemKind.FUNCTION, (HARD_FILE,), read_mbpp_fix, _ALL_MODES),
        SplitSpec(Split.MBPP, ProblemKind.FUNCTION, (MBPP_FILE,), read_mbpp_fix, _ALL_MODES),
        SplitSpec(
            Split.HE, ProblemKind.FUNCTION, (HE_PACK_FILE, HE_PLUS_FILE), read_he_fix, _ALL_MODES
        ),
        SplitSpec(
            Split.HE_PLUS,
            ProblemKind.FUNCTION,
            (HE_PLUS_FILE,),
            read_he_plus,
            frozenset({"judge"}),
            gold_only=True,
            refusal="--split he+ is HumanEval+ code generation (no buggy code): use it with "
            "'bench judge', or with --gold to check the loader and evaluator",
        ),
        SplitSpec(Split.VAL, ProblemKind.FUNCTION, (), read_val, _ALL_MODES),
        SplitSpec(
            Split.CLASSEVAL,
            ProblemKind.METHOD,
            (CLASSEVAL_FILE,),
            read_classeval_fix,
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
    """Read ``split``: its files resolved, then its reader; :class:`DatasetError` when its
    files cannot be read."""
    s = spec(split)
    files = [
        resolve_file(
            name,
            data_dir=req.data_dir,
            cache_dir=req.cache_dir,
            download=req.download,
            verify=req.verify,
        )
        for name in s.files
    ]
    return s.reader(s.split, files, req)


def load_split(
    split: Split | str,
    *,
    data_dir: Path | None = None,
    cache_dir: Path | None = None,
    he_variant: HeVariant | str = HeVariant.BODY,
    download: bool = True,
    verify: bool = True,
) -> LoadedSplit:
    """Load one split of public files (``val`` needs :class:`LoadRequest`'s ``val_file``,
    ClassEval+Fix a sandbox: :func:`load`); fatal file problems raise :class:`DatasetError`,
    bad rows are collected. Raises :class:`ValueError` for an unknown split or variant name."""
    name = enum_value(Split, split, "split")
    req = LoadRequest(
        cache_dir=cache_dir or default_cache_dir(),
        data_dir=data_dir,
        he_variant=enum_value(HeVariant, he_variant, "HE variant"),
        download=download,
        verify=verify,
    )
    return load(name, req)


__all__ = ["SPLITS", "LoadRequest", "ProblemKind", "SplitSpec", "load", "load_split", "spec"]
