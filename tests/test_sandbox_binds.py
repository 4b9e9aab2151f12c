"""Loading a module as Python imports it (``ModuleContext.imported``) and binding a version's
folder at one path for a run's children (``ModuleContext.bind``): two versions of a project
load from the same path, with their own siblings."""

from __future__ import annotations

from pathlib import Path

from utdebug.sandbox import ModuleContext, Sandbox, SandboxConfig

INIT = "from .number import apnumber\n"
WORDS = 'NAMES = ("one", "two", "three")\n'


def _read_only(folder: Path) -> None:
    for p in sorted(folder.rglob("*"), reverse=True):
        p.chmod(0o555 if p.is_dir() else 0o444)
    folder.chmod(0o555)


def test_the_sandbox_imports_each_version_at_one_path(tmp_path: Path) -> None:
    """``ModuleContext.imported`` imports the module by its name (its package first), and
    ``bind`` puts a version's folder at one path for a run's children."""
    for version, body in (("base", "x + 1"), ("head", "x + 2")):
        pkg = tmp_path / version / "pkg"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text(INIT)
        (pkg / "number.py").write_text(
            f"import os\nfrom . import words\n\n\ndef apnumber(x):\n    return {body}\n\n\n"
            "def where():\n    return os.path.dirname(__file__)\n"
        )
        (pkg / "words.py").write_text(WORDS)
        _read_only(tmp_path / version)
    place = tmp_path / "src"
    place.mkdir()
    mounts = (str(tmp_path / "base"), str(tmp_path / "head"), str(place))
    with Sandbox(SandboxConfig(mounts=mounts)) as sb:
        seen = []
        for version in ("base", "head"):
            ctx = ModuleContext(
                "pkg.number",
                file=str(place / "pkg" / "number.py"),
                package="pkg",
                path=(str(place),),
                cwd=str(place),
                imported=True,
                bind=(str(tmp_path / version), str(place)),
            )
            value = sb.run("", "apnumber", [(1,)], context=ctx)
            where = sb.run("", "where", [()], context=ctx)
            assert value.load_error is None and where.load_error is None
            seen.append((value.outcomes[0].value, where.outcomes[0].value))
        assert seen == [(2, str(place / "pkg")), (3, str(place / "pkg"))]
        # the file's code run under its name, as before, does not load
        text = (tmp_path / "base" / "pkg" / "number.py").read_text()
        alone = ModuleContext("pkg.number", package="pkg", path=(str(tmp_path / "base"),))
        res = sb.run(text, "apnumber", [(1,)], context=alone)
        assert "cannot import name 'apnumber'" in (res.load_error or "")
