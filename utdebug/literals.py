"""A safe evaluator for Python literals: no ``eval``, no ``exec``, no operators that compute.

:func:`literal_value` accepts what :func:`ast.literal_eval` accepts (strings, bytes, numbers,
``True``/``False``/``None``, ``...``, tuples, lists, dicts, sets, ``a+bj`` complex literals and
unary ``+``/``-`` on numbers) plus the spellings that benchmark test scripts and model-written
tests use for special values and empty containers:

- the names ``inf`` and ``nan`` and the attributes ``math.inf``, ``math.nan``, ``np.inf``,
  ``np.nan``, ``numpy.inf``, ``numpy.nan``;
- the calls ``float('inf')`` / ``float('-inf')`` / ``float('nan')`` (any string ``float``
  parses), ``float(<number>)``, ``set()``, ``set([...])``, ``frozenset(...)``, ``tuple([...])``,
  ``list(...)`` and ``dict()`` (optionally with one literal mapping or pairs, and keywords);
- unary ``+``/``-`` on any numeric value, so ``-inf`` and ``-float('inf')`` work.

Everything else (other names, other calls, attribute access, ``**`` and every other binary
operator, comprehensions, lambdas, f-strings, subscripts, ...) raises :class:`LiteralError`
with a short message naming the construct and its position. Resource bombs are refused before
any work is done: source longer than ``max_length`` characters (default 50 MB) and nesting
deeper than ``max_depth`` levels (default 100) are rejected, and no operator that can grow a
value is ever evaluated (``10**10**10`` is rejected, not computed).

:func:`literal_call` parses one call expression such as ``f(1, [2, 3], key='x')`` into its
positional and keyword arguments.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Iterable
from typing import Any

__all__ = [
    "CALLS",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_LENGTH",
    "Evaluator",
    "LiteralError",
    "canonical_repr",
    "closing_bracket",
    "describe_node",
    "dotted_name",
    "literal_call",
    "literal_value",
    "parse_expression",
]

DEFAULT_MAX_LENGTH = 50_000_000
"""Longest source text (in characters) accepted by :func:`literal_value` / :func:`literal_call`."""

DEFAULT_MAX_DEPTH = 100
"""Deepest nesting of containers, calls and unary operators accepted."""

_NAMES: dict[str, Any] = {
    "inf": math.inf,
    "nan": math.nan,
    "True": True,
    "False": False,
    "None": None,
}
_MODULE_CONSTANTS: dict[tuple[str, str], float] = {
    (module, attr): value
    for module in ("math", "np", "numpy")
    for attr, value in (("inf", math.inf), ("nan", math.nan))
}
_CONSTRUCT_NAMES: dict[type[ast.AST], str] = {
    ast.ListComp: "list comprehension",
    ast.SetComp: "set comprehension",
    ast.DictComp: "dict comprehension",
    ast.GeneratorExp: "generator expression",
    ast.Lambda: "lambda",
    ast.JoinedStr: "f-string",
    ast.Subscript: "subscript",
    ast.Starred: "starred expression",
    ast.Compare: "comparison",
    ast.BoolOp: "boolean operator",
    ast.IfExp: "conditional expression",
    ast.NamedExpr: "assignment expression",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield from",
    ast.Slice: "slice",
}
_OPERATOR_SYMBOLS: dict[type[ast.AST], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.MatMult: "@",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.BitAnd: "&",
    ast.Not: "not",
    ast.Invert: "~",
    ast.UAdd: "unary +",
    ast.USub: "unary -",
}


class LiteralError(ValueError):
    """The text or node is not a literal this module accepts (or is too large / too deep)."""

    def __init__(self, message: str, node: ast.AST | None = None) -> None:
        self.lineno: int | None = getattr(node, "lineno", None)
        self.col: int | None = None
        col_offset = getattr(node, "col_offset", None)
        if isinstance(col_offset, int):
            self.col = col_offset + 1
        if self.lineno is not None:
            where = f"line {self.lineno}"
            if self.col is not None:
                where += f", column {self.col}"
            message = f"{message} at {where}"
        self.message = message
        super().__init__(message)


def literal_value(
    node_or_source: str | ast.expr | ast.Expression,
    *,
    max_length: int = DEFAULT_MAX_LENGTH,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> Any:
    """Evaluate a literal given as source text or as an already parsed expression node."""
    if isinstance(node_or_source, str):
        node: ast.AST = parse_expression(node_or_source, max_length)
    else:
        node = node_or_source
    if isinstance(node, ast.Expression):
        node = node.body
    if not isinstance(node, ast.expr):
        raise LiteralError(f"expected an expression node, got {type(node).__name__}")
    return Evaluator(max_depth).value(node, 0)


def canonical_repr(value: Any, _depth: int = 0) -> str:
    """``repr(value)``, except that the items of sets and frozensets are written in the sorted
    order of their own text: the order Python iterates a set of strings in changes with the
    process's string-hash seed, this text does not. Reads back with :func:`literal_value`
    (structural values, ``Point(x=1, tags={'a', 'b'})``, with
    :func:`utdebug.expected_values.expected_value`)."""
    if _depth > DEFAULT_MAX_DEPTH:
        return repr(value)
    if type(value) in (set, frozenset):
        items = sorted(canonical_repr(v, _depth + 1) for v in value)
        if type(value) is frozenset:
            return f"frozenset({{{', '.join(items)}}})" if items else "frozenset()"
        return f"{{{', '.join(items)}}}" if items else "set()"
    if type(value) is list:
        return "[" + ", ".join(canonical_repr(v, _depth + 1) for v in value) + "]"
    if type(value) is tuple:
        parts = [canonical_repr(v, _depth + 1) for v in value]
        return f"({parts[0]},)" if len(parts) == 1 else "(" + ", ".join(parts) + ")"
    if type(value) is dict:
        pairs = (
            f"{canonical_repr(k, _depth + 1)}: {canonical_repr(v, _depth + 1)}"
            for k, v in value.items()
        )
        return "{" + ", ".join(pairs) + "}"
    if type(value).__module__ == "utdebug.sandbox.values":  # a structural value
        from utdebug.sandbox.values import Record, Structured

        if isinstance(value, Structured | Record):
            fields: Iterable[tuple[str, Any]]
            if isinstance(value, Structured):
                name, fields = value.name, value.fields
            else:
                name, fields = value.record_name, zip(value.record_fields, value, strict=True)
            shown = ", ".join(f"{k}={canonical_repr(v, _depth + 1)}" for k, v in fields)
            return f"{name}({shown})"
    return repr(value)


def literal_call(
    source: str,
    func_name: str,
    *,
    max_length: int = DEFAULT_MAX_LENGTH,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Parse ``func_name(arg, ..., kw=...)`` into ``(positional args, keyword args)``.

    The text must be exactly one call to ``func_name`` (surrounding whitespace is allowed);
    every argument must be a literal accepted by :func:`literal_value`. ``*args`` and
    ``**kwargs`` are rejected.
    """
    call = parse_expression(source, max_length).body
    if not isinstance(call, ast.Call):
        raise LiteralError(f"expected a call to {func_name}(), found {describe_node(call)}", call)
    name = dotted_name(call.func)
    if name != func_name:
        raise LiteralError(f"expected a call to {func_name}(), found a call to {name}()", call)
    evaluator = Evaluator(max_depth)
    args: list[Any] = []
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            raise LiteralError("starred argument (*args)", arg)
        args.append(evaluator.value(arg, 1))
    kwargs: dict[str, Any] = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            raise LiteralError("keyword unpacking (**kwargs)", keyword)
        kwargs[keyword.arg] = evaluator.value(keyword.value, 1)
    return tuple(args), kwargs


