"""Tests that are small programs: setup statements, one call, an expected outcome.

A literal-argument function is tested as the paper does: a tuple of literal arguments and an
expected value (:class:`utdebug.engine.model.UnitTest` with ``setup`` ``None``). Everything
else a person debugs (a method, a property, an async function, a generator, a function that
takes objects) needs a test that builds what it calls::

    setup:     cart = Cart()
               cart.add(Item(3))
    call:      cart.total()
    expected:  3                      (a value, or ``raises KeyError``)
    then:      cart.items             (optional: the value compared is this one, after the call)

This module checks such a test's shape and turns it into a program for the sandbox. The
parent only *parses* the setup with :mod:`ast` (:func:`check_shape`); it never executes or
evaluates it. :func:`program_text` appends one function, ``_utd_test_``, to the module under
test; the sandbox loads the module in a fresh child and calls that function, so each program
test starts from a fresh import (no object, no class-level state and no module global of one
test reaches another) and its setup runs under the input's limits with every layer on.

What the function does, in the child:

- runs the setup; an exception there is reported as ``UtdSetupError`` (``"<Type>: <message>"``),
  so that "raises KeyError" is never satisfied by a setup that failed;
- evaluates the call; a coroutine is awaited (on an asyncio loop without the wake-up
  socket pair, which the sandbox's seccomp filter denies), an async generator or a
  generator is consumed into a list of at most :data:`ITEM_BOUND` items;
- evaluates ``then`` when there is one (the object's state after the call) and returns it,
  else the call's value.

A setup or call that uses ``await`` makes the whole test an ``async def`` run on that loop.
The verdict is the parent's (:func:`judge_program`): a value is compared with
:func:`utdebug.sandbox.compare.outputs_match`; an expected exception passes when the call
raised that exception type (by name, or a subclass of it when both are builtin exceptions).
"""

from __future__ import annotations

import ast
import builtins
import textwrap
from dataclasses import dataclass
from typing import Any

from utdebug.sandbox.compare import CheckSpec, Semantics, describe, outputs_match
from utdebug.sandbox.server import Outcome, Status
from utdebug.sandbox.verdicts import Judged, Verdict

__all__ = [
    "ENTRY",
    "ITEM_BOUND",
    "SETUP_ERROR",
    "Raises",
    "check_shape",
    "judge_program",
    "program_text",
    "pytest_body",
]

ENTRY = "_utd_test_"
"""The function the sandbox calls for a program test."""
ITEM_BOUND = 100
"""At most this many items of a generator's (or an async generator's) output are compared."""
SETUP_ERROR = "UtdSetupError"
"""The exception type a failing setup is reported as."""


@dataclass(frozen=True, slots=True)
class Raises:
    """An expected outcome that is an exception: the call raises ``type_name``."""

    type_name: str

    def __repr__(self) -> str:
        return f"raises {self.type_name}"


