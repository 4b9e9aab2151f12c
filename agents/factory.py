"""One way from a model spec to a model: what each kind of model is (:data:`KINDS`) and
:func:`build_model`, which builds every kind (the simulated model over a
:class:`~utdebug.agents.sim.GoldOracle`). Front ends reach it through
:func:`utdebug.agents.choice.build_chosen`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .base import Meter, Metered, Model
from .cache import CachedModel, ResponseCache
from .config import ConfigError, Kind, ModelSpec
from .litellm_client import ClientSettings, LiteLLMModel, SamplingOverrides
from .scripted import ScriptedModel

if TYPE_CHECKING:
    from .sim import GoldOracle, SimParams


@dataclass(frozen=True, slots=True)
class SimSource:
    """What the simulated model is built over."""

    oracle: GoldOracle
    """The benchmark's private verdicts of a program and its comparison with the gold output."""
    params: SimParams | None = None
    """``None``: the defaults."""
    rationale_error: float | None = None
    """P(a rationale states another output) (``None``: the model's default)."""


@dataclass(frozen=True, slots=True)
class BuildWith:
    """What a kind may build its model with besides the spec."""

    meter: Meter | None = None
    sim: SimSource | None = None


@dataclass(frozen=True, slots=True)
class ModelKind:
    """What callers need to know of a kind of model, and how to make one."""

    build: Callable[[ModelSpec, BuildWith], Model]
    check: Callable[[ModelSpec], None] = lambda spec: None
    """``ConfigError`` when the spec cannot be used (checked before any work starts)."""
    answers_from_gold: bool = False
    """The simulated model: answers from a benchmark problem's gold solution, so it is built
    over that benchmark's oracle, each run its own."""
    replays_file: bool = False
    """Replays a JSON file of replies in order: nothing to wait for, one per process."""
    cached: bool = False
    """A real model: its calls go through the response cache."""


def kind_of(spec: ModelSpec) -> ModelKind:
    """The facts of ``spec``'s kind of model."""
    return KINDS[spec.kind]


def build_model(
    spec: ModelSpec,
    meter: Meter | None = None,
    cache_dir: Path | None = None,
    *,
    sim: SimSource | None = None,
) -> Model:
    """The model of ``spec``: wrapped in :class:`Metered` when given a meter (the simulated
    model is not: it costs nothing), and for a real model in the response cache of
    ``cache_dir`` when given one. The simulated model is built over ``sim``; without it:
    ``ValueError``."""
    kind = kind_of(spec)
    model = kind.build(spec, BuildWith(meter, sim))
    if cache_dir is not None and kind.cached:
        return with_cache(model, cache_dir)
    return model


def with_cache(model: Model, cache_dir: Path) -> Model:
    """``model`` answering from (and saving to) the response cache in ``cache_dir``."""
    return CachedModel(model, ResponseCache(cache_dir / "responses.sqlite"))


def check_model(spec: ModelSpec) -> None:
    """``ConfigError`` when ``spec`` cannot be used: a provider litellm cannot route (imports
    litellm), or a script file that is not there."""
    kind_of(spec).check(spec)


def _build_sim(spec: ModelSpec, using: BuildWith) -> Model:
    from .sim import SimModel, SimParams

    sim = using.sim
    if sim is None:
        raise ValueError(
            f"{spec.name!r} answers from a benchmark problem's gold solution: it is built over "
            "that benchmark's oracle"
        )
    oracle, params = sim.oracle, sim.params or SimParams()
    if sim.rationale_error is None:
        return SimModel(params, oracle.verdicts, oracle.matches)
    return SimModel(params, oracle.verdicts, oracle.matches, rationale_error=sim.rationale_error)


def _build_scripted(spec: ModelSpec, using: BuildWith) -> Model:
    assert spec.script_path is not None
    model = ScriptedModel.from_file(Path(spec.script_path))
    return model if using.meter is None else Metered(model, using.meter)


def _build_litellm(spec: ModelSpec, using: BuildWith) -> Model:
    return build_litellm_model(spec, using.meter)


def _check_script(spec: ModelSpec) -> None:
    if not (spec.script_path and spec.script_path.is_file()):
        raise ConfigError(f"scripted model: no such file: {spec.script_path}")


def build_litellm_model(spec: ModelSpec, meter: Meter | None = None) -> Model:
    """A :class:`LiteLLMModel` for ``spec``, wrapped in :class:`Metered` when given a meter.

    The spec's ``cost_limit`` tightens the meter's (the lower of the two applies). Any other
    kind of spec: ``ValueError`` (:func:`build_model` builds every kind).
    """
    if spec.kind != "litellm" or not spec.litellm_model:
        raise ValueError(f"{spec.name!r} is a {spec.kind} model; build it with its own class")
    check_provider(spec)
    settings = ClientSettings(
        timeout=spec.timeout,
        stall_timeout=spec.stall_timeout,
        stream=spec.stream,
        max_retries=spec.max_retries,
        concurrency=spec.concurrency,
        adaptive=spec.adaptive,
        supports_n=spec.supports_n,
        supports_prefill=spec.supports_prefill,
        sampling=SamplingOverrides(spec.temperature, spec.top_p, spec.max_tokens),
        extra=dict(spec.extra),
    )
    model = LiteLLMModel(
        spec.litellm_model,
        settings,
        api_base=spec.api_base,
        api_key_env=spec.api_key_env,
        meter=meter,
        hint=spec.hint,
    )
    if meter is None:
        return model
    if spec.cost_limit is not None:
        current = meter.cost_limit
        meter.cost_limit = spec.cost_limit if current is None else min(current, spec.cost_limit)
    return Metered(model, meter)


def check_provider(spec: ModelSpec) -> None:
    """``ConfigError`` when litellm cannot route the spec's model string (an unknown provider,
    or a bare name it does not know). Imports litellm (seconds)."""
    from .litellm_client import _import_litellm

    model = spec.litellm_model or spec.name
    ll = _import_litellm()
    try:
        ll.get_llm_provider(model=model, api_base=spec.api_base)
    except Exception:
        provider = model.split("/", 1)[0] if "/" in model else None
        known = "openai, anthropic, ollama, ollama_chat, hosted_vllm, gemini, mistral, groq, ..."
        where = f" ({spec.source})" if spec.source else ""
        if provider is not None:
            raise ConfigError(
                f"unknown provider {provider!r} in the model {model!r}{where}: write "
                f"PROVIDER/MODEL with a provider litellm knows ({known}; "
                "https://docs.litellm.ai/docs/providers), or a NAME from the config file"
            ) from None
        raise ConfigError(
            f"unknown model {model!r}{where}: litellm cannot tell its provider; write "
            f"PROVIDER/MODEL ({known}), or a NAME from the config file"
        ) from None


KINDS: Mapping[Kind, ModelKind] = {
    "litellm": ModelKind(_build_litellm, check_provider, cached=True),
    "sim": ModelKind(_build_sim, answers_from_gold=True),
    "scripted": ModelKind(_build_scripted, _check_script, replays_file=True),
}
