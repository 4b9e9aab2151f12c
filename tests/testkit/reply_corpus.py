"""Model replies, as 7B to GPT-4-class models write them, with the parse each must give.

``CALLS`` answer the UT prompt (parsed with ``parse_call``), ``OUTPUTS`` continue the
``### Output`` prefix (``parse_output``), ``CODES`` are debugger replies (``extract_code``).
Each case states its ``paper``-style result and, where the authors' parser differs, its
``reference``-style result (``None``: the same). Pending cases also state what the sandbox
resolves them to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Args:
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Value:
    value: Any


@dataclass(frozen=True)
class Pending:
    source: str
    """The pending text: the argument source of a call, or the output expression."""


@dataclass(frozen=True)
class Fails:
    reason: str
    """A substring of the ParseFailure's reason."""


Expect = Args | Value | Pending | Fails


@dataclass(frozen=True)
class CallCase:
    name: str
    category: str
    reply: str
    paper: Args | Pending | Fails
    reference: Args | Pending | Fails | None = None
    entry: str = "f"
    resolved: Args | Fails | None = None
    """For pending cases: the result of resolve_pending (paper style)."""
    resolved_reference: Args | Fails | None = None
    """Reference style, when it differs from ``resolved``."""


@dataclass(frozen=True)
class OutputCase:
    name: str
    category: str
    reply: str
    paper: Value | Pending | Fails
    reference: Value | Pending | Fails | None = None
    resolved: Value | Fails | None = None


@dataclass(frozen=True)
class CodeCase:
    name: str
    category: str
    reply: str
    code: str | None


def ut_reply(hypothesis: str, input_reasoning: str, arguments: str, output: str) -> str:
    """A reply in the joint prompt's format (## Hypothesis / ## Unit Test / ### Output)."""
    return (
        f"## Hypothesis\n{hypothesis}\n\n"
        "Error Pattern: inputs on which the code's shortcut differs from the task.\n\n"
        "## Unit Test\n\n"
        f"### Input Arguments\n{input_reasoning}\n{arguments}\n\n"
        f"### Output\n{output}"
    )


NAN = math.nan
INF = math.inf

