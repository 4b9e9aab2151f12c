"""Where tests keep the arguments of a function's calls, read with :mod:`ast`: each test's
statements in order (a name bound a line earlier, ``x += [3]``, ``a, b = 1, 2``), ``setUp``
and class attributes (``self.x``), pytest fixtures that return a value, ``parametrize`` tables
(stacked, ``pytest.param`` rows, on a class), ``for`` loops over a literal table (``subTest``
loops), doctest examples that bind a name first, ``assertRaises(E, f, *args)``, and keyword
arguments mapped to positions with the function's signature (:class:`Target`).

Values come from :class:`~utdebug.synth.seed_values.SeedEvaluator`; nothing runs.
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from utdebug.literals import LiteralError
from utdebug.sandbox.values import SourceFunction
from utdebug.synth.seed_values import Scope, SeedEvaluator, Unknown, bind, items_of, unbind

__all__ = ["NO_DEFAULT", "Target", "TestReader", "call_name"]

NO_DEFAULT: Any = Unknown("no default")
MAX_ROWS = 256
"""Most rows of one table (a parametrize product, a loop) read as seeds."""
MAX_WORK = 20_000
"""Most rows (of tables and loops) and calls one file is read for: tables inside tables
multiply, and reading stops there (noted)."""
_SETUPS = frozenset({"setUp", "setup_method", "setUpClass", "setup_class", "setUpTestData"})
_RAISES = {"assertRaises": 1, "raises": 1, "assertWarns": 1, "assertRaisesRegex": 2}
"""``assertRaises(E, f, *args)``-style calls: where the function is among their arguments."""


class SeedSink(Protocol):
    skipped: list[str]

    def add(self, args: tuple[Any, ...], origin: str) -> None: ...


def call_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


@dataclass(frozen=True)
class Target:
    """What a seed reader knows of the function it reads calls of: its name, positional
    parameters and their literal defaults (:data:`NO_DEFAULT` where there is none or it is
    not a literal), keyword-only parameters, and its module (import name and source)."""

    name: str
    params: tuple[str, ...] = ()
    defaults: tuple[Any, ...] = ()
    """One per parameter of ``params``."""
    kwonly: tuple[str, ...] = ()
    module: str = ""
    module_source: str | None = None
    defined: bool = False
    """Whether ``module_source`` defines the function (its signature is known)."""

    @classmethod
    def of(cls, module_source: str, name: str, module: str = "") -> Target:
        """The function ``name`` defined at the top level of ``module_source`` (just its name
        when it is not there)."""
        try:
            tree = ast.parse(module_source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return cls(name, module=module)
        fn = None
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
                fn = node
        if fn is None:
            return cls(name, module=module, module_source=module_source)
        a = fn.args
        params = [x.arg for x in [*a.posonlyargs, *a.args]]
        defaults: list[Any] = [NO_DEFAULT] * (len(params) - len(a.defaults))
        scope = Scope(module_source)
        for default in a.defaults:
            try:
                scope.admit(default)
                defaults.append(SeedEvaluator(scope, {}).value(default, 0))
            except (LiteralError, RecursionError):
                defaults.append(NO_DEFAULT)
        kwonly = tuple(x.arg for x in a.kwonlyargs)
        return cls(name, tuple(params), tuple(defaults), kwonly, module, module_source, True)

    def place(self, args: list[Any], keywords: dict[str, Any]) -> tuple[Any, ...]:
        """Positional arguments and keywords as one tuple of positional arguments (a keyword
        between two given positions takes the parameter's literal default)."""
        if not keywords:
            return tuple(args)
        if not self.params:
            raise LiteralError("keyword arguments (only positional arguments are seeds)")
        for key in keywords:
            if key not in self.params:
                what = "keyword-only argument" if key in self.kwonly else "keyword argument"
                raise LiteralError(f"{what} `{key}` (only positional arguments are seeds)")
            if self.params.index(key) < len(args):
                raise LiteralError(f"`{key}` given twice")
        last = max(self.params.index(k) for k in keywords)
        out = list(args)
        for i in range(len(args), last + 1):
            p = self.params[i]
            if p in keywords:
                out.append(keywords[p])
            elif self.defaults[i] is not NO_DEFAULT:
                out.append(self.defaults[i])
            else:
                raise LiteralError(f"no value for `{p}`")
        return tuple(out)

    def shared_with(self, other: Target) -> Target:
        """This target with only the leading parameters ``other`` (another version of the
        function) has too, by name and place (itself when ``other`` does not define it)."""
        if not other.defined:
            return self
        n = 0
        while n < min(len(self.params), len(other.params)) and (self.params[n] == other.params[n]):
            n += 1
        kwonly = tuple(k for k in self.kwonly if k in other.kwonly)
        return dataclasses.replace(
            self, params=self.params[:n], defaults=self.defaults[:n], kwonly=kwonly
        )

    def complete(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """``args`` with the literal defaults of the parameters it leaves out, up to the first
        one without, so that a synthesiser varies them too."""
        out = list(args)
        for i in range(len(args), len(self.params)):
            if self.defaults[i] is NO_DEFAULT:
                break
            out.append(self.defaults[i])
        return tuple(out)


class TestReader:
    """One test file's (or docstring's) calls of ``target.name``, with the values its tests
    bind, as seeds added to ``out`` (or skipped with the reason)."""

    def __init__(self, scope: Scope, target: Target, origin: str, out: SeedSink) -> None:
        self.scope, self.target, self.origin, self.out = scope, target, origin, out
        self.where: str | None = None
        """Where every seed comes from (a docstring line), instead of the call's line."""
        self.fixtures: dict[str, list[tuple[str, Any]]] = {}
        self._fixture_nodes: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        self.work = 0

    def _tick(self) -> None:
        self.work += 1
        if self.work > MAX_WORK:
            raise _Enough

    # -- structure ---------------------------------------------------------------------------

    def module(self, tree: ast.Module) -> None:
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and _is_fixture(stmt):
                self._fixture_nodes[stmt.name] = stmt
        self.statements(tree.body, {}, top=True)

    def statements(self, body: Sequence[ast.stmt], env: dict[str, Any], top: bool = False) -> None:
        """:meth:`block`, stopped (and noted) once :data:`MAX_WORK` rows and calls are read."""
        try:
            self.block(body, env, "", top=top)
        except _Enough:
            self.out.skipped.append(
                f"{self.origin}: read for {MAX_WORK:,} rows and calls; the rest is not read"
            )

    def block(
        self, body: Sequence[ast.stmt], env: dict[str, Any], label: str, top: bool = False
    ) -> None:
        """Read statements in order: bindings update ``env``, calls become seeds."""
        for stmt in body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                self.function(stmt, {} if top else dict(env), [])
                if not top:  # a helper defined in the test: sent by its source
                    env[stmt.name] = SourceFunction(self.scope.function_source(stmt), stmt.name)
            elif isinstance(stmt, ast.ClassDef):
                self.test_class(stmt)
            elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
                self.scan(stmt, env, label)
                if not top:
                    self._assign(stmt, env)
            elif isinstance(stmt, ast.For | ast.AsyncFor):
                self._loop(stmt, env, label)
            elif isinstance(stmt, ast.While | ast.If):
                self.scan(stmt.test, env, label)
                for part in (stmt.body, stmt.orelse):
                    self.block(part, dict(env), label)
                unbind(env, _assigned([*stmt.body, *stmt.orelse]), "bound in a branch")
            elif isinstance(stmt, ast.With | ast.AsyncWith):
                for item in stmt.items:
                    self.scan(item.context_expr, env, label)
                    if item.optional_vars is not None:
                        bind(env, item.optional_vars, Unknown("a `with` target"))
                self.block(stmt.body, env, label)
            elif isinstance(stmt, ast.Try | ast.TryStar):
                self.block(stmt.body, env, label)
                for handler in stmt.handlers:
                    self.block(handler.body, dict(env), label)
                unbind(env, _assigned([h for x in stmt.handlers for h in x.body]), "in a handler")
                self.block(stmt.orelse, env, label)
                self.block(stmt.finalbody, env, label)
            elif isinstance(stmt, ast.Import | ast.ImportFrom):
                if not top:
                    self.scope.add_import(stmt)
            elif isinstance(stmt, ast.Match):
                self.scan(stmt.subject, env, label)
                for case in stmt.cases:
                    self.block(case.body, dict(env), label)
                unbind(env, _assigned([b for c in stmt.cases for b in c.body]), "in a case")
            else:
                self.scan(stmt, env, label)

    def function(
        self,
        fn: ast.FunctionDef | ast.AsyncFunctionDef,
        env: dict[str, Any],
        class_rows: list[tuple[str, dict[str, Any]]],
    ) -> None:
        """A test (or any function): once per row of its parametrize tables, its parameters
        bound to those rows, to the fixtures they name, else unknown."""
        if fn.name in self._fixture_nodes and not class_rows:
            return
        a = fn.args
        params = [x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]]
        params += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
        tables = self._tables(fn.decorator_list, env)
        rows = _product([class_rows, *tables] if class_rows else tables)
        fixtures = [
            [(lbl, {p: v}) for lbl, v in self.fixture(p)]
            for p in params
            if p not in rows[0][1] and p in self._fixture_nodes
        ]
        for label, row in _product([rows, *fixtures]):
            self._tick()
            inner = dict(env)
            unbind(inner, params, "a parameter of the test")
            inner.update(row)
            self.block(fn.body, inner, label)

    def test_class(self, cls: ast.ClassDef) -> None:
        """A test class: its attributes and what ``setUp`` binds are ``self.x`` for every
        method; its parametrize tables apply to every method."""
        env: dict[str, Any] = {}
        for stmt in cls.body:
            if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                value = self._value(stmt.value, env)
                for t in targets:
                    if isinstance(t, ast.Name):
                        env[f"self.{t.id}"] = env[f"cls.{t.id}"] = value
        for stmt in cls.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name in _SETUPS:
                self.block(stmt.body, env, "")
        rows = _product(self._tables(cls.decorator_list, {}))
        class_rows = rows if rows != [("", {})] else []
        for stmt in cls.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                if stmt.name not in _SETUPS:
                    self.function(stmt, dict(env), class_rows)
            elif isinstance(stmt, ast.ClassDef):
                self.test_class(stmt)

    # -- bindings ----------------------------------------------------------------------------

    def _value(self, node: ast.expr, env: dict[str, Any]) -> Any:
        try:
            self.scope.admit(node)
            return SeedEvaluator(self.scope, env).value(node, 0)
        except (LiteralError, RecursionError) as exc:
            return Unknown(str(exc))

    def _assign(
        self, stmt: ast.Assign | ast.AnnAssign | ast.AugAssign, env: dict[str, Any]
    ) -> None:
        if isinstance(stmt, ast.Assign):
            value = self._value(stmt.value, env)
            for target in stmt.targets:
                bind(env, target, value)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                bind(env, stmt.target, self._value(stmt.value, env))
        elif isinstance(stmt.target, ast.Name | ast.Attribute):
            load = (
                ast.Name(stmt.target.id, ast.Load())
                if isinstance(stmt.target, ast.Name)
                else stmt.target
            )
            expr = ast.copy_location(ast.BinOp(load, stmt.op, stmt.value), stmt)
            ast.fix_missing_locations(expr)
            bind(env, stmt.target, self._value(expr, env))

    def _loop(self, stmt: ast.For | ast.AsyncFor, env: dict[str, Any], label: str) -> None:
        """A loop over a table the test shows: its body once per row, the target bound."""
        self.scan(stmt.iter, env, label)
        value = self._value(stmt.iter, env)
        rows: list[Any] | None = None
        if not isinstance(value, Unknown):
            try:
                rows = items_of(value, stmt.iter)[:MAX_ROWS]
            except LiteralError:
                rows = None
        if rows is None:
            inner = dict(env)
            bind(inner, stmt.target, Unknown("the loop's table is not a value the test shows"))
            self.block(stmt.body, inner, label)
        else:
            for k, row in enumerate(rows):
                self._tick()
                inner = dict(env)
                bind(inner, stmt.target, row)
                self.block(stmt.body, inner, _join(label, f"loop row {k + 1}"))
        unbind(env, _assigned([stmt, *stmt.body]), "bound in a loop")
        self.block(stmt.orelse, env, label)

    def fixture(self, name: str) -> list[tuple[str, Any]]:
        """A fixture's values: what it returns (or yields), once per ``params`` entry when it
        returns ``request.param``; one unknown value when it is not a value the file shows."""
        if name not in self.fixtures:
            self.fixtures[name] = [("", Unknown(f"the fixture `{name}`"))]  # while being read
            self.fixtures[name] = self._fixture(self._fixture_nodes[name])
        return self.fixtures[name]

    def _fixture(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[str, Any]]:
        env: dict[str, Any] = {}
        unbind(env, [x.arg for x in fn.args.args], "a fixture's parameter")
        for stmt in fn.body:
            if isinstance(stmt, ast.Return):
                result = stmt.value
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Yield):
                result = stmt.value.value
            else:
                if isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
                    self._assign(stmt, env)
                continue
            if result is None:
                break
            if (
                isinstance(result, ast.Attribute)
                and result.attr == "param"
                and isinstance(result.value, ast.Name)
                and result.value.id == "request"
            ):
                return self._fixture_params(fn)
            return [("", self._value(result, env))]
        return [("", Unknown(f"the fixture `{fn.name}` returns no value the file shows"))]

    def _fixture_params(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[str, Any]]:
        for dec in fn.decorator_list:
            for kw in dec.keywords if isinstance(dec, ast.Call) else []:
                if kw.arg == "params":
                    value = self._value(kw.value, {})
                    if isinstance(value, list | tuple):
                        return [
                            (f"fixture {fn.name} param {k + 1}", v)
                            for k, v in enumerate(value[:MAX_ROWS])
                        ]
        return [("", Unknown(f"the fixture `{fn.name}`'s params"))]

    def _tables(
        self, decorators: list[ast.expr], env: dict[str, Any]
    ) -> list[list[tuple[str, dict[str, Any]]]]:
        """The rows of each ``parametrize`` decorator (name -> value, or Unknown per value)."""
        tables = []
        for dec in decorators:
            if isinstance(dec, ast.Call) and call_name(dec.func) == "parametrize":
                rows = self._parametrize(dec, env)
                if rows is not None:
                    tables.append(rows)
        return tables

    def _parametrize(
        self, dec: ast.Call, env: dict[str, Any]
    ) -> list[tuple[str, dict[str, Any]]] | None:
        kw = {k.arg: k.value for k in dec.keywords if k.arg}
        names_node = dec.args[0] if dec.args else kw.get("argnames")
        values_node = dec.args[1] if len(dec.args) > 1 else kw.get("argvalues")
        if names_node is None or values_node is None:
            return None
        if "indirect" in kw and not (
            isinstance(kw["indirect"], ast.Constant) and not kw["indirect"].value
        ):
            return None  # the values go to fixtures
        names_value = self._value(names_node, env)
        if isinstance(names_value, str):
            names = [n.strip() for n in names_value.split(",") if n.strip()]
        elif isinstance(names_value, list | tuple) and all(isinstance(n, str) for n in names_value):
            names = list(names_value)
        else:
            return None
        rows: list[tuple[str, dict[str, Any]]] = []
        if isinstance(values_node, ast.List | ast.Tuple):
            entries: Iterable[Any] = values_node.elts
        else:
            value = self._value(values_node, env)
            if isinstance(value, Unknown):
                return [("parametrize table", dict.fromkeys(names, value))]
            try:
                entries = items_of(value, values_node)
            except LiteralError as exc:
                return [("parametrize table", dict.fromkeys(names, Unknown(str(exc))))]
        for k, entry in enumerate(itertools.islice(entries, MAX_ROWS)):
            values = self._row(entry, len(names), env)
            rows.append((f"parametrize row {k + 1}", dict(zip(names, values, strict=True))))
        return rows

    def _row(self, entry: Any, n: int, env: dict[str, Any]) -> list[Any]:
        """One parametrize entry (a node of the table, or a value) as ``n`` values."""
        if isinstance(entry, ast.Call) and call_name(entry.func) == "param":
            entry = ast.Tuple(list(entry.args), ast.Load()) if n > 1 else (entry.args or [entry])[0]
        if isinstance(entry, ast.AST):
            if n > 1 and isinstance(entry, ast.Tuple | ast.List) and len(entry.elts) == n:
                return [self._value(e, env) for e in entry.elts]
            entry = self._value(entry, env)  # type: ignore[arg-type]
        if n == 1:
            return [entry]
        if isinstance(entry, list | tuple) and len(entry) == n:
            return list(entry)
        reason = entry.reason if isinstance(entry, Unknown) else "a row of another length"
        return [Unknown(reason)] * n

    # -- calls -------------------------------------------------------------------------------

    def scan(self, node: ast.AST, env: dict[str, Any], label: str) -> None:
        """Every call of the function inside ``node`` (and ``assertRaises(E, f, *args)``)."""
        name = self.target.name
        for sub in ast.walk(node):
            if not isinstance(sub, ast.Call):
                continue
            fname = call_name(sub.func)
            if fname == name:
                self.seed(sub, sub.args, sub.keywords, env, label)
            elif fname in _RAISES and len(sub.args) > _RAISES[fname]:
                fn = sub.args[_RAISES[fname]]
                if call_name(fn) == name and isinstance(fn, ast.Name | ast.Attribute):
                    keywords = [k for k in sub.keywords if k.arg not in ("match", "msg")]
                    self.seed(sub, sub.args[_RAISES[fname] + 1 :], keywords, env, label)

    def seed(
        self,
        call: ast.Call,
        args: Sequence[ast.expr],
        keywords: Sequence[ast.keyword],
        env: dict[str, Any],
        label: str,
    ) -> None:
        self._tick()
        where = self.where or f"{self.origin}:{call.lineno}"
        where += f" ({label})" if label else ""
        try:
            self.out.add(self.arguments(args, keywords, env), where)
        except (LiteralError, RecursionError) as exc:
            self.out.skipped.append(f"{where}: {exc}")

    def arguments(
        self, args: Sequence[ast.expr], keywords: Sequence[ast.keyword], env: dict[str, Any]
    ) -> tuple[Any, ...]:
        ev = SeedEvaluator(self.scope, env)
        values: list[Any] = []
        for arg in args:
            node = arg.value if isinstance(arg, ast.Starred) else arg
            self.scope.admit(node)
            value = ev.value(node, 0)
            if isinstance(arg, ast.Starred):
                values.extend(items_of(value, arg))
            else:
                values.append(value)
        named: dict[str, Any] = {}
        for kw in keywords:
            self.scope.admit(kw.value)
            value = ev.value(kw.value, 0)
            if kw.arg is not None:
                named[kw.arg] = value
            elif isinstance(value, dict) and all(isinstance(k, str) for k in value):
                named.update(value)
            else:
                raise LiteralError("a ** argument that is not a dict of names", kw.value)
        return self.target.place(values, named)


