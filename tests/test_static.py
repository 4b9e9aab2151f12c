"""The project's own static checks (ruff, mypy --strict) run as part of the test suite."""

from __future__ import annotations

import ast
import os
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


def test_import_contracts() -> None:
    """The layer contracts in pyproject.toml ([tool.importlinter]) hold: nothing imports upward,
    the front ends never import each other, only the model layer imports litellm and only the
    app imports Textual."""
    lint = _tool("lint-imports")
    r = subprocess.run(
        [lint, "--no-cache"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]
    assert "0 broken" in r.stdout, r.stdout[-2000:]


def test_shipped_code_never_imports_the_tests() -> None:
    """Test helpers live under tests/; nothing that ships (utdebug/ and the folders it links,
    benchmarks/perf included) imports them."""
    offenders = []
    for folder in ("utdebug", "agents", "sandbox", "benchmarks", "scripts"):
        for path in sorted((REPO / folder).rglob("*.py")):
            if ".venv" in path.parts:
                continue
            tree = ast.parse(path.read_text(), filename=str(path))
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    names = [node.module or ""]
                offenders += [
                    f"{path.relative_to(REPO)}:{node.lineno} {name}"
                    for name in names
                    if name == "tests" or name.startswith("tests.")
                ]
    assert offenders == [], offenders


def test_every_module_has_a_layer() -> None:
    """Each top-level module and package of utdebug is named in the layers contract, so a new
    module cannot slip past the contracts by being left out of them."""
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c for c in config["contracts"] if c["type"] == "layers"]
    named = {part.strip() for layer in layers["layers"] for part in layer.split("|")}
    package = REPO / "utdebug"
    present = {
        f"utdebug.{p.stem}"
        for p in package.iterdir()
        if (p.suffix == ".py" and p.stem not in ("__init__", "__main__"))
        or (p.is_dir() and (p / "__init__.py").exists())
    }
    assert present - named == set(), "not in any layer of [tool.importlinter]"
    assert named - present == set(), "a layer names a module that does not exist"


def test_no_test_module_imports_another() -> None:
    """What tests share lives in tests/testkit/ (fixtures in tests/conftest.py): no file under
    tests/ imports a test module or conftest, at its top or inside a function. A test module
    imported by another is imported twice (as ``tests.test_x`` and as ``test_x``), its fixtures
    leak into the importer, and the two can no longer change apart."""
    tests = REPO / "tests"
    modules = {p.stem for p in tests.glob("test_*.py")} | {"conftest"}
    offenders = []
    for path in sorted(tests.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module] if node.module else [a.name for a in node.names]
            for name in names:
                parts = name.split(".")
                first = parts[1] if parts[0] == "tests" and len(parts) > 1 else parts[0]
                if first in modules:
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno} imports {name}")
    assert offenders == [], offenders


def test_the_slow_marker_marks_tests_that_still_run_by_default() -> None:
    """Long tests carry the ``slow`` marker, so that ``-m "not slow"`` leaves them out; the
    README's test command (what CI runs) deselects nothing by default."""
    import tomllib

    options = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "slow" not in options["addopts"], options["addopts"]
    marked = [
        path.name
        for path in sorted((REPO / "tests").glob("test_*.py"))
        if "@pytest.mark.slow" in path.read_text()
    ]
    assert marked != [], "no test is marked slow"
