"""Whether a generated test with setup can run, checked before any vote is spent on it.

A small model's test of a method often cannot run at all: it imports a module that does not
exist, builds nothing and calls ``self.Cart.total()``, ``await`` s a synchronous method, calls
the method with the wrong number of arguments, or never calls it. Voting on such a test wastes
k model calls, and running it counts its own failure against the code ("setup raised ...").
A proposal is therefore admitted in two steps, both before the votes:

1. :func:`call_problem` (the parent, :mod:`ast` only): every call of the target in the setup,
   the call and the follow-up expression binds to the target's signature in the code in force
   (the number of positional arguments, the keyword names; ``self``/``cls`` are bound by the
   object or class it is called through), ``await`` is applied only to a coroutine function's
   call, and the target is called (read, for a property) at all. Dunder targets (``__eq__``
   through ``==``, ``__len__`` through ``len()``) are not checked for a call.
2. :func:`setup_problem` (the sandbox, through :meth:`Executor.run_program`): the setup runs
   once, in a fresh child, with the object the call is made on evaluated after it (a name or
   an attribute chain such as ``self.gateway``; never the call itself, so a bug of the code
   under test is not found here). A setup that raises at its own lines or in a library (an
   import of a module that does not exist, a constructor called with the wrong arguments) or
   an object that is not there drops the test, with the reason. An exception raised inside
   the code under test (a typo in ``__init__``) is the code's: the test is admitted, and
   fails on that code. Code that does not load is not the test's fault either.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Iterator

from utdebug.engine.execution import Executor
from utdebug.engine.model import UnitTest
from utdebug.engine.program import setup_failed
from utdebug.engine.target_kinds import Binding, Def, classify
from utdebug.sandbox.config import PROGRAM_FILE, Limits
from utdebug.sandbox.outcomes import Status

__all__ = ["call_problem", "find_target", "setup_problem"]


def find_target(code: str, entry_point: str, class_name: str | None) -> Def | None:
    """The target's definition in ``code`` (a method of ``class_name``, else a module-level
    function), ``None`` when the code does not parse or has no such definition."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    body: list[ast.stmt] = tree.body
    if class_name is not None:
        cls = next(
            (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name), None
        )
        if cls is None:
            return None
        body = cls.body
    found = [n for n in body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    named = [n for n in found if n.name == entry_point]
    return named[0] if named else None


def _parse_parts(setup: str, call: str, then: str | None) -> list[ast.AST] | None:
    try:
        trees: list[ast.AST] = [ast.parse(textwrap.dedent(setup))]
        trees.append(ast.parse(call.strip(), mode="eval"))
        if then is not None:
            trees.append(ast.parse(then.strip(), mode="eval"))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return trees


def _walk(trees: list[ast.AST]) -> Iterator[ast.AST]:
    for tree in trees:
        yield from ast.walk(tree)


def call_problem(
    setup: str, call: str, then: str | None, *, code: str, entry_point: str, class_name: str | None
) -> str | None:
    """Why the test does not call the target as written (``None``: it does, or the target's
    definition cannot be found in ``code`` to check against)."""
    target = find_target(code, entry_point, class_name)
    trees = _parse_parts(setup, call, then)
    if target is None or trees is None:
        return None
    name = f"{class_name}.{entry_point}" if class_name else entry_point
    kind = classify(target, in_class=class_name is not None)
    binding = kind.row.binding
    if binding is Binding.READ:
        read = any(isinstance(n, ast.Attribute) and n.attr == entry_point for n in _walk(trees))
        return None if read else f"it never reads the property `{name}`"
    calls = [n for n in _walk(trees) if isinstance(n, ast.Call) and _names_target(n, entry_point)]
    if not calls:
        if entry_point.startswith("__") and entry_point.endswith("__"):
            return None  # a dunder is called through an operator or a builtin
        return f"it never calls `{name}`"
    # only calls made on the target's class or an object the test built from it are checked
    # (``d.get(k, 0)`` on a dict is not ``Cache.get``)
    instances = _instances(trees, class_name) if class_name is not None else set()
    ours = [c for c in calls if _on_target(c, class_name, instances)]
    is_coroutine = kind.is_async and not kind.is_generator
    for node in _walk(trees):
        if isinstance(node, ast.Await) and node.value in ours and not is_coroutine:
            return f"it awaits `{name}`, which is not a coroutine function"
    signature = _signature(target)
    method = class_name is not None and binding is not Binding.STATIC
    for c in ours:
        if any(isinstance(a, ast.Starred) for a in c.args) or any(
            k.arg is None for k in c.keywords
        ):
            continue  # *args / **kwargs: not counted
        through_class = (
            isinstance(c.func, ast.Attribute)
            and isinstance(c.func.value, ast.Name)
            and c.func.value.id == class_name
        )
        bound_first = method and not (through_class and binding is not Binding.CLASS)
        params = list(signature.parameters.values())
        sig = signature.replace(parameters=params[1:]) if bound_first and params else signature
        try:
            sig.bind(*c.args, **{k.arg: k.value for k in c.keywords if k.arg is not None})
        except TypeError as exc:
            return f"`{ast.unparse(c)[:80]}` does not match `{name}{sig}`: {exc}"
    return None


def _builds(value: ast.expr, class_name: str) -> bool:
    """``value`` makes an object of ``class_name``: ``Cart(...)``, ``Cart.from_rows(...)``."""
    if isinstance(value, ast.Await):
        value = value.value
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    if isinstance(func, ast.Name):
        return func.id == class_name
    return isinstance(func, ast.Attribute) and (
        func.attr == class_name
        or (isinstance(func.value, ast.Name) and func.value.id == class_name)
    )


def _instances(trees: list[ast.AST], class_name: str) -> set[str]:
    """The names (and ``self.x`` attributes) the test binds to an object of ``class_name``."""
    out: set[str] = set()
    for node in _walk(trees):
        pairs: list[tuple[ast.expr | None, ast.expr | None]] = []
        if isinstance(node, ast.Assign):
            pairs = [(t, node.value) for t in node.targets]
        elif isinstance(node, ast.AnnAssign | ast.NamedExpr):
            pairs = [(node.target, node.value)]
        elif isinstance(node, ast.withitem):
            pairs = [(node.optional_vars, node.context_expr)]
        for bound, value in pairs:
            if bound is not None and value is not None and _builds(value, class_name):
                out.add(ast.unparse(bound))
    return out


def _on_target(node: ast.Call, class_name: str | None, instances: set[str]) -> bool:
    """Whether the call is made on the target: a function by its name, a method on its
    class, on an object of it built in the call, or on a name the test bound to one."""
    func = node.func
    if class_name is None or not isinstance(func, ast.Attribute):
        return class_name is None
    receiver = func.value
    if isinstance(receiver, ast.Name) and receiver.id == class_name:
        return True
    return _builds(receiver, class_name) or ast.unparse(receiver) in instances


def _names_target(node: ast.Call, entry_point: str) -> bool:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id == entry_point
    return isinstance(func, ast.Attribute) and func.attr == entry_point


def _signature(node: Def) -> inspect.Signature:
    """The definition's parameters (names, kinds, whether they have a default)."""
    a = node.args
    P = inspect.Parameter
    out: list[inspect.Parameter] = []
    positional = [*a.posonlyargs, *a.args]
    first_default = len(positional) - len(a.defaults)
    for i, arg in enumerate(positional):
        kind = P.POSITIONAL_ONLY if i < len(a.posonlyargs) else P.POSITIONAL_OR_KEYWORD
        default = None if i >= first_default else P.empty
        out.append(P(arg.arg, kind, default=default))
    if a.vararg is not None:
        out.append(P(a.vararg.arg, P.VAR_POSITIONAL))
    for arg, d in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        out.append(P(arg.arg, P.KEYWORD_ONLY, default=P.empty if d is None else None))
    if a.kwarg is not None:
        out.append(P(a.kwarg.arg, P.VAR_KEYWORD))
    return inspect.Signature(out)


def _receiver(call: str, then: str | None) -> str | None:
    """The object the target is called on, when it is a name or an attribute chain."""
    for text in (call, then):
        if text is None:
            continue
        try:
            node = ast.parse(text.strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        if isinstance(node, ast.Await):
            node = node.value
        if isinstance(node, ast.Call):
            node = node.func
        if isinstance(node, ast.Attribute) and _chain(node.value):
            return ast.unparse(node.value)
    return None


def _chain(node: ast.expr) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


async def setup_problem(
    executor: Executor, code: str, setup: str, call: str, then: str | None, limits: Limits
) -> str | None:
    """Why the test's setup cannot run on ``code`` (``None``: it ran, or the code itself does
    not load): the setup runs once in the sandbox, then the object the call is made on is
    evaluated (see the module docstring)."""
    receiver = _receiver(call, then)
    probe = f"(None if _utd_code_raised else {receiver})" if receiver else "None"
    test = UnitTest(0, (), probe, None, {}, 0, 1.0, "model", 0, setup=_guarded(setup))
    res = await executor.run_program(code, test, limits)
    if res.load_error is not None or not res.outcomes:
        return None
    (outcome,) = res.outcomes
    if outcome.status is Status.OK:
        return None
    if setup_failed(outcome):
        return f"its setup raised {outcome.error_type}: {_first_line(outcome.error)}"
    if outcome.status is Status.ERROR:
        return (
            f"`{receiver}`, which the call is made on, is not there after the setup "
            f"({outcome.error_type}: {_first_line(outcome.error)})"
        )
    if outcome.status is Status.TIMEOUT:
        return "its setup did not finish within the time limit"
    return f"its setup crashed ({outcome.error_type}: {_first_line(outcome.error)})"


_GUARD = """\
_utd_code_raised = False
try:
{body}
except Exception as _utd_exc:
    _utd_tb = _utd_exc.__traceback__.tb_next
    while _utd_tb is not None and not _utd_code_raised:
        _utd_code_raised = _utd_tb.tb_frame.f_code.co_filename == {program_file!r}
        _utd_tb = _utd_tb.tb_next
    if not _utd_code_raised:
        raise
"""


def _guarded(setup: str) -> str:
    """``setup`` run so that an exception raised inside the code under test (a frame of the
    module's own code, which the sandbox compiles as :data:`PROGRAM_FILE`, below the
    setup's) is swallowed: the code's bug, not the test's (a constructor with a typo is what
    the test should find). Any other exception (at the setup's own lines, or in a library it
    called: an import of a module that does not exist) is raised as the setup's."""
    body = textwrap.dedent(setup).strip("\n")
    return _GUARD.format(
        body=textwrap.indent(body, "    ") if body.strip() else "    pass",
        program_file=PROGRAM_FILE,
    )


def _first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    line = lines[0] if lines else ""
    return line if len(line) <= 300 else line[:299] + "…"
