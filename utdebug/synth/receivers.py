"""The objects a method is called on, as data: how the repository's tests build them
(``setUp`` bodies, fixtures that return one), the constructor's and the public methods'
signatures, and short call sequences drawn from them (Randoop- and Pynguin-style).

Everything here reads source with :mod:`ast` and draws values in this process; nothing runs
the code under test. A sequence is plain data (``(recipe, constructor arguments, steps, call
arguments)``): :mod:`utdebug.synth.members` turns it into a test with setup that the sandbox
runs on the base version, which keeps only the sequences it accepts. See docs/check.md
("Methods, properties, async functions and generators").
"""

from __future__ import annotations

import ast
import contextlib
import copy
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from utdebug.expected_values import expected_value
from utdebug.literals import LiteralError
from utdebug.synth.seeds import seeds_from_tests
from utdebug.synth.strategies import HintError, draw, hint_strategy, resolve_hint
from utdebug.synth.values import Unencodable, check_encodable, input_key

__all__ = [
    "MAX_STEPS",
    "Param",
    "Recipe",
    "Signature",
    "constructor_signature",
    "decorator_names",
    "public_methods",
    "recipes_from_tests",
    "seed_signatures",
    "sequences",
    "signature_of",
    "unique",
    "unself",
    "untyped_values",
]

MAX_STEPS = 3
"""Calls of the class's public methods before the call under test, at most."""
MAX_RECIPES = 6
"""Receivers taken from the repository's tests, at most."""
NO_RECIPE = -1
"""A sequence's recipe index when the receiver comes from a synthesised constructor call."""
_HINT_DRAWS = 12
_REUSE = 0.6
"""How often a parameter takes a value a same-named parameter had earlier in the sequence
(``add_item(name, ...)`` then ``remove_item(name, ...)``): the calls then meet on one item."""
_NO_DEFAULT: Any = object()


def untyped_values(param: str) -> tuple[Any, ...]:
    """The values tried for a parameter with no usable hint and no seed (``param`` names it).

    This is the one place where kinds inferred without hints (from defaults, docstrings and
    how the body uses the parameter) come in; until then: small numbers, short strings and a
    few other plain values, of which the base keeps what it accepts."""
    del param  # the name is what such an inference reads first
    return (0, 1, 2, 3, -1, 10, "a", "b", "", 2.5, True, None, [1, 2], [])


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    hint: Any = None
    """The resolved type hint, or ``None``."""
    default: Any = _NO_DEFAULT

    @property
    def required(self) -> bool:
        return self.default is _NO_DEFAULT


@dataclass
class Signature:
    """The positional parameters of a callable (``self``/``cls`` left out), with the values
    its parameters draw from and the literal calls of it the tests hold (whole argument
    tuples)."""

    name: str
    params: list[Param]
    seeds: list[tuple[Any, ...]] = field(default_factory=list)
    keyword_only: list[str] = field(default_factory=list)
    """Required keyword-only parameters (a call with positional arguments cannot fill them)."""
    pools: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def required(self) -> int:
        return sum(p.required for p in self.params)

    def fits(self, args: Sequence[Any]) -> bool:
        return self.required <= len(args) <= len(self.params)

    def fill_pools(self, seed: int) -> None:
        """Each parameter's values: its seeds' values and the numbers next to them, its
        default, and draws from its hint or, without one, :func:`untyped_values`."""
        for k, p in enumerate(self.params):
            pool: list[Any] = [s[k] for s in self.seeds if k < len(s)]
            pool += [n for v in pool for n in _neighbours(v)]
            if not p.required:
                pool.append(p.default)
            if p.hint is not None:
                with contextlib.suppress(HintError):
                    pool += draw(hint_strategy(p.hint), _HINT_DRAWS, seed + k)
            else:
                pool += untyped_values(p.name)
            self.pools[p.name] = [v for v in pool if _encodable(v)] or [None]

    def draw_args(self, rng: random.Random, used: dict[str, list[Any]]) -> tuple[Any, ...]:
        """Arguments for one call: a seed now and then, else a value for each required
        parameter (and for some optional ones), reusing earlier values of same-named
        parameters."""
        seeds = [s for s in self.seeds if self.fits(s)]
        if seeds and rng.random() < 0.3:
            args = rng.choice(seeds)
        else:
            n = self.required
            while n < len(self.params) and rng.random() < 0.3:
                n += 1
            args = tuple(self._value(p, rng, used) for p in self.params[:n])
        for p, v in zip(self.params, args, strict=False):
            used.setdefault(p.name, []).append(v)
        return args

    def _value(self, p: Param, rng: random.Random, used: dict[str, list[Any]]) -> Any:
        earlier = used.get(p.name)
        if earlier and rng.random() < _REUSE:
            return rng.choice(earlier)
        return rng.choice(self.pools.get(p.name) or [None])


