"""The ``/metrics`` endpoint of the HTTP app, scraped by a real Prometheus
server and asked through its HTTP query API: the request rate, and a tool's
duration histogram by bucket."""

from __future__ import annotations

import time
from typing import Any

import pytest
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from support.http_servers import serving
from support.peers import run
from support.prometheus_server import PrometheusServer
from support.telemetry import (
    spans,  # noqa: F401  (a fixture)
)

from mcpbind._client.client import Client
from mcpbind._transports.http.client.streamable import connect_http
from mcpbind.app import App
from mcpbind.telemetry import Telemetry
from mcpbind_protocol import v2025_11_25

pytestmark = pytest.mark.peers


def test_prometheus_scrapes_the_request_rate_and_a_tools_duration_histogram(spans: Any) -> None:
    meters = MeterProvider(metric_readers=[PrometheusMetricReader()])
    app: App = App("scraped", telemetry=Telemetry(meter_provider=meters))

    @app.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    with serving(app.asgi(metrics_path="/metrics")) as server:
        url = f"http://127.0.0.1:{server.port}/mcp"

        async def calls(count: int) -> None:
            client = Client(name="c", version="1", protocol_version="2025-11-25")
            async with connect_http(client, url) as session:
                stub = v2025_11_25.ClientStub(session)
                for _ in range(count):
                    await stub.call_tool("echo", arguments={"text": "hi"})

        rate = 'sum(rate(mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call"}[30s]))'
        buckets = 'mcp_server_operation_duration_seconds_bucket{gen_ai_tool_name="echo"}'
        with PrometheusServer(f"127.0.0.1:{server.port}") as prometheus:
            deadline = time.monotonic() + 120
            while True:  # calls between scrapes until two scrapes saw them grow
                run(calls(5))
                found = prometheus.query(rate)
                if found and float(found[0]["value"][1]) > 0:
                    break
                assert time.monotonic() < deadline, "Prometheus saw no request rate"
                time.sleep(0.5)
            histogram = prometheus.query(buckets)
    bounds = {each["metric"]["le"] for each in histogram}
    assert {"0.01", "0.1", "1.0", "300.0", "+Inf"} <= bounds
    everything = next(each for each in histogram if each["metric"]["le"] == "+Inf")
    assert float(everything["value"][1]) >= 5
    assert everything["metric"]["mcp_method_name"] == "tools/call"
