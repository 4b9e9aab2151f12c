"""What ``utdebug bench`` prints: the tables and footer lines of every mode, and their ``--json``.

Each ``print_*`` function takes a finished run (its summary, folder, counts) and writes either
rich tables and lines to ``out`` or the run as indented JSON on stdout.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from utdebug.agents.sim import SIMULATED
from utdebug.benchmarks.evaluator import SplitRun
from utdebug.benchmarks.intrinsic import IntrinsicResult
from utdebug.benchmarks.scoring_verifiers import VerifierSet
from utdebug.cli_common import console
from utdebug.data.datasets import Split
from utdebug.data.private_tests import EvalSettings, WhichCode
from utdebug.runs.folder import (
    RunState,
    merge_model_errors,
    print_json,
    reply_warning,
    simulated_note,
    usage_text,
)
from utdebug.sandbox import LimitKind, Limits
from utdebug.text_safety import markup

# --- shared lines -----------------------------------------------------------------------------


def limit_words(limits: Limits) -> str:
    """``2 s of CPU time`` / ``2 s wall-clock``: what the per-input limit is, for titles."""
    if limits.kind is LimitKind.CPU:
        return f"{limits.per_input:g} s of CPU time"
    return f"{limits.per_input:g} s wall-clock"


def resumed_text(skipped: int) -> str:
    """``resumed N (already recorded, not run again); `` when a rerun skipped records."""
    return f"resumed {skipped} (already recorded, not run again); " if skipped else ""


def model_errors_footer(out: Console, where: str, errors: dict[str, Any], what: str) -> None:
    """The footer line that names the model errors a table leaves out (nothing when none)."""
    n = errors.get("count", 0)
    if not n:
        return
    causes = "; ".join(f"{c['error']} ×{c['count']}" for c in errors.get("causes", [])[:3])
    out.print(
        f"{where}: [yellow]{n} {what} ended by a model error[/yellow] and are not in the "
        f"numbers above ({markup(causes)}); a rerun of the same command retries them"
    )


def problem_error_lines(out: Console, where: str, errors: Sequence[dict[str, Any]]) -> None:
    """One line for each of the first 10 problem errors of a summary."""
    for e in errors[:10]:
        out.print(
            f"{where}: [yellow]problem error[/yellow] {markup(str(e['task_id']))}: "
            f"{markup(str(e['error']))}"
        )


def print_run_json(split: Split, run: RunState) -> None:
    """A model-driven run of one split as ``--json``: its folder, counts, time and summary."""
    print_json(
        {
            "split": split.value,
            "out_dir": str(run.out_dir),
            "wall_seconds": round(run.wall_seconds, 2),
            "evaluated_now": run.evaluated,
            "resumed": run.skipped,
            "summary": run.summary,
        }
    )


def sim_title(text: str, simulated: bool) -> str:
    """A table's title, marked SIMULATED when the simulated model played."""
    return f"{SIMULATED}: {text}" if simulated else text


def columns_table(title: str, columns: Sequence[str], left: Sequence[str] = ()) -> Table:
    """A table titled ``title`` with ``columns``, right-aligned but for those in ``left``."""
    t = Table(title=title)
    for c in columns:
        t.add_column(c, justify="left" if c in left else "right")
    return t


def _sim_note(out: Console, simulated: bool) -> None:
    if simulated:
        out.print(simulated_note())


# --- plain evaluation (utdebug bench) -----------------------------------------------------------


def print_eval(
    out: Console, runs: list[SplitRun], program: WhichCode, settings: EvalSettings, *, as_json: bool
) -> None:
    """Plain evaluation of the given or gold code: one table row per split, then its notes."""
    if as_json:
        print_json(_eval_json(runs, program, settings))
        return
    out.print(_eval_table(runs, program, settings))
    for r in runs:
        s = next(iter(r.summary.values()), None)
        if s is not None:
            _eval_notes(out, r, s)


def _eval_json(runs: list[SplitRun], program: WhichCode, settings: EvalSettings) -> dict[str, Any]:
    return {
        "program": program.value,
        "semantics": settings.semantics.value,
        "per_input_limit": settings.limits.per_input,
        "limit_kind": settings.limits.kind.value,
        "splits": {
            r.split.value: {
                "summary": next(iter(r.summary.values()), {}),
                "out_dir": str(r.out_dir),
                "evaluated_now": r.evaluated,
                "resumed": r.skipped,
                "wall_seconds": round(r.wall_seconds, 2),
                "evaluator_peak_rss_kb": r.evaluator_peak_rss_kb,
                "peak_child_rss_kb": r.peak_child_rss_kb,
            }
            for r in runs
        },
    }


