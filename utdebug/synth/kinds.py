"""Kinds of a function's parameters without (or beyond) type hints, read with :mod:`ast`:
annotations (through the module's type aliases), literal defaults, the docstring's parameter
sections (Google ``Args:``, NumPy ``Parameters``, Sphinx ``:param x:`` / ``:type x:``) and
how the body uses each parameter (``len(x)``, ``x + 1``, ``x.split()``, ``for a in x``,
``x[k]``, ``x.items()`` ...). Hints guide and do not cage: a number tries ``int`` and
``float``, ``Optional`` and a ``None`` default try ``None``.

:func:`infer` gives each parameter's candidate kinds; :func:`try_kinds` confirms them on the
base version in the sandbox (a kind whose inputs all raise ``TypeError`` or
``AttributeError`` there is dropped) and returns the inputs it accepted, as seeds.
See docs/synth.md ("Kinds without hints").
"""

from __future__ import annotations

import ast
import re
import typing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from utdebug.sandbox.config import Limits
from utdebug.sandbox.executor import Sandbox
from utdebug.sandbox.outcomes import Status
from utdebug.sandbox.values import SourceFunction
from utdebug.synth.oracle import Reference, run_chosen
from utdebug.synth.seed_values import Scope, SeedEvaluator
from utdebug.synth.strategies import HintError, draw, resolve_hint, type_aliases
from utdebug.synth.values import input_key, kind_of

__all__ = ["KINDS", "KindTrial", "Kinds", "ParamKinds", "infer", "try_kinds"]

KINDS = ("int", "float", "str", "list", "dict", "tuple", "set", "bool", "none", "bytes", "callable")
"""Every kind a parameter may be tried with, in the order candidates are listed."""
_FALLBACK = ("int", "str", "list", "float")
"""What a parameter nothing says anything about is tried with."""
_NUMBER = frozenset({"int", "float"})
_SIZED = frozenset({"str", "list", "tuple", "dict", "set", "bytes"})
_ITERABLE = frozenset({"list", "str", "tuple", "set", "dict"})
_ORDERED = frozenset({"int", "float", "str"})
_SEQUENCE = frozenset({"list", "str", "tuple"})
_MAPPING = frozenset({"dict"})

_STR_METHODS = frozenset(
    [
        "split",
        "rsplit",
        "splitlines",
        "strip",
        "lstrip",
        "rstrip",
        "lower",
        "upper",
        "title",
        "capitalize",
        "casefold",
        "swapcase",
        "startswith",
        "endswith",
        "replace",
        "format",
        "encode",
        "isdigit",
        "isalpha",
        "isalnum",
        "isspace",
        "isupper",
        "islower",
        "zfill",
        "center",
        "ljust",
        "rjust",
        "partition",
        "rpartition",
        "expandtabs",
        "translate",
        "removeprefix",
        "removesuffix",
    ]
)
_LIST_METHODS = frozenset(["append", "extend", "insert", "remove", "sort", "reverse"])
_DICT_METHODS = frozenset(["items", "keys", "values", "get", "setdefault", "update", "popitem"])
_SET_METHODS = frozenset(
    [
        "add",
        "discard",
        "union",
        "intersection",
        "difference",
        "issubset",
        "issuperset",
        "symmetric_difference",
    ]
)
_SHARED_METHODS = {
    "count": {"str", "list", "tuple"},
    "index": {"str", "list", "tuple"},
    "find": {"str"},
    "join": {"str"},
    "copy": {"list", "dict", "set"},
    "pop": {"list", "dict", "set"},
    "clear": {"list", "dict", "set"},
}
_NUMERIC_CALLS = frozenset(["abs", "round", "range", "divmod", "pow", "hex", "bin", "oct", "chr"])
_NUMERIC_MODULES = frozenset({"math", "cmath", "statistics"})
_ITERABLE_CALLS = frozenset(
    ["sorted", "sum", "min", "max", "set", "list", "tuple", "enumerate", "zip", "any", "all"]
)
_WORDS = {
    "int": "int",
    "integer": "int",
    "ints": "int",
    "integers": "int",
    "float": "float",
    "floats": "float",
    "number": "number",
    "numbers": "number",
    "numeric": "number",
    "real": "float",
    "str": "str",
    "string": "str",
    "strings": "str",
    "text": "str",
    "bool": "bool",
    "boolean": "bool",
    "list": "list",
    "sequence": "list",
    "iterable": "list",
    "array": "list",
    "dict": "dict",
    "mapping": "dict",
    "dictionary": "dict",
    "tuple": "tuple",
    "set": "set",
    "bytes": "bytes",
    "none": "none",
    "callable": "callable",
    "function": "callable",
}


