"""Every process a benchmark starts is gone when it ends.

The soak's uvicorn workers run in sessions of their own (so that one can be
killed and restarted alone), out of reach of a signal sent to the bench's
process group: a bench killed by a timeout, or a part's process killed by its
parent, used to leave them running (parent 1). So each run marks its
environment with an id (``MCP_BENCH_RUN``) that every process it starts, and
every process those start, inherits; when the run that set the id ends, however
it ends (normally, on an error, on Ctrl-C or on SIGTERM), it ends every process
still carrying it (SIGTERM, then SIGKILL after a grace period). A part's
process is asked to end with SIGTERM rather than killed, so that it stops what
it started itself first.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

MARK = "MCP_BENCH_RUN"
WIDTH = 100  # columns of a terminal: what the bench prints fits in them
GRACE = 10.0  # seconds a process gets to end after SIGTERM


def _ended_by_sigterm(signum: int, frame: Any) -> None:
    # SIGTERM ends the run like Ctrl-C does: through its finally blocks.
    raise SystemExit(128 + signum)


def carrying(run_id: str) -> list[int]:
    """Pids of the live processes (not this one) whose environment has this run's id."""
    needle = f"{MARK}={run_id}".encode() + b"\0"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if state != "Z" and (environ.startswith(needle) or b"\0" + needle in environ):
            found.append(int(entry.name))
    return found


def end_all(run_id: str, grace: float = GRACE) -> list[int]:
    """End every process of the run: SIGTERM, then SIGKILL those left after ``grace``."""
    left = carrying(run_id)
    ended = list(left)
    for pid in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = carrying(run_id)
    for pid in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return ended


@contextlib.contextmanager
def owned() -> Iterator[str]:
    """The run of a bench's ``main``: SIGTERM raises SystemExit, and when the
    outermost run ends, every process it started (at any depth) is ended."""
    signal.signal(signal.SIGTERM, _ended_by_sigterm)
    run_id = os.environ.get(MARK)
    outermost = run_id is None
    if run_id is None:
        run_id = f"{os.getpid()}-{time.time_ns()}"
        os.environ[MARK] = run_id
    try:
        yield run_id
    finally:
        if outermost:
            left = end_all(run_id)
            if left:
                print(f"ended {len(left)} processes left running", file=sys.stderr, flush=True)


def fitted(line: str, width: int = WIDTH) -> list[str]:
    """``line`` in lines of at most ``width`` columns, the continuations
    indented under its own indentation (the whole line is in the results)."""
    if len(line) <= width:
        return [line]
    indent = " " * (len(line) - len(line.lstrip()) + 4)
    return textwrap.wrap(line, width, subsequent_indent=indent, break_on_hyphens=False)


def _relay(stream: Any) -> None:
    for line in stream:
        for part in fitted(line.rstrip("\n")):
            print(part, file=sys.stderr, flush=True)


def run_part(
    command: Sequence[str], timeout: float, **options: Any
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(command, stdout=PIPE, text=True, check=True)``, except
    that the part's stderr (its progress) is relayed in lines that fit a
    terminal, and on a timeout, an error or an interrupt the part is asked to
    end (SIGTERM) and given :data:`GRACE` seconds to stop what it started
    before it is killed."""
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **options
    ) as process:
        out: list[str] = []
        readers = [
            threading.Thread(target=_relay, args=(process.stderr,), daemon=True),
            threading.Thread(target=lambda: out.extend(process.stdout or ()), daemon=True),
        ]
        for reader in readers:
            reader.start()
        try:
            process.wait(timeout)
        except BaseException:
            process.terminate()
            try:
                process.wait(GRACE)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            raise
        finally:
            for reader in readers:
                reader.join(GRACE)
    stdout = "".join(out)
    if process.returncode != 0:
        raise subprocess.CalledProcessError(process.returncode, command, stdout)
    return subprocess.CompletedProcess(command, process.returncode, stdout)
