"""The HTTP wing: the server's ASGI application (Streamable HTTP and the 2024-11-05
HTTP+SSE transport) and the client transports for both.

``http_app(server)`` is the one ASGI application to serve; ``connect_http(url)`` opens a
client session, choosing Streamable HTTP or falling back to HTTP+SSE. The client side needs
the ``http`` extra (aiohttp) and is imported on first use, so that serving needs no client
library.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .._transports.http.server.app import UVICORN_OPTIONS, HttpApp, http_app
from .._transports.http.server.legacy_sse import LegacySSEApp
from .._transports.http.server.options import HttpOptions
from .._transports.http.server.streamable import StreamableHTTPApp

if TYPE_CHECKING:
    from .._transports.http.client.streamable import (
        LegacySSEClientTransport,
        StreamableHTTPClientTransport,
        connect_http,
        connect_sse,
        connect_streamable_http,
    )

_CLIENT_NAMES = frozenset(
    {
        "LegacySSEClientTransport",
        "StreamableHTTPClientTransport",
        "connect_http",
        "connect_sse",
        "connect_streamable_http",
    }
)

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


def __getattr__(name: str) -> Any:
    if name in _CLIENT_NAMES:
        return getattr(
            importlib.import_module(".._transports.http.client.streamable", __name__), name
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
