"""``utdebug check --changed --no-model`` on tiny git repositories whose tests keep their seeds
where real tests do (a parametrize row passed as ``*args``, a name bound a line earlier, an
enum member, a function, an iterator), and on a function with no test, hint or docstring at
all (kinds from how its body uses its parameters)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import git
import pytest
from testkit.check_repo import CLAMP

from utdebug.cli import main
from utdebug.cli_common import Exit


def repo_with(tmp_path: Path, files: dict[str, str]) -> git.Repo:
    repo = git.Repo.init(tmp_path / "proj", initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "Test")
        cw.set_value("user", "email", "test@example.com")
    root = Path(repo.working_tree_dir or ".")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    repo.index.add(list(files))
    repo.index.commit("base")
    return repo


Checked = Callable[[dict[str, str], str, str, str], tuple[int, dict[str, Any]]]


@pytest.fixture
def checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Checked:
    """``checked(files, module, old, new)``: commit ``files``, replace ``old`` with ``new`` in
    ``module`` (uncommitted) and run ``check --changed --no-model``: the exit code and the one
    function's report."""

    def run(files: dict[str, str], module: str, old: str, new: str) -> tuple[int, dict[str, Any]]:
        repo = repo_with(tmp_path, files)
        root = Path(repo.working_tree_dir or ".")
        assert old in files[module]
        (root / module).write_text(files[module].replace(old, new))
        monkeypatch.chdir(root)
        argv = ["check", "--changed", "--no-model", "-q", "--synth-inputs", "80"]
        code = main([*argv, "--format", "json"])
        (function,) = json.loads(capsys.readouterr().out)["functions"]
        return code, function

    return run


def test_clamp_without_tests_hints_or_docstring_is_found(checked: Checked) -> None:
    code, fn = checked({"geom.py": CLAMP}, "geom.py", "return hi\n", "return hi - 1\n")
    diff = fn["differential"]
    assert code == Exit.FAILURE and fn["status"] == "findings"
    assert diff["seeds"] == 0 and diff["changes"]
    assert any(n.startswith("kinds tried on the base") for n in diff["notes"])
    for change in diff["changes"]:
        x, _, hi = eval(change["input"])
        assert x > hi and change["description"] == f"was {hi!r}, now {hi - 1!r}"


PRICING = """def discount(price, code):
    if code == "VIP":
        return price * 0.8
    return price
"""
PRICING_TESTS = """import pytest

from pricing import discount


@pytest.mark.parametrize("args", [(100, "VIP"), (50, "")])
def test_discount(args):
    assert discount(*args) <= args[0]
"""


def test_a_parametrize_row_passed_as_star_args_exposes_a_change(checked: Checked) -> None:
    files = {"pricing.py": PRICING, "tests/test_pricing.py": PRICING_TESTS}
    code, fn = checked(files, "pricing.py", "price * 0.8", "price * 0.7")
    diff = fn["differential"]
    assert code == Exit.FAILURE and diff["seeds"] == 2
    assert all(eval(c["input"])[1] == "VIP" for c in diff["changes"])
    assert "discount(100, 'VIP')" in {c["call"] for c in diff["changes"]}


ORDERS = """def total(order):
    return sum(item["qty"] * item["price"] for item in order["items"])
"""
ORDERS_TESTS = """from orders import total


def test_total():
    item = {"qty": 2, "price": 3}
    order = {"items": [item]}
    order["items"] += [{"qty": 1, "price": 5}]
    assert total(order) == 11
"""


def test_a_test_that_binds_the_input_a_line_earlier_gives_the_seed(checked: Checked) -> None:
    files = {"orders.py": ORDERS, "tests/test_orders.py": ORDERS_TESTS}
    code, fn = checked(
        files,
        "orders.py",
        'item["price"] for',
        'item["price"] + (item["qty"] > 2) for',
    )
    diff = fn["differential"]
    assert code == Exit.FAILURE and diff["seeds"] == 1
    for change in diff["changes"]:
        (order,) = eval(change["input"])
        assert any(item["qty"] > 2 for item in order["items"])


SIZES = """import enum


class Size(enum.Enum):
    S = 1
    M = 2
    L = 3


def price(size):
    return {Size.S: 5, Size.M: 7, Size.L: 9}[size]
"""
SIZES_TESTS = """from sizes import Size, price


def test_price():
    assert price(Size.S) == 5
    assert price(Size.L) == 9
"""


def test_an_enum_member_argument_is_re_created_in_the_child(checked: Checked) -> None:
    files = {"sizes.py": SIZES, "tests/test_sizes.py": SIZES_TESTS}
    code, fn = checked(files, "sizes.py", "Size.L: 9", "Size.L: 10")
    diff = fn["differential"]
    assert code == Exit.FAILURE and diff["seeds"] == 2
    assert [(c["call"], c["description"]) for c in diff["changes"]] == [
        ("price(Size.L)", "was 9, now 10")
    ]


APPLY = """def double(x):
    return 2 * x


def apply_all(fn, xs):
    return [fn(x) for x in xs]
"""
APPLY_TESTS = """from mapping import apply_all, double


def test_apply_all():
    assert apply_all(lambda x: x + 1, [1, 2]) == [2, 3]
    assert apply_all(double, [3]) == [6]
"""


def test_a_function_argument_is_re_created_from_its_source(checked: Checked) -> None:
    files = {"mapping.py": APPLY, "tests/test_mapping.py": APPLY_TESTS}
    code, fn = checked(
        files,
        "mapping.py",
        "[fn(x) for x in xs]",
        "[fn(x) for x in xs if x != 2]",
    )
    diff = fn["differential"]
    assert code == Exit.FAILURE and diff["seeds"] == 2
    calls = {c["call"] for c in diff["changes"]}
    assert "apply_all(lambda x: x + 1, [1, 2])" in calls
    assert any(c.startswith("apply_all(double, [") for c in calls)


COUNTING = """def count_items(items):
    return sum(1 for _ in items)
"""
COUNTING_TESTS = """from counting import count_items


def test_count_items():
    assert count_items(iter([1, 2, 3])) == 3
    assert count_items(x for x in [4, 5]) == 2
"""


def test_an_iterator_argument_is_made_from_a_list_in_the_child(checked: Checked) -> None:
    files = {"counting.py": COUNTING, "tests/test_counting.py": COUNTING_TESTS}
    code, fn = checked(files, "counting.py", "sum(1 for _ in items)", "len(items)")
    diff = fn["differential"]
    assert code == Exit.FAILURE and diff["seeds"] == 2
    calls = {c["call"]: c["description"] for c in diff["changes"]}
    assert calls["count_items(iter([1, 2, 3]))"] == "now raises TypeError"
    assert calls["count_items((x for x in [4, 5]))"] == "now raises TypeError"


GREET = """def greet(name):
    return "hi " + name
"""
GREET_TESTS = """from greet import greet


def test_greet():
    assert greet("bo") == "hi bo"
"""


def test_a_parameter_the_head_adds_with_a_default_is_no_change(checked: Checked) -> None:
    """The seeds are completed with the defaults of the parameters both versions take: the
    base is never called with the head's new parameter."""
    files = {"greet.py": GREET, "tests/test_greet.py": GREET_TESTS}
    new = 'def greet(name, mark=""):\n    return "hi " + name + mark\n'
    code, fn = checked(files, "greet.py", GREET, new)
    diff = fn["differential"]
    assert code == Exit.OK and diff["compared"] and diff["seeds"] == 1
    assert diff["changes"] == [] and diff["inputs"] > 10
