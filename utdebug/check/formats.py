"""Output formats of ``utdebug check``: human (rich), JSON, JUnit XML, GitHub annotations, SARIF.

:func:`render` turns a :class:`~utdebug.check.report.CheckReport` into the text of one format;
:func:`write_human` prints the human report on a rich console. Every format says when the run
used a scripted (simulated) model, and none raises on odd strings: model output can contain
anything (quotes, newlines, control characters, lone surrogates), so each format escapes what
its syntax needs and shows characters that would drive a terminal, mislead a reader or
corrupt an XML file (controls, bidirectional overrides) as backslash escapes (``\\x1b``,
``\\u202e``), with :mod:`utdebug.text_safety`; no line of text a program or a model wrote
is read as a CI workflow command.

rich is imported only by the human format (startup time matters).
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import re
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Any

from utdebug.check.report import (
    Change,
    CheckReport,
    FunctionReport,
    Status,
    TestResult,
    TestVerdict,
    Unstable,
)
from utdebug.cli_common import UNWRAPPED_WIDTH, Exit
from utdebug.text_safety import (
    escape_char,
    json_text,
    no_workflow_commands,
    visible,
    workflow_data,
    workflow_property,
)

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["FORMATS", "render", "schema", "write_human"]

FORMATS: tuple[str, ...] = ("human", "json", "junit", "github", "sarif")

SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
FINGERPRINT_KEY = "utdebugFinding/v1"

SIMULATED_NOTE = (
    "the model is scripted (its answers are replayed), not a language model; "
    "these results are not real model output."
)

HUMAN_CHANGES = 10
"""Changed outcomes the human report shows per function (the smallest inputs)."""

_EXIT_MEANING = {
    Exit.OK: "no findings",
    Exit.FAILURE: "findings",
    Exit.USAGE: "some functions could not be checked",
    Exit.DEADLINE: "partial report: stopped by its deadline",
    Exit.INTERRUPTED: "partial report: stopped by SIGINT",
    Exit.TERMINATED: "partial report: stopped by SIGTERM",
}

# --------------------------------------------------------------------------------------------
# Shared helpers


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
    if fmt == "human":
        return _render_human(report, color=color, width=width)
    if fmt == "json":
        return _dumps(report.to_json())
    if fmt == "junit":
        return _render_junit(report)
    if fmt == "github":
        return _render_github(report)
    if fmt == "sarif":
        return _dumps(_sarif(report))
    raise ValueError(f"unknown format {fmt!r}: expected one of {', '.join(FORMATS)}")


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _dumps(data: Any) -> str:
    """JSON text (UTF-8 safe, safe to print): a lone surrogate, a C1 control or a
    bidirectional control becomes its ``\\uXXXX`` escape, losslessly (:func:`json_text`)."""
    text = json.dumps(data, indent=2, ensure_ascii=False)
    return json_text(_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)) + "\n"


def _line(n: int) -> int:
    return n if n >= 1 else 1


def _lines(f: FunctionReport) -> tuple[int, int]:
    start = _line(f.line)
    return start, max(start, f.end_line)


def _votes(t: TestResult) -> str:
    """``8/8 votes`` (share of the drawn votes), or ``100%`` without voting."""
    if t.draws > 0:
        return f"{round(t.share * t.draws)}/{t.draws} votes"
    return f"{t.share:.0%}"


def _outcome(t: TestResult) -> str:
    """What the function did with a test."""
    if t.actual:
        return t.actual
    return {
        TestVerdict.PASS: "passed",
        TestVerdict.FAIL: "returned a different value",
        TestVerdict.ERROR: "raised an exception",
        TestVerdict.TIMEOUT: "timed out",
        TestVerdict.CRASH: "crashed",
    }[t.verdict]


def _weak_failures(f: FunctionReport) -> tuple[TestResult, ...]:
    """Failing tests that are not findings (their expected output won too few votes)."""
    return tuple(t for t in f.tests if t.verdict is not TestVerdict.PASS and not t.finding)


def _module(path: str) -> str:
    """Dotted module path of a repository file: ``pkg/mod.py`` -> ``pkg.mod``."""
    parts = [p for p in path.replace("\\", "/").split("/") if p and p != "."]
    if parts:
        last = parts[-1]
        for suffix in (".py", ".pyi", ".pyw"):
            if last.endswith(suffix):
                last = last[: -len(suffix)]
                break
        parts[-1] = last
        if parts[-1] == "__init__" and len(parts) > 1:
            parts.pop()
    return ".".join(p for p in parts if p) or path


def _qualified(f: FunctionReport) -> str:
    module = _module(f.path)
    if not f.qualname or f.qualname == "<module>":
        return module
    return f"{module}.{f.qualname}"


def _exit_text(report: CheckReport) -> str:
    code = report.exit_code()
    meaning = _EXIT_MEANING.get(code, "")
    if code == Exit.OK and report.errors:
        meaning = "no findings; functions that could not be checked are allowed"
    if code == Exit.FAILURE and not report.findings:
        meaning = "too few functions compared with their base (--min-compared)"
    return f"exit code {code} ({meaning})" if meaning else f"exit code {code}"


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def _summary(report: CheckReport) -> str:
    fns = report.functions
    cached = sum(f.cached for f in fns)
    checked = _plural(len(fns), "function")
    if report.partial is not None:  # the ones the run did not finish are not checked
        checked = f"{len(fns) - report.partial.unfinished} of {checked}"
    return (
        f"{checked} checked: {_plural(report.findings, 'finding')}"
        f" in {_plural(report.count(Status.FINDINGS), 'function')},"
        f" {_plural(report.errors, 'error')}, {report.count(Status.SKIPPED)} skipped,"
        f" {cached} cached, {report.seconds:.1f} s; {_exit_text(report)}"
    )


def _compared_line(report: CheckReport) -> str | None:
    """``compared N of M changed functions with their base version (...)``, and the
    ``--min-compared`` verdict; ``None`` when no function was compared with its base."""
    if not any(f.differential is not None for f in report.functions):
        return None
    total = len(report.changed_functions)
    others = [
        f"{report.count(Status.NONDETERMINISTIC)} nondeterministic",
        f"{report.count(Status.NOT_COMPARED)} not compared",
    ]
    line = (
        f"compared {report.compared} of {_plural(total, 'changed function')} with their base "
        f"version ({', '.join(others)})"
    )
    if report.min_compared:
        share = report.compared / total if total else 1.0
        verdict = "too few: exit code 1" if report.compared_too_few else "enough"
        line += f"; --min-compared {report.min_compared:.0%}: {share:.0%} compared, {verdict}"
    return line


def _status_text(f: FunctionReport) -> str:
    found = f.status is Status.FINDINGS
    text = _plural(len(f.findings) + len(f.changes), "finding") if found else f.status.value
    d = f.differential
    if f.status is Status.OK and not f.tests and d is not None and d.compared:
        text = f"unchanged on {_plural(d.inputs, 'input')}"
    return f"{text} (cached)" if f.cached else text


def _base_label(f: FunctionReport) -> str:
    d = f.differential
    return f"base {d.base[:12]}" if d is not None and d.base else "base"


def _change_text(c: Change) -> str:
    """``f(5): was 6, now 7``."""
    return f"{c.call}: {c.description}"


def _unstable_text(u: Unstable) -> str:
    """``f(5): the base gave 6, then 7``."""
    who = "the base" if u.version == "base" else "the checked version"
    return f"{u.call}: {who} gave {u.first}, then {u.second}"


def _rate(x: float | None) -> str:
    return "?" if x is None else f"{x:.0%}"


# --------------------------------------------------------------------------------------------
# human


_STATUS_STYLE = {
    Status.OK: "bold green",
    Status.FINDINGS: "bold red",
    Status.ERROR: "bold yellow",
    Status.SKIPPED: "dim",
    Status.NOT_COMPARED: "yellow",
    Status.NONDETERMINISTIC: "magenta",
}


def _render_human(report: CheckReport, *, color: bool, width: int | None) -> str:
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
        out((f"against its {_base_label(f)}: ", "bold"), v(d.message), indent=2)
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
        out((f"{_plural(len(d.accepted), 'accepted change')}:", "dim"), indent=2)
        for c in d.accepted:
            out(("= ", "dim"), v(_change_text(c)), indent=4)
    if d.unstable:
        what = _plural(len(d.unstable), "nondeterministic input")
        out((f"{what} (not findings):", "magenta"), indent=2)
        for u in d.unstable[:HUMAN_CHANGES]:
            out(("~ ", "magenta"), v(_unstable_text(u)), indent=4)


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
        out((" SIMULATED ", "bold black on yellow"), " ", (SIMULATED_NOTE, "yellow"))

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
            (_status_text(f), _STATUS_STYLE[f.status]),
        )
        if f.message:
            out(v(f.message), indent=2)
        for t in f.findings:
            out(("✗ ", "bold red"), (v(t.call), "bold"), indent=2)
            for line in (t.code or "").splitlines():
                out((v(line), "dim"), indent=6)
            out("expected  ", v(t.expected), (f"  ({_votes(t)})", "dim"), indent=6)
            out("actual    ", (v(_outcome(t)), "red"), indent=6)
        weak = _weak_failures(f)
        if weak:
            out((f"not confident ({_plural(len(weak), 'failing test')}):", "yellow"), indent=2)
            for t in weak:
                out(
                    "? ",
                    v(t.call),
                    f" expected {v(t.expected)} ",
                    (f"({_votes(t)})", "dim"),
                    f"; {v(_outcome(t))}",
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
                f"pass rate {_rate(fix.pass_before)} → {_rate(fix.pass_after)}, "
                f"{_plural(fix.accepted_edits, 'accepted edit')}, {patch}",
                indent=2,
            )

    console.print()
    style = "bold red" if report.exit_code() == Exit.FAILURE else "bold"
    if report.exit_code() == Exit.USAGE:
        style = "bold yellow"
    compared = _compared_line(report)
    if compared is not None:
        out((compared, "bold red" if report.compared_too_few else "bold"))
    if report.partial is not None:
        out((report.partial.message(), "bold red"))
    out((_summary(report), style))


# --------------------------------------------------------------------------------------------
# JUnit XML

# Characters XML 1.0 does not allow (anywhere, escaped or not).
_XML_INVALID = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml(text: str) -> str:
    """``text`` with the characters XML 1.0 forbids shown as backslash escapes."""
    return _XML_INVALID.sub(lambda m: escape_char(m.group()), text)


def _simulated_prefix(report: CheckReport) -> str:
    return "[SIMULATED] " if report.simulated else ""


def _render_junit(report: CheckReport) -> str:
    root = ET.Element("testsuites", {"name": "utdebug check"})
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for f in report.functions:
        suite = ET.SubElement(root, "testsuite", {"name": _one(f.target)})
        counts = _junit_suite(suite, report, f)
        for key, count in counts.items():
            suite.set(key, str(count))
            totals[key] += count
        suite.set("time", f"{max(0.0, f.seconds):.3f}")

    for key, count in totals.items():
        root.set(key, str(count))
    root.set("time", f"{max(0.0, report.seconds):.3f}")
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"


def _one(text: str) -> str:
    """A one-line field: every control character as an escape, valid in XML."""
    return _xml(visible(text))


def _block(text: str) -> str:
    """A field of several lines (a test's code): its lines kept, the rest as :func:`_one`."""
    return _xml(visible(text, keep="\n"))


def _junit_suite(suite: ET.Element, report: CheckReport, f: FunctionReport) -> dict[str, int]:
    """The test suite of one function: the run's properties, a test case for a function not
    checked, one per generated test; its counts."""
    prefix = _simulated_prefix(report)
    props = ET.SubElement(suite, "properties")
    for name, value in (
        ("model", report.model),
        ("simulated", "true" if report.simulated else "false"),
        ("revision", report.revision),
        ("base", report.base or ""),
        ("min_votes", f"{report.min_votes:g}"),
        ("utdebug_version", report.tool_version),
        *_junit_compared(report),
        *([("partial", report.partial.message())] if report.partial is not None else []),
    ):
        ET.SubElement(props, "property", {"name": name, "value": _one(value)})

    classname = _one(_module(f.path))
    location = {"file": _one(f.path), "line": str(_line(f.line))}
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}

    if f.status in (Status.ERROR, Status.SKIPPED):
        case = ET.SubElement(
            suite,
            "testcase",
            {"classname": classname, "name": _one(f.qualname), **location, "time": "0.000"},
        )
        counts["tests"] += 1
        if f.status is Status.ERROR:
            error = ET.SubElement(
                case,
                "error",
                {"type": "utdebug.not_checked", "message": _one(prefix + f.message)},
            )
            error.text = _one(f"{f.target} could not be checked: {f.message}") + "\n"
            counts["errors"] += 1
        else:
            ET.SubElement(case, "skipped", {"message": _one(f.message)})
            counts["skipped"] += 1

    _junit_changes(suite, report, f, classname, location, counts)
    per_test = f.seconds / len(f.tests) if f.tests else 0.0
    for t in f.tests:
        case = ET.SubElement(
            suite,
            "testcase",
            {
                "classname": classname,
                "name": _one(f"{f.qualname}: {t.call}"),
                **location,
                "time": f"{per_test:.3f}",
            },
        )
        counts["tests"] += 1
        outcome = _junit_outcome(case, f, t, prefix)
        if outcome is not None:
            counts[outcome] += 1
    return counts


