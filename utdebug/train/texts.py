"""The text of the training data: values written as literals (the same in every process),
the SFT target and the engine's reading of it, comments removed, the validation file's test."""

from __future__ import annotations

import ast
import io
import math
import re
import tokenize
from typing import Any

from utdebug.agents import parsing
from utdebug.agents.endings import reached
from utdebug.engine.voting import answer_key
from utdebug.literals import LiteralError, canonical_repr, literal_value
from utdebug.mutation import parse_quietly

__all__ = [
    "VAL_TEST_HEAD",
    "args_literal",
    "build_target",
    "call_source",
    "literal_text",
    "order_suspect",
    "same_answer",
    "strip_comments",
    "uses_sets",
    "verify_target",
]

# --- values as literals -----------------------------------------------------------------------


def literal_text(value: Any) -> str | None:
    """``value`` as a Python literal (sets in sorted order, :func:`canonical_repr`, so that the
    text is the same in every process) when it reads back as the same value; ``None`` otherwise
    (objects, values too large to write into a test)."""
    try:
        text = canonical_repr(value)
    except Exception:
        return None
    if len(text) > 10_000:
        return None
    try:
        back = literal_value(text)
    except (LiteralError, RecursionError, MemoryError):
        return None
    return text if canonical_repr(back) == text else None


def same_answer(a: Any, b: Any) -> bool:
    """The same value as an answer: the engine's vote key (numbers by value, ``True`` is not
    ``1``, lists are not tuples, sets and dicts without order), floats within a relative 1e-9.
    Stricter than a benchmark's comparison helper, which MBPP+'s ``np.allclose`` makes pass
    ``(0,)`` for ``()``."""
    if answer_key(a) == answer_key(b):
        return True
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool):
        return not isinstance(b, bool) and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return False


_SET_METHODS = frozenset(
    {"intersection", "union", "difference", "symmetric_difference", "issubset", "issuperset"}
)


def uses_sets(code: str) -> bool:
    """Whether ``code`` builds sets (literals, comprehensions, ``set()``/``frozenset()``, set
    methods): the order of a set of strings changes with the process's string-hash seed."""
    tree = parse_quietly(code)
    if tree is None:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Set | ast.SetComp):
            return True
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in ("set", "frozenset"):
                return True
            if isinstance(f, ast.Attribute) and f.attr in _SET_METHODS:
                return True
    return False


def order_suspect(value: Any) -> bool:
    """A list or tuple with two or more items that hold text: if it was made from a set, its
    order is the set's, which depends on the string-hash seed."""
    if not isinstance(value, list | tuple):
        return False
    return sum(1 for item in value if _holds_text(item)) >= 2


def _holds_text(value: Any, depth: int = 0) -> bool:
    if isinstance(value, str | bytes):
        return True
    if depth < 5 and isinstance(value, list | tuple | set | frozenset):
        return any(_holds_text(v, depth + 1) for v in value)
    return False


def call_source(entry_point: str, args: tuple[Any, ...]) -> str | None:
    parts = [literal_text(a) for a in args]
    if any(p is None for p in parts):
        return None
    return f"{entry_point}({', '.join(p for p in parts if p is not None)})"


# --- targets ------------------------------------------------------------------------------------

_OUTPUT_START = re.compile(r"(?im)^[ \t]*(?:#{1,6}[ \t]*\**[ \t]*output\b|[*_]*output[*_ \t]*:)")
_ARGUMENTS = re.compile(r"(?i)\barguments?\b[*_ \t]*:")
_INPUT_HEADER = re.compile(r"(?im)^[ \t]*#{1,6}[ \t]*input arguments\b")
_HEADER = re.compile(r"^([ \t]*)#{1,6}[ \t]+")


_FENCE = re.compile(r"(?m)^[ \t]*(?:`{3,}|~{3,})")


def _plain(rationale: str) -> str:
    """A rationale without Markdown headers (a ``## Hypothesis`` inside the output section
    would read as a new test), without a leading ``Reasoning`` title, its code fences
    closed."""
    lines = [_HEADER.sub(r"\1", line) for line in rationale.strip().splitlines()]
    while lines and lines[0].strip().strip("*:").strip().lower() in ("reasoning", ""):
        lines.pop(0)
    text = "\n".join(lines).strip()
    if len(_FENCE.findall(text)) % 2:
        text += "\n```"
    return text


