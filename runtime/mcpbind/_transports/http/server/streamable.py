"""The Streamable HTTP transport, server side, as an ASGI application.

One endpoint takes POST (client messages; the answer is JSON or an SSE stream
of the request's messages), GET (a standalone SSE stream for messages not tied
to a request, and resumption with ``Last-Event-ID``) and DELETE (end the
session). Sessions are named by an unguessable ``Mcp-Session-Id``; a stateless
mode serves each POST on its own for deployments behind a load balancer.

Every SSE stream starts with a priming event (an id and no data) and a
``retry`` hint, keeps its recent events, and can be resumed after a dropped
connection: the events after ``Last-Event-ID`` are replayed, then the stream
goes on live.

From MCP 2026-07-28 on (servers with handlers of that revision) a request
needs no session: it is served on its own, by a session made for it alone
(:mod:`mcpbind._transports.http.server.stateless`). GET and DELETE naming 2026-07-28 get
405. Clients of the older revisions are served with sessions as before, by
the same app (:mod:`mcpbind._transports.http.server.handshake`).

This module is the router: the checks every request passes (path, Host and
Origin, authorization, media types, the body and its JSON-RPC envelope), then
the path that answers it. Serve it with any ASGI server, e.g.
``uvicorn.run(StreamableHTTPApp(server), host="127.0.0.1", timeout_graceful_shutdown=2)``
(the timeout lets a stopping uvicorn end SSE streams that clients keep open).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec

from ...._core import jsonrpc, ownership
from ...._core.limits import BodyBudget, BodyRefused, ClientKey, TrustedProxies, peer_key
from ...._server.server import Server
from ....auth._principal import Principal
from ....stores import Store
from ..asgi import Message, Receive, Scope, Send
from ..disconnect import SlowAnswers
from .answers import body_refused, headers_of, plain, refuse, send_answer
from .deadlines import guard_uvicorn
from .events import EventStream
from .handshake import DEFAULT_HEADER_VERSION, HandshakePath
from .options import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_EVENT_RETENTION,
    DEFAULT_MAX_BODIES_BUFFERED,
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_REPLAY,
    DEFAULT_MAX_STREAM_BUFFER,
    DEFAULT_OPTIONS,
    HttpOptions,
)
from .places import Places
from .probe import probe_body
from .security import LOCAL_HOSTS, RebindingGuard
from .sessions import (
    REQUEST_CANCELLED,
    HttpSession,
    HttpSessionTransport,
    LocalSessions,
    SessionTable,
)
from .shared_sessions import SharedSessions
from .stateless import PerRequestPath, RequestTransport

if TYPE_CHECKING:  # the auth package needs joserfc, which serving without auth does not
    from ....auth.server._resource_server import ResourceServer


class StreamableHTTPApp:
    """An ASGI application serving ``server`` over Streamable HTTP at ``path``.

    * ``stateless``: no sessions; every POST is served on its own (no
      server-to-client requests, no GET stream), so any worker can take it.
    * ``json_response``: answer POSTs with one JSON body instead of SSE.
    * ``allowed_hosts`` / ``allowed_origins``: the Host and Origin values
      accepted (DNS-rebinding protection). Default: localhost names only,
      any port. Pass the public names when serving beyond loopback.
    * ``auth``: a :class:`~mcpbind.auth.server.ResourceServer`: every
      request needs a bearer token it accepts (the metadata document it
      serves needs none), handlers see the token's principal as
      ``ctx.principal``, and a session serves only the principal that
      opened it.
    * ``client_key``: names the client of a request for the per-client
      limits (default: its principal, else its peer address, or the address
      a proxy of ``options.trusted_proxies`` forwarded).
    * ``store``: where sessions, resumable events, tasks and change
      notifications live; a shared one (``RedisStore``) lets several
      workers and hosts serve one deployment (default: the server's
      store, else this process). See docs/guides/scaling.md.
    * ``options``: every limit and timeout (:class:`HttpOptions`).

    Requests of 2026-07-28 (see the module docstring) take no session; of
    the settings above, ``json_response`` and ``stateless``, and the session
    limits of the options, concern the older revisions only.
    """

    def __init__(
        self,
        server: Server,
        *,
        path: str = "/mcp",
        stateless: bool = False,
        json_response: bool = False,
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
        self.path = path.rstrip("/") or "/"
        self.stateless = stateless
        self.json_response = json_response
        self.guard = RebindingGuard(allowed_hosts, allowed_origins)
        if client_key is peer_key and options.trusted_proxies:
            client_key = TrustedProxies(options.trusted_proxies).key
        self.client_key = client_key
        self.bodies = BodyBudget(options.max_bodies_buffered, options.body_timeout)
        self._slow_answers = SlowAnswers()  # starts the client watches of answers still being made
        if store is not None:
            server.use_store(store)
        # With a shared store the per-client quotas are app-wide (leases in
        # the store); the caps protect this process and stay its own.
        shared = server.store if server.store is not None and server.store.shared else None
        self.places = Places(options, client_key, shared, sessions=not stateless)
        self.table: SessionTable = (
            SharedSessions(server, options, self.places, self._slow_answers, shared)
            if shared is not None and not stateless
            else LocalSessions(server, options, self.places, self._slow_answers)
        )
        self.handshake = HandshakePath(
            server,
            options,
            self.table,
            self._slow_answers,
            auth,
            client_key,
            stateless,
            json_response,
        )
        self.per_request = PerRequestPath(server, options, self.places, self._slow_answers, auth)

    @property
    def sessions(self) -> dict[str, HttpSession]:
        """This process's handshake sessions, by id."""
        return self.table.sessions

    @property
    def allowed_hosts(self) -> set[str] | None:
        return self.guard.allowed_hosts

    @property
    def allowed_origins(self) -> set[str] | None:
        return self.guard.allowed_origins

    @property
    def requests_in_flight(self) -> int:
        """How many 2026-07-28 requests are being answered (subscriptions/listen streams among them)."""
        return self.per_request.in_flight

    @property
    def streams_open(self) -> int:
        """Long-lived streams open (GET streams, subscriptions/listen)."""
        return self.places.streams

    def purge_events(self) -> int:
        """Forget the events kept for resumption past ``event_retention`` or
        the byte budgets (done in the background); the bytes still kept."""
        return self.table.purge_events()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        headers = headers_of(scope)
        if self.auth is not None and self.auth.serves_metadata(scope["path"]):
            await send_answer(send, self.auth.metadata_answer(scope["method"]))
            return
        if scope["path"].rstrip("/") != self.path.rstrip("/") and scope["path"] != self.path:
            await plain(send, 404, "Not Found")
            return
        refused = self.guard.refusal(headers)
        if refused is not None:
            await plain(send, 403, refused)
            return
        # Verified here with ``auth``, else by an authorization layer in front of the app, if any.
        principal = scope.get(ownership.PRINCIPAL_SCOPE_KEY)
        if self.auth is not None:
            outcome = await self.auth.authenticate(headers)
            if not isinstance(outcome, Principal):
                await send_answer(send, outcome)
                return
            principal = scope[ownership.PRINCIPAL_SCOPE_KEY] = outcome
        if not self.table.started:
            await self.table.start()
        method = scope["method"]
        if method == "POST":
            await self._post(scope, receive, send, headers, principal)
        elif method in ("GET", "DELETE") and self.per_request.named_by(headers):
            await plain(
                send,
                405,
                "Method Not Allowed: MCP 2026-07-28 has neither GET streams nor sessions",
                [(b"allow", b"POST")],
            )
        elif method == "GET":
            self._start_background()
            await self.handshake.get(receive, send, headers, principal, self.client_key(scope))
        elif method == "DELETE":
            self._start_background()
            await self.handshake.delete(send, headers, principal)
        else:
            await plain(send, 405, "Method Not Allowed", [(b"allow", b"GET, POST, DELETE")])

    async def _post(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: dict[str, str],
        principal: Principal | None,
    ) -> None:
        accept = headers.get("accept", "")
        takes_json = "application/json" in accept or "*/*" in accept
        takes_sse = "text/event-stream" in accept or "*/*" in accept
        if not takes_json or not (takes_sse or self.json_response):
            # Enough for any request; a 2026-07-28 one needs only either of them.
            if not self.per_request.named_by(headers):
                await plain(
                    send,
                    406,
                    "Not Acceptable: Accept must list application/json and text/event-stream",
                )
                return
            if not (takes_json or takes_sse):
                await plain(
                    send,
                    406,
                    "Not Acceptable: Accept must list application/json or text/event-stream",
                )
                return
        if not headers.get("content-type", "").lower().startswith("application/json"):
            await plain(send, 415, "Unsupported Media Type: Content-Type must be application/json")
            return
        try:
            body = await self.bodies.read(receive, self.options.max_body_size)
        except BodyRefused as refused:
            await body_refused(send, refused)
            return
        try:
            probe = probe_body(body)
        except msgspec.ValidationError:
            # The shape may fail on the first bytes of what is not even JSON.
            problem = jsonrpc.parse_error(body)
            if problem is not None:
                await refuse(send, 400, None, jsonrpc.PARSE_ERROR, problem)
            else:
                await refuse(
                    send,
                    400,
                    None,
                    jsonrpc.INVALID_REQUEST,
                    "Invalid request: not a JSON-RPC message",
                )
            return
        except jsonrpc.UNDECODABLE as error:  # invalid JSON, invalid UTF-8, nested too deeply
            await refuse(send, 400, None, jsonrpc.PARSE_ERROR, jsonrpc.parse_error_message(error))
            return
        if self.auth is not None and principal is not None:
            sent = probe if isinstance(probe, list) else [probe]
            # A generator: nothing is gathered unless scopes are declared by method, or
            # the served app names its items' (a tool's own scopes: known now, before
            # an SSE stream would start with a 200 and carry -32003).
            refusal = self.auth.authorize(
                principal,
                ((i.method, i.params) for i in sent if isinstance(i.method, str)),
                self.server.item_scopes,
            )
            if refusal is not None:
                await send_answer(send, refusal)
                return
        mirrored = self.per_request.fields(headers, probe, body)
        if mirrored is not None:
            assert not isinstance(probe, list)
            fields, version = mirrored
            await self.per_request.post(
                probe,
                fields,
                version,
                body,
                headers,
                send,
                receive,
                takes_json,
                takes_sse,
                principal,
                scope,
            )
            return
        self._start_background()
        await self.handshake.post(probe, body, scope, receive, send, headers, principal)

    def _start_background(self) -> None:
        """Reap idle handshake sessions and purge their old events (started by
        the first request of a handshake revision: a 2026-07-28 one makes neither)."""
        if not self.stateless:
            self.table.start_background()

    # -------------------------------------------------------------- lifetime

    async def close(self) -> None:
        """End every session (also done at ASGI lifespan shutdown); open
        subscriptions/listen streams first get their result."""
        self.table.stop_background()
        self.server.end_subscriptions()
        await self.per_request.close()
        await self.table.close_sessions()
        if self.auth is not None:
            await self.auth.aclose()
        await self.places.close()
        await self.table.close()

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message: Message = await receive()
            if message["type"] == "lifespan.startup":
                # Served by uvicorn without run_http: cut heads trickled past 10 s all the same.
                guard_uvicorn()
                await self.table.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.close()
                await send({"type": "lifespan.shutdown.complete"})
                return


__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_EVENT_RETENTION",
    "DEFAULT_HEADER_VERSION",
    "DEFAULT_MAX_BODIES_BUFFERED",
    "DEFAULT_MAX_BODY",
    "DEFAULT_MAX_REPLAY",
    "DEFAULT_MAX_STREAM_BUFFER",
    "LOCAL_HOSTS",
    "REQUEST_CANCELLED",
    "EventStream",
    "HttpOptions",
    "HttpSession",
    "HttpSessionTransport",
    "Receive",
    "RequestTransport",
    "Scope",
    "Send",
    "StreamableHTTPApp",
    "send_answer",
]
