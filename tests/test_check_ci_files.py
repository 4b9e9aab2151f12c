"""The documented CI integrations are valid: the GitHub Actions workflow example and the
pre-commit hook definition parse, and the ``utdebug check`` command lines they run are
accepted by the real command-line parser (so the docs cannot drift from the options)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import yaml

from utdebug.check.targets import module_context
from utdebug.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent


def parse_check(command: str) -> Any:
    argv = shlex.split(command.replace("${{ github.base_ref }}", "main"))
    assert argv[:2] == ["utdebug", "check"], argv
    return build_parser().parse_args(argv[1:])


def test_the_workflow_example_runs_a_valid_check() -> None:
    wf = yaml.safe_load((ROOT / "docs" / "ci" / "github-workflow.yml").read_text())
    steps = wf["jobs"]["utdebug"]["steps"]
    assert wf[True] == {"pull_request": None}  # YAML 1.1 reads the key `on` as True
    assert steps[0]["uses"].startswith("actions/checkout@")
    assert steps[0]["with"]["fetch-depth"] == 0  # the merge base needs the history
    runs = [s["run"] for s in steps if "utdebug check" in s.get("run", "")]
    assert len(runs) == 1
    args = parse_check(runs[0].strip())
    assert args.changed and args.base == "origin/main" and args.format == "github"
    assert sorted(args.report) == ["junit=utdebug-junit.xml", "sarif=utdebug.sarif"]
    uploads = {s["with"].get("sarif_file") for s in steps if "upload-sarif" in s.get("uses", "")}
    assert uploads == {"utdebug.sarif"}
    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache@"))
    assert cache["with"]["path"] == "~/.cache/utdebug/check"


def test_the_pre_commit_hook_runs_a_valid_check() -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    (hook,) = hooks
    assert hook["id"] == "utdebug-check" and hook["pass_filenames"] is False
    assert hook["language"] == "system" and hook["types"] == ["python"]
    args = parse_check(hook["entry"])
    assert args.changed and args.base == "HEAD"
    doc = (ROOT / "docs" / "check.md").read_text()
    assert f"entry: {hook['entry']}" in doc


def test_the_cache_context_ignores_unrelated_functions() -> None:
    base = (
        "import math\nK = 2\n\ndef helper(x):\n    return x * K\n\n"
        "def f(x):\n    return helper(x)\n"
    )
    other = base + "\ndef unrelated():\n    return 1\n"
    assert module_context(base, "f") == module_context(other, "f")
    changed_helper = base.replace("x * K", "x + K")
    assert module_context(changed_helper, "f") != module_context(base, "f")
    changed_const = base.replace("K = 2", "K = 3")
    assert module_context(changed_const, "f") != module_context(base, "f")
    assert module_context(base + "# a comment\n", "f") == module_context(base, "f")
    # transitive: f -> helper -> deep
    deep = (
        "def deep():\n    return 1\n\ndef helper():\n    return deep()\n\n"
        "def f():\n    return helper()\n"
    )
    assert module_context(deep.replace("return 1", "return 2"), "f") != module_context(deep, "f")
