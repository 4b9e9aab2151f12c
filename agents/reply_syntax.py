"""The building blocks of the reply parsers: result types, limits, fenced blocks, expressions.

:mod:`utdebug.agents.parsing` is the parsers' public face; :mod:`utdebug.agents.reply_inputs`
finds a test's input in a reply, :mod:`utdebug.agents.reply_answers` its expected output. What
they share lives here: the results (:class:`ParsedCall`, :class:`ParsedValue`,
:class:`ParseFailure`), the size limits, fenced code blocks as a chat window shows them, the
string-aware bracket scan, and reading an expression without evaluating it (literals through
:mod:`utdebug.literals`; anything else is *pending*, for the sandbox, unless it names something
a test value never needs).
"""

from __future__ import annotations

import ast
import bisect
import builtins
import collections
import functools
import re
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from utdebug.literals import LiteralError, literal_value

MAX_REPLY_CHARS = 200_000
"""Longer replies are refused (a ParseFailure) before any scanning."""


MAX_EXPR_CHARS = 50_000
"""Longest argument list or output expression accepted."""


MAX_NESTING = 100
"""Deepest bracket nesting accepted (the literal evaluator's own limit)."""


BLOCKED_NAMES = frozenset(
    {
        "eval", "exec", "compile", "open", "input", "breakpoint", "globals", "locals", "vars",
        "getattr", "setattr", "delattr", "exit", "quit", "help", "memoryview", "os", "sys",
        "subprocess", "shutil", "socket", "importlib", "builtins", "pathlib", "Path", "io",
        "signal", "ctypes", "pickle", "marshal", "threading", "multiprocessing", "resource",
    }
)  # fmt: skip


CLOSERS = {"(": ")", "[": "]", "{": "}"}


TAG_LINE = re.compile(r"[A-Za-z][\w+#.-]*[ \t]*")


HEADER_LINE = re.compile(r"[ \t]*#")


KNOWN_NAMES = frozenset(
    {
        *dir(builtins), *collections.__all__, *functools.__all__, *typing.__all__,
        "math", "re", "copy", "datetime", "itertools", "collections", "heapq", "functools",
        "hashlib", "numpy", "np", "string", "typing",
    }
)  # fmt: skip
"""Names a pending expression may use without the reply assigning them: builtins and the
modules and names the sandbox's prelude imports."""


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


@dataclass(frozen=True, slots=True)
class Block:
    """A fenced code block: ``start`` is its opening fence, ``body`` the first character after
    it, ``end`` its closing fence (the end of the text when unclosed)."""

    start: int
    body: int
    end: int
    closed: bool


FENCE = re.compile(r"`{3,}")


