"""Decontamination: training problems that overlap an evaluation split are dropped.

Evaluation splits (the ones a trained generator may be reported on): ``hard`` MBPP+Fix (Hard),
``mbpp`` MBPP+Fix, ``he`` HE+Fix, ``he+`` HumanEval+, ``mbpp+`` MBPP+. Each is read through the
same data folder, cache and download as the benchmarks; a split whose file cannot be had (MBPP+Fix
is not mirrored offline) is reported as unavailable, and the run goes on.

A problem overlaps an evaluation problem

- **by description**: their normalised texts (Unicode NFKC, lower case, only letters and
  digits, one space between words) are equal, or the evaluation text (at least
  :data:`MIN_CONTAINED_WORDS` words) occurs whole inside the problem's (a Tulu prompt that
  quotes an MBPP task with more words around it). An evaluation problem's texts are its prompt
  and, for HumanEval, also the entry point's docstring;
- **by code**: a top-level function of the problem's gold code has the same syntax tree as a
  function of the evaluation problem's gold or given (buggy) code, docstrings and type
  annotations aside (formatting, comments and annotations do not hide a copy).
"""

from __future__ import annotations

import ast
import hashlib
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from utdebug.benchmarks.datasets import DatasetError, HeVariant, Split, load_split
from utdebug.mutation import parse_quietly
from utdebug.train.sources import TrainProblem, clean_description, iter_table, mbpp_plus_file

__all__ = [
    "EVAL_NAMES",
    "EVAL_SPLITS",
    "MIN_CONTAINED_WORDS",
    "EvalIndex",
    "Match",
    "build_index",
    "code_keys",
    "default_splits",
    "normalize_text",
]

EVAL_SPLITS = ("hard", "mbpp", "he", "he+", "mbpp+")
EVAL_NAMES = {
    "hard": "MBPP+Fix (Hard)",
    "mbpp": "MBPP+Fix",
    "he": "HE+Fix",
    "he+": "HumanEval+",
    "mbpp+": "MBPP+",
}
MIN_CONTAINED_WORDS = 8
_WORD = re.compile(r"[a-z0-9]+")


def normalize_text(text: str) -> str:
    return " ".join(_WORD.findall(unicodedata.normalize("NFKC", text).lower()))


def code_keys(code: str) -> set[str]:
    """Hashes of the top-level functions of ``code`` (and of methods of its classes), without
    docstrings and annotations; empty when it does not parse."""
    tree = parse_quietly(code)
    if tree is None:
        return set()
    out: set[str] = set()
    nodes: list[ast.stmt] = list(tree.body)
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            nodes += node.body
    for node in nodes:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out.add(_function_key(node))
    return out


