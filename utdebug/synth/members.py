"""Differential testing of what a plain call cannot reach: a method, property, class or
static method of a module-level class, an async function, a generator (or a function that
returns an iterator) -- its base version against its head version on the same inputs.

Each input is a test with setup that the sandbox's runner runs in the version's module:
build the receiver (as the repository's tests build it, or from a synthesised constructor
call and a few of the class's public methods: :mod:`utdebug.synth.receivers`), make the call
(awaited when it is a coroutine), consume what it returns when that is a generator or an
iterator (at most :data:`ITEM_BOUND` items, within the input's CPU time), call it on fixed
probe values when it is a function (a factory's product), and report the value
together with the receiver's plain-data state after the call. Inputs the base rejects in the
setup are left out; then :func:`utdebug.synth.differential.differential` compares as for a
function. See docs/check.md ("Methods, properties, async functions and generators").
"""

from __future__ import annotations

import ast
import dataclasses
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from utdebug.sandbox.config import StagedTest
from utdebug.sandbox.executor import Sandbox
from utdebug.sandbox.outcomes import Status
from utdebug.synth.differential import (
    Accepts,
    DiffResult,
    DiffSettings,
    Version,
    differential,
    raised_in_setup,
)
from utdebug.synth.oracle import run_batch
from utdebug.synth.receivers import (
    NO_RECIPE,
    RECEIVER,
    Recipe,
    Signature,
    constructor_signature,
    decorator_names,
    public_methods,
    recipes_from_tests,
    seed_signatures,
    sequences,
    signature_of,
)
from utdebug.synth.seeds import seeds_from_docstring
from utdebug.synth.values import canonical

__all__ = ["ARGS", "ITEM_BOUND", "MemberComparison", "Shape", "compare_member", "locate"]

ARGS = "_utd_a"
"""The name each input's arguments go under in the test with setup."""
ITEM_BOUND = 100
"""At most this many items of a returned generator or iterator are compared."""
PROBE_ITEMS = 20
"""At most this many items of what a returned function gives a probe are compared."""

_HELPERS = """import enum, types

SKIP = object()
SCALARS = (bool, int, float, str, bytes)


def plain(v, depth, seen):
    t = type(v)
    if v is None or t is bool or t is int or t is float or t is str or t is bytes:
        return v
    if isinstance(v, enum.Enum):
        return t.__qualname__ + "." + str(v.name)
    for base in SCALARS:
        if isinstance(v, base):
            return base(v)
    if depth > 8 or id(v) in seen:
        return SKIP
    seen.add(id(v))
    try:
        return fields(v, depth, seen)
    finally:
        seen.discard(id(v))


def fields(v, depth, seen):
    if isinstance(v, (list, tuple, set, frozenset)):
        items = [plain(x, depth + 1, seen) for x in v]
        if any(x is SKIP for x in items):
            return SKIP
        if isinstance(v, list):
            return items
        if isinstance(v, tuple):
            return tuple(items)
        try:
            return frozenset(items) if isinstance(v, frozenset) else set(items)
        except TypeError:
            return SKIP
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            k, x = plain(k, depth + 1, seen), plain(x, depth + 1, seen)
            if k is SKIP or x is SKIP or isinstance(k, (dict, list, set)):
                return SKIP
            out[k] = x
        return out
    if isinstance(v, (type, types.ModuleType)) or callable(v):
        return SKIP
    d = getattr(v, "__dict__", None)
    if type(d) is not dict:
        return SKIP
    out = {"__class__": type(v).__qualname__}
    for k in sorted(k for k in d if type(k) is str):
        x = plain(d[k], depth + 1, seen)
        if x is not SKIP:
            out[k] = x
    return out


def state(o):
    d = getattr(o, "__dict__", None)
    if type(d) is not dict:
        return None
    out = {}
    for k in sorted(k for k in d if type(k) is str):
        x = plain(d[k], 1, {id(o)})
        if x is not SKIP:
            out[k] = x
    return out


def probes():
    return (0, 1, -1, 2.5, float("nan"), float("inf"), None, True, "", "a", "a1b2", "10",
            "1.5e3", "A b", b"a1", [1, 2], (1, 2), [], {"a": 1})


def probe(f):
    out = []
    for p in probes():
        try:
            out.append(settle(f(p), PROBE_ITEMS))
        except Exception as e:
            out.append(("__raises__", type(e).__name__))
    return {"__probes__": out}


def settle(v, bound=ITEM_BOUND):
    t = type(v)
    if t is types.GeneratorType or (hasattr(t, "__next__") and hasattr(t, "__iter__")):
        out = []
        if bound > 0:
            for x in v:
                out.append(x)
                if len(out) >= bound:
                    break
        return out
    if bound == ITEM_BOUND and callable(v) and not isinstance(v, type):
        return probe(v)
    return v


async def asettle(v, bound=ITEM_BOUND):
    if hasattr(type(v), "__await__"):
        v = await v
    if type(v) is types.AsyncGeneratorType:
        out = []
        async for x in v:
            out.append(x)
            if len(out) >= bound:
                break
        return out
    return settle(v, bound)
""".replace("ITEM_BOUND", str(ITEM_BOUND)).replace("PROBE_ITEMS", str(PROBE_ITEMS))

