"""The HTTP+SSE transport of protocol revision 2024-11-05, server side (ASGI).

A client opens ``GET /sse``; the first event, ``endpoint``, names the URL to
POST its messages to (``/messages?session_id=...``); every server message then
arrives as a ``message`` event on that stream. The session lasts as long as
the GET stream.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from .. import jsonrpc, ownership, wire
from ..asgi import Receive, Scope, Send
from ..auth.principal import Principal
from ..disconnect import ClientWatch, Gone, next_or_gone
from ..jsonrpc import RequestId
from ..limits import BodyBudget, BodyRefused
from ..server import Server, ServerSession
from .answers import body_refused, headers_of, plain, refuse, send_answer
from .options import DEFAULT_MAX_STREAM_BUFFER, HttpOptions, options_with
from .probe import method_calls, probed, requests_in
from .security import RebindingGuard

if TYPE_CHECKING:
    from ..auth.server.resource_server import ResourceServer

logger = logging.getLogger("mcp_runtime.http.legacy_sse")


class LegacySSETransport:
    """The Transport of one legacy SSE session.

    At most ``max_pending`` bytes may wait for the event stream: a client
    that keeps POSTing but does not read its stream would otherwise make the
    queue grow without end. Past it the session ends, with a logged error.
    """

    def __init__(
        self, max_pending: int = DEFAULT_MAX_STREAM_BUFFER, owner: str | None = None
    ) -> None:
        # Each message with the principal its POST was authenticated with.
        self.incoming: asyncio.Queue[tuple[bytes, Principal | None] | None] = asyncio.Queue()
        self.principal: Principal | None = None  # that of the message read last
        self.owner = owner  # the key of the principal that opened the stream: only it may post
        self.outgoing: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.max_pending = max_pending
        self.pending = 0  # bytes in outgoing
        self.closed = False
        self.session: ServerSession | None = None

    async def read(self) -> wire.Message | None:
        if self.closed:
            return None
        item = await self.incoming.get()
        if item is None:
            return None
        message, self.principal = item
        return wire.incoming(message)

    def write(self, sent: wire.Message) -> None:
        message = sent.data
        if self.closed:
            return
        if self.pending > self.max_pending:  # one message, however large, never trips it by itself
            logger.error(
                "ending a legacy SSE session: the client does not read its stream (%d bytes wait for it; "
                "max_stream_buffer is %d)",
                self.pending,
                self.max_pending,
            )
            while not self.outgoing.empty():
                self.outgoing.get_nowait()
            self.pending = 0
            self.closed = True
            self.incoming.put_nowait(None)
            self.outgoing.put_nowait(None)
            return
        self.outgoing.put_nowait(message)
        self.pending += len(message)

    def took(self, message: bytes) -> None:
        """The stream took ``message`` from outgoing to send it."""
        self.pending -= len(message)

    async def drain(self) -> None:
        return None

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.incoming.put_nowait(None)
            self.outgoing.put_nowait(None)

    def close_request_stream(self, request_id: RequestId) -> None:
        return None  # one stream for everything: nothing to close early


class LegacySSEApp:
    """An ASGI application serving ``server`` over the 2024-11-05 HTTP+SSE transport.

    Of its ``options`` (:class:`~mcp_runtime.http.HttpOptions`, shared with
    :class:`~mcp_runtime.http.StreamableHTTPApp`): ``max_concurrent_requests``
    bounds the requests of one session being handled at once (a POST that would
    pass it, a batch included, gets 429 and starts nothing); ``max_streams`` the
    sessions open at once, each one GET stream (503 past it);
    ``max_stream_buffer`` the bytes waiting for a session's stream;
    ``max_body_size``, ``body_timeout`` and ``max_bodies_buffered`` bound the POST
    bodies. ``auth``: as for StreamableHTTPApp, the stream and every POST need a
    bearer token it accepts, from the principal that opened the stream.
    Passing the limits as keywords still works, deprecated (``max_sessions`` then
    names ``max_streams``).
    """

    def __init__(
        self,
        server: Server,
        *,
        sse_path: str = "/sse",
        message_path: str = "/messages",
        allowed_hosts: Sequence[str] | None = None,
        allowed_origins: Sequence[str] | None = None,
        auth: ResourceServer | None = None,
        options: HttpOptions | None = None,
        **limits: Any,
    ) -> None:
        self.options = options = options_with(
            options, limits, "LegacySSEApp", max_sessions="max_streams"
        )
        self.server = server
        self.auth = auth
        self.bodies = BodyBudget(options.max_bodies_buffered, options.body_timeout)
        self.sse_path = sse_path
        self.message_path = message_path
        self.guard = RebindingGuard(allowed_hosts, allowed_origins)
        self.sessions: dict[str, LegacySSETransport] = {}

    @property
    def allowed_hosts(self) -> set[str] | None:
        return self.guard.allowed_hosts

    @property
    def allowed_origins(self) -> set[str] | None:
        return self.guard.allowed_origins

    def handles(self, path: str) -> bool:
        return path in (self.sse_path, self.message_path)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = headers_of(scope)
        if self.auth is not None and self.auth.serves_metadata(scope["path"]):
            await send_answer(send, self.auth.metadata_answer(scope["method"]))
            return
        if self.guard.refusal(headers) is not None:
            await plain(send, 403, "Forbidden: host or origin not allowed")
            return
        # Verified here with ``auth``, else by an authorization layer in front of the app, if any.
        principal = scope.get(ownership.PRINCIPAL_SCOPE_KEY)
        if self.auth is not None and self.handles(scope["path"]):
            outcome = await self.auth.authenticate(headers)
            if not isinstance(outcome, Principal):
                await send_answer(send, outcome)
                return
            principal = scope[ownership.PRINCIPAL_SCOPE_KEY] = outcome
        if scope["path"] == self.sse_path and scope["method"] == "GET":
            await self._stream(scope, receive, send, principal)
        elif scope["path"] == self.message_path and scope["method"] == "POST":
            await self._message(scope, receive, send, principal)
        elif self.handles(scope["path"]):
            await plain(send, 405, "Method Not Allowed")
        else:
            await plain(send, 404, "Not Found")

    async def _stream(
        self, scope: Scope, receive: Receive, send: Send, principal: Principal | None
    ) -> None:
        if len(self.sessions) >= self.options.max_streams:
            await plain(send, 503, "Service Unavailable: too many sessions")
            return
        session_id = secrets.token_hex(16)  # 128 bits from the OS CSPRNG
        transport = LegacySSETransport(
            self.options.max_stream_buffer, principal.key if principal is not None else None
        )
        session = ServerSession(self.server, transport)
        transport.session = session
        runner = asyncio.get_running_loop().create_task(session.run())
        self.sessions[session_id] = transport
        root = scope.get("root_path", "")
        watch = ClientWatch(receive)
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [
                        (b"content-type", b"text/event-stream"),
                        (b"cache-control", b"no-cache"),
                    ],
                }
            )
            endpoint = (
                f"event: endpoint\ndata: {root}{self.message_path}?session_id={session_id}\n\n"
            )
            await send({"type": "http.response.body", "body": endpoint.encode(), "more_body": True})
            while True:
                message = await next_or_gone(transport.outgoing, watch)
                if isinstance(message, Gone) or message is None:
                    break
                transport.took(message)
                chunk = b"event: message\ndata: " + message + b"\n\n"
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass
        finally:
            watch.close()
            self.sessions.pop(session_id, None)
            await session.close()
            runner.cancel()

    async def _message(
        self, scope: Scope, receive: Receive, send: Send, principal: Principal | None
    ) -> None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        session_id = (query.get("session_id") or [""])[0]
        transport = self.sessions.get(session_id)
        owner = principal.key if principal is not None else None
        if transport is None or transport.closed or transport.owner != owner:
            await plain(send, 404, "Not Found: unknown session")
            return
        try:
            body = await self.bodies.read(receive, self.options.max_body_size)
        except BodyRefused as refused:
            await body_refused(send, refused)
            return
        problem = jsonrpc.parse_error(body)
        if problem is not None:
            await refuse(send, 400, None, jsonrpc.PARSE_ERROR, problem)
            return
        if self.auth is not None and principal is not None:
            refusal = self.auth.authorize(principal, method_calls(body))
            if refusal is not None:
                await send_answer(send, refusal)
                return
        # Handlers still running, and messages not yet read (each may be a request).
        running = transport.incoming.qsize() + (
            transport.session.requests_running if transport.session is not None else 0
        )
        if running + requests_in(body) > self.options.max_concurrent_requests:
            await refuse(
                send,
                429,
                probed(body),
                jsonrpc.INVALID_REQUEST,
                "Too many requests in flight for this session",
            )
            return
        transport.incoming.put_nowait((body, principal))
        await plain(send, 202, "Accepted")
