"""A checked function's results as its report: the tests of a session (or of the cache) with
their verdicts, findings by the share of the votes, what kept it from being checked, the fix."""

from __future__ import annotations

import re
from dataclasses import replace
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


def result_json(t: Any, judged: Any) -> dict[str, Any]:
    """A test and its run on the function, as the cache entry keeps it."""
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
    return {
        "id": t.id,
        "call": t.call,
        "expected": describe(t.expected, 2000),
        "share": t.share,
        "draws": t.draws,
        "verdict": verdict.value,
        "actual": actual,
        "code": t.code() if t.program else None,
    }


def _io_error(tests: list[dict[str, Any]]) -> str | None:
    for t in tests:
        m = _RAISED.match(t.get("actual") or "")
        if t["verdict"] == "error" and m and m.group(1) in IO_ERRORS:
            return str(t["actual"])[len("raised ") :]
    return None


def refused_replies(session: Any) -> list[dict[str, Any]]:
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
    out = [
        {"purpose": purpose, "reason": reason[:200], "count": n}
        for (purpose, reason), n in counts.most_common()
    ]
    interrupted = int(session.usage_json().get("interrupted", 0) or 0)
    if interrupted:
        out.append(
            {
                "purpose": "any",
                "reason": "no answer (empty, or cut off by the server): asked again",
                "count": interrupted,
            }
        )
    return out


def refusals(data: dict[str, Any]) -> tuple[Refusal, ...]:
    """The refused replies of a cache entry, as the report keeps them."""
    return tuple(
        Refusal(str(r["purpose"]), str(r["reason"]), int(r["count"]))
        for r in data.get("refused") or []
        if isinstance(r, dict) and {"purpose", "reason", "count"} <= r.keys()
    )


def from_cache(
    data: dict[str, Any], path: str, qualname: str, line: int, end: int, min_votes: float
) -> FunctionReport | None:
    """The report of a cache entry (``None``: an entry of another shape)."""
    try:
        rep = from_data(data, path, qualname, line, end, min_votes)
        return replace(rep, cached=True, refused=refusals(data))
    except (KeyError, TypeError, ValueError):
        return None  # an entry of another shape: check again


def from_data(
    data: dict[str, Any], path: str, qualname: str, line: int, end: int, min_votes: float
) -> FunctionReport:
    """The report of a function's session data: findings are failing tests whose expected
    output won at least ``min_votes`` of the votes."""
    raw = list(data["tests"])
    tests = tuple(
        TestResult(
            id=int(t["id"]),
            call=str(t["call"]),
            expected=str(t["expected"]),
            share=float(t["share"]),
            draws=int(t["draws"]),
            verdict=TestVerdict(t["verdict"]),
            actual=None if t["verdict"] == "pass" else t.get("actual"),
            finding=t["verdict"] != "pass" and float(t["share"]) >= min_votes - 1e-9,
            code=None if t.get("code") is None else str(t["code"]),
        )
        for t in raw
    )
    fix = None
    if data.get("fix") is not None:
        f = data["fix"]
        fix = FixResult(f["pass_before"], f["pass_after"], int(f["accepted_edits"]), f["patch"])
    load_error = data.get("load_error")
    failing = [t for t in tests if t.verdict is not TestVerdict.PASS]
    if load_error:
        from utdebug.engine.events import does_not_load_line

        msg = f"not checked: {does_not_load_line(load_error)}"
        return function_report(
            path, qualname, Status.ERROR, msg, line, end, tests=_no_findings(tests), fix=fix
        )
    io = _io_error(raw)
    if io is not None:
        msg = (
            f"not checked: it does I/O the sandbox blocks ({io}); mark it '# utdebug: skip' "
            "or move the I/O out of the function"
        )
        return function_report(
            path, qualname, Status.ERROR, msg, line, end, tests=_no_findings(tests), fix=fix
        )
    if not tests:
        msg = "not checked: no test could be generated (no usable test in the model's replies"
        refused = [r for r in data.get("refused") or [] if isinstance(r, dict)]
        if refused:
            total = sum(int(r.get("count", 0)) for r in refused)
            top = max(refused, key=lambda r: int(r.get("count", 0)))
            msg += f"; {total} refused, most often: {top.get('reason')}"
        return function_report(path, qualname, Status.ERROR, msg + ")", line, end, fix=fix)
    findings = [t for t in tests if t.finding]
    msg = f"{len(failing)} of {len(tests)} tests fail"
    if findings:
        msg += f", {len(findings)} with at least {min_votes:.0%} of the votes"
    elif failing:
        msg += f", none with at least {min_votes:.0%} of the votes"
    if fix is not None:
        msg += _fix_summary(fix)
    if data.get("fix_error"):
        msg += f" ({data['fix_error']})"
    status = Status.FINDINGS if findings else Status.OK
    return function_report(path, qualname, status, msg, line, end, tests=tests, fix=fix)


def _no_findings(tests: tuple[TestResult, ...]) -> tuple[TestResult, ...]:
    return tuple(replace(t, finding=False) for t in tests)


def _fix_summary(fix: FixResult) -> str:
    if fix.patch is None:
        return "; no fix found"

    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.0%}"

    return f"; fix: {pct(fix.pass_before)} -> {pct(fix.pass_after)} of the tests pass"
