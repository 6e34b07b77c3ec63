"""Trace context through ``params._meta`` with the official Python SDK (mcp 2.3.0),
both ways, over Streamable HTTP: a trace its client starts continues in our
server, and one our client starts continues in its server (whose
``OpenTelemetryMiddleware`` is on by default)."""

from __future__ import annotations

from typing import Any

import mcp as sdk
import pytest
from mcp.server.mcpserver import MCPServer
from opentelemetry.trace import SpanKind
from support.http_servers import serving
from support.peers import run
from support.telemetry import (
    metric_reader,  # noqa: F401  (a fixture)
    spans,  # noqa: F401  (a fixture)
    telemetry,  # noqa: F401  (a fixture)
)

from mcpbind._client.client import Client
from mcpbind._transports.http.client.streamable import connect_http
from mcpbind.app import App
from mcpbind.telemetry import Telemetry
from mcpbind_protocol import v2025_11_25

pytestmark = pytest.mark.peers


def spans_named(spans: Any, name: str, kind: SpanKind) -> list[Any]:
    return [s for s in spans.get_finished_spans() if s.name == name and s.kind == kind]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_trace_started_by_the_official_client_continues_in_our_server(
    mode: str, spans: Any, telemetry: Telemetry
) -> None:
    """ "The receiver extracts the context from `params._meta` and uses it as the
    remote parent": our server span of the SDK client's tools/call is a child of
    the SDK's client span, in its trace."""
    app: App = App("ours", telemetry=telemetry)

    @app.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    with serving(app.asgi()) as server:
        url = f"http://127.0.0.1:{server.port}/mcp"

        async def main() -> None:
            async with sdk.Client(url, mode=mode) as client:
                result = await client.call_tool("echo", {"text": "hi"})
                assert result.content[0].text == "hi"

        run(main())
    sent = spans_named(spans, "MCP send tools/call echo", SpanKind.CLIENT)
    served = spans_named(spans, "tools/call echo", SpanKind.SERVER)
    assert len(sent) == 1 and len(served) == 1
    assert served[0].context.trace_id == sent[0].context.trace_id
    assert served[0].parent.span_id == sent[0].context.span_id
    if mode == "legacy":  # a session (2026-07-28 requests are served one by one)
        assert served[0].attributes["network.transport"] == "tcp"
        assert served[0].attributes["mcp.session.id"]


def test_a_trace_started_by_our_client_continues_in_the_official_server(
    spans: Any, telemetry: Telemetry
) -> None:
    """Our client puts ``traceparent`` in ``params._meta`` where the SDK's server
    reads it: its server span is a child of ours."""
    theirs = MCPServer("theirs", version="1")

    @theirs.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    with serving(theirs.streamable_http_app()) as server:
        url = f"http://127.0.0.1:{server.port}/mcp"
        client = Client(name="c", version="1", protocol_version="2025-11-25", telemetry=telemetry)

        async def main() -> None:
            async with connect_http(client, url) as session:
                result = await v2025_11_25.ClientStub(session).call_tool(
                    "add", arguments={"a": 1, "b": 2}
                )
                assert result.content[0].text == "3"
                return session.transport.session_id

        session_id = run(main())
    ours = spans_named(spans, "tools/call add", SpanKind.CLIENT)
    served = spans_named(spans, "tools/call add", SpanKind.SERVER)
    assert len(ours) == 1 and len(served) == 1
    assert served[0].context.trace_id == ours[0].context.trace_id
    assert served[0].parent.span_id == ours[0].context.span_id
    assert ours[0].attributes["network.transport"] == "tcp"
    assert ours[0].attributes["mcp.session.id"] == session_id
