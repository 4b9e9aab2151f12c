"""``utdebug check`` without a model on fixes whose values are objects the sandbox cannot
send back (an iterator, a function): what their text and their calls still show (real git
repositories in a temporary folder, the sandbox)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import git
from testkit.gitrepos import new_repo

from utdebug.check.comparison import same_outcome
from utdebug.check.differ import literals
from utdebug.check.options import CheckOptions
from utdebug.check.report import CheckReport, FunctionReport, Status
from utdebug.check.review import run_check
from utdebug.sandbox import SandboxConfig
from utdebug.sandbox.outcomes import Outcome
from utdebug.sandbox.outcomes import Status as Ran
from utdebug.sandbox.values import Opaque
from utdebug.synth.seeds import is_test_file


def _check(repo: git.Repo, tmp_path: Path, files: dict[str, str]) -> dict[str, FunctionReport]:
    root = Path(repo.working_tree_dir or ".")
    for rel, text in files.items():
        (root / rel).write_text(text)
    opts: dict[str, Any] = {
        "cwd": root,
        "cache_dir": tmp_path / "cache",
        "timeout": 1.0,
        "changed": True,
        "synth_inputs": 40,
    }
    report: CheckReport = run_check(CheckOptions(**opts), None, SandboxConfig())
    return {f.qualname: f for f in report.functions}


def _ok(text: str) -> Outcome:
    return Outcome(Ran.OK, value=Opaque("function", text))


def test_an_object_s_text_is_the_same_but_for_its_memory_address() -> None:
    a = _ok("<function pick.<locals>.<lambda> at 0x7f1d61510a40>")
    b = _ok("<function pick.<locals>.<lambda> at 0x7ff8d97bf820>")
    assert same_outcome(a, b)
    assert not same_outcome(a, _ok("<function pick.<locals>.<genexpr> at 0x7f1d61510a40>"))


PICK = '''"""Getters."""

import operator


def pick(index: list[int]):
    """A function that takes the items at ``index`` from a sequence."""
    return operator.itemgetter(*index)
'''


def test_a_fix_that_returns_a_function_where_the_base_raised_is_a_finding(
    tmp_path: Path,
) -> None:
    """The head returns a new lambda for an empty index, where the base raised: the lambda's
    text differs between runs only by its address, so the input is stable and changed."""
    repo = new_repo(tmp_path, {"pick.py": PICK})
    head = PICK.replace(
        "    return operator", "    if not index:\n        return lambda x: ()\n    return operator"
    )
    f = _check(repo, tmp_path, {"pick.py": head})["pick"]
    assert f.status is Status.FINDINGS, f.message
    assert f.differential is not None and not f.differential.unstable
    assert any(c.input == "([],)" for c in f.differential.changes), f.differential.changes


RULES = '''"""Rules on numbers."""


def holds(a: int, rule: str) -> bool:
    """Whether ``a`` meets ``rule``, an operator word and a number: ``'above 3'``."""
    word, _, number = rule.partition(" ")
    n = int(number)
    if word == "above":
        return a > n
    if word == "below":
        return a < n
    if word == "equals":
        return a == n
    raise ValueError(f"unknown operator {word!r}")
'''

RULES_TESTS = """from rules import holds


def test_holds():
    assert holds(4, "above 3")
    assert not holds(4, "below 12")
