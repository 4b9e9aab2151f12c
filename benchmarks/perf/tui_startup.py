"""Start-up time of the interactive app.

Run from the repository root::

    .venv/bin/python benchmarks/perf/tui_startup.py            # 5 runs of each, ~10 s
    .venv/bin/python benchmarks/perf/tui_startup.py --runs 2   # a quick check

Two figures, each the median of ``--runs`` fresh interpreters:

- **IMPORT**: ``import utdebug.tui.app`` (Textual, the engine, the workspace; litellm must not
  be loaded, and the script checks that it is not);
- **FIRST SCREEN**: from a fresh interpreter to the app's first full screen, headless
  (``App.run_test``, 120x40, the bundled demo task, session not started): interpreter start,
  imports, building and mounting every panel.

It prints both and ``TARGET first screen < 1000 ms: PASS|MISS``. The sandbox and the model are
not part of it (they start once the app is up, in workers).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

IMPORT = """
import time, sys
t0 = time.perf_counter()
import utdebug.tui.app
print(f"{(time.perf_counter() - t0) * 1000:.1f}", "litellm" in sys.modules)
"""

FIRST_SCREEN = """
import asyncio, time
from pathlib import Path
from utdebug.agents.scripted import ScriptedModel
from utdebug.debug_cmd import DEMO_DIR, DEMO_FILE, DEMO_FUNCTION
from utdebug.tui.app import DebugApp
from utdebug.workspace import load_function

async def main():
    loaded = load_function(DEMO_DIR / DEMO_FILE, DEMO_FUNCTION)
    app = DebugApp(loaded.to_task(), ScriptedModel([]), None, loaded=loaded, autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()

asyncio.run(main())
"""


def _once(code: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return (time.perf_counter() - t0) * 1000, out.stdout.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    imports, leaked = [], False
    for _ in range(args.runs):
        _, out = _once(IMPORT)
        ms, has_litellm = out.split()
        imports.append(float(ms))
        leaked |= has_litellm == "True"
    screens = [_once(FIRST_SCREEN)[0] for _ in range(args.runs)]
    first = statistics.median(screens)
    print(f"IMPORT utdebug.tui.app median {statistics.median(imports):.0f} ms (runs {args.runs})")
    print(f"FIRST SCREEN median {first:.0f} ms, min {min(screens):.0f} ms (fresh interpreter)")
    print(f"LITELLM loaded by the app: {'yes' if leaked else 'no'}")
    print(f"TARGET first screen < 1000 ms: {'PASS' if first < 1000 else 'MISS'}")
    return 1 if leaked else 0


if __name__ == "__main__":
    sys.exit(main())
