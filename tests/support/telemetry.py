"""The OpenTelemetry SDK's in-memory exporters behind the spans and metrics of a
test (fixtures for tests/telemetry, imported by its modules): one global tracer
provider per process (the official SDK's spans go to the global one), recording
only while a telemetry test runs; a meter provider per test. And reading what
the in-memory metric reader collected."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from mcpbind.telemetry import Telemetry


class Recorder(InMemorySpanExporter):
    """Keeps spans only while a test of this folder records (other tests of the
    process leave nothing behind)."""

    recording = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if not self.recording:
            return SpanExportResult.SUCCESS
        return super().export(spans)


def _global_recorder() -> Recorder:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    found = getattr(provider, "_mcp_test_recorder", None)
    if found is None:
        found = Recorder()
        provider.add_span_processor(SimpleSpanProcessor(found))
        provider._mcp_test_recorder = found  # type: ignore[attr-defined]
    return found  # type: ignore[no-any-return]


@pytest.fixture
def spans() -> Iterator[Recorder]:
    recorder = _global_recorder()
    recorder.clear()
    recorder.recording = True
    try:
        yield recorder
    finally:
        recorder.recording = False
        recorder.clear()


@pytest.fixture
def metric_reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
def telemetry(spans: Recorder, metric_reader: InMemoryMetricReader) -> Telemetry:
    return Telemetry(meter_provider=MeterProvider(metric_readers=[metric_reader]))


def points(reader: InMemoryMetricReader, name: str) -> list[Any]:
    """The data points of metric ``name`` collected now."""
    data = reader.get_metrics_data()
    found = []
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    found.extend(metric.data.data_points)
    return found
