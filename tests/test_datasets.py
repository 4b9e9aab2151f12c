"""Tests for utdebug.data.datasets: file resolution, MBPP+Fix and HE+Fix loading."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import math
from pathlib import Path
from typing import Any

import pytest

from utdebug.data import datasets
from utdebug.data.datasets import (
    HE_EXCLUDED,
    HE_PACK_FILE,
    HE_PLUS_FILE,
    SOURCES,
    DatasetError,
    HeVariant,
    LoadedSplit,
    Problem,
    ProblemError,
    Split,
    default_cache_dir,
    resolve_file,
)
from utdebug.data.splits import load_split
from utdebug.sandbox.compare import CheckSpec

HARD = "MBPP+Fix_hard_test.jsonl"
MBPP = "MBPP+Fix_test.jsonl"
REAL_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reads the user's data dir or cache, whatever the environment says."""
    monkeypatch.delenv("UTDEBUG_DATA_DIR", raising=False)
    monkeypatch.setenv("UTDEBUG_CACHE_DIR", str(tmp_path / "default-cache"))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- synthetic MBPP rows ---------------------------------------------------------------------

PLAIN_HELPER = """def assertion(out, exp, atol):
    if out != exp and atol != 0:
        assert np.allclose(out, exp, rtol=1e-07, atol=atol)
    else:
        assert out == exp, f"out: {out}, exp: {exp}"
"""
SET_HELPER = """def assertion(out, exp, atol):
    out = set(out)
    exp = set(exp)
    assert out == exp
"""
NEVER_HELPER = """def assertion(out, exp, atol):
    if isinstance(out, bool):
        exact_match = out == exp
    else:
        exact_match = exp == (out is not None)
"""


def _script(
    entry: str, inputs: str, results: str, *, atol: str = "0", helper: str = PLAIN_HELPER
) -> str:
    return (
        "import numpy as np\nfrom math import inf\n\n"
        f"{helper}\n\ninputs = {inputs}\nresults = {results}\n"
        "for i, (inp, exp) in enumerate(zip(inputs, results)):\n"
        f"    assertion({entry}(*inp), exp, {atol})\n"
    )


def _row(task_id: object, **overrides: Any) -> dict[str, Any]:
    entry = overrides.pop("entry_point", "add")
    row: dict[str, Any] = {
        "task_id": task_id,
        "prompt": f"Write a function number {task_id}.",
        "source_file": "synthetic",
        "test_imports": [],
        "test_list": [f"assert {entry}(1, 2) == 3"],
        "test": _script(entry, "[[1, 2], [3, -4]]", "[3, -1]"),
        "signature": f"{entry}(a, b)",
        "entry_point": entry,
        "canonical_solution": f"def {entry}(a, b):\n    return a + b\n",
        "code": f"def {entry}(a, b):\n    return a - b\n",
    }
    row.update(overrides)
    return row


