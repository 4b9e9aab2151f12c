"""Parsing model replies (UT inputs, UT outputs, code, critiques) without ``eval``.

Model text is never executed in this process. Literal arguments and values are read with
:mod:`utdebug.literals`. Anything else that is valid Python (``[1]*5``, ``list(range(4))``)
comes back *pending*: :func:`resolve_pending` computes it in the sandbox, with a time and
memory limit. Names that could reach the outside world (``open``, ``__import__``, ``os``, any
dunder) are refused outright, since a unit-test input never needs them.

Two styles. ``reference``: the authors' ``extract_arguments`` / ``extract_output`` quirks
(reference-implementation §5.1, §5.2), evaluated safely. One deviation: when the reply has no
``f(`` where the authors look for it, their parser evals a line of prose; here that is a
failure unless the line happens to be a literal (as it then is for them).

``paper`` (default) reads what small models really write. Fenced blocks are read as a chat
window shows them (a fence opens a line or encloses a one-line block; a stray fence after
text, ```` Expected Output: ``` ````, opens nothing).

*The test input* (:func:`parse_call`) is looked for in the text before the reply's first
``### Output`` header (the part an output vote continues), else in the whole reply:

1. after the last ``Arguments:`` marker that is followed by one (its reach ends at the next
   header or ``Output:`` marker): the first call there decides;
2. else in the last ``### Input Arguments`` section (or ``**Input Arguments**`` label) that
   has one: the last call in a code block, else the last call in its prose;
3. else anywhere, the same way.

A call that gives no input (a signature ``f(a: int)``, an argument the reply never assigns,
a call cut off) is passed over for the one before it. Names in a call's arguments take the
values the reply assigns them (``s = "abc"`` then ``f(s)``; ``a, b = 1, 2``; the last
assignment before the call wins): literals are substituted, other expressions are substituted
as code into the pending arguments (``xs = [1] * 3``), never a value that calls the function
itself. Without a call, values given for the function's parameter names (``params``) make the
call: ``- `text` = `'abc'` ``, ``text = 'abc'``, ``a: 5, b: 3`` (in a marked region anywhere
on a line, else only where a line starts with them; never a local variable in an indented
code line), else a literal after ``Input:`` (``the input is `'abc'` `` inside a marked
region): the argument of a one-parameter function, a tuple of all the arguments otherwise.
Calls are delimited by a string-aware bracket scan; keyword arguments, ``f()`` and single
tuple arguments (``f((1, 2))`` is ONE argument) are supported.

*The expected output* (:func:`parse_output`) is read in the answer region: a reply that begins
with its answer and then writes a new test (``## Hypothesis`` ...) is read up to that test; a
reply with a ``### Output`` header from after it up to the next test; else the whole reply.
There, marked answers decide (the last ``Output:`` / ``Final Answer:`` marker, also as a line
of a code block: ```` ```python\nOutput: True\n``` ````); without one, the last of: a block
holding a literal (the region's first block, or its last one with no prose after it; a block
holding other code answers only through the forms below), a value stated in prose
(``would return `True` ``, ``the output is 3``, ``returns 3 because ...``, not statements
about the given code, negated or conditional ones), ``print(f(x))  # Output: y`` /
``f(x)  # -> y`` / ``assert f(x) == y`` about the test's call. An unquoted word is refused
(``Output: abcd`` may be a string or a name): only ``print(f(x))  # Output: abcd`` reads as
the string ``'abcd'``, because print shows a string without quotes. A last marked answer that
is not a value (prose, code, a cut block) refuses the reply rather than falling back on an
earlier candidate: a wrong expected output does more harm than a missing vote.

Failures are returned as :class:`ParseFailure` values, never raised.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

from utdebug.agents.reply_answers import read_answer
from utdebug.agents.reply_inputs import read_call
from utdebug.agents.reply_syntax import (
    MAX_EXPR_CHARS,
    MAX_NESTING,
    MAX_REPLY_CHARS,
    TAG_LINE,
    ParsedCall,
    ParsedValue,
    ParseFailure,
    parse_value,
    shorten,
    splat_args,
    too_long,
)
from utdebug.literals import LiteralError, literal_value
from utdebug.sandbox import Limits, Opaque, Status

if TYPE_CHECKING:
    from utdebug.sandbox import Sandbox

__all__ = [
    "ARGS_ENTRY",
    "MAX_EXPR_CHARS",
    "MAX_NESTING",
    "MAX_REPLY_CHARS",
    "VALUE_ENTRY",
    "ParseFailure",
    "ParsedCall",
    "ParsedValue",
    "Style",
    "argument_program",
    "bind_arguments",
    "critique_says_correct",
    "extract_code",
    "parameter_names",
    "parse_call",
    "parse_output",
    "resolve_pending",
    "value_program",
]


Style = Literal["paper", "reference"]


ARGS_ENTRY = "utdebug_pending_arguments"


VALUE_ENTRY = "utdebug_pending_value"


def parse_call(
    text: str,
    entry_point: str,
    *,
    style: Style = "paper",
    params: Sequence[str] | None = None,
) -> ParsedCall | ParseFailure:
    """The UT input of a UT-generation reply (see the module docstring for the styles).

    ``params`` are the entry point's parameter names (:func:`parameter_names`); with them the
    paper style also reads replies that give the arguments as values of those names instead of
    a call (``- `text` = `'abc'` ``, ``a: 5, b: 3``, ``Input: `'abc'` ``). The reference style
    ignores them.
    """
    if len(text) > MAX_REPLY_CHARS:
        return too_long(text)
    if style == "reference":
        return _reference_call(text, entry_point)
    if style != "paper":
        raise ValueError(f"unknown style {style!r}")
    return read_call(text, entry_point, params)


def parameter_names(code: str, entry_point: str) -> list[str] | None:
    """The names of the parameters ``entry_point`` of ``code`` takes by position, in order;
    ``None`` when the code does not parse or does not define it. A method's ``self``/``cls``
    is left out."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    defs = [n for n in tree.body if isinstance(n, _FUNCTION_DEFS) and n.name == entry_point]
    method = False
    if not defs:
        defs = [
            n for n in ast.walk(tree) if isinstance(n, _FUNCTION_DEFS) and n.name == entry_point
        ]
        method = True
    if not defs:
        return None
    sig = defs[-1].args
    names = [a.arg for a in (*sig.posonlyargs, *sig.args)]
    if method and names and names[0] in ("self", "cls"):
        names = names[1:]
    return names


_FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _reference_call(text: str, name: str) -> ParsedCall | ParseFailure:
    """§5.1: after the first ``rgument`` take the first ``name(``, else the last ``name(``;
    keep that line up to its last ``)``; a tuple value is splatted."""
    opener = name + "("
    if "rgument" in text:
        searched = text.split("rgument", 1)[1]
        rest = searched.split(opener, 1)[-1]
    else:
        searched = text
        rest = text.rsplit(opener, 1)[-1]
    inner = rest.split("\n", 1)[0].rsplit(")", 1)[0]
    source = f"{name}({inner})"
    parsed = parse_value(inner.lstrip(" \t"))
    if opener not in searched and (isinstance(parsed, ParseFailure) or parsed.pending):
        # Without the call, the authors eval a line of prose; only a literal survives that.
        return ParseFailure(f"no call to `{name}` found")
    if isinstance(parsed, ParseFailure):
        return parsed
    if parsed.pending:
        return ParsedCall((), {}, source, pending=inner, splat=True)
    return ParsedCall(splat_args(parsed.value), {}, source)


def parse_output(
    text: str, *, style: Style = "paper", call: str | None = None
) -> ParsedValue | ParseFailure:
    """The UT output of an output-prediction reply (or of a UT reply's ``### Output`` part).

    Paper style (the rules in the module docstring): the answer region is read for marked
    answers (``Output:``, ``Final Answer:``; the last one decides), else for the last of: a
    value block, ``print(f(x))  # Output: y`` / ``f(x) == y`` forms about ``call`` (the test's
    call source; without it, only when the reply shows a single call), and values stated in
    prose (``would return `True` ``). Reference style: §5.2 exactly (``call`` is ignored).
    """
    if len(text) > MAX_REPLY_CHARS:
        return too_long(text)
    if style == "reference":
        return _reference_output(text)
    if style != "paper":
        raise ValueError(f"unknown style {style!r}")
    return read_answer(text, call)


