"""Expected values that are not literals: constructor calls and enum members read structurally.

:func:`expected_value` reads what :func:`utdebug.literals.literal_value` reads plus the
standard library's value types (``date(...)``, ``Decimal('1.5')``, ``Path('a/b')`` ...),
instances of the module's own classes (mapped to fields with the class's definition found with
``ast``) and enum members, never with ``eval``; :func:`expected_value_or_repr` falls back to
the expression's text.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Any

from utdebug.literals import (
    CALLS,
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_LENGTH,
    Evaluator,
    LiteralError,
    describe_node,
    dotted_name,
    literal_value,
    parse_expression,
)

__all__ = ["expected_value", "expected_value_or_repr"]


_MAX_NUMBER_BITS = 4300
"""Largest numerator or denominator (in bits) of a Fraction, and longest Decimal text."""
_ENUM_BASES = {"Enum", "Flag"}
_VALUE_ENUM_BASES = {"IntEnum", "StrEnum", "IntFlag", "ReprEnum"}
_DATACLASS_DECORATORS = {"dataclass", "dataclasses.dataclass"}
_ATTRS_DECORATORS = {
    "attr.s", "attr.attrs", "attr.define", "attr.frozen", "attr.mutable", "attr.dataclass",
    "attrs.define", "attrs.frozen", "attrs.mutable", "define", "frozen", "mutable", "attrs",
}  # fmt: skip
_ATTRS_FIELDS = {"attr.ib", "attr.attrib", "attrib", "attr.field", "attrs.field", "field"}
_MISSING: Any = object()


def expected_value(
    source: str,
    *,
    module_source: str | None = None,
    max_length: int = DEFAULT_MAX_LENGTH,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> Any:
    """Read an expected value written as a literal or as constructor calls, never with ``eval``.

    Accepted besides what :func:`literal_value` accepts (and nested inside lists, dicts ...):

    - the standard library's value types, built as the real objects: ``date(2024, 1, 2)``,
      ``datetime.datetime(2024, 1, 2, 3, tzinfo=timezone.utc)``, ``time(...)``,
      ``timedelta(days=1)``, ``date.fromisoformat('2024-01-02')``, ``Decimal('1.5')``,
      ``Fraction(1, 3)``, ``UUID('...')``, ``Path('a/b')`` (and the other path classes);
    - an instance of a class of the module, as :class:`~utdebug.sandbox.values.Structured`
      (class name + fields, compared as the sandbox reports the object): ``Point(x=1, y=2)``;
      positional arguments (``Point(1, 2)``) are mapped to fields with the class's definition,
      found with ``ast`` in ``module_source``: a dataclass's or attrs class's field order, a
      NamedTuple's fields (a namedtuple gives a :class:`~utdebug.sandbox.values.Record`,
      a tuple), or the ``__init__`` parameters it assigns to ``self.<attr>`` (keywords may
      also name the object's fields, as its repr writes them); without the source, only
      keyword arguments (taken as the fields) can be read;
    - an enum member ``Color.RED`` (:class:`~utdebug.sandbox.values.EnumMember`, or the
      member's value for an ``IntEnum``/``StrEnum`` of the module, as the sandbox reports it).

    The result compares equal (``sandbox.compare.outputs_match``) to what the sandbox returns
    for the same object. Anything else raises :class:`LiteralError` saying what it cannot read.
    """
    node = parse_expression(source, max_length).body
    classes = _ClassIndex(module_source, max_length) if module_source is not None else None
    return _ExpectedEvaluator(max_depth, classes).value(node, 0)


def expected_value_or_repr(
    source: str, *, module_source: str | None = None, max_length: int = DEFAULT_MAX_LENGTH
) -> Any:
    """:func:`expected_value`, or, for an expression it cannot read (``re.compile('a+')``),
    a :class:`~utdebug.sandbox.values.ByRepr` of its text as ``ast.unparse`` writes it: such
    an expected value is compared with the repr of a result the sandbox cannot encode. A
    syntax error or a text over the limits still raises :class:`LiteralError`."""
    from utdebug.sandbox.values import ByRepr

    node = parse_expression(source, max_length).body
    try:
        return expected_value(source, module_source=module_source, max_length=max_length)
    except LiteralError:
        try:
            return ByRepr(ast.unparse(node))
        except (ValueError, RecursionError):
            raise LiteralError("expression nested too deeply to read") from None


class _ClassInfo:
    """What the module's source says about one class: how a call to it maps to fields."""

    def __init__(self, kind: str, name: str) -> None:
        self.kind = kind  # enum | value-enum | namedtuple | dataclass | attrs | plain
        self.name = name
        self.fields: list[tuple[str, Any, bool, bool]] = []  # name, default, init, kw_only
        self.params: list[tuple[str, Any, str]] = []  # name, default, kind (pos|kw)
        self.assigns: list[tuple[str, str, Any]] = []  # attr, "param"|"value", name|value
        self.members: dict[str, ast.expr] = {}
        self.problem: str | None = None


def _dotted(node: ast.expr) -> str:
    name = dotted_name(node)
    return "" if name.startswith("<") else name


def _decorator_name(node: ast.expr) -> str:
    return _dotted(node.func if isinstance(node, ast.Call) else node)


class _ClassIndex:
    """The classes of a module's source, by qualified name, read with ``ast`` only."""

    def __init__(self, module_source: str, max_length: int) -> None:
        if len(module_source) > max_length:
            raise LiteralError("module source too long")
        try:
            tree = ast.parse(module_source)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            raise LiteralError("the module's source does not parse") from None
        self.defs: dict[str, ast.ClassDef] = {}
        self.namedtuples: dict[str, list[str]] = {}
        self._info: dict[str, _ClassInfo] = {}
        self._collect(tree.body, "")

    def _collect(self, body: list[ast.stmt], prefix: str) -> None:
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                qual = prefix + stmt.name
                self.defs[qual] = stmt
                self._collect(stmt.body, qual + ".")
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and not prefix:
                target, value = stmt.targets[0], stmt.value
                if isinstance(target, ast.Name) and isinstance(value, ast.Call):
                    fields = _namedtuple_fields(value)
                    if fields is not None:
                        self.namedtuples[target.id] = fields

    def find(self, dotted: str) -> tuple[str, _ClassInfo] | None:
        """The class a call names (``Point``, ``shapes.Point``, ``Outer.Point``)."""
        parts = dotted.split(".")
        for start in range(len(parts)):
            qual = ".".join(parts[start:])
            if qual in self.defs or qual in self.namedtuples:
                return qual, self.info(qual)
        return None

    def info(self, qual: str) -> _ClassInfo:
        if qual not in self._info:
            self._info[qual] = self._read(qual)
        return self._info[qual]

    def _base(self, node: ast.expr) -> _ClassInfo | None:
        name = _dotted(node)
        found = self.find(name) if name else None
        return found[1] if found is not None else None

    def _read(self, qual: str) -> _ClassInfo:
        if qual in self.namedtuples and qual not in self.defs:
            info = _ClassInfo("namedtuple", qual)
            info.fields = [(f, _MISSING, True, False) for f in self.namedtuples[qual]]
            return info
        node = self.defs[qual]
        self._info[qual] = _ClassInfo("plain", qual)  # a class that names itself as a base
        bases = [_dotted(b).rsplit(".", 1)[-1] for b in node.bases]
        decorators = [_decorator_name(d) for d in node.decorator_list]
        if any(b in _VALUE_ENUM_BASES for b in bases):
            return self._enum(node, qual, "value-enum")
        if any(b in _ENUM_BASES for b in bases):
            return self._enum(node, qual, "enum")
        base_infos = [i for i in (self._base(b) for b in node.bases) if i is not None]
        if any(i.kind in ("enum", "value-enum") for i in base_infos):
            kind = next(i.kind for i in base_infos if i.kind in ("enum", "value-enum"))
            return self._enum(node, qual, kind)
        if "NamedTuple" in bases:
            return self._annotated(node, qual, "namedtuple", [], kw_only=False)
        if any(d in _DATACLASS_DECORATORS for d in decorators):
            inherited = [f for i in base_infos if i.kind == "dataclass" for f in i.fields]
            return self._annotated(
                node, qual, "dataclass", inherited, kw_only=_keyword_true(node, "kw_only")
            )
        if any(d in _ATTRS_DECORATORS for d in decorators):
            inherited = [f for i in base_infos if i.kind == "attrs" for f in i.fields]
            return self._annotated(node, qual, "attrs", inherited, kw_only=False)
        return self._plain(node, qual, base_infos)

    def _enum(self, node: ast.ClassDef, qual: str, kind: str) -> _ClassInfo:
        info = _ClassInfo(kind, qual)
        for stmt in node.body:
            if isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        info.members[target.id] = stmt.value
        return info

    def _annotated(
        self,
        node: ast.ClassDef,
        qual: str,
        kind: str,
        inherited: list[tuple[str, Any, bool, bool]],
        kw_only: bool,
    ) -> _ClassInfo:
        info = _ClassInfo(kind, qual)
        fields = {f[0]: f for f in inherited}
        after_kw_marker = kw_only
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                annotation = _dotted(stmt.annotation) or _dotted(
                    getattr(stmt.annotation, "value", stmt.annotation)
                )
                if annotation.rsplit(".", 1)[-1] == "KW_ONLY":
                    after_kw_marker = True
                    continue
                if annotation.rsplit(".", 1)[-1] in ("ClassVar", "InitVar"):
                    continue
                fields[stmt.target.id] = _field_spec(
                    stmt.target.id, stmt.value, kind, after_kw_marker
                )
            elif (
                kind == "attrs"
                and isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Call)
                and _dotted(stmt.value.func) in _ATTRS_FIELDS
            ):
                name = stmt.targets[0].id
                fields[name] = _field_spec(name, stmt.value, kind, after_kw_marker)
        info.fields = list(fields.values())
        return info

    def _plain(self, node: ast.ClassDef, qual: str, bases: list[_ClassInfo]) -> _ClassInfo:
        info = _ClassInfo("plain", qual)
        init = next(
            (
                s
                for s in node.body
                if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and s.name == "__init__"
            ),
            None,
        )
        if init is None:
            for base in bases:  # the first base of the module that says how it is built
                if base.kind != "plain" or base.params or base.assigns or base.problem:
                    info.kind, info.fields, info.params = base.kind, base.fields, base.params
                    info.assigns, info.problem = base.assigns, base.problem
                    break
            return info
        args = init.args
        if args.vararg is not None or args.kwarg is not None:
            info.problem = f"{qual}.__init__ takes *args or **kwargs"
            return info
        positional = [*args.posonlyargs, *args.args][1:]
        defaults: list[Any] = [_MISSING] * (len(positional) - len(args.defaults))
        for d in args.defaults:
            defaults.append(_default_value(d))
        info.params = [(a.arg, d, "pos") for a, d in zip(positional, defaults, strict=True)]
        for a, kd in zip(args.kwonlyargs, args.kw_defaults, strict=True):
            info.params.append((a.arg, _default_value(kd), "kw"))
        owner = qual.rsplit(".", 1)[-1].lstrip("_")
        params = {p[0] for p in info.params}
        for stmt in init.body:
            targets: list[ast.expr] = []
            value: ast.expr | None = None
            if isinstance(stmt, ast.Assign):
                targets, value = stmt.targets, stmt.value
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                targets, value = [stmt.target], stmt.value
            elif _assigns_self(stmt):
                info.problem = f"{qual}.__init__ sets an attribute of self inside a block"
                return info
            elif (
                isinstance(stmt, ast.Expr)
                and isinstance(stmt.value, ast.Call)
                and _dotted(stmt.value.func).endswith("__init__")
            ):
                info.problem = f"{qual}.__init__ calls another __init__"
                return info
            for target in targets:
                if not (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    if _assigns_self(ast.Expr(value=target)):
                        info.problem = f"{qual}.__init__ sets self attributes by unpacking"
                        return info
                    continue
                attr = target.attr
                if attr.startswith("__") and not attr.endswith("__") and owner:
                    attr = f"_{owner}{attr}"
                assert value is not None
                if isinstance(value, ast.Name) and value.id in params:
                    info.assigns.append((attr, "param", value.id))
                else:
                    try:
                        info.assigns.append((attr, "value", literal_value(value)))
                    except LiteralError:
                        info.assigns.append((attr, "expr", ast.unparse(value)))
        return info


def _assigns_self(stmt: ast.AST) -> bool:
    for node in ast.walk(stmt):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ):
            return True
    return False


def _keyword_true(node: ast.ClassDef, name: str) -> bool:
    for d in node.decorator_list:
        if isinstance(d, ast.Call):
            for kw in d.keywords:
                if kw.arg == name and isinstance(kw.value, ast.Constant) and kw.value.value:
                    return True
    return False


def _default_value(node: ast.expr | None) -> Any:
    if node is None:
        return _MISSING
    try:
        return literal_value(node)
    except LiteralError:
        return _Unreadable(ast.unparse(node))


class _Unreadable:
    """A default the source gives as an expression this module does not compute."""

    def __init__(self, text: str) -> None:
        self.text = text


def _given(qual: str, what: str, name: str, value: Any, node: ast.AST, more: str) -> Any:
    """``value`` (given, or the default) of the field or argument ``name`` of a call to
    ``qual``; a :class:`LiteralError` when it is missing or its default is not a literal."""
    if value is _MISSING:
        raise LiteralError(f"{qual}() is missing the {what} `{name}`", node)
    if isinstance(value, _Unreadable):
        raise LiteralError(
            f"{qual}(): the default of `{name}` ({value.text}) is not a literal{more}", node
        )
    return value


def _field_spec(name: str, value: ast.expr | None, kind: str, kw_only: bool) -> tuple[Any, ...]:
    """(name, default, init, kw_only) of a dataclass or attrs field."""
    if isinstance(value, ast.Call) and _dotted(value.func).rsplit(".", 1)[-1] in (
        "field",
        "ib",
        "attrib",
    ):
        default: Any = _MISSING
        init = True
        for kw in value.keywords:
            if kw.arg == "default":
                default = _default_value(kw.value)
            elif kw.arg in ("default_factory", "factory"):
                factory = _dotted(kw.value)
                builtin = {"list": list, "dict": dict, "set": set, "tuple": tuple}
                default = builtin[factory]() if factory in builtin else _Unreadable(factory)
            elif kw.arg == "init" and isinstance(kw.value, ast.Constant):
                init = bool(kw.value.value)
            elif kw.arg == "kw_only" and isinstance(kw.value, ast.Constant):
                kw_only = bool(kw.value.value)
        return (name, default, init, kw_only)
    return (name, _default_value(value), True, kw_only)


def _namedtuple_fields(call: ast.Call) -> list[str] | None:
    """The field names of ``namedtuple('P', 'x y')`` / ``namedtuple('P', ['x', 'y'])``."""
    if _dotted(call.func).rsplit(".", 1)[-1] != "namedtuple" or len(call.args) < 2:
        return None
    try:
        spec = literal_value(call.args[1])
    except LiteralError:
        return None
    if isinstance(spec, str):
        spec = spec.replace(",", " ").split()
    if isinstance(spec, list | tuple) and all(isinstance(s, str) for s in spec):
        return list(spec)
    return None


_DATETIME_NAMES = {"date", "datetime", "time", "timedelta", "timezone"}


def _stdlib_name(dotted: str) -> str | None:
    """The standard library constructor a call names, in canonical form, or None."""
    plain = {
        "Decimal": "Decimal", "decimal.Decimal": "Decimal",
        "Fraction": "Fraction", "fractions.Fraction": "Fraction",
        "UUID": "UUID", "uuid.UUID": "UUID",
    }  # fmt: skip
    if dotted in plain:
        return plain[dotted]
    for path in ("Path", "PurePath", "PosixPath", "PurePosixPath", "WindowsPath",
                 "PureWindowsPath"):  # fmt: skip
        if dotted in (path, f"pathlib.{path}"):
            return path
    parts = dotted.split(".")
    if parts[0] in ("datetime", "dt") and len(parts) > 1:
        parts = parts[1:]
    if len(parts) == 1 and parts[0] in _DATETIME_NAMES:
        return parts[0]
    if len(parts) == 2 and parts[0] in ("date", "datetime", "time") and parts[1] == "fromisoformat":
        return f"{parts[0]}.fromisoformat"
    return None


class _ExpectedEvaluator(Evaluator):
    """:class:`Evaluator` plus constructor calls and enum members (see expected_value)."""

    def __init__(self, max_depth: int, classes: _ClassIndex | None) -> None:
        super().__init__(max_depth)
        self.classes = classes

    def _attribute(self, node: ast.Attribute, depth: int) -> Any:
        import datetime

        try:
            return super()._attribute(node, depth)
        except LiteralError:
            pass
        dotted = _dotted(node)
        if dotted in ("timezone.utc", "datetime.timezone.utc", "dt.timezone.utc", "datetime.UTC"):
            return datetime.UTC
        if not dotted or "." not in dotted:
            raise LiteralError(f"{describe_node(node)} is not allowed in a literal", node)
        owner, member = dotted.rsplit(".", 1)
        found = self.classes.find(owner) if self.classes is not None else None
        if found is None:
            if self.classes is not None and self.classes.defs:
                raise LiteralError(f"no enum class `{owner}` in the module for `{dotted}`", node)
            return self._struct().EnumMember(owner.rsplit(".", 1)[-1], member)
        qual, info = found
        if info.kind not in ("enum", "value-enum"):
            raise LiteralError(f"`{qual}` is not an enum class, for `{dotted}`", node)
        if member not in info.members:
            raise LiteralError(f"enum `{qual}` has no member `{member}`", node)
        if info.kind == "enum":
            return self._struct().EnumMember(qual, member)
        try:
            return literal_value(info.members[member])
        except LiteralError:
            raise LiteralError(
                f"the value of `{dotted}` is not a literal in the class's source", node
            ) from None

    @staticmethod
    def _struct() -> Any:
        from utdebug.sandbox import values

        return values

    def _call(self, node: ast.Call, depth: int) -> Any:
        dotted = _dotted(node.func)
        if isinstance(node.func, ast.Name) and dotted in CALLS:
            found = self.classes.find(dotted) if self.classes is not None else None
            if found is None:
                return super()._call(node, depth)
        if any(isinstance(arg, ast.Starred) for arg in node.args):
            raise LiteralError(f"starred argument in {describe_node(node)}", node)
        if any(kw.arg is None for kw in node.keywords):
            raise LiteralError(f"keyword unpacking in {describe_node(node)}", node)
        args = self._items(node.args, depth)
        kwargs = {kw.arg: self.value(kw.value, depth + 1) for kw in node.keywords if kw.arg}
        found = self.classes.find(dotted) if self.classes is not None and dotted else None
        if found is None:
            std = _stdlib_name(dotted)
            if std is not None:
                return _build_stdlib(std, args, kwargs, node)
        if found is not None:
            return self._instance(found[0], found[1], args, kwargs, node)
        last = dotted.rsplit(".", 1)[-1]
        if not last or not last[0].isupper():
            raise LiteralError(f"{describe_node(node)} is not allowed in a literal", node)
        if self.classes is not None and self.classes.defs:
            raise LiteralError(f"no class `{dotted}` in the module's source", node)
        if args:
            raise LiteralError(
                f"positional arguments of {last}() cannot be mapped to its fields without "
                "the class's source: write them as keywords",
                node,
            )
        return self._struct().Structured(last, tuple(kwargs.items()))

    def _instance(
        self, qual: str, info: _ClassInfo, args: list[Any], kwargs: dict[str, Any], node: ast.Call
    ) -> Any:
        compare = self._struct()
        if info.problem is not None:
            raise LiteralError(f"cannot read {qual}(): {info.problem}", node)
        if info.kind in ("enum", "value-enum"):
            raise LiteralError(f"call to enum class {qual}(): write the member", node)
        if info.kind == "plain":
            return compare.Structured(qual, self._plain_fields(qual, info, args, kwargs, node))
        init = [f for f in info.fields if f[2] and not f[3]]
        if len(args) > len(init):
            raise LiteralError(f"{qual}() takes at most {len(init)} positional arguments", node)
        values: dict[str, Any] = {f[0]: a for f, a in zip(init, args, strict=False)}
        for name, value in kwargs.items():
            spec = next((f for f in info.fields if f[0] == name and f[2]), None)
            if spec is None or name in values:
                raise LiteralError(f"{qual}() has no argument `{name}` to give", node)
            values[name] = value
        fields = []
        for name, default, _, _ in info.fields:
            value = values.get(name, default)
            fields.append((name, _given(qual, "field", name, value, node, "; give it")))
        if info.kind == "namedtuple":
            return compare.Record(
                tuple(v for _, v in fields), qual.rsplit(".", 1)[-1], [f[0] for f in fields]
            )
        return compare.Structured(qual, tuple(fields))

    def _plain_fields(
        self, qual: str, info: _ClassInfo, args: list[Any], kwargs: dict[str, Any], node: ast.Call
    ) -> tuple[tuple[str, Any], ...]:
        names = {p[0] for p in info.params}
        attrs = [a[0] for a in info.assigns]
        if not args and kwargs and not set(kwargs) <= names and set(kwargs) <= set(attrs):
            # Keywords naming the object's fields (as its repr writes them), not __init__'s.
            given: dict[str, Any] = {}
            for attr, how, what in info.assigns:
                if attr in kwargs:
                    given[attr] = kwargs[attr]
                elif how == "value":
                    given[attr] = what
                else:
                    raise LiteralError(f"{qual}() is missing the field `{attr}`", node)
            return tuple(given.items())
        positional = [p for p in info.params if p[2] == "pos"]
        if len(args) > len(positional):
            raise LiteralError(
                f"{qual}() takes at most {len(positional)} positional arguments", node
            )
        bound: dict[str, Any] = {p[0]: a for p, a in zip(positional, args, strict=False)}
        for name, value in kwargs.items():
            if name not in names or name in bound:
                raise LiteralError(f"{qual}() has no argument `{name}` to give", node)
            bound[name] = value
        for name, default, _ in info.params:
            if name not in bound:
                bound[name] = _given(qual, "argument", name, default, node, "")
        fields: dict[str, Any] = {}
        for attr, how, what in info.assigns:
            if how == "param":
                fields[attr] = bound[what]
            elif how == "value":
                fields[attr] = what
            else:
                raise LiteralError(
                    f"{qual}.__init__ sets self.{attr} = {what}, which is not read here", node
                )
        return tuple(fields.items())


def _build_stdlib(name: str, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
    import datetime
    import decimal
    import fractions
    import pathlib
    import uuid

    def ints_only(values: Iterable[Any]) -> None:
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int | float | datetime.tzinfo | None):
                raise LiteralError(f"{name}() of {type(v).__name__}", node)

    try:
        if name in ("date", "datetime", "time"):
            ints_only(args)
            ints_only(v for k, v in kwargs.items() if k != "tzinfo")
            tz = kwargs.get("tzinfo")
            if tz is not None and not isinstance(tz, datetime.timezone):
                raise LiteralError(f"{name}(): tzinfo must be a fixed offset (timezone)", node)
            cls = {"date": datetime.date, "datetime": datetime.datetime, "time": datetime.time}
            return cls[name](*args, **kwargs)
        if name == "timedelta":
            ints_only([*args, *kwargs.values()])
            return datetime.timedelta(*args, **kwargs)
        if name == "timezone":
            if not args or not isinstance(args[0], datetime.timedelta) or kwargs:
                raise LiteralError("timezone() takes a timedelta", node)
            return datetime.timezone(*args)
        if name.endswith(".fromisoformat"):
            if len(args) != 1 or not isinstance(args[0], str) or kwargs:
                raise LiteralError(f"{name}() takes one string", node)
            iso: dict[str, Any] = {
                "date": datetime.date,
                "datetime": datetime.datetime,
                "time": datetime.time,
            }
            return iso[name.split(".")[0]].fromisoformat(args[0])
        if name == "Decimal":
            if len(args) != 1 or kwargs or not isinstance(args[0], str | int | float):
                raise LiteralError("Decimal() takes one string or number", node)
            if isinstance(args[0], bool) or len(str(args[0])) > _MAX_NUMBER_BITS:
                raise LiteralError("Decimal() of this argument is not read", node)
            return decimal.Decimal(args[0])
        if name == "Fraction":
            if kwargs or not 1 <= len(args) <= 2:
                raise LiteralError("Fraction() takes one or two arguments", node)
            for a in args:
                if isinstance(a, bool) or not isinstance(a, int | str | float):
                    raise LiteralError(f"Fraction() of {type(a).__name__}", node)
                if isinstance(a, int) and a.bit_length() > _MAX_NUMBER_BITS:
                    raise LiteralError("Fraction() of a number too large to read", node)
                if isinstance(a, str) and len(a) > _MAX_NUMBER_BITS:
                    raise LiteralError("Fraction() of a text too long to read", node)
            return fractions.Fraction(*args)
        if name == "UUID":
            if args and len(args) == 1 and isinstance(args[0], str) and not kwargs:
                return uuid.UUID(args[0])
            if not args and set(kwargs) == {"int"} and isinstance(kwargs["int"], int):
                return uuid.UUID(int=kwargs["int"])
            raise LiteralError("UUID() takes one string (or int=...)", node)
        if kwargs or not all(isinstance(a, str) for a in args):
            raise LiteralError(f"{name}() takes strings", node)
        if name in ("Path", "PurePath"):
            cls_name = "PosixPath" if name == "Path" else "PurePosixPath"
            if pathlib.Path is pathlib.WindowsPath:  # pragma: no cover
                cls_name = cls_name.replace("Posix", "Windows")
            name = cls_name
        if name == "WindowsPath":
            name = "PureWindowsPath"  # cannot be made on POSIX; compares the same
        return getattr(pathlib, name)(*args)
    except LiteralError:
        raise
    except (TypeError, ValueError, OverflowError, ArithmeticError) as exc:
        raise LiteralError(f"{name}(): {exc}", node) from None
