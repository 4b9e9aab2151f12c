"""ClassEval's assertions, applied in the parent.

ClassEval's tests are ``unittest`` code. Run as they are, inside the child that also runs the
class under test, their verdict is the class's to decide: a module that patches
``TestCase.assertEqual`` or ``TestCase.debug``, hooks ``__init_subclass__`` or
``builtins.__build_class__``, or returns objects whose ``__eq__`` says yes, passes every test.
Here the child only *records* and the parent *decides*:

- :func:`rewrite_tests` rewrites the test code with :mod:`ast`: its ``TestCase`` classes
  inherit from a small base class defined in the rewritten code itself (``setUp``/``tearDown``
  no-ops, ``maxDiff``, ``subTest``, cleanups, ``skipTest``; no ``unittest``), every
  ``self.assert*(...)`` call becomes a call of the sandbox runner's ``__sandbox_fact__``
  with (assertion, line, operands, keyword operands, what else to read: the first two
  operands' identity, the first one's classes), ``with self.assertRaises(X):`` and
  ``self.assertRaises(X, f, *args)`` become ``try``/``except`` that send the exception object
  (or None) and the expected class, and ``self.fail(...)`` is sent too; ``assertTrue(a == b)``
  (one ``==``, ``!=``, ``in`` or ``not in``, also under ``assertFalse``) is sent as the
  assertion it states, so the class's ``__eq__`` does not make the bool. Each test method
  tells its end (before each ``return`` and at its last line), and the test, after its
  tearDown and cleanups, that it is done. The rewritten code is run by the sandbox as a
  :class:`~utdebug.sandbox.config.StagedTest` (``builtins_first``): compiled before the
  class's module runs, the builtins it reads by name and the runner's names pinned in its
  code (a module global that shadows a builtin, or the test's builtins rewritten through a
  frame, answers for nothing). ``_ce_run(test_class, test_method)`` builds the instance,
  calls ``setUp``, the method, ``tearDown`` and the cleanups, and returns ``(raised,
  stopped)``: the exception the test raised (or None) and whether the test ended early on a
  check the child made (see below).
- The runner copies an assertion's operands the moment it is made, through the base types
  (an ``int`` subclass is its stored integer, a ``list`` subclass its items; a class becomes
  its fact, a deque its items), encodes them with its codec and sends them to the parent
  before the test goes on (see docs/sandbox.md, "Integrity"): nothing the class does later
  (a profile hook, ``gc``, a closure, the test's globals) reaches what was sent. Objects of
  the module's classes come back as :class:`~utdebug.sandbox.values.Structured` (their
  fields) or :class:`~utdebug.sandbox.values.Opaque`, exceptions as
  :class:`~utdebug.sandbox.values.ExceptionValue` with their builtin classes found by
  identity.
- :func:`judge_facts` applies the assertions in order, on the decoded values; the first one
  that does not hold fails the test (its detail names the line, the assertion and both
  operands); then an exception the test raised fails it; a test that ran to its end with
  every assertion holding (or with no assertion at all) passes, provided its method told
  its end, the test that it was done, and it sent every assertion it makes on every run
  (:func:`required_lines`). An assertion made while a profile function was set fails.

Not covered (docs/sandbox.md, "What is not guaranteed"): the test's code runs in the same
process as the class, so a class can change what the test computes before it asserts (a
list the test holds, a helper of its class, through its frames), and a class that rewrites
the runner's own functions, writes frames on its result pipe itself or uses ``ctypes`` can
make the child report anything; what the test computes outside its assertions
(``ok = x == y``, ``str(cm.exception)``) runs the class's code, as in ``unittest``.

Where a test stops. So that a test stops where ``unittest`` stops it (a failed assertion
skips the rest of the test and its ``tearDown``, which matters to tests that share files),
the child also checks ``Equal``, ``NotEqual``, ``True``, ``False``, ``IsNone``,
``IsNotNone``, ``In``, ``NotIn``, the orderings and ``(Not)AlmostEqual`` itself on the copies
the runner gives back, when every operand is plain data (only builtin types: no code of the
module runs in that check), and ends the test when one does not hold; ``fail()`` and an
``assertRaises`` that saw nothing end it too. That check only decides where the test stops:
the parent applies the assertion again, and a test the child stopped on one the parent finds
holding fails ("stopped early").

The parent's semantics (on the decoded values; the class's own ``__eq__``, ``__bool__``,
``__lt__``, ``__contains__`` play no part):

- ``assertEqual``/``NotEqual`` and the typed forms (``ListEqual``, ``TupleEqual``,
  ``DictEqual``, ``SetEqual``, ``SequenceEqual``, ``MultiLineEqual``): ``==`` on decoded values
  (objects of the module's classes compare by class name and fields, as everywhere in the
  project). A value holding an ``Opaque`` (an object the sandbox could not read) decides
  neither: both fail.
- ``assertTrue``/``False``: Python's truth of a decoded plain value; an object of the module's
  classes (or an opaque one) has no truth the parent can read (its ``__bool__``/``__len__`` is
  the class's code): both fail.
- ``assertIs``/``IsNot``: the identity the test's own ``is`` found in the child (an operator
  no class can hook); ``IsNone``/``IsNotNone`` on the decoded value.
- ``assertIsInstance``/``NotIsInstance``: by the classes of the value's MRO and the expected
  class(es), as the child's test code read them from the type objects: a builtin class by
  identity, any other by its module and qualified name *as the class states them* (a class can
  set its ``__qualname__``/``__module__`` to another non-builtin class's).
- ``assertIn``/``NotIn``, ``Greater``/``GreaterEqual``/``Less``/``LessEqual``,
  ``AlmostEqual``/``NotAlmostEqual`` (``places``/``delta``, as ``unittest`` computes them),
  ``CountEqual``, ``Regex``/``NotRegex``: ``unittest``'s rules on decoded values; an operation
  the decoded values do not support (ordering objects, subtracting strings) fails, as the
  ``TypeError`` in ``unittest`` would.
- ``assertRaises``: the recorded exception must satisfy the expected class
  (:meth:`ExceptionValue.satisfies`: a builtin by identity, another class by its module and
  qualified name).
"""

