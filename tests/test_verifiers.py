"""Scoring-Verifiers: the metrics (utdebug.ranking.verifiers) and the release loader."""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats  # type: ignore[import-untyped]

from utdebug.benchmarks.scoring_verifiers import (
    RELEASE_URL,
    VerifierDataError,
    load_verifier_file,
    load_verifier_set,
    release_source,
    resolve_release_file,
    set_for_file,
)
from utdebug.ranking.verifiers import (
    ProblemScores,
    aggregate,
    average_ranks,
    kendall_tau_b,
    score_problem,
    spearman_rho,
)

# --- metrics: hand-computed examples ----------------------------------------------------------


def test_perfect_verifier() -> None:
    s = score_problem([1.0, 0.5, 0.0], [0.9, 0.4, 0.1])
    assert (s.top1, s.bottom1, s.spearman, s.kendall) == (1.0, 1.0, 1.0, 1.0)
    assert s.mae == pytest.approx(0.1)
    assert not s.constant_prediction and s.ranked


def test_reversed_verifier() -> None:
    s = score_problem([1.0, 0.5, 0.0], [0.0, 0.5, 1.0])
    assert (s.top1, s.bottom1, s.spearman, s.kendall) == (0.0, 0.0, -1.0, -1.0)
    assert s.mae == pytest.approx(2 / 3)


def test_three_way_tie_gives_a_third() -> None:
    # Every solution passes all generated tests: a random tie-break finds the best 1 in 3.
    s = score_problem([1.0, 0.5, 0.0], [1.0, 1.0, 1.0])
    assert s.top1 == pytest.approx(1 / 3) and s.bottom1 == pytest.approx(1 / 3)
    assert s.constant_prediction and s.spearman == 0.0 and s.kendall == 0.0
    assert s.mae == pytest.approx((0.0 + 0.5 + 1.0) / 3)


def test_partial_tie_at_the_top() -> None:
    # e ranks 4 3 2 1, p ranks 3.5 3.5 2 1: rho = 4.5 / sqrt(5 * 4.5); tau-b = 5 / sqrt(6 * 5).
    s = score_problem([1.0, 0.75, 0.5, 0.0], [1.0, 1.0, 2 / 3, 0.0])
    assert s.top1 == 0.5 and s.bottom1 == 1.0
    assert s.spearman == pytest.approx(4.5 / math.sqrt(5 * 4.5))
    assert s.kendall == pytest.approx(5 / math.sqrt(6 * 5))
    assert s.mae == pytest.approx((0.25 + (2 / 3 - 0.5)) / 4)


def test_the_tied_top_misses_the_best() -> None:
    s = score_problem([1.0, 0.6, 0.3, 0.0], [0.5, 1.0, 1.0, 0.0])
    assert s.top1 == 0.0 and s.bottom1 == 1.0


def test_ties_in_expected_scores_count_every_maximiser() -> None:
    # argmax e = {0, 1}; T = {0} -> 1. argmin e = {2}; B = {1, 2} -> 1/2.
    s = score_problem([1.0, 1.0, 0.0], [1.0, 0.5, 0.5])
    assert s.top1 == 1.0 and s.bottom1 == 0.5
    s = score_problem([1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0])
    assert s.top1 == pytest.approx(2 / 3) and s.bottom1 == 1.0


def test_average_ranks() -> None:
    assert list(average_ranks([0.5, 0.1, 0.5, 0.9])) == [2.5, 1.0, 2.5, 4.0]
    assert list(average_ranks([])) == []


# --- metrics: the undefined-rho rule ----------------------------------------------------------


def test_single_solution_is_excluded_from_rho_and_counted() -> None:
    s = score_problem([0.7], [0.2])
    assert s.spearman is None and s.kendall is None and not s.ranked
    assert s.top1 == 1.0 and s.bottom1 == 1.0 and s.mae == pytest.approx(0.5)
    agg = aggregate([s, score_problem([1.0, 0.0], [1.0, 0.0])])
    assert agg.excluded_too_few == 1 and agg.ranked == 1
    assert agg.spearman == 1.0 and agg.kendall == 1.0  # the excluded problem is not a 0
    assert agg.top1 == 1.0 and agg.problems == 2


