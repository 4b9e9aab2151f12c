"""Writing a fix back into the user's file: the diff, a patch file, the atomic write.

:func:`write_back` merges ``new_code`` (normally the session's code in force: ``module_code``
with the debugger's edits; also a bare function or a model reply) into the file's text by
the rules of :mod:`utdebug.agents.edits`, so the rest of the file stays byte for byte. It
refuses when the file changed on disk since loading; the write is atomic and the original is
kept as ``file.py.utdebug.bak`` (``.bak.1``, ... when taken). :func:`function_diff` gives the
diff without writing and :func:`export_patch` writes it to a file.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from utdebug.agents.edits import MergedEdit, merge_edit, take_edit
from utdebug.workspace import LoadedFunction, WorkspaceError, load_text, read_bytes, split_lines

__all__ = [
    "WriteResult",
    "atomic_write",
    "changed_on_disk",
    "export_patch",
    "function_diff",
    "write_back",
]


@dataclass(frozen=True, slots=True)
class WriteResult:
    path: Path
    diff: str
    """Unified diff of the file (``a/`` and ``b/`` labels); empty when nothing changed."""
    backup: Path | None
    """Where the original was kept (``None`` with ``backup=False``)."""
    new_text: str
    loaded: LoadedFunction
    """The function as it is in the file now (use it for a further write_back)."""


_CHANGED = (
    "{path} changed on disk since it was loaded: not overwriting it; load the function "
    "again and redo the fix"
)


def changed_on_disk(loaded: LoadedFunction) -> str | None:
    """Why the fix cannot be written because the file changed since it was loaded (or
    cannot be read), else ``None``: say it before a diff against the old text is shown."""
    try:
        raw = read_bytes(loaded.path)
    except WorkspaceError as e:
        return str(e)
    if hashlib.sha256(raw).hexdigest() != loaded.file_sha256:
        return _CHANGED.format(path=loaded.path)
    return None


def function_diff(loaded: LoadedFunction, new_code: str) -> str:
    """The diff :func:`write_back` would write, computed against the file as loaded."""
    new_text = _replaced(loaded, new_code)
    return _diff(loaded, new_text)


def export_patch(loaded: LoadedFunction, new_code: str, out: Path) -> Path:
    """Write :func:`function_diff` to ``out`` (atomically); returns ``out``."""
    out = Path(out)
    atomic_write(out, function_diff(loaded, new_code).encode("utf-8"))
    return out


def write_back(loaded: LoadedFunction, new_code: str, *, backup: bool = True) -> WriteResult:
    """Write ``new_code`` (the merged module, a function or a reply) into the function's file
    (see the module docstring)."""
    new_text = _replaced(loaded, new_code)
    raw = read_bytes(loaded.path)
    if hashlib.sha256(raw).hexdigest() != loaded.file_sha256:
        raise WorkspaceError(_CHANGED.format(path=loaded.path))
    backup_path = _write_backup(loaded.path, raw) if backup else None
    new_raw = new_text.encode("utf-8")
    atomic_write(loaded.path, new_raw)
    reloaded = load_text(
        loaded.path,
        loaded.qualname,
        new_text,
        hashlib.sha256(new_raw).hexdigest(),
        loaded.task,
    )
    return WriteResult(loaded.path, _diff(loaded, new_text), backup_path, new_text, reloaded)


def _replaced(loaded: LoadedFunction, new_code: str) -> str:
    """The file's text with ``new_code`` merged in (:mod:`utdebug.agents.edits`): a module or
    a function that parses is merged as it is, anything else is read as a reply."""
    base, entry, cls = loaded.file_text, loaded.entry_point, loaded.class_name
    try:
        ast.parse(new_code)
        merged = merge_edit(base, new_code, entry, class_name=cls)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        merged = take_edit(new_code, base, entry, class_name=cls)
    if isinstance(merged, MergedEdit):
        return merged.code
    reason = merged.reason
    if reason.startswith(("the edit does not change", "the edit changes only comments")):
        return base  # nothing to write: an empty diff
    if reason.startswith("the code does not parse"):
        reason = "the new " + reason[len("the ") :]
    raise WorkspaceError(f"cannot write the fix of {loaded.qualname}: {reason}")


def _diff(loaded: LoadedFunction, new_text: str) -> str:
    label = loaded.path.as_posix() if not loaded.path.is_absolute() else loaded.path.name
    out = []
    for line in difflib.unified_diff(
        split_lines(loaded.file_text),
        split_lines(new_text),
        fromfile=f"a/{label}",
        tofile=f"b/{label}",
    ):
        if line.endswith(("\n", "\r")):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _write_backup(path: Path, raw: bytes) -> Path:
    base = path.with_name(path.name + ".utdebug.bak")
    candidates = [base] + [base.with_name(f"{base.name}.{i}") for i in range(1, 10_000)]
    for candidate in candidates:
        try:
            with open(candidate, "xb") as f:
                f.write(raw)
        except FileExistsError:
            continue
        except OSError as exc:
            raise WorkspaceError(
                f"cannot write backup {candidate}: {exc.strerror or exc}"
            ) from None
        return candidate
    raise WorkspaceError(f"too many backups of {path}; remove old {base.name}.* files")


def atomic_write(path: Path, data: bytes) -> None:
    directory = path.parent if str(path.parent) else Path(".")
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise WorkspaceError(f"cannot write in {directory}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
