"""The HTTP wing: the server's ASGI application (Streamable HTTP and the 2024-11-05
HTTP+SSE transport) and the client transports for both.

``http_app(server)`` is the one ASGI application to serve; ``connect_http(url)`` opens a
client session, choosing Streamable HTTP or falling back to HTTP+SSE.
"""

from .app import UVICORN_OPTIONS, HttpApp, http_app
from .client import (
    LegacySSEClientTransport,
    StreamableHTTPClientTransport,
    connect_http,
    connect_sse,
    connect_streamable_http,
)
from .legacy_sse import LegacySSEApp
from .options import HttpOptions
from .streamable import StreamableHTTPApp

__all__ = [
    "UVICORN_OPTIONS",
    "HttpApp",
    "HttpOptions",
    "LegacySSEApp",
    "LegacySSEClientTransport",
    "StreamableHTTPApp",
    "StreamableHTTPClientTransport",
    "connect_http",
    "connect_sse",
    "connect_streamable_http",
    "http_app",
]
