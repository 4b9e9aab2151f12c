"""ClassEval+Fix: reading ClassEval, building the corrupted versions in the sandbox (seeded,
reproducible), unittest verdicts decided in the parent, and ``utdebug bench --split classeval``
(plain evaluation, --gold, the licence, the refusal of the modes it does not take)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from testkit.classeval import ROWS, STACK, STACK_TESTS

from utdebug.data.classeval import (
    DATA_LICENCE,
    load_classeval_fix,
    method_lines,
    parse_classeval,
)
from utdebug.data.classeval_checks import RUN, staged_test
from utdebug.data.datasets import (
    CLASSEVAL_FILE,
    ClassFixProblem,
    DatasetError,
    LoadedSplit,
    MethodTarget,
    Provenance,
    Split,
)
from utdebug.data.private_tests import EvalSettings, evaluate_class_problem
from utdebug.runs.records import SAMPLES, read_samples
from utdebug.sandbox import Limits, Sandbox

LIMITS = Limits(per_input=2.0, batch=60.0)


def _load(small_dir: Path, cache: Path, seed: int = 0, cap: int = 3) -> LoadedSplit:
    return load_classeval_fix(
        data_dir=small_dir,
        cache_dir=cache,
        verify=False,
        limits=LIMITS,
        start_sandbox=Sandbox,
        seed=seed,
        cap=cap,
    )


def test_the_published_file_parses_to_its_counts(data_dir: Path) -> None:
    path = data_dir / CLASSEVAL_FILE
    if not path.exists():
        pytest.skip("ClassEval_data.json is not in the dataset folder")
    tasks, errors = parse_classeval(path)
    assert errors == []
    assert len(tasks) == 100
    assert sum(len(t.methods) for t in tasks) == 410
    assert sum(len(t.tests) for t in tasks) == 2196
    # The one test file with an `if __name__ == "__main__"` block loses it (it would run
    # unittest.main() in the child).
    assert not any("__main__" in t.test_code for t in tasks)


def test_every_method_of_the_published_file_has_classevals_description(data_dir: Path) -> None:
    """ClassEval describes every method (a ``def`` holding its docstring, three of them with
    curly or unclosed quotes): the task's text is that docstring, then the class's purpose."""
    path = data_dir / CLASSEVAL_FILE
    if not path.exists():
        pytest.skip("ClassEval_data.json is not in the dataset folder")
    tasks, _ = parse_classeval(path)
    described = [(t, m) for t in tasks for m, _ in t.methods if dict(t.descriptions).get(m)]
    assert len(described) == 410
    assert not any('"""' in d or "\u201c" in d for t in tasks for _, d in t.descriptions)
    gateway = next(t for t in tasks if t.task_id == "ClassEval_0")
    text = gateway.description("filter")
    assert text.startswith("Filter the incoming request based on certain rules and conditions.")
    assert ":param request: dict, the incoming request details" in text
    assert ">>> filter.filter({'path': '/login', 'method': 'POST'})\nTrue" in text
    assert text.endswith(
        "The class AccessGatewayFilter: This class is a filter used for accessing gateway "
        "filtering, primarily for authentication and access log recording."
    )


def test_rows_that_cannot_be_used_are_errors_and_the_rest_load(small_dir: Path) -> None:
    tasks, errors = parse_classeval(small_dir / CLASSEVAL_FILE)
    assert [t.task_id for t in tasks] == ["ClassEval_0", "ClassEval_1"]
    assert [(e.row, e.task_id) for e in errors] == [(3, "classeval/ClassEval_2")]
    assert "test" in errors[0].message
    cart = tasks[0]
    assert ("CartTestSave", "test_save_2") in cart.tests and len(cart.tests) == 10
    assert "unittest.main()" not in cart.test_code


