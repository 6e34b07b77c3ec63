"""OpenTelemetry traces and metrics by the semantic conventions for MCP.

Off by default: nothing here is imported by the runtime until a
:class:`Telemetry` is handed to a ``Server``, ``Client``, ``Host`` or ``App``
(``telemetry=Telemetry()``), and the ``otel`` extra (``opentelemetry-api``) is
only needed then. See docs/guides/observability.md."""

from __future__ import annotations

from ._core import Telemetry
from ._logs import TraceIdFilter

__all__ = ["Telemetry", "TraceIdFilter"]