def _junit_compared(report: CheckReport) -> list[tuple[str, str]]:
    """The run's comparison with the base as suite properties (none when not run)."""
    line = _compared_line(report)
    return [] if line is None else [("compared", line)]


def _junit_changes(
    suite: ET.Element,
    report: CheckReport,
    f: FunctionReport,
    classname: str,
    location: dict[str, str],
    counts: dict[str, int],
) -> None:
    """The comparison with the base: a failing test case per changed outcome; one passing
    test case when nothing changed, a skipped one when nothing was compared."""
    d = f.differential
    if d is None or f.status in (Status.ERROR, Status.SKIPPED):
        return
    prefix = _simulated_prefix(report)
    attrs = {"classname": classname, **location, "time": "0.000"}
    for c in d.changes:
        name = _one(f"{f.qualname}: {c.call} against the {_base_label(f)}")
        case = ET.SubElement(suite, "testcase", {**attrs, "name": name})
        failure = ET.SubElement(
            case,
            "failure",
            {"type": "utdebug.changed_outcome", "message": _one(prefix + c.description)},
        )
        failure.text = (
            _one(f"{prefix}{f.target} (line {_line(f.line)}) changed behaviour") + "\n"
            f"call:   {_one(c.call)}\nbefore: {_one(c.before)}\nnow:    {_one(c.after)}\n"
        )
        counts["tests"] += 1
        counts["failures"] += 1
    if not d.changes:
        name = _one(f"{f.qualname}: against the {_base_label(f)}")
        case = ET.SubElement(suite, "testcase", {**attrs, "name": name})
        counts["tests"] += 1
        if not d.compared:
            ET.SubElement(case, "skipped", {"message": _one(d.message)})
            counts["skipped"] += 1