def test_build_keeps_failing_versions_excludes_what_gold_fails_and_is_reproducible(
    small_dir: Path, tmp_path: Path
) -> None:
    ls = _load(small_dir, tmp_path / "c1")
    assert ls.split is Split.CLASSEVAL and ls.problems == []
    about = ls.about
    counts = about["classeval_fix"]
    assert about["data_licence"] == DATA_LICENCE
    assert counts["classes"] == 2 and counts["methods"] == 7 and counts["tests"] == 14
    # Only the test that imports a missing module is excluded: the file, sqlite and clock
    # tests pass in the child's scratch folder.
    assert counts["excluded_tests"] == 1 and counts["kept_tests"] == 13
    problems: list[ClassFixProblem] = ls.classes
    assert 0 < len(problems) == counts["versions"]
    per_class: dict[str, int] = {}
    for p in problems:
        per_class[p.class_task] = per_class.get(p.class_task, 0) + 1
        assert p.code != p.gold and p.target.module_source == p.code
        assert p.task_id == f"classeval/{p.class_task}/{p.target.method}"
        assert p.target_tests and all(p.tests[i][1].startswith("test_") for i in p.target_tests)
        assert all(t != ("CartTestStore", "test_store_needs_a_missing_module") for t in p.tests)
        # The corrupted method is the only one that changed.
        lines = method_lines(p.gold, p.target.class_name, p.target.method)
        assert lines is not None
        before, after = p.gold.splitlines(), p.code.splitlines()
        changed = [i + 1 for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b]
        assert changed and all(lines[0] <= i <= lines[1] for i in changed)
    assert max(per_class.values()) <= 3
    [fix_file] = list((tmp_path / "c1" / "classeval-fix").iterdir())
    lines_out = fix_file.read_text().splitlines()
    header = json.loads(lines_out[0])
    assert header["seed"] == 0 and header["version"] and header["licence"] == DATA_LICENCE
    excluded = [
        e for x in map(json.loads, lines_out) if x["kind"] == "class" for e in x["excluded"]
    ]
    assert [e["reason"] for e in excluded] == [
        "raised ModuleNotFoundError: No module named 'utdebug_no_such_module'"
    ]
    # The same seed gives the same file; another seed is another build.
    _load(small_dir, tmp_path / "c2")
    [again] = list((tmp_path / "c2" / "classeval-fix").iterdir())
    assert again.name == fix_file.name and again.read_bytes() == fix_file.read_bytes()
    other = _load(small_dir, tmp_path / "c3", seed=7, cap=1)
    assert len(other.classes) <= 2
    assert next((tmp_path / "c3" / "classeval-fix").iterdir()).name != fix_file.name


def test_a_written_build_is_read_back_without_a_sandbox(small_dir: Path, tmp_path: Path) -> None:
    first = _load(small_dir, tmp_path / "c")

    def no_sandbox() -> Sandbox:
        raise AssertionError("the build file should have been read")

    again = load_classeval_fix(
        data_dir=small_dir,
        cache_dir=tmp_path / "c",
        verify=False,
        limits=LIMITS,
        start_sandbox=no_sandbox,
    )
    assert again.classes == first.classes


def test_a_changed_dataset_file_is_refused_unless_verify_is_off(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / CLASSEVAL_FILE).write_text(json.dumps(ROWS), encoding="utf-8")
    with pytest.raises(DatasetError, match="checksum mismatch"):
        load_classeval_fix(
            data_dir=folder,
            cache_dir=tmp_path / "c",
            verify=True,
            limits=LIMITS,
            start_sandbox=Sandbox,
        )


def _problem(code: str, tests: str = STACK_TESTS) -> ClassFixProblem:
    names = (
        ("StackTestPush", "test_push_1"),
        ("StackTestPush", "test_push_2"),
        ("StackTestPop", "test_pop_1"),
        ("StackTestPop", "test_pop_2"),
    )
    return ClassFixProblem(
        split=Split.CLASSEVAL,
        task_id="classeval/ClassEval_1/pop",
        class_task="ClassEval_1",
        target=MethodTarget("Stack", "pop", code),
        code=code,
        gold=STACK,
        test_code=tests,
        tests=names,
        target_tests=(2, 3),
        mutation="by hand",
        provenance=Provenance("x", 1, ""),
    )


