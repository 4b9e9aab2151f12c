"""The real app in a pseudo-terminal: a tmux server of the test process's own, a window of a
given size running a command, the screen as text, keys and mouse reports sent into the pane,
and waits on what the screen (or a file) shows, polled with a generous deadline."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from testkit.wait import poll

SOCKET = f"utdebug-smoke-{os.getpid()}"
"""A tmux server of this test process's own (``-L``): other tmux sessions on the machine
(another test run's, a person's) cannot resize its windows or take its keys."""

POLL = 0.2
"""Seconds between two looks at the screen."""


def tmux(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["tmux", "-L", SOCKET, "-f", "/dev/null", *args],
        capture_output=True,
        text=True,
        timeout=30,
    )


def start(session: str, width: int, height: int, cmd: str) -> None:
    """Run ``cmd`` in a new tmux window of ``width`` x ``height``. The window gets its size
    first and the command starts after (``respawn-pane``), without COLUMNS and LINES in its
    environment: an app that read a size from them, or before a resize, would keep it."""
    w, h = str(width), str(height)
    new = ("new-session", "-d", "-s", session, "-x", w, "-y", h, "sleep 600")
    started = tmux(*new)
    for _ in range(20):  # the server of a session just killed, the last one, is still exiting
        if started.returncode == 0 or "server exited unexpectedly" not in started.stderr:
            break
        poll(lambda: tmux("has-session").returncode != 0, "the last server gone", 30)
        started = tmux(*new)
    assert started.returncode == 0, started.stderr
    tmux("set-option", "-t", session, "window-size", "manual")
    tmux("resize-window", "-t", session, "-x", w, "-y", h)
    size = tmux("display", "-p", "-t", session, "#{window_width}x#{window_height}").stdout
    assert size.strip() == f"{w}x{h}", size
    # A shell's COLUMNS and LINES (bash sets them) would fix the app's size: the pty's counts.
    respawned = tmux("respawn-pane", "-k", "-t", session, f"unset COLUMNS LINES; {cmd}")
    assert respawned.returncode == 0, respawned.stderr


def screen(session: str) -> str:
    return tmux("capture-pane", "-p", "-t", session).stdout


def wait_until(session: str, holds: Callable[[str], bool], what: str, seconds: float = 60.0) -> str:
    """The screen once ``holds(screen)``; a session that ended, or the deadline (generous, for
    a loaded machine), fails with the last screen."""
    shown = ""

    def look() -> bool:
        nonlocal shown
        if tmux("has-session", "-t", session).returncode != 0:
            raise AssertionError(f"the session ended before: {what}; last screen:\n{shown}")
        shown = screen(session)
        return holds(shown)

    try:
        poll(look, what, seconds, every=POLL)
    except AssertionError as e:
        raise AssertionError(f"{e}; last screen:\n{shown}") from None
    return shown


def wait_for(session: str, text: str, seconds: float = 60.0) -> str:
    """The screen once it shows ``text``."""
    return wait_until(session, lambda s: text in s, f"{text!r} appeared", seconds)


def wait_for_file(path: Path, seconds: float = 30.0) -> str:
    """The text of ``path`` once a command wrote it (a status file written at its exit)."""
    poll(path.exists, f"{path} written", seconds, every=POLL)
    return path.read_text()


def send_bytes(session: str, data: str) -> None:
    """Bytes into the pane as the terminal would send them (``send-keys -H``: no key names)."""
    done = tmux("send-keys", "-t", session, "-H", *(f"{b:02x}" for b in data.encode()))
    assert done.returncode == 0, done.stderr


def click(session: str, x: int, y: int) -> None:
    """A left click at column ``x``, row ``y`` (0-based) as SGR mouse reports (1-based):
    ``ESC [ < 0 ; x ; y M`` (press), then ``m`` (release)."""
    send_bytes(session, f"\x1b[<0;{x + 1};{y + 1}M")
    send_bytes(session, f"\x1b[<0;{x + 1};{y + 1}m")


def wheel(session: str, x: int, y: int, *, up: bool, turns: int) -> None:
    """Mouse wheel reports (button 64: up, 65: down) at column ``x``, row ``y`` (0-based)."""
    for _ in range(turns):
        send_bytes(session, f"\x1b[<{64 if up else 65};{x + 1};{y + 1}M")


def find(shown: str, text: str) -> tuple[int, int]:
    """(column, row) of the first place ``text`` is on the screen (0-based)."""
    for row, line in enumerate(shown.splitlines()):
        col = line.find(text)
        if col >= 0:
            return col, row
    raise AssertionError(f"{text!r} is not on the screen:\n{shown}")
