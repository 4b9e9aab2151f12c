"""The user's own code on disk: load one function, write a fix back, export tests and patches.

The TUI (and any other front end) points utdebug at ``path/to/file.py::func``. This module
turns that into an engine :class:`~utdebug.engine.Task` and, once the engine found a fix,
puts the fix back into the file. It never runs the user's code itself (the engine runs
``module_code`` in the sandbox) and imports neither Textual nor litellm.

- :func:`parse_target` splits ``"path/to/file.py::name"`` into ``(Path, qualname)``; the name
  may be dotted (``Class.method``, ``outer.inner``) so that the loader can say precisely what
  is not supported.
- :func:`load_function` reads the file (UTF-8), parses it with :mod:`ast` and finds the
  function. Supported: a module-level ``def`` and a ``@staticmethod`` of a module-level class
  (it is treated as a plain function named after the method). Refused with a message that
  says what to do: ``async def``, other methods (move the logic into a module-level
  function), nested functions, classes, unknown names (the message lists up to 10 of the
  file's function names and suggests close matches). The result, :class:`LoadedFunction`,
  carries the function's exact source (decorators included, dedented for a staticmethod),
  its line range, signature, docstring, a description for the model (the ``task`` text,
  then the docstring) and ``module_code``: the code the engine runs, i.e. the whole module
  without its ``if __name__ == "__main__":`` block(s), so imports, constants and helpers are
  all there; for a staticmethod the dedented function (without ``@staticmethod``) is
  appended as a module-level function. :meth:`LoadedFunction.to_task` builds the Task. A
  sha256 of the file's bytes is kept to detect later edits on disk.
- :func:`write_back` writes a fix into the file. ``new_code`` is normally the session's code
  in force: ``module_code`` with the debugger's edits merged in
  (:mod:`utdebug.agents.edits`); it may also be a bare function or a model reply with prose
  and fenced code. It is merged into the file's text by the same rules, so everything the
  session judged is written (the function, and the imports, helpers and constants the edits
  added or changed) and the rest of the file stays byte for byte (its ``__main__`` block,
  which ``module_code`` omits, comments, line endings; a staticmethod keeps its decorators
  and indentation). A merge that changes nothing gives an empty diff. It refuses when the
  file changed on disk since loading, or with the merge's reason (the code does not parse,
  it renames the function ...). The write is atomic (temp file + :func:`os.replace`, file
  mode kept) and, by default, the original is kept as ``file.py.utdebug.bak`` (``.bak.1``,
  ``.bak.2``, ... when taken). It returns the unified diff, the backup path, the new text
  and the function loaded again from the new text (for a further fix).
  :func:`function_diff` gives the same diff without writing and :func:`export_patch` writes
  it to a file.
- :func:`export_pytest` writes a standalone pytest file that imports the function from the
  source file by absolute path (:func:`importlib.util.spec_from_file_location`, so it always
  tests what is in the file now) with one ``test_<entry>_<n>`` per unit test. Arguments and
  expected values are written with :func:`repr`; a test whose values do not round-trip
  through :func:`utdebug.literals.literal_value` is left out with a comment saying why.
  Float expectations use ``math.isclose(rel_tol=1e-6)`` (``math.isnan`` for NaN).
  :func:`render_pytest` returns the text and the counts without writing.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from utdebug.agents.edits import MergedEdit, is_main_guard, merge_edit, take_edit
from utdebug.engine import program
from utdebug.engine.model import Task, UnitTest
from utdebug.literals import LiteralError, literal_value

__all__ = [
    "LoadedFunction",
    "PytestExport",
    "WorkspaceError",
    "WriteResult",
    "export_patch",
    "export_pytest",
    "function_diff",
    "load_function",
    "parse_module",
    "parse_target",
    "render_pytest",
    "write_back",
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
    """What the target is (:data:`TARGET_KINDS`)."""
    program: bool = False
    """Its tests are programs (setup, call, expected outcome), not literal arguments."""
    context: str | None = None
    """What a test writer needs besides the code (:func:`target_context`)."""
    through: str | None = None
    """The nested function named in the target when it is debugged through this one."""

    @property
    def is_staticmethod(self) -> bool:
        return self.kind == "staticmethod"

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
    raw = _read_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WorkspaceError(
            f"{path} is not UTF-8 text (invalid byte at position {exc.start})"
        ) from None
    return _load_text(path, qualname, text, hashlib.sha256(raw).hexdigest(), task)


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise WorkspaceError(f"file not found: {path}") from None
    except IsADirectoryError:
        raise WorkspaceError(f"{path} is a folder, not a Python file") from None
    except OSError as exc:
        raise WorkspaceError(f"cannot read {path}: {exc.strerror or exc}") from None


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


def _load_text(path: Path, qualname: str, text: str, sha: str, task: str | None) -> LoadedFunction:
    tree = parse_module(text, str(path))
    found = _find(tree, qualname, path)
    node, class_node = found.node, found.class_node
    lines = _lines(text)
    start = _first_line(node)
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


TARGET_KINDS = (
    "function",
    "async function",
    "generator",
    "async generator",
    "method",
    "async method",
    "classmethod",
    "staticmethod",
    "property",
)
"""Everything a test can call from outside. A method's kind says how it is bound; an async
or generator method is ``async method`` / ``generator``."""

Def = ast.FunctionDef | ast.AsyncFunctionDef


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
    getters = [n for n in named if _decorator_names(n) & _PROPERTIES]
    return getters[-1] if getters else named[-1]


def _members(cls: ast.ClassDef) -> list[str]:
    names = [n.name for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    return list(dict.fromkeys(names))


_PROPERTIES = frozenset({"property", "cached_property"})


def _decorator_names(node: Def) -> set[str]:
    out = set()
    for d in node.decorator_list:
        if isinstance(d, ast.Call):
            d = d.func
        if isinstance(d, ast.Name):
            out.add(d.id)
        elif isinstance(d, ast.Attribute):
            out.add(d.attr)
    return out


def _target(node: Def, cls: ast.ClassDef | None) -> Target:
    is_async = isinstance(node, ast.AsyncFunctionDef)
    gen = program.is_generator(node)
    plain = "generator" if gen else "function"
    if is_async:
        plain = "async generator" if gen else "async function"
    if cls is None:
        return Target(node, None, plain, plain != "function" or _takes_objects(node))
    names = _decorator_names(node)
    if names & _PROPERTIES:
        return Target(node, cls, "property", True)
    if "staticmethod" in names:
        literal = plain == "function" and not _takes_objects(node)
        return Target(node, cls, "staticmethod", not literal)
    if "classmethod" in names:
        return Target(node, cls, "classmethod", True)
    kind = {"function": "method", "async function": "async method"}.get(plain, plain)
    return Target(node, cls, kind, True)


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
    lines = _lines(text)
    start = _first_line(node)
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


def _first_line(node: Def) -> int:
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def _lines(text: str) -> list[str]:
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


# --- writing back -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WriteResult:
    path: Path
    diff: str
    """Unified diff of the file (``a/`` and ``b/`` labels); empty when nothing changed."""
    backup: Path | None
    """Where the original was kept (``None`` with ``backup=False``)."""
    new_text: str
    loaded: LoadedFunction
    """The function as it is in the file now (use it for a further write_back)."""


_CHANGED = (
    "{path} changed on disk since it was loaded: not overwriting it; load the function "
    "again and redo the fix"
)


def changed_on_disk(loaded: LoadedFunction) -> str | None:
    """Why the fix cannot be written because the file changed since it was loaded (or
    cannot be read), else ``None``: say it before a diff against the old text is shown."""
    try:
        raw = _read_bytes(loaded.path)
    except WorkspaceError as e:
        return str(e)
    if hashlib.sha256(raw).hexdigest() != loaded.file_sha256:
        return _CHANGED.format(path=loaded.path)
    return None


def function_diff(loaded: LoadedFunction, new_code: str) -> str:
    """The diff :func:`write_back` would write, computed against the file as loaded."""
    new_text = _replaced(loaded, new_code)
    return _diff(loaded, new_text)


def export_patch(loaded: LoadedFunction, new_code: str, out: Path) -> Path:
    """Write :func:`function_diff` to ``out`` (atomically); returns ``out``."""
    out = Path(out)
    _atomic_write(out, function_diff(loaded, new_code).encode("utf-8"))
    return out


def write_back(loaded: LoadedFunction, new_code: str, *, backup: bool = True) -> WriteResult:
    """Write ``new_code`` (the merged module, a function or a reply) into the function's file
    (see the module docstring)."""
    new_text = _replaced(loaded, new_code)
    raw = _read_bytes(loaded.path)
    if hashlib.sha256(raw).hexdigest() != loaded.file_sha256:
        raise WorkspaceError(_CHANGED.format(path=loaded.path))
    backup_path = _write_backup(loaded.path, raw) if backup else None
    new_raw = new_text.encode("utf-8")
    _atomic_write(loaded.path, new_raw)
    reloaded = _load_text(
        loaded.path,
        loaded.qualname,
        new_text,
        hashlib.sha256(new_raw).hexdigest(),
        loaded.task,
    )
    return WriteResult(loaded.path, _diff(loaded, new_text), backup_path, new_text, reloaded)


def _replaced(loaded: LoadedFunction, new_code: str) -> str:
    """The file's text with ``new_code`` merged in (:mod:`utdebug.agents.edits`): a module or
    a function that parses is merged as it is, anything else is read as a reply."""
    base, entry, cls = loaded.file_text, loaded.entry_point, loaded.class_name
    try:
        ast.parse(new_code)
        merged = merge_edit(base, new_code, entry, class_name=cls)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        merged = take_edit(new_code, base, entry, class_name=cls)
    if isinstance(merged, MergedEdit):
        return merged.code
    reason = merged.reason
    if reason.startswith(("the edit does not change", "the edit changes only comments")):
        return base  # nothing to write: an empty diff
    if reason.startswith("the code does not parse"):
        reason = "the new " + reason[len("the ") :]
    raise WorkspaceError(f"cannot write the fix of {loaded.qualname}: {reason}")


def _diff(loaded: LoadedFunction, new_text: str) -> str:
    label = loaded.path.as_posix() if not loaded.path.is_absolute() else loaded.path.name
    out = []
    for line in difflib.unified_diff(
        _lines(loaded.file_text),
        _lines(new_text),
        fromfile=f"a/{label}",
        tofile=f"b/{label}",
    ):
        if line.endswith(("\n", "\r")):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _write_backup(path: Path, raw: bytes) -> Path:
    base = path.with_name(path.name + ".utdebug.bak")
    candidates = [base] + [base.with_name(f"{base.name}.{i}") for i in range(1, 10_000)]
    for candidate in candidates:
        try:
            with open(candidate, "xb") as f:
                f.write(raw)
        except FileExistsError:
            continue
        except OSError as exc:
            raise WorkspaceError(
                f"cannot write backup {candidate}: {exc.strerror or exc}"
            ) from None
        return candidate
    raise WorkspaceError(f"too many backups of {path}; remove old {base.name}.* files")


def _atomic_write(path: Path, data: bytes) -> None:
    directory = path.parent if str(path.parent) else Path(".")
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise WorkspaceError(f"cannot write in {directory}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --- pytest export ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PytestExport:
    text: str
    exported: int
    skipped: int


_RESERVED = frozenset({"math", "inf", "nan", "pytest"})


def render_pytest(
    loaded: LoadedFunction, tests: Sequence[UnitTest], out: Path | None = None
) -> PytestExport:
    """The text of the pytest file :func:`export_pytest` writes to ``out`` (default: next to
    the source file), with the counts. The file finds the function relative to itself: by
    module name from the folder that holds the top package when the source file is in a
    package (its relative imports work), else by its path relative to the test file."""
    source = loaded.path.resolve()
    out_dir = (Path(out) if out is not None else source).resolve().parent
    entry = loaded.entry_point
    name = entry
    if name in _RESERVED or name.startswith(("test", "_utd")):
        name = "target_function"  # pytest would collect test*; the literals use inf/nan
    owner = f"_utd_module.{loaded.class_name}" if loaded.class_name else "_utd_module"
    getter = f"{owner}.{entry}"
    blocks: list[str] = []
    exported = skipped = 0
    for n, test in enumerate(tests, start=1):
        if test.program:
            block = _program_block(entry, n, test)
            if block.startswith("#"):
                skipped += 1
            else:
                exported += 1
            blocks.append(block)
            continue
        reason, args_text, expected_text = _literal_texts(test)
        call_note = _one_line(test.call) or (
            "?" if reason is not None else _one_line(f"{entry}({args_text})")
        )
        if reason is not None:
            skipped += 1
            blocks.append(f"# skipped test {n} (id {test.id}, call {call_note}): {reason}\n")
            continue
        exported += 1
        call = f"{name}({args_text})"
        comment = f"    # origin: {_origin_note(test)}, id {test.id}, call: {call_note}\n"
        expected = test.expected
        if isinstance(expected, float) and expected != expected:  # NaN
            check = f"    result = {call}\n    assert math.isnan(result), result\n"
        elif isinstance(expected, float):
            check = (
                f"    result = {call}\n"
                f"    assert math.isclose(result, {expected_text}, rel_tol=1e-6), result\n"
            )
        else:
            check = f"    assert {call} == {expected_text}\n"
        blocks.append(f"def test_{entry}_{n}() -> None:\n{comment}{check}")
    package = _package_module(source)
    if package is not None:
        root, module = package
        how = f"module {module}, imported from the folder {_relative(root, out_dir)!r}"
        loader = (
            "import importlib\n"
            "import math\n"
            "import sys\n"
            "from pathlib import Path\n\n"
            f"_UTD_ROOT = Path(__file__).resolve().parent / {_relative(root, out_dir)!r}\n"
            "inf = math.inf\n"
            "nan = math.nan\n\n\n"
            "def _utd_load():\n"
            "    root = str(_UTD_ROOT.resolve())\n"
            "    if root not in sys.path:\n"
            "        sys.path.insert(0, root)\n"
            f"    return importlib.import_module({module!r})\n\n\n"
        )
    else:
        module_name = "_utdebug_target_" + re.sub(r"\W", "_", source.stem)
        how = f"the file {_relative(source, out_dir)!r}, relative to this one"
        loader = (
            "import importlib.util\n"
            "import math\n"
            "import sys\n"
            "from pathlib import Path\n\n"
            f"_UTD_SOURCE = (Path(__file__).resolve().parent / "
            f"{_relative(source, out_dir)!r}).resolve()\n"
            "inf = math.inf\n"
            "nan = math.nan\n\n\n"
            "def _utd_load():\n"
            "    if str(_UTD_SOURCE.parent) not in sys.path:\n"
            "        sys.path.insert(0, str(_UTD_SOURCE.parent))\n"
            f"    spec = importlib.util.spec_from_file_location({module_name!r}, _UTD_SOURCE)\n"
            "    if spec is None or spec.loader is None:\n"
            '        raise ImportError(f"cannot import {_UTD_SOURCE}")\n'
            "    module = importlib.util.module_from_spec(spec)\n"
            "    spec.loader.exec_module(module)\n"
            "    return module\n\n\n"
        )
    header = (
        f'"""Tests of {loaded.path.name}::{loaded.qualname}, exported by utdebug.\n\n'
        f"They import the function as it is now ({how}): {exported} exported, "
        f'{skipped} skipped (not literal values).\n"""\n\n'
        f"{loader}"
        "_utd_module = _utd_load()\n"
        f"{name} = {getter}\n"
    )
    if any(t.program for t in tests):
        header = header.replace(
            "import math\n", "import asyncio\nimport inspect\nimport itertools\nimport math\n", 1
        )
        header += (
            "# Tests with setup use the module's names as utdebug ran them (in the module).\n"
            "globals().update(\n"
            "    {k: v for k, v in vars(_utd_module).items() if not k.startswith('__')}\n"
            ")\n"
            "import pytest  # noqa: E402\n"
            f"{program.PYTEST_HELPERS}"
        )
    text = header + "".join(f"\n\n{block}" for block in blocks)
    try:
        ast.parse(text)
    except (SyntaxError, ValueError) as exc:  # a bug here, not in the user's input
        raise WorkspaceError(f"the exported test file would not parse: {exc}") from None
    return PytestExport(text, exported, skipped)