_PRELUDE = f"""_utd_h = {{}}
exec({_HELPERS!r}, _utd_h)
_utd_settle, _utd_asettle, _utd_state = _utd_h["settle"], _utd_h["asettle"], _utd_h["state"]
"""
"""Run before each input's setup: the helpers, in a namespace of their own (a function
defined in the test's namespace would hold it, and each input's objects, in a cycle).
``_utd_state``: the receiver's instance attributes as plain data (objects of the program's
classes as dicts of their fields with ``__class__``; what is not plain is left out, a clock
reading in a ``datetime`` too); ``_utd_settle``/``_utd_asettle``: consume a generator or an
iterator (awaiting first when asynchronous), or call a returned function (not a class) on
fixed probe values, one argument each (``{"__probes__": [outcome, ...]}``, an exception as
``("__raises__", name)``)."""


class Shape(StrEnum):
    """How a member is reached (the test's call)."""

    FUNCTION = "function"
    """A module-level function: ``f(*args)``."""
    CLASS = "class"
    """A staticmethod or classmethod: ``Cls.m(*args)``."""
    CONSTRUCTOR = "constructor"
    """``__init__``: ``Cls(*args)``, compared by the new object's state."""
    METHOD = "method"
    """An instance method, on a receiver: ``o.m(*args)``."""
    PROPERTY = "property"
    """A property's getter (and setter), on a receiver: ``o.p``."""


@dataclass(frozen=True, slots=True)
class Located:
    """A member of a module, found by its qualified name."""

    qualname: str
    name: str
    shape: Shape
    is_async: bool
    node: ast.FunctionDef | ast.AsyncFunctionDef
    cls: ast.ClassDef | None = None
    setter: ast.FunctionDef | None = None
    """A property's setter, when the class has one."""


def _last_def(body: list[ast.stmt], name: str, kind: type | tuple[type, ...]) -> Any:
    found = None
    for node in body:
        if isinstance(node, kind) and getattr(node, "name", None) == name:
            found = node  # the last definition wins, as in Python
    return found


