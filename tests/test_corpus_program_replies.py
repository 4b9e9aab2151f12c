"""Replies a real small model wrote for tests with setup (ClassEval+Fix), read in place.

The corpus (``$UTDEBUG_CLASSEVAL_CORPUS``, else
``../shared/corpora/qwen2.5-coder-0.5b-classeval-2026-11-27.jsonl`` next to the repository)
holds Qwen2.5-Coder-0.5B's replies on ClassEval_0's methods, one a line, each with its purpose
as recorded. For every test proposal and vote, this file states what a person reads from the
reply, checked by hand, keyed by the line number and the first 12 hex digits of the reply's
sha256 (a changed corpus fails loudly). No reply text is copied here.

For a test proposal: how many tests the reply holds that a person can read, the first one's
call and expected outcome, and how many of them can run as written (the engine's admission,
before any vote: :mod:`utdebug.engine.admission`, with the setup run in the sandbox). A test
that cannot run must never count against the code; one a person can read must not be lost.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from utdebug.agents.reply_syntax import ParsedValue, ParseFailure
from utdebug.agents.reply_tests import parse_program_tests
from utdebug.agents.reply_votes import parse_vote
from utdebug.engine import Executor
from utdebug.engine.admission import call_problem, setup_problem
from utdebug.sandbox.config import Limits

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path(
    os.environ.get("UTDEBUG_CLASSEVAL_CORPUS")
    or REPO.parent / "shared" / "corpora" / "qwen2.5-coder-0.5b-classeval-2026-11-27.jsonl"
)
if not CORPUS.is_file():
    pytest.skip(
        f"the ClassEval reply corpus is not at {CORPUS} (set UTDEBUG_CLASSEVAL_CORPUS)",
        allow_module_level=True,
    )


@dataclass(frozen=True)
class Proposal:
    """A test proposal: ``count`` tests read, the first's call and outcome, ``runnable`` of
    them can run as written."""

    count: int
    call: str
    outcome: Any
    """The expected value, or ``Raises(name)``."""
    runnable: int
    note: str


@dataclass(frozen=True)
class Raises:
    name: str


@dataclass(frozen=True)
class Answer:
    value: Any
    note: str = ""


@dataclass(frozen=True)
class Refused:
    reason: str
    """A substring of the parser's reason."""
    note: str


REQ = "{'path': '/api/user', 'method': 'GET'}"
EXPECTED: dict[str, Proposal | Answer | Refused] = {
    "1:b88c0aafb350": Refused("uses mocks (patch)", "every test method is decorated @patch"),
    "2:314d3ec7e8c6": Proposal(
        1,
        "self.AccessGatewayFilter.filter({'path': '/api/example', 'method': 'POST'})",
        Raises("ValueError"),
        0,
        "the one test without @patch, a pytest.raises block; calls through "
        "self.AccessGatewayFilter, which nothing built",
    ),
    "3:5d40da705ca6": Refused("uses mocks (patch)", "@patch on every test method"),
    "4:dba70e19b44d": Proposal(
        8,
        f"AccessGatewayFilter.get_jwt_user({REQ})",
        True,
        0,
        "asserts in a loop over 8 cases: 8 tests; each calls the method on the class, "
        "without an instance (self <- request): the wrong number of arguments",
    ),
    "5:0268979ca8d4": Proposal(
        1,
        'await access_gateway_filter.filter({"path": "/api/user/1234", "method": "GET"})',
        True,
        0,
        "awaits filter, a synchronous method",
    ),
    "6:58d1769b9847": Proposal(
        2,
        "filter.get_jwt_user(request)",
        None,
        0,
        "a test of is_start_with that calls get_jwt_user and set_current_user_info_and_log "
        "(the test of is_start_with itself uses MagicMock)",
    ),
    "7:e500d39dec2a": Proposal(
        1, "await filter.get_jwt_user(request)", True, 0, "awaits a synchronous method"
    ),
    "8:33bb5d1804e0": Answer(
        True,
        "KNOWN FALSE ACCEPT: an implementation with no answer about the test; the prose reader "
        "takes 'it returns `True`' from the reply's description of its own filter",
    ),
    "9:7b07fa982f31": Refused("holds code, not a value", "ends with code, no value"),
    "10:3c2557f88c3c": Refused("placeholder", "```python raises ExceptionTypeError```"),
    "11:627ab997abbc": Answer(Raises("KeyError"), "Output: ```raises KeyError```"),
    "12:889d6a70042b": Proposal(
        3,
        "self.access_gateway_filter.is_start_with(request_uri)",
        True,
        3,
        "a unittest class with setUp: three tests; the third's raises block holds an "
        "assertion that never runs",
    ),
    "13:856ee199a63a": Answer(None, "'... at the end ... is:' and a ```python None``` block"),
    "14:6d9aabe2dacd": Answer(Raises("ValueError"), "```python raises ValueError```"),
    "15:c32e882d0fad": Refused("no answer found", "its 'Final Answer' is a class"),
    "16:ba8afbb554c3": Refused("placeholder", "```raises ExceptionType```"),
    "17:9ae1ddd65b2c": Refused("uses mocks (patch)", "patch('asyncio.run') in setup"),
    "18:21faed31d213": Refused("no answer found", "stops mid-sentence before any value"),
    "19:5c5961c5af9b": Answer(False, "'# Output: True' for its own code, then 'is `False`'"),
    "20:c7db67c82c42": Answer(False, "'... is `False`.'"),
    "21:2809908d46c7": Answer(True, "a final ```python >>> ...\\nTrue``` block"),
    "22:073d5a0fa379": Refused(
        "no test found", "its only test uses MagicMock and does not parse (async=True)"
    ),
    "23:ba6375e25d21": Refused("no test found", "an implementation, no test"),
    "24:e9c0ed01f4db": Refused("uses mocks (patch)", "@patch"),
    "25:1a982885ddc8": Proposal(
        1,
        'await mock_access_gateway_filter.get_jwt_user({"path": "/api", "method": "GET"})',
        True,
        0,
        "sets .return_value on the real object's methods; awaits a synchronous method",
    ),
    "26:7c376fae6a07": Proposal(
        2,
        "filter.is_start_with('/login')",
        False,
        0,
        "one test method does not parse (a brace left open), two do; both test other "
        "methods than filter",
    ),
    "27:1c1fa3d3eb54": Refused(
        "has no assertion", "the loop's assert sits in `with pytest.mark.asyncio:`"
    ),
    "28:bbbefb64c679": Answer(Raises("AssertionError"), "```python raises AssertionError```"),
    "29:66e2d59bcd85": Answer(None, "'... at the end ... is `None`.'"),
    "30:8e622796841d": Refused("prose, not a value", "'a string representing ...'"),
    "31:688bd56955cb": Answer("", "its return value stated in words: an empty string"),
    "32:bcb4750dded9": Proposal(
        1,
        "await filter_instance.set_current_user_info_and_log({'address': 'localhost'})",
        "localhost",
        0,
        "a test of filter that never calls filter",
    ),
    "33:03aee6f1f10c": Proposal(1, "filter_instance.is_start_with(request_uri)", True, 1, "runs"),
    "34:4d8dadfbb0d6": Proposal(
        1,
        "filter.get_jwt_user(request)",
        True,
        1,
        "a loop over cases the call does not use: one test (the rows' programs are the same)",
    ),
    "35:2c4db98e0653": Refused("placeholder", "```raises ExceptionType```"),
    "36:2548e6f871ba": Answer(False, "'... at the end is `False`.'"),
    "37:33cf90ae62de": Answer(True, "'... at the end ... is:' and ```python True```"),
    "38:89d4c860920a": Answer(False, "'... at the end is:' and a block"),
    "39:58ee48eee34e": Answer(False, "'The final answer is:' ```python False```"),
    "40:65911755028a": Answer(False, "'... is `False`.'"),
    "41:0c5f5574f70c": Refused("no answer found", "an implementation and its own print"),
    "42:3c3fcbe10598": Answer(True, "'... is:' ```python True```"),
}


