"""Output formats of ``utdebug check``: one table, format name -> its renderer.

:func:`render` turns a :class:`~utdebug.check.report.CheckReport` into the text of one format
by looking its row up in :data:`FORMATS`; each format is a module of this package (human,
JSON, JUnit XML, GitHub annotations, SARIF), and a new one is a row here and its module (see
CONTRIBUTING.md). :func:`write_human` prints the human report on a rich console. Every format
says when the run used a scripted (simulated) model, and none raises on odd strings: model
output can contain anything (quotes, newlines, control characters, lone surrogates), so each
format escapes what its syntax needs and shows characters that would drive a terminal, mislead
a reader or corrupt an XML file (controls, bidirectional overrides) as backslash escapes
(``\\x1b``, ``\\u202e``), with :mod:`utdebug.text_safety`; no line of text a program or a model
wrote is read as a CI workflow command.

rich is imported only when the human format draws a report (startup time matters).
"""

from __future__ import annotations

import importlib.resources
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from utdebug.check.formats import github, human, json_report, junit, sarif
from utdebug.check.formats.common import Layout
from utdebug.check.formats.human import write_human
from utdebug.check.report import CheckReport

__all__ = ["FORMATS", "Format", "Layout", "render", "schema", "write_human"]


@dataclass(frozen=True, slots=True)
class Format:
    name: str
    """The name ``--format`` and ``--report FORMAT=PATH`` take."""
    render: Callable[[CheckReport, Layout], str]
    """The report as this format's text (ending in a newline)."""


FORMATS: dict[str, Format] = {
    row.name: row
    for row in (
        Format("human", human.render),
        Format("json", json_report.render),
        Format("junit", junit.render),
        Format("github", github.render),
        Format("sarif", sarif.render),
    )
}
"""The formats, by name, in the order the help lists them."""


def schema() -> dict[str, Any]:
    """The JSON Schema of ``CheckReport.to_json()`` (``report.schema.json``), freshly loaded."""
    text = (
        importlib.resources.files("utdebug.check")
        .joinpath("report.schema.json")
        .read_text(encoding="utf-8")
    )
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def render(report: CheckReport, fmt: str, *, color: bool = False, width: int | None = None) -> str:
    """The report as text in format ``fmt`` (one of :data:`FORMATS`).

    ``color`` and ``width`` apply to the human format only (``width`` ``None``: no lines are
    wrapped, as in a file). Raises ValueError for an unknown format.
    """
    row = FORMATS.get(fmt)
    if row is None:
        raise ValueError(f"unknown format {fmt!r}: expected one of {', '.join(FORMATS)}")
    return row.render(report, Layout(color=color, width=width))
