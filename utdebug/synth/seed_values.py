"""The values of the expressions a test passes to a function, read with :mod:`ast` and never
evaluated as code: literals and what a test builds from them (names bound earlier, arithmetic
and concatenation, comprehensions, subscripts, ``range``/``iter``/``sorted`` ...), enum members
(:class:`~utdebug.sandbox.values.EnumMember`), functions (a lambda, a ``def`` of the test file,
a function of the module by name: :class:`~utdebug.sandbox.values.SourceFunction`) and
iterators (:class:`~utdebug.sandbox.values.IterOf`), which the sandbox's child re-creates.

Every value is bounded before it is built: an expression whose source is longer than
:data:`MAX_NODE_CHARS`, or a value of more than :data:`MAX_ITEMS` items, is refused with the
reason (:class:`~utdebug.literals.LiteralError`), so a huge literal in a test file costs its
parse and no more.
"""

from __future__ import annotations

import ast
import builtins
import copy
import math
import operator
import string
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any

from utdebug.expected_values import _ClassIndex, _ExpectedEvaluator
from utdebug.literals import DEFAULT_MAX_DEPTH, Evaluator, LiteralError, describe_node, dotted_name
from utdebug.sandbox.values import EnumMember, IterOf, SourceFunction
from utdebug.synth.values import sorted_items

__all__ = [
    "MAX_ITEMS",
    "MAX_NODE_CHARS",
    "Scope",
    "SeedEvaluator",
    "Unknown",
    "bind",
    "items_of",
    "unbind",
]

MAX_NODE_CHARS = 20_000
"""Longest source of one expression read as a value (a larger literal is refused unread)."""
MAX_ITEMS = 10_000
"""Most items (or characters / 10) a value built from an expression may hold."""
EXPRESSION_BUDGET = 1_000_000
"""Items and characters the values read for one expression may hold in all (copies and
what is built from them included)."""
FILE_BUDGET = 10_000_000
"""The same, for all the expressions of one file (or docstring)."""
_MAX_TEXT = 100_000
_MAX_INT_BITS = 4096


@dataclass(frozen=True, slots=True)
class Unknown:
    """A name bound to something that is not a value this module reads (the reason why)."""

    reason: str


_NUMBERS = (int, float, complex, Decimal, Fraction)
_SEQUENCES = (list, tuple, str, bytes)


