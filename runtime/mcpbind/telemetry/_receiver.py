"""An OTLP/HTTP trace receiver on loopback (``mcpx --trace``): the servers
mcpx starts export their spans to it (``MCP_TELEMETRY=otlp-sync``), decoded
with ``opentelemetry-proto``."""

from __future__ import annotations

import http.server
import threading
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ._tree import SpanRecord

_KINDS = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


def records(request: ExportTraceServiceRequest) -> list[SpanRecord]:
    """The spans of one OTLP export request."""
    found = []
    for resource in request.resource_spans:
        service = next(
            (a.value.string_value for a in resource.resource.attributes if a.key == "service.name"),
            "server",
        )
        for scope in resource.scope_spans:
            for span in scope.spans:
                error = next(
                    (a.value.string_value for a in span.attributes if a.key == "error.type"), None
                )
                found.append(
                    SpanRecord(
                        name=span.name,
                        kind=_KINDS.get(span.kind, "internal"),
                        trace_id=int.from_bytes(span.trace_id, "big"),
                        span_id=int.from_bytes(span.span_id, "big"),
                        parent_id=int.from_bytes(span.parent_span_id, "big") or None,
                        start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                        service=service,
                        error=error,
                    )
                )
    return found


class Receiver(http.server.ThreadingHTTPServer):
    """Keeps the spans POSTed to ``{url}`` (``/v1/traces``), from a thread of its own."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.spans: list[SpanRecord] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1/traces"

    def start(self) -> Receiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

    def received(self, body: bytes) -> None:
        found = records(ExportTraceServiceRequest.FromString(body))
        with self._lock:
            self.spans.extend(found)


class _Handler(http.server.BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:  # noqa: N802 (the http.server name)
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            self.server.received(body)
        except Exception:  # a body that is not an export request: refused, not fatal
            self.send_response(400)
        else:
            self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass
