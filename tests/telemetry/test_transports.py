"""Spans across a real network transport: our client and an app served over
Streamable HTTP (a handshake session and 2026-07-28 requests) and over the
legacy HTTP+SSE transport, one trace from client span to server span."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from opentelemetry.trace import SpanKind
from support.http_servers import serving
from support.peers import run
from support.telemetry import (
    metric_reader,  # noqa: F401  (a fixture)
    spans,  # noqa: F401  (a fixture)
    telemetry,  # noqa: F401  (a fixture)
)

from mcpbind._client.client import Client, ClientSession
from mcpbind._core import lifecycle
from mcpbind._transports.http.client.streamable import connect_http, connect_sse
from mcpbind.app import App
from mcpbind.telemetry import Telemetry

CASES = [
    ("streamable", "2025-11-25", "/mcp"),
    ("streamable", "2026-07-28", "/mcp"),
    ("sse", "2024-11-05", "/sse"),
]


@pytest.mark.parametrize(("transport", "version", "path"), CASES)
def test_a_tool_call_is_one_trace_across_the_transport(
    transport: str, version: str, path: str, spans: Any, telemetry: Telemetry
) -> None:
    app: App = App("served", telemetry=telemetry)

    @app.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    connect: Callable[..., Any] = connect_http if transport == "streamable" else connect_sse
    with serving(app.asgi()) as server:
        url = f"http://127.0.0.1:{server.port}{path}"
        client = Client(name="c", version="1", protocol_version=version, telemetry=telemetry)

        async def main() -> None:
            opened: AsyncIterator[ClientSession] = connect(client, url)
            async with opened as session:
                stub = lifecycle.revision(version).package.ClientStub(session)
                result = await stub.call_tool("echo", arguments={"text": "hi"})
                assert result.content[0].text == "hi"

        run(main())
    finished = spans.get_finished_spans()
    sent = [s for s in finished if s.name == "tools/call echo" and s.kind == SpanKind.CLIENT]
    served = [s for s in finished if s.name == "tools/call echo" and s.kind == SpanKind.SERVER]
    assert len(sent) == 1 and len(served) == 1
    assert served[0].parent.span_id == sent[0].context.span_id
    assert sent[0].attributes["network.transport"] == "tcp"
    assert served[0].attributes["mcp.protocol.version"] == version
    if version != "2026-07-28":  # a session: its transport and id on both sides
        assert served[0].attributes["network.transport"] == "tcp"
    if transport == "streamable" and version != "2026-07-28":
        assert served[0].attributes["mcp.session.id"] == sent[0].attributes["mcp.session.id"]
