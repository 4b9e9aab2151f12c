"""Differential regression testing in ``utdebug check``: the checked version of each function
against its base version on synthesised inputs (:mod:`utdebug.synth.differential`), with no
model at all.

Both versions run in the sandbox *as their module* (the same module context as every other
check: package, ``__file__``, the repository's import roots), each from a read-only copy of the
repository at its revision. Seeds are the function's calls in the repository's test files and
the ``>>>`` examples of its docstring (base and head); without any, fully typed parameters are
drawn from their type hints. An input whose outcome changed is a finding (``was 4, now 5``,
``now raises KeyError``), smallest input first. Intended changes are recorded in the accept file
(:data:`ACCEPT_FILE`, in the repository) and are not reported again. Methods, properties,
async functions, generators and functions that return iterators are compared on call
sequences and receivers by :mod:`utdebug.synth.members`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from utdebug.check.report import Change, Differential
from utdebug.synth.differential import (
    Accepts,
    DiffResult,
    DiffSettings,
    Finding,
    Version,
    differential,
)
from utdebug.synth.seeds import find_test_files

__all__ = ["ACCEPT_FILE", "DiffRun", "compare_function"]

ACCEPT_FILE = ".utdebug/accepted.json"
"""Where intended changes are recorded, relative to the repository root (``--accept``)."""


@dataclass
class DiffRun:
    """What every function's comparison in one run shares."""

    sandbox: Any
    head_root: Path
    """The read-only copy of the checked revision."""
    base_root: Path | None
    """The read-only copy of the base revision (``None``: there is no base)."""
    base: str | None
    """The base revision's sha."""
    head_revision: str
    """The checked revision (a sha, or ``working tree``): what a function-level accept names."""
    env_paths: Sequence[str] = ()
    accepts: Accepts = field(default_factory=Accepts)
    settings: DiffSettings = field(default_factory=DiffSettings)
    tests: list[Path] | None = None
    """The head's test files (found on first use)."""


def _not_compared(why: str, base: str | None, seeds: int = 0) -> Differential:
    return Differential(False, f"nothing was compared: {why}", base, seeds=seeds)


