"""Every process a benchmark starts is gone when it ends: the soak's uvicorn
workers (in sessions of their own), HAProxy and redis-server, whether the run
ends normally or is ended by SIGTERM in the middle (a timeout, ``kill``), also
when the run is a part of ``python -m bench``.

Each run is started with a variable of the test's own in its environment,
which every process it starts inherits; after the run, no live process may
carry it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.redis, pytest.mark.peers]


def carrying(mark: str) -> dict[int, str]:
    """Live processes whose environment holds ``mark``: pid -> command line."""
    needle = mark.encode()
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if state != "Z" and needle in environ.split(b"\0"):
            found[int(entry.name)] = command
    return found


def start(*args: str) -> tuple[subprocess.Popen[str], str]:
    mark = f"MCP_TEST_BENCH_RUN={uuid.uuid4().hex}"
    name, value = mark.split("=")
    process = subprocess.Popen(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        env={**os.environ, name: value},
        # Not pipes: a process the run left would hold them open.
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    return process, mark


def left_after(process: subprocess.Popen[str], mark: str, timeout: float = 300) -> dict[int, str]:
    """Wait for the run to end; what it left running (ended here, so that the test leaves nothing)."""
    process.wait(timeout)
    left = carrying(mark)
    for pid in left:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return left


def wait_for_worker(process: subprocess.Popen[str], mark: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not any("uvicorn" in command for command in carrying(mark).values()):
        assert process.poll() is None, f"the run ended first ({process.returncode})"
        assert time.monotonic() < deadline, "no uvicorn worker started"
        time.sleep(0.2)


def test_a_soak_run_leaves_no_process() -> None:
    process, mark = start(
        "bench.soak", "--requests", "40", "--in-flight", "8", "--workers", "1", "--chaos", ""
    )
    left = left_after(process, mark)
    assert process.returncode == 0
    assert left == {}


def test_a_soak_run_ended_by_sigterm_leaves_no_process() -> None:
    process, mark = start(
        "bench.soak", "--requests", "1000000", "--in-flight", "8", "--workers", "2"
    )
    wait_for_worker(process, mark)
    process.send_signal(signal.SIGTERM)
    assert left_after(process, mark) == {}
    assert process.returncode != 0


def test_the_scaleout_part_of_the_bench_ended_by_sigterm_leaves_no_process() -> None:
    """The bench asks its part to end and waits for it (it used to kill it,
    and the part's workers were left to PID 1)."""
    process, mark = start("bench", "--quick", "--parts", "scaleout")
    wait_for_worker(process, mark)
    process.send_signal(signal.SIGTERM)
    assert left_after(process, mark) == {}
    assert process.returncode != 0
