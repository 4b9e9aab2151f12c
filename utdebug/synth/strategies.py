"""Hypothesis strategies: inferred from an envelope (the example values' kinds, ranges, lengths
and characters) and from type hints (``st.from_type``: builtins, generics, ``Optional``,
dataclasses ...), and a deterministic way to draw many values from one in this process.

Type hints written in source are read with :mod:`ast` and resolved against a fixed table of
names (builtins, ``typing``, the standard library's value types), never by importing or
evaluating the code under test.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import datetime as _dt
import threading
import time
import typing
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException

from utdebug.synth.envelope import Envelope, KindEnvelope, Node, number_of
from utdebug.synth.mutate import alphabet_of
from utdebug.synth.values import ITERATOR_KINDS, iterator_of

__all__ = [
    "args_strategy",
    "draw",
    "hint_strategy",
    "node_strategy",
    "parse_hints",
    "resolve_hint",
    "type_aliases",
]

_MAX_INT_SPAN = 1 << 62


def node_strategy(node: Node, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values inside ``node``: one of its kinds, each within its bounds."""
    parts = [kind_strategy(env, depth) for _, env in sorted(node.kinds.items())]
    if not parts:
        return st.none()
    return parts[0] if len(parts) == 1 else st.one_of(*parts)


def kind_strategy(env: KindEnvelope, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values of one kind inside ``env``; a third of the numbers and text are values seen in
    the examples (so a list may repeat them, as inputs that find bugs often do)."""
    base = _kind_strategy(env, depth)
    samples = [v for v in env.samples if _inside(env, v)]
    if samples and not base.is_empty:
        return st.one_of(base, base, st.sampled_from(samples))
    return base


def _inside(env: KindEnvelope, v: Any) -> bool:
    try:
        return env.why_not(v, 0) is None
    except Exception:
        return False


def _kind_strategy(env: KindEnvelope, depth: int = 0) -> st.SearchStrategy[Any]:
    kind = env.kind
    if kind == "none":
        return st.none()
    if kind == "bool":
        return st.booleans()
    if kind == "complex":
        return st.complex_numbers(max_magnitude=1e6, allow_nan=False, allow_infinity=False)
    if kind == "int":
        return _int_strategy(env)
    if kind == "float":
        return _float_strategy(env)
    if kind in ("decimal", "fraction", "date", "datetime", "time", "timedelta"):
        if env.lo is None or env.hi is None:
            return st.nothing()
        return _measured_strategy(kind, env.lo, env.hi)
    if kind in ("str", "bytes"):
        return _text_strategy(env)
    if kind in ("list", "set", "frozenset", "tuple"):
        return _collection_strategy(env, depth)
    if kind in ITERATOR_KINDS:  # made in the child from a list
        lists = _collection_strategy(dataclasses.replace(env, kind="list"), depth)
        return lists.map(lambda xs: iterator_of(kind, xs))
    if kind in ("enum", "callable", "range"):  # the values seen
        return st.sampled_from(env.samples) if env.samples else st.nothing()
    if kind == "dict":
        if not (env.key and env.key.kinds and env.value and env.value.kinds):
            return st.just({})
        return st.dictionaries(
            node_strategy(env.key, depth + 1).filter(_hashable),
            node_strategy(env.value, depth + 1),
            min_size=env.len_lo or 0,
            max_size=_hi_len(env),
        )
    return st.nothing()


def _int_strategy(env: KindEnvelope) -> st.SearchStrategy[Any]:
    lo, hi = env.lo, env.hi
    if lo is None or hi is None:
        return st.integers(-100, 100)
    whole = st.integers(int(lo), int(hi))
    clo, chi = env.core_lo, env.core_hi
    if clo is None or chi is None or (clo, chi) == (lo, hi):
        return whole
    # outer bounds: the core range, its mirror image, the values around zero, larger values of
    # the core's sign, and the whole range
    core = st.integers(int(clo), int(chi))
    mirror = st.integers(int(max(lo, -chi)), int(min(hi, -clo)))
    small = st.sampled_from([v for v in (0, 1, -1, 2, -2) if lo <= v <= hi])
    near = st.integers(int(max(lo, min(clo, -10))), int(max(chi, 10)))
    top = chi if chi > 0 else -clo
    big = st.integers(int(top), int(min(hi, top * 10_000 + 10)))
    if chi <= 0:
        big = big.map(lambda v: -v)
    # weighted by repetition: a list of outer ints is mostly ordinary values with a few
    # corners, as the inputs that find bugs are, not all extremes
    return st.one_of(core, core, core, near, near, small, mirror, big, whole)


def _float_strategy(env: KindEnvelope) -> st.SearchStrategy[Any]:
    lo, hi = env.lo, env.hi
    if lo is None or hi is None:
        base: st.SearchStrategy[Any] = st.nothing()
    elif env.integral:
        base = st.integers(int(lo), int(hi)).map(float) | st.floats(lo, hi)
    else:
        base = st.floats(lo, hi, allow_nan=False, allow_infinity=False)
    extra = [
        v
        for v, on in (
            (float("nan"), env.nan),
            (float("inf"), env.pos_inf),
            (float("-inf"), env.neg_inf),
        )
        if on
    ]
    return base | st.sampled_from(extra) if extra else base


def _text_strategy(env: KindEnvelope) -> st.SearchStrategy[Any]:
    alphabet = alphabet_of(env)
    seen = sorted(env.chars)
    chars = st.sampled_from(alphabet)
    if seen:
        chars = st.sampled_from(seen) | chars
    text = st.text(alphabet=chars, min_size=env.len_lo or 0, max_size=_hi_len(env))
    return text if env.kind == "str" else text.map(lambda s: s.encode("latin-1", "replace"))


def _collection_strategy(env: KindEnvelope, depth: int) -> st.SearchStrategy[Any]:
    kind = env.kind
    if kind == "tuple" and env.items is not None:
        return st.tuples(*(node_strategy(n, depth + 1) for n in env.items))
    elem = node_strategy(env.elem, depth + 1) if env.elem and env.elem.kinds else st.nothing()
    lo_len = env.len_lo or 0
    if elem.is_empty:
        lo_len = 0
    lists = st.lists(elem, min_size=lo_len, max_size=_hi_len(env) if not elem.is_empty else 0)
    if kind == "tuple":
        return lists.map(tuple)
    if kind == "set":
        return lists.map(_to_set)
    if kind == "frozenset":
        return lists.map(lambda xs: frozenset(_to_set(xs)))
    return lists


def _hi_len(env: KindEnvelope) -> int:
    return env.len_hi if env.len_hi is not None else (env.len_lo or 0) + 5


def _hashable(x: Any) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True


def _to_set(xs: list[Any]) -> set[Any]:
    return {x for x in xs if _hashable(x)}


def _measured_strategy(kind: str, lo: float, hi: float) -> st.SearchStrategy[Any]:
    if kind == "date":
        return st.dates(_dt.date.fromordinal(int(lo)), _dt.date.fromordinal(int(hi)))
    if kind == "timedelta":
        return st.timedeltas(_dt.timedelta(seconds=lo), _dt.timedelta(seconds=hi))
    if kind == "decimal":
        return st.decimals(
            Decimal(repr(lo)), Decimal(repr(hi)), allow_nan=False, allow_infinity=False, places=3
        )
    if kind == "fraction":
        return st.fractions(
            Fraction(lo).limit_denominator(1000),
            Fraction(hi).limit_denominator(1000),
            max_denominator=100,
        )
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False).map(
        lambda m: number_of(kind, m)
    )


def args_strategy(env: Envelope) -> st.SearchStrategy[tuple[Any, ...]]:
    """Argument tuples inside ``env`` (each arity seen)."""
    options = []
    for arity in sorted(env.arities):
        options.append(st.tuples(*(node_strategy(env.params[i]) for i in range(arity))))
    if not options:
        return st.just(())
    return options[0] if len(options) == 1 else st.one_of(*options)


# -- type hints ----------------------------------------------------------------------------------

_HINT_NAMES: dict[str, Any] = {
    "int": int,
    "float": float,
    "str": str,
    "bool": bool,
    "bytes": bytes,
    "complex": complex,
    "list": list,
    "dict": dict,
    "set": set,
    "frozenset": frozenset,
    "tuple": tuple,
    "None": type(None),
    "date": _dt.date,
    "datetime": _dt.datetime,
    "time": _dt.time,
    "timedelta": _dt.timedelta,
    "Decimal": Decimal,
    "Fraction": Fraction,
}
for _name in (
    "List",
    "Dict",
    "Set",
    "FrozenSet",
    "Tuple",
    "Optional",
    "Union",
    "Sequence",
    "Iterable",
    "Mapping",
    "Literal",
    "Any",
):
    _HINT_NAMES[_name] = getattr(typing, _name)


class HintError(ValueError):
    """An annotation this module cannot resolve to a type (the message says which part)."""


def resolve_hint(node: ast.expr, extra: dict[str, Any] | None = None) -> Any:
    """The type an annotation's syntax names, from a fixed table (``extra`` adds names)."""
    names = {**_HINT_NAMES, **(extra or {})}
    if isinstance(node, ast.Constant) and node.value is None:
        return type(None)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return resolve_hint(ast.parse(node.value, mode="eval").body, extra)
        except SyntaxError:
            raise HintError(f"unreadable string annotation {node.value!r}") from None
    if isinstance(node, ast.Name):
        if node.id in names:
            return names[node.id]
        raise HintError(f"unknown name {node.id!r} in a type hint")
    if isinstance(node, ast.Attribute):
        if node.attr in names and isinstance(node.value, ast.Name):
            return names[node.attr]
        raise HintError(f"unknown type {ast.unparse(node)!r}")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return typing.Union[resolve_hint(node.left, extra), resolve_hint(node.right, extra)]  # noqa: UP007
    if isinstance(node, ast.Subscript):
        base = resolve_hint(node.value, extra)
        inner = node.slice
        if base is typing.Literal:
            elts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
            values = []
            for e in elts:
                if not isinstance(e, ast.Constant):
                    raise HintError("a Literal of something other than constants")
                values.append(e.value)
            return typing.Literal[tuple(values)]
        if isinstance(inner, ast.Tuple):
            args: Any = tuple(
                Ellipsis
                if isinstance(e, ast.Constant) and e.value is Ellipsis
                else resolve_hint(e, extra)
                for e in inner.elts
            )
        else:
            args = resolve_hint(inner, extra)
        try:
            return base[args]
        except TypeError as exc:
            raise HintError(f"{ast.unparse(node)!r}: {exc}") from None
    raise HintError(f"unsupported type hint {ast.unparse(node)!r}")


def type_aliases(tree: ast.Module) -> dict[str, Any]:
    """The module's type aliases that resolve against the fixed table: ``Pos = int``, ``Num =
    int | float``, ``Pair: TypeAlias = tuple[int, int]``, ``UserId = NewType("UserId", int)``
    (in order, so an alias may use an earlier one)."""
    out: dict[str, Any] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            target, value = stmt.target, stmt.value
        else:
            continue
        if not isinstance(target, ast.Name):
            continue
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name | ast.Attribute)
            and ast.unparse(value.func).rsplit(".", 1)[-1] == "NewType"
            and len(value.args) == 2
        ):
            value = value.args[1]
        if isinstance(value, ast.Constant):  # a string is text, not a forward reference here
            continue
        try:
            out[target.id] = resolve_hint(value, out)
        except (HintError, TypeError, RecursionError):
            continue
    return out


