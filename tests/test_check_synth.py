"""``utdebug check`` without a model: each changed function against its base version on
synthesised inputs (differential regression testing), in real git repositories and the sandbox.
"""

from __future__ import annotations

import json
from pathlib import Path

import git
import jsonschema
import pytest
from testkit.check_replies import Replies
from testkit.check_repo import check
from testkit.gitrepos import commit

from utdebug.check.formats import render, schema
from utdebug.check.report import Status
from utdebug.cli import main
from utdebug.cli_common import Exit

BASE = '''"""Shop helpers."""


def total(xs, k):
    """Sum of xs plus k.

    >>> total([1, 2], 3)
    6
    """
    s = 0
    for x in xs:
        s += x
    return s + k
'''

TESTS = "from shop import total\n\n\ndef test_total():\n    assert total([1, 2, 3], 4) == 10\n"

BROKEN = BASE.replace("return s + k", "return s + k + (1 if len(xs) > 3 else 0)")

REWRITE = '''"""Shop helpers."""


def total(xs, k):
    """Sum of xs plus k.

    >>> total([1, 2], 3)
    6
    """
    acc = sum([item for item in xs])
    return acc + k
'''

NEW = BASE + '\n\ndef double(x):\n    """>>> double(2)\n    4\n    """\n    return x * 2\n'


@pytest.fixture
def shop(tmp_path: Path) -> git.Repo:
    repo = git.Repo.init(tmp_path / "shop", initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "Test")
        cw.set_value("user", "email", "test@example.com")
    commit(repo, {"shop.py": BASE, "tests/test_shop.py": TESTS}, "base")
    return repo


def edit(repo: git.Repo, text: str) -> None:
    (Path(repo.working_tree_dir or ".") / "shop.py").write_text(text)


def cli(repo: git.Repo, monkeypatch: pytest.MonkeyPatch, *argv: str) -> int:
    monkeypatch.chdir(Path(repo.working_tree_dir or "."))
    return main(["check", "--changed", "--no-model", "-q", "--synth-inputs", "80", *argv])


def test_a_changed_function_is_a_finding_in_json_and_human_output(
    shop: git.Repo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    edit(shop, BROKEN)
    assert cli(shop, monkeypatch, "--format", "json") == Exit.FAILURE
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, schema())
    assert data["model"] == "none"
    (f,) = data["functions"]
    assert f["qualname"] == "total" and f["status"] == "findings"
    diff = f["differential"]
    assert diff["compared"] and diff["base"] == shop.head.commit.hexsha and diff["seeds"] >= 2
    changes = diff["changes"]
    assert changes and data["summary"]["changed_outcomes"] == len(changes)
    assert data["summary"]["findings"] == len(changes)
    for c in changes:
        xs, k = eval(c["input"])  # the arguments as literals
        assert len(xs) > 3
        assert c["description"] == f"was {sum(xs) + k}, now {sum(xs) + k + 1}"
        assert c["call"] == f"total{c['input']}"
    sizes = [len(c["input"]) for c in changes]
    assert sizes[0] == min(sizes)  # smallest input first

    assert cli(shop, monkeypatch) == Exit.FAILURE
    human = capsys.readouterr().out
    assert "was " in human and "total([" in human and "findings" in human


