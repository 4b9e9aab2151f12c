"""Text that others wrote, made safe where it meets an output (docs/architecture.md, "Foreign
text").

A program's values and exceptions, a model's replies, a dataset's ids and a repository's file
names reach terminals, CI logs, the app and report files. :func:`visible` shows the characters
that would drive a terminal or mislead a reader (C0 and C1 controls, DEL, bidirectional
overrides and isolates, line separators, lone surrogates) as backslash escapes and keeps a line
of it from being read as a GitHub Actions workflow command; :func:`workflow_data` and
:func:`workflow_property` escape a workflow command's message and properties as the runner
reads them; :func:`json_text` makes dumped JSON safe to print; :func:`markup` makes text safe
inside Rich markup; :class:`GuardedStream` keeps every line written to a stream from being a
workflow command (lines that a console wrapped start anywhere in the text).
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from typing import Any, TextIO, cast

__all__ = [
    "UNSAFE",
    "GuardedStream",
    "escape_char",
    "guarded_output",
    "json_text",
    "markup",
    "no_workflow_commands",
    "visible",
    "workflow_data",
    "workflow_property",
]

UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
"""C0 and C1 controls, DEL, the bidirectional marks, embeddings, overrides and isolates, the
Unicode line and paragraph separators, lone surrogates."""

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}

# A GitHub Actions runner reads a line as a workflow command when it starts with "::" after
# leading whitespace (and the old form "##[command]" anywhere in a line).
_COMMAND_LINE = re.compile(r"(?:^|(?<=\r))([^\S\n\r]*):(?=:)", re.MULTILINE)
_OLD_COMMAND = re.compile(r"#(?=#\[)")


def escape_char(ch: str) -> str:
    """One character as a backslash escape: ``\\n``, ``\\x1b``, ``\\u202e``."""
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def no_workflow_commands(text: str) -> str:
    """``text`` with no line that a CI runner reads as a workflow command: a line's leading
    ``::`` becomes ``\\x3a:`` and ``##[`` becomes ``\\x23#[``. Text without them is returned
    unchanged."""
    if "::" not in text and "##[" not in text:
        return text
    text = _COMMAND_LINE.sub(lambda m: m.group(1) + "\\x3a", text)
    return _OLD_COMMAND.sub("\\\\x23", text)


def visible(text: str, keep: str = "") -> str:
    """``text`` as it may be shown on a terminal, in the app or in a log: every
    :data:`UNSAFE` character as a backslash escape but those in ``keep`` (``"\\n"`` for a
    block meant to span lines), and no line of it a workflow command
    (:func:`no_workflow_commands`). Ordinary text is returned unchanged."""
    text = UNSAFE.sub(lambda m: m.group() if m.group() in keep else escape_char(m.group()), text)
    return no_workflow_commands(text)


def workflow_data(text: str) -> str:
    """A GitHub Actions workflow command's message: unsafe characters escaped (newlines, tabs
    kept), then ``%``, CR and LF as the runner's escapes (``%25``, ``%0D``, ``%0A``), so the
    command stays on its one line (and ``##[``, the old command form, as ``\\x23#[``)."""
    text = UNSAFE.sub(
        lambda m: m.group() if m.group() in "\n\r\t" else escape_char(m.group()), text
    )
    text = _OLD_COMMAND.sub("\\\\x23", text)
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def workflow_property(text: str) -> str:
    """A workflow command's property value: :func:`workflow_data`, and ``:`` and ``,`` as
    ``%3A`` and ``%2C``."""
    return workflow_data(text).replace(":", "%3A").replace(",", "%2C")


_JSON_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def json_text(dumped: str) -> str:
    """JSON text (as :func:`json.dumps` wrote it) that is safe to print: the characters that
    JSON leaves raw but a terminal or a reader would act on (C1 controls, DEL, bidirectional
    controls, line separators) as ``\\uXXXX`` escapes, and ``##[`` as ``##\\u005b``. The data
    read back is the same; every such character can only be inside a string."""
    dumped = _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", dumped)
    return dumped.replace("##[", "##\\u005b")


def markup(text: str) -> str:
    """:func:`visible` ``text`` escaped for Rich console markup (its ``[`` never opens a tag)."""
    from rich.markup import escape

    return escape(visible(text))


class GuardedStream:
    """A text stream whose writes go through :func:`no_workflow_commands` (each write is taken
    to start a line, as a console's prints do); everything else is the stream's own. Ordinary
    output passes unchanged."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(no_workflow_commands(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


@contextlib.contextmanager
def guarded_output() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` through :class:`GuardedStream` while the block runs:
    whatever a long run prints (a problem's error, a model's message, an id that a console
    wrapped onto a line of its own), no line of it is a CI workflow command."""
    out, err = sys.stdout, sys.stderr
    sys.stdout = cast(TextIO, GuardedStream(out))
    sys.stderr = cast(TextIO, GuardedStream(err))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err
