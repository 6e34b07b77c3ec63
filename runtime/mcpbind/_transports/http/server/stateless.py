"""The 2026-07-28 per-request path: a request needs no session.

From MCP 2026-07-28 on (servers with handlers of that revision) a POST whose
``MCP-Protocol-Version`` or ``_meta`` names no handshake revision is served on its own,
by a session made for it alone (an ``Mcp-Session-Id`` it carries is ignored). Its
headers must mirror its body (``Mcp-Method``, ``Mcp-Name``, ``MCP-Protocol-Version`` and
the tool's ``Mcp-Param-*``; else 400 and HeaderMismatch). The answer is JSON when the
first thing the request produces is its response (with 404 for an unknown method and 400
for an invalid request), else an SSE stream of its notifications that ends with the
response (or, for ``subscriptions/listen``, when either side ends it). Closing that
stream cancels the request. These streams have no event ids and cannot be resumed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

import msgspec

from ...._core import jsonrpc, lifecycle, wire
from ...._core.jsonrpc import Envelope, RequestId
from ...._core.limits import SERVER, ClientIdentity
from ...._core.queues import OneReaderQueue
from ...._core.session import first_step
from ...._core.stepping import Pending, step
from ...._core.wire import RESPONSE, Message, RequestExtra
from ...._server.server import Server, ServerSession
from ....auth._principal import Principal
from .. import headers as http_headers
from ..asgi import Receive, Scope, Send
from ..disconnect import ClientWatch, SlowAnswers
from .answers import (
    SSE_HEADERS,
    plain,
    refuse,
    scope_refusal,
    send_answer,
    utf8_or_refused,
    whole_sse,
)
from .mirroring import ToolParams, header_problem, param_headers_problem
from .options import DEFAULT_MAX_STREAM_BUFFER, HttpOptions
from .places import Places

if TYPE_CHECKING:
    from ....auth.server._resource_server import ResourceServer

logger = logging.getLogger(__name__)

_INTERNAL_TIMEOUT = 10.0
_VERSION_KEY = lifecycle.VERSION_KEY.encode()
# The HTTP status of a 2026-07-28 answer that is an error, by JSON-RPC code.
_ERROR_STATUS = {
    jsonrpc.PARSE_ERROR: 400,
    jsonrpc.INVALID_REQUEST: 400,
    jsonrpc.METHOD_NOT_FOUND: 404,
    jsonrpc.INVALID_PARAMS: 400,
    jsonrpc.HEADER_MISMATCH: 400,
    jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    jsonrpc.UNSUPPORTED_PROTOCOL_VERSION: 400,
}


class _Outbox(OneReaderQueue[Message | None]):
    """What a 2026-07-28 request's session wrote, in order, for its POST to
    send (the response last), None for the end."""

    __slots__ = ()

    def pop(self) -> Message | None:
        """The first message queued, without waiting; None when none is (the
        end, if queued, stays for get())."""
        items = self._items
        return items.popleft() if items and items[0] is not None else None


class RequestTransport:
    """The Transport of a session made for one 2026-07-28 request: it reads
    that request, and queues what the session writes, the response last,
    for the POST to send. Nothing is written after the response, or once
    the client has gone (the transport is closed)."""

    def __init__(
        self,
        message: bytes,
        max_buffer: int = DEFAULT_MAX_STREAM_BUFFER,
        responses_only: bool = False,
        *,
        extra: RequestExtra,
    ) -> None:
        """``responses_only``: the client takes JSON alone, so the request's
        notifications have nowhere to go and are dropped, not queued.
        ``extra``: what the request's POST says of it (who it was
        authenticated as, its client: SERVER for the server's own, its headers)."""
        self._message: bytes | None = message
        self.extra = extra
        self.responses_only = responses_only
        self._ended: asyncio.Event | None = None  # made by read(): most requests are fed, not read
        self.outbox = _Outbox()
        self.max_buffer = max_buffer
        self.waiting = 0  # bytes queued, not yet taken by the POST
        self.overflowed = False
        self.answered = False
        self.closed = False
        self.owner: str | None = None  # no session, no lasting connection: see ownership.owner_of
        # Called at the first message queued that is not the response: the
        # POST answers with a stream, not with the response alone.
        self.streaming: Callable[[], None] | None = None

    async def read(self) -> wire.Message | None:
        message, self._message = self._message, None
        if message is not None:
            return wire.incoming(message, extra=self.extra)
        if not self.closed:
            self._ended = asyncio.Event()
            await self._ended.wait()
        return None

    def write(self, sent: wire.Message) -> None:
        response = sent.kind is RESPONSE
        if self.closed or self.answered or (self.responses_only and not response):
            return
        if self.waiting > self.max_buffer:  # one message, however large, never trips it by itself
            logger.error(
                "ending a response stream: the client does not keep up (%d bytes wait for it; max_stream_buffer is %d)",
                self.waiting,
                self.max_buffer,
            )
            self.overflowed = self.answered = True
            self.outbox.put_nowait(None)
            return
        self.answered = response
        self.waiting += len(sent.data)
        self.outbox.put_nowait(sent)
        if not response and self.streaming is not None:
            streaming, self.streaming = self.streaming, None
            streaming()

    def took(self, item: Message) -> None:
        self.waiting -= len(item.data)

    def client_gone(self) -> None:
        """Called by the POST's ClientWatch: a client that left wakes the POST
        waiting on the outbox (one queue to wait on, not a race of two tasks
        per message)."""
        self.outbox.put_nowait(None)

    async def drain(self) -> None:
        return None

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self._ended is not None:
                self._ended.set()
            if not self.answered:
                self.outbox.put_nowait(None)  # the POST waiting for an answer gets none

    def close_request_stream(self, request_id: RequestId) -> None:
        return None  # such a stream cannot be resumed: it stays open