@dataclass
class Scope:
    """What one test file (or docstring) says about the names its tests use: module-level
    constants (read when first used), its own functions (sent by source), its imports, and the
    module under test (its name and source, for enum classes and its functions)."""

    source: str
    constants: dict[str, ast.expr] = field(default_factory=dict)
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)
    imports: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Local name -> (module, attribute or "" for the module itself)."""
    import_nodes: list[ast.Import | ast.ImportFrom] = field(default_factory=list)
    target_module: str = ""
    """The import name of the module under test ("": unknown)."""
    target_source: str | None = None
    budget: int = FILE_BUDGET
    """What the values read from this file may still hold (items and characters)."""
    spent: int = 0
    """What the expression being read holds so far."""
    _values: dict[str, Any] = field(default_factory=dict)
    _classes: Any = None
    _lines: list[int] | None = None

    def charge(self, n: int, node: ast.AST) -> None:
        """Book ``n`` items or characters of values built; refuse past a budget."""
        self.budget -= n
        self.spent += n
        if self.spent > EXPRESSION_BUDGET:
            raise LiteralError(
                f"an expression whose values hold over {EXPRESSION_BUDGET:,} items", node
            )
        if self.budget < 0:
            raise LiteralError(
                f"the values read from this file hold over {FILE_BUDGET:,} items", node
            )

    @classmethod
    def of_module(
        cls,
        tree: ast.Module,
        source: str,
        target_module: str = "",
        target_source: str | None = None,
    ) -> Scope:
        scope = cls(source, target_module=target_module, target_source=target_source)
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    scope._constant(target, stmt.value)
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                scope._constant(stmt.target, stmt.value)
            elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                scope.functions[stmt.name] = stmt
            elif isinstance(stmt, ast.Import | ast.ImportFrom):
                scope.add_import(stmt)
        return scope

    def _constant(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Name):
            self.constants[target.id] = value
        elif (
            isinstance(target, ast.Tuple | ast.List)
            and isinstance(value, ast.Tuple | ast.List)
            and len(target.elts) == len(value.elts)
        ):
            for t, v in zip(target.elts, value.elts, strict=True):
                self._constant(t, v)

    def add_import(self, stmt: ast.Import | ast.ImportFrom) -> None:
        self.import_nodes.append(stmt)
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    self.imports[alias.asname] = (alias.name, "")
                else:
                    top = alias.name.split(".")[0]
                    self.imports[top] = (top, "")
        elif stmt.level == 0 and stmt.module:
            for alias in stmt.names:
                if alias.name != "*":
                    self.imports[alias.asname or alias.name] = (stmt.module, alias.name)

    # -- bounds --------------------------------------------------------------------------------

    def span(self, node: ast.AST) -> int:
        """How many characters of source ``node`` covers (0 when it has no position)."""
        end_line = getattr(node, "end_lineno", None)
        end_col = getattr(node, "end_col_offset", None)
        line = getattr(node, "lineno", None)
        col = getattr(node, "col_offset", None)
        if end_line is None or end_col is None or line is None or col is None:
            return 0
        if self._lines is None:
            starts = [0]
            for text in self.source.splitlines(keepends=True):
                starts.append(starts[-1] + len(text))
            self._lines = starts
        starts = self._lines
        a = starts[min(int(line), len(starts)) - 1] + int(col)
        b = starts[min(int(end_line), len(starts)) - 1] + int(end_col)
        return max(0, b - a)

    def admit(self, node: ast.AST) -> None:
        """Start reading the expression ``node``: refused when its source is longer than
        :data:`MAX_NODE_CHARS`; its values get a fresh :data:`EXPRESSION_BUDGET`."""
        self.spent = 0
        n = self.span(node)
        if n > MAX_NODE_CHARS:
            raise LiteralError(
                f"an expression of {n:,} characters (seeds are read up to {MAX_NODE_CHARS:,})", node
            )

    # -- names ---------------------------------------------------------------------------------

    def constant(self, name: str) -> Any:
        """A module-level constant's value (read once), or an :class:`Unknown`."""
        if name not in self._values:
            self._values[name] = Unknown(f"`{name}` is being read")  # a name defined by itself
            outer = self.spent  # the expression that names it: its copy is booked there
            try:
                node = self.constants[name]
                self.admit(node)
                value: Any = SeedEvaluator(self, {}).value(node, 0)
            except (LiteralError, RecursionError) as exc:
                value = Unknown(str(exc))
            finally:
                self.spent = outer
            self._values[name] = value
        return self._values[name]

    def classes(self) -> Any:
        """The module under test's classes (enum classes among them), or None."""
        if self._classes is None and self.target_source is not None:
            try:
                self._classes = _ClassIndex(self.target_source, 5_000_000)
            except LiteralError:
                self._classes = False
        return self._classes or None

    def target_tree(self) -> ast.Module:
        """The module under test's syntax tree (empty when it has none or does not parse)."""
        key = "<target tree>"
        if key not in self._values:
            try:
                self._values[key] = ast.parse(self.target_source or "")
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self._values[key] = ast.Module(body=[], type_ignores=[])
        tree: ast.Module = self._values[key]
        return tree

    def target_names(self) -> frozenset[str]:
        """The names the module under test defines at its top level (functions, classes)."""
        key = "<target names>"
        if key not in self._values:
            self._values[key] = frozenset(
                stmt.name
                for stmt in self.target_tree().body
                if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            )
        names: frozenset[str] = self._values[key]
        return names

    def reset_source(self, source: str) -> None:
        """Read positions against another text (each doctest example is its own)."""
        self.source, self._lines = source, None

    def is_target(self, module: str) -> bool:
        return bool(self.target_module) and module == self.target_module

    def function_source(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
        """A test file's function as the child runs it: the file's imports it uses, then its
        ``def`` (without decorators)."""
        used = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
        lines = []
        for imp in self.import_nodes:
            names = {(a.asname or a.name).split(".")[0] for a in imp.names}
            if names & used:
                lines.append(ast.unparse(imp))
        bare = copy.copy(fn)
        bare.decorator_list = []
        lines.append(ast.unparse(bare))
        return "\n".join(lines) + "\n"


def _sized(value: Any, node: ast.AST) -> Any:
    """``value``, unless it is too big to be a seed."""
    if isinstance(value, str | bytes) and len(value) > _MAX_TEXT:
        raise LiteralError(f"a text of {len(value):,} characters", node)
    if isinstance(value, list | tuple | set | frozenset | dict) and len(value) > MAX_ITEMS:
        raise LiteralError(f"a value of {len(value):,} items (at most {MAX_ITEMS:,})", node)
    if type(value) is int and value.bit_length() > _MAX_INT_BITS:
        raise LiteralError("an int of more than 4096 bits", node)
    return value


_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.BitOr: operator.or_,
    ast.BitAnd: operator.and_,
    ast.BitXor: operator.xor,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}
