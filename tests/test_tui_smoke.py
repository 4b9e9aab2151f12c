"""The real ``utdebug demo`` in a pseudo-terminal (tmux), at 80x24, 100x30, 120x40 and 160x48:
it starts, shows the first tests with every column, the whole call of a short test, the buggy
line of the code and a status line that is not cut, takes keys, steps through an edit that is
backtracked and one that is accepted (the fix's lines on screen, the Diff tab at its changed
lines), and quits. The mouse, as a terminal reports it (SGR mouse reports sent into the pane):
clicks on a row, a tab, a model call's line and footer keys, and the wheel.

Skipped when tmux is not installed (``scripts/setup.sh`` installs it when run as root) or when
the sandbox cannot start with every layer here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


SOCKET = f"utdebug-smoke-{os.getpid()}"
"""A tmux server of this test process's own (``-L``): other tmux sessions on the machine
(another test run's, a person's) cannot resize its windows or take its keys."""


def _tmux(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["tmux", "-L", SOCKET, "-f", "/dev/null", *args],
        capture_output=True,
        text=True,
        timeout=30,
    )


def _start(session: str, width: int, height: int, cmd: str) -> None:
    """Run ``cmd`` in a new tmux window of ``width`` x ``height``. The window gets its size
    first and the command starts after (``respawn-pane``), without COLUMNS and LINES in its
    environment: an app that read a size from them, or before a resize, would keep it."""
    w, h = str(width), str(height)
    started = _tmux("new-session", "-d", "-s", session, "-x", w, "-y", h, "sleep 600")
    assert started.returncode == 0, started.stderr
    _tmux("set-option", "-t", session, "window-size", "manual")
    _tmux("resize-window", "-t", session, "-x", w, "-y", h)
    size = _tmux("display", "-p", "-t", session, "#{window_width}x#{window_height}").stdout
    assert size.strip() == f"{w}x{h}", size
    # A shell's COLUMNS and LINES (bash sets them) would fix the app's size: the pty's counts.
    respawned = _tmux("respawn-pane", "-k", "-t", session, f"unset COLUMNS LINES; {cmd}")
    assert respawned.returncode == 0, respawned.stderr


def _screen(session: str) -> str:
    return _tmux("capture-pane", "-p", "-t", session).stdout


def _wait_for(session: str, text: str, seconds: float = 60.0) -> str:
    deadline = time.monotonic() + seconds
    screen = ""
    while time.monotonic() < deadline:
        if _tmux("has-session", "-t", session).returncode != 0:
            break
        screen = _screen(session)
        if text in screen:
            return screen
        time.sleep(0.2)
    raise AssertionError(f"{text!r} never appeared; last screen:\n{screen}")


SIZES = [(80, 24), (100, 30), (120, 40), (160, 48)]


def _check_screen(screen: str, width: int) -> None:
    """Every tests column with the whole call of a short test, a status line that is not cut."""
    lines = screen.splitlines()
    header = next(line for line in lines if " input " in line)
    for column in ("id", "input", "expected", "status", "votes", "origin"):
        assert column in header.split(), header
    status = next(line for line in lines if "SIMULATED" in line and "│" in line)
    assert "…" not in status.split("│")[0], status  # the state is whole
    assert len(status.rstrip()) <= width
    footer = lines[lines.index(status) + 1] if lines.index(status) + 1 < len(lines) else ""
    assert "? Help" in footer, footer  # the footer keeps ? at every width


@pytest.mark.parametrize(("width", "height"), SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_the_demo_runs_in_a_real_terminal(tmp_path: Path, width: int, height: int) -> None:
    session = f"utdebug-smoke-{uuid.uuid4().hex[:8]}"
    status = tmp_path / "status"
    env = "LITELLM_LOCAL_MODEL_COST_MAP=True LITELLM_OFFLINE_MODE=true TERM=xterm-256color"
    # Textual draws on stderr: nothing is redirected.
    cmd = (
        f"cd {tmp_path} && {env} {sys.executable} -m utdebug demo --dir {tmp_path / 'demo'} "
        f"--step; echo $? > {status}"
    )
    _start(session, width, height, cmd)
    try:
        try:
            screen = _wait_for(session, "paused after round 0")
        except AssertionError:
            if status.exists() and status.read_text().strip() == "3":
                pytest.skip("the sandbox cannot start with every layer here")
            raise
        assert "2/3 tests pass on the code in force" in screen
        # The whole call of a short test, the buggy line of the code and every column.
        assert "median([4, 1, 3, 2])" in screen and "SIMULATED" in screen
        assert "9     return s[n // 2]" in screen
        _check_screen(screen, width)
        _tmux("send-keys", "-t", session, "s")
        _wait_for(session, "backtracked")
        _tmux("send-keys", "-t", session, "s")
        screen = _wait_for(session, "paused after round 2")
        assert "accepted" in screen and "67% → 100%" in screen
        # The fix is on screen: every line it changed (the view scrolls to them at once).
        screen = _wait_for(session, "11     return (s[n // 2 - 1] + s[n // 2]) / 2", 5)
        for line in ("9     if n % 2:", "10         return s[n // 2]"):
            assert line in screen, screen
        _check_screen(screen, width)
        _tmux("send-keys", "-t", session, "2")  # the Diff tab shows the changed lines
        time.sleep(0.5)
        screen = _wait_for(session, "+    if n % 2:")
        assert "-    return s[n // 2]" in screen
        _tmux("send-keys", "-t", session, "q")
        deadline = time.monotonic() + 30
        while not status.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert status.read_text().strip() == "0"
        assert (tmp_path / "demo" / "median.py").exists()
    finally:
        _tmux("kill-session", "-t", session)
        if os.environ.get("UTDEBUG_KEEP_SMOKE"):
            print(_screen(session))


def test_a_killed_app_is_taken_back_with_what_a_person_did(tmp_path: Path) -> None:
    """kill -9 of the app mid-round, then the same command again: the tests, the person's
    correction, the rounds and the transcript are back (the session file is written as
    things happen)."""
    env = "LITELLM_LOCAL_MODEL_COST_MAP=True LITELLM_OFFLINE_MODE=true TERM=xterm-256color"
    demo = tmp_path / "demo"
    cmd = f"cd {tmp_path} && {env} {sys.executable} -m utdebug demo --dir {demo} --step"
    session = f"utdebug-smoke-{uuid.uuid4().hex[:8]}"
    _start(session, 120, 40, cmd + "; sleep 60")
    try:
        try:
            _wait_for(session, "paused after round 0")
        except AssertionError:
            if "sandbox" in _screen(session):
                pytest.skip("the sandbox cannot start here")
            raise
        _tmux("send-keys", "-t", session, "e")
        _wait_for(session, "Expected output of test")
        _tmux("send-keys", "-t", session, "99", "Enter")
        _wait_for(session, "pass now")
        _tmux("send-keys", "-t", session, "s")
        time.sleep(0.3)  # mid-round (or just after it): the process dies without a word
        shell = _tmux("display", "-p", "-t", session, "#{pane_pid}").stdout.strip()
        children = subprocess.run(
            ["pgrep", "-P", shell], capture_output=True, text=True, check=False
        ).stdout.split()
        assert children, "the app's process was not found"
        for pid in children:
            os.kill(int(pid), 9)
        saved = list((tmp_path / "runs" / "debug").glob("*.session.json"))
        assert len(saved) == 1, saved
        _tmux("kill-session", "-t", session)
        _start(session, 120, 40, cmd)
        _wait_for(session, "taken back")
        # Each panel is drawn on its own refresh: on a loaded machine a capture can come
        # between the status line's and the rounds panel's, so each is waited for.
        _wait_for(session, "given code")  # the rounds panel
        screen = _wait_for(session, "person")
        assert "99" in screen, screen  # the correction is there
        _tmux("send-keys", "-t", session, "6")
        _wait_for(session, "[round 1]")  # the transcript
        _tmux("send-keys", "-t", session, "s")
        _wait_for(session, "paused after round")  # and it goes on
    finally:
        _tmux("kill-session", "-t", session)


def _send_bytes(session: str, data: str) -> None:
    """Bytes into the pane as the terminal would send them (``send-keys -H``: no key names)."""
    done = _tmux("send-keys", "-t", session, "-H", *(f"{b:02x}" for b in data.encode()))
    assert done.returncode == 0, done.stderr


def _click(session: str, x: int, y: int) -> None:
    """A left click at column ``x``, row ``y`` (0-based) as SGR mouse reports (1-based):
    ``ESC [ < 0 ; x ; y M`` (press), then ``m`` (release)."""
    _send_bytes(session, f"\x1b[<0;{x + 1};{y + 1}M")
    _send_bytes(session, f"\x1b[<0;{x + 1};{y + 1}m")


def _wheel(session: str, x: int, y: int, *, up: bool, turns: int) -> None:
    """Mouse wheel reports (button 64: up, 65: down) at column ``x``, row ``y`` (0-based)."""
    for _ in range(turns):
        _send_bytes(session, f"\x1b[<{64 if up else 65};{x + 1};{y + 1}M")


def _find(screen: str, text: str) -> tuple[int, int]:
    """(column, row) of the first place ``text`` is on the screen (0-based)."""
    for row, line in enumerate(screen.splitlines()):
        col = line.find(text)
        if col >= 0:
            return col, row
    raise AssertionError(f"{text!r} is not on the screen:\n{screen}")


def _wait_until(
    session: str, holds: Callable[[str], bool], what: str, seconds: float = 60.0
) -> str:
    """The screen once ``holds(screen)`` (polled; a generous deadline for a loaded machine)."""
    deadline = time.monotonic() + seconds
    screen = ""
    while time.monotonic() < deadline:
        screen = _screen(session)
        if holds(screen):
            return screen
        time.sleep(0.2)
    raise AssertionError(f"never: {what}; last screen:\n{screen}")


def test_the_mouse_works_in_a_real_terminal(tmp_path: Path) -> None:
    """Real SGR mouse reports through tmux to the app (which turned mouse tracking on): a
    click on a row selects it, a click on a tab switches to it, a click on a model call's
    line opens it, the wheel scrolls, and a click on a footer key acts (Help, Step)."""
    session = f"utdebug-smoke-{uuid.uuid4().hex[:8]}"
    status = tmp_path / "status"
    env = "LITELLM_LOCAL_MODEL_COST_MAP=True LITELLM_OFFLINE_MODE=true TERM=xterm-256color"
    cmd = (
        f"cd {tmp_path} && {env} {sys.executable} -m utdebug demo --dir {tmp_path / 'demo'} "
        f"--step; echo $? > {status}"
    )
    _start(session, 120, 40, cmd)
    try:
        try:
            screen = _wait_for(session, "paused after round 0")
        except AssertionError:
            if status.exists() and status.read_text().strip() == "3":
                pytest.skip("the sandbox cannot start with every layer here")
            raise
        # A click on the third row selects it; a click on the selected row opens it: the
        # detail view that opens is that test's.
        x, y = _find(screen, "median([4, 1, 3, 2])")
        _click(session, x + 2, y)
        _click(session, x + 2, y)
        screen = _wait_for(session, "history")
        assert "proposal 3" in screen and "median([3, 1, 2])" not in screen, screen
        _tmux("send-keys", "-t", session, "Escape")
        screen = _wait_until(session, lambda s: "history" not in s, "the detail view closed")
        # A click on a tab switches to it.
        assert "session started" not in screen
        x, y = _find(screen, "Transcript")
        _click(session, x + 3, y)
        screen = _wait_for(session, "session started: median.py::median")
        # A click on a model call's line opens it on the reply; every call open, the
        # transcript is taller than its view.
        for n in (3, 2, 1):  # from the bottom up: the lines above stay where they are
            x, y = _find(screen, f"▸ [round 0] test proposal {n}:")
            _click(session, x + 4, y)
            screen = _wait_for(session, f"▾ [round 0] test proposal {n}:")
        # The wheel scrolls: down to the last line, up to the first.
        x, y = _find(screen, "▾ [round 0] test proposal 1:")
        assert "paused (paused after round 0)" not in screen, screen  # below the view
        _wheel(session, 40, y, up=False, turns=30)
        screen = _wait_for(session, "paused (paused after round 0)")
        assert "session started" not in screen
        _wheel(session, 40, y, up=True, turns=30)
        screen = _wait_for(session, "session started: median.py::median")
        assert "paused (paused after round 0)" not in screen
        # A click on a footer key acts: ? opens the help, s steps one round.
        footer = screen.splitlines()[-1]
        _click(session, footer.index("? Help"), len(screen.splitlines()) - 1)
        screen = _wait_for(session, "utdebug: keys")
        _tmux("send-keys", "-t", session, "Escape")
        screen = _wait_until(session, lambda s: "utdebug: keys" not in s, "the help closed")
        footer = screen.splitlines()[-1]
        _click(session, footer.index("s Step"), len(screen.splitlines()) - 1)
        _wait_for(session, "paused after round 1")
        _tmux("send-keys", "-t", session, "q")
        deadline = time.monotonic() + 30
        while not status.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert status.read_text().strip() == "0"
    finally:
        if os.environ.get("UTDEBUG_KEEP_SMOKE"):
            print(_screen(session))
        _tmux("kill-session", "-t", session)
