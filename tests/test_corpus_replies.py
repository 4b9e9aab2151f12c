"""The reply parsers on replies a real small model wrote (the shared corpus, read in place).

The corpus (``$UTDEBUG_CORPUS``, else ``../shared/corpora/qwen2.5-coder-0.5b-hard.jsonl`` next
to the repository) holds one reply a line. For every test proposal and output vote in it, this
file states the parse a person reads from the reply, checked by hand, keyed by the line number
and the first 12 hex digits of the reply's sha256: a changed corpus fails loudly instead of
being compared with the wrong expectations. No reply text is copied here.

The purpose is the one a person reads from the reply; where it differs from the corpus's
``purpose_guess`` the entry says so. Rows without a ``task_id`` are parsed against the problem
whose parameters they name (``task``). A reply a person cannot read a test input or an answer
from either is expected ``Refused``, with the reason the parser gives and a note.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from testkit.reply_corpus import same

from utdebug.agents.parsing import (
    ParsedCall,
    ParsedValue,
    ParseFailure,
    parameter_names,
    parse_call,
    parse_output,
)

REPO = Path(__file__).resolve().parent.parent


def corpus_path() -> Path:
    env = os.environ.get("UTDEBUG_CORPUS")
    return (
        Path(env) if env else REPO.parent / "shared" / "corpora" / "qwen2.5-coder-0.5b-hard.jsonl"
    )


CORPUS = corpus_path()
if not CORPUS.is_file():
    pytest.skip(
        f"the reply corpus is not at {CORPUS} (set UTDEBUG_CORPUS to its path)",
        allow_module_level=True,
    )

# The corpus's problems (MBPP+Fix (Hard)): entry point and parameter names.
PROBLEMS: dict[str, tuple[str, tuple[str, ...]]] = {
    "hard/6": ("differ_At_One_Bit_Pos", ("a", "b")),
    "hard/7": ("find_char_long", ("text",)),
    "hard/9": ("find_Rotations", ("s",)),
    "hard/11": ("remove_Occ", ("s", "ch")),
    "hard/12": ("sort_matrix", ("M",)),
    "hard/16": ("text_lowercase_underscore", ("text",)),
}


@dataclass(frozen=True)
class Call:
    """A test proposal whose input is these positional arguments."""

    args: tuple[Any, ...]
    note: str = ""
    task: str | None = None
    """For a row without ``task_id``: the problem whose parameters the reply names."""
    purpose_guess: str = "ut"


@dataclass(frozen=True)
class Answer:
    """An output vote whose answer is ``value``."""

    value: Any
    note: str = ""
    call: str | None = None
    """The call the reply says it answers; parsed with it too, the answer is the same."""
    purpose_guess: str = "vote"


@dataclass(frozen=True)
class Refused:
    """A reply with no usable input (``purpose`` ut) or answer (vote)."""

    purpose: str
    reason: str
    """A substring of the parser's reason."""
    note: str
    purpose_guess: str | None = None


Expect = Call | Answer | Refused

PLEASE = "Please move back to stream"
WORDS = ["Please", "move", "back", "stream"]
MATRIX = [[1, 2, 3], [2, 4, 5], [1, 1, 1]]