def parse_expression(source: str, max_length: int) -> ast.Expression:
    if len(source) > max_length:
        raise LiteralError(f"source too long: {len(source):,} characters (limit {max_length:,})")
    try:
        return ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        where = f" at line {exc.lineno}" if exc.lineno is not None else ""
        raise LiteralError(f"syntax error: {exc.msg}{where}") from None
    except (MemoryError, RecursionError):
        raise LiteralError("expression nested too deeply to parse") from None
    except ValueError as exc:  # null bytes (Python 3.11)
        raise LiteralError(f"cannot parse: {exc}") from None


def dotted_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{dotted_name(node.value)}.{node.attr}"
    return f"<{type(node).__name__.lower()}>"


def describe_node(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        return f"call to {dotted_name(node.func)}()"
    if isinstance(node, ast.Name):
        return f"name `{node.id}`"
    if isinstance(node, ast.Attribute):
        return f"attribute access `{dotted_name(node)}`"
    if isinstance(node, ast.BinOp | ast.UnaryOp):
        return f"operator {_OPERATOR_SYMBOLS.get(type(node.op), type(node.op).__name__)}"
    if isinstance(node, ast.Constant):
        return f"constant {node.value!r:.40}"
    return _CONSTRUCT_NAMES.get(type(node), type(node).__name__)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float | complex) and not isinstance(value, bool)


