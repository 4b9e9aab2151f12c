"""``utdebug train data`` end to end on the local MBPP+ file, offline: model-free perturbation
and the simulated model (SIMULATED everywhere), the validation file and checkpoint selection on
it, and resuming an interrupted run."""

from __future__ import annotations

import importlib.util
import json
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from testkit.wait import while_running

from utdebug.agents import prompts
from utdebug.agents.parsing import ParsedCall, ParsedValue, parse_call, parse_output
from utdebug.data.datasets import load_fix_file
from utdebug.literals import literal_value
from utdebug.runs.records import SAMPLES, read_samples
from utdebug.sandbox import Sandbox, Status
from utdebug.train.output import held_out_text
from utdebug.train.sources import TrainProblem, load_mbpp_plus

MBPP_PLUS = "MbppPlus-prerelease.jsonl.gz"
MBPP_PLUS_SHA = "b4e9daf3a3d68503c2a92d195e1b44ea485fc15e8eb24f7a60552351835bf47c"


def utdebug(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "utdebug", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _mbpp_plus(data_dir: Path) -> Path:
    if not (data_dir / MBPP_PLUS).is_file():
        pytest.skip(f"{MBPP_PLUS} is not in {data_dir}")
    return data_dir


def _cmd(data_dir: Path, out: Path, *extra: str) -> list[str]:
    return [
        "train", "data", "--source", "mbpp+", "--data-dir", str(data_dir), "--perturb", "ast",
        "--model", "sim", "--out", str(out), *extra,
    ]  # fmt: skip


@pytest.fixture(scope="module")
def sim_run(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    data = _mbpp_plus(data_dir)
    out = tmp_path_factory.mktemp("train-sim")
    r = utdebug(*_cmd(data, out, "--limit", "11", "--val-fraction", "0.25", "--seed", "0"))
    assert r.returncode == 0, r.stdout + r.stderr
    return {
        "out": out,
        "stdout": r.stdout,
        "stderr": r.stderr,
        "card": json.loads((out / "card.json").read_text()),
        "records": read_samples(out / SAMPLES),
        "data": data,
    }


def _examples(out: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for shard in sorted((out / "sft").glob("train-*-of-*.jsonl")):
        rows += [json.loads(line) for line in shard.read_text().splitlines()]
    return rows


def test_counts_add_up_across_stages_and_files(sim_run: dict[str, Any]) -> None:
    card, records, out = sim_run["card"], sim_run["records"], sim_run["out"]
    c = card["counts"]
    assert card["source"]["rows"] == 399 and card["source"]["problems"] == 399
    assert card["source"]["files"][0]["sha256"] == MBPP_PLUS_SHA
    dec = card["decontamination"]
    assert dec["splits"]["hard"]["status"] == "used" and dec["splits"]["hard"]["problems"] == 170
    # Every Hard task is an MBPP+ task, and 6 more MBPP+ tasks are Hard ones renamed
    # (mbpp+/67 bell_number is hard/608 bell_Number, ...).
    assert dec["by_split"]["hard"] == 176
    assert dec["splits"]["mbpp"]["status"] == "unavailable"  # not mirrored offline
    assert "mbpp+" not in dec["splits"]  # the source's own split is not checked against itself
    assert c["problems"] == 399 - dec["dropped"] and c["selected"] == 11
    assert c["recorded"] == 11 == len(records) and c["model_errors"] == 0
    examples = _examples(out)
    assert c["examples"] == len(examples) == sum(len(r["examples"]) for r in records) > 0
    st = c["stages"]
    assert st["rationales"]["accepted"] == len(examples)
    assert st["rationales"]["asked"] >= st["rationales"]["accepted"]
    kept_inputs = st["inputs"]["kept"]
    assert st["inputs"]["attempts"] == sum(st["inputs"].values()) - st["inputs"]["attempts"]
    assert kept_inputs >= len(examples)
    assert c["holdout"] == sum(r["holdout"] for r in records) > 0
    assert c["val_problems"] == sum(1 for r in records if r["val"]) > 0
    # The counts printed at the end are these.
    assert re.search(rf"SFT examples +{len(examples)} in 1 shard\(s\)", sim_run["stdout"])
    # The simulated model's attack rate is the one it used, not null.
    assert card["settings"]["sim_attack"] == 0.4196
    final = [line for line in sim_run["stderr"].splitlines() if " 11/11 problems, " in line]
    assert len(final) == 1, final


def test_simulated_is_said_everywhere(sim_run: dict[str, Any]) -> None:
    card, records = sim_run["card"], sim_run["records"]
    assert card["simulated"] is True and card["label"] == "SIMULATED"
    assert all(r["label"] == "SIMULATED" and r["simulated"] for r in records)
    assert all(e["meta"]["label"] == "SIMULATED" for e in _examples(sim_run["out"]))
    assert "> **SIMULATED.**" in (sim_run["out"] / "README.md").read_text()
    assert "[SIMULATED]" in sim_run["stderr"]
    lines = [line for line in sim_run["stdout"].splitlines() if line.strip()]
    assert lines[0].startswith("SIMULATED:")
    assert all("SIMULATED" in line for line in lines[2:])


def test_decontamination_is_reported(sim_run: dict[str, Any]) -> None:
    err = sim_run["stderr"]
    assert "decontamination: 180 problems dropped (hard 176, mbpp unavailable, he 6, he+ 2)" in err
    assert "MBPP+Fix (mbpp) is unavailable and was not checked" in err
    dropped = [
        json.loads(line)
        for line in (sim_run["out"] / "decontamination.jsonl").read_text().splitlines()
    ]
    assert len(dropped) == 180
    renamed = {
        d["problem_id"]
        for d in dropped
        if all(m["how"] == "same syntax tree, identifiers renamed" for m in d["matches"])
    }
    assert {"mbpp+/67", "mbpp+/143", "mbpp+/588"} <= renamed and len(renamed) == 10
    assert {m["by"] for d in dropped for m in d["matches"]} == {"description", "code"}
    ids = {r["problem_id"] for r in sim_run["records"]}
    assert not ids & {d["problem_id"] for d in dropped}


def _run_gold(sb: Sandbox, code: str, entry: str, args: tuple[Any, ...]) -> Any:
    (o,) = sb.run(code, entry, [args]).outcomes
    assert o.status is Status.OK
    return o.value


def test_examples_are_inference_prompts_and_parseable_targets_labelled_by_the_gold(
    sim_run: dict[str, Any],
) -> None:
    records = {r["key"]: r for r in sim_run["records"]}
    problems = _problems(sim_run["data"])
    examples = _examples(sim_run["out"])
    model_output_differs = 0
    with Sandbox() as sb:
        for ex in examples:
            user, assistant = ex["messages"]
            assert user["role"] == "user" and assistant["role"] == "assistant"
            meta = ex["meta"]
            rec = records[meta["key"]]
            assert not rec["holdout"]
            version = rec["versions"][meta["version"]]
            p = problems[meta["problem_id"]]
            entry, gold = p.entry_point, p.code
            assert user["content"] == prompts.ut_prompt(
                "utgen",
                signature=p.signature,
                description=p.description,
                code=version["code"],
                entry_point=entry,
            )
            assert version["by"].startswith("ast:")
            call = parse_call(assistant["content"], entry)
            assert isinstance(call, ParsedCall), call
            out = parse_output(assistant["content"], call=call.source)
            assert isinstance(out, ParsedValue), out
            assert repr(out.value) == meta["gold_output"]
            # The label is what the gold code returns, not what the model wrote.
            assert repr(_run_gold(sb, gold, entry, call.args)) == meta["gold_output"]
            reply = version["attempts"][meta["attempt"]]["reply"]
            said = parse_output(reply, call=call.source)
            if isinstance(said, ParsedValue) and repr(said.value) != meta["gold_output"]:
                model_output_differs += 1
            # The rationale comes before the output, in the UT format the engine parses.
            section = assistant["content"].split("### Output\n", 1)[1]
            assert section.index("Therefore") < section.index("Output: ```")
    assert model_output_differs >= 1  # the sim's own outputs are often wrong; labels are not


def _problems(data_dir: Path) -> dict[str, TrainProblem]:
    return {p.problem_id: p for p in load_mbpp_plus(data_dir=data_dir).problems}


def test_validation_file_is_held_out_and_reads_as_a_fix_split(sim_run: dict[str, Any]) -> None:
    out = sim_run["out"]
    val = load_fix_file(out / "val.jsonl")
    assert not val.errors
    held = {r["problem_id"] for r in sim_run["records"] if r["holdout"]}
    in_sft = {e["meta"]["problem_id"] for e in _examples(out)}
    rows = [json.loads(line) for line in (out / "val.jsonl").read_text().splitlines()]
    assert {r["problem_id"] for r in rows} <= held
    assert not held & in_sft
    assert len(val.problems) == len(rows) == sim_run["card"]["counts"]["val_problems"]
    gold = utdebug(
        "bench", "--split", "val", "--val-file", str(out / "val.jsonl"), "--gold",
        "--out", str(out / "bench-gold"), "--json",
    )  # fmt: skip
    assert gold.returncode == 0, gold.stderr
    summary = json.loads(gold.stdout)["splits"]["val"]["summary"]
    assert summary["pass_at_1"] == 1.0
    code = utdebug(
        "bench", "--split", "val", "--val-file", str(out / "val.jsonl"),
        "--out", str(out / "bench-code"), "--json",
    )  # fmt: skip
    assert code.returncode == 0, code.stderr
    assert json.loads(code.stdout)["splits"]["val"]["summary"]["pass_at_1"] == 0.0


def test_checkpoint_selection_on_the_validation_file(sim_run: dict[str, Any]) -> None:
    out = sim_run["out"]
    rows = [json.loads(line) for line in (out / "val.jsonl").read_text().splitlines()]
    # Two scripted "checkpoints" answer the val problems in order (one sample each): the first
    # writes each problem's failing test with the gold output, the second with a wrong one.
    good, bad = [], []
    reply = "## Unit Test\n\n### Input Arguments\nArguments: ```{c}```\n\n### Output\n"
    reply += "Output: ```{o}```\n"
    for row in rows:
        call, _, gold = row["test_list"][0].removeprefix("assert ").partition(" == ")
        good.append(reply.format(c=call, o=gold))
        bad.append(reply.format(c=call, o=repr("not the answer")))
        assert literal_value(gold) != "not the answer"
    (out / "good.json").write_text(json.dumps({"ut": good}))
    (out / "bad.json").write_text(json.dumps({"ut": bad}))
    models = (
        f"scripted:{out / 'bad.json'},scripted:{out / 'good.json'},scripted:{out / 'none.json'}"
    )
    r = utdebug(
        "bench", "intrinsic", "--split", "val", "--val-file", str(out / "val.jsonl"),
        "--models", models, "--samples", "1", "--concurrency", "1", "--json",
    )  # fmt: skip
    assert r.returncode == 1, r.stderr  # the missing third checkpoint
    err_lines = [line for line in r.stderr.splitlines() if "cannot be used" in line]
    assert len(err_lines) == 1 and "none.json" in err_lines[0]
    (sel,) = json.loads(r.stdout)["selection"]
    assert sel["best"] == f"scripted:{out / 'good.json'}"
    by_name = {c["model"]: c for c in sel["checkpoints"]}
    good_row = by_name[f"scripted:{out / 'good.json'}"]
    assert good_row["accuracy_and_attack"] == 1.0 and good_row["problems"] == len(rows)
    assert by_name[f"scripted:{out / 'bad.json'}"]["output_accuracy"] == 0.0
    assert "error" in by_name[f"scripted:{out / 'none.json'}"]
    table = utdebug(
        "bench", "intrinsic", "--split", "val", "--val-file", str(out / "val.jsonl"),
        "--models", f"scripted:{out / 'good.json'}", "--samples", "1", "--concurrency", "1",
    )  # fmt: skip
    assert table.returncode == 0, table.stderr
    assert f"val: best checkpoint: scripted:{out / 'good.json'} (Acc. ∩ Attack 100.00%)" in (
        table.stdout
    )


def test_training_configs_point_at_the_shards(sim_run: dict[str, Any]) -> None:
    out = sim_run["out"]
    for name in ("trl-sft.yaml", "trl-sft-qlora.yaml"):
        cfg = yaml.safe_load((out / name).read_text())
        (ds,) = cfg["datasets"]
        assert ds["data_files"] == [str(p.resolve()) for p in sorted((out / "sft").glob("*.jsonl"))]
        assert cfg["learning_rate"] == 5e-6 and cfg["num_train_epochs"] == 10


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
def test_an_interrupted_run_resumes_to_the_same_shards(data_dir: Path, tmp_path: Path) -> None:
    data = _mbpp_plus(data_dir)
    extra = ("--limit", "6", "--concurrency", "1", "--decontaminate", "hard")
    clean = tmp_path / "clean"
    first = utdebug(*_cmd(data, clean, *extra))
    assert first.returncode == 0, first.stderr
    cut = tmp_path / "cut"
    proc = subprocess.Popen(
        [sys.executable, "-m", "utdebug", *_cmd(data, cut, *extra)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )
    while_running(proc, lambda: len(read_samples(cut / SAMPLES)) >= 3, "three records written")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    k = len(read_samples(cut / SAMPLES))
    assert 3 <= k < 6
    card = json.loads((cut / "card.json").read_text())
    assert card["complete"] is False and card["counts"]["recorded"] == k
    again = utdebug(*_cmd(data, cut, *extra))
    assert again.returncode == 0, again.stderr
    assert f"{k} already recorded, {6 - k} to run" in again.stderr
    keys = [r["key"] for r in read_samples(cut / SAMPLES)]
    assert len(keys) == len(set(keys)) == 6
    shards = sorted(p.name for p in (clean / "sft").iterdir())
    assert shards == sorted(p.name for p in (cut / "sft").iterdir())
    for name in shards:
        assert (clean / "sft" / name).read_bytes() == (cut / "sft" / name).read_bytes()
    assert json.loads((cut / "card.json").read_text())["complete"] is True
    # A third run has nothing left to do and writes the same shards again.
    third = utdebug(*_cmd(data, cut, *extra))
    assert third.returncode == 0 and "6 already recorded, 0 to run" in third.stderr
    assert len(read_samples(cut / SAMPLES)) == 6


def test_a_torn_last_record_is_dropped_and_redone(data_dir: Path, tmp_path: Path) -> None:
    data = _mbpp_plus(data_dir)
    extra = ("--limit", "3", "--concurrency", "1", "--decontaminate", "none")
    out = tmp_path / "o"
    assert utdebug(*_cmd(data, out, *extra)).returncode == 0
    before = (out / "sft").iterdir()
    shard_bytes = {p.name: p.read_bytes() for p in before}
    samples = out / SAMPLES
    lines = samples.read_bytes().splitlines(keepends=True)
    samples.write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # a crash
    again = utdebug(*_cmd(data, out, *extra))
    assert again.returncode == 0, again.stderr
    assert "2 already recorded, 1 to run" in again.stderr
    assert len(read_samples(samples)) == 3 and samples.read_bytes().endswith(b"\n")
    assert {p.name: p.read_bytes() for p in (out / "sft").iterdir()} == shard_bytes


def test_bad_arguments_are_usage_errors(tmp_path: Path) -> None:
    r = utdebug("train", "data", "--source", "table", "--model", "sim")
    assert r.returncode == 2 and "--source-path" in r.stderr
    r = utdebug("train", "data", "--source", "mbpp+", "--model", "sim", "--decontaminate", "x")
    assert r.returncode == 2 and "unknown split" in r.stderr
    r = utdebug(
        "train", "data", "--source", "mbpp+", "--model", "sim", "--data-dir", str(tmp_path / "no")
    )
    assert r.returncode == 2 and "does not exist" in r.stderr
    r = utdebug("train", "data", "--source", "mbpp+", "--model", "scripted:/no/such.json")
    assert r.returncode == 2 and "no such file" in r.stderr
    env_missing = utdebug(
        "train", "data", "--source", "table", "--source-path", str(tmp_path / "x.jsonl"),
        "--model", "sim", "--out", str(tmp_path / "o"),
    )  # fmt: skip
    assert env_missing.returncode == 2 and "does not exist" in env_missing.stderr
    assert "Traceback" not in env_missing.stderr


@pytest.mark.ray
@pytest.mark.skipif(
    importlib.util.find_spec("ray") is None,
    reason="Ray is not installed (pip install 'utdebug[ray]')",
)
def test_on_ray_the_same_records_and_shards_and_resume_across(
    data_dir: Path, tmp_path: Path
) -> None:
    data = _mbpp_plus(data_dir)
    extra = ("--decontaminate", "hard", "--val-fraction", "0.3")
    local = tmp_path / "local"
    assert utdebug(*_cmd(data, local, "--limit", "5", *extra)).returncode == 0
    mixed = tmp_path / "mixed"
    assert utdebug(*_cmd(data, mixed, "--limit", "2", *extra)).returncode == 0
    r = utdebug(
        *_cmd(data, mixed, "--limit", "5", "--ray", "local-cluster", "--concurrency", "2", *extra)
    )
    assert r.returncode == 0, r.stderr
    assert "Ray at local-cluster" in r.stderr and "2 already recorded, 3 to run" in r.stderr

    def records(folder: Path) -> dict[str, dict[str, Any]]:
        return {
            rec["key"]: {k: v for k, v in rec.items() if k != "seconds"}
            for rec in read_samples(folder / SAMPLES)
        }

    assert records(mixed) == records(local)
    for name in ("sft/train-00000-of-00001.jsonl", "val.jsonl"):
        assert (mixed / name).read_bytes() == (local / name).read_bytes()


# --- no model at all --------------------------------------------------------------------------


def _no_model_env(tmp: Path) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("UTDEBUG_MODEL", "UTDEBUG_CONFIG")}
    env["XDG_CONFIG_HOME"] = str(tmp / "config")  # no config file: no default model either
    return env


@pytest.fixture(scope="module")
def free_run(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    data = _mbpp_plus(data_dir)
    out = tmp_path_factory.mktemp("train-free")
    cmd = [
        sys.executable, "-m", "utdebug", "train", "data", "--source", "mbpp+",
        "--data-dir", str(data), "--out", str(out), "--limit", "14", "--val-fraction", "0.25",
    ]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=_no_model_env(out))
    assert r.returncode == 0, r.stdout + r.stderr
    return {
        "out": out,
        "stdout": r.stdout,
        "stderr": r.stderr,
        "card": json.loads((out / "card.json").read_text()),
        "records": read_samples(out / SAMPLES),
        "data": data,
    }


def test_without_a_model_the_data_is_real_and_says_which_stages_used_none(
    free_run: dict[str, Any],
) -> None:
    out, card = free_run["out"], free_run["card"]
    examples = _examples(out)
    assert len(examples) >= 10
    assert card["simulated"] is False and card["model"] is None and card["uses_model"] is False
    assert card["stages"] == {
        "perturb": "AST mutation (no model)",
        "inputs": "the source's own test inputs (no model)",
        "rationale": "none (no model)",
    }
    assert (card["settings"]["inputs"], card["settings"]["rationale"]) == ("dataset", "none")
    for path in out.rglob("*"):
        if path.is_file():
            assert "SIMULATED" not in path.read_text(), path
    assert "SIMULATED" not in free_run["stdout"] + free_run["stderr"]
    assert "No model wrote any of these examples" in free_run["stdout"]
    assert re.search(
        r"stage II made by +the source's own test inputs \(no model\)", free_run["stdout"]
    )
    assert "| stage III (rationales) | none (no model) |" in (out / "README.md").read_text()
    assert all(e["meta"]["model"] is None for e in examples)


def test_without_a_model_each_input_fails_the_corrupted_code_and_the_label_is_the_gold(
    free_run: dict[str, Any],
) -> None:
    records = {r["key"]: r for r in free_run["records"]}
    problems = _problems(free_run["data"])
    with Sandbox() as sb:
        for ex in _examples(free_run["out"]):
            user, assistant = ex["messages"]
            meta = ex["meta"]
            p = problems[meta["problem_id"]]
            version = records[meta["key"]]["versions"][meta["version"]]
            assert version["by"].startswith("ast:")
            assert user["content"] == prompts.ut_prompt(
                "utgen",
                signature=p.signature,
                description=p.description,
                code=version["code"],
                entry_point=p.entry_point,
            )
            # No hypothesis, no rationale: the input and the gold output, as the engine reads.
            assert assistant["content"] == (
                f"### Input Arguments\nArguments: ```{meta['call']}```\n\n"
                f"### Output\nOutput: ```{meta['gold_output']}```\n"
            )
            call = parse_call(assistant["content"], p.entry_point)
            assert isinstance(call, ParsedCall), call
            assert call.args in p.inputs  # one of the source's own inputs, its types kept
            gold = _run_gold(sb, p.code, p.entry_point, call.args)
            assert repr(gold) == meta["gold_output"]
            (bad,) = sb.run(version["code"], p.entry_point, [call.args]).outcomes
            assert bad.status is not Status.OK or repr(bad.value) != meta["gold_output"]


def test_without_a_model_the_counts_agree_and_the_last_progress_line_is_printed_once(
    free_run: dict[str, Any],
) -> None:
    c = free_run["card"]["counts"]
    held, rows = c["holdout"], c["val_problems"]
    assert held > 0 and 0 < rows <= held
    text = held_out_text(c)
    assert text.startswith(f"{held} ({rows} written to val.jsonl")
    assert re.search(rf"held out for validation +{re.escape(text)}\n", free_run["stdout"])
    assert f"| held out for validation | {text} |" in (free_run["out"] / "README.md").read_text()
    assert f"({held} held out for validation)" in free_run["stderr"]
    progress = [line for line in free_run["stderr"].splitlines() if " 14/14 problems, " in line]
    assert len(progress) == 1, progress
    rows_in_file = (free_run["out"] / "val.jsonl").read_text().splitlines()
    assert len(rows_in_file) == rows


def test_a_model_named_for_no_stage_that_uses_one_is_refused(tmp_path: Path) -> None:
    r = utdebug(
        "train", "data", "--source", "mbpp+", "--model", "sim", "--inputs", "dataset",
        "--rationale", "none", "--out", str(tmp_path / "x"),
    )  # fmt: skip
    assert r.returncode == 2
    assert r.stderr.strip() == (
        "utdebug train data: --model sim: no stage uses a model (--perturb ast --inputs "
        "dataset --rationale none)"
    )


@pytest.fixture(scope="module")
def synth_run(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    data = _mbpp_plus(data_dir)
    out = tmp_path_factory.mktemp("train-synth")
    cmd = [
        sys.executable, "-m", "utdebug", "train", "data", "--source", "mbpp+",
        "--data-dir", str(data), "--out", str(out), "--limit", "14", "--val-fraction", "0",
        "--inputs", "synth", "--rationale", "none",
    ]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=_no_model_env(out))
    assert r.returncode == 0, r.stdout + r.stderr
    return {
        "out": out,
        "card": json.loads((out / "card.json").read_text()),
        "records": read_samples(out / SAMPLES),
        "data": data,
    }


def test_stage_two_draws_inputs_from_the_synthesiser_labelled_by_the_gold_code(
    synth_run: dict[str, Any],
) -> None:
    """``--inputs synth``: the source's inputs and inputs synthesised from them, each labelled
    by the gold code; every example says where its input came from, and a synthesised one is an
    input the source does not have, on which the gold code gives the label and the corrupted
    code does not."""
    card, out = synth_run["card"], synth_run["out"]
    assert card["stages"]["inputs"] == (
        "the source's own test inputs and inputs synthesised from them (no model)"
    )
    assert card["settings"]["inputs"] == "synth" and card["uses_model"] is False
    problems = _problems(synth_run["data"])
    examples = _examples(out)
    assert examples
    sources = [ex["meta"]["input_source"] for ex in examples]
    assert all(s == "dataset" or s.startswith("synthesised (") for s in sources), sources
    synthesised = [ex for ex in examples if ex["meta"]["input_source"] != "dataset"]
    assert synthesised, sources
    records = {r["key"]: r for r in synth_run["records"]}
    with Sandbox() as sb:
        for ex in synthesised:
            meta = ex["meta"]
            p = problems[meta["problem_id"]]
            call = parse_call(ex["messages"][1]["content"], p.entry_point)
            assert isinstance(call, ParsedCall), call
            assert call.args not in p.inputs  # not one of the source's own inputs
            gold = _run_gold(sb, p.code, p.entry_point, call.args)
            assert repr(gold) == meta["gold_output"]
            version = records[meta["key"]]["versions"][meta["version"]]
            (bad,) = sb.run(version["code"], p.entry_point, [call.args]).outcomes
            assert bad.status is not Status.OK or repr(bad.value) != meta["gold_output"]
