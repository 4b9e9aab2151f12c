"""Reading a test program from a model's reply (or a person's text) without running it.

A test of a method, a property, an async function or a function that takes objects builds
what it calls (see :mod:`utdebug.engine.program`). Models write such tests naturally as a
pytest function; this module reads the shapes they write, with :mod:`ast` only:

- a pytest function: ``def test_x(): cart = Cart(); cart.add(3); assert cart.total() == 3``
  (``async def`` too: its ``await`` s are kept);
- a unittest method: ``self.assertEqual(x, y)``, ``assertTrue`` / ``assertFalse`` /
  ``assertIsNone`` / ``assertAlmostEqual``, ``with self.assertRaises(E):`` and
  ``self.assertRaises(E, f, *args)``; the class's ``setUp`` runs first (``self`` is a plain
  object the setup builds);
- ``with pytest.raises(E):`` blocks (also when the assertions after the block only inspect
  the exception, and when the block holds an assertion that never runs);
- plain setup statements followed by an ``assert`` (no function at all).

:func:`parse_program_tests` reads **every** test a person can read in a reply (at most
:data:`MAX_TESTS`): each test function and test method (one that mocks is refused, the others
are read); a ``for`` loop that asserts over a table of cases written out (a literal list or
tuple, or a dict's ``.items()``) is one test per row, the row's values in place of the loop's
names; a fixture that only builds a value is inlined (its statements, then ``name = <what it
returns or yields>``); a unittest class's helper methods and class-level values are on
``self``; module-level setup statements and helper functions come first. The reply's own copy
of the code under test (a class or function ``module_source`` defines) is left out, and so
is an import of names the module defines (the test runs inside it). A block that does not
parse is read again without the top-level statements (or class methods) that do not, so one
broken test does not hide the others. :func:`parse_program_test` is the first of them.

The last assertion is the test's expected outcome; everything before it is the setup (earlier
assertions are dropped: they check, they do not build). The assertion's subject becomes the
call; when it only reads a name the statement before bound (``r = cart.total()`` then
``assert r == 3``) that statement's value is the call; when it does not mention the target but
the statement before calls it (``cart.add(3)`` then ``assert cart.items == [3]``), that call
is the call and the subject the follow-up expression (``then``).

Refused, each with its reason: no test, fixtures the reply does not define (or that mock or do
more than build a value), a loop over cases it does not list, mocks
(``unittest.mock``, ``patch``, ``Mock``, ``monkeypatch``, ``mocker``), parametrized tests, an
assertion that compares nothing, and an expected value that is not a value
(:func:`expected_value` is the one place an expected value's text becomes a value).
"""

from __future__ import annotations

import ast
import builtins
import re
import textwrap
from dataclasses import dataclass

from utdebug import expected_values
from utdebug.agents.reply_syntax import (
    MAX_REPLY_CHARS,
    ParsedValue,
    ParseFailure,
    fenced_blocks,
    parse_value,
    too_long,
)
from utdebug.literals import LiteralError

__all__ = [
    "MAX_TESTS",
    "ParsedProgram",
    "expected_value",
    "parse_program_test",
    "parse_program_tests",
    "parse_vote",
    "program_key",
]

_MOCKS = frozenset(
    {"mock", "Mock", "MagicMock", "AsyncMock", "patch", "monkeypatch", "mocker", "create_autospec"}
)
_FIXTURE_DECORATORS = frozenset({"fixture", "parametrize", "usefixtures"})
_TRUTH = {"assertTrue": True, "assertFalse": False}
_EQUAL = frozenset({"assertEqual", "assertEquals", "assertAlmostEqual", "assertListEqual",
                    "assertDictEqual", "assertTupleEqual", "assertSetEqual", "assertCountEqual",
                    "assertSequenceEqual", "assertMultiLineEqual"})  # fmt: skip
MAX_TESTS = 10
"""At most this many tests are read from one reply."""
_SELF_CLASS = "class _UtdCase:\n    pass\n\n\nself = _UtdCase()\n"


