"""Log records that carry the trace and span ids of the span active when they were made."""

from __future__ import annotations

import logging
from typing import Any

from opentelemetry import trace

# Set on the records made while a span is active (the names OpenTelemetry's
# logging instrumentation uses), for formats such as ``%(otelTraceID)s``.
TRACE_ID = "otelTraceID"
SPAN_ID = "otelSpanID"


class TraceIdFilter(logging.Filter):
    """Gives every record passing the handler it is added to ``otelTraceID`` and
    ``otelSpanID`` (hex; empty strings with no span active), so a format may
    name them whatever made the record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, TRACE_ID):
            record.otelTraceID = record.otelSpanID = ""
        return True


_installed = False


def install_record_factory() -> None:
    """Make every log record created while a span is active carry its ids
    (once per process; the factory in place before is kept and called first).
    A record factory, not a filter: a filter on the ``mcpbind`` logger
    would not see its child loggers' records."""
    global _installed
    if _installed:
        return
    _installed = True
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        context = trace.get_current_span().get_span_context()
        if context.is_valid:
            setattr(record, TRACE_ID, format(context.trace_id, "032x"))
            setattr(record, SPAN_ID, format(context.span_id, "016x"))
        return record

    logging.setLogRecordFactory(factory)