def locate(tree: ast.Module, qualname: str) -> Located | str:
    """``qualname`` (``f`` or ``Class.member``) in ``tree``, or why it cannot be compared."""
    parts = qualname.split(".")
    if len(parts) > 2:
        return (
            f"nested class ({qualname}): only members of module-level classes are compared "
            "with their base"
        )
    funcs = (ast.FunctionDef, ast.AsyncFunctionDef)
    if len(parts) == 1:
        node = _last_def(tree.body, qualname, funcs)
        if node is None:
            return f"{qualname} is not a module-level function"
        is_async = isinstance(node, ast.AsyncFunctionDef)
        return Located(qualname, qualname, Shape.FUNCTION, is_async, node)
    cls = _last_def(tree.body, parts[0], ast.ClassDef)
    if cls is None:
        return f"{parts[0]} is not a module-level class"
    defs = [n for n in cls.body if isinstance(n, funcs) and n.name == parts[1]]
    if not defs:
        return f"{parts[1]} is not a member of {parts[0]}"
    is_async = isinstance(defs[-1], ast.AsyncFunctionDef)
    getters = [n for n in defs if decorator_names(n) & {"property", "cached_property"}]
    if getters:
        setters = [
            n
            for n in defs
            if isinstance(n, ast.FunctionDef)
            and any(isinstance(d, ast.Attribute) and d.attr == "setter" for d in n.decorator_list)
        ]
        setter = setters[-1] if setters else None
        return Located(qualname, parts[1], Shape.PROPERTY, False, getters[-1], cls, setter)
    node = defs[-1]
    names = decorator_names(node)
    if names & {"staticmethod", "classmethod"}:
        shape = Shape.CLASS
    elif node.name == "__init__":
        shape = Shape.CONSTRUCTOR
    else:
        shape = Shape.METHOD
    return Located(qualname, parts[1], shape, is_async, node, cls)


@dataclass
class MemberComparison:
    """The comparison of a member with its base version, as the report needs it."""

    result: DiffResult
    seeds: int = 0
    """Literal calls found in the tests and docstrings (the member's, its constructor's and
    its class's public methods'), and test recipes for the receiver."""
    call_text: Callable[[tuple[Any, ...]], str] | None = None
    """An input as the code that runs it (``o = Inventory(); o.add_item('a', 1);
    o.remove_item('a', 1)``), for the findings."""


def _not_compared(function: str, why: str) -> MemberComparison:
    return MemberComparison(DiffResult(function, False, why))


@dataclass(frozen=True, slots=True)
class _Plan:
    """What runs each input: the test with setup, and what its inputs are."""

    test: StagedTest
    inputs: list[tuple[Any, ...]]
    seeds: int
    hints: Any
    names: Sequence[str]
    call_text: Callable[[tuple[Any, ...]], str]
    grow: Callable[[list[tuple[Any, ...]], int], list[tuple[Any, ...]]] | None = None
    """For call sequences (used as they are): ``n`` more that extend the given ones (which
    the base accepted). ``None``: the inputs are the call's arguments, seeds synthesised
    from as a function's are."""
    recipes: Sequence[Recipe] = ()


def compare_member(
    sandbox: Sandbox,
    function: str,
    qualname: str,
    base: Version,
    head: Version,
    tests: Sequence[Path],
    root: Path,
    *,
    settings: DiffSettings | None = None,
    accepts: Accepts | None = None,
) -> MemberComparison:
    """Compare ``qualname`` of ``head``'s module with the same member of ``base``'s
    (``function`` names it in findings and accepts: ``path::qualname``); ``tests``: the
    repository's test files (under ``root``), where receivers and seeds are read."""
    cfg = settings or DiffSettings()
    try:
        head_tree = ast.parse(head.code)
    except (SyntaxError, ValueError) as e:
        return _not_compared(function, f"the checked version does not parse: {e}")
    try:
        base_tree = ast.parse(base.code)
    except (SyntaxError, ValueError) as e:
        return _not_compared(function, f"the base does not parse: {e}")
    found = locate(head_tree, qualname)
    if isinstance(found, str):
        return _not_compared(function, found)
    was = locate(base_tree, qualname)
    if isinstance(was, str):
        return _not_compared(function, "new function (no base version)")
    if ast.dump(base_tree) == ast.dump(head_tree):
        return _not_compared(function, "unchanged since the base (its module is the same)")
    plan = _plan(found, head.code, tests, root, cfg)
    if isinstance(plan, str):
        return _not_compared(function, plan)
    base = dataclasses.replace(base, test=plan.test)
    inputs = plan.inputs if plan.grow is None else _feedback(sandbox, base, plan, cfg)
    res = differential(
        sandbox,
        function,
        base,
        dataclasses.replace(head, test=plan.test),
        inputs,
        settings=dataclasses.replace(
            cfg,
            count=cfg.count if plan.grow is None else len(inputs),
            replay=True,
            elsewhere=_elsewhere(found, was, plan.recipes),
            view=member_view(found.shape),
        ),
        hints=plan.hints,
        names=plan.names,
        accepts=accepts,
    )
    if not res.compared and res.setup_failed and found.shape in (Shape.METHOD, Shape.PROPERTY):
        res.message = f"no way to build a receiver: {res.message}"
    return MemberComparison(res, plan.seeds, plan.call_text)