from __future__ import annotations

import ast
import inspect
import re
import unittest
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from utdebug.sandbox.config import StagedTest
from utdebug.sandbox.outcomes import Outcome, Status
from utdebug.sandbox.values import EnumMember, ExceptionValue, Opaque, Record, Structured, describe
from utdebug.sandbox.verdicts import Judged, Verdict

__all__ = [
    "RUN",
    "judge_facts",
    "judge_records",
    "required_lines",
    "rewrite_tests",
    "staged_test",
    "test_verdict",
]

RUN = "_ce_run"
"""The rewritten code's function that runs one test method."""

_SHOWN = 300
"""Characters of each operand shown in a verdict's detail."""

# The child's part: defined first in the rewritten code. Its assertions' facts go to the parent
# through the runner's ``__sandbox_fact__`` as they happen; the builtins it reads by name are
# constants in its code (the sandbox pins them: ``StagedTest(builtins_first=True)``), so neither
# a module global that shadows a builtin nor the test's builtins, rewritten through a frame,
# answer for them. What stays here only decides where a test stops, as unittest would.
PRELUDE = '''
def _ce_make():
    state = [False]  # stopped: the child ended the test on a check of its own
    wants = {"assertIs": "is", "assertIsNot": "is", "assertIsInstance": "mro",
             "assertNotIsInstance": "mro"}

    class Stop(AssertionError):
        """Ends a test where unittest's failure would (the parent decides the verdict)."""

    def holds(name, vals, kws):
        """The child's own check of a record whose operands are plain data (no module code
        runs): only where the test stops; the parent decides."""
        n = len(vals)
        if name == "assertEqual" and n >= 2:
            return vals[0] == vals[1]
        if name == "assertNotEqual" and n >= 2:
            return vals[0] != vals[1]
        if name == "assertTrue" and n >= 1:
            return bool(vals[0])
        if name == "assertFalse" and n >= 1:
            return not vals[0]
        if name == "assertIsNone" and n >= 1:
            return vals[0] is None
        if name == "assertIsNotNone" and n >= 1:
            return vals[0] is not None
        if name == "assertIn" and n >= 2:
            return vals[0] in vals[1]
        if name == "assertNotIn" and n >= 2:
            return vals[0] not in vals[1]
        if name in ORDER and n >= 2:
            return ORDER[name](vals[0], vals[1])
        if (name == "assertAlmostEqual" or name == "assertNotAlmostEqual") and n >= 2:
            places = vals[2] if n >= 3 else kws.get("places")
            delta = vals[4] if n >= 5 else kws.get("delta")
            diff = 0 if vals[0] == vals[1] else abs(vals[0] - vals[1])
            if delta is not None:
                close = diff <= delta
            else:
                close = round(diff, 7 if places is None else places) == 0
            return close if name == "assertAlmostEqual" else not close
        return True

    ORDER = {
        "assertGreater": lambda a, b: a > b,
        "assertGreaterEqual": lambda a, b: a >= b,
        "assertLess": lambda a, b: a < b,
        "assertLessEqual": lambda a, b: a <= b,
    }

    def after(told):
        """What the runner gave back for an assertion it sent (its kind and the copies it
        made of the operands): stop the test where unittest would."""
        name, vals, kws, plain = told
        if name == "fail":
            stop()
        known = True
        for k in kws:
            if not (k == "msg" or k == "places" or k == "delta"):
                known = False
        if plain and known:
            try:
                ok = holds(name, vals, kws)
            except Exception:
                ok = True
            if not ok:
                stop()

    def check(name, line, /, *args, **kw):
        """An assertion the rewriting did not reach (``getattr(self, 'assertEqual')``)."""
        after(__sandbox_fact__(name, line, args, kw, wants.get(name, ""), __sandbox_hooks__()))

    def stop():
        state[0] = True
        raise Stop()

    def raised(line, spec, e):
        """An assertRaises: what was raised (None: nothing) against the expected class."""
        if e is not None:
            try:
                ok = issubclass(type(e), spec)
            except Exception:
                ok = False
            if not ok:  # not what was expected: it goes on up, as unittest lets it
                raise e
        __sandbox_fact__("assertRaises", line, (e, spec), {}, "", __sandbox_hooks__())
        if e is None:
            stop()
        return Caught(e)

    class Caught:
        def __init__(self, e):
            self.exception = e

    def raises_call(line, spec, fn, /, *args, **kw):
        try:
            fn(*args, **kw)
        except Exception as e:
            return raised(line, spec, e)
        raised(line, spec, None)

    class Context:
        """``self.assertRaises(X)`` where it was not rewritten (a with of several items)."""

        def __init__(self, line, spec):
            self.line, self.spec, self.exception = line, spec, None

        def __enter__(self):
            return self

        def __exit__(self, t, e, tb):
            if e is not None and not isinstance(e, Exception):
                return False
            if e is None:
                raised(self.line, self.spec, None)  # records the miss and ends the test
            self.exception = e
            raised(self.line, self.spec, e)
            return True

    class Null:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    class Case:
        """What ClassEval's tests use of unittest.TestCase, besides the assertions."""

        maxDiff = 640
        longMessage = True

        def __init__(self, methodName="runTest"):
            self._testMethodName = methodName
            self._ce_cleanups = []

        def setUp(self):
            pass

        def tearDown(self):
            pass

        @classmethod
        def setUpClass(cls):
            pass

        @classmethod
        def tearDownClass(cls):
            pass

        def id(self):
            return type(self).__qualname__ + "." + self._testMethodName

        def subTest(self, *args, **kw):
            return Null()

        def addCleanup(self, fn, *args, **kw):
            self._ce_cleanups.append((fn, args, kw))

        def doCleanups(self):
            while self._ce_cleanups:
                fn, args, kw = self._ce_cleanups.pop()
                fn(*args, **kw)

        def skipTest(self, reason):
            raise RuntimeError("skipped: " + str(reason))

        def assertRaises(self, spec, *args, **kw):
            if args:
                return raises_call(0, spec, *args, **kw)
            return Context(0, spec)

        def __getattr__(self, name):
            if name.startswith("assert") or name == "fail":
                def recorder(*args, **kw):
                    return check(name, 0, *args, **kw)
                return recorder
            raise AttributeError(name)

    def run(classes, test_class, test_method):
        """Run one test method as unittest would; the runner has its facts already:
        (the exception the test raised or None, whether the child stopped it). Only a test
        that ran to its end, tearDown and cleanups included, reports it is done."""
        import random

        random.seed(0)
        err = None
        try:
            case = classes[test_class](test_method)
            case.setUp()
            getattr(case, test_method)()
            case.tearDown()
            case.doCleanups()
            __sandbox_fact__("done", 0)
        except Stop:
            pass
        except Exception as e:
            err = e
        return (err, state[0])

    def scratch():
        import os
        import tempfile

        if not os.path.basename(os.getcwd()).startswith("classeval-"):
            os.chdir(tempfile.mkdtemp(prefix="classeval-"))

    return after, raised, raises_call, Case, run, scratch, Exception


(_ce_after, _ce_raised, _ce_raises_call, _ce_Case, _ce_run_in, _ce_scratch,
 _ce_Exception) = _ce_make()
del _ce_make
_ce_scratch()
'''


