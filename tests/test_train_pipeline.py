"""The pipeline's pieces (SFT targets read back by the engine's parsers, labels, comments) and
a run with a scripted model through the real prompt path: real-format replies (fenced code,
``assert f(...) == y``, values of the parameters, prose rationales), a wrong model output that
the gold label replaces, a rationale that states another answer, a model error retried by a
rerun."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from utdebug.agents import prompts
from utdebug.agents.endings import reached
from utdebug.agents.parsing import ParsedCall, ParsedValue, parse_call, parse_output
from utdebug.runs.records import SAMPLES, read_samples
from utdebug.train.sources import load_mbpp_plus
from utdebug.train.texts import (
    build_target,
    literal_text,
    same_answer,
    strip_comments,
    verify_target,
)

# --- targets ----------------------------------------------------------------------------------

CORPUS_LIKE = """## Hypothesis
The function `find_char_long` splits the text but keeps short words.

### Error Pattern
Words of exactly 3 characters.

### Unit Test

### Input Arguments
- `text` = `'Please move back to stream'`

### Output
```
['Please', 'move', 'back', 'stream']
```
The output shows the words of at least 4 characters.
"""


def test_target_keeps_the_hypothesis_puts_the_rationale_before_the_gold_output() -> None:
    rationale = (
        "## Reasoning\nLet's think step by step.\n- The words are Please, move, back, to, stream.\n"
        "- 'to' has 2 characters.\n- Therefore the function returns "
        "`['Please', 'move', 'back', 'stream']`."
    )
    gold = "['Please', 'move', 'back', 'stream']"
    call = "find_char_long('Please move back to stream')"
    target = build_target(CORPUS_LIKE, call, rationale, gold)
    assert target.startswith("## Hypothesis\nThe function `find_char_long` splits")
    assert "## Reasoning" not in target and "Reasoning" not in target.split("### Output")[1][:20]
    head, _, out = target.partition("### Output\n")
    assert f"Arguments: ```{call}```" in head
    assert "`'Please move back to stream'`" in head  # the model's own input reasoning stays
    assert out.index("Let's think step by step.") < out.index(f"Output: ```{gold}```")
    assert out.endswith(f"Output: ```{gold}```\n")
    args = ("Please move back to stream",)
    assert verify_target(target, "find_char_long", ["text"], args, gold) is None
    parsed = parse_call(target, "find_char_long", params=["text"])
    assert isinstance(parsed, ParsedCall) and parsed.args == args
    value = parse_output(target, call=parsed.source)
    assert isinstance(value, ParsedValue) and repr(value.value) == gold
    assert reached("ut", target) == len(target.rstrip())


def test_the_models_own_test_and_its_wrong_output_are_left_out() -> None:
    reply = "The bound is off by one.\n```python\nassert is_not_prime(4) == False\n```\n"
    target = build_target(
        reply, "is_not_prime(4)", "4 = 2 * 2: not prime.", "True", model_call="is_not_prime(4)"
    )
    assert target.startswith("The bound is off by one.\n\n### Input Arguments\n")
    assert "False" not in target
    assert verify_target(target, "is_not_prime", ["n"], (4,), "True") is None
    printed = "Try two.\nprint(square_nums([2]))  # Output: [5]\n"
    target = build_target(printed, "square_nums([2])", "2 * 2 = 4", "[4]", "square_nums([2])")
    assert "[5]" not in target and target.startswith("Try two.\n")
    # Without the model's call in the reply, the whole reply up to its output is kept; here
    # its assert would then be read as the answer: the target is refused.
    kept = build_target(reply, "is_not_prime(4)", "4 = 2 * 2: not prime.", "True")
    assert verify_target(kept, "is_not_prime", ["n"], (4,), "True") is not None


def test_a_rationale_with_its_own_output_marker_is_refused() -> None:
    rationale = "It returns True.\nOutput: ```True```\nSo that is the answer."
    target = build_target("## Hypothesis\nx\n", "f(1)", rationale, "True")
    why = verify_target(target, "f", ["n"], (1,), "True")
    assert why is not None and "streamed reply would end" in why


def test_a_gold_output_the_format_cannot_hold_is_refused() -> None:
    gold = repr("a```b")
    target = build_target("## Hypothesis\nx\n", "f(1)", "It is a string.", gold)
    assert verify_target(target, "f", ["n"], (1,), gold) is not None


def test_an_unclosed_fence_in_a_rationale_is_closed() -> None:
    target = build_target("## Hypothesis\nx\n", "f(1)", "Look:\n```python\nx = f(1)", "3")
    assert "x = f(1)\n```\nOutput: ```3```" in target
    assert verify_target(target, "f", ["n"], (1,), "3") is None


def test_same_answer_is_strict_about_types_and_empty_values() -> None:
    assert not same_answer((0,), ())  # MBPP+'s allclose helper would pass this
    assert same_answer(1, 1.0) and same_answer(0.1 + 0.2, 0.3)
    assert not same_answer(True, 1) and not same_answer([1], (1,))
    assert same_answer({1, 2}, {2, 1}) and same_answer(math.nan, math.nan)
    assert not same_answer("1", 1)


def test_literal_text_only_for_values_that_read_back() -> None:
    assert literal_text({1, 2}) in ("{1, 2}", "{2, 1}")
    assert literal_text(float("inf")) == "inf"
    assert literal_text((1, "a", [None])) == "(1, 'a', [None])"
    assert literal_text(object()) is None
    assert literal_text("x" * 20_000) is None


def test_strip_comments_keeps_the_code() -> None:
    code = "def f(x):  # adds one\n    # the bug is here\n    return x + 2  # wrong\n"
    assert strip_comments(code) == "def f(x):\n    return x + 2\n"
    assert strip_comments("s = '# not a comment'\n") == "s = '# not a comment'\n"


# --- a scripted model through the real prompt path ------------------------------------------------

PERTURB = [
    # is_not_prime, version a: the range bound off by one, with a comment that gives it away.
    "A common slip is the end of the range.\n\n## Incorrect Code Solution\n```python\n"
    "import math\ndef is_not_prime(n):\n    if n == 1:\n        return True\n"
    "    for i in range(2, int(math.sqrt(n))):  # forgot the + 1\n"
    "        if n % i == 0:\n            return True\n    return False\n```\n",
    # version b: the special case of 1 forgotten; only the function is given.
    "Students often forget that 1 is not prime.\n\n```python\ndef is_not_prime(n):\n"
    "    for i in range(2, n):\n        if n % i == 0:\n            return True\n"
    "    return False\n```",
    # square_nums, version a: doubling instead of squaring.
    "Confusing ** with *:\n```python\ndef square_nums(nums):\n return [i*2 for i in nums]\n```",
    # version b: the gold code unchanged (refused: the edit changes nothing).
    "```python\ndef square_nums(nums):\n return [i**2 for i in nums]\n```",
]
UT = [
    # is_not_prime a: attacks; the model's own expected output is wrong (4 is not prime: True).
    "## Hypothesis\nThe loop stops one short, so a square of a prime is missed.\n\n"
    "## Unit Test\n```python\nassert is_not_prime(4) == False\n```\n",
    # is_not_prime b: no input at all.
    "## Hypothesis\nThe code may not handle small numbers.\n\nI am not sure which input.",
    # is_not_prime b, second try: values of the parameters, as small models write them.
    "## Hypothesis\nThe special case of 1 is gone.\n\n### Input Arguments\n- `n` = `1`\n\n"
    "### Output\n```\nFalse\n```\n",
    # square_nums a: an input on which doubling and squaring agree.
    "```python\nprint(square_nums([2]))  # Output: [4]\n```",
    # square_nums a, second try.
    "## Hypothesis\nThe code doubles instead of squaring.\n\n## Unit Test\n\n### Input Arguments\n"
    "Use three small numbers.\nArguments: ```square_nums([1, 2, 3])```\n\n### Output\n"
    "Squares are 1, 4, 9.\nOutput: ```[1, 4, 9]```\n",
]
RATIONALE = [
    # is_not_prime(4): argues itself into the wrong answer -> refused.
    "Let's think step by step.\n- 4 = 2 * 2.\n- So the function returns `False`.",
    # is_not_prime(1): right.
    "## Reasoning\nLet's think step by step.\n- 1 has no divisor other than itself and is not "
    "a prime number.\n- A function that identifies non-prime numbers flags it.\n"
    "Therefore, the output is `True`.",
    # square_nums([1, 2, 3]): right, in prose.
    "Squaring each element gives 1*1 = 1, 2*2 = 4 and 3*3 = 9, so the function returns [1, 4, 9].",
]


def utdebug(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "utdebug", *args], capture_output=True, text=True, timeout=300
    )


def _scripted_cmd(data: Path, script: Path, out: Path) -> list[str]:
    return [
        "train", "data", "--source", "mbpp+", "--data-dir", str(data), "--decontaminate", "hard",
        "--problems", "mbpp+/3,mbpp+/8", "--perturb", "model", "--model", f"scripted:{script}",
        "--attempts", "3", "--concurrency", "1", "--out", str(out),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def scripted_run(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not (data_dir / "MbppPlus-prerelease.jsonl.gz").is_file():
        pytest.skip("MbppPlus-prerelease.jsonl.gz is not in the data folder")
    tmp = tmp_path_factory.mktemp("train-scripted")
    script = tmp / "replies.json"
    script.write_text(json.dumps({"perturb": PERTURB, "ut": UT, "rationale": RATIONALE}))
    r = utdebug(*_scripted_cmd(data_dir, script, tmp / "out"))
    assert r.returncode == 0, r.stdout + r.stderr
    out = tmp / "out"
    examples = [
        json.loads(line)
        for shard in sorted((out / "sft").glob("*.jsonl"))
        for line in shard.read_text().splitlines()
    ]
    return {
        "r": r,
        "out": out,
        "card": json.loads((out / "card.json").read_text()),
        "records": read_samples(out / SAMPLES),
        "examples": examples,
        "problems": {p.problem_id: p for p in load_mbpp_plus(data_dir=data_dir).problems},
    }


def test_scripted_counts_per_stage(scripted_run: dict[str, Any]) -> None:
    st = scripted_run["card"]["counts"]["stages"]
    assert st["perturb"] == {
        "kept": 3,
        "model replies": 4,
        "no code taken from the reply: the edit does not change the code": 1,
    }
    assert st["inputs"] == {
        "attempts": 5,
        "kept": 3,
        "no input in the reply": 1,
        "input does not attack": 1,
    }
    assert st["rationales"]["asked"] == 3 and st["rationales"]["accepted"] == 2
    assert st["rationales"]["rationale states another answer"] == 1
    assert scripted_run["card"]["counts"]["examples"] == 2 == len(scripted_run["examples"])
    # Replayed replies are no language model's: labelled as the simulated model's are.
    assert (
        scripted_run["card"]["simulated"] is True and scripted_run["card"]["label"] == "SIMULATED"
    )
    assert all(r["label"] == "SIMULATED" for r in scripted_run["records"])
    assert scripted_run["r"].stdout.startswith(
        "SIMULATED: the text of these examples comes from a scripted model"
    )
    usage = scripted_run["card"]["usage"]
    assert usage["completions"] == len(PERTURB) + len(UT) + len(RATIONALE)


def test_scripted_examples_are_inference_prompt_and_gold_labelled_target(
    scripted_run: dict[str, Any],
) -> None:
    by_call = {e["meta"]["call"]: e for e in scripted_run["examples"]}
    assert set(by_call) == {"is_not_prime(1)", "square_nums([1, 2, 3])"}
    one = by_call["is_not_prime(1)"]
    user, assistant = (m["content"] for m in one["messages"])
    p = scripted_run["problems"]["mbpp+/3"]
    records = {r["problem_id"]: r for r in scripted_run["records"]}
    version = records["mbpp+/3"]["versions"][one["meta"]["version"]]
    assert "import math" in version["code"]  # the reply's function merged into the gold module
    assert "if n == 1" not in version["code"]
    assert user == prompts.ut_prompt(
        "utgen",
        signature=p.signature,
        description=p.description,
        code=version["code"],
        entry_point=p.entry_point,
    )
    # The model said False; the label is the gold code's True.
    assert assistant.endswith("Output: ```True```\n") and "```False```" not in assistant
    assert "- `n` = `1`" in assistant and "Arguments: ```is_not_prime(1)```" in assistant
    assert "## Reasoning" not in assistant
    assert one["meta"]["perturbed_by"] == "model:scripted:" + str(
        scripted_run["out"].parent / "replies.json"
    )
    square = by_call["square_nums([1, 2, 3])"]["messages"][1]["content"]
    assert square.endswith("so the function returns [1, 4, 9].\nOutput: ```[1, 4, 9]```\n")
    assert "Squares are 1, 4, 9." not in square  # the model's own output section is replaced


def test_scripted_corruptions_lose_their_comments(scripted_run: dict[str, Any]) -> None:
    rec = next(r for r in scripted_run["records"] if r["problem_id"] == "mbpp+/3")
    codes = [v["code"] for v in rec["versions"]]
    assert any("range(2, int(math.sqrt(n))):" in c for c in codes)
    assert all("forgot" not in c and "#" not in c for c in codes)
    failing = [f for v in rec["versions"] for f in v["failing"]]
    assert {f["call"] for f in failing} == {"is_not_prime(4)", "is_not_prime(1)"}
    assert all(f["gold_output"] == "True" for f in failing)


def test_a_model_error_ends_the_problem_and_a_rerun_retries_it(
    data_dir: Path, tmp_path: Path
) -> None:
    if not (data_dir / "MbppPlus-prerelease.jsonl.gz").is_file():
        pytest.skip("MbppPlus-prerelease.jsonl.gz is not in the data folder")
    script = tmp_path / "replies.json"
    short = {"perturb": PERTURB, "ut": UT, "rationale": RATIONALE[:2]}  # none for square_nums
    script.write_text(json.dumps(short))
    cmd = _scripted_cmd(data_dir, script, tmp_path / "out")
    first = utdebug(*cmd)
    assert first.returncode == 1, first.stderr
    records = read_samples(tmp_path / "out" / SAMPLES)
    errors = [r for r in records if r["error_kind"] == "model"]
    assert [r["problem_id"] for r in errors] == ["mbpp+/8"]
    assert "ScriptExhausted" in errors[0]["error"]
    assert re.search(r"model errors +1 \(rerun to retry\)", first.stdout)
    # The rerun is a new process whose script replays from its start: give it the replies
    # the retried problem needs.
    again = {"perturb": PERTURB[2:], "ut": UT[3:], "rationale": RATIONALE[2:]}
    script.write_text(json.dumps(again))
    second = utdebug(*cmd)
    assert second.returncode == 0, second.stderr
    assert "1 already recorded, 1 to run" in second.stderr
    card = json.loads((tmp_path / "out" / "card.json").read_text())
    assert card["counts"]["model_errors"] == 0 and card["counts"]["examples"] == 2
    keys = [r["key"] for r in read_samples(tmp_path / "out" / SAMPLES)]
    assert len(keys) == 3 and len(set(keys)) == 2  # the failed record, then its retry


def test_the_training_package_loads_no_ui_model_or_data_library() -> None:
    code = (
        "import sys, utdebug, utdebug.cli, utdebug.train_cmd, utdebug.train.driver,"
        " utdebug.train.pipeline, utdebug.train.tulu, utdebug.train.decontam,"
        " utdebug.train.output, utdebug.benchmarks.checkpoints;"
        "bad = [m for m in ('textual', 'litellm', 'datasets', 'pyarrow', 'ray', 'trl', 'peft',"
        " 'transformers', 'torch') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_labels_whose_order_may_be_a_sets_are_recognised() -> None:
    from utdebug.train.texts import order_suspect, uses_sets

    assert uses_sets("def f(a, b):\n    return tuple(set(a) & set(b))\n")
    assert uses_sets("def f(a):\n    return [x for x in {y for y in a}]\n")
    assert uses_sets("def f(a, b):\n    return list(a.intersection(b))\n")
    assert not uses_sets("def f(a):\n    return sorted(a)\n")
    assert order_suspect(("a", "b")) and order_suspect([("a", 1), ("b", 2)])
    assert not order_suspect((1, 2)) and not order_suspect(("a",)) and not order_suspect("ab")


def test_canonical_text_of_sets_is_the_same_in_every_process() -> None:
    from utdebug.literals import canonical_repr, literal_value

    value = (
        {"pear", "apple", "fig"},
        frozenset({"b", "a"}),
        [set(), frozenset()],
        {"k": {"z", "y"}},
    )
    text = canonical_repr(value)
    assert text == (
        "({'apple', 'fig', 'pear'}, frozenset({'a', 'b'}), [set(), frozenset()], {'k': {'y', 'z'}})"
    )
    assert literal_value(text) == value
    code = (
        "from utdebug.literals import canonical_repr\n"
        "print(canonical_repr({'pear', 'apple', 'fig', 'kiwi', 'plum'}))"
    )
    seen = set()
    for seed in ("1", "2", "3", "4"):
        r = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
            timeout=60,
        )
        assert r.returncode == 0, r.stderr
        seen.add(r.stdout.strip())
    assert seen == {"{'apple', 'fig', 'kiwi', 'pear', 'plum'}"}
