#!/usr/bin/env bash
# Set up everything utdebug needs on a fresh Debian/Ubuntu machine (idempotent):
#   - bubblewrap, the sandbox's mount/pid-namespace layer (apt, when running as root);
#   - a virtual environment in .venv with utdebug installed (editable) and its dev tools.
# Usage: bash scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# git is what utdebug check reads repositories with (through gitpython).
if ! command -v git >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing git (utdebug check)" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq git >/dev/null
fi
# tmux is only for the test that drives the real app in a terminal (skipped without it).
if ! command -v tmux >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing tmux (terminal smoke test of the app)" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null || true
fi
if ! command -v bwrap >/dev/null 2>&1; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing bubblewrap (sandbox layer)" >&2
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null
    else
        echo "setup: bubblewrap not found; install it (e.g. 'sudo apt-get install bubblewrap')" >&2
        echo "       or run utdebug with --allow-weak-sandbox (see 'utdebug doctor')" >&2
    fi
fi

# Use the interpreter by absolute path (a pyenv shim costs ~330 ms per start).
PY="${PYTHON:-$(command -v python3.11 || command -v python3)}"
PY="$("$PY" -c 'import sys; print(sys.executable)')"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[dev]"
# TRL, PEFT and transformers without their dependencies (torch and the rest): never imported,
# only read as source by tests/test_train_trl.py, so that a field of `trl sft` that a release
# renames fails the tests of the training configurations utdebug writes (utdebug.train).
.venv/bin/python -m pip install -q --disable-pip-version-check --no-deps \
    trl==1.16.0 peft==0.21.2 transformers==5.24.0
echo "setup: ready (.venv/bin/utdebug)" >&2