def _reference_output(text: str) -> ParsedValue | ParseFailure:
    if "utput" in text:
        text = text.rsplit("utput", 1)[-1]
    blocks = re.findall(r"```(.*?)```", text, re.DOTALL)
    if blocks:
        source = blocks[-1].strip("\n")
    else:
        spans = re.findall(r"`(.*?)`", text, re.DOTALL)
        if not spans:
            return ParseFailure("no code block or code span found")
        source = spans[-1].strip("\n").lstrip(" ")
    return parse_value(source.lstrip(" \t"))


def extract_code(text: str) -> str | None:
    """The code of a debugger reply (§5.3): the first ```python block, else the first ```
    block, else the text before the first ```. Surrounding newlines are kept.

    Deviations: a language tag on a plain fence (```py) is dropped; ``None`` when the result
    is blank, when the reply is over :data:`MAX_REPLY_CHARS`, or when unfenced text is not
    Python defining something (prose).
    """
    if len(text) > MAX_REPLY_CHARS:
        return None
    m = re.search(r"```python(.*?)```", text, re.DOTALL)
    if m is not None:
        code = m.group(1)
        first, sep, rest = code.partition("\n")
        if sep and first.strip() and TAG_LINE.fullmatch(first.strip()):  # ```python3
            code = sep + rest
        return code if code.strip() else None
    m = re.search(r"```(.*?)```", text, re.DOTALL)
    if m is not None:
        code = m.group(1)
        first, sep, rest = code.partition("\n")
        if sep and TAG_LINE.fullmatch(first):
            code = sep + rest
        return code if code.strip() else None
    code = text.split("```", 1)[0]
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    definitions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
    if not any(isinstance(node, definitions) for node in tree.body):
        return None
    return code


def critique_says_correct(text: str) -> bool:
    """§4.5: after the first ``Feedback: ``, correct iff it says ``code is correct`` or does
    not say ``code is wrong`` (so unclear feedback counts as correct)."""
    decision = text.split("Feedback: ", 1)[-1]
    return "code is correct" in decision or "code is wrong" not in decision


def argument_program(pending: str) -> tuple[str, str]:
    """(code, entry point) of a program returning ``[args list, kwargs dict]`` of ``pending``."""
    code = (
        f"def _utdebug_collect(*args, **kwargs):\n    return [list(args), kwargs]\n\n\n"
        f"def {ARGS_ENTRY}():\n    return _utdebug_collect(\n{pending}\n    )\n"
    )
    return code, ARGS_ENTRY


def value_program(pending: str) -> tuple[str, str]:
    """(code, entry point) of a program returning the value of the expression ``pending``."""
    return f"def {VALUE_ENTRY}():\n    return (\n{pending}\n    )\n", VALUE_ENTRY


@overload
def resolve_pending(
    sandbox: Sandbox, parsed: ParsedCall, *, timeout: float = ...
) -> ParsedCall | ParseFailure: ...


@overload
def resolve_pending(
    sandbox: Sandbox, parsed: ParsedValue, *, timeout: float = ...
) -> ParsedValue | ParseFailure: ...


@overload
def resolve_pending(
    sandbox: Sandbox, parsed: ParsedCall | ParsedValue, *, timeout: float = ...
) -> ParsedCall | ParsedValue | ParseFailure: ...