class RequestPost:
    """The POST of one 2026-07-28 request, while it is answered.

    The request's session and transport are made when first needed
    (``summon``): a handler that answers within its first step, sending
    nothing before its response and never looking at ``ctx.peer``, needs
    neither, and making and closing them is a fifth of what such a request
    costs the app. Likewise the client watch (``watched``): a request that
    never waits has no client to lose meanwhile."""

    __slots__ = (
        "path", "body", "version", "extra", "send", "receive", "takes_json",
        "takes_sse", "session", "transport", "watch", "replying", "ended",
    )  # fmt: skip

    def __init__(
        self,
        path: PerRequestPath,
        body: bytes,
        version: str | None,
        extra: RequestExtra,
        send: Send,
        receive: Receive,
        takes_json: bool,
        takes_sse: bool,
    ) -> None:
        self.path = path
        self.body = body
        self.version = version  # the revision the request's _meta names, when this server speaks it
        self.extra = extra
        self.send = send
        self.receive = receive
        self.takes_json = takes_json
        self.takes_sse = takes_sse
        self.session: ServerSession | None = None
        self.transport: RequestTransport | None = None
        self.watch: ClientWatch | None = None
        self.replying: asyncio.Task[None] | None = None  # sends what comes before the response
        self.ended = False  # answered: what the handler left running gets a closed session

    def summon(self) -> ServerSession:
        """The request's session, made at the first call."""
        session = self.session
        if session is None:
            path = self.path
            transport = RequestTransport(
                self.body,
                path.options.max_stream_buffer,
                responses_only=not self.takes_sse,
                extra=self.extra,
            )
            session = ServerSession(path.server, transport, stateless=True, version=self.version)
            self.session, self.transport = session, transport
            if self.ended:
                transport.closed = True
                session.shut_down("Session closed")
            else:
                transport.streaming = self._stream
                path.sessions.add(session)
        return session

    def watched(self) -> ClientWatch:
        """The client watch, made at the first call (when the request first waits)."""
        watch = self.watch
        if watch is None:
            watch = self.watch = ClientWatch(self.receive, self.path.slow_answers)
            assert self.transport is not None, "a request waits with its session made"
            watch.add_callback(self.transport.client_gone)
        return watch

    @staticmethod
    def task() -> asyncio.Task[Any]:
        """The POST's task, which runs the handler, when called from it:
        looked up only for a handler that waits (a system call on CPython 3.11)."""
        task = asyncio.current_task()
        assert task is not None
        return task

    def _stream(self) -> None:
        # The request has more to send than its response: a task sends it as
        # it comes, while the handler runs on in the POST's.
        self.replying = asyncio.get_running_loop().create_task(self.path.reply(self))

    def end(self) -> None:
        """Stop watching and sending; the session, if made, is the caller's to close."""
        self.ended = True
        if self.transport is not None:
            self.transport.streaming = None  # it refers back to this
        if self.watch is not None:
            self.watch.close()
        if self.replying is not None:
            self.replying.cancel()
        if self.session is not None:
            self.path.sessions.discard(self.session)