def member_view(shape: Shape) -> Callable[[Any, Any], tuple[Any, Any]]:
    """What of two versions' values is compared (:attr:`DiffSettings.view`): the objects'
    states in them (the receiver's after the call, a constructor's new object, objects of the
    program's classes inside a value) without their private attributes (``_x``) where the two
    versions name them differently. A renamed or added private attribute is how a class keeps
    its data, not what it does (``_pos`` renamed ``_position`` changes no outcome); where both
    name the same private attributes, they are compared as they are."""
    if shape == Shape.CONSTRUCTOR:
        return lambda was, now: _public_when_private_differ(was, now, state=True)
    if shape in (Shape.METHOD, Shape.PROPERTY):
        return _receiver_view
    return lambda was, now: _public_when_private_differ(was, now, state=False)


def _receiver_view(was: Any, now: Any) -> tuple[Any, Any]:
    """A method's value: ``(what the call returned, the receiver's state)``."""
    if not (isinstance(was, tuple) and isinstance(now, tuple) and len(was) == len(now) == 2):
        return was, now
    value = _public_when_private_differ(was[0], now[0], state=False)
    after = _public_when_private_differ(was[1], now[1], state=True)
    return (value[0], after[0]), (value[1], after[1])


def _public_when_private_differ(was: Any, now: Any, *, state: bool) -> tuple[Any, Any]:
    """``state``: both are an object's state (else only dicts the child wrote for objects,
    with their ``__class__``, are)."""
    if isinstance(was, dict) and isinstance(now, dict):
        is_object = state or ("__class__" in was and "__class__" in now)
        hidden_was, hidden_now = _private(was), _private(now)
        if is_object and hidden_was != hidden_now:
            was = {k: v for k, v in was.items() if k not in hidden_was}
            now = {k: v for k, v in now.items() if k not in hidden_now}
        both = {
            k: _public_when_private_differ(was[k], now[k], state=False)
            for k in was.keys() & now.keys()
        }
        return (
            {k: both[k][0] if k in both else v for k, v in was.items()},
            {k: both[k][1] if k in both else v for k, v in now.items()},
        )
    kind = type(was)
    if kind in (list, tuple) and type(now) is kind and len(was) == len(now):
        pairs = [
            _public_when_private_differ(a, b, state=False) for a, b in zip(was, now, strict=True)
        ]
        return kind(a for a, _ in pairs), kind(b for _, b in pairs)
    return was, now


def _private(d: dict[Any, Any]) -> frozenset[str]:
    return frozenset(k for k in d if isinstance(k, str) and k.startswith("_") and k != "__class__")


def _elsewhere(
    m: Located, was: Located, recipes: Sequence[Recipe]
) -> Callable[[tuple[Any, ...]], bool] | None:
    """For call sequences: whether a sequence's setup calls a member of the class, other than
    ``m``, that changed since the base (``was``): its constructor (or what a test's recipe
    calls) or one of the calls before the one compared."""
    if m.cls is None or was.cls is None or m.shape not in (Shape.METHOD, Shape.PROPERTY):
        return None
    changed = _changed_members(was.cls, m.cls) - {m.name}

    def elsewhere(args: tuple[Any, ...]) -> bool:
        r, _, steps, _ = args
        called = {name.removeprefix("=") for name, _ in steps}
        if 0 <= r < len(recipes):
            called |= {n for n in changed if f".{n}(" in recipes[r].body} | {"__init__"}
        else:
            called.add("__init__")
        return bool(called & changed)

    return elsewhere