CALLS: list[CallCase] = [
    # --- well-formed ------------------------------------------------------------------------
    CallCase(
        "wellformed-basic",
        "wellformed",
        ut_reply(
            "The code removes elements while iterating over the list, so two odd numbers in a "
            "row are not both removed.",
            "We need two consecutive odd numbers. The list [1, 3, 4] has 1 and 3 adjacent.",
            "Arguments: ```remove_odd([1, 3, 4])```",
            "A correct function keeps only the even numbers, so the result is [4].\n"
            "Output: ```[4]```",
        ),
        Args(([1, 3, 4],)),
        entry="remove_odd",
    ),
    CallCase(
        "wellformed-two-args",
        "wellformed",
        ut_reply(
            "The loop range stops one element early, so the last element is never considered.",
            "Put the maximum at the end of the array.",
            "Arguments: ```max_sub_array_sum([-2, -3, 4, -1, -2, 1, 5, -3], 8)```",
            "The maximum contiguous sum is 4 - 1 - 2 + 1 + 5 = 7.\nOutput: ```7```",
        ),
        Args(([-2, -3, 4, -1, -2, 1, 5, -3], 8)),
        entry="max_sub_array_sum",
    ),
    CallCase(
        "wellformed-string",
        "wellformed",
        ut_reply(
            "The code compares characters case-sensitively.",
            "A palindrome with mixed case exposes it.",
            "Arguments: ```is_palindrome('Racecar')```",
            "Ignoring case, 'racecar' reads the same backwards.\nOutput: ```True```",
        ),
        Args(("Racecar",)),
        entry="is_palindrome",
    ),
    CallCase(
        "wellformed-float",
        "wellformed",
        ut_reply(
            "Integer division truncates the average.",
            "Use numbers whose mean is not an integer.",
            "Arguments: ```sum_average(3)```",
            "sum = 6, average = 2.0.\nOutput: ```(6, 2.0)```",
        ),
        Args((3,)),
        entry="sum_average",
    ),
    CallCase(
        "wellformed-dict",
        "wellformed",
        ut_reply(
            "The code drops keys whose value is falsy instead of only None.",
            "A dict with a zero value.",
            "Arguments: ```drop_empty({'c1': 'Red', 'c2': None, 'c3': 0})```",
            "Only the None value is dropped.\nOutput: ```{'c1': 'Red', 'c3': 0}```",
        ),
        Args(({"c1": "Red", "c2": None, "c3": 0},)),
        entry="drop_empty",
    ),
    CallCase(
        "wellformed-bool-none",
        "wellformed",
        ut_reply(
            "The default flag is ignored.",
            "Pass None and False explicitly.",
            "Arguments: ```check(None, False)```",
            "Output: ```False```",
        ),
        Args((None, False)),
        entry="check",
    ),
    CallCase(
        "wellformed-bold-marker",
        "wellformed",
        "## Unit Test\n\n### Input Arguments\nAn empty string is a valid input.\n"
        "**Arguments:** `count_vowels('')`\n\n### Output\n**Output:** `0`",
        Args(("",)),
        entry="count_vowels",
    ),
    CallCase(
        "wellformed-no-backticks",
        "wellformed",
        "### Input Arguments\nTwo lists of different lengths.\n"
        "Arguments: merge([1, 5], [2, 3, 9])\n\n### Output\nOutput: ```[1, 2, 3, 5, 9]```",
        Args(([1, 5], [2, 3, 9])),
        entry="merge",
    ),
    CallCase(
        "wellformed-trailing-prose",
        "wellformed",
        "### Input Arguments\nArguments: ```f(1, 2)``` (this pair exposes the off-by-one)\n\n"
        "### Output\nOutput: ```3```",
        Args((1, 2)),
        # the last `)` on the line is the prose's, so `1, 2)``` (this ... off-by-one` is eval'd
        reference=Fails("syntax error"),
    ),
    CallCase(
        "wellformed-bytes-complex",
        "wellformed",
        "Arguments: ```f(b'\\x00ab', 1+2j)```\nOutput: ```3```",
        Args((b"\x00ab", 1 + 2j)),
    ),
    # --- chatty -----------------------------------------------------------------------------
    CallCase(
        "chatty-stray-call-before-arguments",
        "chatty",
        ut_reply(
            "The code returns early for single-digit numbers.",
            "Calling f(3) would give 3 with the buggy code, which is already right.\n"
            "A single digit is useless, so let's use a number with a zero in the middle.",
            "Arguments: ```f(101)```",
            "Output: ```2```",
        ),
        Args((101,)),
        reference=Args((3,)),  # the first `f(` after "### Input Arguments" wins
    ),
    CallCase(
        "chatty-stray-call-after-arguments",
        "chatty",
        "Sure! Here's a unit test.\n\nArguments: ```f([2, 2, 1])```\n\n"
        "Note that f([1]) would not break the code.\n\nOutput: ```1```",
        Args(([2, 2, 1],)),
    ),
    CallCase(
        "chatty-no-arguments-line-fenced",
        "chatty",
        "To break the code, we can call f(0), but that is handled. Better:\n\n"
        "```python\nassert f(-5) == 5\n```\nThe code returns -5 here.",
        Args((-5,)),
        # no "rgument": the last `f(` line up to its last `)`: "-5" + ") == 5" cut at the `)`
        reference=Args((-5,)),
    ),
    CallCase(
        "chatty-no-fence-last-call",
        "chatty",
        "I think f(1) works fine. The bug shows with f(2, 'x') since the code ignores the "
        "second parameter.",
        Args((2, "x")),
    ),
    CallCase(
        "chatty-def-in-fence-ignored",
        "chatty",
        "The intended behaviour is:\n```python\ndef f(n):\n    return n * 2\n```\n"
        "Arguments: ```f(7)```\nOutput: ```14```",
        Args((7,)),
    ),
    CallCase(
        "chatty-header-with-colon",
        "chatty",
        "### Input Arguments:\nTry f(1) first... no. The failing one is below.\n"
        "```\nf(4, 5)\n```\n### Output:\nOutput: ```9```",
        Args((4, 5)),
        reference=Args((1,)),
    ),
    # --- fenced / multi-line ----------------------------------------------------------------
    CallCase(
        "fenced-python-tag",
        "fenced",
        "### Input Arguments\nA negative step.\nArguments:\n```python\nf(10, -2)\n```\n",
        Args((10, -2)),
    ),
    CallCase(
        "fenced-multiline-call",
        "fenced",
        "Arguments:\n```python\nf(\n    [1, 2, 3],\n    {'a': 1},  # mapping\n    'x',\n)\n```",
        Args(([1, 2, 3], {"a": 1}, "x")),
        reference=Fails("syntax error"),  # only the call's first line is kept
    ),
    CallCase(
        "fenced-multiline-matrix",
        "fenced",
        "### Input Arguments\nArguments: ```\nf([[1, 2],\n   [3, 4]])\n```",
        Args(([[1, 2], [3, 4]],)),
        reference=Fails("truncated"),
    ),
    CallCase(
        "fenced-py-tag-single-line",
        "fenced",
        "Arguments: ```py f('abc', 2)```",
        Args(("abc", 2)),
    ),
    # --- argument shapes --------------------------------------------------------------------
    CallCase(
        "kwargs",
        "shapes",
        "Arguments: ```f([3, 1, 2], reverse=True)```",
        Args(([3, 1, 2],), {"reverse": True}),
        reference=Fails("syntax error"),
    ),
    CallCase(
        "kwargs-only",
        "shapes",
        "Arguments: ```f(a=1, b='two')```",
        Args((), {"a": 1, "b": "two"}),
        reference=Fails("syntax error"),
    ),
    CallCase(
        "zero-args",
        "shapes",
        "### Input Arguments\nThe function takes no input.\nArguments: ```f()```\n",
        Args(()),
        reference=Fails("syntax error"),
    ),
    CallCase(
        "single-tuple-arg",
        "shapes",
        "Arguments: ```f((1, 2))```",
        Args(((1, 2),)),
        reference=Args((1, 2)),  # splatted
    ),
    CallCase(
        "single-tuple-of-tuples",
        "shapes",
        "Arguments: ```f(((1, 2), (3, 4)))```",
        Args((((1, 2), (3, 4)),)),
        reference=Args(((1, 2), (3, 4))),
    ),
    CallCase(
        "negative-numbers",
        "shapes",
        "Arguments: ```f(-1, [-2, -3.5], -0)```",
        Args((-1, [-2, -3.5], 0)),
    ),
    CallCase(
        "sets",
        "shapes",
        "Arguments: ```f({3, 1, 2}, set(), frozenset({1}))```",
        Args(({1, 2, 3}, set(), frozenset({1}))),
    ),
    CallCase(
        "inf-nan",
        "shapes",
        "Arguments: ```f([float('inf'), -inf, nan], math.inf)```",
        Args(([INF, -INF, NAN], INF)),
    ),
    CallCase(
        "nested-containers",
        "shapes",
        "Arguments: ```f({'a': [(1, 2), {'b': {3}}], 'c': ()}, [[[]]])```",
        Args(({"a": [(1, 2), {"b": {3}}], "c": ()}, [[[]]])),
    ),
    CallCase(
        "trailing-comma",
        "shapes",
        "Arguments: ```f([1, 2],)```",
        Args(([1, 2],)),
    ),
    # --- strings with special characters ----------------------------------------------------
    CallCase(
        "string-with-parens",
        "strings",
        "Arguments: ```f('(()', ')')```",
        Args(("(()", ")")),
    ),
    CallCase(
        "string-with-backticks",
        "strings",
        'Arguments: ```f("use `x` here")```',
        Args(("use `x` here",)),
    ),
    CallCase(
        "string-with-quotes",
        "strings",
        "Arguments: ```f(\"it's\", 'say \"hi\"', 'a\\'b')```",
        Args(("it's", 'say "hi"', "a'b")),
    ),
    CallCase(
        "string-with-hash-and-newline-escape",
        "strings",
        "Arguments: ```f('#1\\n#2')```",
        Args(("#1\n#2",)),
    ),
    CallCase(
        "triple-quoted-multiline-string",
        "strings",
        "Arguments:\n```python\nf('''line one\nline (two''')\n```",
        Args(("line one\nline (two",)),
        reference=Fails("truncated"),
    ),
    # --- truncated --------------------------------------------------------------------------
    CallCase(
        "truncated-mid-list",
        "truncated",
        "### Input Arguments\nA long list.\nArguments: ```f([1, 2, 3, 4, 5, 6, 7, 8",
        Fails("truncated"),
    ),
    CallCase(
        "truncated-mid-args",
        "truncated",
        "### Input Arguments\nArguments: ```f(1, 2",
        Fails("truncated"),
        reference=Args((1, 2)),  # no `)` on the line: the whole line is eval'd
    ),
    CallCase(
        "truncated-mid-string",
        "truncated",
        "Arguments: ```f('hello wor",
        Fails("truncated"),
    ),
    CallCase(
        "truncated-fence-closed-early",
        "truncated",
        "Arguments: ```f([1, 2```\n\n### Output\nOutput: ```3```",
        Fails("unbalanced"),
        reference=Fails("syntax error"),  # no `)` on the line: "[1, 2```" is eval'd
    ),
    # --- malformed --------------------------------------------------------------------------
    CallCase(
        "malformed-prose-only",
        "malformed",
        "I'm sorry, but I can't find an input that breaks this code. It looks correct.",
        Fails("no call to `f`"),
    ),
    CallCase(
        "malformed-wrong-function",
        "malformed",
        "Arguments: ```g(1, 2)```\nOutput: ```3```",
        Fails("no call to `f`"),
    ),
    CallCase(
        "malformed-method-call-only",
        "malformed",
        "Arguments: ```solver.f(1)```",
        Fails("no call to `f`"),
        # the plain substring `f(` matches inside `solver.f(`
        reference=Args((1,)),
    ),
    CallCase(
        "malformed-unbalanced",
        "malformed",
        "Arguments: ```f([1, 2)]```",
        Fails("unbalanced brackets"),
        reference=Fails("truncated"),  # cut at the last `)`: "[1, 2"
    ),
    CallCase(
        "malformed-no-name-in-arguments",
        "malformed",
        "### Input Arguments\nArguments: ```[1, 2, 3], 2```\n### Output\nOutput: ```5```",
        Fails("no call to `f`"),
    ),
    CallCase(
        "malformed-placeholder",
        "malformed",
        "Arguments: ```f(<all arguments>)```",
        Fails("syntax error"),
    ),
    CallCase(
        "malformed-bare-name-argument",
        "malformed",
        "Arguments: ```f(nums)```",
        Fails("`nums` has no value in the reply"),
        reference=Pending("nums"),  # the authors' eval raises NameError
    ),
    # --- pending (computed in the sandbox) --------------------------------------------------
    CallCase(
        "pending-list-repeat",
        "pending",
        "Arguments: ```f([1]*5, 2)```",
        Pending("[1]*5, 2"),
        resolved=Args(([1, 1, 1, 1, 1], 2)),
    ),
    CallCase(
        "pending-range",
        "pending",
        "Arguments: ```f(list(range(4)))```",
        Pending("list(range(4))"),
        resolved=Args(([0, 1, 2, 3],)),
    ),
    CallCase(
        "pending-string-repeat-kwarg",
        "pending",
        'Arguments: ```f("ab"*3, k=2)```',
        Pending('"ab"*3, k=2'),
        reference=Fails("syntax error"),
        resolved=Args(("ababab",), {"k": 2}),
    ),
    CallCase(
        "pending-sorted",
        "pending",
        "Arguments: ```f(sorted([3, 1]))```",
        Pending("sorted([3, 1])"),
        resolved=Args(([1, 3],)),
    ),
    CallCase(
        "pending-tuple-call",
        "pending",
        "Arguments: ```f(tuple(range(3)))```",
        Pending("tuple(range(3))"),
        resolved=Args(((0, 1, 2),)),
        resolved_reference=Args((0, 1, 2)),
    ),
    CallCase(
        "pending-numpy",
        "pending",
        "Arguments: ```f(np.zeros(2).tolist())```",
        Pending("np.zeros(2).tolist()"),
        resolved=Args(([0.0, 0.0],)),
    ),
    CallCase(
        "pending-lambda",
        "pending",
        "Arguments: ```f(lambda x: x)```",
        Pending("lambda x: x"),
        resolved=Fails("not plain data"),
    ),
    # --- hostile ----------------------------------------------------------------------------
    CallCase(
        "hostile-import-system",
        "hostile",
        "Arguments: ```f(__import__('os').system('x'))```",
        Fails("refused"),
    ),
    CallCase(
        "hostile-open",
        "hostile",
        "Arguments: ```f(open('/etc/passwd').read())```",
        Fails("refused"),
    ),
    CallCase(
        "hostile-subclasses",
        "hostile",
        "Arguments: ```f(().__class__.__base__.__subclasses__())```",
        Fails("refused"),
    ),
    CallCase(
        "hostile-power-tower",
        "hostile",
        "Arguments: ```f(10**10**10)```",
        Pending("10**10**10"),
        resolved=Fails("timed out"),
    ),
    CallCase(
        "hostile-memory",
        "hostile",
        "Arguments: ```f([0]*10**10)```",
        Pending("[0]*10**10"),
        resolved=Fails("MemoryError"),
    ),
    CallCase(
        "hostile-hang",
        "hostile",
        "Arguments: ```f([x for x in iter(int, 1)])```",
        Pending("[x for x in iter(int, 1)]"),
        resolved=Fails("timed out"),
    ),
    CallCase(
        "hostile-huge-reply",
        "hostile",
        "Arguments: ```f(1)```\n" + "A" * 1_000_000,
        Fails("reply too long"),
    ),
    CallCase(
        "hostile-deep-nesting",
        "hostile",
        "Arguments: ```f(" + "[" * 500 + "]" * 500 + ")```",
        Fails("nested too deeply"),
    ),
    CallCase(
        "hostile-huge-expression",
        "hostile",
        "Arguments: ```f([" + "1, " * 30_000 + "1])```",
        Fails("too large"),
    ),
]