def _eval_table(runs: list[SplitRun], program: WhichCode, settings: EvalSettings) -> Table:
    what = "gold" if program is WhichCode.GOLD else "given (buggy)"
    table = columns_table(
        f"{what} code on the private tests ({settings.semantics.value} comparison, "
        f"{limit_words(settings.limits)} per input)",
        (
            "split",
            "problems",
            "tests",
            "mean pass fraction",
            "pass@1",
            "timeouts",
            "errors",
            "run now",
            "resumed",
            "wall s (this run)",
        ),
        left=("split",),
    )
    for r in runs:
        s = next(iter(r.summary.values()), None)
        if s is None:
            continue
        table.add_row(
            r.split.value,
            str(s["problems"]),
            f"{s['tests']:,}",
            f"{100 * s['mean_pass_fraction']:.2f}%",
            f"{100 * s['pass_at_1']:.2f}% ({s['solved']})",
            str(s["timeouts"]),
            str(s["problem_errors"]),
            str(r.evaluated),
            str(r.skipped),
            f"{r.wall_seconds:.1f}",
        )
    return table


def _eval_notes(out: Console, r: SplitRun, s: dict[str, Any]) -> None:
    if s["problems_with_timeouts"]:
        names = ", ".join(s["problems_with_timeouts"])
        out.print(
            f"{r.split.value}: timeouts in {len(s['problems_with_timeouts'])} problems: "
            f"{markup(names)}"
        )
    problem_error_lines(out, r.split.value, s["errors"])
    out.print(
        f"{r.split.value}: memory: evaluator peak {r.evaluator_peak_rss_kb / 1024:.0f} MiB, "
        f"largest child {r.peak_child_rss_kb / 1024:.0f} MiB"
    )
    if r.skipped:
        out.print(
            f"{r.split.value}: resumed: {r.skipped} problems were already recorded in "
            f"{r.out_dir}/ and were not run again; {r.evaluated} ran now in "
            f"{r.wall_seconds:.1f} s (the wall time of this command)"
        )
    if "classeval_fix" in s:
        out.print(_classeval_line(r.split.value, s["classeval_fix"]))
    if "data_licence" in s:
        out.print(f"{r.split.value}: data licence: {markup(str(s['data_licence']))}")
    out.print(f"{r.split.value}: samples and summary in {r.out_dir}/")


def _classeval_line(split: str, s: dict[str, Any]) -> str:
    """What ClassEval+Fix was built from: classes, methods, versions, tests kept and not."""
    return (
        f"{split}: ClassEval+Fix (seed {s['seed']}, at most {s['cap']} per class): "
        f"{s['classes']} classes, {s['methods']} methods with tests, {s['versions']} corrupted "
        f"versions kept in {s['classes_with_versions']} classes; {s['kept_tests']} of "
        f"{s['tests']} test methods kept ({s['excluded_tests']} that the canonical solution "
        f"does not pass here are excluded: listed with the reason in {s['file']})"
    )


# --- the debugging loop (bench --model M, ablation, voting) -------------------------------------

_NOT_SOLVED = {
    "all_pass": "its generated tests pass",
    "rounds": "every round ran",
    "no_tests": "no tests",
    "judged_correct": "judged correct",
    "does_not_load": "does not load",
    "cancelled": "cancelled",
}


def outcome_words(rec: dict[str, Any]) -> str:
    """How a debugged problem ended, for the progress line: ``solved`` (the code in force
    passes every private test), else ``not solved`` and why the session stopped (its own
    tests all passing is not solving it)."""
    rounds = rec.get("rounds") or [{}]
    if rounds[-1].get("all_pass"):
        return "solved"
    finish = str(rec.get("finish") or "")
    why = _NOT_SOLVED.get(finish, finish.replace("_", " "))
    return f"not solved ({why})" if why else "not solved"


