"""The output formats of ``utdebug check`` (utdebug.check.formats) and their schemas."""

from __future__ import annotations

import copy
import hashlib
import io
import json
import subprocess
import sys
import xml.dom.minidom
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from utdebug.check import formats
from utdebug.check.formats import FORMATS, Layout, render, schema, write_human
from utdebug.check.report import (
    CheckReport,
    FixResult,
    FunctionReport,
    Status,
    TestResult,
    TestVerdict,
)

DATA = Path(__file__).parent / "data"
SARIF_SCHEMA_PATH = DATA / "sarif-schema-2.1.0.json"
SARIF_SCHEMA_SHA256 = "80cd7ffb9b62a4162d541aa9170862dd264f6cce0f04c57f1ac9f2337b808958"

NASTY = "\x00\x1b]0;x\x07<&>'\"\n%:,"
UNICODE = "héllo_wörld_λ_€_😀"

# --------------------------------------------------------------------------------------------
# Reports built by hand

FINDING = TestResult(1, "add(1, 2)", "3", 1.0, 8, TestVerdict.FAIL, "returned 4", finding=True)
WEAK = TestResult(2, "add(0, 0)", "0", 0.5, 8, TestVerdict.FAIL, "returned 1", finding=False)
PASSING = TestResult(3, "add(2, 2)", "4", 1.0, 8, TestVerdict.PASS, None, finding=False)
PATCH = (
    "--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1,2 +1,2 @@\n"
    "-    return a + b + 1\n+    return a + b\n"
)


def _functions() -> tuple[FunctionReport, ...]:
    return (
        FunctionReport(
            "pkg/mod.py",
            "add",
            10,
            14,
            Status.FINDINGS,
            "2 of 3 tests fail",
            tests=(FINDING, WEAK, PASSING),
            seconds=1.5,
            fix=FixResult(pass_before=1 / 3, pass_after=1.0, accepted_edits=1, patch=PATCH),
        ),
        FunctionReport(
            "pkg/broken.py",
            "load",
            0,
            0,
            Status.ERROR,
            "its module does not load in the sandbox: ModuleNotFoundError: No module named 'x'",
        ),
        FunctionReport("pkg/shapes.py", "Shape.area", 3, 5, Status.SKIPPED, "a method"),
        FunctionReport(
            "pkg/ok.py",
            "double",
            1,
            2,
            Status.OK,
            "1 test passes",
            tests=(TestResult(1, "double(2)", "4", 1.0, 0, TestVerdict.PASS),),
            cached=True,
            seconds=0.01,
        ),
        FunctionReport(
            "pkg/text.py",
            "shout",
            20,
            25,
            Status.FINDINGS,
            "1 of 1 tests fail",
            tests=(
                TestResult(
                    1,
                    "shout('a')",
                    "'A!'",
                    0.875,
                    8,
                    TestVerdict.ERROR,
                    "raised ValueError: bad",
                    finding=True,
                ),
            ),
            seconds=0.5,
        ),
    )


def make_report(*, simulated: bool = False, **changes: Any) -> CheckReport:
    fields: dict[str, Any] = {
        "tool_version": "0.1.0",
        "model": "scripted:replies.json" if simulated else "openai/gpt-4o-mini",
        "simulated": simulated,
        "repository": "/home/ci/my repo",
        "revision": "working tree",
        "base": "origin/main",
        "min_votes": 0.75,
        "settings": {"n": 3, "k": 8, "threshold": 0.5},
        "functions": _functions(),
        "started_at": "2024-05-01T10:00:00+00:00",
        "seconds": 12.5,
    }
    fields.update(changes)
    return CheckReport(**fields)


def nasty_report() -> CheckReport:
    """Model output can contain anything: control characters, markup, surrogates, long text."""
    long_value = "x" * 20_000
    tests = (
        TestResult(
            1,
            f"f({NASTY!s}, '{UNICODE}')",
            repr(NASTY),
            0.875,
            8,
            TestVerdict.ERROR,
            f"raised ValueError: {NASTY}\ud800[bold red]not markup[/]",
            finding=True,
        ),
        TestResult(2, f"f('{long_value}')", repr(long_value), 1.0, 8, TestVerdict.FAIL, "x", True),
        TestResult(3, f"f({NASTY})", repr(UNICODE), 0.25, 4, TestVerdict.TIMEOUT, None, False),
    )
    functions = (
        FunctionReport(
            f"pkg/{UNICODE} dir,x/mod%:.py",
            f"f_{UNICODE}",
            0,
            0,
            Status.FINDINGS,
            f"2 of 3 tests fail {NASTY}",
            tests=tests,
        ),
        FunctionReport("pkg/e.py", "e", 4, 2, Status.ERROR, f"model error: {NASTY}\ud800"),
        FunctionReport("pkg/s.py", "s", 1, 1, Status.SKIPPED, f"skip {NASTY}"),
    )
    return make_report(
        simulated=True,
        functions=functions,
        model=f"scripted:{NASTY}",
        revision=f"rev {NASTY}",
        base=None,
        repository=f"/tmp/répo {UNICODE}/x",
    )