@dataclass(frozen=True, slots=True)
class ParsedProgram:
    """A test program read from a reply (see :mod:`utdebug.engine.program`)."""

    setup: str
    call: str
    expected: ParsedValue | None
    """The expected value (``None`` when the test expects an exception)."""
    raises: str | None = None
    """The exception type the call is expected to raise."""
    then: str | None = None
    name: str = ""
    """The test function's name (empty for plain statements)."""
    source: str = ""
    """The test as written (for reports)."""

    @property
    def key(self) -> str:
        """Identity for de-duplication (the program, not its expected outcome)."""
        return program_key(self.setup, self.call, self.then)


def program_key(setup: str, call: str, then: str | None) -> str:
    """A test program's identity: its setup, call and follow-up, without outer blank space."""
    return "program:" + "\n".join([setup.strip(), call.strip(), (then or "").strip()])


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


def parse_program_test(
    reply: str, entry_point: str, *, module_source: str | None = None
) -> ParsedProgram | ParseFailure:
    """The first test of ``reply`` (see the module docstring); ``module_source`` (the code
    under test) lets an expected value name its classes (``Point(1, 2)``)."""
    found = parse_program_tests(reply, entry_point, module_source=module_source)
    return found[0] if isinstance(found, list) else found


def parse_program_tests(
    reply: str, entry_point: str, *, module_source: str | None = None, limit: int = MAX_TESTS
) -> list[ParsedProgram] | ParseFailure:
    """Every test of ``reply`` a person can read (at most ``limit``, distinct programs, in the
    reply's order): each test function or method, each row of a table of cases a loop
    asserts on (see the module docstring). The failure says why the first refused test was
    refused when none is usable."""
    if len(reply) > MAX_REPLY_CHARS:
        return too_long(reply)
    first_failure: ParseFailure | None = None
    for candidate in _code_candidates(reply):
        parsed = _parse_recovering(candidate)
        if parsed is None:
            continue
        tree, code = parsed
        found = _from_module(tree, code, entry_point, module_source)
        tests: list[ParsedProgram] = []
        for f in found:
            if isinstance(f, ParsedProgram) and f.key not in {t.key for t in tests}:
                tests.append(f)
        if tests:
            return tests[:limit]
        failures = [f for f in found if isinstance(f, ParseFailure)]
        if failures and first_failure is None:
            first_failure = failures[0]
    return first_failure or ParseFailure("no test found: write one pytest function with an assert")


def _parse_recovering(code: str) -> tuple[ast.Module, str] | None:
    """``code`` parsed; when it does not parse, the top-level statements (and a class's
    methods) that do, so that one broken test does not hide the others."""
    try:
        return ast.parse(code), code
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    kept: list[str] = []
    for chunk in _chunks(code.splitlines(), 0):
        text = "\n".join(chunk)
        if _parses(text):
            kept.append(text)
            continue
        head = chunk[0]
        if not head.startswith("class ") or len(chunk) < 2:
            continue
        inner = [line for line in chunk[1:] if line.strip()]
        indent = len(inner[0]) - len(inner[0].lstrip()) if inner else 0
        pieces = ["\n".join(m) for m in _chunks(chunk[1:], indent)]
        methods = [m for m in pieces if _parses(textwrap.dedent(m))]
        if methods:
            kept.append("\n".join([head, *methods]))
    recovered = "\n\n".join(kept)
    try:
        return ast.parse(recovered), recovered
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _chunks(lines: list[str], indent: int) -> list[list[str]]:
    """``lines`` cut where a line starts at ``indent`` (decorators stay with their def)."""
    out: list[list[str]] = []
    for line in lines:
        stripped = line.strip()
        starts = (
            stripped
            and len(line) - len(line.lstrip()) == indent
            and not stripped.startswith((")", "]", "}", "#"))
        )
        glued = out and out[-1] and out[-1][-1].strip().startswith("@")
        if starts and not glued:
            out.append([line])
        elif out:
            out[-1].append(line)
        else:
            out.append([line])
    return out


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _code_candidates(reply: str) -> list[str]:
    """Fenced blocks, the last one first, then the whole reply."""
    blocks = fenced_blocks(reply)
    out = []
    for b in reversed(blocks):
        body = reply[b.body : b.end]
        first, _, rest = body.partition("\n")
        if first.strip() and re.fullmatch(r"[A-Za-z][\w+#.-]*", first.strip()):
            body = rest  # the language tag
        out.append(textwrap.dedent(body))
    out.append(textwrap.dedent(reply))
    return out