def export_pytest(loaded: LoadedFunction, tests: Sequence[UnitTest], out: Path) -> Path:
    """Write :func:`render_pytest`'s file to ``out`` (atomically); returns ``out``."""
    out = Path(out)
    _atomic_write(out, render_pytest(loaded, tests, out).text.encode("utf-8"))
    return out


def _program_block(entry: str, n: int, test: UnitTest) -> str:
    """A program test as a pytest function (setup, then the call's assertion), or a comment
    saying why it is left out."""
    call_note = _one_line(test.call)
    if isinstance(test.expected, program.Raises):
        expected_text, raises = "", test.expected.type_name
    else:
        text, why = _round_trip(test.expected)
        if why is not None:
            return f"# skipped test {n} (id {test.id}, call {call_note}): expected value {why}\n"
        expected_text, raises = text, None
    body = program.pytest_body(test.setup or "", test.call, expected_text, test.then, raises=raises)
    comment = f"    # origin: {_origin_note(test)}, id {test.id}, call: {call_note}\n"
    return f"def test_{entry}_{n}() -> None:\n{comment}" + "\n".join(body) + "\n"


def _origin_note(test: UnitTest) -> str:
    """Who stands behind the expected value: the model's vote share, or a person."""
    if test.origin == "person":
        return "person (the expected value is a person's)"
    return f"model, vote share {test.share:.2f}"


