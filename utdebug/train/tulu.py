"""The Tulu-3 SFT mixture as a source of problems (the paper's Appendix B filter).

A row (``{"id", "messages": [{"role", "content"}, ...], "source"}``) becomes a problem when:

1. its prompt (the user turns, joined by a blank line) mentions ``python`` (any case) and
   contains ``def `` (the paper's keyword search);
2. the prompt is at most ``max_tokens`` tokens (2,048, the paper's 2K), counted as words and
   punctuation marks (``\\w+|[^\\w\\s]``): an approximation of a model tokenizer's count, which
   is not at hand offline;
3. the prompt is valid Unicode (encodable as UTF-8, no replacement character U+FFFD);
4. the last assistant turn holds code (:func:`utdebug.agents.reply_code.find_code`) that
   parses and defines a top-level function (the entry point: the one the prompt names, else the
   last one no other calls).

That the code runs without an error is checked in the sandbox by the pipeline (its first step
for every problem). The prompt is the problem's description.

Where the rows come from: ``--source-path`` (a ``.jsonl``/``.jsonl.gz``/``.parquet`` file or a
folder of them, e.g. a download of the dataset's ``data/`` folder), else a folder
``tulu-3-sft-mixture`` in the data folder (``--data-dir``, ``$UTDEBUG_DATA_DIR``), else the
Hugging Face dataset ``allenai/tulu-3-sft-mixture`` through the optional ``datasets`` package
(``pip install 'utdebug[train]'``), imported only then.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from utdebug.agents.parsing import ParseFailure
from utdebug.agents.reply_code import find_code
from utdebug.data.datasets import DatasetError, sha256_of
from utdebug.train.sources import Loaded, TrainProblem, iter_table, problem_from_code, table_files

__all__ = ["TULU_DATASET", "TULU_FOLDER", "load_tulu", "prompt_tokens", "tulu_problem"]

TULU_DATASET = "allenai/tulu-3-sft-mixture"
TULU_FOLDER = "tulu-3-sft-mixture"
MAX_PROMPT_TOKENS = 2048
_TOKEN = re.compile(r"\w+|[^\w\s]")

NOT_PYTHON = "prompt lacks 'python' or 'def '"
TOO_LONG = "prompt over the token limit"
BAD_UNICODE = "prompt is not valid Unicode"
NO_TURNS = "no user or assistant turn"
NO_CODE = "no code in the last assistant turn"


def prompt_tokens(text: str) -> int:
    """An approximate token count: words and punctuation marks."""
    return sum(1 for _ in _TOKEN.finditer(text))


def _valid_unicode(text: str) -> bool:
    if "\ufffd" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def tulu_problem(
    row: dict[str, Any], fallback_id: str, max_tokens: int = MAX_PROMPT_TOKENS
) -> TrainProblem | str:
    """A problem from one Tulu-3 row, or the reason it is filtered out."""
    messages = row.get("messages")
    if not isinstance(messages, list):
        return NO_TURNS
    turns = [m for m in messages if isinstance(m, dict) and isinstance(m.get("content"), str)]
    users = [m["content"] for m in turns if m.get("role") == "user"]
    answers = [m["content"] for m in turns if m.get("role") == "assistant"]
    if not users or not answers:
        return NO_TURNS
    prompt = "\n\n".join(users)
    if re.search("python", prompt, re.IGNORECASE) is None or "def " not in prompt:
        return NOT_PYTHON
    if not _valid_unicode(prompt):
        return BAD_UNICODE
    if prompt_tokens(prompt) > max_tokens:
        return TOO_LONG
    code = find_code(answers[-1])
    if isinstance(code, ParseFailure):
        return NO_CODE
    ident = row.get("id")
    pid = f"tulu3/{ident}" if isinstance(ident, str | int) and str(ident) else fallback_id
    return problem_from_code("tulu3", pid, prompt, code)


def load_tulu(
    path: Path | None,
    data_dir: Path | None,
    max_tokens: int = MAX_PROMPT_TOKENS,
    download: bool = True,
) -> Loaded:
    """The Tulu-3 rows that pass the filter (see the module docstring); from the Hub only
    when ``download`` (no data folder is named)."""
    loaded = Loaded("tulu3")
    folder = path if path is not None else _local_folder(data_dir)
    if folder is not None:
        for file in table_files(folder):
            rows = 0
            for row in iter_table(file):
                rows += 1
                _take(loaded, row, f"tulu3/{file.name}:{rows}", max_tokens)
            loaded.files.append(
                {"name": file.name, "path": str(file), "sha256": sha256_of(file), "rows": rows}
            )
        return loaded
    if not download:
        raise DatasetError(
            f"{TULU_FOLDER} not found in the data folder and downloading is off (a data folder "
            f"is named): put a folder {TULU_FOLDER} there or name the rows with --source-path"
        )
    rows_iter, info = _hub_rows()
    for n, row in enumerate(rows_iter, start=1):
        _take(loaded, row, f"tulu3/{n}", max_tokens)
    loaded.files.append(info | {"rows": loaded.rows})
    return loaded


def _take(loaded: Loaded, row: dict[str, Any] | str, fallback: str, max_tokens: int) -> None:
    loaded.rows += 1
    if isinstance(row, str):
        loaded.drop(row)
        return
    made = tulu_problem(row, fallback, max_tokens)
    if isinstance(made, str):
        loaded.drop(made)
    else:
        loaded.problems.append(made)


def _local_folder(data_dir: Path | None) -> Path | None:
    roots = [data_dir] if data_dir is not None else []
    env = os.environ.get("UTDEBUG_DATA_DIR")
    if env:
        roots.append(Path(env))
    for root in roots:
        candidate = Path(root).expanduser() / TULU_FOLDER
        if candidate.exists():
            return candidate
    return None


def _hub_rows() -> tuple[Iterator[dict[str, Any]], dict[str, Any]]:
    try:
        import datasets  # optional extra, heavy: only this path imports it
    except ImportError:
        raise DatasetError(
            f"the Tulu-3 mixture is read with Hugging Face datasets, which is not installed: "
            f"pip install 'utdebug[train]', or download {TULU_DATASET} and name the file or "
            f"folder with --source-path (or put a folder {TULU_FOLDER} in --data-dir)"
        ) from None
    try:
        ds = datasets.load_dataset(TULU_DATASET, split="train")
    except Exception as e:  # offline, no such revision, a broken cache: one line, exit 2
        raise DatasetError(f"cannot load {TULU_DATASET}: {type(e).__name__}: {e}") from None
    files = [
        {"path": f["filename"], "sha256": sha256_of(Path(f["filename"]))}
        for f in getattr(ds, "cache_files", [])
    ]
    info: dict[str, Any] = {
        "name": TULU_DATASET,
        "dataset": TULU_DATASET,
        "fingerprint": getattr(ds, "_fingerprint", None),
        "files": files,
    }
    return (dict(row) for row in ds), info