def _from_module(
    tree: ast.Module, code: str, entry: str, module_source: str | None = None
) -> list[ParsedProgram | ParseFailure]:
    defined = _defined_names(module_source) | {entry}
    prelude: list[str] = []
    fixtures = {
        n.name: n
        for n in tree.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and _is_fixture(n)
    }
    test_names = {
        n.name
        for n in tree.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name.startswith("test")
    }
    module_setup: list[str] = []
    plain: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            kept = _import_without(node, defined)
            if kept is not None and not _test_import(node) and _uses_mocks(node) is None:
                prelude.append(kept)
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name in defined or node.name in fixtures or node.name.startswith("test"):
                continue  # the code under test (as the reply rewrote it), a fixture, a test
            if isinstance(node, ast.ClassDef) and _test_methods(node):
                continue
            if _uses_mocks(node) is None:
                prelude.append(_source(code, node))  # a helper the tests use
            continue
        if isinstance(node, ast.If) and "__main__" in ast.dump(node.test):
            continue
        if _calls_a_runner(node, test_names):
            continue  # ``pytest.main()``, ``unittest.main()``, ``test_x()``
        plain.append(node)
        if _assertion(node) is None and _uses_mocks(node) is None:
            module_setup.append(_source(code, node))
    out: list[ParsedProgram | ParseFailure] = []
    lead = [*prelude, *module_setup]
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test"
        ):
            out += _from_function(node, code, entry, lead, None, module_source, fixtures)
        elif isinstance(node, ast.ClassDef):
            methods = _test_methods(node)
            if not methods:
                continue
            set_up = next(
                (
                    m
                    for m in node.body
                    if isinstance(m, ast.FunctionDef) and m.name in ("setUp", "setup_method")
                ),
                None,
            )
            class_set_up = next(
                (
                    m
                    for m in node.body
                    if isinstance(m, ast.FunctionDef) and m.name in ("setUpClass", "setup_class")
                ),
                None,
            )
            helpers = [
                m
                for m in node.body
                if not (
                    isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)
                    and (m.name.startswith("test") or m.name in _FRAMEWORK_METHODS)
                )
                and not _is_docstring(m)
            ]
            for m in methods:
                out += _from_function(
                    m, code, entry, lead, set_up, module_source, fixtures, helpers, class_set_up
                )
    if out:
        return out
    if plain and _assertion(plain[-1]) is not None:
        return _from_body(plain, code, entry, prelude, "", module_source)
    if plain and isinstance(plain[-1], ast.For):
        return _from_body(plain, code, entry, prelude, "", module_source)
    return out


_FRAMEWORK_METHODS = frozenset(
    {"setUp", "tearDown", "setup_method", "teardown_method", "setUpClass", "tearDownClass",
     "setup_class", "teardown_class", "asyncSetUp", "asyncTearDown"}
)  # fmt: skip


def _test_methods(node: ast.ClassDef) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [
        m
        for m in node.body
        if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef) and m.name.startswith("test")
    ]


