"""Print the house's size numbers: long functions, long signatures, long files, import circles.

Counted over the shipped code (utdebug/ and the folders it links: agents/, sandbox/,
benchmarks/), outside tests and benchmarks/perf. Imports inside functions count as edges.

    python scripts/house_metrics.py [--list]
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("utdebug", "agents", "sandbox", "benchmarks")
#: Front ends: nothing imports them but the command line (utdebug.cli) and the front end's own
#: command module; they do not import each other.
FRONT_ENDS = {
    "utdebug.tui": "utdebug.debug_cmd",
    "utdebug.check": "utdebug.check_cmd",
    "utdebug.train": "utdebug.train_cmd",
    "utdebug.benchmarks": "utdebug.bench_cmd",
}


def module_files() -> dict[str, Path]:
    files: dict[str, Path] = {}
    for folder in FOLDERS:
        base = ROOT / folder
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(ROOT)
            if "perf" in rel.parts or "__pycache__" in rel.parts:
                continue
            if folder == "utdebug" and rel.parts[1] in ("agents", "sandbox", "benchmarks"):
                continue  # the links
            parts = list(rel.with_suffix("").parts)
            if folder != "utdebug":
                parts.insert(0, "utdebug")
            if parts[-1] == "__init__":
                parts.pop()
            files[".".join(parts)] = path
    return files


def _imports(module: str, tree: ast.AST, known: set[str], is_pkg: bool) -> set[str]:
    out: set[str] = set()
    package = module if is_pkg else module.rpartition(".")[0]
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            names = [prefix] + [f"{prefix}.{a.name}" for a in node.names]
        for name in names:
            if (
                name.startswith("agents")
                or name.startswith("sandbox")
                or name.startswith("benchmarks")
            ):
                name = "utdebug." + name
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                out.add(name)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="name every offender")
    args = parser.parse_args()
    files = module_files()
    known = set(files)
    graph: dict[str, set[str]] = {}
    long_funcs: list[tuple[int, str]] = []
    long_sigs: list[tuple[int, str]] = []
    long_files: list[tuple[int, str]] = []
    total = 0
    for module, path in files.items():
        text = path.read_text()
        lines = text.count("\n")
        total += lines
        rel = str(path.relative_to(ROOT))
        if lines > 700:
            long_files.append((lines, rel))
        tree = ast.parse(text)
        graph[module] = _imports(module, tree, known, path.name == "__init__.py")
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                where = f"{rel}:{node.lineno} {node.name}"
                if length > 80:
                    long_funcs.append((length, where))
                a = node.args
                params = [*a.posonlyargs, *a.args, *a.kwonlyargs]
                count = len([p for p in params if p.arg not in ("self", "cls")])
                count += bool(a.vararg) + bool(a.kwarg)
                if count >= 12:
                    long_sigs.append((count, where))
    circles = cycles(graph)
    sideways = sorted(
        (m, d)
        for m, deps in graph.items()
        for d in deps
        for fe, command in FRONT_ENDS.items()
        if (d == fe or d.startswith(fe + "."))
        and not (m == fe or m.startswith(fe + "."))
        and m not in (command, "utdebug.cli")
    )
    print(f"modules                       {len(files)}")
    print(f"lines                         {total}")
    print(f"functions over 80 lines       {len(long_funcs)}")
    print(f"functions with >=12 params    {len(long_sigs)}")
    print(f"files over 700 lines          {len(long_files)}")
    print(f"import circles                {len(circles)}")
    print(f"sideways front-end imports    {len(sideways)}")
    if args.list:
        for title, rows in (
            ("long functions", long_funcs),
            ("long signatures", long_sigs),
            ("long files", long_files),
        ):
            print(f"\n{title}:")
            for n, where in sorted(rows, reverse=True):
                print(f"  {n:5d} {where}")
        print("\nimport circles:")
        for comp in circles:
            print("  " + " ".join(comp))
        print("\nimports of a front end from outside it (but its command and the cli):")
        for m, d in sideways:
            print(f"  {m} -> {d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