def _neighbours(value: Any) -> tuple[Any, ...]:
    """Numbers near a seed's number (a boundary is often one away, or twice as far)."""
    if type(value) is int:
        return (value - 1, value + 1, 2 * value)
    if type(value) is float:
        return (value - 1.0, value + 1.0, 2 * value)
    return ()


def _encodable(value: Any) -> bool:
    try:
        check_encodable((value,))
    except Unencodable:
        return False
    return True


def _literal(node: ast.expr | None) -> Any:
    if node is None:
        return _NO_DEFAULT
    try:
        return expected_value(ast.unparse(node))
    except (LiteralError, RecursionError, ValueError, SyntaxError):
        return _NO_DEFAULT


def _hint(node: ast.expr | None) -> Any:
    if node is None:
        return None
    try:
        return resolve_hint(node)
    except (HintError, RecursionError):
        return None


def decorator_names(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> set[str]:
    """The last names of a definition's decorators (``functools.cache(...)``: ``cache``;
    ``@total.setter``: ``setter``)."""
    return {ast.unparse(d).partition("(")[0].rpartition(".")[2] for d in node.decorator_list}


def signature_of(node: ast.FunctionDef | ast.AsyncFunctionDef, *, bound: bool) -> Signature:
    """``node``'s positional parameters (the first one left out when ``bound``: ``self`` or
    ``cls``); a parameter whose default is not a literal counts as optional, left to its
    default."""
    a = node.args
    positional = [*a.posonlyargs, *a.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults))
    defaults += list(a.defaults)
    params = []
    for arg, d in zip(positional, defaults, strict=True):
        default = _literal(d)
        if d is not None and default is _NO_DEFAULT:
            default = None  # a default the parent cannot read: the parameter stays optional
        params.append(Param(arg.arg, _hint(arg.annotation), default))
    if bound:
        params = params[1:]
    keyword_only = [k.arg for k, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is None]
    return Signature(node.name, params, keyword_only=keyword_only)


def constructor_signature(cls: ast.ClassDef) -> Signature | None:
    """The arguments ``cls(...)`` takes: its ``__init__``'s, a dataclass's fields, ``()`` for
    a class with neither and no base class; ``None`` when unknown (an ``__init__`` inherited
    from a base class)."""
    init = None
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            init = node
    if init is not None:
        sig = signature_of(init, bound=True)
        sig.name = cls.name
        return sig
    if "dataclass" in decorator_names(cls):
        params = []
        for node in cls.body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                if "ClassVar" in ast.unparse(node.annotation):
                    continue
                default = _NO_DEFAULT if node.value is None else _literal(node.value)
                if node.value is not None and default is _NO_DEFAULT:
                    default = None
                params.append(Param(node.target.id, _hint(node.annotation), default))
        return Signature(cls.name, params)
    if not cls.bases:
        return Signature(cls.name, [])
    return None


def public_methods(cls: ast.ClassDef) -> list[Signature]:
    """The class's own public instance methods that a call sequence can use: synchronous,
    not generators, no property, static or class method, no required keyword-only
    parameter."""
    out: list[Signature] = []
    for node in cls.body:
        if not isinstance(node, ast.FunctionDef) or node.name.startswith("_"):
            continue
        if decorator_names(node) & {"property", "cached_property", "staticmethod", "classmethod"}:
            continue
        if any(isinstance(n, ast.Yield | ast.YieldFrom) for n in ast.walk(node)):
            continue
        if not (node.args.posonlyargs or node.args.args):
            continue
        sig = signature_of(node, bound=True)
        if not sig.keyword_only:
            out = [s for s in out if s.name != sig.name] + [sig]  # the last definition wins
    return out


# --- receivers as the tests build them ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Recipe:
    """Statements of a test that build the receiver, which they leave in ``RECEIVER``."""

    origin: str
    """``tests/test_inv.py:8 (setUp)``."""
    imports: tuple[str, ...]
    """The test module's imports (``unittest``, ``pytest`` and ``mock`` aside)."""
    body: str


RECEIVER = "_utd_o"
"""The name the receiver is bound to in a test with setup."""
_TEST_IMPORTS_LEFT_OUT = ("unittest", "pytest", "mock")


