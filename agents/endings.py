"""Natural ends of replies: when a streamed reply already holds everything utdebug reads from it.

A small model often goes on after its answer (an explanation, another test, the prompt again)
until its token cap; at 20 tokens per second that is most of the call. The prompt formats end
with a fenced value, so a streamed reply can be closed as soon as that value is complete:

* ``ut`` (a test proposal): an ``Arguments:`` marker, then an ``Output:`` marker with a
  complete fenced value after it;
* ``vote`` (an output prediction, of a call or of a test program): an ``Output:`` marker with a
  complete fenced value;
* ``program`` (a test proposal written as a pytest function): the first fenced block that
  holds a test function (``def test...`` with an ``assert`` or a ``raises``) is closed. Its
  tests are complete; what a small model writes after them (an explanation, the code again,
  more blocks) is not read for the tests it asked for.

Debugging replies have no such end (a reply may quote the buggy code before the fix), so they
run to the model's own end or the token cap. Rules are named in ``ModelRequest.end`` (the name
is part of the cache key) and applied by the litellm client on streamed calls only.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .reply_syntax import fenced_blocks

__all__ = ["ENDINGS", "reached"]

_ARGUMENTS = re.compile(r"(?i)\barguments?\b[*_ \t]*:")
_OUTPUT_VALUE = re.compile(r"(?i)\boutput\b[*_ \t]*:[*_ \t]*```[^`]*```")


def _ut(text: str) -> int | None:
    m = _ARGUMENTS.search(text)
    if m is None:
        return None
    out = _OUTPUT_VALUE.search(text, m.end())
    return None if out is None else out.end()


def _vote(text: str) -> int | None:
    out = _OUTPUT_VALUE.search(text)
    return None if out is None else out.end()


_TEST_FUNCTION = re.compile(r"(?m)^[ \t]*(?:async[ \t]+)?def[ \t]+test\w*[ \t]*\(")
_CHECKS = re.compile(r"\bassert\b|\braises\b")


def _program(text: str) -> int | None:
    for b in fenced_blocks(text):
        if not b.closed:
            return None
        if _TEST_FUNCTION.search(text, b.body, b.end) and _CHECKS.search(text, b.body, b.end):
            after = text.find("\n", b.end)  # the closing fence's line is whole (not ```python)
            return None if after < 0 else after
    return None


ENDINGS: dict[str, Callable[[str], int | None]] = {"ut": _ut, "vote": _vote, "program": _program}


def reached(name: str | None, text: str) -> int | None:
    """Where ``text`` reached the natural end named ``name``: the index just past it, or
    ``None`` when it has not (``name`` ``None``: never)."""
    if name is None:
        return None
    rule = ENDINGS.get(name)
    return None if rule is None else rule(text)