class PerRequestPath:
    """How one app answers 2026-07-28 requests (see the module docstring)."""

    def __init__(
        self,
        server: Server,
        options: HttpOptions,
        places: Places,
        slow_answers: SlowAnswers,
        auth: ResourceServer | None,
    ) -> None:
        self.server = server
        self.options = options
        self.places = places
        self.slow_answers = slow_answers
        self.auth = auth
        # The sessions of the requests in flight that made one.
        self.sessions: set[ServerSession] = set()
        self.listening = 0  # subscriptions/listen streams open
        self.tool_params = ToolParams(server, options, self._ask)

    def named_by(self, headers: dict[str, str]) -> bool:
        """Whether the request names a 2026-07-28 revision this server speaks
        (an ``Mcp-Session-Id`` beside it is ignored, as that revision says)."""
        version = headers.get("mcp-protocol-version")
        return version is not None and version.strip(" \t") in self.server.stateless_versions

    def fields(
        self, headers: dict[str, str], probe: Envelope | list[Envelope], body: bytes
    ) -> tuple[http_headers.MirroredFields, Any] | None:
        """The header-mirrored fields of a 2026-07-28 request or notification,
        and the version its ``_meta`` names (decoded once: reading it decodes
        ``_meta``); None for what belongs to a session or to the older
        revisions' stateless mode.

        A request whose ``MCP-Protocol-Version`` names a revision without
        handshake, or whose ``_meta`` does, is one of that revision: an
        ``Mcp-Session-Id`` it carries is ignored (as 2026-07-28 says), and a
        header naming another revision than ``_meta`` is a HeaderMismatch."""
        if not self.server.stateless_versions or isinstance(probe, list):
            return None
        if not isinstance(probe.method, str):
            return None
        handshake = self.server.bindings.handshake_versions
        header = headers.get("mcp-protocol-version")
        if header is not None:
            header = header.strip(" \t")
            if header in self.server.stateless_versions:
                fields = http_headers.mirrored_fields(probe.params)
                return fields, fields.version
        if (header is not None and header in handshake) or "mcp-session-id" in headers:
            # One of a handshake revision or session, unless its _meta names a later
            # revision (and then its header mismatches). Such a _meta is rare here: the
            # params are not decoded on every POST of a session for it.
            if _VERSION_KEY not in body:
                return None
            fields = http_headers.mirrored_fields(probe.params)
            version = fields.version
            if not isinstance(version, str) or version in handshake:
                return None
            return fields, version
        fields = http_headers.mirrored_fields(probe.params)
        version = fields.version
        if header is None and (not isinstance(version, str) or version in handshake):
            # No header: a request of the older revisions (initialize among
            # them), unless its _meta says otherwise; an initialize that does
            # is refused as a method 2026-07-28 removed.
            return None
        return fields, version

    async def post(
        self,
        probe: Envelope,
        fields: http_headers.MirroredFields,
        version: Any,
        body: bytes,
        headers: dict[str, str],
        send: Send,
        receive: Receive,
        takes_json: bool,
        takes_sse: bool,
        principal: Principal | None,
        scope: Scope,
    ) -> None:
        request_id = probe.id
        method = probe.method
        assert isinstance(method, str)
        if isinstance(request_id, msgspec.UnsetType):
            if not await utf8_or_refused(body, send):
                return
            await plain(
                send, 202, ""
            )  # a notification: no client notification of 2026-07-28 needs a session
            return
        problem = header_problem(headers, method, fields, version)
        if problem is None and method == "tools/call" and isinstance(fields.name, str):
            params = self.tool_params.known(fields.name)
            if params is None:  # not known yet, or no longer fresh
                params = await self.tool_params.of(fields.name)
            if params:  # most tools mirror no argument
                problem = param_headers_problem(headers, fields, params)
        if problem is not None:
            await refuse(send, 400, probe, jsonrpc.HEADER_MISMATCH, f"Header mismatch: {problem}")
            return
        listen = method == "subscriptions/listen"
        places = self.places
        client = places.client_of(scope, listen)
        # Who sent it, as the per-client limits name clients: for the app's handlers too.
        identity = ClientIdentity(client or places.client_key(scope))
        if listen:
            refused, lease = await places.hold_listen(client)
        elif places.request_leases is None:
            refused, lease = places.hold_request_here(client), None
        else:
            refused, lease = await places.hold_request(client)
        if refused is not None:
            status, reason = refused
            code = jsonrpc.INTERNAL_ERROR if status == 503 else jsonrpc.INVALID_REQUEST
            await refuse(send, status, probe, code, reason)
            return
        server = self.server
        known = (
            version if isinstance(version, str) and version in server.stateless_versions else None
        )
        # 2026-07-28 streams cannot be resumed: no close_stream.
        extra = RequestExtra(principal, identity, headers)
        post = RequestPost(self, body, known, extra, send, receive, takes_json, takes_sse)
        if listen:
            self.listening += 1
        try:
            # The one message goes straight to the handler (no reader task),
            # which runs in this task (no task of its own).
            if probe.jsonrpc == "2.0" and request_id is not None:
                route = server.stateless_routes(known).get(method) if known is not None else None
                begun = (
                    first_step(route, request_id, probe.params, body, post.summon, extra)
                    if route is not None
                    else None
                )
                if isinstance(begun, Message):
                    if post.session is None:  # nothing was sent before it: nothing more will be
                        post.ended = True
                        await self.respond(send, begun, takes_json)
                        return
                    post.summon().transport.write(begun)
                else:
                    # The handler waits (it carries on under the session and
                    # the client watch), or first_step left the request (an
                    # unknown method or revision, bad params) to the session,
                    # which says what is wrong with it.
                    session, task = post.summon(), post.task()
                    started = None
                    if begun is not None:
                        assert route is not None
                        started = route[0], begun.rest()
                    answer = session.serve(wire.incoming(body, probe, extra=extra), task, started)
                    if answer is not None:
                        await answer_here(answer, post.watched, session, task)
            else:
                # Which answers what is wrong with it (decoded again: the
                # session decides on the bytes as it does for any transport).
                post.summon().feed(wire.incoming(body, extra=extra))
            await (post.replying or self.reply(post))
        except OSError:
            pass  # the connection broke
        finally:
            post.end()
            if listen:
                self.listening -= 1
                places.release_listen(client, lease)
            else:
                places.release_request(client, lease)
            if post.session is not None:
                # Cancels what still runs for the request (the client went away).
                await post.session.close()

    async def reply(self, post: RequestPost) -> None:
        """Send what the request's session queued: the response alone when
        that is all, else an SSE stream. The client watch is made when this
        has to wait."""
        transport, send = post.transport, post.send
        assert transport is not None
        item = transport.outbox.pop()
        if item is not None:
            transport.took(item)
        else:
            watch = post.watched()  # the client may leave while this waits
            item = await next_event(transport)
            if item is None and watch.gone:
                return  # nobody to answer
        if item is None:
            if transport.overflowed:
                # The request wrote faster than this POST took its messages,
                # past max_stream_buffer: the transport gave up before the response.
                await plain(
                    send,
                    503,
                    "Service Unavailable: the request's messages overflowed max_stream_buffer before its response",
                )
            else:  # the app is closing: it closed the request's session
                await plain(send, 503, "Service Unavailable: the server is shutting down")
            return
        final = item.kind is RESPONSE
        if final:
            await self.respond(send, item, post.takes_json)
            return
        await send({"type": "http.response.start", "status": 200, "headers": list(SSE_HEADERS)})
        keepalive = self.options.keepalive
        while True:
            chunk = b"event: message\ndata: " + item.data + b"\n\n"
            if final:
                await send({"type": "http.response.body", "body": chunk, "more_body": False})
                return
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            post.watched()  # the client may leave while this waits
            item = await next_event(transport, send, keepalive)
            if item is None:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            final = item.kind is RESPONSE

    async def respond(self, send: Send, response: Message, takes_json: bool) -> None:
        """Send the response of a 2026-07-28 request that sent nothing before
        it: as JSON when the client takes it, else as an SSE stream of that
        one event. Its status comes from the error the session wrote, if any."""
        error, message = response.error, response.data
        if error is not None and self.auth is not None:
            refusal = scope_refusal(self.auth, error)
            if refusal is not None:
                await send_answer(send, refusal)
                return
        if takes_json:  # written out here, not a helper's coroutine: the path of most requests
            await send(
                {
                    "type": "http.response.start",
                    "status": 200 if error is None else _ERROR_STATUS.get(error.code, 200),
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", b"%d" % len(message)),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": message})
            return
        await whole_sse(send, b"event: message\ndata: " + message + b"\n\n")

    @property
    def in_flight(self) -> int:
        """How many 2026-07-28 requests are being answered (subscriptions/listen streams among them)."""
        return self.places.requests + self.listening

    async def close(self) -> None:
        """Let the requests in flight finish, for shutdown_grace at most, then end them
        (listen streams have been told to send their result)."""
        deadline = time.monotonic() + self.options.shutdown_grace
        while (self.sessions or self.places.requests) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)  # requests finishing, listen streams sending their result
        for session in list(self.sessions):
            await session.close()

    async def _ask(self, request: bytes) -> Any:
        """The decoded response of the server to one request of its own (no
        client's: its identity is SERVER, which no middleware sees)."""
        transport = RequestTransport(
            request, self.options.max_stream_buffer, extra=RequestExtra(client=SERVER)
        )
        session = ServerSession(self.server, transport, stateless=True)
        session.start()
        try:
            async with asyncio.timeout(_INTERNAL_TIMEOUT):
                while True:
                    item = await transport.outbox.get()
                    if item is None:
                        return None
                    if item.kind is RESPONSE:
                        return msgspec.json.decode(item.data)
        except (TimeoutError, msgspec.MsgspecError):
            return None
        finally:
            await session.close()