def _defined_names(module_source: str | None) -> set[str]:
    """The top-level names the code under test defines (functions, classes)."""
    if not module_source:
        return set()
    try:
        tree = ast.parse(module_source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    return {
        n.name
        for n in tree.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }


def _import_without(node: ast.Import | ast.ImportFrom, defined: set[str]) -> str | None:
    """The import without the names the code under test defines (the test runs in its
    module: ``from cart import Cart`` names a module that may not exist); ``None`` when
    nothing is left."""
    if not isinstance(node, ast.ImportFrom) or not defined:
        return ast.unparse(node)
    names = [a for a in node.names if (a.asname or a.name) not in defined or a.name == "*"]
    if len(names) == len(node.names):
        return ast.unparse(node)
    if not names:
        return None
    return ast.unparse(ast.ImportFrom(module=node.module, names=names, level=node.level))


def _is_fixture(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(
        _callee_name(d.func if isinstance(d, ast.Call) else d) == "fixture"
        for d in fn.decorator_list
    )


def _calls_a_runner(node: ast.stmt, test_names: set[str]) -> bool:
    value = node.value if isinstance(node, ast.Expr | ast.Assign) else None
    if not isinstance(value, ast.Call):
        return False
    name = _callee_name(value.func)
    return name in test_names or (
        name == "main"
        and isinstance(value.func, ast.Attribute)
        and isinstance(value.func.value, ast.Name)
        and value.func.value.id in ("pytest", "unittest")
    )


def _test_import(node: ast.Import | ast.ImportFrom) -> bool:
    names = [a.name for a in node.names]
    module = node.module if isinstance(node, ast.ImportFrom) else None
    return module in ("pytest", "unittest") or any(n in ("pytest", "unittest") for n in names)


def _uses_mocks(tree: ast.AST) -> str | None:
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.module and "mock" in n.module.split("."):
            return f"from {n.module} import ..."
        if isinstance(n, ast.Import) and any("mock" in a.name.split(".") for a in n.names):
            return "import mock"
        if isinstance(n, ast.Name) and n.id in _MOCKS:
            return n.id
        if isinstance(n, ast.Attribute) and n.attr in _MOCKS:
            return n.attr
        if isinstance(n, ast.arg) and n.arg in _MOCKS:
            return n.arg
    return None


_Fn = ast.FunctionDef | ast.AsyncFunctionDef


def _from_function(
    fn: _Fn,
    code: str,
    entry: str,
    prelude: list[str],
    set_up: ast.FunctionDef | None,
    module_source: str | None = None,
    fixtures: dict[str, _Fn] | None = None,
    helpers: list[ast.stmt] | None = None,
    class_set_up: ast.FunctionDef | None = None,
) -> list[ParsedProgram | ParseFailure]:
    fixtures = fixtures or {}
    for d in fn.decorator_list:
        name = _callee_name(d.func if isinstance(d, ast.Call) else d)
        if name in _FIXTURE_DECORATORS:
            what = "parametrized tests" if name == "parametrize" else "fixtures"
            return [ParseFailure(f"the test uses {what} (@{name}): write one test with its setup")]
    used = [fn, *(set_up.body if set_up is not None else []), *(helpers or [])]
    used += class_set_up.body if class_set_up is not None else []
    for node in used:
        mock = _uses_mocks(node)
        if mock is not None:
            return [ParseFailure(f"the test uses mocks ({mock}): mocks are out of scope")]
    params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]]
    params = params[1:] if params[:1] == ["self"] else params
    built = _fixture_lines(params, fixtures, code)
    if isinstance(built, ParseFailure):
        return [built]
    uses_self = any(isinstance(n, ast.Name) and n.id == "self" for n in ast.walk(fn))
    lead: list[str] = list(prelude)
    if uses_self or set_up is not None or helpers or class_set_up is not None:
        lead.append(_self_class(helpers or [], code))
        if class_set_up is not None:  # ``cls.x = ...`` once, as the class's attributes
            first = [a.arg for a in [*class_set_up.args.posonlyargs, *class_set_up.args.args]]
            lead.append(f"{first[0] if first else 'cls'} = type(self)")
            lead += [_source(code, s) for s in class_set_up.body if not _is_docstring(s)]
        if set_up is not None:
            lead += [_source(code, s) for s in set_up.body if not _is_docstring(s)]
    lead += built
    body = [s for s in fn.body if not _is_docstring(s)]
    if not body:
        return [ParseFailure(f"the test {fn.name} is empty")]
    return _from_body(body, code, entry, lead, fn.name, module_source)


