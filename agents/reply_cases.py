"""A test that asserts in a ``for`` loop over a table of cases written out: one test text per
row (:func:`unrolled`), the row's values in place of the loop's names.
"""

from __future__ import annotations

import ast

from utdebug.agents.reply_asserts import assertion, source_text


def loop_asserts(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.For)
        and not node.orelse
        and any(assertion(s) is not None for s in node.body)
    )


def unrolled(before: list[ast.stmt], loop: ast.For, code: str, limit: int) -> list[str] | None:
    """One test text per row of the table ``loop`` runs over: the statements before the
    loop, then the loop's body with the row's values in place of its names. ``None`` when
    the rows are not written out (a literal list or tuple, here or bound before the loop, or
    a dict's ``.items()``) or do not fit the loop's names."""
    table, source_of = loop.iter, None
    items = False
    if (
        isinstance(table, ast.Call)
        and isinstance(table.func, ast.Attribute)
        and table.func.attr == "items"
        and not table.args
    ):
        table, items = table.func.value, True
    if isinstance(table, ast.Name):
        source_of = next(
            (
                s
                for s in reversed(before)
                if isinstance(s, ast.Assign)
                and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name)
                and s.targets[0].id == table.id
            ),
            None,
        )
        table = source_of.value if source_of is not None else table
    rows: list[ast.expr]
    if items and isinstance(table, ast.Dict) and None not in table.keys:
        pairs = zip(table.keys, table.values, strict=True)
        rows = [ast.Tuple([k, v], ast.Load()) for k, v in pairs]  # type: ignore[list-item]
    elif not items and isinstance(table, ast.List | ast.Tuple):
        rows = list(table.elts)
    else:
        return None
    names = _target_names(loop.target)
    if names is None or not rows:
        return None
    kept = [s for s in before if s is not source_of]
    head = "\n".join(source_text(code, s) for s in kept)
    out: list[str] = []
    for row in rows[:limit]:
        values = _row_values(names, row)
        if values is None:
            return None
        swapped = [_Substitute(values).visit(ast.parse(ast.unparse(s)).body[0]) for s in loop.body]
        text = "\n".join([head, *(ast.unparse(ast.fix_missing_locations(s)) for s in swapped)])
        out.append(text.strip("\n"))
    return out


def _target_names(target: ast.expr) -> list[str] | str | None:
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Tuple | ast.List) and all(
        isinstance(e, ast.Name) for e in target.elts
    ):
        return [e.id for e in target.elts]  # type: ignore[attr-defined]
    return None


def _row_values(names: list[str] | str, row: ast.expr) -> dict[str, ast.expr] | None:
    if isinstance(names, str):
        return {names: row}
    if isinstance(row, ast.Tuple | ast.List) and len(row.elts) == len(names):
        return dict(zip(names, row.elts, strict=True))
    return None


class _Substitute(ast.NodeTransformer):
    def __init__(self, values: dict[str, ast.expr]) -> None:
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load) and node.id in self.values:
            return ast.copy_location(self.values[node.id], node)
        return node
