"""A training run on the data ``utdebug train data`` writes without a model: the generated
``trl sft`` configuration, unchanged but for the model path, the output folder, ``max_steps``
and the CPU switch, trains a tiny random Qwen2 (hidden size 64, 2 layers, a tokenizer trained
on the run's own shard, Qwen2.5's chat template) for 5 steps on the CPU.

Marked ``train``: it needs torch, transformers, TRL, PEFT, accelerate and datasets with their
dependencies (``bash scripts/setup-train.sh``; ``.ci/run`` installs them and sets
``UTDEBUG_TRAIN_TEST=1``, under which missing packages fail the test instead of skipping it).
The steps that import them run in another process (``tests/testkit/train_run.py``).
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.train

NEEDED = ("torch", "transformers", "trl", "peft", "accelerate", "datasets", "tokenizers")
HELPER = Path(__file__).parent / "testkit" / "train_run.py"
STEPS = 5


def _require() -> None:
    missing = [m for m in NEEDED if importlib.util.find_spec(m) is None]
    if not missing:
        try:
            import torch  # noqa: F401  (setup.sh installs TRL and the rest without it)
        except ImportError as e:
            missing = [f"torch ({e})"]
    if missing:
        why = f"needs {', '.join(missing)}: bash scripts/setup-train.sh"
        if os.environ.get("UTDEBUG_TRAIN_TEST") == "1":
            pytest.fail(why)
        pytest.skip(why)


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HF_HOME": str(tmp_path / "hf"),  # no cache outside the test's folder
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "WANDB_DISABLED": "true",
    }


def _helper(tmp_path: Path, *args: str, timeout: float = 600) -> dict[str, Any]:
    r = subprocess.run(
        [sys.executable, str(HELPER), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_env(tmp_path),
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    result: dict[str, Any] = json.loads(r.stdout.strip().splitlines()[-1])
    return result


def _trl() -> str:
    found = Path(sys.executable).with_name("trl")
    if found.is_file():
        return str(found)
    which = shutil.which("trl")
    assert which is not None, "the trl command is not installed"
    return which


def test_the_generated_configuration_trains_a_tiny_model(data_dir: Path, tmp_path: Path) -> None:
    _require()
    data = tmp_path / "data"
    cmd = [
        sys.executable, "-m", "utdebug", "train", "data", "--source", "mbpp+",
        "--data-dir", str(data_dir), "--limit", "12", "--out", str(data),
    ]  # fmt: skip
    r = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    (shard,) = sorted((data / "sft").glob("train-*.jsonl"))
    examples = [json.loads(line) for line in shard.read_text().splitlines()]
    assert len(examples) >= 10
    assert all("SIMULATED" not in json.dumps(e) for e in examples)
    config = data / "trl-sft.yaml"
    cfg = yaml.safe_load(config.read_text())

    model = tmp_path / "model"
    built = _helper(tmp_path, "build", str(shard), str(model))
    assert built["examples"] == len(examples) and built["vocab"] > 300

    # The dataset and the labels as trl sft builds them from this configuration.
    lab = _helper(tmp_path, "labels", str(config), str(model), str(tmp_path / "unused"))
    assert lab["columns"] == ["messages"] and lab["conversational"] is True
    assert lab["assistant_only_loss"] is True and lab["examples"] == len(examples)
    assert len(lab["rows"]) == len(examples)  # no example lost its assistant turn
    for row, assistant in zip(lab["rows"], lab["assistant"], strict=True):
        # Exactly the assistant turn (with the end-of-turn mark the model must learn to write)
        # carries a loss, none of the prompt.
        assert row["labelled"] == f"\n{assistant}<|im_end|>\n"
        assert 0 < row["labelled_tokens"] < row["tokens"]

    # The real run: the generated file, four overrides.
    out = tmp_path / "checkpoints"
    cmd = [
        _trl(), "sft", "--config", str(config), "--model_name_or_path", str(model),
        "--output_dir", str(out), "--max_steps", str(STEPS), "--use_cpu", "true",
    ]  # fmt: skip
    run = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=900,
        env=_env(tmp_path),
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    (state_file,) = out.glob(f"checkpoint-{STEPS}/trainer_state.json")
    history = json.loads(state_file.read_text())["log_history"]
    losses = {h["step"]: h["loss"] for h in history if "loss" in h}
    assert sorted(losses) == list(range(1, STEPS + 1))  # logging_steps 1: every step
    assert all(math.isfinite(v) and v > 0 for v in losses.values())

    saved = json.loads((out / "adapter_config.json").read_text())
    assert saved["peft_type"] == "LORA" and saved["r"] == cfg["lora_r"] == 16
    assert saved["lora_alpha"] == cfg["lora_alpha"] == 32
    assert saved["lora_dropout"] == cfg["lora_dropout"]
    assert cfg["lora_target_modules"] == ["all-linear"]
    # all-linear: every linear layer of the model but the output head.
    assert sorted(saved["target_modules"]) == built["linear"]
    loaded = _helper(tmp_path, "adapter", str(model), str(out))
    assert loaded["saved_tensors"] == 2 * len(built["linear"])  # lora_A and lora_B each
    assert loaded["loaded_tensors"] == loaded["saved_tensors"]
    assert loaded["new_tokens"] > 0
