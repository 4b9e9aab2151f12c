"""The fixes of ``utdebug check --fix``: one patch file for the run, and ``--apply``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from utdebug.check.options import CheckError, CheckOptions
from utdebug.check.report import FunctionReport

__all__ = ["Fixes"]


class Fixes:
    """The patches this run's fixes made, in order."""

    def __init__(self, options: CheckOptions, repo_root: Path, say: Callable[[str], None]) -> None:
        self.o = options
        self.repo_root = repo_root
        self.say = say
        self.patches: list[str] = []

    def take(self, rep: FunctionReport, loaded: Any, fixed_code: str | None) -> FunctionReport:
        """Keep ``rep``'s patch; with ``--apply`` also write the fix into the working tree
        (not when the file changed while it was checked)."""
        if rep.fix is None or rep.fix.patch is None:
            return rep
        self.patches.append(rep.fix.patch)
        if not self.o.apply or fixed_code is None:
            return rep
        from utdebug.workspace import WorkspaceError, load_function
        from utdebug.writeback import write_back

        target = self.repo_root / rep.path
        try:
            now = load_function(target, rep.qualname)
            if now.source != loaded.source:
                raise WorkspaceError(f"{rep.path} changed while it was checked: not applying")
            write_back(now, fixed_code, backup=False)
        except WorkspaceError as e:
            return replace(rep, message=f"{rep.message}; fix not applied: {e}")
        return replace(rep, fix=replace(rep.fix, applied=True), message=rep.message + "; applied")

    def write(self) -> None:
        """The patch of this run's fixes; with no fix no file is written, and a patch file
        left at that path by an earlier run is removed (it is not this run's result)."""
        assert self.o.patch is not None
        path = self.o.patch if self.o.patch.is_absolute() else self.o.cwd / self.o.patch
        if not self.patches:
            try:
                stale = path.is_file()
                path.unlink(missing_ok=True)
            except OSError as e:
                raise CheckError(f"cannot remove the old patch file {path}: {e}") from None
            self.say(
                f"no fix found: no patch written; removed {path}, left by an earlier run"
                if stale
                else f"no fix found: no patch written ({path} does not exist)"
            )
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(self.patches), encoding="utf-8")
        except OSError as e:
            raise CheckError(f"cannot write the patch file {path}: {e}") from None
        self.say(f"patch with {len(self.patches)} fix(es) written to {path}")