@dataclass(frozen=True)
class ParamKinds:
    """One parameter's candidate kinds (most likely first) and what suggested them."""

    name: str
    kinds: tuple[str, ...]
    """Labels from :data:`KINDS` (``list`` may be ``list[str]`` when its items are text)."""
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True)
class Kinds:
    """The candidate kinds of a function's positional parameters, in order."""

    params: tuple[ParamKinds, ...]

    def uncovered(self, seeds: Sequence[Sequence[Any]]) -> list[int]:
        """Positions no seed gives a value other than ``None`` for: they need trying."""
        out = []
        for i in range(len(self.params)):
            seen = {kind_of(s[i]) for s in seeds if len(s) > i}
            if not seen - {"none"}:
                out.append(i)
        return out

    def describe(self) -> str:
        return "; ".join(f"{p.name}: {', '.join(p.kinds)}" for p in self.params)

    def first(self, n: int) -> Kinds:
        """The first ``n`` parameters' kinds (those another version takes too)."""
        return Kinds(self.params[:n])


@dataclass
class KindTrial:
    """What the base made of the candidate kinds."""

    seeds: list[tuple[Any, ...]] = field(default_factory=list)
    """Inputs it returned on (else, those it raised on with other than ``TypeError`` or
    ``AttributeError``): seeds for the synthesis."""
    kept: dict[str, list[str]] = field(default_factory=dict)
    """Per tried parameter, the kinds it accepted."""
    dropped: dict[str, list[str]] = field(default_factory=dict)
    load_error: str | None = None
    tried: int = 0

    def note(self) -> str:
        parts = []
        for name, kinds in self.kept.items():
            text = f"{name}: {', '.join(kinds) or 'none'}"
            if self.dropped.get(name):
                text += f" ({', '.join(self.dropped[name])} dropped: TypeError/AttributeError)"
            parts.append(text)
        return f"kinds tried on the base ({self.tried} inputs): " + "; ".join(parts)


# -- inference -------------------------------------------------------------------------------


def infer(module_text: str, qualname: str) -> Kinds | None:
    """Candidate kinds of each positional parameter of the module-level function
    ``qualname`` (None when it is not one of the module, or nested too deeply to read)."""
    try:
        return _infer(module_text, qualname)
    except RecursionError:
        return None


