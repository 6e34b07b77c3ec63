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
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

import msgspec

from .. import jsonrpc, ownership, wire
from ..auth.principal import Principal
from ..disconnect import ClientWatch, Gone, next_or_gone
from ..jsonrpc import RequestId
from ..limits import BodyBudget, BodyRefused
from ..server import Server, ServerSession
from .streamable import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_MAX_BODIES_BUFFERED,
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_STREAM_BUFFER,
    Receive,
    Scope,
    Send,
    _body_refused,
    _headers,
    _host_allowed,
    _json_error,
    _origin_allowed,
    _plain,
    _probe,
    _requests_in,
    send_answer,
)

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

    ``max_concurrent_requests`` bounds the requests of one session being
    handled at once (a POST that would pass it, a batch included, gets 429
    and starts nothing); ``max_sessions`` the sessions (GET streams) open at
    once (503 past it). ``body_timeout`` and ``max_bodies_buffered`` are
    as for :class:`~mcp_runtime.http.streamable.StreamableHTTPApp`.
    """

    def __init__(
        self,
        server: Server,
        *,
        sse_path: str = "/sse",
        message_path: str = "/messages",
        allowed_hosts: Sequence[str] | None = None,
        allowed_origins: Sequence[str] | None = None,
        max_body_size: int = DEFAULT_MAX_BODY,
        max_stream_buffer: int = DEFAULT_MAX_STREAM_BUFFER,
        auth: ResourceServer | None = None,
        max_concurrent_requests: int = 1024,
        max_sessions: int = 1024,
        body_timeout: float | None = DEFAULT_BODY_TIMEOUT,
        max_bodies_buffered: int = DEFAULT_MAX_BODIES_BUFFERED,
    ) -> None:
        """``auth``: as for StreamableHTTPApp, the stream and every POST need a
        bearer token it accepts, from the principal that opened the stream."""
        self.server = server
        self.auth = auth
        self.bodies = BodyBudget(max_bodies_buffered, body_timeout)
        self.max_concurrent_requests = max_concurrent_requests
        self.max_sessions = max_sessions
        self.sse_path = sse_path
        self.message_path = message_path
        self.allowed_hosts = None if allowed_hosts is None else {h.lower() for h in allowed_hosts}
        self.allowed_origins = (
            None if allowed_origins is None else {o.lower().rstrip("/") for o in allowed_origins}
        )
        self.max_body_size = max_body_size
        self.max_stream_buffer = max_stream_buffer
        self.sessions: dict[str, LegacySSETransport] = {}

    def handles(self, path: str) -> bool:
        return path in (self.sse_path, self.message_path)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = _headers(scope)
        if self.auth is not None and self.auth.serves_metadata(scope["path"]):
            await send_answer(send, self.auth.metadata_answer(scope["method"]))
            return
        host = headers.get("host", "")
        origin = headers.get("origin")
        if not _host_allowed(host, self.allowed_hosts) or (
            origin is not None and not _origin_allowed(origin, self.allowed_origins)
        ):
            await _plain(send, 403, "Forbidden: host or origin not allowed")
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
            await _plain(send, 405, "Method Not Allowed")
        else:
            await _plain(send, 404, "Not Found")

    async def _stream(
        self, scope: Scope, receive: Receive, send: Send, principal: Principal | None
    ) -> None:
        if len(self.sessions) >= self.max_sessions:
            await _plain(send, 503, "Service Unavailable: too many sessions")
            return
        session_id = secrets.token_hex(16)  # 128 bits from the OS CSPRNG
        transport = LegacySSETransport(
            self.max_stream_buffer, principal.key if principal is not None else None
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
            await _plain(send, 404, "Not Found: unknown session")
            return
        try:
            body = await self.bodies.read(receive, self.max_body_size)
        except BodyRefused as refused:
            await _body_refused(send, refused)
            return
        problem = jsonrpc.parse_error(body)
        if problem is not None:
            await _json_error(send, 400, None, jsonrpc.PARSE_ERROR, problem)
            return
        if self.auth is not None and principal is not None:
            refusal = self.auth.authorize(principal, _calls(body))
            if refusal is not None:
                await send_answer(send, refusal)
                return
        # Handlers still running, and messages not yet read (each may be a request).
        running = transport.incoming.qsize() + (
            len(transport.session._in_flight) if transport.session is not None else 0
        )
        if running + _requests_in(body) > self.max_concurrent_requests:
            await _json_error(
                send,
                429,
                None,
                jsonrpc.INVALID_REQUEST,
                "Too many requests in flight for this session",
            )
            return
        transport.incoming.put_nowait((body, principal))
        await _plain(send, 202, "Accepted")


def _calls(body: bytes) -> Iterator[tuple[str, msgspec.Raw | msgspec.UnsetType]]:
    """The (method, params) of the requests and notifications in a body (none
    if it is not JSON-RPC: the session answers that); decoded only if asked."""
    try:
        probe = _probe.decode(body)
    except (msgspec.MsgspecError, *jsonrpc.UNDECODABLE):
        return
    for item in probe if isinstance(probe, list) else [probe]:
        if isinstance(item.method, str):
            yield item.method, item.params
