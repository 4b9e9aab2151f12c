"""The training configurations ``utdebug train data`` writes, against TRL's own source.

TRL, PEFT and transformers are installed without their dependencies (``scripts/setup.sh``) and
never imported (no torch, no GPU): their dataclasses are read with :mod:`ast`. A field that a
release renames or drops, a ``trl sft`` that parses other dataclasses, or a LoRA mapping that
changes, fails here. Training itself needs a GPU and is not run.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
from pathlib import Path

import pytest
import yaml

from utdebug.train.trl_config import (
    COMMON_NOTE,
    NOTES,
    PAPER,
    TEMPLATES_REFUSED,
    TEMPLATES_TRAINED,
    TRL_VERSION,
    render_yaml,
    sft_configs,
)

PINS = {"trl": TRL_VERSION, "peft": "0.21.2", "transformers": "5.24.0"}


def _package(name: str) -> Path:
    spec = importlib.util.find_spec(name)  # a top-level package: found, not imported
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"{name} is not installed (bash scripts/setup.sh installs it without deps)")
    return Path(next(iter(spec.submodule_search_locations)))


def _classes(path: Path) -> dict[str, ast.ClassDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}


def _fields(cls: ast.ClassDef) -> dict[str, ast.AnnAssign]:
    return {
        stmt.target.id: stmt
        for stmt in cls.body
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
    }


def _bases(cls: ast.ClassDef) -> list[str]:
    return [ast.unparse(b) for b in cls.bases]


@pytest.fixture(scope="module")
def trl_fields() -> dict[str, dict[str, ast.AnnAssign]]:
    """The dataclasses ``trl sft`` parses, each with the fields of its bases."""
    trl, tf = _package("trl"), _package("transformers")
    sft_file = _classes(trl / "trainer" / "sft_config.py")
    base_file = _classes(trl / "trainer" / "base_config.py")
    training_args = _classes(tf / "training_args.py")["TrainingArguments"]
    sft, base = sft_file["SFTConfig"], base_file["_BaseConfig"]
    assert _bases(sft) == ["_BaseConfig"] and _bases(base) == ["TrainingArguments"]
    scripts = _classes(trl / "scripts" / "utils.py")
    return {
        "SFTConfig": _fields(training_args) | _fields(base) | _fields(sft),
        "ModelConfig": _fields(_classes(trl / "trainer" / "model_config.py")["ModelConfig"]),
        "ScriptArguments": _fields(scripts["ScriptArguments"]),
        "DatasetMixtureConfig": _fields(scripts["DatasetMixtureConfig"]),
        "DatasetConfig": _fields(scripts["DatasetConfig"]),
    }


def test_the_pinned_versions_are_installed() -> None:
    for name, version in PINS.items():
        _package(name)
        assert importlib.metadata.version(name) == version


def test_trl_sft_parses_these_dataclasses() -> None:
    tree = ast.parse((_package("trl") / "scripts" / "sft.py").read_text(encoding="utf-8"))
    found = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "dataclass_types" for t in node.targets)
    ]
    (types,) = found
    assert isinstance(types, ast.Tuple)
    assert [ast.unparse(e) for e in types.elts] == [
        "ScriptArguments",
        "SFTConfig",
        "ModelConfig",
        "DatasetMixtureConfig",
    ]


def _configs(tmp_path: Path) -> dict[str, dict[str, object]]:
    shard = tmp_path / "sft" / "train-00000-of-00001.jsonl"
    out = {}
    for name, cfg in sft_configs([shard], seed=3).items():
        text = render_yaml(cfg, f"trl sft --config {name}")
        parsed = yaml.safe_load(text)  # as TRL reads it (PyYAML)
        assert parsed == cfg, name  # numbers stay numbers (5.0e-06, not the string 5e-06)
        out[name] = parsed
    return out


def test_every_key_is_a_field_trl_sft_reads(
    trl_fields: dict[str, dict[str, ast.AnnAssign]], tmp_path: Path
) -> None:
    parsed = {k: v for k, v in trl_fields.items() if k != "DatasetConfig"}
    for name, cfg in _configs(tmp_path).items():
        for key in cfg:
            owners = [cls for cls, fields in parsed.items() if key in fields]
            assert owners, f"{name}: `{key}` is no field of {', '.join(parsed)}"
        for entry in cfg["datasets"]:  # type: ignore[attr-defined]
            unknown = set(entry) - set(trl_fields["DatasetConfig"])
            assert not unknown, f"{name}: datasets entry keys {unknown}"


def _choices(field: ast.AnnAssign) -> list[str]:
    assert isinstance(field.value, ast.Call)
    for kw in field.value.keywords:
        if kw.arg == "metadata" and isinstance(kw.value, ast.Dict):
            for k, v in zip(kw.value.keys, kw.value.values, strict=True):
                if isinstance(k, ast.Constant) and k.value == "choices":
                    return list(ast.literal_eval(v))
    return []


def _enum_values(path: Path, name: str) -> set[str]:
    cls = _classes(path)[name]
    return {
        stmt.value.value
        for stmt in cls.body
        if isinstance(stmt, ast.Assign)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    }


def test_the_values_are_ones_trl_and_transformers_accept(
    trl_fields: dict[str, dict[str, ast.AnnAssign]], tmp_path: Path
) -> None:
    utils = _package("transformers") / "trainer_utils.py"
    configs = _configs(tmp_path)
    for cfg in configs.values():
        assert cfg["lr_scheduler_type"] in _enum_values(utils, "SchedulerType")
        assert cfg["save_strategy"] in _enum_values(utils, "SaveStrategy")
        assert ast.unparse(trl_fields["SFTConfig"]["assistant_only_loss"].annotation) == "bool"
    qlora = configs["trl-sft-qlora.yaml"]
    assert qlora["bnb_4bit_quant_type"] in _choices(
        trl_fields["ModelConfig"]["bnb_4bit_quant_type"]
    )


def test_lora_settings_reach_peft_under_these_names(tmp_path: Path) -> None:
    """TRL builds PEFT's LoraConfig from ModelConfig in get_peft_config: the keywords it passes
    must be LoraConfig fields, taken from the ModelConfig fields the configuration sets."""
    trl, peft = _package("trl"), _package("peft")
    tree = ast.parse((trl / "trainer" / "utils.py").read_text(encoding="utf-8"))
    (fn,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_peft_config"]
    (call,) = [
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "LoraConfig"
    ]
    passed = {kw.arg: ast.unparse(kw.value) for kw in call.keywords if kw.arg}
    lora = _fields(_classes(peft / "tuners" / "lora" / "config.py")["LoraConfig"])
    cfg = _configs(tmp_path)["trl-sft.yaml"]
    for peft_name, model_field in (
        ("r", "lora_r"),
        ("lora_alpha", "lora_alpha"),
        ("lora_dropout", "lora_dropout"),
        ("target_modules", "lora_target_modules"),
        ("task_type", "lora_task_type"),
    ):
        assert peft_name in lora or peft_name == "task_type", peft_name  # task_type: PeftConfig
        assert passed[peft_name] == f"model_args.{model_field}"
        assert model_field in cfg


def test_the_papers_hyperparameters(tmp_path: Path) -> None:
    configs = _configs(tmp_path)
    for cfg in configs.values():
        assert cfg["num_train_epochs"] == PAPER["num_train_epochs"] == 10
        assert cfg["per_device_train_batch_size"] * cfg["gradient_accumulation_steps"] == 16  # type: ignore[operator]
        assert cfg["learning_rate"] == 5e-6 and cfg["lr_scheduler_type"] == "cosine"
        assert (cfg["lora_r"], cfg["lora_alpha"], cfg["lora_dropout"]) == (16, 32, 0.05)
        assert cfg["use_peft"] is True and cfg["assistant_only_loss"] is True
        assert cfg["seed"] == 3
        (ds,) = cfg["datasets"]  # type: ignore[misc]
        assert ds["path"] == "json" and ds["columns"] == ["messages"]
    assert configs["trl-sft-qlora.yaml"]["load_in_4bit"] is True
    assert "32B" in str(configs["trl-sft-qlora.yaml"]["model_name_or_path"])
    assert "load_in_4bit" not in configs["trl-sft.yaml"]


def _help(field: ast.AnnAssign) -> str:
    assert isinstance(field.value, ast.Call)
    for kw in field.value.keywords:
        if kw.arg == "metadata" and isinstance(kw.value, ast.Dict):
            for k, v in zip(kw.value.keys, kw.value.values, strict=True):
                if isinstance(k, ast.Constant) and k.value == "help":
                    return str(ast.literal_eval(v))
    return ""


def test_no_key_is_a_deprecated_alias(tmp_path: Path) -> None:
    # transformers 5.24 keeps gradient_checkpointing as a deprecated alias of
    # activation_checkpointing (a FutureWarning at every start).
    tf = _fields(_classes(_package("transformers") / "training_args.py")["TrainingArguments"])
    assert "deprecated" in _help(tf["gradient_checkpointing"]).lower()
    for name, cfg in _configs(tmp_path).items():
        for key in cfg:
            if key in tf:
                assert "deprecated" not in _help(tf[key]).lower(), f"{name}: {key}"
        assert cfg["activation_checkpointing"] is True


def _patched_templates() -> tuple[set[str], set[str]]:
    """The templates TRL's get_training_chat_template patches, and all it names."""
    path = _package("trl") / "chat_template_utils.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    (fn,) = [
        n
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and n.name == "get_training_chat_template"
    ]
    patched = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Compare) and isinstance(node.comparators[0], ast.Name):
            patched.add(node.comparators[0].id.removesuffix("_chat_template"))
    known = {
        t.id.removesuffix("_chat_template")
        for n in tree.body
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name)
        and t.id.endswith("_chat_template")
        and not t.id.endswith("training_chat_template")
    }
    return patched, known


def test_the_templates_said_to_train_are_the_ones_trl_patches(tmp_path: Path) -> None:
    patched, known = _patched_templates()
    assert set(TEMPLATES_TRAINED) <= patched
    assert set(TEMPLATES_REFUSED) <= known - patched  # Llama 3.1 and 3.2: not training-compatible
    src = (_package("trl") / "chat_template_utils.py").read_text(encoding="utf-8")
    assert "The chat template is not training-compatible" in src  # the sentence the files quote
    shard = tmp_path / "sft" / "train-00000-of-00001.jsonl"
    for name, cfg in sft_configs([shard], seed=0).items():
        text = render_yaml(cfg, f"{NOTES[name]}{COMMON_NOTE}")
        assert "--use_cpu true" in text and "not training-compatible" in text
        assert ("bitsandbytes" in text) == ("load_in_4bit" in cfg)