def recipes_from_tests(paths: Iterable[Path], class_name: str, root: Path) -> list[Recipe]:
    """How the tests build an instance of ``class_name``: ``setUp``/``setup_method`` bodies
    that assign one to ``self.x`` and fixtures without parameters that return or yield one
    first, then the opening statements of test functions that build one (at most
    :data:`MAX_RECIPES`, each body once)."""
    first: list[Recipe] = []
    then: list[Recipe] = []
    for path in paths:
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if class_name not in source:
            continue
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError):
            continue
        name = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
        imports = tuple(
            ast.unparse(n)
            for n in tree.body
            if isinstance(n, ast.Import | ast.ImportFrom) and not _test_library(n)
        )
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef):
                continue
            found, into = None, first
            if node.name in ("setUp", "setup_method"):
                found = _from_setup(node.body, class_name)
            elif _is_fixture(node):
                found = _from_fixture(node, class_name)
            elif node.name.startswith("test"):
                found, into = _from_test(node.body, class_name), then
            if found is not None and all(r.body != found for r in first + then):
                into.append(Recipe(f"{name}:{node.lineno} ({node.name})", imports, found))
    return (first + then)[:MAX_RECIPES]


def _test_library(node: ast.Import | ast.ImportFrom) -> bool:
    names = (
        [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
    )
    return any(n.split(".")[0] in _TEST_IMPORTS_LEFT_OUT or n == "unittest.mock" for n in names)


def _builds(node: ast.AST, class_name: str) -> bool:
    return any(
        isinstance(n, ast.Call)
        and (
            (isinstance(n.func, ast.Name) and n.func.id == class_name)
            or (isinstance(n.func, ast.Attribute) and n.func.attr == class_name)
        )
        for n in ast.walk(node)
    )


def _uses(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


class _Unself(ast.NodeTransformer):
    """``self.x`` as a plain name ``x`` for the attributes in ``assigned``."""

    def __init__(self, assigned: set[str]) -> None:
        self.assigned = assigned

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if (
            isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and node.attr in self.assigned
        ):
            return ast.copy_location(ast.Name(node.attr, type(node.ctx)()), node)
        self.generic_visit(node)
        return node


def unself(stmts: Sequence[ast.stmt]) -> list[ast.stmt]:
    """Copies of a test method's statements with ``self.x`` as a plain name ``x`` for the
    attributes they assign (``setUp``'s ``self.cart = Cart()``); every other use of ``self``
    stays (``self.assert...``, a helper method of the test case)."""
    assigned = {
        t.attr
        for stmt in stmts
        for n in ast.walk(stmt)
        if isinstance(n, ast.Assign | ast.AnnAssign | ast.AugAssign)
        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
    }
    return [_Unself(assigned).visit(copy.deepcopy(s)) for s in stmts]


def _from_setup(body: list[ast.stmt], class_name: str) -> str | None:
    """A ``setUp`` body that assigns an instance to ``self.x``: its statements with
    ``self.y`` as plain names (statements that still need the test case left out), then
    ``_utd_o = x``."""
    receiver = None
    for stmt in body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Attribute)
            and isinstance(stmt.targets[0].value, ast.Name)
            and stmt.targets[0].value.id == "self"
            and _builds(stmt.value, class_name)
        ):
            receiver = stmt.targets[0].attr
            break
    if receiver is None:
        return None
    kept = [
        ast.unparse(stmt)
        for stmt in unself(body)
        if not (_uses(stmt, "self") or _uses(stmt, "super") or _await_in(stmt))
    ]
    return "\n".join([*kept, f"{RECEIVER} = {receiver}"])


def _from_test(body: list[ast.stmt], class_name: str) -> str | None:
    """A test's opening statements up to the instance it builds (``cart = Cart(limit)``,
    with the assignments before it) and the calls of the instance's methods that follow it
    directly (``cart.add("pen", 2)``), then ``_utd_o = cart``; ``None`` when something else
    (an assertion, a block, the test case) comes before the instance."""
    kept: list[str] = []
    receiver = None
    for stmt in body:
        if _uses(stmt, "self") or _await_in(stmt):
            break
        if receiver is None:
            if not isinstance(stmt, ast.Assign | ast.AnnAssign | ast.Import | ast.ImportFrom):
                return None
            if (
                isinstance(stmt, ast.Assign)
                and isinstance(stmt.targets[0], ast.Name)
                and _builds(stmt.value, class_name)
            ):
                receiver = stmt.targets[0].id
        elif not (
            isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Attribute)
            and isinstance(stmt.value.func.value, ast.Name)
            and stmt.value.func.value.id == receiver
        ):
            break
        kept.append(ast.unparse(stmt))
    if receiver is None:
        return None
    return "\n".join([*kept, f"{RECEIVER} = {receiver}"])


