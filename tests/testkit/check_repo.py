"""``utdebug check`` run in-process on a test's repository (testkit.gitrepos), and sources."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import git

from utdebug.check.options import CheckOptions
from utdebug.check.report import CheckReport
from utdebug.check.review import run_check
from utdebug.sandbox import SandboxConfig

CLAMP = """def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x
"""
"""An unannotated clamp (kinds from its body alone)."""


def check(repo: git.Repo, tmp_path: Path, model: Any = None, **kw: Any) -> CheckReport:
    opts: dict[str, Any] = {
        "cwd": Path(repo.working_tree_dir or "."),
        "cache_dir": tmp_path / "cache",
        "timeout": 1.0,
        "changed": True,
        "synth_inputs": 80,
    }
    return run_check(CheckOptions(**(opts | kw)), model, SandboxConfig())
