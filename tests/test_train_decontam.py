"""Decontamination: problems that overlap an evaluation split are dropped and reported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from utdebug.train.decontam import EvalIndex, code_keys, normalize_text
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
        {"split": "hard", "task_id": f"hard/{reformatted['task_id']}", "by": "code"}
    ]
    assert dropped["table/quoted"] == [
        {"split": "hard", "task_id": f"hard/{quoted['task_id']}", "by": "description"}
    ]
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
