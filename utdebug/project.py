"""How the sandbox loads the user's module: its project folder, module name and mounts.

One way for every front end (``debug``, ``check``, the pytest export): the project folder is
bound read-only into the sandbox and the file runs as the module it is, whatever the target.
:func:`module_location` is the one place a file's dotted module name is worked out.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "PROJECT_MARKERS",
    "ModuleLocation",
    "environment_paths",
    "module_location",
    "package_module",
    "project_folder",
    "sandbox_context",
    "sandbox_mounts",
]


PROJECT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")
"""What marks a project's root folder (:func:`project_folder`)."""


@dataclass(frozen=True, slots=True)
class ModuleLocation:
    """Where a file sits among its packages."""

    name: str
    """Its dotted module name (``shop.cart``; the file's stem outside a package)."""
    package: str | None
    """Its package (``shop``), the module itself for an ``__init__.py``; ``None``: none."""
    import_root: Path
    """The folder that holds its top package (its own folder outside a package)."""


def module_location(source: Path, root: Path | None = None) -> ModuleLocation:
    """The module ``source`` is: its packages are the folders above it with ``__init__.py``,
    up to (not including) ``root`` when given."""
    source = Path(source)
    parts = [] if source.name == "__init__.py" else [source.stem]
    folder = source.parent
    while (
        folder != root
        and folder.parent != folder
        and (folder / "__init__.py").is_file()
        and folder.name.isidentifier()
    ):
        parts.insert(0, folder.name)
        folder = folder.parent
    if not parts:  # a top-level __init__.py (of the project itself)
        parts = [folder.name or "module"]
    name = ".".join(parts)
    if source.name == "__init__.py":
        package: str | None = name
    else:
        package = name.rpartition(".")[0] or None
    return ModuleLocation(name, package, folder)


def project_folder(source: Path) -> Path:
    """The project a file belongs to, for ``debug``: the nearest folder at or above the one
    that holds its top package with a ``.git``, ``pyproject.toml``, ``setup.py`` or
    ``setup.cfg`` (never the home folder or ``/``, which would bind too much), else that
    folder itself."""
    start = module_location(Path(source).resolve()).import_root
    home = _home()
    for folder in (start, *start.parents):
        if folder == home or folder.parent == folder:
            break
        if any((folder / m).exists() for m in PROJECT_MARKERS):
            return folder
    return start


def _home() -> Path | None:
    try:
        return Path.home().resolve()
    except (RuntimeError, OSError):  # no home folder known
        return None


def environment_paths(exclude: Sequence[Path] = ()) -> list[str]:
    """Folders with the current environment's packages that the interpreter's prefix (always
    visible in the sandbox) does not hold: user site-packages and ``PYTHONPATH`` entries."""
    import site

    from utdebug.sandbox.layers import inside, interpreter_dirs

    cands = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        cands.append(site.getusersitepackages())
    cands += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    covered = [*interpreter_dirs(), "/usr"]
    skip = [str(Path(p).resolve()) for p in exclude]
    out: list[str] = []
    for c in cands:
        real = os.path.realpath(c)
        if not os.path.isabs(c) or not os.path.isdir(real) or real in out:
            continue
        if inside(real, covered + skip):
            continue
        out.append(real)
    return out


def sandbox_mounts(project: Path, env_paths: Sequence[str] = ()) -> tuple[str, ...]:
    """The folders bound read-only into the sandbox: the project and the environment's
    packages outside the interpreter's prefix (:func:`environment_paths`)."""
    return (str(project), *env_paths)


def sandbox_context(
    source: Path, project: Path, *, program: bool, env_paths: Sequence[str] = ()
) -> Any:
    """How the sandbox runs ``source`` (a file of ``project``): as the module it is,
    registered in ``sys.modules`` (dataclasses, ``from __future__ import annotations`` and
    pickling work), with its package (relative imports; a target tested with programs
    imports its package first, as a normal import would, so cycles through ``__init__``
    work), its import root, the project and ``env_paths`` on ``sys.path``, and the project
    as the working folder. The project must be bound into the sandbox
    (:func:`sandbox_mounts`)."""
    from utdebug.sandbox import ModuleContext

    loc = module_location(source, project)
    return ModuleContext(
        name=loc.name,
        file=str(source),
        package=loc.package,
        path=tuple(dict.fromkeys([str(loc.import_root), str(project), *env_paths])),
        cwd=str(project),
        import_package=program,
    )


def package_module(source: Path) -> tuple[Path, str] | None:
    """(the folder that holds the top package, the dotted module name) of a file inside a
    package (its folder has ``__init__.py``) that can be imported by that name; ``None``
    otherwise."""
    if not source.stem.isidentifier():
        return None
    loc = module_location(source)
    if loc.package is None or loc.import_root == source.parent:  # not in a package
        return None
    return loc.import_root, loc.name