class _Enough(Exception):
    """Raised when a file has been read for :data:`MAX_WORK` rows and calls."""


def _is_fixture(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for dec in fn.decorator_list:
        node = dec.func if isinstance(dec, ast.Call) else dec
        if call_name(node) == "fixture":
            return True
    return False


def _assigned(body: Iterable[ast.AST]) -> set[str]:
    """Names (and ``self.x``) bound anywhere in ``body``."""
    out: set[str] = set()
    for stmt in body:
        for node in ast.walk(stmt):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(
                node, ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor | ast.NamedExpr
            ):
                targets = [node.target]
            for t in targets:
                for sub in ast.walk(t):
                    if isinstance(sub, ast.Name):
                        out.add(sub.id)
                    elif isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name):
                        out.add(f"{sub.value.id}.{sub.attr}")
    return out


def _join(label: str, more: str) -> str:
    return f"{label}, {more}" if label else more


def _product(tables: list[list[tuple[str, dict[str, Any]]]]) -> list[tuple[str, dict[str, Any]]]:
    """Every combination of one row per table (at most :data:`MAX_ROWS`), labels joined."""
    rows: list[tuple[str, dict[str, Any]]] = [("", {})]
    for table in tables:
        if not table:
            continue
        rows = [
            (_join(a, b), {**ra, **rb})
            for (a, ra), (b, rb) in itertools.islice(itertools.product(rows, table), MAX_ROWS)
        ]
    return rows