def _infer(module_text: str, qualname: str) -> Kinds | None:
    try:
        tree = ast.parse(module_text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    fn = None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == qualname:
            fn = node
    if fn is None:
        return None
    aliases = type_aliases(tree)
    a = fn.args
    args = [*a.posonlyargs, *a.args]
    defaults: list[ast.expr | None] = [None] * (len(args) - len(a.defaults)) + list(a.defaults)
    doc = _docstring_types(ast.get_docstring(fn) or "")
    usage = _Usage({x.arg for x in args})
    for stmt in fn.body:
        usage.visit(stmt)
    scope = Scope(module_text)
    out = []
    for arg, default in zip(args, defaults, strict=True):
        out.append(
            _param(arg, default, doc.get(arg.arg), usage.seen.get(arg.arg, []), aliases, scope)
        )
    return Kinds(tuple(out))


def _param(
    arg: ast.arg,
    default: ast.expr | None,
    doc: str | None,
    usage: list[tuple[str, frozenset[str]]],
    aliases: dict[str, Any],
    scope: Scope,
) -> ParamKinds:
    evidence: list[str] = []
    kinds: list[str] = []
    optional = False
    if arg.annotation is not None:
        try:
            hinted, optional = _hint_kinds(resolve_hint(arg.annotation, aliases))
            kinds = hinted
            evidence.append(f"hint {ast.unparse(arg.annotation)}")
        except (HintError, TypeError):
            pass
    if not kinds and doc:
        kinds, optional = _text_kinds(doc)
        if kinds:
            evidence.append(f"docstring: {doc}")
    default_kind = None
    if default is not None:
        try:
            scope.admit(default)
            default_kind = kind_of(SeedEvaluator(scope, {}).value(default, 0))
        except Exception:
            default_kind = None
        if default_kind == "none":
            optional = True
            evidence.append("default None")
        elif default_kind in KINDS and not kinds:
            kinds = [default_kind]
            evidence.append(f"default {_text(default)}")
    if not kinds and usage:
        strong = [k for _, k in usage]
        both = frozenset.intersection(*strong)
        kinds = _ordered(both or frozenset.union(*strong))
        evidence += [what for what, _ in usage][:4]
    if not kinds:
        kinds = list(_FALLBACK)
        evidence.append("nothing says: tried broadly")
    if any(k in _NUMBER for k in kinds):  # a number tries int and float
        kinds += [k for k in ("int", "float") if k not in kinds]
    if optional and "none" not in kinds:
        kinds.append("none")
    return ParamKinds(arg.arg, tuple(dict.fromkeys(kinds)), tuple(evidence))


def _ordered(kinds: frozenset[str]) -> list[str]:
    return [k for k in (*KINDS, "list[str]") if k in kinds]


def _hint_kinds(hint: Any) -> tuple[list[str], bool]:
    """The kinds a resolved type hint names, and whether it allows ``None``."""
    origin = typing.get_origin(hint)
    if origin is typing.Union:
        out: list[str] = []
        optional = False
        for part in typing.get_args(hint):
            kinds, opt = _hint_kinds(part)
            out += kinds
            optional = optional or opt
        return out, optional
    if hint is type(None):
        return [], True
    base = origin or hint
    names = {
        int: "int",
        float: "float",
        str: "str",
        bool: "bool",
        bytes: "bytes",
        list: "list",
        dict: "dict",
        tuple: "tuple",
        set: "set",
        frozenset: "set",
    }
    if base in names:
        kind = names[base]
        if kind == "list" and typing.get_args(hint) == (str,):
            kind = "list[str]"
        return [kind], False
    text = str(base).lower()
    for word, kind in (("sequence", "list"), ("iterable", "list"), ("mapping", "dict")):
        if word in text:
            return [kind], False
    return [], False


def _text_kinds(text: str) -> tuple[list[str], bool]:
    """Kinds from a docstring's type text: ``int``, ``list of str``, ``int or float, optional``,
    ``Optional[List[int]]``."""
    clean = text.strip().strip("`")
    try:
        return _hint_kinds(resolve_hint(ast.parse(clean, mode="eval").body))
    except (SyntaxError, HintError, TypeError, ValueError, RecursionError):
        pass
    words = re.findall(r"[a-z]+", clean.lower())
    optional = "optional" in words or "none" in words
    kinds: list[str] = []
    for i, w in enumerate(words):
        kind = _WORDS.get(w)
        if kind is None or kind == "none":
            continue
        if kind == "list" and i + 2 < len(words) and words[i + 1] == "of":
            item = _WORDS.get(words[i + 2])
            kinds.append("list[str]" if item == "str" else "list")
            break
        kinds += ["int", "float"] if kind == "number" else [kind]
    return list(dict.fromkeys(kinds)), optional


_GOOGLE = re.compile(r"^\s*\*{0,2}(\w+)\s*\(([^)]*)\)\s*:")
_NUMPY = re.compile(r"^\s*(\w+)\s*:\s*(\S.*)$")
_SPHINX_PARAM = re.compile(r":param\s+([^:]+?)\s+(\w+)\s*:")
_SPHINX_TYPE = re.compile(r":type\s+(\w+)\s*:\s*(.+)$")


def _docstring_types(doc: str) -> dict[str, str]:
    """Parameter name -> its type text, from Google, NumPy and Sphinx parameter sections."""
    out: dict[str, str] = {}
    section = False
    for line in doc.splitlines():
        stripped = line.strip()
        if m := _SPHINX_TYPE.search(line):
            out.setdefault(m.group(1), m.group(2).strip())
            continue
        if m := _SPHINX_PARAM.search(line):
            out.setdefault(m.group(2), m.group(1).strip())
            continue
        if stripped in ("Args:", "Arguments:", "Parameters:", "Parameters", "Keyword Args:"):
            section = True
            continue
        if section and (not stripped or set(stripped) == {"-"}):
            continue
        if section and stripped.endswith(":") and " " not in stripped:
            section = False  # the next section (Returns:)
            continue
        if section and stripped in ("Returns", "Raises", "Yields", "Examples", "Notes"):
            section = False
            continue
        if (section and (m := _GOOGLE.match(line))) or (
            section and (m := _NUMPY.match(line)) and not line.startswith(" " * 8)
        ):
            out.setdefault(m.group(1), m.group(2).strip())
    return out


class _Usage(ast.NodeVisitor):
    """How the body uses each parameter: (what, the kinds that allow it) per use."""

    def __init__(self, params: set[str]) -> None:
        self.params = params
        self.seen: dict[str, list[tuple[str, frozenset[str]]]] = {}

    def _param(self, node: ast.AST | None) -> str | None:
        return node.id if isinstance(node, ast.Name) and node.id in self.params else None

    def _add(self, name: str | None, what: str, kinds: Iterable[str]) -> None:
        if name is not None:
            self.seen.setdefault(name, []).append((what, frozenset(kinds)))

    def visit_BinOp(self, node: ast.BinOp) -> None:
        for side, other in ((node.left, node.right), (node.right, node.left)):
            name = self._param(side)
            if name is None:
                continue
            other_kind = _constant_kind(other)
            if other_kind in _NUMBER:
                if (isinstance(node.op, ast.Mult | ast.Add) and side is node.right) or isinstance(
                    node.op, ast.Mult
                ):
                    self._add(name, f"{_text(node)}", _NUMBER | {"str", "list"})
                elif isinstance(node.op, ast.Mod) and side is node.left:
                    self._add(name, f"{_text(node)}", _NUMBER | {"str"})
                else:
                    self._add(name, f"{_text(node)}", _NUMBER)
            elif other_kind in ("str", "list", "tuple") and isinstance(node.op, ast.Add):
                self._add(name, f"{_text(node)}", {other_kind})
            elif isinstance(node.op, ast.Pow | ast.FloorDiv | ast.Sub | ast.Div):
                self._add(name, f"{_text(node)}", _NUMBER)
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.USub | ast.UAdd):
            self._add(self._param(node.operand), _text(node), _NUMBER)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        kind = _constant_kind(node.value)
        if kind in _NUMBER and not isinstance(node.op, ast.Mult):
            self._add(self._param(node.target), _text(node), _NUMBER)
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        items = [node.left, *node.comparators]
        for k, op in enumerate(node.ops):
            left, right = items[k], items[k + 1]
            if isinstance(op, ast.In | ast.NotIn):
                self._add(self._param(right), f"... in {_text(right)}", _ITERABLE)
                continue
            if not isinstance(op, ast.Lt | ast.LtE | ast.Gt | ast.GtE | ast.Eq | ast.NotEq):
                continue
            for side, other in ((left, right), (right, left)):
                name = self._param(side)
                kind = _constant_kind(other)
                what = _text(node)
                if kind in _NUMBER:
                    self._add(name, what, _NUMBER)
                elif kind is not None and kind != "none":
                    self._add(name, what, {kind})
                elif kind is None and not isinstance(op, ast.Eq | ast.NotEq):
                    self._add(name, what, _ORDERED)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        name = self._param(node.value)
        index = node.slice
        kind = _constant_kind(index)
        if not isinstance(node.ctx, ast.Load):  # x[k] = v: a list or a dict
            self._add(name, f"{_text(node)} = ...", {"list", "dict"})
        elif isinstance(index, ast.Slice) or kind == "int":
            self._add(name, f"{_text(node)}", _SEQUENCE)
        elif kind == "str":
            self._add(name, f"{_text(node)}", _MAPPING)
        else:
            self._add(name, f"{_text(node)}", _SEQUENCE | _MAPPING)
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:
        self._add(self._param(node.iter), f"for ... in {_text(node.iter)}", _ITERABLE)
        self.generic_visit(node)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self._add(self._param(node.iter), f"for ... in {_text(node.iter)}", _ITERABLE)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        what = _text(node)
        if isinstance(func, ast.Attribute):
            name = self._param(func.value)
            method = func.attr
            if method in _STR_METHODS:
                self._add(name, what, {"str"})
            elif method in _LIST_METHODS:
                self._add(name, what, {"list"})
            elif method in _DICT_METHODS:
                self._add(name, what, {"dict"})
            elif method in _SET_METHODS:
                self._add(name, what, {"set"})
            elif method in _SHARED_METHODS:
                self._add(name, what, _SHARED_METHODS[method])
            owner = func.value
            if isinstance(owner, ast.Name) and owner.id in _NUMERIC_MODULES:
                for arg in node.args:
                    self._add(self._param(arg), what, _NUMBER)
            if method == "join" and node.args:
                self._add(self._param(node.args[0]), what, {"list[str]", "str"})
        elif isinstance(func, ast.Name):
            if func.id in self.params:
                self._add(func.id, what, {"callable"})
            args = [self._param(arg) for arg in node.args]
            if func.id == "len" and args:
                self._add(args[0], what, _SIZED)
            elif func.id in _NUMERIC_CALLS:
                for param in args:
                    self._add(param, what, _NUMBER)
            elif func.id in _ITERABLE_CALLS and len(args) == 1:
                self._add(args[0], what, _ITERABLE)
            elif func.id == "isinstance" and len(node.args) == 2:
                self._isinstance(args[0], node.args[1], what)
        self.generic_visit(node)

    def _isinstance(self, name: str | None, types: ast.expr, what: str) -> None:
        parts = types.elts if isinstance(types, ast.Tuple) else [types]
        kinds: list[str] = []
        for part in parts:
            try:
                kinds += _hint_kinds(resolve_hint(part))[0]
            except (HintError, TypeError):
                return
        if kinds:
            self._add(name, what, kinds)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        return  # a nested function's names are its own

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        return