def line_spans(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of every line, the newline left out."""
    start = 0
    while True:
        end = text.find("\n", start)
        if end < 0:
            yield start, len(text)
            return
        yield start, end
        start = end + 1


def bare_fence(line: str) -> bool:
    s = line.strip()
    return len(s) >= 3 and not s.strip("`")


def fenced_blocks(text: str) -> list[Block]:
    """The fenced blocks of a reply, read as a chat window shows them.

    A fence that starts a line opens a block, which the next line holding only a fence closes
    (a tagged fence line inside a block is content). Two fences on one line enclose a one-line
    block (```` ```f(1)``` ````). A fence after other text opens a block when text follows it on
    its line (```` Output: ```[1, 2 ````, maybe never closed); at the end of such a line only
    when the next fence line closes a block, so a stray fence (```` Expected Output: ``` ````)
    does not swallow the blocks after it.
    """
    out: list[Block] = []
    opened: tuple[int, int] | None = None
    lines = list(line_spans(text))
    closes_next = [False] * (len(lines) + 1)  # the next fence line after line k is bare
    for k in range(len(lines) - 1, 0, -1):
        line = text[lines[k][0] : lines[k][1]]
        closes_next[k - 1] = bare_fence(line) if line.lstrip().startswith("```") else closes_next[k]
    for k, (ls, le) in enumerate(lines):
        if opened is not None:
            if bare_fence(text[ls:le]):
                out.append(Block(opened[0], opened[1], text.index("`", ls), True))
                opened = None
            continue
        line_at = le - len(text[ls:le].lstrip(" \t"))
        i = ls
        while (m := FENCE.search(text, i, le)) is not None:
            close = FENCE.search(text, m.end(), le)
            if close is not None:
                out.append(Block(m.start(), m.end(), close.start(), True))
                i = close.end()
                continue
            if m.start() == line_at or text[m.end() : le].strip() or closes_next[k]:
                opened = (m.start(), m.end())
            break
    if opened is not None:
        out.append(Block(opened[0], opened[1], len(text), False))
    return out


def block_at(blocks: list[Block], pos: int) -> Block | None:
    """The block whose fences or content hold ``pos``."""
    k = bisect.bisect_right(blocks, pos, key=lambda b: b.start) - 1
    if k < 0:
        return None
    b = blocks[k]
    return b if pos < (b.end + 3 if b.closed else b.end) else None


def block_starting(blocks: list[Block], pos: int) -> Block | None:
    b = block_at(blocks, pos)
    return b if b is not None and b.start == pos else None


def in_code(blocks: list[Block], pos: int) -> bool:
    b = block_at(blocks, pos)
    return b is not None and b.body <= pos < b.end


MAX_CALLS_TRIED = 64


def literal_arguments(call: ast.Call) -> tuple[tuple[Any, ...], dict[str, Any]]:
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            raise LiteralError("starred argument")
        args.append(literal_value(arg, max_depth=MAX_NESTING))
    for kw in call.keywords:
        if kw.arg is None:
            raise LiteralError("keyword unpacking")
        kwargs[kw.arg] = literal_value(kw.value, max_depth=MAX_NESTING)
    return tuple(args), kwargs


SPAN_AT = re.compile(r"(`+)([^`\n]+?)\1(?!`)")


def code_end(text: str, i: int, *, comma: bool, stop: int | None = None) -> int:
    """Where the code starting at ``text[i]`` ends (``stop`` at the latest): a newline,
    backtick, ``;`` or comment outside brackets (and a ``,`` when ``comma``), or an unmatched
    closing bracket."""
    depth = 0
    n = min(len(text) if stop is None else stop, i + MAX_EXPR_CHARS)
    j = i
    while j < n:
        c = text[j]
        if c in "'\"":
            end = string_end(text, j, n)
            if end < 0:
                return j
            j = end
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return j
            depth -= 1
        elif c == "`" or (depth == 0 and (c in "\n;#" or (comma and c == ","))):
            return j
        j += 1
    return j


PROSE_AFTER = re.compile(
    r"(?i)[ \t]*(?:[(,;:\u2014-]|\.(?:\s|$)|(?:because|since|as|which|that|for|in|when|"
    r"where|so|meaning|indicating|representing|valid|invalid)\b)"
)


def literal_prefix(source: str) -> str | None:
    """The literal at the start of ``source`` when prose follows it (``'abc' (valid input)``,
    ``3 because ...``); ``None`` otherwise."""
    depth = 0
    j, n = 0, min(len(source), 2000)
    cuts = 0
    while j < n and cuts < 40:
        c = source[j]
        if c in "'\"":
            end = string_end(source, j)
            if end < 0:
                return None
            j = end
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and c in " \t,.;(":
            cuts += 1
            head = source[:j].rstrip()
            if head and PROSE_AFTER.match(source, j):
                tree = parse_expr(head)
                if not isinstance(tree, ParseFailure) and is_literal(tree):
                    return head
        j += 1
    return None


def is_literal(tree: ast.Expression) -> bool:
    try:
        literal_value(tree, max_depth=MAX_NESTING)
    except LiteralError:
        return False
    return True


def calls_function(tree: ast.AST, name: str) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
        for n in ast.walk(tree)
    )


def matching_close(text: str, open_at: int) -> int | ParseFailure:
    """Index of the bracket closing ``text[open_at]``; skips strings and comments."""
    stack: list[str] = []
    i, n = open_at, len(text)
    while i < n:
        if i - open_at > MAX_EXPR_CHARS:
            return ParseFailure(f"expression too large (over {MAX_EXPR_CHARS:,} characters)")
        c = text[i]
        if c in "'\"":
            end = string_end(text, i)
            if end < 0:
                return ParseFailure("truncated: unterminated string")
            i = end
            continue
        if c == "#":
            nl = text.find("\n", i)
            i = n if nl < 0 else nl
            continue
        if c in CLOSERS:
            stack.append(CLOSERS[c])
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


def string_end(text: str, i: int, stop: int | None = None) -> int:
    """Index just past the string literal starting at ``text[i]``; -1 when unterminated
    (before ``stop``)."""
    quote = text[i] * 3 if text.startswith(text[i] * 3, i) else text[i]
    j, n = i + len(quote), len(text) if stop is None else stop
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


def splat_args(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, tuple) else (value,)


def drop_tag(block: str) -> str:
    """Drop a language tag line (```python\\n...) when more text follows it."""
    first, sep, rest = block.partition("\n")
    if sep and rest.strip() and TAG_LINE.fullmatch(first):
        return rest
    return block


def too_long(text: str) -> ParseFailure:
    return ParseFailure(f"reply too long: {len(text):,} characters (limit {MAX_REPLY_CHARS:,})")


def parse_expr(source: str) -> ast.Expression | ParseFailure:
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


def parse_value(source: str) -> ParsedValue | ParseFailure:
    tree = parse_expr(source)
    if isinstance(tree, ParseFailure):
        return tree
    try:
        return ParsedValue(literal_value(tree, max_depth=MAX_NESTING), source)
    except LiteralError as exc:
        refused = refusal(tree, exc)
        if refused is not None:
            return refused
        return ParsedValue(None, source, pending=True)


def refusal(node: ast.AST, exc: LiteralError) -> ParseFailure | None:
    """A failure when a non-literal must not even be computed in the sandbox."""
    if "nesting deeper" in exc.message:
        return ParseFailure("expression nested too deeply")
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and (sub.id in BLOCKED_NAMES or sub.id.startswith("_")):
            return ParseFailure(f"refused: `{sub.id}` is not allowed in a test value")
        if isinstance(sub, ast.Attribute) and sub.attr.startswith("_"):
            return ParseFailure(f"refused: attribute `{sub.attr}` is not allowed in a test value")
    return None


def shorten(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
