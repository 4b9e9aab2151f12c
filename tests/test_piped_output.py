"""Every command's output to a pipe (a CI log): no line broken inside a sentence or a path.

rich lays a console out at 80 columns when it writes to no terminal; commands print through
:func:`utdebug.cli_common.console`, which has no width limit there. Each test runs a command
with stdout and stderr to pipes, under a long temporary path, and checks that the sentences and
paths it prints are whole on one line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
HARD_FILE = "MBPP+Fix_hard_test.jsonl"


def utdebug(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run(
        [sys.executable, "-m", "utdebug", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**environ, **(env or {})},
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def deep(tmp_path: Path) -> Path:
    """A folder whose path is far longer than 80 columns."""
    folder = tmp_path / ("a-folder-with-a-long-name-" * 4) / "and-another-one-below-it"
    folder.mkdir(parents=True)
    assert len(str(folder)) > 120
    return folder


def whole(text: str, *pieces: str) -> None:
    """Each piece is on one line of ``text``."""
    lines = text.splitlines()
    for piece in pieces:
        assert any(piece in line for line in lines), f"{piece!r} is not on one line of:\n{text}"


def test_models_keeps_the_config_path_whole(deep: Path) -> None:
    config = deep / "config.toml"
    config.write_text(
        '[models.local]\nmodel = "openai/local"\napi_base = "http://127.0.0.1:9/v1"\n',
        encoding="utf-8",
    )
    r = utdebug("models", env={"UTDEBUG_CONFIG": str(config)})
    whole(r.stdout, f"[models.local] in {config}", "http://127.0.0.1:9/v1", "(simulated model)")
    whole(r.stdout, "no model chosen: pass --model, set UTDEBUG_MODEL or a config default")


def test_doctor_keeps_each_layers_detail_on_one_line() -> None:
    as_json = utdebug("doctor", "--json")
    if as_json.returncode == 3 and not as_json.stdout:
        pytest.skip(f"the sandbox cannot start here: {as_json.stderr.strip()[-200:]}")
    details = [layer["detail"] for layer in json.loads(as_json.stdout)["layers"].values()]
    table = utdebug("doctor")
    assert any(len(d) > 60 for d in details)  # the cells that 80 columns wrapped
    whole(table.stdout, *details)


def test_bench_keeps_its_lines_whole(deep: Path) -> None:
    data = Path(os.environ.get("UTDEBUG_DATA_DIR") or REPO.parent / "shared" / "datasets")
    if not (data / HARD_FILE).is_file():
        pytest.skip(f"{HARD_FILE} is not in {data}")
    out = deep / "bench"
    r = utdebug(
        "bench", "--split", "hard", "--limit", "1", "--out", str(out), "--data-dir", str(data)
    )
    if r.returncode == 3:
        pytest.skip(f"the sandbox cannot start here: {r.stderr.strip()[-200:]}")
    assert r.returncode == 0, r.stderr
    whole(r.stdout, f"hard: samples and summary in {out}")
    sandbox = next(line for line in r.stderr.splitlines() if line.startswith("sandbox: "))
    assert len(sandbox) > 80 and sandbox.rstrip().endswith("uid_drop"), r.stderr


def test_debug_and_demo_say_what_they_need_on_one_line(deep: Path) -> None:
    module = deep / "m.py"
    module.write_text("def f(x):\n    return x\n", encoding="utf-8")
    r = utdebug("debug", f"{module}::nosuch")
    whole(r.stderr, f"utdebug debug: no function 'nosuch' in {module} (functions that can be")
    r = utdebug("debug", f"{module}::f")
    whole(r.stderr, "the interactive app needs a terminal (stdin is not a terminal); for runs")
    r = utdebug("demo")
    whole(r.stderr, "utdebug demo: the interactive app needs a terminal (stdin is not a terminal)")


def test_train_says_what_is_wrong_on_one_line(deep: Path) -> None:
    missing = deep / "no-data-here"
    r = utdebug("train", "data", "--source", "mbpp+", "--data-dir", str(missing), "--model", "sim")
    assert r.returncode == 2
    whole(r.stderr, f"--data-dir {missing} does not exist: name the folder that holds the dataset")
