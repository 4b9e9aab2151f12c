"""What a run leaves in its folder, besides ``samples.jsonl`` (one record per problem).

- ``sft/train-00000-of-0000N.jsonl``: the SFT examples, ``{"messages": [{"role": "user", ...},
  {"role": "assistant", ...}], "meta": {...}}`` (the conversational format TRL, axolotl and
  LLaMA-Factory read; ``meta`` says where each example came from and is not trained on), in the
  problems' order, :data:`SHARD_SIZE` per shard; with ``--parquet`` also ``.parquet`` shards
  (``messages`` as a list of ``{role, content}``, ``meta`` as JSON text);
- ``val.jsonl``: the held-out problems in the MBPP+Fix format (``utdebug bench intrinsic
  --split val --val-file``);
- ``decontamination.jsonl``: each problem dropped for overlapping an evaluation split, with
  what it matched;
- ``card.json`` and ``README.md``: the dataset card (sources with sha256, counts per stage and
  why rows were dropped, model, seed, utdebug version; SIMULATED where a simulated model wrote
  the text);
- ``trl-sft.yaml``, ``trl-sft-qlora.yaml``: configurations for ``trl sft --config``.

Every file is written whole (a temporary file, fsync, rename): a run killed while writing leaves
the previous version. The shards are rebuilt from the records at the end of every run, so a
resumed run gives the same shards as one that was never interrupted.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from utdebug.agents.choice import names_simulated
from utdebug.runs.records import RunFolderError, write_json_atomic, write_text_atomic

__all__ = [
    "SHARD_SIZE",
    "held_out_text",
    "write_card",
    "write_jsonl",
    "write_parquet_shards",
    "write_shards",
    "write_text",
]

SHARD_SIZE = 10_000
SFT_DIR = "sft"


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (a full disk is a :class:`RunFolderError`)."""
    write_text_atomic(path, text)


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> int:
    lines = [json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in rows]
    write_text(path, "".join(line + "\n" for line in lines))
    return len(lines)


def _clear(folder: Path, suffix: str, keep: set[str]) -> None:
    if folder.is_dir():
        for old in folder.glob(f"train-*-of-*{suffix}"):
            if old.name not in keep:
                with contextlib.suppress(OSError):
                    old.unlink()


