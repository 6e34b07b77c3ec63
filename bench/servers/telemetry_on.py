"""The telemetry the benchmark's servers run with when ``BENCH_TELEMETRY=on``
(bench/telemetry_bench.py): the OpenTelemetry SDK recording every span and
metric as a production setup does (spans batched to an exporter, metrics
aggregated for a reader), the exporter dropping what it is given so that the
figure is the runtime's and the SDK's cost, not a collector's."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

VARIABLE = "BENCH_TELEMETRY"


def telemetry() -> Any:
    """A Telemetry when ``BENCH_TELEMETRY=on``, else None (no OpenTelemetry imported)."""
    if os.environ.get(VARIABLE) != "on":
        return None
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    from mcpbind.telemetry import Telemetry

    class Dropping(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(Dropping()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    return Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider)
