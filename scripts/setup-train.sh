#!/usr/bin/env bash
# What the training test (tests/test_train_run.py, marker `train`) needs, in the .venv that
# scripts/setup.sh made: torch (the CPU build: a plain `torch` requirement would pull a
# multi-GB GPU build), TRL, PEFT and transformers at the versions utdebug's configurations are
# written for, with their dependencies. Never a dependency of utdebug itself.
#
# Installed once per machine: the packages the pins add to the .venv (or upgrade in it) go
# into a layer of their own, ~/.cache/utdebug/ci/<key>/ (UTDEBUG_CI_CACHE moves it), keyed by
# the pins, the interpreter and the .venv's packages before them; a .pth file puts the layer
# first on the .venv's path (as installing them into the .venv would, an upgraded package
# shadows the .venv's) and a wrapper per command (trl, ...) runs it with the .venv's
# interpreter. A later run with the same key, from any clone, only links the layer (seconds).
# Where pip cannot say what it would install, the packages are installed into the .venv as
# before (not cached).
# Usage: bash scripts/setup-train.sh   (after bash scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
    echo "setup-train: no .venv: run bash scripts/setup.sh first" >&2
    exit 1
fi
PINS=("torch==2.13.0" "trl==1.16.0" "peft==0.21.2" "transformers==5.24.0" "accelerate==1.15.0"
    "datasets==5.2.0")
# torch==2.13.0 is whatever pip finds first: here a CPU wheel in a local folder (pip's
# find-links); elsewhere PyPI's Linux wheel is the CUDA build (GBs). For the CPU build from
# PyTorch's own index: TORCH_INDEX=https://download.pytorch.org/whl/cpu bash scripts/setup-train.sh
extra=()
if [ -n "${TORCH_INDEX:-}" ]; then
    extra=(--extra-index-url "$TORCH_INDEX")
fi
PIP=(.venv/bin/python -m pip --disable-pip-version-check)
SITE="$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
PTH="$SITE/utdebug-ci-train.pth"
rm -f "$PTH"  # the key is of the .venv without a layer

ready() {
    echo "setup-train: ready (torch $(.venv/bin/python -c 'import torch; print(torch.__version__)'), $1)" >&2
}

base="$("${PIP[@]}" freeze --exclude-editable 2>/dev/null | LC_ALL=C sort)"
key="$(printf '%s\n' "${PINS[*]}" "${TORCH_INDEX:-}" "$(.venv/bin/python -VV)" "$base" \
    | sha256sum | cut -c1-16)"
CACHE="${UTDEBUG_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/utdebug/ci}"
LAYER="$CACHE/$key"

link() {  # put the layer on the .venv's path and its commands in .venv/bin
    printf 'import sys; sys.path.insert(0, %s)\n' "'$LAYER/site'" > "$PTH"
    if [ -d "$LAYER/site/bin" ]; then
        for cmd in "$LAYER/site/bin"/*; do
            [ -f "$cmd" ] || continue
            name="$(basename "$cmd")"
            printf '#!/bin/sh\nexec "$(dirname "$0")/python" "%s" "$@"\n' "$cmd" > ".venv/bin/$name"
            chmod +x ".venv/bin/$name"
        done
    fi
}

if [ -f "$LAYER/done" ]; then
    link
    ready "the layer cached in $LAYER"
    exit 0
fi

mkdir -p "$CACHE"
work="$(mktemp -d "$CACHE/.build-XXXXXX")"
trap 'rm -rf "$work"' EXIT
# What the pins add to this .venv, resolved against what it has.
if "${PIP[@]}" install -q ${extra[@]+"${extra[@]}"} --dry-run --report "$work/report.json" \
    "${PINS[@]}" >/dev/null 2>&1 \
    && .venv/bin/python -c 'import json, sys
for item in json.load(open(sys.argv[1], encoding="utf-8"))["install"]:
    print(item["metadata"]["name"] + "==" + item["metadata"]["version"])' \
        "$work/report.json" > "$work/add.txt"
then
    if [ -s "$work/add.txt" ]; then
        "${PIP[@]}" install -q ${extra[@]+"${extra[@]}"} --no-deps --target "$work/site" \
            -r "$work/add.txt"
    fi
    mkdir -p "$work/site"
    touch "$work/done"
    # One rename: a layer is whole or absent; where another run made it meanwhile, its own
    # stays and this one goes.
    mv -T "$work" "$LAYER" 2>/dev/null || true
    if [ -f "$LAYER/done" ]; then
        link
        ready "installed once into the layer $LAYER"
        exit 0
    fi
fi
echo "setup-train: no layer for these pins here; installing into .venv (not cached)" >&2
"${PIP[@]}" install -q ${extra[@]+"${extra[@]}"} "${PINS[@]}"
ready "installed into .venv"
