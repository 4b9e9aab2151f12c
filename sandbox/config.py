"""What the parent asks of a sandboxed run: limits, the sandbox's configuration, the module
context and the staged test a program runs under (all plain, frozen values)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from utdebug.sandbox import pinning
from utdebug.sandbox.layers import DEFAULT_REQUIRED, Layer

# The UTDebug authors' import prelude, executed before every program (reference §3.2).
REFERENCE_PRELUDE = "\n".join(
    [
        "import math",
        "import re",
        "import sys",
        "import copy",
        "import datetime",
        "import itertools",
        "import collections",
        "import heapq",
        "import functools",
        "import hashlib",
        "import numpy",
        "import numpy as np",
        "import string",
        "from typing import *",
        "from collections import *",
        "from functools import *",
    ]
)


# Imported once by the zygote, so children get them without touching the disk.
PREIMPORT = [
    "math", "re", "copy", "datetime", "itertools", "collections", "heapq", "functools",
    "hashlib", "numpy", "string", "typing", "fractions", "decimal", "statistics", "bisect",
    "random", "operator", "array", "cmath", "json", "textwrap", "unicodedata", "dataclasses",
    "enum", "struct", "calendar", "time", "ast", "inspect", "copyreg", "numbers", "abc",
]  # fmt: skip


class LimitKind(StrEnum):
    """What a per-input limit measures."""

    CPU = "cpu"
    """CPU time of the child (user + system, all its threads) spent on the input, read by the
    parent from the kernel; a wall-clock backstop (``Limits.wall_factor`` x the limit of time
    asleep or blocked) ends a program that sleeps or blocks. Does not move with the machine's
    load."""
    WALL = "wall"
    """Wall-clock time, as the paper's harness: on a loaded machine, slow inputs may time out
    that pass on an idle one."""


@dataclass(frozen=True, slots=True)
class Limits:
    per_input: float = 2.0
    """Seconds per input (the paper's harness uses 2 s of wall-clock time); what they measure
    is ``kind``."""
    per_input_each: tuple[float, ...] | None = None
    """Optional limit for each input (e.g. calibrated from the gold solution's time)."""
    load: float | None = None
    """Seconds (of ``kind``) to execute the program's module-level code (its imports
    included); None: the largest per-input limit, so that work a program does at load time
    (computing answers for inputs it guesses) is held to what one input may take. A program
    over it does not load: every input is a ``timeout`` ("loading the program timed out")."""
    memory_mb: int = 2048
    """RLIMIT_AS of the child (it inherits the zygote's ~200 MB of mappings)."""
    fsize_mb: int = 16
    frame_cap: int = 16 << 20
    """Largest encoded result of one input, in bytes; larger results fail as OutputTooLarge."""
    slack: float = 0.5
    """Extra seconds (of ``kind``, and on the wall-clock backstop) before the parent kills a
    child whose in-process timer did not fire. The parent's decoding of an input's result
    counts in that input's wall time (limit + slack from the result's arrival)."""
    batch: float | None = 120.0
    """Seconds (of ``kind``: the CPU time of all the batch's children under CPU-time limits,
    with a wall-clock backstop of ``wall_factor`` x it) for a whole batch (None: no limit).
    Inputs not reached when it is spent are TIMEOUT without running ("not run"), so a program
    that times out on hundreds of inputs cannot hold a worker for hours. The UTDebug authors'
    harness caps a problem at 60 s."""
    kind: LimitKind = LimitKind.CPU
    """What the limits measure: the child's CPU time (default; verdicts do not depend on the
    machine's load) or wall-clock time (the paper's harness)."""
    wall_factor: float = 3.0
    """CPU-time limits only: a program that sleeps or blocks is stopped (by the parent) once
    it has been asleep or blocked this many times its limit: wall time not spent on a CPU nor
    waiting for one, so a program starved of CPU on a loaded machine is not stopped."""

    cut_after: int | None = None
    """After this many timeouts in one batch (as the parent counted them), later inputs get
    at most ``cut_limit`` seconds of ``kind`` (None: never). A program that already hangs on
    several inputs then costs a fraction of a second per further hang instead of the full
    limit; an input that needs longer than ``cut_limit`` after that point is reported as a
    timeout "at the reduced limit"."""
    cut_limit: float = 0.25
    tasks: int = 64
    """Tasks (processes and threads) a child may hold at once, itself included
    (RLIMIT_NPROC, counted per child: see the ``tasks`` layer)."""
    scratch_mb: int = 64
    """Size of the child's own ``/tmp`` (a fresh tmpfs per child, gone when it ends)."""
    scratch_inodes: int = 4096
    """Files and folders the child's ``/tmp`` may hold."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", LimitKind(self.kind))  # "cpu" / "wall" too
        if not (math.isfinite(self.wall_factor) and self.wall_factor >= 1.0):
            raise ValueError(f"wall_factor must be at least 1, got {self.wall_factor}")

    def load_limit(self) -> float:
        """Seconds (of ``kind``) the module-level code may take: ``load``, or when that is
        None the largest per-input limit (work done at load time is never free)."""
        if self.load is not None:
            return self.load
        return max(self.per_input_each or (), default=self.per_input)

    def limit_of(self, i: int) -> float:
        return self.per_input_each[i] if self.per_input_each is not None else self.per_input

    def backstop(self, limit: float) -> float:
        """Wall-clock seconds a limit of ``limit`` allows before its slack."""
        return limit * self.wall_factor if self.kind is LimitKind.CPU else limit

    def in_force(self, i: int, timeouts: int) -> tuple[float, bool]:
        """Input ``i``'s limit after ``timeouts`` timeouts in its batch, and whether the cut
        (``cut_after``) reduced it."""
        limit = self.limit_of(i)
        if self.cut_after is not None and timeouts >= self.cut_after and self.cut_limit < limit:
            return self.cut_limit, True
        return limit, False


@dataclass(frozen=True, slots=True)
class SandboxConfig:
    allow_weak: bool = False
    """Run even when a required layer is missing (explicit opt-in)."""
    required: frozenset[Layer] = DEFAULT_REQUIRED
    use_bwrap: bool | None = None
    """None: use bubblewrap when installed; False: never; True: require it."""
    prelude: str = REFERENCE_PRELUDE
    uid_base: int = 1536
    """As root, children run as ``uid_base + slot`` (slot < 4095; no two live children of
    this sandbox share a uid; ``uid_base + 4095`` is the zygote's start-up probe's)."""
    start_timeout: float = 30.0
    mounts: tuple[str, ...] = ()
    """Host folders the children may read, bound read-only at the same path (for example a
    copy of the user's repository, or site-packages outside the interpreter's prefix). They
    are never writable from inside; absolute paths of existing folders only."""


@dataclass(frozen=True, slots=True)
class ModuleContext:
    """Run a program as a module of a real project instead of a bare ``solution`` script.

    The child creates a module object named ``name`` (registered in ``sys.modules``, so
    ``dataclasses`` and pickling find it) with ``__file__`` and ``__package__`` set (relative
    imports work), puts ``path`` in front of ``sys.path`` (the project's import roots, which
    must be visible: see :attr:`SandboxConfig.mounts`) and changes to ``cwd``. A failure to
    set this up is the program's load error.
    """

    name: str
    file: str | None = None
    package: str | None = None
    path: tuple[str, ...] = ()
    cwd: str | None = None
    import_package: bool = False
    """Import ``package`` (as a normal import would) before the program, so that a package
    whose ``__init__`` imports names back from this module loads; the program then replaces
    the module in ``sys.modules``."""
    imported: bool = False
    """Load the module as Python does: ``import name`` (its packages first, its siblings from
    ``path``), not the program's code; ``file`` must then be the file that import finds."""
    bind: tuple[str, str] | None = None
    """(a host folder, a path): the folder bound read-only at that path for this run's
    children only (an empty folder that is visible in the sandbox, e.g. inside a mount), so
    that two versions of a project load from one path. Needs a mount namespace per child
    (the ``scratch`` layer); the parent only sends the two paths, never to the program."""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "file": self.file,
            "package": self.package,
            "path": list(self.path),
            "cwd": self.cwd,
            "import_package": self.import_package,
            "imported": self.imported,
        }


PROGRAM_FILE = "<program>"
"""The file name the child compiles a program's code under (its frames in a traceback)."""


@dataclass(frozen=True, slots=True)
class StagedTest:
    """A test with setup, run by the child's runner in stages (``Sandbox.run(test=...)``):
    ``setup`` (statements, may be empty), then ``call`` (one expression), then ``then`` (one
    expression, optional: its value is the result), in a copy of the module's namespace; what
    is awaitable is awaited (all stages on one event loop when any uses ``await``), a
    generator is consumed into a list of at most ``bound`` items. The parts are compiled
    before the program's code runs, the builtins they read by name are constants in their
    code (:mod:`~utdebug.sandbox.pinning`), and a stage that raises is told to the parent at
    once with its classes (:class:`Raised`), so neither the module nor a thread it starts
    decides them. ``args``: the name the test's code sees each input's arguments under (a
    tuple), when the test is run on several inputs. ``builtins_first``: a module global
    named like a builtin (``len = ...``) is not what the test's ``len`` means (by default
    it is, as in Python)."""

    setup: str
    call: str
    then: str | None = None
    bound: int = 100
    args: str | None = None
    builtins_first: bool = False

    def to_json(self) -> dict[str, Any]:
        parts, pins = pinning.pin(
            (self.setup, self.call, self.then),
            ("exec", "eval", "eval"),
            (self.args,) if self.args else (),
        )
        return {
            "setup": parts[0],
            "call": parts[1],
            "then": parts[2],
            "bound": self.bound,
            "args": self.args,
            "pins": list(pins),
            "builtins_first": self.builtins_first,
        }
