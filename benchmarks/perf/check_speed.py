"""Speed of ``utdebug check`` on a generated repository, with a scripted model (no network).

Run from the repository root::

    .venv/bin/python benchmarks/perf/check_speed.py                  # 100 modules, 20 changed
    .venv/bin/python benchmarks/perf/check_speed.py --modules 20 --changed 5   # a quick check

It builds a git repository of ``--modules`` package modules with ``--functions`` functions each
(plus a data file per module), commits it, edits ``--changed`` functions on a branch (every
other edit plants a bug), then times, each once:

- **DETECT**: finding the changed functions (``git diff`` + ``ast``);
- **SNAPSHOT**: the read-only copy of the working tree the sandbox reads;
- **COLD**: the whole check (sandbox start, 3 tests x 8 votes per function from a scripted
  model that answers instantly, so this is utdebug's own overhead);
- **CACHED**: the same check again, every function from the cache.

It prints ``TARGET cached run < 2000 ms: PASS|MISS`` and the findings count (half the changed
functions carry a bug, so it must be ``--changed // 2`` times 3). The comparison with the base
version (``--no-differential`` here) is measured by ``benchmarks/check_synth.py``. Model time
is not included: a real model adds its latency per call (``--changed`` x (3 + 3 x 8) calls,
cold).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_CACHED_MS = 2000.0


def build_repo(root: Path, modules: int, functions: int) -> Any:
    import git

    repo = git.Repo.init(root, initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "bench")
        cw.set_value("user", "email", "bench@example.com")
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "base.py").write_text("OFFSET = 0\n")
    for m in range(modules):
        lines = [f'"""Module {m}."""', "from .base import OFFSET", ""]
        for j in range(functions):
            lines += [
                "",
                f"def f_{m}_{j}(x):",
                f'    """Return x + {j}."""',
                f"    return x + {j} + OFFSET",
                "",
            ]
        (pkg / f"mod_{m}.py").write_text("\n".join(lines))
        (pkg / f"data_{m}.txt").write_text("x" * 2000)
    repo.git.add("-A")
    repo.index.commit("base")
    repo.git.checkout("-b", "feature")
    return repo


def change(root: Path, modules: int, functions: int, count: int) -> None:
    for i in range(count):
        m, j = i % modules, (i // modules) % functions
        p = root / "pkg" / f"mod_{m}.py"
        text = p.read_text()
        old = f"    return x + {j} + OFFSET"
        new = f"    return x + {j} + OFFSET  # edited" if i % 2 else f"    return x - {j} + OFFSET"
        if i % 2 == 0 and j == 0:
            new = "    return x + 1 + OFFSET"  # x - 0 would still be right
        p.write_text(text.replace(old, new, 1))


def model() -> Any:
    from utdebug.agents.scripted import ScriptedModel
    from utdebug.check.options import ModelInfo

    name_re = re.compile(r"`(f_\d+_\d+)` is part of the module")
    call_re = re.compile(r"```(f_(\d+)_(\d+)\((\d+)\))```")

    def reply(request: Any, i: int) -> str:
        text = "\n".join(m.content for m in request.messages) + (request.prefill or "")
        if request.purpose == "ut":
            match = name_re.search(text)
            assert match, "no function named in the prompt"
            call = f"{match.group(1)}({i + 1})"
            return (
                "## Hypothesis\nEdge values.\n\n## Unit Test\n\n### Input Arguments\n"
                f"Arguments: ```{call}```\n\n### Output\nOutput: ```0```\n"
            )
        calls = call_re.findall(text)
        _, _, j, x = calls[-1]
        return f"Tracing.\nOutput: ```{int(x) + int(j)}```"

    return ModelInfo(ScriptedModel(reply, name="bench script"), "bench script", "bench-v1", True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--modules", type=int, default=100)
    ap.add_argument("--functions", type=int, default=5)
    ap.add_argument("--changed", type=int, default=20)
    args = ap.parse_args(argv)
    from utdebug.check import gitrepo
    from utdebug.check.options import CheckOptions
    from utdebug.check.review import run_check
    from utdebug.sandbox import SandboxConfig, SandboxUnavailable

    with tempfile.TemporaryDirectory(prefix="utdebug-check-bench-") as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        t0 = time.perf_counter()
        build_repo(root, args.modules, args.functions)
        change(root, args.modules, args.functions, args.changed)
        print(
            f"REPO {args.modules} modules x {args.functions} functions, "
            f"{args.changed} changed ({(time.perf_counter() - t0):.1f} s to build)"
        )
        repo = gitrepo.open_repository(root)
        t0 = time.perf_counter()
        cs = gitrepo.changed_functions(repo, "main")
        detect = time.perf_counter() - t0
        print(
            f"DETECT {detect * 1000:.1f} ms  "
            f"({len(cs.functions)} functions in {len(cs.files)} files)"
        )
        t0 = time.perf_counter()
        snap = gitrepo.snapshot(repo, Path(tmp) / "snap")
        took = time.perf_counter() - t0
        files = sum(1 for p in snap.rglob("*") if p.is_file())
        gitrepo.remove_snapshot(snap)
        print(f"SNAPSHOT {took * 1000:.1f} ms  ({files} files)")
        opts = CheckOptions(
            changed=True,
            base="main",
            cwd=root,
            cache_dir=Path(tmp) / "cache",
            differential=False,  # the model's path only (the comparison: check_synth.py)
        )
        times = []
        for label in ("COLD", "CACHED"):
            t0 = time.perf_counter()
            try:
                report = run_check(opts, model(), SandboxConfig())
            except Exception as e:  # the sandbox: same exit status as the other perf scripts
                if isinstance(e.__cause__, SandboxUnavailable) or "sandbox" in str(e):
                    print(f"sandbox unavailable: {e}", file=sys.stderr)
                    return 3
                raise
            took = time.perf_counter() - t0
            times.append(took)
            n = len(report.functions)
            cached = sum(f.cached for f in report.functions)
            print(
                f"{label} {took * 1000:.0f} ms  ({n} functions, {took / max(n, 1) * 1000:.0f} ms "
                f"each, {cached} cached, {report.findings} findings)"
            )
        expected = (args.changed + 1) // 2 * 3
        print(
            f"FINDINGS {report.findings} (expected {expected}): "
            f"{'OK' if report.findings == expected else 'WRONG'}"
        )
        verdict = "PASS" if times[1] * 1000 < TARGET_CACHED_MS else "MISS"
        print(f"TARGET cached run < {TARGET_CACHED_MS:.0f} ms: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