def _write_lines(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _write_rows(folder: Path, name: str, rows: list[dict[str, Any]]) -> Path:
    return _write_lines(folder / name, [json.dumps(row) for row in rows])


def _load(folder: Path, split: Split | str = Split.HARD, **kwargs: Any) -> LoadedSplit:
    kwargs.setdefault("verify", False)
    kwargs.setdefault("download", False)
    return load_split(split, data_dir=folder, cache_dir=folder / "cache", **kwargs)


def _by_number(loaded: LoadedSplit) -> dict[int, Problem]:
    return {problem.number: problem for problem in loaded.problems}


def _error_at(loaded: LoadedSplit, row: int) -> ProblemError:
    matches = [error for error in loaded.errors if error.row == row]
    assert len(matches) == 1, loaded.errors
    return matches[0]


# -- resolve_file ----------------------------------------------------------------------------


def test_missing_file_without_download_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(DatasetError) as info:
        resolve_file(HARD, data_dir=tmp_path / "data", cache_dir=tmp_path / "c", download=False)
    message = str(info.value)
    assert HARD in message
    assert str(tmp_path / "data") in message
    assert "--data-dir" in message
    assert "UTDEBUG_DATA_DIR" in message


def test_checksum_mismatch_names_both_hashes(tmp_path: Path) -> None:
    path = _write_rows(tmp_path, HARD, [_row(1)])
    with pytest.raises(DatasetError) as info:
        resolve_file(HARD, data_dir=tmp_path, cache_dir=tmp_path / "c", download=False)
    message = str(info.value)
    assert HARD in message
    expected = SOURCES[HARD].sha256
    assert expected is not None
    assert expected in message
    assert _sha(path) in message
    assert "--no-verify" in message and "verify=False" not in message  # the user's words


def test_verify_false_accepts_a_mismatch_and_records_the_actual_hash(tmp_path: Path) -> None:
    path = _write_rows(tmp_path, HARD, [_row(1)])
    found, sha = resolve_file(HARD, data_dir=tmp_path, download=False, verify=False)
    assert found == path
    assert sha == _sha(path)
    loaded = _load(tmp_path)
    assert loaded.sources == {HARD: _sha(path)}
    assert loaded.problems[0].provenance == datasets.Provenance(str(path), 1, _sha(path))


def test_unpinned_hash_is_accepted_with_verify(tmp_path: Path) -> None:
    assert SOURCES[MBPP].sha256 is None
    path = _write_rows(tmp_path, MBPP, [_row(11)])
    loaded = _load(tmp_path, Split.MBPP, verify=True)
    assert loaded.sources == {MBPP: _sha(path)}
    assert [problem.task_id for problem in loaded.problems] == ["mbpp/11"]


def test_unreadable_file_names_it(tmp_path: Path) -> None:
    (tmp_path / HARD).mkdir()
    with pytest.raises(DatasetError) as info:
        resolve_file(HARD, data_dir=tmp_path, download=False)
    assert HARD in str(info.value)
    assert "cannot read" in str(info.value)


def test_unknown_file_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="unknown dataset file"):
        resolve_file("nope.jsonl", data_dir=tmp_path, download=False)


def test_unreachable_url_raises_dataset_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    url = "http://127.0.0.1:9/x"
    monkeypatch.setitem(SOURCES, HARD, dataclasses.replace(SOURCES[HARD], url=url))
    cache = tmp_path / "cache"
    with pytest.raises(DatasetError) as info:
        resolve_file(HARD, data_dir=tmp_path / "empty", cache_dir=cache, download=True)
    message = str(info.value)
    assert url in message
    assert "UTDEBUG_DATA_DIR" in message
    assert info.value.__cause__ is None
    assert list((cache / "datasets").iterdir()) == []  # the temp file is gone