async def answer_here(
    answer: Coroutine[Any, Any, None],
    watched: Callable[[], ClientWatch],
    session: ServerSession,
    task: asyncio.Task[Any],
) -> None:
    """Run the handler of a 2026-07-28 request in the POST's task (``task``),
    until it has written the response; cancelled when the client leaves or
    the app closes the request's session (its answer is then no response at all).
    The client is watched (``watched()``) once the handler first waits: one
    that answers without waiting has no client to lose meanwhile."""
    watch: ClientWatch | None = None
    begun = step(answer)
    if isinstance(begun, Pending):  # else answered within this step
        running = True

        def leave() -> None:
            if running:
                task.cancel()

        watch = watched()
        watch.add_callback(leave)
        try:
            await begun.rest()  # which takes a cancellation as the end of the request
        finally:
            running = False
            watch.remove_callback(leave)
    if task.cancelling():
        if not ((watch is not None and watch.gone) or session.is_closed):
            raise asyncio.CancelledError  # from outside (the server stopping), not ours to take
        task.uncancel()


async def next_event(
    transport: RequestTransport, send: Send | None = None, keepalive: float = 0.0
) -> Message | None:
    """The next message of a 2026-07-28 request (the response last); None once the client is gone (RequestTransport.client_gone)
    or the transport gave up. With ``send``, a comment line goes out every
    ``keepalive`` seconds of silence."""
    while True:
        if send is None:
            item = await transport.outbox.get()
        else:
            try:
                async with asyncio.timeout(keepalive):
                    item = await transport.outbox.get()
            except TimeoutError:
                await send({"type": "http.response.body", "body": b":\n\n", "more_body": True})
                continue
        if item is not None:
            transport.took(item)
        return item
