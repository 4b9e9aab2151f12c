"""The syntax-tree and source-text helpers of merging an edit (:mod:`utdebug.agents.edits`): one
parsed module (:class:`Source`), what a top-level statement binds, uses and is called, and
lines moved between indentations. Pure :mod:`ast`, :mod:`symtable` and :mod:`tokenize`.
"""

from __future__ import annotations

import ast
import io
import re
import symtable
import tokenize
from collections.abc import Sequence
from copy import deepcopy
from dataclasses import dataclass

from utdebug.mutation import drop_docstring

LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
DEF = (ast.FunctionDef, ast.AsyncFunctionDef)
DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
Def = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(slots=True)
class Source:
    """One parsed module: its text, lines, tree and the global names each definition uses."""

    text: str
    tree: ast.Module
    lines: list[str]
    tables: dict[tuple[str, int], symtable.SymbolTable]
    protected: set[int]
    """Line numbers inside multi-line strings (never re-indented)."""

    @classmethod
    def of(cls, text: str, tree: ast.Module) -> Source:
        top = symtable.symtable(text, "<code>", "exec")
        tables = {(t.get_name(), t.get_lineno()): t for t in top.get_children()}
        return cls(text, tree, LINE_RE.findall(text), tables, string_lines(text))

    def segment(self, first: int, last: int) -> list[str]:
        """Lines ``first..last`` (1-based, inclusive), without line endings."""
        return [line.rstrip("\r\n") for line in self.lines[first - 1 : last]]

    def top_of(self, node: ast.stmt) -> int:
        """The start of the top-level statement holding ``node``, with the comment lines
        right above it."""
        first = node.lineno
        for top in self.tree.body:
            if start_line(top) <= node.lineno <= end_line(top):
                first = start_line(top)
                break
        while first > 1 and self.lines[first - 2].lstrip().startswith("#"):
            first -= 1
        return first

    def uses(self, node: ast.stmt) -> list[str]:
        """Global names ``node`` (a top-level statement) uses, in order of appearance."""
        out: list[str] = []
        if isinstance(node, DEFS):
            table = self.tables.get((node.name, node.lineno))
            if table is not None:
                out += table_globals(table)
            outer: list[ast.AST] = list(node.decorator_list)
            if isinstance(node, ast.ClassDef):
                outer += [*node.bases, *node.keywords]
            else:
                outer += [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]
                outer += [a.annotation for a in all_args(node.args) if a.annotation]
                if node.returns is not None:
                    outer.append(node.returns)
            for part in outer:
                out += names_in(part)
        else:
            out += names_in(node)
        return list(dict.fromkeys(out))


def table_globals(table: symtable.SymbolTable) -> list[str]:
    out = [s.get_name() for s in table.get_symbols() if s.is_global()]
    for child in table.get_children():
        out += table_globals(child)
    return out


def names_in(node: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]


def all_args(args: ast.arguments) -> list[ast.arg]:
    out = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    out += [a for a in (args.vararg, args.kwarg) if a is not None]
    return out


def string_lines(text: str) -> set[int]:
    out: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                out.update(range(tok.start[0] + 1, tok.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        pass
    return out


def start_line(node: ast.stmt) -> int:
    """First line of a statement, its decorators included."""
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def end_line(node: ast.stmt) -> int:
    return node.end_lineno or node.lineno


def dump_def(node: Def | ast.ClassDef, decorators: Sequence[ast.expr] | None = None) -> str:
    """The definition's syntax tree (``decorators`` in place of its own when given), without
    the docstrings of it and of what it defines: a change of a docstring (its text, its
    indentation) changes no behaviour, so it is no edit."""
    node = without_docstrings(node)
    fields = []
    for name, value in ast.iter_fields(node):
        if name == "decorator_list":
            value = list(decorators) if decorators is not None else value
        fields.append(f"{name}={dump_value(value)}")
    return f"{type(node).__name__}({', '.join(fields)})"


def without_docstrings(node: Def | ast.ClassDef) -> Def | ast.ClassDef:
    """A copy of ``node`` whose functions and classes (``node`` too) have no docstring."""
    copy = deepcopy(node)
    for sub in ast.walk(copy):
        if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            drop_docstring(sub)
    return copy


def dump_value(value: object) -> str:
    if isinstance(value, ast.AST):
        return ast.dump(value)
    if isinstance(value, list):
        return "[" + ", ".join(dump_value(v) for v in value) + "]"
    return repr(value)


def is_main_guard(node: ast.stmt) -> bool:
    """``if __name__ == "__main__":`` (either side of the ``==``)."""
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    test = node.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    mains = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(mains) == 1


def assigned_names(node: ast.stmt) -> list[str] | None:
    """The names a plain assignment binds (``K = 1``, ``a, b = 1, 2``, ``K: int = 1``), else
    ``None``."""
    targets: list[ast.expr]
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, ast.AnnAssign) and node.value is not None and node.simple:
        targets = [node.target]
    else:
        return None
    names: list[str] = []
    for t in targets:
        parts = t.elts if isinstance(t, ast.Tuple | ast.List) else [t]
        for p in parts:
            if not isinstance(p, ast.Name):
                return None
            names.append(p.id)
    return names


def bound_names(node: ast.stmt) -> set[str]:
    """Every name a top-level statement binds in the module (looking into if/try/with/for
    blocks, not into functions or classes)."""
    out: set[str] = set()
    if isinstance(node, DEFS):
        return {node.name}
    if isinstance(node, ast.Import | ast.ImportFrom):
        for a in node.names:
            if a.name != "*":
                out.add(a.asname or a.name.split(".")[0])
        return out
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.stmt):
            out |= bound_names(child)
        elif isinstance(child, ast.expr | ast.excepthandler | ast.withitem | ast.match_case):
            for n in ast.walk(child):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del):
                    out.add(n.id)
                elif isinstance(n, ast.ExceptHandler) and n.name:
                    out.add(n.name)
                elif isinstance(n, ast.stmt):
                    out |= bound_names(n)
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor):
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out.add(n.id)
    return out


