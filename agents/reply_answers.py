"""The expected output a reply states: a marked answer, a value block, a call form or prose.

The rules are documented with :func:`utdebug.agents.parsing.parse_output`; this module
implements the paper style (:func:`read_answer`). Nothing is evaluated: literals are read, other
expressions stay pending for the sandbox.
"""

from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass
from typing import Any

from utdebug.agents.prompts import OUTPUT_HEADER
from utdebug.agents.reply_syntax import (
    HEADER_LINE,
    MAX_CALLS_TRIED,
    MAX_NESTING,
    SPAN_AT,
    Block,
    ParsedValue,
    ParseFailure,
    block_at,
    block_starting,
    calls_function,
    code_end,
    drop_tag,
    fenced_blocks,
    is_literal,
    line_spans,
    literal_arguments,
    literal_prefix,
    parse_expr,
    parse_value,
    shorten,
    string_end,
)
from utdebug.literals import LiteralError, literal_value


def read_answer(text: str, call: str | None = None) -> ParsedValue | ParseFailure:
    """The expected output a reply states, paper style (the rules in
    :mod:`utdebug.agents.parsing`); ``call`` is the test's call source."""
    target = _target_key(call)
    notes: list[str] = []
    for begin, stop in _answer_regions(text):
        cands = _answer_candidates(text, begin, stop, target, notes)
        if cands:
            return _pick(cands)
    for prefix in (_PLACEHOLDER_REASON, "the reply's", "the answer is prose"):
        for note in notes:
            if note.startswith(prefix):
                return ParseFailure(note)
    return ParseFailure(
        "no answer found: no `Output:` marker, no value in a code block or in the prose"
    )


_PLACEHOLDER_REASON = "the answer is the prompt's placeholder"


_PLACEHOLDER = re.compile(r"<[^<>\n]{0,80}>|\.\.\.|\u2026")


_ANSWER_MARKER = re.compile(
    r"(?i)(?<![\w-])(?:final[ \t]+answer|final[ \t]+output|answer|output)\b[*_ \t]*:"
)


_NOT_THE_ANSWER = re.compile(
    r"(?i)\b(?:actual|current|buggy|incorrect|wrong|original|code's)[ \t*_]*$"
)


_NEW_TEST = re.compile(
    r"(?im)^[ \t]*#{1,6}[ \t]*(?:hypothesis|unit[ \t]+tests?|input[ \t]+arguments?|"
    r"error[ \t]+pattern)\b"
)


_COMMENT_ANSWER = re.compile(
    r"(?i)#[ \t]*(?:(?:output|result|returns?|prints?|gives|expected(?:[ \t]+output)?|answer)"
    r"\b[ \t]*(?:(?:should|would|will)[ \t]+be\b|is\b)?[ \t]*[:=]?|->|=>)[ \t]*(?P<value>.*)$"
)


_PROSE_VERB = re.compile(
    r"(?i)\b(?:return(?:s|ed)?|outputs?|gives?|yields?|produces?|prints?|evaluates?[ \t]+to|"
    r"results?[ \t]+in)\b(?![ \t]+(?:value|type)\b)[ \t]*:?[ \t]*"
)


_PROSE_IS = re.compile(
    r"(?i)\b(?:output|result|answer|return[ \t]+value)(?:[ \t]+(?:of|for)[ \t]+(?:`[^`\n]{1,200}`|"
    r"[A-Za-z_]\w*\([^()\n]{0,200}\)))?[ \t]+(?:is|would[ \t]+be|will[ \t]+be|"
    r"should[ \t]+be)\b[ \t]*:?[ \t]*"
)


_PROSE_NEGATIVE = re.compile(
    r"(?i)(?:\b(?:if|when|whenever|unless|not|never|instead|incorrect(?:ly)?|wrong(?:ly)?|"
    r"buggy|current(?:ly)?|actual(?:ly)?|original)\b|n't\b|\b(?:given|provided|existing)[ \t]+"
    r"(?:code|function|implementation|solution)\b)"
)