def _text(node: ast.AST) -> str:
    """A short text of a use, for the evidence (never the whole of a large expression)."""
    if getattr(node, "end_lineno", None) == getattr(node, "lineno", 0) and (
        getattr(node, "end_col_offset", 0) - getattr(node, "col_offset", 0) <= 40
    ):
        try:
            return ast.unparse(node)
        except (RecursionError, ValueError):
            pass
    return f"{type(node).__name__.lower()} on line {getattr(node, 'lineno', '?')}"


def _constant_kind(node: ast.AST) -> str | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        node = node.operand
    if isinstance(node, ast.Constant):
        value = node.value
        if value is None:
            return "none"
        if isinstance(value, bool):
            return "bool"
        return {int: "int", float: "float", str: "str", bytes: "bytes"}.get(type(value))
    if isinstance(node, ast.List | ast.ListComp):
        return "list"
    if isinstance(node, ast.Tuple):
        return "tuple"
    return None


# -- trial on the base -------------------------------------------------------------------------

_FUNCTIONS = (
    SourceFunction("", "abs"),
    SourceFunction("", "len"),
    SourceFunction("", "str"),
    SourceFunction("lambda *a: a[0] if a else None", "<lambda>"),
)
_SMALL_INTS = st.integers(-20, 20)
_TEXT = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=8)


