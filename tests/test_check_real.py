"""``utdebug check`` without a model on repositories shaped like real ones: packages loaded as
Python loads them, nondeterministic functions, changed module constants, test files, and the
summaries every format gives (real git repositories in a temporary folder, the sandbox)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import git
import jsonschema
import pytest
from testkit.gitrepos import commit, new_repo

from utdebug.check.formats import render, schema
from utdebug.check.options import CheckOptions
from utdebug.check.report import CheckReport, Comparison, FunctionReport, Status
from utdebug.check.review import run_check
from utdebug.cli import main
from utdebug.cli_common import Exit
from utdebug.sandbox import SandboxConfig


def write(repo: git.Repo, files: dict[str, str]) -> None:
    root = Path(repo.working_tree_dir or ".")
    for rel, text in files.items():
        (root / rel).write_text(text)


def check(
    repo: git.Repo, tmp_path: Path, config: SandboxConfig | None = None, **kw: Any
) -> CheckReport:
    opts: dict[str, Any] = {
        "cwd": Path(repo.working_tree_dir or "."),
        "cache_dir": tmp_path / "cache",
        "timeout": 1.0,
        "changed": True,
        "synth_inputs": 40,
    }
    return run_check(CheckOptions(**(opts | kw)), None, config or SandboxConfig())


def by_name(report: CheckReport) -> dict[str, FunctionReport]:
    return {f.qualname: f for f in report.functions}


# -- loading as Python loads it ------------------------------------------------------------

INIT = '"""A package that re-exports its module\'s names."""\n\nfrom .number import apnumber\n'
NUMBER = '''"""Numbers in words."""

from . import words


def apnumber(value):
    """AP style for 1 to 9.

    >>> apnumber(3)
    'three'
    """
    if not 0 < value < 10:
        return str(value)
    return words.NAMES[value - 1]
'''
WORDS = 'NAMES = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")\n'


def test_a_module_its_package_re_exports_loads_and_is_compared(tmp_path: Path) -> None:
    """Loading ``pkg/number.py`` alone under its own name fails (its package's ``__init__``
    imports it back while it imports a sibling); ``import pkg.number`` works: the base loads,
    and the change (10 now in words too) is a finding."""
    repo = new_repo(
        tmp_path,
        {"src/pkg/__init__.py": INIT, "src/pkg/number.py": NUMBER, "src/pkg/words.py": WORDS},
    )
    write(
        repo,
        {
            "src/pkg/number.py": NUMBER.replace("0 < value < 10", "0 < value < 11").replace(
                "words.NAMES[value - 1]", "(words.NAMES + ('ten',))[value - 1]"
            )
        },
    )
    report = check(repo, tmp_path)
    (f,) = report.functions
    assert f.differential is not None and f.differential.compared, f.message
    assert f.status is Status.FINDINGS
    assert any(c.call == "apnumber(10)" and c.after == "'ten'" for c in f.changes)


def test_a_namespace_package_module_loads_with_its_siblings(tmp_path: Path) -> None:
    """No ``__init__.py`` anywhere: ``tools/calc.py`` is ``tools.calc``, and its sibling is
    imported from the same version (the base's ``tools/rate.py``, then the head's)."""
    calc = (
        'from tools.rate import RATE\n\n\ndef price(x):\n    """>>> price(2)\n    4\n'
        '    """\n    return x * RATE\n'
    )
    repo = new_repo(tmp_path, {"tools/calc.py": calc, "tools/rate.py": "RATE = 2\n"})
    write(repo, {"tools/calc.py": calc.replace("x * RATE", "RATE * x + 0")})
    (f,) = check(repo, tmp_path).functions
    assert f.status is Status.OK and f.differential is not None and f.differential.compared
    assert f.message.startswith("unchanged on ")


def test_a_base_that_does_not_parse_says_so(tmp_path: Path) -> None:
    repo = new_repo(tmp_path, {"old.py": 'def shout(s):\n    print "x"\n    return s.upper()\n'})
    write(repo, {"old.py": "def shout(s):\n    return s.upper() + '!'\n"})
    (f,) = check(repo, tmp_path).functions
    assert f.status is Status.NOT_COMPARED
    assert f.message.startswith("not compared: the base does not parse on Python 3.")
    assert "new function" not in f.message


def test_a_head_that_does_not_load_is_an_error_not_changed_outcomes(tmp_path: Path) -> None:
    base = "def inc(x: int) -> int:\n    return x + 1\n"
    repo = new_repo(tmp_path, {"inc.py": base})
    write(repo, {"inc.py": "import not_installed_anywhere\n\n" + base.replace("+ 1", "+ 2")})
    report = check(repo, tmp_path)
    (f,) = report.functions
    assert f.status is Status.ERROR and f.changes == (), f.message
    assert "the checked version does not load: ModuleNotFoundError" in f.message
    assert report.exit_code() == Exit.USAGE