_CONDITION_AFTER = re.compile(
    r"(?i)[ \t]*,?[ \t]*(?:if|when|whenever|unless|otherwise|only[ \t]+if|"
    r"for[ \t]+(?:any|all|every|each))\b"
)


_BLANK_LINES = re.compile(r"(?:[ \t]*\n){1,4}[ \t]*")


_MAX_PROSE_VALUE = 500
"""Longest value read from prose (a longer one is written in a code block)."""


_CLAUSE_START = re.compile(
    r"(?i)[.!?;](?=\s)|\n|\b(?:but|so|therefore|thus|hence|whereas|while|however)\b"
)


_LITERAL_START = re.compile(r"""[-+0-9'"\[({]|(?:True|False|None)\b|[rbuRBU]{1,2}['"]""")


_LIST_LABEL = re.compile(r"[ \t]*(?:[-*+]|\d+[.)])[ \t]+\*\*[^*\n]*")
"""What comes before the marker of a list item's bold label (``4. **Final Output**:``)."""


_BOXED = re.compile(r"\\boxed[ \t]*\{")


_LATEX_SPAN = re.compile(r"\\\((?P<a>.+?)\\\)|\\\[(?P<b>.+?)\\\]|\$(?P<c>[^$\n]+?)\$", re.DOTALL)
r"""Inline or display LaTeX: ``\( x = 3 \)``, ``\[ 3 \]``, ``$3$``."""


