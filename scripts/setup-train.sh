#!/usr/bin/env bash
# What the training test (tests/test_train_run.py, marker `train`) needs, in the .venv that
# scripts/setup.sh made: torch (the CPU build: a plain `torch` requirement would pull a
# multi-GB GPU build), TRL, PEFT and transformers at the versions utdebug's configurations are
# written for, with their dependencies. Never a dependency of utdebug itself.
# Usage: bash scripts/setup-train.sh   (after bash scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
    echo "setup-train: no .venv: run bash scripts/setup.sh first" >&2
    exit 1
fi
# torch==2.13.0 is whatever pip finds first: here a CPU wheel in a local folder (pip's
# find-links); elsewhere PyPI's Linux wheel is the CUDA build (GBs). For the CPU build from
# PyTorch's own index: TORCH_INDEX=https://download.pytorch.org/whl/cpu bash scripts/setup-train.sh
extra=()
if [ -n "${TORCH_INDEX:-}" ]; then
    extra=(--extra-index-url "$TORCH_INDEX")
fi
.venv/bin/python -m pip install -q --disable-pip-version-check ${extra[@]+"${extra[@]}"} \
    "torch==2.13.0" "trl==1.16.0" "peft==0.21.2" "transformers==5.24.0" \
    "accelerate==1.15.0" "datasets==5.2.0"
echo "setup-train: ready (torch $(.venv/bin/python -c 'import torch; print(torch.__version__)'))" >&2
