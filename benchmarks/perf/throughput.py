"""Sandbox throughput on a trivial function, with every isolation layer on.

Run from the repository root::

    .venv/bin/python benchmarks/perf/throughput.py              # ~3 s per setting (~25 s)
    .venv/bin/python benchmarks/perf/throughput.py --seconds 0.3   # a quick check

With a default :class:`Sandbox` (every layer required; the active layers are printed first),
``def f(x): return x * x + 1`` runs over batches of 10, 100 and 1,000 inputs with 1 and 2
concurrent callers (threads calling :meth:`Sandbox.run`), for ``--seconds`` each. One batch is
one confined child (fork from the warm zygote, confinement, program load, the inputs, reap).
Printed: executions/s per setting, the best (target: at least 5,000/s on a 2-core machine:
PASS or MISS), the best on 1,000-input batches (``BATCH 1000``; target: at least 45,000/s on
an idle machine), the time to the first result of a 1-input batch (median of ``--first-n``), and
the zygote start time (a fresh sandbox, started ``--starts`` times).

Exit status: 0 when the run completed (whatever the target), 1 when a result was wrong,
3 when the sandbox cannot start with all of its layers.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from collections.abc import Sequence

from utdebug.sandbox import Layer, Limits, Sandbox, SandboxUnavailable, Status

CODE = "def f(x): return x * x + 1\n"
TARGET = 5000.0
TARGET_1000 = 45000.0
"""Executions/s on 1,000-input batches with every layer on, on an idle machine."""
EXIT_OK, EXIT_WRONG, EXIT_SANDBOX = 0, 1, 3


class WrongResult(Exception):
    pass


def run_batch(sb: Sandbox, inputs: list[tuple[int]], lim: Limits) -> int:
    res = sb.run(CODE, "f", inputs, lim)
    out = res.outcomes
    if len(out) != len(inputs) or any(o.status is not Status.OK for o in out):
        bad = next((o for o in out if o.status is not Status.OK), None)
        raise WrongResult(f"{len(out)} outcomes for {len(inputs)} inputs; first bad: {bad}")
    # Check a few values (all of them would cost as much as the run itself).
    for k in (0, len(inputs) // 2, len(inputs) - 1):
        x = inputs[k][0]
        if out[k].value != x * x + 1:
            raise WrongResult(f"f({x}) returned {out[k].value!r}")
    return len(out)


def measure(sb: Sandbox, batch: int, callers: int, seconds: float, lim: Limits) -> float:
    """Executions per second of ``callers`` threads running ``batch``-input batches."""
    inputs = [(i,) for i in range(batch)]
    run_batch(sb, inputs, lim)  # warm-up
    done = [0] * callers
    errors: list[BaseException] = []
    barrier = threading.Barrier(callers + 1)
    stop_at = [0.0]

    def worker(k: int) -> None:
        barrier.wait()
        try:
            while time.perf_counter() < stop_at[0]:
                done[k] += run_batch(sb, inputs, lim)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(callers)]
    for t in threads:
        t.start()
    t0 = time.perf_counter()
    stop_at[0] = t0 + seconds
    barrier.wait()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return sum(done) / elapsed


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=3.0, help="per setting (default 3)")
    ap.add_argument("--first-n", type=int, default=50, help="1-input batches timed (default 50)")
    ap.add_argument("--starts", type=int, default=5, help="fresh zygote starts timed (default 5)")
    args = ap.parse_args(argv)
    lim = Limits()
    print(
        f"throughput: {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}; "
        f"python {sys.version.split()[0]}; program {CODE.strip()!r}"
    )

    starts: list[float] = []
    try:
        for _ in range(max(1, args.starts)):
            t0 = time.perf_counter()
            with Sandbox() as probe:
                probe.start()
                starts.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        sb = Sandbox()
        rep = sb.start()
        first_start = time.perf_counter() - t0
    except SandboxUnavailable as e:
        print(f"SANDBOX UNAVAILABLE: {e}", file=sys.stderr)
        return EXIT_SANDBOX
    starts.append(first_start)
    active = rep.active()
    print(f"sandbox mode: {rep.mode}; active layers: {', '.join(sorted(a.value for a in active))}")
    missing = set(Layer) - active
    assert not missing, f"layers missing: {missing}"
    print(f"LAYERS all {len(active)} active")

    try:
        with sb:
            firsts = []
            one = [(7,)]
            run_batch(sb, one, lim)
            for _ in range(max(1, args.first_n)):
                t0 = time.perf_counter()
                run_batch(sb, one, lim)
                firsts.append(time.perf_counter() - t0)

            rates: dict[tuple[int, int], float] = {}
            for batch in (10, 100, 1000):
                for callers in (1, 2):
                    rate = measure(sb, batch, callers, args.seconds, lim)
                    rates[(batch, callers)] = rate
                    print(
                        f"batch {batch:5d}  callers {callers}  {rate:10,.0f} executions/s",
                        flush=True,
                    )
    except WrongResult as e:
        print(f"WRONG RESULT: {e}", file=sys.stderr)
        return EXIT_WRONG

    (bb, bc), best = max(rates.items(), key=lambda kv: kv[1])
    verdict = "PASS" if best >= TARGET else "MISS"
    print(
        f"ZYGOTE START median {statistics.median(starts) * 1000:.1f} ms "
        f"(min {min(starts) * 1000:.1f}, max {max(starts) * 1000:.1f}; {len(starts)} starts)"
    )
    print(
        f"FIRST RESULT median {statistics.median(firsts) * 1000:.2f} ms "
        f"(1-input batch, {len(firsts)} runs; p10 "
        f"{statistics.quantiles(firsts, n=10)[0] * 1000:.2f}, p90 "
        f"{statistics.quantiles(firsts, n=10)[-1] * 1000:.2f})"
        if len(firsts) >= 2
        else f"FIRST RESULT median {statistics.median(firsts) * 1000:.2f} ms"
    )
    print(
        f"BEST {best:,.0f} executions/s (batch {bb}, {bc} callers; "
        f"target >= {TARGET:,.0f}): {verdict}"
    )
    big = max(rates[(1000, c)] for c in (1, 2))
    print(
        f"BATCH 1000 {big:,.0f} executions/s (best of 1 and 2 callers; target >= "
        f"{TARGET_1000:,.0f} on an idle machine, load average now "
        f"{os.getloadavg()[0]:.2f}): {'PASS' if big >= TARGET_1000 else 'MISS'}"
    )
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
