"""The code of a debugger reply: which block of a reply a person would take as the fix.

Fenced blocks are read as Markdown does (a fence opens at the start of a line, ```` ``` ```` or
``~~~`` with an optional info string, and is closed by a bare fence of the same kind; inline
```` ```f(1)``` ```` is not a block; an indented fence's indentation is removed from its lines).
Candidates, best first (:func:`code_candidates`):

1. blocks that parse and define the entry point (a top-level ``def``, or a method of a
   top-level class), the *last* first: replies quote the buggy code before the fix;
2. blocks that define it once cut at their last complete top-level statement (a reply cut at
   the token limit, an unclosed fence running into prose), last first;
3. blocks that parse (whole or cut) and define something else, first first;
4. code outside fences (a line starting with ``def``, ``class``, ``import``, ``from .. import``
   or ``@``, up to its last complete top-level statement) that parses and defines something.

:func:`find_code` returns the best candidate. Refusals say why: ``the reply is empty``, ``no code
in the reply``, ``the code does not parse: line 3: ...``, ``no function defined in the reply's
code``. Pure :mod:`ast` and :mod:`symtable`: nothing here runs the code.
"""

from __future__ import annotations

import ast
import re
import symtable
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from utdebug.agents.parsing import ParseFailure

__all__ = ["Candidate", "code_candidates", "defined", "find_code", "parse_code"]

MAX_REPLY_CHARS = 200_000
"""Longer replies are refused (as :func:`utdebug.agents.parsing.extract_code` does)."""
MAX_CUT_TRIES = 100
"""How many cut points one block is tried at when it does not parse whole."""
MAX_UNFENCED_STARTS = 50
"""How many code-looking lines outside fences are tried as the start of unfenced code."""