_PLAIN = (type(None), bool, int, float, complex, str, bytes, list, tuple, set, frozenset, dict)
_METHODS: dict[type, frozenset[str]] = {
    str: frozenset(
        [
            "split",
            "rsplit",
            "splitlines",
            "join",
            "upper",
            "lower",
            "strip",
            "lstrip",
            "rstrip",
            "replace",
            "title",
            "capitalize",
            "casefold",
            "swapcase",
            "encode",
            "startswith",
            "endswith",
            "zfill",
            "center",
            "ljust",
            "rjust",
            "count",
            "find",
            "index",
            "partition",
            "rpartition",
        ]
    ),
    bytes: frozenset(["decode", "split", "join", "upper", "lower", "strip", "replace"]),
    dict: frozenset(["items", "keys", "values", "copy", "get"]),
    list: frozenset(["copy", "index", "count"]),
    tuple: frozenset(["index", "count"]),
    set: frozenset(["copy", "union", "intersection", "difference"]),
    frozenset: frozenset(["copy", "union", "intersection", "difference"]),
}


def items_of(value: Any, node: ast.AST) -> list[Any]:
    """The items of a value a test iterates over (a range or iterator: its items)."""
    if isinstance(value, IterOf):
        if value.form == "range":
            r = range(*value.items)
            if len(r) > MAX_ITEMS:
                raise LiteralError(f"a range of {len(r):,} items", node)
            return list(r)
        return list(value.items)
    if isinstance(value, dict):
        return list(value)
    if isinstance(value, list | tuple | str | bytes | set | frozenset):
        return sorted_items(value) if isinstance(value, set | frozenset) else list(value)
    raise LiteralError(f"cannot iterate over a {type(value).__name__}", node)