def _self_class(helpers: list[ast.stmt], code: str) -> str:
    """The plain object ``self`` is in a test method: the class's helper methods and
    class-level values on it."""
    if not helpers:
        return _SELF_CLASS
    body = "\n\n".join(textwrap.indent(_source(code, h), "    ") for h in helpers)
    return f"class _UtdCase:\n{body}\n\n\nself = _UtdCase()\n"


def _fixture_lines(
    params: list[str], fixtures: dict[str, _Fn], code: str, seen: frozenset[str] = frozenset()
) -> list[str] | ParseFailure:
    """The statements that build the values of the fixtures ``params`` name (a fixture that
    only builds a value: its statements, then ``name = <what it returns or yields>``)."""
    out: list[str] = []
    for name in params:
        fixture = fixtures.get(name)
        if name in _MOCKS or fixture is None or name in seen:
            return ParseFailure(
                f"the test uses fixtures (parameters {', '.join(params)}): build what it "
                f"needs in the test itself"
            )
        if _uses_mocks(fixture) is not None:
            return ParseFailure(f"the fixture {name} uses mocks: mocks are out of scope")
        own = [a.arg for a in [*fixture.args.posonlyargs, *fixture.args.args]]
        inner = _fixture_lines(own, fixtures, code, seen | {name})
        if isinstance(inner, ParseFailure):
            return inner
        out += inner
        body = [s for s in fixture.body if not _is_docstring(s)]
        at = next(
            (
                i
                for i, s in enumerate(body)
                if isinstance(s, ast.Return)
                or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Yield))
            ),
            None,
        )
        if at is None:
            return ParseFailure(f"the fixture {name} builds no value (no return or yield)")
        last = body[at]
        value: ast.expr | None = None
        if isinstance(last, ast.Return):
            value = last.value
        elif isinstance(last, ast.Expr) and isinstance(last.value, ast.Yield):
            value = last.value.value
        rest = body[:at]
        if any(isinstance(n, ast.Return | ast.Yield) for s in rest for n in ast.walk(s)):
            return ParseFailure(f"the fixture {name} does more than build a value")
        out += [_source(code, s) for s in rest]
        out.append(f"{name} = {ast.unparse(value) if value is not None else 'None'}")
    return out


def _from_body(
    body: list[ast.stmt],
    code: str,
    entry: str,
    lead: list[str],
    name: str,
    module_source: str | None = None,
) -> list[ParsedProgram | ParseFailure]:
    """The test of ``body`` (its last assertion), or one test per row of a table of cases
    that a final ``for`` loop asserts on."""
    last = next(
        (
            i
            for i in range(len(body) - 1, -1, -1)
            if _assertion(body[i]) is not None or _loop_asserts(body[i])
        ),
        None,
    )
    loop = body[last] if last is not None else None
    if isinstance(loop, ast.For) and last is not None and _assertion(loop) is None:
        rows = _unrolled(body[:last], loop, code)
        if rows is None:
            return [ParseFailure(f"the test {name} asserts in a loop over cases it does not list")]
        out: list[ParsedProgram | ParseFailure] = []
        for text in rows:
            tree = ast.parse(text)
            out.append(_one(tree.body, text, entry, lead, name, module_source))
        return out
    return [_one(body, code, entry, lead, name, module_source)]


def _loop_asserts(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.For)
        and not node.orelse
        and any(_assertion(s) is not None for s in node.body)
    )


