"""Typed readers of the benchmark splits' public files: MBPP+Fix (Hard), MBPP+Fix, HE+Fix,
HumanEval+ and a validation file in MBPP+Fix's format (ClassEval+Fix is built by
:mod:`utdebug.data.classeval`; :mod:`utdebug.data.splits` lists all six splits, each with its
files and its reader, and loads them).

Files are found (:func:`resolve_file`) in ``data_dir``, else ``$UTDEBUG_DATA_DIR``, else
``<cache_dir>/datasets/`` (``cache_dir`` defaults to :func:`default_cache_dir`); a file that is
missing there is downloaded from its public URL into ``<cache_dir>/datasets/`` (temp name,
sha256 check, atomic rename) unless ``download=False``. Every file's actual sha256 is recorded in
:attr:`LoadedSplit.sources` and in each problem's :class:`Provenance`. Fatal problems (missing,
unreadable or mismatching files, no network) raise :class:`DatasetError`; a row that cannot
become a :class:`Problem` becomes a :class:`ProblemError` and loading goes on.

Private tests are extracted without executing anything: MBPP test scripts are parsed with
:mod:`ast` and their ``inputs`` / ``results`` lists evaluated by
:func:`utdebug.literals.literal_value`; HE+ inputs are JSON. A row whose buggy ``code`` does not
compile still loads (the evaluator reports it per problem).

Measured facts on the published files (sha256 in :data:`SOURCES`):

- MBPP+Fix (Hard), ``MBPP+Fix_hard_test.jsonl``: 170 rows, all load; 18,274 private tests
  (107.49 per problem, min 4, max 140). The test loop's ``atol`` is 0 except in 3 rows
  (120, 137, 293: ``0.0001``). The ``assertion`` helper wraps both sides in ``set()`` in 4 rows
  (7, 232, 579, 769) and never asserts in 2 (737, 794: any non-raising output passes).
  ``' set(' in test`` (the reference harness's set comparison) holds for those 4 plus 473, where
  it only occurs inside ``results``. The only non-plain constructs in ``inputs``/``results`` are
  ``set(...)`` calls (11) and the name ``inf`` (1).
- MBPP+Fix, ``MBPP+Fix_test.jsonl``: 325 problems (published), same schema as Hard; its sha256 is
  not pinned (``None``): the actual hash is recorded.
- HE+Fix: ``humanevalpack_python.jsonl`` (bug: ``buggy_solution``, body only) joined with
  HumanEval+ v0.1.10 ``HumanEvalPlus.jsonl.gz`` (tests, gold) on the problem number; the 164
  entry points agree. :data:`HE_EXCLUDED` (14, 15, 83, 100, 130, 139) is dropped silently: in
  EvalPlus's OriginFmt those tasks compute expected values with a reference function instead of a
  ``results`` list, so the published HE+Fix excludes them. ``base_input + plus_input``
  de-duplicated by ``repr`` (first occurrence kept) gives 158 problems and 122,478 inputs
  (775.18 per problem, the published figure). Expected outputs are ``None``: the evaluator
  computes them by running the gold code. ``HeVariant.BODY`` keeps the published body-only
  ``code`` (it fails to load: 0 % at start); ``HeVariant.RUNNABLE`` prefixes the declaration
  (about 35 % of tests pass). HumanEval/32 (``find_zero``) is checked with EvalPlus's polynomial
  root rule (``poly_root``). The HE :class:`Provenance` names the humanevalpack row (the bug);
  both files' hashes are in :attr:`LoadedSplit.sources`.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import http.client
import io
import json
import math
import os
import re
import tempfile
import urllib.request
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar

from utdebug.literals import LiteralError, literal_value
from utdebug.sandbox.compare import CheckSpec

if TYPE_CHECKING:
    from utdebug.sandbox.config import Limits
    from utdebug.sandbox.executor import Sandbox

__all__ = [
    "HE_EXCLUDED",
    "SOURCES",
    "BenchProblem",
    "ClassFixProblem",
    "DatasetError",
    "HeVariant",
    "LoadRequest",
    "LoadedSplit",
    "MethodTarget",
    "PrivateTests",
    "Problem",
    "ProblemError",
    "Provenance",
    "Reader",
    "SourceFile",
    "Split",
    "default_cache_dir",
    "enum_value",
    "load_fix_file",
    "read_he_fix",
    "read_he_plus",
    "read_mbpp_fix",
    "read_val",
    "resolve_file",
]


class Split(StrEnum):
    HARD = "hard"
    MBPP = "mbpp"
    HE = "he"
    HE_PLUS = "he+"
    """HumanEval+ code generation (``bench judge``): no buggy code; ``code`` is the prompt
    stub, which loads and returns ``None``."""
    VAL = "val"
    """A validation split in the MBPP+Fix file format, from a file the user names
    (:func:`load_fix_file`; ``utdebug train data --val-fraction`` writes one)."""
    CLASSEVAL = "classeval"
    """ClassEval+Fix: methods of ClassEval's classes corrupted by the project's mutation
    operators, tested by ClassEval's unittest code (:mod:`utdebug.data.classeval`)."""


