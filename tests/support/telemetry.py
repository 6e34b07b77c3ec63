"""Reading what the OpenTelemetry SDK's in-memory metric reader collected."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.metrics.export import InMemoryMetricReader


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
