"""``utdebug check`` end to end: real temporary git repositories, a scripted model, the sandbox.

The scripted model answers by function: its test proposals and votes are looked up from the
function named in the prompt and the call being voted on, so a cached (skipped) function does
not shift anyone else's replies, and every model call is counted (a cache hit makes none).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import git
import jsonschema
import pytest
from testkit.check_replies import Replies, Specs
from testkit.gitrepos import commit
from testkit.scripted_add import fix, ut, votes

from utdebug.agents.scripted import ScriptedModel
from utdebug.check.options import CheckError, CheckOptions, ModelInfo
from utdebug.check.report import CheckReport, Status, TestVerdict
from utdebug.check.review import CACHE_VERSION, run_check
from utdebug.cli import main
from utdebug.sandbox import SandboxConfig

SPECS: Specs = {
    "add": [("add(1, 2)", "3"), ("add(2, 0)", "2"), ("add(-1, 1)", "0")],
    "scaled": [("scaled(2)", "20"), ("scaled(50)", "100"), ("scaled(-3)", "0")],
    "greet": [("greet('Ann')", "'Hello, Ann!'"), ("greet('')", "'Hello, !'"),
              ("greet('x y')", "'Hello, x y!'")],
    "spin": [("spin(1)", "1"), ("spin(2)", "2"), ("spin(3)", "3")],
    "first_line": [("first_line('a.txt')", "'alpha'"), ("first_line('b.txt')", "'beta'"),
                   ("first_line('c.txt')", "'gamma'")],
    "dump": [("dump(1)", "1"), ("dump(2)", "2"), ("dump(3)", "3")],
    "parse": [("parse('a: 1')", "{'a': 1}"), ("parse('b: 2')", "{'b': 2}"),
              ("parse('c: 3')", "{'c': 3}")],
    "needs": [("needs(1)", "1"), ("needs(2)", "2"), ("needs(3)", "3")],
    "Acc.total": [("acc.total([1, 2])", "3"), ("acc.total([])", "0"), ("acc.total([5])", "5")],
}  # fmt: skip
"""A method's tests are programs: ``acc = Acc()`` is their setup."""

ADD_FIX = 'def add(a, b):\n    """Return a + b."""\n    return a + b\n'

OPS = '''"""Arithmetic helpers of the calc package."""

from calc.util import SCALE

from .util import clamp


def add(a, b):
    """Return a + b."""
    return a + b


def scaled(x):
    """Return x times SCALE, clamped to [0, 100]."""
    return clamp(x * SCALE, 0, 100)


class Acc:
    def total(self, xs):
        return sum(xs)
'''

UTIL = "SCALE = 10\n\n\ndef clamp(x, lo, hi):\n    return max(lo, min(hi, x))\n"


@pytest.fixture
def calc(tmp_path: Path) -> git.Repo:
    """A package with a helper module; main has a correct add; branch 'feature' breaks it."""
    repo = git.Repo.init(tmp_path / "calc", initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "Test")
        cw.set_value("user", "email", "test@example.com")
    commit(
        repo,
        {"calc/__init__.py": "", "calc/util.py": UTIL, "calc/ops.py": OPS, "README": "calc\n"},
        "calc",
    )
    repo.git.checkout("-b", "feature")
    text = OPS.replace("return a + b", "return a - b").replace(
        "clamped to [0, 100].", "clamped to the range [0, 100]."
    )
    text = text.replace("return sum(xs)", "return sum(xs) + 0")
    commit(repo, {"calc/ops.py": text}, "feature")
    return repo


def options(repo: git.Repo, tmp_path: Path, **kw: Any) -> CheckOptions:
    base: dict[str, Any] = {
        "cwd": Path(repo.working_tree_dir or "."),
        "cache_dir": tmp_path / "cache",
        "timeout": 1.0,
    }
    return CheckOptions(**(base | kw))


def check(repo: git.Repo, tmp_path: Path, model: ModelInfo, **kw: Any) -> CheckReport:
    return run_check(options(repo, tmp_path, **kw), model, SandboxConfig())


def by_name(report: CheckReport) -> dict[str, Any]:
    return {f.qualname: f for f in report.functions}


# -- changed functions, findings --------------------------------------------------------------


