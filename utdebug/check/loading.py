"""How ``utdebug check`` loads each version of a changed module: as Python loads it, at one path.

The repository's read-only copies at the checked revision and at the base sit side by side in
the run's folder (:class:`Copies`); a version runs with its copy bound at one fixed folder
(``place``), so ``__file__`` and every path made from it are the same for both versions. The
module is imported by its dotted name (:func:`import_name`: regular packages, a ``src/``
layout, namespace packages without ``__init__.py``), its packages first, its siblings from its
own copy: the program is the file on disk, not its text run under a name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from utdebug.sandbox import ModuleContext

__all__ = ["Copies", "ModuleName", "import_name", "version_context"]

PLACE = "src"
"""The folder of the run's folder where the version being run is bound."""


@dataclass(frozen=True, slots=True)
class Copies:
    """The repository at both revisions, as the sandbox reads it (the first stage's value)."""

    folder: Path
    """The run's folder: the copies and :attr:`place`."""
    head: Path
    """The read-only copy of the checked revision."""
    base: Path | None
    """The read-only copy of the base revision (``None``: there is no base)."""
    base_sha: str | None
    head_revision: str
    """The checked revision: a sha, or ``working tree`` (what a function-level accept names)."""

    @property
    def place(self) -> Path:
        """Where a version is loaded from: an empty folder each run binds a copy at (or, when
        the sandbox cannot bind per child, a link to the copy)."""
        return self.folder / PLACE

    def root(self, base: bool) -> Path:
        """The copy of one version."""
        if base:
            assert self.base is not None
            return self.base
        return self.head

    def make_place(self) -> None:
        """The empty, read-only folder the copies are bound at."""
        self.place.mkdir(exist_ok=True)
        os.chmod(self.place, 0o555)

    def point_place(self, base: bool) -> None:
        """Without a bind per child: :attr:`place` becomes a link to one version's copy
        (runs are one at a time; ``os.path.realpath`` of a path then names the copy)."""
        link = self.folder / f".{PLACE}-link"
        link.unlink(missing_ok=True)
        link.symlink_to(self.root(base), target_is_directory=True)
        if self.place.is_dir() and not self.place.is_symlink():
            os.chmod(self.place, 0o755)
            self.place.rmdir()
        os.replace(link, self.place)


@dataclass(frozen=True, slots=True)
class ModuleName:
    """How Python imports a file of the repository."""

    name: str
    """The dotted name (``pkg.number``)."""
    package: str | None
    root: str
    """The import root that holds it, relative to the repository (``""``, ``src``)."""


def _roots(copy: Path) -> list[Path]:
    """The folders a project's modules are imported from: ``src`` when there is one, then
    the repository itself."""
    src = copy / "src"
    return [src, copy] if src.is_dir() else [copy]


def import_name(path: str, copy: Path) -> ModuleName | None:
    """The module the file ``path`` (repository-relative) of the copy ``copy`` is, as an
    import finds it: in a regular package (a folder with ``__init__.py``), the package's
    dotted name from the folder above its top package; otherwise the folders up to an import
    root (``src``, else the repository) as namespace packages; ``None`` when no import can
    reach it (a name that is not an identifier)."""
    from utdebug.project import module_location

    source = copy / path
    loc = module_location(source, copy)
    parts = loc.name.split(".")
    if not all(p.isidentifier() for p in parts):
        return None
    top = loc.import_root
    if loc.package is not None:
        return ModuleName(loc.name, loc.package, top.relative_to(copy).as_posix().strip("."))
    for root in _roots(copy):
        try:
            rel = top.relative_to(root)
        except ValueError:
            continue
        if not all(p.isidentifier() for p in rel.parts):
            continue
        prefix = ".".join(rel.parts)
        name = f"{prefix}.{loc.name}" if prefix else loc.name
        return ModuleName(name, prefix or None, root.relative_to(copy).as_posix().strip("."))
    return ModuleName(loc.name, loc.package, top.relative_to(copy).as_posix().strip("."))


def version_context(
    copies: Copies,
    path: str,
    module: ModuleName | None,
    *,
    base: bool,
    bind: bool,
    env_paths: Sequence[str] = (),
) -> ModuleContext:
    """How the sandbox loads one version of the module of ``path``: at :attr:`Copies.place`
    (bound there per child when ``bind``), imported by its name (``module``; ``None``: its
    code runs as the module, the way a file no import reaches is loaded), its import root
    and the repository on ``sys.path``, the repository as the working folder."""
    from utdebug.project import module_location
    from utdebug.sandbox import ModuleContext

    place = copies.place
    file = str(place / path)
    bound = (str(copies.root(base)), str(place)) if bind else None
    if module is None:
        copy = copies.root(base)
        loc = module_location(copy / path, copy)
        roots = [str(place / loc.import_root.relative_to(copy)), str(place)]
        return ModuleContext(
            name=loc.name,
            file=file,
            package=loc.package,
            path=tuple(dict.fromkeys([*roots, *env_paths])),
            cwd=str(place),
            bind=bound,
        )
    root = str(place / module.root) if module.root else str(place)
    return ModuleContext(
        name=module.name,
        file=file,
        package=module.package,
        path=tuple(dict.fromkeys([root, str(place), *env_paths])),
        cwd=str(place),
        imported=True,
        bind=bound,
    )