def describe(node: ast.stmt) -> str:
    """What a dropped top-level statement of the edit is (``assert at line 12``)."""
    line = node.lineno
    if isinstance(node, ast.Assert):
        return f"assert at line {line}"
    if is_main_guard(node):
        return f'if __name__ == "__main__" block at line {line}'
    if isinstance(node, ast.Expr):
        value = node.value
        if isinstance(value, ast.Call):
            name = call_name(value.func)
            if name == "print":
                return f"print call at line {line}"
            return f"call {name}() at line {line}" if name else f"call at line {line}"
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return f"string at line {line}"
        return f"expression at line {line}"
    kinds = {
        ast.For: "for loop",
        ast.AsyncFor: "for loop",
        ast.While: "while loop",
        ast.If: "if block",
        ast.With: "with block",
        ast.AsyncWith: "with block",
        ast.Try: "try block",
        ast.Assign: "assignment",
        ast.AugAssign: "assignment",
        ast.AnnAssign: "assignment",
        ast.Delete: "del statement",
        ast.Raise: "raise statement",
    }
    kind = kinds.get(type(node), f"{type(node).__name__.lower()} statement")
    return f"{kind} at line {line}"


def call_name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        inner = call_name(func.value)
        return f"{inner}.{func.attr}" if inner else func.attr
    return ""


def import_text(node: ast.Import | ast.ImportFrom, names: Sequence[str]) -> str:
    """An import statement binding only ``names`` of ``node``."""
    aliases = [a for a in node.names if (a.asname or a.name.split(".")[0]) in names]
    if isinstance(node, ast.Import):
        return ast.unparse(ast.Import(names=aliases))
    return ast.unparse(ast.ImportFrom(module=node.module, names=aliases, level=node.level))


def reindent(
    lines: list[str], first_line: int, old: str, new: str, protected: set[int]
) -> list[str]:
    """``lines`` (starting at line ``first_line`` of their source) moved from indentation
    ``old`` to ``new``; lines inside multi-line strings stay as they are."""
    if old == new:
        return [line if line.strip() else "" for line in lines]
    out = []
    for i, line in enumerate(lines):
        if first_line + i in protected:
            out.append(line)
        elif not line.strip():
            out.append("")
        elif line.startswith(old):
            out.append(new + line[len(old) :])
        else:
            out.append(line)
    return out


def indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def newline(text: str) -> str:
    m = re.search(r"\r\n|\r|\n", text)
    return m.group(0) if m else "\n"


def same_def(new: Def, old: Def) -> bool:
    """Same definition; an edit without decorators stands for the base's decorators."""
    return dump_def(new, new.decorator_list or old.decorator_list) == dump_def(old)


def last_def(body: Sequence[ast.stmt], name: str, kinds: tuple[type, ...]) -> ast.stmt | None:
    """The last definition named ``name`` in ``body`` when it is of ``kinds`` (what Python
    binds to the name), else ``None``."""
    found: ast.stmt | None = None
    for node in body:
        if isinstance(node, DEFS) and node.name == name:
            found = node
    return found if isinstance(found, kinds) else None


def splice(
    lines: list[str],
    replacements: dict[int, tuple[int, list[str]]],
    inserts: dict[int, list[list[str]]],
    nl: str,
) -> str:
    """``lines`` (with their line endings) with the spans of ``replacements`` (first line ->
    its last line and the new lines) replaced and the blocks of ``inserts`` put after their
    line (0: before the first); new lines end with ``nl``."""
    out: list[str] = []
    for block in inserts.get(0, []):
        out += [line + nl for line in block]
    i = 1
    while i <= len(lines):
        if i in replacements:
            last, text = replacements[i]
            out += [line + nl for line in text]
            if not lines[last - 1].endswith(("\n", "\r")) and last not in inserts:
                out[-1] = out[-1][: -len(nl)]
            i = last
        else:
            line = lines[i - 1]
            if i in inserts and not line.endswith(("\n", "\r")):
                line += nl
            out.append(line)
        for block in inserts.get(i, []):
            out += [line + nl for line in block]
        i += 1
    return "".join(out)
