"""Reply parsing (paper and reference styles) over the reply corpus, pending values resolved in
a real sandbox, keyword binding, and the prompt templates."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest
from testkit.reply_corpus import (
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
    same,
)
from testkit.scripted_add import votes

from utdebug.agents import prompts
from utdebug.agents.base import Message, ModelRequest
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
    parameter_names,
    parse_call,
    parse_output,
    resolve_pending,
    value_program,
)
from utdebug.agents.scripted import ScriptedModel
from utdebug.engine import Executor, Session, Settings, Task, event_to_json
from utdebug.engine.events import TestDropped, TestProposed, VoteCast
from utdebug.sandbox import Sandbox, Status


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
    start = time.thread_time()  # CPU time: computing either tower would take hours of it
    parsed = parse_call("Arguments: ```f(10**10**10, 9**9**9**9)```", "f")
    value = parse_output("Output: ```2**2**2**2**2**2```")
    assert time.thread_time() - start < 0.5
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
        # How long a hostile one takes is benchmarks/perf/hostile_waits.py's business: here,
        # only what it resolves to (a loaded machine stretches the wall time, not the verdict).
        resolved = resolve_pending(sb, parsed, timeout=1.0)
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


def test_hang_and_memory_bomb_fail(sb: Sandbox) -> None:
    for source, reason in (
        ("[x for x in iter(int, 1)]", "timed out"),
        ("10**10**10", "timed out"),
        ("[0]*10**10", "MemoryError"),
        ("'x' * 10**12", "MemoryError"),
    ):
        result = resolve_pending(sb, ParsedValue(None, source, pending=True), timeout=0.5)
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


# --- what small models write: calls -----------------------------------------------------------

TWO = ("a", "b")


@pytest.mark.parametrize(
    ("reply", "params", "args", "kwargs"),
    [
        pytest.param(
            "Arguments: ```f([3, 1], 2, reverse=True, key=None)```",
            None,
            ([3, 1], 2),
            {"reverse": True, "key": None},
            id="positional-and-keyword",
        ),
        pytest.param(
            "### Input Arguments\n```python\nassert f(3, 4) == 7\n```", None, (3, 4), {},
            id="inside-assert",
        ),
        pytest.param("```\nf([1, 2])  # -> 3\n```", None, ([1, 2],), {}, id="arrow-comment"),
        pytest.param("Try this:\n```python\nprint(f('abc'))\n```", None, ("abc",), {}, id="print"),
        pytest.param(
            "```python\ndef test_f():\n    assert f(2, b=5) == 7\n```", None, (2,), {"b": 5},
            id="pytest-function",
        ),
        pytest.param(">>> f(10)\n55\n", None, (10,), {}, id="doctest"),
        pytest.param(
            "```py\nf(-1)\n```\nThis input breaks the code.", None, (-1,), {},
            id="language-tag-and-prose",
        ),
        pytest.param(
            "```\ny = f(2)\nf(y)\n```", None, (2,), {}, id="the-call-that-gives-an-input"
        ),
        pytest.param(
            "```python\ndef test_f():\n    s = 'abc'\n    assert f(s) == 1\n```", ("s",),
            ("abc",), {}, id="a-test-function-local",
        ),
        pytest.param(
            "### Input Arguments\n```python\ns = \"abacaba\"\nf(s)\n```", None, ("abacaba",), {},
            id="assigned-name",
        ),
        pytest.param("```\na, b = 1, 2\nf(a, b)\n```", None, (1, 2), {}, id="tuple-assignment"),
        pytest.param(
            "```\ns = 'a'\ns = 'b'\nf(s)\ns = 'c'\n```", None, ("b",), {},
            id="last-binding-before-the-call",
        ),
        pytest.param(
            "```\nrow = [1, 2]\nm = [row, [3]]\nf(m, k=row)\n```", None, ([[1, 2], [3]],),
            {"k": [1, 2]}, id="names-through-names",
        ),
        pytest.param(
            "- `text` = `'Please move back to stream'`", ("text",),
            ("Please move back to stream",), {}, id="bullet-name-value",
        ),
        pytest.param("text = 'abc'\n", ("text",), ("abc",), {}, id="assignment-line"),
        pytest.param("### Input Arguments\na: 5, b: 3\n", TWO, (5, 3), {}, id="colon-pairs"),
        pytest.param(
            "### Input Arguments\n- `b`: `2` (the divisor)\n- `a`: `7`\n", TWO, (7, 2), {},
            id="pairs-in-any-order",
        ),
        pytest.param(
            "### Input Arguments\nLet b be `b = 4`.\n", TWO, (), {"b": 4}, id="a-gap-is-keywords"
        ),
        pytest.param("Input: `'abc'`\n", ("text",), ("abc",), {}, id="input-label"),
        pytest.param(
            "### Input Arguments\n- Input: `(5, 3)`\n", TWO, (5, 3), {}, id="input-tuple"
        ),
        pytest.param(
            "### Input Arguments\nThe input string is `'hello_world'`.\n", ("text",),
            ("hello_world",), {}, id="input-phrase",
        ),
        pytest.param(
            "The function `f(a: int, b: int)` checks bits.\n### Input Arguments\n- `a = 5`\n"
            "- `b = 3`\n", TWO, (5, 3), {}, id="signature-mention-is-no-call",
        ),
        pytest.param(
            "Calling f(s) with any s fails.\n\n### Input Arguments\n- `s = 'xy'`", ("s",),
            ("xy",), {}, id="section-before-a-mention",
        ),
        pytest.param(
            "## Unit Test\n### Input Arguments\n```f(1)```\n### Output\n```2```\n\n"
            "## Unit Test\n### Input Arguments\n```f(5)```\n### Output\n```6```\n",
            None, (1,), {}, id="first-test-before-its-output",
        ),
        pytest.param(
            "### Input Arguments\n1. ```python\n   f('')\n   ```\n   Expected Output: ```\n\n"
            "2. ```python\n   f('ab')\n   ```\n", None, ("ab",), {}, id="stray-fence",
        ),
        pytest.param(
            "```python\nf([1], [2])\nf([[1], [2], [3\n", None, ([1], [2]), {},
            id="cut-call-passed-over",
        ),
    ],
)  # fmt: skip
def test_calls_as_small_models_write_them(
    reply: str, params: tuple[str, ...] | None, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    parsed = parse_call(reply, "f", params=params)
    assert isinstance(parsed, ParsedCall), parsed
    assert parsed.pending is None
    assert same(parsed.args, args) and same(parsed.kwargs, kwargs), parsed


def test_a_substituted_call_shows_its_values() -> None:
    parsed = parse_call("```\ns = 'abc'\nf(s)\n```", "f")
    assert parsed == ParsedCall(("abc",), {}, "f('abc')")
    pending = parse_call("```\nxs = [1] * 3\nf(xs, 2)\n```", "f")
    assert pending == ParsedCall((), {}, "f([1] * 3, 2)", pending="[1] * 3, 2")
    given = parse_call("- `a = [0] * 2`\n- `b = 1`", "f", params=TWO)
    assert given == ParsedCall((), {}, "f([0] * 2, 1)", pending="[0] * 2, 1")


def test_substituted_calls_resolve_in_the_sandbox(sb: Sandbox) -> None:
    parsed = parse_call("```\nxs = [1] * 3\nf(xs, k=len(xs))\n```", "f")
    assert isinstance(parsed, ParsedCall) and parsed.pending == "[1] * 3, k=len([1] * 3)"
    resolved = resolve_pending(sb, parsed)
    assert resolved == ParsedCall(([1, 1, 1],), {"k": 3}, "f([1] * 3, k=len([1] * 3))")


@pytest.mark.parametrize(
    ("reply", "params", "reason"),
    [
        pytest.param(
            "I would test it with two numbers.", TWO,
            "no call to `f` and no values for its parameters (a, b)", id="nothing",
        ),
        pytest.param(
            "I would test it with a number.", ("a",),
            "no call to `f` and no values for its parameter (a)", id="nothing-one-parameter",
        ),
        pytest.param("I would test it.", None, "no call to `f` found", id="no-parameter-names"),
        pytest.param(
            "```\nfor x in cases:\n    f(x)\n```", ("a",),
            "`x` has no value in the reply (the call `f(x)`)", id="loop-variable",
        ),
        pytest.param(
            "```\ny = g(2)\nh = f\nf(y + z)\n```", ("a",), "`z` has no value in the reply",
            id="one-name-unassigned",
        ),
        pytest.param(
            "```\np = open('/etc/passwd')\nf(p)\n```", ("a",), "refused: `open`",
            id="hostile-binding",
        ),
        pytest.param(
            "For example, if `a = 1` and `b = 2` the code fails.", TWO,
            "no values for its parameters (a, b)", id="values-in-prose-only",
        ),
        pytest.param(
            "The code:\n```python\ndef f(a):\n    a = []\n    return a\n```", ("a",),
            "no values for its parameter (a)", id="a-function-body-local",
        ),
        pytest.param(
            "a0 = [1]\n" + "".join(f"a{i} = [a{i - 1}]\n" for i in range(1, 12)) + "f(a11)", None,
            "goes through more than 8 assignments", id="names-nested-too-deeply",
        ),
        pytest.param(
            "a0 = [" + "1, " * 3000 + "1]\n"
            + "".join(f"a{i} = [a{i - 1}, a{i - 1}]\n" for i in range(1, 7)) + "f(a6)",
            None, "add up to over 50,000 characters", id="names-expand-too-far",
        ),
    ],
)  # fmt: skip
def test_call_refusals_say_what_is_missing(
    reply: str, params: tuple[str, ...] | None, reason: str
) -> None:
    parsed = parse_call(reply, "f", params=params)
    assert isinstance(parsed, ParseFailure) and reason in parsed.reason, parsed


def test_parameter_names() -> None:
    code = "import math\n\ndef f(a, /, b, c=3, *args, d, **kw):\n    return a\n"
    assert parameter_names(code, "f") == ["a", "b", "c"]
    method = (
        "class C:\n    @staticmethod\n    def f(x):\n        pass\n\n"
        "    def g(self, y):\n        pass\n"
    )
    assert parameter_names(method, "f") == ["x"]
    assert parameter_names(method, "g") == ["y"]
    assert parameter_names("def f(:\n", "f") is None
    assert parameter_names("def g(a):\n    pass\n", "f") is None


def test_parameters_do_not_change_the_reference_style() -> None:
    reply = "### Input Arguments\n- `a = 5`\n- `b = 3`\n"
    assert parse_call(reply, "f", style="reference", params=TWO) == parse_call(
        reply, "f", style="reference"
    )


# --- what small models write: answers ---------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "call", "value"),
    [
        pytest.param("Adding them.\nOutput: ```3```", None, 3, id="marker"),
        pytest.param("So the output is 3.", None, 3, id="prose-output-is"),
        pytest.param("A correct f would return `True`.", None, True, id="prose-would-return"),
        pytest.param('It returns `"abcd"` here.', None, "abcd", id="prose-returns-string"),
        pytest.param("It returns 3 because 1 + 2 = 3.", None, 3, id="prose-bare-number"),
        pytest.param(
            "A correct f would return:\n\n```python\n[1, 2]\n```\n\nas the task says.", None,
            [1, 2], id="prose-then-block",
        ),
        pytest.param("Reasoning...\n\nFinal Answer: ```True```", None, True, id="final-answer"),
        pytest.param("Counting gives three.\n\n**Output:** 3", None, 3, id="bold-marker"),
        pytest.param("```\nFalse\n```", None, False, id="bare-block"),
        pytest.param("```python\nOutput: True\n```", None, True, id="marker-inside-block"),
        pytest.param("```output: 'abcd'\n```", None, "abcd", id="marker-as-fence-tag"),
        pytest.param("```python\nassert f(1) == 3\n```", None, 3, id="assert-equals"),
        pytest.param("`f(1) == [1]`", "f(1)", [1], id="equals-in-a-span"),
        pytest.param("```\nf(1)  # -> 3\n```", "f(1)", 3, id="arrow-comment"),
        pytest.param("```\nf(1)  # Output: 3\n```", None, 3, id="output-comment"),
        pytest.param("```python\nprint(f(1))  # Output: 3\n```", "f(1)", 3, id="print-call"),
        pytest.param("```python\nprint(f('x'))\n# Output: 'x!'\n```", None, "x!", id="below"),
        pytest.param(
            "```python\nprint(f('abcd', 'd'))  # Output: abc\n```", "f('abcd', 'd')", "abc",
            id="print-shows-a-string-unquoted",
        ),
        pytest.param(
            "```python\nself.assertEqual(f(2), 4)\nself.assertTrue(f(3))\n```", "f(2)", 4,
            id="assert-equal-method",
        ),
        pytest.param(
            "Output: ```1```\n\nOn reflection the loop runs twice.\nOutput: ```2```", None, 2,
            id="last-marker-wins",
        ),
        pytest.param(
            "The input list is `[1, 2]`, so it returns `3`.\n\n```\n3\n```", None, 3,
            id="last-block-after-reasoning",
        ),
        pytest.param(
            "The buggy code returns `5`, but a correct f returns `6`.", None, 6,
            id="given-code-is-not-the-answer",
        ),
        pytest.param(
            "f returns `True` when the bits differ, so here it returns `False`.", None, False,
            id="conditional-is-not-the-answer",
        ),
        pytest.param(
            "It would return `True`.\n\n### Format:\n```\n<your final answer>\n```", None, True,
            id="placeholder-is-skipped",
        ),
        pytest.param(
            "```\n[1]\n```\n\n## Hypothesis\nAnother test.\n### Output\n```\n[2]\n```", None, [1],
            id="continued-output-then-a-new-test",
        ),
        pytest.param(
            "## Hypothesis\nh\n## Unit Test\n### Input Arguments\nArguments: ```f(1)```\n"
            "### Output\nOutput: ```2```\n\n## Hypothesis\nh\n### Output\nOutput: ```9```", None,
            2, id="a-ut-reply-own-output",
        ),
        pytest.param(
            "```python\nprint(f(1))  # Output: 2\nprint(f(9))  # Output: 10\n```", "f(1)", 2,
            id="the-comment-about-this-call",
        ),
        pytest.param(
            "1. **Input Arguments**: a = 5\n2. With these it returns `True`.\n\n"
            "Output: ```False```", None, False, id="a-numbered-label-is-no-new-test",
        ),
        pytest.param("Output: 3.", None, 3, id="a-marker-line-period-is-no-float"),
        pytest.param(
            "```python\nlabel = 'Output: none'\nprint(f(1))  # Output: 4\n```", "f(1)", 4,
            id="a-marker-inside-code-is-no-marker",
        ),
    ],
)  # fmt: skip
def test_answers_as_small_models_write_them(reply: str, call: str | None, value: Any) -> None:
    parsed = parse_output(reply, call=call)
    assert isinstance(parsed, ParsedValue) and not parsed.pending, parsed
    assert same(parsed.value, value), parsed


@pytest.mark.parametrize(
    ("reply", "call", "reason"),
    [
        pytest.param("Output: abcd", None, "unquoted word", id="unquoted-word"),
        pytest.param("```\nf('x')  # Output: abcd\n```", None, "unquoted", id="unquoted-comment"),
        pytest.param(
            "```python\nprint(f('x'))  # Output: hello world\n```", None, "unquoted text",
            id="unquoted-words-printed",
        ),
        pytest.param(
            "It returns `True` if the bits differ, otherwise `False`.", None, "no answer found",
            id="only-a-rule",
        ),
        pytest.param(
            "The given code returns `5` here.", None, "no answer found", id="only-the-given-code"
        ),
        pytest.param(
            "The input list is:\n```\n[1, 2, 3]\n```\nSumming them gives six.", None,
            "no answer found", id="a-block-in-the-reasoning",
        ),
        pytest.param(
            "It returns `3`.\nOutput: the number of items", None, "prose, not a value",
            id="last-marker-is-prose",
        ),
        pytest.param(
            "Output: ```True```\nFinal Answer:\n```python\ndef f(x):\n    return x\n```", None,
            "holds code, not a value", id="last-marker-is-code",
        ),
        pytest.param("It returns 3.\nOutput: ```[1, 2", None, "truncated", id="cut-answer"),
        pytest.param(
            "```python\nprint(f(9))  # Output: 10\n```", "f(1)", "for other calls",
            id="answer-for-another-call",
        ),
        pytest.param(
            "```python\nprint(f(1))  # Output: 2\nprint(f(9))  # Output: 10\n```", None,
            "no answer found", id="several-calls-without-the-test-call",
        ),
        pytest.param("```\n3\n2\n```", None, "holds 2 values", id="two-values-in-a-block"),
    ],
)  # fmt: skip
def test_answer_refusals_say_why(reply: str, call: str | None, reason: str) -> None:
    parsed = parse_output(reply, call=call)
    assert isinstance(parsed, ParseFailure) and reason in parsed.reason, parsed


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


# --- the engine says why a reply was refused --------------------------------------------------


ADD = "def add(a, b):\n    return a - b\n"


class _Cut:
    """A scripted model whose replies listed in ``cut`` come back cut at the token limit."""

    name = "scripted-cut"
    simulated = True
    supports_prefill = True

    def __init__(self, inner: ScriptedModel, cut: set[str]) -> None:
        self.inner, self.cut = inner, cut

    async def complete(self, request: ModelRequest) -> list[Any]:
        out = await self.inner.complete(request)
        return [replace(c, finish_reason="length") if c.text in self.cut else c for c in out]


def test_cut_replies_and_refused_votes_say_why(executor: Executor) -> None:
    cut_ut = "## Unit Test\n\n### Input Arguments\nArguments: ```add([1, 2,"
    pairs = (
        "## Hypothesis\nThe code subtracts.\n\n## Unit Test\n\n### Input Arguments\n"
        "- `a` = `1`\n- `b` = `2`\n\n### Output\nOutput: ```3```\n"
    )
    prose = "Adding one and two gives three."
    cut_vote = "Adding the numbers.\nOutput: ```[3,"
    model = _Cut(
        ScriptedModel(
            {"ut": [cut_ut, pairs], "vote": [*votes(*["3"] * 6), prose, cut_vote], "debug": []}
        ),
        {cut_ut, cut_vote},
    )
    task = Task("toy/add", "Return the sum of a and b.", "add(a, b)", "add", ADD)
    result = asyncio.run(Session(task, model, executor, Settings(n=1, rounds=0)).run())
    proposed = [e for e in result.events if isinstance(e, TestProposed)]
    assert proposed[0].call is None and proposed[0].finish_reason == "length"
    assert proposed[0].reason == "cut at the token limit: truncated: unbalanced parentheses"
    dropped = next(e for e in result.events if isinstance(e, TestDropped))
    assert dropped.reason.startswith("unparsable: cut at the token limit: ")
    # No call at all: the values of the parameters a and b make it.
    assert proposed[1].call == "add(1, 2)" and proposed[1].finish_reason == "stop"
    assert result.tests[0].args == (1, 2) and result.tests[0].expected == 3
    cast = [e for e in result.events if isinstance(e, VoteCast)]
    assert [v.answer for v in cast[:6]] == ["3"] * 6
    assert all(v.reply is None and v.reason is None for v in cast[:6])
    assert cast[6].answer is None and cast[6].reply == prose and cast[6].finish_reason == "stop"
    assert cast[6].reason is not None and cast[6].reason.startswith("no answer found")
    assert cast[7].reply == cut_vote and cast[7].finish_reason == "length"
    assert cast[7].reason == "cut at the token limit: truncated: unclosed code fence"
    assert result.tests[0].share == pytest.approx(6 / 8)
    json.dumps([event_to_json(e) for e in result.events])


def test_a_cut_reply_without_voting_says_so(executor: Executor) -> None:
    cut = "### Input Arguments\nArguments: ```add(1, 2)```\n\n### Output\nOutput: ```[3,"
    model = _Cut(ScriptedModel({"ut": [cut] * 3, "vote": [], "debug": []}), {cut})
    task = Task("toy/add", "Return the sum of a and b.", "add(a, b)", "add", ADD)
    result = asyncio.run(Session(task, model, executor, Settings(n=1, k=0, rounds=0)).run())
    dropped = [e.reason for e in result.events if isinstance(e, TestDropped)]
    assert dropped == ["no output: cut at the token limit: truncated: unclosed code fence"] * 3
    assert result.tests == []


# --- forms a small model writes (second corpus) ------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "call", "value"),
    [
        ("Step by step ... so the final answer is \\boxed{42}.", None, 42),
        ("So the result is \\boxed{\\text{True}}", None, True),
        ("The output is \\( x = 7 \\).", None, 7),
        ("Thus the function returns \\(3 - 1 = 2\\) for it.", None, 2),
        (
            "The correct output of `f([1, 2])` is:\n\n```python\n[2, 1]\n```\n\nIt reverses.",
            "f([1, 2])",
            [2, 1],
        ),
        (
            "4. **Output**: the function returns the sorted list.\n\n"
            "So a correct f returns:\n```python\n[1, 2, 3]\n```",
            None,
            [1, 2, 3],
        ),
        ("```python\nresult = f(8, 6)\nprint(result)  # Output: True\n```", "f(8, 6)", True),
        (
            "```python\ntext = 'short'\nout = f(text)\nprint(out)  # Output: ['short']\n```",
            "f('short')",
            ["short"],
        ),
    ],
    ids=["boxed", "boxed-text", "latex", "latex-derivation", "output-of-call", "step-label",
         "printed-variable", "printed-variable-args"],
)  # fmt: skip
def test_answers_small_models_write(reply: str, call: str | None, value: object) -> None:
    got = parse_output(reply, call=call)
    assert isinstance(got, ParsedValue) and not got.pending and got.value == value, got


def test_a_printed_variable_for_another_call_is_not_this_tests_answer() -> None:
    reply = "```python\nresult = f(1)\nprint(result)  # Output: 5\n```"
    got = parse_output(reply, call="f(2)")
    assert isinstance(got, ParseFailure) and "other calls" in got.reason, got


@pytest.mark.parametrize(
    ("reply", "params", "args"),
    [
        (
            "### Unit Test\n```python\ntest_cases = [\n    ('hello', 'a', 'heo'),\n"
            "    ('abc', 'b', 'ac'),\n]\nfor s, ch, expected in test_cases:\n"
            "    assert f(s, ch) == expected\n```",
            ("s", "ch"),
            ("hello", "a"),
        ),
        (
            "```python\ncases = [('x y', ['x']), ('', [])]\n"
            "for i, (text, want) in enumerate(cases):\n    assert f(text) == want\n```",
            ("text",),
            ("x y",),
        ),
        (
            "### Test Cases\n- Input: `M = [[1, 2], [0, 0]]`\n"
            "  - Expected Output: `[[0, 0], [1, 2]]`",
            ("M",),
            ([[1, 2], [0, 0]],),
        ),
        (
            "- **Input Arguments**: `f(s)` is called with an empty string.\n\n"
            '```python\nassert f("") == 0\n```',
            ("s",),
            ("",),
        ),
    ],
    ids=["test-cases-table", "enumerated-table", "input-assignment", "signature-then-assert"],
)  # fmt: skip
def test_inputs_small_models_write(
    reply: str, params: tuple[str, ...], args: tuple[object, ...]
) -> None:
    got = parse_call(reply, "f", params=params)
    assert isinstance(got, ParsedCall) and got.pending is None and got.args == args, got
