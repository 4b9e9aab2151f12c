"""What the command line loads before its first output, and how long that takes.

Run from the repository root::

    .venv/bin/python benchmarks/perf/cli_startup.py            # 5 runs of each, ~10 s idle
    .venv/bin/python benchmarks/perf/cli_startup.py --runs 1   # a quick check

For each command of :data:`COMMANDS` (``utdebug check --help``, ``utdebug debug --help``,
``utdebug --version``, and ``utdebug bench --help`` to compare), a fresh interpreter runs
``python -X importtime -m utdebug ...`` once: the modules it imports are read from
``-X importtime``'s lines, and the script prints how many are utdebug's, and which of the heavy
ones (:data:`HEAVY`: numpy, Hypothesis, Textual, litellm, any benchmark module) it loaded. Then
``--runs`` fresh interpreters run the command without ``-X importtime`` and each is timed from
its start to the first byte on its stdout (**FIRST OUTPUT**, the median), with the CPU time
the process used (user + system: on a loaded machine, closer to what an idle one would take).
**INTERPRETER** is the same for ``python -c "print()"``: what any command pays before utdebug
is imported.

Lines::

    INTERPRETER median 21.0 ms, max 23.4 ms, cpu 20.1 ms (load 0.31)
    COMMAND check --help: 7 utdebug modules, heavy: none
    FIRST OUTPUT check --help median 95.1 ms, max 101.3 ms, cpu 90.2 ms (load 0.31)
    TARGET check --help: <= 25 utdebug modules, nothing heavy: PASS|MISS; first output
    < 300 ms: PASS|MISS

(the TARGET line is one line).

The targets (docs/architecture.md, "Commands load what they use"): ``check --help`` and
``debug --help`` import at most 25 utdebug modules and nothing heavy, and print within 0.3 s on
an idle machine; ``--version`` imports nothing heavy. The load average is printed beside every
time: on a loaded machine the times say little.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

COMMANDS: tuple[tuple[str, ...], ...] = (
    ("check", "--help"),
    ("debug", "--help"),
    ("--version",),
    ("bench", "--help"),
)
"""The commands measured; ``bench --help`` is there to compare (it has no target)."""

TARGETED = {("check", "--help"), ("debug", "--help"), ("--version",)}
"""The commands with a target."""

HEAVY = re.compile(r"^(numpy|hypothesis|textual|litellm|utdebug\.benchmarks(\..*)?)$")
"""Top-level packages (and the benchmark modules) that a command that does not use them must
not load."""

MAX_UTDEBUG_MODULES = 25
FIRST_OUTPUT_MS = 300.0

_IMPORT_LINE = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|( *)(\S+)$")


def imported(command: tuple[str, ...]) -> list[str]:
    """The modules a fresh ``python -m utdebug COMMAND`` imports, in order."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "utdebug", *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
    )
    if proc.returncode != 0:
        raise SystemExit(f"utdebug {' '.join(command)} exited {proc.returncode}: {proc.stderr}")
    return [m.group(2) for line in proc.stderr.splitlines() if (m := _IMPORT_LINE.match(line))]


def first_output_ms(
    command: tuple[str, ...], program: tuple[str, ...] = ("-m", "utdebug")
) -> tuple[float, float]:
    """Milliseconds from a fresh ``python -m utdebug COMMAND``'s start to its first byte on
    stdout, and the CPU milliseconds (user + system) the whole process used."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, *program, *command],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_env(),
    )
    assert proc.stdout is not None
    first = proc.stdout.read(1)
    elapsed = (time.perf_counter() - t0) * 1000
    proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if not first:
        raise SystemExit(f"{' '.join(program + command)} printed nothing")
    return elapsed, (usage.ru_utime + usage.ru_stime) * 1000


def _env() -> dict[str, str]:
    # The checkout first, whatever is installed; no terminal width from the caller.
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "COLUMNS": "100"}


def _times(runs: list[tuple[float, float]]) -> str:
    """``median W ms, max W ms, cpu C ms (load L)``: wall times to the first output, and the
    median CPU time (what an idle machine's wall time would be close to)."""
    wall = [w for w, _ in runs]
    cpu = statistics.median(c for _, c in runs)
    return (
        f"median {statistics.median(wall):.1f} ms, max {max(wall):.1f} ms, "
        f"cpu {cpu:.1f} ms (load {os.getloadavg()[0]:.2f})"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="timed runs of each command (5)")
    runs = max(1, ap.parse_args(argv).runs)
    print(f"INTERPRETER {_times([first_output_ms((), ('-c', 'print()')) for _ in range(runs)])}")
    for command in COMMANDS:
        name = " ".join(command)
        modules = imported(command)
        ours = [m for m in modules if m == "utdebug" or m.startswith("utdebug.")]
        heavy = sorted({m for m in modules if HEAVY.match(m)})
        print(
            f"COMMAND {name}: {len(ours)} utdebug modules, heavy: {', '.join(heavy) or 'none'}",
            flush=True,
        )
        runs_ms = [first_output_ms(command) for _ in range(runs)]
        times = [wall for wall, _ in runs_ms]
        print(f"FIRST OUTPUT {name} {_times(runs_ms)}", flush=True)
        if command in TARGETED:
            small = len(ours) <= MAX_UTDEBUG_MODULES and not heavy
            fast = statistics.median(times) < FIRST_OUTPUT_MS
            print(
                f"TARGET {name}: <= {MAX_UTDEBUG_MODULES} utdebug modules, nothing heavy: "
                f"{'PASS' if small else 'MISS'}; first output < {FIRST_OUTPUT_MS:.0f} ms: "
                f"{'PASS' if fast else 'MISS'}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
