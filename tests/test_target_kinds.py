"""Every kind of target end to end, with the scripted model and the sandbox: through ``debug``
(its session; the app, driven by the pilot, on one target tested with a literal call and one
tested with setup) and through ``check`` (named targets and ``--changed`` on a real temporary
git repository). Each target has a bug; its test (a pytest function for a target tested with
setup, a literal call otherwise) fails on it, and the fix (merged into its class for a
method) passes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import git
import pytest
from testkit.app import SIZE, make_app, summary, table_rows
from testkit.scripted_add import fix, ut, votes
from testkit.wait import until

from utdebug.agents.scripted import ScriptedModel
from utdebug.check.options import CheckOptions, ModelInfo
from utdebug.check.report import CheckReport, Status
from utdebug.check.review import run_check
from utdebug.engine import Executor, Session, Settings
from utdebug.sandbox import SandboxConfig
from utdebug.sandbox.verdicts import Verdict
from utdebug.workspace import load_function

CORRECT = '''\
"""A small shop."""

from dataclasses import dataclass


@dataclass
class Item:
    name: str
    price: int


async def doubled(x):
    return x * 2


def count_up(n):
    i = 0
    while i < n:
        yield i
        i += 1


async def ticks(n):
    for i in range(n):
        yield i * 10


def price_of(item: Item) -> int:
    return item.price


def outer(xs):
    def inner(x):
        return x + 1

    return [inner(x) for x in xs]


class Cart:
    """Items to buy."""

    def __init__(self):
        self.items = []

    def add(self, item):
        self.items.append(item)
        return len(self.items)

    def __len__(self):
        return len(self.items)

    def __eq__(self, other):
        return isinstance(other, Cart) and self.items == other.items

    @classmethod
    def of(cls, *items):
        cart = cls()
        cart.items = list(items)
        return cart

    @staticmethod
    def tax(amount):
        return amount // 10

    @property
    def total(self):
        return sum(item.price for item in self.items)
'''

BUGS = {
    "doubled": ("return x * 2", "return x * 3"),
    "count_up": ("    i = 0\n    while", "    i = 1\n    while"),
    "ticks": ("yield i * 10", "yield i * 100"),
    "price_of": ("return item.price\n", "return item.price + 1\n"),
    "outer.inner": ("return x + 1", "return x + 2"),
    "Cart.add": ("return len(self.items)\n\n    def __len__",
                 "return len(self.items) + 1\n\n    def __len__"),
    "Cart.__len__": ("    def __len__(self):\n        return len(self.items)",
                     "    def __len__(self):\n        return len(self.items) - 1"),
    "Cart.__eq__": ("self.items == other.items", "self.items != other.items"),
    "Cart.of": ("cart.items = list(items)", "cart.items = list(items)[1:]"),
    "Cart.tax": ("return amount // 10", "return amount // 100"),
    "Cart.total": ("sum(item.price for", "1 + sum(item.price for"),
}  # fmt: skip
"""target -> (correct text, buggy text): one bug per target."""

SPECS: dict[str, tuple[str, str, str]] = {
    "doubled": ("program", "    assert await doubled(2) == 4\n", "4"),
    "count_up": ("program", "    assert list(count_up(3)) == [0, 1, 2]\n", "[0, 1, 2]"),
    "ticks": ("program", "    assert ticks(3) == [0, 10, 20]\n", "[0, 10, 20]"),
    "price_of": ("program", "    assert price_of(Item('a', 3)) == 3\n", "3"),
    "outer.inner": ("literal", "outer([1, 5])", "[2, 6]"),
    "Cart.add": ("program", "    cart = Cart()\n    assert cart.add(Item('a', 1)) == 1\n", "1"),
    "Cart.__len__": ("program", "    cart = Cart()\n    cart.items.append(Item('a', 1))\n"
                     "    assert len(cart) == 1\n", "1"),
    "Cart.__eq__": ("program", "    cart, other = Cart(), Cart()\n"
                    "    cart.items.append(Item('a', 1))\n    other.items.append(Item('a', 1))\n"
                    "    assert cart == other\n", "True"),  # the comparison is the call
    "Cart.of": ("program", "    assert Cart.of(Item('a', 1), Item('b', 2)).items == "
                "[Item('a', 1), Item('b', 2)]\n", "[Item('a', 1), Item('b', 2)]"),
    "Cart.tax": ("literal", "Cart.tax(250)", "25"),  # called through its class
    "Cart.total": ("program", "    cart = Cart()\n    cart.items += [Item('a', 2), Item('b', 3)]\n"
                   "    assert cart.total == 5\n", "5"),
}  # fmt: skip
"""target -> (test kind, the test's body or literal call, the voted expected value)."""


def buggy(target: str | None = None) -> str:
    """The module with the bug of ``target`` (None: with every bug)."""
    text = CORRECT
    for before, after in [BUGS[target]] if target else BUGS.values():
        assert text.count(before) == 1, before
        text = text.replace(before, after)
    return text


def reply_for(spec: tuple[str, str, str]) -> str:
    kind, body, out = spec
    if kind == "literal":
        return ut(body, out)
    head = "async def" if "await" in body else "def"
    return f"Testing it.\n```python\n{head} test_it():\n{body}```\n"


def fix_reply(target: str) -> str:
    """The debugger's fix of ``target``: the module with that one bug undone."""
    before, after = BUGS[target]
    return fix(buggy(target).replace(after, before))


def session_model(target: str) -> ScriptedModel:
    spec = SPECS[target]
    return ScriptedModel(
        {
            "ut": [reply_for(spec)],
            "vote": votes(*[spec[2]] * 8, text="Working it out."),
            "debug": [fix_reply(target)],
        }
    )


@pytest.mark.parametrize("target", list(SPECS))
async def test_debug_each_kind_of_target(executor: Executor, tmp_path: Path, target: str) -> None:
    """The session ``debug`` runs (the engine, without the app) on each kind of target."""
    path = tmp_path / "shop.py"
    path.write_text(buggy(target), encoding="utf-8")
    loaded = load_function(path, target)
    session = Session(loaded.to_task(), session_model(target), executor, Settings(n=1, rounds=1))
    result = await session.run()
    assert result.error is None, (target, result.reason, result.error)  # the session finished
    (test,) = session.tests
    assert test.program == (SPECS[target][0] == "program")
    assert test.share == 1.0 and test.draws == 8
    run = session.current_run
    assert run is not None and (run.passed, run.total) == (1, 1), (target, run)
    before, _ = BUGS[target]
    assert before in session.code  # the fix is in force
    assert run.results[0].verdict is Verdict.PASS


APP_KINDS = ["outer.inner", "Cart.total"]
"""The app on a target with a literal call and on one tested with setup: what it shows of a
session does not depend on the target's kind beyond that."""


@pytest.mark.parametrize("target", APP_KINDS)
async def test_the_app_debugs_a_kind_of_target(
    executor: Executor, tmp_path: Path, target: str
) -> None:
    path = tmp_path / "shop.py"
    path.write_text(buggy(target), encoding="utf-8")
    loaded = load_function(path, target)
    app = make_app(loaded, session_model(target), executor, Settings(n=1, rounds=1))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.phase == "finished", "the session finished")
        (test,) = app.state.tests
        assert test.program == (SPECS[target][0] == "program")
        assert test.share == 1.0 and test.draws == 8
        assert "1/1" in summary(app), (target, summary(app), table_rows(app))
        before, _ = BUGS[target]
        assert before in app.state.code  # the fix is in force
        assert table_rows(app)[0][3] == "pass"


