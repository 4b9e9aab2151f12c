"""``utdebug debug`` loads a person's code exactly as ``utdebug check`` does (issue 29, item 1):
the project folder bound read-only into the sandbox, the file imported as the module it is,
whatever the target. Each case is a project under /tmp, /var/tmp and the home folder (the
sandbox keeps its own /tmp, so a folder there exists inside it only when bound), debugged by
the session ``debug`` runs, started as ``debug`` starts it (``open_sandbox``), with a scripted
model: every test runs (pass), none is an ``error``; and the real ``utdebug debug`` in a
terminal on the first case.

- a ``@dataclass``'s ``@classmethod`` in a module with ``from __future__ import annotations``;
- a method of a class in a package whose modules import each other relatively;
- a literal-argument function in a module with ``from __future__ import annotations`` and a
  ``@dataclass`` (it ran as a script outside ``sys.modules``: ``AttributeError: 'NoneType'
  object has no attribute '__dict__'``).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from testkit.scripted_add import ut, votes

from utdebug.agents.scripted import ScriptedModel
from utdebug.debug_cmd import Prepared, loading, open_sandbox
from utdebug.engine import Session, Settings
from utdebug.sandbox import Sandbox, SandboxConfig
from utdebug.sandbox.verdicts import Verdict
from utdebug.workspace import load_function

SETTINGS = '''"""Settings read from text."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Setting:
    name: str
    value: int
    tags: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str) -> Setting:
        """Read 'name=value'."""
        name, _, value = text.partition("=")
        return cls(name.strip(), int(value))


def total(values: list[int]) -> int:
    """The sum of the values."""
    return sum(Setting("x", v).value for v in values)
