"""The test input of a reply: a call of the entry point, or values for its parameters.

The rules are documented with :func:`utdebug.agents.parsing.parse_call`; this module implements
the paper style (:func:`read_call`). Nothing is evaluated: names the reply assigns are
substituted in the syntax tree, and non-literal arguments stay pending for the sandbox.
"""

from __future__ import annotations

import ast
import bisect
import copy
import keyword
import re
from collections.abc import Sequence
from dataclasses import dataclass

from utdebug.agents.prompts import OUTPUT_HEADER
from utdebug.agents.reply_syntax import (
    BLOCKED_NAMES,
    HEADER_LINE,
    KNOWN_NAMES,
    MAX_CALLS_TRIED,
    MAX_EXPR_CHARS,
    MAX_NESTING,
    SPAN_AT,
    Block,
    ParsedCall,
    ParseFailure,
    block_at,
    calls_function,
    code_end,
    fenced_blocks,
    in_code,
    is_literal,
    literal_arguments,
    literal_prefix,
    matching_close,
    parse_expr,
    refusal,
    shorten,
)
from utdebug.literals import LiteralError, literal_value


def read_call(
    text: str, entry_point: str, params: Sequence[str] | None = None
) -> ParsedCall | ParseFailure:
    """The test input of a reply, paper style (the rules in :mod:`utdebug.agents.parsing`)."""
    names = tuple(params) if params is not None else None
    cut = text.find(OUTPUT_HEADER)
    failure: ParseFailure | None = None
    for limit in (cut, len(text)) if cut > 0 else (len(text),):
        found, decided = _call_in(text[:limit], entry_point, names)
        if isinstance(found, ParsedCall) or (decided and found is not None):
            return found
        failure = failure or found
    if failure is not None:
        return failure
    if names:
        plural = "s" if len(names) > 1 else ""
        return ParseFailure(
            f"no call to `{entry_point}` and no values for its parameter{plural} "
            f"({', '.join(names)})"
        )
    return ParseFailure(f"no call to `{entry_point}` found")


_ARG_MARKER = re.compile(r"(?i)\barguments?\b[*_ \t]*:")


_OUTPUT_MARKER = re.compile(r"(?i)\boutput\b[*_ \t]*:")


_SECTION = re.compile(r"(?m)^[ \t]*#")


_INPUT_HEAD = re.compile(
    r"(?im)^[ \t]*(?:#{1,6}[ \t]*|(?:(?:[-*+]|\d+[.)])[ \t]+)?\*\*)input[ \t]+arguments?\b[^\n]*$"
)


_SECTION_END = re.compile(
    r"(?im)^[ \t]*(?:#|(?:\d+[.)][ \t]+)?\*\*(?:expected[ \t]+|actual[ \t]+)?(?:output|"
    r"explanation|hypothesis|error[ \t]+pattern|unit[ \t]+test|reasoning|conclusion|rationale)\b"
    r"|(?:expected[ \t]+)?output[ \t]*:?[ \t]*$)"
)


_MAX_REGIONS = 64
"""Marked regions looked at (the last ones): more is a degenerate reply, not a test."""


def _call_in(
    text: str, entry: str, params: tuple[str, ...] | None
) -> tuple[ParsedCall | ParseFailure | None, bool]:
    """The test input in ``text`` and whether it is final: after the last ``Arguments:`` marker
    that has one, else in the last ``Input Arguments`` section that has one, else anywhere."""
    starts = _call_starts(text, entry)
    blocks = fenced_blocks(text)
    binds = _bindings(text, blocks)
    names = params or ()
    names_at = [s[0] for s in starts]

    def within(begin: int, stop: int) -> list[tuple[int, int]]:
        return starts[bisect.bisect_left(names_at, begin) : bisect.bisect_left(names_at, stop)]

    for begin, stop in _marker_regions(text, blocks)[: -_MAX_REGIONS - 1 : -1]:
        calls = within(begin, stop)
        if calls:
            first = _resolve_call(text, calls[0], entry, binds)
            if isinstance(first, ParsedCall) or not _mentions_signature(text, calls[0], names):
                return first, True
            continue  # ``Input Arguments: `f(s)` is called with ...``: no call, read on
        given = _given_values(text, begin, stop, entry, names, binds, prose=True)
        if given is not None:
            return given, True
    failure: ParseFailure | None = None
    regions = [*_input_sections(text, blocks)[: -_MAX_REGIONS - 1 : -1], (0, len(text))]
    for k, (begin, stop) in enumerate(regions):
        calls = within(begin, stop)
        got = _best_call(text, calls, blocks, entry, binds, names)
        if isinstance(got, ParsedCall) or _refused(got):
            return got, True
        failure = failure or got
        whole = k == len(regions) - 1
        given = _given_values(text, begin, stop, entry, names, binds, prose=not whole)
        if given is not None:
            return given, True
    return failure, False


