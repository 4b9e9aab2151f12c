"""Loader for the Scoring-Verifiers release: HE-R, HE-R+, MBPP-R and MBPP-R+.

The four benchmarks of Ficek et al., "Scoring Verifiers" (arXiv 2502.13820) are published on
the Hugging Face hub as ``nvidia/Scoring-Verifiers`` (code: github.com/aleksficek/Scoring-
Verifiers). Each is one JSON-lines file, one problem per line:

======== =================== ==================================================================
set      file                download URL
======== =================== ==================================================================
he-r     ``HE-R.jsonl``      https://huggingface.co/datasets/nvidia/Scoring-Verifiers/resolve/main/HE-R.jsonl
he-r+    ``HE-R+.jsonl``     .../resolve/main/HE-R%2B.jsonl
mbpp-r   ``MBPP-R.jsonl``    .../resolve/main/MBPP-R.jsonl
mbpp-r+  ``MBPP-R+.jsonl``   .../resolve/main/MBPP-R%2B.jsonl
======== =================== ==================================================================

**How sure the format is.** The files were not available on this machine (no network), so the
record format below is assembled from public descriptions and was not checked against the
files themselves:

- *Confirmed* by the dataset card (README of ``nvidia/Scoring-Verifiers``) and its file list:
  the four file names, and that every line holds the keys of the original benchmark plus
  ``task_id``, ``prompt``, ``canonical_solution`` and ``all_solutions``, a list whose items
  hold ``rank``, ``average_test_score``, ``average_time_taken`` and ``solution``.
- *Inferred* from the authors' scripts (``combine_solutions.py``, ``filter_solutions.py``,
  ``synthetic_verifiers/reward_model.py``): ``average_test_score`` is the fraction of the
  predefined tests passed, rounded to 2 decimals; ``rank`` 1 is the dataset's ground truth;
  ``solution`` is the candidate's own record, an object whose ``canonical_solution`` (HumanEval
  style) or ``code`` (original MBPP) is the candidate program; the predefined tests are the
  EvalPlus inputs ``base_input`` / ``plus_input`` (lists of positional arguments, no expected
  outputs) or, for MBPP-R, the assertion strings ``test_list`` / ``challenge_test_list``.

So the loader accepts the plausible variants and is strict about everything else: a
``solution`` may be a string (the program) or an object holding it under ``canonical_solution``,
``code``, ``solution`` or ``completion`` (the first of these that every candidate of the problem
has and that differs between them; a field holding the *same* program for every candidate is
the gold solution, not the candidates'); ``prompt`` may be spelt ``text`` (original MBPP);
``entry_point`` is taken from the record, else from the last top-level ``def`` of the prompt,
else from the ground truth. A program that does not define the entry point (a HumanEval
completion body) gets the prompt prepended. Every bad field is reported with the file, the line
and the field (``all_solutions[2].average_test_score``); a row that cannot be read becomes a
:class:`RowError` and loading goes on (``strict=True`` raises at the first instead); a file of
which no row can be read raises :class:`VerifierDataError`.

Which predefined tests a set uses (they only matter to the simulated model; the expected scores
come from the file): HE-R ``base_input``; HE-R+ and MBPP-R+ ``base_input + plus_input``; MBPP-R
``test_list + challenge_test_list`` (the called entry point's literal arguments are read with
:mod:`ast`, nothing is executed; an assertion whose call is not literal is counted in
``unparsed``). A file whose set is unknown uses every test field present. Inputs are
de-duplicated by ``repr``. JSON has no tuples: EvalPlus MBPP+ inputs that should be tuples stay
lists (the authors convert 60 tasks by hand in ``mbpp_deserialize_inputs``; this loader does
not).

Files are found like the other datasets (:mod:`utdebug.data.datasets`): an explicit path,
or the release file name in ``--data-dir``, else ``$UTDEBUG_DATA_DIR``, else
``<cache-dir>/datasets/``; a missing file is downloaded from the URL above when a network is
available. No sha256 is pinned (the released hashes are unknown here); the actual sha256 is
recorded in :attr:`VerifierSet.sha256` and in every run record.
"""

from __future__ import annotations

import ast
import json
import math
import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from utdebug.data.datasets import (
    DatasetError,
    SourceFile,
    default_cache_dir,
    download_file,
    search_folders,
    sha256_of,
)
from utdebug.literals import LiteralError, literal_value

