"""Programs run as modules of a real project: ModuleContext and read-only mounts.

A copy of a small package is bound read-only into the sandbox; the program is one of its
modules, so absolute and relative imports of its helpers, ``__file__``-relative data files and
``dataclasses`` work, while every write into the project fails and the host copy is untouched.
Both sandbox modes (bubblewrap, and the root-only fallback) are covered where they exist.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from testkit.sandbox import FAST, make_sandbox

from utdebug.sandbox import ModuleContext, Sandbox, SandboxConfig, SandboxError, Status

MOD = """
import json
from dataclasses import dataclass
from pathlib import Path

from . import helpers
from shop.helpers import TAX

DATA = json.loads((Path(__file__).parent / "prices.json").read_text())


@dataclass
class Line:
    item: str
    qty: int


def total(item, qty):
    return helpers.round2(DATA[item] * Line(item, qty).qty * (1 + TAX))


def where():
    return [__name__, __package__, __file__, Path.cwd().as_posix()]


def scribble(name):
    try:
        Path(__file__).with_name(name).write_text("x")
    except OSError as e:
        return type(e).__name__
    return "wrote"
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    pkg = root / "shop"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text("TAX = 0.5\n\ndef round2(x):\n    return round(x, 2)\n")
    (pkg / "prices.json").write_text('{"pen": 2.0}')
    (pkg / "cart.py").write_text(MOD)
    for p in [root, pkg]:
        p.chmod(0o755)
    return root


def context(root: Path) -> ModuleContext:
    return ModuleContext(
        name="shop.cart",
        file=str(root / "shop" / "cart.py"),
        package="shop",
        path=(str(root),),
        cwd=str(root),
    )


@pytest.mark.parametrize("mode", ["bwrap", "root"])
def test_a_module_runs_with_its_package_read_only(mode: str, project: Path) -> None:
    code = (project / "shop" / "cart.py").read_text()
    sb = make_sandbox(mode, mounts=(str(project),))
    try:
        ctx = context(project)
        res = sb.run(code, "total", [["pen", 3]], FAST, ctx)
        assert res.outcomes[0].status is Status.OK, res
        assert res.outcomes[0].value == 9.0
        where = sb.run(code, "where", [[]], FAST, ctx).outcomes[0]
        assert where.value == ["shop.cart", "shop", str(project / "shop" / "cart.py"), str(project)]
        wrote = sb.run(code, "scribble", [["new.txt"], ["helpers.py"]], FAST, ctx).outcomes
        # EROFS (a read-only bind) or EACCES (a sandbox uid): never written
        assert all(o.value in {"OSError", "PermissionError"} for o in wrote), wrote
    finally:
        sb.close()
    assert not (project / "shop" / "new.txt").exists()
    assert (project / "shop" / "helpers.py").read_text().startswith("TAX = 0.5")


@pytest.mark.parametrize("mode", ["bwrap", "root"])
def test_without_the_mount_the_project_is_invisible(mode: str, project: Path) -> None:
    code = (project / "shop" / "cart.py").read_text()
    sb = make_sandbox(mode)
    try:
        res = sb.run(code, "total", [["pen", 3]], FAST, context(project))
    finally:
        sb.close()
    assert res.load_error is not None  # its folder does not exist in there (cwd, imports)
    assert "FileNotFoundError" in res.load_error or "ModuleNotFoundError" in res.load_error


def test_a_missing_import_is_a_load_error_of_that_program(project: Path) -> None:
    sb = make_sandbox("bwrap", mounts=(str(project),))
    try:
        res = sb.run(
            "import not_installed_pkg_xyz\ndef f():\n    return 1\n",
            "f",
            [[]],
            FAST,
            context(project),
        )
        ok = sb.run("def f():\n    return 1\n", "f", [[]], FAST)
    finally:
        sb.close()
    assert res.outcomes[0].status is Status.ERROR
    assert res.load_error is None or "not_installed_pkg_xyz" in res.load_error
    assert "not_installed_pkg_xyz" in (res.outcomes[0].error or "")
    assert ok.outcomes[0].value == 1  # the next program is unaffected


def test_mounts_must_be_existing_absolute_folders(tmp_path: Path) -> None:
    for bad in ("relative/dir", str(tmp_path / "missing")):
        sb = Sandbox(SandboxConfig(mounts=(bad,), allow_weak=True))
        with pytest.raises(SandboxError, match="mount"):
            sb.start()
    assert os.path.isdir(tmp_path)