def print_debug(out: Console, split: Split, run: RunState, *, as_json: bool) -> None:
    """The debugging loop on one split: pass@1 and mean pass rate per round, then its notes."""
    s = run.summary
    warning = None if s["simulated"] else reply_warning(s["usage"])
    if warning is not None:
        console(stderr=True).print(
            f"utdebug bench: [yellow]{escape(warning)}[/yellow]", soft_wrap=True
        )
    if as_json:
        print_run_json(split, run)
        return
    if not s["evaluated"] and s["model_errors"]["count"]:
        return  # no problem finished: no table of zeros; the command says why on stderr
    _sim_note(out, s["simulated"])
    title = sim_title(f"{split.value}, {s['model']}, {s['settings']['ut_method']}", s["simulated"])
    t = Table(title=title, min_width=min(len(title) + 4, 120))  # the title on one line
    t.add_column("round", justify="right")
    t.add_column("pass@1", justify="right")
    t.add_column("mean pass rate", justify="right")
    for r in s["rounds"]:
        t.add_row(
            str(r["round"]),
            f"{100 * r['pass_at_1']:.2f}% ({r['solved']})",
            f"{100 * r['mean_pass_rate']:.2f}%",
        )
    out.print(t)
    _debug_notes(out, split, run)


def _debug_notes(out: Console, split: Split, run: RunState) -> None:
    s = run.summary
    i = s["intrinsic"]
    label = f"{SIMULATED} " if s["simulated"] else ""
    out.print(
        f"{label}{split.value}: intrinsic metrics of {i['tests']} kept tests "
        f"({i['tests_per_problem']:.2f} per problem): attack rate "
        f"{100 * i['attack_rate']:.2f}%, output accuracy {100 * i['output_accuracy']:.2f}%, "
        f"accuracy ∩ attack {100 * i['accuracy_and_attack']:.2f}%"
    )
    out.print(
        f"{label}{split.value}: {s['evaluated']} problems debugged, {s['problem_errors']} "
        f"problem errors, {s['model_errors']['count']} sessions ended by a model error (not "
        f"counted above); {resumed_text(run.skipped)}wall {run.wall_seconds:.1f} s (this run)"
    )
    out.print(f"{label}{split.value}: model: {usage_text(s['usage'])}")
    st = s["settings"]
    out.print(
        f"{label}{split.value}: settings: {st['variant']} variant, n={st['n']}, k={st['k']}, "
        f"threshold {st['threshold']}, rounds {st['rounds']}, backtracking "
        f"{'on' if st['backtrack'] else 'off'}, feedback = {st['feedback']} failing test"
    )
    problem_error_lines(out, split.value, s["errors"])
    model_errors_footer(out, split.value, s["model_errors"], "sessions")
    if "data_licence" in s:
        out.print(f"{split.value}: data licence: {markup(str(s['data_licence']))}")
    out.print(f"{split.value}: samples and summary in {run.out_dir}/")


def print_ablation(
    out: Console, split: Split, runs: Sequence[tuple[str, RunState]], *, as_json: bool
) -> None:
    """The ablation: pass@1 of each configuration and its change from the full loop."""
    rows = []
    for tag, run in runs:
        method, _, what = tag.partition("-")
        final = run.summary["rounds"][-1]
        rows.append(
            {
                "method": method,
                "config": what,
                "pass_at_1": final["pass_at_1"],
                "mean_pass_rate": final["mean_pass_rate"],
                "simulated": run.summary["simulated"],
                "out_dir": str(run.out_dir),
                "wall_seconds": round(run.wall_seconds, 2),
                "model_errors": run.summary["model_errors"],
            }
        )
    sim = any(r["simulated"] for r in rows)
    if as_json:
        print_json({"split": split.value, "label": SIMULATED if sim else None, "rows": rows})
        return
    _sim_note(out, sim)
    variant = runs[0][1].summary["settings"]["variant"] if runs else "?"
    t = columns_table(
        sim_title(f"{split.value}: ablation (Table 8 design), {variant} variant", sim),
        ("UT method", "configuration", "pass@1", "Δ", "mean pass rate"),
        left=("UT method", "configuration"),
    )
    full: dict[str, float] = {}
    for r in rows:
        if r["config"] == "full":
            full[r["method"]] = r["pass_at_1"]
        delta = r["pass_at_1"] - full.get(r["method"], r["pass_at_1"])
        t.add_row(
            r["method"],
            r["config"].replace("-", " "),
            f"{100 * r['pass_at_1']:.2f}%",
            "" if r["config"] == "full" else f"{100 * delta:+.2f}",
            f"{100 * r['mean_pass_rate']:.2f}%",
        )
    out.print(t)
    model_errors_footer(
        out, split.value, merge_model_errors(r["model_errors"] for r in rows), "sessions"
    )


