"""Model-free corruption of working code: AST mutation operators.

A *site* is one place in a program where one operator applies; a *mutant* is the program with
one site changed. The change is spliced into the source by the changed node's span, so the rest
of the program keeps its text (comments, formatting); only the changed expression is written
by :func:`ast.unparse`. Operators, as a student's slips:

- ``comparison``: ``<`` and ``<=``, ``>`` and ``>=``, ``==`` and ``!=``, ``in`` and ``not in``,
  ``is`` and ``is not`` swapped;
- ``arithmetic``: ``+`` and ``-`` swapped, ``*`` to ``+``, ``/`` to ``//`` and back, ``%`` to
  ``//``, ``**`` to ``*``, ``&`` and ``|``, ``^`` to ``|``, ``<<`` and ``>>`` (also in
  augmented assignments);
- ``constant``: an integer constant one more or one less (off by one);
- ``slice``: a slice bound one more or one less, or a bound dropped;
- ``condition``: one operand of ``and`` / ``or`` dropped, a ``not`` dropped, or the guard of an
  ``if`` without ``else`` removed (``if True:``);
- ``swap_args``: two neighbouring positional arguments of a call swapped;
- ``builtin``: ``min`` and ``max``, ``any`` and ``all`` swapped.

Nothing here runs code. :func:`mutants` picks distinct sites with a seeded ``random.Random``
and keeps only mutants that parse and differ from the original as syntax trees (an equivalent
mutant that behaves the same is found out later, by running it).
"""

from __future__ import annotations

import ast
import copy
import random
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = [
    "OPERATORS",
    "Mutant",
    "Site",
    "apply",
    "drop_docstring",
    "is_docstring",
    "mutants",
    "normalized_dump",
    "parse_quietly",
    "sites",
]

OPERATORS = (
    "comparison",
    "arithmetic",
    "constant",
    "slice",
    "condition",
    "swap_args",
    "builtin",
)

_COMPARE_SWAP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_ARITH_SWAP: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Add,
    ast.Div: ast.FloorDiv,
    ast.FloorDiv: ast.Div,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
    ast.BitXor: ast.BitOr,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
}
_BUILTIN_SWAP = {"min": "max", "max": "min", "any": "all", "all": "any"}


@dataclass(frozen=True, slots=True)
class Site:
    """One place one operator applies: the node's span and what to write there."""

    operator: str
    line: int
    col: int
    end_line: int
    end_col: int
    before: str
    after: str
    """The replacement text; :func:`apply` wraps it in parentheses where the context needs it."""
    wrap: bool = False
    """The replacement is an expression that parentheses may have to group."""

    def describe(self) -> str:
        return f"{self.operator} at line {self.line}: `{self.before}` -> `{self.after}`"


@dataclass(frozen=True, slots=True)
class Mutant:
    code: str
    site: Site


