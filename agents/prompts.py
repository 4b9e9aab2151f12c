"""Prompt templates of UTGen / UTDebug (paper Appendix H; reference-implementation §4).

The wording follows the authors' published templates character for character, typos included
("hypotheis"), leading and trailing newlines included. Every template is part of the
response-cache key through :data:`PROMPT_VERSION`.

Bump rule: ANY change to the text a model receives (wording, whitespace, the order of turns,
how values are formatted into feedback) MUST bump :data:`PROMPT_VERSION`, otherwise cached
replies to the old prompt would be served for the new one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from utdebug.agents.base import Message

__all__ = [
    "OUTPUT_HEADER",
    "PROGRAM_PROMPT_VERSION",
    "PROMPT_VERSION",
    "TRAIN_PROMPT_VERSION",
    "UTMethod",
    "code_generation_prompt",
    "corruption_prompt",
    "debug_feedback",
    "format_feedback_input",
    "format_feedback_value",
    "initial_chat",
    "output_prediction_prompt",
    "output_prefill",
    "program_ut_prompt",
    "program_vote_prompt",
    "rationale_prompt",
    "self_critique_prompt",
    "ut_prompt",
]

PROMPT_VERSION = "utdebug-h1"
"""Version of every template below; part of the response-cache key (see the bump rule)."""

PROGRAM_PROMPT_VERSION = "utdebug-program-1"
"""Version of the program-test templates (:func:`program_ut_prompt`,
:func:`program_vote_prompt`): tests that build what they call, for methods and functions that
take objects. The same bump rule; kept apart so that the paper's prompts never change."""

TRAIN_PROMPT_VERSION = "utdebug-train-h1"
"""Version of the two training-data templates (:func:`corruption_prompt`,
:func:`rationale_prompt`); the same bump rule, kept apart so that a change to them does not
invalidate cached replies to the inference prompts."""

UTMethod = Literal["utgen", "prompted", "random"]

OUTPUT_HEADER = "### Output"
"""Where a UT reply is cut to form the output predictor's assistant prefix (§4.3)."""

_VALID_ITEM = (
    "1. Is **valid** input based on the task description, i.e., an acceptable input "
    "consistent with task description that a correct program should be able to execute.\n"
)
_FAITHFUL_ITEM = (
    "2. The output enclosed in ```.``` and is **faithful** to the task description, i.e., the "
    "output of the unit test is consistent with what a correct program would {verb}.\n"
)
_NOTE = (
    "Note:\n"
    "- that you MUST directly write ALL input arguments of the function in the correct order. "
    "Skip writing any names of arguments.\n"
    "- you MUST enclose the unit test inputs and outputs in ```.```\n"
)
_OUTPUT_FORMAT = (
    "### Output\n"
    "< step-by-step reasoning for what a **correct** {entry_point} would execute to based on "
    "the task description and your input above. Make sure your data type of the final answer "
    "matches the expected output type of the function. >\n"
    "Output: ```<your final answer>```\n"
)
_HEADER = (
    "\nYou are given a Python function `{signature}` to solve the following task:\n\n"
    "## Task\n{description}\n\n"
)

# `joint_adv_prompt`: the failing-UT prompt (Prompted failing UTs and UTGen), code shown.
_JOINT_ADV = (
    _HEADER + "## Code Solution:\n```\n{code}\n```\n"
    "The code solution I have provided to you is **incorrect**. Your job is to give feedback "
    "by generating a unit test that \n"
    + _VALID_ITEM
    + _FAITHFUL_ITEM.replace("{verb}", "return")
    + "3. **Breaks** the given code, i.e., does **not** execute to the **correct** output and "
    "brings out its mistakes and vulnerabilities.\n\n"
    "Provide a reasoning for your answer and identify a general hypothesis or rationale "
    "identifying the cause of error. Then provide input and output of the unit test "
    "consistent with the pattern (hypotheis) you have identified.\n"
    + _NOTE
    + "\nRespond in the format below:\n\n"
    "## Hypothesis\n< step-by-step reasoning >\n\n"
    "Error Pattern: <an identified pattern of inputs that yields erroneous or incorrect "
    "outputs>\n\n"
    "## Unit Test\n\n"
    "### Input Arguments\n"
    "< step-by-step reasoning for constructing a unit test that fits the error pattern "
    "identified above and is valid as per the task description>\n"
    "Arguments: ```{entry_point}(<all arguments>)```\n\n" + _OUTPUT_FORMAT
)