def test_download_into_cache_verifies_and_renames(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    remote = _write_rows(tmp_path / "remote", HARD, [_row(1)])
    source = _source_for(remote)
    monkeypatch.setitem(SOURCES, HARD, source)
    cache = tmp_path / "cache"
    path, sha = resolve_file(HARD, data_dir=tmp_path / "empty", cache_dir=cache)
    assert path == cache / "datasets" / HARD
    assert path.read_bytes() == remote.read_bytes()
    assert sha == _sha(remote)
    assert sorted(p.name for p in (cache / "datasets").iterdir()) == [HARD]
    # The cached copy is found next time without downloading.
    again, _ = resolve_file(HARD, data_dir=tmp_path / "empty", cache_dir=cache, download=False)
    assert again == path


def test_download_with_wrong_hash_keeps_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    remote = _write_rows(tmp_path / "remote", HARD, [_row(1)])
    bad = dataclasses.replace(_source_for(remote), sha256="0" * 64)
    monkeypatch.setitem(SOURCES, HARD, bad)
    cache = tmp_path / "cache"
    with pytest.raises(DatasetError) as info:
        resolve_file(HARD, cache_dir=cache)
    assert "0" * 64 in str(info.value)
    assert _sha(remote) in str(info.value)
    assert list((cache / "datasets").iterdir()) == []


def _source_for(path: Path) -> datasets.SourceFile:
    return datasets.SourceFile(path.name, path.as_uri(), _sha(path))


def test_env_data_dir_is_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = _write_rows(tmp_path / "env", HARD, [_row(1)])
    monkeypatch.setenv("UTDEBUG_DATA_DIR", str(tmp_path / "env"))
    found, _ = resolve_file(HARD, cache_dir=tmp_path / "c", download=False, verify=False)
    assert found == path
    # An explicit data_dir wins over the environment.
    other = _write_rows(tmp_path / "arg", HARD, [_row(2)])
    found, _ = resolve_file(HARD, data_dir=tmp_path / "arg", download=False, verify=False)
    assert found == other


def test_default_cache_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("UTDEBUG_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("UTDEBUG_CACHE_DIR")
    assert default_cache_dir() == tmp_path / "xdg" / "utdebug"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "utdebug"
    assert not (tmp_path / "home").exists()


def test_cache_dir_is_used_when_no_data_dir(tmp_path: Path) -> None:
    path = _write_rows(tmp_path / "c" / "datasets", HARD, [_row(1)])
    found, _ = resolve_file(HARD, cache_dir=tmp_path / "c", download=False, verify=False)
    assert found == path


# -- MBPP loading ----------------------------------------------------------------------------


def test_good_rows_load_with_their_fields(tmp_path: Path) -> None:
    path = _write_rows(tmp_path, HARD, [_row(6), _row(7, entry_point="mul")])
    loaded = _load(tmp_path)
    assert loaded.errors == []
    first, second = loaded.problems
    assert first.split is Split.HARD
    assert first.task_id == "hard/6"
    assert first.number == 6
    assert first.entry_point == "add"
    assert first.prompt == "Write a function number 6."
    assert first.signature == "add(a, b)"
    assert first.code == "def add(a, b):\n    return a - b\n"
    assert first.gold == "def add(a, b):\n    return a + b\n"
    assert first.test_list == ("assert add(1, 2) == 3",)
    assert first.tests.inputs == ((1, 2), (3, -4))
    assert first.tests.expected == (3, -1)
    assert first.tests.check == CheckSpec()
    assert first.provenance.row == 1
    assert second.provenance == datasets.Provenance(str(path), 2, _sha(path))
    assert second.entry_point == "mul"


def test_check_spec_is_read_from_the_script(tmp_path: Path) -> None:
    rows = [
        _row(1, test=_script("add", "[[1, 2]]", "[3.0]", atol="0.0001")),
        _row(2, test=_script("add", "[[[1], [1]]]", "[[1]]", helper=SET_HELPER)),
        _row(3, test=_script("add", "[['a', 'b']]", "[True]", helper=NEVER_HELPER)),
        _row(4, test=_script("add", "[[1, 2], [3, 4]]", "[(), set([1, 2])]")),
    ]
    _write_rows(tmp_path, HARD, rows)
    problems = _by_number(_load(tmp_path))
    assert problems[1].tests.check == CheckSpec(atol=1e-4)
    assert problems[2].tests.check == CheckSpec(set_compare=True, reference_use_set=True)
    assert problems[3].tests.check == CheckSpec(never_asserts=True)
    assert problems[4].tests.check == CheckSpec(reference_use_set=True)
    assert problems[4].tests.expected == ((), {1, 2})


def test_special_values_in_tests(tmp_path: Path) -> None:
    script = _script("add", "[[inf, -inf], (float('nan'), set())]", "[{'a': -1}, (1+2j,)]")
    _write_rows(tmp_path, HARD, [_row(1, test=script)])
    (problem,) = _load(tmp_path).problems
    (a, b), (c, d) = problem.tests.inputs
    assert (a, b) == (math.inf, -math.inf)
    assert math.isnan(c)
    assert d == set()
    assert problem.tests.expected == ({"a": -1}, (1 + 2j,))


def test_bad_rows_become_errors_and_good_rows_still_load(tmp_path: Path) -> None:
    missing_entry = _row(3)
    del missing_entry["entry_point"]
    lines = [
        json.dumps(_row(1)),
        '{"task_id": 2, "prompt": ',
        json.dumps(missing_entry),
        json.dumps(_row(4, test=_script("add", "[open('x')]", "[1]"))),
        json.dumps(_row(5, test=_script("add", "[[1, 2], [3, 4]]", "[3]"))),
        json.dumps(_row(6, code="def add(a, b)\n    return a +\n")),
        json.dumps(_row(7, code="   \n")),
        "",
        json.dumps(_row(8)),
    ]
    path = _write_lines(tmp_path / HARD, lines)
    loaded = _load(tmp_path)

    assert [problem.number for problem in loaded.problems] == [1, 6, 8]
    assert _by_number(loaded)[8].provenance.row == 9
    assert _by_number(loaded)[6].code.startswith("def add(a, b)\n")  # syntax error kept
    assert len(loaded.errors) == 5
    assert all(error.file == str(path) and error.split is Split.HARD for error in loaded.errors)

    bad_json = _error_at(loaded, 2)
    assert bad_json.task_id is None
    assert "not valid JSON" in bad_json.message

    no_entry = _error_at(loaded, 3)
    assert no_entry.task_id == "hard/3"
    assert "entry_point" in no_entry.message

    non_literal = _error_at(loaded, 4)
    assert non_literal.task_id == "hard/4"
    assert "cannot extract `inputs`" in non_literal.message
    assert "call to open()" in non_literal.message
    assert "line 11, column 11" in non_literal.message  # position within the test script

    mismatch = _error_at(loaded, 5)
    assert "2 inputs but 1 results" in mismatch.message

    empty_code = _error_at(loaded, 7)
    assert "`code` is empty" in empty_code.message


@pytest.mark.parametrize(
    ("overrides", "fragment"),
    [
        ({"test": "inputs = [[1]]\nresults = [1]\n"}, "no `for i, (inp, exp)"),
        ({"test": _script("add", "[[1]]", "[1]").replace("results =", "res =")}, "`results = "),
        ({"test": _script("add", "[[1]]", "[1]", helper="")}, "no `def assertion"),
        ({"test": _script("other", "[[1]]", "[1]")}, "calls `other` but entry_point is `add`"),
        ({"test": _script("add", "[1, 2]", "[1, 2]")}, "input 1 is a int"),
        ({"test": _script("add", "[]", "[]")}, "`inputs` is empty"),
        ({"test": _script("add", "{1: 2}", "[1]")}, "`inputs` is a dict"),
        ({"test": _script("add", "[[1]]", "[1]", atol="x")}, "atol"),
        ({"test": _script("add", "[[1]]", "[1]", atol="-1")}, "atol must be"),
        ({"test": _script("add", "[[1]", "[1]")}, "syntax error"),
        ({"test": _script("add", "[[2**999]]", "[1]")}, "operator **"),
        ({"test_list": "assert add(1, 2) == 3"}, "`test_list` must be a list"),
        ({"test_list": [1]}, "list of strings"),
        ({"prompt": None}, "`prompt` must be a string"),
        ({"entry_point": ""}, "`entry_point` is empty"),
    ],
)
def test_row_problems(tmp_path: Path, overrides: dict[str, Any], fragment: str) -> None:
    _write_rows(tmp_path, HARD, [_row(1, **overrides), _row(2)])
    loaded = _load(tmp_path)
    assert [problem.number for problem in loaded.problems] == [2]
    assert fragment in _error_at(loaded, 1).message


@pytest.mark.parametrize("task_id", ["x", True, None, 1.5, "Mbpp/x"])
def test_bad_task_ids(tmp_path: Path, task_id: object) -> None:
    _write_rows(tmp_path, HARD, [_row(task_id), _row(2)])
    loaded = _load(tmp_path)
    assert [problem.number for problem in loaded.problems] == [2]
    error = _error_at(loaded, 1)
    assert "field `task_id` must be a task number" in error.message
    assert error.task_id is None


def test_string_task_ids_are_accepted(tmp_path: Path) -> None:
    _write_rows(tmp_path, HARD, [_row("12"), _row("Mbpp/13")])
    assert [problem.task_id for problem in _load(tmp_path).problems] == ["hard/12", "hard/13"]


def test_non_object_row_and_duplicate_task(tmp_path: Path) -> None:
    _write_lines(tmp_path / HARD, ["[1, 2]", json.dumps(_row(5)), json.dumps(_row(5))])
    loaded = _load(tmp_path)
    assert [problem.number for problem in loaded.problems] == [5]
    assert "not an object" in _error_at(loaded, 1).message
    assert "duplicate task_id 5 (first at row 2)" in _error_at(loaded, 3).message


def test_invalid_utf8_line_is_a_row_error(tmp_path: Path) -> None:
    good = json.dumps(_row(1)).encode()
    (tmp_path / HARD).write_bytes(b'{"task_id": "\xff"}\n' + good + b"\n")
    loaded = _load(tmp_path)
    assert [problem.number for problem in loaded.problems] == [1]
    assert "not valid JSON" in _error_at(loaded, 1).message


def test_unknown_split_and_variant(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown split 'nope'"):
        load_split("nope", data_dir=tmp_path)
    with pytest.raises(ValueError, match="unknown HE variant"):
        load_split("he", data_dir=tmp_path, he_variant="nope")


def test_split_names_are_strings() -> None:
    assert Split("hard") is Split.HARD
    assert [str(split) for split in Split] == ["hard", "mbpp", "he", "he+", "val", "classeval"]
    assert [str(variant) for variant in HeVariant] == ["body", "runnable"]


def test_a_split_is_read_through_its_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The split table holds what a split needs: its files (resolved for its reader, in order)
    and its reader; nothing else tests the split's name (load_split had an if-chain)."""
    from utdebug.data import splits

    (tmp_path / HARD).write_text(json.dumps(_row(1)) + "\n", encoding="utf-8")
    (tmp_path / MBPP).write_text(json.dumps(_row(2)) + "\n", encoding="utf-8")
    seen: list[tuple[Split, list[str], HeVariant]] = []

    def reader(split: Split, files: Any, req: splits.LoadRequest) -> LoadedSplit:
        seen.append((split, [path.name for path, _ in files], req.he_variant))
        return LoadedSplit(split, [], [], {path.name: sha for path, sha in files})

    row = dataclasses.replace(splits.SPLITS[Split.HARD], files=(MBPP, HARD), reader=reader)
    monkeypatch.setitem(splits.SPLITS, Split.HARD, row)
    loaded = _load(tmp_path, "hard", he_variant="runnable")
    assert seen == [(Split.HARD, [MBPP, HARD], HeVariant.RUNNABLE)]
    assert loaded.sources == {MBPP: _sha(tmp_path / MBPP), HARD: _sha(tmp_path / HARD)}


def test_every_split_has_a_row_and_bench_offers_each() -> None:
    from utdebug.cli import build_parser
    from utdebug.data.splits import SPLITS

    assert list(SPLITS) == list(Split)
    for spec in SPLITS.values():
        assert all(name in SOURCES for name in spec.files), spec.split
    bench = build_parser(["bench"])._subparsers._group_actions[0].choices["bench"]  # type: ignore[union-attr]
    (split,) = [a for a in bench._actions if a.dest == "split"]
    assert split.choices == [s.value for s in SPLITS]


# -- HE+Fix (synthetic) ----------------------------------------------------------------------


def _pack_row(k: int, entry: str = "f", **overrides: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "task_id": f"Python/{k}",
        "declaration": f"def {entry}(x):\n",
        "buggy_solution": "    return x - 1\n",
        "signature": f"{entry}(x: int) -> int",
        "entry_point": entry,
        "prompt": f"def {entry}(x):\n    '''Add one.'''\n",
        "test": f"def check({entry}):\n    assert {entry}(1) == 2\n",
    }
    row.update(overrides)
    return row


def _plus_row(k: int, entry: str = "f", **overrides: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "task_id": f"HumanEval/{k}",
        "prompt": f"def {entry}(x: int) -> int:\n    '''Add one.'''\n",
        "entry_point": entry,
        "canonical_solution": "    return x + 1\n",
        "base_input": [[1], [2]],
        "plus_input": [[2], [3], [[1, 2]], [1]],
        "atol": 0,
    }
    row.update(overrides)
    return row


def _write_he(folder: Path, pack: list[Any], plus: list[Any]) -> tuple[Path, Path]:
    pack_path = _write_lines(folder / HE_PACK_FILE, [json.dumps(row) for row in pack])
    plus_path = folder / HE_PLUS_FILE
    with gzip.open(plus_path, "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in plus)
    return pack_path, plus_path


def test_he_join_dedup_and_variants(tmp_path: Path) -> None:
    pack_path, plus_path = _write_he(
        tmp_path,
        [_pack_row(0), _pack_row(32, "find_zero"), _pack_row(14, "skipped")],
        [_plus_row(14, "skipped"), _plus_row(0, atol=1e-6), _plus_row(32, "find_zero")],
    )
    body = _load(tmp_path, Split.HE)
    assert body.errors == []  # task 14 is dropped silently
    assert body.sources == {HE_PACK_FILE: _sha(pack_path), HE_PLUS_FILE: _sha(plus_path)}
    assert [problem.task_id for problem in body.problems] == ["he/0", "he/32"]
    problem = body.problems[0]
    assert problem.split is Split.HE
    assert problem.code == "    return x - 1\n"
    assert problem.prompt == "def f(x: int) -> int:\n    '''Add one.'''\n"
    assert problem.gold == problem.prompt + "    return x + 1\n"
    assert problem.signature == "f(x: int) -> int"
    assert problem.test_list == ()
    assert problem.tests.inputs == ((1,), (2,), (3,), ([1, 2],))
    assert problem.tests.expected is None
    assert problem.tests.check == CheckSpec(atol=1e-6)
    assert body.problems[1].tests.check == CheckSpec(poly_root=True)
    assert problem.provenance == datasets.Provenance(str(pack_path), 1, _sha(pack_path))

    runnable = _load(tmp_path, "he", he_variant="runnable")
    assert runnable.problems[0].code == "def f(x):\n    return x - 1\n"
    compile(runnable.problems[0].code, "<he>", "exec")
    with pytest.raises(SyntaxError):
        compile(problem.code, "<he>", "exec")


def test_he_row_problems(tmp_path: Path) -> None:
    _write_he(
        tmp_path,
        [
            _pack_row(0),
            _pack_row(1, "g"),
            _pack_row(2),
            _pack_row(3, test="x = set([1])"),
            {"task_id": "Mbpp/4"},
            _pack_row(5, buggy_solution=""),
            _pack_row(6),
            _pack_row(100, "bad_row_but_excluded", entry_point=None),
        ],
        [
            _plus_row(0),
            _plus_row(1, "h"),
            _plus_row(3),
            _plus_row(5),
            _plus_row(6, plus_input=[5]),
            _plus_row(7),
            _plus_row(100),
        ],
    )
    loaded = _load(tmp_path, Split.HE)
    assert [problem.number for problem in loaded.problems] == [0, 3]
    assert loaded.problems[1].tests.check.reference_use_set
    errors = {(Path(error.file).name, error.row): error for error in loaded.errors}
    assert set(errors) == {
        (HE_PACK_FILE, 2),
        (HE_PACK_FILE, 3),
        (HE_PACK_FILE, 5),
        (HE_PACK_FILE, 6),
        (HE_PLUS_FILE, 5),
        (HE_PLUS_FILE, 6),
    }
    assert "entry points disagree: `g`" in errors[HE_PACK_FILE, 2].message
    assert errors[HE_PACK_FILE, 2].task_id == "he/1"
    assert f"missing from {HE_PLUS_FILE}" in errors[HE_PACK_FILE, 3].message
    assert "`Python/<number>`" in errors[HE_PACK_FILE, 5].message
    assert errors[HE_PACK_FILE, 5].task_id is None
    assert "`buggy_solution` is empty" in errors[HE_PACK_FILE, 6].message
    assert "`plus_input` item 1 is a int" in errors[HE_PLUS_FILE, 5].message
    assert errors[HE_PLUS_FILE, 5].task_id == "he/6"
    assert f"missing from {HE_PACK_FILE}" in errors[HE_PLUS_FILE, 6].message
    assert not any(error.task_id == "he/100" for error in loaded.errors)


def test_corrupt_gzip_is_fatal_and_names_the_file(tmp_path: Path) -> None:
    _write_he(tmp_path, [_pack_row(0)], [_plus_row(0)])
    (tmp_path / HE_PLUS_FILE).write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(DatasetError, match=HE_PLUS_FILE.replace(".", r"\.")):
        _load(tmp_path, Split.HE)


def test_he_excluded_constant() -> None:
    assert frozenset({14, 15, 83, 100, 130, 139}) == HE_EXCLUDED


# -- the real files ----------------------------------------------------------------------------

needs_real_data = pytest.mark.skipif(
    not (REAL_DATA / HARD).is_file(),
    reason=f"the dataset mirror {REAL_DATA} is not present on this machine",
)


@pytest.fixture(scope="module")
def hard() -> LoadedSplit:
    return load_split(Split.HARD, data_dir=REAL_DATA, download=False)


@pytest.fixture(scope="module")
def he() -> LoadedSplit:
    return load_split(Split.HE, data_dir=REAL_DATA, download=False)


@needs_real_data
def test_real_hard_counts(hard: LoadedSplit) -> None:
    assert hard.errors == []
    assert len(hard.problems) == 170
    sizes = [len(problem.tests.inputs) for problem in hard.problems]
    assert sum(sizes) == 18_274
    assert (min(sizes), max(sizes)) == (4, 140)
    assert all(
        problem.tests.expected is not None
        and len(problem.tests.expected) == len(problem.tests.inputs)
        for problem in hard.problems
    )
    assert hard.sources == {HARD: SOURCES[HARD].sha256}
    assert hard.problems[0].task_id == "hard/6"


@needs_real_data
def test_real_hard_check_specs(hard: LoadedSplit) -> None:
    def numbers(flag: str) -> set[int]:
        return {p.number for p in hard.problems if getattr(p.tests.check, flag)}

    assert {p.number: p.tests.check.atol for p in hard.problems if p.tests.check.atol} == {
        120: 1e-4,
        137: 1e-4,
        293: 1e-4,
    }
    assert numbers("set_compare") == {7, 232, 579, 769}
    assert numbers("never_asserts") == {737, 794}
    assert numbers("reference_use_set") == {7, 232, 473, 579, 769}
    assert numbers("poly_root") == set()


@needs_real_data
def test_real_he_counts_and_variants(he: LoadedSplit) -> None:
    assert he.errors == []
    assert len(he.problems) == 158
    total = sum(len(problem.tests.inputs) for problem in he.problems)
    assert total == 122_478
    assert round(total / len(he.problems), 2) == 775.18
    assert not {problem.number for problem in he.problems} & HE_EXCLUDED
    assert [p.task_id for p in he.problems if p.tests.check.poly_root] == ["he/32"]
    assert all(problem.tests.expected is None for problem in he.problems)
    assert he.sources == {
        HE_PACK_FILE: SOURCES[HE_PACK_FILE].sha256,
        HE_PLUS_FILE: SOURCES[HE_PLUS_FILE].sha256,
    }
    runnable = load_split(Split.HE, data_dir=REAL_DATA, download=False, he_variant="runnable")
    body_code = {problem.number: problem.code for problem in he.problems}
    for problem in runnable.problems:
        assert problem.code.endswith(body_code[problem.number])
        assert problem.code != body_code[problem.number]
        assert problem.gold.startswith(problem.prompt)
    first = he.problems[0]
    assert first.code.startswith("    ")
    assert first.entry_point == "has_close_elements"
    assert first.signature == "has_close_elements(numbers: List[float], threshold: float) -> bool"
