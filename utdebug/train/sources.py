"""Where training problems come from: a description and gold code (and, when the source has
them, test inputs).

- ``mbpp+``: MBPP+ (``MbppPlus.jsonl.gz`` v0.2.0, else the early ``MbppPlus-prerelease.jsonl.gz``
  when that is the one in the data folder); the description is the task sentence (the quotes and
  example asserts of the prompt removed), the inputs ``base_input + plus_input`` as JSON gives
  them (tuples come as lists).
- ``he+``: HumanEval+ (``HumanEvalPlus.jsonl.gz``); the description is the prompt stub, as
  HE+Fix shows it.
- ``tulu3``: the Tulu-3 SFT mixture, filtered as the paper does (:mod:`utdebug.train.tulu`).
- ``table``: any JSONL (``.jsonl``, ``.jsonl.gz``), JSON list or Parquet file, or a folder of
  them, with a description (``description``, ``prompt``, ``question``, ``problem``,
  ``instruction`` or ``text``), gold code (``code``, ``solution``, ``canonical_solution`` or
  ``gold``; a Markdown reply is read for its code), optionally an entry point (``entry_point``,
  ``function_name``), an id (``task_id``, ``id``, ``problem_id``) and test inputs (``inputs``:
  lists of positional arguments).

Without an entry point, the function the description names (``name(``) is taken, else the last
top-level function no other one calls. Rows that cannot become a problem are counted by reason,
never fatal. Files are found through the same data folder (``--data-dir``,
``$UTDEBUG_DATA_DIR``), cache and download as the benchmark files, and each file's sha256 is
recorded.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from utdebug.agents.parsing import ParseFailure
from utdebug.agents.reply_code import find_code
from utdebug.data.datasets import (
    MBPP_PLUS_FILE,
    MBPP_PLUS_PRERELEASE_FILE,
    DatasetError,
    Split,
    resolve_file,
    sha256_of,
)
from utdebug.data.splits import load_split
from utdebug.literals import LiteralError, canonical_repr, closing_bracket, literal_value
from utdebug.mutation import parse_quietly

__all__ = [
    "SOURCES",
    "Loaded",
    "TrainProblem",
    "clean_description",
    "iter_table",
    "literal_calls",
    "load_he_plus",
    "load_mbpp_plus",
    "load_table",
    "mbpp_plus_file",
    "pick_entry_point",
    "problem_from_code",
    "signature_of",
]

SOURCES = ("mbpp+", "he+", "tulu3", "table")

DESCRIPTION_FIELDS = ("description", "prompt", "question", "problem", "instruction", "text")
CODE_FIELDS = ("code", "solution", "canonical_solution", "gold")
ENTRY_FIELDS = ("entry_point", "entrypoint", "function_name")
ID_FIELDS = ("task_id", "id", "problem_id")
TABLE_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".parquet")


@dataclass(frozen=True, slots=True)
class TrainProblem:
    """One problem to make training data from."""

    source: str
    problem_id: str
    description: str
    code: str
    """The gold code."""
    entry_point: str
    signature: str
    inputs: tuple[tuple[Any, ...], ...] = ()
    """Known test inputs (positional arguments); empty when the source has none."""
    atol: float = 0.0
    """The source's float tolerance for comparing outputs (MBPP+/HumanEval+ ``atol``)."""

    def fingerprint(self) -> str:
        """A hash of everything the problem is (its content, not where it was read)."""
        raw = json.dumps(
            [
                self.source,
                self.problem_id,
                self.description,
                self.code,
                self.entry_point,
                self.signature,
                canonical_repr(self.inputs),
                self.atol,
            ],
            ensure_ascii=False,
        )
        return hashlib.sha256(raw.encode()).hexdigest()


@dataclass(slots=True)
class Loaded:
    """The problems of a source, the files read and the rows dropped (by reason)."""

    name: str
    problems: list[TrainProblem] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)
    """``{"name", "path", "sha256", "rows"}`` (or ``"dataset"``/``"revision"`` for a download
    through Hugging Face ``datasets``)."""
    rows: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)

    def drop(self, reason: str) -> None:
        self.dropped[reason] += 1


