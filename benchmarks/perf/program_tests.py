"""What a test with setup costs: each runs in a child of its own, from a fresh import of the
module (utdebug.engine.program), where literal-argument tests share one child per batch.

Prints, for a small module and for a module that imports a few standard-library packages:
the wall time per test of N program tests (each a fresh child and import, two at a time, as
the engine runs them) against N literal-argument tests in one batch, and the child CPU time
per test. Run from the repository root:

    .venv/bin/python benchmarks/perf/program_tests.py            # ~10 s
    .venv/bin/python benchmarks/perf/program_tests.py --tests 10 # quick check
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from utdebug.engine import Executor, UnitTest, Variant
from utdebug.engine.model import Task
from utdebug.sandbox import Sandbox
from utdebug.sandbox.config import Limits, ModuleContext

SMALL = """\
class Counter:
    def __init__(self, start=0):
        self.n = start

    def bump(self, by=1):
        self.n += by
        return self.n


def bump(n, by):
    return n + by
"""

HEAVY = (
    "import dataclasses\nimport datetime\nimport decimal\nimport json\nimport pathlib\n"
    "import re\nimport typing\n\n" + SMALL
)


def measure(executor: Executor, code: str, n: int, repeats: int) -> tuple[float, float, float]:
    """(wall s per program test, wall s per literal test, child CPU s per program test)."""
    program_task = Task(
        "p", "", "Counter.bump(self, by=1)", "bump", code, class_name="Counter", program=True
    )
    literal_task = Task("l", "", "bump(n, by)", "bump", code)
    programs = [UnitTest(i, (), f"c.bump({i})", i, setup="c = Counter()") for i in range(n)]
    literals = [UnitTest(i, (0, i), f"bump(0, {i})", i) for i in range(n)]
    walls_p, walls_l = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run = asyncio.run(executor.run_tests(program_task, code, programs, Variant.PAPER, Limits()))
        walls_p.append(time.perf_counter() - t0)
        assert run.passed == n, run
        t0 = time.perf_counter()
        run = asyncio.run(executor.run_tests(literal_task, code, literals, Variant.PAPER, Limits()))
        walls_l.append(time.perf_counter() - t0)
        assert run.passed == n, run
    cpu = []
    for t in programs[:10]:
        res = asyncio.run(executor.run_program(code, t, Limits()))
        cpu.append(res.cpu_seconds)
    return statistics.median(walls_p) / n, statistics.median(walls_l) / n, statistics.median(cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tests", type=int, default=40, help="tests per run (default 40)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per setting (median)")
    a = ap.parse_args()
    with Sandbox() as sb:
        report = sb.start()
        print(f"sandbox layers active: {len(report.active())} of {len(report.states)}")
        executor = Executor(sb, workers=2, context=ModuleContext(name="target"))
        try:
            for name, code in (("small module", SMALL), ("module with 7 stdlib imports", HEAVY)):
                p, lit, cpu = measure(executor, code, a.tests, a.repeats)
                print(
                    f"{name}: program test {p * 1000:.1f} ms wall per test "
                    f"(fresh child + import, 2 at a time), child CPU {cpu * 1000:.1f} ms; "
                    f"literal test {lit * 1000:.2f} ms wall per test (one batch); "
                    f"{a.tests} tests, median of {a.repeats}"
                )
        finally:
            executor.close()


if __name__ == "__main__":
    main()
