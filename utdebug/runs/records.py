"""Run records: an append-only ``samples.jsonl`` and a ``summary.json`` recomputed from it.

Every finished problem is one JSON line, appended in one ``write`` and fsynced before the next
is written, so an interrupted run loses at most the problems in flight. A line that cannot be
written whole (a full disk, a file-size limit) is cut off again, so the file keeps only whole
records, and the failure is a :class:`RunFolderError` naming the file and the cause. Each
record carries a
``key`` (a hash of everything that determines its result: split, problem, program text,
dataset hash, comparison semantics, limits); a rerun with the same settings skips the keys it
finds. The summary is computed from the samples file alone and written atomically.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

SAMPLES = "samples.jsonl"
SUMMARY = "summary.json"


def record_key(parts: Mapping[str, Any]) -> str:
    raw = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def read_samples(path: Path) -> list[dict[str, Any]]:
    """All complete records; a torn last line (a crash mid-write) is ignored."""
    if not path.exists():
        return []
    out: list[dict[str, Any]] = []
    with path.open("rb") as f:
        for line in f:
            if not line.endswith(b"\n"):
                break
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict):
                out.append(rec)
    return out


class RunFolderError(Exception):
    """A run's records could not be written (a full disk, a file-size limit, a read-only
    folder...). The message is one line naming the file and the cause; the samples file keeps
    only whole records, so a rerun with the same settings resumes."""

    def __init__(self, path: Path, error: OSError) -> None:
        self.path = path
        self.error = error
        self.errno = error.errno
        name = errno.errorcode.get(error.errno or 0, "")
        cause = error.strerror or str(error) or type(error).__name__
        super().__init__(f"cannot write {path}: {cause}{f' ({name})' if name else ''}")

    @property
    def out_of_room(self) -> bool:
        """A full disk, a quota or a file-size limit (room, not the folder, is the problem)."""
        return self.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)

    @property
    def advice(self) -> str:
        """What to do: make room and resume, or name a folder that can be written."""
        if self.out_of_room:
            return "finished problems are kept: make room and rerun the same command to resume"
        return "--out must name a folder that can be made and written: choose another one"


class SampleWriter:
    """Appends one record per line; drops a torn tail left by an earlier crash first.

    Each record is one ``os.write`` of its whole line, then fsynced; when the write or the
    fsync fails, the file is truncated back to where the line began (no torn record is
    left behind) and :class:`RunFolderError` is raised.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists():
                _truncate_torn_tail(path)
            self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as e:
            raise RunFolderError(path, e) from None

    def write(self, record: Mapping[str, Any]) -> None:
        if self._fd is None:
            raise ValueError("write to a closed SampleWriter")
        line = json.dumps(record, separators=(",", ":")).encode() + b"\n"
        fd = self._fd
        try:
            begin = os.fstat(fd).st_size
        except OSError as e:
            raise RunFolderError(self.path, e) from None
        try:
            view = memoryview(line)
            while view:  # one write, unless the disk fills part way (the next one says why)
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except OSError as e:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, begin)
            raise RunFolderError(self.path, e) from None

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __enter__(self) -> SampleWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _truncate_torn_tail(path: Path) -> None:
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        keep = data.rfind(b"\n") + 1
        with path.open("r+b") as f:
            f.truncate(keep)


def _umask() -> int:
    """The process's umask, read without changing it (``/proc/self/status``; elsewhere set and
    restored at once)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a fsynced temporary file and a rename: the file is
    either the old one or the new one. It gets the mode a new file gets (``0o666`` less the
    umask; a temporary file alone would be ``0o600``, unreadable to others). Failures are
    :class:`RunFolderError`."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    except OSError as e:
        raise RunFolderError(path, e) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            os.fchmod(f.fileno(), 0o666 & ~_umask())
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise RunFolderError(path, e) from None
        raise


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write ``obj`` as indented, key-sorted JSON to ``path`` (:func:`write_text_atomic`)."""
    write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def write_summary(
    path: Path,
    summary: dict[str, Any],
    failure: BaseException | None,
    parts: Iterable[dict[str, Any]] | None = None,
) -> None:
    """Write a run's summary. When the run stopped because its records could not be written
    (``failure``), the summary (or each of its ``parts``: the evaluator's per-split groups)
    says it is incomplete and why, and a summary that cannot be written either is left as it
    was (the first failure is the one reported)."""
    if isinstance(failure, RunFolderError):
        for target in list(parts) if parts is not None else [summary]:
            target["complete"] = False
            target["incomplete"] = str(failure)
    try:
        write_json_atomic(path, summary)
    except RunFolderError:
        if failure is None:
            raise


def summarize(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Per split (and program): the numbers ``utdebug bench`` prints, from records alone."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        groups.setdefault(f"{r['split']}:{r['program']}", []).append(r)
    out: dict[str, Any] = {}
    for name, recs in sorted(groups.items()):
        ok = [r for r in recs if r.get("error") is None]
        fractions = [r["passed"] / r["n_tests"] if r["n_tests"] else 0.0 for r in ok]
        timeouts = sum(r["timeouts"] for r in ok)
        out[name] = {
            "split": recs[0]["split"],
            "program": recs[0]["program"],
            # Records made before the kind was recorded were made under wall-clock limits.
            "limit_kind": recs[0].get("limit_kind", "wall"),
            "problems": len(recs),
            "evaluated": len(ok),
            "problem_errors": len(recs) - len(ok),
            "tests": sum(r["n_tests"] for r in ok),
            "mean_pass_fraction": sum(fractions) / len(ok) if ok else 0.0,
            "pass_at_1": sum(1 for r in ok if r["all_pass"]) / len(ok) if ok else 0.0,
            "solved": sum(1 for r in ok if r["all_pass"]),
            "timeouts": timeouts,
            "problems_with_timeouts": sorted(
                (r["task_id"] for r in ok if r["timeouts"]), key=task_order
            ),
            "crashes": sum(r["crashes"] for r in ok),
            "not_all_pass": sorted((r["task_id"] for r in ok if not r["all_pass"]), key=task_order),
            "errors": [
                {"task_id": r["task_id"], "error": r["error"]} for r in recs if r.get("error")
            ],
        }
    return out


def task_order(task_id: str) -> tuple[str, int]:
    head, _, num = task_id.rpartition("/")
    return (head, int(num)) if num.isdigit() else (task_id, -1)