def print_voting(
    out: Console, split: Split, runs: Sequence[tuple[str, RunState]], *, as_json: bool
) -> None:
    """Output accuracy of the kept tests with and without voting, per per-vote accuracy."""
    rows: dict[str, dict[str, Any]] = {}
    for tag, run in runs:
        acc, _, k = tag.partition("-")
        i = run.summary["intrinsic"]
        row = rows.setdefault(acc, {"per_vote_accuracy": float(acc[3:])})
        row["voting" if k != "k0" else "single"] = {
            "output_accuracy": i["output_accuracy"],
            "tests": i["tests"],
        }
    if as_json:
        print_json({"split": split.value, "label": SIMULATED, "rows": list(rows.values())})
        return
    _sim_note(out, True)
    t = columns_table(
        sim_title(f"{split.value}: output accuracy of kept tests", True),
        ("per-vote accuracy", "no voting", "voting", "effect", "tests (voting)"),
    )
    for row in rows.values():
        single = row.get("single", {}).get("output_accuracy", 0.0)
        voted = row.get("voting", {}).get("output_accuracy", 0.0)
        t.add_row(
            f"{100 * row['per_vote_accuracy']:.0f}%",
            f"{100 * single:.2f}%",
            f"{100 * voted:.2f}%",
            "raises" if voted > single else "lowers" if voted < single else "no change",
            str(row.get("voting", {}).get("tests", 0)),
        )
    out.print(t)


# --- bench intrinsic --------------------------------------------------------------------------


def print_intrinsic(
    out: Console,
    split: Split,
    res: IntrinsicResult,
    *,
    as_json: bool,
    licence: str | None = None,
) -> None:
    """The intrinsic metrics of generated tests (no voting, no debugging) on one split."""
    rates = res.rates()
    payload: dict[str, Any] = {
        "split": split.value,
        "method": res.method,
        "model": res.model,
        "simulated": res.simulated,
        "label": SIMULATED if res.simulated else None,
        "problems": res.problems,
        "samples": res.samples,
        **rates,
        "errors": res.errors,
        "model_errors": res.model_errors_summary(),
    }
    if licence is not None:
        payload["data_licence"] = licence
    if as_json:
        print_json(payload)
        return
    if not res.problems and res.model_errors:
        return  # nothing finished: no table of zeros; the command says why on stderr
    _sim_note(out, res.simulated)
    title = f"{split.value}: intrinsic, {res.method}, {res.model}"
    t = columns_table(
        sim_title(title, res.simulated),
        ("samples", "parsed", "valid", "attack rate", "output acc.", "acc. ∩ attack"),
    )
    t.add_row(
        str(res.samples),
        f"{100 * rates['parsed']:.2f}%",
        f"{100 * rates['valid']:.2f}%",
        f"{100 * rates['attack_rate']:.2f}%",
        f"{100 * rates['output_accuracy']:.2f}%",
        f"{100 * rates['accuracy_and_attack']:.2f}%",
    )
    out.print(t)
    for e in res.errors[:10]:
        out.print(f"[yellow]problem error[/yellow] {markup(str(e))}")
    model_errors_footer(out, split.value, payload["model_errors"], "problems")
    if licence is not None:
        out.print(f"{split.value}: data licence: {markup(licence)}")


# --- bench judge ------------------------------------------------------------------------------

_NAMES = {
    "random": "one random sample",
    "most_passed": "most tests passed (paper rule)",
    "maxpass": "MaxPass",
    "mbr_exec": "MBR-exec",
    "codet": "CodeT (n_y·√n_x)",
    "codet_paper": "CodeT (n_x·n_y, paper text)",
    "b4": "B4",
}


