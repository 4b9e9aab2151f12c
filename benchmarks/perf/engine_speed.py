"""Engine speed: whole-split debugging sessions against a fixed-latency model.

Run from the repository root::

    .venv/bin/python benchmarks/perf/engine_speed.py                     # Hard split (~1-2 min)
    .venv/bin/python benchmarks/perf/engine_speed.py --limit 3 --latency 0.01   # a quick check

One :class:`Session` per problem of MBPP+Fix (Hard), all at default ``Settings()`` (n=3, k=8,
3 rounds, paper variant), all running at once in one event loop (at most
``--problems-at-once``), sharing one :class:`Executor` over a real :class:`Sandbox` (every layer)
that runs the generated tests. The model is a :class:`ScriptedModel` that answers every call
after ``--latency`` seconds, behind at most ``--concurrency`` calls in flight. Its replies are
realistic for each problem: a UT reply proposes a call on one of the problem's private inputs
(cycling by sample number), each vote gives the dataset's expected output for the proposed
arguments, and a debug reply returns the gold solution.

The private tests are NOT evaluated per round here: that is the benchmark evaluator's cost,
measured by ``eval_speed.py``.

Measured:

- the dependency chain: within a session, model calls are sequential, so the number of
  ``ModelCalled`` events of a session is its chain; the **critical-path bound** is
  ``max(longest chain x latency, total calls x latency / concurrency)``;
- the wall time of all sessions, and **wall / bound** (target <= 1.5);
- the **engine CPU overhead per model call**: this process's CPU time
  (``time.process_time()``, all threads: engine, parsing, sandbox client) over the run, divided by
  the model calls (target < 5 ms);
- the sandbox: each session's generated-test runs (``Executor`` calls, timed per session), and a
  second bound that adds each session's own sandbox time to its chain, with the sessions that
  dominate it: the 2 s per-input limit on slow programs stretches chains that no model speed
  can shorten;
- the event loop's lag (a 5 ms ticker): blocking work in the loop shows up there.

One-slot mode (``--one-slot SECONDS_PER_TOKEN``): the same replies come from a local
OpenAI-compatible HTTP server on loopback that generates for ONE request at a time, like a
laptop's llama.cpp (``agents/loopback_server.py``; it says so in ``/props`` unless
``--hide-slots``),
at the given latency per token (about 4 characters), through litellm's real streamed HTTP path
and utdebug's adaptive concurrency. The bound is then the **serial bound**: the seconds the
server spent generating (nothing can beat one request at a time), and the report gives wall /
serial bound, the requests, the concurrency limit utdebug settled on and why::

    .venv/bin/python benchmarks/perf/engine_speed.py --one-slot 0.002 --limit 8

Exit status: 0 when the run completed (whatever the targets; a missed one prints ``MISS``), 1 when
a session ended with an error, 2 for a usage or dataset error, 3 when the sandbox cannot start
with all of its layers.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import contextvars
import json
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from utdebug.agents import parsing
from utdebug.agents.base import Completion, Message, Model, ModelRequest, Purpose
from utdebug.agents.scripted import ScriptedModel
from utdebug.data.datasets import DatasetError, Problem, Split
from utdebug.data.private_tests import task_from_problem
from utdebug.data.splits import load_split
from utdebug.engine import Executor, Session, Settings
from utdebug.engine.events import ModelCalled, TestsRun
from utdebug.sandbox import Layer, Limits, Sandbox, SandboxUnavailable
from utdebug.sandbox.outcomes import BatchResult, Status

REPO = Path(__file__).resolve().parent.parent.parent
TARGET_RATIO = 1.5
TARGET_CPU_MS = 5.0
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_SANDBOX = 0, 1, 2, 3

_current: contextvars.ContextVar[str | None] = contextvars.ContextVar("task", default=None)


def default_data_dir() -> Path:
    env = os.environ.get("UTDEBUG_DATA_DIR")
    return Path(env) if env else (REPO.parent / "shared" / "datasets")


# -- the model -------------------------------------------------------------------------------


@dataclass(slots=True)
class Script:
    """What the scripted model answers for one problem."""

    entry_point: str
    inputs: list[tuple[Any, ...]]
    expected: dict[str, str]
    """``repr(args)`` -> ``repr(expected output)``."""
    gold: str


class Responder:
    """``ScriptedModel``'s callable: realistic replies keyed by ``request.context['task_id']``."""

    def __init__(self, scripts: dict[str, Script]) -> None:
        self.scripts = scripts
        self.vote_misses = 0
        self.samples: Counter[str] = Counter()

    def __call__(self, request: ModelRequest, sample: int) -> str:
        ctx = request.context or {}
        s = self.scripts[ctx["task_id"]]
        self.samples[request.purpose] += 1
        if request.purpose == "ut":
            args = s.inputs[sample % len(s.inputs)]
            call = f"{s.entry_point}({', '.join(repr(a) for a in args)})"
            out = s.expected.get(repr(args), "None")
            return (
                "## Hypothesis\nThe code mishandles some inputs.\n\nError Pattern: edge cases\n\n"
                f"## Unit Test\n\n### Input Arguments\nArguments: ```{call}```\n\n"
                f"### Output\nOutput: ```{out}```\n"
            )
        if request.purpose == "vote":
            value = s.expected.get(repr(tuple(ctx.get("args", ()))))
            if value is None:
                self.vote_misses += 1
                value = "None"
            return f"Tracing the call step by step.\nOutput: ```{value}```"
        if request.purpose == "debug":
            return f"Here is the corrected function.\n```python\n{s.gold.rstrip()}\n```\n"
        raise ValueError(f"unexpected purpose {request.purpose!r}")


