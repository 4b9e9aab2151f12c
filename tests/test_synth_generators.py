"""utdebug.synth.generators with the real sandbox: model-written generators (scripted model and
litellm's mock_response), repairs from execution feedback, consistency validation, a checker."""

from __future__ import annotations

import random
import time
from typing import Any

from utdebug.agents.scripted import ScriptedModel
from utdebug.agents.synth_prompts import SynthProblem
from utdebug.sandbox.config import Limits
from utdebug.sandbox.executor import Sandbox
from utdebug.synth.envelope import Envelope
from utdebug.synth.generators import GVSettings, generate_inputs, run_generator
from utdebug.synth.oracle import Reference

DOUBLE = Reference("def f(x):\n    return x * 2\n", "f", "a")
DOUBLE_BUT_BIG = Reference("def f(x):\n    return x * 2 if x < 5 else x * 3\n", "f", "b")
PROBLEM = SynthProblem(
    entry_point="f",
    signature="f(x)",
    description="Double a number.",
    examples=[(1,), (4,)],
    constraints="0 <= x <= 100",
    envelope="x: int in [1, 4]",
)
FAST = Limits(per_input=0.5, load=2.0, batch=3.0)


def program(body: str) -> str:
    return f"Here it is.\n```python\ndef generate():\n{body}\n```\n"


GOOD = program("    return [(x,) for x in range(4)]")
CORNER = program("    return [(0,), (100,)]")


async def test_a_failing_generator_is_repaired(sb: Sandbox) -> None:
    broken = program("    return [(rnd.randint(0, 9),) for _ in range(5)]")
    model = ScriptedModel({"generate": [broken, GOOD, CORNER]})
    res = await generate_inputs(model, sb, PROBLEM, [DOUBLE])
    regular, corner = res.generators
    assert [a.feedback for a in regular.attempts] == [
        ("generate() raised NameError: name 'rnd' is not defined",),
        (),
    ]
    assert regular.repaired and not corner.repaired
    assert res.feedback == ["regular #0: generate() raised NameError: name 'rnd' is not defined"]
    repair = model.requests[1].messages
    assert [m.role for m in repair] == ["user", "assistant", "user"]
    assert repair[1].content == broken
    assert "- generate() raised NameError: name 'rnd' is not defined" in repair[2].content
    assert res.inputs == [(0,), (1,), (2,), (3,), (100,)]
    assert res.outputs == [0, 2, 4, 6, 200]
    assert res.calls == 3 and res.dropped == []
    first = model.requests[0]
    assert first.purpose == "generate" and first.template_version == "utdebug-synth-1"
    text = first.messages[0].content
    for part in ("f(x)", "Double a number.", "(1,)", "0 <= x <= 100", "x: int in [1, 4]", "80"):
        assert part in text
    assert "corner-case" in model.requests[2].messages[0].content


async def test_an_inconsistent_input_is_dropped_and_reported(sb: Sandbox) -> None:
    model = ScriptedModel({"generate": [program("    return [(1,), (2,), (7,)]")]})
    res = await generate_inputs(
        model, sb, PROBLEM, [DOUBLE, DOUBLE_BUT_BIG], settings=GVSettings(corner=0)
    )
    assert res.inputs == [(1,), (2,)]
    assert res.dropped == [((7,), "references disagree: a gave 14, b gave 21")]
    assert res.feedback == []


async def test_no_valid_input_is_feedback_for_a_repair(sb: Sandbox) -> None:
    strict = Reference(
        "def f(x):\n    if x < 0:\n        raise ValueError('no')\n    return x\n", "f"
    )
    model = ScriptedModel({"generate": [program("    return [(-1,), (-2,)]"), GOOD]})
    res = await generate_inputs(model, sb, PROBLEM, [strict], settings=GVSettings(corner=0))
    assert res.feedback == [
        "regular #0: none of the 2 inputs is valid: reference reference raised ValueError: no"
    ]
    assert res.inputs == [(0,), (1,), (2,), (3,)]
    assert len(res.dropped) == 2


INDEX_FIRST = Reference("def f(xs):\n    return xs.index(max(xs))\n", "f", "first")
INDEX_LAST = Reference(
    "def f(xs):\n    return len(xs) - 1 - xs[::-1].index(max(xs))\n", "f", "last"
)
DRAFT = "```python\ndef check(args, output, expected):\n    return output == expected\n```"
REVIEWED = (
    "The draft rejects other positions of the maximum.\n```python\n"
    "def check(args, output, expected):\n"
    "    xs = args[0]\n"
    "    return isinstance(output, int) and 0 <= output < len(xs) and xs[output] == max(xs)\n"
    "```"
)