class SeedEvaluator(_ExpectedEvaluator):
    """:func:`~utdebug.expected_values.expected_value`'s reader plus the names a test binds
    (``env``: local name -> value or :class:`Unknown`; ``self.x`` as ``"self.x"``), the
    module's constants and functions, operators on plain values, comprehensions, subscripts,
    a few builtins, enum members, lambdas and iterators."""

    def __init__(self, scope: Scope, env: Mapping[str, Any], max_depth: int = DEFAULT_MAX_DEPTH):
        super().__init__(max_depth, None)
        self.scope = scope
        self.env = env
        self._handlers.update(
            {
                ast.Lambda: self._lambda,
                ast.GeneratorExp: self._comprehension,
                ast.ListComp: self._comprehension,
                ast.SetComp: self._comprehension,
                ast.DictComp: self._comprehension,
                ast.Subscript: self._subscript,
                ast.Compare: self._compare,
                ast.BoolOp: self._boolop,
                ast.IfExp: self._ifexp,
                ast.JoinedStr: self._fstring,
            }
        )

    def value(self, node: ast.expr, depth: int) -> Any:
        value = _sized(super().value(node, depth), node)
        if isinstance(value, str | bytes | list | tuple | set | frozenset | dict):
            self.scope.charge(len(value), node)
        return value

    def _copy(self, value: Any, node: ast.AST) -> Any:
        """A copy of a value read before (each seed gets its own), booked in full."""
        self.scope.charge(_weight(value, EXPRESSION_BUDGET + 1), node)
        return copy.deepcopy(value)

    # -- names and attributes ----------------------------------------------------------------

    def _bound(self, key: str, node: ast.AST) -> Any:
        value = self.env[key]
        if isinstance(value, Unknown):
            raise LiteralError(f"`{key}` is not a value read from the test ({value.reason})", node)
        return self._copy(value, node)

    def _name(self, node: ast.Name, depth: int) -> Any:
        name = node.id
        if name in self.env:
            return self._bound(name, node)
        scope = self.scope
        if name in scope.constants:
            value = scope.constant(name)
            if isinstance(value, Unknown):
                raise LiteralError(f"`{name}` is not a literal ({value.reason})", node)
            return self._copy(value, node)
        if name in scope.functions:
            fn = scope.functions[name]
            return SourceFunction(scope.function_source(fn), fn.name)
        if name in scope.imports:
            module, attr = scope.imports[name]
            if attr:
                return self._imported(module, attr, node)
        try:
            return super()._name(node, depth)
        except LiteralError:
            pass
        if name in scope.target_names():
            return SourceFunction("", name)
        if name in _BUILTINS:  # len, map, TypeError ...: the child's own
            return SourceFunction("", name)
        raise LiteralError(f"name `{name}` is not bound to a value the test shows", node)

    def _imported(self, module: str, attr: str, node: ast.AST) -> Any:
        """A name a test imported: a constant of the module under test when its source binds
        it to a literal, else the object itself, looked up by name in the child."""
        if self.scope.is_target(module):
            value = _target_constant(self.scope, attr)
            if value is not None:
                return value
            return SourceFunction("", attr)
        return SourceFunction("", attr, module)

    def _attribute(self, node: ast.Attribute, depth: int) -> Any:
        try:
            return Evaluator._attribute(self, node, depth)  # math.inf, np.nan ...
        except LiteralError:
            pass
        dotted = dotted_name(node)
        if dotted in self.env:
            return self._bound(dotted, node)
        if dotted in _MODULE_VALUES:
            return _MODULE_VALUES[dotted]
        if dotted.startswith("<"):
            raise LiteralError(f"{describe_node(node)} is not allowed in a seed", node)
        if dotted in ("timezone.utc", "datetime.timezone.utc", "datetime.UTC"):
            return super()._attribute(node, depth)
        module, qual = self._split(dotted)
        if module is None:
            raise LiteralError(f"{describe_node(node)} is not a value the test shows", node)
        owner, _, member = qual.rpartition(".")
        where = "" if self.scope.is_target(module) else module
        if not owner:  # mod.name: a function or constant of a module
            if self.scope.is_target(module):
                value = _target_constant(self.scope, member)
                if value is not None:
                    return value
            return SourceFunction("", member, where)
        classes = self.scope.classes() if self.scope.is_target(module) or not module else None
        found = classes.find(owner) if classes is not None else None
        if found is not None:
            if found[1].kind not in ("enum", "value-enum"):
                raise LiteralError(f"`{owner}` is not an enum class, for `{dotted}`", node)
            if member not in found[1].members:
                raise LiteralError(f"enum `{owner}` has no member `{member}`", node)
            return EnumMember(found[0], member, where)
        if not owner.rsplit(".", 1)[-1][:1].isupper():
            raise LiteralError(f"{describe_node(node)} is not a value the test shows", node)
        return EnumMember(owner, member, where)

    def _split(self, dotted: str) -> tuple[str | None, str]:
        """(module, qualified name inside it) of a dotted name a test writes: the head is a
        name it imported (a module, or a class of a module), or a class of the module under
        test; (None, "") when the head is none of them."""
        head, _, rest = dotted.partition(".")
        if head in self.scope.imports:
            module, attr = self.scope.imports[head]
            if not attr:  # import pkg.mod [as m]
                full = f"{module}.{rest}"
                target = self.scope.target_module
                if target and full.startswith(target + "."):
                    return target, full[len(target) + 1 :]
                parts = full.split(".")
                # the module is the dotted prefix before the first capitalised part
                for i, part in enumerate(parts):
                    if part[:1].isupper():
                        return ".".join(parts[:i]), ".".join(parts[i:])
                return ".".join(parts[:-1]), parts[-1]
            if attr[:1].isupper():  # from mod import Color
                return module, f"{attr}.{rest}"
            return f"{module}.{attr}", rest  # from pkg import mod
        classes = self.scope.classes()
        if classes is not None and head in classes.defs:
            return self.scope.target_module, dotted
        if head[:1].isupper() and head not in self.scope.constants:
            return "", dotted  # a class the module under test imports or defines
        return None, ""

    # -- functions and iterators ---------------------------------------------------------------

    def _lambda(self, node: ast.Lambda, depth: int) -> SourceFunction:
        """A lambda, sent as its text; names the test bound to plain values are written in."""
        params = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
        body = _Inline(self, params).visit(copy.deepcopy(node))
        return SourceFunction(ast.unparse(body), "<lambda>")

    def _call(self, node: ast.Call, depth: int) -> Any:
        func = node.func
        if isinstance(func, ast.Attribute) and not isinstance(func.value, ast.Name | ast.Attribute):
            return self._method(node, depth)
        if isinstance(func, ast.Attribute) and dotted_name(func.value) in self.env:
            return self._method(node, depth)
        if isinstance(func, ast.Attribute) and (
            isinstance(func.value, ast.Name) and func.value.id in self.scope.constants
        ):
            return self._method(node, depth)
        name = func.id if isinstance(func, ast.Name) else None
        if name in _BUILDERS and name not in self.env and name not in self.scope.functions:
            unusual = any(isinstance(a, ast.Starred) for a in node.args) or node.keywords
            if unusual and name not in ("sorted", "dict", "range"):
                raise LiteralError(f"arguments of {describe_node(node)}", node)
            args = self._items([a for a in node.args if not isinstance(a, ast.Starred)], depth)
            kwargs = {k.arg: self.value(k.value, depth + 1) for k in node.keywords if k.arg}
            return _sized(_BUILDERS[name](node, args, kwargs), node)
        return super()._call(node, depth)

    def _method(self, node: ast.Call, depth: int) -> Any:
        """``"a,b".split(",")``, ``d.items()`` ...: a few methods of plain values."""
        assert isinstance(node.func, ast.Attribute)
        owner = self.value(node.func.value, depth + 1)
        name = node.func.attr
        if type(owner) not in _METHODS or name not in _METHODS[type(owner)]:
            raise LiteralError(f"method {name}() of a {type(owner).__name__}", node)
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise LiteralError(f"arguments of {describe_node(node)}", node)
        args = self._items(node.args, depth)
        if not all(isinstance(a, _PLAIN) for a in args):
            raise LiteralError(f"arguments of {describe_node(node)}", node)
        if name == "join" and len(args) == 1:
            args = [_sized(list(items_of(args[0], node)), node)]
            if sum(len(x) for x in args[0] if isinstance(x, str | bytes)) > _MAX_TEXT:
                raise LiteralError("a join too long to build", node)
        if name in _WIDTHS and args and isinstance(args[0], int) and args[0] > _MAX_TEXT:
            raise LiteralError(f"{name}() to a width of {args[0]:,}", node)
        new = args[1] if name == "replace" and len(args) >= 2 else ""
        if isinstance(new, str | bytes) and len(owner) * max(1, len(new)) > 10 * _MAX_TEXT:
            raise LiteralError("a replace() too long to build", node)
        try:
            out = getattr(owner, name)(*args)
        except Exception as exc:
            raise LiteralError(f"{name}(): {type(exc).__name__}", node) from None
        if name in ("items", "keys", "values"):
            out = list(out)
        return _sized(out, node)

    # -- operators -----------------------------------------------------------------------------

    def _binop(self, node: ast.BinOp, depth: int) -> Any:
        left = self.value(node.left, depth + 1)
        right = self.value(node.right, depth + 1)
        op = _BINARY.get(type(node.op))
        if op is None:
            raise LiteralError(f"{describe_node(node)} is not allowed in a seed", node)
        _guard(node, left, right)
        try:
            return _sized(op(left, right), node)
        except (ArithmeticError, TypeError, ValueError) as exc:
            raise LiteralError(f"{describe_node(node)}: {type(exc).__name__}", node) from None

    def _unary(self, node: ast.UnaryOp, depth: int) -> Any:
        if isinstance(node.op, ast.Not):
            return not self.value(node.operand, depth + 1)
        if isinstance(node.op, ast.Invert):
            operand = self.value(node.operand, depth + 1)
            if type(operand) is not int:
                raise LiteralError(f"~ on a {type(operand).__name__}", node)
            return ~operand
        return super()._unary(node, depth)

    def _compare(self, node: ast.Compare, depth: int) -> bool:
        left = self.value(node.left, depth + 1)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.value(right_node, depth + 1)
            if not (isinstance(left, _PLAIN) and isinstance(right, _PLAIN)):
                raise LiteralError("a comparison of values that are not plain data", node)
            try:
                if not _COMPARE[type(op)](left, right):
                    return False
            except TypeError:
                raise LiteralError("a comparison that raises TypeError", node) from None
            left = right
        return True

    def _boolop(self, node: ast.BoolOp, depth: int) -> Any:
        value: Any = None
        for item in node.values:
            value = self.value(item, depth + 1)
            if isinstance(node.op, ast.And) and not value:
                return value
            if isinstance(node.op, ast.Or) and value:
                return value
        return value

    def _ifexp(self, node: ast.IfExp, depth: int) -> Any:
        test = self.value(node.test, depth + 1)
        return self.value(node.body if test else node.orelse, depth + 1)

    def _fstring(self, node: ast.JoinedStr, depth: int) -> str:
        parts = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                parts.append(str(part.value))
            elif isinstance(part, ast.FormattedValue) and part.format_spec is None:
                value = self.value(part.value, depth + 1)
                if not isinstance(value, _PLAIN):
                    raise LiteralError("an f-string of a value that is not plain data", node)
                conversions: dict[int, Callable[[object], str]] = {
                    -1: str,
                    115: str,
                    114: repr,
                    97: ascii,
                }
                parts.append(conversions[part.conversion](value))
            else:
                raise LiteralError("an f-string with a format spec", node)
        text: str = _sized("".join(parts), node)
        return text

    def _subscript(self, node: ast.Subscript, depth: int) -> Any:
        owner = self.value(node.value, depth + 1)
        if isinstance(node.slice, ast.Slice):
            bounds = [
                None if part is None else self.value(part, depth + 1)
                for part in (node.slice.lower, node.slice.upper, node.slice.step)
            ]
            if not all(b is None or type(b) is int for b in bounds) or bounds[2] == 0:
                raise LiteralError("a slice of something other than ints", node)
            key: Any = slice(*bounds)
        else:
            key = self.value(node.slice, depth + 1)
        if not isinstance(owner, list | tuple | str | bytes | dict):
            raise LiteralError(f"a subscript of a {type(owner).__name__}", node)
        try:
            return self._copy(owner[key], node)
        except (LookupError, TypeError) as exc:
            raise LiteralError(f"subscript: {type(exc).__name__}", node) from None

    def _comprehension(self, node: Any, depth: int) -> Any:
        rows: list[dict[str, Any]] = [dict(self.env)]
        for gen in node.generators:
            if gen.is_async:
                raise LiteralError("an async comprehension", node)
            out: list[dict[str, Any]] = []
            for env in rows:
                inner = SeedEvaluator(self.scope, env, self.max_depth)
                for item in items_of(inner.value(gen.iter, depth + 1), node):
                    row = dict(env)
                    bind(row, gen.target, item)
                    cond = SeedEvaluator(self.scope, row, self.max_depth)
                    if all(cond.value(test, depth + 1) for test in gen.ifs):
                        out.append(row)
                    if len(out) > MAX_ITEMS:
                        raise LiteralError(f"a comprehension of over {MAX_ITEMS:,} items", node)
            rows = out
        make = [SeedEvaluator(self.scope, row, self.max_depth) for row in rows]
        if isinstance(node, ast.DictComp):
            return {m.value(node.key, depth + 1): m.value(node.value, depth + 1) for m in make}
        values = [m.value(node.elt, depth + 1) for m in make]
        if isinstance(node, ast.SetComp):
            try:
                return set(values)
            except TypeError:
                raise LiteralError("a set of unhashable items", node) from None
        return IterOf("gen", tuple(values)) if isinstance(node, ast.GeneratorExp) else values