class Evaluator:
    """Recursive evaluation with a depth budget; one instance per top-level call."""

    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth
        self._handlers: dict[type[ast.AST], Callable[[Any, int], Any]] = {
            ast.Constant: self._constant,
            ast.Tuple: self._tuple,
            ast.List: self._list,
            ast.Set: self._set,
            ast.Dict: self._dict,
            ast.Name: self._name,
            ast.Attribute: self._attribute,
            ast.UnaryOp: self._unary,
            ast.BinOp: self._binop,
            ast.Call: self._call,
        }

    def value(self, node: ast.expr, depth: int) -> Any:
        if depth > self.max_depth:
            raise LiteralError(f"nesting deeper than {self.max_depth} levels", node)
        handler = self._handlers.get(type(node))
        if handler is None:
            raise LiteralError(f"{describe_node(node)} is not allowed in a literal", node)
        return handler(node, depth)

    def _items(self, nodes: Iterable[ast.expr], depth: int) -> list[Any]:
        return [self.value(item, depth + 1) for item in nodes]

    def _constant(self, node: ast.Constant, depth: int) -> Any:
        return node.value

    def _tuple(self, node: ast.Tuple, depth: int) -> tuple[Any, ...]:
        return tuple(self._items(node.elts, depth))

    def _list(self, node: ast.List, depth: int) -> list[Any]:
        return self._items(node.elts, depth)

    def _set(self, node: ast.Set, depth: int) -> set[Any]:
        result: set[Any] = _hashable_op(set, self._items(node.elts, depth), node, "set element")
        return result

    def _dict(self, node: ast.Dict, depth: int) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        for key_node, value_node in zip(node.keys, node.values, strict=True):
            if key_node is None:
                raise LiteralError("dict unpacking (**mapping)", value_node)
            key = self.value(key_node, depth + 1)
            value = self.value(value_node, depth + 1)
            try:
                result[key] = value
            except TypeError:
                raise LiteralError(f"unhashable dict key {type(key).__name__}", key_node) from None
        return result

    def _name(self, node: ast.Name, depth: int) -> Any:
        if node.id not in _NAMES:
            raise LiteralError(f"name `{node.id}` is not allowed in a literal", node)
        return _NAMES[node.id]

    def _attribute(self, node: ast.Attribute, depth: int) -> float:
        if isinstance(node.value, ast.Name):
            value = _MODULE_CONSTANTS.get((node.value.id, node.attr))
            if value is not None:
                return value
        raise LiteralError(f"{describe_node(node)} is not allowed in a literal", node)

    def _unary(self, node: ast.UnaryOp, depth: int) -> Any:
        if not isinstance(node.op, ast.UAdd | ast.USub):
            raise LiteralError(f"{describe_node(node)} is not allowed in a literal", node)
        operand = self.value(node.operand, depth + 1)
        if not _is_number(operand):
            raise LiteralError(f"{describe_node(node)} on {type(operand).__name__}", node)
        return -operand if isinstance(node.op, ast.USub) else +operand

    def _binop(self, node: ast.BinOp, depth: int) -> complex:
        """Only the complex literal form ``<real> + <imag>j`` / ``<real> - <imag>j``."""
        if isinstance(node.op, ast.Add | ast.Sub):
            left = self.value(node.left, depth + 1)
            right = node.right
            if (
                isinstance(left, int | float)
                and not isinstance(left, bool)
                and isinstance(right, ast.Constant)
                and isinstance(right.value, complex)
            ):
                imag: complex = right.value
                return left + imag if isinstance(node.op, ast.Add) else left - imag
        raise LiteralError(f"{describe_node(node)} is not allowed in a literal", node)

    def _call(self, node: ast.Call, depth: int) -> Any:
        name = node.func.id if isinstance(node.func, ast.Name) else None
        builder = CALLS.get(name or "")
        if builder is None:
            raise LiteralError(f"{describe_node(node)} is not allowed in a literal", node)
        if any(isinstance(arg, ast.Starred) for arg in node.args):
            raise LiteralError(f"starred argument in {describe_node(node)}", node)
        if len(node.args) > 1:
            raise LiteralError(f"{describe_node(node)} takes at most one argument", node)
        if node.keywords and name != "dict":
            raise LiteralError(f"keyword argument in {describe_node(node)}", node)
        args = self._items(node.args, depth)
        kwargs: dict[str, Any] = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                raise LiteralError(f"keyword unpacking in {describe_node(node)}", node)
            kwargs[keyword.arg] = self.value(keyword.value, depth + 1)
        return builder(node, args, kwargs)