def kind_strategy(kind: str) -> st.SearchStrategy[Any]:
    """Small, ordinary values of one candidate kind (a trial, not a search for corners)."""
    strategies: dict[str, st.SearchStrategy[Any]] = {
        "int": st.one_of(_SMALL_INTS, _SMALL_INTS, st.integers(-1000, 1000)),
        "float": st.one_of(
            _SMALL_INTS.map(lambda n: n / 2),
            st.floats(-100, 100, allow_nan=False, allow_infinity=False),
        ),
        "str": _TEXT,
        "list": st.lists(_SMALL_INTS, max_size=6),
        "list[str]": st.lists(_TEXT, max_size=5),
        "dict": st.dictionaries(st.text("abcxyz", min_size=1, max_size=3), _SMALL_INTS, max_size=4),
        "tuple": st.lists(_SMALL_INTS, max_size=5).map(tuple),
        "set": st.sets(_SMALL_INTS, max_size=5),
        "bool": st.booleans(),
        "none": st.none(),
        "bytes": st.binary(max_size=8),
        "callable": st.sampled_from(_FUNCTIONS),
    }
    return strategies.get(kind, st.nothing())


_BLAMED = frozenset({"TypeError", "AttributeError"})


def try_kinds(
    sandbox: Sandbox,
    base: Reference,
    kinds: Kinds,
    seeds: Sequence[Sequence[Any]],
    limits: Limits,
    *,
    seed: int = 0,
    per_kind: int = 8,
) -> KindTrial:
    """Run inputs of each candidate kind of the parameters no seed covers on ``base`` (the
    other parameters take the seeds' values): kinds whose inputs all raise ``TypeError`` or
    ``AttributeError`` there are dropped; the inputs it returned on are the new seeds.

    Two batches: candidates drawn at random for every such parameter, then each kind not yet
    accepted put alone into inputs the base returned on (so that another parameter's wrong
    kind is not blamed on it)."""
    trial = KindTrial()
    todo = kinds.uncovered(seeds)
    if not todo:
        return trial
    parts: list[st.SearchStrategy[Any]] = []
    for i, p in enumerate(kinds.params):
        if i in todo:
            parts.append(st.one_of(*(kind_strategy(k) for k in p.kinds)))
        else:
            values = [s[i] for s in seeds if len(s) > i]
            parts.append(st.sampled_from(values) if values else st.none())
    count = min(120, max(24, per_kind * sum(len(kinds.params[i].kinds) for i in todo)))
    inputs = _distinct(tuple(v) for v in draw(st.tuples(*parts), count, seed))
    state = _TrialState(todo)
    trial.load_error = _run(sandbox, base, inputs, limits, state)
    if trial.load_error is None and state.returned:
        again = []
        for i in todo:
            for k in kinds.params[i].kinds:
                if kind_of_label(k) in state.accepted[i]:
                    continue
                values = draw(kind_strategy(k), 3, seed + i)
                for n, value in enumerate(values):
                    args = list(state.returned[n % len(state.returned)])
                    args[i] = value
                    again.append(tuple(args))
        if again:
            trial.load_error = _run(sandbox, base, _distinct(again), limits, state)
    trial.tried = state.tried
    trial.seeds = state.returned or state.raised
    for i in todo:
        name = kinds.params[i].name
        trial.kept[name] = [k for k in KINDS if k in state.accepted[i]]
        trial.dropped[name] = [k for k in KINDS if k in state.seen[i] - state.accepted[i]]
    return trial


