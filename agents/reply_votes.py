"""Reading an output vote on a test program from a model's reply: the predicted value, or the
exception type it says the call raises (:func:`parse_vote`). Pure text and :mod:`ast`: nothing
here runs the code.
"""

from __future__ import annotations

import re

from utdebug import expected_values
from utdebug.agents.reply_asserts import expected_value
from utdebug.agents.reply_syntax import ParsedValue, ParseFailure, fenced_blocks
from utdebug.literals import LiteralError

__all__ = ["parse_vote"]


_RAISES = re.compile(r"^\s*raises\s+([A-Za-z_][\w.]*)\s*$")


_MARKED_RAISES = re.compile(r"(?:Output|Final Answer)\s*:\s*`*\s*raises\s+([A-Za-z_][\w.]*)")


def parse_vote(
    text: str, call: str, *, module_source: str | None = None
) -> ParsedValue | ParseFailure | str:
    """An output vote on a program test: the predicted value, or the name of the exception
    type (``Output: ```raises KeyError``` ``) as a ``str``.

    The answer is found as for a literal-argument test (:func:`~utdebug.agents.parsing.
    parse_output`); an answer that is not a literal (``Point(4, 2)``, ``date(2024, 1, 2)``,
    ``Color.RED``) is read structurally with :func:`utdebug.expected_values.expected_value` and the
    classes of ``module_source`` (the code under test), else left to the sandbox to compute."""
    last = None
    for match in _MARKED_RAISES.finditer(text):
        last = match.group(1)
    if last is None:
        for b in reversed(fenced_blocks(text)):
            # ```raises KeyError```, or a ```python block holding that one line
            m = _RAISES.match(_block_line(text[b.body : b.end]) or text[b.body : b.end])
            if m:
                last = m.group(1)
            break
    restated = _restated_answer(text, module_source)
    if restated is not None:
        return restated
    if last is not None:
        if _PLACEHOLDER.match(last.rsplit(".", 1)[-1]):
            return ParseFailure(
                f"the answer `raises {last}` names the prompt's placeholder, not an exception type"
            )
        return last
    return _structural_vote(text, call, module_source)


_VALUE_OF = re.compile(
    r"(?i)\bvalue[ \t]+of[ \t]+`[^`\n]{1,300}`[ \t]+at[ \t]+the[ \t]+end\b[^\n]{0,300}?"
    r"[ \t,]\s*(?:is|would[ \t]+be|will[ \t]+be)[ \t]*:?\s*"
)
"""The vote prompt's own question restated as the answer's sentence: "... the value of
`cart.total()` at the end, for a **correct** implementation of `Cart.total`, is `0.0`."."""


def _restated_answer(text: str, module_source: str | None) -> ParsedValue | str | None:
    """The value (or ``raises X``) stated after the last restatement of the prompt's question
    (:data:`_VALUE_OF`) when no ``Output:`` marker comes after it; ``None`` otherwise."""
    found = list(_VALUE_OF.finditer(text))
    if not found:
        return None
    at = found[-1].end()
    if re.search(r"(?i)\b(?:output|final answer)\s*:", text[at:]):
        return None  # a marked answer after the sentence decides
    blocks = [b for b in fenced_blocks(text) if b.start >= at - 1]
    source: str | None = None
    if text.startswith("```", at) or (blocks and not text[at : blocks[0].start].strip()):
        if blocks and blocks[0].closed:
            source = (
                _block_line(text[blocks[0].body : blocks[0].end])
                or text[blocks[0].body : blocks[0].end].strip()
            )
    elif text.startswith("`", at):
        m = _SPAN.match(text, at)
        source = m.group(1) if m is not None else None
    if source is None:
        return None
    source = source.strip()
    raised = _RAISES.match(source)
    if raised is not None:
        return None if _PLACEHOLDER.match(raised.group(1).rsplit(".", 1)[-1]) else raised.group(1)
    value = expected_value(source, module_source=module_source)
    if isinstance(value, ParsedValue) and not value.pending:
        return value
    return None


_PLACEHOLDER = re.compile(r"ExceptionType\w*\Z")
"""``raises ExceptionType`` (the prompt's ``<ExceptionType>``), ``ExceptionTypeError``."""


def _structural_vote(text: str, call: str, module_source: str | None) -> ParsedValue | ParseFailure:
    from utdebug.agents.parsing import parse_output

    out = parse_output(text, call=call)
    if isinstance(out, ParsedValue) and not out.pending:
        return out  # a literal: read exactly as a literal-argument test's vote
    if isinstance(out, ParsedValue):
        candidates = [out.source]
    else:  # the answer region holds an expression that is not a literal (``Color.RED``)
        blocks = fenced_blocks(text)
        candidates = [_block_line(text[b.body : b.end]) for b in blocks[-1:]]
        candidates += _SPAN.findall(text)[-1:]
    for source in candidates:
        source = source.strip()
        if not source or "\n" in source:
            continue
        try:
            value = expected_values.expected_value(source, module_source=module_source)
        except LiteralError:
            continue
        return ParsedValue(value, source)
    return out


def _block_line(body: str) -> str:
    """A block's one line of code (after a language tag on the fence line), else ``""``."""
    lines = [line for line in body.splitlines() if line.strip()]
    if len(lines) == 2 and re.fullmatch(r"[\w+-]+", lines[0].strip()):
        lines = lines[1:]
    return lines[0] if len(lines) == 1 else ""


_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