def _rows() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for i, line in enumerate(CORPUS.read_text(encoding="utf-8").splitlines(), 1):
        row = json.loads(line)
        sha = hashlib.sha256(str(row["reply"]).encode()).hexdigest()[:12]
        out.append((f"{i}:{sha}", row))
    return out


ROWS = _rows()


@functools.cache
def _code() -> str:
    from utdebug.data.classeval import parse_classeval

    data = (
        Path(os.environ.get("UTDEBUG_DATA_DIR") or REPO.parent / "shared" / "datasets")
        / "ClassEval_data.json"
    )
    if not data.is_file():
        pytest.skip(f"ClassEval_data.json is not at {data}")
    tasks, _ = parse_classeval(data)
    return next(t.solution for t in tasks if t.task_id == "ClassEval_0")


def test_every_proposal_and_vote_is_listed() -> None:
    keys = {k for k, row in ROWS if row["purpose_guess"] in ("ut", "vote")}
    assert keys == set(EXPECTED), "the corpus changed: check the entries again"


@pytest.mark.parametrize("key", sorted(EXPECTED, key=lambda k: int(k.split(":")[0])))
def test_what_a_person_reads(key: str, executor: Executor) -> None:
    row = dict(ROWS)[key]
    code = _code()
    method = str(row["task_id"]).rsplit("/", 1)[-1]
    want = EXPECTED[key]
    reply = str(row["reply"])
    if row["purpose_guess"] == "ut":
        found = parse_program_tests(reply, method, module_source=code)
        if isinstance(want, Refused):
            assert isinstance(found, ParseFailure) and want.reason in found.reason, found
            return
        assert isinstance(want, Proposal) and isinstance(found, list), found
        first = found[0]
        outcome = Raises(first.raises) if first.raises else first.expected.value  # type: ignore[union-attr]
        assert (len(found), first.call, outcome) == (want.count, want.call, want.outcome)

        async def admitted() -> int:
            ok = 0
            for t in found:
                why = call_problem(
                    t.setup, t.call, t.then, code=code, entry_point=method,
                    class_name="AccessGatewayFilter",
                )  # fmt: skip
                if why is None:
                    why = await setup_problem(executor, code, t.setup, t.call, t.then, Limits())
                ok += why is None
            return ok

        assert asyncio.run(admitted()) == want.runnable
        return
    named = re.findall(r"value of `([^`\n]+)`", reply)
    value = parse_vote(reply, named[-1] if named else "", module_source=code)
    if isinstance(want, Refused):
        assert isinstance(value, ParseFailure) and want.reason in value.reason, value
    elif isinstance(want.value, Raises):
        assert value == want.value.name
    else:
        assert isinstance(value, ParsedValue) and value.value == want.value
        assert type(value.value) is type(want.value)
