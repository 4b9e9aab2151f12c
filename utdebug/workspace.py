"""The user's own code on disk: find and load one function or method of a file for the engine.

Front ends point utdebug at ``path/to/file.py::name``: :func:`parse_target` splits it and
:func:`load_function` reads the file (UTF-8), parses it and finds the target: a module-level
function, any member of a module-level class (its kind: :mod:`utdebug.engine.target_kinds`),
or a nested function debugged through the one that defines it. Classes, methods of nested
classes and unknown names are refused with a message that says what to do. :class:`LoadedFunction`
carries the target's source, lines, signature, description and ``module_code`` (what the
engine runs: the module without its ``__main__`` block). Writing a fix back is
:mod:`utdebug.writeback`, the pytest export :mod:`utdebug.pytest_export`, and how the
sandbox loads the module :mod:`utdebug.project`.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from utdebug.agents.edit_ast import is_main_guard
from utdebug.engine.model import Task
from utdebug.engine.target_kinds import Def, classify, first_line, is_property_getter

__all__ = [
    "LoadedFunction",
    "WorkspaceError",
    "find_target",
    "load_function",
    "load_text",
    "parse_module",
    "parse_target",
    "read_bytes",
    "split_lines",
]

MAX_LISTED_NAMES = 10
"""How many of the file's function names a "not found" message lists."""

_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
"""One line with its ending; the same line breaks as the Python tokenizer (not splitlines)."""


class WorkspaceError(ValueError):
    """A target, file, function or edit that this module cannot handle; the message says why."""


# --- targets ----------------------------------------------------------------------------------


def parse_target(spec: str) -> tuple[Path, str]:
    """Split ``"path/to/file.py::name"`` (``name`` may be ``Class.method`` or ``outer.inner``)."""
    text = spec.strip()
    if "::" not in text:
        raise WorkspaceError(
            f"target {spec!r} has no '::': write it as path/to/file.py::function_name"
        )
    path_text, _, qualname = text.rpartition("::")
    path_text, qualname = path_text.strip(), qualname.strip()
    if not path_text:
        raise WorkspaceError(f"target {spec!r} has no file before '::'")
    if not qualname:
        raise WorkspaceError(f"target {spec!r} has no function name after '::'")
    path = Path(path_text)
    if path.suffix != ".py":
        raise WorkspaceError(f"target file {path_text!r} is not a Python file (.py)")
    parts = qualname.split(".")
    if any(not part for part in parts):
        raise WorkspaceError(f"function name {qualname!r} has an empty part")
    bad = [part for part in parts if not part.isidentifier()]
    if bad:
        raise WorkspaceError(f"function name {qualname!r}: {bad[0]!r} is not a Python name")
    return path, qualname


# --- loading ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LoadedFunction:
    """One function of a file on disk, ready for the engine (see the module docstring)."""

    path: Path
    qualname: str
    entry_point: str
    source: str
    """The function's text, decorators included (dedented for a staticmethod)."""
    module_code: str
    """What the engine runs: the module without its ``__main__`` block (+ the staticmethod)."""
    signature: str
    docstring: str
    description: str
    start_line: int
    """First line of the function in the file (its first decorator), 1-based."""
    end_line: int
    """Last line of the function in the file, 1-based, inclusive."""
    file_text: str
    """The whole file as loaded."""
    file_sha256: str
    """sha256 of the file's bytes as loaded (write_back refuses when it changed)."""
    indent: str = ""
    """The function's indentation in the file (a staticmethod's class body indent)."""
    class_name: str | None = None
    """The class of a method (of any kind), else ``None``."""
    task: str | None = None
    """The ``task`` text given to :func:`load_function`."""
    kind: str = "function"
    """What the target is (a :class:`~utdebug.engine.target_kinds.TargetKind` value)."""
    program: bool = False
    """Its tests are programs (setup, call, expected outcome), not literal arguments."""
    context: str | None = None
    """What a test writer needs besides the code (:func:`target_context`)."""
    through: str | None = None
    """The nested function named in the target when it is debugged through this one."""

    def to_task(self) -> Task:
        return Task(
            task_id=f"{self.path.name}::{self.qualname}",
            description=self.description,
            signature=self.signature,
            entry_point=self.entry_point,
            code=self.module_code,
            class_name=self.class_name,
            program=self.program,
            context=self.context,
            target_kind=self.kind,
        )


