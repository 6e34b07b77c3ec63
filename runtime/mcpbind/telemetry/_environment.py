"""Telemetry asked for by the environment, for servers started by others
(``mcpx serve``, ``App.run``): ``MCP_TELEMETRY=otlp`` exports spans and metrics
over OTLP/HTTP where the standard ``OTEL_EXPORTER_OTLP_*`` variables say
(``opentelemetry-sdk`` and ``opentelemetry-exporter-otlp-proto-http`` needed);
``otlp-sync`` exports each span as it ends, before the response it belongs to
is sent (what ``mcpx --trace`` asks of the servers it starts)."""

from __future__ import annotations

import os

from ._core import Telemetry

VARIABLE = "MCP_TELEMETRY"
MODES = ("otlp", "otlp-sync")


def from_environment(service: str | None = None) -> Telemetry | None:
    """The Telemetry ``MCP_TELEMETRY`` asks for, or None when it is unset;
    ``service`` names the process's spans unless ``OTEL_SERVICE_NAME`` does."""
    mode = os.environ.get(VARIABLE, "")
    if not mode:
        return None
    if mode not in MODES:
        raise ValueError(f"{VARIABLE}={mode!r}: expected one of {', '.join(MODES)}")
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    named = (
        {} if service is None or os.environ.get("OTEL_SERVICE_NAME") else {"service.name": service}
    )
    resource = Resource.create(named)
    tracer_provider = TracerProvider(resource=resource)
    exporter = OTLPSpanExporter()
    tracer_provider.add_span_processor(
        SimpleSpanProcessor(exporter) if mode == "otlp-sync" else BatchSpanProcessor(exporter)
    )
    meter_provider = (
        None
        if mode == "otlp-sync"
        else MeterProvider(
            resource=resource, metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter())]
        )
    )
    return Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider)