# -- nondeterminism ------------------------------------------------------------------------

RANDOM_BASE = '''"""Functions that vary from run to run."""

import datetime
import os
import random
import time
import uuid

TOKEN = uuid.uuid4().hex
LUCK = random.random()


def clock(x: int) -> float:
    t = time.time()
    return t + x


def today(x: int) -> str:
    d = datetime.datetime.now()
    return d.isoformat() + str(x)


def dice(x: int) -> float:
    r = random.random()
    return r * x


def pid(x: int) -> int:
    p = os.getpid()
    return p + x


def ident(x: int) -> int:
    box = [x]
    return id(box) + x


def token(x: int) -> str:
    t = TOKEN[:8]
    return t + str(x)


def luck(x: int) -> float:
    v = LUCK
    return v + x


def where(x: int) -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "data", str(x))
'''


RENAMES = (
    ("t = time", "stamp = time"), ("return t + x", "return stamp + x"),
    ("d = datetime", "moment = datetime"), ("d.isoformat", "moment.isoformat"),
    ("r = random", "roll = random"), ("r * x", "roll * x"),
    ("p = os", "proc = os"), ("return p + x", "return proc + x"), ("box", "cell"),
    ("t = TOKEN", "mark = TOKEN"), ("return t + str", "return mark + str"),
    ("v = LUCK", "value = LUCK"), ("return v + x", "return value + x"),
    ("here =", "folder ="), ("(here,", "(folder,"),
)  # fmt: skip
"""Each function's local variable renamed: a change that keeps the behaviour."""


def _renamed(text: str) -> str:
    for old, new in RENAMES:
        assert old in text, old
        text = text.replace(old, new)
    return text


def test_nondeterministic_functions_after_a_rename_give_no_finding(tmp_path: Path) -> None:
    head = _renamed(RANDOM_BASE)
    assert head != RANDOM_BASE and "stamp = time.time()" in head and "cell = [x]" in head
    repo = new_repo(tmp_path, {"vary.py": RANDOM_BASE})
    write(repo, {"vary.py": head})
    report = check(repo, tmp_path)
    fns = by_name(report)
    assert set(fns) == {"clock", "today", "dice", "pid", "ident", "token", "luck", "where"}
    assert report.findings == 0 and report.exit_code() == Exit.OK
    for name in ("clock", "today", "dice", "pid", "ident", "token", "luck"):
        f = fns[name]
        assert f.status is Status.NONDETERMINISTIC, (name, f.message)
        assert f.differential is not None and f.differential.unstable, name
        assert f.differential.outcome is Comparison.NONDETERMINISTIC
    where = fns["where"]  # a path made from __file__: the same for both versions
    assert where.status is Status.OK and where.differential is not None
    assert where.differential.compared and not where.differential.unstable
    data = report.to_json()
    jsonschema.validate(data, schema())
    assert data["summary"]["nondeterministic"] == 7 and data["summary"]["compared"] == 1
    human = render(report, "human")
    assert "nondeterministic input" in human and "then" in human


def test_without_bubblewrap_both_versions_load_at_one_path(tmp_path: Path) -> None:
    base = (
        "import os\n\n\ndef where(x: int) -> str:\n"
        "    return os.path.join(os.path.dirname(__file__), str(x))\n"
    )
    repo = new_repo(tmp_path, {"place.py": base})
    write(repo, {"place.py": base.replace("str(x))", "str(x + 0))")})
    weak = SandboxConfig(use_bwrap=False, allow_weak=True)
    (f,) = check(repo, tmp_path, weak).functions
    assert f.status is Status.OK and f.changes == (), f.message


# -- what a change touches -----------------------------------------------------------------

RATES = '''"""Exchange rates."""

RATES = {"eur": 2, "usd": 3}


def rate(code):
    """>>> rate("usd")
    3
    """
    return RATES.get(code, 0)


def doubled(code):
    """>>> doubled("usd")
    6
    """
    return rate(code) * 2


def unrelated(x):
    """>>> unrelated(1)
    1
    """
    return x
'''


def test_a_changed_module_constant_marks_its_readers_as_changed(tmp_path: Path) -> None:
    repo = new_repo(tmp_path, {"rates.py": RATES})
    write(repo, {"rates.py": RATES.replace('"usd": 3', '"usd": 4')})
    report = check(repo, tmp_path)
    fns = by_name(report)
    assert set(fns) == {"rate", "doubled"}  # directly, and through rate
    for f in fns.values():
        assert f.status is Status.FINDINGS, f.message
        assert f.differential is not None
        assert any("RATES" in n for n in f.differential.notes)
    assert any(
        c.call == "doubled('usd')" and c.description == "was 6, now 8"
        for c in fns["doubled"].changes
    )


