"""``utdebug bench synth``: how many buggy programs model-free input synthesis exposes.

For each problem of a function split (MBPP+Fix (Hard), MBPP+Fix, HE+Fix, a validation file),
with the base inputs (the entry point's calls in ``test_list``; HE+Fix: the prompt's doctest
examples) as the only seeds and no model:

1. :func:`utdebug.synth.pipeline.synthesize_valid` emits up to :data:`COUNT` candidate inputs in
   two rounds (seeds, mutation, Hypothesis strategies inferred from the seeds' values, the
   signature's type hints) and validates them on the gold code, run twice (the second time in
   reverse order): an input is valid when both runs return and agree;
2. the buggy code runs the valid inputs; it is *exposed* when some outcome differs from the
   gold's (compared with the problem's own ``CheckSpec``);
3. *in the envelope* counts only exposing inputs inside the envelope of the problem's private
   inputs (base + plus: kinds, value ranges, lengths, character classes), which the
   synthesiser never sees;
4. the gold code runs the valid inputs once more as a program under test: any difference is a
   false alarm;
5. the reduced suite is the greedy cover of the in-envelope exposure (the fewest inputs that
   expose the same programs).

Budgets are CPU time (this process's and the sandbox children's), so what comes out does not
move with the machine's load; wall-clock times are recorded beside them. One record per problem
in ``samples.jsonl`` (resumed by key), ``summary.json`` rebuilt from the records.
ClassEval+Fix (a method of a class, tested by unittest methods) is measured the same way on
the method's call sites in its tests: :mod:`utdebug.benchmarks.synth_classeval`.
With ``--model M`` (function splits), the model's generator programs are one more source
(:mod:`utdebug.benchmarks.synth_model`); the SIMULATED model cannot write them and is refused.
"""

from __future__ import annotations

import ast
import dataclasses
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console

from utdebug.agents.base import Model
from utdebug.agents.synth_prompts import SynthProblem
from utdebug.benchmarks.bench import (
    error_line,
    eval_settings,
    load_selected,
    open_sandbox,
    out_dir,
    recorded_progress,
    run_exit,
    run_mode,
    sandbox_exit,
)
from utdebug.benchmarks.debugging import error_rows
from utdebug.benchmarks.modes import ModeContext, UsageError
from utdebug.benchmarks.report import print_synth
from utdebug.benchmarks.synth_classeval import expose_class_problem
from utdebug.benchmarks.synth_model import merge, model_inputs, source_counts
from utdebug.cli_common import Exit, console
from utdebug.data import splits
from utdebug.data.datasets import ClassFixProblem, LoadedSplit, Problem
from utdebug.data.splits import ProblemKind
from utdebug.runs.folder import (
    Job,
    JobLoop,
    RunResult,
    model_fields,
    run_folder,
    summary_head,
)
from utdebug.runs.records import record_key, task_order
from utdebug.sandbox import SandboxError, SandboxUnavailable
from utdebug.sandbox.executor import Sandbox
from utdebug.sandbox.values import describe
from utdebug.synth import (
    Envelope,
    Reference,
    Seeds,
    exposing_inputs,
    reduce_suite,
    seeds_from_problem,
)
from utdebug.synth.generators import GVSettings
from utdebug.synth.oracle import PROGRAM_LIMITS, Validation
from utdebug.synth.pipeline import ValidSynthesis, synthesize_valid
from utdebug.synth.strategies import parse_hints

COUNT = 600
"""Candidate inputs a problem."""
PER_PROBLEM = 10.0
"""CPU seconds a problem (synthesis, validation and the two program runs)."""
SYNTH_SHARE = 0.5
"""The part of :data:`PER_PROBLEM` for synthesis and validation (the rest runs the programs)."""


@dataclass(frozen=True, slots=True)
class ExposureSettings:
    """How each problem is measured (part of every record's key)."""

    count: int = COUNT
    seed: int = 0
    per_problem: float = PER_PROBLEM
    synth_share: float = SYNTH_SHARE
    model: str | None = None
    """The model that writes generator programs (``None``: model-free)."""
    generators: tuple[int, int, int] = (80, 20, 3)
    """With a model: inputs asked of the regular and the corner generator, repair rounds."""

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        if self.model is None:  # a model-free run's key is what it was before models
            del out["model"], out["generators"]
        else:
            out["generators"] = list(self.generators)
        return out

    def gv(self) -> GVSettings:
        regular, corner, repairs = self.generators
        return GVSettings(regular=regular, corner=corner, repairs=repairs)