def _unrolled(before: list[ast.stmt], loop: ast.For, code: str) -> list[str] | None:
    """One test text per row of the table ``loop`` runs over: the statements before the
    loop, then the loop's body with the row's values in place of its names. ``None`` when
    the rows are not written out (a literal list or tuple, here or bound before the loop, or
    a dict's ``.items()``) or do not fit the loop's names."""
    table, source_of = loop.iter, None
    items = False
    if (
        isinstance(table, ast.Call)
        and isinstance(table.func, ast.Attribute)
        and table.func.attr == "items"
        and not table.args
    ):
        table, items = table.func.value, True
    if isinstance(table, ast.Name):
        source_of = next(
            (
                s
                for s in reversed(before)
                if isinstance(s, ast.Assign)
                and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name)
                and s.targets[0].id == table.id
            ),
            None,
        )
        table = source_of.value if source_of is not None else table
    rows: list[ast.expr]
    if items and isinstance(table, ast.Dict) and None not in table.keys:
        pairs = zip(table.keys, table.values, strict=True)
        rows = [ast.Tuple([k, v], ast.Load()) for k, v in pairs]  # type: ignore[list-item]
    elif not items and isinstance(table, ast.List | ast.Tuple):
        rows = list(table.elts)
    else:
        return None
    names = _target_names(loop.target)
    if names is None or not rows:
        return None
    kept = [s for s in before if s is not source_of]
    head = "\n".join(_source(code, s) for s in kept)
    out: list[str] = []
    for row in rows[:MAX_TESTS]:
        values = _row_values(names, row)
        if values is None:
            return None
        swapped = [_Substitute(values).visit(ast.parse(ast.unparse(s)).body[0]) for s in loop.body]
        text = "\n".join([head, *(ast.unparse(ast.fix_missing_locations(s)) for s in swapped)])
        out.append(text.strip("\n"))
    return out


def _target_names(target: ast.expr) -> list[str] | str | None:
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Tuple | ast.List) and all(
        isinstance(e, ast.Name) for e in target.elts
    ):
        return [e.id for e in target.elts]  # type: ignore[attr-defined]
    return None


def _row_values(names: list[str] | str, row: ast.expr) -> dict[str, ast.expr] | None:
    if isinstance(names, str):
        return {names: row}
    if isinstance(row, ast.Tuple | ast.List) and len(row.elts) == len(names):
        return dict(zip(names, row.elts, strict=True))
    return None


class _Substitute(ast.NodeTransformer):
    def __init__(self, values: dict[str, ast.expr]) -> None:
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load) and node.id in self.values:
            return ast.copy_location(self.values[node.id], node)
        return node


def _one(
    body: list[ast.stmt],
    code: str,
    entry: str,
    lead: list[str],
    name: str,
    module_source: str | None = None,
) -> ParsedProgram | ParseFailure:
    last_at = next((i for i in range(len(body) - 1, -1, -1) if _assertion(body[i])), None)
    if last_at is None:
        return ParseFailure(f"the test {name or ''} has no assertion".replace("  ", " "))
    raised_at = _raises_checked_after(body, last_at)
    if raised_at is not None:
        last_at = raised_at  # ``with pytest.raises(E) as e`` then asserts on ``e``
    found = _assertion(body[last_at])
    assert found is not None
    if isinstance(found, ParseFailure):
        return found
    subject, expected_src, raises, inner = found
    setup_nodes = [s for s in body[:last_at] if _assertion(s) is None]
    setup = [*lead, *(_source(code, s) for s in setup_nodes), *inner]
    call, then = subject, None
    if raises is None and setup_nodes and not inner:
        prev = setup_nodes[-1]
        if (
            isinstance(prev, ast.Assign)
            and len(prev.targets) == 1
            and isinstance(prev.targets[0], ast.Name)
            and subject.strip() == prev.targets[0].id
        ):
            call = _source(code, prev.value)
            setup.pop()
        elif (
            isinstance(prev, ast.Expr)
            and not _mentions(subject, entry)
            and _mentions(_source(code, prev.value), entry)
        ):
            call, then = _source(code, prev.value), subject
            setup.pop()
    expected: ParsedValue | None = None
    if raises is None:
        assert expected_src is not None
        value = expected_value(expected_src, module_source=module_source)
        if isinstance(value, ParseFailure):
            return ParseFailure(f"the expected value {expected_src!r}: {value.reason}")
        expected = value
        if value.pending and _names_objects(expected_src):
            # ``assert a == b`` with ``b`` built by the setup (an ``__eq__`` test): no value
            # to predict, the comparison itself is the call, expected True
            if then is not None:
                then = _equals(then, expected_src)
            else:
                call = _equals(call, expected_src)
            expected = ParsedValue(True, "True")
    source = "\n".join(_source(code, s) for s in body)
    return ParsedProgram("\n".join(setup), call, expected, raises, then, name, source)


