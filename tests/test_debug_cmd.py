"""``utdebug debug`` refuses bad input with one clear message before opening the app."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from utdebug.agents.scripted import ScriptedModel
from utdebug.cli import main
from utdebug.debug_cmd import DEMO_DIR, DEMO_FILE, DEMO_FUNCTION, DEMO_SCRIPT
from utdebug.engine import Executor, Session, Settings
from utdebug.engine.events import Backtracked, EditAccepted, EditProposed
from utdebug.workspace import load_function
from utdebug.writeback import function_diff


@pytest.fixture
def source(tmp_path: Path) -> Path:
    p = tmp_path / "calc.py"
    p.write_text(
        "class Box:\n    def size(self):\n        return 1\n\n\ndef add(a, b):\n    return a - b\n",
        encoding="utf-8",
    )
    return p


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["debug", *argv])
    return code, capsys.readouterr().err


def test_a_target_or_a_problem_is_needed(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys) == (2, "utdebug debug: give FILE::FUNCTION or --problem ID (one of them)\n")


def test_bad_targets_are_explained(
    source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = run(capsys, f"{source}::ad", "--model", "scripted:x.json")
    assert code == 2 and "add" in err  # the message suggests the close match
    code, err = run(capsys, f"{source}::Box.nope", "--model", "scripted:x.json")
    assert code == 2 and "has no method 'nope'" in err and "size" in err
    code, err = run(capsys, f"{tmp_path / 'nope.py'}::f", "--model", "scripted:x.json")
    assert code == 2 and "nope.py" in err
    code, err = run(capsys, str(source), "--model", "scripted:x.json")
    assert code == 2 and "::" in err
    bad = tmp_path / "bad.py"
    bad.write_text("def f(:\n", encoding="utf-8")
    code, err = run(capsys, f"{bad}::f", "--model", "scripted:x.json")
    assert code == 2 and "line 1" in err


def test_models_are_checked(
    source: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "empty.toml").write_text("", encoding="utf-8")
    monkeypatch.setenv("UTDEBUG_CONFIG", str(tmp_path / "empty.toml"))
    monkeypatch.delenv("UTDEBUG_MODEL", raising=False)
    code, err = run(capsys, f"{source}::add")  # no model: the app opens without one
    assert code == 2 and "needs a terminal" in err and "model" not in err
    code, err = run(capsys, f"{source}::add", "--model", "sim")
    assert code == 2 and "--problem" in err
    code, err = run(capsys, f"{source}::add", "--model", f"scripted:{tmp_path / 'x.json'}")
    assert code == 2 and "no such file" in err
    code, err = run(capsys, "--problem", "hard/99999", "--model", "sim", "--data-dir",
                    str(tmp_path))  # fmt: skip
    assert code == 2 and "MBPP+Fix_hard_test.jsonl" in err
    monkeypatch.setenv("UTDEBUG_MODEL", "sim")  # chosen by the environment: refused as well
    code, err = run(capsys, f"{source}::add")
    assert code == 2 and "--model sim answers from a benchmark problem's gold" in err


def test_the_demo_replies_merged_fix_the_median(tmp_path: Path, executor: Executor) -> None:
    """The demo's recorded replies hold the function only: merged into median.py they keep its
    module docstring; round 1's edit breaks odd lengths (backtracked), round 2's fixes it."""
    shutil.copyfile(DEMO_DIR / DEMO_FILE, tmp_path / DEMO_FILE)
    loaded = load_function(tmp_path / DEMO_FILE, DEMO_FUNCTION)
    model = ScriptedModel.from_file(DEMO_DIR / DEMO_SCRIPT)
    result = asyncio.run(Session(loaded.to_task(), model, executor, Settings()).run())
    proposed = [e for e in result.events if isinstance(e, EditProposed)]
    assert [p.replaced for p in proposed] == [["function median"]] * 2
    assert [e.kind for e in result.events if isinstance(e, Backtracked | EditAccepted)] == [
        "backtracked",
        "edit_accepted",
    ]
    assert result.reason == "all_pass"
    assert result.code.startswith('"""utdebug\'s bundled demo')  # the module docstring stays
    diff = function_diff(loaded, result.code)
    removed = [line for line in diff.splitlines() if line.startswith("-") and line[:3] != "---"]
    assert removed == ["-    return s[n // 2]"]


