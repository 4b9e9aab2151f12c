"""Before a run: can the model answer at all? One tiny call per model, a one-line answer.

Front ends (``bench``, ``debug``, ``check``) call :func:`preflight` for each model before any
problem starts. A model that cannot answer (server down, unknown model, bad key) raises a
:class:`~utdebug.agents.base.ModelError` whose message is one line naming the model and the
cause; the front end prints it and exits 1 without starting work. Built-in models (scripted,
simulated) pass at once. For a litellm model the probe call also gathers evidence the client
uses later (whether the server continues an assistant prefill, how many request slots it
has); see :meth:`utdebug.agents.litellm_client.LiteLLMModel.probe`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .base import Model

__all__ = ["Preflight", "innermost", "preflight"]


@dataclass(frozen=True, slots=True)
class Preflight:
    model: str
    seconds: float
    """Wall time of the probe (0 for built-in models)."""
    prefill: bool | None = None
    """Whether the model continues an assistant prefill (``None``: not probed)."""
    slots: int | None = None
    """Request slots the server says it has (``None``: it does not say)."""
    note: str = ""
    """What was found, for a diagnostic line (``""`` for built-in models)."""
    server: str | None = None
    """Which server answered (``llama-server``, ``llama-cpp-python``, ``ollama``,
    ``lm-studio``, ``vllm``; ``None``: not recognised, or not a server)."""
    limit: int | None = None
    """Requests the client sends it at once to begin with (``None``: built-in models)."""


def innermost(model: Any) -> Any:
    """The model behind wrappers (``Metered``, ``CachedModel``: their ``inner``)."""
    seen = 0
    while hasattr(model, "inner") and seen < 10:
        model = model.inner
        seen += 1
    return model


async def preflight(model: Model) -> Preflight:
    """Probe ``model`` once (see the module docstring); raises ``ModelError`` on failure."""
    inner = innermost(model)
    probe = getattr(inner, "probe", None)
    if probe is None:
        return Preflight(model=model.name, seconds=0.0)
    result: Preflight = await probe()
    return result
