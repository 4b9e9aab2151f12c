"""What structural values cost: encoding in the child, decoding in the parent, a round trip.

Run from the repository root::

    .venv/bin/python benchmarks/perf/structured_values.py             # ~10 s
    .venv/bin/python benchmarks/perf/structured_values.py --n 2000    # a quick check

In this process (the codec the child and the parent use), for ``--n`` values of each kind: the
CPU time to encode them (the child's work, counted in the input's time) and to decode their
JSON (the parent's), per value, best of ``--repeat``; a plain tuple of two ints is the
reference. Then, in a default :class:`Sandbox` (every layer required), the wall time of one
input returning ``--n`` dataclass objects against one returning ``--n`` tuples (median of
``--repeat``). No target: numbers to read.

Exit status: 0 when the run completed, 1 when a value did not come back equal, 3 when the
sandbox cannot start with all of its layers.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import decimal
import enum
import functools
import json
import pathlib
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from utdebug.expected_values import expected_value
from utdebug.sandbox import CheckSpec, Limits, Sandbox, SandboxUnavailable, Status
from utdebug.sandbox import _runner as R
from utdebug.sandbox import frames as S
from utdebug.sandbox.compare import outputs_match

EXIT_OK, EXIT_WRONG, EXIT_SANDBOX = 0, 1, 3


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Account:
    def __init__(self, owner: str, balance: int) -> None:
        self.owner = owner
        self.balance = balance


class Color(enum.Enum):
    RED = 1


Pair = collections.namedtuple("Pair", "a b")

KINDS: dict[str, Callable[[int], Any]] = {
    "tuple (reference)": lambda i: (i, i),
    "dataclass": lambda i: Point(i, i),
    "plain object": lambda i: Account("a", i),
    "namedtuple": lambda i: Pair(i, i),
    "enum member": lambda i: Color.RED,
    "date": lambda i: datetime.date(2024, 1, 1 + i % 28),
    "Decimal": lambda i: decimal.Decimal(i) / 7,
    "Path": lambda i: pathlib.PurePosixPath(f"src/pkg/mod{i}.py"),
}

PROGRAM = """
import dataclasses

@dataclasses.dataclass
class Point:
    x: int
    y: int

def f(kind, n):
    if kind == "objects":
        return [Point(i, i) for i in range(n)]
    return [(i, i) for i in range(n)]
"""


def _best(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def _decode(text: str) -> object:
    return S.decode_value(json.loads(text))


def codec(n: int, repeat: int) -> None:
    for name, make in KINDS.items():
        values = [make(i) for i in range(n)]
        text = json.dumps(R.encode(values))
        enc = _best(functools.partial(R.encode, values), repeat)
        dec = _best(functools.partial(_decode, text), repeat)
        print(
            f"{name:18s} encode {enc / n * 1e6:6.2f} us/value   decode {dec / n * 1e6:6.2f} "
            f"us/value   {len(text) / n:5.1f} bytes/value"
        )


def round_trip(n: int, repeat: int) -> bool:
    try:
        sb = Sandbox()
        sb.start()
    except SandboxUnavailable as e:
        print(f"sandbox unavailable: {e}", file=sys.stderr)
        sys.exit(EXIT_SANDBOX)
    lim = Limits(per_input=10.0, load=10.0)
    ok = True
    try:
        for kind in ("tuples", "objects"):
            times = []
            for _ in range(repeat):
                t = time.perf_counter()
                res = sb.run(PROGRAM, "f", [[kind, n]], lim)
                times.append(time.perf_counter() - t)
            out = res.outcomes[0]
            if kind == "objects":
                want = expected_value(f"[{', '.join(f'Point({i}, {i})' for i in range(n))}]",
                                      module_source=PROGRAM)  # fmt: skip
            else:
                want = [(i, i) for i in range(n)]
            good = out.status is Status.OK and outputs_match(out.value, want, CheckSpec())
            ok = ok and good
            print(
                f"ROUND TRIP {n} {kind:7s} median {statistics.median(times) * 1000:8.1f} ms"
                + ("" if good else "  WRONG")
            )
    finally:
        sb.close()
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000, help="values per kind (default 10,000)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per measure (default 5)")
    args = ap.parse_args(argv)
    codec(args.n, args.repeat)
    return EXIT_OK if round_trip(args.n, args.repeat) else EXIT_WRONG


if __name__ == "__main__":
    sys.exit(main())