# --- how the sandbox loads the user's module --------------------------------------------------
# One way for every front end (``debug``, ``check``, the pytest export): the project folder is
# bound read-only into the sandbox and the file runs as the module it is, whatever the target.

PROJECT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")
"""What marks a project's root folder (:func:`project_folder`)."""


@dataclass(frozen=True, slots=True)
class ModuleLocation:
    """Where a file sits among its packages."""

    name: str
    """Its dotted module name (``shop.cart``; the file's stem outside a package)."""
    package: str | None
    """Its package (``shop``), the module itself for an ``__init__.py``; ``None``: none."""
    import_root: Path
    """The folder that holds its top package (its own folder outside a package)."""


def module_location(source: Path, root: Path | None = None) -> ModuleLocation:
    """The module ``source`` is: its packages are the folders above it with ``__init__.py``,
    up to (not including) ``root`` when given."""
    source = Path(source)
    parts = [] if source.name == "__init__.py" else [source.stem]
    folder = source.parent
    while (
        folder != root
        and folder.parent != folder
        and (folder / "__init__.py").is_file()
        and folder.name.isidentifier()
    ):
        parts.insert(0, folder.name)
        folder = folder.parent
    if not parts:  # a top-level __init__.py (of the project itself)
        parts = [folder.name or "module"]
    name = ".".join(parts)
    if source.name == "__init__.py":
        package: str | None = name
    else:
        package = name.rpartition(".")[0] or None
    return ModuleLocation(name, package, folder)


