"""The git side of ``utdebug check``: which functions a change touches, and snapshots.

- :func:`open_repository` finds the working tree that holds a path; :func:`resolve` turns a
  revision (``main``, ``origin/main``, ``HEAD~2``, a sha) into a commit sha.
- :func:`changed_functions` diffs a base commit (by default the merge base of the base and
  the checked revision: what a pull request changed since it branched) against a commit or
  the working tree (staged, unstaged and untracked-but-not-ignored files), parses every
  changed ``.py`` file with :mod:`ast` and reports the functions and methods whose lines
  (decorators included) the change touches, and the module-level functions that read a
  module-level name the change rebinds (:mod:`utdebug.check.definitions`).
- :func:`snapshot` copies the working tree (tracked and untracked-but-not-ignored files) or a
  commit into a read-only folder; :func:`remove_snapshot` deletes one.
- :func:`read_text` reads a file at a revision; :func:`relative_path` turns a path given on
  the command line into a repository-relative one.

Every repository problem the user must fix raises :class:`GitError`, whose text is the whole
message (``utdebug check`` exits with code 2).
"""

from __future__ import annotations

import ast
import contextlib
import os
import re
import shutil
import stat
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from utdebug.check.definitions import ChangedFunction, changed_definitions

if TYPE_CHECKING:
    import git

__all__ = [
    "ChangeSet",
    "FileProblem",
    "GitError",
    "Repository",
    "SourceProblem",
    "changed_functions",
    "open_repository",
    "parse_source",
    "read_text",
    "relative_path",
    "remove_snapshot",
    "resolve",
    "snapshot",
]

GIT_MISSING = (
    "git is not installed (or not on PATH): install git, or set GIT_PYTHON_GIT_EXECUTABLE "
    "to the git executable"
)

