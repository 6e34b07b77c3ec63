"""SERVER spans of the notifications a server session answers itself
(``notifications/initialized``, ``notifications/cancelled``,
``notifications/progress``: they reach no route), as the routed notifications
get theirs: a client's raw messages over stdio pipes and over Streamable HTTP,
the spans recorded by the OpenTelemetry SDK's in-memory exporter."""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any

import httpx
from opentelemetry.trace import SpanKind
from support.http_servers import serving
from support.peers import run
from support.telemetry import (
    metric_reader,  # noqa: F401  (a fixture)
    spans,  # noqa: F401  (a fixture)
    telemetry,  # noqa: F401  (a fixture)
)

from mcpbind._transports.stdio import StreamTransport
from mcpbind.app import App
from mcpbind.telemetry import Telemetry

VERSION = "2025-11-25"
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
TRACEPARENT = f"00-{TRACE_ID}-b7ad6b7169203331-01"
OWN = ("notifications/initialized", "notifications/cancelled", "notifications/progress")
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": VERSION,
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
NOTIFICATIONS = [
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 99, "reason": "gone", "_meta": {"traceparent": TRACEPARENT}},
    },
    {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": "t", "progress": 1},
    },
]


def build(telemetry: Telemetry) -> App:
    app: App = App("traced", telemetry=telemetry)

    @app.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    return app


async def own_spans(spans: Any) -> dict[str, list[Any]]:
    """The SERVER spans of the three notifications, once each has ended (they
    are handled after the message is read: polled, generously)."""
    deadline = time.monotonic() + 30
    while True:
        found: dict[str, list[Any]] = {method: [] for method in OWN}
        for span in spans.get_finished_spans():
            if span.kind == SpanKind.SERVER and span.name in found:
                found[span.name].append(span)
        if all(found.values()) or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.05)


def check(found: dict[str, list[Any]], network: str) -> None:
    for method in OWN:
        assert len(found[method]) == 1, f"{method}: {len(found[method])} spans"
        attributes = found[method][0].attributes
        assert attributes["mcp.method.name"] == method
        assert attributes["mcp.protocol.version"] == VERSION
        assert attributes["network.transport"] == network
    # The trace context in params._meta is the span's remote parent.
    cancelled = found["notifications/cancelled"][0]
    assert cancelled.context.trace_id == int(TRACE_ID, 16)
    assert cancelled.parent is not None and cancelled.parent.is_remote


async def pipe_ends(
    read_fd: int, write_fd: int
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A reader and a writer over pipes, as a stdio process has them."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", buffering=0)
    )
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()),
        os.fdopen(write_fd, "wb", buffering=0),
    )
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


def test_a_clients_initialized_cancelled_and_progress_each_get_one_server_span_over_stdio(
    spans: Any, telemetry: Telemetry
) -> None:
    """Semantic conventions for MCP: "MCP server SHOULD create a span for each
    incoming request or notification" (span kind SERVER), named and attributed
    as the routed ones; "The receiver extracts the context from `params._meta`
    and uses it as the remote parent"."""
    app = build(telemetry)

    async def main() -> None:
        to_server, from_client = os.pipe()
        to_client, from_server = os.pipe()
        server_side = StreamTransport(*await pipe_ends(to_server, from_server))
        reader, writer = await pipe_ends(to_client, from_client)
        serving_task = asyncio.get_running_loop().create_task(app.server().serve(server_side))
        writer.write(json.dumps(INITIALIZE).encode() + b"\n")
        assert b'"result"' in await reader.readline()
        for notification in NOTIFICATIONS:
            writer.write(json.dumps(notification).encode() + b"\n")
        found = await own_spans(spans)
        writer.close()
        await asyncio.wait_for(serving_task, 30)
        check(found, "pipe")

    run(main())


def test_a_clients_initialized_cancelled_and_progress_each_get_one_server_span_over_http(
    spans: Any, telemetry: Telemetry
) -> None:
    """As over stdio: one SERVER span per notification the session answers
    itself, over a Streamable HTTP session."""
    app = build(telemetry)
    accept = {"accept": "application/json, text/event-stream"}

    async def main(url: str) -> None:
        async with httpx.AsyncClient(timeout=30) as client:
            opened = await client.post(url, json=INITIALIZE, headers=accept)
            assert opened.status_code == 200
            headers = {
                **accept,
                "mcp-session-id": opened.headers["mcp-session-id"],
                "mcp-protocol-version": VERSION,
            }
            for notification in NOTIFICATIONS:
                answer = await client.post(url, json=notification, headers=headers)
                assert answer.status_code == 202
            check(await own_spans(spans), "tcp")

    with serving(app.asgi()) as server:
        run(main(f"http://127.0.0.1:{server.port}/mcp"))
