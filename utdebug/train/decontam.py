"""Decontamination: training problems that overlap an evaluation split are dropped.

Evaluation splits (the ones a trained generator may be reported on): ``hard`` MBPP+Fix (Hard),
``mbpp`` MBPP+Fix, ``he`` HE+Fix, ``he+`` HumanEval+, ``mbpp+`` MBPP+. Each is read through the
same data folder, cache and download as the benchmarks; a split whose file cannot be had (MBPP+Fix
is not mirrored offline) is reported as unavailable, and the run goes on.

A problem overlaps an evaluation problem

- **by description**: their normalised texts (Unicode NFKC, lower case, only letters and
  digits, one space between words) are equal, or the evaluation text (at least
  :data:`MIN_CONTAINED_WORDS` words) occurs whole inside the problem's (a Tulu prompt that
  quotes an MBPP task with more words around it), or their content words (the words less
  :data:`FUNCTION_WORDS`) are the same set, or nearly (Jaccard at least
  :data:`SIMILAR_DESCRIPTION`; at least :data:`MIN_SIMILAR_WORDS` of them): a reworded copy.
  An evaluation problem's texts are its prompt and, for HumanEval, also the entry point's
  docstring;
- **by code**: a top-level function of the problem's gold code has the same syntax tree as a
  function of the evaluation problem's gold or given (buggy) code, docstrings and type
  annotations aside (formatting, comments and annotations do not hide a copy), and with the
  names it binds (the function's own, its parameters, its local variables) renamed in order of
  appearance (a copy under other identifiers: ``bell_number`` / ``bell_Number``); names it does
  not bind (builtins, other functions, attributes) stay as they are.

Each match says how it was made (``how``) and what it matched (``matched``: the evaluation
text, or the evaluation function's name).
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

from utdebug.data.datasets import DatasetError, HeVariant, Split
from utdebug.data.splits import load_split
from utdebug.mutation import drop_docstring, parse_quietly
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
    "renamed_code_keys",
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
SIMILAR_DESCRIPTION = 0.9
"""Jaccard similarity of two descriptions' content words from which they are one reworded
text (below 10 content words: the same content words)."""
MIN_SIMILAR_WORDS = 4
"""Descriptions with fewer content words match only when equal as text."""
FUNCTION_WORDS = frozenset(
    {
        "a", "an", "the", "given", "of", "in", "to", "from", "for", "and", "or", "that",
        "which", "is", "are", "be", "it", "its", "this", "these", "those", "with", "by", "on",
        "as", "at", "into", "whether", "write", "python", "function", "program", "please",
    }
)  # fmt: skip
"""Words a rewording adds or drops without changing the task ("from a string" / "from the
given string"). Negations (``not``, ``non``) and every other word are content: "first
repeated character" and "first non-repeated character" are two tasks."""
_WORD = re.compile(r"[a-z0-9]+")


def normalize_text(text: str) -> str:
    return " ".join(_WORD.findall(unicodedata.normalize("NFKC", text).lower()))


def code_keys(code: str) -> set[str]:
    """Hashes of the top-level functions of ``code`` (and of methods of its classes), without
    docstrings and annotations; empty when it does not parse."""
    return {k for k, _ in _functions(code, renamed=False)}


def renamed_code_keys(code: str) -> set[str]:
    """:func:`code_keys` with the names each function binds renamed in order of appearance."""
    return {k for k, _ in _functions(code, renamed=True)}


def _functions(code: str, *, renamed: bool) -> list[tuple[str, str]]:
    """``(key, name)`` of the top-level functions of ``code`` and the methods of its classes."""
    tree = parse_quietly(code)
    if tree is None:
        return []
    out: list[tuple[str, str]] = []
    nodes: list[ast.stmt] = list(tree.body)
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            nodes += node.body
    for node in nodes:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = node.name
            if renamed:
                node = _Renamer(_bound_names(node)).visit(node)
            out.append((_function_key(node), name))
    return out


def _bound_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names ``fn`` binds: its own, its parameters', and any name assigned, looped over,
    imported or defined inside it (nested functions included)."""
    bound = {fn.name}
    for node in ast.walk(fn):
        if isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.ExceptHandler):
            bound.add(node.name or "")
        elif isinstance(node, ast.alias):
            bound.add(node.asname or node.name.partition(".")[0])
    return bound


class _Renamer(ast.NodeTransformer):
    """Bound names to ``v0``, ``v1``, ... in the order the source first uses them."""

    def __init__(self, bound: set[str]) -> None:
        self.bound = bound
        self.names: dict[str, str] = {}

    def _new(self, name: str) -> str:
        if name not in self.bound:
            return name
        return self.names.setdefault(name, f"v{len(self.names)}")

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.name = self._new(node.name)
        return self.generic_visit(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        node.name = self._new(node.name)
        return self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        node.name = self._new(node.name)
        return self.generic_visit(node)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg = self._new(node.arg)
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self._new(node.id)
        return node

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.AST:
        if node.name:
            node.name = self._new(node.name)
        return self.generic_visit(node)


def _function_key(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    for sub in ast.walk(node):
        if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef):
            sub.returns = None
            for arg in (*sub.args.posonlyargs, *sub.args.args, *sub.args.kwonlyargs):
                arg.annotation = None
            for star in (sub.args.vararg, sub.args.kwarg):
                if star is not None:
                    star.annotation = None
        if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            drop_docstring(sub)
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
    how: str = ""
    """``equal``, ``contained``, ``similar content words (J)`` (descriptions); ``same syntax tree``,
    ``same syntax tree, identifiers renamed`` (code)."""
    matched: str = ""
    """The evaluation text matched, or the name of the evaluation function."""

    def to_json(self) -> dict[str, str]:
        return {
            "split": self.split,
            "task_id": self.task_id,
            "by": self.by,
            "how": self.how,
            "matched": self.matched,
        }


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
    _codes: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    _renamed: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    _word_sets: list[tuple[frozenset[str], str, str, str]] = field(default_factory=list)
    _by_word: dict[str, list[int]] = field(default_factory=dict)

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
            bag = frozenset(words) - FUNCTION_WORDS
            if len(bag) >= MIN_SIMILAR_WORDS:
                for w in bag:
                    self._by_word.setdefault(w, []).append(len(self._word_sets))
                self._word_sets.append((bag, split, task_id, text.strip()))
        for code in codes:
            for key, name in _functions(code, renamed=False):
                self._codes.setdefault(key, []).append((split, task_id, name))
            for key, name in _functions(code, renamed=True):
                self._renamed.setdefault(key, []).append((split, task_id, name))

    def matches(self, problem: TrainProblem) -> list[Match]:
        found: dict[tuple[str, str, str], Match] = {}

        def hit(split: str, task: str, by: str, how: str, matched: str) -> None:
            found.setdefault((split, task, by), Match(split, task, by, how, matched))

        norm = normalize_text(problem.description)
        for split, task in self._exact.get(norm, []):
            hit(split, task, "description", "equal", problem.description.strip()[:300])
        words = norm.split()
        n = MIN_CONTAINED_WORDS
        for i in range(len(words) - n + 1):
            for target, split, task in self._starts.get(tuple(words[i : i + n]), []):
                if tuple(words[i : i + len(target)]) == target:
                    hit(split, task, "description", "contained", " ".join(target)[:300])
        for split, task, text, j in self._similar(frozenset(words) - FUNCTION_WORDS):
            hit(split, task, "description", f"similar content words ({j:.2f})", text[:300])
        for key, _ in _functions(problem.code, renamed=False):
            for split, task, name in self._codes.get(key, []):
                hit(split, task, "code", "same syntax tree", name)
        for key, _ in _functions(problem.code, renamed=True):
            for split, task, name in self._renamed.get(key, []):
                hit(split, task, "code", "same syntax tree, identifiers renamed", name)
        return list(found.values())

    def _similar(self, bag: frozenset[str]) -> list[tuple[str, str, str, float]]:
        """Evaluation texts whose word sets have a Jaccard similarity with ``bag`` of at least
        :data:`SIMILAR_DESCRIPTION` (candidates: the texts sharing a word with it)."""
        if len(bag) < MIN_SIMILAR_WORDS:
            return []
        shared: dict[int, int] = {}
        for w in bag:
            for i in self._by_word.get(w, ()):
                shared[i] = shared.get(i, 0) + 1
        out = []
        for i, common in shared.items():
            other, split, task, text = self._word_sets[i]
            j = common / (len(bag) + len(other) - common)
            if j >= SIMILAR_DESCRIPTION:
                out.append((split, task, text, j))
        return out


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