def _is_fixture(node: ast.FunctionDef) -> bool:
    args = node.args
    no_params = not (args.posonlyargs or args.args or args.kwonlyargs or args.vararg)
    return no_params and "fixture" in decorator_names(node)


def _from_fixture(node: ast.FunctionDef, class_name: str) -> str | None:
    """A fixture's statements up to what it returns or yields, which becomes ``_utd_o``."""
    kept: list[str] = []
    for stmt in node.body:
        value = None
        if isinstance(stmt, ast.Return):
            value = stmt.value
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Yield):
            value = stmt.value.value
        if value is None:
            if isinstance(stmt, ast.Return | ast.Expr) and _yields(stmt):
                return None
            if _await_in(stmt):
                return None
            kept.append(ast.unparse(stmt))
            continue
        if not (_builds(node, class_name)):
            return None
        return "\n".join([*kept, f"{RECEIVER} = {ast.unparse(value)}"])
    return None


def _yields(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Yield | ast.YieldFrom) for n in ast.walk(node))


def _await_in(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Await | ast.AsyncFor | ast.AsyncWith) for n in ast.walk(node))


# --- call sequences ----------------------------------------------------------------------------


def seed_signatures(sigs: Sequence[Signature], tests: Sequence[Path], root: Path, seed: int) -> int:
    """Add to each signature's seeds the literal calls of it in ``tests`` (a call of a
    method as ``x.name(...)``, of a class as ``Name(...)``) and fill its pools; the number
    of seeds they then hold."""
    found = 0
    for i, sig in enumerate(sigs):
        if not sig.name.startswith("="):
            more = seeds_from_tests(tests, sig.name, root).inputs
            sig.seeds = unique([*sig.seeds, *(s for s in more if sig.fits(s))])
        found += len(sig.seeds)
        sig.fill_pools(seed + 1000 * i)
    return found


def unique(inputs: Iterable[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """``inputs`` without repeats (by :func:`~utdebug.synth.values.input_key`), in order."""
    seen: dict[str, tuple[Any, ...]] = {}
    for args in inputs:
        seen.setdefault(input_key(args), args)
    return list(seen.values())


def sequences(
    recipes: int,
    constructor: Signature | None,
    steps: Sequence[Signature],
    call: Signature | None,
    *,
    count: int,
    seed: int,
    grow: Sequence[tuple[Any, ...]] = (),
) -> list[tuple[Any, ...]]:
    """Up to ``count`` distinct inputs ``(recipe, constructor arguments, steps, call
    arguments)``: the receiver from one of ``recipes`` test recipes (by index) or, with
    :data:`NO_RECIPE`, from ``constructor``; 0 to :data:`MAX_STEPS` calls of ``steps``
    (``(name, arguments)``); then the arguments of ``call`` (``()`` for a property). With
    ``grow`` (sequences the base accepted: Randoop's feedback), each input extends one of
    them instead: its receiver and calls, most often one call more, and new arguments for
    the last call; none of ``grow`` is drawn again. The same arguments give the same inputs
    in every process."""
    rng = random.Random(seed)
    named = {s.name: s for s in steps}
    out: list[tuple[Any, ...]] = []
    keys = {input_key(g) for g in grow}
    for _ in range(30 * count + 100):
        if len(out) >= count:
            break
        used: dict[str, list[Any]] = {}
        if grow:
            r, ctor, made, _ = rng.choice(grow)
            for sig, xs in [(constructor, ctor), *((named.get(n), xs) for n, xs in made)]:
                for param, x in zip(sig.params if sig else (), xs, strict=False):
                    used.setdefault(param.name, []).append(x)
            more = 1 if steps and len(made) < MAX_STEPS and rng.random() < 0.7 else 0
        else:
            r = NO_RECIPE
            if recipes and (constructor is None or rng.random() < 0.5):
                r = rng.randrange(recipes)
            ctor = ()
            if r == NO_RECIPE and constructor is not None:
                ctor = constructor.draw_args(rng, used)
            made = ()
            more = rng.randint(0, MAX_STEPS) if steps else 0
        chosen = [rng.choice(steps) for _ in range(more)]
        made = (*made, *((s.name, s.draw_args(rng, used)) for s in chosen))
        args = call.draw_args(rng, used) if call is not None else ()
        item = (r, ctor, made, args)
        key = input_key(item)
        if key in keys or not _encodable(item):
            continue
        keys.add(key)
        out.append(item)
    return out
