"""``utdebug train data``: the run.

Load the source, drop problems that overlap the evaluation splits, hold some out for
validation, and run :func:`utdebug.train.pipeline.process_problem` on every problem not yet
recorded, through a runner (:mod:`utdebug.distributed`: local threads over one sandbox, or
Ray tasks with a sandbox per worker process, ``--ray ADDRESS``). The driver alone writes: one
record per finished problem, appended and fsynced to ``samples.jsonl`` (a torn last line from a
crash is dropped, :class:`~utdebug.runs.records.SampleWriter`), keyed by a hash of the
problem and the settings, so that a rerun skips what is recorded and retries problems a model
error ended. At the end (also after an interruption) the SFT shards, the validation file, the
card and the training configurations are rebuilt from the records, in the problems' order.

Exit codes: 0 done; 1 the model cannot be used, or some problems ended with a model error or
lost their Ray worker (rerun to retry them); 2 bad arguments or data, the run folder cannot be
written, or the Ray cluster cannot be reached; 3 the sandbox cannot give the required
isolation; 130 interrupted (finished problems are kept).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import shlex
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from utdebug import __version__
from utdebug.agents.choice import names_simulated
from utdebug.agents.prompts import PROMPT_VERSION, TRAIN_PROMPT_VERSION
from utdebug.agents.sim import SIMULATED
from utdebug.cli_common import Exit
from utdebug.data.datasets import DatasetError, default_cache_dir
from utdebug.distributed import PoolOptions, PoolUnavailable, WorkerLost, make_pool
from utdebug.runs.records import SAMPLES, RunFolderError, SampleWriter, read_samples
from utdebug.sandbox import SandboxConfig, SandboxError, SandboxUnavailable
from utdebug.train import output
from utdebug.train.decontam import EVAL_SPLITS, EvalIndex, build_index, default_splits
from utdebug.train.output import held_out_text
from utdebug.train.pipeline import process_problem
from utdebug.train.settings import PIPELINE_VERSION, Job, Settings, job_key
from utdebug.train.sources import Loaded, TrainProblem
from utdebug.train.trl_config import COMMON_NOTE, NOTES, TRL_VERSION, render_yaml, sft_configs

__all__ = ["RunOutcome", "run_train_data"]

STAGES = ("problem", "perturb", "inputs", "rationales")


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@dataclass(slots=True)
class RunOutcome:
    """What the run did (for the counts at the end and the card)."""

    loaded: Loaded
    index: EvalIndex
    decontaminated: list[dict[str, Any]]
    problems: int
    jobs: list[Job]
    resumed: int = 0
    ran: int = 0
    seconds: float = 0.0
    interrupted: bool = False
    stopped: str | None = None
    """Why the run stopped early (a fatal model error, the sandbox)."""
    lost: int = 0
    """Problems whose Ray worker was lost more often than the retries allow (not recorded:
    a rerun runs them)."""
    node_died: bool = False
    """Some were lost because a Ray node died."""
    notes: list[str] = field(default_factory=list)


def may_download(args: argparse.Namespace) -> bool:
    """Files are downloaded only when no data folder is named (``--data-dir`` or
    ``$UTDEBUG_DATA_DIR``): with one, nothing goes to the network, and a file it lacks is
    unavailable."""
    return args.data_dir is None and not os.environ.get("UTDEBUG_DATA_DIR")


def load_source(args: argparse.Namespace, cache_dir: Path) -> Loaded:
    from utdebug.train import sources, tulu

    kw: dict[str, Any] = {
        "data_dir": args.data_dir,
        "cache_dir": cache_dir,
        "download": may_download(args),
        "verify": not args.no_verify,
    }
    if args.source == "mbpp+":
        return sources.load_mbpp_plus(**kw)
    if args.source == "he+":
        return sources.load_he_plus(**kw)
    if args.source == "tulu3":
        return tulu.load_tulu(
            args.source_path, args.data_dir, args.max_prompt_tokens, download=may_download(args)
        )
    if args.source_path is None:
        raise DatasetError("--source table needs --source-path FILE_OR_FOLDER")
    return sources.load_table(args.source_path)


def holdout(problem: TrainProblem, seed: int, fraction: float) -> bool:
    """Whether ``problem`` is held out for validation (a hash of the seed and the problem, so
    the choice does not depend on the order or on ``--limit``)."""
    if fraction <= 0:
        return False
    h = hashlib.sha256(f"{seed}:{problem.fingerprint()}".encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64 < fraction


def _latest(records: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for r in records:
        if isinstance(r.get("key"), str):
            out[r["key"]] = r
    return out


def run_train_data(
    args: argparse.Namespace, settings: Settings, cfg: SandboxConfig, stop: threading.Event
) -> int:
    t0 = time.perf_counter()
    cache_dir = Path(args.cache_dir) if args.cache_dir else default_cache_dir()
    out_dir = Path(args.out)
    sim = settings.simulated
    tag = f" [{SIMULATED}]" if sim else ""
    try:
        loaded = load_source(args, cache_dir)
    except DatasetError as e:
        _say(f"utdebug train data: {e}")
        return Exit.USAGE
    _say(
        f"train data{tag}: source {loaded.name}: {loaded.rows} rows, {len(loaded.problems)} "
        f"problems ({sum(loaded.dropped.values())} rows dropped)"
    )
    for note in loaded.notes:
        _say(f"train data: note: {note}")
    splits = _eval_splits(args.decontaminate, loaded.name)
    index = build_index(
        splits,
        data_dir=args.data_dir,
        cache_dir=cache_dir,
        download=may_download(args),
        verify=not args.no_verify,
    )
    kept: list[TrainProblem] = []
    dropped: list[dict[str, Any]] = []
    for p in loaded.problems:
        found = index.matches(p)
        if found:
            dropped.append({"problem_id": p.problem_id, "matches": [m.to_json() for m in found]})
        else:
            kept.append(p)
    _report_decontamination(index, dropped, splits, loaded.name)
    selected = kept
    if args.problems:
        wanted = [w.strip() for w in args.problems.split(",") if w.strip()]
        known = {p.problem_id for p in loaded.problems}
        unknown = [w for w in wanted if w not in known]
        if unknown:
            _say(f"utdebug train data: unknown problem(s) in {loaded.name}: {', '.join(unknown)}")
            return Exit.USAGE
        gone = [w for w in wanted if w not in {p.problem_id for p in kept}]
        if gone:
            _say(f"train data: dropped by decontamination: {', '.join(gone)}")
        selected = [p for p in kept if p.problem_id in set(wanted)]
    if args.limit is not None:
        selected = selected[: args.limit]
    jobs = []
    for i, p in enumerate(selected):
        held = holdout(p, settings.seed, args.val_fraction)
        jobs.append(Job(i, job_key(p, settings, held), p, settings, held))
    run = RunOutcome(loaded, index, dropped, len(kept), jobs)
    try:
        output.write_jsonl(out_dir / "decontamination.jsonl", dropped)
        code = _run_jobs(args, settings, cfg, stop, out_dir, run)
        run.seconds = time.perf_counter() - t0
        card = _finish(args, settings, out_dir, run)
    except RunFolderError as e:
        _say(f"utdebug train data: {e}; {e.advice}")
        return Exit.USAGE
    if code == Exit.OK and run.lost:
        why = "a Ray node died" if run.node_died else "their Ray worker was lost"
        _say(
            f"utdebug train data: {run.lost} problems were not recorded: {why}; finished "
            "problems are kept; rerun the same command to run them"
        )
        return Exit.FAILURE
    errors = card["model_errors"]
    if code == Exit.OK and errors["count"]:
        cause = errors["causes"][0]["error"] if errors["causes"] else "unknown"
        _say(
            f"utdebug train data: {errors['count']} of {len(jobs)} problems ended by a model "
            f"error ({cause}); finished problems are kept; rerun the same command to retry them"
        )
        return Exit.FAILURE
    return code


def _eval_splits(value: str | None, source: str) -> list[str]:
    if value is None:
        return default_splits(source)
    if value.strip() == "none":
        return []
    return [s.strip() for s in value.split(",") if s.strip()]


def _report_decontamination(
    index: EvalIndex, dropped: list[dict[str, Any]], splits: list[str], source: str
) -> None:
    per: Counter[str] = Counter()
    for d in dropped:
        for split in {m["split"] for m in d["matches"]}:
            per[split] += 1
    parts = []
    for split, info in index.splits.items():
        if info["status"] == "used":
            parts.append(f"{split} {per[split]}")
        else:
            parts.append(f"{split} unavailable")
    _say(
        f"train data: decontamination: {len(dropped)} problems dropped "
        f"({', '.join(parts) or 'no evaluation split checked'})"
    )
    for split, info in index.splits.items():
        if info["status"] != "used":
            _say(
                f"train data: warning: {info['name']} ({split}) is unavailable and was not "
                f"checked: {info['reason']}"
            )
    if source in EVAL_SPLITS and source not in splits:
        _say(
            f"train data: note: the source {source} is itself an evaluation split and is not "
            f"checked against itself: do not report on {source} with a model trained on this data"
        )


def _run_jobs(
    args: argparse.Namespace,
    settings: Settings,
    cfg: SandboxConfig,
    stop: threading.Event,
    out_dir: Path,
    run: RunOutcome,
) -> int:
    samples = out_dir / SAMPLES
    latest = _latest(read_samples(samples))
    done = {k for k, r in latest.items() if r.get("error_kind") != "model"}
    todo = [j for j in run.jobs if j.key not in done]
    run.resumed = len(run.jobs) - len(todo)
    sim = settings.simulated
    tag = f" [{SIMULATED}]" if sim else ""
    held = sum(j.holdout for j in run.jobs)
    _say(
        f"train data{tag}: {len(run.jobs)} problems ({held} held out for validation); "
        f"{run.resumed} already recorded, {len(todo)} to run; "
        + (f"model {settings.model}, " if settings.uses_model else "no model, ")
        + f"perturbation {settings.perturb}, inputs {settings.inputs}, "
        f"rationale {settings.rationale}, seed {settings.seed}"
    )
    if not todo:
        return Exit.OK
    code = _preflight(settings)
    if code is not None:
        return code
    options = PoolOptions(cfg, concurrency=args.concurrency, endpoint_limit=args.endpoint_limit)
    try:
        runner = make_pool(args.ray, options)
    except PoolUnavailable as e:
        _say(f"utdebug train data: {e}")
        return Exit.USAGE
    _say(f"train data: {runner.describe()}")
    writer = SampleWriter(samples)
    tally = _Progress(len(todo), tag)
    results = runner.map(process_problem, todo, stop=stop)
    try:
        for job, result in results:
            if isinstance(result, SandboxUnavailable | SandboxError):
                run.stopped = f"the sandbox: {result}"
                _say(f"utdebug train data: the sandbox cannot run: {result}")
                return Exit.SANDBOX
            if isinstance(result, WorkerLost):
                run.lost += 1
                run.node_died = run.node_died or result.node_died
                _say(f"train data: {job.problem.problem_id}: {result} (not recorded)")
                continue
            if isinstance(result, BaseException):
                if isinstance(result, KeyboardInterrupt):
                    raise result
                record = _error_record(job, result)
            else:
                record = result
            writer.write(record)
            run.ran += 1
            tally.add(record)
            if record.get("fatal"):
                run.stopped = str(record.get("error"))
                _say(f"utdebug train data: the model cannot be used: {record.get('error')}")
                return Exit.FAILURE
        if stop.is_set():
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        run.interrupted = True
        _say("interrupted: finished problems are kept; rerun the same command to resume")
        return Exit.INTERRUPTED
    finally:
        results.close()  # a run that stops early abandons the problems in flight
        runner.close()
        writer.close()
        tally.line(final=True)
    return Exit.OK


def _preflight(settings: Settings) -> int | None:
    """Probe a real model once before any problem starts (exit 1 when it cannot answer)."""
    if settings.simulated or not settings.uses_model:  # sim, scripted or none: nothing to probe
        return None
    from utdebug.agents.base import ModelError
    from utdebug.agents.config import resolve_model_spec
    from utdebug.agents.factory import build_litellm_model
    from utdebug.runs.folder import one_line, preflight_models

    spec = resolve_model_spec(settings.model)
    try:
        asyncio.run(
            preflight_models([build_litellm_model(spec)], lambda s: _say(f"train data: {s}"))
        )
    except ModelError as e:
        _say(f"utdebug train data: the model cannot be used: {one_line(e)}")
        return Exit.FAILURE
    return None


def _error_record(job: Job, exc: BaseException) -> dict[str, Any]:
    from utdebug.agents.sim import SIMULATED as LABEL

    return {
        "key": job.key,
        "index": job.index,
        "problem_id": job.problem.problem_id,
        "source": job.problem.source,
        "holdout": job.holdout,
        "model": job.settings.model,
        "perturb": job.settings.perturb,
        "simulated": job.settings.simulated,
        "label": LABEL if job.settings.simulated else None,
        "error_kind": "problem",
        "error": f"{type(exc).__name__}: {exc}",
        "counts": {},
        "versions": [],
        "examples": [],
        "val": None,
        "usage": {},
        "executions": 0,
        "batches": 0,
    }


class _Progress:
    """A progress line on stderr, at most every 2 s (and at the end)."""

    def __init__(self, total: int, tag: str) -> None:
        self.total = total
        self.tag = tag
        self.done = 0
        self.examples = 0
        self.val = 0
        self.model_errors = 0
        self.t0 = time.monotonic()
        self.last = 0.0
        self.shown = -1
        """``done`` when the last line was printed (the final line is not printed twice)."""

    def add(self, record: dict[str, Any]) -> None:
        self.done += 1
        self.examples += len(record.get("examples") or [])
        self.val += record.get("val") is not None
        self.model_errors += record.get("error_kind") == "model"
        self.line()

    def line(self, final: bool = False) -> None:
        now = time.monotonic()
        if final and self.shown == self.done:
            return
        if not final and now - self.last < 2.0 and self.done < self.total:
            return
        self.last = now
        self.shown = self.done
        _say(
            f"train data{self.tag}: {self.done}/{self.total} problems, {self.examples} examples, "
            f"{self.val} validation problems, {self.model_errors} model errors, "
            f"{now - self.t0:.1f} s"
        )


# --- the end ------------------------------------------------------------------------------------


def _finish(
    args: argparse.Namespace, settings: Settings, out_dir: Path, run: RunOutcome
) -> dict[str, Any]:
    latest = _latest(read_samples(out_dir / SAMPLES))
    records = [latest[j.key] for j in run.jobs if j.key in latest]
    records.sort(key=lambda r: int(r.get("index", 0)))
    examples = [e for r in records if r.get("error_kind") is None for e in r.get("examples", [])]
    val_rows = [r["val"] for r in records if r.get("error_kind") is None and r.get("val")]
    shards = output.write_shards(out_dir, examples, args.shard_size)
    parquet: list[Path] = []
    if args.parquet:
        parquet = output.write_parquet_shards(out_dir, examples, args.shard_size)
    val_file = None
    if args.val_fraction > 0:
        val_file = out_dir / "val.jsonl"
        output.write_jsonl(val_file, val_rows)
    for name, config in sft_configs(shards, seed=settings.seed).items():
        header = (
            f"trl sft --config {name}   (TRL {TRL_VERSION}; generated by utdebug train data)\n"
            "The paper's hyperparameters (UTGen, Appendix B); see docs/train.md.\n"
            f"{NOTES[name]}{COMMON_NOTE}"
        )
        output.write_text(out_dir / name, render_yaml(config, header))
    card = _card(args, settings, out_dir, run, records, shards, parquet, val_file, len(examples))
    output.write_card(out_dir, card)
    if args.json:
        print(json.dumps(card, indent=2))
    else:
        _print_counts(card, out_dir)
    return card


def _stage_counts(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, int]]:
    out: dict[str, Counter[str]] = {s: Counter() for s in STAGES}
    for r in records:
        for stage, counts in (r.get("counts") or {}).items():
            out.setdefault(stage, Counter()).update(counts)
    return {s: dict(sorted(c.items())) for s, c in out.items()}


def _card(
    args: argparse.Namespace,
    settings: Settings,
    out_dir: Path,
    run: RunOutcome,
    records: Sequence[dict[str, Any]],
    shards: Sequence[Path],
    parquet: Sequence[Path],
    val_file: Path | None,
    n_examples: int,
) -> dict[str, Any]:
    from utdebug.runs.folder import sum_usage, summarize_model_errors

    sim = settings.simulated
    model_errors = [r for r in records if r.get("error_kind") == "model"]
    problem_errors = [r for r in records if r.get("error_kind") == "problem"]
    complete = not run.interrupted and run.stopped is None and len(records) == len(run.jobs)
    rel = [str(p.relative_to(out_dir)) for p in shards]
    return {
        "dataset": "UTGen supervised fine-tuning data (failing unit tests with rationales)",
        "format": "conversational: {'messages': [user, assistant], 'meta': {...}}; the loss "
        "belongs on the assistant turn only",
        "simulated": sim,
        "label": SIMULATED if sim else None,
        "complete": complete,
        **({} if complete else {"incomplete": _incomplete(run, records)}),
        "utdebug_version": __version__,
        "pipeline_version": PIPELINE_VERSION,
        "prompt_versions": {"inference": PROMPT_VERSION, "training": TRAIN_PROMPT_VERSION},
        "command": "utdebug " + shlex.join(sys.argv[1:]),
        "model": settings.model if settings.uses_model else None,
        "uses_model": settings.uses_model,
        "stages": settings.stage_sources(),
        "seed": settings.seed,
        "settings": {k: v for k, v in asdict(settings).items() if k != "cache_dir"},
        "val_fraction": args.val_fraction,
        "limit": args.limit,
        "source": {
            "name": run.loaded.name,
            "files": run.loaded.files,
            "rows": run.loaded.rows,
            "problems": len(run.loaded.problems),
            "dropped": dict(run.loaded.dropped),
            "notes": run.loaded.notes,
        },
        "decontamination": _decontamination_facts(run),
        "counts": {
            "problems": run.problems,
            "selected": len(run.jobs),
            "holdout": sum(j.holdout for j in run.jobs),
            "recorded": len(records),
            "resumed": run.resumed,
            "ran_now": run.ran,
            "model_errors": len(model_errors),
            "problem_errors": len(problem_errors),
            "examples": n_examples,
            "val_problems": sum(1 for r in records if r.get("val") and not r.get("error_kind")),
            "stages": _stage_counts(records),
            "executions": sum(int(r.get("executions") or 0) for r in records),
            "batches": sum(int(r.get("batches") or 0) for r in records),
        },
        "model_errors": summarize_model_errors(model_errors),
        "problem_errors": [
            {"problem_id": r["problem_id"], "error": r.get("error")} for r in problem_errors[:50]
        ],
        "usage": sum_usage(r.get("usage") or {} for r in records),
        "seconds": round(run.seconds, 2),
        "outputs": {
            "sft_shards": rel,
            "parquet_shards": [str(p.relative_to(out_dir)) for p in parquet],
            "val_file": str(val_file.relative_to(out_dir)) if val_file else None,
            "trl_configs": ["trl-sft.yaml", "trl-sft-qlora.yaml"],
        },
    }


def _decontamination_facts(run: RunOutcome) -> dict[str, Any]:
    """The card's ``decontamination``: the splits checked, the problems dropped, by split and
    by kind of match."""
    by_split: Counter[str] = Counter()
    by: Counter[str] = Counter()
    for d in run.decontaminated:
        for split in {m["split"] for m in d["matches"]}:
            by_split[split] += 1
        for kind in {m["by"] for m in d["matches"]}:
            by[kind] += 1
    notes = []
    if run.loaded.name in EVAL_SPLITS and run.loaded.name not in run.index.splits:
        notes.append(
            f"the source {run.loaded.name} is itself an evaluation split: do not report on it "
            "with a model trained on this data"
        )
    return {
        "splits": run.index.splits,
        "dropped": len(run.decontaminated),
        "by_split": dict(by_split),
        "by": dict(by),
        "file": "decontamination.jsonl",
        "notes": notes,
    }


def _incomplete(run: RunOutcome, records: Sequence[dict[str, Any]]) -> str:
    if run.interrupted:
        why = "the run was interrupted"
    elif run.stopped:
        why = f"the run stopped: {run.stopped}"
    else:
        why = "some problems are not recorded"
    return f"{why}; {len(records)} of {len(run.jobs)} problems recorded: rerun the same command"


def _print_counts(card: dict[str, Any], out_dir: Path) -> None:
    c = card["counts"]
    st = c["stages"]
    if card["simulated"]:
        sim = names_simulated(card["model"])
        who = "the simulated model (sim)" if sim else "a scripted model"
        print(
            f"{SIMULATED}: the text of these examples comes from {who}, not from a language "
            "model (the labels are the gold code's outputs)."
        )
    if not card["uses_model"]:
        print(
            "No model wrote any of these examples: the code was corrupted by AST mutation, the "
            "inputs are the source's own, the labels are the gold code's outputs"
            + (", and there are no rationales." if card["settings"]["rationale"] == "none" else ".")
        )
    src = card["source"]
    dec = card["decontamination"]
    unavailable = [s for s, i in dec["splits"].items() if i["status"] != "used"]
    print(f"utdebug train data: {src['name']} -> {out_dir}")
    rows = [
        ("source", f"{src['rows']} rows, {src['problems']} problems"),
        (
            "decontamination",
            f"{dec['dropped']} dropped"
            + (f" (not checked: {', '.join(unavailable)})" if unavailable else ""),
        ),
        ("problems", f"{c['selected']} selected of {c['problems']}"),
        ("held out for validation", held_out_text(c)),
        ("recorded", f"{c['recorded']} ({c['resumed']} resumed, {c['ran_now']} run now)"),
        ("stage I made by", card["stages"]["perturb"]),
        ("stage II made by", card["stages"]["inputs"]),
        ("stage III made by", card["stages"]["rationale"]),
        ("stage I (perturb)", _counts_text(st.get("perturb", {}))),
        ("stage II (inputs)", _counts_text(st.get("inputs", {}))),
        ("stage III (rationales)", _counts_text(st.get("rationales", {}))),
        ("problems", _counts_text(st.get("problem", {}))),
        ("SFT examples", f"{c['examples']} in {len(card['outputs']['sft_shards'])} shard(s)"),
        ("model errors", f"{c['model_errors']} (rerun to retry)"),
        ("problem errors", str(c["problem_errors"])),
        ("sandbox", f"{c['executions']} executions in {c['batches']} batches"),
    ]
    width = max(len(k) for k, _ in rows)
    label = f"{SIMULATED} " if card["simulated"] else ""
    for k, v in rows:
        print(f"  {label}{k.ljust(width)}  {v}")
    if not card["complete"]:
        print(f"  incomplete: {card['incomplete']}")


def _counts_text(counts: dict[str, int]) -> str:
    if not counts:
        return "-"
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))