# --- helpers ------------------------------------------------------------------------------------


_QUOTES = re.compile(r"^\s*(?:'''|\"\"\")\s*$")


def clean_description(prompt: str) -> str:
    """An MBPP-style prompt as a task sentence: surrounding triple quotes and example
    ``assert`` lines removed."""
    lines = [
        line
        for line in prompt.strip().splitlines()
        if not _QUOTES.match(line) and not line.lstrip().startswith("assert ")
    ]
    text = "\n".join(lines).strip()
    for q in ("'''", '"""'):
        if text.startswith(q) and text.endswith(q) and len(text) >= 6:
            text = text[3:-3].strip()
    return text


_parse = parse_quietly


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def pick_entry_point(code: str, description: str) -> str | None:
    """The function a problem is about: the top-level one the description names (``name(``),
    else the last top-level one that no other top-level function calls."""
    tree = _parse(code)
    if tree is None:
        return None
    names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    if not names:
        return None
    for name in reversed(names):
        if re.search(rf"\b{re.escape(name)}\s*\(", description):
            return name
    called: set[str] = set()
    for node in tree.body:
        if isinstance(node, _DEFS):
            for sub in ast.walk(node):
                if (
                    isinstance(sub, ast.Call)
                    and isinstance(sub.func, ast.Name)
                    and sub.func.id != node.name
                ):
                    called.add(sub.func.id)
    free = [n for n in names if n not in called]
    return (free or names)[-1]


def signature_of(code: str, entry_point: str) -> str | None:
    """``name(a, b: int, *args, **kw)`` of the top-level function ``entry_point`` (annotations
    kept, defaults and the return annotation left out, as MBPP+Fix writes signatures)."""
    tree = _parse(code)
    if tree is None:
        return None
    defs = [n for n in tree.body if isinstance(n, _DEFS) and n.name == entry_point]
    if not defs:
        return None
    a = defs[-1].args

    def one(arg: ast.arg) -> str:
        return f"{arg.arg}: {ast.unparse(arg.annotation)}" if arg.annotation else arg.arg

    parts = [one(x) for x in (*a.posonlyargs, *a.args)]
    if a.vararg is not None:
        parts.append("*" + one(a.vararg))
    elif a.kwonlyargs:
        parts.append("*")
    parts += [one(x) for x in a.kwonlyargs]
    if a.kwarg is not None:
        parts.append("**" + one(a.kwarg))
    return f"{entry_point}({', '.join(parts)})"


def literal_calls(text: str, entry_point: str, *, limit: int = 50) -> list[tuple[Any, ...]]:
    """Argument tuples of the calls ``entry_point(...)`` in ``text`` (code or prose) whose
    arguments are all positional literals, in order, without repeats."""
    out: list[tuple[Any, ...]] = []
    seen: set[str] = set()
    for m in re.finditer(rf"(?<![\w.]){re.escape(entry_point)}\s*\(", text):
        close = closing_bracket(text, m.end() - 1)
        if close is None:
            continue
        parsed = parse_quietly(text[m.start() : close + 1])
        if parsed is None or len(parsed.body) != 1 or not isinstance(parsed.body[0], ast.Expr):
            continue
        node = parsed.body[0].value
        if not isinstance(node, ast.Call) or node.keywords:
            continue
        if any(isinstance(arg, ast.Starred) for arg in node.args):
            continue
        try:
            args = tuple(literal_value(arg) for arg in node.args)
        except (LiteralError, RecursionError):
            continue
        key = canonical_repr(args)
        if key not in seen:
            seen.add(key)
            out.append(args)
            if len(out) >= limit:
                break
    return out