def test_constant_expected_is_excluded_and_counted() -> None:
    s = score_problem([0.5, 0.5, 0.5], [1.0, 0.0, 0.5])
    assert s.constant_expected and s.spearman is None and s.kendall is None
    assert s.top1 == pytest.approx(1.0) and s.bottom1 == pytest.approx(1.0)
    # Both constant: the true ranking is undefined, so excluded rather than 0.
    both = score_problem([0.5, 0.5], [1.0, 1.0])
    assert both.spearman is None and both.constant_prediction
    agg = aggregate([s, both, score_problem([1.0, 0.0], [0.0, 1.0])])
    assert agg.excluded_constant_expected == 2 and agg.ranked == 1 and agg.spearman == -1.0
    assert agg.constant_prediction == 0  # counted only among the ranked problems


def test_constant_prediction_scores_zero_not_dropped() -> None:
    good = score_problem([1.0, 0.5, 0.0], [1.0, 0.5, 0.0])
    flat = score_problem([1.0, 0.5, 0.0], [0.0, 0.0, 0.0])
    agg = aggregate([good, flat])
    assert agg.ranked == 2 and agg.constant_prediction == 1
    assert agg.spearman == pytest.approx(0.5) and agg.kendall == pytest.approx(0.5)
    assert agg.top1 == pytest.approx((1 + 1 / 3) / 2)


def test_aggregate_means_per_problem_and_pooled_mae() -> None:
    a = score_problem([1.0, 0.0], [0.0, 0.0])  # MAE 0.5 over 2 solutions
    b = score_problem([1.0, 0.5, 0.0, 0.25], [1.0, 0.5, 0.0, 0.25])  # MAE 0 over 4
    agg = aggregate([a, b])
    assert agg.mae == pytest.approx(0.25)  # (0.5 + 0) / 2 problems
    assert agg.mae_pooled == pytest.approx(1.0 / 6)  # 1.0 total error / 6 solutions
    assert agg.solutions == 6
    doc = json.loads(json.dumps(agg.to_json()))
    assert doc["mae"] == agg.mae and doc["ranked"] == 2


def test_aggregate_of_nothing() -> None:
    agg = aggregate([])
    assert agg.problems == 0 and agg.top1 is None and agg.spearman is None
    assert agg.mae_pooled is None


# --- metrics: agreement with scipy ------------------------------------------------------------

_levels = st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0])
_unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@st.composite
def _pairs(draw: st.DrawFn) -> tuple[list[float], list[float]]:
    n = draw(st.integers(min_value=2, max_value=9))
    values = st.one_of(_levels, _unit)
    e = draw(st.lists(values, min_size=n, max_size=n))
    p = draw(st.lists(values, min_size=n, max_size=n))
    return e, p


@settings(max_examples=300, deadline=None)
@given(_pairs())
def test_rank_correlations_agree_with_scipy(pair: tuple[list[float], list[float]]) -> None:
    e, p = pair
    s = score_problem(e, p)
    if len(set(e)) == 1:
        assert s.spearman is None and s.kendall is None
    elif len(set(p)) == 1:
        assert s.spearman == 0.0 and s.kendall == 0.0
    else:
        assert s.spearman == pytest.approx(stats.spearmanr(e, p).statistic, abs=1e-9)
        assert s.kendall == pytest.approx(stats.kendalltau(e, p).statistic, abs=1e-9)
        assert spearman_rho(e, p) == s.spearman and kendall_tau_b(e, p) == s.kendall
    for v in (s.top1, s.bottom1, s.mae, s.spearman, s.kendall):
        assert v is None or (math.isfinite(v) and -1.0 <= v <= 1.0)
    # Top-1 by brute force: the share of the verifier's top-tied set that is truly best.
    top = [i for i in range(len(p)) if p[i] == max(p)]
    assert s.top1 == pytest.approx(sum(e[i] == max(e) for i in top) / len(top))
    bottom = [i for i in range(len(p)) if p[i] == min(p)]
    assert s.bottom1 == pytest.approx(sum(e[i] == min(e) for i in bottom) / len(bottom))
    assert s.mae == pytest.approx(sum(abs(a - b) for a, b in zip(e, p, strict=True)) / len(e))