def _braced(text: str, open_at: int) -> str | None:
    """The text inside the braces opening at ``text[open_at]`` (``None``: not closed)."""
    depth = 0
    for j in range(open_at, min(len(text), open_at + _MAX_PROSE_VALUE)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[open_at + 1 : j]
    return None


def _unlatex(source: str) -> str:
    r"""A value written in LaTeX, as Python would write it: ``\text{True}`` -> ``True``,
    ``3 - 1 = 2`` -> ``2`` (what follows the last ``=``), ``\{1, 2\}`` -> ``{1, 2}``."""
    text = re.sub(r"\\(?:text|mathrm|texttt|mathtt)[ \t]*\{([^{}]*)\}", r"\1", source)
    text = text.replace("\\{", "{").replace("\\}", "}").replace("\\_", "_")
    text = re.sub(r"\\[,;! ]", " ", text)
    if "=" in text and not re.search(r"[=!<>]=|['\"]", text):
        text = text.rsplit("=", 1)[1]
    return text.strip()


@dataclass(frozen=True, slots=True)
class _Answer:
    pos: int
    marked: bool
    """Written after an ``Output:`` / ``Final Answer:`` marker."""
    result: ParsedValue | ParseFailure
    label: bool = False
    """The marker labels a list item (``4. **Output**: ...``, ``- **Output**: ...``)."""


def _pick(cands: list[_Answer]) -> ParsedValue | ParseFailure:
    values = [c.pos for c in cands if isinstance(c.result, ParsedValue)]
    if values:
        # a step label (``4. **Output**: the function returns ...``) is no answer: it does
        # not win over a value the reply states; nor does prose after a marker that a value
        # follows
        cands = [
            c
            for c in cands
            if not (c.marked and _is_prose(c.result) and (c.label or max(values) > c.pos))
        ]
    marked = [c for c in cands if c.marked]
    return max(marked or cands, key=lambda c: c.pos).result


def _is_prose(result: ParsedValue | ParseFailure) -> bool:
    return isinstance(result, ParseFailure) and result.reason.startswith("the answer is prose")


def _answer_regions(text: str) -> list[tuple[int, int]]:
    """Where the answer can be. A reply that begins with an answer and goes on to write a new
    test (``## Hypothesis`` ...: a continued ``### Output`` that kept generating) is read up to
    that test. Otherwise, after its first ``### Output`` header (a UT reply's own output) up to
    the next test, else the whole reply."""
    regions = []
    head = _NEW_TEST.search(text)
    if head is not None and text[: head.start()].strip():
        regions.append((0, head.start()))
    at = text.find(OUTPUT_HEADER)
    if at >= 0:
        begin = text.find("\n", at)
        begin = len(text) if begin < 0 else begin + 1
        nxt = _NEW_TEST.search(text, begin)
        regions.append((begin, nxt.start() if nxt else len(text)))
    else:
        regions.append((0, len(text)))
    return regions


def _answer_candidates(
    text: str, begin: int, stop: int, target: tuple[str, str] | None, notes: list[str]
) -> list[_Answer]:
    region = text[begin:stop]
    blocks = fenced_blocks(region)
    forms = _call_forms(region, blocks, target, notes)
    out: list[_Answer] = []
    markers = list(_ANSWER_MARKER.finditer(region))
    for k, m in enumerate(markers):
        line_start = region.rfind("\n", max(0, m.start() - 200), m.start()) + 1
        before = region[max(line_start, m.start() - 200) : m.start()]
        inside = block_at(blocks, m.start())
        if "#" in before and (inside is not None or not HEADER_LINE.match(before)):
            continue  # a code comment: read with the call it is about
        if inside is not None and before.strip().strip("`"):
            continue  # inside code (``print("Output:", x)``), not a line of its own
        if _NOT_THE_ANSWER.search(before):
            continue
        reach = markers[k + 1].start() if k + 1 < len(markers) else len(region)
        got = _marker_value(region, m.end(), reach, blocks, inside, forms)
        if got is not None:
            label = _LIST_LABEL.fullmatch(region, line_start, m.start()) is not None
            out.append(_Answer(m.start(), True, got, label))
    for pos, result in forms:
        out.append(_Answer(pos, False, result))
    for m in _BOXED.finditer(region):  # ``\boxed{42}``: a final answer, marked as such
        inner = _braced(region, m.end() - 1)
        if inner is not None and block_at(blocks, m.start()) is None:
            out.append(_Answer(m.start(), True, _answer_value(_unlatex(inner))))
    for pos, result in _prose_answers(region, blocks, notes):
        out.append(_Answer(pos, False, result))
    lead = len(region) - len(region.lstrip())
    for k, b in enumerate(blocks):
        first = b.start <= lead
        last = k == len(blocks) - 1
        if not first and not (last and not re.search(r"[A-Za-z]", region[b.end + 3 :])):
            continue  # a block in the reasoning (the input restated, code)
        got = _block_value(region, b, forms)
        if got is not None:
            out.append(_Answer(b.start, False, got))
    whole = region.strip().strip("*").strip()
    if whole and not blocks and "\n" not in whole:
        got = _answer_value(whole)
        if isinstance(got, ParsedValue):
            out.append(_Answer(0, False, got))
    kept = []
    for c in out:
        if isinstance(c.result, ParseFailure) and c.result.reason.startswith(_PLACEHOLDER_REASON):
            notes.append(c.result.reason)
            continue
        kept.append(c)
    return kept


def _marker_value(
    text: str,
    i: int,
    stop: int,
    blocks: list[Block],
    inside: Block | None,
    forms: list[tuple[int, ParsedValue | ParseFailure]],
) -> ParsedValue | ParseFailure | None:
    """The answer written after an ``Output:`` marker ending at ``text[i]`` (before the next
    marker at ``stop``)."""
    line_end = text.find("\n", i, stop)
    line_end = stop if line_end < 0 else line_end
    if inside is not None:  # ```python\nOutput: True\n```
        return _line_answer(text, i, min(line_end, inside.end), blocks)
    while i < line_end and text[i] in "*_ \t":
        i += 1
    block = block_starting(blocks, i)
    if block is not None:
        return _block_value(text, block, forms, required=True)
    if text.startswith("`", i):
        return _line_answer(text, i, line_end, blocks)
    if text[i:line_end].strip():
        return _line_answer(text, i, line_end, blocks)
    m = _BLANK_LINES.match(text, line_end)
    if m is None or m.end() >= stop:
        return None
    nxt = m.end()
    block = block_starting(blocks, nxt)
    if block is not None:
        return _block_value(text, block, forms, required=True)
    nxt_end = text.find("\n", nxt, stop)
    nxt_end = stop if nxt_end < 0 else nxt_end
    line = text[nxt:nxt_end]
    if not line.strip() or HEADER_LINE.match(line) or _ANSWER_MARKER.search(line):
        return None
    return _line_answer(text, nxt, nxt_end, blocks)


def _line_answer(text: str, i: int, end: int, blocks: list[Block]) -> ParsedValue | ParseFailure:
    """The value on ``text[i:end]``: a literal (or expression), else one stated in prose."""
    source = text[i:end].strip()
    span = re.fullmatch(r"(`+)(.+?)\1[ \t.]*", source)
    if span is not None:
        source = span.group(2)
    elif re.search(r"\d\.$", source):
        source = source[:-1]  # ``Output: 3.``: the sentence's period, not the float 3.0
    got = _answer_value(source)
    if isinstance(got, ParsedValue) or not got.reason.startswith("the answer is prose"):
        return got
    stated = _prose_answers(text[i : min(end, i + _MAX_PROSE_VALUE)], [], [])
    return stated[-1][1] if stated else got


def _block_value(
    text: str,
    block: Block,
    forms: list[tuple[int, ParsedValue | ParseFailure]],
    *,
    required: bool = False,
) -> ParsedValue | ParseFailure | None:
    """The value a code block holds. A block of code answers through the ``# Output:`` /
    ``==`` forms inside it (when ``required``, it is a failure otherwise; else no answer)."""
    if not block.closed:
        return ParseFailure("truncated: unclosed code fence")
    source = drop_tag(text[block.body : block.end]).strip().strip("`").strip()
    if not source:
        return ParseFailure("empty output (code block)") if required else None
    if _ANSWER_MARKER.match(source):
        return None  # ```Output: True```: read as a marker
    got = _answer_value(source)
    if isinstance(got, ParsedValue) and (required or not got.pending):
        return got
    if isinstance(got, ParsedValue):  # an expression nobody marked as the answer: code
        got = ParseFailure("the answer block holds code, not a value")
    elif got.reason.startswith(_PLACEHOLDER_REASON):
        return got
    k = bisect.bisect_left(forms, block.end, key=lambda f: f[0])
    if k > 0 and forms[k - 1][0] >= block.body:
        return forms[k - 1][1]
    if "\n" not in source and not re.search(r"[=:(]\s*$|\b(?:def|return|print|assert)\b", source):
        return got
    lines = [ln.strip() for ln in source.splitlines() if ln.strip()]
    if len(lines) > 1 and all(isinstance(_answer_value(ln), ParsedValue) for ln in lines):
        return ParseFailure(f"the answer block holds {len(lines)} values, not one")
    return ParseFailure("the answer block holds code, not a value") if required else None


def _answer_value(source: str, *, printed: bool = False) -> ParsedValue | ParseFailure:
    """The answer written as ``source``. An unquoted word is refused (``Output: abcd`` may be a
    string or a name), except where print shows it: ``print(f(x))  # Output: abcd`` is the
    string ``'abcd'``."""
    text = source.strip().strip("*_").strip().strip("`").strip()
    if not text:
        return ParseFailure("empty output (line)")
    if _PLACEHOLDER.fullmatch(text):
        return ParseFailure(f"{_PLACEHOLDER_REASON} `{text}`")
    parsed = parse_value(text)
    if isinstance(parsed, ParseFailure) and text.endswith("."):
        shorter = parse_value(text[:-1])
        if isinstance(shorter, ParsedValue):
            parsed, text = shorter, text[:-1]
    if isinstance(parsed, ParseFailure):
        if parsed.reason.startswith(("refused", "expression")):
            return parsed
        head = literal_prefix(text)
        if head is not None:
            return parse_value(head)
        if printed and re.fullmatch(r"[^\s'\"`]+", text):
            return ParsedValue(text, repr(text))
        if re.search(r"[A-Za-z]{2,}[^\n]*\s", text):
            if printed or (re.fullmatch(r"[A-Za-z][\w ]*", text) and len(text.split()) <= 3):
                return ParseFailure(
                    f"the answer `{shorten(text, 40)}` is unquoted text, not a value "
                    "(a string answer is quoted)"
                )
            return ParseFailure(f"the answer is prose, not a value: `{shorten(text, 60)}`")
        return parsed
    if parsed.pending:
        tree = parse_expr(text)
        if _split_comment(text)[1] >= 0 or (
            not isinstance(tree, ParseFailure) and calls_function(tree, "print")
        ):
            return ParseFailure("the answer is code, not a value")
        if not isinstance(tree, ParseFailure) and isinstance(tree.body, ast.Name):
            if printed:
                return ParsedValue(text, repr(text))
            return ParseFailure(
                f"the answer `{text}` is an unquoted word, not a value (a string answer is quoted)"
            )
    return parsed


def _target_key(call: str | None) -> tuple[str, str] | None:
    if call is None:
        return None
    tree = parse_expr(call)
    if isinstance(tree, ParseFailure) or not isinstance(tree.body, ast.Call):
        return None
    return _call_key(tree.body)


def _call_key(call: ast.Call) -> tuple[str, str] | None:
    """What identifies a call: its function name and its arguments' values (their syntax
    when they are not literals)."""
    if not isinstance(call.func, ast.Name):
        return None
    try:
        args, kwargs = literal_arguments(call)
    except LiteralError:
        return call.func.id, ast.dump(
            ast.Call(func=call.func, args=call.args, keywords=call.keywords)
        )
    return call.func.id, repr((args, sorted(kwargs.items())))


def _call_forms(
    text: str,
    blocks: list[Block],
    target: tuple[str, str] | None,
    notes: list[str],
) -> list[tuple[int, ParsedValue | ParseFailure]]:
    """Answers written about a call: ``print(f(x))  # Output: y``, ``f(x)  # -> y``,
    ``assert f(x) == y``, ``assertEqual(f(x), y)``. Kept when the call is ``target``, or, with
    no target, when the reply shows only one call in such forms."""
    found: list[tuple[int, tuple[str, str], ParsedValue | ParseFailure, str]] = []
    previous = ""
    assigned: dict[str, ast.expr] = {}
    for ls, le in line_spans(text):
        line = text[ls:le]
        code, hash_at = _split_comment(line)
        _assignment(code, assigned)
        if hash_at >= 0:
            m = _COMMENT_ANSWER.match(line, hash_at)
            subject = code.strip() or previous
            if m is not None and subject:
                called = _call_of(subject) or _printed_variable(subject, assigned)
                if called is not None:
                    node, printed = called
                    key = _call_key(node)
                    if key is not None:
                        said = m["value"].strip()
                        said = said[:-1] if re.search(r"\d\.$", said) else said
                        value = _answer_value(said, printed=printed)
                        found.append((ls + hash_at, key, value, ast.unparse(node)))
        if "==" in code or "assert" in code:
            for node, value_node in _compared(code):
                key = _call_key(node)
                if key is None:
                    continue
                try:
                    expected = literal_value(value_node, max_depth=MAX_NESTING)
                except LiteralError:
                    continue
                found.append(
                    (ls, key, ParsedValue(expected, ast.unparse(value_node)), ast.unparse(node))
                )
        if code.strip():
            previous = code.strip()
    if not found:
        return []
    found.sort(key=lambda f: f[0])
    if target is not None:
        mine = [(pos, value) for pos, key, value, _ in found if key == target]
        if not mine:
            shown = ", ".join(sorted({f"`{shorten(s, 40)}`" for *_, s in found})[:3])
            notes.append(f"the reply's answers are for other calls ({shown}), not this test's")
        return mine
    if len({key for _, key, _, _ in found}) > 1:
        return []
    return [(pos, value) for pos, _, value, _ in found]


def _split_comment(line: str) -> tuple[str, int]:
    """(the code before a ``#`` comment, the comment's index or -1), strings skipped."""
    j, n = 0, len(line)
    while j < n:
        c = line[j]
        if c in "'\"":
            end = string_end(line, j)
            if end < 0:
                return line, -1
            j = end
            continue
        if c == "#":
            return line[:j], j
        j += 1
    return line, -1


def _call_of(code: str) -> tuple[ast.Call, bool] | None:
    """The call a line of code makes (through ``print(...)``: printed), else ``None``."""
    code = code.strip().strip("`").strip()
    code = re.sub(r"^(?:>>>|\.\.\.)[ \t]*", "", code).rstrip(";").strip()
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if len(tree.body) != 1:
        return None
    stmt = tree.body[0]
    node = stmt.value if isinstance(stmt, ast.Expr | ast.Assign) else None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        return None
    if node.func.id == "print":
        inner = node.args[0] if len(node.args) == 1 and not node.keywords else None
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name):
            return inner, True
        return None
    return node, False