class Limited:
    """A model with at most ``limit`` calls in flight (an asyncio.Semaphore around it)."""

    def __init__(self, inner: Model, limit: int) -> None:
        self.inner = inner
        self.name = inner.name
        self.simulated = inner.simulated
        self.supports_prefill = inner.supports_prefill
        self._sem = asyncio.Semaphore(limit)
        self.in_flight = 0
        self.peak = 0
        self.waited = 0.0

    async def complete(self, request: ModelRequest) -> list[Completion]:
        t0 = time.perf_counter()
        async with self._sem:
            self.waited += time.perf_counter() - t0
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            try:
                return await self.inner.complete(request)
            finally:
                self.in_flight -= 1


# -- the sandbox, timed per session ------------------------------------------------------------


@dataclass(slots=True)
class SandboxTime:
    batches: int = 0
    resolves: int = 0
    wait: float = 0.0
    """Seconds the session awaited the executor (queueing for a worker included)."""
    run: float = 0.0
    """Seconds inside ``Sandbox.run`` (the batches' own wall time)."""
    child_cpu: float = 0.0
    inputs: int = 0
    timeouts: int = 0


class TimedExecutor(Executor):
    """Times every executor call, charged to the session that awaits it (a context var)."""

    def __init__(self, sandbox: Sandbox, workers: int) -> None:
        super().__init__(sandbox, workers)
        self.by_task: dict[str, SandboxTime] = {}

    def _rec(self) -> SandboxTime:
        tid = _current.get() or "?"
        rec = self.by_task.get(tid)
        if rec is None:
            rec = self.by_task[tid] = SandboxTime()
        return rec

    async def batch(
        self, code: str, entry_point: str, inputs: Sequence[Sequence[Any]], limits: Limits
    ) -> BatchResult:
        t0 = time.perf_counter()
        res = await super().batch(code, entry_point, inputs, limits)
        rec = self._rec()
        rec.wait += time.perf_counter() - t0
        rec.batches += 1
        rec.run += res.wall_seconds
        rec.child_cpu += res.cpu_seconds
        rec.inputs += len(inputs)
        rec.timeouts += sum(o.status is Status.TIMEOUT for o in res.outcomes)
        return res

    async def resolve_call(
        self, parsed: parsing.ParsedCall, timeout: float
    ) -> parsing.ParsedCall | parsing.ParseFailure:
        if parsed.pending is None:
            return parsed
        t0 = time.perf_counter()
        out = await super().resolve_call(parsed, timeout)
        rec = self._rec()
        rec.resolves += 1
        rec.wait += time.perf_counter() - t0
        return out

    async def resolve_value(
        self, parsed: parsing.ParsedValue, timeout: float
    ) -> parsing.ParsedValue | parsing.ParseFailure:
        if not parsed.pending:
            return parsed
        t0 = time.perf_counter()
        out = await super().resolve_value(parsed, timeout)
        rec = self._rec()
        rec.resolves += 1
        rec.wait += time.perf_counter() - t0
        return out