# --- metrics: bad input -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "predicted", "message"),
    [
        ([1.0, 0.0], [1.0], "differ in length: 2 expected, 1 predicted"),
        ([], [], "at least one solution"),
        ([1.0, math.nan], [1.0, 0.0], "expected score 1 is not finite"),
        ([1.0, 0.0], [math.inf, 0.0], "predicted score 0 is not finite"),
        ([1.5, 0.0], [1.0, 0.0], r"expected score 0 is outside \[0, 1\]"),
        ([1.0, 0.0], [1.0, -0.1], r"predicted score 1 is outside \[0, 1\]"),
        ([[1.0], [0.0]], [1.0, 0.0], "flat sequence"),
        (["a", "b"], [1.0, 0.0], "must be numbers"),
    ],
)
def test_bad_input_is_refused(expected: Any, predicted: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        score_problem(expected, predicted)


def test_problem_scores_json() -> None:
    s = score_problem([1.0, 0.0], [0.5, 0.5])
    doc = s.to_json()
    assert ProblemScores(**doc) == s
    assert json.loads(json.dumps(doc))["constant_prediction"] is True


# --- loader -----------------------------------------------------------------------------------

HE_PROMPT = 'def add(a, b):\n    """Return a + b."""\n'
ADD_BODY = "    return a + b\n"
TWO_DEFS = 'def helper(x):\n    return x\n\n\ndef twice(x):\n    """Return 2 * x."""\n'


def he_row(**over: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "task_id": "HumanEval/0",
        "prompt": HE_PROMPT,
        "entry_point": "add",
        "canonical_solution": "    return a + b\n",
        "base_input": [[1, 2], [3, 4]],
        "plus_input": [[1, 2], [5, 6]],
        "atol": 0,
        "all_solutions": [
            {
                "rank": 1,
                "average_test_score": 1.0,
                "average_time_taken": 0.01,
                "solution": {"prompt": HE_PROMPT, "canonical_solution": HE_PROMPT + ADD_BODY},
            },
            {
                "rank": 2,
                "average_test_score": 0.33,
                "average_time_taken": None,
                "solution": {"prompt": HE_PROMPT, "canonical_solution": "    return a - b\n"},
            },
        ],
    }
    row.update(over)
    return row


def without(key: str) -> dict[str, Any]:
    return {k: v for k, v in he_row().items() if k != key}


def write_rows(path: Path, rows: list[Any]) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    return path


def test_he_style_file_loads(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "HE-R+.jsonl", [he_row()])
    vs = load_verifier_file(path)
    assert vs.name == "he-r+" and vs.errors == []
    assert vs.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert vs.url == RELEASE_URL + "HE-R%2B.jsonl"
    (p,) = vs.problems
    assert p.task_id == "HumanEval/0" and p.entry_point == "add" and p.line == 1
    assert p.expected == (1.0, 0.33)
    assert p.signature == "add(a, b)" and p.he_style
    assert p.code_field == "solution.canonical_solution"
    # A completion body gets the prompt in front; a whole program is kept as it is.
    assert p.candidates[0].code == HE_PROMPT + "    return a + b\n"
    assert p.candidates[1].code == HE_PROMPT + "    return a - b\n"
    assert p.ground_truth == HE_PROMPT + "    return a + b\n"
    assert [c.rank for c in p.candidates] == [1, 2]
    assert p.candidates[1].time_taken is None
    # HE-R+ uses base + plus inputs, de-duplicated; HE-R only the base inputs.
    assert p.tests.inputs == ((1, 2), (3, 4), (5, 6))
    assert p.tests.fields == ("base_input", "plus_input")
    assert p.sim_problem_reason() is None
    base = load_verifier_file(write_rows(tmp_path / "HE-R.jsonl", [he_row()]))
    assert base.name == "he-r" and base.problems[0].tests.inputs == ((1, 2), (3, 4))
    # An explicit set wins over the file name.
    other = load_verifier_file(write_rows(tmp_path / "mine.jsonl", [he_row()]), "he-r")
    assert other.name == "he-r" and other.problems[0].tests.inputs == ((1, 2), (3, 4))
    unknown = load_verifier_file(tmp_path / "mine.jsonl")
    assert unknown.name is None and unknown.url is None
    assert unknown.problems[0].tests.inputs == ((1, 2), (3, 4), (5, 6))


def test_string_solutions_and_entry_point_from_the_prompt(tmp_path: Path) -> None:
    row = {
        "task_id": "t/1",
        "prompt": TWO_DEFS,
        "all_solutions": [
            {"rank": 1, "average_test_score": 1.0, "solution": TWO_DEFS + "    return 2 * x\n"},
            {"rank": 2, "average_test_score": 0.0, "solution": "def twice(x):\n    return x\n"},
        ],
    }
    vs = load_verifier_file(write_rows(tmp_path / "x.jsonl", [row]))
    (p,) = vs.problems
    assert p.entry_point == "twice" and p.code_field == "solution"
    assert p.signature == "twice(x)"
    assert p.ground_truth is None
    assert p.sim_problem_reason() == "the row has no ground-truth solution (`canonical_solution`)"
    assert p.candidates[1].code == "def twice(x):\n    return x\n"


def test_mbpp_style_row(tmp_path: Path) -> None:
    gold = "def min_of(a, b):\n    return min(a, b)\n"
    wrong = "def min_of(a, b):\n    return a\n"
    row = {
        "task_id": 7,
        "text": "Write a function to find the smaller of two numbers.",
        "code": gold,
        "test_list": [
            "assert min_of(1, 2) == 1",
            "assert min_of(-5, 3) == -5",
            "assert min_of(*[1, 2]) == 1",
        ],
        "challenge_test_list": ["assert math.isclose(min_of(0.5, 2.0), 0.5)"],
        "all_solutions": [
            # Each candidate's record repeats the gold code under `canonical_solution`: the
            # loader must read the candidates' own programs (`code`), which differ.
            {"average_test_score": 1.0, "solution": {"code": gold, "canonical_solution": gold}},
            {
                "average_test_score": 0.5,
                "solution": {"code": wrong, "canonical_solution": gold},
            },
        ],
    }
    (p,) = load_verifier_file(write_rows(tmp_path / "MBPP-R.jsonl", [row])).problems
    assert p.task_id == "7" and p.entry_point == "min_of"
    assert p.prompt.startswith("Write a function") and not p.he_style
    assert p.code_field == "solution.code"
    assert p.candidates[1].code == "def min_of(a, b):\n    return a\n"
    assert p.ground_truth == gold
    assert p.signature == "min_of(a, b)"
    assert p.tests.inputs == ((1, 2), (-5, 3), (0.5, 2.0))
    assert p.tests.unparsed == 1 and len(p.tests.assertions) == 4
    assert p.sim_problem_reason() is None


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("{not json", "line is not valid JSON"),
        ("[1, 2]", "row is a JSON list, not an object"),
        (he_row(task_id=None), "field `task_id` must be a non-empty string or an integer"),
        (without("task_id"), "missing field `task_id`"),
        (without("all_solutions"), "missing field `all_solutions`"),
        (he_row(all_solutions=[]), "field `all_solutions` is empty"),
        (he_row(all_solutions={"a": 1}), "field `all_solutions` must be a list"),
        (he_row(all_solutions=[1]), r"field `all_solutions\[0\]` must be an object"),
        (
            he_row(all_solutions=[{"average_test_score": 1.0}]),
            r"missing field `all_solutions\[0\]\.solution`",
        ),
        (
            he_row(all_solutions=[{"solution": "def add(a, b): pass"}]),
            r"missing field `all_solutions\[0\]\.average_test_score`",
        ),
        (
            he_row(all_solutions=[{"solution": "x", "average_test_score": 1.5}]),
            r"`all_solutions\[0\]\.average_test_score` must be a number in \[0, 1\], got 1.5",
        ),
        (
            he_row(all_solutions=[{"solution": "x", "average_test_score": "0.5"}]),
            r"`all_solutions\[0\]\.average_test_score` must be a number, got str",
        ),
        (
            he_row(all_solutions=[{"solution": "x", "average_test_score": 1.0, "rank": 0}]),
            r"`all_solutions\[0\]\.rank` must be an integer >= 1",
        ),
        (
            he_row(all_solutions=[{"solution": "", "average_test_score": 1.0}]),
            r"`all_solutions\[0\]\.solution` is empty",
        ),
        (
            he_row(all_solutions=[{"solution": {"prompt": "p"}, "average_test_score": 1.0}]),
            r"no program field",
        ),
        (he_row(prompt=""), "field `prompt` is empty"),
        (without("prompt"), r"missing field `prompt` \(nor `text`"),
        (he_row(entry_point="not a name"), "field `entry_point` must be a Python name"),
        (he_row(base_input=[[1, 2], 3]), r"field `base_input\[1\]` must be a list of positional"),
        (he_row(base_input="[[1, 2]]"), "field `base_input` must be a list, got str"),
        (he_row(atol=-1), r"field `atol` must be a number in \[0, inf\]"),
    ],
)
def test_malformed_rows_name_file_line_and_field(tmp_path: Path, row: Any, message: str) -> None:
    path = write_rows(tmp_path / "HE-R+.jsonl", [he_row(task_id="good/1"), row])
    vs = load_verifier_file(path)
    assert [p.task_id for p in vs.problems] == ["good/1"]
    (err,) = vs.errors
    assert err.line == 2 and err.file == str(path)
    assert str(err).startswith("HE-R+.jsonl, line 2")
    assert re.search(message, err.message), err.message
    with pytest.raises(VerifierDataError, match=r"HE-R\+\.jsonl, line 2"):
        load_verifier_file(path, strict=True)


