"""Debugger edits on real model replies: the corpus of Qwen2.5-Coder-0.5B replies, read in place.

The corpus (``UTDEBUG_CORPUS``, else ``../shared/corpora/qwen2.5-coder-0.5b-hard.jsonl`` beside
the repository) is never copied here: this file holds only, per reply the corpus guesses is a
debugging reply (``purpose_guess == "debug"``), its line, the first 12 hex digits of its
sha256, what the reply is on reading it (many are test proposals or output predictions that
the guess got wrong) and the outcome checked by hand. Each reply is merged into its problem's
buggy code from MBPP+Fix (Hard), matched by ``task_id``.

Before (the reply's first code block as the whole program, ``parsing.extract_code``) 20 of the
22 replies gave a program, every one of them missing the module's test code it kept or keeping
the test code it appended. After (``take_edit``) 12 give an edit, each parsing and defining the
entry point with the appended test code left out; the other 10 repeat the buggy function
unchanged and are refused as such. Of the replies that are debugging replies on reading (lines
36, 38, 46, 77, 79, 91, 93, 100, 101, and line 45, guessed "vote"), 9 gave a program before
and 7 give an edit after (46 and 100 repeat the buggy code; 45 has no code).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from utdebug.agents import parsing
from utdebug.agents.edits import MergedEdit, take_edit

REPO = Path(__file__).resolve().parents[1]
NO_CHANGE = "the edit does not change the code"
ONLY_DOCS = "the edit changes only comments, docstrings or formatting"


def corpus_path() -> Path:
    env = os.environ.get("UTDEBUG_CORPUS")
    if env:
        return Path(env)
    return REPO.parent / "shared" / "corpora" / "qwen2.5-coder-0.5b-hard.jsonl"


@dataclass(frozen=True)
class Edit:
    """An edit was taken: what of the buggy code it replaced and what of the reply it left out."""

    dropped: tuple[str, ...] = ()
    replaced: str = "function"


@dataclass(frozen=True)
class Expected:
    role: str
    """What the reply is, on reading it: ``debug`` (an answer to the debugging prompt), ``ut``
    (a test proposal) or ``vote`` (an output prediction)."""
    before: bool
    """``parsing.extract_code`` gave code."""
    after: Edit | str
    """The edit taken, or why the reply was refused."""


# (line, sha256[:12]) -> what the reply gives; checked by reading each reply and its merge.
EXPECTED: dict[tuple[int, str], Expected] = {
    # hard/9: test proposals quoting the buggy function plus check_solution(): no change
    (2, "d1f426d6dee2"): Expected("ut", True, NO_CHANGE),
    # hard/7: the buggy function and test loops, cut inside the block (no closing fence)
    (6, "ed5185255283"): Expected("ut", False, NO_CHANGE),
    (7, "d795418701be"): Expected("ut", True, NO_CHANGE),
    (8, "fa66b0352f09"): Expected("ut", True, NO_CHANGE),
    (10, "ff4a499d6b10"): Expected("ut", True, NO_CHANGE),  # cut in a repeated block
    # hard/6: an output prediction that writes its own function, then a print
    (13, "9e860301686b"): Expected("vote", True, Edit(("print call at line 14",))),
    # hard/7: a rewrite; the appended assert is the buggy code's own (kept as the module's)
    (26, "ec747fd83c72"): Expected("ut", True, Edit()),
    (36, "104863b2ac36"): Expected(
        "debug", True, Edit(("print call at line 20", "print call at line 21"))
    ),
    (38, "15b397e9588d"): Expected(
        "debug", True, Edit(("print call at line 18", "print call at line 19"))
    ),
    # hard/9: "the corrected code" is the buggy code again, plus an assert
    (46, "4fb05833e959"): Expected("debug", True, NO_CHANGE),
    # hard/12: a docstring rewording, test data and prints, cut inside a literal: a docstring
    # is no behaviour, so this is no edit
    (55, "2dd4a5cdf2dd"): Expected("ut", False, ONLY_DOCS),
    (74, "7bc979de7260"): Expected("ut", True, Edit(("print call at line 12",))),
    # hard/11: the buggy function quoted twice in an indented list, cut
    (75, "14cb61be1891"): Expected("ut", True, NO_CHANGE),
    (77, "da0a6f6bc2c9"): Expected("debug", True, Edit(("print call at line 25",))),
    (79, "3bc2540a6a05"): Expected(
        "debug", True, Edit(("assignment result (unused)", "print call at line 24"))
    ),
    # hard/16: the buggy function with a unittest class and a __main__ block, cut after it
    (82, "8d942107a875"): Expected("ut", True, NO_CHANGE),
    # hard/16: unclosed fences running into prose; the code in them is the buggy function
    (87, "3afc0b955534"): Expected("ut", True, NO_CHANGE),
    (91, "aa3c2c29ed3d"): Expected(
        "debug", True, Edit(("assignment result (unused)", "print call at line 16"))
    ),
    (93, "9ccd238cad1d"): Expected("debug", True, Edit(("print call at line 14",))),
    # hard/16: the buggy function first, then blocks with `return True`: the last is taken
    (98, "d06f4cb78694"): Expected("ut", True, Edit()),
    (100, "f2e8f882bab8"): Expected("debug", True, NO_CHANGE),
    (101, "29aa9cd3a4b7"): Expected("debug", True, Edit(("assert at line 5",))),
}

EXTRA: dict[tuple[int, str], Expected] = {
    # guessed "vote", but a debugging reply: "The code is actually correct ..." (no code)
    (45, "6b3cb7b1bd99"): Expected("debug", False, "no code in the reply"),
}


@pytest.fixture(scope="module")
def corpus() -> dict[int, dict[str, Any]]:
    path = corpus_path()
    if not path.is_file():
        pytest.skip(f"the reply corpus is not here: {path} (set UTDEBUG_CORPUS)")
    with path.open(encoding="utf-8") as f:
        return {i: json.loads(line) for i, line in enumerate(f, start=1) if line.strip()}


@pytest.fixture(scope="module")
def buggy(data_dir: Path) -> dict[str, Any]:
    from utdebug.data.datasets import Split
    from utdebug.data.splits import load_split

    return {p.task_id: p for p in load_split(Split.HARD, data_dir=data_dir).problems}


def key(i: int, row: dict[str, Any]) -> tuple[int, str]:
    return i, hashlib.sha256(row["reply"].encode("utf-8")).hexdigest()[:12]


def outcome(row: dict[str, Any], buggy: dict[str, Any]) -> tuple[bool, Edit | str]:
    problem = buggy[row["task_id"]]
    before = parsing.extract_code(row["reply"]) is not None
    taken = take_edit(row["reply"], problem.code, problem.entry_point)
    if not isinstance(taken, MergedEdit):
        return before, taken.reason
    tree = ast.parse(taken.code)
    defined = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert problem.entry_point in defined, f"the merged code lost {problem.entry_point}"
    assert taken.replaced == (f"function {problem.entry_point}",)
    assert taken.added == ()
    return before, Edit(taken.dropped)


def test_the_hand_checked_rows_are_the_corpus_debug_rows(corpus: dict[int, Any]) -> None:
    debug = {key(i, row) for i, row in corpus.items() if row.get("purpose_guess") == "debug"}
    assert debug == set(EXPECTED)
    assert {key(i, corpus[i]) for i, _ in EXTRA} == set(EXTRA)


def test_each_debug_reply_gives_the_edit_checked_by_hand(
    corpus: dict[int, Any], buggy: dict[str, Any]
) -> None:
    wrong = []
    for (i, sha), want in {**EXPECTED, **EXTRA}.items():
        got = outcome(corpus[i], buggy)
        if got != (want.before, want.after):
            wrong.append(f"line {i} ({sha}): expected {(want.before, want.after)}, got {got}")
    assert not wrong, "\n".join(wrong)


def test_edits_before_and_after(corpus: dict[int, Any], buggy: dict[str, Any]) -> None:
    rows = {k: outcome(corpus[k[0]], buggy) for k in EXPECTED}
    assert sum(before for before, _ in rows.values()) == 20
    assert sum(isinstance(after, Edit) for _, after in rows.values()) == 11
    refusals = [after for _, after in rows.values() if not isinstance(after, Edit)]
    assert sorted(refusals) == sorted([NO_CHANGE] * 10 + [ONLY_DOCS])
    read_as_debug = {k: w for k, w in {**EXPECTED, **EXTRA}.items() if w.role == "debug"}
    assert sorted(i for i, _ in read_as_debug) == [36, 38, 45, 46, 77, 79, 91, 93, 100, 101]
    assert sum(w.before for w in read_as_debug.values()) == 9
    assert sum(isinstance(w.after, Edit) for w in read_as_debug.values()) == 7