_WANTS = {
    "assertIs": "is",
    "assertIsNot": "is",
    "assertIsInstance": "mro",
    "assertNotIsInstance": "mro",
}
"""What the runner reads besides an assertion's operands: whether the first two are one
object (``is``), the first one's classes (``mro``)."""


def _fact_call(name: str, line: int, args: list[ast.expr], keywords: list[ast.keyword]) -> ast.expr:
    """``_ce_after(__sandbox_fact__(name, line, (args...), {keywords...}, wants,
    __sandbox_hooks__()))``: the operands are evaluated, then whether a profile function is
    set, then the runner copies and sends them."""
    kw_keys: list[ast.expr | None] = [
        None if k.arg is None else ast.Constant(k.arg) for k in keywords
    ]
    fact = ast.Call(
        ast.Name("__sandbox_fact__", ast.Load()),
        [
            ast.Constant(name),
            ast.Constant(line),
            ast.Tuple(list(args), ast.Load()),
            ast.Dict(kw_keys, [k.value for k in keywords]),
            ast.Constant(_WANTS.get(name, "")),
            ast.Call(ast.Name("__sandbox_hooks__", ast.Load()), [], []),
        ],
        [],
    )
    return ast.Call(ast.Name("_ce_after", ast.Load()), [fact], [])


_COMPARES: dict[tuple[str, type[ast.cmpop]], str] = {
    ("assertTrue", ast.Eq): "assertEqual",
    ("assertFalse", ast.Eq): "assertNotEqual",
    ("assertTrue", ast.NotEq): "assertNotEqual",
    ("assertFalse", ast.NotEq): "assertEqual",
    ("assertTrue", ast.In): "assertIn",
    ("assertFalse", ast.In): "assertNotIn",
    ("assertTrue", ast.NotIn): "assertNotIn",
    ("assertFalse", ast.NotIn): "assertIn",
}
"""``assertTrue``/``assertFalse`` of one comparison, applied as the assertion it states."""