def load_function(path: Path, qualname: str, *, task: str | None = None) -> LoadedFunction:
    """Read ``path`` and find the function ``qualname`` in it (see the module docstring)."""
    path = Path(path)
    raw = read_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WorkspaceError(
            f"{path} is not UTF-8 text (invalid byte at position {exc.start})"
        ) from None
    return load_text(path, qualname, text, hashlib.sha256(raw).hexdigest(), task)


def read_bytes(
    path: Path,
    *,
    name: str | Path | None = None,
    missing: str | None = None,
    kind: str = "a Python file",
    error: Callable[[str], Exception] = WorkspaceError,
) -> bytes:
    """``path``'s bytes, or ``error`` with a one-line message that says why they cannot be read.

    ``name`` is how the messages show the file (``path`` itself by default), ``missing`` the
    whole message for a file that does not exist, ``kind`` what the file should have been.
    """
    shown = path if name is None else name
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise error(missing or f"file not found: {shown}") from None
    except IsADirectoryError:
        raise error(f"{shown} is a folder, not {kind}") from None
    except OSError as exc:
        raise error(f"cannot read {shown}: {exc.strerror or exc}") from None


def parse_module(text: str, where: str) -> ast.Module:
    """``ast.parse`` with a :class:`WorkspaceError` that names the line and column."""
    try:
        return ast.parse(text, filename=where)
    except SyntaxError as exc:
        line = f"line {exc.lineno}" if exc.lineno is not None else "unknown line"
        if exc.lineno is not None and exc.offset is not None:
            line += f", column {exc.offset}"
        raise WorkspaceError(f"cannot parse {where}: {line}: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:  # null bytes (3.11), deep nesting
        raise WorkspaceError(f"cannot parse {where}: {exc}") from None


def load_text(path: Path, qualname: str, text: str, sha: str, task: str | None) -> LoadedFunction:
    tree = parse_module(text, str(path))
    found = _find(tree, qualname, path)
    node, class_node = found.node, found.class_node
    lines = split_lines(text)
    start = first_line(node)
    end = node.end_lineno or node.lineno
    indent = _indent_of(lines[node.lineno - 1])
    source = "".join(_dedent(lines[start - 1 : end], indent))
    docstring = ast.get_docstring(node) or ""
    signature = _signature(node)
    if class_node is not None and found.program:
        signature = f"{class_node.name}.{signature}"
    if task and task.strip() and docstring:
        description = f"{task.strip()}\n\n{docstring}"
    elif task and task.strip():
        description = task.strip()
    else:
        description = docstring or f"Implement `{signature}`."
    module_code = _module_code(tree, lines)
    program = found.program
    if class_node is not None and not program:  # a staticmethod tested with literals
        kept = _without_staticmethod(node, lines, start, end)
        module_code = _append_function(module_code, "".join(_dedent(kept, indent)))
    if found.through is not None:
        description = f"{description}\n\n(Debugged through its enclosing function: the bug "
        description += f"may be in the nested function {found.through}.)"
    return LoadedFunction(
        path=path,
        qualname=qualname,
        entry_point=node.name,
        source=source,
        module_code=module_code,
        signature=signature,
        docstring=docstring,
        description=description,
        start_line=start,
        end_line=end,
        file_text=text,
        file_sha256=sha,
        indent=indent,
        class_name=class_node.name if class_node is not None else None,
        task=task,
        kind=found.kind,
        program=program,
        context=target_context(tree, text, node, class_node) if program else None,
        through=found.through,
    )


@dataclass(frozen=True, slots=True)
class Target:
    """A definition a test can call, as :func:`find_target` found it."""

    node: Def
    class_node: ast.ClassDef | None
    kind: str
    program: bool
    """Tested with programs (setup + call); ``False``: literal arguments, as the paper."""
    through: str | None = None
    """The nested function the person named, when this is its enclosing function."""


def find_target(tree: ast.Module, qualname: str, path: Path) -> Target:
    """The target ``qualname`` names in ``tree`` (a :class:`WorkspaceError` says why not)."""
    return _find(tree, qualname, path)


def _find(tree: ast.Module, qualname: str, path: Path) -> Target:
    parts = qualname.split(".")
    top = _last_named(tree.body, parts[0])
    if top is None:
        raise WorkspaceError(_not_found(tree, qualname, path))
    if isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef):
        if len(parts) == 1:
            return _target(top, None)
        return _through(top, None, parts[1:], qualname, path)
    if len(parts) == 1:
        listed = ", ".join(_members(top)[:MAX_LISTED_NAMES]) or "none"
        raise WorkspaceError(
            f"{qualname} in {path} is a class, not a function: name one of its methods as "
            f"{top.name}.method (its methods: {listed})"
        )
    member = _member(top, parts[1])
    if member is None:
        inner = _last_named(top.body, parts[1])
        if isinstance(inner, ast.ClassDef):
            raise WorkspaceError(
                f"{qualname} in {path}: methods of nested classes are not supported: name a "
                f"method of a module-level class ({top.name}.method)"
            )
        listed = ", ".join(_members(top)[:MAX_LISTED_NAMES]) or "none"
        raise WorkspaceError(
            f"class {top.name} in {path} has no method {parts[1]!r} (its methods: {listed})"
        )
    if len(parts) == 2:
        return _target(member, top)
    return _through(member, top, parts[2:], qualname, path)