EXPECTED: dict[str, Expect] = {
    "1:159347c64fab": Call((PLEASE,), "- `text` = `'...'` under Input Arguments"),
    "2:d1f426d6dee2": Call(
        ("abacaba",),
        "UT format with four asserts in check_solution(): the last call of the section",
        purpose_guess="debug",
    ),
    "3:e740fed7bd09": Call((5, 3), "`a = 5`, `b = 3` listed after `Input Arguments:`"),
    "4:69511676500c": Call((PLEASE,), "'given the input `...`' in the Input Arguments section"),
    "5:d2ba3ec2b856": Call(
        (MATRIX,), "`M = [[...]]` under **Input Arguments** (cut, repeated)", task="hard/12"
    ),
    "6:ed5185255283": Call(
        ("Hello world",),
        "six (input, expected) pairs in `test_cases`, fed through `for i, (input_text, "
        "expected_output) in enumerate(test_cases)`: the first row's input",
        purpose_guess="debug",
    ),
    "7:d795418701be": Answer(
        3,
        "continues after a test with check_solution(); its own '### Output' says 'The output "
        "is `3`'",
        purpose_guess="debug",
    ),
    "8:fa66b0352f09": Call(("abacaba",), "as line 2", purpose_guess="debug"),
    "9:a20c7f3a4e45": Refused(
        "vote",
        "no answer found",
        "a continued output that only says the tests check expected results, then writes a "
        "new hypothesis: no value anywhere",
        purpose_guess="ut",
    ),
    "10:ff4a499d6b10": Call(
        ("abacaba",), "first test (before its first ### Output), as line 2", purpose_guess="debug"
    ),
    "11:6204495b334a": Call((PLEASE,), "'Input: `'...'`' under **Input Arguments**:"),
    "12:692f7d5f0ff4": Answer(
        True, "'would return:' + ```python True```", "differ_At_One_Bit_Pos(5, 3)"
    ),
    "13:9e860301686b": Answer(
        True,
        "a reply to the output prompt: 'the correct return value would be `True`'; its last "
        "block is the template's placeholder",
        "differ_At_One_Bit_Pos(5, 3)",
        purpose_guess="debug",
    ),
    "14:824597bf71e1": Answer(
        True, "```python\\nOutput: True\\n```", "differ_At_One_Bit_Pos(5, 3)"
    ),
    "15:1f36480f0839": Answer(True, "Final Answer: ```True```", "differ_At_One_Bit_Pos(5, 3)"),
    "16:081a8b579f0d": Call((PLEASE,), "fenced call under Input Arguments"),
    "17:ded1e5b865c8": Call(
        (3, 2), "first test: `a = 0b11`, `b = 0b10` (the reply repeats tests)", task="hard/6"
    ),
    "18:4843117af3c1": Answer(
        WORDS,
        "a continued output: the answer block first, then looping tests (cut)",
        purpose_guess="ut",
    ),
    "19:3d4f247401aa": Call((PLEASE,), "fenced call"),
    "20:735959fa4ed9": Call((PLEASE + " ",), "fenced call (trailing space in the string)"),
    "21:95a1f2961468": Call(("Hello world",), "fenced call"),
    "22:335ba111026d": Call(
        (7, 8),
        "three 'Input: `(a, b)`' cases under Input Arguments and no marked one: the last; the "
        "signature mention `f(a: int, b: int)` is not a call",
    ),
    "23:d88648f83438": Call((PLEASE,), "inline ```call```"),
    "24:5bfcc4f4ede4": Call((3, -5), "'two integer inputs, `a = 3` and `b = -5`' in the section"),
    "25:ead3270af3bf": Answer(WORDS, "a bare answer block"),
    "27:9855eaccad87": Answer(WORDS, "the answer block first, then an explanation"),
    "28:71801958dc4b": Answer(
        WORDS, "a continued output: answer block, then new tests", purpose_guess="ut"
    ),
    "29:496d89c42d70": Call((1, 2), "inline ```call```"),
    "30:9fabe0760eb6": Call(("helloworld",), "four '**Input:** \"...\"' cases: the last"),
    "31:ade86f63f202": Call((3, 5), "inline ```call```"),
    "32:ce047bfea045": Call((5, 3), "first of three repeated tests (cut)"),
    "33:aaec37ddfaeb": Call((1, 3), "first of the repeated tests (cut)"),
    "34:555aca096d2d": Call((1, 3), "inline ```call```"),
    "35:6e04538f6c60": Call(
        ("",),
        '`s = "abc"` (valid) then `s = ""` (invalid): the last value given wins; a reader '
        "could equally take 'abc'",
    ),
    "37:4066ee342623": Call(("abc",), '1. `s = "abc"` under Input Arguments'),
    "39:fee249ea7e26": Call(("abc",), "the first call after 'Input Arguments:'"),
    "40:26b4035bac1e": Call(("abccba",), "two listed calls in the first section: the last"),
    "41:667ec0692adb": Call(("abc",), "the first call after 'Input Arguments:'"),
    "42:c353f769bc51": Call(("abc",), "the first call after 'Input Arguments:' (cut)"),
    "43:e806bc164069": Call(("123",), "the first call after 'Input Arguments:'"),
    "44:a8f613ef3895": Call(("abcde",), "- `s = \"abcde\"` under '1. **Input arguments**:'"),
    "45:6b3cb7b1bd99": Answer(
        3, "prose: '`find_Rotations` returns 3 because ...'", "find_Rotations('abc')"
    ),
    "47:b966b97d0d6a": Refused(
        "ut",
        "no values for its parameter (M)",
        "the matrix is described in words ('the first row has values `[1, 2, 3]`, ...'): a "
        "person can assemble it, the parser does not read values described in prose",
    ),
    "48:0172880ba222": Call((MATRIX,), "```python M = [[...]]``` under Input Arguments"),
    "49:ddbc615491c1": Call(("aabbcc", "a"), "- `s = ...` - `ch = ...`", task="hard/11"),
    "50:8502729216d5": Call(("abcdef", "a"), "- `s = ...` - `ch = ...`", task="hard/11"),
    "51:36301e20c9ad": Call(("hello world", "x"), "- `s = ...` - `ch = ...`", task="hard/11"),
    "52:709ad61607f1": Call(("abracadabra", "a"), "- `s = ...` - `ch = ...`", task="hard/11"),
    "53:0c3d15b6a852": Call(
        ([MATRIX],),
        "unittest code: `M = [...]`, `input_list = [M]`, `sort_matrix(input_list)`: the call "
        "as written (a list holding the matrix)",
    ),
    "54:01cec2397f92": Call(([],), "```python M = []``` after 'Input Arguments:'"),
    "55:2dd4a5cdf2dd": Call(
        ([[5, 6, 7], [8, 9, 10], [11, 12, 13]],),
        "UT format with `M1 = ...; print(sort_matrix(M1))`, `M2 = ...; print(sort_matrix(M2))`, "
        "then cut inside M3: the last complete call",
        purpose_guess="debug",
    ),
    "56:0e8848e4ab53": Answer(False, "a bare answer block"),
    "57:60dff863bdac": Answer(True, "a bare answer block"),
    "58:ae9822a1a0a5": Call(("ab__c",), "ten 'Input: `...`' cases under Input Arguments: the last"),
    "59:ed38604ccdac": Call(("abcdef", "x"), "seven fenced calls in the section: the last"),
    "60:23620dbd467a": Call(("abcdef", "x"), "as line 59 (stray 'Expected Output: ```' fences)"),
    "61:2adab78ef434": Call(("abcdef", "x"), "as line 59"),
    "62:5ca1db529837": Call(("abcdef", "x"), "as line 59 (cut)"),
    "63:bf1481fb3547": Call(("abcdef", "x"), "as line 59"),
    "64:ea3661bb8061": Call(("Hello World", "l"), "first test's fenced call (cut, repeated)"),
    "65:e81e84096c62": Call(("Hello World", "o"), "first test's fenced call, not the hypothesis's"),
    "66:11aa53b55922": Call(("Hello World", "A"), "fenced call"),
    "67:c7cd908750bb": Call(("Hello World", "z"), "fenced call"),
    "68:c623fe287386": Call(("Hello World", "X"), "first test's fenced call"),
    "69:3a867719813d": Call(("hello", "l"), "fenced call"),
    "70:fa02b69cc3a8": Call(("hello", "l"), "fenced call"),
    "71:26d12e9bba9f": Call(("world", "z"), "fenced call"),
    "72:581e9272978a": Call(("hello", "l"), "fenced call"),
    "73:bbea4f9c6811": Call(("hello", "e"), "fenced call, not the error pattern's"),
    "74:7bc979de7260": Call(
        ("hello world", "e"),
        "- `s = ...` - `ch = ...` under Input Arguments",
        purpose_guess="debug",
    ),
    "75:14cb61be1891": Refused(
        "ut",
        "no values for its parameters (s, ch)",
        "its Input Arguments item is the function's code; values appear only in prose examples "
        "('if `s = \"hello\"` and `ch = 'l'`', then others): no test input",
        purpose_guess="debug",
    ),
    "76:79fd2c80dc43": Call(("abcd", "d"), "four fenced calls in the section: the last (cut)"),
    "78:245fd7dff136": Answer("abcd", "```output: 'abcd'```", 'remove_Occ("abcd", "d")'),
    "80:49ee43151fea": Answer(
        "abcd",
        '`print(remove_Occ("abcd", "d"))  # Output: abcd`: print shows a string unquoted',
        'remove_Occ("abcd", "d")',
    ),
    "81:a458dd7cc662": Call(("ab__c",), "'Input: `...`' cases: the last"),
    "82:8d942107a875": Call(
        ("Abc_",),
        "a test class, then the UT format with 'Input: `...`' cases (cut): the section's last",
        purpose_guess="debug",
    ),
    "83:17f733a07015": Call(("ab__c",), "a test class of assertEqual calls: the last (cut)"),
    "84:413fa2b04d94": Call(("",), "'Input: `...`' cases (cut): the last complete one"),
    "85:aca3bddbed4f": Call(("hello world",), '- `text`: `"hello world"` under Input Arguments'),
    "86:a09f703283d3": Call(("hello world",), '- `text`: `"..."`'),
    "87:3afc0b955534": Call(
        ("hello world",), '- `text`: `"..."` (looping, cut)', purpose_guess="debug"
    ),
    "88:9705d26b4655": Call(("hello world",), '- `text`: `"..."`'),
    "89:9705d26b4655": Call(("hello world",), '- `text`: `"..."` (same reply as line 88)'),
    "90:163acfbccc75": Call(
        ("hello_world",), "'The input string is `'...'`' under Input Arguments"
    ),
    "92:104d48e69729": Answer(
        False, "Output: ```False```", "text_lowercase_underscore('hello_world')"
    ),
    "93:9ccd238cad1d": Answer(
        True,
        "a reply to the output prompt: '**Expected Output:** True', 'Final Answer:' code whose "
        "`print(...)  # Output: True` repeats the call",
        "text_lowercase_underscore('hello_world')",
        purpose_guess="debug",
    ),
    "94:7e2e0ab9ca9b": Answer(
        True, "Output: ```True```", "text_lowercase_underscore('hello_world')"
    ),
    "95:4a32073abe63": Call(("hello_world",), "Arguments: ```call```"),
    "96:b26bf9d745d6": Call(
        ("hello_world",), "first section: 'The input string is `\"...\"`' (cut)"
    ),
    "97:36fb69b4c8b9": Call(("hello_world",), "Arguments: ```call```"),
    "98:d06f4cb78694": Call(
        ("a",), "a code block, then the UT format: Arguments: ```call```", purpose_guess="debug"
    ),
    "99:e231b2f1e7e3": Call(("hello_world!",), "Arguments: ```call```"),
}
"""Replies that are debugging edits (lines 26, 36, 38, 46, 77, 79, 91, 100, 101) are not here:
``tests/test_corpus_edits.py`` covers them."""