_PY_PATHSPEC = ":(glob)**/*.py"
_HUNK_RE = re.compile(rb"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_GITLINK = 0o160000
_SYMLINK = 0o120000


class GitError(Exception):
    """A repository problem the user must fix; ``str(e)`` is the whole message (exit code 2)."""


@dataclass(frozen=True, slots=True)
class Repository:
    """A git working tree."""

    root: Path
    """Absolute, resolved working-tree root."""
    repo: git.Repo


@dataclass(frozen=True, slots=True)
class FileProblem:
    """A changed file whose functions could not be found."""

    path: str
    message: str
    line: int = 0
    """Where the problem is (a syntax error's line), 0 when nowhere in particular."""


@dataclass(frozen=True, slots=True)
class ChangeSet:
    """What :func:`changed_functions` found."""

    base: str
    """Sha of the commit compared against (the merge base when it was used)."""
    base_ref: str
    """The base as the user gave it."""
    revision: str | None
    """Sha of the checked commit, or ``None`` for the working tree."""
    files: tuple[str, ...]
    """Changed ``.py`` files that exist in the checked revision, sorted."""
    functions: tuple[ChangedFunction, ...]
    """Ordered by path, then line."""
    problems: tuple[FileProblem, ...]


# --- the repository -----------------------------------------------------------------------


def open_repository(path: Path) -> Repository:
    """The working tree that holds ``path`` (a file or folder; parent folders are searched)."""
    try:
        import git
    except ImportError as exc:
        if exc.name == "git":
            raise GitError("GitPython is not installed: pip install 'gitpython>=3.1.40'") from None
        raise GitError(GIT_MISSING) from None
    path = Path(path)
    start = path if path.is_dir() else path.parent
    if not start.exists():
        raise GitError(f"no such file or folder: {path}")
    try:
        repo = git.Repo(start, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise GitError(
            f"not a git repository: {path} (run utdebug check inside a git working tree)"
        ) from None
    if repo.bare or repo.working_tree_dir is None:
        repo.close()
        raise GitError(
            f"{path} is in a bare git repository (no working tree): run utdebug check in a "
            f"clone with a working tree"
        )
    root = Path(repo.working_tree_dir).resolve()
    try:
        Path(start).resolve().relative_to(root / ".git")
    except ValueError:
        pass
    else:
        repo.close()
        raise GitError(
            f"{path} is inside the .git folder: run utdebug check inside the working tree"
        )
    return Repository(root=root, repo=repo)


def _run(repo: Repository, *args: str, ok: Iterable[int] = (0,)) -> tuple[int, bytes]:
    """Run ``git ARGS`` in the working tree; a status outside ``ok`` raises :class:`GitError`."""
    import git

    command = [git.Git.GIT_PYTHON_GIT_EXECUTABLE or "git", "-c", "core.quotepath=off", *args]
    try:
        status, out, err = repo.repo.git.execute(
            command,
            with_extended_output=True,
            stdout_as_string=False,
            with_exceptions=False,
            strip_newline_in_stdout=False,
        )
    except git.GitCommandNotFound:
        raise GitError(GIT_MISSING) from None
    if status not in tuple(ok):
        detail = err.strip() or f"exit status {status}"
        raise GitError(f"git {args[0]} failed in {repo.root}: {detail}")
    return status, out


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _has_commits(repo: Repository) -> bool:
    _, out = _run(repo, "rev-list", "--all", "--max-count=1")
    return bool(out.strip())


def resolve(repo: Repository, ref: str) -> str:
    """The full sha of the commit ``ref`` names."""
    message = f"unknown revision '{ref}' in {repo.root}"
    if not ref or ref.startswith("-") or "\0" in ref:
        raise GitError(message)
    status, out = _run(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", ok=(0, 1))
    if status != 0 or not out.strip():
        if not _has_commits(repo):
            raise GitError(f"{message}: the repository has no commits yet (commit something first)")
        raise GitError(message)
    return _decode(out).strip()


def _merge_base(repo: Repository, base: str, head: str, base_ref: str, head_ref: str) -> str:
    status, out = _run(repo, "merge-base", base, head, ok=(0, 1))
    if status != 0 or not out.strip():
        message = (
            f"'{base_ref}' and {head_ref} have no common ancestor in {repo.root}: the histories "
            f"are unrelated"
        )
        shallow = _run(repo, "rev-parse", "--is-shallow-repository")[1]
        if _decode(shallow).strip() == "true":
            message += (
                ", or this shallow clone lacks the history (fetch it: git fetch --unshallow, "
                "or fetch-depth: 0 with actions/checkout)"
            )
        raise GitError(message + "; or compare against the base itself (no merge base)")
    return _decode(out).strip()


# --- reading files ------------------------------------------------------------------------


def _read_bytes(repo: Repository, path: str, rev: str | None) -> bytes:
    if rev is None:
        from utdebug.workspace import read_bytes

        return read_bytes(
            repo.root / path,
            name=path,
            missing=f"no file {path} in the working tree {repo.root}",
            kind="a file",
            error=GitError,
        )
    import git

    sha = resolve(repo, rev)
    try:
        item = repo.repo.commit(sha).tree / path
    except KeyError:
        raise GitError(f"no file {path} in revision '{rev}'") from None
    if not isinstance(item, git.Blob):
        raise GitError(f"{path} is not a file in revision '{rev}'")
    data: bytes = item.data_stream.read()
    return data


def read_text(repo: Repository, path: str, rev: str | None = None) -> str:
    """The text of the file ``path`` (repository-relative) at ``rev`` (``None``: working tree)."""
    raw = _read_bytes(repo, path, rev)
    try:
        return _utf8(raw)
    except UnicodeDecodeError as exc:
        raise GitError(f"{path} is not UTF-8 text (invalid byte at position {exc.start})") from None


def _utf8(raw: bytes) -> str:
    return raw.decode("utf-8-sig")


def relative_path(repo: Repository, path: Path) -> str:
    """``path`` (relative to the current folder, or absolute) relative to the working tree."""
    given = Path(path)
    absolute = Path(os.path.abspath(given))
    candidates = [absolute]
    with contextlib.suppress(OSError):
        candidates.append(absolute.parent.resolve() / absolute.name)
    for candidate in candidates:
        try:
            relative = candidate.relative_to(repo.root)
        except ValueError:
            continue
        if relative.parts[:1] == (".git",):
            raise GitError(f"{given} is inside the .git folder of {repo.root}")
        return relative.as_posix()
    raise GitError(f"{given} is outside the git working tree {repo.root}")


# --- the diff -----------------------------------------------------------------------------


def _hunks(patch: bytes) -> list[tuple[int, int]]:
    """New-side changed line ranges in ``git diff --unified=0`` output of one file (its file
    headers are not read: the file is known from the pathspec that asked for it)."""
    ranges: list[tuple[int, int]] = []
    for line in patch.split(b"\n"):
        match = _HUNK_RE.match(line)
        if match is None:
            continue
        start = int(match.group(1))
        count = 1 if match.group(2) is None else int(match.group(2))
        # A pure deletion (count 0) after line `start`: mark both sides of the cut.
        last = start + 1 if count == 0 else start + count - 1
        ranges.append((max(start, 1), last))
    return ranges


@dataclass(frozen=True, slots=True)
class _Changed:
    """A changed regular file of ``git diff --raw -z``: its new path, and the old one of a
    rename or copy (raw bytes: never quoted or re-encoded)."""

    path: bytes
    old: bytes | None = None


def _changed_files(raw: bytes) -> list[_Changed]:
    """The changed regular files in ``git diff --raw -z`` output (NUL-separated fields, so
    every name git can store comes out as it is)."""
    fields = raw.split(b"\0")
    files: list[_Changed] = []
    i = 0
    while i < len(fields):
        head = fields[i]
        if not head.startswith(b":"):
            i += 1
            continue
        parts = head[1:].split()
        new_mode, status = int(parts[1], 8), parts[4][:1]
        old: bytes | None = None
        if status in (b"R", b"C"):
            old, path, i = fields[i + 1], fields[i + 2], i + 3
        else:
            path, i = fields[i + 1], i + 2
        kind = new_mode & 0o170000
        if status == b"D" or kind in (_GITLINK, _SYMLINK) or new_mode == 0:
            continue
        files.append(_Changed(path, old))
    return files


def _literal(path: bytes) -> str:
    """A pathspec that matches exactly ``path`` (no glob, no other magic)."""
    return ":(literal)" + _decode(path)


def _normalize_prefix(prefix: str) -> str:
    prefix = prefix.replace(os.sep, "/") if os.sep != "/" else prefix
    while prefix.startswith("./"):
        prefix = prefix[2:]
    return prefix.rstrip("/")


def _selected(path: str, prefixes: Sequence[str]) -> bool:
    if not path.endswith(".py"):
        return False
    if not prefixes or any(p in ("", ".") for p in prefixes):
        return True
    return any(path == p or path.startswith(p + "/") for p in prefixes)


def changed_functions(
    repo: Repository,
    base: str = "HEAD",
    *,
    rev: str | None = None,
    use_merge_base: bool = True,
    paths: Sequence[str] = (),
) -> ChangeSet:
    """The functions that the change from ``base`` to ``rev`` (``None``: working tree) touches."""
    base_sha = resolve(repo, base)
    revision = resolve(repo, rev) if rev is not None else None
    if use_merge_base:
        head = revision if revision is not None else resolve(repo, "HEAD")
        head_ref = f"'{rev}'" if rev is not None else "HEAD"
        base_sha = _merge_base(repo, base_sha, head, base, head_ref)
    sides = [base_sha] if revision is None else [base_sha, revision]
    options = ["--no-color", "--no-ext-diff", "--no-textconv", "-M"]
    _, raw = _run(repo, "diff", "--raw", "-z", *options, *sides, "--", _PY_PATHSPEC)
    prefixes = [_normalize_prefix(p) for p in paths]
    changed: dict[str, list[tuple[int, int]] | None] = {}
    for item in _changed_files(raw):
        path = _decode(item.path)
        if not _selected(path, prefixes):
            continue
        # one file (and a rename's old name) by literal pathspec: its hunks, whatever its name
        names = [_literal(item.path)] + ([_literal(item.old)] if item.old is not None else [])
        _, patch = _run(repo, "diff", "--unified=0", "--text", *options, *sides, "--", *names)
        changed[path] = _hunks(patch)
    if revision is None:
        _, others = _run(
            repo, "ls-files", "-z", "--others", "--exclude-standard", "--", _PY_PATHSPEC
        )
        for name in filter(None, others.split(b"\0")):
            path = _decode(name)
            if _selected(path, prefixes) and not (repo.root / path).is_symlink():
                changed[path] = None  # a new file: every function counts
    functions: list[ChangedFunction] = []
    problems: list[FileProblem] = []
    for path in sorted(changed):
        lines = changed[path]
        try:
            source = _source(repo, path, revision)
            tree = parse_source(source, path)
        except _Problem as problem:
            line = problem.line if isinstance(problem, SourceProblem) else 0
            problems.append(FileProblem(path, str(problem), line))
            continue
        functions += changed_definitions(tree, path, lines, _base_tree(repo, path, base_sha))
    return ChangeSet(
        base=base_sha,
        base_ref=base,
        revision=revision,
        files=tuple(sorted(changed)),
        functions=tuple(functions),
        problems=tuple(problems),
    )


class _Problem(Exception):
    pass


def _base_tree(repo: Repository, path: str, base: str) -> ast.Module | None:
    """The module at the base (``None``: no such file there, or it does not parse)."""
    try:
        return ast.parse(_source(repo, path, base))
    except (_Problem, SyntaxError, ValueError):
        return None


def _source(repo: Repository, path: str, revision: str | None) -> str:
    try:
        raw = _read_bytes(repo, path, revision)
    except GitError as exc:
        raise _Problem(str(exc)) from None
    try:
        return _utf8(raw)
    except UnicodeDecodeError as exc:
        raise _Problem(f"{path} is not UTF-8 text (invalid byte at position {exc.start})") from None


class SourceProblem(_Problem):
    """A file that does not parse: the message names the line and column; ``line`` is the
    syntax error's line (0 when Python gave none)."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


def parse_source(source: str, path: str) -> ast.Module:
    """``source`` (of the file ``path``) parsed; :class:`SourceProblem` when it does not."""
    from utdebug.workspace import WorkspaceError, parse_module

    try:
        return parse_module(source, path)
    except WorkspaceError as exc:
        try:
            ast.parse(source)
        except SyntaxError as syntax:
            raise SourceProblem(str(exc), syntax.lineno or 0) from None
        except (ValueError, RecursionError, MemoryError):
            pass
        raise SourceProblem(str(exc), 0) from None


# --- snapshots ----------------------------------------------------------------------------


def snapshot(repo: Repository, dest: Path, *, rev: str | None = None) -> Path:
    """A read-only copy of the working tree (``rev=None``) or of commit ``rev`` in ``dest``.

    ``dest`` is created when missing and must be empty; the returned folder is ``dest``
    (absolute): ``snapshot(...) / "pkg/mod.py"`` is the file. Delete it with
    :func:`remove_snapshot`.
    """
    dest = Path(dest).absolute()
    try:
        dest.mkdir(parents=True, exist_ok=True)
        if any(dest.iterdir()):
            raise GitError(f"the snapshot folder is not empty: {dest}")
    except OSError as exc:
        raise GitError(f"cannot create the snapshot folder {dest}: {exc.strerror or exc}") from None
    try:
        if rev is None:
            _copy_working_tree(repo, dest)
        else:
            _extract_commit(repo, resolve(repo, rev), dest)
        _make_read_only(dest)
    except BaseException:
        _make_writable(dest)
        for child in dest.iterdir():
            if child.is_dir() and not child.is_symlink():
                _rmtree(child)
            else:
                child.unlink()
        raise
    return dest


def _copy_working_tree(repo: Repository, dest: Path) -> None:
    _, out = _run(repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    made: set[str] = set()
    for name in dict.fromkeys(filter(None, out.split(b"\0"))):  # unmerged paths repeat
        path = _decode(name)
        source = repo.root / path
        try:
            info = os.lstat(source)
        except (FileNotFoundError, NotADirectoryError):
            continue  # deleted in the working tree
        if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
            continue  # a submodule (gitlink) or a nested repository
        target = dest / path
        parent = os.path.dirname(path)
        if parent and parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(parent)
        if stat.S_ISLNK(info.st_mode):
            os.symlink(os.readlink(source), target)
        else:
            shutil.copyfile(source, target, follow_symlinks=False)
            os.chmod(target, 0o555 if info.st_mode & 0o111 else 0o444)


def _extract_commit(repo: Repository, sha: str, dest: Path) -> None:
    import git

    with tempfile.TemporaryFile() as archive:
        try:
            repo.repo.archive(archive, sha, format="tar")
        except git.GitCommandNotFound:
            raise GitError(GIT_MISSING) from None
        except git.GitCommandError as exc:
            raise GitError(f"git archive failed in {repo.root}: {exc.stderr.strip()}") from None
        archive.seek(0)
        with tarfile.open(fileobj=archive, mode="r:") as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(dest, filter=_data_filter)
            else:  # pragma: no cover - Python < 3.11.4
                tar.extractall(dest, members=_safe_members(tar, dest))


def _data_filter(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """:func:`tarfile.data_filter`, skipping (not failing on) links that leave the snapshot."""
    try:
        return tarfile.data_filter(member, dest)
    except tarfile.FilterError:
        return None


def _safe_members(tar: tarfile.TarFile, dest: Path) -> list[tarfile.TarInfo]:  # pragma: no cover
    root = os.path.realpath(dest)
    safe = []
    for member in tar.getmembers():
        target = os.path.realpath(os.path.join(root, member.name))
        if os.path.commonpath([root, target]) != root:
            continue
        if member.issym():
            link = os.path.realpath(os.path.join(os.path.dirname(target), member.linkname))
            if os.path.isabs(member.linkname) or os.path.commonpath([root, link]) != root:
                continue
        elif not (member.isfile() or member.isdir()):
            continue
        safe.append(member)
    return safe


def _make_read_only(root: Path) -> None:
    for folder, dirs, files in os.walk(root, topdown=False):
        for name in files:
            path = os.path.join(folder, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISREG(mode):
                os.chmod(path, 0o555 if mode & 0o111 else 0o444)
        for name in dirs:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                os.chmod(path, 0o555)
    os.chmod(root, 0o555)


def _make_writable(root: Path) -> None:
    if root.is_symlink() or not root.is_dir():
        return
    os.chmod(root, 0o755)
    for folder, dirs, _files in os.walk(root):
        for name in dirs:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                os.chmod(path, 0o755)


def _rmtree(path: Path) -> None:
    def retry(function: Callable[..., Any], target: str, *_: Any) -> None:
        parent = os.path.dirname(target)
        os.chmod(parent, 0o755)
        if not os.path.islink(target):
            os.chmod(target, 0o755 if os.path.isdir(target) else 0o644)
        function(target)

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=retry)
    else:
        shutil.rmtree(path, onerror=retry)


def remove_snapshot(path: Path) -> None:
    """Delete a folder made by :func:`snapshot` (it is read-only). Missing: nothing to do."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return
    if path.is_symlink() or not path.is_dir():
        path.unlink()
        return
    _make_writable(path)
    _rmtree(path)