def test_functions_of_test_files_are_not_compared_unless_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    helper = "def make_case(n):\n    return [n] * 2\n"
    repo = new_repo(tmp_path, {"tests/helpers.py": helper, "lib.py": "X = 1\n"})
    write(repo, {"tests/helpers.py": helper.replace("* 2", "* 3")})
    report = check(repo, tmp_path)
    (f,) = report.functions
    assert f.status is Status.NOT_COMPARED and "test file" in f.message and "fixtures" in f.message
    assert report.changed_functions == ()  # no library function changed
    named = check(repo, tmp_path, changed=False, targets=("tests/helpers.py::make_case",))
    assert "test file" not in named.functions[0].message


# -- what the user is told -----------------------------------------------------------------

TWO = """def good(x: int) -> int:
    return x + 1


def vague(x):
    return x.total * 2
"""


def test_every_format_says_how_many_were_compared_and_min_compared_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = new_repo(tmp_path, {"two.py": TWO})
    write(repo, {"two.py": TWO.replace("x + 1", "1 + x").replace("x.total * 2", "2 * x.total")})
    report = check(repo, tmp_path)
    fns = by_name(report)
    assert fns["good"].status is Status.OK and fns["vague"].status is Status.NOT_COMPARED
    assert report.exit_code() == Exit.OK
    line = "compared 1 of 2 changed functions with their base version"
    assert line in render(report, "human")
    assert line in render(report, "github")
    assert line in render(report, "junit")
    sarif = json.loads(render(report, "sarif"))
    assert sarif["runs"][0]["properties"]["compared"] == 1
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} == {"UTD005"}
    data = json.loads(render(report, "json"))
    jsonschema.validate(data, schema())
    assert data["summary"]["compared"] == 1 and data["summary"]["changed_functions"] == 2
    assert data["functions"][1]["differential"]["status"] == "not compared"

    monkeypatch.chdir(Path(repo.working_tree_dir or "."))
    argv = ["check", "--changed", "--no-model", "-q", "--synth-inputs", "30"]
    assert main([*argv, "--min-compared", "0.5"]) == Exit.OK
    capsys.readouterr()
    assert main([*argv, "--min-compared", "0.9"]) == Exit.FAILURE
    out = capsys.readouterr().out
    assert "--min-compared 90%: 50% compared, too few: exit code 1" in out
    assert "too few functions compared" in out


def test_the_header_names_the_base_of_named_functions(tmp_path: Path) -> None:
    repo = new_repo(tmp_path, {"two.py": TWO})
    sha = commit(repo, {"two.py": TWO.replace("x + 1", "x + 2")}, "bump")
    report = check(repo, tmp_path, changed=False, targets=("two.py::good",), base="HEAD~1")
    assert report.base == repo.commit("HEAD~1").hexsha != sha
    assert f"base {report.base}" in render(report, "human", width=200)
    assert report.functions[0].changes


# -- targets that need inputs this pipeline does not make yet ---------------------------------

CART = """class Item:
    def __init__(self, name, quantity):
        self.name = name
        self.quantity = quantity


class Cart:
    def __init__(self):
        self.items = {}

    def add_item(self, name, quantity):
        item = self.items.setdefault(name, Item(name, 0))
        item.quantity += quantity

    def remove_item(self, name, quantity):
        item = self.items[name]
        if quantity > item.quantity:
            raise ValueError("not that many")
        item.quantity -= quantity
        return item.quantity
"""


def test_a_changed_method_of_a_small_class_is_a_finding(tmp_path: Path) -> None:
    repo = new_repo(tmp_path, {"cart.py": CART})
    write(repo, {"cart.py": CART.replace("quantity > item.quantity", "quantity >= item.quantity")})
    report = check(repo, tmp_path)
    (f,) = report.functions
    assert f.qualname == "Cart.remove_item" and f.changes
    assert report.exit_code() == Exit.FAILURE


CLAMP = "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n"


def test_an_unannotated_clamp_changed_to_stop_below_hi_is_a_finding(tmp_path: Path) -> None:
    """No hint, test or example: the kinds its body suggests, tried on the base (the change
    shows on about one input in fifteen, so the default number of inputs)."""
    repo = new_repo(tmp_path, {"clamp.py": CLAMP})
    write(repo, {"clamp.py": CLAMP.replace("min(x, hi)", "min(x, hi - 1)")})
    report = check(repo, tmp_path, synth_inputs=200)
    assert report.functions[0].changes and report.exit_code() == Exit.FAILURE


