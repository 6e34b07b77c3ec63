"""A ``/metrics`` endpoint in Prometheus' text format, in front of an ASGI app.

The metrics are the OpenTelemetry ones :class:`~mcpbind.telemetry.Telemetry`
records: a ``MeterProvider`` given OpenTelemetry's ``PrometheusMetricReader``
(package ``opentelemetry-exporter-prometheus``) makes them a collector of
``prometheus_client``'s registry, which this endpoint renders. One set of
instruments serves OTLP and Prometheus alike; a second instrumentation written
against ``prometheus_client`` would count everything twice."""

from __future__ import annotations

from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest

Scope = dict[str, Any]
Receive = Any
Send = Any


class MetricsEndpoint:
    """``app`` with ``GET {path}`` answered by the metrics of ``registry``."""

    def __init__(self, app: Any, path: str = "/metrics", registry: CollectorRegistry = REGISTRY):
        self.app = app
        self.path = path
        self.registry = registry

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        if scope["method"] not in ("GET", "HEAD"):
            await send(
                {"type": "http.response.start", "status": 405, "headers": [(b"allow", b"GET")]}
            )
            await send({"type": "http.response.body", "body": b""})
            return
        body = generate_latest(self.registry)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", CONTENT_TYPE_LATEST.encode()),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send(
            {"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body}
        )