class HeVariant(StrEnum):
    BODY = "body"
    """The published HE+Fix ``code``: the buggy body only (does not load)."""
    RUNNABLE = "runnable"
    """``declaration + buggy_solution``: the honest debugging task."""


@dataclass(frozen=True, slots=True)
class SourceFile:
    """One public source file."""

    name: str
    url: str
    sha256: str | None


@dataclass(frozen=True, slots=True)
class Provenance:
    file: str
    """Path actually read."""
    row: int
    """1-based line number in that file."""
    sha256: str
    """Actual sha256 of that file."""


@dataclass(frozen=True, slots=True)
class PrivateTests:
    inputs: tuple[tuple[Any, ...], ...]
    """Positional arguments of each private test."""
    expected: tuple[Any, ...] | None
    """Expected outputs; ``None`` for HE+Fix (computed by running the gold code)."""
    check: CheckSpec


@dataclass(frozen=True, slots=True)
class Problem:
    split: Split
    task_id: str
    number: int
    prompt: str
    signature: str
    entry_point: str
    code: str
    gold: str
    tests: PrivateTests
    test_list: tuple[str, ...]
    provenance: Provenance

    @property
    def n_tests(self) -> int:
        return len(self.tests.inputs)


class BenchProblem(Protocol):
    """What every problem of a split has, whatever its kind (a function of MBPP+Fix or HE+Fix,
    a method of a ClassEval+Fix class)."""

    @property
    def split(self) -> Split: ...
    @property
    def task_id(self) -> str: ...
    @property
    def code(self) -> str:
        """The given (buggy) program."""

    @property
    def gold(self) -> str: ...
    @property
    def provenance(self) -> Provenance: ...
    @property
    def n_tests(self) -> int:
        """How many private tests it has."""


@dataclass(frozen=True, slots=True)
class ProblemError:
    """One row that could not become a :class:`Problem`; the run goes on."""

    split: Split
    file: str
    row: int
    task_id: str | None
    message: str


@dataclass(frozen=True, slots=True)
class MethodTarget:
    """What the engine debugs in a ClassEval+Fix problem: one method of one class, in the
    module source that holds the class (imports, the class, the other methods)."""

    class_name: str
    method: str
    module_source: str

    @property
    def qualname(self) -> str:
        return f"{self.class_name}.{self.method}"


@dataclass(frozen=True, slots=True)
class ClassFixProblem:
    """One corrupted version of one method of a ClassEval class, with the class's private
    tests (ClassEval's test methods the canonical solution passes)."""

    split: Split
    task_id: str
    """``classeval/ClassEval_<n>/<method>``."""
    class_task: str
    target: MethodTarget
    """The method to debug; ``target.module_source`` is :attr:`code`."""
    code: str
    """The class's module with the corrupted method."""
    gold: str
    """ClassEval's canonical solution."""
    test_code: str
    tests: tuple[tuple[str, str], ...]
    """The private tests: (``TestCase`` class, method), run one per sandbox input."""
    target_tests: tuple[int, ...]
    """Indexes in :attr:`tests` of the tests of the corrupted method."""
    mutation: str
    """What was changed (operator, line, before -> after)."""
    provenance: Provenance
    description: str = ""
    """ClassEval's description of the method (and its class): the task's text."""

    @property
    def n_tests(self) -> int:
        return len(self.tests)


@dataclass(slots=True)
class LoadedSplit:
    split: Split
    problems: list[Problem]
    errors: list[ProblemError]
    sources: dict[str, str]
    """File name -> actual sha256 of every file read."""
    classes: list[ClassFixProblem] = field(default_factory=list)
    """ClassEval+Fix's problems (a method of a class, tested by unittest code); ``problems``
    is then empty."""
    about: dict[str, Any] = field(default_factory=dict)
    """What a summary of this split says about its data beyond ``sources`` (ClassEval+Fix:
    the licence, its counts and the file its corrupted versions were written to)."""


