"""The model side of the training-data pipeline: its two prompts, the roles that ask them, and
the simulated model's answers to them."""

from __future__ import annotations

from typing import Any

import pytest

from utdebug.agents import prompts
from utdebug.agents.base import Message, ModelRequest
from utdebug.agents.parsing import ParsedValue, parse_output
from utdebug.agents.roles import Perturber, Rationalizer, TaskText
from utdebug.agents.scripted import ScriptedModel
from utdebug.agents.sim import SIMULATED, SimModel, SimParams, SimProblem
from utdebug.mutation import normalized_dump

GOLD = (
    "import math\n\n\ndef helper(n):\n    return int(math.sqrt(n))\n\n\n"
    "def is_not_prime(n):\n    if n == 1:\n        return True\n"
    "    for i in range(2, helper(n) + 1):\n        if n % i == 0:\n            return True\n"
    "    return False\n"
)
TASK = TaskText(
    "Write a python function to identify non-prime numbers.", "is_not_prime(n)", "is_not_prime"
)


def test_corruption_prompt_is_the_papers_with_the_code_and_entry_point() -> None:
    text = prompts.corruption_prompt(
        signature="is_not_prime(n)",
        description=TASK.description,
        code=GOLD,
        entry_point="is_not_prime",
    )
    assert "Assume you are a TA for a programming course." in text
    assert "corrupt the correct code or implementation of function is_not_prime" in text
    assert "**do not** leave comments in the code block" in text
    assert f"```\n{GOLD}\n```" in text
    assert "## Incorrect Code Solution" in text


def test_rationale_prompt_shows_the_whole_test_and_the_papers_example() -> None:
    text = prompts.rationale_prompt(
        signature="is_not_prime(n)",
        description=TASK.description,
        entry_point="is_not_prime",
        unit_input="4",
        unit_output="True",
    )
    assert 'Input: "BCDEFG"\nOutput: False' in text  # the one-shot example
    assert "Input: 4\nOutput: True" in text
    assert (
        "provide step-by-step reasoning for why function `is_not_prime` when given input of 4 "
        "generates or returns True." in text
    )
    assert prompts.TRAIN_PROMPT_VERSION != prompts.PROMPT_VERSION


async def test_perturber_merges_the_replys_function_into_the_gold_module() -> None:
    reply = (
        "A student may forget the +1 of the range bound.\n\n## Incorrect Code Solution\n"
        "```python\ndef is_not_prime(n):\n    if n == 1:\n        return True\n"
        "    for i in range(2, helper(n)):\n        if n % i == 0:\n            return True\n"
        "    return False\n```\n"
    )
    model = ScriptedModel({"perturb": [reply, "I cannot do that."]})
    found = await Perturber(model).corrupt(TASK, GOLD, 2, hint={"task_id": "t"})
    assert len(found) == 2
    first, second = found
    assert first.code is not None and first.reason is None
    assert "import math" in first.code and "def helper(n)" in first.code  # kept from the gold
    assert "range(2, helper(n))" in first.code
    assert second.code is None and second.reason
    (req,) = model.requests
    assert req.purpose == "perturb" and req.n == 2
    assert req.template_version == prompts.TRAIN_PROMPT_VERSION


async def test_rationalizer_asks_with_the_training_template() -> None:
    model = ScriptedModel({"rationale": ["4 = 2 * 2, so it is not prime: True."]})
    done = await Rationalizer(model).explain(TASK, "4", "True")
    assert done.text.startswith("4 = 2 * 2")
    (req,) = model.requests
    assert req.purpose == "rationale"
    assert "Input: 4\nOutput: True" in req.messages[0].content
    assert req.template_version == prompts.TRAIN_PROMPT_VERSION


def _sim(inputs: tuple[tuple[Any, ...], ...] = ((4,), (7,)), **kw: Any) -> SimModel:
    async def oracle(task_id: str, code: str) -> list[tuple[bool, Any]]:
        return [(True, None) for _ in inputs]

    sim = SimModel(SimParams(seed=3), oracle, lambda *a: True, **kw)
    sim.register(SimProblem("t", "is_not_prime", GOLD, GOLD, inputs, tuple(True for _ in inputs)))
    return sim


def _req(purpose: str, ctx: dict[str, Any], index: int = 0) -> ModelRequest:
    return ModelRequest(
        messages=(Message("user", "the prompt"),),
        purpose=purpose,  # type: ignore[arg-type]
        sample_index=index,
        context={"task_id": "t", **ctx},
    )


async def test_simulated_corruption_is_a_labelled_mutation_of_the_code_it_is_shown() -> None:
    sim = _sim()
    out = [(await sim.complete(_req("perturb", {"code": GOLD}, i)))[0] for i in range(6)]
    for c in out:
        assert c.simulated and SIMULATED in c.text
        assert "## Incorrect Code Solution" in c.text
    codes = {c.text.split("```python\n")[1].split("```")[0] for c in out}
    assert len(codes) >= 2  # samples differ
    assert all(normalized_dump(code) not in (None, normalized_dump(GOLD)) for code in codes)
    again = (await sim.complete(_req("perturb", {"code": GOLD}, 0)))[0]
    assert again.text == out[0].text  # seeded


async def test_simulated_rationale_restates_the_given_output_or_a_near_miss() -> None:
    right = _sim(rationale_error=0.0)
    wrong = _sim(rationale_error=1.0)
    ctx = {"args": (4,), "output": True}
    ok = (await right.complete(_req("rationale", ctx)))[0].text
    bad = (await wrong.complete(_req("rationale", ctx)))[0].text
    assert SIMULATED in ok and SIMULATED in bad
    parsed_ok = parse_output(ok, call="is_not_prime(4)")
    parsed_bad = parse_output(bad, call="is_not_prime(4)")
    assert isinstance(parsed_ok, ParsedValue) and parsed_ok.value is True
    assert isinstance(parsed_bad, ParsedValue) and parsed_bad.value is False


async def test_simulated_test_generator_without_known_inputs_proposes_nothing() -> None:
    sim = _sim(inputs=())
    (c,) = await sim.complete(_req("ut", {"code": GOLD, "method": "utgen"}))
    assert SIMULATED in c.text and "Arguments" not in c.text


def test_rationale_error_must_be_a_probability() -> None:
    with pytest.raises(ValueError, match="rationale_error"):
        _sim(rationale_error=1.5)