def _hashable_op(factory: Callable[[Any], Any], items: Any, node: ast.AST, what: str) -> Any:
    try:
        return factory(items)
    except TypeError as exc:
        raise LiteralError(f"{what}: {exc}", node) from None


def _build_float(node: ast.Call, args: list[Any], kwargs: dict[str, Any]) -> float:
    if not args:
        return 0.0
    (arg,) = args
    if not (isinstance(arg, str) or _is_number(arg)) or isinstance(arg, complex):
        raise LiteralError(f"float() of {type(arg).__name__}", node)
    try:
        return float(arg)
    except (ValueError, OverflowError) as exc:
        raise LiteralError(f"float(): {exc}", node) from None


def _iterable_arg(node: ast.Call, args: list[Any]) -> list[Any] | None:
    if not args:
        return None
    (arg,) = args
    if not isinstance(arg, list | tuple | set | frozenset | dict | str | bytes):
        raise LiteralError(f"{describe_node(node)} of {type(arg).__name__}", node)
    return list(arg)


def _build_container(factory: Callable[..., Any]) -> Callable[..., Any]:
    def build(node: ast.Call, args: list[Any], kwargs: dict[str, Any]) -> Any:
        items = _iterable_arg(node, args)
        if items is None:
            return factory()
        return _hashable_op(factory, items, node, describe_node(node))

    return build


def _build_dict(node: ast.Call, args: list[Any], kwargs: dict[str, Any]) -> dict[Any, Any]:
    if not args:
        return dict(kwargs)
    (arg,) = args
    if not isinstance(arg, dict | list | tuple):
        raise LiteralError(f"dict() of {type(arg).__name__}", node)
    try:
        return dict(arg, **kwargs)
    except (TypeError, ValueError) as exc:
        raise LiteralError(f"dict(): {exc}", node) from None


CALLS: dict[str, Callable[[ast.Call, list[Any], dict[str, Any]], Any]] = {
    "float": _build_float,
    "set": _build_container(set),
    "frozenset": _build_container(frozenset),
    "tuple": _build_container(tuple),
    "list": _build_container(list),
    "dict": _build_dict,
}


def closing_bracket(text: str, at: int) -> int | None:
    """The index of the bracket closing the one at ``at`` (strings skipped), or None."""
    depth = 0
    quote: str | None = None
    i = at
    while i < len(text) and i - at < 20_000:
        ch = text[i]
        if quote is not None:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None