def _call_starts(text: str, name: str) -> list[tuple[int, int]]:
    """(name start, open-paren index) of every call of ``name`` that is not its ``def``."""
    out = []
    for m in re.finditer(r"(?<![\w.])" + re.escape(name) + r"[ \t]*\(", text):
        if re.search(r"\bdef[ \t]+$", text[max(0, m.start() - 12) : m.start()]):
            continue
        out.append((m.start(), m.end() - 1))
    return out


def _marker_regions(text: str, blocks: list[Block]) -> list[tuple[int, int]]:
    """(start, end) after each ``Arguments:`` marker, up to the next markdown header or
    ``Output:`` marker. Markers on header lines (``### Input Arguments:``) are skipped; ``#``
    lines inside code blocks are comments, not headers."""
    bounds = sorted(
        m.start()
        for p in (_SECTION, _OUTPUT_MARKER)
        for m in p.finditer(text)
        if block_at(blocks, m.start()) is None
    )
    out = []
    for marker in _ARG_MARKER.finditer(text):
        line_start = text.rfind("\n", 0, marker.start()) + 1
        if HEADER_LINE.match(text, line_start, marker.start()):
            continue
        b = bisect.bisect_left(bounds, marker.end())
        out.append((marker.end(), bounds[b] if b < len(bounds) else len(text)))
    return out


def _input_sections(text: str, blocks: list[Block]) -> list[tuple[int, int]]:
    """(start, end) of each ``### Input Arguments`` section (or ``**Input Arguments**`` label),
    up to the next header or output / explanation label outside code blocks."""
    ends = [m.start() for m in _SECTION_END.finditer(text) if block_at(blocks, m.start()) is None]
    out = []
    for head in _INPUT_HEAD.finditer(text):
        if block_at(blocks, head.start()) is not None:
            continue
        k = bisect.bisect_right(ends, head.end())
        out.append((head.end(), ends[k] if k < len(ends) else len(text)))
    return out


def _best_call(
    text: str,
    calls: list[tuple[int, int]],
    blocks: list[Block],
    entry: str,
    binds: list[_Binding],
    params: tuple[str, ...],
) -> ParsedCall | ParseFailure | None:
    """The last call in a code block that gives a test input, else the last one in prose; a
    call that does not (an argument the reply never assigns, a call cut off) is passed over
    for an earlier one. A mention of the signature (``f(s)``, ``f(a: int, b: int)`` with the
    parameter names unassigned) is no call at all. ``None`` without calls."""
    fenced = [c for c in calls if in_code(blocks, c[0])]
    order = fenced[::-1] + [c for c in reversed(calls) if not in_code(blocks, c[0])]
    failure: ParseFailure | None = None
    for start in order[:MAX_CALLS_TRIED]:
        got = _resolve_call(text, start, entry, binds)
        if isinstance(got, ParsedCall) or _refused(got):
            return got
        if not _names_parameters(text, start, params):
            failure = failure or got
    return failure


def _names_parameters(text: str, start: tuple[int, int], params: tuple[str, ...]) -> bool:
    """Whether the call at ``start`` only names parameters (``f(a, b)``, ``f(a: int)``)."""
    close = matching_close(text, start[1])
    if isinstance(close, ParseFailure) or not params:
        return False
    parts = [
        part.split(":")[0].split("=")[0].strip() for part in text[start[1] + 1 : close].split(",")
    ]
    return all(part in params for part in parts if part) and any(parts)


def _mentions_signature(text: str, start: tuple[int, int], params: tuple[str, ...]) -> bool:
    """Whether the call at ``start`` is the signature mentioned (``f(s)``: its parameters'
    names, or bare names when the parameters are not known), not a call with values."""
    if params:
        return _names_parameters(text, start, params)
    close = matching_close(text, start[1])
    if isinstance(close, ParseFailure):
        return False
    parts = [p.split(":")[0].strip() for p in text[start[1] + 1 : close].split(",")]
    return any(parts) and all(re.fullmatch(_IDENT, p) for p in parts if p)