def test_changed_functions_buggy_gets_a_finding_correct_does_not(
    calc: git.Repo, tmp_path: Path
) -> None:
    replies = Replies(SPECS)
    report = check(calc, tmp_path, replies.info(), changed=True, base="main")
    got = by_name(report)
    assert set(got) == {"add", "scaled", "Acc.total"}
    add, scaled, total = got["add"], got["scaled"], got["Acc.total"]
    assert add.status is Status.FINDINGS
    assert {t.call for t in add.findings} == {"add(1, 2)", "add(-1, 1)"}
    assert all(t.code is None for t in add.tests)  # literal-argument tests: the call says it
    f = next(t for t in add.findings if t.call == "add(1, 2)")
    assert (f.expected, f.actual, f.share, f.draws) == ("3", "returned -1", 1.0, 8)
    assert f.verdict is TestVerdict.FAIL
    assert add.path == "calc/ops.py" and add.line == 8 and add.end_line == 10
    # scaled imports its helpers (absolute and relative imports of the package): all pass
    assert scaled.status is Status.OK, scaled.message
    assert [t.verdict for t in scaled.tests] == [TestVerdict.PASS] * 3
    # a method is checked with tests that build its object
    assert total.status is Status.OK, total.message
    assert [t.call for t in total.tests] == ["acc.total([1, 2])", "acc.total([])", "acc.total([5])"]
    assert total.tests[0].code == "acc = Acc()\nassert acc.total([1, 2]) == 3"
    assert report.base == calc.commit("main").hexsha
    assert report.exit_code() == 1
    assert replies.calls.count("ut") == 9 and replies.calls.count("vote") == 9 * 8


def test_a_method_with_a_bug_gets_findings_that_carry_the_test_code(
    calc: git.Repo, tmp_path: Path
) -> None:
    root = Path(calc.working_tree_dir or ".")
    ops = root / "calc" / "ops.py"
    ops.write_text(ops.read_text().replace("return sum(xs) + 0", "return sum(xs[1:])"))
    report = check(calc, tmp_path, Replies(SPECS).info(), targets=("calc/ops.py::Acc.total",))
    (total,) = report.functions
    assert total.status is Status.FINDINGS
    assert [t.call for t in total.findings] == ["acc.total([1, 2])", "acc.total([5])"]
    assert total.findings[0].actual == "returned 2"
    from utdebug.check.formats import schema

    data = report.to_json()
    jsonschema.validators.validator_for(schema())(schema()).validate(data)
    (record,) = data["functions"]
    assert record["tests"][0]["code"] == "acc = Acc()\nassert acc.total([1, 2]) == 3"


def test_the_base_itself_has_no_findings(calc: git.Repo, tmp_path: Path) -> None:
    calc.git.checkout("main")
    report = check(calc, tmp_path, Replies(SPECS).info(), targets=("calc/ops.py::add",))
    (add,) = report.functions
    assert add.status is Status.OK and add.findings == ()
    assert report.exit_code() == 0


def test_a_weak_majority_is_not_a_finding(calc: git.Repo, tmp_path: Path) -> None:
    weak = {"add(1, 2)", "add(-1, 1)"}
    model = Replies(SPECS, weak=weak).info()
    report = check(calc, tmp_path, model, targets=("calc/ops.py::add",))
    (add,) = report.functions
    failing = [t for t in add.tests if t.verdict is not TestVerdict.PASS]
    assert [t.share for t in failing] == [0.625, 0.625]
    assert add.status is Status.OK and report.exit_code() == 0
    lower = check(calc, tmp_path, model, targets=("calc/ops.py::add",), min_votes=0.6)
    assert lower.functions[0].status is Status.FINDINGS and lower.exit_code() == 1


def test_working_tree_changes_are_checked_against_head(calc: git.Repo, tmp_path: Path) -> None:
    root = Path(calc.working_tree_dir or ".")
    (root / "calc" / "extra.py").write_text("def greet(name):\n    return 'Hello, ' + name + '?'\n")
    report = check(calc, tmp_path, Replies(SPECS).info(), changed=True)  # base HEAD
    (greet,) = report.functions
    assert greet.qualname == "greet" and greet.status is Status.FINDINGS
    assert len(greet.findings) == 3


