"""Smoke tests of the speed benchmarks in benchmarks/perf: they run and print their numbers.

Each script runs in a subprocess with short settings (together well under 50 s). They need the
full sandbox (every layer) and, for eval_speed, engine_speed and distributed_throughput, the
MBPP+Fix (Hard) file; without the sandbox the scripts exit with status 3 and the test is skipped
with the script's own message, without the file (``$UTDEBUG_DATA_DIR``, else
``../shared/datasets``) those tests are skipped. distributed_throughput also needs Ray (the
``ray`` extra, in ``dev``), and its test is skipped without it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PERF = REPO / "benchmarks" / "perf"
HARD_FILE = "MBPP+Fix_hard_test.jsonl"
NUM = r"[0-9][0-9,]*(?:\.[0-9]+)?"


def _data_dir() -> Path:
    env = os.environ.get("UTDEBUG_DATA_DIR")
    return Path(env) if env else REPO.parent / "shared" / "datasets"


def _run(script: str, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, str(PERF / script), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode == 3:
        pytest.skip(f"the sandbox cannot start with all layers here: {proc.stderr.strip()[-300:]}")
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def test_throughput_script_prints_its_numbers() -> None:
    out = _run(
        "throughput.py", "--seconds", "0.3", "--first-n", "10", "--starts", "2", timeout=60
    ).stdout
    assert "LAYERS all 12 active" in out
    for batch in (10, 100, 1000):
        for callers in (1, 2):
            assert re.search(
                rf"^batch +{batch} +callers {callers} +{NUM} executions/s$", out, re.M
            ), out
    assert re.search(rf"^ZYGOTE START median {NUM} ms", out, re.M), out
    assert re.search(rf"^FIRST RESULT median {NUM} ms", out, re.M), out
    m = re.search(rf"^BEST ({NUM}) executions/s .*: (PASS|MISS)$", out, re.M)
    assert m, out
    assert float(m.group(1).replace(",", "")) > 0
    assert re.search(rf"^BATCH 1000 {NUM} executions/s .*: (PASS|MISS)$", out, re.M), out


def test_parent_cost_script_prints_its_numbers() -> None:
    out = _run(
        "parent_cost.py", "--inputs", "2", "--normal", "50", "--returned", "20000", timeout=120
    ).stdout
    for case in ("flood", "flood 1 MiB", "15 MB frame", "returned", "normal batch"):
        assert re.search(
            rf"^{case} +parent +{NUM} s  children +{NUM} s  bound +{NUM} s  \+ *-?{NUM} MiB",
            out,
            re.M,
        ), out
    assert "result too costly to read" in out
    assert re.search(rf"^NORMAL {NUM} executions/s, parent {NUM} s of CPU$", out, re.M), out
    assert re.search(r"^[0-3] of 3 targets missed$", out, re.M), out


def test_eval_speed_script_prints_its_numbers() -> None:
    data = _data_dir()
    if not (data / HARD_FILE).is_file():
        pytest.skip(f"{HARD_FILE} is not in {data} (set UTDEBUG_DATA_DIR)")
    out = _run(
        "eval_speed.py", "--problems", "3", "--skip-buggy", "--data-dir", str(data), timeout=120
    ).stdout
    assert re.search(rf"^RATIO gold {NUM}x \(target >= 5x\): (PASS|MISS)", out, re.M), out
    assert "RATIO buggy" not in out
    m = re.search(rf"^AGREEMENT gold ({NUM}) of ({NUM}) inputs differ$", out, re.M)
    assert m, out
    assert int(m.group(2)) > 0
    # Three gold solutions run far from the 2 s limit: both harnesses must agree on every input.
    assert int(m.group(1)) == 0, out
    for side in ("ours", "naive"):
        assert re.search(
            rf"^MEMORY gold {side} children peak RSS max {NUM} MB median {NUM} MB$", out, re.M
        ), out
    assert re.search(rf"^MEMORY evaluator ru_maxrss {NUM} MB$", out, re.M), out
    assert re.search(r"^ours : wall +[0-9.]+ s", out, re.M), out
    assert re.search(r"^naive: wall +[0-9.]+ s", out, re.M), out


def test_engine_speed_script_prints_its_numbers() -> None:
    data = _data_dir()
    if not (data / HARD_FILE).is_file():
        pytest.skip(f"{HARD_FILE} is not in {data} (set UTDEBUG_DATA_DIR)")
    proc = _run(
        "engine_speed.py",
        "--limit",
        "3",
        "--latency",
        "0.01",
        "--json",
        "--data-dir",
        str(data),
        timeout=60,
    )
    r = json.loads(proc.stdout)
    assert r["problems"] == 3
    assert r["errors"] == 0, proc.stderr
    assert r["latency_s"] == 0.01 and r["concurrency"] == 16
    # Every session makes at least one UT call and one vote call, in sequence.
    assert r["model_calls"] >= 6 and 2 <= r["longest_chain"] <= r["model_calls"]
    assert sum(r["chains"].values()) == r["model_calls"]
    assert r["bound_s"] == pytest.approx(
        max(r["longest_chain"] * 0.01, r["model_calls"] * 0.01 / 16), abs=1e-3
    )
    # The wall cannot beat the critical path.
    assert 0 < r["bound_s"] <= r["wall_s"] < 30
    assert r["ratio"] == pytest.approx(r["wall_s"] / r["bound_s"], rel=1e-2)
    assert 0 < r["cpu_ms_per_call"] < 1000
    assert r["sandbox_batch_wall_s"] > 0 and r["sandbox_timeouts"] >= 0
    assert r["bound_with_sandbox_s"] >= r["bound_s"]
    assert isinstance(r["ratio_met"], bool) and isinstance(r["cpu_met"], bool)
    assert r["vote_misses"] == 0
    assert re.search(
        rf"^RATIO wall/bound {NUM} \(target <= 1.5\): (PASS|MISS)$", proc.stderr, re.M
    ), proc.stderr
    assert re.search(rf"^CPU engine {NUM} ms per model call .*: (PASS|MISS)$", proc.stderr, re.M), (
        proc.stderr
    )


def test_sim_speed_script_prints_its_numbers() -> None:
    if not (_data_dir() / HARD_FILE).exists():
        pytest.skip("the MBPP+Fix (Hard) file is not available")
    out = json.loads(
        _run(
            "sim_speed.py", "--limit", "3", "--json", "--data-dir", str(_data_dir()), timeout=120
        ).stdout
    )
    assert out["label"] == "SIMULATED" and out["problems"] == 3
    assert out["results_agree"] is True
    assert out["cold_seconds"] > 0 and out["warm_seconds"] > 0
    assert len(out["pass_at_1"]) == 4


def test_ranking_speed_script_prints_its_numbers() -> None:
    out = _run(
        "ranking_speed.py",
        "--sizes",
        "20,40",
        "--matrices",
        "2",
        "--repeat-loop",
        "1",
        "--repeat-fast",
        "5",
        timeout=120,
    ).stdout
    for n in (20, 40):
        assert re.search(
            rf"^N=M={n} loop {NUM} ms  vectorised {NUM} ms  speed-up {NUM}x  agree yes$", out, re.M
        ), out
        assert re.search(
            rf"^N=M={n} codet loop {NUM} ms  vectorised {NUM} ms  speed-up {NUM}x  agree yes$",
            out,
            re.M,
        ), out
        assert re.search(rf"^N=M={n} b4_scores only {NUM} ms  speed-up {NUM}x$", out, re.M), out
    assert re.search(r"^TARGET speed-up at N=M=40 >= 100x: (PASS|MISS)$", out, re.M), out
    assert "agree NO" not in out


def test_tui_startup_script_prints_its_numbers() -> None:
    # The probe takes 15 s: on a loaded machine the first screen still comes well before it.
    out = _run("tui_startup.py", "--runs", "1", "--probe-seconds", "15", timeout=180).stdout
    assert re.search(rf"^IMPORT utdebug.tui.app median {NUM} ms", out, re.M), out
    assert re.search(rf"^FIRST SCREEN median {NUM} ms", out, re.M), out
    assert "LITELLM loaded by the app: no" in out
    assert re.search(r"^TARGET first screen < 1000 ms: (PASS|MISS)$", out, re.M), out
    assert re.search(rf"^CANCEL median {NUM} ms, max {NUM} ms", out, re.M), out
    assert re.search(r"^TARGET cancel < 500 ms: (PASS|MISS)$", out, re.M), out
    assert re.search(rf"^DEMO first screen median {NUM} ms", out, re.M), out
    # The app is on screen before the (slow) probe of a litellm model returns.
    assert re.search(rf"^DEBUG first screen median {NUM} ms .*before the probe: yes\)$", out, re.M)


def test_cli_startup_script_prints_its_numbers() -> None:
    """``check --help``, ``debug --help`` and ``--version`` load only what they use: no
    benchmark module, none of numpy, Hypothesis, Textual or litellm, at most 25 utdebug
    modules (``check --help`` imported 88 utdebug modules, 12 of them benchmark ones, and numpy
    and Hypothesis). The module sets are asserted, not the times."""
    out = _run("cli_startup.py", "--runs", "1", timeout=180).stdout
    assert re.search(rf"^INTERPRETER median {NUM} ms", out, re.M), out
    for name in ("check --help", "debug --help", "--version"):
        m = re.search(
            rf"^COMMAND {re.escape(name)}: ({NUM}) utdebug modules, heavy: (.*)$", out, re.M
        )
        assert m, out
        assert int(m.group(1)) <= 25 and m.group(2) == "none", m.group(0)
        assert re.search(rf"^FIRST OUTPUT {re.escape(name)} median {NUM} ms", out, re.M), out
        target = rf"^TARGET {re.escape(name)}: .*nothing heavy: PASS; first output < 300 ms: "
        assert re.search(target + "(PASS|MISS)$", out, re.M), out
    # bench --help is measured to compare; it loads the benchmark modules it lists.
    assert re.search(r"^COMMAND bench --help: .*heavy: .*utdebug\.benchmarks", out, re.M), out


def test_check_speed_script_prints_its_numbers() -> None:
    out = _run("check_speed.py", "--modules", "6", "--changed", "4", timeout=120).stdout
    assert re.search(rf"^DETECT {NUM} ms +\(4 functions in 4 files\)$", out, re.M), out
    assert re.search(rf"^SNAPSHOT {NUM} ms +\(14 files\)$", out, re.M), out
    assert re.search(rf"^COLD {NUM} ms +\(4 functions, {NUM} ms each, 0 cached, 6 findings\)$",
                     out, re.M), out  # fmt: skip
    assert re.search(rf"^CACHED {NUM} ms +\(4 functions, {NUM} ms each, 4 cached", out, re.M), out
    assert "FINDINGS 6 (expected 6): OK" in out
    assert re.search(r"^TARGET cached run < 2000 ms: (PASS|MISS)$", out, re.M), out


def test_parse_corpus_script_prints_its_numbers() -> None:
    corpus = Path(
        os.environ.get("UTDEBUG_CORPUS")
        or REPO.parent / "shared" / "corpora" / "qwen2.5-coder-0.5b-hard.jsonl"
    )
    if not corpus.is_file():
        pytest.skip(f"the reply corpus is not at {corpus} (set UTDEBUG_CORPUS)")
    if not (_data_dir() / HARD_FILE).is_file():
        pytest.skip(f"{HARD_FILE} is not in {_data_dir()} (set UTDEBUG_DATA_DIR)")
    args = ("--corpus", str(corpus), "--data-dir", str(_data_dir()))
    proc = _run("parse_corpus.py", *args, "--json", timeout=120)
    r = json.loads(proc.stdout)
    lines = corpus.read_text(encoding="utf-8").splitlines()
    purposes = r["purposes"]
    assert sum(p["replies"] for p in purposes.values()) == len(lines)
    for name in ("ut", "vote", "debug"):
        p = purposes[name]
        assert p["parsed"] + p["refused"] + p["no_answer"] == p["replies"] > 0
        answers = p["replies"] - p["no_answer"]
        assert p["rate"] == pytest.approx(p["parsed"] / answers, abs=1e-4)
        assert re.search(
            rf"^PURPOSE {name} +replies +{p['replies']} +no answer +{p['no_answer']} +parsed "
            rf"+{p['parsed']} +refused +{p['refused']} +rate +{NUM} % of the answers",
            proc.stderr,
            re.M,
        ), proc.stderr
    assert "ut-unattributed" in purposes  # rows without a task_id are reported on their own
    assert len(r["refused"]) + len(r["no_answer"]) == sum(
        p["replies"] - p.get("parsed", 0) for p in purposes.values()
    )
    # The script measures the parser it is given: the same file gives the same numbers.
    same = _run(
        "parse_corpus.py", *args, "--parser", str(REPO / "agents" / "parsing.py"), "--json",
        timeout=120,
    )  # fmt: skip
    assert json.loads(same.stdout)["purposes"] == purposes


def test_parse_corpus_measures_a_corpus_of_tests_with_setup() -> None:
    """The ClassEval corpus: each line's purpose as recorded (no pytest-style proposal is
    relabelled a vote), tests with setup read and checked as the engine admits them, votes
    read with the expression they answer."""
    corpus = Path(
        os.environ.get("UTDEBUG_CLASSEVAL_CORPUS")
        or REPO.parent / "shared" / "corpora" / "qwen2.5-coder-0.5b-classeval-2026-11-27.jsonl"
    )
    if not corpus.is_file():
        pytest.skip(f"the ClassEval reply corpus is not at {corpus}")
    if (
        not (_data_dir() / HARD_FILE).is_file()
        or not (_data_dir() / "ClassEval_data.json").is_file()
    ):
        pytest.skip(f"the Hard split or ClassEval is not in {_data_dir()}")
    args = ("--corpus", str(corpus), "--data-dir", str(_data_dir()), "--json")
    proc = _run("parse_corpus.py", *args, "--show", "all", timeout=180)
    r = json.loads(proc.stdout)
    rows = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    recorded = {p: sum(row["purpose_guess"] == p for row in rows) for p in ("ut", "vote", "debug")}
    assert {k: v["replies"] for k, v in r["purposes"].items()} == recorded
    assert "purpose_guess corrected" not in proc.stderr
    assert r["purposes"]["ut"]["parsed"] >= 11 and r["purposes"]["vote"]["parsed"] >= 16
    tests = r["tests"]
    assert tests["read"] >= 22 and 0 < tests["can_run"] < tests["read"]
    assert re.search(
        rf"^TESTS read +{tests['read']} +can run +{tests['can_run']} ", proc.stderr, re.M
    )
    # a vote in a ```python block holding `raises ValueError` is read; the corpus's 14th line
    assert re.search(r"^line +14 vote .* parsed +raises ValueError$", proc.stderr, re.M)


def test_parse_corpus_counts_no_answers_apart_and_reads_method_votes_as_votes_on_a_method(
    tmp_path: Path,
) -> None:
    """An empty reply and a fragment a server cut off are no answers, counted apart (they were
    refused votes: 11.7 % of a corpus whose readable replies parse at 95 %); a vote about a
    method (``Class.method``) is read with the method's vote parser, which reads ``raises X``
    (the function's parser refused it)."""
    if not (_data_dir() / HARD_FILE).is_file():
        pytest.skip(f"{HARD_FILE} is not in {_data_dir()} (set UTDEBUG_DATA_DIR)")
    rows = [
        {"purpose_guess": "vote", "reply": "", "finish_reason": "stop"},
        {"purpose_guess": "vote", "reply": "The", "finish_reason": "stop"},
        {
            "purpose_guess": "vote",
            "reply": "It gives six.\nOutput: ```6```",
            "finish_reason": "stop",
        },
        {
            "task_id": None,
            "entry_point": "Inventory.restock",
            "purpose_guess": "vote",
            "reply": "A negative count is refused.\nOutput: ```raises ValueError```",
            "finish_reason": "stop",
        },
    ]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    args = ("--corpus", str(corpus), "--data-dir", str(_data_dir()), "--json", "--show", "all")
    proc = _run("parse_corpus.py", *args, timeout=120)
    vote = json.loads(proc.stdout)["purposes"]["vote"]
    assert (vote["replies"], vote["no_answer"], vote["parsed"], vote["refused"]) == (4, 2, 2, 0)
    assert vote["rate"] == 1.0
    assert re.search(r"^line +4 vote .* parsed +raises ValueError$", proc.stderr, re.M), proc.stderr
    assert re.search(r"^line +1 vote .* NO ANSWER an empty reply", proc.stderr, re.M), proc.stderr


def test_token_budgets_cut_no_readable_reply() -> None:
    """The budgets and natural ends on the ClassEval corpus: a test proposal written as pytest
    functions ends early yet keeps every test the whole reply holds, and no budget cuts a
    reply a person can read."""
    corpus = REPO.parent / "shared" / "corpora" / "qwen2.5-coder-0.5b-classeval-2026-11-27.jsonl"
    if not corpus.is_file() or not (_data_dir() / "ClassEval_data.json").is_file():
        pytest.skip(f"the ClassEval reply corpus or ClassEval is not beside {REPO}")
    if not (_data_dir() / HARD_FILE).is_file():
        pytest.skip(f"{HARD_FILE} is not in {_data_dir()}")
    args = ("--corpus", str(corpus), "--data-dir", str(_data_dir()))
    out = _run("token_budgets.py", *args, timeout=300).stdout
    lines = re.findall(r"^PURPOSE (\S+) .* readable cut +(\d+) .* ended early +(\d+)", out, re.M)
    assert {kind for kind, _, _ in lines} == {"program-ut", "program-vote", "debug"}, out
    assert all(cut == "0" for _, cut, _ in lines), out
    assert int(dict((k, e) for k, _, e in lines)["program-ut"]) > 0
    whole, at_end = map(
        int, re.findall(r"^TESTS program-ut: (\d+) read .*, (\d+) up", out, re.M)[0]
    )
    assert whole == at_end > 0
    assert re.search(r"^STOP program-ut +'\\n### Explanation' +in +\d+ readable, breaks", out, re.M)


def test_determinism_script_prints_its_numbers() -> None:
    data = _data_dir()
    if not (data / HARD_FILE).is_file():
        pytest.skip(f"{HARD_FILE} is not in {data} (set UTDEBUG_DATA_DIR)")
    proc = _run("determinism.py", "--limit", "2", "--json", "--data-dir", str(data), timeout=300)
    r = json.loads(proc.stdout)
    assert r["problems"] == 2 and r["inputs_per_program"] > 0 and r["hogs"] >= 4 * r["cores"]
    assert set(r["compare"]) == {
        "idle vs loaded", "idle vs pair-a", "idle vs pair-b", "pair-a vs pair-b"
    }  # fmt: skip
    for d in r["compare"].values():
        assert d["total"] == d["code"] + d["gold"] >= 0
    for cond in ("idle", "loaded", "pair-a", "pair-b", "wall-idle"):
        for program in ("code", "gold"):
            run = r["runs"][cond][program]
            assert run["wall_seconds"] >= 0 and 0 <= run["mean_pass_fraction"] <= 1
        assert r["runs"][cond]["gold"]["mean_pass_fraction"] == 1.0
    # Two problems whose inputs run far from the 2 s limit: CPU-time verdicts never move.
    assert all(d["total"] == 0 for d in r["compare"].values()) and r["cpu_target_met"] is True
    assert r["published_buggy_mean_pass_fraction"] == 0.7483
    assert r["cpu_idle_over_wall_idle"] > 0
    err = proc.stderr
    assert re.search(rf"^COMPARE idle vs loaded: 0 of {NUM} inputs differ", err, re.M), err
    assert re.search(rf"^COMPARE pair-a vs pair-b: 0 of {NUM} inputs differ", err, re.M), err
    assert re.search(rf"^WALL main job .* cpu idle / wall idle = {NUM}", err, re.M), err
    assert re.search(r"^TARGET cpu 0 differing inputs in every comparison .*: PASS$", err, re.M)
    assert re.search(rf"^PUBLISHED buggy mean pass fraction 74.83% .* cpu {NUM}%", err, re.M), err
    # The hogs the script started are gone.
    assert not [line for line in _processes() if "-I -c import os\nos.write(1, b'!')" in line]


def _processes() -> list[str]:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            with contextlib.suppress(OSError):
                out.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
    return out


@pytest.mark.ray
def test_distributed_throughput_script_prints_its_numbers() -> None:
    data = _data_dir()
    if not (data / HARD_FILE).is_file():
        pytest.skip(f"{HARD_FILE} is not in {data} (set UTDEBUG_DATA_DIR)")
    if importlib.util.find_spec("ray") is None:
        pytest.skip("Ray is not installed (pip install 'utdebug[ray]')")
    proc = _run(
        "distributed_throughput.py",
        "--problems", "3", "--json", "--data-dir", str(data),
        "--project", "1000", "--latency", "1", "--calls", "10", "--endpoints", "2",
        timeout=120,
    )  # fmt: skip
    r = json.loads(proc.stdout)
    assert r["problems"] == 3 and r["program"] == "gold" and r["workers"] == 2
    assert set(r["passes"]) == {"local", "ray-cold", "ray-warm"}
    executions = {p["executions"] for p in r["passes"].values()}
    assert len(executions) == 1 and executions.pop() > 0  # the same inputs ran in every pass
    for p in r["passes"].values():
        assert p["problems"] == 3 and p["wall_s"] > 0
        assert p["executions_per_s"] == pytest.approx(p["executions"] / p["wall_s"])
    # The gold code, far from the limits: every input agrees between local and Ray.
    assert r["differing_inputs"] == {"ray-cold": 0, "ray-warm": 0}
    assert r["differing_by_problem"] == {"ray-cold": {}, "ray-warm": {}}
    proj = r["projection"]
    # 1,000 problems x 10 calls x 1 s over 2 endpoints x 4 calls in flight.
    assert proj["model_bound_h"] == pytest.approx(1000 * 10 * 1 / 8 / 3600)
    warm_rate = r["passes"]["ray-warm"]["problems_per_s"]
    assert proj["sandbox_bound_h"] == pytest.approx(1000 / warm_rate / 3600)
    assert proj["projected_h"] == max(proj["model_bound_h"], proj["sandbox_bound_h"])
    err = proc.stderr
    for name in ("local", "ray-cold", "ray-warm"):
        assert re.search(
            rf"^PASS {name} +3 problems {NUM} executions in {NUM} s: {NUM} problems/s, "
            rf"{NUM} executions/s$",
            err,
            re.M,
        ), err
    assert re.search(rf"^AGREEMENT local vs ray-warm: 0 of {NUM} inputs differ$", err, re.M), err
    assert re.search(r"^START ray [0-9.]+ s \(Ray at local-cluster: 1 node\(s\), 2 CPUs", err, re.M)
    assert re.search(r"^PROJECTED \(arithmetic, not a measurement\) 1,000 problems", err, re.M)


def test_train_throughput_script_prints_its_numbers() -> None:
    data = _data_dir()
    for name in (HARD_FILE, "MbppPlus-prerelease.jsonl.gz"):
        if not (data / name).is_file():
            pytest.skip(f"{name} is not in {data} (set UTDEBUG_DATA_DIR)")
    out = _run(
        "train_throughput.py", "--problems", "3", "--data-dir", str(data), timeout=120
    ).stdout
    assert "3 problems, SIMULATED model, AST perturbation; 2 workers" in out
    m = re.search(
        rf"^PASS local +3 problems ({NUM}) executions in {NUM} s: ({NUM}) problems/s, "
        rf"{NUM} executions/s, ({NUM}) examples \(SIMULATED\)$",
        out,
        re.M,
    )
    assert m, out
    assert int(m.group(1).replace(",", "")) > 0 and float(m.group(2)) > 0
    assert "PASS ray" not in out  # Ray only with --ray


def test_program_tests_script_prints_its_numbers() -> None:
    out = _run("program_tests.py", "--tests", "4", "--repeats", "1", timeout=120).stdout
    for name in ("small module", "module with 7 stdlib imports"):
        assert re.search(
            rf"^{name}: program test {NUM} ms wall per test .* child CPU {NUM} ms; "
            rf"literal test {NUM} ms wall per test",
            out,
            re.M,
        ), out


def test_reach_script_prints_its_table() -> None:
    out = _run("reach.py", "--packages", "click", "--sample", "3", timeout=120).stdout
    m = re.search(rf"^click +{NUM} +({NUM})% +({NUM})% +({NUM})% +3 +{NUM}% +{NUM}%$", out, re.M)
    assert m, out
    assert float(m.group(2)) >= 90.0  # non-dunder defs utdebug can target
    assert float(m.group(3)) < 50.0  # what module-level functions and staticmethods covered


def test_structured_values_script_prints_its_numbers() -> None:
    out = _run("structured_values.py", "--n", "300", "--repeat", "2", timeout=60).stdout
    for kind in ("tuple (reference)", "dataclass", "plain object", "namedtuple", "date", "Path"):
        assert re.search(
            rf"^{re.escape(kind)} +encode +{NUM} us/value +decode +{NUM} us/value", out, re.M
        ), out
    for kind in ("tuples", "objects"):
        assert re.search(rf"^ROUND TRIP 300 {kind} +median +{NUM} ms$", out, re.M), out


def test_seed_cost_script_prints_its_numbers() -> None:
    out = _run("seed_cost.py", "--elements", "20000", timeout=120).stdout
    cases = re.findall(
        rf"^CASE .+ +{NUM} bytes +{NUM} inputs +parent ({NUM}) s CPU \(target <= 5 s\): "
        r"(PASS|MISS)$",
        out,
        re.M,
    )
    assert len(cases) == 4, out
    assert re.search(rf"^WORST parent {NUM} s CPU for 20,000 elements$", out, re.M), out


def test_wall_bounds_script_prints_its_numbers() -> None:
    out = _run("wall_bounds.py", "--part", "sandbox", timeout=180).stdout
    assert re.search(rf"^LOAD average {NUM} on \d+ CPUs$", out, re.M), out
    for name in ("PENDING 10\\*\\*10\\*\\*10 \\(timeout 1 s\\)", "OBJECTS 4 hostile results"):
        assert re.search(rf"^{name}.* {NUM} s  \(target < {NUM} s\)  .*(PASS|MISS)$", out, re.M), (
            out
        )
