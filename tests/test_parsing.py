"""Reply parsing (paper and reference styles) over the reply corpus, pending values resolved in
a real sandbox, keyword binding, and the prompt templates."""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from tests.reply_corpus import (
    CALLS,
    CODES,
    OUTPUTS,
    Args,
    CallCase,
    CodeCase,
    Expect,
    Fails,
    OutputCase,
    Pending,
    Value,
)
from utdebug.agents import prompts
from utdebug.agents.base import Message
from utdebug.agents.parsing import (
    ARGS_ENTRY,
    MAX_REPLY_CHARS,
    VALUE_ENTRY,
    ParsedCall,
    ParsedValue,
    ParseFailure,
    argument_program,
    bind_arguments,
    critique_says_correct,
    extract_code,
    parse_call,
    parse_output,
    resolve_pending,
    value_program,
)
from utdebug.sandbox import Sandbox, Status


def same(a: Any, b: Any) -> bool:
    """Equality that also requires equal types (1, 1.0 and True differ) and lets nan == nan."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def check(result: ParsedCall | ParsedValue | ParseFailure, expect: Expect) -> None:
    if isinstance(expect, Fails):
        assert isinstance(result, ParseFailure), result
        assert expect.reason in result.reason, result.reason
    elif isinstance(expect, Args):
        assert isinstance(result, ParsedCall), result
        assert result.pending is None
        assert same(result.args, expect.args), result.args
        assert same(result.kwargs, expect.kwargs), result.kwargs
    elif isinstance(expect, Value):
        assert isinstance(result, ParsedValue), result
        assert not result.pending
        assert same(result.value, expect.value), result.value
    elif isinstance(result, ParsedCall):
        assert result.pending == expect.source
        assert result.args == () and result.kwargs == {}
    else:
        assert isinstance(result, ParsedValue), result
        assert result.pending and result.value is None
        assert result.source == expect.source


def ids(cases: list[CallCase] | list[OutputCase] | list[CodeCase]) -> list[str]:
    return [c.name for c in cases]


# --- the corpus -------------------------------------------------------------------------------


def test_corpus_size_and_coverage() -> None:
    everything: list[CallCase | OutputCase | CodeCase] = [*CALLS, *OUTPUTS, *CODES]
    names = [c.name for c in everything]
    assert len(names) >= 60
    assert len(set(names)) == len(names)
    categories = Counter(c.category for c in everything)
    for needed in ("wellformed", "chatty", "fenced", "truncated", "malformed", "hostile"):
        assert categories[needed] >= 3, categories
    # every pending case says what the sandbox makes of it
    pendable: list[CallCase | OutputCase] = [*CALLS, *OUTPUTS]
    for case in pendable:
        assert (case.resolved is not None) == isinstance(case.paper, Pending), case.name


@pytest.mark.parametrize("case", CALLS, ids=ids(CALLS))
def test_parse_call_paper(case: CallCase) -> None:
    check(parse_call(case.reply, case.entry), case.paper)


@pytest.mark.parametrize("case", CALLS, ids=ids(CALLS))
def test_parse_call_reference(case: CallCase) -> None:
    result = parse_call(case.reply, case.entry, style="reference")
    expect = case.reference or case.paper
    if isinstance(expect, Pending):
        assert isinstance(result, ParsedCall) and result.splat
    check(result, expect)


@pytest.mark.parametrize("case", OUTPUTS, ids=ids(OUTPUTS))
def test_parse_output_paper(case: OutputCase) -> None:
    check(parse_output(case.reply), case.paper)


@pytest.mark.parametrize("case", OUTPUTS, ids=ids(OUTPUTS))
def test_parse_output_reference(case: OutputCase) -> None:
    check(parse_output(case.reply, style="reference"), case.reference or case.paper)


@pytest.mark.parametrize("case", CODES, ids=ids(CODES))
def test_extract_code(case: CodeCase) -> None:
    assert extract_code(case.reply) == case.code


def test_reference_style_differs_where_documented() -> None:
    differing = [c.name for c in CALLS if c.reference is not None and c.reference != c.paper]
    assert {"single-tuple-arg", "kwargs", "zero-args", "chatty-stray-call-before-arguments"} <= (
        set(differing)
    )


def test_unknown_style_is_an_error() -> None:
    with pytest.raises(ValueError, match="style"):
        parse_call("f(1)", "f", style="eval")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="style"):
        parse_output("Output: `1`", style="eval")  # type: ignore[arg-type]


def test_source_is_the_call_text() -> None:
    parsed = parse_call("calling f(3) first\nArguments: ```f( [1, 2] , k='a')```", "f")
    assert isinstance(parsed, ParsedCall)
    assert parsed.source == "f( [1, 2] , k='a')"
    ref = parse_call("### Input Arguments\nArguments: ```f((1, 2))```", "f", style="reference")
    assert isinstance(ref, ParsedCall) and ref.source == "f((1, 2))"


def test_power_tower_is_never_computed_here() -> None:
    start = time.perf_counter()
    parsed = parse_call("Arguments: ```f(10**10**10, 9**9**9**9)```", "f")
    value = parse_output("Output: ```2**2**2**2**2**2```")
    assert time.perf_counter() - start < 0.5
    assert isinstance(parsed, ParsedCall) and parsed.pending == "10**10**10, 9**9**9**9"
    assert isinstance(value, ParsedValue) and value.pending


def test_reply_at_the_limit_is_parsed() -> None:
    reply = "Arguments: ```f(1)```" + " " * (MAX_REPLY_CHARS - 21)
    assert len(reply) == MAX_REPLY_CHARS
    assert parse_call(reply, "f") == ParsedCall((1,), {}, "f(1)")
    too_long = parse_call(reply + " ", "f", style="reference")
    assert isinstance(too_long, ParseFailure) and "too long" in too_long.reason


# --- critique and programs --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "correct"),
    [
        ("Feedback: the loop is fine. The above code is correct.", True),
        ("Feedback: off by one. The above code is wrong, please fix it.", False),
        ("The code is wrong somewhere... Feedback: The above code is correct.", True),
        ("Feedback: I am not sure about the edge cases.", True),  # unclear counts as correct
        ("No feedback marker, but the code is wrong, please fix it.", False),
    ],
)
def test_critique_says_correct(text: str, correct: bool) -> None:
    assert critique_says_correct(text) is correct


def test_programs_name_their_entry_points() -> None:
    code, entry = argument_program("[1]*3, k=2")
    assert entry == ARGS_ENTRY and f"def {ARGS_ENTRY}():" in code
    compile(code, "<args>", "exec")
    code, entry = value_program("sorted([3, 1])  # trailing comment")
    assert entry == VALUE_ENTRY and f"def {VALUE_ENTRY}():" in code
    compile(code, "<value>", "exec")


# --- resolve_pending in a real sandbox --------------------------------------------------------


@pytest.fixture(scope="module")
def sb() -> Iterator[Sandbox]:
    with Sandbox() as box:
        yield box


PENDING_CALLS = [c for c in CALLS if c.resolved is not None]
PENDING_OUTPUTS = [c for c in OUTPUTS if c.resolved is not None]


@pytest.mark.parametrize("case", PENDING_CALLS, ids=ids(PENDING_CALLS))
def test_resolve_pending_calls(sb: Sandbox, case: CallCase) -> None:
    for style, expect in (
        ("paper", case.resolved),
        ("reference", case.resolved_reference or case.resolved),
    ):
        parsed = parse_call(case.reply, case.entry, style=style)  # type: ignore[arg-type]
        if isinstance(parsed, ParseFailure):  # e.g. keyword arguments in reference style
            assert isinstance(case.reference, Fails)
            continue
        start = time.perf_counter()
        resolved = resolve_pending(sb, parsed, timeout=1.0)
        assert time.perf_counter() - start < 5.0
        assert expect is not None
        check(resolved, expect)
        if isinstance(resolved, ParsedCall):
            assert resolved.source == parsed.source


@pytest.mark.parametrize("case", PENDING_OUTPUTS, ids=ids(PENDING_OUTPUTS))
def test_resolve_pending_outputs(sb: Sandbox, case: OutputCase) -> None:
    parsed = parse_output(case.reply)
    assert isinstance(parsed, ParsedValue) and parsed.pending
    resolved = resolve_pending(sb, parsed, timeout=1.0)
    assert case.resolved is not None
    check(resolved, case.resolved)


def test_hang_and_memory_bomb_fail_quickly(sb: Sandbox) -> None:
    for source, reason in (
        ("[x for x in iter(int, 1)]", "timed out"),
        ("10**10**10", "timed out"),
        ("[0]*10**10", "MemoryError"),
        ("'x' * 10**12", "MemoryError"),
    ):
        start = time.perf_counter()
        result = resolve_pending(sb, ParsedValue(None, source, pending=True), timeout=0.5)
        assert time.perf_counter() - start < 4.0, source
        assert isinstance(result, ParseFailure) and reason in result.reason, result


def test_resolved_objects_pass_through(sb: Sandbox) -> None:
    call = ParsedCall((1,), {}, "f(1)")
    value = ParsedValue([1], "[1]")
    assert resolve_pending(sb, call) is call
    assert resolve_pending(sb, value) is value


def test_non_plain_results_and_raising_expressions(sb: Sandbox) -> None:
    regex = resolve_pending(sb, ParsedValue(None, "re.compile('a')", pending=True))
    assert isinstance(regex, ParseFailure) and "not plain data" in regex.reason
    nested = resolve_pending(sb, ParsedValue(None, "[1, {'k': (re.compile('a'),)}]", True))
    assert isinstance(nested, ParseFailure) and "re.Pattern" in nested.reason
    error = resolve_pending(sb, ParsedCall((), {}, "f(1/0)", pending="1/0"))
    assert isinstance(error, ParseFailure) and "ZeroDivisionError" in error.reason


def test_argument_program_runs_in_sandbox(sb: Sandbox) -> None:
    code, entry = argument_program("*[1, 2], x=[0] * 2, **{'y': 3}")
    outcome = sb.run(code, entry, [()]).outcomes[0]
    assert outcome.status is Status.OK
    assert outcome.value == [[1, 2], {"x": [0, 0], "y": 3}]


# --- keyword binding --------------------------------------------------------------------------

CODE = "def other(a):\n    pass\n\ndef f(a, b, c=3, d=[4], *, e=5):\n    return a\n"


@pytest.mark.parametrize(
    ("args", "kwargs", "expected"),
    [
        ((1, 2), {}, (1, 2)),
        ((1,), {"b": 2}, (1, 2)),
        ((), {"b": 2, "a": 1}, (1, 2)),
        ((1, 2), {"d": 9}, (1, 2, 3, 9)),
        ((), {"a": 1, "b": 2, "c": 0}, (1, 2, 0)),
    ],
)
def test_bind_arguments(args: tuple[Any, ...], kwargs: dict[str, Any], expected: Any) -> None:
    assert bind_arguments(args, kwargs, CODE, "f") == expected


@pytest.mark.parametrize(
    ("args", "kwargs", "code", "reason"),
    [
        ((1,), {"c": 2}, CODE, "missing argument `b`"),
        ((1, 2), {"z": 1}, CODE, "unknown keyword argument `z`"),
        ((1, 2), {"e": 1}, CODE, "keyword-only"),
        ((1, 2), {"a": 1}, CODE, "multiple values"),
        ((1, 2, 3, 4, 5), {"a": 1}, CODE, "extra positional"),
        ((), {"a": 1}, "def g(a):\n    pass\n", "no function `f`"),
        ((), {"a": 1}, "def f(a:\n", "does not parse"),
        ((), {"a": 1}, "def f(a, /, b=2):\n    pass\n", "positional-only"),
        ((), {"b": 1}, "def f(a=[1] * 2, b=0):\n    pass\n", "not a literal"),
    ],
)
def test_bind_arguments_failures(
    args: tuple[Any, ...], kwargs: dict[str, Any], code: str, reason: str
) -> None:
    result = bind_arguments(args, kwargs, code, "f")
    assert isinstance(result, ParseFailure) and reason in result.reason, result


def test_bind_arguments_uses_the_last_definition() -> None:
    code = "def f(a):\n    pass\n\ndef f(x, y):\n    pass\n"
    assert bind_arguments((1,), {"y": 2}, code, "f") == (1, 2)
    assert bind_arguments((1,), {}, "not python at all", "f") == (1,)


# --- prompts ----------------------------------------------------------------------------------

FIELDS = {
    "signature": "remove_odd(l)",
    "description": "Write a python function to remove odd numbers from a given list.",
    "code": "\ndef remove_odd(l):\n    for i in l:\n        if i % 2 != 0:\n"
    "            l.remove(i)\n    return l\n",
    "entry_point": "remove_odd",
}


def test_prompt_version() -> None:
    assert prompts.PROMPT_VERSION == "utdebug-h1"
    assert "bump" in (prompts.__doc__ or "").lower()


@pytest.mark.parametrize("method", ["utgen", "prompted"])
def test_failing_ut_prompt(method: str) -> None:
    text = prompts.ut_prompt(method, **FIELDS)
    assert text == prompts.ut_prompt("prompted", **FIELDS)
    for phrase in (
        "You are given a Python function `remove_odd(l)` to solve the following task:\n\n"
        "## Task\nWrite a python function to remove odd numbers from a given list.\n\n"
        "## Code Solution:\n```\n" + FIELDS["code"] + "\n```\n",
        "The code solution I have provided to you is **incorrect**.",
        "1. Is **valid** input based on the task description",
        "2. The output enclosed in ```.``` and is **faithful** to the task description",
        "what a correct program would return.",
        "3. **Breaks** the given code, i.e., does **not** execute to the **correct** output",
        "consistent with the pattern (hypotheis) you have identified.",
        "- that you MUST directly write ALL input arguments of the function in the correct "
        "order. Skip writing any names of arguments.",
        "- you MUST enclose the unit test inputs and outputs in ```.```",
        "## Hypothesis\n< step-by-step reasoning >\n\nError Pattern:",
        "## Unit Test\n\n### Input Arguments\n",
        "Arguments: ```remove_odd(<all arguments>)```\n\n### Output\n",
        "what a **correct** remove_odd would execute to",
        "Output: ```<your final answer>```",
    ):
        assert phrase in text, phrase


def test_random_prompt_hides_the_code() -> None:
    text = prompts.ut_prompt("random", **FIELDS)
    assert FIELDS["code"].strip() not in text
    assert "Code Solution" not in text and "incorrect" not in text
    assert "Based on the task description above, write a unit test that" in text
    assert "what a correct program would yield." in text
    assert "## Hypothesis" not in text
    assert "Arguments: ```remove_odd(<all arguments>)```" in text
    assert text.rstrip().endswith("Output: ```<your final answer>```")


def test_ut_prompt_rejects_unknown_methods() -> None:
    with pytest.raises(ValueError, match="none"):
        prompts.ut_prompt("none", **FIELDS)


def test_prompt_keeps_braces_in_fields() -> None:
    text = prompts.ut_prompt(
        "prompted", signature="f(d)", description="Map {k: v}.", code="{code}", entry_point="f"
    )
    assert "Map {k: v}." in text and "```\n{code}\n```" in text


def test_output_prefill() -> None:
    reply = "## Unit Test\n\n### Input Arguments\nArguments: ```f(1)```\n\n### Output\nIt is 2."
    assert prompts.output_prefill(reply) == (
        "## Unit Test\n\n### Input Arguments\nArguments: ```f(1)```\n\n### Output\n"
    )
    assert prompts.output_prefill("Arguments: ```f(1)```\nOutput: ```2```") is None


def test_output_prediction_prompt() -> None:
    text = prompts.output_prediction_prompt(
        signature="f(x)", description="Double x.", call_source="f(21)", entry_point="f"
    )
    assert "## Task\nDouble x." in text and "```f(21)```" in text
    assert "step-by-step reasoning" in text
    assert text.rstrip().endswith("Output: ```<your final answer>```")
    assert parse_output(text.replace("<your final answer>", "42")) == ParsedValue(42, "42")


def test_code_generation_and_initial_chat() -> None:
    mbpp = prompts.code_generation_prompt(
        signature="f(x)", description="Double x.", example="assert f(2) == 4", he_stub=None
    )
    assert mbpp == (
        "\nWrite Python code to solve the task.\nWrite a Python function `f(x)` to solve the "
        'following problem: Present code in ```python```\n```python\n"""\nDouble x.\n'
        '>>> assert f(2) == 4\n"""\n```\n'
    )
    he = prompts.code_generation_prompt(
        signature="f(x)", description="ignored", example=None, he_stub="def f(x):\n    '''D'''"
    )
    assert he.endswith("```python\ndef f(x):\n    '''D'''\n```\n") and '"""' not in he
    chat = prompts.initial_chat(mbpp, "def f(x):\n    return x")
    assert chat == (
        Message("user", mbpp),
        Message("assistant", "```\ndef f(x):\n    return x\n```"),
    )
    assert extract_code(chat[1].content) == "\ndef f(x):\n    return x\n"


def test_debug_feedback_and_formatting() -> None:
    text = prompts.debug_feedback(
        prompts.format_feedback_input(([1, 2, 3], "a")),
        prompts.format_feedback_value(6),
        prompts.format_feedback_value("hello"),
    )
    assert text == (
        "The above code is incorrect and does not pass the testcase.\n"
        "Input: [[1, 2, 3], 'a']\nOutput: 6\nExpected: hello\n\n"
    )
    assert prompts.format_feedback_value((1, 2.0)) == "(1, 2.0)"


def test_self_critique_prompt() -> None:
    text = prompts.self_critique_prompt(description="Double x.", code="def f(x): ...")
    assert text.startswith("\n# Your Task\n\n## Task\nDouble x.\n\n## Code:\n```\ndef f(x): ...")
    assert "in the format ```Feedback: <your feedback>```." in text
    assert 'Always end your feedback with the line "The above code is correct."' in text
    assert '"The above code is wrong, please fix it."' in text