class DatasetError(Exception):
    """Fatal: a missing, unreadable or mismatching file; the message says how to fix it."""


HARD_FILE = "MBPP+Fix_hard_test.jsonl"
MBPP_FILE = "MBPP+Fix_test.jsonl"
HE_PACK_FILE = "humanevalpack_python.jsonl"
HE_PLUS_FILE = "HumanEvalPlus.jsonl.gz"
MBPP_PLUS_FILE = "MbppPlus.jsonl.gz"
MBPP_PLUS_PRERELEASE_FILE = "MbppPlus-prerelease.jsonl.gz"
CLASSEVAL_FILE = "ClassEval_data.json"

SOURCES: dict[str, SourceFile] = {
    source.name: source
    for source in (
        SourceFile(
            HARD_FILE,
            "https://raw.githubusercontent.com/archiki/UTGenDebug/main/datasets/MBPP+Fix_hard_test.jsonl",
            "01cb4be1b1b4627ecf7c2daf2c6a5674a156ad2ac652b9d863ef84ddfe754810",
        ),
        SourceFile(
            MBPP_FILE,
            "https://raw.githubusercontent.com/archiki/UTGenDebug/main/datasets/MBPP+Fix_test.jsonl",
            None,
        ),
        SourceFile(
            HE_PACK_FILE,
            "https://raw.githubusercontent.com/bigcode-project/octopack/main/evaluation/create/"
            "humaneval-x/data/python/data/humanevalpack.jsonl",
            "b1376d72be4bd016a62ad043d9de3846edb8d63edf1222da802a31330c14c3a7",
        ),
        SourceFile(
            HE_PLUS_FILE,
            "https://github.com/evalplus/humanevalplus_release/releases/download/v0.1.10/"
            "HumanEvalPlus.jsonl.gz",
            "272720b90ac375502c8ed23cd791c2a93dfb22a911641a494da74a426c09f101",
        ),
        SourceFile(
            MBPP_PLUS_FILE,
            "https://github.com/evalplus/mbppplus_release/releases/download/v0.2.0/"
            "MbppPlus.jsonl.gz",
            None,
        ),
        # ClassEval (FudanSELab): code MIT, data CC BY-NC 4.0 (non-commercial use).
        SourceFile(
            CLASSEVAL_FILE,
            "https://raw.githubusercontent.com/FudanSELab/ClassEval/master/data/ClassEval_data.json",
            "50a1ac0e4d0c238573c10c0ab11feae00b14a80ae9e4c9cc28148707ecf0b6a2",
        ),
        # An early MBPP+ (399 tasks, Nov 2023, from the evalplus repository's history): read
        # when it is in the data folder, never downloaded (it has no release URL).
        SourceFile(
            MBPP_PLUS_PRERELEASE_FILE,
            "",
            "b4e9daf3a3d68503c2a92d195e1b44ea485fc15e8eb24f7a60552351835bf47c",
        ),
    )
}
"""Every public source file, keyed by file name."""

HE_EXCLUDED: frozenset[int] = frozenset({14, 15, 83, 100, 130, 139})
"""HumanEval tasks left out of HE+Fix: their OriginFmt expected values come from a reference
function, not a ``results`` list (all_prefixes, string_sequence, starts_one_ends, make_a_pile,
tri, special_factorial)."""

HE_POLY_ROOT_TASK = 32
"""HumanEval/32 ``find_zero``: EvalPlus checks ``|poly(xs, out)| <= atol`` instead of equality."""

MBPP_LOOP_HEADER = "for i, (inp, exp) in enumerate(zip(inputs, results)):"
"""The line of an MBPP+ test script before which ``inputs`` and ``results`` are defined."""

_CHUNK = 1 << 20
_DOWNLOAD_TIMEOUT_S = 60.0
_TASK_NUMBER = re.compile(r"(?:[A-Za-z]+/)?(\d+)")


# ---------------------------------------------------------------------------------------------
# Locating, downloading and hashing files


