"""Natural ends of replies: when a streamed reply already holds everything utdebug reads from it.

A small model often goes on after its answer (an explanation, another test, the prompt again)
until its token cap; at 20 tokens per second that is most of the call. The prompt formats end
with a fenced value, so a streamed reply can be closed as soon as that value is complete:

* ``ut`` (a test proposal): an ``Arguments:`` marker, then an ``Output:`` marker with a
  complete fenced value after it;
* ``vote`` (an output prediction): an ``Output:`` marker with a complete fenced value.

Debugging replies have no such end (a reply may quote the buggy code before the fix), so they
run to the model's own end or the token cap. Rules are named in ``ModelRequest.end`` (the name
is part of the cache key) and applied by the litellm client on streamed calls only.
"""

from __future__ import annotations

import re
from collections.abc import Callable

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


ENDINGS: dict[str, Callable[[str], int | None]] = {"ut": _ut, "vote": _vote}


def reached(name: str | None, text: str) -> int | None:
    """Where ``text`` reached the natural end named ``name``: the index just past it, or
    ``None`` when it has not (``name`` ``None``: never)."""
    if name is None:
        return None
    rule = ENDINGS.get(name)
    return None if rule is None else rule(text)