def check_shape(setup: str, call: str, then: str | None = None) -> str | None:
    """Why a program test's parts are not usable (``None``: they are).

    Pure :mod:`ast`: the setup must parse as statements a function body can hold (no
    ``return``, ``yield``, ``global``, ``nonlocal`` or ``from ... import *`` at its top), the
    call and ``then`` as one expression each.
    """
    try:
        tree = ast.parse(textwrap.dedent(setup))
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return f"the setup does not parse: {_why(exc)}"
    bad = _forbidden(tree)
    if bad is not None:
        return f"the setup cannot hold {bad}"
    for what, text in (("call", call), ("follow-up expression", then)):
        if text is None:
            continue
        if not text.strip():
            return f"the {what} is empty"
        try:
            ast.parse(text.strip(), mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            return f"the {what} is not one expression: {_why(exc)}"
    return None


def _why(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        return f"{exc.msg} (line {exc.lineno})"
    return type(exc).__name__


def _forbidden(tree: ast.Module) -> str | None:
    """The first statement of ``tree``'s own scope a test function body cannot hold."""
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop(0)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue  # their own scope
        if isinstance(node, ast.Return):
            return f"a return statement (line {node.lineno})"
        if isinstance(node, ast.Yield | ast.YieldFrom):
            return f"a yield (line {node.lineno})"
        if isinstance(node, ast.Global | ast.Nonlocal):
            return f"a {type(node).__name__.lower()} statement (line {node.lineno})"
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return f"'from {node.module} import *' (line {node.lineno})"
        todo.extend(ast.iter_child_nodes(node))
    return None


def _uses_await(*texts: str | None) -> bool:
    for text in texts:
        if not text:
            continue
        try:
            tree = ast.parse(textwrap.dedent(text))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        todo: list[ast.AST] = [tree]
        while todo:
            node = todo.pop()
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue
            if isinstance(node, ast.Await | ast.AsyncFor | ast.AsyncWith):
                return True
            todo.extend(ast.iter_child_nodes(node))
    return False


def program_text(module_code: str, setup: str, call: str, then: str | None = None) -> str:
    """``module_code`` with the test function :data:`ENTRY` appended (see the module
    docstring). The parts must have passed :func:`check_shape`."""
    is_async = _uses_await(setup, call, then)
    body = textwrap.dedent(setup).strip("\n")
    setup_lines = textwrap.indent(body, "        ") if body.strip() else "        pass"
    head = "async def" if is_async else "def"
    settle = "await _utd_asettle(_utd_v)" if is_async else "_utd_settle(_utd_v)"
    lines = [
        "",
        "",
        f"{head} _utd_body():",
        "    try:",
        setup_lines,
        "    except Exception as _utd_e:",
        "        raise _utd_setup_error(_utd_e) from None",
        f"    _utd_v = (\n{call.strip()}\n    )",
        f"    _utd_v = {settle}",
    ]
    if then is not None:
        lines.append(f"    _utd_v = (\n{then.strip()}\n    )")
        lines.append(f"    _utd_v = {settle}")
    lines.append("    return _utd_v")
    runner = "_utd_run(_utd_body())" if is_async else "_utd_body()"
    text = (
        _HELPERS.format(bound=ITEM_BOUND, error=SETUP_ERROR)
        + "\n".join(lines)
        + (f"\n\n\ndef {ENTRY}():\n    return {runner}\n")
    )
    return module_code.rstrip("\r\n") + "\n" + text


_HELPERS = """

import types as _utd_types


class {error}(Exception):
    pass


def _utd_setup_error(e):
    return {error}(f"{{type(e).__name__}}: {{e}}")


async def _utd_take(agen):
    out = []
    async for item in agen:
        out.append(item)
        if len(out) >= {bound}:
            break
    return out


def _utd_run(coro):
    # asyncio's default loop makes its wake-up pipe with socketpair(), which the sandbox
    # denies: this loop has none (nothing here wakes it from another thread or a signal).
    import asyncio

    class _Loop(asyncio.SelectorEventLoop):
        def _make_self_pipe(self):
            self._ssock = self._csock = None

        def _close_self_pipe(self):
            pass

    with asyncio.Runner(loop_factory=_Loop) as runner:
        return runner.run(coro)


def _utd_settle(v):
    if isinstance(v, _utd_types.CoroutineType):
        v = _utd_run(v)
    if isinstance(v, _utd_types.AsyncGeneratorType):
        return _utd_run(_utd_take(v))
    if isinstance(v, _utd_types.GeneratorType):
        import itertools

        return list(itertools.islice(v, {bound}))
    return v


async def _utd_asettle(v):
    if hasattr(type(v), "__await__"):
        v = await v
    if isinstance(v, _utd_types.AsyncGeneratorType):
        return await _utd_take(v)
    return _utd_settle(v)
"""


def judge_program(
    outcome: Outcome,
    expected: Any,
    check: CheckSpec,
    semantics: Semantics = Semantics.DATASET,
) -> Judged:
    """The parent's verdict on one program test's outcome (see the module docstring)."""
    if outcome.status is Status.ERROR and outcome.error_type == SETUP_ERROR:
        return Judged(Verdict.FAIL, f"setup raised {outcome.error}")
    if isinstance(expected, Raises):
        if outcome.status is Status.ERROR:
            if raised_matches(outcome.error_type or "", expected.type_name):
                return Judged(Verdict.PASS)
            return Judged(
                Verdict.FAIL,
                f"raised {outcome.error_type}: {outcome.error} (expected {expected.type_name})",
            )
        if outcome.status is Status.OK:
            return Judged(
                Verdict.FAIL,
                f"returned {describe(outcome.value, 500)} (expected to raise {expected.type_name})",
            )
    elif outcome.status is Status.OK:
        if outputs_match(outcome.value, expected, check, semantics, ()):
            return Judged(Verdict.PASS)
        return Judged(Verdict.FAIL, "returned " + describe(outcome.value, 500))
    elif outcome.status is Status.ERROR:
        return Judged(Verdict.FAIL, f"raised {outcome.error_type}: {outcome.error}")
    if outcome.status is Status.TIMEOUT:
        return Judged(Verdict.TIMEOUT, outcome.error)
    return Judged(Verdict.CRASH, f"{outcome.error_type}: {outcome.error}")


def raised_matches(raised: str, expected: str) -> bool:
    """Whether an exception named ``raised`` satisfies "raises ``expected``": the same name
    (the last dotted part counts: ``json.JSONDecodeError``), or both builtin exception
    classes with ``raised`` a subclass of ``expected`` (``KeyError`` satisfies
    ``LookupError``). Names only: nothing of the program is run in the parent."""
    r, e = raised.rsplit(".", 1)[-1], expected.rsplit(".", 1)[-1]
    if r == e:
        return True
    rc, ec = getattr(builtins, r, None), getattr(builtins, e, None)
    return (
        isinstance(rc, type)
        and isinstance(ec, type)
        and issubclass(rc, BaseException)
        and issubclass(ec, BaseException)
        and issubclass(rc, ec)
    )


def pytest_body(
    setup: str, call: str, expected_text: str, then: str | None = None, *, raises: str | None = None
) -> list[str]:
    """The lines (indented four spaces) of a pytest function for a program test: the setup,
    then ``with pytest.raises(X): call`` or an ``assert`` of the call's (or ``then``'s) value.
    ``expected_text`` is the expected value's source (ignored with ``raises``). Values go
    through ``_utd_value`` (awaits a coroutine, consumes a generator up to the bound), which
    the exported file defines; a test that uses ``await`` is an ``async def`` run by
    ``asyncio.run``."""
    is_async = _uses_await(setup, call, then)
    pad = "        " if is_async else "    "
    value = "await _utd_avalue" if is_async else "_utd_value"
    out = [f"{pad}{line}" if line.strip() else "" for line in textwrap.dedent(setup).splitlines()]
    if raises is not None:
        out += [f"{pad}with pytest.raises({raises}):", f"{pad}    {value}({_one(call)})"]
    elif then is not None:
        out += [
            f"{pad}{value}({_one(call)})",
            f"{pad}assert {value}({_one(then)}) == {expected_text}",
        ]
    else:
        out += [f"{pad}assert {value}({_one(call)}) == {expected_text}"]
    if is_async:
        return ["    async def _utd_body():", *out, "", "    asyncio.run(_utd_body())"]
    return out


PYTEST_HELPERS = f"""
def _utd_value(v):
    \"\"\"A call's value as utdebug compares it: a coroutine awaited, a generator's first
    {ITEM_BOUND} items as a list.\"\"\"
    if inspect.iscoroutine(v):
        v = asyncio.run(v)
    if inspect.isasyncgen(v):
        v = asyncio.run(_utd_take(v))
    if inspect.isgenerator(v):
        v = list(itertools.islice(v, {ITEM_BOUND}))
    return v


async def _utd_avalue(v):
    if inspect.isawaitable(v):
        v = await v
    if inspect.isasyncgen(v):
        return await _utd_take(v)
    return _utd_value(v)


async def _utd_take(agen):
    out = []
    async for item in agen:
        out.append(item)
        if len(out) >= {ITEM_BOUND}:
            break
    return out
"""
"""Helpers an exported file with program tests defines (it imports asyncio, inspect and
itertools)."""


def _one(text: str) -> str:
    return " ".join(text.split()) if "\n" in text else text.strip()
