"""The JUnit XML format of ``utdebug check``: a test suite per function, a test case per
generated test and per changed outcome; text XML 1.0 forbids is shown as escapes."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from utdebug.check.formats import common
from utdebug.check.formats.common import Layout
from utdebug.check.report import CheckReport, FunctionReport, Status, TestResult, TestVerdict
from utdebug.text_safety import escape_char, visible

# Characters XML 1.0 does not allow (anywhere, escaped or not).
_XML_INVALID = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml(text: str) -> str:
    """``text`` with the characters XML 1.0 forbids shown as backslash escapes."""
    return _XML_INVALID.sub(lambda m: escape_char(m.group()), text)


def render(report: CheckReport, layout: Layout) -> str:
    """The report as a JUnit XML document (``layout`` is not read)."""
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
    prefix = common.simulated_prefix(report)
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

    classname = _one(common.dotted_module(f.path))
    location = {"file": _one(f.path), "line": str(common.line_number(f.line))}
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
    line = common.compared_line(report)
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
    prefix = common.simulated_prefix(report)
    attrs = {"classname": classname, **location, "time": "0.000"}
    for c in d.changes:
        name = _one(f"{f.qualname}: {c.call} against the {common.base_label(f)}")
        case = ET.SubElement(suite, "testcase", {**attrs, "name": name})
        failure = ET.SubElement(
            case,
            "failure",
            {"type": "utdebug.changed_outcome", "message": _one(prefix + c.description)},
        )
        failure.text = (
            _one(f"{prefix}{f.target} (line {common.line_number(f.line)}) changed behaviour") + "\n"
            f"call:   {_one(c.call)}\nbefore: {_one(c.before)}\nnow:    {_one(c.after)}\n"
        )
        counts["tests"] += 1
        counts["failures"] += 1
    if not d.changes:
        name = _one(f"{f.qualname}: against the {common.base_label(f)}")
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
        f"expected: {_one(t.expected)}  ({common.votes(t)}, share {t.share:.0%})\n"
        f"actual:   {_one(common.outcome(t))}\n"
        f"verdict:  {t.verdict.value}\n"
    )
    if t.finding:
        message = f"{prefix}expected {t.expected} ({common.votes(t)}), got {common.outcome(t)}"
        failure = ET.SubElement(
            case, "failure", {"type": "utdebug.finding", "message": _one(message)}
        )
        heading = f"{prefix}{f.target} (line {common.line_number(f.line)}) fails a generated test"
        failure.text = _one(heading) + "\n" + details
        return "failures"
    if t.verdict is not TestVerdict.PASS:
        message = f"fails, but only {t.share:.0%} of votes agree on the expected output"
        skipped = ET.SubElement(case, "skipped", {"message": message})
        skipped.text = details
        return "skipped"
    return None
