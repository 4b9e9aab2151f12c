"""A checked function's results as its report: the tests of a session (or of the cache) with
their verdicts, findings by the share of the votes, what kept it from being checked, the fix."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from utdebug.check.report import (
    FixResult,
    FunctionReport,
    Refusal,
    Status,
    TestResult,
    TestVerdict,
)

IO_ERRORS = frozenset(
    {
        "OSError",
        "IOError",
        "PermissionError",
        "FileNotFoundError",
        "FileExistsError",
        "IsADirectoryError",
        "NotADirectoryError",
        "ConnectionError",
        "ConnectionRefusedError",
        "ConnectionResetError",
        "BlockingIOError",
        "InterruptedError",
        "socket.gaierror",
        "gaierror",
        "TimeoutError",
    }
)
"""Exceptions that mean the function reached outside the sandbox (files, network)."""

_RAISED = re.compile(r"^raised ([\w.]+):")


def function_report(
    path: str,
    qualname: str,
    status: Status,
    message: str,
    line: int = 0,
    end_line: int = 0,
    **kw: Any,
) -> FunctionReport:
    """A function's report, its place in the file after its status and message."""
    return FunctionReport(path, qualname, line, end_line, status, message, **kw)


@dataclass(frozen=True, slots=True)
class SessionResult:
    """What a model's session gave for one function (the model path's stage value, and what
    the cache keeps): its tests run on the function, why its module did not load, the
    refused replies, the fix."""

    tests: tuple[TestResult, ...]
    """The tests and their verdicts (``finding`` is decided later, by ``min_votes``)."""
    load_error: str | None = None
    refused: tuple[Refusal, ...] = ()
    cacheable: bool = True
    """``False``: not kept (no test could be generated, a model error, a module that does not
    load: a rerun tries again)."""
    fix: FixResult | None = None
    fixed_code: str | None = None
    """The module with the accepted edits merged in, when a patch was made."""
    fix_error: str | None = None

    def to_json(self, version: int) -> dict[str, Any]:
        """The cache entry (``version``: the cache's)."""
        data: dict[str, Any] = {
            "version": version,
            "load_error": self.load_error,
            "tests": [_test_json(t) for t in self.tests],
            "cacheable": self.cacheable,
            "refused": [r.to_json() for r in self.refused],
            "fixed_code": self.fixed_code,
            "fix": None if self.fix is None else _fix_json(self.fix),
        }
        if self.fix_error is not None:
            data["fix_error"] = self.fix_error
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SessionResult:
        """A cache entry; ``KeyError``, ``TypeError`` or ``ValueError`` when it is not one."""
        tests = tuple(
            TestResult(
                id=int(t["id"]),
                call=str(t["call"]),
                expected=str(t["expected"]),
                share=float(t["share"]),
                draws=int(t["draws"]),
                verdict=TestVerdict(t["verdict"]),
                actual=None if t["verdict"] == "pass" else t.get("actual"),
                code=None if t.get("code") is None else str(t["code"]),
            )
            for t in list(data["tests"])
        )
        fix = None
        if data.get("fix") is not None:
            f = data["fix"]
            fix = FixResult(f["pass_before"], f["pass_after"], int(f["accepted_edits"]), f["patch"])
        refused = tuple(
            Refusal(str(r["purpose"]), str(r["reason"]), int(r["count"]))
            for r in data.get("refused") or []
            if isinstance(r, dict) and {"purpose", "reason", "count"} <= r.keys()
        )
        return cls(
            tests,
            data.get("load_error"),
            refused,
            bool(data.get("cacheable", True)),
            fix,
            data.get("fixed_code"),
            data.get("fix_error"),
        )


def _test_json(t: TestResult) -> dict[str, Any]:
    return {
        "id": t.id,
        "call": t.call,
        "expected": t.expected,
        "share": t.share,
        "draws": t.draws,
        "verdict": t.verdict.value,
        "actual": t.actual,
        "code": t.code,
    }


def _fix_json(f: FixResult) -> dict[str, Any]:
    return {k: v for k, v in f.to_json().items() if k != "applied"}


def judged_test(t: Any, judged: Any) -> TestResult:
    """A test and its run on the function (``finding`` left to :func:`report_of`)."""
    from utdebug.sandbox.values import describe
    from utdebug.sandbox.verdicts import Verdict

    if judged.verdict is Verdict.PASS:
        verdict = TestVerdict.PASS
    elif judged.verdict is Verdict.TIMEOUT:
        verdict = TestVerdict.TIMEOUT
    elif judged.verdict is Verdict.CRASH:
        verdict = TestVerdict.CRASH
    elif (judged.detail or "").startswith("raised "):
        verdict = TestVerdict.ERROR
    else:
        verdict = TestVerdict.FAIL
    actual = judged.detail
    if verdict is TestVerdict.TIMEOUT:
        actual = f"no answer in time ({judged.detail})" if judged.detail else "no answer in time"
    return TestResult(
        id=t.id,
        call=t.call,
        expected=describe(t.expected, 2000),
        share=t.share,
        draws=t.draws,
        verdict=verdict,
        actual=None if verdict is TestVerdict.PASS else actual,
        code=t.code() if t.program else None,
    )


