"""The reply parsers and the interruption rule on the second shared corpus, read in place.

``../shared/corpora/qwen2.5-coder-0.5b-hard-2026-11-26.jsonl``: the same small model at
utdebug's defaults, served by llama-cpp-python's server, which cut the reply it was generating
whenever a second request arrived. Keyed by line and the first 12 hex digits of the reply's
sha256 (a changed corpus fails loudly); no reply text is copied here. Checked by hand:

- every empty or near-empty reply is no answer: the client refuses it as interrupted (asked
  again, never used) and no parser reads anything from it;
- the answer forms a person reads there and the parsers read now: ``print(result)  # Output:
  X`` after ``result = f(...)``, "the correct output of `f(x)` is:" and a value block, a step
  label (``4. **Return the final answer**:`` + prose) that no longer wins over the value the
  reply states, an ``assert f("") == 0`` next to a mention of the signature, a
  ``test_cases = [(...), ...]`` table, ``Input: `M = [...]```;
- the replies still refused, each with why.
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

from utdebug.agents.litellm_client import no_answer
from utdebug.agents.parsing import ParsedCall, ParsedValue, ParseFailure, parse_call, parse_output

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path(
    os.environ.get("UTDEBUG_CORPUS_2")
    or REPO.parent / "shared" / "corpora" / "qwen2.5-coder-0.5b-hard-2026-11-26.jsonl"
)
if not CORPUS.is_file():
    pytest.skip(
        f"the corpus is not at {CORPUS} (set UTDEBUG_CORPUS_2 to its path)",
        allow_module_level=True,
    )

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
    args: tuple[Any, ...]
    note: str


@dataclass(frozen=True)
class Answer:
    value: Any
    note: str


@dataclass(frozen=True)
class Refused:
    purpose: str
    reason: str
    note: str


EMPTY = "e3b0c44298fc"  # sha256 of ""
CUT = {"7734554cfe18": "To solve", "0e51840fdd40": "To determine"}
MATRIX = [[1, 2, 3], [2, 4, 5], [1, 1, 1]]

EXPECTED: dict[str, Call | Answer | Refused] = {
    # test proposals
    "14:c8caf81c5310": Call(
        ("Please move back to stream",),
        "cut at the token limit; 'The input to the function is `...`' under Input Arguments",
    ),
    "32:9d0eae3c912a": Call(
        ("abcefhg",),
        "asserts with literal arguments; `find_Rotations(s)` in the explanation is the "
        "signature, not the call",
    ),
    "34:ec4f55a122db": Call(
        ("hello", "a"), "a `test_cases = [(s, ch, expected), ...]` table looped over"
    ),
    "46:bb43ed224be8": Call(
        ([[100, 200, 300], [400, 500, 600], [700, 800, 900]],),
        "`Input: `M = [...]`` then `Expected Output:`, four cases: the last",
    ),
    "5:daded9dc48d2": Refused(
        "ut", "no call to", "not readable: 'both are `2^31 - 2^30`' gives no concrete values"
    ),
    # votes
    "7:9cf820507637": Answer(True, "`result = f(8, 6)` then `print(result)  # Output: True`"),
    "11:312441701725": Answer(["short"], "`print(output)  # Output: ['short']`"),
    "16:d76e3c7b0e90": Answer(["Please", "move"], "`print(output_text)  # Output: [...]`"),
    "20:e4b6f8135170": Answer(["move", "back"], "`print(output_text)  # Output: [...]`"),
    "26:8ff76819f939": Answer(
        2, "`print(find_Rotations('abc'))  # Output: 2`; a later `- **Output**:` prose label"
    ),
    "30:6f09cce78754": Answer(2, "`print(result)  # Output: 2`; a later prose label"),
    "42:242a0ae3bdfb": Answer("abccba", "`print(result)  # Output: abccba`: printed text"),
    "54:311a5a436fb3": Answer([[1, 1, 1], [2, 4, 5], [1, 2, 3]], "`print(...)  # Output:`"),
    "55:c19369ece681": Answer(MATRIX, "'the correct output of `sort_matrix(...)` is:' + block"),
    "57:d901f781528b": Answer([[1, 2, 3], [1, 1, 1]], "`print(sorted_matrix)  # Output:`"),
    "58:f2419fcf03e3": Answer(
        MATRIX, "'4. **Return the final answer**:' + prose, then 'would return:' + a block"
    ),
    "68:17f8d926f958": Answer(
        True, "'8. **Final Output**:' + prose, then '### Final Output:' ... a block `True`"
    ),
    "24:477d164d98a6": Refused(
        "vote",
        "no answer found",
        "readable as 2 only from a derivation (\\( 3 - 1 = 2 \\)); the answer given is a def",
    ),
    "25:dcbfacf59819": Refused(
        "vote", "no answer found", "not readable: '**<your final answer>**', the placeholder"
    ),
    "82:16c31e46860e": Refused(
        "vote",
        "no answer found",
        "answers for two different calls; readable only with the vote's call (not recorded)",
    ),
    "96:6a352fc4cd7e": Refused(
        "vote",
        "no answer found",
        "answers for three different calls; readable only with the vote's call",
    ),
}


def load() -> list[tuple[str, dict[str, Any]]]:
    rows = []
    for line, text in enumerate(CORPUS.read_text(encoding="utf-8").splitlines(), 1):
        row = json.loads(text)
        digest = hashlib.sha256(row["reply"].encode("utf-8")).hexdigest()[:12]
        rows.append((f"{line}:{digest}", row))
    return rows


ROWS = load()
BY_KEY = dict(ROWS)


def test_the_corpus_is_the_one_checked() -> None:
    lines = {key.split(":")[0]: key for key, _ in ROWS}
    for key in EXPECTED:
        assert lines.get(key.split(":")[0]) == key, f"{key} changed: not the corpus checked"
    assert len(ROWS) == 118


def test_every_cut_reply_is_no_answer() -> None:
    """About 30 replies are empty or a few tokens long: the server cut them. Each is refused
    by the client as interrupted (it was in flight beside another request), never parsed."""
    cut = [(key, row) for key, row in ROWS if key.split(":")[1] in (EMPTY, *CUT)]
    assert len(cut) == 30
    assert all(row["finish_reason"] == "stop" for _, row in cut)
    for key, row in cut:
        purpose = row["purpose_guess"]
        assert no_answer(row["reply"], "stop", purpose, overlapped=True) is not None, key
        assert isinstance(parse_output(row["reply"]), ParseFailure), key
    # alone on the server, only the empty ones are refused: "To solve" may be a whole reply
    alone = [k for k, row in cut if no_answer(row["reply"], "stop", "vote", overlapped=False)]
    assert len(alone) == sum(1 for k, _ in cut if k.endswith(EMPTY))
    # no whole reply of the corpus is taken for a cut one, even beside other requests
    whole = [row for key, row in ROWS if key.split(":")[1] not in (EMPTY, *CUT)]
    assert all(
        no_answer(row["reply"], "stop", row["purpose_guess"], overlapped=True) is None
        for row in whole
        if row["purpose_guess"] in ("ut", "vote")
    )


@pytest.mark.parametrize("key", list(EXPECTED))
def test_reply(key: str) -> None:
    expect, row = EXPECTED[key], BY_KEY[key]
    if isinstance(expect, Call) or (isinstance(expect, Refused) and expect.purpose == "ut"):
        entry, params = PROBLEMS[row["task_id"]]
        got: Any = parse_call(row["reply"], entry, params=params)
        if isinstance(expect, Call):
            assert isinstance(got, ParsedCall) and got.pending is None, (got, expect.note)
            assert same(got.args, expect.args), (got.args, expect.note)
            return
    else:
        got = parse_output(row["reply"])
        if isinstance(expect, Answer):
            assert isinstance(got, ParsedValue) and not got.pending, (got, expect.note)
            assert same(got.value, expect.value), (got.value, expect.note)
            return
    assert isinstance(got, ParseFailure) and expect.reason in got.reason, (got, expect.note)