# `joint_completion_prompt`: randomly-sampled UTs, from the description only (no code).
_JOINT_COMPLETION = (
    _HEADER
    + "Based on the task description above, write a unit test that \n"
    + _VALID_ITEM
    + _FAITHFUL_ITEM.replace("{verb}", "yield")
    + "\n"
    + _NOTE
    + "\nRespond in the format below:\n\n"
    "## Unit Test\n\n"
    "### Input Arguments\n"
    "< step-by-step reasoning for constructing a unit test that is valid as per the task "
    "description>\n"
    "Arguments: ```{entry_point}(<all arguments>)```\n\n" + _OUTPUT_FORMAT
)

_OUTPUT_PREDICTION = (
    _HEADER + "A user calls this function with the input: ```{call_source}```\n"
    "Based on the task description and the user's input, what does a **correct** "
    "{entry_point} return?\n\n"
    "First give step-by-step reasoning for what a **correct** {entry_point} would execute to "
    "based on the task description and the input above. Make sure your data type of the final "
    "answer matches the expected output type of the function. In the end, format your final "
    "answer as:\n\n"
    "Output: ```<your final answer>```\n"
)

_CODE_GEN_HEAD = (
    "\nWrite Python code to solve the task.\n"
    "Write a Python function `{signature}` to solve the following problem: "
    "Present code in ```python```\n"
)
_CODE_GEN_MBPP = _CODE_GEN_HEAD + '```python\n"""\n{prompt}\n"""\n```\n'
_CODE_GEN_HE = _CODE_GEN_HEAD + "```python\n{prompt}\n```\n"

_DEBUG_FEEDBACK = (
    "The above code is incorrect and does not pass the testcase.\n"
    "Input: {input}\nOutput: {output}\nExpected: {expected}\n\n"
)

_SELF_CRITIQUE = (
    "\n# Your Task\n\n## Task\n{prompt}\n\n## Code:\n```\n{code}\n```\n\n"
    "Based on given task and code, generate feedback that decides whether the code is correct "
    "or wrong in the format ```Feedback: <your feedback>```.\n"
    'Always end your feedback with the line "The above code is correct." if it is correct, '
    'otherwise the feedback should end with "The above code is wrong, please fix it."\n'
)


# Training UTGen, code corruption (Appendix H): the model writes a wrong version of gold code.
_CORRUPTION = (
    _HEADER + "## Correct Code Solution:\n```\n{code}\n```\n"
    "Assume you are a TA for a programming course. Your task is to corrupt the correct code or "
    "implementation of function {entry_point} to introduce realistic errors that can be made "
    "by your programming students. Note that you should write a code that fails one or more "
    "unit tests that this correct would succeed in. Also, give all your reasoning for why your "
    "generated code is incorrect outside the code block, i.e., **do not** leave comments in "
    "the code block that reveals the code is incorrect.\n\n"
    "Give your output in the format:\n"
    "<reasoning of error introduced>\n\n"
    "## Incorrect Code Solution\n"
    "```python\n<your generated incorrect code for {entry_point}>\n```\n"
)

# Output rationalization (Appendix H): given the whole unit test, explain why the output is
# right (post-hoc rationalization). The one-shot example is the paper's.
_RATIONALE = (
    "# Example\n\n"
    "Given a Python function `check(string)` to solve the following task:\n"
    "Write a python function to accept the strings which contains all vowels.\n\n"
    "A user provides an the following input to function. The teacher lets you know that "
    "correct function generates the following output.\n"
    'Input: "BCDEFG"\n'
    "Output: False\n\n"
    "Now **without** coding up the the function `check(string)`, provide step-by-step "
    'reasoning for why function `check` when given input of "BCDEFG" generates or returns '
    "False.\n\n"
    "## Reasoning\n"
    "Let's think step by step.\n"
    "- According to the problem description, given a string the check should return accepted "
    "if it contains all the vowels and not accepted otherwise.\n"
    '- The vowels (in lower case) that should be present in the string are: "a", "e", "i", '
    '"o" and "u".\n'
    '- The given input is "BCDEFG" which contains characters: "b", "c", "d", "e", "f", "g".\n'
    '- While the input string "BCDEFG" contains only vowel "e" and is missing vowels: "a", '
    '"i", "o", "u".\n'
    "- Therefore, the output of the function is not accepted.\n\n"
    "# Test Problem\n\n"
    "Given a Python function `{signature}` to solve the following task:\n"
    "{description}\n\n"
    "A user provides an the following input to function `{signature}`. The teacher lets you "
    "know that correct function generates the following output.\n"
    "Input: {unit_input}\n"
    "Output: {unit_output}\n\n"
    "Now **without** coding up the the function `{signature}`, provide step-by-step reasoning "
    "for why function `{entry_point}` when given input of {unit_input} generates or returns "
    "{unit_output}.\n"
)