class _Rewriter(ast.NodeTransformer):
    """``self.assert*(...)`` -> ``_ce_check(name, line, ...)``, ``self.assertRaises`` ->
    ``try``/``except``, ``unittest.TestCase`` bases -> ``_ce_Case``."""

    def __init__(self) -> None:
        self.count = 0

    @staticmethod
    def _self_attr(node: ast.AST, prefix: tuple[str, ...]) -> str | None:
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and node.attr.startswith(prefix)
        ):
            return node.attr
        return None

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        node.bases = [
            ast.Name("_ce_Case", ast.Load())
            if ast.unparse(b).rpartition(".")[2] == "TestCase"
            else b
            for b in node.bases
        ]
        self.generic_visit(node)
        for f in node.body:
            if isinstance(f, ast.FunctionDef) and f.name.startswith("test"):
                f.body = _with_end(f.body, node.name, f.name)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        name = self._self_attr(node.func, ("assert", "fail"))
        if name is None or (name.startswith("assertRaises") and len(node.args) < 2):
            return node  # a bare self.assertRaises(X) is the base class's context
        if name != "fail" and not name.startswith("assert"):
            return node
        line = ast.Constant(node.lineno)
        args = node.args
        first = args[0] if args else None
        if (
            name in ("assertTrue", "assertFalse")
            and isinstance(first, ast.Compare)
            and len(first.ops) == 1
            and (name, type(first.ops[0])) in _COMPARES
        ):
            # assertTrue(a == b) is assertEqual(a, b): the parent compares the operands; the
            # child never runs the class's __eq__ to make the bool
            name = _COMPARES[name, type(first.ops[0])]
            args = [first.left, first.comparators[0], *args[1:]]
        call: ast.expr
        if name == "assertRaises":
            call = ast.Call(
                ast.Name("_ce_raises_call", ast.Load()), [line, *node.args], node.keywords
            )
        else:
            call = _fact_call(name, node.lineno, args, node.keywords)
        return ast.copy_location(call, node)

    def visit_With(self, node: ast.With) -> ast.AST | list[ast.stmt]:
        self.generic_visit(node)
        if len(node.items) != 1:
            return node
        item = node.items[0]
        ctx = item.context_expr
        if not (
            isinstance(ctx, ast.Call)
            and self._self_attr(ctx.func, ("assertRaises",)) == "assertRaises"
            and len(ctx.args) == 1
            and not ctx.keywords
        ):
            return node
        self.count += 1
        spec, err = f"_ce_spec_{self.count}", f"_ce_err_{self.count}"
        line = node.lineno
        target = item.optional_vars
        caught = f"_ce_raised({line}, {spec}, {err})"
        template = ast.parse(
            f"{spec} = 0\n"
            "try:\n    pass\n"
            f"except _ce_Exception as {err}:\n    {caught}\n"
            f"else:\n    _ce_raised({line}, {spec}, None)\n"
        ).body
        assign, trying = template
        assert isinstance(assign, ast.Assign)
        assert isinstance(trying, ast.Try)
        assign.value = ctx.args[0]
        trying.body = node.body
        if target is not None:
            handler = trying.handlers[0]
            expr = handler.body[0]
            assert isinstance(expr, ast.Expr)
            handler.body = [ast.Assign([target], expr.value)]
        out: list[ast.stmt] = [assign, trying]
        for n in out:
            ast.copy_location(n, node)
            ast.fix_missing_locations(n)
        return out