def load() -> list[tuple[str, dict[str, Any]]]:
    rows = []
    for line, text in enumerate(CORPUS.read_text(encoding="utf-8").splitlines(), 1):
        row = json.loads(text)
        digest = hashlib.sha256(row["reply"].encode("utf-8")).hexdigest()[:12]
        rows.append((f"{line}:{digest}", row))
    return rows


ROWS = load()
BY_KEY = dict(ROWS)


def test_every_proposal_and_vote_has_a_checked_expectation() -> None:
    """A changed corpus fails here: every key must still name the same reply, and every reply
    guessed a proposal or a vote must have an entry."""
    lines = {key.split(":")[0]: key for key, _ in ROWS}
    for key in EXPECTED:
        line = key.split(":")[0]
        assert lines.get(line) == key, f"line {line} changed: the corpus is not the one checked"
    missing = [
        key for key, row in ROWS if row["purpose_guess"] in ("ut", "vote") and key not in EXPECTED
    ]
    assert not missing, f"replies without a checked expectation: {missing}"


def test_purpose_guesses_are_as_recorded() -> None:
    for key, expect in EXPECTED.items():
        guess = BY_KEY[key]["purpose_guess"]
        if isinstance(expect, Refused):
            recorded = expect.purpose_guess or expect.purpose
        else:
            recorded = expect.purpose_guess
        assert guess == recorded, (key, guess)