def project_folder(source: Path) -> Path:
    """The project a file belongs to, for ``debug``: the nearest folder at or above the one
    that holds its top package with a ``.git``, ``pyproject.toml``, ``setup.py`` or
    ``setup.cfg`` (never the home folder or ``/``, which would bind too much), else that
    folder itself."""
    start = module_location(Path(source).resolve()).import_root
    home = _home()
    for folder in (start, *start.parents):
        if folder == home or folder.parent == folder:
            break
        if any((folder / m).exists() for m in PROJECT_MARKERS):
            return folder
    return start


def _home() -> Path | None:
    try:
        return Path.home().resolve()
    except (RuntimeError, OSError):  # no home folder known
        return None


def environment_paths(exclude: Sequence[Path] = ()) -> list[str]:
    """Folders with the current environment's packages that the interpreter's prefix (always
    visible in the sandbox) does not hold: user site-packages and ``PYTHONPATH`` entries."""
    import site

    from utdebug.sandbox.layers import inside, interpreter_dirs

    cands = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        cands.append(site.getusersitepackages())
    cands += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    covered = [*interpreter_dirs(), "/usr"]
    skip = [str(Path(p).resolve()) for p in exclude]
    out: list[str] = []
    for c in cands:
        real = os.path.realpath(c)
        if not os.path.isabs(c) or not os.path.isdir(real) or real in out:
            continue
        if inside(real, covered + skip):
            continue
        out.append(real)
    return out