def _junit_outcome(case: ET.Element, f: FunctionReport, t: TestResult, prefix: str) -> str | None:
    """A finding as a failure, another failing test as skipped (which count it adds to);
    nothing for a passing test."""
    details = (
        (f"code:\n{_block(t.code)}\n" if t.code else "") + f"call:     {_one(t.call)}\n"
        f"expected: {_one(t.expected)}  ({_votes(t)}, share {t.share:.0%})\n"
        f"actual:   {_one(_outcome(t))}\n"
        f"verdict:  {t.verdict.value}\n"
    )
    if t.finding:
        message = f"{prefix}expected {t.expected} ({_votes(t)}), got {_outcome(t)}"
        failure = ET.SubElement(
            case, "failure", {"type": "utdebug.finding", "message": _one(message)}
        )
        heading = f"{prefix}{f.target} (line {_line(f.line)}) fails a generated test"
        failure.text = _one(heading) + "\n" + details
        return "failures"
    if t.verdict is not TestVerdict.PASS:
        message = f"fails, but only {t.share:.0%} of votes agree on the expected output"
        skipped = ET.SubElement(case, "skipped", {"message": message})
        skipped.text = details
        return "skipped"
    return None


# --------------------------------------------------------------------------------------------
# GitHub workflow commands


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