def _function_key(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    for sub in ast.walk(node):
        if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef):
            sub.returns = None
            for arg in (*sub.args.posonlyargs, *sub.args.args, *sub.args.kwonlyargs):
                arg.annotation = None
            for star in (sub.args.vararg, sub.args.kwarg):
                if star is not None:
                    star.annotation = None
        body = getattr(sub, "body", None)
        if (
            isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            sub.body = body[1:] or [ast.Pass()]
    dump = ast.dump(node, annotate_fields=False, include_attributes=False)
    return hashlib.sha256(dump.encode()).hexdigest()


def _docstring(code: str, entry_point: str) -> str | None:
    tree = parse_quietly(code)
    if tree is None:
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == entry_point:
            return ast.get_docstring(node)
    return None


@dataclass(frozen=True, slots=True)
class Match:
    split: str
    task_id: str
    by: str
    """``description`` or ``code``."""

    def to_json(self) -> dict[str, str]:
        return {"split": self.split, "task_id": self.task_id, "by": self.by}


@dataclass(slots=True)
class EvalIndex:
    """The evaluation problems of the chosen splits, indexed by description and code."""

    splits: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per split: ``status`` (``used``/``unavailable``), ``problems``, ``files`` (name ->
    sha256) or ``reason``."""
    _exact: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    _starts: dict[tuple[str, ...], list[tuple[tuple[str, ...], str, str]]] = field(
        default_factory=dict
    )
    _codes: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def add(self, split: str, task_id: str, texts: Iterable[str], codes: Iterable[str]) -> None:
        for text in texts:
            norm = normalize_text(text)
            if not norm:
                continue
            self._exact.setdefault(norm, []).append((split, task_id))
            words = tuple(norm.split())
            if len(words) >= MIN_CONTAINED_WORDS:
                start = words[:MIN_CONTAINED_WORDS]
                self._starts.setdefault(start, []).append((words, split, task_id))
        for code in codes:
            for key in code_keys(code):
                self._codes.setdefault(key, []).append((split, task_id))

    def matches(self, problem: TrainProblem) -> list[Match]:
        found: dict[tuple[str, str, str], Match] = {}
        norm = normalize_text(problem.description)
        for split, task in self._exact.get(norm, []):
            found.setdefault((split, task, "description"), Match(split, task, "description"))
        words = norm.split()
        n = MIN_CONTAINED_WORDS
        for i in range(len(words) - n + 1):
            for target, split, task in self._starts.get(tuple(words[i : i + n]), []):
                if tuple(words[i : i + len(target)]) == target:
                    found.setdefault(
                        (split, task, "description"), Match(split, task, "description")
                    )
        for key in code_keys(problem.code):
            for split, task in self._codes.get(key, []):
                found.setdefault((split, task, "code"), Match(split, task, "code"))
        return list(found.values())


def default_splits(source: str) -> list[str]:
    """Every evaluation split but the source's own (a source is not checked against itself:
    a model trained on MBPP+ must not be reported on MBPP+)."""
    return [s for s in EVAL_SPLITS if s != source]


def build_index(
    splits: Sequence[str],
    *,
    data_dir: Path | None,
    cache_dir: Path | None,
    download: bool = True,
    verify: bool = True,
) -> EvalIndex:
    index = EvalIndex()
    for split in splits:
        if split not in EVAL_SPLITS:
            raise ValueError(f"unknown evaluation split {split!r}; known: {', '.join(EVAL_SPLITS)}")
        try:
            n, files = _index_split(index, split, data_dir, cache_dir, download, verify)
        except DatasetError as e:
            index.splits[split] = {
                "name": EVAL_NAMES[split],
                "status": "unavailable",
                "reason": str(e),
            }
            continue
        index.splits[split] = {
            "name": EVAL_NAMES[split],
            "status": "used",
            "problems": n,
            "files": files,
        }
    return index


def _index_split(
    index: EvalIndex,
    split: str,
    data_dir: Path | None,
    cache_dir: Path | None,
    download: bool,
    verify: bool,
) -> tuple[int, dict[str, str]]:
    kw: dict[str, Any] = {
        "data_dir": data_dir,
        "cache_dir": cache_dir,
        "download": download,
        "verify": verify,
    }
    if split == "mbpp+":
        path, sha = mbpp_plus_file(data_dir, cache_dir, download, verify)
        n = 0
        for row in iter_table(path):
            if isinstance(row, str):
                continue
            n += 1
            task = f"mbpp+/{str(row.get('task_id', n)).rpartition('/')[2]}"
            prompt = row.get("prompt")
            code = row.get("canonical_solution")
            index.add(
                split,
                task,
                [clean_description(prompt)] if isinstance(prompt, str) else [],
                [code] if isinstance(code, str) else [],
            )
        return n, {path.name: sha}
    ls = load_split(
        Split(split), he_variant=HeVariant.RUNNABLE if split == "he" else HeVariant.BODY, **kw
    )
    for p in ls.problems:
        texts = [p.prompt]
        doc = _docstring(p.gold, p.entry_point)
        if doc:
            texts.append(doc)
        codes = [p.gold] if split == "he+" else [p.gold, p.code]
        index.add(split, p.task_id, texts, codes)
    return len(ls.problems), dict(ls.sources)