def test_duplicate_task_ids_and_unreadable_files(tmp_path: Path) -> None:
    vs = load_verifier_file(write_rows(tmp_path / "a.jsonl", [he_row(), "", he_row()]))
    assert len(vs.problems) == 1
    assert vs.errors[0].line == 3 and "duplicate task_id 'HumanEval/0' (first at line 1)" in str(
        vs.errors[0]
    )
    with pytest.raises(VerifierDataError, match=r"no problem in .* could be read"):
        load_verifier_file(write_rows(tmp_path / "b.jsonl", [{"task_id": "x"}]))
    with pytest.raises(VerifierDataError, match="holds no rows"):
        load_verifier_file(write_rows(tmp_path / "c.jsonl", ["", "  "]))
    with pytest.raises(VerifierDataError, match="no such file"):
        load_verifier_file(tmp_path / "missing.jsonl")
    with pytest.raises(ValueError, match="unknown Scoring-Verifiers set 'he'"):
        load_verifier_file(tmp_path / "a.jsonl", "he")


def test_release_files_are_found_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert set_for_file("some/dir/MBPP-R+.jsonl") == "mbpp-r+"
    assert set_for_file("he-r.JSONL") == "he-r" and set_for_file("x.jsonl") is None
    src = release_source("HE-R+")
    assert src.name == "HE-R+.jsonl" and src.sha256 is None
    assert (
        src.url
        == "https://huggingface.co/datasets/nvidia/Scoring-Verifiers/resolve/main/HE-R%2B.jsonl"
    )
    data = tmp_path / "data"
    data.mkdir()
    path = write_rows(data / "MBPP-R+.jsonl", [he_row()])
    found, sha = resolve_release_file("mbpp-r+", data_dir=data, cache_dir=tmp_path / "c")
    assert found == path and sha == hashlib.sha256(path.read_bytes()).hexdigest()
    monkeypatch.setenv("UTDEBUG_DATA_DIR", str(data))
    vs = load_verifier_set("mbpp-r+", cache_dir=tmp_path / "c", download=False)
    assert vs.name == "mbpp-r+" and vs.path == path and vs.sha256 == sha
    monkeypatch.delenv("UTDEBUG_DATA_DIR")
    with pytest.raises(
        VerifierDataError,
        match=r"HE-R\.jsonl not found .*downloading is off.*"
        r"resolve/main/HE-R\.jsonl",
    ):
        resolve_release_file("he-r", cache_dir=tmp_path / "c", download=False)
