"""Which definitions of a module ``utdebug check`` reports, and which of them a change touches.

:func:`definitions` lists every function and class member of a parsed module with its lines,
its kind (:func:`utdebug.engine.target_kinds.classify`) and, when the loader
(:mod:`utdebug.workspace`) cannot reach it, why: methods of nested classes and functions
defined inside a module-level ``if``/``try``/... block. :func:`touched` keeps the ones a
change's lines touch, and :func:`changed_definitions` adds the module-level functions that
read a module-level name (a constant, a regex, an import) the change rebinds, directly or
through each other.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace

from utdebug.engine.target_kinds import Def, TargetKind, classify, first_line

__all__ = ["ChangedFunction", "changed_definitions", "definitions", "touched"]

_NESTED_CLASS_REASON = (
    "methods of nested classes are not supported: debug a method of a module-level class "
    "or a module-level function"
)


@dataclass(frozen=True, slots=True)
class ChangedFunction:
    """A function (or class member) that the change touches."""

    path: str
    """Repository-relative, ``/`` separators."""
    qualname: str
    """``f`` or ``Class.method`` (``Outer.Inner.method`` for nested classes)."""
    line: int
    """First line, decorators included (1-based), in the checked revision's file."""
    end_line: int
    kind: str
    """``function``, ``staticmethod``, ``method``, ``classmethod``, ``async`` or ``property``
    (:attr:`utdebug.engine.target_kinds.Classified.label`)."""
    supported: bool
    """Whether ``utdebug`` can load it (see :mod:`utdebug.workspace`)."""
    reason: str | None
    """Why it is not supported, and what to do; ``None`` when supported."""
    shape: TargetKind = TargetKind.FUNCTION
    """What it is (:class:`utdebug.engine.target_kinds.TargetKind`: function, method, property,
    classmethod, staticmethod, async, generator ...)."""
    reads: tuple[str, ...] = ()
    """Changed only through these module-level names it reads (a constant the change
    rebinds); empty when the change touches its own lines."""


def touched(
    found: list[ChangedFunction], lines: list[tuple[int, int]] | None
) -> list[ChangedFunction]:
    """The definitions the changed ``lines`` touch (``None``: a new file, all of them)."""
    hits = [
        d for d in found if lines is None or any(a <= d.end_line and b >= d.line for a, b in lines)
    ]
    # One entry per name: the loadable definition when there is one, else the first.
    best: dict[str, ChangedFunction] = {}
    for d in hits:
        kept = best.get(d.qualname)
        if kept is None or (d.supported and not kept.supported):
            best[d.qualname] = d
    return sorted(best.values(), key=lambda d: (d.line, d.qualname))


_BLOCKS: dict[type[ast.stmt], str] = {
    ast.If: "if",
    ast.For: "for",
    ast.AsyncFor: "async for",
    ast.While: "while",
    ast.With: "with",
    ast.AsyncWith: "async with",
    ast.Try: "try",
    ast.TryStar: "try",
    ast.Match: "match",
}


def _sub_bodies(node: ast.stmt) -> list[list[ast.stmt]]:
    bodies: list[list[ast.stmt]] = []
    for field in ("body", "orelse", "finalbody"):
        value = getattr(node, field, None)
        if isinstance(value, list):
            bodies.append(value)
    for handler in getattr(node, "handlers", []):
        bodies.append(handler.body)
    for case in getattr(node, "cases", []):
        bodies.append(case.body)
    return bodies


def _shadowed(body: list[ast.stmt], index: int, name: str) -> bool:
    """Whether a later ``def``/``class`` in ``body`` rebinds ``name`` (the loader takes it)."""
    return any(
        isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.name == name
        for n in body[index + 1 :]
    )


def _span(node: Def) -> tuple[int, int]:
    return first_line(node), node.end_lineno or node.lineno