def _assignment(code: str, assigned: dict[str, ast.expr]) -> None:
    """Record ``name = value`` written on a line of code (the value's syntax)."""
    m = re.match(r"[ \t]*([A-Za-z_]\w*)[ \t]*=(?!=)(.+)$", code)
    if m is None:
        return
    try:
        tree = ast.parse(m.group(2).strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return
    assigned[m.group(1)] = tree.body


def _printed_variable(code: str, assigned: dict[str, ast.expr]) -> tuple[ast.Call, bool] | None:
    """``print(result)`` where the reply set ``result = f(x)`` before (its arguments' names
    taking the literal values the reply gave them): the call ``f(x)``, printed."""
    code = code.strip().strip("`").strip()
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr):
        return None
    node = tree.body[0].value
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "print"
        and len(node.args) == 1
        and not node.keywords
        and isinstance(node.args[0], ast.Name)
    ):
        return None
    value = assigned.get(node.args[0].id)
    if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Name):
        return None

    def given(arg: ast.expr) -> ast.expr:
        if isinstance(arg, ast.Name) and arg.id in assigned:
            bound = assigned[arg.id]
            if is_literal(ast.Expression(bound)):
                return bound
        return arg

    call = ast.Call(
        func=value.func,
        args=[given(a) for a in value.args],
        keywords=[ast.keyword(arg=k.arg, value=given(k.value)) for k in value.keywords],
    )
    return ast.fix_missing_locations(call), True


