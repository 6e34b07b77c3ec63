"""``mcpx --trace``: the spans of what mcpx did, printed as a tree with timings.

mcpx records its own spans (the routed call, the client request) with the
OpenTelemetry SDK, and receives over OTLP/HTTP on loopback those of the servers
it starts that export them: a server of this runtime started with
``MCP_TELEMETRY=otlp-sync`` (which mcpx sets for its children) sends each span
as it ends, so a gateway's and its backends' spans are in by the time the
answer is. The trace context travels in ``params._meta``."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ._output import Failed

if TYPE_CHECKING:
    from ..telemetry import Telemetry

SERVICE = "mcpx"


@contextlib.contextmanager
def tracing(print_line: Any) -> Iterator[Telemetry]:
    """A Telemetry recording mcpx's spans; on leaving, the tree of them and the
    servers' is handed to ``print_line`` line by line."""
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        from ..telemetry import Telemetry
        from ..telemetry._receiver import Receiver
        from ..telemetry._tree import SpanRecord, render
    except ImportError as error:
        raise Failed(
            f"--trace needs the OpenTelemetry SDK ({error.name} is missing): "
            "pip install 'mcpbind[trace]'"
        ) from None
    receiver = Receiver().start()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    told = {
        "MCP_TELEMETRY": "otlp-sync",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.url,
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
    }
    before = {key: os.environ.get(key) for key in told}
    os.environ.update(told)  # inherited by the stdio servers mcpx starts
    try:
        yield Telemetry(tracer_provider=provider, log_ids=False)
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        receiver.stop()
        local = [
            SpanRecord(
                name=span.name,
                kind=span.kind.name.lower(),
                trace_id=span.context.trace_id,
                span_id=span.context.span_id,
                parent_id=span.parent.span_id if span.parent is not None else None,
                start_ns=span.start_time or 0,
                end_ns=span.end_time or 0,
                service=SERVICE,
                error=_error_type(span.attributes),
            )
            for span in exporter.get_finished_spans()
        ]
        for line in render([*local, *receiver.spans]):
            print_line(line)


def _error_type(attributes: Any) -> str | None:
    value = (attributes or {}).get("error.type")
    return str(value) if value is not None else None