def kind_of_label(label: str) -> str:
    """The :func:`~utdebug.synth.values.kind_of` of a candidate's values (``list[str]``:
    ``list``)."""
    return label.split("[")[0]


def _distinct(inputs: Iterable[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return list({input_key(x): x for x in inputs}.values())


class _TrialState:
    """The kinds seen and accepted at each tried position, and the inputs the base took."""

    def __init__(self, todo: list[int]) -> None:
        self.todo = todo
        self.seen: dict[int, set[str]] = {i: set() for i in todo}
        self.accepted: dict[int, set[str]] = {i: set() for i in todo}
        self.returned: list[tuple[Any, ...]] = []
        self.raised: list[tuple[Any, ...]] = []
        self.tried = 0


def _run(
    sandbox: Sandbox,
    base: Reference,
    inputs: list[tuple[Any, ...]],
    limits: Limits,
    state: _TrialState,
) -> str | None:
    """Run ``inputs`` on the base and record what it accepted; its load error, if any."""
    if not inputs:
        return None
    outcomes, load_error, _, _ = run_chosen(sandbox, base, inputs, range(len(inputs)), limits)
    if load_error:
        return load_error
    state.tried += len(inputs)
    for k, args in enumerate(inputs):
        o = outcomes[k]
        blamed = o.status is Status.ERROR and o.error_type in _BLAMED
        for i in state.todo:
            label = kind_of(args[i])
            state.seen[i].add(label)
            if not blamed:
                state.accepted[i].add(label)
        if o.status is Status.OK:
            state.returned.append(args)
        elif o.status is Status.ERROR and not blamed:
            state.raised.append(args)
    return None