def _compared(code: str) -> list[tuple[ast.Call, ast.expr]]:
    """(call, expected value) of ``assert f(x) == y``, ``f(x) == y`` and ``assertEqual``-style
    lines."""
    code = code.strip().strip("`").strip()
    code = re.sub(r"^(?:>>>|\.\.\.)[ \t]*", "", code).rstrip(";").strip()
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []
    if len(tree.body) != 1:
        return []
    stmt = tree.body[0]
    node = stmt.test if isinstance(stmt, ast.Assert) else getattr(stmt, "value", None)
    out: list[tuple[ast.Call, ast.expr]] = []
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
        left, right = node.left, node.comparators[0]
        if isinstance(right, ast.Call) and not isinstance(left, ast.Call):
            left, right = right, left
        if isinstance(left, ast.Call) and isinstance(left.func, ast.Name):
            out.append((left, right))
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        method = node.func.attr
        subject = node.args[0] if node.args else None
        if isinstance(subject, ast.Call) and isinstance(subject.func, ast.Name):
            if method in ("assertEqual", "assertEquals") and len(node.args) >= 2:
                out.append((subject, node.args[1]))
            elif method in ("assertTrue", "assertFalse", "assertIsNone"):
                constant = {"assertTrue": True, "assertFalse": False, "assertIsNone": None}[method]
                out.append((subject, ast.Constant(constant)))
    return out