def _changed_members(base: ast.ClassDef, head: ast.ClassDef) -> set[str]:
    """The names of the class's functions whose definitions differ between the versions."""

    def defs(cls: ast.ClassDef) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for n in cls.body:
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
                out.setdefault(n.name, []).append(ast.dump(n))
        return out

    before, after = defs(base), defs(head)
    return {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}


def _feedback(
    sandbox: Sandbox, base: Version, plan: _Plan, cfg: DiffSettings
) -> list[tuple[Any, ...]]:
    """Randoop's feedback, one round: the call sequences run on the base; those whose setup
    it accepts are kept, and as many as it rejected are drawn again, each extending one it
    accepted (a ``pop`` after a ``push`` that worked)."""
    assert plan.grow is not None
    outcomes, load_error, _, _ = run_batch(
        sandbox,
        base.code,
        base.entry_point,
        plan.inputs,
        cfg.base_limits,
        context=base.context,
        test=base.test,
    )
    good = [
        x
        for x, o in zip(plan.inputs, outcomes, strict=True)
        if o.status in (Status.OK, Status.ERROR) and not raised_in_setup(o)
    ]
    rejected = len(plan.inputs) - len(good)
    if load_error or not good or not rejected:
        return plan.inputs  # the comparison says why nothing can be compared
    return good + plan.grow(good, rejected)


def _plan(
    m: Located, code: str, tests: Sequence[Path], root: Path, cfg: DiffSettings
) -> _Plan | str:
    if m.shape in (Shape.METHOD, Shape.PROPERTY):
        return _receiver_plan(m, tests, root, cfg)
    return _call_plan(m, code, tests, root, cfg)


