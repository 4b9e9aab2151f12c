"""The SARIF 2.1.0 format of ``utdebug check`` (code scanning): a rule per kind of result, a
result per finding, changed outcome and function not checked, fingerprints that survive a
rerun."""

from __future__ import annotations

import hashlib
import urllib.parse
from datetime import UTC, datetime, timedelta
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from utdebug.check.formats import common
from utdebug.check.formats.common import Layout
from utdebug.check.report import CheckReport, FunctionReport, Status
from utdebug.cli_common import Exit
from utdebug.text_safety import escape_char, visible

SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
FINGERPRINT_KEY = "utdebugFinding/v1"

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
    start, end = common.line_span(f)
    return {
        "ruleId": rule_id,
        "ruleIndex": _RULE_INDEX[rule_id],
        "level": level,
        "message": {"text": common.simulated_prefix(report) + visible(text, keep="\n\t")},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": _artifact_uri(f.path), "uriBaseId": "%SRCROOT%"},
                    "region": {"startLine": start, "endLine": end},
                },
                "logicalLocations": [
                    {"fullyQualifiedName": common.qualified(f), "kind": "function"}
                ],
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
                f"({common.votes(t)} agree), but it {common.outcome(t)}",
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
        "exitCodeDescription": common.EXIT_MEANING.get(exit_code, ""),
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
    line = common.compared_line(report)
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
        return common.SURROGATE.sub(lambda m: escape_char(m.group()), data)
    if isinstance(data, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_without_surrogates(v) for v in data]
    return data


def render(report: CheckReport, layout: Layout) -> str:
    """The report as a SARIF log (``layout`` is not read)."""
    return common.dumps(_sarif(report))