# --- check ------------------------------------------------------------------------------------

QUALNAME = re.compile(r"`([\w.]+)` is part of the module")


class Replies:
    """Answers ``check``'s requests by target: its test, and votes for its expected value."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def target(self, text: str) -> str:
        known = {t: t for t in SPECS} | {"outer": "outer.inner"}  # checked through outer
        for name in QUALNAME.findall(text):
            if name in known:
                return known[name]
        raise AssertionError(f"a request for no known target: {text[:300]}")

    def __call__(self, request: Any, i: int) -> str:
        text = "\n".join(m.content for m in request.messages) + (request.prefill or "")
        target = self.target(text)
        self.asked.append(f"{request.purpose}:{target}")
        if request.purpose == "ut":
            return reply_for(SPECS[target])
        if request.purpose == "vote":
            return votes(SPECS[target][2])[0]
        raise AssertionError(f"unexpected request {request.purpose}")

    def info(self) -> ModelInfo:
        return ModelInfo(ScriptedModel(self, name="scripted kinds"), "scripted", "kinds-v1", True)


@pytest.fixture
def shop(tmp_path: Path) -> git.Repo:
    """main holds the correct module; the branch 'feature' puts one bug in every target."""
    repo = git.Repo.init(tmp_path / "shop", initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "Test")
        cw.set_value("user", "email", "test@example.com")
    root = Path(repo.working_tree_dir or ".")
    (root / "shop.py").write_text(CORRECT, encoding="utf-8")
    repo.index.add(["shop.py"])
    repo.index.commit("shop")
    repo.git.checkout("-b", "feature")
    (root / "shop.py").write_text(buggy(), encoding="utf-8")
    repo.index.add(["shop.py"])
    repo.index.commit("bugs")
    return repo


def check(repo: git.Repo, tmp_path: Path, replies: Replies, **kw: Any) -> CheckReport:
    opts = CheckOptions(
        cwd=Path(repo.working_tree_dir or "."), cache_dir=tmp_path / "cache", timeout=2.0, **kw
    )
    return run_check(opts, replies.info(), SandboxConfig())


def assert_every_kind_found(report: CheckReport, names: dict[str, str]) -> None:
    got = {f.qualname: f for f in report.functions}
    assert set(got) == set(names), sorted(got)
    for qualname, target in names.items():
        f = got[qualname]
        assert f.status is Status.FINDINGS, (qualname, f.status, f.message)
        (test,) = f.tests
        assert test.finding and test.share == 1.0
        assert (test.code is not None) == (SPECS[target][0] == "program"), (qualname, test.code)
    assert report.exit_code() == 1


def test_check_changed_reaches_every_kind_of_target(shop: git.Repo, tmp_path: Path) -> None:
    replies = Replies()
    report = check(shop, tmp_path, replies, changed=True, base="main", tests=1)
    # a nested function is checked through the function that encloses it
    names = {t.split(".")[0] if t.startswith("outer") else t: t for t in SPECS}
    assert_every_kind_found(report, names)
    assert sorted(a for a in replies.asked if a.startswith("ut:")) == sorted(
        f"ut:{t}" for t in SPECS
    )


def test_check_named_targets_of_every_kind(shop: git.Repo, tmp_path: Path) -> None:
    replies = Replies()
    targets = tuple(f"shop.py::{t}" for t in SPECS)
    report = check(shop, tmp_path, replies, targets=targets, tests=1)
    assert_every_kind_found(report, {t: t for t in SPECS})