def _io_error(tests: tuple[TestResult, ...]) -> str | None:
    for t in tests:
        m = _RAISED.match(t.actual or "")
        if t.verdict is TestVerdict.ERROR and m and m.group(1) in IO_ERRORS:
            return str(t.actual)[len("raised ") :]
    return None


def refused_replies(session: Any) -> tuple[Refusal, ...]:
    """The replies of a session that gave nothing usable, by purpose and reason, with counts
    (never their text): unparsable test proposals, refused votes and edits, and replies that
    were no answer (empty, or cut off by the server) and were asked again."""
    from collections import Counter

    from utdebug.engine.events import EditProposed, TestProposed, VoteCast

    counts: Counter[tuple[str, str]] = Counter()
    for ev in session.events:
        reason = getattr(ev, "reason", None)
        if reason is None:
            continue
        if isinstance(ev, TestProposed):
            counts["ut", str(reason)] += 1
        elif isinstance(ev, VoteCast):
            counts["vote", str(reason)] += 1
        elif isinstance(ev, EditProposed):
            counts["debug", str(reason)] += 1
    out = [Refusal(purpose, reason[:200], n) for (purpose, reason), n in counts.most_common()]
    interrupted = int(session.usage_json().get("interrupted", 0) or 0)
    if interrupted:
        out.append(
            Refusal("any", "no answer (empty, or cut off by the server): asked again", interrupted)
        )
    return tuple(out)


def from_cache(
    data: dict[str, Any], path: str, qualname: str, line: int, end: int, min_votes: float
) -> FunctionReport | None:
    """The report of a cache entry (``None``: an entry of another shape)."""
    try:
        result = SessionResult.from_json(data)
    except (KeyError, TypeError, ValueError):
        return None  # an entry of another shape: check again
    return replace(report_of(result, path, qualname, line, end, min_votes), cached=True)


def report_of(
    result: SessionResult, path: str, qualname: str, line: int, end: int, min_votes: float
) -> FunctionReport:
    """The report of a function's session: findings are failing tests whose expected output
    won at least ``min_votes`` of the votes."""
    tests = tuple(
        replace(t, finding=t.verdict is not TestVerdict.PASS and t.share >= min_votes - 1e-9)
        for t in result.tests
    )
    fix, refused = result.fix, result.refused
    failing = [t for t in tests if t.verdict is not TestVerdict.PASS]
    if result.load_error:
        from utdebug.engine.events import does_not_load_line

        msg = f"not checked: {does_not_load_line(result.load_error)}"
        return function_report(
            path, qualname, Status.ERROR, msg, line, end, tests=_no_findings(tests), fix=fix,
            refused=refused,
        )  # fmt: skip
    io = _io_error(tests)
    if io is not None:
        msg = (
            f"not checked: it does I/O the sandbox blocks ({io}); mark it '# utdebug: skip' "
            "or move the I/O out of the function"
        )
        return function_report(
            path, qualname, Status.ERROR, msg, line, end, tests=_no_findings(tests), fix=fix,
            refused=refused,
        )  # fmt: skip
    if not tests:
        msg = "not checked: no test could be generated (no usable test in the model's replies"
        if refused:
            total = sum(r.count for r in refused)
            top = max(refused, key=lambda r: r.count)
            msg += f"; {total} refused, most often: {top.reason}"
        return function_report(
            path, qualname, Status.ERROR, msg + ")", line, end, fix=fix, refused=refused
        )
    findings = [t for t in tests if t.finding]
    msg = f"{len(failing)} of {len(tests)} tests fail"
    if findings:
        msg += f", {len(findings)} with at least {min_votes:.0%} of the votes"
    elif failing:
        msg += f", none with at least {min_votes:.0%} of the votes"
    if fix is not None:
        msg += _fix_summary(fix)
    if result.fix_error:
        msg += f" ({result.fix_error})"
    status = Status.FINDINGS if findings else Status.OK
    return function_report(
        path, qualname, status, msg, line, end, tests=tests, fix=fix, refused=refused
    )


def _no_findings(tests: tuple[TestResult, ...]) -> tuple[TestResult, ...]:
    return tuple(replace(t, finding=False) for t in tests)


def _fix_summary(fix: FixResult) -> str:
    if fix.patch is None:
        return "; no fix found"

    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.0%}"

    return f"; fix: {pct(fix.pass_before)} -> {pct(fix.pass_after)} of the tests pass"