def parse_hints(source: str, func_name: str) -> dict[str, Any]:
    """Type hints of ``func_name``'s positional parameters, read from ``source`` (a module or a
    bare signature ``f(a: int, b: list[int])``), with the module's type aliases
    (:func:`type_aliases`). Parameters without a hint, or whose hint cannot be resolved, are
    left out; :class:`SyntaxError` if neither parses."""
    text = source.strip()
    try:
        tree = ast.parse(text)
    except SyntaxError:
        tree = ast.parse(f"def {text.rstrip(':')}: pass")
    aliases = type_aliases(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == func_name:
            hints: dict[str, Any] = {}
            for arg in [*node.args.posonlyargs, *node.args.args]:
                if arg.annotation is None:
                    continue
                try:
                    hints[arg.arg] = resolve_hint(arg.annotation, aliases)
                except (HintError, TypeError):
                    continue
            return hints
    return {}


def hint_strategy(hint: Any) -> st.SearchStrategy[Any]:
    """``st.from_type(hint)`` with sizes kept small; ``Any`` becomes small plain values."""
    if hint is typing.Any:
        return st.one_of(st.integers(-100, 100), st.text(max_size=10), st.none())
    with_small = _small_defaults()
    try:
        return with_small(hint)
    except (HypothesisException, TypeError, ValueError) as exc:
        raise HintError(f"no strategy for {hint!r}: {exc}") from None


def _small_defaults() -> Callable[[Any], st.SearchStrategy[Any]]:
    def build(hint: Any) -> st.SearchStrategy[Any]:
        if hint is int:
            return st.integers(-1000, 1000)
        if hint is float:
            return st.floats(-1e6, 1e6, allow_nan=False)
        if hint is str:
            return st.text(max_size=20)
        if hint is bytes:
            return st.binary(max_size=20)
        origin = typing.get_origin(hint)
        args = typing.get_args(hint)
        if origin in (list, set, frozenset) and len(args) == 1:
            inner = build(args[0])
            if origin is list:
                return st.lists(inner, max_size=10)
            return st.lists(inner, max_size=10).map(lambda xs: origin(_to_set(xs)))
        if origin is tuple and args and args[-1] is not Ellipsis:
            return st.tuples(*(build(a) for a in args))
        if origin is tuple and len(args) == 2:
            return st.lists(build(args[0]), max_size=10).map(tuple)
        if origin is dict and len(args) == 2:
            return st.dictionaries(build(args[0]).filter(_hashable), build(args[1]), max_size=8)
        if origin is typing.Union:
            return st.one_of(*(build(a) for a in args))
        return st.from_type(hint)

    return build


# -- drawing -------------------------------------------------------------------------------------


def draw(
    strategy: st.SearchStrategy[Any],
    n: int,
    seed: int,
    *,
    deadline: float | None = None,
    batch: int = 1,
) -> list[Any]:
    """Up to ``n`` values of ``strategy``, the same for the same ``seed`` in every process
    (no example database, generation phase only). Stops early when the strategy is exhausted,
    when Hypothesis gives up on it, or at ``deadline`` (a ``time.process_time()`` value: this
    process's CPU time, which does not move with the machine's load).

    ``batch`` > 1 draws that many values in each Hypothesis example (as a list): each value
    is drawn as before, and the engine's cost per example is shared (about 4x faster at 10).
    """
    out: list[Any] = []
    if n <= 0:
        return out
    if batch > 1:
        many = st.lists(strategy, min_size=batch, max_size=batch)
        for values in draw(many, -(-n // batch), seed, deadline=deadline):
            out += values
        return out[:n]

    @hypothesis_seed(seed)
    @settings(
        max_examples=n,
        phases=[Phase.generate],
        database=None,
        deadline=None,
        derandomize=False,
        verbosity=Verbosity.quiet,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )
    @given(strategy)
    def collect(value: Any) -> None:
        if deadline is not None and time.process_time() > deadline:
            raise _Stop
        out.append(value)

    with _LOCAL_CONSTANTS_OFF, contextlib.suppress(_Stop, HypothesisException):
        collect()
    return out


class _NoLocalConstants:
    """Draws that depend on the seed alone.

    Hypothesis (6.131 and later) mixes into about 5 % of its draws constants it reads from the
    source of every "local" module loaded in the process (utdebug's own in a checkout, a
    user's project under ``check``), so the same seed gave other values whenever any literal in
    those files changed or another module had been imported first. While a draw runs, this
    makes that set empty (and empties Hypothesis's cache of it before and after, so the process's
    other Hypothesis runs see their own). Uses a private hook guarded by ``getattr``: on a
    Hypothesis without it, nothing is changed. One draw at a time holds it.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._saved: Any = None

    def __enter__(self) -> None:
        self._lock.acquire()
        providers = _providers()
        if providers is None:
            return
        self._saved = providers._get_local_constants
        empty = providers.Constants()
        providers._get_local_constants = lambda: empty
        providers.CONSTANTS_CACHE.cache.clear()

    def __exit__(self, *exc: object) -> None:
        try:
            providers = _providers()
            if providers is not None and self._saved is not None:
                providers._get_local_constants = self._saved
                providers.CONSTANTS_CACHE.cache.clear()
            self._saved = None
        finally:
            self._lock.release()


def _providers() -> Any:
    """Hypothesis's provider module when it has the local-constants hook, else None."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - layout of another Hypothesis
        return None
    needed = ("_get_local_constants", "Constants", "CONSTANTS_CACHE")
    if not all(hasattr(providers, name) for name in needed):
        return None
    if not hasattr(providers.CONSTANTS_CACHE, "cache"):
        return None
    return providers


_LOCAL_CONSTANTS_OFF = _NoLocalConstants()


class _Stop(Exception):
    """Raised inside a draw to end it at its deadline."""