def parse_quietly(code: str) -> ast.Module | None:
    """``ast.parse(code)``, ``None`` when it does not parse; the warnings Python gives for
    dataset code (``invalid escape sequence '\\d'``) are not shown."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            return ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def sites(code: str) -> list[Site]:
    """Every mutation site of ``code`` (in a fixed order); ``[]`` when it does not parse.

    Module-level imports, docstrings and type annotations are left alone.
    """
    tree = parse_quietly(code)
    if tree is None:
        return []
    skip = _skipped_nodes(tree)
    out: list[Site] = []
    for node in ast.walk(tree):
        if id(node) in skip or not hasattr(node, "end_col_offset"):
            continue
        for operator, new in _changes(node):
            site = _site(code, operator, node, new)
            if site is not None:
                out.append(site)
    return out


def apply(code: str, site: Site) -> str:
    """``code`` with ``site`` changed (spliced by the node's span). An expression is written
    bare when that parses to the same tree as the parenthesised one (``c - a * b`` with
    ``a + b`` swapped in needs them, ``if a <= b:`` does not)."""
    starts = _line_starts(code)
    begin = starts[site.line - 1] + _char_col(code, starts[site.line - 1], site.col)
    end = starts[site.end_line - 1] + _char_col(code, starts[site.end_line - 1], site.end_col)
    bare = code[:begin] + site.after + code[end:]
    if not site.wrap or _SIMPLE.fullmatch(site.after) is not None:
        return bare
    wrapped = code[:begin] + f"({site.after})" + code[end:]
    if normalized_dump(bare) == normalized_dump(wrapped):
        return bare
    return wrapped


def mutants(
    code: str, rng: random.Random, count: int, lines: tuple[int, int] | None = None
) -> list[Mutant]:
    """Up to ``count`` mutants of ``code`` at distinct sites, chosen with ``rng`` (the operators
    in a shuffled turn, a random site of each): each parses, differs from ``code`` and from the
    others as a syntax tree. ``lines`` (first, last; 1-based, inclusive): only sites within
    those lines (one method of a class)."""
    original = normalized_dump(code)
    if original is None:
        return []
    groups: dict[str, list[Site]] = {}
    for site in sites(code):
        if lines is not None and not (lines[0] <= site.line and site.end_line <= lines[1]):
            continue
        groups.setdefault(site.operator, []).append(site)
    for group in groups.values():
        rng.shuffle(group)
    order = sorted(groups)
    rng.shuffle(order)
    # Operators in turn (a shuffled round robin), so that a program with many constants does
    # not get only off-by-one mutants.
    pool = [
        group[i]
        for i in range(max((len(g) for g in groups.values()), default=0))
        for group in (groups[name] for name in order)
        if i < len(group)
    ]
    out: list[Mutant] = []
    seen = {original}
    for site in pool:
        if len(out) >= count:
            break
        new = apply(code, site)
        dump = normalized_dump(new)
        if dump is None or dump in seen:
            continue
        seen.add(dump)
        out.append(Mutant(new, site))
    return out


def normalized_dump(code: str) -> str | None:
    """The syntax tree of ``code`` without docstrings, as text (``None``: does not parse)."""
    tree = parse_quietly(code)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            drop_docstring(node)
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


def drop_docstring(
    node: ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
) -> None:
    """Remove ``node``'s docstring in place (a body left empty becomes ``pass``)."""
    body = node.body
    if body and is_docstring(body[0]):
        node.body = body[1:] or [ast.Pass()]


# --- sites ------------------------------------------------------------------------------------


def is_docstring(stmt: ast.stmt) -> bool:
    """A string constant standing alone as a statement (a docstring, when first in a body)."""
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _skipped_nodes(tree: ast.Module) -> set[int]:
    """Nodes no operator touches: imports, docstrings, annotations, decorators."""
    skip: set[int] = set()

    def drop(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            drop(node)
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.stmt) and is_docstring(first):
            drop(first)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            drop(node.returns)
            for d in node.decorator_list:
                drop(d)
            for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                drop(a.annotation)
            for default in [*node.args.defaults, *node.args.kw_defaults]:
                drop(default)
        if isinstance(node, ast.ClassDef):
            for d in [*node.decorator_list, *node.bases]:
                drop(d)
        if isinstance(node, ast.AnnAssign):
            drop(node.annotation)
        if isinstance(node, ast.JoinedStr):  # f-strings: their parts have no usable spans
            drop(node)
        if _int_value(node) is not None and isinstance(node, ast.UnaryOp):
            skip.add(id(node.operand))  # `-1` is changed as one constant
    return skip


Change = tuple[str, ast.AST]
"""(operator, the replacement node)."""


def _changes(node: ast.AST) -> Iterator[Change]:
    for make in _MAKERS:
        yield from make(node)


def _compare(node: ast.AST) -> Iterator[Change]:
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            swap = _COMPARE_SWAP.get(type(op))
            if swap is not None:
                new = copy.deepcopy(node)
                new.ops[i] = swap()
                yield "comparison", new


def _arith(node: ast.AST) -> Iterator[Change]:
    if isinstance(node, ast.BinOp | ast.AugAssign):
        swap = _ARITH_SWAP.get(type(node.op))
        if swap is not None and not _string_concat(node):
            new = copy.deepcopy(node)
            new.op = swap()
            yield "arithmetic", new


def _string_concat(node: ast.BinOp | ast.AugAssign) -> bool:
    """``'a' + x`` or ``'%d' % n``: swapping the operator only raises a TypeError."""
    parts = [node.left, node.right] if isinstance(node, ast.BinOp) else [node.value]
    return any(isinstance(p, ast.Constant) and isinstance(p.value, str | bytes) for p in parts)


def _constant(node: ast.AST) -> Iterator[Change]:
    value = _int_value(node)
    if value is not None:
        for delta in (1, -1):
            yield "constant", _int_node(value + delta)


def _int_value(node: ast.AST) -> int | None:
    """The value of an integer constant, ``-1`` (a negated constant) included."""
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int)
        and not isinstance(node.value, bool)
    ):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int_value(node.operand)
        return None if inner is None or not isinstance(node.operand, ast.Constant) else -inner
    return None


