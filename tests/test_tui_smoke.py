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
import uuid
from pathlib import Path

import pytest
from testkit import tmux as T
from testkit.wait import poll

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


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
    T.start(session, width, height, cmd)
    try:
        try:
            screen = T.wait_for(session, "paused after round 0")
        except AssertionError:
            if status.exists() and status.read_text().strip() == "3":
                pytest.skip("the sandbox cannot start with every layer here")
            raise
        assert "2/3 tests pass on the code in force" in screen
        # The whole call of a short test, the buggy line of the code and every column.
        assert "median([4, 1, 3, 2])" in screen and "SIMULATED" in screen
        assert "9     return s[n // 2]" in screen
        _check_screen(screen, width)
        T.tmux("send-keys", "-t", session, "s")
        T.wait_for(session, "backtracked")
        T.tmux("send-keys", "-t", session, "s")
        screen = T.wait_for(session, "paused after round 2")
        assert "accepted" in screen and "67% → 100%" in screen
        # The fix is on screen: every line it changed (the view scrolls to them at once).
        screen = T.wait_for(session, "11     return (s[n // 2 - 1] + s[n // 2]) / 2", 5)
        for line in ("9     if n % 2:", "10         return s[n // 2]"):
            assert line in screen, screen
        _check_screen(screen, width)
        T.tmux("send-keys", "-t", session, "2")  # the Diff tab shows the changed lines
        screen = T.wait_for(session, "+    if n % 2:")
        assert "-    return s[n // 2]" in screen
        T.tmux("send-keys", "-t", session, "q")
        assert T.wait_for_file(status).strip() == "0"
        assert (tmp_path / "demo" / "median.py").exists()
    finally:
        T.tmux("kill-session", "-t", session)
        if os.environ.get("UTDEBUG_KEEP_SMOKE"):
            print(T.screen(session))


def test_a_killed_app_is_taken_back_with_what_a_person_did(tmp_path: Path) -> None:
    """kill -9 of the app mid-round, then the same command again: the tests, the person's
    correction, the rounds and the transcript are back (the session file is written as
    things happen)."""
    env = "LITELLM_LOCAL_MODEL_COST_MAP=True LITELLM_OFFLINE_MODE=true TERM=xterm-256color"
    demo = tmp_path / "demo"
    cmd = f"cd {tmp_path} && {env} {sys.executable} -m utdebug demo --dir {demo} --step"
    session = f"utdebug-smoke-{uuid.uuid4().hex[:8]}"
    T.start(session, 120, 40, cmd + "; sleep 60")
    try:
        try:
            T.wait_for(session, "paused after round 0")
        except AssertionError:
            if "sandbox" in T.screen(session):
                pytest.skip("the sandbox cannot start here")
            raise
        T.tmux("send-keys", "-t", session, "e")
        T.wait_for(session, "Expected output of test")
        T.tmux("send-keys", "-t", session, "99", "Enter")
        T.wait_for(session, "pass now")
        T.tmux("send-keys", "-t", session, "s")
        # Mid-round (or just after it), once the session file holds round 1: the process dies
        # without a word.
        runs = tmp_path / "runs" / "debug"
        poll(
            lambda: any("[round 1]" in p.read_text() for p in runs.glob("*.session.json")),
            "round 1 in the session file",
        )
        shell = T.tmux("display", "-p", "-t", session, "#{pane_pid}").stdout.strip()
        children = subprocess.run(
            ["pgrep", "-P", shell], capture_output=True, text=True, check=False
        ).stdout.split()
        assert children, "the app's process was not found"
        for pid in children:
            os.kill(int(pid), 9)
        saved = list((tmp_path / "runs" / "debug").glob("*.session.json"))
        assert len(saved) == 1, saved
        T.tmux("kill-session", "-t", session)
        T.start(session, 120, 40, cmd)
        T.wait_for(session, "taken back")
        # Each panel is drawn on its own refresh: on a loaded machine a capture can come
        # between the status line's and the rounds panel's, so each is waited for.
        T.wait_for(session, "given code")  # the rounds panel
        screen = T.wait_for(session, "person")
        assert "99" in screen, screen  # the correction is there
        T.tmux("send-keys", "-t", session, "6")
        T.wait_for(session, "[round 1]")  # the transcript
        T.tmux("send-keys", "-t", session, "s")
        T.wait_for(session, "paused after round")  # and it goes on
    finally:
        T.tmux("kill-session", "-t", session)


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
    T.start(session, 120, 40, cmd)
    try:
        try:
            screen = T.wait_for(session, "paused after round 0")
        except AssertionError:
            if status.exists() and status.read_text().strip() == "3":
                pytest.skip("the sandbox cannot start with every layer here")
            raise
        # A click on the third row selects it; a click on the selected row opens it: the
        # detail view that opens is that test's.
        x, y = T.find(screen, "median([4, 1, 3, 2])")
        T.click(session, x + 2, y)
        T.click(session, x + 2, y)
        screen = T.wait_for(session, "history")
        assert "proposal 3" in screen and "median([3, 1, 2])" not in screen, screen
        T.tmux("send-keys", "-t", session, "Escape")
        screen = T.wait_until(session, lambda s: "history" not in s, "the detail view closed")
        # A click on a tab switches to it.
        assert "session started" not in screen
        x, y = T.find(screen, "Transcript")
        T.click(session, x + 3, y)
        screen = T.wait_for(session, "session started: median.py::median")
        # A click on a model call's line opens it on the reply; every call open, the
        # transcript is taller than its view.
        for n in (3, 2, 1):  # from the bottom up: the lines above stay where they are
            x, y = T.find(screen, f"▸ [round 0] test proposal {n}:")
            T.click(session, x + 4, y)
            screen = T.wait_for(session, f"▾ [round 0] test proposal {n}:")
        # The wheel scrolls: down to the last line, up to the first.
        x, y = T.find(screen, "▾ [round 0] test proposal 1:")
        assert "paused (paused after round 0)" not in screen, screen  # below the view
        T.wheel(session, 40, y, up=False, turns=30)
        screen = T.wait_for(session, "paused (paused after round 0)")
        assert "session started" not in screen
        T.wheel(session, 40, y, up=True, turns=30)
        screen = T.wait_for(session, "session started: median.py::median")
        assert "paused (paused after round 0)" not in screen
        # A click on a footer key acts: ? opens the help, s steps one round.
        footer = screen.splitlines()[-1]
        T.click(session, footer.index("? Help"), len(screen.splitlines()) - 1)
        screen = T.wait_for(session, "utdebug: keys")
        T.tmux("send-keys", "-t", session, "Escape")
        screen = T.wait_until(session, lambda s: "utdebug: keys" not in s, "the help closed")
        footer = screen.splitlines()[-1]
        T.click(session, footer.index("s Step"), len(screen.splitlines()) - 1)
        T.wait_for(session, "paused after round 1")
        T.tmux("send-keys", "-t", session, "q")
        assert T.wait_for_file(status).strip() == "0"
    finally:
        if os.environ.get("UTDEBUG_KEEP_SMOKE"):
            print(T.screen(session))
        T.tmux("kill-session", "-t", session)
