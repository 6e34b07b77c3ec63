"""One ASGI application for both HTTP transports of a server.

``http_app(server)`` serves Streamable HTTP at ``/mcp`` (requests of MCP
2026-07-28 each on its own, the older revisions in sessions) and, for clients
of revision 2024-11-05, the legacy HTTP+SSE transport at ``/sse`` and
``/messages``. Both check Host and Origin against DNS rebinding. With
``auth`` (a :class:`~mcpbind.auth.server.ResourceServer`) both need a
bearer token, and its metadata document is served at its well-known URLs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from ...._core.limits import ClientKey, peer_key
from ...._server.server import Server
from ....stores import Store
from ..asgi import Message, Receive, Scope, Send
from .legacy_sse import LegacySSEApp
from .options import DEFAULT_OPTIONS, HttpOptions
from .streamable import StreamableHTTPApp

if TYPE_CHECKING:
    from ....auth.server._resource_server import ResourceServer


class HttpApp:
    """Routes by path to the Streamable HTTP app or the legacy SSE app."""

    def __init__(self, streamable: StreamableHTTPApp, legacy: LegacySSEApp | None) -> None:
        self.streamable = streamable
        self.legacy = legacy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        legacy = self.legacy
        if legacy is None:
            await self.streamable(scope, receive, send)
        elif scope["type"] == "http" and legacy.handles(scope["path"]):
            await legacy(scope, receive, send)
        elif scope["type"] == "lifespan":

            async def legacy_first() -> Message:
                # The legacy sessions let go of their places before the
                # Streamable HTTP app closes the store they are kept in.
                message = await receive()
                if message["type"] == "lifespan.shutdown":
                    await legacy.close()
                return message

            await self.streamable(scope, legacy_first, send)
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
    auth: ResourceServer | None = None,
    client_key: ClientKey = peer_key,
    store: Store | None = None,
    options: HttpOptions | None = None,
) -> HttpApp:
    """The ASGI application serving ``server`` over HTTP (see the module
    docstring). ``options``: every limit and timeout, for both transports
    (:class:`~mcpbind.http.HttpOptions`; the legacy app takes
    ``max_streams`` as its session cap); the other settings are
    :class:`StreamableHTTPApp`'s.

    ``store``: share state between workers (``RedisStore.from_url(url)``; see
    docs/guides/scaling.md); by default everything stays in this process."""
    options = DEFAULT_OPTIONS if options is None else options
    streamable = StreamableHTTPApp(
        server,
        path=path,
        stateless=stateless,
        json_response=json_response,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
        auth=auth,
        client_key=client_key,
        store=store,
        options=options,
    )
    legacy = None
    if legacy_sse and not stateless:
        legacy = LegacySSEApp(
            server,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
            auth=auth,
            client_key=streamable.client_key,
            options=options,
        )
        legacy.bodies = streamable.bodies  # one budget of buffered bodies for the whole app
        legacy.places = streamable.places  # a client's streams of both transports count together
    return HttpApp(streamable, legacy)


UVICORN_OPTIONS: Final[Mapping[str, Any]] = MappingProxyType(
    {
        # Seconds an idle keep-alive connection (one sending no next request
        # line or headers) is kept.
        "timeout_keep_alive": 5,
        # Connections and requests at once; past it uvicorn answers 503
        # instead of taking more memory (GET and listen streams count).
        "limit_concurrency": 2048,
        # Bytes of a request head (request line and headers) h11 buffers
        # before refusing it.
        "h11_max_incomplete_event_size": 64 * 1024,
        # Open SSE streams would otherwise hold a stopping uvicorn until clients leave.
        "timeout_graceful_shutdown": 2,
    }
)
"""uvicorn settings that bound what slow or numerous clients cost; pass them
as ``uvicorn.run(app, host=..., **UVICORN_OPTIONS)`` (see
docs/guides/deployment-hardening.md)."""