def test_a_commit_is_checked_from_its_own_snapshot(calc: git.Repo, tmp_path: Path) -> None:
    feature = calc.commit("feature").hexsha
    calc.git.checkout("main")  # the working tree holds the correct add
    model = Replies(SPECS).info()
    report = check(calc, tmp_path, model, changed=True, base="main", rev="feature")
    assert report.revision == feature and by_name(report)["add"].status is Status.FINDINGS
    named = check(calc, tmp_path, model, targets=("calc/ops.py::add",), rev="feature")
    assert named.functions[0].status is Status.FINDINGS
    with pytest.raises(CheckError, match="--rev"):
        check(calc, tmp_path, model, targets=("calc/ops.py::add",), rev="feature", fix=True,
              apply=True)  # fmt: skip


# -- module context and the sandbox -----------------------------------------------------------


def test_third_party_packages_data_files_and_a_read_only_repository(
    calc: git.Repo, tmp_path: Path
) -> None:
    root = Path(calc.working_tree_dir or ".")
    files = {
        "calc/data/a.txt": "alpha\n",
        "calc/data/b.txt": "beta\n",
        "calc/data/c.txt": "gamma\n",
        "calc/io.py": (
            "from pathlib import Path\n\nimport yaml\n\n\n"
            "def first_line(name):\n"
            "    return (Path(__file__).parent / 'data' / name).read_text().splitlines()[0]\n\n\n"
            "def parse(text):\n    return yaml.safe_load(text)\n\n\n"
            "def dump(x):\n    Path(__file__).with_name('written.txt').write_text(str(x))\n"
            "    return x\n"
        ),
    }
    commit(calc, files, "io")
    model = Replies(SPECS).info()
    report = check(
        calc,
        tmp_path,
        model,
        targets=("calc/io.py::first_line", "calc/io.py::parse", "calc/io.py::dump"),
    )
    first, parse, dump = report.functions
    assert first.status is Status.OK, first.message  # reads its package's data files
    assert parse.status is Status.OK, parse.message  # a third-party package (PyYAML)
    assert dump.status is Status.ERROR and "I/O" in dump.message  # the copy is read-only
    assert not (root / "calc" / "written.txt").exists()
    assert report.exit_code() == 2
    assert (
        check(calc, tmp_path, model, targets=("calc/io.py::dump",), allow_errors=True).exit_code()
        == 0
    )


