"""The human format of ``utdebug check``: the report printed by rich, in colour on a terminal.

rich is imported when a report is drawn, not with the module (startup time)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from utdebug.check.formats import common
from utdebug.check.formats.common import Layout
from utdebug.check.report import CheckReport, FunctionReport, Status
from utdebug.cli_common import UNWRAPPED_WIDTH, Exit
from utdebug.text_safety import no_workflow_commands, visible

if TYPE_CHECKING:
    from rich.console import Console

HUMAN_CHANGES = 10
"""Changed outcomes the human report shows per function (the smallest inputs)."""

_STATUS_STYLE = {
    Status.OK: "bold green",
    Status.FINDINGS: "bold red",
    Status.ERROR: "bold yellow",
    Status.SKIPPED: "dim",
    Status.NOT_COMPARED: "yellow",
    Status.NONDETERMINISTIC: "magenta",
}


def render(report: CheckReport, layout: Layout) -> str:
    """The human report as text (:func:`write_human` on a console that writes to a string)."""
    color, width = layout.color, layout.width
    import io

    from rich.console import Console

    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=UNWRAPPED_WIDTH if width is None else max(20, width),
        soft_wrap=width is None,
        force_terminal=color,
        color_system="standard" if color else None,
        no_color=not color,
        highlight=False,
        markup=False,
        emoji=False,
        legacy_windows=False,
        force_jupyter=False,
        force_interactive=False,
    )
    write_human(report, console)
    return no_workflow_commands(buffer.getvalue())


def _human_differential(out: Any, v: Callable[[str], str], f: FunctionReport) -> None:
    """The comparison with the base in the human report (``v`` shows a text safely): its
    message (beside a model's tests), the first changes, the accepted ones, the
    nondeterministic inputs."""
    d = f.differential
    assert d is not None
    if f.tests or f.fix is not None or f.message != d.message:
        out((f"against its {common.base_label(f)}: ", "bold"), v(d.message), indent=2)
    for c in d.changes[:HUMAN_CHANGES]:
        out(
            ("✗ ", "bold red"),
            (v(c.call), "bold"),
            ": ",
            (v(c.description), "red"),
            indent=2,
        )
    if len(d.changes) > HUMAN_CHANGES:
        more = len(d.changes) - HUMAN_CHANGES
        out(
            (f"... and {more} more (every format but this one lists them all)", "dim"),
            indent=2,
        )
    if d.accepted:
        out((f"{common.plural(len(d.accepted), 'accepted change')}:", "dim"), indent=2)
        for c in d.accepted:
            out(("= ", "dim"), v(common.change_text(c)), indent=4)
    if d.unstable:
        what = common.plural(len(d.unstable), "nondeterministic input")
        out((f"{what} (not findings):", "magenta"), indent=2)
        for u in d.unstable[:HUMAN_CHANGES]:
            out(("~ ", "magenta"), v(common.unstable_text(u)), indent=4)


def write_human(report: CheckReport, console: Console) -> None:
    """Print the human report on a rich console.

    Every string from the report goes in as plain :class:`rich.text.Text` (never as markup), and
    control and bidirectional characters are shown as escapes, so model output cannot style or
    corrupt the terminal. Rich wraps long lines: a console that goes to a CI log should print
    the lines through :func:`~utdebug.text_safety.no_workflow_commands` (as :func:`render`
    does), so that no wrapped line starts a workflow command.
    """
    from rich.text import Text

    def out(*parts: str | tuple[str, str], indent: int = 0) -> None:
        text = Text.assemble(" " * indent, *parts, overflow="fold")
        console.print(text, highlight=False)

    v = visible
    base = v(report.base) if report.base is not None else "-"
    out(
        ("utdebug check", "bold"),
        f" {v(report.tool_version)}  model ",
        (v(report.model), "cyan"),
        f"  revision {v(report.revision)}  base {base}  min votes {report.min_votes:g}",
    )
    if report.simulated:
        out((" SIMULATED ", "bold black on yellow"), " ", (common.SIMULATED_NOTE, "yellow"))

    if not report.functions:
        console.print()
        out(("no changed functions to check", "bold"))

    for f in report.functions:
        console.print()
        out(
            (f"{v(f.path)}:{f.line}", "bold"),
            " ",
            (v(f.qualname), "bold cyan"),
            "  ",
            (common.status_text(f), _STATUS_STYLE[f.status]),
        )
        if f.message:
            out(v(f.message), indent=2)
        for t in f.findings:
            out(("✗ ", "bold red"), (v(t.call), "bold"), indent=2)
            for line in (t.code or "").splitlines():
                out((v(line), "dim"), indent=6)
            out("expected  ", v(t.expected), (f"  ({common.votes(t)})", "dim"), indent=6)
            out("actual    ", (v(common.outcome(t)), "red"), indent=6)
        weak = common.weak_failures(f)
        if weak:
            out(
                (f"not confident ({common.plural(len(weak), 'failing test')}):", "yellow"), indent=2
            )
            for t in weak:
                out(
                    "? ",
                    v(t.call),
                    f" expected {v(t.expected)} ",
                    (f"({common.votes(t)})", "dim"),
                    f"; {v(common.outcome(t))}",
                    indent=4,
                )
        if f.differential is not None:
            _human_differential(out, v, f)
        if f.fix is not None:
            fix = f.fix
            patch = "patch present" if fix.patch else "no patch"
            if fix.patch and fix.applied:
                patch += ", applied"
            elif fix.applied:
                patch += " (applied)"
            out(
                ("fix: ", "bold"),
                f"pass rate {common.rate(fix.pass_before)} → {common.rate(fix.pass_after)}, "
                f"{common.plural(fix.accepted_edits, 'accepted edit')}, {patch}",
                indent=2,
            )

    console.print()
    style = "bold red" if report.exit_code() == Exit.FAILURE else "bold"
    if report.exit_code() == Exit.USAGE:
        style = "bold yellow"
    compared = common.compared_line(report)
    if compared is not None:
        out((compared, "bold red" if report.compared_too_few else "bold"))
    if report.partial is not None:
        out((report.partial.message(), "bold red"))
    out((common.summary(report), style))
