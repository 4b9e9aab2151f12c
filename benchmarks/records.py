"""Run records: an append-only ``samples.jsonl`` and a ``summary.json`` recomputed from it.

Every finished problem is one JSON line, appended, flushed and fsynced before the next is
written, so an interrupted run loses at most the problems in flight. Each record carries a
``key`` (a hash of everything that determines its result: split, problem, program text,
dataset hash, comparison semantics, limits); a rerun with the same settings skips the keys it
finds. The summary is computed from the samples file alone and written atomically.
"""

from __future__ import annotations

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


class SampleWriter:
    """Appends one record per line; drops a torn tail left by an earlier crash first."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            _truncate_torn_tail(path)
        self._f = path.open("ab")

    def write(self, record: Mapping[str, Any]) -> None:
        self._f.write(json.dumps(record, separators=(",", ":")).encode() + b"\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        self._f.close()

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


def write_json_atomic(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=2, sort_keys=True)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
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
