"""What the formats of ``utdebug check`` share: the run's summary and comparison lines, a
test's votes and outcome, a function's place, the JSON writer and :class:`Layout` (how the
human format is laid out), and the SIMULATED note every format carries."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from utdebug.check.report import (
    Change,
    CheckReport,
    FunctionReport,
    Status,
    TestResult,
    TestVerdict,
    Unstable,
)
from utdebug.cli_common import Exit
from utdebug.text_safety import json_text


@dataclass(frozen=True, slots=True)
class Layout:
    """How a report is laid out: colour and the line width (``None``: no line is wrapped, as
    in a file). Only the human format reads it."""

    color: bool = False
    width: int | None = None


SIMULATED_NOTE = (
    "the model is scripted (its answers are replayed), not a language model; "
    "these results are not real model output."
)

EXIT_MEANING = {
    Exit.OK: "no findings",
    Exit.FAILURE: "findings",
    Exit.USAGE: "some functions could not be checked",
    Exit.DEADLINE: "partial report: stopped by its deadline",
    Exit.INTERRUPTED: "partial report: stopped by SIGINT",
    Exit.TERMINATED: "partial report: stopped by SIGTERM",
}


SURROGATE = re.compile(r"[\ud800-\udfff]")


def dumps(data: Any) -> str:
    """JSON text (UTF-8 safe, safe to print): a lone surrogate, a C1 control or a
    bidirectional control becomes its ``\\uXXXX`` escape, losslessly (:func:`json_text`)."""
    text = json.dumps(data, indent=2, ensure_ascii=False)
    return json_text(SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)) + "\n"


def line_number(n: int) -> int:
    return n if n >= 1 else 1


def line_span(f: FunctionReport) -> tuple[int, int]:
    start = line_number(f.line)
    return start, max(start, f.end_line)


def votes(t: TestResult) -> str:
    """``8/8 votes`` (share of the drawn votes), or ``100%`` without voting."""
    if t.draws > 0:
        return f"{round(t.share * t.draws)}/{t.draws} votes"
    return f"{t.share:.0%}"


def outcome(t: TestResult) -> str:
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


def weak_failures(f: FunctionReport) -> tuple[TestResult, ...]:
    """Failing tests that are not findings (their expected output won too few votes)."""
    return tuple(t for t in f.tests if t.verdict is not TestVerdict.PASS and not t.finding)


def dotted_module(path: str) -> str:
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


def qualified(f: FunctionReport) -> str:
    module = dotted_module(f.path)
    if not f.qualname or f.qualname == "<module>":
        return module
    return f"{module}.{f.qualname}"


def exit_text(report: CheckReport) -> str:
    code = report.exit_code()
    meaning = EXIT_MEANING.get(code, "")
    if code == Exit.OK and report.errors:
        meaning = "no findings; functions that could not be checked are allowed"
    if code == Exit.FAILURE and not report.findings:
        meaning = "too few functions compared with their base (--min-compared)"
    return f"exit code {code} ({meaning})" if meaning else f"exit code {code}"


def plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def summary(report: CheckReport) -> str:
    fns = report.functions
    cached = sum(f.cached for f in fns)
    checked = plural(len(fns), "function")
    if report.partial is not None:  # the ones the run did not finish are not checked
        checked = f"{len(fns) - report.partial.unfinished} of {checked}"
    return (
        f"{checked} checked: {plural(report.findings, 'finding')}"
        f" in {plural(report.count(Status.FINDINGS), 'function')},"
        f" {plural(report.errors, 'error')}, {report.count(Status.SKIPPED)} skipped,"
        f" {cached} cached, {report.seconds:.1f} s; {exit_text(report)}"
    )


def compared_line(report: CheckReport) -> str | None:
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
        f"compared {report.compared} of {plural(total, 'changed function')} with their base "
        f"version ({', '.join(others)})"
    )
    if report.min_compared:
        share = report.compared / total if total else 1.0
        verdict = "too few: exit code 1" if report.compared_too_few else "enough"
        line += f"; --min-compared {report.min_compared:.0%}: {share:.0%} compared, {verdict}"
    return line


def status_text(f: FunctionReport) -> str:
    found = f.status is Status.FINDINGS
    text = plural(len(f.findings) + len(f.changes), "finding") if found else f.status.value
    d = f.differential
    if f.status is Status.OK and not f.tests and d is not None and d.compared:
        text = f"unchanged on {plural(d.inputs, 'input')}"
    return f"{text} (cached)" if f.cached else text


def base_label(f: FunctionReport) -> str:
    d = f.differential
    return f"base {d.base[:12]}" if d is not None and d.base else "base"


def change_text(c: Change) -> str:
    """``f(5): was 6, now 7``."""
    return f"{c.call}: {c.description}"


def unstable_text(u: Unstable) -> str:
    """``f(5): the base gave 6, then 7``."""
    who = "the base" if u.version == "base" else "the checked version"
    return f"{u.call}: {who} gave {u.first}, then {u.second}"


def rate(x: float | None) -> str:
    return "?" if x is None else f"{x:.0%}"


def simulated_prefix(report: CheckReport) -> str:
    return "[SIMULATED] " if report.simulated else ""