def _through(
    node: Def, cls: ast.ClassDef | None, rest: list[str], qualname: str, path: Path
) -> Target:
    """A nested function, debugged through the function (or method) that defines it."""
    scope: ast.AST = node
    for name in rest:
        inner = next(
            (
                n
                for n in ast.walk(scope)
                if n is not scope
                and isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                and n.name == name
            ),
            None,
        )
        if inner is None:
            raise WorkspaceError(f"no function {qualname!r} in {path}: {name!r} is not in it")
        scope = inner
    target = _target(node, cls)
    return Target(target.node, target.class_node, target.kind, target.program, qualname)


def _member(cls: ast.ClassDef, name: str) -> Def | None:
    """The method ``name`` of ``cls``: the last definition, except that a property's getter
    is preferred over its setter and deleter (``@x.setter`` redefines ``x``)."""
    defs = [n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    named = [n for n in defs if n.name == name]
    if not named:
        return None
    getters = [n for n in named if is_property_getter(n)]
    return getters[-1] if getters else named[-1]


def _members(cls: ast.ClassDef) -> list[str]:
    names = [n.name for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    return list(dict.fromkeys(names))


def _target(node: Def, cls: ast.ClassDef | None) -> Target:
    found = classify(node, in_class=cls is not None)
    program = not found.literal_args or _takes_objects(node)
    return Target(node, cls, found.kind.value, program)


_LITERAL_TYPES = frozenset(
    [
        "int",
        "float",
        "str",
        "bool",
        "bytes",
        "complex",
        "list",
        "dict",
        "tuple",
        "set",
        "frozenset",
        "None",
        "NoneType",
        "Any",
        "object",
        "Optional",
        "Union",
        "List",
        "Dict",
        "Tuple",
        "Set",
        "FrozenSet",
        "Sequence",
        "MutableSequence",
        "Iterable",
        "Mapping",
        "MutableMapping",
        "Collection",
        "Literal",
        "typing",
        "Final",
    ]
)


def _takes_objects(node: Def) -> bool:
    """Whether a parameter's (or the return value's) annotation names a type that is not a
    literal's (a ``Path``, a ``datetime``, a class of the module): such a function is tested
    with programs."""
    args = node.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    annotations = [p.annotation for p in params if p is not None] + [node.returns]
    for found in annotations:
        if found is None:
            continue
        ann: ast.expr = found
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            try:
                ann = ast.parse(ann.value, mode="eval").body
            except SyntaxError:
                continue
        for n in ast.walk(ann):
            if isinstance(n, ast.Name) and n.id not in _LITERAL_TYPES:
                return True
            if isinstance(n, ast.Attribute) and n.attr not in _LITERAL_TYPES:
                return True
    return False


def target_context(
    tree: ast.Module, text: str, node: Def, cls: ast.ClassDef | None, limit: int = 6000
) -> str:
    """What a test writer needs besides the target's code: the module's imports; for a method,
    its class (docstring, class-level fields, ``__init__``, the other methods' signatures and
    docstrings, the whole of the methods the target calls on ``self``/``cls``); for a function,
    the module's classes its annotations name. At most ``limit`` characters."""
    parts: list[str] = []
    imports = [
        ast.get_source_segment(text, n) or ""
        for n in tree.body
        if isinstance(n, ast.Import | ast.ImportFrom)
    ]
    if imports:
        parts.append("# the module's imports\n" + "\n".join(imports))
    if cls is not None:
        parts.append(_class_outline(text, cls, node))
    else:
        classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        wanted: list[str] = []
        for a in ast.walk(node.args):
            if isinstance(a, ast.Name) and a.id in classes and a.id not in wanted:
                wanted.append(a.id)
            if isinstance(a, ast.Constant) and isinstance(a.value, str):
                wanted += [c for c in classes if re.search(rf"\b{c}\b", a.value)]
        for name in dict.fromkeys(wanted):
            parts.append(ast.get_source_segment(text, classes[name]) or "")
    out = "\n\n".join(p for p in parts if p.strip())
    if len(out) > limit:
        out = out[: limit - 20].rstrip() + "\n# ... (cut)"
    return out


def _class_outline(text: str, cls: ast.ClassDef, target: Def) -> str:
    bases = ", ".join(ast.unparse(b) for b in [*cls.bases, *cls.keywords])
    decorators = "".join(f"@{ast.unparse(d)}\n" for d in cls.decorator_list)
    lines = [f"{decorators}class {cls.name}{f'({bases})' if bases else ''}:"]
    doc = ast.get_docstring(cls)
    if doc:
        lines.append(f'    """{doc}"""')
    called = {
        n.func.attr
        for n in ast.walk(target)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id in ("self", "cls")
    }
    for item in cls.body:
        if isinstance(item, ast.Expr) and isinstance(item.value, ast.Constant):
            continue  # the docstring
        if item is target:
            lines.append(f"    # ... {target.name}: the code under test, shown above")
            continue
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
            if item.name == "__init__" or item.name in called:
                seg = _segment(text, item)
                lines.append(seg)
                continue
            head = "".join(f"    @{ast.unparse(d)}\n" for d in item.decorator_list)
            prefix = "async def" if isinstance(item, ast.AsyncFunctionDef) else "def"
            sig = f"{prefix} {_signature(item)}:"
            body = ast.get_docstring(item)
            doc_line = f'\n        """{body}"""' if body else ""
            lines.append(f"{head}    {sig}{doc_line}\n        ...")
        elif isinstance(item, ast.Assign | ast.AnnAssign):
            lines.append("    " + (ast.get_source_segment(text, item) or ast.unparse(item)))
    return "\n".join(lines)


def _segment(text: str, node: Def) -> str:
    lines = split_lines(text)
    start = first_line(node)
    return "".join(lines[start - 1 : node.end_lineno or node.lineno]).rstrip()


def _last_named(
    body: list[ast.stmt], name: str
) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None:
    """The definition Python would bind last under ``name`` (a later ``def`` wins)."""
    found = None
    for node in body:
        if (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and node.name == name
        ):
            found = node
    return found


def _not_found(tree: ast.Module, qualname: str, path: Path) -> str:
    nested = _nested_definition(tree, qualname.split(".")[-1])
    if nested is not None:
        line, what = nested
        return f"{path}:{line}: {what} ({_debuggable_list(tree)})"
    candidates = _debuggable(tree)
    message = f"no function {qualname!r} in {path}"
    close = difflib.get_close_matches(qualname, candidates, n=3)
    if close:
        message += f"; did you mean {' or '.join(close)}?"
    return message + f" ({_debuggable_list(tree)})"


def _debuggable(tree: ast.Module) -> list[str]:
    """The names this module can debug, in file order: module-level functions (sync, async,
    generators) and every method of a module-level class (``Class.method``: instance methods
    with dunders, classmethods, staticmethods, properties). A nested function is debugged
    through its enclosing function (``outer.inner``), which is listed."""
    names = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.append(node.name)
        elif isinstance(node, ast.ClassDef):
            names += [f"{node.name}.{m}" for m in _members(node)]
    return list(dict.fromkeys(names))


def _debuggable_list(tree: ast.Module) -> str:
    names = _debuggable(tree)
    if not names:
        return "the file has no function or method utdebug can debug"
    listed = ", ".join(names[:MAX_LISTED_NAMES])
    more = len(names) - MAX_LISTED_NAMES
    return f"functions that can be debugged: {listed}{f', and {more} more' if more > 0 else ''}"


def _nested_definition(tree: ast.Module, name: str) -> tuple[int, str] | None:
    """Where a function ``name`` that is not at module level is, and how to name it."""
    found: list[tuple[list[ast.AST], ast.FunctionDef | ast.AsyncFunctionDef]] = []

    def visit(node: ast.AST, parents: list[ast.AST]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) and child.name == name:
                found.append((parents, child))
            visit(child, [*parents, child] if _is_scope(child) else parents)

    visit(tree, [])
    if not found:
        return None
    parents, node = found[0]
    where = ".".join(
        p.name
        for p in parents
        if isinstance(p, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
    )
    if any(isinstance(p, ast.ClassDef) for p in parents[1:]):
        return node.lineno, (
            f"{name} is in the nested class {where}: methods of nested classes are not supported"
        )
    return node.lineno, f"{name} is defined in {where}: name it {where}.{name}"


def _is_scope(node: ast.AST) -> bool:
    return isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)


def _is_staticmethod(decorator: ast.expr) -> bool:
    return isinstance(decorator, ast.Name) and decorator.id == "staticmethod"


def split_lines(text: str) -> list[str]:
    return _LINE_RE.findall(text)


def _newline(text: str) -> str:
    match = re.search(r"\r\n|\r|\n", text)
    return match.group(0) if match else "\n"


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _dedent(lines: Sequence[str], indent: str) -> list[str]:
    """Remove ``indent`` from each line that has it (blank lines become empty)."""
    if not indent:
        return list(lines)
    out = []
    for line in lines:
        if line.startswith(indent):
            out.append(line[len(indent) :])
        elif not line.strip():
            out.append(line.lstrip(" \t"))
        else:
            out.append(line)
    return out


def _signature(node: Def) -> str:
    sig = f"{node.name}({ast.unparse(node.args)})"
    if node.returns is not None:
        sig += f" -> {ast.unparse(node.returns)}"
    return sig


def _module_code(tree: ast.Module, lines: list[str]) -> str:
    drop: set[int] = set()
    for node in tree.body:
        if is_main_guard(node):
            drop.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return "".join(line for i, line in enumerate(lines, start=1) if i not in drop)


def _without_staticmethod(node: Def, lines: list[str], start: int, end: int) -> list[str]:
    drop: set[int] = set()
    for d in node.decorator_list:
        if _is_staticmethod(d):
            drop.update(range(d.lineno, (d.end_lineno or d.lineno) + 1))
    return [lines[i - 1] for i in range(start, end + 1) if i not in drop]


def _append_function(module: str, function: str) -> str:
    module = module.rstrip("\r\n")
    return f"{module}\n\n\n{function.rstrip()}\n" if module else f"{function.rstrip()}\n"