def _int_node(value: int) -> ast.expr:
    return ast.Constant(value) if value >= 0 else ast.UnaryOp(ast.USub(), ast.Constant(-value))


def _slice(node: ast.AST) -> Iterator[Change]:
    if not isinstance(node, ast.Slice):
        return
    for name in ("lower", "upper"):
        bound = getattr(node, name)
        if bound is None:
            continue
        for delta in (1, -1):
            new = copy.deepcopy(node)
            setattr(new, name, _plus(bound, delta))
            yield "slice", new
        dropped = copy.deepcopy(node)
        setattr(dropped, name, None)
        yield "slice", dropped


def _plus(expr: ast.expr, delta: int) -> ast.expr:
    value = _int_value(expr)
    if value is not None:
        return _int_node(value + delta)
    op: ast.operator = ast.Add() if delta > 0 else ast.Sub()
    return ast.BinOp(copy.deepcopy(expr), op, ast.Constant(abs(delta)))


def _condition(node: ast.AST) -> Iterator[Change]:
    if isinstance(node, ast.BoolOp) and len(node.values) >= 2:
        for i in range(len(node.values)):
            rest = [copy.deepcopy(v) for j, v in enumerate(node.values) if j != i]
            yield "condition", rest[0] if len(rest) == 1 else ast.BoolOp(node.op, rest)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "condition", copy.deepcopy(node.operand)


def _if_guard(node: ast.AST) -> Iterator[Change]:
    """``if c:`` without ``else`` -> ``if True:`` (the site is the test expression)."""
    if isinstance(node, ast.If) and not node.orelse:
        test = node.test
        if not (isinstance(test, ast.Constant) and test.value is True):
            yield "condition", ast.Constant(True)


def _swap_args(node: ast.AST) -> Iterator[Change]:
    if not isinstance(node, ast.Call):
        return
    args = node.args
    for i in range(len(args) - 1):
        a, b = args[i], args[i + 1]
        if isinstance(a, ast.Starred) or isinstance(b, ast.Starred):
            continue
        if ast.dump(a) == ast.dump(b):
            continue
        new = copy.deepcopy(node)
        new.args[i], new.args[i + 1] = new.args[i + 1], new.args[i]
        yield "swap_args", new


def _builtin(node: ast.AST) -> Iterator[Change]:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        other = _BUILTIN_SWAP.get(node.func.id)
        if other is not None:
            new = copy.deepcopy(node)
            new.func = ast.Name(other, ast.Load())
            yield "builtin", new


_MAKERS: tuple[Callable[[ast.AST], Iterator[Change]], ...] = (
    _compare,
    _arith,
    _constant,
    _slice,
    _condition,
    _if_guard,
    _swap_args,
    _builtin,
)


def _site(code: str, operator: str, node: ast.AST, new: ast.AST) -> Site | None:
    target: ast.AST = node
    if isinstance(node, ast.If):  # only the test is rewritten
        target = node.test
    text = ast.unparse(new)  # `x += 1` -> `x -= 1`: an augmented assignment is a statement
    before = ast.get_source_segment(code, target)
    if before is None:
        return None
    return Site(
        operator,
        target.lineno,  # type: ignore[attr-defined]
        target.col_offset,  # type: ignore[attr-defined]
        target.end_lineno,  # type: ignore[attr-defined]
        target.end_col_offset,  # type: ignore[attr-defined]
        before,
        text,
        wrap=isinstance(target, ast.expr) and not isinstance(target, ast.Slice),
    )


_SIMPLE = re.compile(r"[\w.]+|-?\d+")


def _line_starts(code: str) -> list[int]:
    starts = [0]
    for m in re.finditer(r"\r\n|\r|\n", code):
        starts.append(m.end())
    return starts


def _char_col(code: str, line_start: int, byte_col: int) -> int:
    """The character offset of a UTF-8 byte column on the line starting at ``line_start``."""
    end = code.find("\n", line_start)
    line = code[line_start : len(code) if end < 0 else end]
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))
