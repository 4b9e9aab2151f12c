"""What reading a child's frames costs the parent, next to what the child spent on them.

Run from the repository root::

    .venv/bin/python benchmarks/perf/parent_cost.py
    .venv/bin/python benchmarks/perf/parent_cost.py --inputs 5 --normal 200   # a quick check

Cases:

- ``flood``: a program that, on each input, writes result frames of its own (16 MiB each, a
  list of 5.6 M empty lists, the costliest frame to parse and decode) on its result pipe for
  that input and every later one, then exits: next to nothing for the child, a few seconds
  of parsing and decoding each for the parent (at 550dac7);
- ``flood 1 MiB``: the same with 1 MiB frames (each cheap enough to be read);
- ``15 MB frame``: one forged frame of 15 MB (2.5 M lists of one list of one int) against 300
  expected floats, judged (:func:`utdebug.sandbox.verdicts.judge`);
- ``returned``: a program that returns a large value itself (``--returned`` empty lists, 1 M
  by default: a 3 MB frame, well within what its 2 s limit lets it encode), judged the same
  way: read, as before;
- ``normal batch``: ``--normal`` inputs of ``x * x + 1``, to show the bookkeeping costs
  nothing.

For each: the parent's CPU time (``time.process_time`` around ``Sandbox.run`` and the judging),
the children's CPU time (``BatchResult.cpu_seconds``, from the kernel), their bound (2 x the
children's + 0.5 s), the growth of the parent's peak resident memory (``VmHWM``, reset before
each case) and the outcomes. Targets: the flood at most 3 s of the parent's CPU time and under
200 MB of growth; the 15 MB frame at most 3 s (``PASS`` / ``MISS``). The normal batch prints
its executions/s.

Exit status: 0 when every case was measured (whatever the targets), 3 when the sandbox cannot
start.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time

from utdebug.benchmarks.perf.judging_budget import _peak_kb, _reset_peak
from utdebug.sandbox import CheckSpec, Limits, Sandbox, SandboxUnavailable
from utdebug.sandbox.verdicts import judge

FLOATS = [i / 7 for i in range(300)]

# Writes frames of its own for input ``i`` and every later one on its result pipe (the fd
# open for writing only), then leaves: the runner never writes its own.
FORGER = """
import fcntl
import os


def _result_fd():
    for fd in range(3, 64):
        try:
            if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:
                return fd
        except OSError:
            pass
    return None


def f(i, n, items, item):
    fd = _result_fd()
    body = b"[" + (item + b",") * (items - 1) + item + b"]"
    for k in range(i, n):
        raw = b'{"k":"r","i":%d,"s":"ok","t":0.01,"v":' % k + body + b"}"
        frame = len(raw).to_bytes(4, "big") + raw
        view = memoryview(frame)
        while view:
            view = view[os.write(fd, view):]
    os._exit(0)
"""

RETURNER = """
def f(n):
    return [[] for _ in range(n)]
"""


def _measure(sb: Sandbox, name: str, code: str, inputs: list[list[object]], lim: Limits,
             expected: object = None, target: float | None = None,
             mem_target: float | None = None) -> bool:  # fmt: skip
    _reset_peak()
    base = _peak_kb()
    c0, w0 = time.process_time(), time.perf_counter()
    res = sb.run(code, "f", inputs, lim)
    if expected is not None:
        for o in res.outcomes:
            judge(o, expected, CheckSpec())
    parent, wall = time.process_time() - c0, time.perf_counter() - w0
    grew = (_peak_kb() - base) / 1024
    child = res.cpu_seconds
    statuses = collections.Counter(
        f"{o.status.value}{'/' + o.error_type if o.error_type else ''}" for o in res.outcomes
    )
    ok = (target is None or parent <= target) and (mem_target is None or grew < mem_target)
    verdict = "" if target is None else ("  PASS" if ok else "  MISS")
    shown = ", ".join(f"{k} x{v}" for k, v in sorted(statuses.items()))
    print(
        f"{name:16s} parent {parent:7.3f} s  children {child:6.3f} s  "
        f"bound {2 * child + 0.5:6.3f} s  +{grew:6.1f} MiB  wall {wall:6.2f} s  "
        f"[{shown}]{verdict}"
    )
    first = next((o for o in res.outcomes if o.error), None)
    if first is not None:
        print(f"{'':16s} first error: {first.error_type}: {(first.error or '')[:160]}")
    if name == "normal batch":
        print(f"NORMAL {len(inputs) / wall:,.0f} executions/s, parent {parent:.3f} s of CPU")
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inputs", type=int, default=20, help="inputs of the flooding batches")
    ap.add_argument("--normal", type=int, default=2000, help="inputs of the normal batch")
    ap.add_argument("--returned", type=int, default=1_000_000, help="lists the program returns")
    args = ap.parse_args(argv)
    lim = Limits(per_input=2.0, memory_mb=2048)
    try:
        sb = Sandbox()
        sb.start()
    except SandboxUnavailable as e:
        print(f"parent_cost: the sandbox cannot start: {e}", file=sys.stderr)
        return 3
    n, missed = args.inputs, 0
    cap = lim.frame_cap
    try:
        big = (cap - 64) // 3  # 16 MiB of "[]," with its envelope
        flood = [[i, n, big, "[]"] for i in range(n)]
        missed += not _measure(sb, "flood", _bytes(FORGER), flood, lim, target=3.0,
                               mem_target=200.0)  # fmt: skip
        mib = [[i, n * 5, (1 << 20) // 3, "[]"] for i in range(n * 5)]
        missed += not _measure(sb, "flood 1 MiB", _bytes(FORGER), mib, lim, target=3.0,
                               mem_target=200.0)  # fmt: skip
        one = [[0, 1, 15_000_000 // 6, "[[1]]"]]
        missed += not _measure(sb, "15 MB frame", _bytes(FORGER), one, lim, FLOATS, target=3.0)
        _measure(sb, "returned", RETURNER, [[args.returned]], lim, FLOATS)
        _measure(sb, "normal batch", "def f(x):\n    return x * x + 1\n",
                 [[i] for i in range(args.normal)], lim)  # fmt: skip
    finally:
        sb.close()
    print(f"{missed} of 3 targets missed")
    return 0


def _bytes(code: str) -> str:
    """The forger, with its item given as text (inputs are JSON: bytes travel as str)."""
    return code.replace(
        "def f(i, n, items, item):", "def f(i, n, items, item):\n    item = item.encode()"
    )


if __name__ == "__main__":
    sys.exit(main())