def problem_from_code(
    source: str,
    problem_id: str,
    description: str,
    code: str,
    entry_point: str | None = None,
    inputs: Sequence[Sequence[Any]] = (),
    atol: float = 0.0,
) -> TrainProblem | str:
    """A problem, or the reason the row cannot be one. Inputs found in the description and in
    the code's own module-level calls (an example of use) are added to ``inputs``."""
    if not description.strip():
        return "empty description"
    tree = _parse(code)
    if tree is None:
        return "the code does not parse"
    if entry_point is None:
        entry_point = pick_entry_point(code, description)
        if entry_point is None:
            return "no top-level function in the code"
    signature = signature_of(code, entry_point)
    if signature is None:
        return "the code does not define its entry point at top level"
    known = [tuple(i) for i in inputs]
    examples = literal_calls(description, entry_point)
    module_level = "\n".join(
        ast.get_source_segment(code, n) or "" for n in tree.body if not isinstance(n, _DEFS)
    )
    examples += literal_calls(module_level, entry_point)
    seen = {canonical_repr(i) for i in known}
    for args in examples:
        if canonical_repr(args) not in seen:
            seen.add(canonical_repr(args))
            known.append(args)
    return TrainProblem(
        source=source,
        problem_id=problem_id,
        description=description.strip(),
        code=code,
        entry_point=entry_point,
        signature=signature,
        inputs=tuple(known),
        atol=atol,
    )


def _inputs_of(value: Any) -> list[tuple[Any, ...]] | None:
    if not isinstance(value, list):
        return None
    if not all(isinstance(args, list | tuple) for args in value):
        return None
    return [tuple(args) for args in value]


