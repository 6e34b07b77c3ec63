"""The HTTP+SSE transport of protocol revision 2024-11-05, server side (ASGI).

A client opens ``GET /sse``; the first event, ``endpoint``, names the URL to
POST its messages to (``/messages?session_id=...``); every server message then
arrives as a ``message`` event on that stream. The session lasts as long as
the GET stream. With a shared store a POST may land on any worker: it is handed
over to the worker holding the stream (:mod:`mcpbind._transports.http.server.legacy_handover`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from ...._core import jsonrpc, ownership, wire
from ...._core.jsonrpc import RequestId
from ...._core.limits import (
    BodyBudget,
    BodyRefused,
    ClientIdentity,
    ClientKey,
    TrustedProxies,
    peer_key,
)
from ...._server.server import Server, ServerSession
from ....auth._principal import Principal
from ....stores import Store, StoreUnavailable
from ..asgi import Receive, Scope, Send
from ..disconnect import ClientWatch, Gone, next_or_gone
from .answers import body_refused, headers_of, plain, refuse, send_answer
from .legacy_handover import BUSY, HANDOVER_WAIT, TAKEN, UNKNOWN, LegacyHandover
from .options import DEFAULT_MAX_STREAM_BUFFER, DEFAULT_OPTIONS, HttpOptions
from .places import Places, give_place, take_place
from .probe import method_calls, probed, requests_in
from .security import RebindingGuard

if TYPE_CHECKING:
    from ....auth.server._resource_server import ResourceServer

logger = logging.getLogger(__name__)


class LegacySSETransport:
    """The Transport of one legacy SSE session.

    At most ``max_pending`` bytes may wait for the event stream: a client
    that keeps POSTing but does not read its stream would otherwise make the
    queue grow without end. Past it the session ends, with a logged error.
    """

    def __init__(
        self,
        max_pending: int = DEFAULT_MAX_STREAM_BUFFER,
        owner: str | None = None,
        *,
        identity: ClientIdentity,
    ) -> None:
        """``identity``: the client that opened the stream, as the app counts it
        against ``max_streams_per_client``; its session's every request is that client's."""
        self.identity = identity
        # Each message with what its POST says of it (principal, headers).
        self.incoming: asyncio.Queue[wire.Message | None] = asyncio.Queue()
        self.owner = owner  # the key of the principal that opened the stream: only it may post
        self.outgoing: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.max_pending = max_pending
        self.pending = 0  # bytes in outgoing
        self.closed = False
        self.session: ServerSession | None = None

    async def read(self) -> wire.Message | None:
        if self.closed:
            return None
        return await self.incoming.get()

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

    Of its ``options`` (:class:`~mcpbind.http.HttpOptions`, shared with
    :class:`~mcpbind.http.StreamableHTTPApp`): ``max_concurrent_requests``
    bounds the requests of one session being handled at once (a POST that would
    pass it, a batch included, gets 429 and starts nothing); ``max_streams`` the
    sessions open at once, each one GET stream (503 past it);
    ``max_stream_buffer`` the bytes waiting for a session's stream;
    ``max_body_size``, ``body_timeout`` and ``max_bodies_buffered`` bound the POST
    bodies; ``max_streams_per_client`` the sessions of one client (429 past it),
    named by ``client_key`` as for StreamableHTTPApp (the principal, else the
    peer's address, or the one a proxy of ``trusted_proxies`` forwarded).
    ``auth``: as for StreamableHTTPApp, the stream and every POST need a
    bearer token it accepts, from the principal that opened the stream.
    ``store``: with a shared one (see docs/guides/scaling.md) any worker takes a
    session's POSTs, the sessions are counted app-wide (capped by ``max_sessions``)
    and the per-client quota is counted across workers.
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
        client_key: ClientKey = peer_key,
        store: Store | None = None,
        options: HttpOptions | None = None,
    ) -> None:
        self.options = options = DEFAULT_OPTIONS if options is None else options
        self.server = server
        self.auth = auth
        if client_key is peer_key and options.trusted_proxies:
            client_key = TrustedProxies(options.trusted_proxies).key
        self.client_key = client_key
        if store is not None:
            server.use_store(store)
        shared = server.store if server.store is not None and server.store.shared else None
        # The per-client quota of streams (http_app shares StreamableHTTPApp's:
        # a client's GET, listen and legacy streams count together).
        self.places = Places(options, client_key, shared)
        self.handover = (
            None if shared is None else LegacyHandover(shared, options.max_sessions, self._handed)
        )
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
            await self._message(scope, receive, send, principal, headers)
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
        client = self.client_key(scope)
        places = self.places
        refused, lease = await take_place(places.stream_quota, places.stream_leases, client)
        if refused is not None:
            await plain(send, refused[0], refused[1] or "Too many streams open for this client")
            return
        try:
            await self._session(scope, receive, send, principal, ClientIdentity(client))
        finally:
            give_place(places.stream_quota, places.stream_leases, client, lease)

    async def _session(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        principal: Principal | None,
        identity: ClientIdentity,
    ) -> None:
        session_id = secrets.token_hex(16)  # 128 bits from the OS CSPRNG
        if self.handover is not None:
            refusal = await self.handover.admit(session_id)
            if refusal is not None:
                await plain(send, 503, refusal)
                return
        try:
            async with self._reachable(session_id):
                await self._serve(session_id, scope, receive, send, principal, identity)
        except StoreUnavailable as error:
            await plain(send, 503, f"Service Unavailable: {error}")
        finally:
            if self.handover is not None:
                self.handover.release(session_id)

    @contextlib.asynccontextmanager
    async def _reachable(self, session_id: str) -> AsyncIterator[None]:
        """While held, the session's POSTs landing on other workers reach it here."""
        if self.handover is None:
            yield
        else:
            async with self.handover.hold(session_id):
                yield

    async def _serve(
        self,
        session_id: str,
        scope: Scope,
        receive: Receive,
        send: Send,
        principal: Principal | None,
        identity: ClientIdentity,
    ) -> None:
        transport = LegacySSETransport(
            self.options.max_stream_buffer,
            principal.key if principal is not None else None,
            identity=identity,
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
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        principal: Principal | None,
        headers: dict[str, str],
    ) -> None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        session_id = (query.get("session_id") or [""])[0]
        transport = self.sessions.get(session_id)
        owner = principal.key if principal is not None else None
        if (
            transport.closed or transport.owner != owner
            if transport is not None
            else self.handover is None  # else another worker may hold it
        ):
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
            # The scopes declared by method, and those of the item a request names
            # (a tool's own): known now, so that the token lacking them gets the
            # 403 with its challenge here, not a 202 and -32003 down the stream.
            refusal = self.auth.authorize(principal, method_calls(body), self.server.item_scopes)
            if refusal is not None:
                await send_answer(send, refusal)
                return
        if transport is not None:
            outcome: bytes | None = self._take(transport, body, principal, headers)
        else:
            assert self.handover is not None
            try:
                outcome = await self.handover.hand_over(session_id, body, principal, headers)
            except StoreUnavailable as error:
                await refuse(
                    send, 503, probed(body), jsonrpc.INTERNAL_ERROR, f"Service Unavailable: {error}"
                )
                return
        if outcome == TAKEN:
            await plain(send, 202, "Accepted")
        elif outcome == BUSY:
            await refuse(
                send,
                429,
                probed(body),
                jsonrpc.INVALID_REQUEST,
                "Too many requests in flight for this session",
            )
        elif outcome == UNKNOWN:
            await plain(send, 404, "Not Found: unknown session")
        else:
            await refuse(
                send,
                503,
                probed(body),
                jsonrpc.INTERNAL_ERROR,
                "Service Unavailable: the server worker holding this session's stream did not "
                f"take the message within {HANDOVER_WAIT:g} s (it may have stopped)",
            )

    def _take(
        self,
        transport: LegacySSETransport,
        body: bytes,
        principal: Principal | None,
        headers: Mapping[str, str] | None,
    ) -> bytes:
        """Feed a POST's message to a session held here, unless it has too many requests."""
        # Handlers still running, and messages not yet read (each may be a request).
        running = transport.incoming.qsize() + (
            transport.session.requests_running if transport.session is not None else 0
        )
        if running + requests_in(body) > self.options.max_concurrent_requests:
            return BUSY
        extra = wire.RequestExtra(principal, transport.identity, headers)
        transport.incoming.put_nowait(wire.incoming(body, extra=extra))
        return TAKEN

    def _handed(
        self,
        session_id: str,
        body: bytes,
        principal: Principal | None,
        owner: str | None,
        headers: Mapping[str, str] | None,
    ) -> bytes:
        """A message another worker handed over for a session held here."""
        transport = self.sessions.get(session_id)
        if transport is None or transport.closed or transport.owner != owner:
            return UNKNOWN
        return self._take(transport, body, principal, headers)

    async def close(self) -> None:
        """End the sessions held here and let go of their places (done at ASGI
        lifespan shutdown by :class:`~mcpbind.http.HttpApp`)."""
        for transport in list(self.sessions.values()):
            await transport.close()
        if self.handover is not None:
            await self.handover.close()
        await self.places.close()
