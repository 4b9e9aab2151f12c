"""The JSON format of ``utdebug check``: ``CheckReport.to_json()``, described by
``report.schema.json``."""

from __future__ import annotations

from utdebug.check.formats.common import Layout, dumps
from utdebug.check.report import CheckReport


def render(report: CheckReport, layout: Layout) -> str:
    """The report as JSON text (``layout`` is not read)."""
    return dumps(report.to_json())
