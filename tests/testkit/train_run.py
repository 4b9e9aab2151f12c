"""The steps of the training test (tests/test_train_run.py) that need torch, transformers, TRL
and PEFT, run as a separate process so that the test process never imports them.

    python tests/train_run_helper.py build SHARD MODEL_DIR
    python tests/train_run_helper.py labels CONFIG MODEL_DIR
    python tests/train_run_helper.py adapter MODEL_DIR ADAPTER_DIR

Each prints one JSON object on its last line of stdout.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def build(shard: Path, out: Path) -> dict[str, Any]:
    """A byte-level BPE tokenizer trained on the shard's own text, with Qwen2.5's chat template
    (as TRL ships it: one it turns into a training template), and a random 2-layer Qwen2 with
    hidden size 64, both saved to ``out`` (nothing is downloaded)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
    from trl.chat_template_utils import qwen2_5_chat_template

    rows = [json.loads(line) for line in shard.read_text(encoding="utf-8").splitlines()]
    texts = [m["content"] for r in rows for m in r["messages"]]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=2000,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(texts, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    fast.chat_template = qwen2_5_chat_template
    fast.save_pretrained(out)
    config = Qwen2Config(
        vocab_size=len(fast),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
    )
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config)
    model.save_pretrained(out)
    linear = sorted(
        name
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.Linear) and name != "lm_head"
    )
    return {"vocab": len(fast), "examples": len(rows), "linear": linear}


def labels(config: Path, model_dir: Path, out_dir: Path) -> dict[str, Any]:
    """The dataset and the labels as ``trl sft`` builds them from ``config`` (its own parser
    and trainer, nothing trained): whether the data is conversational, and for every example
    the text of its labelled tokens beside the assistant turn's."""
    from trl import (
        ModelConfig,
        ScriptArguments,
        SFTConfig,
        SFTTrainer,
        TrlParser,
        get_dataset,
        get_peft_config,
    )
    from trl.data_utils import is_conversational
    from trl.scripts.utils import DatasetMixtureConfig

    parser = TrlParser((ScriptArguments, SFTConfig, ModelConfig, DatasetMixtureConfig))
    argv = [
        "--config", str(config), "--model_name_or_path", str(model_dir),
        "--output_dir", str(out_dir), "--max_steps", "1", "--use_cpu", "true",
    ]  # fmt: skip
    script, args, model_args, mixture = parser.parse_args_and_config(argv)
    data = get_dataset(mixture)[script.dataset_train_split]  # as trl sft loads it
    trainer = SFTTrainer(
        model=str(model_dir),
        args=args,
        train_dataset=data,
        peft_config=get_peft_config(model_args),
    )
    tok = trainer.processing_class
    rows = []
    for i in range(len(trainer.train_dataset)):
        batch = trainer.data_collator([trainer.train_dataset[i]])
        ids, lab = batch["input_ids"][0], batch["labels"][0]
        rows.append(
            {
                "labelled": tok.decode(ids[lab != -100].tolist()),
                "tokens": int(ids.numel()),
                "labelled_tokens": int((lab != -100).sum()),
            }
        )
    assistant = [r["messages"][-1]["content"] for r in data]
    return {
        "columns": data.column_names,
        "conversational": all(is_conversational(r) for r in data),
        "examples": len(data),
        "rows": rows,
        "assistant": assistant,
        "assistant_only_loss": args.assistant_only_loss,
    }


def adapter(model_dir: Path, adapter_dir: Path) -> dict[str, Any]:
    """The saved LoRA adapter loaded onto the base model, and a few tokens generated with it."""
    import torch
    from peft import PeftModel
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(adapter_dir)
    base = AutoModelForCausalLM.from_pretrained(model_dir)
    model = PeftModel.from_pretrained(base, adapter_dir)
    saved = load_file(str(adapter_dir / "adapter_model.safetensors"))
    state = model.state_dict()
    loaded = sum(
        1
        for key, value in saved.items()
        for name, param in state.items()
        if name.replace(".default", "") == key and torch.equal(param, value)
    )
    prompt = tok.apply_chat_template(
        [{"role": "user", "content": "Write a test."}],
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )
    with torch.no_grad():
        out = model.generate(**prompt, max_new_tokens=5, do_sample=False)
    new = int(out.shape[1] - prompt["input_ids"].shape[1])
    return {"saved_tensors": len(saved), "loaded_tensors": loaded, "new_tokens": new}


def main(argv: list[str]) -> int:
    step, *paths = argv
    if step == "build":
        result = build(Path(paths[0]), Path(paths[1]))
    elif step == "labels":
        result = labels(Path(paths[0]), Path(paths[1]), Path(paths[2]))
    elif step == "adapter":
        result = adapter(Path(paths[0]), Path(paths[1]))
    else:
        print(f"unknown step {step}", file=sys.stderr)
        return 2
    assert all(not isinstance(v, float) or math.isfinite(v) for v in result.values())
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
