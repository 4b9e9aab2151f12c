"""How many of the calls in a repository's test files ``utdebug check`` reads as seeds.

    python -m utdebug.benchmarks.seed_reach REPO [REPO ...] [--json rows.jsonl]

For each repository (a local clone): every module-level function of its library modules (the
``.py`` files that are not test files, ``setup.py``, ``conftest.py`` or under ``docs``), and
for each, :func:`utdebug.synth.seeds.gather` over the repository's test files
(:func:`~utdebug.synth.seeds.find_test_files`; docstrings left out: only the tests' calls).
A *call site* is a call of the function's name in a test file (one line; a parametrize table
or a loop gives several seeds from one site); it is *read* when at least one seed came from
it. Printed per repository: functions, functions a test calls, functions with a seed, call
sites, sites read and seeds, and the reasons the others were not read (most frequent first).
Calls are matched by name (``f(...)``, ``mod.f(...)``, ``obj.f(...)``), as ``check`` matches
them, so a method of the same name counts too. Nothing runs: everything is read with ``ast``.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from utdebug.project import module_location
from utdebug.synth.seeds import find_test_files, gather

_NOT_LIBRARY = frozenset({"setup.py", "conftest.py", "noxfile.py"})
_SITE = re.compile(r"^(.+?:\d+)")


def library_functions(root: Path, tests: set[Path]) -> list[tuple[Path, str, str]]:
    """(file, its module's import name, function name) of every module-level function."""
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if path in tests or path.name in _NOT_LIBRARY:
            continue
        if any(p.startswith(".") or p in ("docs", "doc", "build") for p in rel.parts):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        module = module_location(path, root).name
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                out.append((path, module, node.name))
    return out


def _reason(text: str) -> str:
    """A skip reason without its place and its particulars (names, positions)."""
    why = text.split(": ", 1)[-1]
    why = re.sub(r" at line \d+(, column \d+)?", "", why)
    why = re.sub(r"`[^`]*`", "`…`", why)
    why = re.sub(r"\([^()]*\)", "(…)", why)
    return why[:90]


def reach(root: Path) -> dict[str, Any]:
    t0 = time.process_time()
    tests = find_test_files(root)
    functions = library_functions(root, set(tests))
    sites_read: set[str] = set()
    sites_all: set[str] = set()
    reasons: Counter[str] = Counter()
    called = seeded = seeds = 0
    for path, module, name in functions:
        text = path.read_text(encoding="utf-8")
        found = gather(text, name, tests=tests, root=root, module=module)
        test_items = [s for s in found.items if not s.origin.startswith("docstring")]
        test_skips = [s for s in found.skipped if not s.startswith("docstring")]
        read = {m.group(1) for s in test_items if (m := _SITE.match(s.origin))}
        skipped = {m.group(1): s for s in test_skips if (m := _SITE.match(s))}
        sites = {f"{name}@{site}" for site in read | set(skipped)}
        called += bool(sites)
        seeded += bool(read)
        seeds += len(test_items)
        sites_all |= sites
        sites_read |= {f"{name}@{site}" for site in read}
        for site, why in skipped.items():
            if site not in read:
                reasons[_reason(why)] += 1
    return {
        "repository": root.name,
        "functions": len(functions),
        "called": called,
        "seeded": seeded,
        "sites": len(sites_all),
        "read": len(sites_read),
        "seeds": seeds,
        "reasons": reasons.most_common(8),
        "cpu_seconds": round(time.process_time() - t0, 2),
    }


@dataclass(frozen=True, slots=True)
class Options:
    """This script's command line (see :func:`main`)."""

    repos: tuple[Path, ...]
    json: Path | None


def parse(argv: list[str] | None) -> Options:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("repos", nargs="+", type=Path)
    ap.add_argument("--json", type=Path, default=None, help="write one row per repository")
    ns = ap.parse_args(argv)
    return Options(tuple(ns.repos), ns.json)


def main(argv: list[str] | None = None) -> int:
    opts = parse(argv)
    rows = [reach(root.resolve()) for root in opts.repos]
    print(f"{'repository':<16} {'functions':>9} {'called':>7} {'seeded':>7} {'sites':>6} "
          f"{'read':>6} {'share':>6} {'seeds':>6}")  # fmt: skip
    for r in rows:
        share = 100 * r["read"] / r["sites"] if r["sites"] else 0.0
        print(
            f"{r['repository']:<16} {r['functions']:>9} {r['called']:>7} {r['seeded']:>7} "
            f"{r['sites']:>6} {r['read']:>6} {share:>5.1f}% {r['seeds']:>6}"
        )
    for r in rows:
        print(f"\n{r['repository']}: not read ({r['sites'] - r['read']} sites), by reason")
        for why, n in r["reasons"]:
            print(f"  {n:>5}  {why}")
    if opts.json is not None:
        opts.json.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
