"""utdebug.synth with the real sandbox: consistency validation, exposure, reduction, two rounds."""

from __future__ import annotations

import pytest

from utdebug.sandbox.config import Limits
from utdebug.sandbox.executor import Sandbox
from utdebug.synth import Reference, exposing_inputs, reduce_suite, synthesize, validate
from utdebug.synth.oracle import run_chosen
from utdebug.synth.pipeline import synthesize_valid

DOUBLE = "def f(x):\n    return x * 2\n"
DOUBLE_BUT_BIG = "def f(x):\n    return x * 2 if x < 5 else x * 3\n"
NO_NEGATIVES = "def f(x):\n    if x < 0:\n        raise ValueError('negative')\n    return x * 2\n"
SLOW_ON_100 = "def f(x):\n    while x == 100:\n        pass\n    return x * 2\n"
STATEFUL = (
    "seen = []\ndef f(x):\n    seen.append(x)\n    return x * 2 + (len(seen) if x == 3 else 0)\n"
)


def test_two_disagreeing_references_keep_only_agreed_inputs(sb: Sandbox) -> None:
    inputs = [(x,) for x in range(-3, 9)]
    refs = [Reference(DOUBLE, "f", "a"), Reference(DOUBLE_BUT_BIG, "f", "b")]
    val = validate(sb, refs, inputs)
    assert [val.inputs[i][0] for i in val.valid_indices] == [-3, -2, -1, 0, 1, 2, 3, 4]
    assert [val.inputs[i][0] for i in val.disagreements] == [5, 6, 7, 8]
    assert val.outputs[val.inputs.index((4,))] == 8
    assert val.reasons[val.inputs.index((5,))] == "references disagree: a gave 10, b gave 15"
    assert val.rate == pytest.approx(8 / 12)


def test_an_input_a_reference_rejects_or_times_out_on_is_invalid(sb: Sandbox) -> None:
    inputs = [(-1,), (2,), (100,), (3,)]
    refs = [Reference(NO_NEGATIVES, "f", "strict"), Reference(SLOW_ON_100, "f", "slow")]
    val = validate(sb, refs, inputs, limits=Limits(per_input=0.3))
    assert val.valid == [False, True, False, True]
    assert val.reasons[0] == "reference strict raised ValueError: negative"
    assert (val.reasons[2] or "").startswith("reference slow timed out")
    assert val.reason_counts() == {
        "reference strict raised ValueError": 1,
        "reference slow timed out": 1,
    }


def test_state_across_inputs_is_caught_by_a_reversed_second_run(sb: Sandbox) -> None:
    inputs = [(x,) for x in range(6)]
    refs = [Reference(STATEFUL, "f", "forward"), Reference(STATEFUL, "f", "reversed", reverse=True)]
    val = validate(sb, refs, inputs)
    assert [i for i, ok in enumerate(val.valid) if not ok] == [3]
    assert val.disagreements == [3]


def test_exposure_false_alarms_and_the_reduced_suite(sb: Sandbox) -> None:
    syn = synthesize([(1,), (4,), (7,)], count=60, seed=0)
    val = validate(sb, [Reference(DOUBLE, "f", "gold")], syn.inputs)
    assert val.rate == 1.0
    buggy = exposing_inputs(sb, DOUBLE_BUT_BIG, "f", val)
    strict = exposing_inputs(sb, NO_NEGATIVES, "f", val)
    assert buggy
    assert all(val.inputs[i][0] >= 5 for i in buggy)
    assert strict
    assert all(val.inputs[i][0] < 0 for i in strict)
    assert exposing_inputs(sb, DOUBLE, "f", val) == []  # the gold code: no false alarm
    suite = reduce_suite({"big": buggy, "strict": strict, "gold": []}, val.inputs)
    assert len(suite) == 2
    assert {val.inputs[i][0] >= 5 for i in suite} == {True, False}
    # the smallest input of each exposing set (one number each: the smallest magnitude wins
    # only through the size, which is equal here, so the first found of equal size)
    assert all(i in buggy or i in strict for i in suite)


def test_reduce_suite_takes_the_input_exposing_most_then_the_smallest() -> None:
    inputs = [([1, 2, 3],), ([1],), ([5, 6],), ([7],)]
    exposures = {"p": [0, 1], "q": [0, 2], "r": [3], "s": []}
    assert reduce_suite(exposures, inputs) == [0, 3]
    assert reduce_suite({"p": [0, 1]}, inputs) == [1]


def test_a_program_that_does_not_load_is_reported(sb: Sandbox) -> None:
    val = validate(sb, [Reference("def f(:\n", "f", "broken")], [(1,), (2,)])
    assert val.valid == [False, False]
    assert val.load_errors
    assert val.load_errors[0].startswith("broken: ")


def test_run_chosen_runs_only_the_chosen_inputs_and_answers_by_index(sb: Sandbox) -> None:
    inputs = [(x,) for x in range(-2, 4)]
    chosen = [4, 0, 2]  # 2, -2, 0: the -2 raises
    outcomes, load_error, _, _ = run_chosen(
        sb, Reference(NO_NEGATIVES, "f"), inputs, chosen, Limits()
    )
    assert load_error is None
    assert list(outcomes) == chosen
    assert outcomes[4].value == 4 and outcomes[2].value == 0
    assert outcomes[0].error_type == "ValueError"


def test_two_rounds_learn_the_domain_from_the_references(sb: Sandbox) -> None:
    seeds = [(3,), (8,), (12,)]
    vs = synthesize_valid(
        sb, [Reference(NO_NEGATIVES, "f", "gold")], seeds, count=120, seed=0, time_budget=60
    )
    assert len(vs.rounds) == 2
    first, second = vs.rounds
    n = len(vs.candidates)
    assert first.emitted + second.emitted == n <= 120
    assert second.emitted > 0
    assert second.valid == second.emitted  # inside what the reference accepted
    assert first.valid < first.emitted  # the first round tried negatives
    assert vs.validation.rate > 0.85
    assert all(vs.validation.valid[i] == (vs.validation.inputs[i][0] >= 0) for i in range(n))