OUTPUTS: list[OutputCase] = [
    OutputCase(
        "out-wellformed-int",
        "wellformed",
        "The maximum contiguous sum is 4 - 1 - 2 + 1 + 5 = 7.\nOutput: ```7```",
        Value(7),
    ),
    OutputCase(
        "out-wellformed-list",
        "wellformed",
        "Only even numbers remain.\nOutput: ```[2, 4, 6]```",
        Value([2, 4, 6]),
    ),
    OutputCase(
        "out-wellformed-tuple-float",
        "wellformed",
        "Sum is 6 and the average 2.0.\n\nOutput: ```(6, 2.0)```\n",
        Value((6, 2.0)),
    ),
    OutputCase(
        "out-wellformed-string",
        "wellformed",
        "Reversing the words gives 'world hello'.\nOutput: ```'world hello'```",
        Value("world hello"),
    ),
    OutputCase(
        "out-python-tag",
        "fenced",
        "Step 1: ...\nStep 2: ...\nOutput:\n```python\n[1, 2]\n```",
        Value([1, 2]),
        reference=Fails("syntax error"),  # evaluates "python\n[1, 2]"
    ),
    OutputCase(
        "out-multiline-dict",
        "fenced",
        "Output:\n```\n{'a': 1,\n 'b': 2}\n```",
        Value({"a": 1, "b": 2}),
    ),
    OutputCase(
        "out-single-backtick",
        "wellformed",
        "So the result is True.\nOutput: `True`",
        Value(True),
    ),
    OutputCase(
        "out-no-backticks",
        "wellformed",
        "So the function returns False.\nOutput: False.",
        Value(False),
        reference=Fails("no code block"),
    ),
    OutputCase(
        "out-trailing-prose",
        "chatty",
        "Output: ```5```\n\nThis output matches the expected behaviour described in the task.",
        Value(5),
        reference=Fails("no code block"),  # after the last "utput" there is only prose
    ),
    OutputCase(
        "out-bold-marker",
        "wellformed",
        "Counting the vowels gives 3.\n\n**Output:** ```3```",
        Value(3),
    ),
    OutputCase(
        "out-set-inf-nan",
        "shapes",
        "Output: ```({1, 2}, float('inf'), nan, -0.5)```",
        Value(({1, 2}, INF, NAN, -0.5)),
    ),
    OutputCase(
        "out-none",
        "shapes",
        "No element satisfies the condition, so None is returned.\nOutput: ```None```",
        Value(None),
    ),
    OutputCase(
        "out-string-with-backticks",
        "strings",
        'Output: ```"a `b` (c)"```',
        Value("a `b` (c)"),
    ),
    OutputCase(
        "out-truncated-fence",
        "truncated",
        "The list is built step by step.\nOutput: ```[1, 2, 3,",
        Fails("truncated"),
        reference=Fails("syntax error"),
    ),
    OutputCase(
        "out-truncated-reasoning",
        "truncated",
        "Let's trace: the first element is 3, then we add",
        Fails("no `Output:`"),
        reference=Fails("no code block"),
    ),
    OutputCase(
        "out-prose-only",
        "malformed",
        "The output is the number of distinct elements in the list.",
        Fails("the answer is prose, not a value"),
        reference=Fails("no code block"),
    ),
    OutputCase(
        "out-placeholder",
        "malformed",
        "Output: ```<your final answer>```",
        Fails("placeholder"),
        reference=Fails("syntax error"),
    ),
    OutputCase(
        "out-pending-expression",
        "pending",
        "Output: ```[0] * 3```",
        Pending("[0] * 3"),
        resolved=Value([0, 0, 0]),
    ),
    OutputCase(
        "out-pending-sorted",
        "pending",
        "Output: ```sorted({3, 1, 2})```",
        Pending("sorted({3, 1, 2})"),
        resolved=Value([1, 2, 3]),
    ),
    OutputCase(
        "out-unquoted-string",
        "malformed",
        "Output: ```hello```",
        Fails("unquoted word"),
        reference=Pending("hello"),  # the authors' eval raises NameError
    ),
    OutputCase(
        "out-hostile-open",
        "hostile",
        "Output: ```open('/etc/passwd').read()```",
        Fails("refused"),
    ),
    OutputCase(
        "out-hostile-power",
        "hostile",
        "Output: ```10**10**10```",
        Pending("10**10**10"),
        resolved=Fails("timed out"),
    ),
    OutputCase(
        "out-hostile-huge",
        "hostile",
        "Output: ```1```" + " " * 300_000,
        Fails("reply too long"),
    ),
]

