"""The model choice: which model a run uses, resolved once from ``--model``, env
``UTDEBUG_MODEL`` and the config file (:func:`resolve_choice`) into one frozen value
(:class:`ModelChoice`: none, scripted, simulated or live), and :func:`build_chosen`, the one
factory that builds every kind. Front ends ask the value what they need (is it offline, does it
go through the response cache, does it need a benchmark's oracle), never a kind's name.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from .config import (
    BUILTIN_SIM,
    SCRIPTED_PREFIX,
    Kind,
    ModelSpec,
    NoModelChosen,
    resolve_model_spec,
)

if TYPE_CHECKING:
    from .base import Meter, Model
    from .sim import GoldOracle, SimParams

ChoiceKind = Literal["none", "scripted", "simulated", "live"]

NO_MODEL = "none"
"""``--model none``: a run without a model."""

CHOICE_NAMES = (NO_MODEL, BUILTIN_SIM, f"{SCRIPTED_PREFIX}PATH")
"""The built-in values of ``--model`` (any other is a config NAME or a litellm string)."""

_KIND_OF_SPEC: Mapping[Kind, ChoiceKind] = {
    "litellm": "live",
    "sim": "simulated",
    "scripted": "scripted",
}


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """The model a run uses, before it is built."""

    kind: ChoiceKind
    spec: ModelSpec | None = None
    """``None`` for no model."""

    @property
    def chosen(self) -> bool:
        """A model is chosen (not ``none``)."""
        return self.spec is not None

    @property
    def name(self) -> str:
        """The value the user gave (``none`` for no model)."""
        return NO_MODEL if self.spec is None else self.spec.name

    @property
    def shown_name(self) -> str:
        """The name a person sees before the model is built (a live model's litellm string)."""
        if self.spec is None:
            return NO_MODEL
        return self.spec.litellm_model or self.spec.name

    @property
    def offline(self) -> bool:
        """Runs without a network model (none, scripted or simulated)."""
        return self.kind != "live"

    @property
    def cached(self) -> bool:
        """A real model: its calls go through the response cache."""
        return self.kind == "live"

    @property
    def replays(self) -> bool:
        """Replays a file of replies: nothing to wait for, one per process."""
        return self.kind == "scripted"

    @property
    def simulated(self) -> bool:
        """Answers from a benchmark problem's gold solution: it needs that benchmark's oracle
        (:func:`build_chosen`), and its outputs are labelled SIMULATED."""
        return self.kind == "simulated"

    def cache_identity(self, model: Model) -> str:
        """What identifies the built ``model``'s answers: a scripted model's file hash, else
        the model string with the server's identity (its sampling values and extras)."""
        from .base import identity_of

        if self.spec is None:
            return NO_MODEL
        if self.replays:
            assert self.spec.script_path is not None
            digest = hashlib.sha256(Path(self.spec.script_path).read_bytes()).hexdigest()
            return f"{SCRIPTED_PREFIX}{digest}"
        return json.dumps([self.spec.litellm_model, identity_of(model)])


NONE = ModelChoice("none")
"""No model."""


def choice_of(spec: ModelSpec) -> ModelChoice:
    """The choice of a resolved spec."""
    return ModelChoice(_KIND_OF_SPEC[spec.kind], spec)


SIMULATED_MODEL = choice_of(ModelSpec(BUILTIN_SIM, "sim", source="built-in"))
"""The simulated model, as the benchmarks build it over their own oracles."""


def builtin_choice(value: str | None) -> ModelChoice | None:
    """The choice of ``--model none`` or ``--model sim``, read without the config file (no NAME
    in it may be ``sim``); ``None`` for any other value."""
    return {NO_MODEL: NONE, BUILTIN_SIM: SIMULATED_MODEL}.get(value or "")


def names_simulated(value: str | None) -> bool:
    """``value`` (a ``--model`` value, or one a run recorded) names the simulated model."""
    choice = builtin_choice(value)
    return choice is not None and choice.simulated


def resolve_choice(cli_value: str | None, *, env: Mapping[str, str] | None = None) -> ModelChoice:
    """The model chosen by ``--model`` > env ``UTDEBUG_MODEL`` > the config's ``default``;
    :data:`NONE` for ``none`` or when nothing names a model. ``ConfigError`` for a broken config
    file or a value that names no model."""
    import os

    env = os.environ if env is None else env
    if (cli_value or env.get("UTDEBUG_MODEL")) == NO_MODEL:
        return NONE
    try:
        spec = resolve_model_spec(cli_value, env=env)
    except NoModelChosen:
        return NONE
    return choice_of(spec)


def check_chosen(choice: ModelChoice) -> None:
    """``ConfigError`` when the chosen model cannot be used: a provider litellm cannot route
    (imports litellm), or a script file that is not there."""
    from .factory import check_model

    if choice.spec is not None:
        check_model(choice.spec)


def build_chosen(
    choice: ModelChoice,
    *,
    meter: Meter | None = None,
    cache_dir: Path | None = None,
    oracle: GoldOracle | None = None,
    sim_params: SimParams | None = None,
    rationale_error: float | None = None,
) -> Model:
    """The model of ``choice`` (:func:`utdebug.agents.factory.build_model`): metered when given
    a meter, a live model in the response cache of ``cache_dir`` when given one, the simulated
    model over ``oracle``. ``ValueError`` for no model, or a simulated one without an oracle."""
    from .factory import SimSource, build_model

    if choice.spec is None:
        raise ValueError("no model chosen")
    sim = None if oracle is None else SimSource(oracle, sim_params, rationale_error)
    return build_model(choice.spec, meter, cache_dir if choice.cached else None, sim=sim)