_WIDTHS = frozenset({"zfill", "center", "ljust", "rjust"})


def _weight(value: Any, limit: int) -> int:
    """Items and characters inside ``value`` (counting stops past ``limit``)."""
    stack, n = [value], 0
    while stack and n <= limit:
        v = stack.pop()
        if isinstance(v, str | bytes):
            n += len(v)
        elif isinstance(v, list | tuple | set | frozenset):
            n += len(v)
            stack.extend(v)
        elif isinstance(v, dict):
            n += len(v)
            stack.extend(v)
            stack.extend(v.values())
        elif isinstance(v, IterOf):
            n += len(v.items)
            stack.extend(v.items)
        else:
            n += 1
    return n


def _guard(node: ast.AST, left: Any, right: Any) -> None:
    """Refuse an operation whose result would be huge before it is computed."""
    op = getattr(node, "op", None)
    if isinstance(op, ast.Pow) and isinstance(left, _NUMBERS) and isinstance(right, _NUMBERS):
        if isinstance(right, int) and abs(right) > 64 and abs(left) not in (0, 1):
            raise LiteralError("a power too large to compute", node)
        if isinstance(right, float) and abs(right) > 1024:
            raise LiteralError("a power too large to compute", node)
    if isinstance(op, ast.LShift) and isinstance(right, int) and right > _MAX_INT_BITS:
        raise LiteralError("a shift too large to compute", node)
    if isinstance(op, ast.Mult):
        for seq, n in ((left, right), (right, left)):
            cap = MAX_ITEMS * (10 if isinstance(seq, str) else 1)
            if isinstance(seq, _SEQUENCES) and isinstance(n, int) and len(seq) * max(n, 0) > cap:
                raise LiteralError("a repetition too large to build", node)
    if isinstance(op, ast.Mod) and isinstance(left, str | bytes):
        raise LiteralError("%-formatting", node)