CODES: list[CodeCase] = [
    CodeCase(
        "code-python-fence",
        "wellformed",
        "The bug is the loop bound. Fixed:\n\n```python\ndef f(n):\n    return n + 1\n```\n"
        "This now handles the last element.",
        "\ndef f(n):\n    return n + 1\n",
    ),
    CodeCase(
        "code-first-python-block",
        "wellformed",
        "```python\ndef f(n):\n    return 1\n```\nTest:\n```python\nassert f(1) == 1\n```",
        "\ndef f(n):\n    return 1\n",
    ),
    CodeCase(
        "code-python-preferred-over-plain",
        "fenced",
        "Input was ```f(3)```. Here is the fix:\n```python\ndef f(x):\n    return x\n```",
        "\ndef f(x):\n    return x\n",
    ),
    CodeCase(
        "code-plain-fence",
        "fenced",
        "```\ndef f(x):\n    return -x\n```",
        "\ndef f(x):\n    return -x\n",
    ),
    CodeCase(
        "code-py-tag",
        "fenced",
        "```py\ndef f(x):\n    return x * 3\n```",
        "\ndef f(x):\n    return x * 3\n",
    ),
    CodeCase(
        "code-no-fence",
        "malformed",
        "def f(x):\n    return x - 1\n",
        "def f(x):\n    return x - 1\n",
    ),
    CodeCase(
        "code-prose-only",
        "malformed",
        "The code is correct as written; no changes are needed.",
        None,
    ),
    CodeCase(
        "code-truncated-fence",
        "truncated",
        "Here is the corrected code:\n```python\ndef f(x):\n    return",
        None,
    ),
    CodeCase("code-empty-fence", "malformed", "```python\n```", None),
]


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