def print_selection(out: Console, split: Split, run: RunState, *, as_json: bool) -> None:
    """Best-of-N selection: pass@1 of each strategy against one random sample."""
    s = run.summary
    if as_json:
        print_run_json(split, run)
        return
    sim = bool(s["simulated"])
    label = f"{SIMULATED} " if sim else ""
    _sim_note(out, sim)
    title = (
        f"{label}{split.value}: best-of-{s['solutions_per_problem']} selection, "
        f"{s['model']}, {s['settings']['ut_method']} tests"
    )
    t = columns_table(
        title.strip(),
        (
            "strategy",
            "pass@1",
            "Δ vs random",
            "ties pooled",
            f"discriminative ({s['discriminative']})",
        ),
        left=("strategy",),
    )
    rows = s["strategies"]
    base = rows["random"]["pass_at_1"]
    best = max(v["pass_at_1"] for v in rows.values())
    for name, v in rows.items():
        mark = " *" if v["pass_at_1"] == best else ""
        t.add_row(
            _NAMES.get(name, name) + mark,
            f"{100 * v['pass_at_1']:.2f}%",
            "" if name == "random" else f"{100 * (v['pass_at_1'] - base):+.2f}",
            f"{100 * v['pass_at_1_pooled']:.2f}%",
            f"{100 * v['discriminative_pass_at_1']:.2f}%",
        )
    out.print(t)
    out.print(
        f"{label}{split.value}: {s['evaluated']} problems ({s['problem_errors']} errors), "
        f"{s['tests_per_problem']:.1f} pooled tests per problem "
        f"({s['problems_without_tests']} problems without tests: every strategy = random)"
    )
    out.print(
        f"{label}{split.value}: model: {usage_text(s['usage'])}; "
        f"{resumed_text(run.skipped)}wall {run.wall_seconds:.1f} s (this run)"
    )
    model_errors_footer(out, split.value, s["model_errors"], "problems")
    out.print(
        f"{label}pass@1 = expected pass@1 of the selection (fraction of right solutions in it); "
        "* marks the best; ties: first consensus set (pass@1) or all tied sets (ties pooled)"
    )
    problem_error_lines(out, split.value, s["errors"])
    out.print(f"{split.value}: samples and summary in {run.out_dir}/")


# --- bench verify -----------------------------------------------------------------------------


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.2f}"


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def print_verify(out: Console, vs: VerifierSet, run: RunState, *, as_json: bool) -> None:
    """A Scoring-Verifiers set: how well the generated tests rank the solutions."""
    s = run.summary
    if as_json:
        print_json(
            {
                "label": s["label"],
                "set": vs.name,
                "file": str(vs.path),
                "sha256": vs.sha256,
                "out_dir": str(run.out_dir),
                "evaluated_now": run.evaluated,
                "resumed": run.skipped,
                "wall_seconds": round(run.wall_seconds, 2),
                "summary": s,
            }
        )
        return
    sim = bool(s["simulated"])
    label = f"{SIMULATED} " if sim else ""
    if sim:
        out.print(simulated_note(repr(s["model"])))
    m = s["metrics"]
    st = s["settings"]
    title = (
        f"{vs.name or vs.file_name}: {s['model']} as a verifier, {st['ut_method']} tests, "
        f"n={s['verify_tests']}, k={st['k']}"
    )
    t = columns_table(
        sim_title(title, sim),
        (
            "Top-1 %",
            "Spearman ρ",
            "Bottom-1 %",
            "MAE",
            "Kendall τ",
            "problems",
            "ρ/τ over",
            "excl. n<2",
            "excl. const. expected",
            "const. predicted (ρ=0)",
        ),
    )
    t.add_row(
        _pct(m["top1"]),
        _num(m["spearman"]),
        _pct(m["bottom1"]),
        _num(m["mae"]),
        _num(m["kendall"]),
        str(m["problems"]),
        str(m["ranked"]),
        str(m["excluded_too_few"]),
        str(m["excluded_constant_expected"]),
        str(m["constant_prediction"]),
    )
    out.print(t)
    u = s["usage"]
    where = vs.file_name
    out.print(
        f"{label}{where}: {m['solutions']} solutions in {m['problems']} problems; "
        f"{s['tests']} generated tests ({s['tests_per_problem']:.2f} per problem, "
        f"{s['problems_without_tests']} problems without any); pooled MAE "
        f"{_num(m['mae_pooled'])}"
    )
    out.print(
        f"{label}{where}: estimated score = fraction of generated tests passed (a test that "
        f"raises or times out counts as failed); every metric averaged per problem"
    )
    out.print(
        f"{label}{where}: {s['problem_errors']} problem errors; {resumed_text(run.skipped)}wall "
        f"{run.wall_seconds:.1f} s (this run)"
    )
    out.print(f"{label}{where}: model: {usage_text(u)}")
    problem_error_lines(out, where, s["errors"])
    model_errors_footer(out, where, s["model_errors"], "problems")
    out.print(f"{where}: sha256 {vs.sha256}")
    out.print(f"{where}: samples and summary in {run.out_dir}/")


# --- bench synth ------------------------------------------------------------------------------