def empty_report() -> CheckReport:
    return make_report(functions=(), started_at="", seconds=0.0, base=None)


REPORTS = {
    "simulated": lambda: make_report(simulated=True),
    "real": lambda: make_report(simulated=False),
    "empty": empty_report,
    "nasty": nasty_report,
    "errors-allowed": lambda: make_report(
        functions=_functions()[1:4], allow_errors=True, started_at=""
    ),
}


@pytest.fixture(params=sorted(REPORTS))
def any_report(request: pytest.FixtureRequest) -> CheckReport:
    report: CheckReport = REPORTS[request.param]()
    return report


# --------------------------------------------------------------------------------------------
# The module


def test_formats_are_the_documented_ones() -> None:
    assert tuple(FORMATS) == ("human", "json", "junit", "github", "sarif")


def test_each_format_row_holds_its_renderer() -> None:
    """``render`` looks the format up in the table: a row's renderer is what it runs."""
    report = make_report()
    for name, row in FORMATS.items():
        assert row.name == name
        assert render(report, name) == row.render(report, Layout())
        assert row.render.__module__.startswith("utdebug.check.formats.")
    modules = {row.render.__module__ for row in FORMATS.values()}
    assert len(modules) == len(FORMATS)  # one module per format


def test_unknown_format_raises_value_error() -> None:
    with pytest.raises(ValueError, match="nope"):
        render(make_report(), "nope")


def test_every_format_renders_every_report_as_text(any_report: CheckReport) -> None:
    for fmt in FORMATS:
        text = render(any_report, fmt)
        assert isinstance(text, str)
        assert text.endswith("\n")
        text.encode("utf-8")  # no lone surrogate reaches a file or a pipe