def _test_start(head: str, model_call: str | None) -> int:
    """Where the model's own test begins in ``head``: the line of the first occurrence of its
    call, or the code block holding it (its expected output, often wrong, must not stay in the
    target); the end of ``head`` when the call is not there."""
    if not model_call:
        return len(head)
    at = head.find(model_call)
    if at < 0:
        return len(head)
    line = head.rfind("\n", 0, at) + 1
    fences = [m.start() for m in _FENCE.finditer(head, 0, line)]
    return fences[-1] if len(fences) % 2 else line


def build_target(
    reply: str,
    call_source: str,
    rationale: str,
    gold_literal: str,
    model_call: str | None = None,
) -> str:
    """The SFT target: the UT reply's hypothesis and input reasoning (up to its own test, which
    begins at ``model_call``, its ``Arguments:`` or its output section), the input as
    ``Arguments: ```f(...)``` ``, then ``### Output``, the rationale and the gold output."""
    head = reply
    m = _OUTPUT_START.search(head)
    if m is not None:
        head = head[: m.start()]
    args_at = [a.start() for a in _ARGUMENTS.finditer(head)]
    if args_at:
        head = head[: args_at[-1]]
    head = head[: _test_start(head, model_call)].rstrip()
    if _INPUT_HEADER.search(head) is None:
        head = f"{head}\n\n### Input Arguments" if head else "### Input Arguments"
    explained = _plain(rationale)
    return (
        f"{head}\nArguments: ```{call_source}```\n\n"
        f"### Output\n{explained + chr(10) if explained else ''}Output: ```{gold_literal}```\n"
    )


def verify_target(
    target: str,
    entry_point: str,
    params: list[str] | None,
    args: tuple[Any, ...],
    gold_literal: str,
) -> str | None:
    """Why the engine would not read ``target`` as the test it is (``None``: it would)."""
    call = parsing.parse_call(target, entry_point, params=params)
    if isinstance(call, parsing.ParseFailure):
        return f"the target's input does not parse back ({call.reason})"
    if (
        call.pending is not None
        or call.kwargs
        or canonical_repr(tuple(call.args)) != canonical_repr(tuple(args))
    ):
        return "the target's input parses back to another input"
    out = parsing.parse_output(target, call=call.source)
    if isinstance(out, parsing.ParseFailure):
        return f"the target's output does not parse back ({out.reason})"
    if out.pending or canonical_repr(out.value) != gold_literal:
        return "the target's output parses back to another value"
    end = reached("ut", target)
    if end is not None and end < len(target.rstrip()):
        return "a streamed reply would end inside the rationale (an Output: marker with a value)"
    return None


def strip_comments(code: str) -> str:
    """``code`` without its comments (lines left empty by them go too)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return code
    lines = code.splitlines(keepends=True)
    cuts: dict[int, int] = {}
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            cuts[tok.start[0]] = tok.start[1]
    out = []
    for i, line in enumerate(lines, start=1):
        if i in cuts:
            kept = line[: cuts[i]].rstrip()
            if not kept.strip():
                continue
            line = kept + "\n"
        out.append(line)
    return "".join(out)


# --- the validation file ----------------------------------------------------------------------

VAL_TEST_HEAD = """import numpy as np
from math import inf

def is_floats(x) -> bool:
    # check if it is float; List[float]; Tuple[float]
    if isinstance(x, float):
        return True
    if isinstance(x, (list, tuple)):
        return all(isinstance(i, float) for i in x)
    if isinstance(x, np.ndarray):
        return x.dtype == np.float64 or x.dtype == np.float32
    return False


def assertion(out, exp, atol):
    if atol == 0 and is_floats(exp):
        atol = 1e-6
    if out != exp and atol != 0:
        assert np.allclose(out, exp, rtol=1e-07, atol=atol)
    else:
        assert out == exp, f"out: {out}, exp: {exp}"

"""


def args_literal(args: tuple[Any, ...]) -> str:
    return "[" + ", ".join(literal_text(a) or "None" for a in args) + "]"