def _dedup(inputs: Sequence[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    seen: set[str] = set()
    out: list[tuple[Any, ...]] = []
    for args in inputs:
        key = canonical_repr(args)
        if key not in seen:
            seen.add(key)
            out.append(args)
    return out


def _kind(value: Any) -> type | None:
    for t in (tuple, list, set, frozenset, dict):
        if isinstance(value, t):
            return t
    return None


def shape_like(value: Any, template: Any, depth: int = 0) -> Any:
    """``value`` read from JSON (where tuples and sets are lists) with the container types of
    ``template``, a literal of the same argument written in Python (an example call): a list
    becomes a tuple (or a set) where the template has one, recursively; items follow the
    template's item at the same place, or its first item when the template's items are all of
    one kind. Anything that does not fit is left as it is."""
    if depth > 20:
        return value
    want = _kind(template)
    if want is dict and isinstance(value, dict):
        tvals = list(template.values())
        return {
            k: shape_like(v, template[k] if k in template else _one_kind(tvals), depth + 1)
            for k, v in value.items()
        }
    if want not in (tuple, list, set, frozenset) or not isinstance(value, list | tuple):
        return value
    items = list(template)
    if len(items) == len(value) and items:
        shaped = [shape_like(v, t, depth + 1) for v, t in zip(value, items, strict=True)]
    else:
        model = _one_kind(items)
        shaped = [shape_like(v, model, depth + 1) for v in value]
    if want in (set, frozenset):
        try:
            return want(shaped)
        except TypeError:  # unhashable items: not the set the template is
            return value
    return want(shaped)


_NO_TEMPLATE = object()


def _one_kind(items: Sequence[Any]) -> Any:
    """The first item when every item has the same container kind (else no template)."""
    if items and len({_kind(i) for i in items}) == 1 and _kind(items[0]) is not None:
        return items[0]
    return _NO_TEMPLATE


def shape_inputs(
    inputs: Sequence[tuple[Any, ...]], examples: Sequence[tuple[Any, ...]]
) -> list[tuple[Any, ...]]:
    """JSON inputs with the container types of the example calls (``shape_like`` per
    argument, the first example of the same arity as the template, used only where every
    example of that arity agrees on the argument's kind)."""
    out = []
    for args in inputs:
        same = [e for e in examples if len(e) == len(args)]
        if not same:
            out.append(tuple(args))
            continue
        shaped = []
        for i, a in enumerate(args):
            kinds = {_kind(e[i]) for e in same}
            shaped.append(shape_like(a, same[0][i]) if len(kinds) == 1 else a)
        out.append(tuple(shaped))
    return out


def _atol(value: Any) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return 0.0


# --- files ------------------------------------------------------------------------------------


def table_files(path: Path) -> list[Path]:
    """``path`` itself, or the JSONL/JSON/Parquet files under a folder (sorted)."""
    path = Path(path).expanduser()
    if path.is_dir():
        found = [p for p in sorted(path.rglob("*")) if p.is_file() and _is_table(p)]
        if not found:
            raise DatasetError(f"no .jsonl, .jsonl.gz, .json or .parquet file under {path}")
        return found
    if not path.is_file():
        raise DatasetError(f"{path} does not exist")
    return [path]


def _is_table(path: Path) -> bool:
    return any(path.name.endswith(s) for s in TABLE_SUFFIXES)


def iter_table(path: Path) -> Iterator[dict[str, Any] | str]:
    """The rows of one file as dicts (a row that is not a JSON object: the reason, as text)."""
    name = path.name
    if name.endswith(".parquet"):
        yield from _parquet_rows(path)
        return
    if name.endswith(".json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise DatasetError(f"cannot read {path}: {e}") from None
        if not isinstance(data, list):
            raise DatasetError(f"{path}: a .json file must hold a list of rows")
        for row in data:
            yield row if isinstance(row, dict) else "row is not a JSON object"
        return
    opener = gzip.open if name.endswith(".gz") else open
    try:
        with opener(path, "rb") as handle:
            for line in handle:
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except (UnicodeDecodeError, json.JSONDecodeError):
                    yield "line is not valid JSON"
                    continue
                yield row if isinstance(row, dict) else "row is not a JSON object"
    except (OSError, EOFError) as e:
        raise DatasetError(f"cannot read {path}: {e}") from None


def _parquet_rows(path: Path) -> Iterator[dict[str, Any]]:
    try:
        import pyarrow.parquet as pq  # optional: only Parquet sources need it
    except ImportError:
        raise DatasetError(
            f"{path} is Parquet, which needs pyarrow: pip install pyarrow (or the train extra: "
            "pip install 'utdebug[train]'), or give a JSONL file"
        ) from None
    try:
        table = pq.ParquetFile(path)
        for batch in table.iter_batches(batch_size=1024):
            yield from batch.to_pylist()
    except (OSError, ValueError) as e:
        raise DatasetError(f"cannot read {path}: {e}") from None


def file_info(path: Path, rows: int) -> dict[str, Any]:
    return {"name": path.name, "path": str(path), "sha256": sha256_of(path), "rows": rows}


def _first(row: dict[str, Any], names: Sequence[str]) -> Any:
    for name in names:
        if name in row and row[name] is not None:
            return row[name]
    return None


# --- sources ----------------------------------------------------------------------------------


def load_table(path: Path, source: str = "table") -> Loaded:
    """Any JSONL/JSON/Parquet table of (description, code[, entry point][, inputs])."""
    loaded = Loaded(source)
    for file in table_files(path):
        rows = 0
        for n, row in enumerate(iter_table(file), start=1):
            rows += 1
            loaded.rows += 1
            if isinstance(row, str):
                loaded.drop(row)
                continue
            description = _first(row, DESCRIPTION_FIELDS)
            code = _first(row, CODE_FIELDS)
            if not isinstance(description, str) or not isinstance(code, str):
                loaded.drop("no description or code field")
                continue
            if "```" in code:
                found = find_code(code)
                if isinstance(found, ParseFailure):
                    loaded.drop("no code in the code field")
                    continue
                code = found
            entry = _first(row, ENTRY_FIELDS)
            ident = _first(row, ID_FIELDS)
            pid = f"{source}/{ident}" if ident is not None else f"{source}/{file.name}:{n}"
            inputs = _inputs_of(row.get("inputs")) or []
            made = problem_from_code(
                source,
                pid,
                clean_description(description),
                code,
                entry if isinstance(entry, str) and entry else None,
                inputs,
                _atol(row.get("atol")),
            )
            if isinstance(made, str):
                loaded.drop(made)
            else:
                loaded.problems.append(made)
        loaded.files.append(file_info(file, rows))
    return loaded


def mbpp_plus_file(
    data_dir: Path | None, cache_dir: Path | None, download: bool, verify: bool
) -> tuple[Path, str]:
    """v0.2.0 when it is at hand, else the early file when that is, else v0.2.0 downloaded."""
    for name in (MBPP_PLUS_FILE, MBPP_PLUS_PRERELEASE_FILE):
        try:
            return resolve_file(
                name, data_dir=data_dir, cache_dir=cache_dir, download=False, verify=verify
            )
        except DatasetError as e:
            if "not found" not in str(e):
                raise
    return resolve_file(
        MBPP_PLUS_FILE, data_dir=data_dir, cache_dir=cache_dir, download=download, verify=verify
    )


def load_mbpp_plus(
    *,
    data_dir: Path | None = None,
    cache_dir: Path | None = None,
    download: bool = True,
    verify: bool = True,
) -> Loaded:
    path, sha = mbpp_plus_file(data_dir, cache_dir, download, verify)
    loaded = Loaded("mbpp+")
    if path.name == MBPP_PLUS_PRERELEASE_FILE:
        loaded.notes.append(
            f"{path.name} is the early MBPP+ (399 tasks), not the v0.2.0 release (378 tasks)"
        )
    for row in iter_table(path):
        loaded.rows += 1
        if isinstance(row, str):
            loaded.drop(row)
            continue
        task = row.get("task_id")
        number = re.fullmatch(r"(?:Mbpp/)?(\d+)", str(task))
        prompt, code, entry = (
            row.get("prompt"),
            row.get("canonical_solution"),
            row.get("entry_point"),
        )
        if number is None or not all(isinstance(x, str) for x in (prompt, code, entry)):
            loaded.drop("missing task_id, prompt, canonical_solution or entry_point")
            continue
        inputs = (_inputs_of(row.get("base_input")) or []) + (
            _inputs_of(row.get("plus_input")) or []
        )
        # JSON has no tuples: the example asserts (in the prompt, or the `assertion` field of
        # the early file) say where the task takes tuples, as MBPP+'s own tests pass them.
        asserts = "\n".join(str(row.get(k) or "") for k in ("prompt", "assertion", "test"))
        inputs = shape_inputs(inputs, literal_calls(asserts, str(entry)))
        made = problem_from_code(
            "mbpp+",
            f"mbpp+/{number.group(1)}",
            clean_description(str(prompt)),
            str(code),
            str(entry),
            _dedup(inputs),
            _atol(row.get("atol")),
        )
        if isinstance(made, str):
            loaded.drop(made)
        else:
            loaded.problems.append(made)
    loaded.files.append({"name": path.name, "path": str(path), "sha256": sha, "rows": loaded.rows})
    return loaded


def load_he_plus(
    *,
    data_dir: Path | None = None,
    cache_dir: Path | None = None,
    download: bool = True,
    verify: bool = True,
) -> Loaded:
    split = load_split(
        Split.HE_PLUS, data_dir=data_dir, cache_dir=cache_dir, download=download, verify=verify
    )
    loaded = Loaded("he+")
    loaded.rows = len(split.problems) + len(split.errors)
    for err in split.errors:
        loaded.drop(err.message)
    for p in split.problems:
        made = problem_from_code(
            "he+",
            p.task_id,
            p.prompt,
            p.gold,
            p.entry_point,
            p.tests.inputs,
            p.tests.check.atol,
        )
        if isinstance(made, str):
            loaded.drop(made)
        else:
            loaded.problems.append(made)
    for name, sha in split.sources.items():
        loaded.files.append({"name": name, "sha256": sha, "rows": loaded.rows})
    return loaded
