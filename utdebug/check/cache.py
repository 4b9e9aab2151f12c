"""The results cache of ``utdebug check`` with a model: a function's session result, kept
under ``<cache>/check`` by a key of everything it depends on (the function, the part of its
module it can depend on, the model, the settings)."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from utdebug.check.options import CheckOptions
from utdebug.check.results import SessionResult
from utdebug.check.targets import module_context

__all__ = ["CACHE_VERSION", "ResultCache", "default_cache_dir"]

CACHE_VERSION = 2
"""Bumped when what a cached result means changes (old entries are then ignored). 2: fixes
are the debugger's edits merged into the module (:mod:`utdebug.agents.edits`)."""


def default_cache_dir() -> Path:
    from utdebug.data.datasets import default_cache_dir as base

    return base() / "check"


class ResultCache:
    """Session results by key (a folder of JSON files; ``folder`` ``None``: no cache)."""

    def __init__(self, folder: Path | None, say: Callable[[str], None]) -> None:
        self.folder = folder
        self.say = say

    @staticmethod
    def key(o: CheckOptions, model_key: str, loaded: Any, module: str) -> str:
        """What a function's result depends on: its source, its module's context (see
        :func:`utdebug.check.targets.module_context`), the model and the test settings."""
        blob = {
            "v": CACHE_VERSION,
            "model": model_key,
            "function": loaded.source,
            "module": module_context(loaded.module_code, loaded.entry_point),
            "module_name": module,
            "task": o.task,
            "tests": o.tests,
            "votes": o.votes,
            "threshold": o.threshold,
            "timeout": o.timeout,
            "fix": o.rounds if o.fix else None,
        }
        return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()

    def _path(self, key: str) -> Path | None:
        return None if self.folder is None else self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The entry (``None``: missing, unreadable or of another version: checked again and
        rewritten)."""
        path = self._path(key)
        if path is None:
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
            return None
        return data

    def put(self, key: str, result: SessionResult) -> None:
        """Keep ``result`` (atomically); a cache that cannot be written is said, not fatal."""
        path = self._path(key)
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(result.to_json(CACHE_VERSION), f)
            os.replace(tmp, path)
        except OSError as e:  # a read-only cache must not fail the check
            self.say(f"warning: cannot write the cache entry {path}: {e}")
