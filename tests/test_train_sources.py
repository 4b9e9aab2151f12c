"""Where training problems come from: MBPP+ (the local file), any JSONL/Parquet table, and the
Tulu-3 mixture with the paper's filter (on a small Tulu-format file made here)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from utdebug.data.datasets import DatasetError
from utdebug.runs.records import SAMPLES, read_samples
from utdebug.train import tulu
from utdebug.train.sources import (
    clean_description,
    literal_calls,
    load_mbpp_plus,
    load_table,
    pick_entry_point,
    shape_inputs,
    shape_like,
    signature_of,
)


def test_mbpp_plus_from_the_local_file(data_dir: Path) -> None:
    if not (data_dir / "MbppPlus-prerelease.jsonl.gz").is_file():
        pytest.skip("MbppPlus-prerelease.jsonl.gz is not in the data folder")
    loaded = load_mbpp_plus(data_dir=data_dir)
    assert loaded.rows == 399 and len(loaded.problems) == 399 and not loaded.dropped
    assert "early MBPP+" in loaded.notes[0]
    p = next(p for p in loaded.problems if p.problem_id == "mbpp+/4")
    assert p.description == (
        "Write a function to find the n largest integers from a given list of numbers, "
        "returned in descending order."
    )
    assert p.entry_point == "heap_queue_largest"
    assert p.signature == "heap_queue_largest(nums: list, n: int)"
    assert p.inputs[0] == ([25, 35, 22, 85, 14, 65, 75, 22, 58], 3)
    assert len({repr(i) for i in p.inputs}) == len(p.inputs)
    # JSON has no tuples: where the task's example calls pass tuples, the inputs are tuples.
    by_id = {p.problem_id: p for p in loaded.problems}
    lists = by_id["mbpp+/143"].inputs  # find_lists: "lists present in the given tuple"
    assert lists[0] == (([1, 2, 3, 4], [5, 6, 7, 8]),)
    assert all(type(args[0]) is tuple for args in lists)
    # Its sequences stay lists, as in the examples (its other items are what they were).
    assert all(type(x) is list for args in lists for x in args[0] if isinstance(x, list | tuple))
    pairs = by_id["mbpp+/2"].inputs  # similar_elements((3, 4, 5, 6), (5, 7, 4, 10))
    assert all(type(a) is tuple and type(b) is tuple for a, b in pairs)
    assert by_id["mbpp+/4"].inputs[0][0].__class__ is list  # a list where the task has one


def test_json_inputs_take_the_container_types_of_the_example_calls() -> None:
    examples = [((1, 2), [3], {"a": (1,)}, {1, 2})]
    shaped = shape_inputs([([5, 6, 7], [8], {"a": [2, 3], "b": [4]}, [3])], examples)
    assert shaped == [((5, 6, 7), [8], {"a": (2, 3), "b": (4,)}, {3})]
    assert type(shaped[0][0]) is tuple and type(shaped[0][3]) is set
    # Examples that disagree on an argument's kind, or of another arity, change nothing.
    mixed = [((1,),), ([1],)]
    assert shape_inputs([([1, 2],)], mixed) == [([1, 2],)]
    assert shape_inputs([([1],)], [((1,), 2)]) == [([1],)]
    # Unhashable items cannot make a set: the list stays.
    assert shape_like([[1], [2]], {1}) == [[1], [2]]


def test_description_cleaning() -> None:
    assert clean_description("'''\nWrite a function.\n'''") == "Write a function."
    assert clean_description('"""\nDo it.\nassert f(1) == 2\n"""\n') == "Do it."
    assert clean_description("Plain.") == "Plain."


def test_entry_point_signature_and_example_calls() -> None:
    code = (
        "def helper(x):\n    return x * 2\n\n\ndef main_func(a, b: int = 3, *rest, k, **kw):\n"
        "    return helper(a) + b\n\n\nprint(main_func(1, 2, k=0))\nprint(main_func(5, 6))\n"
    )
    assert pick_entry_point(code, "Write a function.") == "main_func"
    assert pick_entry_point(code, "Fix `helper(x)` please") == "helper"
    assert signature_of(code, "main_func") == "main_func(a, b: int, *rest, k, **kw)"
    assert signature_of(code, "nope") is None
    assert literal_calls(code, "main_func") == [(5, 6)]  # keywords are not positional
    text = ">>> f([1, 2], 'a)b')\n3\nand f(x) and f(2) again f(2)"
    assert literal_calls(text, "f") == [([1, 2], "a)b"), (2,)]


def _write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_a_table_of_descriptions_and_code(tmp_path: Path) -> None:
    rows: list[Any] = [
        {
            "question": "Write a function `double(x)` that doubles a number.\n>>> double(4)\n8",
            "solution": "Sure:\n```python\ndef double(x):\n    return 2 * x\n```\nDone.",
        },
        {
            "prompt": "Add two numbers.",
            "code": "def add(a, b):\n    return a + b\n",
            "entry_point": "add",
            "inputs": [[1, 2], [3, 4]],
            "task_id": "A7",
        },
        {"prompt": "No code here."},
        {"prompt": "Broken.", "code": "def f(:\n"},
        {"prompt": "Only a constant.", "code": "X = 1\n"},
        "not json {",
        [1, 2],
    ]
    loaded = load_table(_write_jsonl(tmp_path / "t.jsonl", rows))
    assert loaded.rows == 7
    assert [p.problem_id for p in loaded.problems] == ["table/t.jsonl:1", "table/A7"]
    double, add = loaded.problems
    assert double.code == "def double(x):\n    return 2 * x\n"
    assert double.entry_point == "double" and double.inputs == ((4,),)
    assert add.inputs == ((1, 2), (3, 4))
    assert dict(loaded.dropped) == {
        "no description or code field": 1,
        "the code does not parse": 1,
        "no top-level function in the code": 1,
        "line is not valid JSON": 1,
        "row is not a JSON object": 1,
    }
    assert loaded.files[0]["rows"] == 7 and len(loaded.files[0]["sha256"]) == 64


def test_a_parquet_table_needs_pyarrow(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    if importlib.util.find_spec("pyarrow") is None:
        path.write_bytes(b"PAR1")
        with pytest.raises(DatasetError, match="needs pyarrow"):
            load_table(path)
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(
        pa.table({"prompt": ["Add."], "code": ["def add(a, b):\n    return a + b\n"]}), path
    )
    assert [p.entry_point for p in load_table(path).problems] == ["add"]


# --- Tulu-3 -------------------------------------------------------------------------------------

GOOD_CODE = "def count_vowels(s):\n    return sum(c in 'aeiou' for c in s.lower())\n"


def _turns(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"role": role, "content": text} for role, text in pairs]


def tulu_rows() -> list[Any]:
    ask = "Write a Python function.\n```python\ndef count_vowels(s):\n    ...\n```"
    return [
        {
            "id": "good",
            "source": "personas",
            "messages": _turns(
                ("user", ask),
                ("assistant", f"```python\n{GOOD_CODE}\nprint(count_vowels('Hello'))\n```"),
            ),
        },
        {"id": "math", "messages": _turns(("user", "What is 2+2?"), ("assistant", "4"))},
        {
            "id": "nodef",
            "messages": _turns(
                ("user", "Explain Python lists."), ("assistant", "They hold items.")
            ),
        },
        {
            "id": "long",
            "messages": _turns(
                ("user", "In python, def f(x): " + "word " * 2100),
                ("assistant", "```python\n" + GOOD_CODE + "```"),
            ),
        },
        {
            "id": "replacement",
            "messages": _turns(
                ("user", "python def f(): \ufffd broken"),
                ("assistant", "```python\n" + GOOD_CODE + "```"),
            ),
        },
        '{"id": "surrogate", "messages": [{"role": "user", "content": "python def \\ud800"}, '
        '{"role": "assistant", "content": "x"}]}',
        {"id": "prose", "messages": _turns(("user", ask), ("assistant", "Count them by hand."))},
        {
            "id": "multi",
            "messages": _turns(
                ("user", ask),
                ("assistant", "```python\ndef count_vowels(s):\n    return 0\n```"),
                ("user", "Now make it correct, please."),
                ("assistant", f"```python\n{GOOD_CODE}```"),
            ),
        },
        {"id": "noanswer", "messages": _turns(("user", ask))},
        {
            "id": "crashes",
            "messages": _turns(
                ("user", "Python: def read_it(): read a number."),
                ("assistant", "```python\ndef read_it():\n    return 1\n\nx = int(input())\n```"),
            ),
        },
    ]


def test_the_tulu_filter_counts_every_reason(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "tulu.jsonl", tulu_rows())
    loaded = tulu.load_tulu(path, None)
    assert loaded.rows == 10
    assert dict(loaded.dropped) == {
        tulu.NOT_PYTHON: 2,
        tulu.TOO_LONG: 1,
        tulu.BAD_UNICODE: 2,
        tulu.NO_CODE: 1,
        tulu.NO_TURNS: 1,
    }
    by_id = {p.problem_id: p for p in loaded.problems}
    assert set(by_id) == {"tulu3/good", "tulu3/multi", "tulu3/crashes"}
    good = by_id["tulu3/good"]
    assert good.entry_point == "count_vowels" and good.inputs == (("Hello",),)
    assert good.description.startswith("Write a Python function.")
    multi = by_id["tulu3/multi"]
    assert multi.code == GOOD_CODE  # the last assistant turn
    assert "Now make it correct, please." in multi.description  # every user turn
    assert tulu.prompt_tokens("def f(x): return x") == 8


def test_tulu_from_the_data_folder_and_without_datasets(tmp_path: Path) -> None:
    folder = tmp_path / "data" / tulu.TULU_FOLDER / "data"
    folder.mkdir(parents=True)
    _write_jsonl(folder / "train-00000-of-00001.jsonl", tulu_rows())
    loaded = tulu.load_tulu(None, tmp_path / "data")
    assert len(loaded.problems) == 3 and loaded.files[0]["name"] == "train-00000-of-00001.jsonl"
    if importlib.util.find_spec("datasets") is None:
        with pytest.raises(DatasetError, match=r"pip install 'utdebug\[train\]'"):
            tulu.load_tulu(None, tmp_path / "empty")


def test_tulu_end_to_end_with_the_simulated_model(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "tulu.jsonl", tulu_rows())
    out = tmp_path / "out"
    cmd = [
        sys.executable, "-m", "utdebug", "train", "data", "--source", "tulu3", "--source-path",
        str(path), "--model", "sim", "--decontaminate", "none", "--out", str(out),
        "--concurrency", "1",
    ]  # fmt: skip
    r = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    card = json.loads((out / "card.json").read_text())
    assert card["source"]["rows"] == 10 and card["source"]["problems"] == 3
    assert card["source"]["dropped"][tulu.NOT_PYTHON] == 2
    assert card["counts"]["stages"]["problem"]["gold code fails to run"] == 1
    records = {r["problem_id"]: r for r in read_samples(out / SAMPLES)}
    assert records["tulu3/crashes"]["gold_error"].startswith("RuntimeError: input()")
    assert card["decontamination"]["splits"] == {}
    st = card["counts"]["stages"]
    assert st["problem"] == {"gold code fails to run": 1, "no failing input": 1, "with examples": 1}
    # "good" has one known input (its own example call), which the simulated model proposes;
    # "multi" has none, and the simulated model has nothing to propose in any attempt.
    assert st["inputs"]["no input in the reply"] == 5 and card["counts"]["examples"] == 1
    assert records["tulu3/good"]["examples"][0]["meta"]["call"] == "count_vowels('Hello')"


def test_humaneval_plus_as_a_source(data_dir: Path) -> None:
    from utdebug.train.sources import load_he_plus

    loaded = load_he_plus(data_dir=data_dir, download=False)
    assert loaded.rows == 164 and len(loaded.problems) == 164
    p = next(p for p in loaded.problems if p.problem_id == "he+/0")
    assert p.entry_point == "has_close_elements" and p.description.startswith("from typing")
    assert p.signature == "has_close_elements(numbers: List[float], threshold: float)"
    assert len(p.inputs) > 50 and loaded.files[0]["name"] == "HumanEvalPlus.jsonl.gz"


def test_parquet_shards_need_pyarrow(data_dir: Path, tmp_path: Path) -> None:
    cmd = [
        sys.executable, "-m", "utdebug", "train", "data", "--source", "mbpp+", "--data-dir",
        str(data_dir), "--model", "sim", "--limit", "2", "--decontaminate", "none", "--parquet",
        "--out", str(tmp_path / "o"),
    ]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if importlib.util.find_spec("pyarrow") is None:
        assert r.returncode == 2 and "--parquet needs pyarrow" in r.stderr
        return
    assert r.returncode == 0, r.stderr
    import pyarrow.parquet as pq

    (shard,) = sorted((tmp_path / "o" / "sft").glob("*.parquet"))
    table = pq.read_table(shard)
    assert table.column_names == ["messages", "meta"]
    jsonl = (tmp_path / "o" / "sft" / shard.name.replace(".parquet", ".jsonl")).read_text()
    assert table.num_rows == len(jsonl.splitlines())