def _call_plan(
    m: Located, code: str, tests: Sequence[Path], root: Path, cfg: DiffSettings
) -> _Plan | str:
    """A call without a receiver: a module-level function, a static or class method, a
    constructor. Its inputs are its arguments, synthesised from seeds (or its hints) as a
    function's are; with neither, from its parameters' pools."""
    static = "staticmethod" in decorator_names(m.node)
    sig = signature_of(m.node, bound=m.cls is not None and not static)
    if sig.keyword_only:
        return f"required keyword-only parameters ({', '.join(sig.keyword_only)})"
    target = m.name if m.cls is None else m.cls.name
    if m.cls is not None and m.shape != Shape.CONSTRUCTOR:
        target += f".{m.name}"
    sig.name = target.rpartition(".")[2]
    sig.seeds = [s for s in seeds_from_docstring(code, m.name).inputs if sig.fits(s)]
    seeds = seed_signatures([sig], tests, root, cfg.seed)
    names = [p.name for p in sig.params]
    typed = bool(names) and all(p.hint is not None for p in sig.params)
    inputs = list(sig.seeds)
    if not names:
        inputs = [()]
    elif not inputs and not typed:
        drawn = sequences(0, None, (), sig, count=max(8, cfg.count // 4), seed=cfg.seed)
        inputs = [args for _, _, _, args in drawn]
    call = f"{target}(*{ARGS})"
    expr = f"_utd_state({call})" if m.shape == Shape.CONSTRUCTOR else _settled(m, call)

    def text(args: tuple[Any, ...]) -> str:
        return f"{target}({', '.join(canonical(a) for a in args)})"

    return _Plan(
        StagedTest(setup=_PRELUDE, call=expr, bound=ITEM_BOUND, args=ARGS),
        inputs,
        seeds,
        {p.name: p.hint for p in sig.params} if typed else None,
        names,
        text,
    )


def _receiver_plan(m: Located, tests: Sequence[Path], root: Path, cfg: DiffSettings) -> _Plan | str:
    """A method or property: call sequences on a receiver built as the tests build it, or
    by a synthesised constructor call."""
    assert m.cls is not None
    cls = m.cls
    recipes = recipes_from_tests(tests, cls.name, root)
    ctor = constructor_signature(cls)
    if ctor is not None and ctor.keyword_only:
        if not recipes:
            return (
                f"no way to build a receiver: {cls.name}() needs keyword-only arguments "
                f"({', '.join(ctor.keyword_only)}) and no test builds one"
            )
        ctor = None
    elif ctor is None:
        ctor = Signature(cls.name, [])  # an inherited constructor: called without arguments
    steps = public_methods(cls)
    call: Signature | None = None
    if m.shape == Shape.METHOD:
        call = signature_of(m.node, bound=True)
        if call.keyword_only:
            return f"required keyword-only parameters ({', '.join(call.keyword_only)})"
    elif m.setter is not None:
        setter = signature_of(m.setter, bound=True)
        setter.name = "=" + m.name
        steps.append(setter)
    sigs = [s for s in (ctor, call, *steps) if s is not None]
    seeds = seed_signatures(sigs, tests, root, cfg.seed) + len(recipes)
    inputs = sequences(len(recipes), ctor, steps, call, count=cfg.count, seed=cfg.seed)
    test = StagedTest(
        setup=_receiver_setup(cls.name, recipes),
        call=_method_call(m),
        bound=ITEM_BOUND,
        args=ARGS,
    )

    def text(args: tuple[Any, ...]) -> str:
        return _sequence_text(m, recipes, args)

    def grow(good: list[tuple[Any, ...]], n: int) -> list[tuple[Any, ...]]:
        return sequences(len(recipes), ctor, steps, call, count=n, seed=cfg.seed + 1, grow=good)

    return _Plan(test, inputs, seeds, None, (), text, grow, recipes)


def _settled(m: Located, expr: str) -> str:
    """``expr``'s value as compared: awaited, its generator or iterator consumed."""
    return f"await _utd_asettle({expr})" if m.is_async else f"_utd_settle({expr})"


def _method_call(m: Located) -> str:
    """The call on the receiver and the receiver's state after it."""
    member = f"{RECEIVER}.{m.name}" + ("" if m.shape == Shape.PROPERTY else "(*_utd_x)")
    return f"({_settled(m, member)}, _utd_state({RECEIVER}))"


def _receiver_setup(class_name: str, recipes: Sequence[Recipe]) -> str:
    """The setup of a call sequence ``(recipe, constructor arguments, steps, call
    arguments)``: the receiver from a test's recipe or the constructor, then the steps."""
    lines = [_PRELUDE, f"_utd_r, _utd_c, _utd_s, _utd_x = {ARGS}"]
    for k, r in enumerate(recipes):
        lines.append(f"{'if' if k == 0 else 'elif'} _utd_r == {k}:")
        lines.append(textwrap.indent("\n".join([*r.imports, r.body]), "    "))
    ctor = f"{RECEIVER} = {class_name}(*_utd_c)"
    lines.append(f"else:\n    {ctor}" if recipes else ctor)
    lines.append(
        f"""for _utd_m, _utd_v in _utd_s:
    if _utd_m.startswith("="):
        setattr({RECEIVER}, _utd_m[1:], *_utd_v)
    else:
        getattr({RECEIVER}, _utd_m)(*_utd_v)"""
    )
    return "\n".join(lines)


def _sequence_text(m: Located, recipes: Sequence[Recipe], args: tuple[Any, ...]) -> str:
    """A call sequence as code a person reads (the receiver is ``o``)."""
    assert m.cls is not None
    r, ctor, steps, call = args

    def show(xs: Sequence[Any]) -> str:
        return ", ".join(canonical(x) for x in xs)

    if r != NO_RECIPE and 0 <= r < len(recipes):
        parts = [line.replace(RECEIVER, "o") for line in recipes[r].body.splitlines()]
    else:
        parts = [f"o = {m.cls.name}({show(ctor)})"]
    for name, xs in steps:
        parts.append(
            f"o.{name[1:]} = {show(xs)}" if name.startswith("=") else f"o.{name}({show(xs)})"
        )
    parts.append(f"o.{m.name}" if m.shape == Shape.PROPERTY else f"o.{m.name}({show(call)})")
    return "; ".join(parts)
