"""Parsing model replies (UT inputs, UT outputs, code, critiques) without ``eval``.

Model text is never executed in this process. Literal arguments and values are read with
:mod:`utdebug.literals`. Anything else that is valid Python (``[1]*5``, ``list(range(4))``)
comes back *pending*: :func:`resolve_pending` computes it in the sandbox, with a time and
memory limit. Names that could reach the outside world (``open``, ``__import__``, ``os``, any
dunder) are refused outright, since a unit-test input never needs them.

Two styles:

* ``paper`` (default, robust): the ``Arguments:`` line wins over calls mentioned in the
  reasoning; calls are delimited by a string-aware bracket scan; keyword arguments, ``f()``
  and single tuple arguments (``f((1, 2))`` is ONE argument) are supported; language-tagged
  fences are understood.
* ``reference``: the authors' ``extract_arguments`` / ``extract_output`` quirks
  (reference-implementation §5.1, §5.2), evaluated safely. One deviation: when the reply has
  no ``f(`` where the authors look for it, their parser evals a line of prose; here that is a
  failure unless the line happens to be a literal (as it then is for them).

Failures are returned as :class:`ParseFailure` values, never raised.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, overload

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
    "parse_call",
    "parse_output",
    "resolve_pending",
    "value_program",
]

Style = Literal["paper", "reference"]

MAX_REPLY_CHARS = 200_000
"""Longer replies are refused (a ParseFailure) before any scanning."""
MAX_EXPR_CHARS = 50_000
"""Longest argument list or output expression accepted."""
MAX_NESTING = 100
"""Deepest bracket nesting accepted (the literal evaluator's own limit)."""

ARGS_ENTRY = "utdebug_pending_arguments"
VALUE_ENTRY = "utdebug_pending_value"

_BLOCKED_NAMES = frozenset(
    {
        "eval", "exec", "compile", "open", "input", "breakpoint", "globals", "locals", "vars",
        "getattr", "setattr", "delattr", "exit", "quit", "help", "memoryview", "os", "sys",
        "subprocess", "shutil", "socket", "importlib", "builtins", "pathlib", "Path", "io",
        "signal", "ctypes", "pickle", "marshal", "threading", "multiprocessing", "resource",
    }
)  # fmt: skip
_CLOSERS = {"(": ")", "[": "]", "{": "}"}
_TAG_LINE = re.compile(r"[A-Za-z][\w+#.-]*[ \t]*")
_ARG_MARKER = re.compile(r"(?i)\barguments?\b[*_ \t]*:")
_OUTPUT_MARKER = re.compile(r"(?i)\boutput\b[*_ \t]*:")
_SECTION = re.compile(r"(?m)^[ \t]*#")
_HEADER_LINE = re.compile(r"[ \t]*#")


@dataclass(frozen=True)
class ParseFailure:
    """Why a reply could not be parsed (a short, human-readable reason)."""

    reason: str


@dataclass(frozen=True)
class ParsedCall:
    """A UT input. ``source`` is the call text (``f(1, [2])``).

    When an argument is not a literal, ``args``/``kwargs`` are empty and ``pending`` holds the
    argument source (``[1]*3, k=2``) for :func:`resolve_pending`. ``splat`` (reference style
    only) means ``pending`` is one expression whose tuple value is spread into arguments.
    """

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    source: str
    pending: str | None = None
    splat: bool = False


@dataclass(frozen=True)
class ParsedValue:
    """A UT output. When ``pending``, ``value`` is None and ``source`` must be resolved."""

    value: Any
    source: str
    pending: bool = False


# --- UT inputs --------------------------------------------------------------------------------


def parse_call(text: str, entry_point: str, *, style: Style = "paper") -> ParsedCall | ParseFailure:
    """The UT input of a UT-generation reply (see the module docstring for the styles)."""
    if len(text) > MAX_REPLY_CHARS:
        return _too_long(text)
    if style == "reference":
        return _reference_call(text, entry_point)
    if style != "paper":
        raise ValueError(f"unknown style {style!r}")
    starts = _call_starts(text, entry_point)
    if not starts:
        return ParseFailure(f"no call to `{entry_point}` found")
    chosen = _after_last_marker(text, starts)
    if chosen is None:
        fences = _fence_spans(text)
        opens = [a for a, _ in fences]

        def fenced(start: tuple[int, int]) -> bool:
            k = bisect.bisect_right(opens, start[0]) - 1
            return k >= 0 and start[0] < fences[k][1]

        chosen = next((s for s in reversed(starts) if fenced(s)), starts[-1])
    return _call_at(text, chosen, entry_point)


def _call_starts(text: str, name: str) -> list[tuple[int, int]]:
    """(name start, open-paren index) of every call of ``name`` that is not its ``def``."""
    out = []
    for m in re.finditer(r"(?<![\w.])" + re.escape(name) + r"[ \t]*\(", text):
        if re.search(r"\bdef[ \t]+$", text[max(0, m.start() - 12) : m.start()]):
            continue
        out.append((m.start(), m.end() - 1))
    return out


def _after_last_marker(text: str, starts: list[tuple[int, int]]) -> tuple[int, int] | None:
    """The first call after the last ``Arguments:`` marker that is followed by one.

    Markers on markdown header lines (``### Input Arguments:``) are skipped; a marker's reach
    ends at the next header or ``Output:`` marker.
    """
    names = [name_at for name_at, _ in starts]
    bounds = sorted(m.start() for p in (_SECTION, _OUTPUT_MARKER) for m in p.finditer(text))
    newlines = [m.start() for m in re.finditer("\n", text)]
    for marker in reversed(list(_ARG_MARKER.finditer(text))):
        k = bisect.bisect_left(newlines, marker.start())
        line_start = newlines[k - 1] + 1 if k else 0
        if _HEADER_LINE.match(text, line_start, marker.start()):
            continue
        i = bisect.bisect_left(names, marker.end())
        b = bisect.bisect_left(bounds, marker.end())
        end = bounds[b] if b < len(bounds) else len(text)
        if i < len(names) and names[i] < end:
            return starts[i]
    return None


def _fence_spans(text: str) -> list[tuple[int, int]]:
    """Inside spans of ``` fences, paired from the left; an unclosed fence runs to the end."""
    marks = [m.start() for m in re.finditer("```", text)]
    spans = []
    for i in range(0, len(marks), 2):
        end = marks[i + 1] if i + 1 < len(marks) else len(text)
        spans.append((marks[i] + 3, end))
    return spans


def _call_at(text: str, start: tuple[int, int], entry_point: str) -> ParsedCall | ParseFailure:
    name_at, open_at = start
    close = _matching_close(text, open_at)
    if isinstance(close, ParseFailure):
        return close
    source = text[name_at : close + 1]
    inner = text[open_at + 1 : close]
    tree = _parse_expr(source)
    if isinstance(tree, ParseFailure):
        return tree
    call = tree.body
    if not isinstance(call, ast.Call):  # cannot happen: the scan delimits one call
        return ParseFailure(f"no call to `{entry_point}` found")
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    try:
        for arg in call.args:
            if isinstance(arg, ast.Starred):
                raise LiteralError("starred argument")
            args.append(literal_value(arg, max_depth=MAX_NESTING))
        for kw in call.keywords:
            if kw.arg is None:
                raise LiteralError("keyword unpacking")
            kwargs[kw.arg] = literal_value(kw.value, max_depth=MAX_NESTING)
    except LiteralError as exc:
        refused = _refusal(call, exc)
        if refused is not None:
            return refused
        return ParsedCall((), {}, source, pending=inner)
    return ParsedCall(tuple(args), kwargs, source)


def _matching_close(text: str, open_at: int) -> int | ParseFailure:
    """Index of the bracket closing ``text[open_at]``; skips strings and comments."""
    stack: list[str] = []
    i, n = open_at, len(text)
    while i < n:
        if i - open_at > MAX_EXPR_CHARS:
            return ParseFailure(f"expression too large (over {MAX_EXPR_CHARS:,} characters)")
        c = text[i]
        if c in "'\"":
            end = _string_end(text, i)
            if end < 0:
                return ParseFailure("truncated: unterminated string")
            i = end
            continue
        if c == "#":
            nl = text.find("\n", i)
            i = n if nl < 0 else nl
            continue
        if c in _CLOSERS:
            stack.append(_CLOSERS[c])
            if len(stack) > MAX_NESTING:
                return ParseFailure(f"expression nested too deeply (over {MAX_NESTING} levels)")
        elif c in ")]}":
            if stack.pop() != c:
                return ParseFailure(f"unbalanced brackets: unexpected `{c}`")
            if not stack:
                return i
        elif c == "`":  # the enclosing code span or fence ended first
            break
        i += 1
    return ParseFailure("truncated: unbalanced parentheses")


def _string_end(text: str, i: int) -> int:
    """Index just past the string literal starting at ``text[i]``; -1 when unterminated."""
    quote = text[i] * 3 if text.startswith(text[i] * 3, i) else text[i]
    j, n = i + len(quote), len(text)
    while j < n:
        ch = text[j]
        if ch == "\\":
            j += 2
            continue
        if ch == "\n" and len(quote) == 1:
            return -1
        if text.startswith(quote, j):
            return j + len(quote)
        j += 1
    return -1


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
    parsed = _parse_value(inner.lstrip(" \t"))
    if opener not in searched and (isinstance(parsed, ParseFailure) or parsed.pending):
        # Without the call, the authors eval a line of prose; only a literal survives that.
        return ParseFailure(f"no call to `{name}` found")
    if isinstance(parsed, ParseFailure):
        return parsed
    if parsed.pending:
        return ParsedCall((), {}, source, pending=inner, splat=True)
    return ParsedCall(_splat(parsed.value), {}, source)


def _splat(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, tuple) else (value,)


# --- UT outputs -------------------------------------------------------------------------------


def parse_output(text: str, *, style: Style = "paper") -> ParsedValue | ParseFailure:
    """The UT output of an output-prediction reply.

    Paper style: the text after the last ``Output:`` marker (else after the last ``utput``,
    else the whole reply); there, the last fenced block (language tag dropped), else the last
    backtick span, else the rest of the marker's line. Reference style: §5.2 exactly.
    """
    if len(text) > MAX_REPLY_CHARS:
        return _too_long(text)
    if style == "reference":
        return _reference_output(text)
    if style != "paper":
        raise ValueError(f"unknown style {style!r}")
    markers = list(_OUTPUT_MARKER.finditer(text))
    if markers:
        rest = text[markers[-1].end() :]
    elif "utput" in text:
        rest = text.rsplit("utput", 1)[1]
    else:
        rest = text
    marks = [m.start() for m in re.finditer("```", rest)]
    if len(marks) % 2:
        return ParseFailure("truncated: unclosed code fence")
    if marks:
        source = _drop_tag(rest[marks[-2] + 3 : marks[-1]]).strip()
        where = "code block"
    else:
        spans = [s for s in re.findall(r"`([^`\n]*)`", rest) if s.strip()]
        if spans:
            source, where = spans[-1].strip(), "code span"
        else:
            source = rest.split("\n", 1)[0].strip().strip("*_").strip()
            where = "line"
            if not markers and "utput" not in text:
                return ParseFailure("no `Output:` found")
    if not source:
        return ParseFailure(f"empty output ({where})")
    parsed = _parse_value(source)
    if isinstance(parsed, ParseFailure) and where == "line" and source.endswith("."):
        return _parse_value(source[:-1])
    return parsed


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
    return _parse_value(source.lstrip(" \t"))


def _drop_tag(block: str) -> str:
    """Drop a language tag line (```python\\n...) when more text follows it."""
    first, sep, rest = block.partition("\n")
    if sep and rest.strip() and _TAG_LINE.fullmatch(first):
        return rest
    return block


# --- shared expression handling ---------------------------------------------------------------


def _too_long(text: str) -> ParseFailure:
    return ParseFailure(f"reply too long: {len(text):,} characters (limit {MAX_REPLY_CHARS:,})")


def _parse_expr(source: str) -> ast.Expression | ParseFailure:
    if len(source) > MAX_EXPR_CHARS:
        return ParseFailure(f"expression too large (over {MAX_EXPR_CHARS:,} characters)")
    try:
        return ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        msg = exc.msg.split(" (")[0]
        if "never closed" in msg or "unterminated" in msg or "unexpected EOF" in msg:
            return ParseFailure(f"truncated: {msg}")
        if "too many nested" in msg:
            return ParseFailure("expression nested too deeply")
        return ParseFailure(f"syntax error: {msg}")
    except (MemoryError, RecursionError):
        return ParseFailure("expression nested too deeply")
    except ValueError as exc:  # null bytes
        return ParseFailure(f"cannot parse: {exc}")


def _parse_value(source: str) -> ParsedValue | ParseFailure:
    tree = _parse_expr(source)
    if isinstance(tree, ParseFailure):
        return tree
    try:
        return ParsedValue(literal_value(tree, max_depth=MAX_NESTING), source)
    except LiteralError as exc:
        refused = _refusal(tree, exc)
        if refused is not None:
            return refused
        return ParsedValue(None, source, pending=True)


def _refusal(node: ast.AST, exc: LiteralError) -> ParseFailure | None:
    """A failure when a non-literal must not even be computed in the sandbox."""
    if "nesting deeper" in exc.message:
        return ParseFailure("expression nested too deeply")
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and (sub.id in _BLOCKED_NAMES or sub.id.startswith("_")):
            return ParseFailure(f"refused: `{sub.id}` is not allowed in a test value")
        if isinstance(sub, ast.Attribute) and sub.attr.startswith("_"):
            return ParseFailure(f"refused: attribute `{sub.attr}` is not allowed in a test value")
    return None


# --- code and critiques -----------------------------------------------------------------------


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
        if sep and first.strip() and _TAG_LINE.fullmatch(first.strip()):  # ```python3
            code = sep + rest
        return code if code.strip() else None
    m = re.search(r"```(.*?)```", text, re.DOTALL)
    if m is not None:
        code = m.group(1)
        first, sep, rest = code.partition("\n")
        if sep and _TAG_LINE.fullmatch(first):
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


# --- pending expressions, run in the sandbox --------------------------------------------------


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
    shown = _shorten(" ".join(pending.split()))
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
        return ParsedCall(_splat(value), {}, parsed.source)
    if not (
        isinstance(value, list)
        and len(value) == 2
        and isinstance(value[0], list)
        and isinstance(value[1], dict)
        and all(isinstance(k, str) for k in value[1])
    ):
        return ParseFailure(f"evaluating `{shown}` did not give an argument list")
    return ParsedCall(tuple(value[0]), dict(value[1]), parsed.source)


def _shorten(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


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


# --- keyword arguments -> positional ----------------------------------------------------------


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
