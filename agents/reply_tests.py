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
(:func:`utdebug.agents.reply_asserts.expected_value`).
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass

from utdebug.agents.reply_asserts import (
    assertion,
    callee_name,
    equals,
    expected_value,
    is_docstring,
    mentions,
    names_objects,
    source_text,
)
from utdebug.agents.reply_cases import loop_asserts, unrolled
from utdebug.agents.reply_syntax import (
    MAX_REPLY_CHARS,
    ParsedValue,
    ParseFailure,
    fenced_blocks,
    too_long,
)

__all__ = [
    "MAX_TESTS",
    "ParsedProgram",
    "parse_program_test",
    "parse_program_tests",
    "program_key",
]

_MOCKS = frozenset(
    {"mock", "Mock", "MagicMock", "AsyncMock", "patch", "monkeypatch", "mocker", "create_autospec"}
)
_FIXTURE_DECORATORS = frozenset({"fixture", "parametrize", "usefixtures"})
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
    fixtures = {
        n.name: n
        for n in tree.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and _is_fixture(n)
    }
    prelude, module_setup, plain = _module_level(tree, code, defined, fixtures)
    out: list[ParsedProgram | ParseFailure] = []
    lead = [*prelude, *module_setup]
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test"
        ):
            out += _from_function(node, code, entry, lead, None, module_source, fixtures)
        elif isinstance(node, ast.ClassDef):
            out += _from_class(node, code, entry, lead, module_source, fixtures)
    if out:
        return out
    if plain and assertion(plain[-1]) is not None:
        return _from_body(plain, code, entry, prelude, "", module_source)
    if plain and isinstance(plain[-1], ast.For):
        return _from_body(plain, code, entry, prelude, "", module_source)
    return out


def _module_level(
    tree: ast.Module, code: str, defined: set[str], fixtures: dict[str, _Fn]
) -> tuple[list[str], list[str], list[ast.stmt]]:
    """The reply's module level: (imports and helpers the tests use, setup statements, the
    plain statements that are no definition, import or runner call)."""
    test_names = {
        n.name
        for n in tree.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name.startswith("test")
    }
    prelude: list[str] = []
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
                prelude.append(source_text(code, node))  # a helper the tests use
            continue
        if isinstance(node, ast.If) and "__main__" in ast.dump(node.test):
            continue
        if _calls_a_runner(node, test_names):
            continue  # ``pytest.main()``, ``unittest.main()``, ``test_x()``
        plain.append(node)
        if assertion(node) is None and _uses_mocks(node) is None:
            module_setup.append(source_text(code, node))
    return prelude, module_setup, plain


def _from_class(
    node: ast.ClassDef,
    code: str,
    entry: str,
    lead: list[str],
    module_source: str | None,
    fixtures: dict[str, _Fn],
) -> list[ParsedProgram | ParseFailure]:
    """The tests of a test class's methods, each after the class's setup."""
    methods = _test_methods(node)
    if not methods:
        return []
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
        and not is_docstring(m)
    ]
    out: list[ParsedProgram | ParseFailure] = []
    for m in methods:
        out += _from_function(
            m, code, entry, lead, set_up, module_source, fixtures, helpers, class_set_up
        )
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
        callee_name(d.func if isinstance(d, ast.Call) else d) == "fixture"
        for d in fn.decorator_list
    )


def _calls_a_runner(node: ast.stmt, test_names: set[str]) -> bool:
    value = node.value if isinstance(node, ast.Expr | ast.Assign) else None
    if not isinstance(value, ast.Call):
        return False
    name = callee_name(value.func)
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
        name = callee_name(d.func if isinstance(d, ast.Call) else d)
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
            lead += [source_text(code, s) for s in class_set_up.body if not is_docstring(s)]
        if set_up is not None:
            lead += [source_text(code, s) for s in set_up.body if not is_docstring(s)]
    lead += built
    body = [s for s in fn.body if not is_docstring(s)]
    if not body:
        return [ParseFailure(f"the test {fn.name} is empty")]
    return _from_body(body, code, entry, lead, fn.name, module_source)