"""


def test_a_new_word_the_fix_accepts_reaches_the_inputs_through_its_literals(
    tmp_path: Path,
) -> None:
    """The head accepts a new operator word, ``'differs'``: no seed holds it and no mutation
    of the seeds' characters makes it; swapping a word of the code's literals in a seed does."""
    repo = new_repo(tmp_path, {"rules.py": RULES, "tests/test_rules.py": RULES_TESTS})
    head = RULES.replace(
        "    raise ValueError",
        '    if word == "differs":\n        return a != n\n    raise ValueError',
    )
    f = _check(repo, tmp_path, {"rules.py": head})["holds"]
    assert f.status is Status.FINDINGS, f.message
    assert f.differential is not None
    assert any("differs" in c.input for c in f.differential.changes), f.differential.changes


def test_the_literals_of_both_versions_leave_docstrings_out() -> None:
    base = ast.parse('def f(x):\n    """Doc."""\n    return x + "a" + 2\n')
    head = ast.parse('def f(x):\n    """Doc."""\n    return x + "b" + 2.5 + True\n')
    assert set(literals(base, head)) == {"a", 2, "b", 2.5}


CLOCK = '''"""Times of day."""

import re

TIME = r"(?P<hour>[0-9]{2})(:(?P<minute>[0-9]{2}))?"
TIME_RE = re.compile(TIME + r"$")


def minutes(text):
    """Minutes since midnight.

    >>> minutes("10:15")
    615
    """
    m = TIME_RE.match(text)
    if m is None:
        raise ValueError(text)
    return int(m.group("hour")) * 60 + int(m.group("minute") or 0)
'''


def test_a_changed_constant_marks_the_readers_of_a_name_made_from_it(tmp_path: Path) -> None:
    """``TIME`` changed; ``minutes`` reads ``TIME_RE``, compiled from it at import."""
    tests = "import pytest\nfrom clock import minutes\n\n\ndef test_no_colon():\n"
    tests += '    with pytest.raises(ValueError):\n        minutes("1015")\n'
    repo = new_repo(tmp_path, {"clock.py": CLOCK, "tests/test_clock.py": tests})
    f = _check(repo, tmp_path, {"clock.py": CLOCK.replace("(:(?P<minute>", "(:?(?P<minute>")})
    assert set(f) == {"minutes"}
    got = f["minutes"]
    assert got.status is Status.FINDINGS, got.message
    assert got.differential is not None
    assert any("TIME" in n for n in got.differential.notes)


MATCH = '''"""Versions."""


def match(version: str, expr: str) -> bool:
    """Whether ``version`` (``"2.3"``) meets ``expr``, an operator and a version."""
    op = expr[:2]
    if op not in (">=", "<=", "=="):
        raise ValueError(f"unknown operator in {expr!r}")
    a, b = version.split("."), expr[2:].split(".")
    mine, other = (int(a[0]), int(a[1])), (int(b[0]), int(b[1]))
    return {">=": mine >= other, "<=": mine <= other, "==": mine == other}[op]
'''

MATCH_TESTS = """from versions import match


def test_match():
    assert match("2.3", ">=2.1")
    assert match("2.3", "!=2.1")
"""


def test_a_tests_module_gives_seeds_and_is_no_library_code(tmp_path: Path) -> None:
    """``tests.py`` (a module named ``tests``) holds the only call that reaches the fix."""
    assert is_test_file("tests.py") and is_test_file("pkg/tests.py")
    assert not is_test_file("contests.py") and not is_test_file("tests.txt")
    repo = new_repo(tmp_path, {"versions.py": MATCH, "tests.py": MATCH_TESTS})
    head = MATCH.replace('("=="', '("==", "!="').replace(
        '"==": mine == other}', '"==": mine == other, "!=": mine != other}'
    )
    head = head.replace('(">=", "<=", "==")', '(">=", "<=", "==", "!=")')
    f = _check(repo, tmp_path, {"versions.py": head})["match"]
    assert f.status is Status.FINDINGS, f.message
    assert f.differential is not None
    assert any(c.call == "match('2.3', '!=2.1')" for c in f.differential.changes)


FACTORY = '''"""Sort keys."""


def key_factory(sep: str):
    """A function that makes a sort key of a number (``None`` sorts first)."""

    def key(val):
        if val is None:
            return (sep, float("-inf"))
        return (sep, val)

    return key
'''

FACTORY_TESTS = """from keys import key_factory


def test_key():
    assert key_factory("")(3) == ("", 3)
"""


def test_a_function_a_factory_returns_is_called_on_probe_values(tmp_path: Path) -> None:
    """The factory's value is a new closure in every run (known only by its text); the head's
    sorts ``None`` last: calling it on probe values shows the change."""
    repo = new_repo(tmp_path, {"keys.py": FACTORY, "tests/test_keys.py": FACTORY_TESTS})
    f = _check(repo, tmp_path, {"keys.py": FACTORY.replace('float("-inf")', 'float("inf")')})
    got = f["key_factory"]
    assert got.status is Status.FINDINGS, got.message
    assert got.differential is not None and got.differential.changes
    assert "__probes__" in got.differential.changes[0].before


def test_a_factory_whose_function_keeps_its_behaviour_has_no_finding(tmp_path: Path) -> None:
    repo = new_repo(tmp_path, {"keys.py": FACTORY, "tests/test_keys.py": FACTORY_TESTS})
    f = _check(repo, tmp_path, {"keys.py": FACTORY.replace("val", "value")})["key_factory"]
    assert f.status is not Status.FINDINGS, f.message
    assert f.differential is not None and not f.differential.changes