def test_verdicts_come_from_the_sandbox_outcome_not_from_what_the_code_says(
    sb: Sandbox,
) -> None:
    settings = EvalSettings(limits=LIMITS)
    gold = evaluate_class_problem(sb, _problem(STACK), STACK, settings)
    assert gold["verdicts"] == "PPPP" and gold["all_pass"]
    # A wrong pop that prints what a passing run prints, and returns a truthy value.
    liar = STACK.replace(
        "        return self.data.pop()",
        "        print('OK'); print('Ran 1 test'); return self.data[0]",
    )
    r = evaluate_class_problem(sb, _problem(liar), liar, settings)
    assert r["verdicts"] == "PPFP" and r["target_passed"] == 1 and r["target_tests"] == 2
    assert r["details"][0]["detail"] == "line 23: assertEqual: 1 != 2"
    # A method that ends its process, or that swallows the test's own failure by exiting
    # cleanly, is a crash, not a pass.
    quitter = STACK.replace("        return self.data.pop()", "        import os; os._exit(0)")
    r = evaluate_class_problem(sb, _problem(quitter), quitter, settings)
    assert r["verdicts"][2] == "C" and not r["all_pass"]
    # A test that skips itself did not pass.
    skipping = STACK_TESTS.replace("self.assertIsNone(Stack(1).pop())", "self.skipTest('no')")
    r = evaluate_class_problem(sb, _problem(STACK, skipping), STACK, settings)
    assert r["verdicts"] == "PPPF"
    # The rewritten test is what the sandbox runs, one test method per input; the class's
    # module is the only program.
    test = staged_test(STACK_TESTS, [("StackTestPop", "test_pop_1")])
    assert test.call == f"{RUN}(*_ce_args)" and "(unittest.TestCase)" not in test.setup


def utdebug(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "utdebug", *args], capture_output=True, text=True, timeout=300
    )


def test_bench_classeval_plain_and_gold(small_dir: Path, tmp_path: Path) -> None:
    common = ["bench", "--split", "classeval", "--data-dir", str(small_dir), "--no-verify"]
    r = utdebug(*common, "--out", str(tmp_path / "code"), "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)["splits"]["classeval"]["summary"]
    assert s["data_licence"] == DATA_LICENCE
    n = s["classeval_fix"]["versions"]
    # Every version fails a test; the row that is not a class is a problem error.
    assert s["problems"] == n + 1 and n > 0 and s["problem_errors"] == 1 and s["solved"] == 0
    assert 0.0 < s["mean_pass_fraction"] < 1.0
    recs = read_samples(tmp_path / "code" / SAMPLES)
    assert all(r["target_passed"] < r["target_tests"] for r in recs if r["error"] is None)
    gold = utdebug(*common, "--gold", "--out", str(tmp_path / "gold"))
    assert gold.returncode == 0, gold.stderr
    assert "100.00%" in gold.stdout and "CC BY-NC 4.0" in gold.stdout
    assert "ClassEval+Fix (seed 0" in gold.stdout
    one = next(r["task_id"] for r in recs if r["error"] is None)
    picked = utdebug(*common, "--problems", one.removeprefix("classeval/"), "--json")
    assert picked.returncode == 0, picked.stderr
    assert json.loads(picked.stdout)["splits"]["classeval"]["summary"]["problems"] == 1
    bad = utdebug(*common, "--problems", "ClassEval_9/nothing")
    assert bad.returncode == 2 and "unknown problem(s) in classeval" in bad.stderr


def test_bench_classeval_refuses_the_other_model_modes_with_the_reason(small_dir: Path) -> None:
    r = utdebug(
        "bench", "voting", "--split", "classeval", "--model", "sim", "--data-dir", str(small_dir)
    )
    assert r.returncode == 2
    assert "the other modes" in r.stderr and "Traceback" not in r.stderr