__all__ = [
    "RELEASE_URL",
    "SETS",
    "Candidate",
    "PredefinedTests",
    "RowError",
    "VerifierDataError",
    "VerifierProblem",
    "VerifierSet",
    "load_verifier_file",
    "load_verifier_set",
    "release_source",
    "resolve_release_file",
    "set_for_file",
]

RELEASE_URL = "https://huggingface.co/datasets/nvidia/Scoring-Verifiers/resolve/main/"
SETS: dict[str, str] = {
    "he-r": "HE-R.jsonl",
    "he-r+": "HE-R+.jsonl",
    "mbpp-r": "MBPP-R.jsonl",
    "mbpp-r+": "MBPP-R+.jsonl",
}
"""Set name (``--verify-set``) -> release file name."""

CODE_FIELDS = ("canonical_solution", "code", "solution", "completion")
"""Where an object-valued ``solution`` may hold the candidate program, in order of preference."""

_SET_TESTS: dict[str | None, tuple[str, ...]] = {
    "he-r": ("base_input",),
    "he-r+": ("base_input", "plus_input"),
    "mbpp-r": ("test_list", "challenge_test_list"),
    "mbpp-r+": ("base_input", "plus_input"),
    None: ("base_input", "plus_input", "test_list", "challenge_test_list"),
}
_INPUT_FIELDS = ("base_input", "plus_input")
_ASSERT_FIELDS = ("test_list", "challenge_test_list")
_DEF_LINE = re.compile(r"^def\s+([A-Za-z_]\w*)\s*\(", re.M)
_POLY_ROOT_TASKS = frozenset({"HumanEval/32"})
"""EvalPlus checks ``find_zero`` by ``|poly(xs, out)| <= atol``, not by equality."""


class VerifierDataError(DatasetError):
    """Fatal: no file, an unreadable file, or a file of which no problem can be read."""


@dataclass(frozen=True, slots=True)
class Candidate:
    index: int
    """Position in the row's ``all_solutions`` (0-based)."""
    code: str
    expected: float
    """``average_test_score``: the fraction of the predefined tests the candidate passes."""
    rank: int | None = None
    time_taken: float | None = None


@dataclass(frozen=True, slots=True)
class PredefinedTests:
    inputs: tuple[tuple[Any, ...], ...]
    """Positional arguments of each usable predefined test (de-duplicated)."""
    assertions: tuple[str, ...] = ()
    """Assertion strings as given (MBPP-R)."""
    fields: tuple[str, ...] = ()
    """The fields the tests came from."""
    atol: float = 0.0
    unparsed: int = 0
    """Assertions whose call of the entry point could not be read as literals."""
    poly_root: bool = False


@dataclass(frozen=True, slots=True)
class VerifierProblem:
    set_name: str | None
    task_id: str
    prompt: str
    entry_point: str
    signature: str
    candidates: tuple[Candidate, ...]
    ground_truth: str | None
    """The dataset's own solution (a whole program), when the row has one."""
    tests: PredefinedTests
    file: str
    line: int
    code_field: str
    """Where the candidates' programs were read (``solution`` or ``solution.<field>``)."""
    notes: tuple[str, ...] = ()
    """Oddities that did not stop the row from loading."""

    @property
    def expected(self) -> tuple[float, ...]:
        return tuple(c.expected for c in self.candidates)

    @property
    def he_style(self) -> bool:
        """The prompt is a HumanEval stub that declares the entry point."""
        return _defines(self.prompt, self.entry_point)

    def sim_problem_reason(self) -> str | None:
        """Why the simulated model cannot play this problem (``None``: it can)."""
        if self.ground_truth is None:
            return "the row has no ground-truth solution (`canonical_solution`)"
        if not self.tests.inputs:
            what = ", ".join(f"`{f}`" for f in _SET_TESTS[self.set_name])
            return f"the row has no predefined test inputs the loader can read ({what})"
        return None


@dataclass(frozen=True, slots=True)
class RowError:
    file: str
    line: int
    task_id: str | None
    message: str

    def __str__(self) -> str:
        tid = f" ({self.task_id})" if self.task_id else ""
        return f"{Path(self.file).name}, line {self.line}{tid}: {self.message}"


@dataclass(slots=True)
class VerifierSet:
    name: str | None
    """``he-r`` ... or ``None`` for a file of unknown set."""
    path: Path
    sha256: str
    url: str | None
    problems: list[VerifierProblem]
    errors: list[RowError]

    @property
    def file_name(self) -> str:
        return self.path.name


