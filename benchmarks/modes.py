"""The bench modes: one table, mode -> what it needs and the module function that runs it.

``utdebug bench MODE`` looks its mode up here (the command line's choices and help come from
this table too) and calls the function its row names for the run asked (without a model, with
``--model``, with ``--models``) with a :class:`ModeContext`: the frozen
:class:`~utdebug.benchmarks.options.BenchOptions`, the sandbox's configuration and the stop
event. Each mode has a run function of its own. The splits a mode takes are in
:mod:`utdebug.data.splits`. A new mode is one module with its run function and one row here
(see CONTRIBUTING.md).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from utdebug.benchmarks.options import BenchOptions
    from utdebug.sandbox.config import SandboxConfig


class UsageError(Exception):
    """The command line asks for something the mode cannot do: ``utdebug bench`` says it as
    one usage line and exits 2."""


@dataclass(frozen=True, slots=True)
class ModeContext:
    """What every mode runs with: the command's options, the sandbox's configuration and the
    event that stops the run (Ctrl-C, SIGTERM)."""

    options: BenchOptions
    sandbox: SandboxConfig
    stop: threading.Event


Run = Callable[[ModeContext], int]


@dataclass(frozen=True, slots=True)
class Mode:
    name: str
    help: str
    """The mode's words in ``bench --help``."""
    plain: str | None = None
    """``module:function`` run without a model (``None``: the mode needs ``--model``)."""
    with_model: str | None = None
    """``module:function`` run with ``--model``."""
    with_models: str | None = None
    """``module:function`` run with ``--models`` (several checkpoints)."""
    model_free: bool = False
    """Runs before any data or model option is looked at (no model, no sandbox, no data)."""
    ray: bool = False
    """Its plain run can go to a Ray cluster (``--ray``)."""
    default_split: str | None = None
    """The split when none is named (else the command's default)."""
    synth_inputs: bool = False
    """Its debugging sessions take ``--synth-inputs``."""
    simulated_only: bool = False
    """Runs with the SIMULATED model only (``--model sim``)."""

    @staticmethod
    def load(entry: str) -> Run:
        """The function of a row's ``module:function``."""
        module, _, function = entry.partition(":")
        run: Run = getattr(importlib.import_module(f"utdebug.benchmarks.{module}"), function)
        return run


MODES: dict[str, Mode] = {
    mode.name: mode
    for mode in (
        Mode(
            "eval",
            "evaluate the code, or debug it with --model",
            plain="bench:run",
            with_model="model_bench:run_eval",
            ray=True,
            synth_inputs=True,
        ),
        Mode(
            "intrinsic",
            "the paper's Table 1 protocol",
            with_model="model_bench:run_intrinsic",
            with_models="checkpoints:run",
        ),
        Mode(
            "ablation",
            "the full loop vs. no voting vs. no backtracking",
            with_model="model_bench:run_ablation",
            synth_inputs=True,
        ),
        Mode(
            "voting",
            "output accuracy with and without voting (--model sim)",
            with_model="model_bench:run_voting",
            synth_inputs=True,
            simulated_only=True,
        ),
        Mode(
            "judge",
            "best-of-N selection on HumanEval+ with generated tests (random, MaxPass, CodeT, "
            "B4, ...)",
            with_model="model_bench:run_judge",
            default_split="he+",
        ),
        Mode(
            "verify",
            "score a test generator as a verifier (Scoring-Verifiers sets)",
            with_model="verify:run",
        ),
        Mode(
            "synth",
            "buggy programs exposed by model-free synthesised inputs (--model M adds its "
            "generator programs)",
            plain="synth_bench:run",
            with_model="synth_bench:run_with_model",
        ),
        Mode(
            "b4-sim",
            "the B4 paper's simulated study (no model, no sandbox)",
            plain="b4_sim:run",
            model_free=True,
        ),
    )
}
DEFAULT_MODE = "eval"


def modes_help() -> str:
    """The help of ``bench``'s mode argument, from the table."""
    return "; ".join(
        f"{m.name}{' (default)' if m.name == DEFAULT_MODE else ''}: {m.help}"
        for m in MODES.values()
    )
