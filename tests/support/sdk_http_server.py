"""An HTTP server built with the official Python SDK (mcp 2.3.0, MCPServer),
for the interop tests of our HTTP client.

``python sdk_http_server.py [streamable|json|stateless|sse] [port]`` binds
127.0.0.1 on ``port`` (default: an ephemeral one), prints ``PORT <n>`` on stdout once listening, and serves
Streamable HTTP at /mcp (resumable: an in-memory event store, retry 200 ms),
or the legacy HTTP+SSE transport at /sse and /messages/.
"""

from __future__ import annotations

import itertools
import socket
import sys
from typing import Any

import anyio
import mcp.types as types
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore

mcp = MCPServer("sdk-http-server", version="0.1.0", instructions="the SDK's HTTP server")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool()
async def long_task(steps: int = 3, ctx: Context = None) -> str:  # type: ignore[assignment]
    """Reports progress `steps` times and logs each step."""
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i}/{steps}")
        await ctx.info(f"finished step {i}")
        await anyio.sleep(0.01)
    return f"done {steps} steps"


@mcp.tool()
async def sleep(seconds: float = 60.0) -> str:
    """Wait, then answer: cancel it to stop early."""
    await anyio.sleep(seconds)
    return "awake"


@mcp.tool()
async def reconnect(pause: float = 0.3, ctx: Context = None) -> str:  # type: ignore[assignment]
    """Close this call's SSE stream mid-way; the client resumes it."""
    await ctx.report_progress(1, 3, "before the stream closes")
    await ctx.close_sse_stream()
    await ctx.report_progress(2, 3, "while the client is away")
    await anyio.sleep(pause)
    await ctx.report_progress(3, 3, "after the pause")
    return "resumed"


@mcp.resource("demo://static", name="static", mime_type="text/plain")
def static_resource() -> str:
    return "hello from static resource"


@mcp.resource("demo://greeting/{name}", name="greeting", mime_type="text/plain")
def greeting(name: str) -> str:
    return f"Hello, {name}!"


@mcp.prompt()
def review(code: str, language: str = "python") -> str:
    """Ask for a code review."""
    return f"Please review this {language} code:\n{code}"


async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
    return types.EmptyResult()


mcp._lowlevel_server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)


class MemoryEventStore(EventStore):
    """Every event, kept in memory: enough for resumption tests."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, Any]] = []  # (event id, stream id, message)
        self._ids = itertools.count(1)

    async def store_event(self, stream_id: str, message: Any) -> str:
        event_id = str(next(self._ids))
        self.events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(
        self, last_event_id: str, send_callback: EventCallback
    ) -> str | None:
        stream_id = next((s for e, s, _ in self.events if e == last_event_id), None)
        if stream_id is None:
            return None
        for event_id, stream, message in self.events:
            if stream == stream_id and int(event_id) > int(last_event_id) and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "streamable"
    if mode == "sse":
        app = mcp.sse_app()
    else:
        app = mcp.streamable_http_app(
            json_response=mode == "json",
            stateless_http=mode == "stateless",
            event_store=MemoryEventStore() if mode == "streamable" else None,
            retry_interval=200,
        )
    # proto IPPROTO_TCP, or asyncio leaves Nagle on for accepted connections (40 ms stalls)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", int(sys.argv[2]) if len(sys.argv) > 2 else 0))
    sock.listen(128)  # connections wait in the backlog until uvicorn accepts them
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1))
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