def default_cache_dir() -> Path:
    """``$UTDEBUG_CACHE_DIR``, else ``$XDG_CACHE_HOME/utdebug``, else ``~/.cache/utdebug``."""
    explicit = os.environ.get("UTDEBUG_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "utdebug"
    return Path.home() / ".cache" / "utdebug"


def resolve_file(
    name: str,
    *,
    data_dir: Path | None = None,
    cache_dir: Path | None = None,
    download: bool = True,
    verify: bool = True,
) -> tuple[Path, str]:
    """Find (or download) one source file and return ``(path, actual sha256)``."""
    source = SOURCES.get(name)
    if source is None:
        raise DatasetError(f"unknown dataset file {name!r}; known files: {', '.join(SOURCES)}")
    cache_root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    cache_folder = cache_root / "datasets"
    folders = search_folders(data_dir, cache_folder)
    for folder in folders:
        path = folder / name
        if path.exists():
            actual = sha256_of(path)
            if verify:
                _check_hash(source, path, actual, downloaded=False)
            return path, actual
    looked = " and ".join(str(folder) for folder in folders)
    if not source.url:
        raise DatasetError(
            f"{name} not found (looked in {looked}); it has no public download URL: put it in a "
            "folder and name that folder with --data-dir DIR or UTDEBUG_DATA_DIR."
        )
    if not download:
        raise DatasetError(
            f"{name} not found (looked in {looked}) and downloading is off. {_fix_hint(source)}"
        )
    return download_file(source, cache_folder, verify=verify)


def search_folders(data_dir: Path | None, cache_folder: Path) -> list[Path]:
    env_dir = os.environ.get("UTDEBUG_DATA_DIR")
    if data_dir is not None:
        chosen = Path(data_dir).expanduser()
    elif env_dir:
        chosen = Path(env_dir).expanduser()
    else:
        return [cache_folder]
    return [chosen] if chosen == cache_folder else [chosen, cache_folder]


def _fix_hint(source: SourceFile) -> str:
    if not source.url:
        return (
            f"Fix: put {source.name} in a folder and name that folder with --data-dir DIR or "
            "the environment variable UTDEBUG_DATA_DIR."
        )
    return (
        f"Fix: fetch {source.url} (on a machine with network if needed), put it in a folder "
        f"and name that folder with --data-dir DIR or the environment variable UTDEBUG_DATA_DIR."
    )


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    except OSError as exc:
        raise _unreadable(path, exc) from None
    return digest.hexdigest()


def _unreadable(path: Path, exc: BaseException) -> DatasetError:
    source = SOURCES.get(path.name)
    hint = _fix_hint(source) if source is not None else "Fix: replace the file with a good copy."
    return DatasetError(f"cannot read {path.name} at {path}: {exc}. {hint}")


def _check_hash(source: SourceFile, path: Path, actual: str, *, downloaded: bool) -> None:
    if source.sha256 is None or source.sha256 == actual:
        return
    what = f"downloaded from {source.url}" if downloaded else f"at {path}"
    raise DatasetError(
        f"checksum mismatch for {source.name} ({what}): expected sha256 {source.sha256}, "
        f"got {actual}. The file is corrupt or a different version: replace it, or accept it "
        f"with --no-verify."
    )


def download_file(source: SourceFile, folder: Path, *, verify: bool) -> tuple[Path, str]:
    target = folder / source.name
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, temp_name = tempfile.mkstemp(prefix=f".{source.name}.", suffix=".part", dir=folder)
    except OSError as exc:
        raise DatasetError(f"cannot create the cache folder {folder}: {exc}") from None
    temp = Path(temp_name)
    try:
        actual = _fetch_into(source.url, fd)
        if verify:
            _check_hash(source, target, actual, downloaded=True)
        os.replace(temp, target)
    except (OSError, ValueError, http.client.HTTPException) as exc:
        raise DatasetError(
            f"cannot download {source.name} from {source.url}: {exc}. {_fix_hint(source)}"
        ) from None
    finally:
        temp.unlink(missing_ok=True)
    return target, actual


def _fetch_into(url: str, fd: int) -> str:
    """Stream ``url`` into the open file descriptor ``fd`` (closed afterwards); return sha256."""
    digest = hashlib.sha256()
    with (
        os.fdopen(fd, "wb") as out,
        urllib.request.urlopen(url, timeout=_DOWNLOAD_TIMEOUT_S) as response,
    ):
        while chunk := response.read(_CHUNK):
            digest.update(chunk)
            out.write(chunk)
    return digest.hexdigest()


# ---------------------------------------------------------------------------------------------
# Reading rows


class _Row(NamedTuple):
    path: Path
    row: int
    record: dict[str, Any]


class _RowError(Exception):
    """A row-level problem; becomes a :class:`ProblemError` blaming ``row`` (if given)."""

    def __init__(self, message: str, row: _Row | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.row = row


def _open_binary(path: Path) -> io.BufferedIOBase:
    if path.name.endswith(".gz"):
        return gzip.open(path, "rb")
    return path.open("rb")


def _raw_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """Non-blank lines of a ``.jsonl`` or ``.jsonl.gz`` file with their 1-based line numbers."""
    try:
        with _open_binary(path) as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    yield number, line
    except (OSError, EOFError, zlib.error) as exc:
        raise _unreadable(path, exc) from None


def _read_rows(path: Path, split: Split, errors: list[ProblemError]) -> list[_Row]:
    """Decode every line as a JSON object; undecodable lines become errors."""
    rows: list[_Row] = []
    for number, line in _raw_lines(path):
        try:
            record = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            message = f"line is not valid JSON: {exc}"
            errors.append(ProblemError(split, str(path), number, None, message))
            continue
        if not isinstance(record, dict):
            message = f"row is a JSON {type(record).__name__}, not an object"
            errors.append(ProblemError(split, str(path), number, None, message))
            continue
        rows.append(_Row(path, number, record))
    return rows


def _field(row: _Row, name: str) -> Any:
    if name not in row.record:
        raise _RowError(f"missing field `{name}`", row)
    return row.record[name]


def _text(row: _Row, name: str, *, required: bool = False) -> str:
    value = _field(row, name)
    if not isinstance(value, str):
        raise _RowError(f"field `{name}` must be a string, got {type(value).__name__}", row)
    if required and not value.strip():
        raise _RowError(f"field `{name}` is empty", row)
    return value


def _list(row: _Row, name: str) -> list[Any]:
    value = _field(row, name)
    if not isinstance(value, list):
        raise _RowError(f"field `{name}` must be a list, got {type(value).__name__}", row)
    return value


def _task_number(row: _Row, prefix: str | None = None) -> int:
    value = _field(row, "task_id")
    if isinstance(value, int) and not isinstance(value, bool) and prefix is None:
        return value
    match = _TASK_NUMBER.fullmatch(value) if isinstance(value, str) else None
    if match is None or (prefix is not None and not value.startswith(f"{prefix}/")):
        expected = f"`{prefix}/<number>`" if prefix else "a task number"
        raise _RowError(f"field `task_id` must be {expected}, got {value!r}", row)
    return int(match.group(1))


def _problem_error(split: Split, exc: _RowError, row: _Row, task_id: str | None) -> ProblemError:
    blamed = exc.row or row
    return ProblemError(split, str(blamed.path), blamed.row, task_id, exc.message)


# ---------------------------------------------------------------------------------------------
# MBPP+Fix and MBPP+Fix (Hard)


def _load_mbpp(split: Split, path: Path, sha256: str) -> tuple[list[Problem], list[ProblemError]]:
    errors: list[ProblemError] = []
    problems: list[Problem] = []
    first_row: dict[int, int] = {}
    for row in _read_rows(path, split, errors):
        task_id: str | None = None
        try:
            number = _task_number(row)
            task_id = f"{split.value}/{number}"
            if number in first_row:
                raise _RowError(f"duplicate task_id {number} (first at row {first_row[number]})")
            first_row[number] = row.row
            problems.append(_mbpp_problem(split, row, number, sha256))
        except _RowError as exc:
            errors.append(_problem_error(split, exc, row, task_id))
    return problems, errors


def _mbpp_problem(split: Split, row: _Row, number: int, sha256: str) -> Problem:
    entry_point = _text(row, "entry_point", required=True)
    test_list = _list(row, "test_list")
    if not all(isinstance(item, str) for item in test_list):
        raise _RowError("field `test_list` must be a list of strings")
    return Problem(
        split=split,
        task_id=f"{split.value}/{number}",
        number=number,
        prompt=_text(row, "prompt"),
        signature=_text(row, "signature"),
        entry_point=entry_point,
        code=_text(row, "code", required=True),
        gold=_text(row, "canonical_solution", required=True),
        tests=_mbpp_tests(_text(row, "test", required=True), entry_point),
        test_list=tuple(test_list),
        provenance=Provenance(str(row.path), row.row, sha256),
    )


def _mbpp_tests(test: str, entry_point: str) -> PrivateTests:
    """Private tests of an MBPP+ test script, read from its AST (nothing is executed)."""
    lines = test.splitlines(keepends=True)
    loop_at = next((i for i, line in enumerate(lines) if line.strip() == MBPP_LOOP_HEADER), None)
    if loop_at is None:
        raise _RowError(f"test script: no `{MBPP_LOOP_HEADER}` line")
    head = _parse_script("".join(lines[:loop_at]))
    loop = _parse_script("\n" * loop_at + "".join(lines[loop_at:]))
    inputs = _script_list(head, "inputs")
    results = _script_list(head, "results")
    if len(inputs) != len(results):
        raise _RowError(f"test script: {len(inputs)} inputs but {len(results)} results")
    if not inputs:
        raise _RowError("test script: `inputs` is empty")
    helper = _assertion_helper(head)
    check = CheckSpec(
        atol=_loop_atol(loop, entry_point),
        set_compare=_calls_set_on_params(helper),
        never_asserts=not any(isinstance(node, ast.Assert) for node in ast.walk(helper)),
        reference_use_set=" set(" in test,
    )
    return PrivateTests(_argument_tuples(inputs), tuple(results), check)


def _parse_script(text: str) -> ast.Module:
    try:
        return ast.parse(text)
    except SyntaxError as exc:
        raise _RowError(f"test script: syntax error at line {exc.lineno}: {exc.msg}") from None
    except (ValueError, MemoryError, RecursionError) as exc:
        raise _RowError(f"test script: cannot parse: {exc!r}") from None


def _script_list(module: ast.Module, name: str) -> list[Any] | tuple[Any, ...]:
    """Value of the last module-level ``<name> = <literal>`` assignment (a list or tuple)."""
    node: ast.expr | None = None
    for statement in module.body:
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and statement.targets[0].id == name
        ):
            node = statement.value
    if node is None:
        raise _RowError(f"test script: no module-level `{name} = ...` assignment")
    try:
        value = literal_value(node)
    except LiteralError as exc:
        raise _RowError(f"test script: cannot extract `{name}`: {exc}") from None
    if not isinstance(value, list | tuple):
        raise _RowError(f"test script: `{name}` is a {type(value).__name__}, not a list")
    return value


def _argument_tuples(inputs: list[Any] | tuple[Any, ...]) -> tuple[tuple[Any, ...], ...]:
    for index, args in enumerate(inputs, start=1):
        if not isinstance(args, list | tuple):
            raise _RowError(
                f"test input {index} is a {type(args).__name__}, not a list of positional arguments"
            )
    return tuple(tuple(args) for args in inputs)


def _assertion_helper(module: ast.Module) -> ast.FunctionDef:
    for statement in module.body:
        if isinstance(statement, ast.FunctionDef) and statement.name == "assertion":
            return statement
    raise _RowError("test script: no `def assertion(out, exp, atol)` helper")


def _calls_set_on_params(helper: ast.FunctionDef) -> bool:
    """Whether the helper calls ``set(out)`` / ``set(exp)`` on its first two parameters."""
    params = {arg.arg for arg in helper.args.args[:2]}
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "set"
        and any(isinstance(arg, ast.Name) and arg.id in params for arg in node.args)
        for node in ast.walk(helper)
    )


