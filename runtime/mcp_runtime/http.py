"""One ASGI application for both HTTP transports of a server.

``http_app(server)`` serves Streamable HTTP at ``/mcp`` (requests of MCP
2026-07-28 each on its own, the older revisions in sessions) and, for clients
of revision 2024-11-05, the legacy HTTP+SSE transport at ``/sse`` and
``/messages``. Both check Host and Origin against DNS rebinding. With
``auth`` (a :class:`~mcp_runtime.auth.server.ResourceServer`) both need a
bearer token, and its metadata document is served at its well-known URLs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .server import Server
from .stores import Store
from .sse_legacy import LegacySSEApp
from .streamable_http import DEFAULT_MAX_BODY, DEFAULT_MAX_STREAM_BUFFER, Receive, Scope, Send, StreamableHTTPApp

if TYPE_CHECKING:
    from .auth.server.resource_server import ResourceServer


class HttpApp:
    """Routes by path to the Streamable HTTP app or the legacy SSE app."""

    def __init__(self, streamable: StreamableHTTPApp, legacy: LegacySSEApp | None) -> None:
        self.streamable = streamable
        self.legacy = legacy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.legacy is not None and self.legacy.handles(scope["path"]):
            await self.legacy(scope, receive, send)
        else:
            await self.streamable(scope, receive, send)


def http_app(
    server: Server,
    *,
    path: str = "/mcp",
    legacy_sse: bool = True,
    stateless: bool = False,
    json_response: bool = False,
    allowed_hosts: Sequence[str] | None = None,
    allowed_origins: Sequence[str] | None = None,
    max_body_size: int = DEFAULT_MAX_BODY,
    max_concurrent_requests: int = 1024,
    session_timeout: float | None = 30 * 60,
    retry_ms: int = 1000,
    max_stream_buffer: int = DEFAULT_MAX_STREAM_BUFFER,
    auth: ResourceServer | None = None,
    store: Store | None = None,
) -> HttpApp:
    """The ASGI application serving ``server`` over HTTP (see the module docstring).

    ``store``: share state between workers (``RedisStore.from_url(url)``; see
    docs/guides/scaling.md); by default everything stays in this process."""
    streamable = StreamableHTTPApp(
        server,
        path=path,
        stateless=stateless,
        json_response=json_response,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
        max_body_size=max_body_size,
        max_concurrent_requests=max_concurrent_requests,
        session_timeout=session_timeout,
        retry_ms=retry_ms,
        max_stream_buffer=max_stream_buffer,
        auth=auth,
        store=store,
    )
    legacy = None
    if legacy_sse and not stateless:
        legacy = LegacySSEApp(
            server,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
            max_body_size=max_body_size,
            max_stream_buffer=max_stream_buffer,
            auth=auth,
        )
    return HttpApp(streamable, legacy)