def _refused(result: ParsedCall | ParseFailure | None) -> bool:
    return isinstance(result, ParseFailure) and result.reason.startswith("refused")


def _resolve_call(
    text: str, start: tuple[int, int], entry: str, binds: list[_Binding]
) -> ParsedCall | ParseFailure:
    """The call at ``start``; names in its arguments take the values the reply assigns them."""
    name_at, open_at = start
    close = matching_close(text, open_at)
    if isinstance(close, ParseFailure):
        return close
    source = text[name_at : close + 1]
    inner = text[open_at + 1 : close]
    tree = parse_expr(source)
    if isinstance(tree, ParseFailure):
        return tree
    call = tree.body
    if not isinstance(call, ast.Call):  # cannot happen: the scan delimits one call
        return ParseFailure(f"no call to `{entry}` found")
    try:
        return ParsedCall(*literal_arguments(call), source)
    except LiteralError as exc:
        if "nesting deeper" in exc.message:
            return ParseFailure("expression nested too deeply")
    substituted = _substitute(call, binds, name_at, entry)
    if isinstance(substituted, ParseFailure):
        row = _table_row(text, name_at, call)
        if row is not None:
            return row
        return ParseFailure(
            f"{substituted.reason} (the call `{shorten(' '.join(source.split()))}`)"
        )
    new, changed = substituted
    assert isinstance(new, ast.Call)
    refused = refusal(new, LiteralError(""))
    if refused is not None:
        return refused
    if not changed:
        return ParsedCall((), {}, source, pending=inner)
    shown = ast.unparse(new)
    try:
        return ParsedCall(*literal_arguments(new), shown)
    except LiteralError:
        parts = [ast.unparse(a) for a in new.args]
        parts += [
            f"{k.arg}={ast.unparse(k.value)}" if k.arg else f"**{ast.unparse(k.value)}"
            for k in new.keywords
        ]
        return ParsedCall((), {}, shown, pending=", ".join(parts))


_FOR_LOOP = re.compile(
    r"(?m)^[ \t]*for[ \t]+(?P<index>[A-Za-z_]\w*[ \t]*,[ \t]*(?=\())?"
    r"\(?(?P<targets>[A-Za-z_]\w*(?:[ \t]*,[ \t]*[A-Za-z_]\w*)*)\)?[ \t]+"
    r"in[ \t]+(?P<source>[^\n]+?)[ \t]*:[ \t]*(?:#[^\n]*)?$"
)
"""``for s, ch, expected in test_cases:`` (or ``for i, (s, expected) in
enumerate(test_cases):``)."""


def _table_row(text: str, name_at: int, call: ast.Call) -> ParsedCall | None:
    """A call inside a loop over a table of test cases (``test_cases = [("hello", "a",
    "heo"), ...]`` then ``for s, ch, expected in test_cases: f(s, ch)``): the call with the
    first row's values. ``None`` when the call is not such a one."""
    if call.keywords or not call.args or not all(isinstance(a, ast.Name) for a in call.args):
        return None
    names = [a.id for a in call.args if isinstance(a, ast.Name)]
    loops = [m for m in _FOR_LOOP.finditer(text, max(0, name_at - 4000), name_at)]
    if not loops:
        return None
    loop = loops[-1]
    targets = [t.strip() for t in loop["targets"].split(",")]
    if not set(names) <= set(targets):
        return None
    source = loop["source"].strip()
    if loop["index"]:
        counted = re.fullmatch(r"enumerate\((.+)\)", source)
        if counted is None:
            return None
        source = counted.group(1).strip()
    if re.fullmatch(_IDENT, source):
        assign = None
        for m in re.finditer(rf"(?m)^[ \t]*{re.escape(source)}[ \t]*=[ \t]*(?=[\[(])", text):
            if m.start() < loop.start():
                assign = m
        if assign is None:
            return None
        close = matching_close(text, assign.end())
        if isinstance(close, ParseFailure):
            return None
        source = text[assign.end() : close + 1]
    tree = parse_expr(source)
    if isinstance(tree, ParseFailure) or not isinstance(tree.body, ast.List | ast.Tuple):
        return None
    for row in tree.body.elts[:1]:
        values = row.elts if isinstance(row, ast.Tuple | ast.List) else [row]
        if len(values) != len(targets) and len(targets) > 1:
            return None
        by_name = (
            dict(zip(targets, values, strict=False)) if len(targets) > 1 else {targets[0]: row}
        )
        new = ast.Call(func=call.func, args=[by_name[n] for n in names], keywords=[])
        new = ast.fix_missing_locations(new)
        try:
            return ParsedCall(*literal_arguments(new), ast.unparse(new))
        except LiteralError:
            return None
    return None