def sandbox_mounts(project: Path, env_paths: Sequence[str] = ()) -> tuple[str, ...]:
    """The folders bound read-only into the sandbox: the project and the environment's
    packages outside the interpreter's prefix (:func:`environment_paths`)."""
    return (str(project), *env_paths)


def sandbox_context(
    source: Path, project: Path, *, program: bool, env_paths: Sequence[str] = ()
) -> Any:
    """How the sandbox runs ``source`` (a file of ``project``): as the module it is,
    registered in ``sys.modules`` (dataclasses, ``from __future__ import annotations`` and
    pickling work), with its package (relative imports; a target tested with programs
    imports its package first, as a normal import would, so cycles through ``__init__``
    work), its import root, the project and ``env_paths`` on ``sys.path``, and the project
    as the working folder. The project must be bound into the sandbox
    (:func:`sandbox_mounts`)."""
    from utdebug.sandbox import ModuleContext

    loc = module_location(source, project)
    return ModuleContext(
        name=loc.name,
        file=str(source),
        package=loc.package,
        path=tuple(dict.fromkeys([str(loc.import_root), str(project), *env_paths])),
        cwd=str(project),
        import_package=program,
    )


def package_module(source: Path) -> tuple[Path, str] | None:
    """(the folder that holds the top package, the dotted module name) of a file inside a
    package; ``None`` otherwise."""
    return _package_module(source)


