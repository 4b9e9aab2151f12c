"""What a huge literal in a repository's test file costs the parent, from reading the file to
synthesis: the seeds ``utdebug check`` gathers for a function (``synth.seeds.gather``), its
parameters' kinds (``synth.kinds.infer``) and ``synthesize`` over the seeds (200 inputs, as
``--synth-inputs`` defaults), as the parent's CPU time (``time.process_time``). Nothing runs
in the sandbox.

Run from the repository root::

    .venv/bin/python benchmarks/perf/seed_cost.py [--elements 400000]

Each case writes a test file whose one test passes a list of ``--elements`` elements to the
function: written out with spaces (``[0, 1, 2, ...]``), written without (``[0,0,...]``, under
the test-file cap), bound to a module-level constant first, and built by an expression
(``[0] * N``). The target (issue 38): at most 5 s of the parent's CPU for each.

Exit status: 0 when every case was measured (whatever the target).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from utdebug.synth import synthesize
from utdebug.synth.kinds import infer
from utdebug.synth.seeds import find_test_files, gather

MODULE = "def f(xs):\n    return sum(xs)\n"
TARGET = 5.0


def _cases(n: int) -> dict[str, Callable[[], str]]:
    return {
        "a literal [0, 1, 2, ...]": lambda: (
            "from mod import f\n\n\ndef test_big():\n    assert f(["
            + ", ".join(map(str, range(n)))
            + "]) > 0\n"
        ),
        "a literal [0,0,...] (no spaces)": lambda: (
            "from mod import f\n\n\ndef test_big():\n    assert f([" + "0," * n + "]) == 0\n"
        ),
        "a module-level constant": lambda: (
            "from mod import f\n\nBIG = ["
            + ",".join("7" for _ in range(n))
            + "]\n\n\ndef test_big():\n    assert f(BIG) > 0\n"
        ),
        "an expression [0] * N": lambda: (
            f"from mod import f\n\n\ndef test_big():\n    xs = [0] * {n}\n    assert f(xs) == 0\n"
        ),
    }


def measure(root: Path, test_source: str) -> tuple[float, int, int]:
    """The parent's CPU seconds from reading the test file to synthesis, the file's size and
    how many inputs came out."""
    (root / "mod.py").write_text(MODULE)
    tests = root / "tests"
    tests.mkdir(exist_ok=True)
    (tests / "test_big.py").write_text(test_source)
    t0 = time.process_time()
    seeds = gather(MODULE, "f", tests=find_test_files(root), root=root, module="mod")
    infer(MODULE, "f")
    syn = synthesize(seeds.inputs, count=200, seed=0, names=("xs",), time_budget=5.0)
    cpu = time.process_time() - t0
    return cpu, len(test_source.encode()), len(syn.candidates)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--elements", type=int, default=400_000)
    args = ap.parse_args(argv)
    worst = 0.0
    for name, make in _cases(args.elements).items():
        with tempfile.TemporaryDirectory() as tmp:
            cpu, size, emitted = measure(Path(tmp), make())
        worst = max(worst, cpu)
        verdict = "PASS" if cpu <= TARGET else "MISS"
        print(
            f"CASE {name:<32} {size:>10,} bytes  {emitted:>3} inputs  "
            f"parent {cpu:.2f} s CPU (target <= {TARGET:g} s): {verdict}"
        )
    print(f"WORST parent {worst:.2f} s CPU for {args.elements:,} elements")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
