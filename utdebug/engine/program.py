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

This module checks such a test's shape and turns it into a
:class:`utdebug.sandbox.StagedTest`. The parent only *parses* the setup with :mod:`ast`
(:func:`check_shape`); it never executes or evaluates it. The sandbox loads the module in a
fresh child and its runner (not code added to the module) runs the test, so each program test
starts from a fresh import (no object, no class-level state and no module global of one test
reaches another) and its setup runs under the input's limits with every layer on.

What the runner does, in the child (``sandbox/_runner.py``, ``_make_stages``):

- compiles the setup, the call and ``then`` before the module's code runs;
- runs the setup in a copy of the module's namespace, then evaluates the call; a coroutine is
  awaited (on an asyncio loop without the wake-up socket pair, which the sandbox's seccomp
  filter denies; every stage on one loop when any uses ``await``), an async generator or a
  generator is consumed into a list of at most :data:`ITEM_BOUND` items;
- evaluates ``then`` when there is one (the object's state after the call) and returns it,
  else the call's value;
- for an exception, reports the stage it came from and its classes, read with references the
  runner took before any program (:class:`utdebug.sandbox.Raised`).

The verdict is the parent's (:func:`judge_program`): a failing setup fails the test and
satisfies no ``raises X``; a value is compared with
:func:`utdebug.sandbox.compare.outputs_match`; an expected exception passes when the call
raised it as ``except X`` would catch it: a builtin by identity (a module's own ``KeyError``
class is not ``KeyError``), another class by its name.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass
from typing import Any

from utdebug.sandbox.compare import CheckSpec, Semantics, outputs_match
from utdebug.sandbox.config import StagedTest
from utdebug.sandbox.outcomes import Outcome, Status
from utdebug.sandbox.values import describe
from utdebug.sandbox.verdicts import Judged, Verdict

__all__ = [
    "ITEM_BOUND",
    "Raises",
    "check_shape",
    "judge_program",
    "pytest_body",
    "setup_failed",
    "staged_test",
]

ITEM_BOUND = 100
"""At most this many items of a generator's (or an async generator's) output are compared."""


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


def staged_test(setup: str, call: str, then: str | None = None) -> StagedTest:
    """The sandbox's form of a program test (see the module docstring). The parts must have
    passed :func:`check_shape`."""
    body = textwrap.dedent(setup).strip("\n")
    return StagedTest(
        setup=body, call=call.strip(), then=None if then is None else then.strip(), bound=ITEM_BOUND
    )


def setup_failed(outcome: Outcome) -> bool:
    """Whether the runner saw the test's setup raise (never the module's say-so)."""
    return (
        outcome.status is Status.ERROR
        and outcome.raised is not None
        and outcome.raised.stage == "setup"
    )


def judge_program(
    outcome: Outcome,
    expected: Any,
    check: CheckSpec,
    semantics: Semantics = Semantics.DATASET,
) -> Judged:
    """The parent's verdict on one program test's outcome (see the module docstring)."""
    if setup_failed(outcome):
        return Judged(Verdict.FAIL, f"setup raised {outcome.error_type}: {outcome.error}")
    if isinstance(expected, Raises):
        if outcome.status is Status.ERROR:
            raised = outcome.raised
            by_call = raised is not None and raised.stage != "report"
            if by_call and raised is not None and raised.satisfies(expected.type_name):
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


def pytest_body(
    setup: str,
    call: str,
    expected_text: str,
    then: str | None = None,
    *,
    raises: str | None = None,
    by_repr: bool = False,
) -> list[str]:
    """The lines (indented four spaces) of a pytest function for a program test: the setup,
    then ``with pytest.raises(X): call`` or an ``assert`` of the call's (or ``then``'s) value.
    ``expected_text`` is the expected value's source (ignored with ``raises``); ``by_repr``: it
    is a string literal that the value's ``repr`` is compared with. Values go
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
            f"{pad}assert {_compared(f'{value}({_one(then)})', by_repr)} == {expected_text}",
        ]
    else:
        out += [f"{pad}assert {_compared(f'{value}({_one(call)})', by_repr)} == {expected_text}"]
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


def _compared(value: str, by_repr: bool) -> str:
    return f"repr({value})" if by_repr else value
