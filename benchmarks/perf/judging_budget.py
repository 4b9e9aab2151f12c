"""What the parent spends on a hostile result: decoding and judging, next to the child's work.

Run from the repository root::

    .venv/bin/python benchmarks/perf/judging_budget.py

Each hostile program returns a large value (a frame of up to 14 MB) against a small expected
value (300 floats, a list of 50 ints, a set, a string), the shapes of MBPP+Fix (Hard)'s
hard/589 and hard/470 expected lists included. For each, the parent's CPU time (decoding the
frame and judging the value: ``time.process_time`` around ``Sandbox.run`` + ``judge``), the
child's CPU time (``BatchResult.cpu_seconds``) and the growth of the parent's peak resident
memory (``VmHWM``, reset before each program) are printed, with the target of issue 28:
parent CPU <= 2 x the child's + 50 ms per input, and <= 256 MiB of growth (``PASS`` /
``MISS``).

Exit status: 0 when every program was measured (whatever the targets), 3 when the sandbox
cannot start.
"""

from __future__ import annotations

import argparse
import sys
import time

from utdebug.sandbox import CheckSpec, Limits, Sandbox, SandboxUnavailable
from utdebug.sandbox.verdicts import judge

FLOATS = [i / 7 for i in range(300)]
INTS = list(range(50))

HOSTILE: dict[str, tuple[str, object]] = {
    # a 14 MB frame of lists of floats against 300 floats (hard/589's kind of expected list)
    "14 MB of float lists vs 300 floats": (
        "def f():\n    return [[0.1234567] * 1000 for _ in range(1400)]\n",
        FLOATS,
    ),
    # a 6 MB frame of floats against 300 floats: np.allclose would broadcast it
    "6 MB of floats vs 300 floats": ("def f():\n    return [0.5] * 600000\n", FLOATS),
    # a column of 3,000 rows against 300 floats: (3000, 1) x (300,) if broadcast
    "a (3000, 1) column vs 300 floats": (
        "def f():\n    return [[float(i)] for i in range(3000)]\n",
        FLOATS,
    ),
    # many small containers against a short list of ints (hard/470's kind)
    "1M empty lists vs 50 ints": ("def f():\n    return [[] for _ in range(1000000)]\n", INTS),
    # a string of 14 MB against a short one
    "a 14 MB string vs a word": ("def f():\n    return 'ab' * 7000000\n", "abc"),
    # a set of a million ints against a small set
    "a set of 500k ints vs a set of 10": (
        "def f():\n    return set(range(500000))\n",
        set(range(10)),
    ),
    # opaque objects nested in a large list (compared by repr, walked for opaque parts)
    "300k opaque objects vs 300 floats": (
        "def f():\n    return [object() for _ in range(300000)]\n",
        FLOATS,
    ),
}


def _peak_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def _reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:  # not Linux, or not allowed: the peak is then the process's
        pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--timeout", type=float, default=2.0)
    args = ap.parse_args(argv)
    lim = Limits(per_input=args.timeout, memory_mb=2048)
    try:
        sb = Sandbox()
        sb.start()
    except SandboxUnavailable as e:
        print(f"judging_budget: the sandbox cannot start: {e}", file=sys.stderr)
        return 3
    worst_ratio = 0.0
    missed = 0
    try:
        for name, (code, expected) in HOSTILE.items():
            _reset_peak()
            base_kb = _peak_kb()
            c0 = time.process_time()
            res = sb.run(code, "f", [()], lim)
            judged = judge(res.outcomes[0], expected, CheckSpec())
            parent = time.process_time() - c0
            grew_mb = (_peak_kb() - base_kb) / 1024
            child = res.cpu_seconds
            allowed = 2 * child + 0.05
            ok = parent <= allowed and grew_mb <= 256
            missed += not ok
            worst_ratio = max(worst_ratio, parent / allowed)
            print(
                f"{name:38s} {res.outcomes[0].status.value:7s} {judged.verdict.value:5s} "
                f"parent {parent:6.3f} s  child {child:6.3f} s  allowed {allowed:6.3f} s  "
                f"+{grew_mb:6.1f} MiB  {'PASS' if ok else 'MISS'}"
            )
    finally:
        sb.close()
    print(f"worst parent / allowed: {worst_ratio:.2f}; {missed} of {len(HOSTILE)} missed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