def _loop_atol(loop: ast.Module, entry_point: str) -> float:
    """The last argument of ``assertion(<entry_point>(*inp), exp, <atol>)`` in the test loop."""
    call = next(
        (
            node
            for node in ast.walk(loop)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "assertion"
        ),
        None,
    )
    if call is None or len(call.args) != 3 or call.keywords:
        raise _RowError("test script: no `assertion(<entry_point>(*inp), exp, atol)` in the loop")
    tested = call.args[0]
    if not (isinstance(tested, ast.Call) and isinstance(tested.func, ast.Name)):
        raise _RowError(f"test script: the loop does not call a function: {ast.unparse(tested)}")
    if tested.func.id != entry_point:
        raise _RowError(
            f"test script: the loop calls `{tested.func.id}` but entry_point is `{entry_point}`"
        )
    try:
        atol = literal_value(call.args[2])
    except LiteralError as exc:
        raise _RowError(f"test script: cannot read the loop's atol: {exc}") from None
    return _tolerance(atol, "the test loop's atol")


def _tolerance(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
        raise _RowError(f"{what} must be a finite number >= 0, got {value!r}")
    return float(value)


# ---------------------------------------------------------------------------------------------
# HE+Fix


def _load_he(
    variant: HeVariant, pack: tuple[Path, str], plus: tuple[Path, str]
) -> tuple[list[Problem], list[ProblemError]]:
    errors: list[ProblemError] = []
    pack_rows = _index_he(pack[0], "Python", errors)
    plus_rows = _index_he(plus[0], "HumanEval", errors)
    problems: list[Problem] = []
    for number in sorted((pack_rows.keys() | plus_rows.keys()) - HE_EXCLUDED):
        pack_row, plus_row = pack_rows.get(number), plus_rows.get(number)
        try:
            if pack_row is None or plus_row is None:
                missing = HE_PACK_FILE if pack_row is None else HE_PLUS_FILE
                raise _RowError(f"HumanEval task {number} is missing from {missing}")
            problems.append(_he_problem(number, variant, pack_row, plus_row, pack[1]))
        except _RowError as exc:
            blame = pack_row or plus_row
            assert blame is not None  # every number comes from one of the two indexes
            errors.append(_problem_error(Split.HE, exc, blame, f"he/{number}"))
    return problems, errors


def _index_he(
    path: Path, prefix: str, errors: list[ProblemError], split: Split = Split.HE
) -> dict[int, _Row]:
    """Rows of one HE file keyed by problem number (``<prefix>/<number>``)."""
    index: dict[int, _Row] = {}
    for row in _read_rows(path, split, errors):
        try:
            number = _task_number(row, prefix)
        except _RowError as exc:
            errors.append(_problem_error(split, exc, row, None))
            continue
        if number in index:
            message = f"duplicate task_id {prefix}/{number} (first at row {index[number].row})"
            if number not in HE_EXCLUDED or split is Split.HE_PLUS:
                tid = f"{split.value}/{number}"
                errors.append(ProblemError(split, str(path), row.row, tid, message))
            continue
        index[number] = row
    return index


def _he_problem(number: int, variant: HeVariant, pack: _Row, plus: _Row, sha256: str) -> Problem:
    """One HE+Fix problem: the bug from humanevalpack, prompt, gold and tests from HE+."""
    entry_point = _text(pack, "entry_point", required=True)
    plus_entry = _text(plus, "entry_point", required=True)
    if entry_point != plus_entry:
        raise _RowError(
            f"entry points disagree: `{entry_point}` in {HE_PACK_FILE} "
            f"but `{plus_entry}` in {HE_PLUS_FILE}"
        )
    buggy = _text(pack, "buggy_solution", required=True)
    prompt = _text(plus, "prompt", required=True)
    return Problem(
        split=Split.HE,
        task_id=f"he/{number}",
        number=number,
        prompt=prompt,
        signature=_text(pack, "signature"),
        entry_point=entry_point,
        code=buggy if variant is HeVariant.BODY else _text(pack, "declaration") + buggy,
        gold=prompt + _text(plus, "canonical_solution", required=True),
        tests=_he_tests(number, pack, plus),
        test_list=(),
        provenance=Provenance(str(pack.path), pack.row, sha256),
    )


def _load_he_plus(path: Path, sha256: str) -> tuple[list[Problem], list[ProblemError]]:
    """HumanEval+ alone, every task: prompt, gold and tests for code generation."""
    errors: list[ProblemError] = []
    problems: list[Problem] = []
    for number, row in sorted(_index_he(path, "HumanEval", errors, Split.HE_PLUS).items()):
        try:
            prompt = _text(row, "prompt", required=True)
            problems.append(
                Problem(
                    split=Split.HE_PLUS,
                    task_id=f"he+/{number}",
                    number=number,
                    prompt=prompt,
                    signature=_signature(prompt, _text(row, "entry_point", required=True)),
                    entry_point=_text(row, "entry_point", required=True),
                    code=prompt,
                    gold=prompt + _text(row, "canonical_solution", required=True),
                    tests=_he_tests(number, row, row),
                    test_list=(),
                    provenance=Provenance(str(row.path), row.row, sha256),
                )
            )
        except _RowError as exc:
            errors.append(_problem_error(Split.HE_PLUS, exc, row, f"he+/{number}"))
    return problems, errors


def _signature(prompt: str, entry_point: str) -> str:
    """``name(params)`` of the entry point's ``def`` line in a HumanEval prompt."""
    m = re.search(
        rf"^def\s+({re.escape(entry_point)}\s*\(.*?\)\s*(?:->[^:]*)?):", prompt, re.M | re.S
    )
    if m is None:
        raise _RowError(f"the prompt has no `def {entry_point}(...)` line")
    return " ".join(m.group(1).split())


def _he_tests(number: int, pack: _Row, plus: _Row) -> PrivateTests:
    """``base_input + plus_input`` de-duplicated by ``repr`` (first occurrence kept)."""
    inputs: list[tuple[Any, ...]] = []
    seen: set[str] = set()
    for name in ("base_input", "plus_input"):
        for index, args in enumerate(_list(plus, name), start=1):
            if not isinstance(args, list):
                message = (
                    f"`{name}` item {index} is a {type(args).__name__}, not a list of arguments"
                )
                raise _RowError(message, plus)
            key = repr(args)
            if key not in seen:
                seen.add(key)
                inputs.append(tuple(args))
    if not inputs:
        raise _RowError("`base_input` and `plus_input` are both empty", plus)
    try:
        atol = _tolerance(_field(plus, "atol"), "field `atol`")
    except _RowError as exc:
        raise _RowError(exc.message, plus) from None
    check = CheckSpec(
        atol=atol,
        reference_use_set=" set(" in _text(pack, "test"),
        poly_root=number == HE_POLY_ROOT_TASK,
    )
    return PrivateTests(tuple(inputs), None, check)


# ---------------------------------------------------------------------------------------------
# Entry point


@dataclass(frozen=True, slots=True)
class LoadRequest:
    """Where and how to read a split (the command line's data options)."""

    cache_dir: Path
    data_dir: Path | None = None
    he_variant: HeVariant = HeVariant.BODY
    download: bool = True
    """Fetch a missing public file from its URL (else :class:`DatasetError`)."""
    verify: bool = True
    val_file: Path | None = None
    """The validation split's file (``--val-file``)."""
    limits: Limits | None = None
    start_sandbox: Callable[[], Sandbox] | None = None
    """ClassEval+Fix: the sandbox its first build runs in (``None``: it cannot be built here)."""
    seed: int | None = None
    """ClassEval+Fix: the seed of its corrupted versions (``None``: its default)."""
    cap: int | None = None
    """ClassEval+Fix: corrupted versions kept per class (``None``: its default)."""
    workers: int = 2
    say: Callable[[str], None] | None = None


Reader = Callable[[Split, Sequence[tuple[Path, str]], LoadRequest], LoadedSplit]
"""A split's reader: its public files resolved (path, sha256), in the order its row names
them, and the request -> the loaded split."""


def read_mbpp_fix(split: Split, files: Sequence[tuple[Path, str]], req: LoadRequest) -> LoadedSplit:
    """MBPP+Fix (Hard) and MBPP+Fix: one file in the MBPP+Fix format."""
    ((path, sha256),) = files
    problems, errors = _load_mbpp(split, path, sha256)
    return LoadedSplit(split, problems, errors, {path.name: sha256})


def read_he_fix(split: Split, files: Sequence[tuple[Path, str]], req: LoadRequest) -> LoadedSplit:
    """HE+Fix: humanevalpack's bugs joined with HumanEval+'s tests (``req.he_variant``)."""
    pack, plus = files
    problems, errors = _load_he(req.he_variant, pack, plus)
    return LoadedSplit(split, problems, errors, {path.name: sha256 for path, sha256 in files})


def read_he_plus(split: Split, files: Sequence[tuple[Path, str]], req: LoadRequest) -> LoadedSplit:
    """HumanEval+ alone, for code generation (``bench judge``)."""
    ((path, sha256),) = files
    problems, errors = _load_he_plus(path, sha256)
    return LoadedSplit(split, problems, errors, {path.name: sha256})


def read_val(split: Split, files: Sequence[tuple[Path, str]], req: LoadRequest) -> LoadedSplit:
    """The validation split: the file the user names (``--val-file``), no public file."""
    if req.val_file is None:
        raise DatasetError("--split val needs --val-file PATH (a file in the MBPP+Fix format)")
    return load_fix_file(req.val_file, split)


def load_fix_file(path: Path, split: Split | str = Split.VAL) -> LoadedSplit:
    """A file in the MBPP+Fix format (``task_id``, ``prompt``, ``code``, ``canonical_solution``,
    ``signature``, ``entry_point``, ``test`` with EvalPlus ``inputs``/``results``,
    ``test_list``), such as the validation split ``utdebug train data --val-fraction`` writes;
    its problems are ``<split>/<task number>``. :class:`DatasetError` when it cannot be read."""
    split = enum_value(Split, split, "split")
    path = Path(path).expanduser()
    if not path.is_file():
        raise DatasetError(f"{path} is not a file: name the validation file (--val-file PATH)")
    sha256 = sha256_of(path)
    problems, errors = _load_mbpp(split, path, sha256)
    return LoadedSplit(split, problems, errors, {path.name: sha256})


_E = TypeVar("_E", bound=StrEnum)


def enum_value(enum: type[_E], value: _E | str, what: str) -> _E:
    """``enum(value)``, or :class:`ValueError` naming ``what`` and the choices."""
    try:
        return enum(value)
    except ValueError:
        choices = ", ".join(member.value for member in enum)
        raise ValueError(f"unknown {what} {value!r}; choose one of: {choices}") from None
