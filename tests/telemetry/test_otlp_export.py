"""Spans and metrics exported over OTLP/HTTP by the OpenTelemetry SDK to a
receiver on loopback, which decodes the protobuf with ``opentelemetry-proto``."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from support.peers import run

from mcpbind._client.client import Client
from mcpbind.app import App
from mcpbind.telemetry import Telemetry
from mcpbind_protocol import v2025_11_25


class Receiver(http.server.ThreadingHTTPServer):
    """An OTLP/HTTP endpoint keeping what it is sent, decoded."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.traces: list[ExportTraceServiceRequest] = []
        self.metrics: list[ExportMetricsServiceRequest] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:  # noqa: N802 (the http.server name)
        body = self.rfile.read(int(self.headers["content-length"]))
        assert self.headers["content-type"] == "application/x-protobuf"
        if self.path == "/v1/traces":
            self.server.traces.append(ExportTraceServiceRequest.FromString(body))
        elif self.path == "/v1/metrics":
            self.server.metrics.append(ExportMetricsServiceRequest.FromString(body))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_spans_and_metrics_reach_an_otlp_http_receiver(receiver: Receiver) -> None:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{receiver.url}/v1/traces"))
    )
    reader = PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=f"{receiver.url}/v1/metrics"), export_interval_millis=60_000
    )
    meter_provider = MeterProvider(metric_readers=[reader])
    telemetry = Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider)
    app: App = App("exported", telemetry=telemetry)

    @app.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    client = Client(name="c", version="1", protocol_version="2025-11-25", telemetry=telemetry)

    async def main() -> None:
        async with app.test_client(client=client) as session:
            await v2025_11_25.ClientStub(session).call_tool("echo", arguments={"text": "hi"})

    try:
        run(main())
        assert tracer_provider.force_flush(30_000)
        assert meter_provider.force_flush(30_000)
    finally:
        tracer_provider.shutdown()
        meter_provider.shutdown()
    spans = [
        span
        for request in receiver.traces
        for resource in request.resource_spans
        for scope in resource.scope_spans
        if scope.scope.name == "mcpbind"
        for span in scope.spans
    ]
    called = {(span.name, span.kind) for span in spans}
    assert ("tools/call echo", 2) in called  # SPAN_KIND_SERVER
    assert ("tools/call echo", 3) in called  # SPAN_KIND_CLIENT
    server = next(s for s in spans if s.name == "tools/call echo" and s.kind == 2)
    attributes = {a.key: a.value.string_value for a in server.attributes}
    assert attributes["gen_ai.tool.name"] == "echo"
    assert attributes["mcp.method.name"] == "tools/call"
    names = {
        metric.name
        for request in receiver.metrics
        for resource in request.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }
    assert {"mcp.server.operation.duration", "mcp.client.operation.duration"} <= names