async def test_a_checker_is_written_reviewed_and_judges_disagreements(sb: Sandbox) -> None:
    gen = program("    return [([1, 3, 2],), ([3, 3],), ([5, 1, 5, 0],)]")
    model = ScriptedModel({"generate": [DRAFT, gen], "critique": [REVIEWED]})
    problem = SynthProblem(entry_point="f", signature="f(xs)", description="An index of the max.")
    res = await generate_inputs(
        model, sb, problem, [INDEX_FIRST, INDEX_LAST], settings=GVSettings(corner=0, checker=True)
    )
    assert res.checker is not None and res.checker.changed_in_review
    assert "xs[output] == max(xs)" in res.checker.code
    assert "return output == expected" in res.checker.draft
    review = model.requests[1]
    assert review.purpose == "critique"
    assert "return output == expected" in review.messages[0].content
    assert res.inputs == [([1, 3, 2],), ([3, 3],), ([5, 1, 5, 0],)]
    assert res.outputs == [1, 0, 0]  # the first reference's
    assert res.judged == 2 and res.dropped == []


async def test_an_approved_checker_is_kept_and_can_reject(sb: Sandbox) -> None:
    gen = program("    return [([3, 3],)]")
    model = ScriptedModel({"generate": [DRAFT, gen], "critique": ["LGTM"]})
    problem = SynthProblem(entry_point="f", signature="f(xs)", description="An index of the max.")
    res = await generate_inputs(
        model,
        sb,
        problem,
        [INDEX_FIRST, INDEX_LAST],
        settings=GVSettings(corner=0, checker=True, repairs=0),
    )
    assert res.checker is not None and not res.checker.changed_in_review
    assert res.inputs == [] and res.judged == 0
    assert res.dropped == [(([3, 3],), "references disagree: first gave 0, last gave 1")]


async def test_a_generator_that_loops_is_stopped_with_a_clear_line(sb: Sandbox) -> None:
    loops = program("    while True:\n        pass")
    model = ScriptedModel({"generate": [loops, loops]})
    t0 = time.monotonic()
    res = await generate_inputs(
        model, sb, PROBLEM, [DOUBLE], settings=GVSettings(corner=0, repairs=1, limits=FAST)
    )
    assert time.monotonic() - t0 < 60
    line = (
        "generate() was stopped at the sandbox's time limit (0.5 s): an endless loop, or too "
        "much work for 80 inputs"
    )
    assert res.feedback == [f"regular #0: {line}", f"regular #1: {line}"]
    assert res.inputs == [] and res.calls == 2


def test_what_a_generator_returns_is_checked(sb: Sandbox) -> None:
    code = (
        "class Thing:\n    pass\n\n"
        "def generate():\n"
        "    return [(1,), 5, (Thing(),), (10**9,), (2,), (2,), (3,)]\n"
    )
    bounds = Envelope.learn([(1,), (5,)]).widened()
    inputs, lines = run_generator(sb, code, 2, FAST, bounds, flood=3)
    assert inputs == [(1,), (2,)]
    assert lines[0] == (
        "generate() returned 7 inputs, more than 6 (3 times the 2 asked for): only the first 6 "
        "were read"
    )
    assert lines[1] == "1 of 6 inputs are not argument tuples (e.g. input 1: 5)"
    assert lines[2].startswith("1 of 6 inputs are not plain values the function can be called")
    assert lines[3].startswith("1 of 6 inputs are outside the input domain (e.g. (1000000000,): ")
    assert len(lines) == 4

    assert run_generator(sb, "def generate():\n    return 5\n", 2, FAST) == (
        [],
        ["generate() returned a value of type int, not a list of tuples"],
    )
    flood, lines = run_generator(sb, "def generate():\n    return [('x' * 1000,)] * 10000\n", 2)
    assert flood == [] and lines[0].startswith("generate() returned more than the sandbox takes")
    assert run_generator(sb, "def generate(:\n", 2, FAST)[1][0].startswith(
        "the program does not load: "
    )
    assert run_generator(sb, "def generate():\n    return []\n", 2, FAST) == (
        [],
        ["generate() returned no inputs"],
    )


async def test_through_litellm_mock_response_tokens_are_counted(sb: Sandbox) -> None:
    from utdebug.agents.litellm_client import LiteLLMModel

    async def no_sleep(_: float) -> None:
        return None

    model: Any = LiteLLMModel(
        "openai/gpt-4o-mini", mock_response=GOOD, sleep=no_sleep, rng=random.Random(0)
    )
    res = await generate_inputs(model, sb, PROBLEM, [DOUBLE])
    assert res.calls == 2  # regular and corner (the same mocked program: nothing new)
    assert res.inputs == [(0,), (1,), (2,), (3,)]
    # litellm counts the mocked call's tokens: the prompts, and the same reply twice
    assert res.usage.prompt_tokens > res.usage.completion_tokens > 0
    assert res.usage.completion_tokens % 2 == 0
    assert res.usage.cost is not None and res.usage.cost > 0
