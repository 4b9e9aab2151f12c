"""One hostile string and the check that an output shows it safely (tests/test_foreign_text.py).

The string sets the terminal title (OSC 0), writes the clipboard (OSC 52), rings the bell,
forges GitHub Actions workflow commands on lines of their own (the old ``##[`` form too),
reverses the text after it (U+202E), is Rich markup, holds a NUL and a C1 CSI (``\\x9b``).
"""

from __future__ import annotations

import re

HOSTILE = (
    "\x1b]0;owned-title\x07\x1b]52;c;ZXZpbA==\x07\n::error::forged\n::add-mask::x\n"
    "::stop-commands::x ##[warning]old\u202e[bold red]markup[/]\x00\x9b2J"
)

IN_A_NAME = "\x1b]0;owned-title\x07\n::error::forged\u202e[bold red]markup\x9b2J"
"""The same attacks as far as a file name can hold them (no NUL, no slash)."""

IN_SOURCE = "\x1b]0;owned-title\x07\u202e[bold red]markup[/]\x9b2J"
"""What a line of Python source can hold raw (in a string literal): no NUL, no newline."""

MARKUP = "[bold red]markup"
"""Shown as it is wherever the hostile string is shown: it was not read as markup."""

_RAW = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


def unsafe(text: str, *, commands: tuple[str, ...] = ()) -> list[str]:
    """What is wrong with ``text`` as an output: raw controls (but newline and tab) and bidi
    characters, lines a CI runner reads as workflow commands (but those that start with one
    of ``commands``, the output's own), the old ``##[`` form. Empty: nothing."""
    problems = [f"raw {ch!r} at {m.start()}" for m in _RAW.finditer(text) for ch in [m.group()]]
    for line in text.splitlines():
        stripped = line.lstrip()
        if stripped.startswith("::") and not stripped.startswith(commands or ("\0",)):
            problems.append(f"a workflow command: {line[:80]!r}")
    if "##[" in text:
        problems.append("the old workflow command form ##[")
    return problems[:20]


def assert_safe(text: str, where: str, *, commands: tuple[str, ...] = ()) -> None:
    problems = unsafe(text, commands=commands)
    assert not problems, f"{where}: {problems}"