def _render_github(report: CheckReport) -> str:
    lines: list[str] = []
    prefix = _simulated_prefix(report)
    if report.simulated:
        lines.append(_gh_command("notice", f"SIMULATED: {SIMULATED_NOTE}", title="utdebug"))
    for f in report.functions:
        start, end = _lines(f)
        where: dict[str, str | int] = {"file": f.path, "line": start, "endLine": end}
        for t in f.findings:
            message = (
                f"{prefix}{t.code or t.call}\nexpected: {t.expected} ({_votes(t)})\n"
                f"actual: {_outcome(t)}"
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
    compared = _compared_line(report)
    summary = _summary(report) + (f"\n{compared}" if compared is not None else "")
    lines.append(_gh_command("notice", prefix + summary, title="utdebug summary"))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# SARIF 2.1.0

_RULES: tuple[dict[str, Any], ...] = (
    {
        "id": "UTD001",
        "name": "failing-generated-test",
        "shortDescription": {"text": "A generated unit test fails with a confident expectation."},
        "fullDescription": {
            "text": "utdebug generated a unit test for this function from its docstring and "
            "signature; the function does not pass it (a different value, an exception, or "
            "no answer in time), and the test's expected output won at least the required "
            "share of the model's self-consistency votes."
        },
        "help": {
            "text": "Check the call and its expected output: if the expectation is right, the "
            "function has a bug (`utdebug check --fix` proposes a fix); if it is wrong, "
            "clarify the docstring or raise --min-votes.",
        },
        "defaultConfiguration": {"level": "error"},
        "properties": {"tags": ["correctness", "generated-test"]},
    },
    {
        "id": "UTD002",
        "name": "function-not-checked",
        "shortDescription": {"text": "The function could not be checked."},
        "fullDescription": {
            "text": "utdebug could not test this function: its module does not load in the "
            "sandbox, it does I/O the sandbox blocks, the file does not parse, or the model "
            "failed. The result message says why."
        },
        "help": {
            "text": "Fix the cause given in the message (install the project's dependencies "
            "where utdebug runs, keep I/O out of the function), or run with --allow-errors.",
        },
        "defaultConfiguration": {"level": "warning"},
    },
    {
        "id": "UTD003",
        "name": "function-skipped",
        "shortDescription": {"text": "The function was skipped."},
        "fullDescription": {
            "text": "utdebug did not check this function on purpose: functions defined inside "
            "a block (an `if` or `try` at module level, a nested class) are not checked, nor "
            "functions marked with `# utdebug: skip`."
        },
        "help": {
            "text": "Define the function at module level (or as a method of a module-level "
            "class) to have it checked, or leave it skipped.",
        },
        "defaultConfiguration": {"level": "note"},
    },
)


def _note_rule(rule_id: str, name: str, short: str, full: str, help_text: str) -> dict[str, Any]:
    """A SARIF rule of level ``note``."""
    return {
        "id": rule_id,
        "name": name,
        "shortDescription": {"text": short},
        "fullDescription": {"text": full},
        "help": {"text": help_text},
        "defaultConfiguration": {"level": "note"},
    }


_DIFF_RULES: tuple[dict[str, Any], ...] = (
    {
        "id": "UTD004",
        "name": "changed-outcome",
        "shortDescription": {"text": "The function's outcome changed from its base version."},
        "fullDescription": {
            "text": "utdebug ran this function and its version at the base revision on the "
            "same synthesised inputs: on this input they disagree (another value, or an "
            "exception where there was none, or none where there was one)."
        },
        "help": {
            "text": "If the change is intended, record it with `utdebug check --accept` (the "
            "accept file goes into the repository); otherwise fix the regression.",
        },
        "defaultConfiguration": {"level": "error"},
        "properties": {"tags": ["correctness", "regression", "differential"]},
    },
    _note_rule(
        "UTD005",
        "function-not-compared",
        "The function was not compared with its base version.",
        "utdebug could not compare this changed function with its version at the base revision "
        "(no base version, no input it can make, a base that does not load ...). The result "
        "message says why.",
        "Add a test or a docstring example that calls the function with literal arguments, or "
        "type hints on its parameters, so inputs can be made.",
    ),
    _note_rule(
        "UTD006",
        "nondeterministic-function",
        "The function's outcomes differ between two runs.",
        "utdebug ran each version of this function twice on each input (other processes, hash "
        "seeds and clock readings): most inputs gave different outcomes in the two runs of one "
        "version, so no change can be told from chance.",
        "Nothing to fix if the function is meant to vary (the clock, random values); otherwise "
        "look for state, set order or time in its results.",
    ),
)
"""Listed only when the run compared functions with their base versions."""
_RULE_INDEX = {rule["id"]: i for i, rule in enumerate(_RULES + _DIFF_RULES)}


def _fingerprint(*parts: str) -> str:
    data = "\x00".join(parts).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def _artifact_uri(path: str) -> str:
    return urllib.parse.quote(path.replace("\\", "/").encode("utf-8", "surrogatepass"), safe="/")


def _root_uri(repository: str) -> str | None:
    """``file:///abs/repo/`` (percent-encoded, trailing slash), or None when not absolute."""
    for cls in (PurePosixPath, PureWindowsPath):
        pure = cls(repository)
        if repository and pure.is_absolute():
            try:
                uri = pure.as_uri()
            except (ValueError, UnicodeEncodeError):
                return None
            return uri if uri.endswith("/") else uri + "/"
    return None


def _utc_time(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _sarif_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _sarif_result(
    report: CheckReport, f: FunctionReport, rule_id: str, level: str, text: str
) -> dict[str, Any]:
    start, end = _lines(f)
    return {
        "ruleId": rule_id,
        "ruleIndex": _RULE_INDEX[rule_id],
        "level": level,
        "message": {"text": _simulated_prefix(report) + visible(text, keep="\n\t")},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": _artifact_uri(f.path), "uriBaseId": "%SRCROOT%"},
                    "region": {"startLine": start, "endLine": end},
                },
                "logicalLocations": [{"fullyQualifiedName": _qualified(f), "kind": "function"}],
            }
        ],
    }


