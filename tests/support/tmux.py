"""A real terminal for command-line tests: a detached tmux session on a
private socket. tmux comes from Debian (``apt-get install -y tmux``), which
:func:`ensure_tmux` runs when tmux is missing and the tests run as root."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import pytest


def ensure_tmux() -> str:
    """The tmux executable, installed with apt-get first if missing (as root)."""
    found = shutil.which("tmux")
    if found is None and os.geteuid() == 0 and shutil.which("apt-get") is not None:
        quiet = {"check": True, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update"], env=env, **quiet)  # type: ignore[call-overload]
        subprocess.run(["apt-get", "install", "-y", "tmux"], env=env, **quiet)  # type: ignore[call-overload]
        found = shutil.which("tmux")
    if found is None:
        pytest.fail("tmux is missing; install it with `apt-get install -y tmux`", pytrace=False)
    return found


class Terminal:
    """One tmux window running a command."""

    def __init__(self, tmux: str, socket: str) -> None:
        self.tmux = tmux
        self.socket = socket

    def _run(self, *args: str) -> str:
        done = subprocess.run(
            [self.tmux, "-L", self.socket, *args], check=True, capture_output=True, text=True
        )
        return done.stdout

    def send(self, text: str) -> None:
        """Type ``text`` and Enter."""
        if text:
            self._run("send-keys", "-t", "main", "-l", text)
        self._run("send-keys", "-t", "main", "Enter")

    def screen(self) -> str:
        """What the window shows now."""
        return self._run("capture-pane", "-p", "-t", "main")

    def wait_for(self, check: Callable[[str], bool], timeout: float, what: str) -> str:
        """Poll the screen until ``check`` holds; the screen that passed."""
        deadline = time.monotonic() + timeout
        while True:
            shown = self.screen()
            if check(shown):
                return shown
            if time.monotonic() > deadline:
                raise AssertionError(f"the terminal never showed {what}; it shows:\n{shown}")
            time.sleep(0.1)


@contextmanager
def terminal(command: Sequence[str], width: int = 120, height: int = 30) -> Iterator[Terminal]:
    """``command`` in a fresh tmux server of its own; the server is killed on exit.
    The window stays open after the command ends (its exit status is shown)."""
    tmux = ensure_tmux()
    socket = f"mcp-codegen-test-{os.getpid()}-{time.monotonic_ns()}"
    shell = f"{shlex.join(command)}; echo EXIT=$?; sleep 600"
    subprocess.run(
        [
            tmux,
            "-L",
            socket,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "main",
            "-x",
            str(width),
            "-y",
            str(height),
            shell,
        ],
        check=True,
    )
    try:
        yield Terminal(tmux, socket)
    finally:
        subprocess.run([tmux, "-L", socket, "kill-server"], capture_output=True)