@dataclass(frozen=True, slots=True)
class _Binding:
    """``name = value`` (or ``name: value``) written in a reply, at ``pos``."""

    pos: int
    name: str
    source: str
    line_start: bool
    """It begins its line (a code line, a list item), rather than sitting inside prose."""
    value_only: bool = False
    """``name: value``: a parameter's value in a list, never substituted into a call."""
    in_body: bool = False
    """An indented line of code (a function's body, a loop's): a local variable there is no
    value given for a parameter, though a call beside it may use it."""


_IDENT = r"[A-Za-z_]\w*"


_LIST_LEAD = r"[ \t]*(?:(?:[-*+]|\d+[.)])[ \t]+)?"


_ASSIGN = re.compile(
    rf"(?:^{_LIST_LEAD}(?:>>>[ \t]*)?(?:\*\*)?`?|`)"
    rf"(?P<names>{_IDENT}(?:[ \t]*,[ \t]*{_IDENT})*)[ \t]*=(?!=)[ \t]*",
    re.M,
)


_PAIR = re.compile(
    rf"(?:^{_LIST_LEAD}|(?<=[ \t,(]))(?:\*\*|`)?(?P<name>{_IDENT})(?:\*\*|`)?[ \t]*"
    r"(?P<sep>[:=])(?!=)(?:\*\*)?[ \t]*",
    re.M,
)


_LINE_LEAD = re.compile(rf"{_LIST_LEAD}(?:>>>[ \t]*)?(?:\*\*)?`?")


_MAX_SUBSTITUTIONS = 8


def _bindings(text: str, blocks: list[Block]) -> list[_Binding]:
    """Every ``name = value`` (code lines, list items, code spans) and ``name: value`` /
    ``name`` = ``value`` (lists of values) of the reply, in order. A value ends where the next
    one starts at the latest (so that a degenerate reply costs linear time)."""
    assigns = list(_ASSIGN.finditer(text))
    pairs = list(_PAIR.finditer(text))
    starts = sorted({m.start() for m in (*assigns, *pairs)})
    found: dict[tuple[int, str], _Binding] = {}

    def stop_after(i: int) -> int:
        k = bisect.bisect_left(starts, i)
        return starts[k] if k < len(starts) else len(text)

    covered = [(m.start("names"), m.end("names")) for m in assigns]

    for m in assigns:
        names = [n.strip() for n in m["names"].split(",")]
        if any(keyword.iskeyword(n) for n in names):
            continue
        at = m.start("names")
        source = _value_source(text, m.end(), comma=False, literal=False, stop=stop_after(m.end()))
        if source is None:
            continue
        line_start = _starts_line(text, at)
        body = in_code(blocks, at) and text[text.rfind("\n", 0, at) + 1] in " \t"
        if len(names) == 1:
            found[(at, names[0])] = _Binding(at, names[0], source, line_start, in_body=body)
            continue
        tree = parse_expr(source)
        if isinstance(tree, ParseFailure) or not isinstance(tree.body, ast.Tuple | ast.List):
            continue
        if len(tree.body.elts) != len(names):
            continue
        for name, elt in zip(names, tree.body.elts, strict=True):
            part = ast.get_source_segment(source.strip(), elt) or ast.unparse(elt)
            found[(at, name)] = _Binding(at, name, part, line_start, in_body=body)
    for m in pairs:
        name, at = m["name"], m.start("name")
        if keyword.iskeyword(name) or (at, name) in found:
            continue
        k = bisect.bisect_right(covered, (at, len(text))) - 1
        if k >= 0 and covered[k][0] <= at < covered[k][1]:
            continue  # ``b`` of ``a, b = 1, 2``
        source = _value_source(text, m.end(), comma=True, literal=True, stop=stop_after(m.end()))
        if source is None:
            continue
        body = in_code(blocks, at) and text[text.rfind("\n", 0, at) + 1] in " \t"
        found[(at, name)] = _Binding(
            at, name, source, _starts_line(text, at), value_only=m["sep"] == ":", in_body=body
        )
    return sorted(found.values(), key=lambda b: b.pos)


def _starts_line(text: str, pos: int) -> bool:
    line_start = text.rfind("\n", 0, pos) + 1
    return _LINE_LEAD.fullmatch(text, line_start, pos) is not None


