"""What a model-driven run over one split is given: the model, its settings, where it writes.

The modes (the debugging loop, ClassEval+Fix, judging) take one :class:`RunContext` in place of
a long list of parameters.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from utdebug.agents.base import Model
from utdebug.agents.sim import SimParams
from utdebug.engine import Settings
from utdebug.runs.folder import ProgressFn


@dataclass(frozen=True, slots=True)
class RunContext:
    model: Model | None
    """``None`` with :attr:`sim_params`: the simulated model, built over the private tests."""
    settings: Settings
    out_dir: Path
    key_extra: dict[str, Any] = field(default_factory=dict)
    """What else tells this run's records apart (the model names, the simulation)."""
    concurrency: int = 16
    """Problems at once."""
    sim_params: SimParams | None = None
    on_record: ProgressFn | None = None
    ut_model: Model | None = None
    """A separate model for test generation and voting."""
    stop: threading.Event | None = None
    """Set: start no new problem (an interrupted run keeps what it finished)."""
    synth_inputs: int = 0
    """Synthesised candidate inputs a problem's session votes on besides the model's
    proposals (``--synth-inputs``; 0: none, the loop as before)."""


__all__ = ["RunContext"]
