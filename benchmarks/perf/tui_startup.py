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

- **CANCEL**: from the cancel action (what ``x`` runs) to the session's end while the model is
  in a call that would take a minute (the call is cancelled, not waited for), in one
  interpreter, ``--runs`` times; ``TARGET cancel < 500 ms: PASS|MISS`` on the median.

Two more figures run the real command in a pseudo-terminal (120x40) and time it from the
command's start to the first screen on the terminal (the tests panel's first line):

- **DEMO**: ``utdebug demo`` (its sandbox starts behind the first screen);
- **DEBUG**: ``utdebug debug FILE::add --model stub`` with a litellm model whose server (a
  loopback stub, ``agents/loopback_server.py``) takes ``--probe-seconds`` (default 3) to answer the
  probe: the first screen comes before the probe returns (``before the probe: yes``).
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = b"no tests yet"
"""The tests panel's first line, on the first screen of both commands."""

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
from utdebug.tui.config import AppConfig
from utdebug.workspace import load_function

async def main():
    loaded = load_function(DEMO_DIR / DEMO_FILE, DEMO_FUNCTION)
    config = AppConfig(loaded=loaded, autostart=False)
    app = DebugApp(loaded.to_task(), ScriptedModel([]), None, config=config)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()

asyncio.run(main())
"""

CANCEL = """
import asyncio, time
from utdebug.debug_cmd import DEMO_DIR, DEMO_FILE, DEMO_FUNCTION
from utdebug.engine import Executor
from utdebug.sandbox import Sandbox
from utdebug.tui.app import DebugApp
from utdebug.tui.config import AppConfig
from utdebug.workspace import load_function

class Sleepy:
    name, simulated, supports_prefill = "sleepy", True, True
    def __init__(self):
        self.started = 0
    async def complete(self, request):
        self.started += 1
        await asyncio.sleep(60)

async def once(executor, loaded):
    model = Sleepy()
    app = DebugApp(loaded.to_task(), model, executor, config=AppConfig(loaded=loaded))
    async with app.run_test(size=(120, 40)) as pilot:
        while model.started == 0:
            await pilot.pause(0.01)
        t0 = time.perf_counter()
        app.action_cancel_session()
        while app.state.phase != "finished":
            await asyncio.sleep(0.001)
        return (time.perf_counter() - t0) * 1000

async def main(runs):
    loaded = load_function(DEMO_DIR / DEMO_FILE, DEMO_FUNCTION)
    with Sandbox() as sandbox:
        executor = Executor(sandbox, workers=2)
        print(" ".join([f"{await once(executor, loaded):.1f}" for _ in range(runs)]))
        executor.close()

asyncio.run(main(RUNS))
"""


def _once(code: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return (time.perf_counter() - t0) * 1000, out.stdout.strip()


def first_screen(argv: list[str], env: dict[str, str], seconds: float = 60.0) -> float:
    """Milliseconds from starting ``argv`` in a 120x40 pseudo-terminal to the first screen
    (``MARKER`` on the terminal); the app is then quit."""
    t0 = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:  # the child: a 120x40 terminal, then the command
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        os.execvpe(argv[0], argv, env)
    seen, shown = b"", None
    try:
        while time.perf_counter() - t0 < seconds:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen = (seen + chunk)[-65536:]
            if MARKER in seen:
                shown = (time.perf_counter() - t0) * 1000
                break
        os.write(fd, b"q")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with_select = select.select([fd], [], [], 0.1)[0]
            if with_select:
                try:
                    if not os.read(fd, 65536):
                        break
                except OSError:
                    break
            if os.waitpid(pid, os.WNOHANG)[0]:
                pid = 0
                break
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(fd)
    if shown is None:
        raise SystemExit(f"the first screen never came: {' '.join(argv)}")
    return shown


def real_commands(runs: int, probe_seconds: float) -> tuple[list[float], list[float]]:
    """First screens of ``utdebug demo`` and of ``utdebug debug`` behind a slow probe."""
    sys.path.insert(0, str(ROOT))
    from utdebug.agents.loopback_server import LLMServer

    env = {**os.environ, "TERM": "xterm-256color", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    demo, debug = [], []
    with (
        tempfile.TemporaryDirectory() as tmp,
        LLMServer(seconds_per_request=probe_seconds) as server,
    ):
        folder = Path(tmp)
        (folder / "calc.py").write_text('def add(a, b):\n    """The sum."""\n    return a - b\n')
        config = folder / "config.toml"
        config.write_text(
            f'[models.stub]\nmodel = "openai/stub-model"\napi_base = "{server.base}"\n'
            'api_key_env = "STUB_KEY"\n'
        )
        denv = {**env, "UTDEBUG_CONFIG": str(config), "STUB_KEY": "x"}
        for i in range(runs):
            argv = [sys.executable, "-m", "utdebug", "demo", "--dir", str(folder / f"d{i}")]
            demo.append(first_screen(argv, env))
            argv = [sys.executable, "-m", "utdebug", "debug", f"{folder / 'calc.py'}::add"]
            debug.append(first_screen([*argv, "--model", "stub", "--no-cache"], denv))
    return demo, debug


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument(
        "--probe-seconds", type=float, default=3.0, help="how long the stub server takes (3)"
    )
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
    cancels = [float(x) for x in _once(CANCEL.replace("RUNS", str(args.runs)))[1].split()]
    cancel = statistics.median(cancels)
    print(f"CANCEL median {cancel:.0f} ms, max {max(cancels):.0f} ms (a model call of a minute)")
    print(f"TARGET cancel < 500 ms: {'PASS' if cancel < 500 else 'MISS'}")
    demo, debug = real_commands(args.runs, args.probe_seconds)
    print(f"DEMO first screen median {statistics.median(demo):.0f} ms (utdebug demo, 120x40)")
    before = max(debug) < args.probe_seconds * 1000
    print(
        f"DEBUG first screen median {statistics.median(debug):.0f} ms (utdebug debug, litellm "
        f"model, probe answers after {args.probe_seconds:g} s; before the probe: "
        f"{'yes' if before else 'no'})"
    )
    verdict = "PASS" if statistics.median(demo) < 1000 else "MISS"
    print(f"TARGET demo first screen < 1000 ms: {verdict}")
    return 1 if leaked else 0


if __name__ == "__main__":
    sys.exit(main())
