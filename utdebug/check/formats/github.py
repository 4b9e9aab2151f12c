"""The GitHub format of ``utdebug check``: workflow commands (``::error``, ``::notice``) that
annotate the changed lines; no text a program or a model wrote is read as a command."""

from __future__ import annotations

from utdebug.check.formats import common
from utdebug.check.formats.common import Layout
from utdebug.check.report import CheckReport, Status
from utdebug.text_safety import workflow_data, workflow_property

_TITLE_MAX = 200


def _gh_command(command: str, message: str, **props: str | int) -> str:
    parts = []
    for key, value in props.items():
        value = str(value)
        if key == "title" and len(value) > _TITLE_MAX:
            value = value[: _TITLE_MAX - 1] + "…"
        parts.append(f"{key}={workflow_property(value)}")
    head = f"::{command}"
    if parts:
        head += " " + ",".join(parts)
    return f"{head}::{workflow_data(message)}"


def render(report: CheckReport, layout: Layout) -> str:
    """The report as GitHub workflow commands (``layout`` is not read)."""
    lines: list[str] = []
    prefix = common.simulated_prefix(report)
    if report.simulated:
        lines.append(_gh_command("notice", f"SIMULATED: {common.SIMULATED_NOTE}", title="utdebug"))
    for f in report.functions:
        start, end = common.line_span(f)
        where: dict[str, str | int] = {"file": f.path, "line": start, "endLine": end}
        for t in f.findings:
            message = (
                f"{prefix}{t.code or t.call}\nexpected: {t.expected} ({common.votes(t)})\n"
                f"actual: {common.outcome(t)}"
            )
            title = f"utdebug: {f.qualname} fails a generated test"
            lines.append(_gh_command("error", message, **where, title=title))
        for c in f.changes:
            message = f"{prefix}{c.call}\nbefore: {c.before}\nnow: {c.after}"
            title = f"utdebug: {f.qualname} changed behaviour: {c.description}"
            lines.append(_gh_command("error", message, **where, title=title))
        if f.status is Status.ERROR:
            title = f"utdebug: could not check {f.qualname}"
            lines.append(_gh_command("warning", prefix + f.message, **where, title=title))
        elif f.status is Status.SKIPPED:
            title = f"utdebug: skipped {f.qualname}"
            lines.append(_gh_command("notice", f.message, **where, title=title))
        elif f.status in (Status.NOT_COMPARED, Status.NONDETERMINISTIC):
            title = f"utdebug: {f.qualname} {f.status.value}"
            lines.append(_gh_command("notice", f.message, **where, title=title))
    if report.partial is not None:
        lines.append(_gh_command("error", report.partial.message(), title="utdebug partial report"))
    compared = common.compared_line(report)
    summary = common.summary(report) + (f"\n{compared}" if compared is not None else "")
    lines.append(_gh_command("notice", prefix + summary, title="utdebug summary"))
    return "\n".join(lines) + "\n"