def _target_constant(scope: Scope, name: str) -> Any:
    """The literal a module-level name of the module under test is bound to, or None."""
    if scope.target_source is None:
        return None
    key = f"<target>.{name}"
    if key not in scope._values:
        value: Any = None
        for stmt in scope.target_tree().body:
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id == name
            ):
                target = Scope(scope.target_source)
                try:
                    target.admit(stmt.value)
                    value = SeedEvaluator(target, {}).value(stmt.value, 0)
                except (LiteralError, RecursionError):
                    value = None
        scope._values[key] = value
    scope.charge(_weight(scope._values[key], EXPRESSION_BUDGET + 1), ast.Constant(None))
    return copy.deepcopy(scope._values[key])


class _Inline(ast.NodeTransformer):
    """A lambda's free names that the test bound to plain values, written in as literals."""

    def __init__(self, ev: SeedEvaluator, params: set[str]) -> None:
        self.ev, self.params = ev, params

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.params or not isinstance(node.ctx, ast.Load):
            return node
        if node.id not in self.ev.env and node.id not in self.ev.scope.constants:
            return node
        try:
            value = self.ev.value(node, 0)
        except (LiteralError, RecursionError):
            return node
        if not isinstance(value, _PLAIN):
            return node
        try:
            return ast.copy_location(ast.parse(repr(value), mode="eval").body, node)
        except (SyntaxError, ValueError, RecursionError):
            return node


