"""docs/architecture.md is true to the tree: its module map lists every package module and
nothing else, every module it names exists, and the words it retires are used nowhere else."""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
MAP_LINE = re.compile(r"^- `(utdebug/(?:[\w]+/)*)`: (.*)$")
TICKED = re.compile(r"`([^`\s]+)`")


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end >= 0 else len(text)]


def _is_package(folder: Path) -> bool:
    return (folder / "__init__.py").is_file()


def _tree() -> dict[str, list[str]]:
    """Each package folder (from the repository root, ending in ``/``) -> its modules and
    subpackages, in the map's order."""
    out: dict[str, list[str]] = {}
    todo = [ROOT / "utdebug"]
    while todo:
        folder = todo.pop()
        subs = sorted(p for p in folder.iterdir() if p.is_dir() and _is_package(p))
        names = [p.stem for p in folder.glob("*.py") if p.stem != "__init__"]
        names += [p.name + "/" for p in subs]
        out[folder.relative_to(ROOT).as_posix() + "/"] = sorted(names, key=lambda n: n.rstrip("/"))
        todo.extend(subs)
    return out


def _mapped() -> dict[str, list[str]]:
    text = _section(DOC.read_text(encoding="utf-8"), "## Module map")
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        m = MAP_LINE.match(line)
        if m:
            out[m.group(1)] = [n.strip() for n in m.group(2).split(",")]
    return out


def test_the_module_map_is_the_tree() -> None:
    tree, mapped = _tree(), _mapped()
    assert mapped, "docs/architecture.md has no module map"
    wrong = {
        folder for folder in tree.keys() | mapped.keys() if tree.get(folder) != mapped.get(folder)
    }
    expected = "\n".join(
        f"- `{folder}`: {', '.join(tree[folder])}" for folder in sorted(tree) if folder in wrong
    )
    assert not wrong, f"the module map of docs/architecture.md should read:\n{expected}"


def _module_file(path: str) -> Path | None:
    for where in (ROOT, ROOT / "utdebug"):
        p = where / path
        for f in (p.with_suffix(".py"), p / "__init__.py"):
            if f.is_file():
                return f
        if p.is_dir():
            return p
    return None


def _exists(name: str) -> bool:
    """``name`` is a module path (``data/splits.py``, ``engine/program``), a dotted module
    (``utdebug.check.formats``), either one followed by a name the module defines
    (``sandbox/executor.Sandbox``), or a folder; from the root or from ``utdebug/``."""
    if "/" in name:
        folder, _, last = name.rstrip("/").rpartition("/")
        module, _, attr = last.removesuffix(".py").partition(".")
        path = f"{folder}/{module}" if folder else module
    else:
        path, attr = name.replace(".", "/"), ""
        if _module_file(path) is None:
            path, _, attr = path.rpartition("/")
    found = _module_file(path)
    if found is None or not attr:
        return found is not None
    text = found.read_text(encoding="utf-8") if found.is_file() else ""
    return re.search(rf"^\s*(?:def |class |async def )?{re.escape(attr)}\b", text, re.M) is not None


def test_every_module_the_page_names_exists() -> None:
    text = DOC.read_text(encoding="utf-8")
    retired = text.index("| retired | say instead |")
    text = text[:retired] + text[text.index("\n## ", retired) :]
    named = set()
    for token in TICKED.findall(text):
        if any(ch in token for ch in "<>*:()[]=,") or token.startswith(("-", ".", "/")):
            continue
        path_like = "/" in token and re.fullmatch(r"[\w./]+", token)
        dotted = re.fullmatch(r"utdebug(\.\w+)+", token)
        if path_like or dotted:
            named.add(token)
    assert len(named) > 30  # the page names modules; the pattern still finds them
    missing = sorted(n for n in named if not _exists(n))
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def _retired() -> list[str]:
    table = _section(DOC.read_text(encoding="utf-8"), "## Words with one meaning")
    table = table[table.index("| retired | say instead |") :]
    words = []
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        words += TICKED.findall(line.split("|")[1])
    return words


def _files() -> list[Path]:
    out = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "pyproject.toml"]
    for top in ("utdebug", "agents", "sandbox", "benchmarks", "tests", "docs", "scripts"):
        for folder, dirs, files in os.walk(ROOT / top):
            dirs[:] = [d for d in dirs if not d.startswith((".", "__pycache__"))]
            out += [Path(folder, f) for f in files if f.endswith((".py", ".md", ".toml"))]
    return [p for p in out if p.is_file()]


def test_retired_words_are_used_nowhere_else() -> None:
    words = _retired()
    pattern = re.compile("|".join(rf"(?<!\w){re.escape(w)}(?!\w)" for w in words))
    old_import = "from utdebug.engine." + "targets import classify"
    assert pattern.search(old_import)  # the table is read, and finds what it retires
    assert not pattern.search(old_import.replace("targets", "target_kinds"))
    found = []
    for path in _files():
        text = path.read_text(encoding="utf-8", errors="replace")
        if path == DOC:
            text = text.replace(_section(text, "## Words with one meaning"), "")
        for number, line in enumerate(text.splitlines(), 1):
            if pattern.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "retired words (docs/architecture.md):\n" + "\n".join(found)