def _raises_checked_after(body: list[ast.stmt], last_at: int) -> int | None:
    """The index of a ``with raises(E) as e:`` block that the assertions after it only
    inspect (``assert "empty" in str(e.value)``), else ``None``."""
    for i in range(last_at - 1, -1, -1):
        node = body[i]
        if not isinstance(node, ast.With | ast.AsyncWith) or len(node.items) != 1:
            continue
        item = node.items[0]
        found = _assertion(node)
        if found is None or isinstance(found, ParseFailure) or found[2] is None:
            continue
        bound = item.optional_vars
        if not isinstance(bound, ast.Name):
            return None
        after = body[i + 1 : last_at + 1]
        if all(
            _assertion(s) is not None
            and any(isinstance(n, ast.Name) and n.id == bound.id for n in ast.walk(s))
            for s in after
            if _assertion(s) is not None
        ):
            return i
        return None
    return None


def _names_objects(source: str) -> bool:
    """The expression uses a name other than a builtin's (one the setup binds): it cannot be
    computed apart from the test, as a pending expected value is."""
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError:
        return False
    return any(isinstance(n, ast.Name) and not hasattr(builtins, n.id) for n in ast.walk(tree))


def _equals(left: str, right: str) -> str:
    compare = ast.Compare(
        left=ast.parse(left, mode="eval").body,
        ops=[ast.Eq()],
        comparators=[ast.parse(right, mode="eval").body],
    )
    return ast.unparse(compare)


_Found = tuple[str, str | None, str | None, list[str]]
"""(subject, expected source, raised type, setup lines inside a ``with raises`` block)."""


def _assertion(node: ast.stmt) -> _Found | ParseFailure | None:
    """What an assertion statement checks, or ``None`` for another statement."""
    if isinstance(node, ast.Assert):
        return _assert(node.test)
    if isinstance(node, ast.With | ast.AsyncWith) and len(node.items) == 1:
        ctx = node.items[0].context_expr
        if isinstance(ctx, ast.Call) and _callee_name(ctx.func) in ("raises", "assertRaises"):
            if not ctx.args:
                return ParseFailure("a raises block names no exception type")
            kind = ast.unparse(ctx.args[0])
            # an assertion inside the block never runs once the call raised: left out
            stmts = [s for s in node.body if not isinstance(s, ast.Pass) and _assertion(s) is None]
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
        name = _callee_name(call.func)
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
    if isinstance(node, ast.Call) and _callee_name(node.func) == "approx" and node.args:
        return node.args[0]
    return node


def _is_value(node: ast.expr) -> bool:
    return isinstance(expected_value(ast.unparse(node)), ParsedValue) and not any(
        isinstance(n, ast.Call | ast.Attribute | ast.Await) for n in ast.walk(node)
    )


def _callee_name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)


def _mentions(text: str, entry: str) -> bool:
    return re.search(rf"\b{re.escape(entry)}\b", text) is not None


def _source(code: str, node: ast.AST) -> str:
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


_RAISES = re.compile(r"^\s*raises\s+([A-Za-z_][\w.]*)\s*$")
_MARKED_RAISES = re.compile(r"(?:Output|Final Answer)\s*:\s*`*\s*raises\s+([A-Za-z_][\w.]*)")


