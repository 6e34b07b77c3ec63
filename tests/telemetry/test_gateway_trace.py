"""One trace from a client through a gateway (an app proxying two backends over
Streamable HTTP) to each backend: the front's server span is the parent of the
backend call's client span, whose context the backend's server span continues."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.trace import SpanKind
from support.http_servers import serving
from support.peers import run
from support.telemetry import (
    metric_reader,  # noqa: F401  (a fixture)
    points,
    spans,  # noqa: F401  (a fixture)
    telemetry,  # noqa: F401  (a fixture)
)

from mcpbind._client.client import Client
from mcpbind.app import App
from mcpbind.telemetry import Telemetry
from mcpbind_protocol import v2025_11_25


def backend(name: str, telemetry: Telemetry) -> App:
    app: App = App(name, telemetry=telemetry)

    @app.tool(name="hello")
    def hello() -> str:
        """Greet."""
        return f"hello from {name}"

    return app


def test_one_trace_from_the_client_through_the_gateway_to_two_backends(
    spans: Any, telemetry: Telemetry, metric_reader: InMemoryMetricReader
) -> None:
    with (
        serving(backend("one", telemetry).asgi()) as one,
        serving(backend("two", telemetry).asgi()) as two,
    ):
        front: App = App("front", telemetry=telemetry)
        front.proxy(f"http://127.0.0.1:{one.port}/mcp", prefix="one")
        front.proxy(f"http://127.0.0.1:{two.port}/mcp", prefix="two")
        client = Client(name="c", version="1", protocol_version="2025-11-25", telemetry=telemetry)

        async def main() -> None:
            async with front.test_client(client=client) as session:
                stub = v2025_11_25.ClientStub(session)
                for prefix in ("one", "two"):
                    result = await stub.call_tool(f"{prefix}_hello", arguments={})
                    assert result.content[0].text == f"hello from {prefix}"
                up = {
                    p.attributes["mcp.gateway.backend"]: p.value
                    for p in points(metric_reader, "mcp.gateway.backend.up")
                }
                assert up == {"one": 1, "two": 1}

        run(main())
    finished = spans.get_finished_spans()
    for prefix in ("one", "two"):
        sent = [
            s
            for s in finished
            if s.name == f"tools/call {prefix}_hello" and s.kind == SpanKind.CLIENT
        ]
        front_span = [
            s
            for s in finished
            if s.name == f"tools/call {prefix}_hello" and s.kind == SpanKind.SERVER
        ]
        to_backend = [
            s
            for s in finished
            if s.name == "tools/call hello"
            and s.kind == SpanKind.CLIENT
            and s.context.trace_id == sent[0].context.trace_id
        ]
        served = [
            s
            for s in finished
            if s.name == "tools/call hello"
            and s.kind == SpanKind.SERVER
            and s.context.trace_id == sent[0].context.trace_id
        ]
        assert len(sent) == len(front_span) == len(to_backend) == len(served) == 1
        assert front_span[0].parent.span_id == sent[0].context.span_id
        assert served[0].parent.span_id == to_backend[0].context.span_id
        ancestor = to_backend[0].parent.span_id
        by_id = {s.context.span_id: s for s in finished}
        while ancestor != front_span[0].context.span_id:
            ancestor = by_id[
                ancestor
            ].parent.span_id  # the front span is the backend call's ancestor