def _prose_answers(
    text: str, blocks: list[Block], notes: list[str]
) -> list[tuple[int, ParsedValue]]:
    """Values stated in prose: ``would return `True` ``, ``returns 3 because ...``, ``the
    output is `[1]` ``, ``would return:`` + a value block. Statements about the given code,
    negated ones and conditional ones (``returns `True` if ...``) are not answers."""
    out: list[tuple[int, ParsedValue]] = []
    ends = [0, *(m.end() for m in _CLAUSE_START.finditer(text))]
    for pattern in (_PROSE_VERB, _PROSE_IS):
        for m in list(pattern.finditer(text))[-MAX_CALLS_TRIED:]:
            if block_at(blocks, m.start()) is not None:
                continue
            sentence_start = ends[bisect.bisect_right(ends, m.start()) - 1]
            sentence_start = max(sentence_start, m.start() - _MAX_PROSE_VALUE)
            if _PROSE_NEGATIVE.search(text, sentence_start, m.start()):
                continue
            got = _stated_value(text, m.end(), blocks)
            if got is None:
                if pattern is _PROSE_IS:
                    line_end = text.find("\n", m.end())
                    said = text[m.end() : len(text) if line_end < 0 else line_end].strip()
                    if said:
                        notes.append(f"the answer is prose, not a value: `{shorten(said, 60)}`")
                continue
            value, end = got
            if _CONDITION_AFTER.match(text, end):
                continue
            out.append((m.start(), value))
    return sorted(out, key=lambda pv: pv[0])