def _with_end(body: list[ast.stmt], cls: str, method: str) -> list[ast.stmt]:
    """A test method's body that tells the runner it ended (at its end and before each
    ``return``): a method the module replaced, or a test it stopped, never reports it."""

    def end() -> ast.stmt:
        names = ast.Tuple([ast.Constant(cls), ast.Constant(method)], ast.Load())
        fact = ast.Name("__sandbox_fact__", ast.Load())
        return ast.Expr(ast.Call(fact, [ast.Constant("end"), ast.Constant(0), names], []))

    def walk(stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for st in stmts:
            if isinstance(st, ast.Return):
                out.append(ast.copy_location(end(), st))
            elif not isinstance(st, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                for field in ("body", "orelse", "finalbody"):
                    inner = getattr(st, field, None)
                    if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                        setattr(st, field, walk(inner))
                for h in getattr(st, "handlers", []):
                    h.body = walk(h.body)
                for case in getattr(st, "cases", []):
                    case.body = walk(case.body)
            out.append(st)
        return out

    return [*walk(body), end()]


def rewrite_tests(test_code: str, tests: Sequence[tuple[str, str]]) -> str:
    """ClassEval's test code rewritten to record its assertions (see the module docstring),
    with the prelude before it and ``_ce_run(test_class, test_method)`` after it."""
    tree = ast.parse(test_code)
    tree.body = [
        n for n in tree.body if not (isinstance(n, ast.If) and "__main__" in ast.dump(n.test))
    ]
    tree = _Rewriter().visit(tree)
    ast.fix_missing_locations(tree)
    classes = sorted({c for c, _ in tests})
    table = ", ".join(f"{c!r}: {c}" for c in classes)
    run = (
        f"\n\ndef {RUN}(test_class, test_method):\n"
        f"    return _ce_run_in({{{table}}}, test_class, test_method)\n"
    )
    return PRELUDE + "\n\n" + ast.unparse(tree) + run


def staged_test(test_code: str, tests: Sequence[tuple[str, str]]) -> StagedTest:
    """The sandbox's test for a class: one input per test method, ``[test_class, method]``."""
    return StagedTest(
        setup=rewrite_tests(test_code, tests),
        call=f"{RUN}(*_ce_args)",
        args="_ce_args",
        builtins_first=True,
    )


# --- the parent's part ---------------------------------------------------------------------------


def required_lines(test_code: str) -> dict[tuple[str, str], Counter[int]]:
    """For each test method (``(class, method)``), the lines of the assertions it makes on
    every run that ends normally: ``self.assert*(...)`` statements (and ``with
    self.assertRaises``) at the top level of its body or of a ``with`` block in it, up to the
    first statement that may return, raise or leave a loop. A test that returns without one
    of these records (its list was emptied or cut) does not pass."""
    tree = ast.parse(test_code)
    out: dict[tuple[str, str], Counter[int]] = {}
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        for f in cls.body:
            if isinstance(f, ast.FunctionDef) and f.name.startswith("test"):
                lines: Counter[int] = Counter()
                _unconditional(f.body, lines)
                out[cls.name, f.name] = lines
    return out


def _is_assertion(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "self"
        and (node.func.attr.startswith("assert") or node.func.attr == "fail")
        and not (node.func.attr.startswith("assertRaises") and len(node.args) < 2)
    )


def _leaves(node: ast.AST) -> bool:
    """Whether ``node`` holds a statement that may end the block early."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Return | ast.Raise | ast.Break | ast.Continue):
            return True
        if n is node or not isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            stack.extend(ast.iter_child_nodes(n))
    return False


def _unconditional(body: list[ast.stmt], lines: Counter[int]) -> bool:
    """Add the lines of ``body``'s unconditional assertions; False once one may leave."""
    for st in body:
        if isinstance(st, ast.Expr) and _is_assertion(st.value):
            lines[st.value.lineno] += 1
            continue
        if isinstance(st, ast.With):
            ctx = st.items[0].context_expr if len(st.items) == 1 else None
            if (
                isinstance(ctx, ast.Call)
                and isinstance(ctx.func, ast.Attribute)
                and isinstance(ctx.func.value, ast.Name)
                and ctx.func.value.id == "self"
                and ctx.func.attr == "assertRaises"
                and len(ctx.args) == 1
                and not ctx.keywords
            ):
                lines[st.lineno] += 1
                if _leaves(st):
                    return False
                continue
            if not _unconditional(st.body, lines):
                return False
            continue
        if _leaves(st):
            return False
    return True


def test_verdict(
    outcome: Outcome, required: Counter[int] | None, test: tuple[str, str] | None
) -> Judged:
    """The verdict of one test method (``test``: its class and name) from the sandbox's
    outcome of its input: the facts the runner sent as it ran, applied here
    (:func:`judge_facts`, ``required`` from :func:`required_lines`); an input that raised
    outside the test (its setup code), timed out or crashed is a fail, timeout or crash."""
    if outcome.status is Status.OK:
        return judge_facts(outcome.facts, outcome.value, required, test)
    if outcome.status is Status.ERROR:
        return Judged(Verdict.FAIL, f"raised {outcome.error_type}: {_first_line(outcome.error)}")
    if outcome.status is Status.TIMEOUT:
        return Judged(Verdict.TIMEOUT, _first_line(outcome.error))
    return Judged(Verdict.CRASH, _first_line(outcome.error))


_MALFORMED = "the test's report is malformed"


def judge_facts(
    facts: Sequence[object],
    value: object,
    required: Counter[int] | None = None,
    test: tuple[str, str] | None = None,
) -> Judged:
    """The verdict from the facts the runner sent while the test ran (``[kind, line,
    operands, keyword operands, identity, classes, hooked]`` each, see
    ``sandbox/_runner.py: _make_facts``) and what ``_ce_run`` returned (``(raised,
    stopped)``): its assertions applied in order (:func:`judge_records`), none made while a
    profile function was set; the test method (``test``) must have told its end, and the
    test that it was done after its tearDown and cleanups."""
    if not (isinstance(value, tuple) and len(value) == 2):
        return Judged(Verdict.FAIL, _MALFORMED)
    raised, stopped = value
    records: list[tuple[str, int, list[Any], dict[str, Any], object]] = []
    ended = done = False
    for f in facts:
        if f is None:
            return Judged(Verdict.FAIL, "an assertion's operands were too large to send")
        if not (
            isinstance(f, list)
            and len(f) == 7
            and isinstance(f[0], str)
            and isinstance(f[1], int)
            and isinstance(f[2], list)
            and isinstance(f[3], dict)
            and isinstance(f[6], bool)
        ):
            return Judged(Verdict.FAIL, _MALFORMED)
        kind, line, ops, kws, is_, mro, hooked = f
        if kind == "end":
            ended = ended or (test is not None and ops == list(test))
        elif kind == "done":
            done = True
        elif hooked:
            where = f"line {line}: " if line else ""
            return Judged(Verdict.FAIL, f"{where}a profile function was set when it was asserted")
        else:
            records.append(_record(kind, line, ops, kws, is_, mro))
    judged = judge_records((records, raised, stopped), required)
    if judged.verdict is not Verdict.PASS:
        return judged
    if not ended:
        return Judged(Verdict.FAIL, "the test method did not tell its end (replaced or cut short)")
    if not done:
        return Judged(Verdict.FAIL, "the test did not tell it was done (after tearDown)")
    return judged


def _record(
    kind: str, line: int, ops: list[Any], kws: dict[str, Any], is_: object, mro: object
) -> tuple[str, int, list[Any], dict[str, Any], object]:
    """An assertion's facts as :func:`apply` takes them: what it needs besides the operands
    (``extra``: the identity the child saw, the classes' facts)."""
    extra: object = None
    if kind in ("assertIs", "assertIsNot"):
        extra = is_
    elif kind in ("assertIsInstance", "assertNotIsInstance"):
        extra = [mro, _class_facts(ops[1]) if len(ops) > 1 else None]
    elif kind == "assertRaises":
        extra = _class_facts(ops[1]) if len(ops) == 2 else None
        ops = ops[:1]
    return kind, line, ops, kws, extra


def _class_facts(spec: object) -> list[list[str]] | None:
    """The facts of a class operand (or a tuple of them), as the runner sent them."""
    spec = _restore(spec)
    items = spec if isinstance(spec, tuple) else (spec,)
    if not all(isinstance(c, ClassFact) for c in items):
        return None
    return [list(c.fact) for c in items]


def _first_line(text: str | None, limit: int = 300) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def judge_records(value: object, required: Counter[int] | None = None) -> Judged:
    """The verdict from what ``_ce_run`` returned: ``(records, raised, stopped)``; a test
    that ended normally must have recorded the assertions at ``required`` lines."""
    if not (isinstance(value, tuple) and len(value) == 3):
        return Judged(Verdict.FAIL, "the test's report is malformed")
    records, raised, stopped = value
    if not isinstance(records, list) or not isinstance(stopped, bool):
        return Judged(Verdict.FAIL, "the test's report is malformed")
    if raised is not None and not isinstance(raised, ExceptionValue):
        return Judged(Verdict.FAIL, "the test's report is malformed")
    for rec in records:
        if not (
            isinstance(rec, tuple)
            and len(rec) == 5
            and isinstance(rec[0], str)
            and isinstance(rec[1], int)
            and isinstance(rec[2], list)
            and isinstance(rec[3], dict)
            and all(isinstance(k, str) for k in rec[3])
        ):
            return Judged(Verdict.FAIL, "the test's report is malformed")
        name, line, args, kwargs, extra = rec
        args = _restore(args)
        kwargs = {k: _restore(v) for k, v in kwargs.items()}
        failure = apply(name, args, kwargs, extra)
        if failure is not None:
            where = f"line {line}: " if line else ""
            return Judged(Verdict.FAIL, f"{where}{failure}")
    if raised is not None:
        return Judged(Verdict.FAIL, f"raised {raised.type_name}: {_first_line(raised.message)}")
    if stopped:
        return Judged(Verdict.FAIL, "the test stopped early on a check the parent finds holds")
    seen = Counter(rec[1] for rec in records)
    missing = sorted(line for line, n in (required or {}).items() if seen[line] < n)
    if missing:
        return Judged(
            Verdict.FAIL,
            f"line {missing[0]}: the assertion there did not report (its record is missing)",
        )
    return Judged(Verdict.PASS)


@dataclass(frozen=True, slots=True)
class ClassFact:
    """A class operand as the test's code read it: ``("b", name)`` for a builtin class (by
    identity), ``("c", module, qualified name)`` for another (as the class states them)."""

    fact: tuple[str, ...]

    def __repr__(self) -> str:
        return f"<class {self.fact[-1]!r}>"


def _restore(v: object, depth: int = 0) -> Any:
    """The child's stand-ins for classes and deques (records of the rewritten code's
    ``ClassRef``/``DequeRef``) as the parent's :class:`ClassFact` and ``deque``."""
    if depth > 200:
        return v
    if isinstance(v, Record) and len(v) == 1:
        item = v[0]
        if (
            v.record_fields == ("class_fact",)
            and isinstance(item, tuple)
            and all(isinstance(x, str) for x in item)
        ):
            return ClassFact(item)
        if v.record_fields == ("deque_items",) and isinstance(item, list):
            return deque(_restore(x, depth + 1) for x in item)
    t = type(v)
    try:
        if t is list:
            return [_restore(x, depth + 1) for x in v]  # type: ignore[attr-defined]
        if t is tuple:
            return tuple(_restore(x, depth + 1) for x in v)  # type: ignore[attr-defined]
        if t is dict:
            return {
                _restore(k, depth + 1): _restore(x, depth + 1)
                for k, x in v.items()  # type: ignore[attr-defined]
            }
        if t is set or t is frozenset:
            return t(_restore(x, depth + 1) for x in v)  # type: ignore[attr-defined]
    except TypeError:  # a deque as a key: unhashable, as it would be in the child
        return v
    return v


def _truth_of(r: object) -> bool | None:
    """The bool of a comparison's result when it is one (numpy's ``bool_`` too)."""
    if isinstance(r, bool | np.bool_):
        return bool(r)
    return None


def _show(v: object) -> str:
    return describe(v, _SHOWN)


def _holds_opaque(v: object) -> bool:
    stack, seen = [v], 0
    while stack and seen < 1_000_000:
        x = stack.pop()
        seen += 1
        if isinstance(x, Opaque):
            return True
        if isinstance(x, list | tuple | set | frozenset | deque):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.keys())
            stack.extend(x.values())
        elif isinstance(x, Structured):
            stack.extend(f for _, f in x.fields)
    return bool(stack)


def _eq(a: object, b: object) -> bool | None:
    """``a == b`` on decoded values; None: undecidable (an opaque value, or ``==`` raised or
    did not give a truth value, as for arrays)."""
    if _holds_opaque(a) or _holds_opaque(b):
        return None
    try:
        return _truth_of(a == b)
    except Exception:
        return None


def _truth(v: object) -> bool | None:
    if isinstance(v, Structured | EnumMember | Opaque | ExceptionValue):
        return None  # its truth is its class's __bool__/__len__: not read
    try:
        return bool(v)
    except Exception:
        return None


_TYPED: dict[str, tuple[type, ...]] = {
    "assertListEqual": (list,),
    "assertTupleEqual": (tuple,),
    "assertDictEqual": (dict,),
    "assertSetEqual": (set, frozenset),
    "assertMultiLineEqual": (str,),
}

_SEQUENCES = (list, tuple, str, bytes)


def _bind(name: str, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any] | str:
    method = getattr(unittest.TestCase, name, None)
    if not callable(method):
        return f"{name} is not an assertion the parent applies"
    try:
        bound = inspect.signature(method).bind(None, *args, **kwargs)
    except TypeError as e:
        return f"{name}: {e}"
    bound.apply_defaults()
    return dict(bound.arguments)


def apply(name: str, args: list[Any], kwargs: dict[str, Any], extra: object) -> str | None:
    """Apply one recorded assertion on decoded values: None when it holds, else why not."""
    if name == "fail":
        msg = args[0] if args else kwargs.get("msg")
        return "fail() called" + (f": {_show(msg)}" if msg is not None else "")
    if name == "assertRaises":
        return _raises(args, extra)
    rule = _RULES.get(name)
    if rule is None:
        return f"{name} is not an assertion the parent applies"
    bound = _bind(name, args, kwargs)
    if isinstance(bound, str):
        return bound
    failure = rule(name, bound, extra)
    if failure is None:
        return None
    msg = bound.get("msg")
    return f"{name}: {failure}" + (f" : {_show(msg)}" if msg is not None else "")


def _raises(args: list[Any], extra: object) -> str | None:
    wanted = _facts(extra)
    if len(args) != 1 or wanted is None:
        return "assertRaises: the record is malformed"
    names = " or ".join(f[-1] for f in wanted) or "?"
    got = args[0]
    if got is None:
        return f"assertRaises: {names} not raised"
    if not isinstance(got, ExceptionValue):
        return "assertRaises: the record is malformed"
    for f in wanted:
        if f[0] == "b" and got.satisfies(f[1]):
            return None
        if f[0] == "c" and (f[1], f[2]) in got.classes:
            return None
    return f"assertRaises: raised {got.type_name}: {_first_line(got.message)}, not {names}"


def _facts(raw: object) -> list[tuple[str, ...]] | None:
    if not isinstance(raw, list):
        return None
    out = []
    for f in raw:
        if not (isinstance(f, list) and f and all(isinstance(x, str) for x in f)):
            return None
        out.append(tuple(f))
    return out


def _two(b: dict[str, Any]) -> tuple[Any, Any]:
    """The first two operands of a bound assertion, whatever unittest names them
    (``first``, ``seq1``, ``list1``, ``d1`` ...)."""
    values = list(b.values())
    return values[1], values[2]


def _equal(name: str, b: dict[str, Any], extra: object) -> str | None:
    first, second = _two(b)
    kinds = _TYPED.get(name)
    if kinds is not None:
        for side, v in (("first", first), ("second", second)):
            if not isinstance(v, kinds):
                return f"the {side} argument is not a {kinds[0].__name__}: {_show(v)}"
    if name == "assertSequenceEqual":
        if not (isinstance(first, _SEQUENCES) and isinstance(second, _SEQUENCES)):
            return f"not sequences: {_show(first)}, {_show(second)}"
        same = _eq(list(first), list(second))
    else:
        same = _eq(first, second)
    if same:
        return None
    sign = "!=" if same is False else "cannot be compared with"
    return f"{_show(first)} {sign} {_show(second)}"


def _not_equal(name: str, b: dict[str, Any], extra: object) -> str | None:
    first, second = b["first"], b["second"]
    same = _eq(first, second)
    if same is False:
        return None
    sign = "==" if same else "cannot be compared with"
    return f"{_show(first)} {sign} {_show(second)}"


def _true(name: str, b: dict[str, Any], extra: object) -> str | None:
    v = b["expr"]
    truth = _truth(v)
    want = name == "assertTrue"
    if truth is want:
        return None
    if truth is None:
        return f"the truth of {_show(v)} is its class's own code (not read)"
    return f"{_show(v)} is not {want}"


def _is(name: str, b: dict[str, Any], extra: object) -> str | None:
    if not isinstance(extra, bool):
        return "the record is malformed"
    if extra is (name == "assertIs"):
        return None
    return f"{_show(b['expr1'])} {'is not' if name == 'assertIs' else 'is'} {_show(b['expr2'])}"


def _none(name: str, b: dict[str, Any], extra: object) -> str | None:
    v = b["obj"]
    if (v is None) is (name == "assertIsNone"):
        return None
    return f"{_show(v)} is {'not ' if name == 'assertIsNone' else ''}None"


def _isinstance(name: str, b: dict[str, Any], extra: object) -> str | None:
    if not (isinstance(extra, list) and len(extra) == 2):
        return "the record is malformed"
    mine, wanted = _facts(extra[0]), _facts(extra[1])
    if mine is None or wanted is None:
        return "the record is malformed"
    hit = bool(set(mine) & set(wanted))
    if hit is (name == "assertIsInstance"):
        return None
    names = " or ".join(f[-1] for f in wanted)
    return f"{_show(b['obj'])} is {'not ' if name == 'assertIsInstance' else ''}a {names}"


def _in(name: str, b: dict[str, Any], extra: object) -> str | None:
    member, container = b["member"], b["container"]
    found: bool | None = None
    if not (_holds_opaque(member) or _holds_opaque(container)):
        try:
            found = bool(member in container)
        except Exception:
            found = None
    if found is None:
        return f"whether {_show(member)} is in {_show(container)} cannot be decided"
    if found is (name == "assertIn"):
        return None
    return f"{_show(member)} {'not ' if name == 'assertIn' else ''}found in {_show(container)}"


_ORDER: dict[str, tuple[str, Callable[[Any, Any], Any]]] = {
    "assertGreater": (">", lambda a, b: a > b),
    "assertGreaterEqual": (">=", lambda a, b: a >= b),
    "assertLess": ("<", lambda a, b: a < b),
    "assertLessEqual": ("<=", lambda a, b: a <= b),
}


def _order(name: str, b: dict[str, Any], extra: object) -> str | None:
    a, c = b["a"], b["b"]
    sign, op = _ORDER[name]
    try:
        ok = _truth_of(op(a, c))
        if ok is None:
            raise TypeError("no truth value")
    except Exception as e:
        return f"{_show(a)} {sign} {_show(c)} cannot be decided ({type(e).__name__})"
    return None if ok else f"not {_show(a)} {sign} {_show(c)}"


def _almost(name: str, b: dict[str, Any], extra: object) -> str | None:
    first, second, places, delta = b["first"], b["second"], b["places"], b["delta"]
    if delta is not None and places is not None:
        return "specify delta or places not both"
    want = name == "assertAlmostEqual"
    same = _eq(first, second)
    if same and want:
        return None
    if same and not want:
        return f"{_show(first)} == {_show(second)}"
    try:
        diff = abs(first - second)
        if delta is not None:
            close = diff <= delta
        else:
            close = round(diff, 7 if places is None else places) == 0
        close = _truth_of(close)
        if close is None:
            raise TypeError("no truth value")
    except Exception as e:
        return f"{_show(first)} and {_show(second)} cannot be compared ({type(e).__name__})"
    if close is want:
        return None
    within = f"within {delta!r} delta" if delta is not None else f"within {places or 7} places"
    return f"{_show(first)} {'!=' if want else '=='} {_show(second)} {within}"


def _count_equal(name: str, b: dict[str, Any], extra: object) -> str | None:
    first, second = b["first"], b["second"]
    if _holds_opaque(first) or _holds_opaque(second):
        return f"{_show(first)} cannot be compared with {_show(second)}"
    try:
        a, c = list(first), list(second)
    except Exception:
        return f"not iterables: {_show(first)}, {_show(second)}"
    try:
        same = Counter(a) == Counter(c)
    except TypeError:  # unhashable items: unittest's pairwise matching, bounded
        if len(a) != len(c) or len(a) * len(c) > 4_000_000:
            same = False
        else:
            rest = list(c)
            same = True
            for x in a:
                k = next((i for i, y in enumerate(rest) if _eq(x, y)), None)
                if k is None:
                    same = False
                    break
                del rest[k]
    return None if same else f"element counts differ: {_show(first)} vs {_show(second)}"


def _regex(name: str, b: dict[str, Any], extra: object) -> str | None:
    text, pattern = _two(b)
    if not isinstance(text, str | bytes) or not isinstance(pattern, str | bytes):
        return f"cannot match {_show(pattern)} against {_show(text)}"
    if len(text) > 100_000:
        return "the text is longer than 100,000 characters"
    try:
        found = re.search(pattern, text) is not None  # type: ignore[arg-type]
    except (re.error, TypeError) as e:
        return f"bad pattern {_show(pattern)}: {e}"
    if found is (name == "assertRegex"):
        return None
    return f"{_show(pattern)} {'not ' if name == 'assertRegex' else ''}found in {_show(text)}"


_Rule = Callable[[str, dict[str, Any], object], str | None]
_RULES: dict[str, _Rule] = {
    "assertEqual": _equal,
    "assertListEqual": _equal,
    "assertTupleEqual": _equal,
    "assertDictEqual": _equal,
    "assertSetEqual": _equal,
    "assertSequenceEqual": _equal,
    "assertMultiLineEqual": _equal,
    "assertNotEqual": _not_equal,
    "assertTrue": _true,
    "assertFalse": _true,
    "assertIs": _is,
    "assertIsNot": _is,
    "assertIsNone": _none,
    "assertIsNotNone": _none,
    "assertIsInstance": _isinstance,
    "assertNotIsInstance": _isinstance,
    "assertIn": _in,
    "assertNotIn": _in,
    "assertGreater": _order,
    "assertGreaterEqual": _order,
    "assertLess": _order,
    "assertLessEqual": _order,
    "assertAlmostEqual": _almost,
    "assertNotAlmostEqual": _almost,
    "assertCountEqual": _count_equal,
    "assertRegex": _regex,
    "assertNotRegex": _regex,
}
