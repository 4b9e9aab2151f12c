"""Decontamination: problems that overlap an evaluation split are dropped and reported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from utdebug.train.decontam import EvalIndex, code_keys, normalize_text, renamed_code_keys
from utdebug.train.sources import TrainProblem

HARD = "MBPP+Fix_hard_test.jsonl"


def _problem(description: str, code: str = "def f(x):\n    return x\n") -> TrainProblem:
    return TrainProblem("table", "table/1", description, code, "f", "f(x)")


def test_normalized_descriptions_match_whole_or_contained() -> None:
    index = EvalIndex()
    text = "Write a python function to check whether the two numbers differ at one bit position."
    index.add("hard", "hard/6", [text], [])
    index.add("hard", "hard/9", ["Reverse a list."], [])
    assert normalize_text("  WRITE a Python-function!! ") == "write a python function"
    exact = index.matches(_problem(text.upper().replace(" ", "  ")))
    assert [(m.split, m.task_id, m.by) for m in exact] == [("hard", "hard/6", "description")]
    quoted = f"Please help. {text} Use bit tricks, in Python 3."
    assert [m.task_id for m in index.matches(_problem(quoted))] == ["hard/6"]
    # A short evaluation text counts only when equal (a phrase of a few words is common).
    assert [m.task_id for m in index.matches(_problem("Reverse a list"))] == ["hard/9"]
    assert index.matches(_problem("Reverse a list of words and count them")) == []
    assert index.matches(_problem("Write a python function to check whether")) == []


def test_code_matches_ignore_formatting_docstrings_and_annotations() -> None:
    gold = "def is_even(n: int) -> bool:\n    '''Even?'''\n    return n % 2 == 0\n"
    same = "import math\n\ndef is_even(n):\n    # parity\n    return (n % 2) == 0\n"
    other = "def is_even(n):\n    return n % 2 != 1\n"
    assert code_keys(gold) & code_keys(same)
    assert not code_keys(gold) & code_keys(other)
    assert code_keys("def f(:") == set()
    index = EvalIndex()
    index.add("he+", "he+/1", [], [gold])
    (m,) = index.matches(_problem("Something else entirely.", same))
    assert (m.split, m.by) == ("he+", "code")


def test_a_planted_hard_problem_is_dropped_and_reported(data_dir: Path, tmp_path: Path) -> None:
    hard = [json.loads(line) for line in (data_dir / HARD).read_text().splitlines()]
    planted, reformatted, quoted = hard[0], hard[1], hard[2]
    rows = [
        # Copied from the Hard split: its description and its gold code.
        {"id": "planted", "prompt": planted["prompt"], "code": planted["canonical_solution"]},
        # The gold of another Hard problem under new words and a comment.
        {
            "id": "renamed",
            "prompt": "Return the words of a sentence that are long.",
            "code": "# from a blog\n" + reformatted["canonical_solution"],
            "entry_point": reformatted["entry_point"],
        },
        # A third Hard task quoted inside a longer request.
        {
            "id": "quoted",
            "prompt": f"Hi! {quoted['prompt']} Explain each step please.",
            "code": "def my_solution(x):\n    return [x]\n",
        },
        {
            "id": "clean",
            "prompt": "Add one to a number.",
            "code": "def inc(x):\n    return x + 1\n",
        },
    ]
    source = tmp_path / "planted.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    cmd = [
        sys.executable, "-m", "utdebug", "train", "data", "--source", "table", "--source-path",
        str(source), "--data-dir", str(data_dir), "--model", "sim", "--decontaminate",
        "hard,mbpp", "--out", str(out),
    ]  # fmt: skip
    r = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert "decontamination: 3 problems dropped (hard 3, mbpp unavailable)" in r.stderr
    assert "MBPP+Fix (mbpp) is unavailable and was not checked" in r.stderr
    dropped = {
        d["problem_id"]: d["matches"]
        for d in map(json.loads, (out / "decontamination.jsonl").read_text().splitlines())
    }
    assert set(dropped) == {"table/planted", "table/renamed", "table/quoted"}
    hard_id = f"hard/{planted['task_id']}"
    assert {(m["task_id"], m["by"]) for m in dropped["table/planted"]} == {
        (hard_id, "description"),
        (hard_id, "code"),
    }
    assert dropped["table/renamed"] == [
        {
            "split": "hard",
            "task_id": f"hard/{reformatted['task_id']}",
            "by": "code",
            "how": "same syntax tree",
            "matched": reformatted["entry_point"],
        }
    ]
    (m,) = dropped["table/quoted"]
    assert (m["split"], m["task_id"], m["by"], m["how"]) == (
        "hard",
        f"hard/{quoted['task_id']}",
        "description",
        "contained",
    )
    assert m["matched"] == normalize_text(quoted["prompt"])
    card = json.loads((out / "card.json").read_text())
    dec = card["decontamination"]
    assert dec["dropped"] == 3 and dec["by_split"] == {"hard": 3}
    assert dec["splits"]["hard"]["status"] == "used" and dec["splits"]["hard"]["problems"] == 170
    assert dec["splits"]["hard"]["files"][HARD] == (
        "01cb4be1b1b4627ecf7c2daf2c6a5674a156ad2ac652b9d863ef84ddfe754810"
    )
    assert dec["splits"]["mbpp"]["status"] == "unavailable"
    assert "MBPP+Fix_test.jsonl" in dec["splits"]["mbpp"]["reason"]
    assert card["counts"]["problems"] == 1
    readme = (out / "README.md").read_text()
    assert "`mbpp` MBPP+Fix: **unavailable**" in readme
    assert "3 problems dropped in all" in readme


def test_with_a_data_folder_nothing_goes_to_the_network(
    data_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # MBPP+Fix is not in the data folder: it is unavailable, and no download is tried (not
    # even a name lookup).
    import socket
    import urllib.request

    from utdebug.cli import main

    tried: list[str] = []

    def refuse(*args: object, **kwargs: object) -> None:
        tried.append(repr(args[:1]))
        raise OSError("the network is off in this test")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    monkeypatch.delenv("UTDEBUG_DATA_DIR", raising=False)
    out = tmp_path / "out"
    code = main([
        "train", "data", "--source", "mbpp+", "--data-dir", str(data_dir), "--limit", "0",
        "--out", str(out),
    ])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0, err
    assert tried == []
    card = json.loads((out / "card.json").read_text())
    reason = card["decontamination"]["splits"]["mbpp"]["reason"]
    assert card["decontamination"]["splits"]["mbpp"]["status"] == "unavailable"
    assert "MBPP+Fix_test.jsonl not found" in reason and "downloading is off" in reason
    assert "MBPP+Fix (mbpp) is unavailable and was not checked" in err


def test_copies_under_other_identifiers_match_by_code() -> None:
    hard = (
        "def bell_Number(n):\n    b = [[0] * (n + 1) for _ in range(n + 1)]\n    return b[n][0]\n"
    )
    copy = (
        "def bell_number(m):\n    bell = [[0] * (m + 1) for i in range(m + 1)]\n"
        "    return bell[m][0]\n"
    )
    other = copy.replace("(m + 1) for", "(m + 2) for")
    helper = "def f(xs):\n    return max(xs) - min(xs)\n"
    assert not code_keys(hard) & code_keys(copy)  # not the same tree as written
    assert renamed_code_keys(hard) & renamed_code_keys(copy)
    assert not renamed_code_keys(hard) & renamed_code_keys(other)
    # Names the function does not bind stay: max/min are not abs/sum.
    assert not renamed_code_keys(helper) & renamed_code_keys(
        "def g(a):\n    return sum(a) - abs(a)\n"
    )
    index = EvalIndex()
    index.add("hard", "hard/608", [], [hard])
    (m,) = index.matches(_problem("Bell numbers, another text entirely.", copy))
    assert m.to_json() == {
        "split": "hard",
        "task_id": "hard/608",
        "by": "code",
        "how": "same syntax tree, identifiers renamed",
        "matched": "bell_Number",
    }


def test_reworded_descriptions_match_but_another_task_in_the_same_words_does_not() -> None:
    index = EvalIndex()
    first = "Write a python function to find the first repeated character in a given string."
    index.add("hard", "hard/451", ["Write a function to remove all whitespaces from a string."], [])
    index.add("hard", "hard/602", [first], [])
    (m,) = index.matches(
        _problem("Write a function to remove all whitespaces from the given string")
    )
    assert (m.task_id, m.by, m.how) == ("hard/451", "description", "similar content words (1.00)")
    assert m.matched == "Write a function to remove all whitespaces from a string."
    # One content word apart (a negation): another task.
    assert index.matches(_problem(
        "Write a python function to find the first non-repeated character in a given string."
    )) == []  # fmt: skip


def test_the_renamed_copies_of_mbpp_plus_are_dropped(data_dir: Path) -> None:
    from utdebug.train.decontam import build_index
    from utdebug.train.sources import load_mbpp_plus

    loaded = load_mbpp_plus(data_dir=data_dir, download=False)
    index = build_index(["hard"], data_dir=data_dir, cache_dir=None, download=False)
    problems = {p.problem_id: p for p in loaded.problems}
    for pid, hard_id, name in [
        ("mbpp+/67", "hard/608", "bell_Number"),
        ("mbpp+/143", "hard/792", "count_list"),
        ("mbpp+/588", "hard/145", "max_Abs_Diff"),
    ]:
        found = [m for m in index.matches(problems[pid]) if m.task_id == hard_id]
        assert [(m.by, m.how, m.matched) for m in found] == [
            ("code", "same syntax tree, identifiers renamed", name)
        ], pid