def corruption_prompt(*, signature: str, description: str, code: str, entry_point: str) -> str:
    """Stage I of UTGen's training data: ask for a realistically wrong version of ``code``."""
    return _fill(
        _CORRUPTION,
        signature=signature,
        description=description,
        code=code,
        entry_point=entry_point,
    )


def rationale_prompt(
    *, signature: str, description: str, entry_point: str, unit_input: str, unit_output: str
) -> str:
    """Stage III: given the whole unit test (``unit_input`` as the arguments written out,
    ``unit_output`` the gold output's literal), ask why the output is right."""
    return _fill(
        _RATIONALE,
        signature=signature,
        description=description,
        entry_point=entry_point,
        unit_input=unit_input,
        unit_output=unit_output,
    )


def ut_prompt(method: str, *, signature: str, description: str, code: str, entry_point: str) -> str:
    """The UT-generation prompt of ``method``.

    ``utgen`` and ``prompted`` share the failing-UT prompt (``joint_adv_prompt``, shows
    ``code``); ``random`` is ``joint_completion_prompt``, which never shows the code.
    """
    if method in ("utgen", "prompted"):
        return _fill(
            _JOINT_ADV,
            signature=signature,
            description=description,
            code=code,
            entry_point=entry_point,
        )
    if method == "random":
        return _fill(
            _JOINT_COMPLETION, signature=signature, description=description, entry_point=entry_point
        )
    raise ValueError(f"unknown UT method {method!r}: expected 'utgen', 'prompted' or 'random'")


_PROGRAM_HEADER = (
    "\nYou are given Python code under test: the {kind} `{signature}`.\n\n"
    "## Task\n{description}\n\n"
    "{context}"
    "## Code:\n```python\n{code}\n```\n"
)
_PROGRAM_UT = (
    _PROGRAM_HEADER + "{verdict}"
    "Write one unit test as a pytest function. In it, first build what the call needs "
    "(objects of the module's classes, values from the standard library; the module's names "
    "are in scope, so do not import the module under test), then call the {kind} `{target}` "
    "once and assert on the result:\n"
    "- `assert <call> == <expected value>`, where the expected value is a Python literal, or\n"
    "- `with pytest.raises(<ExceptionType>): <call>` when a correct implementation raises, or\n"
    "- for a call that changes an object, make the call, then "
    "`assert <expression about the object> == <expected value>`.\n"
    "Use `await` for an async call. No fixtures, no mocks, no parametrize.\n\n"
    "First give step-by-step reasoning about what a **correct** implementation does, then "
    "the test in one ```python``` block.\n"
)
_PROGRAM_FAILING = (
    "The code I have provided to you is **incorrect**. Your job is to give feedback by "
    "writing a unit test that a correct implementation passes and this code fails.\n\n"
)
_PROGRAM_VOTE = (
    _PROGRAM_HEADER + "A user runs this test program:\n```python\n{program}\n```\n"
    "What is the value of `{subject}` at the end, for a **correct** implementation of "
    "`{target}`?\n\n"
    "First give step-by-step reasoning for what a **correct** implementation would do. In the "
    "end, format your final answer as a Python literal:\n\n"
    "Output: ```<your final answer>```\n\n"
    "or, if a correct implementation raises an exception, as:\n\n"
    "Output: ```raises <ExceptionType>```\n"
)


def _program_fields(
    *, kind: str, signature: str, description: str, context: str | None, code: str
) -> dict[str, str]:
    shown = f"## Context\n```python\n{context}\n```\n\n" if context else ""
    return {
        "kind": kind,
        "signature": signature,
        "description": description,
        "context": shown,
        "code": code,
    }