def resolve_pending(
    sandbox: Sandbox, parsed: ParsedCall | ParsedValue, *, timeout: float = 1.0
) -> ParsedCall | ParsedValue | ParseFailure:
    """Compute a pending call or value in the sandbox; resolved objects are returned as is."""
    if isinstance(parsed, ParsedCall):
        if parsed.pending is None:
            return parsed
        pending = parsed.pending
        code, entry = value_program(pending) if parsed.splat else argument_program(pending)
    else:
        if not parsed.pending:
            return parsed
        pending = parsed.source
        code, entry = value_program(pending)
    limits = Limits(per_input=timeout, load=timeout, memory_mb=512, batch=timeout * 2 + 1)
    outcome = sandbox.run(code, entry, [()], limits).outcomes[0]
    shown = shorten(" ".join(pending.split()))
    if outcome.status is Status.TIMEOUT:
        return ParseFailure(f"evaluating `{shown}` timed out")
    if outcome.status is not Status.OK:
        detail = f": {outcome.error}" if outcome.error else ""
        return ParseFailure(f"evaluating `{shown}` failed: {outcome.error_type}{detail}")
    value = outcome.value
    opaque = _opaque_part(value)
    if opaque is not None:
        return ParseFailure(f"evaluating `{shown}` gave {opaque.type_name}, not plain data")
    if isinstance(parsed, ParsedValue):
        return ParsedValue(value, parsed.source)
    if parsed.splat:
        return ParsedCall(splat_args(value), {}, parsed.source)
    if not (
        isinstance(value, list)
        and len(value) == 2
        and isinstance(value[0], list)
        and isinstance(value[1], dict)
        and all(isinstance(k, str) for k in value[1])
    ):
        return ParseFailure(f"evaluating `{shown}` did not give an argument list")
    return ParsedCall(tuple(value[0]), dict(value[1]), parsed.source)


def _opaque_part(value: Any, depth: int = 0) -> Opaque | None:
    if isinstance(value, Opaque):
        return value
    if depth > MAX_NESTING + 2:
        return None
    items: Sequence[Any]
    if isinstance(value, dict):
        items = [*value.keys(), *value.values()]
    elif isinstance(value, list | tuple | set | frozenset):
        items = list(value)
    else:
        return None
    for item in items:
        found = _opaque_part(item, depth + 1)
        if found is not None:
            return found
    return None


def bind_arguments(
    args: Sequence[Any], kwargs: dict[str, Any], code: str, entry_point: str
) -> tuple[Any, ...] | ParseFailure:
    """Positional arguments for ``entry_point`` of ``code``, keywords placed by its signature.

    Without keywords the arguments are returned unchanged (the code need not parse). Gaps
    before a keyword's position are filled from literal defaults.
    """
    if not kwargs:
        return tuple(args)
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return ParseFailure("cannot bind keyword arguments: the code does not parse")
    defs = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == entry_point
    ]
    if not defs:
        return ParseFailure(f"cannot bind keyword arguments: no function `{entry_point}`")
    sig = defs[-1].args
    positional = [a.arg for a in (*sig.posonlyargs, *sig.args)]
    if len(args) > len(positional):
        return ParseFailure("cannot bind keyword arguments after extra positional arguments")
    slots: list[tuple[bool, Any]] = [(True, a) for a in args]
    slots += [(False, None)] * (len(positional) - len(args))
    for name, value in kwargs.items():
        if name not in positional:
            if any(a.arg == name for a in sig.kwonlyargs):
                return ParseFailure(f"keyword-only parameter `{name}` cannot be passed by position")
            return ParseFailure(f"unknown keyword argument `{name}`")
        index = positional.index(name)
        if index < len(sig.posonlyargs):
            return ParseFailure(f"positional-only parameter `{name}` passed by keyword")
        if slots[index][0]:
            return ParseFailure(f"multiple values for argument `{name}`")
        slots[index] = (True, value)
    last = max(i for i, (filled, _) in enumerate(slots) if filled)
    first_default = len(positional) - len(sig.defaults)
    out: list[Any] = []
    for i, (filled, value) in enumerate(slots[: last + 1]):
        if filled:
            out.append(value)
            continue
        if i < first_default:
            return ParseFailure(f"missing argument `{positional[i]}`")
        try:
            out.append(literal_value(sig.defaults[i - first_default]))
        except LiteralError:
            return ParseFailure(f"default of `{positional[i]}` is not a literal")
    return tuple(out)
