"""``benchmarks/check_history.py`` end to end on a repository the test builds (a fix commit and a
keep commit in a ``src/`` layout), with its own small list file; and the report reader alone."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from utdebug.benchmarks import check_history as H

BUGGY = '''"""Cart helpers."""


def total(xs):
    """Sum of the prices in xs."""
    return sum(xs[1:])
'''

FIXED = BUGGY.replace("sum(xs[1:])", "sum(xs)")

REWRITE = FIXED.replace(
    "    return sum(xs)\n", "    s = 0\n    for x in xs:\n        s += x\n    return s\n"
)

TESTS = "from shop.cart import total\n\n\ndef test_total():\n    assert total([1, 2, 3]) == 6\n"


def _commit(root: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    for cmd in (["git", "add", "-A"], ["git", "commit", "-q", "-m", message]):
        subprocess.run(cmd, cwd=root, env=env, check=True, capture_output=True)
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def listed(tmp_path: Path) -> Path:
    """A repository with a fix and a keep commit, and a list file naming them (and the keep
    commit once more, under a library that needs a module nobody has)."""
    repo = tmp_path / "shop"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    _commit(
        repo,
        {"src/shop/__init__.py": "", "src/shop/cart.py": BUGGY, "tests/test_cart.py": TESTS},
        "cart",
    )
    fix = _commit(repo, {"src/shop/cart.py": FIXED}, "total counts the first price")
    keep = _commit(repo, {"src/shop/cart.py": REWRITE}, "total as a loop")
    text = f"""
[libraries.shop]
url = "{repo}"
import = "shop"
paths = ["src"]

[libraries.needy]
url = "{repo}"
import = "shop"
requires = ["utdebug_no_such_module_anywhere"]

[[commits]]
library = "shop"
sha = "{fix}"
label = "fix"
functions = ["src/shop/cart.py::total"]

[[commits]]
library = "shop"
sha = "{keep}"
label = "keep"

[[commits]]
library = "needy"
sha = "{keep}"
label = "keep"
"""
    path = tmp_path / "list.toml"
    path.write_text(text)
    return path


def test_the_benchmark_counts_a_reported_fix_and_a_quiet_keep(
    listed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = tmp_path / "rows.jsonl"
    argv = ["--list", str(listed), "--work", str(tmp_path / "work"), "--rows", str(rows)]
    assert H.main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    shop, total = out["libraries"]["shop"], out["total"]
    assert (shop["fixes"], shop["fixes_reported"]) == (1, 1)
    assert (shop["keeps"], shop["keeps_with_finding"]) == (1, 0)
    assert (shop["functions"], shop["compared"], shop["reasons"]) == (2, 2, {})
    assert out["libraries"]["needy"]["not_run"] == {H.DEPENDENCY_MISSING: 1}
    assert (total["commits"], total["ran"]) == (3, 2)
    statuses = [(c["library"], c["label"], c["status"], c["finding"]) for c in out["commits"]]
    assert statuses == [
        ("shop", "fix", H.RAN, True),
        ("shop", "keep", H.RAN, False),
        ("needy", "keep", H.DEPENDENCY_MISSING, False),
    ]
    assert len(out["load_start"]) == len(out["load_end"]) == 3
    assert not list((tmp_path / "work" / "runs").iterdir())  # each commit's clone is removed

    # a rerun with the same rows file checks nothing again; --summarize gives the same totals
    assert H.main(argv) == 0
    assert "[1/" not in capsys.readouterr().out
    assert H.main(["--summarize", str(rows), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["total"] == total


def test_read_function_prefers_the_comparison_and_falls_back_on_the_status() -> None:
    not_loaded = {
        "path": "pkg/num.py",
        "qualname": "apnumber",
        "status": "ok",
        "differential": {
            "compared": False,
            "message": "nothing was compared: the base version does not load: ImportError: "
            "cannot import name 'apnumber' from 'pkg.number' (/tmp/x/pkg/number.py)",
            "changes": [],
        },
    }
    res = H.read_function(not_loaded)
    assert (res.compared, res.finding) == (False, False)
    assert H.reason_key(res.reason or "", res.function) == (
        "the base version does not load: ImportError"
    )
    changed = {"path": "a.py", "qualname": "f", "status": "findings", "differential": None}
    assert (H.read_function(changed).compared, H.read_function(changed).finding) == (True, True)
    noisy = {"path": "a.py", "qualname": "f", "status": "nondeterministic"}
    assert (H.read_function(noisy).compared, H.read_function(noisy).finding) == (True, False)
    skipped = {"path": "a.py", "qualname": "C.m", "status": "not compared", "message": "a method"}
    assert H.read_function(skipped).reason == "a method"


def test_reason_key_drops_what_is_particular_to_one_function() -> None:
    a = "nothing was compared: no seed input (no call ...) and its parameters cannot be typed (x)"
    b = "not compared: no seed input (none) and its parameters cannot be typed (a, b without ...)"
    assert H.reason_key(a) == H.reason_key(b) == "no seed input and its parameters cannot be typed"
    assert H.reason_key("f is not a module-level function of m.py", "m.py::f") == (
        "<name> is not a module-level function of <name>"
    )


def test_a_function_defined_in_a_try_block_is_not_new() -> None:
    source = (
        "try:\n    import icu\nexcept ImportError:\n    def sep():\n        return ','\n"
        "class C:\n    if True:\n        def m(self):\n            return 1\n"
    )
    assert H._defines(source, "sep")
    assert H._defines(source, "C.m")
    assert not H._defines(source, "C.n")
    assert not H._defines(source, "m")