def program_ut_prompt(
    method: str,
    *,
    kind: str,
    signature: str,
    description: str,
    context: str | None,
    code: str,
    target: str,
) -> str:
    """The UT-generation prompt for a test program (a method, a property, an async function,
    a function that takes objects): the code with its context (the class, the module's
    imports, the types it takes), and a request for one pytest function. ``random`` does not
    show the code (as :func:`ut_prompt`); the other methods ask for a failing test."""
    if method not in ("utgen", "prompted", "random"):
        raise ValueError(f"unknown UT method {method!r}: expected 'utgen', 'prompted' or 'random'")
    fields = _program_fields(
        kind=kind, signature=signature, description=description, context=context, code=code
    )
    if method == "random":
        fields["code"] = f"{signature}: ..."
    verdict = _PROGRAM_FAILING if method != "random" else ""
    return _fill(_PROGRAM_UT, verdict=verdict, target=target, **fields)


def program_vote_prompt(
    *,
    kind: str,
    signature: str,
    description: str,
    context: str | None,
    code: str,
    target: str,
    program: str,
    subject: str,
) -> str:
    """The output-prediction prompt of a test program: the test's setup and call
    (``program``), and the expression whose value is asked (``subject``: the call, or the
    follow-up expression). The answer is a literal, or ``raises <ExceptionType>``."""
    fields = _program_fields(
        kind=kind, signature=signature, description=description, context=context, code=code
    )
    return _fill(_PROGRAM_VOTE, target=target, program=program, subject=subject, **fields)


def output_prefill(ut_reply: str) -> str | None:
    """The UT reply up to its first ``### Output``, plus that header and a newline (§4.3).

    This is the assistant prefix the output predictor continues, on providers that support
    assistant prefill (``Model.supports_prefill``). ``None`` when the reply has no
    ``### Output`` header (the authors then used the whole reply, which almost never yields a
    vote; callers should treat the UT as unusable or fall back to
    :func:`output_prediction_prompt`).
    """
    at = ut_reply.find(OUTPUT_HEADER)
    if at < 0:
        return None
    return ut_reply[:at] + OUTPUT_HEADER + "\n"


def output_prediction_prompt(
    *, signature: str, description: str, call_source: str, entry_point: str
) -> str:
    """A single-turn output-prediction prompt for models without assistant prefill.

    Path choice: when the model supports prefill, the predictor continues
    ``[user: ut_prompt(...), assistant: output_prefill(reply)]`` as the authors did (§4.3);
    otherwise it gets this prompt, which shows the task and the parsed call (``f(1, [2])``,
    not the UT reply's reasoning) and asks for reasoning then ``Output: ```<value>``` `` in
    the same format, so the same output parser applies.
    """
    return _fill(
        _OUTPUT_PREDICTION,
        signature=signature,
        description=description,
        call_source=call_source,
        entry_point=entry_point,
    )


def code_generation_prompt(
    *, signature: str, description: str, example: str | None, he_stub: str | None
) -> str:
    """The debugger's first user turn (§4.1).

    MBPP form: ``description`` plus ``"\\n>>> " + example`` (the first dataset test) inside a
    docstring block. HumanEval form (``he_stub`` given): the stub itself, no triple quotes.
    """
    if he_stub is not None:
        return _fill(_CODE_GEN_HE, signature=signature, prompt=he_stub)
    prompt = description if example is None else f"{description}\n>>> {example}"
    return _fill(_CODE_GEN_MBPP, signature=signature, prompt=prompt)


def initial_chat(prompt: str, code: str) -> tuple[Message, ...]:
    """The conversation the debugger starts from: the prompt and the code as its reply."""
    return (Message("user", prompt), Message("assistant", f"```\n{code}\n```"))


def debug_feedback(input_text: str, output_text: str, expected_text: str) -> str:
    """The UT feedback user turn (§4.4), from already formatted texts."""
    return _fill(_DEBUG_FEEDBACK, input=input_text, output=output_text, expected=expected_text)


def self_critique_prompt(*, description: str, code: str) -> str:
    """The no-UT self-feedback prompt (§4.5, the ``none`` baseline)."""
    return _fill(_SELF_CRITIQUE, prompt=description, code=code)


def format_feedback_value(value: Any) -> str:
    """``str(value)``, as the reference does (strings lose their quotes)."""
    return str(value)


def format_feedback_input(args: Sequence[Any]) -> str:
    """``str`` of the argument list, e.g. ``[[1, 2, 3], 4]`` (not a call expression)."""
    return str(list(args))


def _fill(template: str, **fields: str) -> str:
    return template.format(**fields)
