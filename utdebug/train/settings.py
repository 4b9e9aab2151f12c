"""What determines a problem's training record: the run's :class:`Settings`, the
:class:`Job` of one problem and its record key."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from utdebug.agents import prompts
from utdebug.agents.choice import names_simulated
from utdebug.agents.config import BUILTIN_SIM, SCRIPTED_PREFIX
from utdebug.agents.sim import SIMULATED
from utdebug.runs.records import record_key
from utdebug.sandbox import LimitKind, Limits
from utdebug.train.sources import TrainProblem

__all__ = ["NO_MODEL", "PIPELINE_VERSION", "Job", "Settings", "job_key"]

PIPELINE_VERSION = "utgen-data-2"
"""Part of every record key: bump it when what a record holds for the same inputs changes."""
NO_MODEL = "none"
"""``Settings.model`` when no stage uses a model."""


_INPUTS_WITHOUT_MODEL = {
    "dataset": "the source's own test inputs (no model)",
    "synth": "the source's own test inputs and inputs synthesised from them (no model)",
}


@dataclass(frozen=True, slots=True)
class Settings:
    """What determines a problem's record (besides the problem itself)."""

    model: str
    """The model of stages I-III as ``--model`` names it (``sim``, ``scripted:PATH``, a
    configured name or a litellm model string); :data:`NO_MODEL` when no stage uses one."""
    perturb: Literal["ast", "model"] = "ast"
    inputs: Literal["model", "dataset", "synth"] = "model"
    """Stage II: the model proposes inputs, or the source's own test inputs are tried (no
    model), or those and inputs synthesised from them (``utdebug.synth``: type-aware mutation
    and Hypothesis strategies, labelled by the gold code; no model)."""
    rationale: Literal["model", "none"] = "model"
    """Stage III: the model explains the output, or the target has no rationale (no model)."""
    corruptions: int = 2
    attempts: int = 5
    tests_per_code: int = 1
    rationale_tries: int = 1
    seed: int = 0
    timeout: float = 1.0
    """Seconds per input in the sandbox (of ``limit_kind``)."""
    limit_kind: str = "cpu"
    sim_attack: float | None = None
    """The simulated model's attack rate (``None``: its UTGen default, 0.4196)."""
    sim_rationale_error: float = 0.1
    cache_dir: str | None = None
    """Folder of the response cache for a real model (``None``: no cache); not in the key."""

    def key_parts(self) -> dict[str, Any]:
        parts = asdict(self)
        parts.pop("cache_dir")
        for name, default in (("inputs", "model"), ("rationale", "model")):
            if parts[name] == default:
                parts.pop(name)  # the keys of runs from before these settings stay the same
        if not self.model.startswith(BUILTIN_SIM):  # as the keys of earlier runs have it
            parts.pop("sim_attack")
            parts.pop("sim_rationale_error")
        return parts

    @property
    def uses_model(self) -> bool:
        """Some stage asks a model (otherwise no model is set up, and none is named)."""
        return self.perturb == "model" or self.inputs == "model" or self.rationale == "model"

    def stage_sources(self) -> dict[str, str]:
        """What made each stage's part of the data (for the card): a model, or no model."""
        model = f"the model {self.model}" + (f" ({SIMULATED})" if self.simulated else "")
        return {
            "perturb": model if self.perturb == "model" else "AST mutation (no model)",
            "inputs": model if self.inputs == "model" else _INPUTS_WITHOUT_MODEL[self.inputs],
            "rationale": model if self.rationale == "model" else "none (no model)",
        }

    @property
    def sim(self) -> bool:
        """The simulated model plays stages I-III."""
        return names_simulated(self.model)

    @property
    def simulated(self) -> bool:
        """No language model writes the text: the simulated model, or a scripted one (replies
        replayed from a file, as utdebug's models mark it); everything says SIMULATED."""
        return self.sim or self.model.startswith(SCRIPTED_PREFIX)

    def limits(self) -> Limits:
        """Per input ``timeout``; a batch (a program on the known inputs) at most 5 s, and
        after 2 timeouts its other inputs get 0.1 s each (a corrupted loop that never ends
        costs little)."""
        return Limits(
            per_input=self.timeout,
            load=5.0,
            memory_mb=1024,
            frame_cap=1 << 20,  # a value over 1 MB is no test label (literal_text refuses it)
            batch=5.0,
            cut_after=2,
            cut_limit=min(0.1, self.timeout),
            kind=LimitKind(self.limit_kind),
        )


@dataclass(frozen=True, slots=True)
class Job:
    index: int
    """The problem's place in the run (the order of the SFT shards)."""
    key: str
    problem: TrainProblem
    settings: Settings
    holdout: bool = False


def job_key(problem: TrainProblem, settings: Settings, holdout: bool) -> str:
    return record_key(
        {
            "pipeline": PIPELINE_VERSION,
            "prompts": [prompts.PROMPT_VERSION, prompts.TRAIN_PROMPT_VERSION],
            "problem": problem.fingerprint(),
            "settings": settings.key_parts(),
            "holdout": holdout,
        }
    )