def _value_source(
    text: str, i: int, *, comma: bool, literal: bool, stop: int | None = None
) -> str | None:
    """The expression written at ``text[i]`` (before ``stop``): a code span's content, or code
    up to the end of its line (or a ``,`` when ``comma``), bracket- and string-aware; trailing
    prose after a literal is cut. ``None`` when nothing there parses (or is no literal, with
    ``literal``)."""
    stop = len(text) if stop is None else stop
    if text.startswith("`", i) and not text.startswith("```", i):
        m = SPAN_AT.match(text, i, stop)
        if m is None:
            return None
        source = m.group(2).strip()
    else:
        source = text[i : code_end(text, i, comma=comma, stop=stop)].strip()
    if not source:
        return None
    for cand in (source, source[:-1] if source.endswith(".") else ""):
        if not cand:
            continue
        tree = parse_expr(cand)
        if isinstance(tree, ParseFailure):
            continue
        if not literal or is_literal(tree):
            return cand
    return literal_prefix(source)


def _lookup(binds: list[_Binding], name: str, pos: int) -> _Binding | None:
    """The binding of ``name`` that a call at ``pos`` sees: the last one before it."""
    for b in reversed(binds[: bisect.bisect_left(binds, pos, key=lambda b: b.pos)]):
        if b.name == name and not b.value_only:
            return b
    return None