def _module_function(text: str, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    found = None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            found = node  # the last definition wins, as in Python
    return found


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def compare_function(
    run: DiffRun, path: str, qualname: str, model_calls: Sequence[str] = ()
) -> tuple[Differential, list[Finding]]:
    """Compare ``path::qualname`` at the checked revision with its base version: the report's
    :class:`Differential` and the findings as the library gives them (for ``--accept``).
    ``model_calls``: the calls of a model's tests of the function (``f(1, [2])``), seeds as
    well."""
    from utdebug.check.targets import module_context
    from utdebug.synth.seeds import seeds_from_docstring, seeds_from_tests, seeds_from_text
    from utdebug.synth.strategies import parse_hints

    base = run.base
    head_text = _read(run.head_root / path)
    head_fn = _module_function(head_text or "", qualname)
    member = "." in qualname or (head_fn is not None and _not_plain(head_fn))
    if head_text is None or (head_fn is None and not member):
        return _not_compared(f"{qualname} is not a module-level function of {path}", base), []
    if run.base_root is None or base is None:
        return _not_compared("there is no base revision", None), []
    base_text = _read(run.base_root / path)
    if base_text is None:
        return _not_compared(f"new file (no base version of {path})", base), []
    if member:  # a method, property, async function or generator: synth.members
        return _compare_member(run, path, qualname, base_text, head_text)
    assert head_fn is not None
    base_fn = _module_function(base_text, qualname)
    if base_fn is None:
        return _not_compared("new function (no base version)", base), []
    if ast.dump(base_fn) == ast.dump(head_fn) and module_context(
        base_text, qualname
    ) == module_context(head_text, qualname):
        return _not_compared("unchanged since the base (function and module context)", base), []

    if run.tests is None:
        run.tests = find_test_files(run.head_root)
    seeds = seeds_from_tests(run.tests, qualname, run.head_root)
    seeds.extend(seeds_from_docstring(head_text, qualname))
    seeds.extend(seeds_from_docstring(base_text, qualname))
    for call in model_calls:
        seeds.extend(seeds_from_text(call, qualname, "the model's tests"))
    args = [*head_fn.args.posonlyargs, *head_fn.args.args]
    names = [a.arg for a in args]
    inputs = [s for s in seeds.inputs if _fits(head_fn, len(s))]
    if not names and not inputs:
        inputs = [()]
    try:
        hints = parse_hints(head_text, qualname)
    except SyntaxError:
        hints = {}
    typed = bool(names) and all(n in hints for n in names)
    if not inputs and not typed:
        untyped = ", ".join(n for n in names if n not in hints)
        return _not_compared(
            "no seed input (no call of it with literal arguments in the repository's tests or "
            f"its docstring) and its parameters cannot be typed ({untyped} without a usable "
            "type hint)",
            base,
        ), []

    res = differential(
        run.sandbox,
        f"{path}::{qualname}",
        _version(run, path, qualname, base_text, base, run.base_root),
        _version(run, path, qualname, head_text, run.head_revision, run.head_root),
        inputs,
        settings=run.settings,
        hints=hints if typed else None,
        names=names,
        accepts=run.accepts,
    )
    if not res.compared and res.incomparable:  # values known by repr: iterators are consumed
        return _compare_member(run, path, qualname, base_text, head_text)
    return _report(res, qualname, base, len(inputs))


def _not_plain(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """An async function or a generator: compared as :mod:`utdebug.synth.members` runs them."""
    from utdebug.engine.targets import is_generator

    return isinstance(fn, ast.AsyncFunctionDef) or is_generator(fn)


def _compare_member(
    run: DiffRun, path: str, qualname: str, base_text: str, head_text: str
) -> tuple[Differential, list[Finding]]:
    """A member of a class, an async function or a generator against its base version."""
    from utdebug.synth.members import compare_member

    assert run.base_root is not None
    assert run.base is not None
    if run.tests is None:
        run.tests = find_test_files(run.head_root)
    got = compare_member(
        run.sandbox,
        f"{path}::{qualname}",
        qualname,
        _version(run, path, qualname, base_text, run.base, run.base_root),
        _version(run, path, qualname, head_text, run.head_revision, run.head_root),
        run.tests,
        run.head_root,
        settings=run.settings,
        accepts=run.accepts,
    )
    return _report(got.result, qualname, run.base, got.seeds, got.call_text)


def _version(
    run: DiffRun, path: str, qualname: str, text: str, revision: str, root: Path
) -> Version:
    """One version of ``path``'s module, run as that module of the copy at ``root``."""
    from utdebug.project import sandbox_context

    context = sandbox_context(root / path, root, program=False, env_paths=run.env_paths)
    return Version(text, qualname, revision, context)


def _report(
    res: DiffResult,
    qualname: str,
    base: str | None,
    seeds: int,
    call_text: Callable[[tuple[Any, ...]], str] | None = None,
) -> tuple[Differential, list[Finding]]:
    """The library's result as the report's :class:`Differential`, and its findings."""
    message = res.message if res.compared else f"nothing was compared: {res.message}"
    return (
        Differential(
            res.compared,
            message,
            base,
            res.inputs,
            seeds,
            tuple(change(f, qualname, call_text) for f in res.findings),
            tuple(change(f, qualname, call_text) for f in res.accepted),
            tuple(res.notes),
        ),
        list(res.findings),
    )


def _fits(fn: ast.FunctionDef | ast.AsyncFunctionDef, n: int) -> bool:
    """Whether ``n`` positional arguments fit the function's signature."""
    a = fn.args
    positional = len(a.posonlyargs) + len(a.args)
    required = positional - len(a.defaults)
    return required <= n and (n <= positional or a.vararg is not None)


def change(
    f: Finding, name: str, call_text: Callable[[tuple[Any, ...]], str] | None = None
) -> Change:
    """A library finding as the report's :class:`Change` (``call_text``: the input as the
    code that runs it, for a member)."""
    from utdebug.synth.values import canonical

    call = call_text(f.args) if call_text else f"{name}({', '.join(canonical(a) for a in f.args)})"
    return Change(call, f.input_text, f.before, f.after, f.description)
