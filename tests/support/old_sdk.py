"""An older release of the official Python SDK as a peer, in a virtual environment
of its own: a client of an earlier revision that real deployments still run.

``old_sdk_python("1.20.0")`` is the python of a venv with ``mcp==1.20.0``,
installed from the package index with pip the first time and kept under the
repository's ``.tools/`` (gitignored) for later runs. A file lock makes
concurrent test processes build it once. Installing needs the network (CI has
it); a failed install fails the test, saying what pip said.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

from support.peers import REPO

TOOLS = REPO / ".tools"

# What each release needs besides itself: the newest pydantic of the index no longer
# has a private name 1.x releases import (pydantic._internal._typing_extra.eval_type_backport).
PINS = {"1.20.0": ["pydantic==2.11.10"]}


def old_sdk_python(version: str) -> Path:
    """The python of a venv holding the official SDK ``mcp==version``."""
    where = TOOLS / f"mcp-{version}"
    python = where / "bin" / "python"
    ready = where / "installed"
    TOOLS.mkdir(exist_ok=True)
    with (TOOLS / f"mcp-{version}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if ready.exists():
            return python
        _checked([sys.executable, "-m", "venv", "--clear", str(where)])
        _checked(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                f"mcp=={version}",
                *PINS.get(version, []),
            ]
        )
        ready.write_text(f"mcp=={version}\n")
    return python


def _checked(command: list[str]) -> None:
    # Without the variables of the venv these tests run in, pip installs into the new one.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