def _substitute(
    node: ast.expr,
    binds: list[_Binding],
    pos: int,
    entry: str,
    depth: int = 0,
    budget: list[int] | None = None,
) -> tuple[ast.expr, bool] | ParseFailure:
    """``node`` with every free name the reply assigns replaced by its value (recursively,
    each seen from where it is assigned); names of the sandbox's builtins and modules stay.
    A failure names the first name that has no value. The values substituted in all may add
    up to :data:`MAX_EXPR_CHARS` of source."""
    left: list[int] = [MAX_EXPR_CHARS] if budget is None else budget
    node = copy.deepcopy(node)
    local = {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    for sub in ast.walk(node):
        if isinstance(sub, ast.Lambda):
            local |= {a.arg for a in (*sub.args.posonlyargs, *sub.args.args, *sub.args.kwonlyargs)}
    missing: list[str] = []
    changed = False

    class Replace(ast.NodeTransformer):
        def visit_Name(self, name: ast.Name) -> ast.expr:
            nonlocal changed
            if not isinstance(name.ctx, ast.Load) or name.id in local:
                return name
            bound = _lookup(binds, name.id, pos)
            if bound is not None:
                if depth >= _MAX_SUBSTITUTIONS:
                    missing.append(
                        f"the value of `{name.id}` goes through more than "
                        f"{_MAX_SUBSTITUTIONS} assignments"
                    )
                    return name
                left[0] -= len(bound.source)
                if left[0] < 0:
                    missing.append(
                        f"the values the reply assigns add up to over {MAX_EXPR_CHARS:,} characters"
                    )
                    return name
                tree = parse_expr(bound.source)
                if not isinstance(tree, ParseFailure) and not calls_function(tree, entry):
                    value = _substitute(tree.body, binds, bound.pos, entry, depth + 1, left)
                    if isinstance(value, ParseFailure):
                        missing.append(value.reason)
                        return name
                    changed = True
                    return value[0]
            if name.id in KNOWN_NAMES or name.id in BLOCKED_NAMES or name.id.startswith("_"):
                return name
            missing.append(f"`{name.id}` has no value in the reply")
            return name

    if isinstance(node, ast.Call):  # the call itself: only its arguments
        node.args = [Replace().visit(a) for a in node.args]
        for kw in node.keywords:
            kw.value = Replace().visit(kw.value)
        out: ast.AST = node
    else:
        out = Replace().visit(node)
    if missing:
        return ParseFailure(missing[0])
    assert isinstance(out, ast.expr)
    return ast.fix_missing_locations(out), changed


def _given_values(
    text: str,
    begin: int,
    stop: int,
    entry: str,
    params: tuple[str, ...],
    binds: list[_Binding],
    *,
    prose: bool,
) -> ParsedCall | ParseFailure | None:
    """A call built from values given for the parameters in ``text[begin:stop]``: bindings of
    their names (the last one of each wins; only those that begin a line unless ``prose``),
    else an ``Input:`` value. ``None`` when there are none."""
    if not params:
        return None
    given: dict[str, _Binding] = {}
    at = [b.pos for b in binds]
    for b in binds[bisect.bisect_left(at, begin) : bisect.bisect_left(at, stop)]:
        if b.name in params and not b.in_body and (prose or b.line_start):
            given[b.name] = b
    if given:
        return _call_from_bindings(entry, params, given, binds)
    return _input_value(text, begin, stop, entry, params, prose=prose)


def _call_from_bindings(
    entry: str, params: tuple[str, ...], given: dict[str, _Binding], binds: list[_Binding]
) -> ParsedCall | ParseFailure:
    """The call with the given parameters' values: by position while every parameter before
    has one, by keyword after a gap."""
    parts: list[tuple[str | None, ast.expr]] = []
    gap = False
    for name in params:
        b = given.get(name)
        if b is None:
            gap = True
            continue
        tree = parse_expr(b.source)
        if isinstance(tree, ParseFailure):
            return tree
        value = _substitute(tree.body, binds, b.pos, entry)
        if isinstance(value, ParseFailure):
            return ParseFailure(f"{value.reason} (the value of `{name}`)")
        parts.append((name if gap else None, value[0]))
    call = ast.Call(
        func=ast.Name(id=entry, ctx=ast.Load()),
        args=[v for k, v in parts if k is None],
        keywords=[ast.keyword(arg=k, value=v) for k, v in parts if k is not None],
    )
    call = ast.fix_missing_locations(call)
    source = ast.unparse(call)
    try:
        return ParsedCall(*literal_arguments(call), source)
    except LiteralError as exc:
        refused = refusal(call, exc)
        if refused is not None:
            return refused
    pending = source[len(entry) + 1 : -1]
    return ParsedCall((), {}, source, pending=pending)


_INPUT_LABEL = re.compile(r"(?i)(?<![\w`])(?:\*\*)?input(?:\*\*)?[ \t]*(?:\*\*)?:(?:\*\*)?[ \t]*")


_INPUT_PHRASE = re.compile(
    r"(?i)\b(?:the|an?|given|with)[ \t]+input(?:[ \t]+(?:string|value|list|number|array|"
    r"matrix|text|argument|data))?(?:[ \t]+to[ \t]+the[ \t]+function)?"
    r"(?:[ \t]+(?:is|was|would[ \t]+be|of))?[ \t]*:?[ \t]*(?=`)"
)


def _input_value(
    text: str,
    begin: int,
    stop: int,
    entry: str,
    params: tuple[str, ...],
    *,
    prose: bool,
) -> ParsedCall | None:
    """The last literal given as ``Input: value`` (with ``prose`` also ``the input is `v` ``)
    in ``text[begin:stop]`` that fits the parameters: the argument of a one-parameter
    function, a tuple of all arguments otherwise."""
    marks = [m.end() for m in _INPUT_LABEL.finditer(text, begin, stop)]
    if prose:
        marks += [m.end() for m in _INPUT_PHRASE.finditer(text, begin, stop)]
    marks.sort()
    for k in range(len(marks) - 1, max(-1, len(marks) - 1 - MAX_CALLS_TRIED), -1):
        at = marks[k]
        line_end = text.find("\n", at, marks[k + 1] if k + 1 < len(marks) else stop)
        line_end = (marks[k + 1] if k + 1 < len(marks) else stop) if line_end < 0 else line_end
        if text.startswith("`", at):
            m = re.match(r"(`+)(.+?)\1", text[at:line_end])
            source = m.group(2).strip().strip("`").strip() if m else ""
        else:
            source = text[at:line_end].strip().strip("*").strip()
        named = re.match(rf"({_IDENT})[ \t]*=(?!=)[ \t]*", source)
        if named is not None and len(params) == 1 and named.group(1) == params[0]:
            source = source[named.end() :]  # ``Input: `M = [[1, 2], [3, 4]]` ``
        source = _value_source(source, 0, comma=False, literal=True) if source else None
        if source is None:
            continue
        value = literal_value(ast.parse(source, mode="eval"), max_depth=MAX_NESTING)
        if len(params) == 1:
            return ParsedCall((value,), {}, f"{entry}({source})")
        tree = ast.parse(source, mode="eval").body
        if isinstance(value, tuple) and len(value) == len(params):
            inner = (
                source[1:-1] if isinstance(tree, ast.Tuple) and source.startswith("(") else source
            )
            return ParsedCall(value, {}, f"{entry}({inner})")
    return None