def test_every_format_reports_the_changed_outcomes(shop: git.Repo, tmp_path: Path) -> None:
    edit(shop, BROKEN)
    report = check(shop, tmp_path)
    first = report.functions[0].changes[0]
    assert report.exit_code() == Exit.FAILURE
    junit = render(report, "junit")
    assert 'type="utdebug.changed_outcome"' in junit and first.description in junit
    github = render(report, "github")
    assert github.startswith("::error file=shop.py,") and "changed behaviour" in github
    sarif = json.loads(render(report, "sarif"))
    results = sarif["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == {"UTD004"}
    assert len(results) == len(report.functions[0].changes)
    assert results[0]["properties"]["before"] == first.before


def test_accept_records_the_changes_and_a_rerun_reports_nothing(
    shop: git.Repo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    edit(shop, BROKEN)
    assert cli(shop, monkeypatch, "--accept", "--format", "json") == Exit.OK
    first = json.loads(capsys.readouterr().out)["functions"][0]["differential"]
    assert first["changes"] == [] and first["accepted"]
    path = Path(shop.working_tree_dir or ".") / ".utdebug" / "accepted.json"
    recorded = json.loads(path.read_text())
    assert recorded["version"] == 1
    assert len(recorded["accepted"]) == len(first["accepted"])
    assert recorded["accepted"][0]["function"] == "shop.py::total"

    assert cli(shop, monkeypatch, "--format", "json") == Exit.OK
    again = json.loads(capsys.readouterr().out)
    diff = again["functions"][0]["differential"]
    assert diff["changes"] == [] and len(diff["accepted"]) == len(first["accepted"])
    assert again["summary"]["findings"] == 0 and again["functions"][0]["status"] == "ok"


def test_a_new_function_says_nothing_was_compared(
    shop: git.Repo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    edit(shop, NEW)
    report = check(shop, tmp_path)
    (f,) = report.functions
    assert f.qualname == "double" and f.status is Status.NOT_COMPARED  # never "ok"
    assert f.differential is not None and not f.differential.compared
    assert f.message == "not compared: new function (no base version)"
    assert report.exit_code() == Exit.OK
    assert cli(shop, monkeypatch) == Exit.OK
    out = capsys.readouterr().out
    assert "not compared: new function" in out
    assert "compared 0 of 1 changed function with their base version" in out


def test_a_semantics_preserving_rewrite_gives_no_finding(shop: git.Repo, tmp_path: Path) -> None:
    edit(shop, REWRITE)
    report = check(shop, tmp_path)
    (f,) = report.functions
    assert f.differential is not None and f.differential.compared
    assert f.differential.inputs > 10
    assert f.changes == () and f.status is Status.OK
    assert report.exit_code() == Exit.OK


def test_untyped_function_without_seeds_is_tried_with_the_kinds_its_body_suggests(
    shop: git.Repo, tmp_path: Path
) -> None:
    text = "def scale(x):\n    return x * 2\n"
    commit(shop, {"calc.py": text}, "calc")
    (Path(shop.working_tree_dir or ".") / "calc.py").write_text(text.replace("2", "3"))
    (f,) = check(shop, tmp_path).functions
    assert f.differential is not None and f.differential.compared and f.changes
    assert f.differential.seeds == 0
    assert any(n.startswith("kinds tried on the base") for n in f.differential.notes)
    never = "def scale(x):\n    raise TypeError(x)\n"  # no kind is accepted
    commit(shop, {"calc.py": never}, "never")
    (Path(shop.working_tree_dir or ".") / "calc.py").write_text(never.replace("r(x)", "r(x, 1)"))
    (f,) = check(shop, tmp_path).functions
    assert f.differential is not None and not f.differential.compared
    assert "no kind of x that the base accepts" in f.message
    typed = "def scale(x: int) -> int:\n    return x * 2\n"
    commit(shop, {"calc.py": typed}, "typed")
    (Path(shop.working_tree_dir or ".") / "calc.py").write_text(typed.replace("2", "3"))
    (f,) = check(shop, tmp_path).functions
    assert f.differential is not None and f.differential.compared and f.changes


def test_no_model_configured_runs_the_comparison(
    shop: git.Repo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("UTDEBUG_MODEL", raising=False)
    monkeypatch.delenv("UTDEBUG_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    edit(shop, BROKEN)
    monkeypatch.chdir(Path(shop.working_tree_dir or "."))
    code = main(["check", "--changed", "-q", "--synth-inputs", "60", "--format", "json"])
    assert code == Exit.FAILURE
    assert json.loads(capsys.readouterr().out)["functions"][0]["differential"]["changes"]


def test_with_a_model_the_changes_are_reported_beside_its_tests(
    shop: git.Repo, tmp_path: Path
) -> None:
    edit(shop, BROKEN)
    specs = {"total": [("total([1], 1)", "2"), ("total([], 5)", "5"), ("total([2, 2], 0)", "4")]}
    report = check(shop, tmp_path, Replies(specs).info())
    (f,) = report.functions
    assert len(f.tests) == 3 and not f.findings  # the model's tests pass
    assert f.changes and f.status is Status.FINDINGS  # the comparison with the base does not
    data = report.to_json()
    jsonschema.validate(data, schema())
    assert data["functions"][0]["tests"] and data["functions"][0]["differential"]["changes"]
    off = check(shop, tmp_path, Replies(specs).info(), differential=False)
    assert off.functions[0].differential is None and off.exit_code() == Exit.OK


def test_with_a_model_its_tests_inputs_seed_the_comparison(shop: git.Repo, tmp_path: Path) -> None:
    """An untyped function with no call in the repository's tests and no doctest: without a
    model it is tried with the kinds its body suggests (no seed); with one, its tests' inputs
    are the seeds."""
    text = "def scale(x):\n    return x * 2\n"
    commit(shop, {"calc.py": text}, "calc")
    (Path(shop.working_tree_dir or ".") / "calc.py").write_text(
        text.replace("x * 2", "x * 2 if x < 5 else x * 3")
    )
    (f,) = check(shop, tmp_path).functions
    assert f.differential is not None and f.differential.seeds == 0
    specs = {"scale": [("scale(1)", "2"), ("scale(3)", "6"), ("scale(4)", "8")]}
    (f,) = check(shop, tmp_path, Replies(specs).info()).functions
    assert f.differential is not None and f.differential.compared
    assert f.differential.seeds == 3
    assert f.changes  # mutation of 1, 3, 4 reaches x >= 5