# -- the run ------------------------------------------------------------------------------------


@dataclass(slots=True)
class SessionStats:
    task_id: str
    calls: int = 0
    by_purpose: Counter[str] = field(default_factory=Counter)
    model_seconds: float = 0.0
    tests_runs: int = 0
    reason: str = ""
    error: str | None = None
    rounds: int = 0
    start: float = 0.0
    end: float = 0.0


class LoopLag:
    """A ticker that sleeps ``tick`` seconds and records how late it wakes up."""

    def __init__(self, tick: float = 0.005) -> None:
        self.tick = tick
        self.lags: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _loop(self) -> None:
        while True:
            t0 = time.perf_counter()
            await asyncio.sleep(self.tick)
            self.lags.append(time.perf_counter() - t0 - self.tick)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def scripts_for(problems: Sequence[Problem]) -> dict[str, Script]:
    out: dict[str, Script] = {}
    for p in problems:
        exp = p.tests.expected
        if exp is None:
            raise DatasetError(f"{p.task_id}: no expected outputs in the dataset")
        out[p.task_id] = Script(
            p.entry_point,
            [tuple(i) for i in p.tests.inputs],
            {repr(tuple(i)): repr(e) for i, e in zip(p.tests.inputs, exp, strict=True)},
            p.gold,
        )
    return out


async def run_all(
    problems: Sequence[Problem],
    model: Limited,
    executor: TimedExecutor,
    settings: Settings,
    at_once: int,
) -> tuple[list[SessionStats], float, float, LoopLag]:
    gate = asyncio.Semaphore(at_once)
    lag = LoopLag()
    t_start = time.perf_counter()

    async def one(p: Problem) -> SessionStats:
        st = SessionStats(p.task_id)
        async with gate:
            _current.set(p.task_id)
            st.start = time.perf_counter() - t_start
            session = Session(task_from_problem(p), model, executor, settings)
            res = await session.run()
            st.end = time.perf_counter() - t_start
        for ev in res.events:
            if isinstance(ev, ModelCalled):
                st.calls += 1
                st.by_purpose[ev.purpose] += 1
                st.model_seconds += ev.seconds
            elif isinstance(ev, TestsRun):
                st.tests_runs += 1
        st.reason, st.error, st.rounds = res.reason, res.error, res.rounds
        return st

    lag.start()
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    stats = await asyncio.gather(*(one(p) for p in problems))
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    await lag.stop()
    return list(stats), wall, cpu, lag


def _pct(xs: Sequence[float], q: float) -> float:
    if not xs:
        return 0.0
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


class HttpResponder:
    """The :class:`Responder`'s replies for a local HTTP server: which problem a request is about
    is read from its prompt (the task text), the purpose from its shape, a vote's arguments from
    the call it shows; the prefill probe is answered as a server that continues prefills."""

    def __init__(self, responder: Responder, problems: Sequence[Problem]) -> None:
        self.responder = responder
        self.problems = list(problems)
        self.ut_count: Counter[str] = Counter()

    def _problem(self, text: str) -> Problem:
        for p in self.problems:
            if p.prompt and p.prompt in text:
                return p
        raise ValueError("a request about no known problem")

    def __call__(self, body: dict[str, Any]) -> str:
        messages = body.get("messages") or []
        first = str(messages[0].get("content", "")) if messages else ""
        last = messages[-1] if messages else {}
        if first.startswith("Count from 1 to 10"):
            return " 5, 6, 7, 8, 9, 10"
        p = self._problem(first)
        ctx: dict[str, Any] = {"task_id": p.task_id}
        purpose: Purpose
        if last.get("role") == "assistant" or "A user calls this function" in first:
            purpose = "vote"
            shown = str(last.get("content", "")) if last.get("role") == "assistant" else first
            call = parsing.parse_call(shown, p.entry_point)
            ctx["args"] = call.args if isinstance(call, parsing.ParsedCall) else ()
        elif "Respond in the format below" in first:
            purpose = "ut"
        else:
            purpose = "debug"
        sample = self.ut_count[p.task_id]
        if purpose == "ut":
            self.ut_count[p.task_id] += 1
        request = ModelRequest(
            messages=(Message("user", first),),
            purpose=purpose,
            context=ctx,
        )
        return self.responder(request, sample)


