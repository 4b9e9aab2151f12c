"""Training hand-off: configurations for TRL's ``trl sft --config FILE`` (TRL 1.16).

Two files, with the paper's hyperparameters (Appendix B: 10 epochs, batch size 16, learning
rate 5e-6, cosine schedule, LoRA rank 16, alpha 32, dropout 0.05, loss on the completions only):

- ``trl-sft.yaml``: LoRA on a 7-8B model (``Qwen/Qwen2.5-Coder-7B-Instruct``; edit
  ``model_name_or_path``), one GPU: 4 per device x 4 accumulation steps = 16;
- ``trl-sft-qlora.yaml``: QLoRA, the base model in 4 bits (NF4, nested quantization), for
  ``Qwen/Qwen2.5-Coder-32B-Instruct``: 1 per device x 16 steps = 16 on one GPU (with G GPUs,
  set ``gradient_accumulation_steps`` to 16 / G).

The data is the run's SFT shards (``messages``: the inference prompt as the user turn, the
target as the assistant turn), loaded as JSON with only the ``messages`` column;
``assistant_only_loss: true`` puts the loss on the assistant turn alone (TRL swaps in a training
chat template with generation markers for Qwen2.5 and Llama 3). A checkpoint is saved every
epoch, for checkpoint selection on Acc. ∩ Attack (``utdebug bench intrinsic --models``).

The keys are the fields of TRL's ``ScriptArguments``, ``SFTConfig`` (with transformers'
``TrainingArguments``), ``ModelConfig`` and ``DatasetMixtureConfig`` that ``trl sft`` parses;
``tests/test_train_trl.py`` reads those classes from the installed TRL, transformers and PEFT
sources (no import) so a renamed field fails the tests.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "COMMON_NOTE",
    "NOTES",
    "PAPER",
    "TEMPLATES_REFUSED",
    "TEMPLATES_TRAINED",
    "TRAINING_TEMPLATES",
    "TRL_VERSION",
    "render_yaml",
    "sft_configs",
]

TRL_VERSION = "1.16.0"
"""The TRL release the configurations are written for (and checked against)."""

PAPER: dict[str, Any] = {
    "num_train_epochs": 10,
    "batch_size": 16,
    "learning_rate": 5e-6,
    "lr_scheduler_type": "cosine",
    "lora_r": 16,
    "lora_alpha": 32,
    "lora_dropout": 0.05,
}
"""UTGen's training hyperparameters (paper, Appendix B)."""


TRAINING_TEMPLATES = (
    "Qwen2.5 (and Qwen2.5-Coder), Qwen3, Llama 3 (3.0 only: not 3.1 or 3.2), Gemma, Gemma 3, "
    "Phi-3, Phi-3.5, DeepSeek-V3, DeepSeek-R1-Distill, gpt-oss, Cohere, GLM-4-MoE"
)
"""Chat templates TRL 1.16 turns into training templates for ``assistant_only_loss`` (exactly
these texts; ``tests/test_train_trl.py`` checks the list against TRL's source). Any other
template (Llama 3.1's among them) stops ``trl sft`` before training with "The chat template is
not training-compatible (missing prefix-preservation or `{% generation %}` markers)", unless
it has ``{% generation %}`` markers of its own."""
TEMPLATES_TRAINED = (
    "qwen2_5", "qwen3", "llama3", "gemma", "gemma3", "phi3", "phi3_5", "deepseekv3",
    "deepseek_r1_distill", "gptoss", "cohere", "cohere2", "glm4moe",
)  # fmt: skip
"""TRL's names (``trl/chat_template_utils.py``) of the templates :data:`TRAINING_TEMPLATES`
names."""
TEMPLATES_REFUSED = ("llama3_1", "llama3_2")
"""Templates TRL 1.16 knows and refuses for ``assistant_only_loss`` (Llama 3.1 and 3.2)."""

NOTES: dict[str, str] = {
    "trl-sft.yaml": "",
    "trl-sft-qlora.yaml": "QLoRA needs bitsandbytes (pip install bitsandbytes) and a CUDA GPU.\n",
}
COMMON_NOTE = (
    "Without a GPU (a short check, e.g. with --max_steps 5): add --use_cpu true, or trl stops "
    'with "Your setup doesn\'t support bf16/gpu".\n'
    "assistant_only_loss needs a chat template TRL 1.16 can train on: "
    + TRAINING_TEMPLATES
    + '; others stop with "The chat template is not training-compatible".'
)
"""Comment lines of every configuration file (after the command line)."""


def sft_configs(shards: Sequence[Path], *, seed: int) -> dict[str, dict[str, Any]]:
    """File name -> configuration (LoRA for 7-8B models, QLoRA for 32B)."""
    data = [str(Path(p).resolve()) for p in shards]
    common: dict[str, Any] = {
        "use_peft": True,
        "lora_r": PAPER["lora_r"],
        "lora_alpha": PAPER["lora_alpha"],
        "lora_dropout": PAPER["lora_dropout"],
        "lora_target_modules": ["all-linear"],
        "lora_task_type": "CAUSAL_LM",
        "dtype": "bfloat16",
        "datasets": [
            {"path": "json", "data_files": data, "split": "train", "columns": ["messages"]}
        ],
        "num_train_epochs": PAPER["num_train_epochs"],
        "learning_rate": PAPER["learning_rate"],
        "lr_scheduler_type": PAPER["lr_scheduler_type"],
        "assistant_only_loss": True,
        "max_length": 4096,
        "bf16": True,
        "activation_checkpointing": True,
        "logging_steps": 1,
        "save_strategy": "epoch",
        "report_to": "none",
        "seed": seed,
    }
    lora = {
        "model_name_or_path": "Qwen/Qwen2.5-Coder-7B-Instruct",
        **common,
        "output_dir": "checkpoints/utgen-qwen2.5-coder-7b-lora",
        "per_device_train_batch_size": 4,
        "gradient_accumulation_steps": 4,
    }
    qlora = {
        "model_name_or_path": "Qwen/Qwen2.5-Coder-32B-Instruct",
        **common,
        "load_in_4bit": True,
        "bnb_4bit_quant_type": "nf4",
        "use_bnb_nested_quant": True,
        "output_dir": "checkpoints/utgen-qwen2.5-coder-32b-qlora",
        "per_device_train_batch_size": 1,
        "gradient_accumulation_steps": 16,
    }
    return {"trl-sft.yaml": lora, "trl-sft-qlora.yaml": qlora}


def render_yaml(config: dict[str, Any], header: str) -> str:
    """A flat YAML mapping (values as JSON, which YAML reads), nested lists of mappings for
    ``datasets``; ``header`` as comment lines on top."""
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    for key, value in config.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            lines.append(f"{key}:")
            for item in value:
                first = True
                for k, v in item.items():
                    lines.append(f"  {'- ' if first else '  '}{k}: {_scalar(v)}")
                    first = False
        else:
            lines.append(f"{key}: {_scalar(value)}")
    return "\n".join(lines) + "\n"


def _scalar(value: Any) -> str:
    if isinstance(value, float):
        # YAML 1.1 (PyYAML, which TRL reads configurations with) takes 5.0e-06 as a number
        # but 5e-06 as a string: the mantissa gets a dot.
        text = repr(value)
        mantissa, e, exponent = text.partition("e")
        if e and "." not in mantissa:
            text = f"{mantissa}.0e{exponent}"
        return text
    return json.dumps(value)