_SARIF_STATUS = {
    Status.ERROR: ("UTD002", "warning", "could not be checked"),
    Status.SKIPPED: ("UTD003", "note", "was skipped"),
    Status.NOT_COMPARED: ("UTD005", "note", "was not compared with its base"),
    Status.NONDETERMINISTIC: ("UTD006", "note", "is nondeterministic"),
}
"""A function's status -> its SARIF rule, level and words (findings have their own)."""


def _sarif(report: CheckReport) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    for f in report.functions:
        for t in f.findings:
            result = _sarif_result(
                report,
                f,
                "UTD001",
                "error",
                f"{f.qualname} fails a generated test: {t.call} should give {t.expected} "
                f"({_votes(t)} agree), but it {_outcome(t)}",
            )
            result["partialFingerprints"] = {
                FINGERPRINT_KEY: _fingerprint(f.path, f.qualname, t.code or t.call)
            }
            result["properties"] = {
                **({"code": t.code} if t.code else {}),
                "call": t.call,
                "expected": t.expected,
                "share": round(t.share, 4),
                "draws": t.draws,
                "verdict": t.verdict.value,
                "actual": t.actual,
            }
            results.append(result)
        for c in f.changes:
            result = _sarif_result(
                report,
                f,
                "UTD004",
                "error",
                f"{f.qualname} changed behaviour: {c.call} {c.description}",
            )
            result["partialFingerprints"] = {
                FINGERPRINT_KEY: _fingerprint("UTD004", f.path, f.qualname, c.input, c.after)
            }
            result["properties"] = {
                "call": c.call,
                "input": c.input,
                "before": c.before,
                "after": c.after,
                "base": f.differential.base if f.differential is not None else None,
            }
            results.append(result)
        if f.status in _SARIF_STATUS:
            rule_id, level, what = _SARIF_STATUS[f.status]
            text = f"{f.qualname} {what}: {f.message}"
            result = _sarif_result(report, f, rule_id, level, text)
            result["partialFingerprints"] = {
                FINGERPRINT_KEY: _fingerprint(rule_id, f.path, f.qualname)
            }
            result["properties"] = {"status": f.status.value, "cached": f.cached}
            results.append(result)

    diff_rules = _DIFF_RULES if any(f.differential for f in report.functions) else ()
    exit_code = report.exit_code()
    invocation: dict[str, Any] = {
        "executionSuccessful": exit_code != Exit.USAGE and report.partial is None,
        "exitCode": exit_code,
        "exitCodeDescription": _EXIT_MEANING.get(exit_code, ""),
    }
    if report.partial is not None:
        if report.partial.reason != "deadline":
            invocation["exitSignalName"] = report.partial.reason
        note = {"level": "error", "message": {"text": report.partial.message()}}
        invocation["toolExecutionNotifications"] = [note]
    started = _utc_time(report.started_at) if report.started_at else None
    if started is not None:
        invocation["startTimeUtc"] = _sarif_time(started)
        invocation["endTimeUtc"] = _sarif_time(
            started + timedelta(seconds=max(0.0, report.seconds))
        )

    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "utdebug",
                "version": report.tool_version,
                "rules": [dict(rule) for rule in _RULES + diff_rules],
            }
        },
        "invocations": [invocation],
        "results": results,
        "columnKind": "unicodeCodePoints",
        "properties": {
            "model": report.model,
            "simulated": report.simulated,
            "revision": report.revision,
            "base": report.base,
            "min_votes": report.min_votes,
            **_sarif_compared(report),
            **({"partial": report.partial.to_json()} if report.partial is not None else {}),
        },
    }
    root = _root_uri(report.repository)
    if root is not None:
        run["originalUriBaseIds"] = {"%SRCROOT%": {"uri": root}}
    log = {"$schema": SARIF_SCHEMA_URI, "version": "2.1.0", "runs": [run]}
    cleaned: dict[str, Any] = _without_surrogates(log)
    return cleaned


def _sarif_compared(report: CheckReport) -> dict[str, Any]:
    """The run's comparison with the base as run properties (none when not run)."""
    line = _compared_line(report)
    if line is None:
        return {}
    return {
        "compared": report.compared,
        "changed_functions": len(report.changed_functions),
        "min_compared": report.min_compared,
        "comparison": line,
    }


def _without_surrogates(data: Any) -> Any:
    """``data`` with each lone surrogate in a string shown as ``\\udXXX`` text.

    Strict JSON readers reject a lone surrogate even as a ``\\u`` escape; SARIF goes to such
    readers (code scanning), so the character becomes visible text instead.
    """
    if isinstance(data, str):
        return _SURROGATE.sub(lambda m: escape_char(m.group()), data)
    if isinstance(data, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_without_surrogates(v) for v in data]
    return data