def _self_class(helpers: list[ast.stmt], code: str) -> str:
    """The plain object ``self`` is in a test method: the class's helper methods and
    class-level values on it."""
    if not helpers:
        return _SELF_CLASS
    body = "\n\n".join(textwrap.indent(source_text(code, h), "    ") for h in helpers)
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
        body = [s for s in fixture.body if not is_docstring(s)]
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
        out += [source_text(code, s) for s in rest]
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
            if assertion(body[i]) is not None or loop_asserts(body[i])
        ),
        None,
    )
    loop = body[last] if last is not None else None
    if isinstance(loop, ast.For) and last is not None and assertion(loop) is None:
        rows = unrolled(body[:last], loop, code, MAX_TESTS)
        if rows is None:
            return [ParseFailure(f"the test {name} asserts in a loop over cases it does not list")]
        out: list[ParsedProgram | ParseFailure] = []
        for text in rows:
            tree = ast.parse(text)
            out.append(_one(tree.body, text, entry, lead, name, module_source))
        return out
    return [_one(body, code, entry, lead, name, module_source)]


def _one(
    body: list[ast.stmt],
    code: str,
    entry: str,
    lead: list[str],
    name: str,
    module_source: str | None = None,
) -> ParsedProgram | ParseFailure:
    last_at = next((i for i in range(len(body) - 1, -1, -1) if assertion(body[i])), None)
    if last_at is None:
        return ParseFailure(f"the test {name or ''} has no assertion".replace("  ", " "))
    raised_at = _raises_checked_after(body, last_at)
    if raised_at is not None:
        last_at = raised_at  # ``with pytest.raises(E) as e`` then asserts on ``e``
    found = assertion(body[last_at])
    assert found is not None
    if isinstance(found, ParseFailure):
        return found
    subject, expected_src, raises, inner = found
    setup_nodes = [s for s in body[:last_at] if assertion(s) is None]
    setup = [*lead, *(source_text(code, s) for s in setup_nodes), *inner]
    call, then = subject, None
    if raises is None and setup_nodes and not inner:
        prev = setup_nodes[-1]
        if (
            isinstance(prev, ast.Assign)
            and len(prev.targets) == 1
            and isinstance(prev.targets[0], ast.Name)
            and subject.strip() == prev.targets[0].id
        ):
            call = source_text(code, prev.value)
            setup.pop()
        elif (
            isinstance(prev, ast.Expr)
            and not mentions(subject, entry)
            and mentions(source_text(code, prev.value), entry)
        ):
            call, then = source_text(code, prev.value), subject
            setup.pop()
    expected: ParsedValue | None = None
    if raises is None:
        assert expected_src is not None
        value = expected_value(expected_src, module_source=module_source)
        if isinstance(value, ParseFailure):
            return ParseFailure(f"the expected value {expected_src!r}: {value.reason}")
        expected = value
        if value.pending and names_objects(expected_src):
            # ``assert a == b`` with ``b`` built by the setup (an ``__eq__`` test): no value
            # to predict, the comparison itself is the call, expected True
            if then is not None:
                then = equals(then, expected_src)
            else:
                call = equals(call, expected_src)
            expected = ParsedValue(True, "True")
    source = "\n".join(source_text(code, s) for s in body)
    return ParsedProgram("\n".join(setup), call, expected, raises, then, name, source)


def _raises_checked_after(body: list[ast.stmt], last_at: int) -> int | None:
    """The index of a ``with raises(E) as e:`` block that the assertions after it only
    inspect (``assert "empty" in str(e.value)``), else ``None``."""
    for i in range(last_at - 1, -1, -1):
        node = body[i]
        if not isinstance(node, ast.With | ast.AsyncWith) or len(node.items) != 1:
            continue
        item = node.items[0]
        found = assertion(node)
        if found is None or isinstance(found, ParseFailure) or found[2] is None:
            continue
        bound = item.optional_vars
        if not isinstance(bound, ast.Name):
            return None
        after = body[i + 1 : last_at + 1]
        if all(
            assertion(s) is not None
            and any(isinstance(n, ast.Name) and n.id == bound.id for n in ast.walk(s))
            for s in after
            if assertion(s) is not None
        ):
            return i
        return None
    return None
