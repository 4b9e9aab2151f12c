"""The project's own static checks (ruff, mypy --strict) run as part of the test suite."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    exe = Path(sys.executable).parent / name
    found = str(exe) if exe.exists() else shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[dev]')")
    return found


def test_ruff_lint_and_format() -> None:
    ruff = _tool("ruff")
    lint = subprocess.run(
        [ruff, "check", "--no-cache", "."], cwd=REPO, capture_output=True, text=True
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = subprocess.run(
        [ruff, "format", "--check", "--no-cache", "."], cwd=REPO, capture_output=True, text=True
    )
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


def test_mypy_strict() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