def test_reordered_imports_mark_no_reader(tmp_path: Path) -> None:
    """The statements binding a name have the base's syntax tree: its readers did not
    change (only the function whose lines changed is checked)."""
    text = "import os\nimport sys\n\n\ndef a():\n    return os.sep\n\n\ndef b():\n    return 1\n"
    repo = new_repo(tmp_path, {"m.py": text})
    from utdebug.check import gitrepo

    write(
        repo,
        {
            "m.py": text.replace("import os\nimport sys", "import sys\nimport os").replace(
                "return 1", "return 2"
            )
        },
    )
    found = gitrepo.changed_functions(gitrepo.open_repository(tmp_path / "project"))
    assert [f.qualname for f in found.functions] == ["b"]
    write(repo, {"m.py": text.replace("import os", "import os.path as os")})
    found = gitrepo.changed_functions(gitrepo.open_repository(tmp_path / "project"))
    assert [(f.qualname, f.reads) for f in found.functions] == [("a", ("os",))]


def test_without_a_bind_per_child_the_place_is_a_link_switched_between_versions(
    tmp_path: Path,
) -> None:
    from utdebug.check.loading import Copies, import_name, version_context

    for version in ("head", "base"):
        (tmp_path / version / "src" / "ns").mkdir(parents=True)
        (tmp_path / version / "src" / "ns" / "mod.py").write_text("X = 1\n")
    copies = Copies(tmp_path, tmp_path / "head", tmp_path / "base", "abc", "working tree")
    copies.make_place()
    module = import_name("src/ns/mod.py", copies.head)
    assert module is not None and (module.name, module.package, module.root) == (
        "ns.mod",
        "ns",
        "src",
    )
    for base in (True, False, True):
        copies.point_place(base)
        assert copies.place.resolve() == copies.root(base).resolve()
        ctx = version_context(copies, "src/ns/mod.py", module, base=base, bind=False)
        assert ctx.file == str(copies.place / "src/ns/mod.py") and ctx.bind is None
        assert ctx.path[0] == str(copies.place / "src") and ctx.imported


PARTLY = """import os


def mix(x: int) -> int:
    if x % 3 == 0:
        return os.getpid()
    return x * 2
"""


def test_changes_on_stable_inputs_are_findings_beside_nondeterministic_ones(
    tmp_path: Path,
) -> None:
    """A third of the inputs vary from run to run (listed, not findings); the change on the
    others is confirmed by one more run of each version and reported."""
    repo = new_repo(tmp_path, {"mix.py": PARTLY})
    write(repo, {"mix.py": PARTLY.replace("return x * 2", "return x * 2 + (x > 5)")})
    (f,) = check(repo, tmp_path, synth_inputs=60).functions
    d = f.differential
    assert d is not None and f.status is Status.FINDINGS, f.message
    assert d.unstable and all(eval(u.input)[0] % 3 == 0 for u in d.unstable)
    assert all(eval(c.input)[0] % 3 and eval(c.input)[0] > 5 for c in d.changes)
    assert "nondeterministic)" in f.message


@pytest.mark.parametrize(
    ("files", "path", "expected"),
    [
        (
            ["src/pkg/__init__.py", "src/pkg/number.py"],
            "src/pkg/number.py",
            ("pkg.number", "pkg", "src"),
        ),
        (["lib/pkg/__init__.py", "lib/pkg/mod.py"], "lib/pkg/mod.py", ("pkg.mod", "pkg", "lib")),
        (["tools/calc.py"], "tools/calc.py", ("tools.calc", "tools", "")),
        (["src/ns/deep/mod.py"], "src/ns/deep/mod.py", ("ns.deep.mod", "ns.deep", "src")),
        (["tool.py"], "tool.py", ("tool", None, "")),
    ],
)
def test_import_names_follow_the_layout(
    tmp_path: Path, files: list[str], path: str, expected: tuple[str, str | None, str]
) -> None:
    from utdebug.check.loading import import_name

    for f in files:
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("")
    found = import_name(path, tmp_path)
    assert found is not None and (found.name, found.package, found.root) == expected
    (tmp_path / "my-script.py").write_text("")
    assert import_name("my-script.py", tmp_path) is None


def test_the_later_runs_take_the_cheapest_inputs_of_a_slow_base() -> None:
    from utdebug.check import runs
    from utdebug.sandbox import Outcome
    from utdebug.sandbox import Status as Run_status

    def run(costs: list[float]) -> runs.Run:
        return runs.Run({i: Outcome(Run_status.OK, i, seconds=c) for i, c in enumerate(costs)})

    fast = run([0.01] * 200)
    assert runs._affordable(list(range(200)), fast) == list(range(200))
    slow = run([1.0, 0.1] * 50)  # 55 s in all
    kept = runs._affordable(list(range(100)), slow)
    assert kept == sorted(kept)  # in input order
    assert sum(slow.outcomes[i].seconds for i in kept) <= runs.LATER_RUNS_CPU
    # every cheap one (5 s in all), then the first ten slow ones
    assert [i for i in kept if i % 2] == list(range(1, 100, 2))
    assert [i for i in kept if i % 2 == 0] == list(range(0, 20, 2))