_OPEN_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_CODE_START = re.compile(
    r"^(?:(?:async[ \t]+)?def[ \t]+\w|class[ \t]+\w|import[ \t]+\w"
    r"|from[ \t]+[\w.]+[ \t]+import\b|@\w)"
)
_DEF = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A block of a reply that parses and defines something."""

    code: str
    note: str | None
    """Lines of the block that were left out because they do not parse (a cut reply)."""


@dataclass(frozen=True, slots=True)
class _Block:
    lines: list[str]
    closed: bool


def find_code(reply: str, entry_point: str | None = None) -> str | ParseFailure:
    """The code of a debugger reply (see the module docstring), or why there is none."""
    found = code_candidates(reply, entry_point)
    if isinstance(found, ParseFailure):
        return found
    return found[0].code


def code_candidates(reply: str, entry_point: str | None) -> list[Candidate] | ParseFailure:
    if not reply.strip():
        return ParseFailure("the reply is empty")
    if len(reply) > MAX_REPLY_CHARS:
        return ParseFailure(f"the reply is too long ({len(reply)} characters)")
    text = reply.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    blocks, outside = _fenced(lines)
    whole: list[Candidate] = []
    cut: list[Candidate] = []
    other: list[Candidate] = []
    errors: list[tuple[bool, str]] = []
    for block in blocks:
        code, tree, note, error = _code_of(block)
        if tree is None:
            if error is not None:
                looks = any(_CODE_START.match(line.lstrip()) for line in block.lines)
                errors.append((looks, error))
            continue
        if not defined(tree):
            continue
        item = Candidate(code, note)
        if entry_point is not None and _defines(tree, entry_point):
            (whole if note is None else cut).append(item)
        else:
            other.append(item)
    unfenced, unfenced_error = _unfenced(outside)
    if unfenced_error is not None:
        errors.append((True, unfenced_error))
    if entry_point is not None:
        first = [u for u in unfenced if _defines(_parse_ok(u.code), entry_point)]
        unfenced = first + [u for u in unfenced if u not in first]
    found = [*reversed(whole), *reversed(cut), *other, *unfenced]
    if found:
        return found
    if errors:
        error = next((e for looks, e in errors if looks), errors[0][1])
        return ParseFailure(f"the code does not parse: {error}")
    if blocks:
        return ParseFailure("no function defined in the reply's code")
    return ParseFailure("no code in the reply")


def _fenced(lines: list[str]) -> tuple[list[_Block], list[list[str]]]:
    """The fenced blocks (their lines, fence indentation removed) and the runs of lines
    outside them."""
    blocks: list[_Block] = []
    outside: list[list[str]] = [[]]
    i, n = 0, len(lines)
    while i < n:
        m = _OPEN_FENCE.match(lines[i])
        if m is None or (m["fence"][0] == "`" and "`" in m["info"]):
            outside[-1].append(lines[i])
            i += 1
            continue
        fence, indent = m["fence"], m["indent"]
        close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        body: list[str] = []
        j = i + 1
        while j < n and not close.match(lines[j]):
            line = lines[j]
            body.append(line[len(indent) :] if indent and line.startswith(indent) else line)
            j += 1
        blocks.append(_Block(body, j < n))
        outside.append([])
        i = j + 1
    return blocks, [run for run in outside if run]


def _code_of(block: _Block) -> tuple[str, ast.Module | None, str | None, str | None]:
    """(code, its tree or None, a note on dropped lines, the parse error)."""
    lines = _trim(block.lines)
    if not lines:
        return "", None, None, None
    code = "\n".join(lines) + "\n"
    tree, error = parse_code(code)
    if tree is not None:  # a cut reply may end after a complete statement
        return code, tree, None, None
    dedented = textwrap.dedent(code)
    if dedented != code:
        tree2, _ = parse_code(dedented)
        if tree2 is not None:
            return dedented, tree2, None, None
    salvaged = _salvage(lines, error)
    if salvaged is not None:
        kept, tree3 = salvaged
        cause = "the reply ends inside the code block" if not block.closed else "they do not parse"
        first = next(i for i in range(kept, len(lines)) if lines[i].strip()) + 1
        note = f"lines {first}-{len(lines)} of the code ({cause}: {error})"
        return "\n".join(lines[:kept]).rstrip() + "\n", tree3, note, error
    return code, None, None, error


def _salvage(lines: list[str], error: str | None) -> tuple[int, ast.Module] | None:
    """The longest prefix of whole top-level statements that parses and defines something:
    ``(lines kept, tree)``. Cut points are lines that start at column 0, at or before the line
    of the syntax error."""
    limit = len(lines)
    m = re.match(r"line (\d+)", error or "")
    if m is not None:
        limit = min(limit, int(m.group(1)))
    cuts = [k for k in range(1, limit) if lines[k][:1] not in ("", " ", "\t")]
    tried: set[int] = set()
    for k in sorted(cuts, reverse=True)[:MAX_CUT_TRIES]:
        while k > 1 and (not lines[k - 1].strip() or lines[k - 1].startswith("#")):
            k -= 1  # blank and comment lines (Markdown headers) before the cut are prose
        if k in tried:
            continue
        tried.add(k)
        code = "\n".join(lines[:k]).rstrip() + "\n"
        tree, _ = parse_code(code)
        if tree is not None and defined(tree):
            return k, tree
    return None


def _unfenced(runs: list[list[str]]) -> tuple[list[Candidate], str | None]:
    """Code outside the fences: from a code-looking line at column 0, the longest run of
    whole statements that parses and defines something."""
    found: list[Candidate] = []
    first_error: str | None = None
    tries = 0
    for run in runs:
        k = 0
        while k < len(run) and tries < MAX_UNFENCED_STARTS:
            if not _CODE_START.match(run[k]):
                k += 1
                continue
            tries += 1
            rest = _trim(run[k:])
            code = "\n".join(rest) + "\n"
            tree, error = parse_code(code)
            kept = len(rest)
            if tree is None:
                salvaged = _salvage(rest, error)
                if salvaged is None:
                    first_error = first_error or error
                    k += 1
                    continue
                kept, tree = salvaged
                code = "\n".join(rest[:kept]).rstrip() + "\n"
            if defined(tree):
                found.append(Candidate(code, None))
                k += kept
            else:
                k += 1
    return found, first_error


def _trim(lines: Sequence[str]) -> list[str]:
    """Without leading and trailing blank lines."""
    out = list(lines)
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    return out


def parse_code(code: str) -> tuple[ast.Module | None, str | None]:
    """(tree, None) or (None, ``line N: message``). Compile-time scope errors count."""
    try:
        tree = ast.parse(code)
        symtable.symtable(code, "<edit>", "exec")
    except SyntaxError as exc:
        where = f"line {exc.lineno}: " if exc.lineno is not None else ""
        return None, f"{where}{exc.msg}"
    except (ValueError, RecursionError, MemoryError) as exc:
        return None, str(exc) or type(exc).__name__
    return tree, None


def _parse_ok(code: str) -> ast.Module:
    tree, _ = parse_code(code)
    assert tree is not None
    return tree


def defined(tree: ast.Module) -> list[str]:
    return [n.name for n in tree.body if isinstance(n, _DEFS)]


def _defines(tree: ast.Module, name: str) -> bool:
    for node in tree.body:
        if isinstance(node, _DEF) and node.name == name:
            return True
        if isinstance(node, ast.ClassDef) and any(
            isinstance(m, _DEF) and m.name == name for m in node.body
        ):
            return True
    return False