_EMPTY = re.compile(
    r"(?i)(?:an?\s+)?empty\s+(string|str|list|dict|dictionary|tuple|set)\b(?![\w(\[{'\"`])"
)
_EMPTIES: dict[str, tuple[Any, str]] = {
    "string": ("", "''"),
    "str": ("", "''"),
    "list": (list, "[]"),
    "dict": (dict, "{}"),
    "dictionary": (dict, "{}"),
    "tuple": ((), "()"),
    "set": (set, "set()"),
}
"""Empty containers stated in words: the value (a type: a fresh one each time) and its text."""


def _stated_value(text: str, i: int, blocks: list[Block]) -> tuple[ParsedValue, int] | None:
    """A literal written at ``text[i]`` in prose (a code span, a bare literal, or a value
    block on the next lines) and where it ends."""
    line_end = text.find("\n", i, i + _MAX_PROSE_VALUE)
    line_end = min(len(text), i + _MAX_PROSE_VALUE) if line_end < 0 else line_end
    latex = _LATEX_SPAN.match(text, i)
    if latex is not None and latex.end() - i <= _MAX_PROSE_VALUE:
        inner = latex["a"] or latex["b"] or latex["c"] or ""
        got = parse_value(_unlatex(inner))
        if isinstance(got, ParsedValue) and not got.pending:
            return got, latex.end()
        return None
    if text.startswith("`", i) and not text.startswith("```", i):
        m = SPAN_AT.match(text, i, line_end)
        if m is None:
            return None
        got = parse_value(m.group(2).strip())
        if isinstance(got, ParsedValue) and not got.pending:
            return got, m.end()
        return None
    block = block_starting(blocks, i)
    if block is None and not text[i:line_end].strip():
        m = _BLANK_LINES.match(text, line_end)
        if m is not None:
            block = block_starting(blocks, m.end())
    if block is not None:
        if not block.closed:
            return None
        source = drop_tag(text[block.body : block.end]).strip().strip("`").strip()
        got = parse_value(source)
        if isinstance(got, ParsedValue) and not got.pending:
            return got, block.end + 3
        return None
    empty = _EMPTY.match(text, i, line_end)
    if empty is not None:  # "is an empty string", "returns an empty list"
        value, source = _EMPTIES[empty.group(1).lower()]
        return ParsedValue(value() if callable(value) else value, source), empty.end()
    if not _LITERAL_START.match(text, i):
        return None
    end = code_end(text, i, comma=False, stop=min(line_end, i + _MAX_PROSE_VALUE))
    source = text[i:end].rstrip()
    for cand in (source.rstrip(".,;:!?"), source):
        tree = parse_expr(cand) if cand else None
        if tree is not None and not isinstance(tree, ParseFailure) and is_literal(tree):
            return ParsedValue(literal_value(tree, max_depth=MAX_NESTING), cand), i + len(cand)
    head = literal_prefix(source)
    if head is None:
        return None
    tree = ast.parse(head, mode="eval")
    return ParsedValue(literal_value(tree, max_depth=MAX_NESTING), head), i + len(head)