def print_synth(out: Console, runs: Sequence[tuple[str, RunState]], *, as_json: bool) -> None:
    """Model-free input synthesis: one table row per split (exposure, false alarms, validity,
    throughput, reduced suite), then the exposing sources and the problems not exposed."""
    if as_json:
        print_json(
            [
                {
                    "split": split,
                    "out_dir": str(run.out_dir),
                    "wall_seconds": round(run.wall_seconds, 2),
                    "evaluated_now": run.evaluated,
                    "resumed": run.skipped,
                    "summary": run.summary,
                }
                for split, run in runs
            ]
        )
        return
    sim = any(run.summary.get("simulated") for _, run in runs)
    models = sorted({str(run.summary["model"]) for _, run in runs if run.summary.get("model")})
    title = (
        f"bench synth: buggy programs exposed by synthesised inputs and {', '.join(models)}'s "
        "generator programs"
        if models
        else "bench synth: buggy programs exposed by model-free synthesised inputs"
    )
    _sim_note(out, sim)
    t = Table(title=sim_title(title, sim))
    for c in (
        "split",
        "problems",
        "exposed in env. (TNR)",
        "exposed (any)",
        "false alarms (TPR)",
        "validity",
        "valid/s",
        "suite mean/max",
    ):
        t.add_column(c, justify="left" if c == "split" else "right")
    for split, run in runs:
        s = run.summary
        n = s["problems"]
        rs = s["reduced_suite"]
        t.add_row(
            split,
            str(n),
            f"{s['exposed_in_envelope']} ({100 * s['tnr']:.1f}%)",
            str(s["exposed"]),
            f"{s['false_alarms']} ({100 * s['tpr']:.1f}%)",
            f"{100 * s['validity']:.1f}%",
            f"{s['valid_inputs_per_s']:.0f}",
            f"{rs['mean']:.2f} / {rs['max']}",
        )
    out.print(t)
    for split, run in runs:
        s = run.summary
        src = ", ".join(f"{k} {v}" for k, v in s["by_source"].items()) or "none"
        out.print(
            f"{split}: {s['valid']:,} of {s['emitted']:,} inputs valid "
            f"({s['valid_in_envelope']:,} inside the private envelope); "
            f"{s['valid_inputs_per_s']:.0f} valid inputs/s wall clock, "
            f"{s['valid_inputs_per_cpu_s']:.0f} per CPU second"
        )
        out.print(f"{split}: problems with an exposing input in the envelope, by source: {src}")
        if s.get("model"):
            g, tok = s["generator_inputs"], s["tokens"]
            label = f"{s['label']} " if s.get("label") else ""
            out.print(
                f"{split}: {label}{s['model']}'s generators: {g['valid']:,} valid of "
                f"{g['new']:,} new inputs ({g['emitted']:,} emitted), repaired on "
                f"{g['problems_repaired']} problems; {s['model_calls']} model calls, "
                f"{tok['prompt']:,} prompt + {tok['completion']:,} completion tokens"
            )
        over = s["over_budget"]
        per = s["settings"]["per_problem"]
        out.print(
            f"{split}: largest problem {s['max_cpu_seconds']:.1f} s CPU, "
            f"{s['max_wall_seconds']:.1f} s wall; {len(over)} over {per:g} s of CPU time"
            + (f" ({markup(', '.join(over[:5]))})" if over else "")
        )
        if s.get("not_synthesisable"):
            out.print(
                f"{split}: {s['not_synthesisable']} not synthesisable (no test gives a call of "
                f"the method to vary; the reasons are in the records): "
                f"{markup(', '.join(s['not_synthesisable_ids'][:10]))}"
            )
        missed = s["not_exposed"]
        if missed:
            out.print(f"{split}: not exposed in the envelope: {markup(', '.join(missed[:20]))}")
        if s["false_alarm_ids"]:
            out.print(
                f"{split}: [red]false alarms[/red] on the gold code: "
                f"{markup(', '.join(s['false_alarm_ids'][:20]))}"
            )
        problem_error_lines(out, split, s["errors"])
        out.print(
            f"{split}: {resumed_text(run.skipped)}wall {run.wall_seconds:.1f} s (this run); "
            f"samples and summary in {run.out_dir}/"
        )
    out.print(
        "TNR: buggy programs with an exposing valid input inside the private inputs' envelope; "
        "TPR: gold programs with no false alarm; valid/s: valid inputs per second of wall "
        "clock (synthesis + validation); suite: the reduced suite's inputs a problem"
    )