def _names(signature: str) -> tuple[str, ...]:
    try:
        tree = ast.parse(f"def {signature.strip().rstrip(':')}: pass")
    except SyntaxError:
        return ()
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    return tuple(a.arg for a in [*fn.args.posonlyargs, *fn.args.args])


@dataclass
class _Synthesised:
    """A problem's inputs before the programs run: the synthesised ones, then (with a model)
    the generators'."""

    seeds: Seeds
    refs: list[Reference]
    vs: ValidSynthesis
    val: Validation
    sources: list[str]
    t0: float
    p0: float
    model: dict[str, Any] | None = None


def _synthesise(sb: Sandbox, p: Problem, settings: ExposureSettings) -> _Synthesised:
    t0, p0 = time.monotonic(), time.process_time()
    seeds = seeds_from_problem(p)
    try:
        hints = parse_hints(p.signature, p.entry_point)
    except SyntaxError:
        hints = {}
    refs = [
        Reference(p.gold, p.entry_point, "gold"),
        Reference(p.gold, p.entry_point, "gold (reversed)", reverse=True),
    ]
    vs = synthesize_valid(
        sb,
        refs,
        seeds.inputs,
        count=settings.count,
        seed=settings.seed,
        hints=hints or None,
        names=_names(p.signature),
        time_budget=settings.per_problem * settings.synth_share,
        check=p.tests.check,
    )
    sources = [c.source for c in vs.candidates]
    return _Synthesised(seeds, refs, vs, vs.validation, sources, t0, p0)


async def _add_generators(
    sb: Sandbox, p: Problem, s: _Synthesised, model: Model, gv: GVSettings
) -> None:
    """The model's generator programs' inputs after the synthesised ones (source
    ``generator``)."""
    problem = SynthProblem(
        entry_point=p.entry_point,
        signature=p.signature,
        description=p.prompt,
        examples=s.seeds.inputs[:10],
        envelope=s.vs.envelope.describe(),
    )
    mi = await model_inputs(
        model,
        sb,
        problem,
        s.refs,
        bounds=s.vs.envelope.widened(outer=True) if s.seeds.inputs else None,
        known=s.val.inputs,
        settings=dataclasses.replace(gv, check=p.tests.check),
    )
    s.val = merge(s.val, mi.validation)
    s.sources += mi.sources
    s.model = mi.record


def _measure(
    sb: Sandbox, p: Problem, settings: ExposureSettings, s: _Synthesised
) -> dict[str, Any]:
    """Run the buggy and the gold code on the valid inputs: one record's body."""
    val, vs, t0, p0 = s.val, s.vs, s.t0, s.p0
    t_valid = time.monotonic() - t0
    cpu_valid = time.process_time() - p0 + val.cpu_seconds
    stats: dict[str, float] = {}
    left = max(1.0, settings.per_problem - cpu_valid)
    exposing = exposing_inputs(
        sb,
        p.code,
        p.entry_point,
        val,
        limits=dataclasses.replace(PROGRAM_LIMITS, batch=left / 2),
        check=p.tests.check,
        stats=stats,
    )
    alarms = exposing_inputs(
        sb,
        p.gold,
        p.entry_point,
        val,
        limits=dataclasses.replace(PROGRAM_LIMITS, batch=max(1.0, left / 2)),
        check=p.tests.check,
        stats=stats,
    )
    private = Envelope.learn(p.tests.inputs)
    in_env = [i for i in exposing if private.contains(val.inputs[i])]
    valid_in_env = sum(1 for i in val.valid_indices if private.contains(val.inputs[i]))
    suite = reduce_suite({"buggy": in_env}, val.inputs)
    sources: dict[str, int] = {}
    for i in in_env:
        src = s.sources[i]
        sources[src] = sources.get(src, 0) + 1
    cpu_total = time.process_time() - p0 + val.cpu_seconds + stats.get("cpu_seconds", 0.0)
    rec: dict[str, Any] = {
        "seeds": len(s.seeds.inputs),
        "emitted": len(val.inputs),
        "valid": len(val.valid_indices),
        "valid_in_envelope": valid_in_env,
        "disagree": len(val.disagreements),
        "rounds": [dataclasses.asdict(r) for r in vs.rounds],
        "exposed": bool(exposing),
        "exposed_in_envelope": bool(in_env),
        "exposing_sources": sources,
        "false_alarm": bool(alarms),
        "alarm_inputs": [describe(val.inputs[i], 200) for i in alarms[:3]],
        "suite": [describe(val.inputs[i], 300) for i in suite],
        "wall_synth_valid": round(t_valid, 4),
        "cpu_synth_valid": round(cpu_valid, 4),
        "wall_total": round(time.monotonic() - t0, 4),
        "cpu_total": round(cpu_total, 4),
        "over_budget": cpu_total > settings.per_problem,
        "notes": vs.notes,
        "invalid_reasons": val.reason_counts(),
        "source_counts": source_counts(s.sources, val.valid),
    }
    if s.model is not None:
        rec["generator"] = s.model
    return rec