def shard_names(count: int, shard_size: int, suffix: str) -> list[str]:
    n = max(1, -(-count // shard_size)) if count else 0
    return [f"train-{i:05d}-of-{n:05d}{suffix}" for i in range(n)]


def write_shards(
    out_dir: Path, examples: Sequence[dict[str, Any]], shard_size: int = SHARD_SIZE
) -> list[Path]:
    """The JSONL shards (old shards of another count are removed)."""
    folder = out_dir / SFT_DIR
    names = shard_names(len(examples), shard_size, ".jsonl")
    paths = []
    for i, name in enumerate(names):
        path = folder / name
        write_jsonl(path, examples[i * shard_size : (i + 1) * shard_size])
        paths.append(path)
    _clear(folder, ".jsonl", set(names))
    return paths


def write_parquet_shards(
    out_dir: Path, examples: Sequence[dict[str, Any]], shard_size: int = SHARD_SIZE
) -> list[Path]:
    """Parquet shards beside the JSONL ones (needs pyarrow: ``ImportError`` otherwise)."""
    import pyarrow as pa  # optional
    import pyarrow.parquet as pq

    folder = out_dir / SFT_DIR
    folder.mkdir(parents=True, exist_ok=True)
    names = shard_names(len(examples), shard_size, ".parquet")
    paths = []
    for i, name in enumerate(names):
        part = examples[i * shard_size : (i + 1) * shard_size]
        table = pa.table(
            {
                "messages": [e["messages"] for e in part],
                "meta": [json.dumps(e.get("meta"), ensure_ascii=False) for e in part],
            }
        )
        path = folder / name
        tmp = path.with_name(path.name + ".tmp")
        try:
            pq.write_table(table, tmp)
            os.replace(tmp, path)
        except OSError as e:
            raise RunFolderError(path, e) from None
        paths.append(path)
    _clear(folder, ".parquet", set(names))
    return paths


def held_out_text(counts: dict[str, Any]) -> str:
    """The held-out problems and what became of them (stdout and the card say the same)."""
    held, rows = counts["holdout"], counts["val_problems"]
    if not held:
        return "0"
    missing = held - rows
    return f"{held} ({rows} written to val.jsonl" + (
        f"; {missing} without a validation row: no corrupted version with a failing input, "
        "or not recorded)"
        if missing
        else ")"
    )


def write_card(out_dir: Path, card: dict[str, Any]) -> None:
    write_json_atomic(out_dir / "card.json", card)
    write_text(out_dir / "README.md", card_markdown(card))


def _table(rows: Iterable[tuple[str, Any]]) -> list[str]:
    out = ["| | |", "|---|---|"]
    out += [f"| {k} | {v} |" for k, v in rows]
    return out


def card_markdown(card: dict[str, Any]) -> str:
    """The dataset card as Markdown (the same facts as ``card.json``)."""
    sim = card.get("simulated")
    lines = ["# UTGen training data (utdebug)", ""]
    if sim:
        sim_wrote = names_simulated(card.get("model"))
        who = "utdebug's simulated model" if sim_wrote else "a scripted model"
        lines += [
            "> **SIMULATED.** The text of these examples (corrupted code, test hypotheses, "
            f"rationales) was written by {who}, not by a language model. "
            "The labels are real (the gold code's outputs, run in the sandbox), but the "
            "examples are for checking the pipeline, not for training a model.",
            "",
        ]
    if not card.get("complete", True):
        lines += [f"> **Incomplete**: {card.get('incomplete', 'the run was interrupted')}.", ""]
    lines += _source_lines(card["source"])
    lines += _decontamination_lines(card["decontamination"])
    lines += _pipeline_lines(card)
    lines += _count_lines(card["counts"])
    out = card["outputs"]
    lines += ["", "## Files", ""]
    lines += [f"- `{p}`" for p in out["sft_shards"] + out.get("parquet_shards", [])]
    if out.get("val_file"):
        lines.append(f"- `{out['val_file']}` (validation, MBPP+Fix format)")
    lines += [
        "- `samples.jsonl` (one record per problem), `decontamination.jsonl`",
        "- `trl-sft.yaml`, `trl-sft-qlora.yaml`: `trl sft --config trl-sft.yaml` "
        "(see docs/train.md of utdebug)",
        "",
    ]
    return "\n".join(lines)


def _source_lines(src: dict[str, Any]) -> list[str]:
    lines = [
        "## Source",
        "",
        f"`{src['name']}`: {src['rows']} rows read, {src['problems']} problems.",
        "",
    ]
    for f in src.get("files", []):
        lines.append(f"- `{f.get('name')}` sha256 `{f.get('sha256')}` ({f.get('rows')} rows)")
    for note in src.get("notes", []):
        lines.append(f"- note: {note}")
    if src.get("dropped"):
        lines += ["", "Rows dropped:", ""]
        lines += _table(sorted(src["dropped"].items(), key=lambda kv: -kv[1]))
    return lines


def _decontamination_lines(dec: dict[str, Any]) -> list[str]:
    lines = ["", "## Decontamination", ""]
    for split, info in dec["splits"].items():
        if info["status"] == "used":
            dropped = dec["by_split"].get(split, 0)
            lines.append(
                f"- `{split}` {info['name']}: {info['problems']} problems checked, "
                f"{dropped} training problems dropped"
            )
        else:
            lines.append(
                f"- `{split}` {info['name']}: **unavailable**, not checked ({info['reason']})"
            )
    for note in dec.get("notes", []):
        lines.append(f"- note: {note}")
    lines += [
        "",
        f"{dec['dropped']} problems dropped in all (by description: "
        f"{dec['by'].get('description', 0)}, by code: {dec['by'].get('code', 0)}); each is in "
        f"`{dec['file']}`.",
    ]
    return lines


def _pipeline_lines(card: dict[str, Any]) -> list[str]:
    st = card["settings"]
    rows = _table(
        [
            (
                "model",
                f"`{card['model']}`" + (" (SIMULATED)" if card.get("simulated") else "")
                if card.get("model")
                else "none: no stage uses a model",
            ),
            ("stage I (corrupted code)", card["stages"]["perturb"]),
            ("stage II (failing inputs)", card["stages"]["inputs"]),
            ("stage III (rationales)", card["stages"]["rationale"]),
            ("perturbation", st["perturb"]),
            ("corrupted versions per problem", st["corruptions"]),
            ("UT attempts per version", st["attempts"]),
            ("failing tests kept per version", st["tests_per_code"]),
            ("seed", st["seed"]),
            ("validation fraction", card["val_fraction"]),
            ("utdebug", card["utdebug_version"]),
            ("pipeline", card["pipeline_version"]),
        ]
    )
    return ["", "## Pipeline", "", *rows]


def _count_lines(c: dict[str, Any]) -> list[str]:
    lines = ["", "## Counts", ""]
    lines += _table(
        [
            ("problems after decontamination", c["problems"]),
            ("problems run (recorded)", c["recorded"]),
            ("held out for validation", held_out_text(c)),
            ("problems ended by a model error (rerun to retry)", c["model_errors"]),
            ("problem errors", c["problem_errors"]),
            ("SFT examples", c["examples"]),
        ]
    )
    for stage in ("problem", "perturb", "inputs", "rationales"):
        counts = c["stages"].get(stage, {})
        if counts:
            lines += ["", f"Stage `{stage}`:", ""]
            lines += _table(sorted(counts.items(), key=lambda kv: -kv[1]))
    return lines
