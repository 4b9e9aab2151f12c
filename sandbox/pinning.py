"""Names a test with setup cannot have rebound: the parent rewrites the test's code so that
each builtin it reads by name (``len``, ``sorted``, ``isinstance`` ...) and each of the
runner's own names (:data:`RUNNER_NAMES`) is a placeholder constant, which the child replaces
with the object itself once the code is compiled (see ``docs/sandbox.md``, "Integrity")."""

from __future__ import annotations

import ast
import builtins
import functools
import threading
from collections.abc import Iterable, Iterator

MARK = "\x00pin:"
"""A placeholder is the string ``MARK + name`` (a string no test writes)."""

RUNNER_NAMES = frozenset(("__sandbox_fact__", "__sandbox_hooks__"))
"""The runner's objects a test reaches by name: ``__sandbox_fact__`` (an assertion's facts,
sent to the parent at once) and ``__sandbox_hooks__`` (``sys.getprofile`` as it was before
any program)."""

NEVER = frozenset(("super", "copyright", "credits", "exit", "help", "license", "quit"))
"""Builtins read by name that stay names: ``super()`` without arguments needs the compiler to
see the name (it makes the ``__class__`` cell then); the interactive helpers ``site`` adds."""

PINNABLE = (frozenset(n for n in dir(builtins) if not n.startswith("__")) - NEVER) | RUNNER_NAMES


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _targets(node: ast.AST) -> Iterator[str]:
    """The names one node binds in the scope it is in (itself, not its children)."""
    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        yield node.id
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name
    elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar):
        if node.name:
            yield node.name
    elif isinstance(node, ast.Import | ast.ImportFrom):
        for alias in node.names:
            yield (alias.asname or alias.name).split(".")[0]
    elif isinstance(node, ast.MatchMapping) and node.rest:
        yield node.rest
    elif isinstance(node, ast.Global | ast.Nonlocal):
        yield from node.names
    elif isinstance(node, ast.arg):
        yield node.arg


def _bound(body: Iterable[ast.AST]) -> set[str]:
    """Every name bound in a scope's body, nested scopes' own bodies excepted (their names,
    default values and decorators count; a comprehension's names count here too: more names
    than Python binds, so a name is pinned only where it surely is a global or a builtin)."""
    out: set[str] = set()
    todo = list(body)
    while todo:
        node = todo.pop()
        out.update(_targets(node))
        if isinstance(node, _SCOPES):
            todo.extend(node.decorator_list if not isinstance(node, ast.Lambda) else ())
            if isinstance(node, ast.ClassDef):
                todo.extend(node.bases)
                todo.extend(k.value for k in node.keywords)
            else:
                todo.extend(d for d in node.args.defaults if d is not None)
                todo.extend(d for d in node.args.kw_defaults if d is not None)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return out


def _params(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    a = node.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    return set(names)


def _declared_global(tree: ast.AST) -> set[str]:
    return {n for node in ast.walk(tree) if isinstance(node, ast.Global) for n in node.names}


def _has_mark(tree: ast.AST) -> bool:
    return any(
        isinstance(node, ast.Constant) and isinstance(node.value, str) and MARK in node.value
        for node in ast.walk(tree)
    )


def _star_import(tree: ast.AST) -> bool:
    return any(
        isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)
        for node in ast.walk(tree)
    )