def test_without_a_terminal_debug_and_demo_exit_2_with_one_line(
    tmp_path: Path, source: Path
) -> None:
    """Started from a script or CI (stdin /dev/null, stdout a pipe), the app would spin on a
    terminal it cannot draw on: both commands stop at once with one line instead."""
    import os
    import subprocess
    import sys

    script = tmp_path / "script.json"
    script.write_text('{"ut": ["x"]}', encoding="utf-8")
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_OFFLINE_MODE="true")
    for argv, folder in (
        (["demo", "--dir", str(tmp_path / "demo")], tmp_path / "demo"),
        (["debug", f"{source}::add", "--model", f"scripted:{script}"], None),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "utdebug", *argv],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            check=False,
        )
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "needs a terminal (stdin is not a terminal)" in lines[0]
        assert done.stdout == ""
        if folder is not None:
            assert not folder.exists()  # nothing was made


def test_a_second_demo_on_a_fixed_folder_starts_from_the_original(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from utdebug.debug_cmd import prepare_demo_folder

    first, kept = prepare_demo_folder(tmp_path)
    original = (DEMO_DIR / DEMO_FILE).read_text(encoding="utf-8")
    assert first.read_text(encoding="utf-8") == original and kept is None
    assert capsys.readouterr().err == ""  # a fresh copy: nothing to say
    fixed = original.replace("return s[n // 2]", "return sorted(values)[len(values) // 2]")
    first.write_text(fixed, encoding="utf-8")  # as if the fix had been written back
    again, kept = prepare_demo_folder(tmp_path)
    assert again.read_text(encoding="utf-8") == original
    assert kept == tmp_path / f"{DEMO_FILE}.1" and kept.read_text(encoding="utf-8") == fixed
    err = capsys.readouterr().err
    assert "was changed since the demo copied it; starting from the original" in err
    assert f"{DEMO_FILE}.1" in err


def test_debug_caches_responses_like_bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A litellm model is put behind the bench's response cache (same file, same keys), so
    reopening a function replays its calls; --no-cache asks the model every time."""
    import argparse

    from utdebug.agents.cache import CachedModel
    from utdebug.agents.choice import resolve_choice
    from utdebug.debug_cmd import _model

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    args = argparse.Namespace(model="openai/gpt-4o-mini", cache_dir=tmp_path, no_cache=False)
    choice = resolve_choice(args.model)
    model = _model(choice, args)
    assert isinstance(model, CachedModel)
    assert (tmp_path / "responses.sqlite").exists()
    args.no_cache = True
    assert not isinstance(_model(choice, args), CachedModel)


def test_a_target_tested_with_programs_runs_as_its_module(tmp_path: Path) -> None:
    from utdebug.debug_cmd import Prepared, loading
    from utdebug.engine import Settings
    from utdebug.workspace import load_function

    pkg = tmp_path / "shop"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .cart import Cart\n", encoding="utf-8")
    cart = pkg / "cart.py"
    cart.write_text("class Cart:\n    def total(self):\n        return 0\n", encoding="utf-8")
    loose = tmp_path / "calc.py"
    loose.write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    method = load_function(cart, "Cart.total")
    how = loading(Prepared(method.to_task(), None, method, Settings()))
    ctx = how.context
    assert ctx is not None
    root = str(tmp_path.resolve())
    assert (ctx.name, ctx.package, ctx.path[0], ctx.cwd, ctx.import_package) == (
        "shop.cart",
        "shop",
        root,
        root,
        True,
    )
    assert how.mounts[0] == root  # the project folder is bound into the sandbox
    function = load_function(loose, "add")
    plain = loading(Prepared(function.to_task(), None, function, Settings())).context
    assert (plain.name, plain.package, plain.import_package) == ("calc", None, False)


def test_demo_without_dir_uses_one_folder_so_resume_finds_its_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each demo run copied the example into a new /tmp/utdebug-demo-XXXX, so --resume (and the
    same command again) never found the session: now every run without --dir uses one folder
    in the cache."""
    import json

    from utdebug import debug_cmd

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(debug_cmd, "no_terminal", lambda: None)
    opened: list[Any] = []

    def fake_open(args: Any, prep: Any, **kw: Any) -> int:
        opened.append(prep)
        path = debug_cmd.session_file(prep, args)
        state, _ = debug_cmd._saved(path, prep, args)  # what --resume takes back
        if state is None:  # the first run saves a session as the app would
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"given": prep.task.code}), encoding="utf-8")
        return 0

    monkeypatch.setattr(debug_cmd, "_open", fake_open)
    assert main(["demo"]) == 0
    assert main(["demo", "--resume"]) == 0  # exited 2 before: no saved session of its folder
    first, second = (p.loaded.path.resolve() for p in opened)
    assert first == second == (debug_cmd.default_demo_dir() / DEMO_FILE).resolve()
    assert str(first).startswith(os.environ["UTDEBUG_CACHE_DIR"])
    capsys.readouterr()