def test_import_is_light() -> None:
    """The module imports without rich, Textual or litellm (startup time)."""
    code = (
        "import sys, utdebug.check.formats as f; "
        "heavy = [m for m in ('rich', 'textual', 'litellm') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"


# --------------------------------------------------------------------------------------------
# JSON and its schema


def _report_validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(
        schema(), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    doc = schema()
    assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(doc)
    on_disk = json.loads(
        (Path(formats.__file__).parent.parent / "report.schema.json").read_text(encoding="utf-8")
    )
    assert doc == on_disk
    doc["title"] = "changed"
    assert schema()["title"] != "changed", "schema() hands out a fresh copy"


def _walk_properties(node: Any, where: str = "") -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        for name, sub in node.get("properties", {}).items():
            found.append((f"{where}.{name}", sub))
        for key, value in node.items():
            if key not in ("if", "then", "else"):  # conditions, not field definitions
                found.extend(_walk_properties(value, f"{where}/{key}"))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found.extend(_walk_properties(value, f"{where}[{i}]"))
    return found


def test_schema_documents_every_field_and_closes_every_object() -> None:
    doc = schema()
    props = _walk_properties(doc)
    assert len(props) >= 40
    undocumented = [where for where, sub in props if not sub.get("description")]
    assert undocumented == []
    # Every object the report writes is closed and lists its required fields.
    objects = [doc, doc["properties"]["tool"], doc["properties"]["summary"], *doc["$defs"].values()]
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert sorted(obj["required"]) == sorted(obj["properties"])


def test_schema_covers_exactly_what_to_json_writes() -> None:
    report = make_report()
    data = report.to_json()
    doc = schema()
    assert set(data) == set(doc["properties"])
    assert set(data["summary"]) == set(doc["properties"]["summary"]["properties"])
    function = data["functions"][0]
    assert set(function) == set(doc["$defs"]["function"]["properties"])
    assert set(function["tests"][0]) == set(doc["$defs"]["test"]["properties"])
    assert set(function["fix"]) == set(doc["$defs"]["fix"]["properties"])
    assert doc["$defs"]["function"]["properties"]["status"]["enum"] == [s.value for s in Status]
    verdicts = [v.value for v in TestVerdict]
    assert doc["$defs"]["test"]["properties"]["verdict"]["enum"] == verdicts


def test_json_output_is_to_json_and_validates(any_report: CheckReport) -> None:
    text = render(any_report, "json")
    data = json.loads(text)
    assert data == any_report.to_json()
    errors = list(_report_validator().iter_errors(data))
    assert errors == [], [e.message for e in errors]


def test_json_keeps_unicode_readable() -> None:
    text = render(nasty_report(), "json")
    assert UNICODE in text  # ensure_ascii=False
    assert "\\u0000" in text  # control characters are JSON escapes
    assert "\\ud800" in text  # a lone surrogate as an escape: the text encodes as UTF-8
    assert json.loads(text)["functions"][1]["message"].endswith("\ud800")


def _broken(mutate: Any) -> dict[str, Any]:
    data = copy.deepcopy(make_report().to_json())
    mutate(data)
    return data


def _set(path: tuple[Any, ...], value: Any) -> Any:
    def mutate(data: Any) -> None:
        for key in path[:-1]:
            data = data[key]
        data[path[-1]] = value

    return mutate


def _delete(path: tuple[Any, ...]) -> Any:
    def mutate(data: Any) -> None:
        for key in path[:-1]:
            data = data[key]
        del data[path[-1]]

    return mutate


@pytest.mark.parametrize(
    "mutate",
    [
        _set(("functions", 0, "status"), "failed"),
        _delete(("functions", 0, "message")),
        _delete(("summary",)),
        _set(("functions", 0, "tests", 0, "verdict"), "wrong"),
        _set(("functions", 0, "tests", 0, "share"), 1.5),
        _set(("functions", 0, "tests", 0, "draws"), -1),
        _set(("functions", 0, "line"), "10"),
        _set(("functions", 0, "fix", "applied"), "yes"),
        _set(("functions", 0, "extra"), 1),
        _set(("schema_version",), 1),  # the version before `code` and `refused_replies`
        _set(("exit_code",), 3),
        _set(("simulated",), "false"),
        _set(("tool", "name"), "other"),
        _set(("started_at",), "yesterday"),
        # A passing test is never a finding.
        _set(("functions", 0, "tests", 2, "finding"), True),
    ],
    ids=[
        "status-enum",
        "missing-message",
        "missing-summary",
        "verdict-enum",
        "share-above-1",
        "negative-draws",
        "line-as-string",
        "applied-as-string",
        "extra-field",
        "schema-version",
        "exit-code",
        "simulated-as-string",
        "tool-name",
        "started-at",
        "passing-finding",
    ],
)
def test_schema_rejects_broken_reports(mutate: Any) -> None:
    assert list(_report_validator().iter_errors(make_report().to_json())) == []
    assert list(_report_validator().iter_errors(_broken(mutate))) != []


# --------------------------------------------------------------------------------------------
# SARIF


def _sarif_validator() -> jsonschema.Draft7Validator:
    doc = json.loads(SARIF_SCHEMA_PATH.read_text(encoding="utf-8"))
    return jsonschema.Draft7Validator(doc, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)


def test_vendored_sarif_schema_is_the_recorded_file() -> None:
    raw = SARIF_SCHEMA_PATH.read_bytes()
    assert hashlib.sha256(raw).hexdigest() == SARIF_SCHEMA_SHA256
    assert SARIF_SCHEMA_SHA256 in (DATA / "README.md").read_text(encoding="utf-8")
    doc = json.loads(raw)
    assert doc["$schema"] == "http://json-schema.org/draft-07/schema#"
    assert doc["$id"].startswith("https://raw.githubusercontent.com/oasis-tcs/sarif-spec/")
    assert doc["required"] == ["version", "runs"]
    assert "properties" in doc
    jsonschema.Draft7Validator.check_schema(doc)


def test_sarif_validates_against_the_oasis_schema(any_report: CheckReport) -> None:
    log = json.loads(render(any_report, "sarif"))
    errors = list(_sarif_validator().iter_errors(log))
    assert errors == [], [f"{list(e.path)}: {e.message}" for e in errors]


def test_sarif_validator_is_not_vacuous() -> None:
    log = json.loads(render(make_report(), "sarif"))
    log["runs"][0]["results"][0]["level"] = "fatal"
    assert list(_sarif_validator().iter_errors(log)) != []
    log = json.loads(render(make_report(), "sarif"))
    log["runs"][0]["results"][1]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    assert list(_sarif_validator().iter_errors(log)) != []


def test_sarif_results_are_what_the_report_implies() -> None:
    report = make_report()
    log = json.loads(render(report, "sarif"))
    assert log["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "utdebug"
    assert driver["version"] == "0.1.0"
    assert "informationUri" not in driver
    rules = {rule["id"]: rule for rule in driver["rules"]}
    assert list(rules) == ["UTD001", "UTD002", "UTD003"]
    assert rules["UTD001"]["name"] == "failing-generated-test"
    assert rules["UTD002"]["name"] == "function-not-checked"
    assert rules["UTD003"]["name"] == "function-skipped"
    levels = {rid: rule["defaultConfiguration"]["level"] for rid, rule in rules.items()}
    assert levels == {"UTD001": "error", "UTD002": "warning", "UTD003": "note"}
    for rule in rules.values():
        assert rule["shortDescription"]["text"]
        assert rule["fullDescription"]["text"]
        assert rule["help"]["text"]

    results = run["results"]
    assert len(results) == report.findings + report.errors + report.count(Status.SKIPPED) == 4
    summary = [
        (
            r["ruleId"],
            r["level"],
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
            r["locations"][0]["physicalLocation"]["region"]["endLine"],
            r["locations"][0]["logicalLocations"][0]["fullyQualifiedName"],
        )
        for r in results
    ]
    assert summary == [
        ("UTD001", "error", "pkg/mod.py", 10, 14, "pkg.mod.add"),
        ("UTD002", "warning", "pkg/broken.py", 1, 1, "pkg.broken.load"),  # line 0 -> 1
        ("UTD003", "note", "pkg/shapes.py", 3, 5, "pkg.shapes.Shape.area"),
        ("UTD001", "error", "pkg/text.py", 20, 25, "pkg.text.shout"),
    ]
    for r in results:
        assert r["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert r["locations"][0]["logicalLocations"][0]["kind"] == "function"
        assert rules[r["ruleId"]] is driver["rules"][r["ruleIndex"]]
        assert not r["message"]["text"].startswith("[SIMULATED]")

    first = results[0]
    assert "add(1, 2)" in first["message"]["text"]
    assert "returned 4" in first["message"]["text"]
    assert first["properties"] == {
        "call": "add(1, 2)",
        "expected": "3",
        "share": 1.0,
        "draws": 8,
        "verdict": "fail",
        "actual": "returned 4",
    }
    assert "ModuleNotFoundError" in results[1]["message"]["text"]

    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": "file:///home/ci/my%20repo/"}}
    (invocation,) = run["invocations"]
    assert invocation["exitCode"] == 1
    assert invocation["executionSuccessful"] is True
    assert invocation["startTimeUtc"] == "2024-05-01T10:00:00.000Z"
    assert run["properties"] == {
        "model": "openai/gpt-4o-mini",
        "simulated": False,
        "revision": "working tree",
        "base": "origin/main",
        "min_votes": 0.75,
    }


def test_sarif_fingerprints_are_stable_and_distinct() -> None:
    def prints(report: CheckReport) -> list[str]:
        log = json.loads(render(report, "sarif"))
        return [r["partialFingerprints"]["utdebugFinding/v1"] for r in log["runs"][0]["results"]]

    first = prints(make_report())
    assert first == prints(make_report())
    assert len(set(first)) == len(first) == 4
    assert all(len(p) == 64 and int(p, 16) >= 0 for p in first)
    # A finding is identified by its path, function and call: not its line, votes or the model.
    moved = make_report(
        simulated=True,
        functions=tuple(
            FunctionReport(
                f.path, f.qualname, f.line + 7, f.end_line + 7, f.status, f.message, f.tests
            )
            for f in _functions()
        ),
    )
    assert prints(moved) == first
    expected = hashlib.sha256(b"pkg/mod.py\x00add\x00add(1, 2)").hexdigest()
    assert first[0] == expected


def test_sarif_simulated_results_say_so() -> None:
    log = json.loads(render(make_report(simulated=True), "sarif"))
    run = log["runs"][0]
    assert run["properties"]["simulated"] is True
    assert run["results"]
    assert all(r["message"]["text"].startswith("[SIMULATED] ") for r in run["results"])


def test_sarif_of_errors_only_is_an_unsuccessful_execution() -> None:
    report = make_report(functions=_functions()[1:2])
    invocation = json.loads(render(report, "sarif"))["runs"][0]["invocations"][0]
    assert invocation == {
        "executionSuccessful": False,
        "exitCode": 2,
        "exitCodeDescription": "some functions could not be checked",
        "startTimeUtc": "2024-05-01T10:00:00.000Z",
        "endTimeUtc": "2024-05-01T10:00:12.500Z",
    }


def test_sarif_keeps_nasty_strings_whole() -> None:
    report = nasty_report()
    log = json.loads(render(report, "sarif"))
    run = log["runs"][0]
    finding = run["results"][0]
    assert finding["properties"]["expected"] == repr(NASTY)
    assert finding["properties"]["actual"].startswith(f"raised ValueError: {NASTY}")
    assert "\\ud800" in finding["properties"]["actual"]  # a lone surrogate becomes visible text
    assert run["results"][1]["properties"]["expected"] == repr("x" * 20_000)  # not truncated
    location = finding["locations"][0]["physicalLocation"]
    assert location["region"] == {"startLine": 1, "endLine": 1}
    uri = location["artifactLocation"]["uri"]
    assert " " not in uri and "," not in uri and "%25" in uri
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"].startswith("file:///tmp/r%C3%A9po%20")
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"].endswith("/x/")


def test_sarif_without_an_absolute_repository_has_no_base_uri() -> None:
    run = json.loads(render(make_report(repository="relative/dir"), "sarif"))["runs"][0]
    assert "originalUriBaseIds" not in run
    assert list(_sarif_validator().iter_errors({"version": "2.1.0", "runs": [run]})) == []


# --------------------------------------------------------------------------------------------
# JUnit XML

COUNTS = ("tests", "failures", "errors", "skipped")


def _junit(report: CheckReport) -> ET.Element:
    text = render(report, "junit")
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    return ET.fromstring(text.encode("utf-8"))


def _child_counts(cases: list[ET.Element]) -> dict[str, int]:
    return {
        "tests": len(cases),
        "failures": sum(len(c.findall("failure")) for c in cases),
        "errors": sum(len(c.findall("error")) for c in cases),
        "skipped": sum(len(c.findall("skipped")) for c in cases),
    }


def test_junit_counts_match_the_children(any_report: CheckReport) -> None:
    root = _junit(any_report)
    assert root.tag == "testsuites"
    assert root.get("name") == "utdebug check"
    suites = root.findall("testsuite")
    assert len(suites) == len(any_report.functions)
    for suite in suites:
        counts = _child_counts(suite.findall("testcase"))
        assert {k: int(suite.get(k, "-1")) for k in COUNTS} == counts
        assert float(suite.get("time", "x")) >= 0
    everything = _child_counts(root.findall("testsuite/testcase"))
    assert {k: int(root.get(k, "-1")) for k in COUNTS} == everything
    assert float(root.get("time", "x")) == pytest.approx(any_report.seconds, abs=1e-3)
    # minidom, a second parser, reads it too.
    dom = xml.dom.minidom.parseString(render(any_report, "junit").encode("utf-8"))
    assert dom.documentElement is not None
    assert dom.documentElement.tagName == "testsuites"
    assert len(dom.getElementsByTagName("testcase")) == everything["tests"]


def test_junit_structure() -> None:
    report = make_report(simulated=True)
    root = _junit(report)
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert list(suites) == [f.target for f in report.functions]

    for suite in suites.values():
        props = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
        assert props["model"] == "scripted:replies.json"
        assert props["simulated"] == "true"
        assert props["revision"] == "working tree"
        assert props["base"] == "origin/main"
        assert props["min_votes"] == "0.75"

    add = suites["pkg/mod.py::add"]
    cases = add.findall("testcase")
    assert [c.get("name") for c in cases] == ["add: add(1, 2)", "add: add(0, 0)", "add: add(2, 2)"]
    for case in cases:
        assert case.get("classname") == "pkg.mod"
        assert case.get("file") == "pkg/mod.py"
        assert case.get("line") == "10"
    failure = cases[0].find("failure")
    assert failure is not None
    assert failure.get("type") == "utdebug.finding"
    assert failure.get("message") == "[SIMULATED] expected 3 (8/8 votes), got returned 4"
    assert "add(1, 2)" in (failure.text or "")
    skipped = cases[1].find("skipped")
    assert skipped is not None
    assert skipped.get("message") == "fails, but only 50% of votes agree on the expected output"
    assert list(cases[2]) == []  # a passing test is a plain test case

    (error_case,) = suites["pkg/broken.py::load"].findall("testcase")
    assert error_case.get("name") == "load"
    assert error_case.get("line") == "1"
    error = error_case.find("error")
    assert error is not None
    assert error.get("type") == "utdebug.not_checked"
    assert "ModuleNotFoundError" in (error.get("message") or "")

    (skip_case,) = suites["pkg/shapes.py::Shape.area"].findall("testcase")
    skip = skip_case.find("skipped")
    assert skip is not None
    assert skip.get("message") == "a method"

    # add: 3 tests, load: 1 error, Shape.area: 1 skipped, double: 1 test, shout: 1 test.
    assert {k: int(root.get(k, "-1")) for k in COUNTS} == {
        "tests": 7,
        "failures": 2,
        "errors": 1,
        "skipped": 2,
    }


def test_junit_sanitizes_nasty_strings() -> None:
    text = render(nasty_report(), "junit")
    for bad in ("\x00", "\x1b", "\x07", "\ud800"):
        assert bad not in text
    root = ET.fromstring(text.encode("utf-8"))
    case = root.find("testsuite/testcase")
    assert case is not None
    name = case.get("name") or ""
    # The characters XML cannot hold survive as visible escapes; the rest as themselves.
    assert "\\x00\\x1b]0;x\\x07<&>'\"\\n%:," in name
    assert UNICODE in name
    assert case.get("classname") == f"pkg.{UNICODE} dir,x.mod%:"
    failure = case.find("failure")
    assert failure is not None
    assert "\\ud800[bold red]not markup[/]" in (failure.get("message") or "")
    # Nothing is truncated.
    long_case = root.findall("testsuite/testcase")[1]
    assert "x" * 20_000 in (long_case.get("name") or "")


# --------------------------------------------------------------------------------------------
# GitHub workflow commands


def test_github_exact_lines_and_escaping() -> None:
    functions = (
        FunctionReport(
            "pkg/mod.py",
            "pct",
            3,
            6,
            Status.FINDINGS,
            "1 of 2 tests fail",
            tests=(
                TestResult(
                    1,
                    "pct(50)",
                    "'50%'",
                    1.0,
                    8,
                    TestVerdict.FAIL,
                    "returned '50%%'\r\nsecond: line, end",
                    finding=True,
                ),
                TestResult(2, "pct(1)", "'1%'", 0.5, 8, TestVerdict.FAIL, "returned '1'"),
            ),
        ),
        FunctionReport("pkg/x,y.py", "load:it", 0, 0, Status.ERROR, "does not load: 100% bad"),
        FunctionReport("pkg/c.py", "C.m", 2, 4, Status.SKIPPED, "a method"),
    )
    report = make_report(functions=functions, seconds=1.0)
    assert render(report, "github").splitlines() == [
        "::error file=pkg/mod.py,line=3,endLine=6,title=utdebug%3A pct fails a generated test"
        "::pct(50)%0Aexpected: '50%25' (8/8 votes)%0Aactual: returned '50%25%25'%0D%0A"
        "second: line, end",
        "::warning file=pkg/x%2Cy.py,line=1,endLine=1,title=utdebug%3A could not check load%3Ait"
        "::does not load: 100%25 bad",
        "::notice file=pkg/c.py,line=2,endLine=4,title=utdebug%3A skipped C.m::a method",
        "::notice title=utdebug summary::3 functions checked: 1 finding in 1 function, 1 error,"
        " 1 skipped, 0 cached, 1.0 s; exit code 1 (findings)",
    ]


def test_github_simulated_run_says_so_first() -> None:
    lines = render(make_report(simulated=True), "github").splitlines()
    assert lines[0].startswith("::notice title=utdebug::SIMULATED")
    assert "not a language model" in lines[0]
    errors = [line for line in lines if line.startswith("::error ")]
    assert len(errors) == 2
    assert all("::[SIMULATED] " in line for line in errors)
    not_simulated = render(make_report(), "github")
    assert "SIMULATED" not in not_simulated


def test_github_every_line_is_a_command(any_report: CheckReport) -> None:
    text = render(any_report, "github")
    lines = text.splitlines()
    assert lines
    assert all(line.startswith("::") for line in lines), lines
    assert text.count("\n") == len(lines)
    assert lines[-1].startswith("::notice title=utdebug summary::")
    assert sum(line.startswith("::error ") for line in lines) == any_report.findings
    assert sum(line.startswith("::warning ") for line in lines) == any_report.errors
    for char in ("\x00", "\x1b", "\x07", "\r", "\ud800"):
        assert char not in text


def test_github_nasty_message_is_escaped() -> None:
    text = render(nasty_report(), "github")
    warning = next(line for line in text.splitlines() if line.startswith("::warning "))
    assert warning.startswith("::warning file=pkg/e.py,line=4,endLine=4,")
    assert warning.endswith("::[SIMULATED] model error: \\x00\\x1b]0;x\\x07<&>'\"%0A%25:,\\ud800")
    error = next(line for line in text.splitlines() if line.startswith("::error "))
    path_prop = error.split(",line=")[0]
    assert path_prop == f"::error file=pkg/{UNICODE} dir%2Cx/mod%25%3A.py"


# --------------------------------------------------------------------------------------------
# human


def test_human_shows_findings_weak_tests_and_fixes() -> None:
    text = render(make_report(), "human", width=200)
    assert "\x1b" not in text  # color=False: plain text
    assert "SIMULATED" not in text
    assert "openai/gpt-4o-mini" in text
    assert "origin/main" in text
    assert "min votes 0.75" in text
    assert "pkg/mod.py:10 add" in text
    assert "1 finding" in text
    assert "add(1, 2)" in text
    assert "expected  3  (8/8 votes)" in text
    assert "returned 4" in text
    assert "not confident" in text
    assert "add(0, 0)" in text and "(4/8 votes)" in text
    assert "(7/8 votes)" in text  # shout: 0.875 of 8
    assert "fix: pass rate 33% → 100%, 1 accepted edit, patch present" in text
    assert "pkg/broken.py:0 load  error" in text
    assert "ModuleNotFoundError" in text
    assert "Shape.area  skipped" in text
    assert "double  ok (cached)" in text
    assert "5 functions checked: 2 findings in 2 functions, 1 error, 1 skipped, 1 cached" in text
    assert "exit code 1 (findings)" in text


def test_human_simulated_label() -> None:
    text = render(make_report(simulated=True), "human", width=200)
    assert "SIMULATED" in text
    assert "scripted" in text and "not a language model" in text


def test_human_votes_without_voting_is_a_percentage() -> None:
    test = TestResult(1, "f(1)", "2", 1.0, 0, TestVerdict.FAIL, "returned 3", finding=True)
    fn = FunctionReport("m.py", "f", 1, 2, Status.FINDINGS, "1 of 1 tests fail", tests=(test,))
    text = render(make_report(functions=(fn,)), "human", width=200)
    assert "expected  2  (100%)" in text


def test_human_empty_report() -> None:
    text = render(empty_report(), "human", width=200)
    assert "no changed functions to check" in text
    assert "0 functions checked" in text
    assert "exit code 0 (no findings)" in text


def test_human_errors_allowed_exit_code() -> None:
    text = render(REPORTS["errors-allowed"](), "human", width=200)
    assert "exit code 0" in text
    text = render(make_report(functions=_functions()[1:2]), "human", width=200)
    assert "exit code 2 (some functions could not be checked)" in text


def test_human_never_passes_control_characters_or_markup_through() -> None:
    text = render(nasty_report(), "human", width=300)
    for char in ("\x00", "\x1b", "\x07", "\ud800"):
        assert char not in text
    assert "\\x1b]0;x\\x07" in text
    assert "[bold red]not markup[/]" in text  # shown as text, not interpreted
    assert UNICODE in text


def test_human_in_color() -> None:
    text = render(make_report(simulated=True), "human", color=True, width=200)
    assert "\x1b[" in text
    plain = render(make_report(simulated=True), "human", color=False, width=200)
    assert "\x1b[" not in plain


def test_write_human_prints_on_a_console() -> None:
    from rich.console import Console

    buffer = io.StringIO()
    console = Console(file=buffer, width=200, color_system=None)
    write_human(make_report(simulated=True), console)
    assert buffer.getvalue() == render(make_report(simulated=True), "human", width=200)