class _Pin(ast.NodeTransformer):
    """Replaces each Name read that reaches the module's globals and builtins (bound in no
    enclosing function, nor in the class body it is in, nor at the test's top level) and
    names a builtin or a runner name by its placeholder."""

    def __init__(self, top: set[str]) -> None:
        self.top = top
        self.functions: list[set[str]] = []  # the enclosing functions' names, inner last
        self.klass: set[str] | None = None  # the class body the node is directly in
        self.pinned: set[str] = set()

    def visit_Name(self, node: ast.Name) -> ast.AST:
        n = node.id
        if not isinstance(node.ctx, ast.Load) or n not in PINNABLE:
            return node
        if (self.klass is not None and n in self.klass) or n in self.top:
            return node
        if any(n in names for names in self.functions):
            return node
        self.pinned.add(n)
        return ast.copy_location(ast.Constant(MARK + n), node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> ast.AST:
        # decorators, defaults and annotations belong to the enclosing scope
        if not isinstance(node, ast.Lambda):
            node.decorator_list = [self.visit(d) for d in node.decorator_list]
            node.returns = self.visit(node.returns) if node.returns else None
        node.args = self._outer_args(node.args)
        body = [node.body] if isinstance(node, ast.Lambda) else node.body
        inner = _params(node) | _bound(body)
        saved = self.klass
        self.functions.append(inner)
        self.klass = None
        try:
            if isinstance(node, ast.Lambda):
                node.body = self.visit(node.body)
            else:
                node.body = [self.visit(s) for s in node.body]
        finally:
            self.functions.pop()
            self.klass = saved
        return node

    def _outer_args(self, args: ast.arguments) -> ast.arguments:
        args.defaults = [self.visit(d) for d in args.defaults]
        args.kw_defaults = [self.visit(d) if d is not None else None for d in args.kw_defaults]
        for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
            if a is not None and a.annotation is not None:
                a.annotation = self.visit(a.annotation)
        return args

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.bases = [self.visit(b) for b in node.bases]
        node.keywords = [self.visit(k) for k in node.keywords]
        saved = self.klass
        self.klass = _bound(node.body)
        try:
            node.body = [self.visit(s) for s in node.body]
        finally:
            self.klass = saved
        return node

    def _comprehension(self, node: ast.AST) -> ast.AST:
        # its loop names are its own (the first iterable is read outside; binding more names
        # than Python does only leaves more of them unpinned)
        self.functions.append(_bound([node]))
        try:
            return self.generic_visit(node)
        finally:
            self.functions.pop()

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension


_PARSING = threading.Lock()
"""One parse at a time here: on 3.11, two threads turning source into ``ast`` objects at once
can fail with "AST constructor recursion depth mismatch" (the depth it checks is the
interpreter's); a parse elsewhere can still overlap one, so a failed one is tried again."""


def _parse(text: str, mode: str) -> ast.AST:
    for _ in range(7):
        try:
            with _PARSING:
                return ast.parse(text, mode=mode)
        except SystemError:  # the overlap above: nothing wrong with the text
            continue
    with _PARSING:
        return ast.parse(text, mode=mode)


@functools.lru_cache(maxsize=512)
def pin(
    parts: tuple[str | None, ...], modes: tuple[str, ...], bound: tuple[str, ...] = ()
) -> tuple[tuple[str | None, ...], tuple[str, ...]]:
    """The parts of a test (``setup`` statements, ``call`` and ``then`` expressions: their
    compile ``modes``) with their builtin and runner names pinned, and the names pinned;
    ``bound``: names the runner puts in the test's namespace itself. A part that does not
    parse, a star import or a string holding the mark leaves every part as it is
    (the child reports the syntax error; a star import can bind any builtin's name)."""
    trees: list[ast.AST | None] = []
    for text, mode in zip(parts, modes, strict=True):
        if text is None:
            trees.append(None)
            continue
        try:
            trees.append(_parse(text, mode))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return parts, ()
    real = [t for t in trees if t is not None]
    if any(_star_import(t) or _has_mark(t) for t in real):
        return parts, ()
    top = set(bound)
    for t in real:
        top |= _declared_global(t)
        top |= _bound(t.body if isinstance(t, ast.Module) else [t])
    pinner = _Pin(top)
    out: list[str | None] = []
    try:
        for tree in trees:
            out.append(
                None if tree is None else ast.unparse(ast.fix_missing_locations(pinner.visit(tree)))
            )
    except (RecursionError, ValueError):
        return parts, ()
    return tuple(out), tuple(sorted(pinner.pinned))