def expose_problem(sb: Sandbox, p: Problem, settings: ExposureSettings) -> dict[str, Any]:
    """Synthesise, validate on the gold code, run the buggy and the gold code: one record's
    body (see the module's text)."""
    return _measure(sb, p, settings, _synthesise(sb, p, settings))


async def expose_problem_with_model(
    sb: Sandbox, p: Problem, settings: ExposureSettings, model: Model, gv: GVSettings
) -> dict[str, Any]:
    """:func:`expose_problem` with the model's generator programs as one more source (the
    time they take is in the wall-clock and CPU figures; the model's own time is wall clock
    only)."""
    s = _synthesise(sb, p, settings)
    await _add_generators(sb, p, s, model, gv)
    return _measure(sb, p, settings, s)


def summarize_synth(
    records: Sequence[dict[str, Any]], settings: ExposureSettings
) -> dict[str, Any]:
    """The run's numbers from its records (the problems a problem error ended are left out of
    the rates and listed in ``errors``)."""
    records = sorted(records, key=lambda r: task_order(str(r["task_id"])))
    head = summary_head(records)
    ok = [r for r in records if r.get("error_kind") is None]
    n = len(ok)
    emitted = sum(r["emitted"] for r in ok)
    valid = sum(r["valid"] for r in ok)
    wall = sum(r["wall_synth_valid"] for r in ok)
    cpu = sum(r["cpu_synth_valid"] for r in ok)
    exposed = [r for r in ok if r["exposed_in_envelope"]]
    sizes = [len(r["suite"]) for r in exposed]
    by_src: dict[str, int] = {}
    for r in ok:
        for s in r["exposing_sources"]:
            by_src[s] = by_src.get(s, 0) + 1
    false_alarms = sum(1 for r in ok if r["false_alarm"])
    unsynth = [r for r in ok if r.get("not_synthesisable")]
    gens = [r["generator"] for r in ok if r.get("generator")]
    model: dict[str, Any] = {}
    if settings.model is not None:
        first = next((r for r in records if r.get("model")), {})
        model = {
            "model": settings.model,
            "simulated": bool(first.get("simulated")),
            "label": first.get("label"),
            "tokens": {
                k: sum(g["tokens"][k] for g in gens) for k in ("prompt", "completion", "total")
            },
            "model_calls": sum(g["model_calls"] for g in gens),
            "generator_inputs": {
                "emitted": sum(g["emitted"] for g in gens),
                "new": sum(g["new"] for g in gens),
                "valid": sum(g["valid"] for g in gens),
                "problems_repaired": sum(1 for g in gens if g["repaired"]),
            },
        }
    by_count: dict[str, dict[str, int]] = {}
    for r in ok:
        for src, c in r.get("source_counts", {}).items():
            tot = by_count.setdefault(src, {"emitted": 0, "valid": 0})
            tot["emitted"] += c["emitted"]
            tot["valid"] += c["valid"]
    return (
        head
        | model
        | {
            "problems": n,
            "not_synthesisable": len(unsynth),
            "not_synthesisable_ids": [r["task_id"] for r in unsynth][:50],
            "exposed": sum(1 for r in ok if r["exposed"]),
            "exposed_in_envelope": len(exposed),
            "false_alarms": false_alarms,
            "emitted": emitted,
            "valid": valid,
            "validity": valid / emitted if emitted else 0.0,
            "valid_in_envelope": sum(r["valid_in_envelope"] for r in ok),
            "valid_inputs_per_s": valid / wall if wall > 0 else 0.0,
            "valid_inputs_per_cpu_s": valid / cpu if cpu > 0 else 0.0,
            "tnr": len(exposed) / n if n else 0.0,
            "tpr": (n - false_alarms) / n if n else 0.0,
            "reduced_suite": {
                "problems": len(sizes),
                "inputs": sum(sizes),
                "mean": statistics.mean(sizes) if sizes else 0.0,
                "max": max(sizes, default=0),
            },
            "by_source": dict(sorted(by_src.items(), key=lambda kv: (-kv[1], kv[0]))),
            "source_counts": dict(sorted(by_count.items())),
            "over_budget": [r["task_id"] for r in ok if r.get("over_budget")],
            "max_cpu_seconds": max((r["cpu_total"] for r in ok), default=0.0),
            "max_wall_seconds": max((r["wall_total"] for r in ok), default=0.0),
            "not_exposed": [r["task_id"] for r in ok if not r["exposed_in_envelope"]][:50],
            "false_alarm_ids": [r["task_id"] for r in ok if r["false_alarm"]][:50],
            "settings": settings.to_json(),
        }
    )