def bind(env: dict[str, Any], target: ast.expr, value: Any) -> None:
    """Bind an assignment's (or a loop's) target to ``value`` in ``env``: names, ``self.x``,
    and tuples unpacked; what cannot be bound is :class:`Unknown`."""
    if isinstance(target, ast.Name):
        env[target.id] = value
    elif isinstance(target, ast.Attribute):
        name = dotted_name(target)
        if not name.startswith("<"):
            env[name] = value
    elif isinstance(target, ast.Tuple | ast.List):
        items: list[Any] | None = None
        if isinstance(value, list | tuple) and len(value) == len(target.elts):
            items = list(value)
        for k, elt in enumerate(target.elts):
            if isinstance(elt, ast.Starred):
                items = None
            bind(env, elt.value if isinstance(elt, ast.Starred) else elt, _at(items, k, value))


def _at(items: list[Any] | None, k: int, value: Any) -> Any:
    if items is None:
        reason = value.reason if isinstance(value, Unknown) else "not unpacked"
        return Unknown(reason)
    return items[k]


def unbind(env: dict[str, Any], names: Iterable[str], reason: str) -> None:
    for name in names:
        env[name] = Unknown(reason)


# -- builtins a test calls on plain values ---------------------------------------------------


def _range(node: ast.Call, args: list[Any], kwargs: dict[str, Any]) -> IterOf:
    if kwargs or not 1 <= len(args) <= 3 or not all(type(a) is int for a in args):
        raise LiteralError("range() of other than one to three ints", node)
    if len(args) == 3 and args[2] == 0:
        raise LiteralError("range() with a step of 0", node)
    return IterOf("range", tuple(args))


def _iter(node: ast.Call, args: list[Any], kwargs: dict[str, Any]) -> IterOf:
    if len(args) != 1 or kwargs:
        raise LiteralError("iter() of other than one iterable", node)
    if isinstance(args[0], IterOf) and args[0].form != "range":
        return IterOf("iter", args[0].items)
    return IterOf("iter", tuple(items_of(args[0], node)))


def _reversed(node: ast.Call, args: list[Any], kwargs: dict[str, Any]) -> IterOf:
    if len(args) != 1 or kwargs or isinstance(args[0], set | frozenset | dict):
        raise LiteralError("reversed() of other than one sequence", node)
    return IterOf("iter", tuple(reversed(items_of(args[0], node))))