def test_a_demo_after_its_fix_was_written_back_starts_a_new_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """After ``w`` wrote the fix into the demo's file, the next demo starts from the original
    again: the saved session (which ended in that fix) is not taken back, and nothing says it
    is (it showed the fixed code as finished while the file was the buggy original)."""
    import json

    from utdebug import debug_cmd

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(debug_cmd, "no_terminal", lambda: None)
    taken: list[Any] = []

    def fake_open(args: Any, prep: Any, **kw: Any) -> int:
        path = debug_cmd.session_file(prep, args)
        state, said = debug_cmd._saved(path, prep, args)
        taken.append(state)
        if said:
            print(f"utdebug demo: {said}", file=sys.stderr)
        path.parent.mkdir(parents=True, exist_ok=True)  # saved as the app would
        path.write_text(json.dumps({"given": prep.task.code, "code": "fixed"}), encoding="utf-8")
        return 0

    monkeypatch.setattr(debug_cmd, "_open", fake_open)
    assert main(["demo"]) == 0
    demo_file = debug_cmd.default_demo_dir() / DEMO_FILE
    demo_file.write_text(demo_file.read_text(encoding="utf-8") + "\n# fixed\n", "utf-8")  # w
    capsys.readouterr()
    assert main(["demo"]) == 0
    err = capsys.readouterr().err
    assert taken == [None, None], taken  # the second run takes nothing back
    assert "with a new session" in err and "taking back" not in err, err
    assert main(["demo"]) == 0  # the file is the original again: its session is taken back
    assert taken[-1] is not None and "taking back" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--model", "nosuchmodel"], "unknown model 'nosuchmodel'"),
        (["--model", "nosuchprovider/x"], "unknown provider 'nosuchprovider'"),
        (["--synth-inputs", "-1"], "--synth-inputs must be 0 or more"),
    ],
    ids=["model", "provider", "synth-inputs"],
)
def test_debug_refuses_a_bad_model_or_count_before_the_app_opens(
    source: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    said: str,
) -> None:
    """As ``check`` and ``bench`` do: exit 2 with one line, and the app never drawn (it drew
    its first screen, then exited 2 behind it)."""
    from utdebug import debug_cmd

    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("LITELLM_OFFLINE_MODE", "true")
    opened: list[Any] = []
    monkeypatch.setattr(debug_cmd, "_open", lambda *a, **k: opened.append(a) or 0)
    assert main(["debug", f"{source}::add", *extra]) == 2
    assert opened == []
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("utdebug debug: ") and said in err[0], err


def test_debug_opens_at_once_for_a_model_litellm_knows(
    source: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model litellm's price list names is checked behind the first screen (no litellm
    import before it)."""
    import sys as _sys

    from utdebug import debug_cmd

    if "litellm" in _sys.modules:
        monkeypatch.delitem(_sys.modules, "litellm")
    opened: list[Any] = []
    monkeypatch.setattr(debug_cmd, "_open", lambda *a, **k: opened.append(a) or 0)
    for model in ("gpt-4o-mini", "openai/some-local-model"):
        assert main(["debug", f"{source}::add", "--model", model]) == 0
    assert len(opened) == 2 and "litellm" not in _sys.modules


def test_debug_without_a_model_opens_the_app_without_one(
    source: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No model chosen was exit 2 ("no model chosen"); now the app opens without a model and
    synthesises inputs (tests/test_tui_synth.py drives it)."""
    from utdebug import debug_cmd

    monkeypatch.delenv("UTDEBUG_MODEL", raising=False)
    monkeypatch.setenv("UTDEBUG_CONFIG", str(source.parent / "none.toml"))
    (source.parent / "none.toml").write_text("", encoding="utf-8")
    monkeypatch.chdir(source.parent)
    opened: list[Any] = []
    monkeypatch.setattr(debug_cmd, "_open", lambda args, prep, **kw: opened.append(prep) or 0)
    for argv in ([f"{source}::add"], [f"{source}::add", "--model", "none"]):
        assert run(capsys, *argv) == (0, "")
    assert [(p.model.chosen, p.ready) for p in opened] == [(False, None)] * 2