def definitions(tree: ast.Module, path: str) -> list[ChangedFunction]:
    """Every reportable definition of the module (shadowed ones left out)."""
    found: list[ChangedFunction] = []

    def add(node: Def, qualname: str, in_class: bool, reason: str | None) -> None:
        line, end = _span(node)
        c = classify(node, in_class=in_class)
        found.append(
            ChangedFunction(path, qualname, line, end, c.label, reason is None, reason, c.kind)
        )

    def block_reason(block: str) -> str:
        return (
            f"functions defined inside {block} are not supported: define it at module level "
            f"(a function, or a method of a module-level class)"
        )

    def module_body(body: list[ast.stmt], block: str | None) -> None:
        for index, node in enumerate(body):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if block is None and _shadowed(body, index, node.name):
                    continue
                reason = block_reason(block) if block else None
                add(node, node.name, False, reason)
            elif isinstance(node, ast.ClassDef):
                if block is None and _shadowed(body, index, node.name):
                    continue
                class_body(node.body, f"{node.name}.", 0, block)
            elif type(node) in _BLOCKS:
                for sub in _sub_bodies(node):
                    module_body(sub, block or f"a module-level `{_BLOCKS[type(node)]}` block")

    def class_body(body: list[ast.stmt], prefix: str, depth: int, block: str | None) -> None:
        for index, node in enumerate(body):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if _shadowed(body, index, node.name):
                    continue
                reason = None
                if block is not None:  # a member the loader cannot see
                    reason = block_reason(block)
                elif depth > 0:
                    reason = _NESTED_CLASS_REASON
                add(node, prefix + node.name, True, reason)
            elif isinstance(node, ast.ClassDef):
                if _shadowed(body, index, node.name):
                    continue
                class_body(node.body, f"{prefix}{node.name}.", depth + 1, block)
            elif type(node) in _BLOCKS:
                for sub in _sub_bodies(node):
                    inner = block or f"an `{_BLOCKS[type(node)]}` block of a class body"
                    class_body(sub, prefix, depth, inner)

    module_body(tree.body, None)
    return found


def changed_definitions(
    tree: ast.Module,
    path: str,
    lines: list[tuple[int, int]] | None,
    base: ast.Module | None = None,
) -> list[ChangedFunction]:
    """What a change of the module's ``lines`` (``None``: a new file) touches: the
    definitions on those lines (:func:`touched`) and the module-level functions that read a
    module-level name a changed statement binds (or a name made from one at module level),
    directly or through other module-level functions (their :attr:`ChangedFunction.reads`
    says which names). With the module at the base (``base``), a name whose binding
    statements have the base's syntax tree (imports reordered, a constant reformatted) does
    not count."""
    found = definitions(tree, path)
    hits = touched(found, lines)
    if lines is None:
        return hits
    names = _rebound(tree, lines)
    if base is not None:
        names = {n for n in names if _bindings(tree, n) != _bindings(base, n)}
    if not names:
        return hits
    names = _derived(tree, names)
    reached = _readers(tree, names)
    have = {d.qualname for d in hits}
    more = [
        replace(d, reads=tuple(sorted(reached[d.qualname])))
        for d in found
        if d.qualname in reached and d.qualname not in have
    ]
    return sorted([*hits, *more], key=lambda d: (d.line, d.qualname))


def _derived(tree: ast.Module, names: set[str]) -> set[str]:
    """``names`` and the module-level names made from them (``TZ_RE = re.compile(TZ_REGEX)``
    after a change of ``TZ_REGEX``), through any number of such statements."""
    out = set(names)
    grown = True
    while grown:
        grown = False
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            if used & out and not _bound(node) <= out:
                out |= _bound(node)
                grown = True
    return out


def _rebound(tree: ast.Module, lines: list[tuple[int, int]]) -> set[str]:
    """The names the module-level statements on the changed ``lines`` bind (definitions
    aside: their own lines make them changed)."""
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        first, last = node.lineno, node.end_lineno or node.lineno
        if any(a <= last and b >= first for a, b in lines):
            out |= _bound(node)
    return out


def _bound(node: ast.stmt) -> set[str]:
    """The names a module-level statement binds."""
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del):
            out.add(n.id)
        elif isinstance(n, ast.alias):
            out.add((n.asname or n.name).split(".")[0])
        elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(n.name)
    return out


def _bindings(tree: ast.Module, name: str) -> list[str]:
    """The module-level statements (definitions aside) that bind ``name``, as syntax trees."""
    return [
        ast.dump(node)
        for node in tree.body
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and name in _bound(node)
    ]


def _readers(tree: ast.Module, names: set[str]) -> dict[str, set[str]]:
    """Module-level function -> the ``names`` it reads, directly or through the module-level
    functions it calls (a fixed point over the module's functions)."""
    reads: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):  # the last one wins
            reads[node.name] = {
                n.id
                for n in ast.walk(node)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            }
    reached: dict[str, set[str]] = {}
    grown = True
    while grown:
        grown = False
        for name, used in reads.items():
            via = used & names
            for other in used & reached.keys():
                via |= reached[other]
            if via - reached.get(name, set()):
                reached[name] = reached.get(name, set()) | via
                grown = True
    return reached