def _materialized(make: Callable[[list[Any]], Any]) -> Callable[..., Any]:
    def build(node: ast.Call, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if kwargs or len(args) > 1:
            raise LiteralError(f"arguments of {describe_node(node)}", node)
        try:
            return make(items_of(args[0], node) if args else [])
        except TypeError as exc:
            raise LiteralError(f"{describe_node(node)}: {exc}", node) from None

    return build


def _sorted(node: ast.Call, args: list[Any], kwargs: dict[str, Any]) -> list[Any]:
    if len(args) != 1 or set(kwargs) - {"reverse"}:
        raise LiteralError("sorted() with a key", node)
    try:
        return sorted(items_of(args[0], node), reverse=bool(kwargs.get("reverse")))
    except TypeError as exc:
        raise LiteralError(f"sorted(): {exc}", node) from None


def _dict(node: ast.Call, args: list[Any], kwargs: dict[str, Any]) -> dict[Any, Any]:
    if len(args) > 1:
        raise LiteralError("dict() of more than one argument", node)
    try:
        base = dict(args[0]) if args and isinstance(args[0], dict) else dict(_pairs(args, node))
        return {**base, **kwargs}
    except (TypeError, ValueError) as exc:
        raise LiteralError(f"dict(): {exc}", node) from None


def _pairs(args: list[Any], node: ast.AST) -> list[Any]:
    return items_of(args[0], node) if args else []


def _scalar(make: Callable[[Any], Any]) -> Callable[..., Any]:
    def build(node: ast.Call, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if kwargs or len(args) > 1 or not all(isinstance(a, _PLAIN) for a in args):
            raise LiteralError(f"arguments of {describe_node(node)}", node)
        try:
            return make(*args)
        except (TypeError, ValueError, OverflowError) as exc:
            raise LiteralError(f"{describe_node(node)}: {type(exc).__name__}", node) from None

    return build


def _numbers(make: Callable[[list[Any]], Any]) -> Callable[..., Any]:
    def build(node: ast.Call, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if kwargs:
            raise LiteralError(f"keywords of {describe_node(node)}", node)
        items = items_of(args[0], node) if len(args) == 1 else args
        try:
            return make(items)
        except (TypeError, ValueError) as exc:
            raise LiteralError(f"{describe_node(node)}: {exc}", node) from None

    return build


def _zip(node: ast.Call, args: list[Any], kwargs: dict[str, Any]) -> IterOf:
    if kwargs:
        raise LiteralError("zip() with keywords", node)
    return IterOf("iter", tuple(zip(*(items_of(a, node) for a in args), strict=False)))


def _enumerate(node: ast.Call, args: list[Any], kwargs: dict[str, Any]) -> IterOf:
    start = kwargs.get("start", args[1] if len(args) > 1 else 0)
    if not args or type(start) is not int:
        raise LiteralError("enumerate() of other than an iterable and an int", node)
    return IterOf("iter", tuple(enumerate(items_of(args[0], node), start)))


_BUILDERS: dict[str, Callable[[ast.Call, list[Any], dict[str, Any]], Any]] = {
    "range": _range,
    "iter": _iter,
    "reversed": _reversed,
    "list": _materialized(list),
    "tuple": _materialized(tuple),
    "set": _materialized(set),
    "frozenset": _materialized(frozenset),
    "sorted": _sorted,
    "dict": _dict,
    "len": _scalar(len),
    "abs": _scalar(abs),
    "str": _scalar(str),
    "int": _scalar(int),
    "bool": _scalar(bool),
    "min": _numbers(min),
    "max": _numbers(max),
    "sum": _numbers(sum),
    "zip": _zip,
    "enumerate": _enumerate,
}
_BUILTINS = frozenset(
    name
    for name, value in vars(builtins).items()
    if not name.startswith("_") and (callable(value) or name in ("Ellipsis", "NotImplemented"))
)
_MODULE_VALUES: dict[str, Any] = {
    "math.pi": math.pi,
    "math.e": math.e,
    "math.tau": math.tau,
    "sys.maxsize": sys.maxsize,
    "string.ascii_lowercase": string.ascii_lowercase,
    "string.ascii_uppercase": string.ascii_uppercase,
    "string.ascii_letters": string.ascii_letters,
    "string.digits": string.digits,
    "string.punctuation": string.punctuation,
    "string.whitespace": string.whitespace,
}
