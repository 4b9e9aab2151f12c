"""The functions a ``utdebug check`` run is about: the ones named (``PATH::FUNCTION``) or the
ones a change touches (``--changed``), found before any model is made."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from utdebug.check.options import CheckError, CheckOptions, validate_options
from utdebug.check.report import FunctionReport, Status
from utdebug.check.results import function_report
from utdebug.engine.target_kinds import TargetKind, first_line

SKIP_PRAGMA = re.compile(r"#\s*utdebug:\s*skip\b", re.IGNORECASE)
"""``# utdebug: skip`` on a function's ``def`` line (or the line above it) skips it."""

SKIPPED = "skipped: '# utdebug: skip'"
"""The message of a function skipped by :data:`SKIP_PRAGMA`."""

TEST_FILE_REASON = (
    "not compared: a function of a test file (tests take fixtures; it is no library "
    "function): name it as PATH::FUNCTION to check it anyway"
)


@dataclass(frozen=True, slots=True)
class Target:
    """A function to check; ``problem``: its report already (not checkable, or skipped)."""

    path: str
    qualname: str
    line: int = 0
    end_line: int = 0
    problem: FunctionReport | None = None
    shape: TargetKind | None = None
    """What it is (function, method, property, classmethod, staticmethod, async function,
    generator ...); ``None`` when the file could not tell (not found, does not parse)."""
    reads: tuple[str, ...] = ()
    """Changed only through these module-level names it reads (a changed constant)."""


@dataclass(frozen=True, slots=True)
class Located:
    """The repository and the functions a check is about (:func:`locate`)."""

    repo: Any
    revision: str | None
    base: str | None
    targets: list[Target]


def locate(options: CheckOptions) -> Located:
    """The repository and the functions to check, before any model is made or probed: a
    folder that is not in a git repository, a file that does not exist, a bad revision are
    :class:`CheckError` (exit 2, one line) at once."""
    from utdebug.check import gitrepo

    validate_options(options)
    where = options.cwd
    if options.targets:
        first = Path(options.targets[0].rpartition("::")[0])
        where = first if first.is_absolute() else options.cwd / first
    try:
        repo = gitrepo.open_repository(where if where.exists() else options.cwd)
        revision = gitrepo.resolve(repo, options.rev) if options.rev else None
        base: str | None = None
        if options.changed:
            cs = gitrepo.changed_functions(
                repo,
                options.base,
                rev=revision,
                use_merge_base=options.use_merge_base,
                paths=options.paths,
            )
            base = cs.base
            targets = _changed_targets(cs)
        else:
            targets = [_named_target(repo, spec, options.cwd, revision) for spec in options.targets]
    except gitrepo.GitError as e:
        raise CheckError(str(e)) from None
    return Located(repo, revision, base, targets)


def _changed_targets(cs: Any) -> list[Target]:
    out: list[Target] = []
    for p in cs.problems:
        out.append(
            Target(
                p.path,
                "<module>",
                p.line,
                p.line,
                problem=function_report(
                    p.path, "<module>", Status.ERROR, p.message, p.line, p.line
                ),
            )
        )
    from utdebug.synth.seeds import is_test_file

    for f in cs.functions:
        problem = None
        if not f.supported:
            problem = function_report(
                f.path, f.qualname, Status.SKIPPED, f.reason or "not supported", f.line, f.end_line
            )
        elif is_test_file(f.path):
            problem = function_report(
                f.path, f.qualname, Status.NOT_COMPARED, TEST_FILE_REASON, f.line, f.end_line
            )
        out.append(Target(f.path, f.qualname, f.line, f.end_line, problem, f.shape, f.reads))
    return out


def _named_target(repo: Any, spec: str, cwd: Path, revision: str | None) -> Target:
    """The function ``spec`` names. A file that does not exist, or a name that is no function
    of its file, is :class:`CheckError` (exit 2, before any work: a typo in a CI workflow is
    no checked function); a file that does not parse is an error at its syntax error's line."""
    from utdebug.check import gitrepo
    from utdebug.workspace import WorkspaceError, find_target, parse_target

    try:
        path, qualname = parse_target(spec)
    except WorkspaceError as e:
        raise CheckError(str(e)) from None
    full = path if path.is_absolute() else cwd / path
    if revision is None and not full.is_file():  # (with --rev the file is read from that commit)
        what = "is a folder, not a Python file" if full.is_dir() else "does not exist"
        raise CheckError(f"{path} {what} ({spec})")
    rel = gitrepo.relative_path(repo, full)
    try:
        source = gitrepo.read_text(repo, rel, revision)
    except gitrepo.GitError:
        return Target(rel, qualname)  # its report says why it cannot be read
    try:
        tree = gitrepo.parse_source(source, rel)
    except gitrepo.SourceProblem as e:
        problem = function_report(rel, qualname, Status.ERROR, str(e), e.line, e.line)
        return Target(rel, qualname, e.line, e.line, problem)
    try:
        node = find_target(tree, qualname, Path(rel)).node
    except WorkspaceError as e:
        raise CheckError(f"{spec}: {e}") from None
    line, end = first_line(node), node.end_lineno or node.lineno
    return Target(rel, qualname, line, end, shape=_shape(tree, qualname))


def _shape(tree: ast.Module, qualname: str) -> TargetKind | None:
    """What ``qualname`` is in ``tree`` (``None``: not one of its definitions)."""
    from utdebug.check.definitions import definitions

    return next((d.shape for d in definitions(tree, "") if d.qualname == qualname), None)


def module_context(module_code: str, entry_point: str) -> str:
    """What of its module a function's behaviour can depend on, for the cache key: every
    module-level statement that is not a definition (imports, constants, setup code), and the
    module-level functions and classes the function uses, directly or through each other.
    Editing an unrelated function of the same module leaves this unchanged."""
    try:
        tree = ast.parse(module_code)
    except (SyntaxError, ValueError):
        return module_code
    defs: dict[str, ast.stmt] = {}
    rest: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defs[node.name] = node  # the last definition wins, as in Python
        else:
            rest.append(ast.dump(node))
    used: list[str] = []
    todo = [entry_point]
    while todo:
        name = todo.pop()
        found = defs.get(name)
        if found is None or name in used:
            continue
        used.append(name)
        todo += [n.id for n in ast.walk(found) if isinstance(n, ast.Name) and n.id in defs]
    return "\n".join([*rest, *(ast.dump(defs[n]) for n in sorted(used))])


def has_skip_pragma(loaded: Any) -> bool:
    """``# utdebug: skip`` on the line above the function, a decorator line or its ``def``
    (``loaded``: a :class:`utdebug.workspace.LoadedFunction`)."""
    lines = loaded.file_text.splitlines()
    window = []
    for n in range(max(loaded.start_line - 1, 1), loaded.end_line + 1):
        text = lines[n - 1] if n <= len(lines) else ""
        window.append(text)
        if n >= loaded.start_line and re.match(rf"\s*def\s+{loaded.entry_point}\b", text):
            break
    return any(SKIP_PRAGMA.search(x) for x in window)