'''

PACKAGE = {
    "shop/__init__.py": "from .cart import Cart\n",
    "shop/prices.py": "PRICE = 3\n",
    "shop/cart.py": (
        "from .prices import PRICE\n\n\nclass Cart:\n"
        "    def cost(self, n):\n        return n * PRICE\n"
    ),
}

CASES: dict[str, tuple[str, str, list[tuple[str, str, str]]]] = {
    # target: (file, setup, [(call, expected)])
    "classmethod": (
        "settings.py::Setting.parse",
        "",
        [
            ("Setting.parse('a=1').value", "1", ""),
            ("Setting.parse('b = 2').name", "'b'", ""),
            ("Setting.parse('c=3').tags", "[]", ""),
        ],
    ),
    "package method": (
        "shop/cart.py::Cart.cost",
        "cart = Cart()",
        [("cart.cost(2)", "6", ""), ("cart.cost(0)", "0", ""), ("cart.cost(5)", "15", "")],
    ),
    "future annotations function": (
        "settings.py::total",
        "",
        [("total([1, 2])", "3", ""), ("total([])", "0", ""), ("total([5])", "5", "")],
    ),
}


def _responder(setup: str, tests: list[tuple[str, str, str]]) -> Callable[[Any, int], str]:
    def reply(request: Any, i: int) -> str:
        text = "\n".join(m.content for m in request.messages) + (request.prefill or "")
        if request.purpose == "ut":
            call, out, _ = tests[i % len(tests)]
            if "pytest function" in text:  # a test with setup
                lines = [f"    {setup}"] if setup else []
                body = "\n".join([*lines, f"    assert {call} == {out}"])
                return f"```python\ndef test_it():\n{body}\n```"
            return ut(call, out)
        if request.purpose == "vote":
            for call, out, _ in tests:
                if f"```{call}```" in text or f"result = {call}\n" in text:
                    return votes(out)[0]
            raise AssertionError(f"a vote on an unknown call: {text[-300:]}")
        raise AssertionError(f"unexpected request {request.purpose}")

    return reply


def _project(base: Path) -> Path:
    root = Path(tempfile.mkdtemp(prefix="utdebug-load-", dir=base))
    root.chmod(0o755)  # as a folder made with mkdir (the sandbox runs code as another user)
    (root / "settings.py").write_text(SETTINGS, encoding="utf-8")
    for rel, text in PACKAGE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _bases() -> list[Path]:
    return [Path("/tmp"), Path("/var/tmp"), Path.home()]


@pytest.fixture(params=_bases(), ids=["tmp", "var-tmp", "home"])
def project(request: pytest.FixtureRequest) -> Iterator[Path]:
    base = request.param
    if not os.access(base, os.W_OK):
        pytest.skip(f"{base} is not writable here")
    root = _project(base)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _prepared(root: Path, target: str) -> Prepared:
    rel, _, qualname = target.partition("::")
    loaded = load_function(root / rel, qualname)
    return Prepared(loaded.to_task(), None, loaded, Settings(rounds=0, k=2))


def test_the_project_folder_is_bound_and_the_module_runs_as_itself(project: Path) -> None:
    prep = _prepared(project, "shop/cart.py::Cart.cost")
    how = loading(prep)
    assert str(project.resolve()) in how.mounts
    ctx = how.context
    assert (ctx.name, ctx.package, ctx.cwd, ctx.import_package) == (
        "shop.cart",
        "shop",
        str(project.resolve()),
        True,
    )
    literal = loading(_prepared(project, "settings.py::total")).context
    assert literal is not None  # a literal-argument target is a module too, not a script
    assert (literal.name, literal.package, literal.import_package) == ("settings", None, False)


@pytest.mark.parametrize("case", list(CASES))
async def test_debug_runs_every_test_of_a_users_module(project: Path, case: str) -> None:
    target, setup, tests = CASES[case]
    prep = _prepared(project, target)
    try:
        sb, _, executor = open_sandbox(prep, SandboxConfig())
    except Exception as e:  # pragma: no cover - a machine without the sandbox's layers
        pytest.skip(f"the sandbox cannot start here: {e}")
    model = ScriptedModel(_responder(setup, tests), name="scripted loader test")
    session = Session(prep.task, model, executor, prep.settings)  # as the app starts it
    try:
        result = await session.run()
        assert result.error is None, (result.reason, result.error)  # the session finished
        assert len(session.tests) == 3
        run = session.current_run
        assert run is not None and [j.verdict for j in run.results] == [Verdict.PASS] * 3, run
    finally:
        executor.close()
        sb.close()


def test_debug_in_a_real_terminal_runs_a_dataclass_classmethod(sb: Sandbox) -> None:
    """The real ``utdebug debug`` in tmux, on the issue's own reproduction: a project under
    /tmp, /var/tmp and the home folder, a ``@dataclass``'s ``@classmethod``, a scripted model
    (``--model scripted:FILE``): its three tests pass."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    import json

    from testkit import tmux as T

    tests = CASES["classmethod"][2]
    script = {
        "ut": [
            f"```python\ndef test_it():\n    assert {call} == {out}\n```" for call, out, _ in tests
        ],
        "vote": [v for _, out, _ in tests for v in votes(*[out] * 2)],
    }
    env = "LITELLM_LOCAL_MODEL_COST_MAP=True LITELLM_OFFLINE_MODE=true TERM=xterm-256color"
    for base in _bases():
        if not os.access(base, os.W_OK):
            continue
        root = _project(base)
        session = f"utdebug-load-{uuid.uuid4().hex[:8]}"
        try:
            (root / "script.json").write_text(json.dumps(script), encoding="utf-8")
            cmd = (
                f"cd {root} && {env} {sys.executable} -m utdebug debug "
                "settings.py::Setting.parse --model scripted:script.json --rounds 0 -k 2; "
                "sleep 60"
            )
            T.start(session, 120, 40, cmd)
            screen = T.wait_for(session, "3/3 tests pass", 120)
            assert "error" not in screen, screen
        finally:
            T.tmux("kill-session", "-t", session)
            shutil.rmtree(root, ignore_errors=True)