def test_packages_on_pythonpath_are_importable(
    calc: git.Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = tmp_path / "extlib"
    lib.mkdir()
    (lib / "extlib_xyz.py").write_text("def ident(x):\n    return x\n")
    commit(
        calc,
        {"calc/ext.py": "import extlib_xyz\n\n\ndef needs(x):\n    return extlib_xyz.ident(x)\n"},
        "ext",
    )
    model = Replies(SPECS).info()
    monkeypatch.setenv("PYTHONPATH", str(lib))
    (ok,) = check(calc, tmp_path, model, targets=("calc/ext.py::needs",)).functions
    assert ok.status is Status.OK, ok.message
    monkeypatch.delenv("PYTHONPATH")
    (missing,) = check(
        calc, tmp_path, model, targets=("calc/ext.py::needs",), use_cache=False
    ).functions
    assert missing.status is Status.ERROR and "extlib_xyz" in missing.message


def test_bad_functions_are_reported_one_by_one(calc: git.Repo, tmp_path: Path) -> None:
    root = Path(calc.working_tree_dir or ".")
    (root / "calc" / "broken.py").write_text("def oops(:\n    pass\n")
    (root / "calc" / "missing.py").write_text(
        "import not_a_real_package_xyz\n\n\ndef needs(x):\n    return x\n"
    )
    (root / "calc" / "slow.py").write_text("def spin(n):\n    while True:\n        n += 1\n")
    report = check(calc, tmp_path, Replies(SPECS).info(), changed=True, base="main", timeout=0.3)
    got = {(f.path, f.qualname): f for f in report.functions}
    broken = got[("calc/broken.py", "<module>")]
    assert broken.status is Status.ERROR and "line 1" in broken.message
    needs = got[("calc/missing.py", "needs")]
    assert needs.status is Status.ERROR and "not_a_real_package_xyz" in needs.message
    spin = got[("calc/slow.py", "spin")]
    assert spin.status is Status.FINDINGS
    assert {t.verdict for t in spin.tests} == {TestVerdict.TIMEOUT}
    assert got[("calc/ops.py", "add")].status is Status.FINDINGS  # the run went on
    assert report.exit_code() == 1


# -- the cache --------------------------------------------------------------------------------


def test_the_cache_skips_unchanged_functions(calc: git.Repo, tmp_path: Path) -> None:
    first = Replies(SPECS)
    a = check(calc, tmp_path, first.info(), changed=True, base="main")
    assert first.calls and not any(f.cached for f in a.functions)
    again = Replies(SPECS)
    b = check(calc, tmp_path, again.info(), changed=True, base="main")
    assert again.calls == []  # no model call at all
    checked = [f for f in b.functions if f.status is not Status.SKIPPED]
    assert checked and all(f.cached for f in checked)
    assert [f.to_json() | {"cached": 0, "seconds": 0} for f in checked] == [
        f.to_json() | {"cached": 0, "seconds": 0}
        for f in a.functions
        if f.status is not Status.SKIPPED
    ]
    # min-votes is applied to cached tests again
    c = check(calc, tmp_path, Replies(SPECS).info(), changed=True, base="main", min_votes=1.0)
    assert by_name(c)["add"].status is Status.FINDINGS
    # another model, another function text, or --no-cache: tested again
    other = Replies(SPECS)
    check(calc, tmp_path, other.info("another-model"), changed=True, base="main")
    assert other.calls.count("ut") == 9  # add, scaled and the method Acc.total
    root = Path(calc.working_tree_dir or ".")
    ops = root / "calc" / "ops.py"
    ops.write_text(ops.read_text().replace("return a - b", "return b - a"))
    changed = Replies(SPECS)
    d = check(calc, tmp_path, changed.info(), changed=True, base="main")
    assert not by_name(d)["add"].cached and by_name(d)["scaled"].cached
    assert changed.calls.count("ut") == 3
    fresh = Replies(SPECS)
    check(calc, tmp_path, fresh.info(), changed=True, base="main", use_cache=False)
    assert fresh.calls.count("ut") == 9


def test_a_corrupt_cache_entry_is_checked_again(calc: git.Repo, tmp_path: Path) -> None:
    check(calc, tmp_path, Replies(SPECS).info(), targets=("calc/ops.py::add",))
    entries = list((tmp_path / "cache").rglob("*.json"))
    assert len(entries) == 1
    entries[0].write_text("{not json")
    again = Replies(SPECS)
    report = check(calc, tmp_path, again.info(), targets=("calc/ops.py::add",))
    assert not report.functions[0].cached
    assert again.calls == []  # checked again with the replies of the response cache
    assert json.loads(entries[0].read_text())["version"] == CACHE_VERSION


def test_no_test_is_not_cached_and_the_report_says_why(calc: git.Repo, tmp_path: Path) -> None:
    """Replies that hold no test (a model served badly, say): "no test could be generated",
    with the refused replies' reasons (not their text) in the report; the result is not
    cached, so a model that answers (another one here: the replies are cached) is asked."""
    from utdebug.check.formats import schema

    class Rambling(Replies):
        def __call__(self, request: Any, i: int) -> str:
            self.calls.append(request.purpose)
            return "To solve this problem, we need to think about it step by step."

    bad = Rambling(SPECS)
    report = check(calc, tmp_path, bad.info(), targets=("calc/ops.py::add",))
    (fn,) = report.functions
    assert fn.status is Status.ERROR and "no test could be generated" in fn.message
    assert fn.refused and {r.purpose for r in fn.refused} == {"ut"}
    assert sum(r.count for r in fn.refused) == bad.calls.count("ut")
    assert "refused, most often:" in fn.message
    data = fn.to_json()
    assert data["refused_replies"] and all(
        "step by step" not in r["reason"] for r in data["refused_replies"]
    )
    jsonschema.validators.validator_for(schema())(schema()).validate(report.to_json())
    assert list((tmp_path / "cache").rglob("*.json")) == []
    said: list[str] = []
    bad_model = Rambling(SPECS).info()
    bad_model = ModelInfo(bad_model.model, bad_model.name, bad_model.key, False)  # not simulated
    run_check(
        options(calc, tmp_path, targets=("calc/ops.py::add",)),
        bad_model,
        SandboxConfig(),
        progress=said.append,
    )
    (warning,) = [x for x in said if x.startswith("warning:")]
    assert "gave nothing usable" in warning and "unparsable or refused" in warning
    good = Replies(SPECS)
    again = check(calc, tmp_path, good.info("served well"), targets=("calc/ops.py::add",))
    assert good.calls.count("ut") == 3 and not again.functions[0].cached
    assert again.functions[0].status is not Status.ERROR and again.functions[0].refused == ()


# -- --fix ------------------------------------------------------------------------------------


def test_fix_writes_a_patch_that_applies_and_leaves_the_tree_alone(
    calc: git.Repo, tmp_path: Path
) -> None:
    root = Path(calc.working_tree_dir or ".")
    before = (root / "calc" / "ops.py").read_text()
    patch = tmp_path / "fix.patch"
    model = Replies(SPECS, debug=fix(ADD_FIX))
    report = check(
        calc, tmp_path, model.info(), targets=("calc/ops.py::add",), fix=True, rounds=2,
        patch=patch,
    )  # fmt: skip
    (add,) = report.functions
    assert add.fix is not None and add.fix.patch is not None
    assert (add.fix.pass_before, add.fix.pass_after) == (pytest.approx(1 / 3), 1.0)
    assert not add.fix.applied
    assert (root / "calc" / "ops.py").read_text() == before
    text = patch.read_text()
    assert "--- a/calc/ops.py" in text and "+    return a + b" in text
    subprocess.run(["git", "apply", "--check", str(patch)], cwd=root, check=True)
    applied = check(
        calc, tmp_path, model.info(), targets=("calc/ops.py::add",), fix=True, rounds=2,
        patch=patch, apply=True,
    )  # fmt: skip
    assert applied.functions[0].fix is not None and applied.functions[0].fix.applied
    assert "return a + b" in (root / "calc" / "ops.py").read_text()


def test_a_function_only_fix_is_judged_and_patched_with_its_module(
    calc: git.Repo, tmp_path: Path
) -> None:
    # scaled needs SCALE and clamp from its module's imports; the reply has the function only
    # (plus test code, which stays out of the fix)
    root = Path(calc.working_tree_dir or ".")
    ops = root / "calc" / "ops.py"
    correct = ops.read_text()
    broken = correct.replace("return clamp(x * SCALE, 0, 100)", "return clamp(x, 0, 100)")
    ops.write_text(broken)
    start = broken.index("def scaled(x):")
    function = broken[start : broken.index("\n\n\n", start) + 1].replace(
        "clamp(x, 0, 100)", "clamp(x * SCALE, 0, 100)"
    )
    reply = fix(function + "\n\nprint(scaled(2))\nassert scaled(50) == 100\n")
    patch = tmp_path / "fix.patch"
    model = Replies(SPECS, debug=reply)
    report = check(
        calc, tmp_path, model.info(), targets=("calc/ops.py::scaled",), fix=True, rounds=1,
        patch=patch,
    )  # fmt: skip
    (scaled,) = report.functions
    assert scaled.fix is not None and scaled.fix.patch is not None, scaled.message
    assert (scaled.fix.pass_before, scaled.fix.pass_after) == (pytest.approx(1 / 3), 1.0)
    assert scaled.fix.accepted_edits == 1
    text = patch.read_text()
    changed = [line for line in text.splitlines() if line[:1] in "+-"]
    assert changed == [
        "--- a/calc/ops.py",
        "+++ b/calc/ops.py",
        "-    return clamp(x, 0, 100)",
        "+    return clamp(x * SCALE, 0, 100)",
    ]
    subprocess.run(["git", "apply", "--check", str(patch)], cwd=root, check=True)
    assert ops.read_text() == broken
    applied = check(
        calc, tmp_path, model.info(), targets=("calc/ops.py::scaled",), fix=True, rounds=1,
        patch=patch, apply=True,
    )  # fmt: skip
    assert applied.functions[0].fix is not None and applied.functions[0].fix.applied
    assert ops.read_text() == correct  # the module intact around the fixed line


def test_no_fix_writes_no_patch_and_removes_an_old_one(calc: git.Repo, tmp_path: Path) -> None:
    patch = tmp_path / "fix.patch"
    patch.write_text("a patch from an earlier run\n")
    said: list[str] = []
    model = Replies(SPECS, debug="I cannot see the bug.")
    opts = options(calc, tmp_path, targets=("calc/ops.py::add",), fix=True, rounds=1, patch=patch)
    report = run_check(opts, model.info(), SandboxConfig(), progress=said.append)
    (add,) = report.functions
    assert add.fix is not None and add.fix.patch is None and "no fix found" in add.message
    assert not patch.exists()
    assert f"no fix found: no patch written; removed {patch}, left by an earlier run" in said
    said.clear()
    run_check(opts, model.info(), SandboxConfig(), progress=said.append)
    assert not patch.exists()
    assert f"no fix found: no patch written ({patch} does not exist)" in said


def test_a_model_failure_keeps_the_tests_and_the_fix_so_far(calc: git.Repo, tmp_path: Path) -> None:
    # three proposals build round 0's tests; the rebuild after the accepted fix fails
    model = Replies(SPECS, debug=fix(ADD_FIX), ut_limit=3)
    report = check(
        calc, tmp_path, model.info(), targets=("calc/ops.py::add",), fix=True,
        patch=tmp_path / "p.patch",
    )  # fmt: skip
    (add,) = report.functions
    assert add.status is Status.FINDINGS and len(add.findings) == 2
    assert add.fix is not None and add.fix.patch is not None and add.fix.pass_after == 1.0
    assert "the debugging loop stopped: ScriptExhausted" in add.message
    assert not list((tmp_path / "cache").rglob("*.json"))  # a partial result is not cached
    failing = Replies(SPECS, ut_limit=0).info("failing")
    (broken,) = check(calc, tmp_path, failing, targets=("calc/ops.py::add",)).functions
    assert broken.status is Status.ERROR and "the model failed" in broken.message


# -- bad input ---------------------------------------------------------------------------------


def test_usage_and_environment_errors(calc: git.Repo, tmp_path: Path) -> None:
    model = Replies(SPECS).info()
    outside = tmp_path / "plain"
    outside.mkdir()
    with pytest.raises(CheckError, match="not a git repository"):
        run_check(
            CheckOptions(changed=True, cwd=outside, cache_dir=tmp_path), model, SandboxConfig()
        )
    with pytest.raises(CheckError, match="no-such-branch"):
        check(calc, tmp_path, model, changed=True, base="no-such-branch")
    with pytest.raises(CheckError, match="not both"):
        check(calc, tmp_path, model, changed=True, targets=("calc/ops.py::add",))
    with pytest.raises(CheckError, match="--apply needs --fix"):
        check(calc, tmp_path, model, targets=("calc/ops.py::add",), apply=True)
    with pytest.raises(CheckError, match=r"calc/ops\.py::nope: no function 'nope'"):
        check(calc, tmp_path, model, targets=("calc/ops.py::nope",))


# -- the command line --------------------------------------------------------------------------


def script_file(tmp_path: Path, calls: list[tuple[str, str]]) -> Path:
    p = tmp_path / "script.json"
    p.write_text(
        json.dumps(
            {
                "ut": [ut(c, o) for c, o in calls],
                "vote": [v for _, o in calls for v in votes(*[o] * 8)],
            }
        )
    )
    return p


def cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], cwd: Path, *argv: str
) -> tuple[int, str, str]:
    monkeypatch.chdir(cwd)
    code = main(["check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def run_cli(
    calc: git.Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Callable[..., tuple[int, str, str]]:  # fmt: skip
    root = Path(calc.working_tree_dir or ".")
    script = script_file(tmp_path, SPECS["add"])

    def go(*argv: str, cwd: Path = root) -> tuple[int, str, str]:
        return cli(
            monkeypatch, capsys, cwd, *argv, "--model", f"scripted:{script}",
            "--cache-dir", str(tmp_path / "cli-cache"),
        )  # fmt: skip

    return go


def test_cli_formats_validate_and_exit_codes(
    run_cli: Callable[..., tuple[int, str, str]], tmp_path: Path
) -> None:
    import xml.etree.ElementTree as ET

    from utdebug.check.formats import schema

    code, out, err = run_cli("calc/ops.py::add", "--format", "json", "--no-cache")
    assert code == 1, err
    data = json.loads(out)
    jsonschema.validators.validator_for(schema())(schema()).validate(data)
    assert data["simulated"] is True and data["exit_code"] == 1
    assert data["functions"][0]["status"] == "findings"
    code, out, _ = run_cli("calc/ops.py::add", "--format", "junit")
    assert code == 1
    suites = ET.fromstring(out.encode())
    assert suites.get("failures") == "2" and len(suites.findall(".//failure")) == 2
    code, out, _ = run_cli("calc/ops.py::add", "--format", "sarif")
    sarif = json.loads(out)
    sarif_schema = json.loads(
        (Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text()
    )
    jsonschema.Draft7Validator(sarif_schema).validate(sarif)
    results = sarif["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["UTD001", "UTD001"]
    assert results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "calc/ops.py"
    )
    code, out, _ = run_cli("calc/ops.py::add", "--format", "github")
    errors = [line for line in out.splitlines() if line.startswith("::error ")]
    assert len(errors) == 2 and all("file=calc/ops.py,line=8" in e for e in errors)
    report = tmp_path / "out" / "report.xml"
    report.parent.mkdir()  # a report's folder must exist (tests/test_check_command.py)
    code, out, err = run_cli("calc/ops.py::add", "--format", "junit", "-o", str(report))
    assert code == 1 and ET.parse(report).getroot().tag == "testsuites"
    assert "add(1, 2)" in out and "SIMULATED" in out  # the human report on stdout


def test_cli_usage_errors_exit_2(
    run_cli: Callable[..., tuple[int, str, str]], tmp_path: Path
) -> None:
    code, _, err = run_cli("--changed", "--base", "nope-rev")
    assert code == 2 and "nope-rev" in err
    code, _, err = run_cli("calc/ops.py::add", cwd=tmp_path)  # outside the repository
    assert code == 2
    code, _, err = run_cli("calc/ops.py::add", "--min-votes", "2")
    assert code == 2 and "--min-votes" in err
    code, _, err = run_cli()
    assert code == 2 and "--changed" in err
    with pytest.raises(SystemExit) as e:
        run_cli("--format", "xml")
    assert e.value.code == 2


# -- code that cannot run, and what is said before a model is made (issue 29) -------------------


@pytest.mark.parametrize("fix", [False, True], ids=["check", "fix"])
def test_a_module_that_does_not_load_costs_no_model_call(
    calc: git.Repo, tmp_path: Path, fix: bool
) -> None:
    root = Path(calc.working_tree_dir or ".")
    (root / "calc" / "missing.py").write_text(
        "import not_a_real_package_xyz\n\n\ndef needs(x):\n    return x\n"
    )
    replies = Replies(SPECS)
    report = check(calc, tmp_path, replies.info(), targets=("calc/missing.py::needs",), fix=fix)
    (needs,) = report.functions
    assert needs.status is Status.ERROR
    assert needs.message == (
        "not checked: its module does not load in the sandbox: "
        "ModuleNotFoundError: No module named 'not_a_real_package_xyz'"
    )
    assert replies.calls == []  # nothing can run: nothing is asked
    assert report.exit_code() == 2


def test_outside_git_and_a_missing_file_are_said_before_the_model_is_probed(
    run_cli: Callable[..., tuple[int, str, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from utdebug import check_cmd

    probed: list[Any] = []
    monkeypatch.setattr(check_cmd, "_preflight", lambda model, say: probed.append(model))
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    code, _, err = run_cli("calc.py::add", cwd=plain)
    assert code == 2 and "not a git repository" in err
    code, _, err = run_cli("calc/nope.py::add")
    assert code == 2
    assert err.strip() == "utdebug check: calc/nope.py does not exist (calc/nope.py::add)"
    code, _, err = run_cli("calc::add")  # a folder (the parser wants .py: said by it)
    assert code == 2
    assert probed == []  # neither was worth a model's probe
    code, _, _ = run_cli("calc/ops.py::add")
    assert probed  # a real target is (the scripted model's probe is a no-op here)


def test_a_slow_function_is_said_to_go_on_once_a_period(
    calc: git.Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CI log showed only '[1/1] ...' for 15 minutes: now a function still being checked
    is said every PROGRESS_SECONDS (a minute; here made short), with how far it is."""
    from utdebug.check import review

    monkeypatch.setattr(review, "PROGRESS_SECONDS", 0.3)
    slow = ModelInfo(
        ScriptedModel(Replies(SPECS), name="slow scripted", delay=0.2), "slow", "slow-v1", True
    )
    said: list[str] = []
    run_check(
        options(calc, tmp_path, targets=("calc/ops.py::add",)),
        slow,
        SandboxConfig(),
        progress=said.append,
    )
    going = [s for s in said if "still checking" in s]
    assert going, said
    assert re.fullmatch(
        r"\[1/1\] calc/ops\.py::add: still checking \(\d+ model call\(s\), \d+ test\(s\) kept, "
        r"\d+ s\)",
        going[-1],
    )
    assert said[-1].startswith("[1/1] calc/ops.py::add: ")  # then its result, as before
