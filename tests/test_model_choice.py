"""The model choice: one value resolved from ``--model``, env and config, and one factory that
builds every kind, the simulated model over a benchmark's oracle."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from utdebug.agents.base import Message, Meter, Metered, ModelRequest
from utdebug.agents.choice import (
    NONE,
    SIMULATED_MODEL,
    ModelChoice,
    build_chosen,
    builtin_choice,
    names_simulated,
    resolve_choice,
)
from utdebug.agents.config import ConfigError
from utdebug.agents.scripted import ScriptedModel
from utdebug.agents.sim import SimParams, SimProblem


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """An environment with no config file and no ``UTDEBUG_MODEL``."""
    return {"XDG_CONFIG_HOME": str(tmp_path / "config")}


def _script(tmp_path: Path) -> Path:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(["hello"]), encoding="utf-8")
    return path


def test_each_kind_is_one_value_with_what_front_ends_ask(
    tmp_path: Path, env: dict[str, str]
) -> None:
    sim = resolve_choice("sim", env=env)
    assert (sim.kind, sim.simulated, sim.offline, sim.cached, sim.replays) == (
        "simulated",
        True,
        True,
        False,
        False,
    )
    script = _script(tmp_path)
    scripted = resolve_choice(f"scripted:{script}", env=env)
    assert (scripted.kind, scripted.replays, scripted.offline, scripted.cached) == (
        "scripted",
        True,
        True,
        False,
    )
    live = resolve_choice("openai/gpt-4o-mini", env=env)
    assert (live.kind, live.offline, live.cached, live.simulated) == ("live", False, True, False)
    assert live.shown_name == "openai/gpt-4o-mini"
    assert live.chosen and not NONE.chosen


def test_none_when_asked_or_when_nothing_names_a_model(env: dict[str, str]) -> None:
    assert resolve_choice(None, env=env) == NONE
    assert resolve_choice("none", env=env) == NONE
    assert resolve_choice(None, env={**env, "UTDEBUG_MODEL": "none"}) == NONE
    assert NONE.offline and NONE.name == "none"
    assert resolve_choice(None, env={**env, "UTDEBUG_MODEL": "sim"}).simulated
    with pytest.raises(ConfigError):
        resolve_choice("two words", env=env)


def test_a_broken_config_is_an_error_not_no_model(tmp_path: Path, env: dict[str, str]) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text("default = 3\n", encoding="utf-8")
    with pytest.raises(ConfigError):
        resolve_choice(None, env={**env, "UTDEBUG_CONFIG": str(broken)})


class _Oracle:
    """Every program fails the one private input; a value matches when it equals the gold."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    async def verdicts(self, task_id: str, code: str) -> Sequence[tuple[bool, Any]]:
        self.asked.append((task_id, code))
        return [(False, 0)]

    def matches(self, task_id: str, value: Any, gold: Any, args: tuple[Any, ...]) -> bool:
        return bool(value == gold)


def test_the_factory_builds_the_simulated_model_over_an_oracle(env: dict[str, str]) -> None:
    oracle = _Oracle()
    model = build_chosen(
        resolve_choice("sim", env=env), oracle=oracle, sim_params=SimParams(attack=1.0)
    )
    assert model.simulated and model.name == "sim"
    problem = SimProblem(
        "t/1", "f", "def f(x):\n    return x\n", "def f(x):\n    return 0\n", ((1,),), (1,)
    )
    model.register(problem)  # type: ignore[attr-defined]
    request = ModelRequest(
        messages=(Message("user", "a test, please"),),
        purpose="ut",
        context={"task_id": "t/1", "code": problem.given, "entry_point": "f", "method": "utgen"},
    )
    replies = asyncio.run(model.complete(request))
    assert replies and all(r.simulated for r in replies)
    assert oracle.asked == [("t/1", problem.given)]  # it asked the oracle, not a sandbox


def test_the_simulated_model_needs_an_oracle_and_none_builds_nothing(env: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="oracle"):
        build_chosen(resolve_choice("sim", env=env))
    with pytest.raises(ValueError, match="no model"):
        build_chosen(NONE)


def test_scripted_is_metered_and_identified_by_its_file(
    tmp_path: Path, env: dict[str, str]
) -> None:
    script = _script(tmp_path)
    choice = resolve_choice(f"scripted:{script}", env=env)
    model = build_chosen(choice, meter=Meter(), cache_dir=tmp_path / "cache")
    assert isinstance(model, Metered) and isinstance(model.inner, ScriptedModel)
    digest = hashlib.sha256(script.read_bytes()).hexdigest()
    assert choice.cache_identity(model) == f"scripted:{digest}"
    assert not (tmp_path / "cache").exists()  # only a live model goes through the cache


def test_a_choice_is_frozen(env: dict[str, str]) -> None:
    choice = resolve_choice("sim", env=env)
    with pytest.raises(AttributeError):
        choice.kind = "live"  # type: ignore[misc]
    assert choice == ModelChoice("simulated", choice.spec)


def test_built_in_values_are_read_without_the_config_file() -> None:
    assert builtin_choice("none") == NONE
    assert names_simulated("sim") and builtin_choice("sim") == SIMULATED_MODEL
    assert not names_simulated("simple") and not names_simulated(None)
    assert builtin_choice("openai/gpt-4o-mini") is None


def test_the_factory_passes_the_rationale_error_to_the_simulated_model() -> None:
    model = build_chosen(SIMULATED_MODEL, oracle=_Oracle(), rationale_error=0.25)
    assert model.rationale_error == 0.25  # type: ignore[attr-defined]
    assert build_chosen(SIMULATED_MODEL, oracle=_Oracle()).rationale_error == 0.1  # type: ignore[attr-defined]
