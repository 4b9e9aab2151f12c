"""What a test's assertion checks (:func:`assertion`: the subject, the expected value's text and
the statements it needs), and where an expected value's text becomes a value
(:func:`expected_value`); with the small :mod:`ast` helpers of reading test programs.
"""

from __future__ import annotations

import ast
import builtins
import re
import textwrap

from utdebug import expected_values
from utdebug.agents.reply_syntax import ParsedValue, ParseFailure, parse_value
from utdebug.literals import LiteralError

_TRUTH = {"assertTrue": True, "assertFalse": False}


_EQUAL = frozenset({"assertEqual", "assertEquals", "assertAlmostEqual", "assertListEqual",
                    "assertDictEqual", "assertTupleEqual", "assertSetEqual", "assertCountEqual",
                    "assertSequenceEqual", "assertMultiLineEqual"})  # fmt: skip


def expected_value(source: str, *, module_source: str | None = None) -> ParsedValue | ParseFailure:
    """The one place where an expected value's text becomes a value: a literal or constructor
    calls read structurally (:func:`utdebug.expected_values.expected_value`, with the classes of
    ``module_source``), else a pending expression the sandbox computes (as
    :func:`utdebug.agents.parsing.parse_output`)."""
    text = source.strip()
    try:
        return ParsedValue(expected_values.expected_value(text, module_source=module_source), text)
    except LiteralError:
        return parse_value(text)


def names_objects(source: str) -> bool:
    """The expression uses a name other than a builtin's (one the setup binds): it cannot be
    computed apart from the test, as a pending expected value is."""
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError:
        return False
    return any(isinstance(n, ast.Name) and not hasattr(builtins, n.id) for n in ast.walk(tree))


def equals(left: str, right: str) -> str:
    compare = ast.Compare(
        left=ast.parse(left, mode="eval").body,
        ops=[ast.Eq()],
        comparators=[ast.parse(right, mode="eval").body],
    )
    return ast.unparse(compare)


_Found = tuple[str, str | None, str | None, list[str]]
"""(subject, expected source, raised type, setup lines inside a ``with raises`` block)."""


def assertion(node: ast.stmt) -> _Found | ParseFailure | None:
    """What an assertion statement checks, or ``None`` for another statement."""
    if isinstance(node, ast.Assert):
        return _assert(node.test)
    if isinstance(node, ast.With | ast.AsyncWith) and len(node.items) == 1:
        ctx = node.items[0].context_expr
        if isinstance(ctx, ast.Call) and callee_name(ctx.func) in ("raises", "assertRaises"):
            if not ctx.args:
                return ParseFailure("a raises block names no exception type")
            kind = ast.unparse(ctx.args[0])
            # an assertion inside the block never runs once the call raised: left out
            stmts = [s for s in node.body if not isinstance(s, ast.Pass) and assertion(s) is None]
            if not stmts:
                return ParseFailure("a raises block holds no call")
            last = stmts[-1]
            value = last.value if isinstance(last, ast.Expr | ast.Assign) else None
            if value is None:
                return ParseFailure("the last statement of a raises block is not a call")
            inner = [ast.unparse(s) for s in stmts[:-1]]
            return ast.unparse(value), None, kind, inner
        return None
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        call = node.value
        name = callee_name(call.func)
        on_self = isinstance(call.func, ast.Attribute) and _is_self(call.func.value)
        if not on_self or not name.startswith("assert"):
            return None
        args = call.args
        if name in _EQUAL and len(args) >= 2:
            return _pair(args[0], args[1])
        if name in _TRUTH and args:
            return ast.unparse(args[0]), repr(_TRUTH[name]), None, []
        if name == "assertIsNone" and args:
            return ast.unparse(args[0]), "None", None, []
        if name == "assertRaises" and len(args) >= 2:
            rest = ", ".join(ast.unparse(a) for a in args[2:])
            return f"{ast.unparse(args[1])}({rest})", None, ast.unparse(args[0]), []
        return ParseFailure(f"self.{name} is not an assertion utdebug reads (use assertEqual)")
    return None


def _assert(test: ast.expr) -> _Found | ParseFailure:
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, right = test.ops[0], test.comparators[0]
        if isinstance(op, ast.Eq):
            return _pair(test.left, right)
        if isinstance(op, ast.Is) and isinstance(right, ast.Constant):
            return ast.unparse(test.left), repr(right.value), None, []
        return ParseFailure(
            f"the assertion compares with {type(op).__name__}: write `assert <call> == <value>`"
        )
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return ast.unparse(test.operand), "False", None, []
    if isinstance(test, ast.Call | ast.Attribute | ast.Name | ast.Subscript | ast.Await):
        return ast.unparse(test), "True", None, []
    return ParseFailure(f"the assertion `{ast.unparse(test)[:80]}` compares nothing")


def _pair(left: ast.expr, right: ast.expr) -> _Found:
    """(subject, expected) of ``left == right``: the side that is a value is expected."""
    left, right = _approx(left), _approx(right)
    if _is_value(left) and not _is_value(right):
        left, right = right, left
    return ast.unparse(left), ast.unparse(right), None, []


def _approx(node: ast.expr) -> ast.expr:
    if isinstance(node, ast.Call) and callee_name(node.func) == "approx" and node.args:
        return node.args[0]
    return node


def _is_value(node: ast.expr) -> bool:
    return isinstance(expected_value(ast.unparse(node)), ParsedValue) and not any(
        isinstance(n, ast.Call | ast.Attribute | ast.Await) for n in ast.walk(node)
    )


def callee_name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)


def mentions(text: str, entry: str) -> bool:
    return re.search(rf"\b{re.escape(entry)}\b", text) is not None


def source_text(code: str, node: ast.AST) -> str:
    """A statement's whole lines, dedented (compound statements keep their shape); an
    expression's exact text."""
    if isinstance(node, ast.stmt) and node.end_lineno is not None:
        lines = code.splitlines()[node.lineno - 1 : node.end_lineno]
        text = textwrap.dedent("\n".join(lines))
        try:
            ast.parse(text)
        except SyntaxError:  # a line shared with another statement (``a = 1; b = 2``)
            return ast.unparse(node)
        return text
    seg = ast.get_source_segment(code, node)
    return seg if seg is not None else ast.unparse(node)
