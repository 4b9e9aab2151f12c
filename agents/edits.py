"""Debugger edits: the code of a reply, merged into the module it edits.

A debugging reply usually holds only the fixed function: taken as the whole program it loses
the module around it (imports, constants, helpers), and test code it appends would come along.
:func:`take_edit` merges the reply's code candidates
(:func:`utdebug.agents.reply_code.code_candidates`), best first, into the code it edits
(:func:`merge_edit`: spliced by source spans, the base never re-printed) and takes the first
that changes the code. What is merged, added, left out or refused: docs/engine.md, "Edits are
merged into the module". Pure :mod:`ast`: nothing here runs the code.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace

from utdebug.agents.edit_ast import (
    DEF,
    DEFS,
    Def,
    Source,
    assigned_names,
    bound_names,
    describe,
    dump_def,
    end_line,
    import_text,
    indent_of,
    is_main_guard,
    last_def,
    names_in,
    newline,
    reindent,
    same_def,
    splice,
    start_line,
)
from utdebug.agents.parsing import ParseFailure
from utdebug.agents.reply_code import code_candidates, defined, find_code, parse_code
from utdebug.mutation import is_docstring

__all__ = ["MergedEdit", "find_code", "merge_edit", "take_edit"]


@dataclass(frozen=True, slots=True)
class MergedEdit:
    """An edit merged into the code it edits."""

    code: str
    """The merged module."""
    replaced: tuple[str, ...] = ()
    """What of the base the edit replaced (``function f``, ``method C.m``, ``constant K``)."""
    added: tuple[str, ...] = ()
    """What the edit added (``import math``, ``function helper``, ``constant K``)."""
    dropped: tuple[str, ...] = ()
    """What of the edit was left out (``assert at line 12``, ``print call at line 13``,
    ``function check_solution (unused)``), and lines of a cut reply that did not parse."""
    removed: tuple[str, ...] = ()
    """What of the base the merge took out: its own top-level tests of the entry point
    (``the code's own assert at line 5 (calls f)``), which a fix would fail at import."""


def take_edit(
    reply: str, base: str, entry_point: str, *, class_name: str | None = None
) -> MergedEdit | ParseFailure:
    """The reply's edit merged into ``base``: the first candidate (in :func:`find_code`'s
    order) whose merge changes the code, else the best candidate's refusal."""
    found = code_candidates(reply, entry_point)
    if isinstance(found, ParseFailure):
        return found
    refusal: ParseFailure | None = None
    for cand in found:
        merged = merge_edit(base, cand.code, entry_point, class_name=class_name)
        if isinstance(merged, MergedEdit):
            if cand.note is not None:
                merged = replace(merged, dropped=(*merged.dropped, cand.note))
            return merged
        if refusal is None:
            refusal = merged
    assert refusal is not None
    return refusal


# --- merging ----------------------------------------------------------------------------------


def merge_edit(
    base: str, edit: str, entry_point: str, *, class_name: str | None = None
) -> MergedEdit | ParseFailure:
    """``edit`` merged into ``base`` (see the module docstring), or why it cannot be."""
    etree, error = parse_code(edit)
    if etree is None:
        return ParseFailure(f"the code does not parse: {error}")
    if not defined(etree):
        return ParseFailure("no function defined in the edit")
    btree, berror = parse_code(base)
    if btree is None:
        return _Merger(edit, etree, entry_point, class_name).alone(berror or "")
    return _Merger(edit, etree, entry_point, class_name, base, btree).merge()


_Added = tuple[int, list[str], str]
"""(line in the edit, text lines, description) of something the merge adds."""


class _Merger:
    """One merge of an edit into a base (or, with no base, the edit alone)."""

    def __init__(
        self,
        edit: str,
        etree: ast.Module,
        entry: str,
        class_name: str | None,
        base: str | None = None,
        btree: ast.Module | None = None,
    ) -> None:
        self.e = Source.of(edit, etree)
        self.b = Source.of(base, btree) if base is not None and btree is not None else None
        self.entry = entry
        self.class_name = class_name
        self.replaced: list[str] = []
        self.added: list[str] = []
        self.dropped: list[str] = []
        self.removed: list[str] = []
        """Statements of the base the merge took out (its own tests of the entry point)."""
        self.replacements: dict[int, tuple[int, list[str]]] = {}
        """First base line of a replaced span -> (its last line, the new lines)."""
        self.inserts: dict[int, list[list[str]]] = {}
        """Base line -> blocks of new lines put after it (0: before the first line)."""
        self.anchors: list[int] = []
        """Where the top-level statements the merge replaced start (new helpers go before)."""
        self.taken: set[int] = set()
        """ids of the edit's statements the merge took (or found equal to the base's)."""
        self.new_imports: dict[int, list[str]] = {}
        """id of an import statement of the edit -> the names it must bind."""
        self.import_nodes: list[ast.Import | ast.ImportFrom] = []
        self.header_new: list[_Added] = []
        self.helper_new: list[_Added] = []
        # the edit's top level
        self.efuncs: dict[str, Def] = {}
        self.eclasses: dict[str, ast.ClassDef] = {}
        self.eimports: dict[str, ast.Import | ast.ImportFrom] = {}
        self.eassigns: dict[str, ast.stmt] = {}
        self.eblocks: dict[str, ast.stmt] = {}
        """Names bound by other top-level blocks of the edit (``try: import numpy``)."""
        self.test_code: list[ast.stmt] = []
        self.docstring: ast.stmt | None = None
        self.future: list[ast.stmt] = []
        self._index_edit()
        # the base's top level
        self.bfuncs: dict[str, Def] = {}
        self.bclasses: dict[str, ast.ClassDef] = {}
        self.bassigns: dict[str, ast.stmt] = {}
        self.bbound: set[str] = set()
        if self.b is not None:
            for node in self.b.tree.body:
                if isinstance(node, DEF):
                    self.bfuncs[node.name] = node
                elif isinstance(node, ast.ClassDef):
                    self.bclasses[node.name] = node
                for name in assigned_names(node) or []:
                    self.bassigns[name] = node
                self.bbound |= bound_names(node)

    # -- the edit ---------------------------------------------------------------------------

    def _index_edit(self) -> None:
        for i, node in enumerate(self.e.tree.body):
            if i == 0 and is_docstring(node):
                self.docstring = node
            elif isinstance(node, DEF):
                self.efuncs[node.name] = node
            elif isinstance(node, ast.ClassDef):
                self.eclasses[node.name] = node
            elif isinstance(node, ast.ImportFrom) and node.module == "__future__":
                self.future.append(node)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                for name in bound_names(node):
                    self.eimports[name] = node
            elif assigned_names(node) is not None:
                for name in assigned_names(node) or []:
                    self.eassigns[name] = node
            elif isinstance(node, ast.If | ast.Try) and _binding_block(node):
                for name in bound_names(node):
                    self.eblocks.setdefault(name, node)
            else:
                self.test_code.append(node)

    def _edit_text(self, node: ast.stmt, *, decorators: bool, comments: bool = False) -> list[str]:
        first = start_line(node) if decorators else node.lineno
        if comments:
            while first > 1 and self.e.lines[first - 2].lstrip().startswith("#"):
                first -= 1
        return self.e.segment(first, end_line(node))

    def _entry_definition(self) -> Def | None:
        """The edit's new definition of the entry point (see the staticmethod rule)."""
        top = self.efuncs.get(self.entry)
        if self.class_name is None:
            return top
        cls = self.eclasses.get(self.class_name)
        method = last_def(cls.body, self.entry, DEF) if cls is not None else None
        assert method is None or isinstance(method, DEF)
        if top is None or method is None:
            return top or method
        targets = self._entry_targets()
        if any(dump_def(top, []) != dump_def(t, []) for t in targets):
            return top
        return method

    def _entry_targets(self) -> list[Def]:
        """The base's definitions of the entry point (two for a staticmethod in module code)."""
        if self.b is None:
            return []
        out: list[Def] = []
        top = last_def(self.b.tree.body, self.entry, DEF)
        if isinstance(top, DEF):
            out.append(top)
        if self.class_name is not None:
            cls = last_def(self.b.tree.body, self.class_name, (ast.ClassDef,))
            if isinstance(cls, ast.ClassDef):
                method = last_def(cls.body, self.entry, DEF)
                if isinstance(method, DEF):
                    out.append(method)
        return out

    # -- merging into a base ----------------------------------------------------------------

    def merge(self) -> MergedEdit | ParseFailure:
        refusal = self._shares_a_function()
        if refusal is not None:
            return refusal
        todo = [self.entry]
        seen: set[str] = set()
        while todo:
            name = todo.pop(0)
            if name not in seen:
                seen.add(name)
                todo += self._resolve(name)
        changes = (self.replacements, self.import_nodes, self.header_new, self.helper_new)
        if not any(changes) and not any(self.inserts.values()):
            return self._no_change()
        self._drop_base_tests()
        self._report_dropped()
        code = self._assemble()
        tree, error = parse_code(code)
        if tree is None:  # a fault of the merge, not of the reply: say so plainly
            return ParseFailure(f"the merged code does not parse: {error}")
        return MergedEdit(
            code,
            tuple(self.replaced),
            tuple(self.added),
            tuple(self.dropped),
            tuple(self.removed),
        )

    def _shares_a_function(self) -> ParseFailure | None:
        base_names = [*self.bfuncs]
        for cname, cls in self.bclasses.items():
            base_names += [f"{cname}.{m.name}" for m in cls.body if isinstance(m, DEF)]
        edit_names = [*self.efuncs]
        for cname, ecls in self.eclasses.items():
            edit_names += [f"{cname}.{m.name}" for m in ecls.body if isinstance(m, DEF)]
        if set(base_names) & set(edit_names):
            return None
        if self.class_name is not None and self._entry_definition() is not None:
            return None
        defines = ", ".join(edit_names) or "no function"
        has = ", ".join(base_names) or "no function"
        return ParseFailure(
            f"the edit defines no function of the code: it defines {defines}; the code has {has}"
        )

    def _resolve(self, name: str) -> list[str]:
        """Schedule what ``name`` needs from the edit; return the names it uses in turn."""
        b = self.b
        assert b is not None
        if name == self.entry and self._entry_targets():
            return self._resolve_entry()
        last = last_def(b.tree.body, name, DEFS)
        if isinstance(last, DEF):
            return self._resolve_function(last)
        if isinstance(last, ast.ClassDef):
            return self._resolve_class(last)
        if name in self.bassigns:
            return self._resolve_constant(name, self.bassigns[name])
        if name in self.bbound:
            return []
        return self._add(name)

    def _resolve_entry(self) -> list[str]:
        b = self.b
        assert b is not None
        targets = self._entry_targets()
        new = self._entry_definition()
        # A method (not a staticmethod run as a module-level copy) runs with its class: the
        # edit's changes to the class's other methods (``__init__``, helpers) are merged too.
        own_class = self._method_class()
        if new is None:
            return [n for t in targets for n in b.uses(t)] + own_class
        self.taken.add(id(new))
        changed = False
        for target in targets:
            if self.class_name is not None:
                # every copy keeps its own decorators (@staticmethod on the method)
                if dump_def(new, []) == dump_def(target, []):
                    continue
                self._replace(target, new, edit_decorators=False)
            else:
                if same_def(new, target):
                    continue
                self._replace(target, new, edit_decorators=bool(new.decorator_list))
            changed = True
        if not changed:
            return [n for t in targets for n in b.uses(t)] + own_class
        self.replaced.append(f"function {self.entry}")
        return self.e.uses(new) + own_class

    def _method_class(self) -> list[str]:
        """``[class_name]`` for a method target whose base has no module-level copy."""
        if self.class_name is None or self.b is None:
            return []
        if isinstance(last_def(self.b.tree.body, self.entry, DEF), DEF):
            return []
        return [self.class_name]

    def _resolve_function(self, target: Def) -> list[str]:
        assert self.b is not None
        new = self.efuncs.get(target.name)
        if new is None:
            return self.b.uses(target)
        self.taken.add(id(new))
        if same_def(new, target):
            return self.b.uses(target)
        self._replace(target, new, edit_decorators=bool(new.decorator_list))
        self.replaced.append(f"function {target.name}")
        return self.e.uses(new)

    def _resolve_class(self, target: ast.ClassDef) -> list[str]:
        """A class both define: the edit's changed methods replace the base's, its new
        methods are added at the end of the class."""
        b = self.b
        assert b is not None
        new = self.eclasses.get(target.name)
        if new is None:
            return b.uses(target)
        self.taken.add(id(new))
        base_methods = {m.name: m for m in target.body if isinstance(m, DEF)}
        indent = indent_of(b.lines[target.body[0].lineno - 1])
        added: list[str] = []
        changed = False
        for m in new.body:
            if not isinstance(m, DEF):
                continue
            if self.class_name == target.name and m.name == self.entry:
                continue  # the staticmethod target: merged with the entry point
            old = base_methods.get(m.name)
            if old is None:
                text = reindent(
                    self._edit_text(m, decorators=True),
                    start_line(m),
                    indent_of(self.e.lines[m.lineno - 1]),
                    indent,
                    self.e.protected,
                )
                added += ["", *text]
                self.added.append(f"method {target.name}.{m.name}")
                changed = True
            elif not same_def(m, old):
                self._replace(old, m, edit_decorators=bool(m.decorator_list))
                self.replaced.append(f"method {target.name}.{m.name}")
                changed = True
        if added:
            self.inserts.setdefault(end_line(target), []).append(added)
            self.anchors.append(self._top(target))
        if not changed:
            return b.uses(target)
        return list(dict.fromkeys([*b.uses(target), *self.e.uses(new)]))

    def _resolve_constant(self, name: str, target: ast.stmt) -> list[str]:
        assert self.b is not None
        new = self.eassigns.get(name)
        if new is None or id(new) in self.taken:
            return self.b.uses(target)
        if ast.dump(new) == ast.dump(target):
            self.taken.add(id(new))
            return self.b.uses(target)
        if sorted(assigned_names(new) or []) != sorted(assigned_names(target) or []):
            return self.b.uses(target)  # assigned together with other names: not merged
        self.taken.add(id(new))
        self._replace(target, new, edit_decorators=False)
        self.replaced.append(f"constant {name}")
        return self.e.uses(new)

    def _replace(self, target: ast.stmt, new: ast.stmt, *, edit_decorators: bool) -> None:
        """Schedule ``target``'s lines to become ``new``'s (re-indented to ``target``'s).
        Without ``edit_decorators`` the target keeps its own decorator lines."""
        b = self.b
        assert b is not None
        first_new = start_line(new) if edit_decorators else new.lineno
        first_old = start_line(target) if edit_decorators else target.lineno
        text = reindent(
            self.e.segment(first_new, end_line(new)),
            first_new,
            indent_of(self.e.lines[new.lineno - 1]),
            indent_of(b.lines[target.lineno - 1]),
            self.e.protected,
        )
        self.replacements[first_old] = (end_line(target), text)
        self.anchors.append(self._top(target))

    def _top(self, node: ast.stmt) -> int:
        assert self.b is not None
        return self.b.top_of(node)

    def _add(self, name: str) -> list[str]:
        """A name the base does not bind: taken from the edit when the edit binds it."""
        imp = self.eimports.get(name)
        if imp is not None:
            names = self.new_imports.setdefault(id(imp), [])
            if not names:
                self.import_nodes.append(imp)
                self.taken.add(id(imp))
            if name not in names:
                names.append(name)
            return []
        node: ast.stmt | None = (
            self.efuncs.get(name)
            or self.eclasses.get(name)
            or self.eassigns.get(name)
            or self.eblocks.get(name)
        )
        if node is None or id(node) in self.taken:
            return []
        self.taken.add(id(node))
        uses = self.e.uses(node)
        if isinstance(node, DEFS):
            text = self._edit_text(node, decorators=True, comments=True)
            kind = "class" if isinstance(node, ast.ClassDef) else "function"
            self.helper_new.append((node.lineno, text, f"{kind} {node.name}"))
        elif assigned_names(node) is not None:
            text = self._edit_text(node, decorators=False)
            label = f"constant {', '.join(assigned_names(node) or [])}"
            definitions = {*self.efuncs, *self.eclasses, *self.bfuncs, *self.bclasses}
            if any(n in definitions for n in uses):  # it calls a function: after the helpers
                self.helper_new.append((node.lineno, text, label))
            else:
                self.header_new.append((node.lineno, text, label))
        else:
            text = self._edit_text(node, decorators=False)
            label = f"{describe(node).split(' at line')[0]} binding {name}"
            self.header_new.append((node.lineno, text, label))
        return uses

    def _drop_base_tests(self) -> None:
        """The base's own top-level tests of the entry point (``assert f(1) == 2``,
        ``print(f(1))``: a benchmark's given code may end with one that encodes the bug) would
        fail the fixed code at import: they go, with the comment lines right above them."""
        b = self.b
        assert b is not None
        for node in b.tree.body:
            if not isinstance(node, ast.Assert | ast.Expr) or is_docstring(node):
                continue
            if self.entry not in names_in(node) or start_line(node) in self.replacements:
                continue
            self.replacements[self._top(node)] = (end_line(node), [])
            what = "assert" if isinstance(node, ast.Assert) else "call"
            self.removed.append(f"the code's own {what} at line {node.lineno} (calls {self.entry})")

    # -- reporting --------------------------------------------------------------------------

    def _report_dropped(self) -> None:
        base_dumps = {ast.dump(n) for n in self.b.tree.body} if self.b is not None else set()
        if self.docstring is not None and ast.dump(self.docstring) not in base_dumps:
            self.dropped.append("module docstring")
        for node in self.e.tree.body:
            if id(node) in self.taken or node is self.docstring:
                continue
            if ast.dump(node) in base_dumps:
                continue  # the base has this statement as it is (and keeps it)
            if node in self.future:
                self.dropped.append(f"{ast.unparse(node)} (not merged)")
            elif node in self.test_code:
                self.dropped.append(describe(node))
            elif isinstance(node, DEFS):
                if last_def(self.e.tree.body, node.name, DEFS) is not node:
                    kind = "class" if isinstance(node, ast.ClassDef) else "function"
                    line = node.lineno
                    self.dropped.append(f"{kind} {node.name} at line {line} (defined again later)")
                elif why := self._unused_definition(node):
                    self.dropped.append(why)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                if not bound_names(node) <= self.bbound:
                    self.dropped.append(f"{ast.unparse(node)} (unused)")
            elif assigned_names(node) is not None:
                names = assigned_names(node) or []
                base_has = self.b is not None and all(n in self.bassigns for n in names)
                why = f"not used by {self.entry}" if base_has else "unused"
                self.dropped.append(f"assignment {', '.join(names)} ({why})")
            else:
                self.dropped.append(describe(node))

    def _unused_definition(self, node: Def | ast.ClassDef) -> str:
        """Why a definition of the edit was not taken ('' when the base has it as it is)."""
        kind = "class" if isinstance(node, ast.ClassDef) else "function"
        same = last_def(self.b.tree.body, node.name, DEFS) if self.b is not None else None
        if same is None:
            if node.name in self.bbound:
                return f"{kind} {node.name} (the code already binds {node.name})"
            return f"{kind} {node.name} (unused)"
        if isinstance(same, ast.ClassDef) and isinstance(node, ast.ClassDef):
            if dump_def(same) == dump_def(node):
                return ""
        elif isinstance(same, DEF) and isinstance(node, DEF) and same_def(node, same):
            return ""
        return f"{kind} {node.name} (not used by {self.entry})"

    def _no_change(self) -> ParseFailure:
        b = self.b
        assert b is not None
        elsewhere = [
            node.name
            for node in self.e.tree.body
            if isinstance(node, DEFS)
            and id(node) not in self.taken
            and self._unused_definition(node).endswith(f"(not used by {self.entry})")
        ]
        if elsewhere:
            return ParseFailure(
                f"the edit changes only {', '.join(elsewhere)}, which {self.entry} does not use"
            )
        entry = self._entry_definition()
        targets = self._entry_targets()
        if entry is not None and targets:
            new = [line.strip() for line in self.e.segment(entry.lineno, end_line(entry))]
            old = [line.strip() for line in b.segment(targets[0].lineno, end_line(targets[0]))]
            if new != old:
                return ParseFailure("the edit changes only comments, docstrings or formatting")
        return ParseFailure("the edit does not change the code")

    # -- assembling -------------------------------------------------------------------------

    def _assemble(self) -> str:
        b = self.b
        assert b is not None
        imports: list[str] = []
        for node in sorted(self.import_nodes, key=lambda n: n.lineno):
            names = self.new_imports[id(node)]
            if set(names) == bound_names(node):
                text = self.e.segment(start_line(node), end_line(node))
            else:
                text = [import_text(node, names)]
            imports += text
            self.added.append(" ".join(line.strip() for line in text))
        consts: list[str] = []
        for _, text, label in sorted(self.header_new, key=lambda x: x[0]):
            consts += text
            self.added.append(label)
        first_def = next((start_line(n) for n in b.tree.body if isinstance(n, DEFS)), None)
        last_import: ast.stmt | None = None
        last_header: ast.stmt | None = None
        for stmt in b.tree.body:
            if first_def is not None and start_line(stmt) >= first_def:
                break
            if isinstance(stmt, ast.Import | ast.ImportFrom):
                last_import = last_header = stmt
            elif assigned_names(stmt) is not None:
                last_header = stmt
        lead = self._lead_end()
        before_first: list[str] = []
        if imports:
            if last_import is not None:
                self._insert_after(end_line(last_import), imports)
            elif lead:
                self._insert_after(lead, ["", *imports])
            else:
                before_first += imports
        if consts:
            if last_header is not None:
                gap = [""] if isinstance(last_header, ast.Import | ast.ImportFrom) else []
                self._insert_after(end_line(last_header), [*gap, *consts])
            elif lead:
                self._insert_after(lead, ["", *consts])
            else:
                before_first += [""] * bool(before_first) + consts
        if before_first:
            self._insert_before_first(before_first)
        if self.helper_new:
            targets = self._entry_targets()
            fallback = self._top(targets[0]) if targets else 1
            anchor = min(self.anchors, default=fallback)
            block: list[str] = []
            for _, text, label in sorted(self.helper_new, key=lambda x: x[0]):
                block += [*text, "", ""]
                self.added.append(label)
            self.inserts.setdefault(anchor - 1, []).append(block)
        return splice(b.lines, self.replacements, self.inserts, newline(b.text))

    def _lead_end(self) -> int:
        """The last line of the base's docstring and ``__future__`` imports (0: none)."""
        assert self.b is not None
        end = 0
        for i, node in enumerate(self.b.tree.body):
            if (i == 0 and is_docstring(node)) or (
                isinstance(node, ast.ImportFrom) and node.module == "__future__"
            ):
                end = end_line(node)
            else:
                break
        return end

    def _insert_after(self, line: int, text: list[str]) -> None:
        self.inserts.setdefault(line, []).append(text)

    def _insert_before_first(self, text: list[str]) -> None:
        """Before the base's first statement (and the comments right above it); a shebang
        or coding line stays first."""
        b = self.b
        assert b is not None
        body = b.tree.body
        if not body:
            self._insert_after(len(b.lines), text)
            return
        first = self._top(body[0])
        while first <= 2 and re.match(r"#!|#.*coding[:=]", b.lines[first - 1]):
            first += 1
        gap = ["", ""] if isinstance(body[0], DEFS) else [""]
        self.inserts.setdefault(first - 1, []).insert(0, [*text, *gap])

    # -- no base to merge into --------------------------------------------------------------

    def alone(self, base_error: str) -> MergedEdit | ParseFailure:
        """The edit as the whole program (the base does not parse): its test code and what
        the entry point does not use are dropped."""
        entry = self._entry_definition()
        if entry is None:
            defines = ", ".join(defined(self.e.tree))
            return ParseFailure(
                f"the edit does not define {self.entry} (it defines {defines}), and the code "
                f"it edits does not parse ({base_error})"
            )
        bound: dict[str, ast.stmt] = {
            **self.eblocks,
            **self.eimports,
            **self.eassigns,
            **self.eclasses,
            **self.efuncs,
        }
        todo = [self.entry]
        seen: set[str] = set()
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            node = bound.get(name)
            if node is not None and id(node) not in self.taken:
                self.taken.add(id(node))
                todo += self.e.uses(node)
        self.taken.add(id(entry))
        kept = [n for n in self.e.tree.body if id(n) in self.taken]
        lines: list[str] = []
        prev: ast.stmt | None = None
        for node in kept:
            is_def = isinstance(node, DEFS)
            if prev is not None:
                lines += ["", ""] if is_def or isinstance(prev, DEFS) else []
            lines += self._edit_text(node, decorators=True, comments=is_def)
            prev = node
        self._report_dropped()
        added = tuple(
            f"{'class' if isinstance(n, ast.ClassDef) else 'function'} {n.name}"
            for n in kept
            if isinstance(n, DEFS)
        )
        return MergedEdit(
            "\n".join(lines) + "\n",
            (f"the whole code (it does not parse: {base_error})",),
            added,
            tuple(self.dropped),
        )


def _binding_block(node: ast.stmt) -> bool:
    """An if/try block of imports and assignments only (``try: import numpy``)."""
    if is_main_guard(node):
        return False
    ok = (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.Pass, ast.If, ast.Try)
    inner = [n for n in ast.walk(node) if isinstance(n, ast.stmt) and n is not node]
    return bool(inner) and all(isinstance(n, ok) for n in inner)