def default_out_dir(ls: LoadedSplit, settings: ExposureSettings) -> Path:
    return Path("runs") / "bench" / f"synth-{ls.split.value}-s{settings.seed}"


def problem_flag(rec: dict[str, Any]) -> str:
    """``exposed`` / ``out of envelope`` / ``missed`` / ``error`` (and ``FALSE ALARM``)."""
    if rec.get("error_kind"):
        return "error"
    if rec["exposed_in_envelope"]:
        flag = "exposed"
    else:
        flag = "out of envelope" if rec["exposed"] else "missed"
    return flag + (" FALSE ALARM" if rec["false_alarm"] else "")


async def synth_split(
    sb: Sandbox,
    ls: LoadedSplit,
    out_dir: Path,
    settings: ExposureSettings,
    loop: JobLoop,
    model: Model | None = None,
) -> RunResult:
    """Measure every problem of ``ls`` not yet recorded in ``out_dir``; rewrite the summary.
    ``model``: its generator programs are one more source (function splits)."""
    t0 = time.perf_counter()
    run = RunResult(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    def key_of(p: Problem | ClassFixProblem) -> str:
        tests = (
            {"tests": [p.test_code, list(p.tests), list(p.target_tests)]}
            if isinstance(p, ClassFixProblem)
            else {}
        )
        return record_key(
            {
                "mode": "synth",
                "split": ls.split.value,
                "task_id": p.task_id,
                "code": p.code,
                "gold": p.gold,
                **tests,
                "sources": sorted(ls.sources.items()),
                "settings": settings.to_json(),
            }
        )

    def base(task_id: str, key: str) -> dict[str, Any]:
        who = {"model": None} if model is None else model_fields(model.name, model.simulated)
        return {"key": key, "split": ls.split.value, "task_id": task_id} | who

    async def work(p: Problem) -> dict[str, Any]:
        if model is not None:
            return await expose_problem_with_model(sb, p, settings, model, settings.gv())
        return expose_problem(sb, p, settings)

    async def work_class(p: ClassFixProblem) -> dict[str, Any]:
        return expose_class_problem(
            sb, p, settings.count, settings.seed, settings.per_problem, settings.synth_share
        )

    dataset_errors = error_rows(
        ls, lambda t, err: base(t, record_key({"mode": "synth", "error_row": err.row}))
    )
    jobs = [Job(base(p.task_id, key_of(p)), partial(work, p)) for p in ls.problems]
    jobs += [Job(base(c.task_id, key_of(c)), partial(work_class, c)) for c in ls.classes]
    await run_folder(
        run,
        dataset_errors=dataset_errors,
        jobs=jobs,
        summarize=lambda records: summarize_synth(records, settings),
        extra={"mode": "synth", "split": ls.split.value},
        loop=loop,
        started=t0,
    )
    return run


def run(ctx: ModeContext, model: Model | None = None) -> int:
    """``utdebug bench synth`` (model-free, or with ``model``'s generator programs): exit 0, 2
    usage/data, 3 sandbox, 130 stopped."""
    options = ctx.options
    err = console(stderr=True)
    out = console()
    if options.gold:
        raise UsageError(
            "--gold does not apply to bench synth: the gold code is always run (it validates "
            "the inputs and is checked for false alarms)"
        )
    if "he" in options.data.splits and options.data.he_variant == "body":
        raise UsageError(
            "bench synth --split he needs --he-variant runnable: the published body-only buggy "
            "code does not load, so every problem would count as exposed"
        )
    settings = ExposureSettings(
        COUNT, options.sim.seed, PER_PROBLEM, SYNTH_SHARE, None if model is None else model.name
    )
    try:  # ClassEval+Fix is built in the sandbox the first time, as plain evaluation builds it
        loaded, failed = load_selected(options, err, ctx.sandbox, eval_settings(options).limits)
    except (SandboxUnavailable, SandboxError) as e:  # building ClassEval+Fix
        return sandbox_exit(err, "utdebug bench", e)
    if not loaded:
        return Exit.USAGE
    return run_mode(err, "utdebug bench", _synth(ctx, loaded, failed, settings, err, out, model))


async def _synth(
    ctx: ModeContext,
    loaded: list[LoadedSplit],
    failed: list[str],
    settings: ExposureSettings,
    err: Console,
    out: Console,
    model: Model | None,
) -> int:
    runs: list[RunResult] = []
    with open_sandbox(ctx.sandbox, err) as sb:
        for ls in loaded:
            folder = out_dir(ctx.options, ls.split, default_out_dir(ls, settings))
            runs.append(await _synth_one(sb, ls, folder, settings, ctx, err, model))
            if ctx.stop.is_set():
                break
    print_synth(out, [(r.summary["split"], r) for r in runs], as_json=ctx.options.run.json)
    return run_exit(err, ctx.stop, failed)


async def _synth_one(
    sb: Sandbox,
    ls: LoadedSplit,
    out_dir: Path,
    settings: ExposureSettings,
    ctx: ModeContext,
    err: Console,
    model: Model | None,
) -> RunResult:
    """One split, with its progress bar on stderr."""
    total = len(ls.problems) + len(ls.classes) + len(ls.errors)
    with recorded_progress(f"{ls.split.value} synth", err, total, problem_flag) as on_record:
        loop = JobLoop(1, on_record, ctx.stop)
        return await synth_split(sb, ls, out_dir, settings, loop, model)


def run_with_model(ctx: ModeContext) -> int:
    """``bench synth --model M``: the model-free sources plus the model's generator programs
    (function splits). ``--model sim`` (the SIMULATED model cannot write programs) and
    ``--split classeval`` with a model are usage errors (exit 2)."""
    from utdebug.agents.base import Meter
    from utdebug.agents.choice import resolve_choice
    from utdebug.agents.config import ConfigError
    from utdebug.benchmarks.model_bench import build_model

    options = ctx.options
    err = console(stderr=True)
    say = partial(error_line, err, "utdebug bench:")
    try:
        choice = resolve_choice(options.model)
    except ConfigError as e:
        say(str(e))
        return Exit.USAGE
    if choice.simulated:
        raise UsageError(
            "bench synth --model sim: the SIMULATED model answers from the private tests and "
            "cannot write generator programs; use a model of yours or scripted:FILE, or drop "
            "--model for the model-free run"
        )
    if any(splits.spec(s).kind is not ProblemKind.FUNCTION for s in options.data.splits):
        raise UsageError(
            "bench synth --model takes the function splits (hard, mbpp, he, val); --split "
            "classeval runs model-free (drop --model)"
        )
    cache_dir = options.data.cache()
    try:
        meter = Meter(cost_limit=options.loop.cost_limit)
        model = build_model(options.model, options, meter, cache_dir)
    except (ConfigError, ValueError) as e:
        say(str(e))
        return Exit.USAGE
    assert model is not None  # sim was refused above
    return run(ctx, model)


__all__ = [
    "COUNT",
    "PER_PROBLEM",
    "SYNTH_SHARE",
    "ExposureSettings",
    "expose_problem",
    "expose_problem_with_model",
    "run",
    "run_with_model",
    "summarize_synth",
    "synth_split",
]
