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
needs no session: a POST without ``Mcp-Session-Id`` whose
``MCP-Protocol-Version`` (or, without one, whose ``_meta``) names no
handshake revision is served on its own, by a session made for it alone. Its
headers must mirror its body (``Mcp-Method``, ``Mcp-Name``,
``MCP-Protocol-Version`` and the tool's ``Mcp-Param-*``; else 400 and
HeaderMismatch). The answer is JSON when the first thing the request produces
is its response (with 404 for an unknown method and 400 for an invalid
request), else an SSE stream of its notifications that ends with the response
(or, for ``subscriptions/listen``, when either side ends it). Closing that
stream cancels the request. These streams have no event ids and cannot be
resumed; GET and DELETE naming 2026-07-28 get 405. Clients of the older
revisions are served with sessions as before, by the same app.

Serve it with any ASGI server, e.g.
``uvicorn.run(StreamableHTTPApp(server), host="127.0.0.1", timeout_graceful_shutdown=2)``
(the timeout lets a stopping uvicorn end SSE streams that clients keep open).
"""

from __future__ import annotations

import asyncio
import logging
import re
import secrets
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, MutableMapping, Sequence
from typing import Any, TypeVar

import msgspec

from . import http_headers, jsonrpc, lifecycle
from .http_headers import InvalidAnnotation, ParamHeader
from .jsonrpc import RequestId
from .server import Server, ServerSession

# An SSE answer; proxies must neither transform nor buffer it.
_SSE_HEADERS = (
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
)

logger = logging.getLogger("mcp_runtime.streamable_http")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")
DEFAULT_MAX_BODY = 4 * 1024 * 1024
DEFAULT_MAX_STREAM_BUFFER = 16 * 1024 * 1024
"""Bytes an SSE stream keeps for replay, and lets wait for a connection that does not keep up."""
FINISHED_STREAM_RETENTION = 60.0
"""Seconds a stream whose requests are all answered stays resumable..."""
FINISHED_STREAMS_KEPT = 1024
"""...and how many such streams a session keeps at most (the newest)."""
# The error a JSON answer carries for a request the client cancelled (it has
# no response to carry); the same code the official SDK uses.
REQUEST_CANCELLED = -32800
# A client that sends no MCP-Protocol-Version is taken to speak this (spec).
DEFAULT_HEADER_VERSION = "2025-03-26"
KEEPALIVE_SECONDS = 15.0
"""Quiet seconds after which a 2026-07-28 SSE stream gets a comment line, so
that proxies and idle timeouts leave long ones (subscriptions/listen) open."""
TOOL_SCHEMAS_TTL = 30.0
"""Seconds the ``x-mcp-header`` annotations of the server's tools are trusted
before they are listed again (to check ``Mcp-Param-*`` headers)..."""
TOOL_SCHEMAS_RETRY = 1.0
"""...and the least seconds between two listings (a call of a tool not listed)."""
# Who lists the tools for that check: the app itself, not the client whose
# call made it look (a client's _meta could fail the listing, and the tools
# one client sees are not necessarily those another does).
_HEADER_CHECK_CLIENT = {"name": "mcp-runtime-header-check", "version": "0"}
SHUTDOWN_GRACE = 1.0
"""Seconds close() lets 2026-07-28 requests in flight finish before it ends them."""
_INTERNAL_TIMEOUT = 10.0
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


class _Probe(msgspec.Struct):
    """Just enough of a message to route it: is it a request, and which id."""

    id: RequestId | None | msgspec.UnsetType = msgspec.UNSET
    method: str | msgspec.UnsetType = msgspec.UNSET
    params: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


class _ErrorCode(msgspec.Struct):
    code: Any = None


class _Outcome(msgspec.Struct):
    error: _ErrorCode | None = None


class _CancelledParams(msgspec.Struct):
    requestId: RequestId | msgspec.UnsetType = msgspec.UNSET


class _Cancelled(msgspec.Struct):
    method: str | msgspec.UnsetType = msgspec.UNSET
    params: _CancelledParams | msgspec.UnsetType = msgspec.UNSET


_probe = msgspec.json.Decoder(_Probe | list[_Probe])
_cancelled = msgspec.json.Decoder(_Cancelled)
_outcome = msgspec.json.Decoder(_Outcome)
# How a session writes a response (jsonrpc.result_bytes and error_bytes).
_RESPONSE_HEAD = b'{"jsonrpc":"2.0","id":'
_RESULT_KEY = b',"result":'


# ---------------------------------------------------------------- SSE streams


class EventStream:
    """One SSE stream: numbered events, kept for replay, sent to at most one
    live connection at a time.

    Memory is bounded by ``max_buffer`` twice over: the events kept for
    replay (the newest ``history`` of them, and no more bytes than that, the
    newest always), and the bytes waiting for the live connection. A
    connection that lets more than that wait (a client that does not read
    its stream) is dropped with a logged error; the client may resume the
    stream with Last-Event-ID.
    """

    def __init__(
        self,
        stream_id: str,
        expected: set[RequestId] | None,
        history: int,
        json: bool = False,
        max_buffer: int = DEFAULT_MAX_STREAM_BUFFER,
    ) -> None:
        self.id = stream_id
        self.expected = expected  # request ids still to be answered; None: standalone
        self.json = json  # answered with one JSON body: responses only, not resumable
        self.events: deque[tuple[int, bytes]] = deque(maxlen=history)
        self.kept = 0  # bytes of the events kept for replay
        self.max_buffer = max_buffer
        self.seq = 0
        self.handed = 0  # the last event handed to a connection
        self.delivered = 0  # the last event a connection took
        self.live: asyncio.Queue[tuple[int, bytes] | None] | None = None
        self.waiting = 0  # bytes queued for the live connection, not yet taken by it
        self.dropped = 0  # connections dropped for not keeping up
        self.finished = False

    def send(self, message: bytes) -> None:
        self.seq += 1
        event = (self.seq, message)
        if len(self.events) == self.events.maxlen:
            self.kept -= len(self.events[0][1])
        self.events.append(event)
        self.kept += len(message)
        while self.kept > self.max_buffer and len(self.events) > 1:
            self.kept -= len(self.events.popleft()[1])
        if self.live is not None:
            if self.waiting > self.max_buffer:  # one event, however large, never trips it by itself
                logger.error(
                    "dropping the connection of SSE stream %s: the client does not keep up "
                    "(%d bytes wait for it; max_stream_buffer is %d); it may resume the stream",
                    self.id,
                    self.waiting,
                    self.max_buffer,
                )
                self._drop()
                return
            self.live.put_nowait(event)
            self.handed = self.seq
            self.waiting += len(message)

    def took(self, queue: asyncio.Queue[tuple[int, bytes] | None], event: tuple[int, bytes]) -> None:
        """A connection took ``event`` from ``queue`` to send it."""
        if queue is self.live:
            self.waiting -= len(event[1])
            self.delivered = event[0]

    def _drop(self) -> None:
        """End the live connection now, discarding what waits for it (it stays replayable)."""
        queue = self.live
        assert queue is not None
        self.live = None
        self.waiting = 0
        self.handed = self.delivered
        self.dropped += 1
        while not queue.empty():
            queue.get_nowait()
        queue.put_nowait(None)

    def answered(self, request_id: RequestId) -> None:
        if self.expected is None:
            return
        self.expected.discard(request_id)
        if not self.expected:
            self.finished = True
            self.detach()

    def attach(self, after: int) -> asyncio.Queue[tuple[int, bytes] | None]:
        """A queue for a new connection: the events after ``after``, then live ones."""
        self.detach()
        queue: asyncio.Queue[tuple[int, bytes] | None] = asyncio.Queue()
        for event in self.events:
            if event[0] > after:
                queue.put_nowait(event)
                self.handed = max(self.handed, event[0])
                self.waiting += len(event[1])
        if self.finished:
            queue.put_nowait(None)
        else:
            self.live = queue
        return queue

    def detach(self) -> None:
        """End the current connection (the stream itself goes on)."""
        if self.live is not None:
            self.live.put_nowait(None)
            self.live = None
            self.waiting = 0


class HttpSessionTransport:
    """The Transport a ServerSession reads and writes when served over HTTP."""

    def __init__(self, history: int, max_stream_buffer: int = DEFAULT_MAX_STREAM_BUFFER) -> None:
        self._incoming: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._history = history
        self._max_stream_buffer = max_stream_buffer
        self._by_request: dict[RequestId, EventStream] = {}
        self._finished: deque[tuple[float, str]] = deque()  # (forget after, stream id), oldest first
        self.streams: dict[str, EventStream] = {}
        self.standalone = EventStream(_new_stream_id(), None, history, max_buffer=max_stream_buffer)
        self.streams[self.standalone.id] = self.standalone
        self.closed = False

    # Transport -------------------------------------------------------

    async def read(self) -> bytes | None:
        if self.closed:
            return None
        return await self._incoming.get()

    def write(self, message: bytes, related: RequestId | None = None, response: bool = False) -> None:
        stream = self._by_request.get(related) if related is not None else None
        if stream is None:
            if response and related is not None:
                return  # the answer to a cancelled request: nobody waits for it
            self.standalone.send(message)
            return
        if stream.json and not response:
            # A JSON answer carries only the response: what else belongs to
            # the request goes out on the GET stream.
            self.standalone.send(message)
            return
        stream.send(message)
        if response:
            del self._by_request[related]  # type: ignore[arg-type]
            stream.answered(related)  # type: ignore[arg-type]
            if stream.finished:
                self._forget_later(stream)

    async def drain(self) -> None:
        return None

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._incoming.put_nowait(None)
        for stream in self.streams.values():
            stream.finished = True
            stream.detach()

    def close_request_stream(self, request_id: RequestId) -> None:
        stream = self._by_request.get(request_id)
        if stream is not None and not stream.json:  # a JSON answer cannot be resumed
            stream.detach()

    # HTTP side -------------------------------------------------------

    def receive(self, message: bytes) -> None:
        self._incoming.put_nowait(message)
        if b"notifications/cancelled" in message:
            self._cancelled(message)

    def _cancelled(self, message: bytes) -> None:
        """A cancelled request gets no response; end its stream now instead
        of when the client goes away."""
        try:
            cancelled = _cancelled.decode(message)
        except (msgspec.MsgspecError, *jsonrpc.UNDECODABLE):
            return  # the session answers what it cannot read
        if cancelled.method != "notifications/cancelled" or isinstance(cancelled.params, msgspec.UnsetType):
            return
        request_id = cancelled.params.requestId
        if isinstance(request_id, msgspec.UnsetType):
            return
        stream = self._by_request.pop(request_id, None)
        if stream is None:
            return
        if stream.json:
            stream.send(jsonrpc.error_bytes(request_id, REQUEST_CANCELLED, "Request cancelled"))
        stream.answered(request_id)
        if stream.finished:
            self._forget_later(stream)

    def taken_id(self, request_ids: Sequence[RequestId]) -> RequestId | None:
        """An id among ``request_ids`` that a request still unanswered has, or
        that comes twice; None if all are free."""
        seen: set[tuple[type, RequestId]] = set()
        for request_id in request_ids:
            key = (type(request_id), request_id)
            if request_id in self._by_request or key in seen:
                return request_id
            seen.add(key)
        return None

    def open_stream(self, request_ids: Iterable[RequestId], json: bool = False) -> EventStream:
        stream = EventStream(_new_stream_id(), set(request_ids), self._history, json, self._max_stream_buffer)
        self.streams[stream.id] = stream
        for request_id in stream.expected or ():
            self._by_request[request_id] = stream
        return stream

    def _forget_later(self, stream: EventStream) -> None:
        """A finished stream stays resumable for a while (its last events may
        not have reached a client whose connection just dropped): for
        FINISHED_STREAM_RETENTION seconds, and only the newest
        FINISHED_STREAMS_KEPT of the session. What is due is forgotten here,
        with no timer per stream (a timer would also hold a closed session's
        streams until it fired)."""
        now = time.monotonic()
        finished = self._finished
        finished.append((now + FINISHED_STREAM_RETENTION, stream.id))
        while finished and (finished[0][0] <= now or len(finished) > FINISHED_STREAMS_KEPT):
            self.streams.pop(finished.popleft()[1], None)


def _new_stream_id() -> str:
    return secrets.token_hex(8)


# ---------------------------------------------------------------- sessions


class HttpSession:
    def __init__(
        self, session_id: str | None, server: Server, history: int, max_stream_buffer: int = DEFAULT_MAX_STREAM_BUFFER
    ) -> None:
        self.id = session_id
        self.transport = HttpSessionTransport(history, max_stream_buffer)
        self.session = ServerSession(server, self.transport)
        self.task = asyncio.get_running_loop().create_task(self.session.run())
        self.last_seen = time.monotonic()
        self.in_flight = 0

    @property
    def busy(self) -> bool:
        """Whether a request is running or a stream is connected: not idle, however long since the last HTTP request."""
        return (
            self.in_flight > 0
            or bool(self.session._in_flight)
            or any(stream.live is not None for stream in self.transport.streams.values())
        )

    async def close(self) -> None:
        await self.session.close()
        try:
            await self.task
        except Exception:
            pass


class RequestTransport:
    """The Transport of a session made for one 2026-07-28 request: it reads
    that request, and queues what the session writes, the response last,
    for the POST to send. Nothing is written after the response, or once
    the client has gone (the transport is closed)."""

    def __init__(self, message: bytes, max_buffer: int = DEFAULT_MAX_STREAM_BUFFER, responses_only: bool = False) -> None:
        """``responses_only``: the client takes JSON alone, so the request's
        notifications have nowhere to go and are dropped, not queued."""
        self._message: bytes | None = message
        self.responses_only = responses_only
        self._ended = asyncio.Event()
        self.outbox: asyncio.Queue[tuple[bytes, bool] | None] = asyncio.Queue()
        self.max_buffer = max_buffer
        self.waiting = 0  # bytes queued, not yet taken by the POST
        self.overflowed = False
        self.answered = False
        self.closed = False

    async def read(self) -> bytes | None:
        message, self._message = self._message, None
        if message is not None:
            return message
        await self._ended.wait()
        return None

    def write(self, message: bytes, related: RequestId | None = None, response: bool = False) -> None:
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
        self.waiting += len(message)
        self.outbox.put_nowait((message, response))

    def took(self, item: tuple[bytes, bool]) -> None:
        self.waiting -= len(item[0])

    async def drain(self) -> None:
        return None

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._ended.set()
            if not self.answered:
                self.outbox.put_nowait(None)  # the POST waiting for an answer gets none

    def close_request_stream(self, request_id: RequestId) -> None:
        return None  # such a stream cannot be resumed: it stays open


# ---------------------------------------------------------------- the app


class StreamableHTTPApp:
    """An ASGI application serving ``server`` over Streamable HTTP at ``path``.

    * ``stateless``: no sessions; every POST is served on its own (no
      server-to-client requests, no GET stream), so any worker can take it.
    * ``json_response``: answer POSTs with one JSON body instead of SSE.
    * ``allowed_hosts`` / ``allowed_origins``: the Host and Origin values
      accepted (DNS-rebinding protection). Default: localhost names only,
      any port. Pass the public names when serving beyond loopback.
    * ``max_body_size``: larger POST bodies get 413.
    * ``max_concurrent_requests``: per session, and for the 2026-07-28
      requests of the whole app; more in flight get 429.
    * ``max_stream_buffer``: bytes each SSE stream keeps for replay and lets
      wait for a client that does not read; past it that connection is
      dropped (the client may resume the stream).
    * ``session_timeout``: idle seconds after which a session is dropped.

    Requests of 2026-07-28 (see the module docstring) take no session; of
    the options above, ``json_response``, ``stateless``, ``max_sessions``
    and ``session_timeout`` concern the older revisions only.
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
        max_body_size: int = DEFAULT_MAX_BODY,
        max_concurrent_requests: int = 1024,
        max_sessions: int = 10_000,
        session_timeout: float | None = 30 * 60,
        retry_ms: int = 1000,
        event_history: int = 1024,
        max_stream_buffer: int = DEFAULT_MAX_STREAM_BUFFER,
    ) -> None:
        self.server = server
        self.path = path.rstrip("/") or "/"
        self.stateless = stateless
        self.json_response = json_response
        self.allowed_hosts = None if allowed_hosts is None else {h.lower() for h in allowed_hosts}
        self.allowed_origins = None if allowed_origins is None else {o.lower().rstrip("/") for o in allowed_origins}
        self.max_body_size = max_body_size
        self.max_concurrent_requests = max_concurrent_requests
        self.max_sessions = max_sessions
        self.session_timeout = session_timeout
        self.retry_ms = retry_ms
        self.event_history = event_history
        self.max_stream_buffer = max_stream_buffer
        self.sessions: dict[str, HttpSession] = {}
        self._reaper: asyncio.Task[None] | None = None
        self._requests: set[ServerSession] = set()  # the sessions of 2026-07-28 requests in flight
        self._tool_params: dict[str, list[ParamHeader]] = {}
        self._tool_params_at = float("-inf")  # when the tools were last listed
        self._tool_params_tried = float("-inf")
        self._listing: asyncio.Task[None] | None = None

    @property
    def requests_in_flight(self) -> int:
        """How many 2026-07-28 requests are being answered (each has a session of its own)."""
        return len(self._requests)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        headers = _headers(scope)
        if scope["path"].rstrip("/") != self.path.rstrip("/") and scope["path"] != self.path:
            await _plain(send, 404, "Not Found")
            return
        refused = self._check_origin(headers)
        if refused is not None:
            await _plain(send, 403, refused)
            return
        self._start_reaper()
        method = scope["method"]
        if method in ("GET", "DELETE") and self._names_modern(headers):
            await _plain(send, 405, "Method Not Allowed: MCP 2026-07-28 has neither GET streams nor sessions", [(b"allow", b"POST")])
        elif method == "POST":
            await self._post(scope, receive, send, headers)
        elif method == "GET":
            await self._get(receive, send, headers)
        elif method == "DELETE":
            await self._delete(send, headers)
        else:
            await _plain(send, 405, "Method Not Allowed", [(b"allow", b"GET, POST, DELETE")])

    # -------------------------------------------------------------- checks

    def _check_origin(self, headers: dict[str, str]) -> str | None:
        host = headers.get("host", "")
        if not _host_allowed(host, self.allowed_hosts):
            return f"Forbidden: host {host!r} is not allowed"
        origin = headers.get("origin")
        if origin is not None and not _origin_allowed(origin, self.allowed_origins):
            return f"Forbidden: origin {origin!r} is not allowed"
        return None

    def _check_version(self, headers: dict[str, str]) -> str | None:
        version = headers.get("mcp-protocol-version")
        if version is not None and version not in self.server.versions:
            return f"Bad Request: unsupported MCP-Protocol-Version {version!r} (supported: {', '.join(self.server.versions)})"
        return None

    def _names_modern(self, headers: dict[str, str]) -> bool:
        """Whether the request names a 2026-07-28 revision this server speaks, and no session."""
        version = headers.get("mcp-protocol-version")
        return (
            version is not None
            and "mcp-session-id" not in headers
            and version.strip(" \t") in self.server.modern_versions
        )

    def _modern_fields(
        self, headers: dict[str, str], probe: _Probe | list[_Probe]
    ) -> tuple[http_headers.MirroredFields, Any] | None:
        """The header-mirrored fields of a 2026-07-28 request or notification,
        and the version its ``_meta`` names (decoded once: reading it decodes
        ``_meta``); None for what belongs to a session or to the older
        revisions' stateless mode."""
        if not self.server.modern_versions or "mcp-session-id" in headers or isinstance(probe, list):
            return None
        if not isinstance(probe.method, str):
            return None
        header = headers.get("mcp-protocol-version")
        if header is not None and header.strip(" \t") in self.server.bindings.handshake_versions:
            return None
        fields = http_headers.mirrored_fields(probe.params)
        version = fields.version
        if header is None and (not isinstance(version, str) or version in self.server.bindings.handshake_versions):
            # No header: a request of the older revisions (initialize among
            # them), unless its _meta says otherwise; an initialize that does
            # is refused as a method 2026-07-28 removed.
            return None
        return fields, version

    def _session_for(self, headers: dict[str, str]) -> tuple[HttpSession | None, int, str]:
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            return None, 400, "Bad Request: Mcp-Session-Id header is required"
        session = self.sessions.get(session_id)
        if session is None or session.session.is_closed:
            return None, 404, "Not Found: unknown or expired session"
        session.last_seen = time.monotonic()
        return session, 200, ""

    # -------------------------------------------------------------- POST

    async def _post(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        accept = headers.get("accept", "")
        takes_json = "application/json" in accept or "*/*" in accept
        takes_sse = "text/event-stream" in accept or "*/*" in accept
        if self._names_modern(headers):
            if not (takes_json or takes_sse):
                await _plain(send, 406, "Not Acceptable: Accept must list application/json or text/event-stream")
                return
        elif not takes_json or not (takes_sse or self.json_response):
            await _plain(send, 406, "Not Acceptable: Accept must list application/json and text/event-stream")
            return
        if not headers.get("content-type", "").lower().startswith("application/json"):
            await _plain(send, 415, "Unsupported Media Type: Content-Type must be application/json")
            return
        body = await _read_body(receive, self.max_body_size)
        if body is None:
            await _json_error(send, 413, None, jsonrpc.INVALID_REQUEST, f"Request body larger than {self.max_body_size} bytes")
            return
        try:
            probe = _probe.decode(body)
        except msgspec.ValidationError:
            # The shape may fail on the first bytes of what is not even JSON.
            problem = jsonrpc.parse_error(body)
            if problem is not None:
                await _json_error(send, 400, None, jsonrpc.PARSE_ERROR, problem)
            else:
                await _json_error(send, 400, None, jsonrpc.INVALID_REQUEST, "Invalid request: not a JSON-RPC message")
            return
        except jsonrpc.UNDECODABLE as error:  # invalid JSON, invalid UTF-8, nested too deeply
            await _json_error(send, 400, None, jsonrpc.PARSE_ERROR, jsonrpc.parse_error_message(error))
            return
        modern = self._modern_fields(headers, probe)
        if modern is not None:
            assert isinstance(probe, _Probe)
            fields, version = modern
            await self._post_modern(probe, fields, version, body, headers, send, receive, takes_json, takes_sse)
            return
        items = probe if isinstance(probe, list) else [probe]
        if not items:
            await _json_error(send, 400, None, jsonrpc.INVALID_REQUEST, "Invalid request: empty batch")
            return
        requests = [i.id for i in items if isinstance(i.method, str) and i.id is not msgspec.UNSET and i.id is not None]
        initializing = any(i.method == "initialize" for i in items)
        if initializing and len(items) > 1:
            await _json_error(send, 400, None, jsonrpc.INVALID_REQUEST, "Invalid request: initialize must be sent alone")
            return
        if not initializing:
            problem = self._check_version(headers)
            if problem is not None:
                await _json_error(send, 400, None, jsonrpc.INVALID_REQUEST, problem)
                return

        if self.stateless:
            await self._post_stateless(body, requests, initializing, headers, send, receive)
            return
        if initializing:
            if len(self.sessions) >= self.max_sessions:
                await _plain(send, 503, "Service Unavailable: too many sessions")
                return
            session_id = secrets.token_urlsafe(32)  # 256 bits from the OS CSPRNG
            http_session = HttpSession(session_id, self.server, self.event_history, self.max_stream_buffer)
            self.sessions[session_id] = http_session
            http_session.task.add_done_callback(lambda _: self.sessions.pop(session_id, None))
        else:
            found, status, reason = self._session_for(headers)
            if found is None:
                await _json_error(send, status, None, jsonrpc.INVALID_REQUEST, reason)
                return
            http_session = found
        if http_session.in_flight + len(requests) > self.max_concurrent_requests:
            await _json_error(send, 429, None, jsonrpc.INVALID_REQUEST, "Too many requests in flight for this session")
            return
        await self._answer(http_session, body, requests, send, receive)

    async def _answer(
        self, http_session: HttpSession, body: bytes, requests: list[RequestId], send: Send, receive: Receive
    ) -> None:
        transport = http_session.transport
        extra = [(b"mcp-session-id", http_session.id.encode())] if http_session.id else []
        if not requests:
            if not await _utf8_or_refused(body, send):
                return
            transport.receive(body)
            await _plain(send, 202, "", extra)
            return
        taken = transport.taken_id(requests)
        if taken is not None:
            # Its stream would take the place of the one waiting for the
            # request that has the id, which would then never be answered.
            await _json_error(send, 400, taken, jsonrpc.INVALID_REQUEST, f"Invalid request: id {taken!r} is already in use")
            return
        stream = transport.open_stream(requests, json=self.json_response)
        queue = stream.attach(0)
        http_session.in_flight += len(requests)
        try:
            transport.receive(body)
            if self.json_response:
                await self._reply_json(stream, queue, send, receive, extra, batch=body.lstrip()[:1] == b"[")
            else:
                await self._reply_sse(stream, queue, send, receive, extra, prime=True)
        finally:
            http_session.in_flight -= len(requests)

    async def _post_stateless(
        self,
        body: bytes,
        requests: list[RequestId],
        initializing: bool,
        headers: dict[str, str],
        send: Send,
        receive: Receive,
    ) -> None:
        http_session = HttpSession(None, self.server, self.event_history, self.max_stream_buffer)
        if not initializing:
            http_session.session.adopt(headers.get("mcp-protocol-version", DEFAULT_HEADER_VERSION))
        try:
            await self._answer(http_session, body, requests, send, receive)
        finally:
            await http_session.close()

    # -------------------------------------------------------------- 2026-07-28

    async def _post_modern(
        self,
        probe: _Probe,
        fields: http_headers.MirroredFields,
        version: Any,
        body: bytes,
        headers: dict[str, str],
        send: Send,
        receive: Receive,
        takes_json: bool,
        takes_sse: bool,
    ) -> None:
        request_id = probe.id
        method = probe.method
        assert isinstance(method, str)
        if isinstance(request_id, msgspec.UnsetType):
            if not await _utf8_or_refused(body, send):
                return
            await _plain(send, 202, "")  # a notification: no client notification of 2026-07-28 needs a session
            return
        problem = _header_problem(headers, method, fields, version)
        if problem is None and method == "tools/call":
            problem = await self._param_problem(headers, fields)
        if problem is not None:
            await _json_error(send, 400, request_id, jsonrpc.HEADER_MISMATCH, f"Header mismatch: {problem}")
            return
        if len(self._requests) >= self.max_concurrent_requests:
            await _json_error(send, 429, request_id, jsonrpc.INVALID_REQUEST, "Too many requests in flight")
            return
        transport = RequestTransport(body, self.max_stream_buffer, responses_only=not takes_sse)
        session = ServerSession(self.server, transport, stateless=True)
        self._requests.add(session)
        session.start()
        disconnected = asyncio.get_running_loop().create_task(_wait_disconnect(receive))
        try:
            await self._reply_modern(transport, send, disconnected, takes_json)
        except OSError:
            pass  # the connection broke
        finally:
            disconnected.cancel()
            self._requests.discard(session)
            # Cancels what still runs for the request (the client went away).
            await session.close()

    async def _reply_modern(
        self,
        transport: RequestTransport,
        send: Send,
        disconnected: asyncio.Task[None],
        takes_json: bool,
    ) -> None:
        item = await _next_event(transport, disconnected)
        if item is None:
            if disconnected.done():
                return  # nobody to answer
            if transport.overflowed:
                # The request wrote faster than this POST took its messages,
                # past max_stream_buffer: the transport gave up before the response.
                await _plain(send, 503, "Service Unavailable: the request's messages overflowed max_stream_buffer before its response")
            else:  # the app is closing: it closed the request's session
                await _plain(send, 503, "Service Unavailable: the server is shutting down")
            return
        message, final = item
        if final and takes_json:
            await send(
                {
                    "type": "http.response.start",
                    "status": _status_of(message),
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": message})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": list(_SSE_HEADERS),
            }
        )
        while True:
            chunk = b"event: message\ndata: " + message + b"\n\n"
            if final:
                await send({"type": "http.response.body", "body": chunk, "more_body": False})
                return
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            item = await _next_event(transport, disconnected, send)
            if item is None:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            message, final = item

    async def _param_problem(self, headers: dict[str, str], fields: http_headers.MirroredFields) -> str | None:
        """What is wrong with the Mcp-Param-* headers of a tools/call, if anything."""
        if not isinstance(fields.name, str):
            return None
        params = await self._params_of(fields.name)
        if not params:
            return None
        arguments: Any = None
        if not isinstance(fields.arguments, msgspec.UnsetType):
            try:
                arguments = msgspec.json.decode(fields.arguments)
            except (msgspec.MsgspecError, *jsonrpc.UNDECODABLE):
                return None  # the session refuses the params
        for param in params:
            value = param.value_in(arguments)
            if value is None:
                continue  # nothing to mirror: a header sent anyway is not looked at
            sent = headers.get(param.header)
            if sent is None:
                return f"the Mcp-Param-{param.name} header is missing (argument {'.'.join(param.path)} is given)"
            decoded = http_headers.decode_value(sent)
            if decoded is None:
                return f"the Mcp-Param-{param.name} header holds invalid characters or invalid Base64"
            if not http_headers.matches(decoded, value):
                return f"Mcp-Param-{param.name} header value {decoded!r} does not match argument {'.'.join(param.path)}"
        return None

    async def _params_of(self, tool: str) -> list[ParamHeader]:
        """The arguments of ``tool`` mirrored in headers, from the server's
        own tools/list, kept a while."""
        now = time.monotonic()
        known = self._tool_params.get(tool)
        if known is not None and now - self._tool_params_at < TOOL_SCHEMAS_TTL:
            return known
        listing = self._listing
        if (listing is None or listing.done()) and now - self._tool_params_tried >= TOOL_SCHEMAS_RETRY:
            self._tool_params_tried = now
            listing = self._listing = asyncio.get_running_loop().create_task(self._list_tool_params())
        if listing is not None and not listing.done():
            await asyncio.shield(listing)
        return self._tool_params.get(tool, [])

    async def _list_tool_params(self) -> None:
        if not self.server.modern_versions:
            return
        meta = {
            lifecycle.VERSION_KEY: max(self.server.modern_versions),
            lifecycle.CAPABILITIES_KEY: {},
            lifecycle.CLIENT_INFO_KEY: _HEADER_CHECK_CLIENT,
        }
        found: dict[str, list[ParamHeader]] = {}
        cursor: Any = None
        for page in range(64):
            params: dict[str, Any] = {"_meta": meta}
            if cursor is not None:
                params["cursor"] = cursor
            answer = await self._ask(jsonrpc.request_bytes(page + 1, "tools/list", msgspec.json.encode(params)))
            result = answer.get("result") if isinstance(answer, dict) else None
            if not isinstance(result, dict):
                return  # keep what was known
            tools = result.get("tools")
            for tool in tools if isinstance(tools, list) else ():
                if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                    continue
                try:
                    found[tool["name"]] = http_headers.param_headers(tool.get("inputSchema"))
                except InvalidAnnotation as error:
                    logger.warning("tool %r: %s; its Mcp-Param headers are not checked", tool["name"], error)
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str):
                break
        self._tool_params = found
        self._tool_params_at = time.monotonic()

    async def _ask(self, request: bytes) -> Any:
        """The decoded response of the server to one request of its own."""
        transport = RequestTransport(request, self.max_stream_buffer)
        session = ServerSession(self.server, transport, stateless=True)
        session.start()
        try:
            async with asyncio.timeout(_INTERNAL_TIMEOUT):
                while True:
                    item = await transport.outbox.get()
                    if item is None:
                        return None
                    if item[1]:
                        return msgspec.json.decode(item[0])
        except (TimeoutError, msgspec.MsgspecError):
            return None
        finally:
            await session.close()

    async def _reply_json(
        self,
        stream: EventStream,
        queue: asyncio.Queue[tuple[int, bytes] | None],
        send: Send,
        receive: Receive,
        extra: list[tuple[bytes, bytes]],
        batch: bool,
    ) -> None:
        responses: list[bytes] = []
        expected = set(stream.expected or ())
        disconnected = asyncio.get_running_loop().create_task(_wait_disconnect(receive))
        try:
            while len(responses) < len(expected):
                event = await next_or_gone(queue, disconnected)
                if isinstance(event, Gone):
                    return  # the client went away: nobody to answer
                if event is None:
                    break
                stream.took(queue, event)
                message = event[1]
                if _is_response(message):
                    responses.append(message)
        finally:
            disconnected.cancel()
        body = b"[" + b",".join(responses) + b"]" if batch else (responses[0] if responses else b"")
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json"), *extra],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def _reply_sse(
        self,
        stream: EventStream,
        queue: asyncio.Queue[tuple[int, bytes] | None],
        send: Send,
        receive: Receive,
        extra: list[tuple[bytes, bytes]],
        prime: bool,
    ) -> None:
        disconnected = asyncio.get_running_loop().create_task(_wait_disconnect(receive))
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [*_SSE_HEADERS, *extra],
                }
            )
            if prime:
                priming = f"id: {stream.id}:0\nretry: {self.retry_ms}\ndata: \n\n".encode()
                await send({"type": "http.response.body", "body": priming, "more_body": True})
            while True:
                event = await next_or_gone(queue, disconnected)
                if isinstance(event, Gone):
                    return  # the client went away; the stream stays for a resuming client
                if event is None:
                    break
                stream.took(queue, event)
                seq, message = event
                chunk = b"id: " + f"{stream.id}:{seq}".encode() + b"\nevent: message\ndata: " + message + b"\n\n"
                if stream.live is not queue and queue.qsize() == 1:
                    # Nothing is added to a queue the stream has let go, and
                    # the last thing it got is its end: end the response with
                    # this event, in the same write.
                    queue.get_nowait()
                    await send({"type": "http.response.body", "body": chunk, "more_body": False})
                    return
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass  # the connection broke: as above
        finally:
            disconnected.cancel()
            if stream.live is queue:
                stream.live = None  # however this connection ended, it no longer holds the stream

    # -------------------------------------------------------------- GET

    async def _get(self, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        if "text/event-stream" not in headers.get("accept", "") and "*/*" not in headers.get("accept", ""):
            await _plain(send, 406, "Not Acceptable: Accept must list text/event-stream")
            return
        if self.stateless:
            await _plain(send, 405, "Method Not Allowed: stateless server has no GET stream", [(b"allow", b"POST")])
            return
        http_session, status, reason = self._session_for(headers)
        if http_session is None:
            await _plain(send, status, reason)
            return
        problem = self._check_version(headers)
        if problem is not None:
            await _plain(send, 400, problem)
            return
        transport = http_session.transport
        extra = [(b"mcp-session-id", (http_session.id or "").encode())]
        last = headers.get("last-event-id")
        if last is not None:
            stream_id, _, seq = last.partition(":")
            stream = transport.streams.get(stream_id)
            if stream is None or not seq.isdigit():
                # Not 404: that would tell the client its session is gone.
                await _plain(send, 400, "Bad Request: unknown Last-Event-ID (the stream may have expired)")
                return
            queue = stream.attach(int(seq))
            await self._reply_sse(stream, queue, send, receive, extra, prime=False)
            return
        standalone = transport.standalone
        if standalone.live is not None:
            await _plain(send, 409, "Conflict: this session already has a GET stream")
            return
        # What was sent while no GET stream was open is delivered now.
        queue = standalone.attach(standalone.handed)
        await self._reply_sse(standalone, queue, send, receive, extra, prime=True)

    # -------------------------------------------------------------- DELETE

    async def _delete(self, send: Send, headers: dict[str, str]) -> None:
        if self.stateless:
            await _plain(send, 405, "Method Not Allowed: stateless server has no sessions", [(b"allow", b"POST")])
            return
        http_session, status, reason = self._session_for(headers)
        if http_session is None:
            await _plain(send, status, reason)
            return
        self.sessions.pop(http_session.id or "", None)
        await http_session.close()
        await _plain(send, 200, "")

    # -------------------------------------------------------------- lifetime

    def _start_reaper(self) -> None:
        if self._reaper is None and self.session_timeout is not None and not self.stateless:
            self._reaper = asyncio.get_running_loop().create_task(self._reap())

    async def _reap(self) -> None:
        assert self.session_timeout is not None
        while True:
            await asyncio.sleep(min(self.session_timeout / 4, 60))
            await self._reap_idle(time.monotonic() - self.session_timeout)

    async def _reap_idle(self, cutoff: float) -> None:
        # A function of its own: its loop variable would otherwise keep the
        # last session it looked at (closed since, maybe) alive through the
        # reaper's sleep until the next pass.
        for session_id, http_session in list(self.sessions.items()):
            if http_session.last_seen < cutoff and not http_session.busy:
                self.sessions.pop(session_id, None)
                await http_session.close()

    async def close(self) -> None:
        """End every session (also done at ASGI lifespan shutdown); open
        subscriptions/listen streams first get their result."""
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None
        self.server.end_subscriptions()
        deadline = time.monotonic() + SHUTDOWN_GRACE
        while self._requests and time.monotonic() < deadline:
            await asyncio.sleep(0.01)  # requests finishing, listen streams sending their result
        for session in list(self._requests):
            await session.close()
        sessions, self.sessions = list(self.sessions.values()), {}
        for http_session in sessions:
            await http_session.close()

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.close()
                await send({"type": "lifespan.shutdown.complete"})
                return


# ---------------------------------------------------------------- helpers


async def _utf8_or_refused(body: bytes, send: Send) -> bool:
    """Whether a body of notifications (or responses) is valid UTF-8, else
    answer 400: its params were routed unread, and a 202 would say they were fine."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as error:
        await _json_error(send, 400, None, jsonrpc.PARSE_ERROR, f"Parse error: invalid UTF-8 at byte {error.start}")
        return False
    return True


def _headers(scope: Scope) -> dict[str, str]:
    return {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}


# A host with an optional numeric port: a bracketed IPv6 address or a name.
_HOST = re.compile(r"(\[[0-9a-f:.]+\]|[^\[\]:/@\s]+)(?::[0-9]{1,5})?")


def _host_name(host: str) -> str | None:
    """The host of a Host header (or of an origin), lowercased, without its
    port; None unless it is just that (so ``[::1]evil`` or
    ``localhost:80@evil`` never pass for a local name)."""
    match = _HOST.fullmatch(host.strip().lower())
    return match.group(1) if match else None


def _host_allowed(host: str, allowed: set[str] | None) -> bool:
    if allowed is not None:
        return host.lower() in allowed or _host_name(host) in allowed
    return _host_name(host) in LOCAL_HOSTS


def _origin_allowed(origin: str, allowed: set[str] | None) -> bool:
    origin = origin.lower().rstrip("/")
    if allowed is not None:
        return origin in allowed
    scheme, _, rest = origin.partition("://")
    return scheme in ("http", "https") and _host_name(rest) in LOCAL_HOSTS


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b""
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


class Gone:
    """What next_or_gone returns once the client has disconnected."""


GONE = Gone()
_T = TypeVar("_T")


async def next_or_gone(
    queue: asyncio.Queue[_T], disconnected: asyncio.Task[None], timeout: float | None = None
) -> _T | Gone:
    """The next queued item, or GONE once the client has disconnected;
    TimeoutError after ``timeout`` seconds of neither.

    What is already queued goes out without a wait (and the task and futures
    a wait costs)."""
    if not queue.empty():
        return queue.get_nowait()
    getter = asyncio.ensure_future(queue.get())
    done, _ = await asyncio.wait({getter, disconnected}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    if getter in done:
        return getter.result()
    getter.cancel()
    if disconnected in done:
        return GONE
    raise TimeoutError


async def _next_event(
    transport: RequestTransport, disconnected: asyncio.Task[None], send: Send | None = None
) -> tuple[bytes, bool] | None:
    """The next message of a 2026-07-28 request (and whether it is the
    response); None once the client is gone or the transport gave up. With
    ``send``, a comment line goes out every KEEPALIVE_SECONDS of silence."""
    while True:
        try:
            item = await next_or_gone(transport.outbox, disconnected, KEEPALIVE_SECONDS if send is not None else None)
        except TimeoutError:
            assert send is not None
            await send({"type": "http.response.body", "body": b":\n\n", "more_body": True})
            continue
        if isinstance(item, Gone):
            return None
        if item is not None:
            transport.took(item)
        return item


def _header_problem(
    headers: dict[str, str], method: str, fields: http_headers.MirroredFields, version: Any
) -> str | None:
    """What is wrong with the standard headers of a 2026-07-28 request, if
    anything; ``version``: the one its ``_meta`` names."""
    sent = headers.get(http_headers.METHOD)
    if sent is None:
        return "the Mcp-Method header is missing"
    if sent.strip(" \t") != method:
        return f"Mcp-Method header value {sent.strip()!r} does not match body method {method!r}"
    if isinstance(version, str):
        sent = headers.get("mcp-protocol-version")
        if sent is None:
            return "the MCP-Protocol-Version header is missing"
        if sent.strip(" \t") != version:
            return f"MCP-Protocol-Version header value {sent.strip()!r} does not match _meta protocol version {version!r}"
    expected = fields.name_for(method)
    if expected is not None:
        sent = headers.get(http_headers.NAME)
        if sent is None:
            return "the Mcp-Name header is missing"
        value = http_headers.decode_value(sent)
        if value is None:
            return "the Mcp-Name header holds invalid characters or invalid Base64"
        if value != expected:
            return f"Mcp-Name header value {value!r} does not match body value {expected!r}"
    return None


def _status_of(response: bytes) -> int:
    if response.startswith(_RESPONSE_HEAD):
        # A result, however large, is known by its first member after the id
        # and is not decoded. No ',"' stands inside an id (a string escapes
        # its quotes): the first one ends it.
        end_of_id = response.find(b',"', len(_RESPONSE_HEAD))
        if response.startswith(_RESULT_KEY, end_of_id):
            return 200
    try:
        error = _outcome.decode(response).error
    except (msgspec.MsgspecError, *jsonrpc.UNDECODABLE):
        return 200
    if error is None or not isinstance(error.code, int):
        return 200
    return _ERROR_STATUS.get(error.code, 200)


async def _wait_disconnect(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


def _is_response(message: bytes) -> bool:
    try:
        probe = _probe.decode(message)
    except (msgspec.MsgspecError, *jsonrpc.UNDECODABLE):
        return False
    return isinstance(probe, _Probe) and probe.method is msgspec.UNSET


async def _plain(send: Send, status: int, text: str, extra: Sequence[tuple[bytes, bytes]] = ()) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), *extra],
        }
    )
    await send({"type": "http.response.body", "body": text.encode()})


async def _json_error(
    send: Send, status: int, request_id: RequestId | None, code: int, message: str, data: Any = None
) -> None:
    body = jsonrpc.error_bytes(request_id, code, message, data)
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})