class _Bad(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# ---------------------------------------------------------------------------------------------
# Locating files


def release_source(set_name: str) -> SourceFile:
    """The release file of ``set_name`` with its public URL (no pinned sha256)."""
    name = _set_name(set_name)
    file = SETS[name]
    return SourceFile(file, RELEASE_URL + urllib.parse.quote(file), None)


def set_for_file(path: str | Path) -> str | None:
    """The set a file name belongs to (``HE-R+.jsonl`` -> ``he-r+``), else ``None``."""
    name = Path(path).name.lower()
    for key, file in SETS.items():
        if name == file.lower():
            return key
    return None


def _set_name(set_name: str) -> str:
    key = set_name.strip().lower()
    if key not in SETS:
        raise ValueError(
            f"unknown Scoring-Verifiers set {set_name!r}; choose one of: {', '.join(SETS)}"
        )
    return key


def resolve_release_file(
    set_name: str,
    *,
    data_dir: Path | None = None,
    cache_dir: Path | None = None,
    download: bool = True,
) -> tuple[Path, str]:
    """Find (or download) the release file of ``set_name``; return ``(path, actual sha256)``."""
    source = release_source(set_name)
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    cache_folder = root / "datasets"
    folders = search_folders(data_dir, cache_folder)
    for folder in folders:
        path = folder / source.name
        if path.exists():
            return path, sha256_of(path)
    hint = (
        f"Fix: fetch {source.url} (on a machine with network if needed), put it in a folder "
        "and name that folder with --data-dir DIR or UTDEBUG_DATA_DIR, or give the file with "
        "--verify-file PATH."
    )
    looked = " and ".join(str(f) for f in folders)
    if not download:
        raise VerifierDataError(
            f"{source.name} not found (looked in {looked}) and downloading is off. {hint}"
        )
    try:
        return download_file(source, cache_folder, verify=False)
    except DatasetError as exc:
        raise VerifierDataError(f"{source.name} not found (looked in {looked}); {exc}") from None


# ---------------------------------------------------------------------------------------------
# Reading


def load_verifier_set(
    set_name: str,
    *,
    data_dir: Path | None = None,
    cache_dir: Path | None = None,
    download: bool = True,
    strict: bool = False,
) -> VerifierSet:
    """Load a release set by name (see :func:`resolve_release_file`)."""
    name = _set_name(set_name)
    path, sha = resolve_release_file(
        name, data_dir=data_dir, cache_dir=cache_dir, download=download
    )
    return _load(path, sha, name, strict=strict)


def load_verifier_file(
    path: str | Path, set_name: str | None = None, *, strict: bool = False
) -> VerifierSet:
    """Load one file; the set (which predefined tests apply) is ``set_name`` or the file's name."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise VerifierDataError(f"no such file: {p}")
    name = _set_name(set_name) if set_name else set_for_file(p)
    return _load(p, sha256_of(p), name, strict=strict)


def _load(path: Path, sha: str, set_name: str | None, *, strict: bool) -> VerifierSet:
    url = release_source(set_name).url if set_name else None
    out = VerifierSet(set_name, path, sha, url, [], [])
    seen: dict[str, int] = {}
    rows = 0
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise VerifierDataError(f"cannot read {path}: {exc}") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            rows += 1
            task_id: str | None = None
            try:
                try:
                    record = json.loads(raw)
                except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                    raise _Bad(f"line is not valid JSON: {exc}") from None
                if not isinstance(record, dict):
                    raise _Bad(f"row is a JSON {type(record).__name__}, not an object")
                task_id = _task_id(record)
                if task_id in seen:
                    raise _Bad(f"duplicate task_id {task_id!r} (first at line {seen[task_id]})")
                seen[task_id] = number
                out.problems.append(_problem(record, task_id, set_name, path, number))
            except _Bad as exc:
                err = RowError(str(path), number, task_id, exc.message)
                if strict:
                    raise VerifierDataError(str(err)) from None
                out.errors.append(err)
    if rows == 0:
        raise VerifierDataError(f"{path} holds no rows")
    if not out.problems:
        raise VerifierDataError(
            f"no problem in {path} could be read ({len(out.errors)} bad rows); the first: "
            f"{out.errors[0]}. See the format notes in docs/ranking.md (bench verify)."
        )
    return out


def _task_id(record: dict[str, Any]) -> str:
    if "task_id" not in record:
        raise _Bad("missing field `task_id`")
    value = record["task_id"]
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value.strip():
        raise _Bad(f"field `task_id` must be a non-empty string or an integer, got {value!r:.60}")
    return value


def _string(record: dict[str, Any], name: str, *, required: bool) -> str | None:
    if name not in record:
        if required:
            raise _Bad(f"missing field `{name}`")
        return None
    value = record[name]
    if not isinstance(value, str):
        raise _Bad(f"field `{name}` must be a string, got {type(value).__name__}")
    if not value.strip():
        if required:
            raise _Bad(f"field `{name}` is empty")
        return None
    return value


def _number(value: Any, field: str, *, lo: float, hi: float, allow_inf: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Bad(f"field `{field}` must be a number, got {type(value).__name__} {value!r:.40}")
    x = float(value)
    if math.isnan(x) or (math.isinf(x) and not allow_inf) or not lo <= x <= hi:
        raise _Bad(f"field `{field}` must be a number in [{lo:g}, {hi:g}], got {value!r}")
    return x


def _defines(code: str, entry_point: str) -> bool:
    return re.search(rf"^\s*def\s+{re.escape(entry_point)}\s*\(", code, re.M) is not None


def _top_level_defs(code: str) -> list[str]:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return _DEF_LINE.findall(code)
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def _problem(
    record: dict[str, Any], task_id: str, set_name: str | None, path: Path, line: int
) -> VerifierProblem:
    prompt = _string(record, "prompt", required=False)
    if prompt is None:
        if "prompt" in record:
            raise _Bad("field `prompt` is empty")
        prompt = _string(record, "text", required=False)
        if prompt is None:
            raise _Bad("missing field `prompt` (nor `text`, the original MBPP spelling)")
    gold_raw = _string(record, "canonical_solution", required=False)
    gold_field = "canonical_solution"
    if gold_raw is None and "canonical_solution" not in record:
        gold_raw, gold_field = _string(record, "code", required=False), "code"
    tests_raw = {f: record[f] for f in (*_INPUT_FIELDS, *_ASSERT_FIELDS) if f in record}
    entry_point = _entry_point(record, prompt, gold_raw, tests_raw)
    ground_truth = None
    notes: list[str] = []
    if gold_raw is not None:
        ground_truth = _whole_program(gold_raw, prompt, entry_point)
        if not _defines(ground_truth, entry_point):
            notes.append(f"field `{gold_field}` does not define `{entry_point}`: no ground truth")
            ground_truth = None
    candidates, code_field = _candidates(record, prompt, entry_point)
    return VerifierProblem(
        set_name=set_name,
        task_id=task_id,
        prompt=prompt,
        entry_point=entry_point,
        signature=_signature(entry_point, prompt, ground_truth, candidates[0].code),
        candidates=candidates,
        ground_truth=ground_truth,
        tests=_tests(record, set_name, entry_point, task_id),
        file=str(path),
        line=line,
        code_field=code_field,
        notes=tuple(notes),
    )


def _entry_point(
    record: dict[str, Any], prompt: str, gold: str | None, tests: dict[str, Any]
) -> str:
    given = _string(record, "entry_point", required=False)
    if given is not None:
        if not given.strip().isidentifier():
            raise _Bad(f"field `entry_point` must be a Python name, got {given!r:.60}")
        return given.strip()
    if "entry_point" in record:
        raise _Bad("field `entry_point` is empty")
    defs = _DEF_LINE.findall(prompt)
    if defs:
        return str(defs[-1])
    if gold is not None:
        names = _top_level_defs(gold)
        asserted = [t for f in _ASSERT_FIELDS for t in (tests.get(f) or []) if isinstance(t, str)]
        for name in reversed(names):
            if any(re.search(rf"\b{re.escape(name)}\s*\(", a) for a in asserted):
                return name
        if names:
            return names[-1]
    raise _Bad(
        "missing field `entry_point`, and neither the prompt nor the ground truth has a "
        "`def` to take it from"
    )


def _whole_program(code: str, prompt: str, entry_point: str) -> str:
    """``code`` itself, or ``prompt + code`` for a HumanEval completion body."""
    if _defines(code, entry_point) or not _defines(prompt, entry_point):
        return code
    return prompt + code


def _candidates(
    record: dict[str, Any], prompt: str, entry_point: str
) -> tuple[tuple[Candidate, ...], str]:
    if "all_solutions" not in record:
        raise _Bad("missing field `all_solutions`")
    items = record["all_solutions"]
    if not isinstance(items, list):
        raise _Bad(f"field `all_solutions` must be a list, got {type(items).__name__}")
    if not items:
        raise _Bad("field `all_solutions` is empty")
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise _Bad(f"field `all_solutions[{i}]` must be an object, got {type(item).__name__}")
        if "solution" not in item:
            raise _Bad(f"missing field `all_solutions[{i}].solution`")
        if "average_test_score" not in item:
            raise _Bad(f"missing field `all_solutions[{i}].average_test_score`")
    codes, field = _programs([item["solution"] for item in items])
    out = []
    for i, (item, code) in enumerate(zip(items, codes, strict=True)):
        score = _number(
            item["average_test_score"], f"all_solutions[{i}].average_test_score", lo=0.0, hi=1.0
        )
        rank = item.get("rank")
        if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 1):
            raise _Bad(f"field `all_solutions[{i}].rank` must be an integer >= 1, got {rank!r:.40}")
        seconds = item.get("average_time_taken")
        if seconds is not None:
            where = f"all_solutions[{i}].average_time_taken"
            seconds = _number(seconds, where, lo=0.0, hi=math.inf, allow_inf=True)
        out.append(Candidate(i, _whole_program(code, prompt, entry_point), score, rank, seconds))
    return tuple(out), field


def _programs(solutions: list[Any]) -> tuple[list[str], str]:
    """The candidate programs and the field they were read from (see the module docstring)."""
    if all(isinstance(s, str) for s in solutions):
        for i, s in enumerate(solutions):
            if not s.strip():
                raise _Bad(f"field `all_solutions[{i}].solution` is empty")
        return list(solutions), "solution"
    for i, s in enumerate(solutions):
        if not isinstance(s, dict):
            raise _Bad(
                f"field `all_solutions[{i}].solution` must be a string or an object "
                f"(the others are objects), got {type(s).__name__}"
            )
    for name in CODE_FIELDS:
        values = [s.get(name) for s in solutions]
        if not all(isinstance(v, str) and v.strip() for v in values):
            continue
        if len(values) > 1 and len(set(values)) == 1:
            continue  # the same program for every candidate: the gold solution, not theirs
        return [str(v) for v in values], f"solution.{name}"
    fields = ", ".join(f"`{f}`" for f in CODE_FIELDS)
    raise _Bad(
        f"field `all_solutions[*].solution`: no program field ({fields}) that every "
        "candidate has and that differs between candidates"
    )


def _signature(entry_point: str, *codes: str | None) -> str:
    """``name(params) -> ret`` from the first source that declares the entry point."""
    for code in codes:
        if not code:
            continue
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and (
                node.name == entry_point
            ):
                ret = f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""
                return f"{entry_point}({ast.unparse(node.args)}){ret}"
    return f"{entry_point}(...)"


def _tests(
    record: dict[str, Any], set_name: str | None, entry_point: str, task_id: str
) -> PredefinedTests:
    wanted = _SET_TESTS[set_name]
    if set_name == "mbpp-r" and not any(f in record for f in _ASSERT_FIELDS):
        wanted = ("base_input",)
    inputs: list[tuple[Any, ...]] = []
    seen: set[str] = set()
    assertions: list[str] = []
    used: list[str] = []
    unparsed = 0

    def add(args: tuple[Any, ...]) -> None:
        key = repr(args)
        if key not in seen:
            seen.add(key)
            inputs.append(args)

    for name in wanted:
        if name not in record or record[name] is None:
            continue
        value = record[name]
        if not isinstance(value, list):
            raise _Bad(f"field `{name}` must be a list, got {type(value).__name__}")
        used.append(name)
        for i, item in enumerate(value):
            if name in _INPUT_FIELDS:
                if not isinstance(item, list):
                    raise _Bad(
                        f"field `{name}[{i}]` must be a list of positional arguments, "
                        f"got {type(item).__name__}"
                    )
                add(tuple(item))
            else:
                if not isinstance(item, str):
                    raise _Bad(f"field `{name}[{i}]` must be a string, got {type(item).__name__}")
                assertions.append(item)
                args = _asserted_call(item, entry_point)
                if args is None:
                    unparsed += 1
                else:
                    add(args)
    atol = 0.0
    if record.get("atol") is not None:
        atol = _number(record["atol"], "atol", lo=0.0, hi=math.inf)
    return PredefinedTests(
        tuple(inputs),
        tuple(assertions),
        tuple(used),
        atol,
        unparsed,
        poly_root=task_id in _POLY_ROOT_TASKS,
    )


def _asserted_call(text: str, entry_point: str) -> tuple[Any, ...] | None:
    """The literal positional arguments of the first ``entry_point(...)`` call in an assertion."""
    try:
        tree = ast.parse(text.strip())
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == entry_point
        ):
            if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
                return None
            try:
                return tuple(literal_value(a) for a in node.args)
            except LiteralError:
                return None
    return None