def one_slot_model(
    responder: Responder, problems: Sequence[Problem], per_token: float, hide_slots: bool
) -> tuple[Any, Any]:
    """(the local one-slot server, a litellm model that talks to it)."""
    sys.path.insert(0, str(REPO))
    from utdebug.agents.litellm_client import ClientSettings, LiteLLMModel
    from utdebug.agents.loopback_server import LLMServer

    server = LLMServer(
        slots=1,
        seconds_per_token=per_token,
        responder=HttpResponder(responder, problems),
        expose_slots=not hide_slots,
        continues_prefill=True,
    )
    model = LiteLLMModel(
        "openai/one-slot", ClientSettings(timeout=120.0, max_retries=2), api_base=server.base
    )
    return server, model


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="folder with MBPP+Fix_hard_test.jsonl (default: $UTDEBUG_DATA_DIR, "
        "else ../shared/datasets next to the repository)",
    )
    ap.add_argument(
        "--latency",
        type=float,
        default=0.2,
        help="seconds the model takes for every call (default 0.2)",
    )
    ap.add_argument(
        "--concurrency", type=int, default=16, help="model calls in flight at most (default 16)"
    )
    ap.add_argument(
        "--problems-at-once",
        type=int,
        default=170,
        help="sessions running at once at most (default 170)",
    )
    ap.add_argument("--limit", type=int, default=None, help="only the first N problems")
    ap.add_argument(
        "--workers",
        type=int,
        default=2,
        help="executor threads (sandbox batches at once; default 2)",
    )
    ap.add_argument("--top", type=int, default=8, help="dominating sessions to list (default 8)")
    ap.add_argument(
        "--one-slot",
        type=float,
        default=None,
        metavar="SECONDS_PER_TOKEN",
        help="serve the replies from a local HTTP server that generates for one request at a "
        "time at this latency per token (through litellm); report wall vs the serial bound",
    )
    ap.add_argument(
        "--hide-slots",
        action="store_true",
        help="one-slot mode: the server does not say its slot count (utdebug must find it)",
    )
    ap.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object on stdout (the report goes to stderr)",
    )
    args = ap.parse_args(argv)
    if args.latency < 0 or args.concurrency < 1 or args.problems_at_once < 1 or args.workers < 1:
        ap.error("--latency must be >= 0; --concurrency, --problems-at-once, --workers >= 1")
    if args.one_slot is not None and args.one_slot < 0:
        ap.error("--one-slot must be >= 0 seconds per token")
    out = sys.stderr if args.json else sys.stdout

    def say(line: str = "") -> None:
        print(line, file=out, flush=True)

    data_dir = args.data_dir or default_data_dir()
    try:
        loaded = load_split(Split.HARD, data_dir=data_dir, download=False)
        problems = loaded.problems[: args.limit] if args.limit else loaded.problems
        scripts = scripts_for(problems)
    except DatasetError as e:
        print(f"dataset error: {e}", file=sys.stderr)
        return EXIT_USAGE
    load_before = os.getloadavg()
    settings = Settings()
    say(
        f"engine_speed: MBPP+Fix (Hard) from {data_dir}: {len(problems)} problems; "
        f"{os.cpu_count()} CPUs; load average {load_before[0]:.2f} {load_before[1]:.2f} "
        f"{load_before[2]:.2f}; python {sys.version.split()[0]}"
    )
    if args.one_slot is None:
        say(
            f"model: scripted, {args.latency * 1000:g} ms per call, at most {args.concurrency} "
            f"in flight; sessions at once <= {args.problems_at_once}; executor workers "
            f"{args.workers}"
        )
    else:
        say(
            f"model: a local HTTP server, ONE request at a time, {args.one_slot * 1000:g} ms per "
            f"token, slots {'hidden' if args.hide_slots else 'in /props'}; through litellm "
            f"(streamed); sessions at once <= {args.problems_at_once}"
        )
    say(
        f"settings: n={settings.n} k={settings.k} rounds={settings.rounds} "
        f"variant={settings.variant.value} per-input limit {settings.limits.per_input:g} s"
    )
    say(
        "note: private tests are NOT evaluated per round here (the evaluator's cost, measured "
        "by eval_speed.py)"
    )

    responder = Responder(scripts)
    server: Any = None
    inner: Model
    if args.one_slot is None:
        inner = ScriptedModel(responder, name="scripted-latency", delay=args.latency)
    else:
        from utdebug.agents.preflight import preflight

        server, inner = one_slot_model(responder, problems, args.one_slot, args.hide_slots)
        found = asyncio.run(preflight(inner))  # litellm imported and the server probed first
        say(f"preflight: {found.note}")
        busy0 = server.busy_seconds
    model = Limited(inner, args.concurrency)
    try:
        sb = Sandbox()
        rep = sb.start()
    except SandboxUnavailable as e:
        print(f"SANDBOX UNAVAILABLE: {e}", file=sys.stderr)
        return EXIT_SANDBOX
    missing = set(Layer) - rep.active()
    with sb:
        executor = TimedExecutor(sb, args.workers)
        try:
            stats, wall, cpu, lag = asyncio.run(
                run_all(problems, model, executor, settings, args.problems_at_once)
            )
        finally:
            executor.close()
    load_after = os.getloadavg()
    if server is not None:
        server.close()
        return report_one_slot(args, stats, wall, server, inner, busy0, say)

    lat, conc = args.latency, args.concurrency
    calls = sum(s.calls for s in stats)
    chain_of = {s.task_id: s.calls for s in stats}
    longest = max(stats, key=lambda s: s.calls)
    chain_bound = longest.calls * lat
    thru_bound = calls * lat / conc
    bound = max(chain_bound, thru_bound)
    ratio = wall / bound if bound > 0 else float("inf")
    cpu_ms = 1000.0 * cpu / calls if calls else float("inf")
    sbt = executor.by_task
    zero = SandboxTime()
    sb_run = sum(t.run for t in sbt.values())
    sb_wait = sum(t.wait for t in sbt.values())
    sb_cpu = sum(t.child_cpu for t in sbt.values())
    timeouts = sum(t.timeouts for t in sbt.values())
    # The chain plus the session's own sandbox time (a lower bound: batch walls only) ...
    own = {s.task_id: s.calls * lat + sbt.get(s.task_id, zero).run for s in stats}
    # ... and with what it actually waited for the executor (queueing for a worker included).
    waited = {s.task_id: s.calls * lat + sbt.get(s.task_id, zero).wait for s in stats}
    capacity = sb_run / args.workers
    bound_sb = max(max(own.values()), thru_bound, capacity)
    ratio_sb = wall / bound_sb if bound_sb > 0 else float("inf")
    purposes: Counter[str] = Counter()
    for s in stats:
        purposes.update(s.by_purpose)
    reasons = Counter(s.reason for s in stats)
    errors = [s for s in stats if s.error or s.reason == "error"]
    lags = lag.lags
    chains = [s.calls for s in stats]

    say()
    say(
        f"sessions: {len(stats)}; end reasons: "
        + ", ".join(f"{k} {v}" for k, v in reasons.most_common())
    )
    others = [f"{s.task_id} {s.reason}" for s in stats if s.reason != "all_pass"]
    if others:
        say(f"  not all_pass: {', '.join(others[:12])}{' ...' if len(others) > 12 else ''}")
    say(
        f"model calls: {calls} ({', '.join(f'{k} {v}' for k, v in purposes.most_common())}); "
        f"samples {sum(responder.samples.values())}; vote lookups missed {responder.vote_misses}"
    )
    say(
        f"chain (model calls per session): longest {longest.calls} ({longest.task_id}), median "
        f"{statistics.median(chains):g}, min {min(chains)}"
    )
    say(
        f"model: peak in flight {model.peak} of {conc}; mean wait for a slot "
        f"{1000 * model.waited / max(1, calls):.1f} ms/call"
    )
    say(
        f"sandbox: {sum(t.batches for t in sbt.values())} batches, "
        f"{sum(t.inputs for t in sbt.values())} inputs, {timeouts} per-input timeouts, "
        f"{sum(t.resolves for t in sbt.values())} argument/value resolutions; batch walls "
        f"{sb_run:.1f} s (over {args.workers} workers: >= {capacity:.1f} s), children CPU "
        f"{sb_cpu:.1f} s; sessions awaited the executor {sb_wait:.1f} s in all"
    )
    say(
        f"event loop lag (5 ms ticker): median {1000 * _pct(lags, 0.5):.1f} ms, p99 "
        f"{1000 * _pct(lags, 0.99):.1f} ms, max {1000 * max(lags, default=0.0):.1f} ms"
    )
    say(f"load average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    say()
    say(
        f"BOUND {bound:.2f} s = max(longest chain {longest.calls} x {lat:g} s = "
        f"{chain_bound:.2f} s, {calls} calls x {lat:g} s / {conc} = {thru_bound:.2f} s)"
    )
    say(f"WALL {wall:.2f} s")
    ok_ratio = ratio <= TARGET_RATIO
    ok_cpu = cpu_ms < TARGET_CPU_MS
    say(
        f"RATIO wall/bound {ratio:.2f} (target <= {TARGET_RATIO:g}): "
        f"{'PASS' if ok_ratio else 'MISS'}"
    )
    say(
        f"CPU engine {cpu_ms:.2f} ms per model call ({cpu:.2f} s process CPU / {calls} calls; "
        f"target < {TARGET_CPU_MS:g} ms): {'PASS' if ok_cpu else 'MISS'}"
    )
    say(
        f"BOUND+SANDBOX {bound_sb:.2f} s = max(max over sessions of chain x latency + its own "
        f"batch walls {max(own.values()):.2f} s, calls bound {thru_bound:.2f} s, batch walls / "
        f"workers {capacity:.2f} s); wall/that {ratio_sb:.2f}"
    )
    top = sorted(stats, key=lambda s: waited[s.task_id], reverse=True)[: args.top]
    if not ok_ratio or args.top:
        say(
            "  sessions that set the tail (chain x latency + executor wait; own batch walls; "
            "timeouts; session end):"
        )
        for s in top:
            t = sbt.get(s.task_id, zero)
            say(
                f"  {s.task_id:>10}: {s.calls:2d} calls x {lat:g} = {s.calls * lat:5.2f} s + "
                f"executor {t.wait:6.2f} s = {waited[s.task_id]:6.2f} s; batch walls "
                f"{t.run:6.2f} s in {t.batches} batches, {t.timeouts} timeouts; model "
                f"{s.model_seconds:5.2f} s; ended at {s.end:6.2f} s ({s.reason})"
            )
    if not ok_ratio:
        slowest = max(stats, key=lambda s: s.end)
        t = sbt.get(slowest.task_id, zero)
        rest = slowest.end - slowest.start - slowest.model_seconds - t.wait
        say(
            f"  why: the last session ({slowest.task_id}) ran {slowest.end - slowest.start:.2f} "
            f"s: model calls {slowest.model_seconds:.2f} s ({slowest.calls} calls, slot waits "
            f"included), executor {t.wait:.2f} s (own batch walls {t.run:.2f} s), the rest "
            f"(engine, event loop) {rest:.2f} s"
        )
    for s in errors[:5]:
        say(f"ERROR {s.task_id}: {s.reason} {s.error}")
    if missing:
        say(f"warning: sandbox layers missing: {', '.join(sorted(m.value for m in missing))}")

    if args.json:
        result = {
            "problems": len(stats),
            "latency_s": lat,
            "concurrency": conc,
            "problems_at_once": args.problems_at_once,
            "workers": args.workers,
            "model_calls": calls,
            "calls_by_purpose": dict(purposes),
            "longest_chain": longest.calls,
            "longest_chain_task": longest.task_id,
            "median_chain": statistics.median(chains),
            "bound_s": round(bound, 4),
            "wall_s": round(wall, 4),
            "ratio": round(ratio, 4),
            "target_ratio": TARGET_RATIO,
            "ratio_met": ok_ratio,
            "cpu_s": round(cpu, 4),
            "cpu_ms_per_call": round(cpu_ms, 4),
            "target_cpu_ms": TARGET_CPU_MS,
            "cpu_met": ok_cpu,
            "sandbox_batch_wall_s": round(sb_run, 4),
            "sandbox_executor_wait_s": round(sb_wait, 4),
            "sandbox_children_cpu_s": round(sb_cpu, 4),
            "sandbox_timeouts": timeouts,
            "bound_with_sandbox_s": round(bound_sb, 4),
            "ratio_with_sandbox": round(ratio_sb, 4),
            "loop_lag_ms": {
                "median": round(1000 * _pct(lags, 0.5), 3),
                "p99": round(1000 * _pct(lags, 0.99), 3),
                "max": round(1000 * max(lags, default=0.0), 3),
            },
            "model_peak_in_flight": model.peak,
            "vote_misses": responder.vote_misses,
            "end_reasons": dict(reasons),
            "errors": len(errors),
            "load_avg_before": list(load_before),
            "load_avg_after": list(load_after),
            "chains": chain_of,
            "top": [
                {
                    "task_id": s.task_id,
                    "calls": s.calls,
                    "executor_wait_s": round(sbt.get(s.task_id, zero).wait, 4),
                    "batch_wall_s": round(sbt.get(s.task_id, zero).run, 4),
                    "timeouts": sbt.get(s.task_id, zero).timeouts,
                    "end_s": round(s.end, 4),
                }
                for s in top
            ],
        }
        print(json.dumps(result))
    return EXIT_ERROR if errors else EXIT_OK


def report_one_slot(
    args: argparse.Namespace,
    stats: Sequence[SessionStats],
    wall: float,
    server: Any,
    model: Any,
    busy0: float,
    say: Any,
) -> int:
    """One-slot mode: wall vs the serial bound (the server's generating seconds)."""
    serial = server.busy_seconds - busy0
    ratio = wall / serial if serial > 0 else float("inf")
    calls = sum(s.calls for s in stats)
    reasons = Counter(s.reason for s in stats)
    errors = [s for s in stats if s.error or s.reason == "error"]
    snap = model.limiter.traffic.snapshot()
    say()
    say(
        f"sessions: {len(stats)}; end reasons: "
        + ", ".join(f"{k} {v}" for k, v in reasons.most_common())
    )
    say(
        f"requests served: {server.served} (model calls {calls}); server queue at most "
        f"{server.max_open} open, generating at most {server.max_active}"
    )
    say(
        f"concurrency: limit {model.limiter.limit} (server slots "
        f"{model.slots if model.slots is not None else 'not said'}); changes: "
        + (", ".join(f"{why} -> {n}" for why, n in model.limiter.history) or "none")
    )
    say(
        f"throughput: {snap.tokens_per_second or 0:.1f} tokens/s; "
        f"{snap.seconds_per_call or 0:.2f} s per call (last calls); first token "
        f"{snap.first_token_seconds or 0:.3f} s"
    )
    say(f"SERIAL BOUND {serial:.2f} s (the server's generating time, one request at a time)")
    say(f"WALL {wall:.2f} s")
    say(f"RATIO wall/serial {ratio:.3f} (target <= 1.3): {'PASS' if ratio <= 1.3 else 'MISS'}")
    for s in errors[:5]:
        say(f"ERROR {s.task_id}: {s.reason} {s.error}")
    if args.json:
        print(
            json.dumps(
                {
                    "mode": "one-slot",
                    "problems": len(stats),
                    "seconds_per_token": args.one_slot,
                    "slots_said": not args.hide_slots,
                    "requests": server.served,
                    "model_calls": calls,
                    "serial_bound_s": round(serial, 4),
                    "wall_s": round(wall, 4),
                    "ratio": round(ratio, 4),
                    "limit": model.limiter.limit,
                    "limit_changes": model.limiter.history,
                    "server_max_open": server.max_open,
                    "tokens_per_second": snap.tokens_per_second,
                    "errors": len(errors),
                    "end_reasons": dict(reasons),
                }
            )
        )
    return EXIT_ERROR if errors else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