def parse_vote(
    text: str, call: str, *, module_source: str | None = None
) -> ParsedValue | ParseFailure | str:
    """An output vote on a program test: the predicted value, or the name of the exception
    type (``Output: ```raises KeyError``` ``) as a ``str``.

    The answer is found as for a literal-argument test (:func:`~utdebug.agents.parsing.
    parse_output`); an answer that is not a literal (``Point(4, 2)``, ``date(2024, 1, 2)``,
    ``Color.RED``) is read structurally with :func:`utdebug.expected_values.expected_value` and the
    classes of ``module_source`` (the code under test), else left to the sandbox to compute."""
    last = None
    for match in _MARKED_RAISES.finditer(text):
        last = match.group(1)
    if last is None:
        for b in reversed(fenced_blocks(text)):
            # ```raises KeyError```, or a ```python block holding that one line
            m = _RAISES.match(_block_line(text[b.body : b.end]) or text[b.body : b.end])
            if m:
                last = m.group(1)
            break
    restated = _restated_answer(text, module_source)
    if restated is not None:
        return restated
    if last is not None:
        if _PLACEHOLDER.match(last.rsplit(".", 1)[-1]):
            return ParseFailure(
                f"the answer `raises {last}` names the prompt's placeholder, not an exception type"
            )
        return last
    return _structural_vote(text, call, module_source)


_VALUE_OF = re.compile(
    r"(?i)\bvalue[ \t]+of[ \t]+`[^`\n]{1,300}`[ \t]+at[ \t]+the[ \t]+end\b[^\n]{0,300}?"
    r"[ \t,]\s*(?:is|would[ \t]+be|will[ \t]+be)[ \t]*:?\s*"
)
"""The vote prompt's own question restated as the answer's sentence: "... the value of
`cart.total()` at the end, for a **correct** implementation of `Cart.total`, is `0.0`."."""


def _restated_answer(text: str, module_source: str | None) -> ParsedValue | str | None:
    """The value (or ``raises X``) stated after the last restatement of the prompt's question
    (:data:`_VALUE_OF`) when no ``Output:`` marker comes after it; ``None`` otherwise."""
    found = list(_VALUE_OF.finditer(text))
    if not found:
        return None
    at = found[-1].end()
    if re.search(r"(?i)\b(?:output|final answer)\s*:", text[at:]):
        return None  # a marked answer after the sentence decides
    blocks = [b for b in fenced_blocks(text) if b.start >= at - 1]
    source: str | None = None
    if text.startswith("```", at) or (blocks and not text[at : blocks[0].start].strip()):
        if blocks and blocks[0].closed:
            source = (
                _block_line(text[blocks[0].body : blocks[0].end])
                or text[blocks[0].body : blocks[0].end].strip()
            )
    elif text.startswith("`", at):
        m = _SPAN.match(text, at)
        source = m.group(1) if m is not None else None
    if source is None:
        return None
    source = source.strip()
    raised = _RAISES.match(source)
    if raised is not None:
        return None if _PLACEHOLDER.match(raised.group(1).rsplit(".", 1)[-1]) else raised.group(1)
    value = expected_value(source, module_source=module_source)
    if isinstance(value, ParsedValue) and not value.pending:
        return value
    return None


_PLACEHOLDER = re.compile(r"ExceptionType\w*\Z")
"""``raises ExceptionType`` (the prompt's ``<ExceptionType>``), ``ExceptionTypeError``."""


def _structural_vote(text: str, call: str, module_source: str | None) -> ParsedValue | ParseFailure:
    from utdebug.agents.parsing import parse_output

    out = parse_output(text, call=call)
    if isinstance(out, ParsedValue) and not out.pending:
        return out  # a literal: read exactly as a literal-argument test's vote
    if isinstance(out, ParsedValue):
        candidates = [out.source]
    else:  # the answer region holds an expression that is not a literal (``Color.RED``)
        blocks = fenced_blocks(text)
        candidates = [_block_line(text[b.body : b.end]) for b in blocks[-1:]]
        candidates += _SPAN.findall(text)[-1:]
    for source in candidates:
        source = source.strip()
        if not source or "\n" in source:
            continue
        try:
            value = expected_values.expected_value(source, module_source=module_source)
        except LiteralError:
            continue
        return ParsedValue(value, source)
    return out


def _block_line(body: str) -> str:
    """A block's one line of code (after a language tag on the fence line), else ``""``."""
    lines = [line for line in body.splitlines() if line.strip()]
    if len(lines) == 2 and re.fullmatch(r"[\w+-]+", lines[0].strip()):
        lines = lines[1:]
    return lines[0] if len(lines) == 1 else ""


_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
