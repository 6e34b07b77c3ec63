"""Round trips to the shared store counted, and those that failed: a real
redis-server behind an app served over Streamable HTTP, stopped midway."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from support.http_servers import serving
from support.peers import run
from support.redis_server import RedisServer
from support.telemetry import (
    metric_reader,  # noqa: F401  (a fixture)
    points,
    spans,  # noqa: F401  (a fixture)
    telemetry,  # noqa: F401  (a fixture)
)

from mcpbind._client.client import Client
from mcpbind._core.jsonrpc import McpError
from mcpbind._transports.http.client.streamable import connect_http
from mcpbind.app import App
from mcpbind.stores._redis_store import RedisStore
from mcpbind.telemetry import Telemetry
from mcpbind_protocol import v2025_11_25

pytestmark = pytest.mark.redis


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.close()


def total(reader: InMemoryMetricReader, name: str) -> int:
    return sum(p.value for p in points(reader, name))


def test_store_round_trips_and_failures_are_counted(
    redis: RedisServer, spans: Any, telemetry: Telemetry, metric_reader: InMemoryMetricReader
) -> None:
    app: App = App("shared", telemetry=telemetry, store=RedisStore.from_url(redis.url))

    @app.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    with serving(app.asgi()) as server:
        url = f"http://127.0.0.1:{server.port}/mcp"

        async def main() -> None:
            client = Client(name="c", version="1", protocol_version="2025-11-25")
            async with connect_http(client, url) as session:
                stub = v2025_11_25.ClientStub(session)
                await stub.call_tool("echo", arguments={"text": "hi"})
                assert total(metric_reader, "mcp.store.operations") > 0
                assert total(metric_reader, "mcp.store.failures") == 0
                redis.stop()
                try:  # served or refused: the session lives here, its stream's log in Redis
                    await stub.call_tool("echo", arguments={"text": "lost"})
                except McpError:
                    pass

        run(main())
    assert total(metric_reader, "mcp.store.failures") > 0