def _problem(key: str, expect: Call | Refused) -> tuple[str, tuple[str, ...]]:
    task = BY_KEY[key]["task_id"] or (expect.task if isinstance(expect, Call) else None)
    assert task is not None, key
    return PROBLEMS[task]


PROPOSALS = [
    k
    for k, e in EXPECTED.items()
    if isinstance(e, Call) or (isinstance(e, Refused) and e.purpose == "ut")
]
VOTES = [
    k
    for k, e in EXPECTED.items()
    if isinstance(e, Answer) or (isinstance(e, Refused) and e.purpose == "vote")
]


@pytest.mark.parametrize("key", PROPOSALS)
def test_proposal(key: str) -> None:
    expect = EXPECTED[key]
    assert isinstance(expect, Call | Refused)
    entry, params = _problem(key, expect)
    got = parse_call(BY_KEY[key]["reply"], entry, params=params)
    if isinstance(expect, Refused):
        assert isinstance(got, ParseFailure), (got, expect.note)
        assert expect.reason in got.reason, got.reason
        return
    assert isinstance(got, ParsedCall), (got, expect.note)
    assert got.pending is None and got.kwargs == {}, got
    assert same(got.args, expect.args), (got.args, expect.note)


@pytest.mark.parametrize("key", VOTES)
def test_vote(key: str) -> None:
    expect = EXPECTED[key]
    reply = BY_KEY[key]["reply"]
    got = parse_output(reply)
    if isinstance(expect, Refused):
        assert isinstance(got, ParseFailure), (got, expect.note)
        assert expect.reason in got.reason, got.reason
        return
    assert isinstance(expect, Answer)
    assert isinstance(got, ParsedValue) and not got.pending, (got, expect.note)
    assert same(got.value, expect.value), (got.value, expect.note)
    if expect.call is not None:
        with_call = parse_output(reply, call=expect.call)
        assert isinstance(with_call, ParsedValue) and same(with_call.value, expect.value)


def test_rows_without_a_task_need_the_parameter_names() -> None:
    """Without parameter names a reply that gives only ``name = value`` has no call."""
    for key, expect in EXPECTED.items():
        if isinstance(expect, Call) and expect.task is not None:
            entry, _ = PROBLEMS[expect.task]
            got = parse_call(BY_KEY[key]["reply"], entry)
            assert isinstance(got, ParseFailure) and f"no call to `{entry}`" in got.reason, key


def test_parameter_names_of_the_corpus_problems() -> None:
    data = Path(os.environ.get("UTDEBUG_DATA_DIR") or REPO.parent / "shared" / "datasets")
    if not (data / "MBPP+Fix_hard_test.jsonl").is_file():
        pytest.skip(f"MBPP+Fix_hard_test.jsonl is not in {data} (set UTDEBUG_DATA_DIR)")
    from utdebug.data.datasets import Split
    from utdebug.data.splits import load_split

    problems = {
        p.task_id: p for p in load_split(Split.HARD, data_dir=data, download=False).problems
    }
    for task, (entry, params) in PROBLEMS.items():
        assert problems[task].entry_point == entry
        assert parameter_names(problems[task].code, entry) == list(params), task
