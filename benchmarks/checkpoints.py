"""``utdebug bench intrinsic --models M1,M2,...``: checkpoint selection on Acc. ∩ Attack.

The paper selects UTGen checkpoints by the intrinsic Acc. ∩ Attack metric. Each model of
``--models`` (typically the checkpoints of one training run, served side by side, e.g. vLLM
LoRA adapters) is probed, then measured with :func:`utdebug.benchmarks.intrinsic.run_intrinsic`
on the chosen split, which should be a validation split disjoint from the test splits
(``--split val --val-file DIR/val.jsonl``, written by ``utdebug train data --val-fraction``).
A table is printed per checkpoint, then one that compares them and names the best (highest
Acc. ∩ Attack; ties go to the higher output accuracy, then the higher attack rate, then the
earlier in the list). A model that cannot be used, or that a model error cut short on some
problems, gets one line on stderr; the others still run; the command then exits 1.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from utdebug.agents.base import Meter, Model, ModelError
from utdebug.agents.sim import SIMULATED
from utdebug.benchmarks.bench import (
    error_line,
    load_selected,
    local_workers,
    run_mode,
)
from utdebug.benchmarks.bench import (
    eval_settings as bench_eval_settings,
)
from utdebug.benchmarks.intrinsic import IntrinsicResult, run_intrinsic
from utdebug.benchmarks.model_bench import build_model, sim_params
from utdebug.benchmarks.modes import ModeContext
from utdebug.benchmarks.options import BenchOptions
from utdebug.benchmarks.report import columns_table, print_intrinsic, sim_title
from utdebug.cli_common import Exit, console
from utdebug.data.datasets import LoadedSplit
from utdebug.data.private_tests import EvalSettings, ExpectedCache, PrivateTestRunner, VerdictCache
from utdebug.engine import Executor
from utdebug.runs.folder import FatalRunError, one_line, preflight_models, print_json
from utdebug.sandbox import (
    Sandbox,
    SandboxConfig,
)
from utdebug.text_safety import visible

__all__ = ["Checkpoint", "best", "run"]


@dataclass(slots=True)
class Checkpoint:
    name: str
    result: IntrinsicResult | None = None
    error: str | None = None
    """Why the model could not be measured at all."""


def best(points: list[Checkpoint]) -> Checkpoint | None:
    """The measured checkpoint with the highest Acc. ∩ Attack (ties: output accuracy, then
    attack rate, then the earlier one)."""
    measured = [p for p in points if p.result is not None and p.result.problems]
    if not measured:
        return None

    def score(p: Checkpoint) -> tuple[float, float, float]:
        assert p.result is not None
        r = p.result.rates()
        return (r["accuracy_and_attack"], r["output_accuracy"], r["attack_rate"])

    top = max(score(p) for p in measured)
    return next(p for p in measured if score(p) == top)


def run(ctx: ModeContext) -> int:
    """``utdebug bench intrinsic --models A,B,...``: choose among checkpoints."""
    options, cfg, stop = ctx.options, ctx.sandbox, ctx.stop
    err = console(stderr=True)
    out = console()
    loaded, failed = load_selected(options, err)
    if failed or not loaded:
        return Exit.USAGE
    names = list(options.models or ())
    eval_settings = bench_eval_settings(options)
    main = _run(options, cfg, loaded, names, eval_settings, out, err, stop)
    return run_mode(err, "utdebug bench", main, "interrupted")


async def _run(
    options: BenchOptions,
    cfg: SandboxConfig,
    loaded: list[LoadedSplit],
    names: list[str],
    eval_settings: EvalSettings,
    out: Console,
    err: Console,
    stop: threading.Event,
) -> int:
    from utdebug.agents.config import ConfigError

    cache_dir = options.data.cache()
    meter = Meter(cost_limit=options.loop.cost_limit)
    models: dict[str, Model | None] = {}
    points: dict[str, list[Checkpoint]] = {ls.split.value: [] for ls in loaded}
    bad = False
    for name in names:
        try:
            models[name] = build_model(name, options, meter, cache_dir)
            await preflight_models([models[name]], None)
        except (ConfigError, OSError, ValueError, ModelError) as e:
            error_line(err, f"utdebug bench: checkpoint {name} cannot be used:", e)
            for ls in loaded:
                points[ls.split.value].append(Checkpoint(name, error=one_line(e)))
            models.pop(name, None)
            bad = True
    with Sandbox(cfg) as sb:
        executor = Executor(sb, workers=local_workers(options.run))
        try:
            for ls in loaded:
                verdicts = VerdictCache(
                    cache_dir / "private-verdicts" if options.loop.use_cache else None
                )
                private = PrivateTestRunner(
                    executor, eval_settings, ExpectedCache(cache_dir / "he-expected"), verdicts
                )
                for name, model in models.items():
                    if stop.is_set():
                        return Exit.INTERRUPTED
                    try:
                        res = await run_intrinsic(
                            ls=ls,
                            model=model,
                            options=options,
                            private=private,
                            executor=executor,
                            sim=sim_params(options) if model is None else None,
                            err=err,
                        )
                    except FatalRunError as e:
                        error_line(err, f"utdebug bench: checkpoint {name} cannot be used:", e)
                        points[ls.split.value].append(Checkpoint(name, error=one_line(e)))
                        bad = True
                        continue
                    if res.model_errors:
                        first = res.model_errors[0][1]
                        error_line(
                            err,
                            f"utdebug bench: checkpoint {name}:",
                            f"{len(res.model_errors)} of {len(ls.problems)} problems ended by a "
                            f"model error ({first}); they are left out of its numbers",
                        )
                        bad = True
                    if not options.run.json:
                        print_intrinsic(out, ls.split, res, as_json=False)
                    points[ls.split.value].append(Checkpoint(name, res))
        finally:
            executor.close()
    order = {name: i for i, name in enumerate(names)}
    for pts in points.values():
        pts.sort(key=lambda p: order[p.name])
    _print_selection(out, points, as_json=options.run.json)
    return Exit.MODEL if bad else Exit.OK


def _row(p: Checkpoint) -> dict[str, Any]:
    if p.result is None:
        return {"model": p.name, "error": p.error}
    return {
        "model": p.name,
        "simulated": p.result.simulated,
        "problems": p.result.problems,
        "samples": p.result.samples,
        **p.result.rates(),
        "model_errors": len(p.result.model_errors),
    }


def _print_selection(out: Console, points: dict[str, list[Checkpoint]], *, as_json: bool) -> None:
    payload: list[dict[str, Any]] = []
    for split, pts in points.items():
        winner = best(pts)
        payload.append(
            {
                "split": split,
                "checkpoints": [_row(p) for p in pts],
                "best": winner.name if winner is not None else None,
                "label": SIMULATED
                if any(p.result is not None and p.result.simulated for p in pts)
                else None,
            }
        )
    if as_json:
        print_json({"selection": payload})
        return
    for part in payload:
        sim = part["label"] is not None
        title = f"{part['split']}: checkpoint selection on Acc. ∩ Attack"
        t = columns_table(
            sim_title(title, sim),
            (
                "checkpoint",
                "problems",
                "samples",
                "attack rate",
                "output acc.",
                "acc. ∩ attack",
            ),
            left=("checkpoint",),
        )
        rows: list[dict[str, Any]] = part["checkpoints"]
        for row in rows:
            mark = " (best)" if row["model"] == part["best"] else ""
            if "error" in row:  # said in full under the table (a cell would cut it)
                t.add_row(row["model"], "-", "-", "-", "-", "error (below)")
                continue
            t.add_row(
                row["model"] + mark,
                str(row["problems"]),
                str(row["samples"]),
                f"{100 * row['attack_rate']:.2f}%",
                f"{100 * row['output_accuracy']:.2f}%",
                f"{100 * row['accuracy_and_attack']:.2f}%",
            )
        out.print(t)
        for row in rows:
            if "error" in row:
                error = str(row["error"])
                if not error.startswith(f"{row['model']}: "):
                    error = f"{row['model']}: {error}"
                out.print(f"error: {visible(error)}", markup=False, highlight=False)
        if part["best"] is None:
            out.print(f"{part['split']}: no checkpoint could be measured")
        else:
            chosen = next(r for r in rows if r["model"] == part["best"])
            out.print(
                f"{part['split']}: best checkpoint: {part['best']} (Acc. ∩ Attack "
                f"{100 * chosen['accuracy_and_attack']:.2f}%)"
            )
