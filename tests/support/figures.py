"""Figures the reliability, security and load tests record: inputs tried,
requests answered, durations and memory, for the README to quote.

Each test calls :func:`record` with its name and a dict of figures; they are
printed (``pytest -s`` shows them) and merged into
``build/reliability/figures.json`` under the test's name, so a re-run replaces
a test's figures rather than piling them up.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
FIGURES = REPO / "build" / "reliability" / "figures.json"


def record(test: str, figures: dict[str, Any]) -> dict[str, Any]:
    """Print ``figures`` and store them under ``test``; returns them."""
    entry = {**figures, "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    print(f"\nFIGURES {test}: {json.dumps(figures, sort_keys=True)}")
    FIGURES.parent.mkdir(parents=True, exist_ok=True)
    with open(FIGURES.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # test runs in parallel processes share the file
        try:
            existing: dict[str, Any] = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
        except (OSError, ValueError):
            existing = {}
        existing[test] = entry
        temporary = FIGURES.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(existing, indent=2, sort_keys=True) + "\n")
        temporary.replace(FIGURES)
    return entry


def rss_kib(pid: int | None = None) -> int:
    """Resident set size of a process (this one by default), in KiB, from /proc."""
    status = Path(f"/proc/{pid or 'self'}/status").read_text()
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def hwm_kib(pid: int | None = None) -> int:
    """Peak resident set size of a process, in KiB, from /proc."""
    status = Path(f"/proc/{pid or 'self'}/status").read_text()
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmHWM for process {pid}")