def _package_module(source: Path) -> tuple[Path, str] | None:
    """(the folder that holds the top package, the dotted module name) of a file inside a
    package (its folder has ``__init__.py``) that can be imported by that name; ``None``
    otherwise."""
    if not source.stem.isidentifier():
        return None
    loc = module_location(source)
    if loc.package is None or loc.import_root == source.parent:  # not in a package
        return None
    return loc.import_root, loc.name


def _relative(target: Path, start: Path) -> str:
    """``target`` relative to the folder ``start``, with ``/`` (absolute when there is no
    relative path, e.g. another drive)."""
    try:
        return Path(os.path.relpath(target, start)).as_posix()
    except ValueError:
        return target.as_posix()


def _literal_texts(test: UnitTest) -> tuple[str | None, str, str]:
    """(why the test cannot be written, or None; the args text; the expected text)."""
    texts = []
    for i, arg in enumerate(test.args, start=1):
        text, why = _round_trip(arg)
        if why is not None:
            return f"argument {i} {why}", "", ""
        texts.append(text)
    expected_text, why = _round_trip(test.expected)
    if why is not None:
        return f"expected value {why}", "", ""
    return None, ", ".join(texts), expected_text


def _round_trip(value: Any) -> tuple[str, str | None]:
    try:
        text = repr(value)
    except Exception as exc:  # a user type with a broken __repr__
        return "", f"has no repr ({type(exc).__name__})"
    try:
        back = literal_value(text)
    except LiteralError as exc:
        return text, f"{_one_line(text, 60)} is not a literal ({_one_line(exc.message, 80)})"
    if type(back) is not type(value) or not (_equal(back, value) or repr(back) == text):
        return text, f"{_one_line(text, 60)} does not read back as the same value"
    return text, None


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def _one_line(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
