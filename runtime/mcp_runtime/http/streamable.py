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
import functools
import itertools
import logging
import re
import secrets
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Iterable, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from .. import jsonrpc, lifecycle, ownership, wire
from ..auth.principal import Principal
from ..disconnect import ClientWatch, Gone, SlowAnswers, next_or_gone
from ..jsonrpc import RequestId
from ..limits import BodyBudget, BodyRefused, ClientKey, Quota, peer_key
from ..queues import OneReaderQueue
from ..server import Server, ServerSession
from ..session import first_step
from ..stepping import Pending, one_pass, step
from ..stores import Store, StoreUnavailable
from ..stores.quotas import SharedQuota
from ..wire import RESPONSE
from . import headers as http_headers
from .current import reset_request_headers, set_request_headers
from .headers import InvalidAnnotation, ParamHeader

if TYPE_CHECKING:  # the auth package needs joserfc, which serving without auth does not
    from ..auth.server.resource_server import HttpAnswer, ResourceServer

# An SSE answer; proxies must neither transform nor buffer it.
# An SSE answer sent whole, with its length, has nothing a proxy could hold
# back: it goes without X-Accel-Buffering (each header costs the server a little).
_WHOLE_SSE_HEADERS = (
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
)
_SSE_HEADERS = (*_WHOLE_SSE_HEADERS, (b"x-accel-buffering", b"no"))

logger = logging.getLogger("mcp_runtime.http.streamable")

# The events of a stream waiting for its connection: (seq, message), None for the end.
_Events = OneReaderQueue[tuple[int, bytes] | None]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")
DEFAULT_MAX_BODY = 4 * 1024 * 1024
DEFAULT_MAX_BODIES_BUFFERED = 64 * 1024 * 1024
"""Bytes of request bodies being read at once, app-wide."""
DEFAULT_BODY_TIMEOUT = 30.0
"""Seconds a request body has to arrive in full."""
DEFAULT_EVENT_RETENTION = 60.0
"""Seconds an SSE event is kept for a client that resumes its stream."""
DEFAULT_MAX_REPLAY = 256 * 1024 * 1024
"""Bytes of SSE events kept for resumption, app-wide."""
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
    jsonrpc: Any = msgspec.UNSET
    result: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    error: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET

    def problem(self) -> str | None:
        """Why this is not a JSON-RPC message a POST may carry, if it is not."""
        if self.jsonrpc != "2.0":
            return 'Invalid request: "jsonrpc" must be "2.0"'
        if isinstance(self.method, str):
            return "Invalid request: id must not be null" if self.id is None else None
        if self.id is None or self.id is msgspec.UNSET:
            return "Invalid request: not a JSON-RPC message"
        if (self.result is msgspec.UNSET) == (self.error is msgspec.UNSET):
            return "Invalid request: a response has exactly one of result and error"
        return None


class _ErrorCode(msgspec.Struct):
    code: Any = None


class _Outcome(msgspec.Struct):
    error: _ErrorCode | None = None


class _ErrorData(msgspec.Struct):
    code: Any = None
    data: Any = None


class _DataOutcome(msgspec.Struct):
    error: _ErrorData | None = None


class _CancelledParams(msgspec.Struct):
    requestId: RequestId | msgspec.UnsetType = msgspec.UNSET


class _Cancelled(msgspec.Struct):
    method: str | msgspec.UnsetType = msgspec.UNSET
    params: _CancelledParams | msgspec.UnsetType = msgspec.UNSET


_probe = msgspec.json.Decoder(_Probe | list[_Probe])
_cancelled = msgspec.json.Decoder(_Cancelled)
_outcome = msgspec.json.Decoder(_Outcome)
_data_outcome = msgspec.json.Decoder(_DataOutcome)
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

    __slots__ = (
        "id", "expected", "json", "events", "stamps", "kept", "max_buffer", "seq", "handed", "delivered", "live",
        "waiting", "dropped", "finished", "log",
    )  # fmt: skip

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
        self.stamps: deque[float] = deque(maxlen=history)  # when each kept event was sent
        self.kept = 0  # bytes of the events kept for replay
        self.max_buffer = max_buffer
        self.seq = 0
        self.handed = 0  # the last event handed to a connection
        self.delivered = 0  # the last event a connection took
        self.live: _Events | None = None
        self.waiting = 0  # bytes queued for the live connection, not yet taken by it
        self.dropped = 0  # connections dropped for not keeping up
        self.finished = False
        # With a shared store: called with each event (seq, message; None
        # for the end) so that other workers can resume the stream.
        self.log: Callable[[int, bytes | None], None] | None = None

    def send(self, message: bytes) -> None:
        self.seq += 1
        event = (self.seq, message)
        if len(self.events) == self.events.maxlen:
            self.kept -= len(self.events[0][1])
        self.events.append(event)
        self.stamps.append(time.monotonic())
        self.kept += len(message)
        if self.log is not None:
            self.log(self.seq, message)
        while self.kept > self.max_buffer and len(self.events) > 1:
            self._forget_oldest()
        if self.live is not None:
            if self.waiting > self.max_buffer:  # one event, however large, never trips it by itself
                logger.error(
                    "dropping the connection of SSE stream: the client does not keep up "
                    "(%d bytes wait for it; max_stream_buffer is %d); it may resume the stream",
                    self.waiting,
                    self.max_buffer,
                )
                self._drop()
                return
            self.live.put_nowait(event)
            self.handed = self.seq
            self.waiting += len(message)

    def _forget_oldest(self) -> int:
        self.stamps.popleft()
        size = len(self.events.popleft()[1])
        self.kept -= size
        return size

    def trim(self, before: float) -> None:
        """Forget the events kept for replay that were sent before ``before``."""
        while self.stamps and self.stamps[0] < before:
            self._forget_oldest()

    def shed(self, excess: int) -> int:
        """Forget the oldest kept events until ``excess`` bytes are freed (or none is left); the bytes freed."""
        freed = 0
        while freed < excess and self.events:
            freed += self._forget_oldest()
        return freed

    def took(self, queue: _Events, event: tuple[int, bytes]) -> None:
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
            if self.log is not None:
                self.log(self.seq + 1, None)
            self.detach()

    def attach(self, after: int) -> _Events:
        """A queue for a new connection: the events after ``after``, then live ones."""
        self.detach()
        queue: _Events = OneReaderQueue()
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
        # Each message with the principal its POST was authenticated with.
        self._incoming: asyncio.Queue[tuple[bytes, Principal | None] | None] = asyncio.Queue()
        self.principal: Principal | None = None  # that of the message read last
        self._history = history
        self._max_stream_buffer = max_stream_buffer
        self._by_request: dict[RequestId, EventStream] = {}
        self._finished: deque[tuple[float, str]] = (
            deque()
        )  # (forget after, stream id), oldest first
        self.streams: dict[str, EventStream] = {}
        self._stream_ids = itertools.count(1)
        self.standalone = EventStream("0", None, history, max_buffer=max_stream_buffer)
        self.streams[self.standalone.id] = self.standalone
        self.closed = False
        self.owner: str | None = None  # see ownership.owner_of

    # Transport -------------------------------------------------------

    async def read(self) -> wire.Message | None:
        if self.closed:
            return None
        item = await self._incoming.get()
        if item is None:
            return None
        message, self.principal = item
        return wire.incoming(message)

    def write(self, sent: wire.Message) -> None:
        message, related, response = sent.data, sent.related, sent.kind is RESPONSE
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

    def receive(self, message: bytes, principal: Principal | None = None) -> None:
        self._incoming.put_nowait((message, principal))
        if b"notifications/cancelled" in message:
            self.end_cancelled(message)

    def end_cancelled(self, message: bytes) -> None:
        """A cancelled request gets no response; end its stream now instead
        of when the client goes away."""
        try:
            cancelled = _cancelled.decode(message)
        except (msgspec.MsgspecError, *jsonrpc.UNDECODABLE):
            return  # the session answers what it cannot read
        if cancelled.method != "notifications/cancelled" or isinstance(
            cancelled.params, msgspec.UnsetType
        ):
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

    def purge(self, before: float, budget: int) -> int:
        """Forget what was kept for replay before ``before``, and past
        ``budget`` bytes (finished streams' events first, the oldest first);
        finished streams left with nothing to replay are dropped. The bytes
        still kept."""
        kept = 0
        for stream_id, stream in list(self.streams.items()):
            stream.trim(before)
            if stream.finished and not stream.events and stream.live is None:
                del self.streams[stream_id]
            kept += stream.kept
        if kept > budget:
            for stream in sorted(self.streams.values(), key=lambda s: not s.finished):
                kept -= stream.shed(kept - budget)
                if kept <= budget:
                    break
        return kept

    def shed(self, excess: int) -> int:
        """Forget ``excess`` bytes kept for replay (finished streams first); the bytes freed."""
        freed = 0
        for stream in sorted(self.streams.values(), key=lambda s: not s.finished):
            freed += stream.shed(excess - freed)
            if freed >= excess:
                break
        return freed

    @property
    def unanswered(self) -> int:
        """Requests of this session not answered yet: running handlers, whether
        or not the POST that brought them is still open."""
        return len(self._by_request)

    def taken_id(self, request_ids: Sequence[RequestId]) -> RequestId | None:
        """An id among ``request_ids`` that a request still unanswered has, or
        that comes twice; None if all are free."""
        if len(request_ids) == 1:  # most POSTs: no set to make
            return request_ids[0] if request_ids[0] in self._by_request else None
        seen: set[tuple[type, RequestId]] = set()
        for request_id in request_ids:
            key = (type(request_id), request_id)
            if request_id in self._by_request or key in seen:
                return request_id
            seen.add(key)
        return None

    def open_stream(self, request_ids: Iterable[RequestId], json: bool = False) -> EventStream:
        stream = EventStream(
            self.new_stream_id(), set(request_ids), self._history, json, self._max_stream_buffer
        )
        self.streams[stream.id] = stream
        for request_id in stream.expected or ():
            self._by_request[request_id] = stream
        return stream

    def new_stream_id(self) -> str:
        """The id of a new request stream, unique to the session. A count:
        resuming a stream needs the session (and its owner) first, so its
        id need not be unguessable."""
        return str(next(self._stream_ids))

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


# ---------------------------------------------------------------- sessions


class HttpSession:
    def __init__(
        self,
        session_id: str | None,
        server: Server,
        history: int,
        max_stream_buffer: int = DEFAULT_MAX_STREAM_BUFFER,
        owner: str | None = None,
        transport: HttpSessionTransport | None = None,
    ) -> None:
        self.id = session_id
        # Sent with each answer; encoded once, not per POST.
        self.id_headers: tuple[tuple[bytes, bytes], ...] = (
            ((b"mcp-session-id", session_id.encode()),) if session_id else ()
        )
        self.owner = owner  # the key of the principal that opened it: only it may use it
        self.transport = (
            transport if transport is not None else HttpSessionTransport(history, max_stream_buffer)
        )
        if session_id is not None:
            self.transport.owner = ownership.session_owner(session_id)
        self.session = ServerSession(server, self.transport)
        self.task = asyncio.get_running_loop().create_task(self.session.run())
        self.last_seen = time.monotonic()
        self.in_flight = 0
        self.client = ""  # limits.peer_key (or the app's client_key) of whoever opened it
        self.used = False  # whether a request came after initialize

    def feed(
        self, message: bytes, principal: Principal | None, probe: _Probe | None = None
    ) -> None:
        """Dispatch a POSTed message with requests now, in the POST's task: not
        queued for the session's reader (a task switch less per request).
        ``probe``: the message, a single request, as the POST decoded it
        (the session then skips its own pass over the envelope)."""
        self.transport.principal = principal
        if (
            probe is not None
            and probe.jsonrpc == "2.0"
            and isinstance(probe.method, str)
            and isinstance(probe.id, (str, int))
        ):
            self.session.dispatch_request(probe.id, probe.method, probe.params, message)
            return
        self.session.feed(message)
        if b"notifications/cancelled" in message:  # one of a batch
            self.transport.end_cancelled(message)

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


class _Outbox(OneReaderQueue[tuple[bytes, bool] | None]):
    """What a 2026-07-28 request's session wrote, in order, for its POST to
    send: (message, whether it is the response), None for the end."""

    __slots__ = ()

    def pop(self) -> tuple[bytes, bool] | None:
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
        principal: Principal | None = None,
    ) -> None:
        """``responses_only``: the client takes JSON alone, so the request's
        notifications have nowhere to go and are dropped, not queued.
        ``principal``: who the request's POST was authenticated as."""
        self._message: bytes | None = message
        self.principal = principal
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
            return wire.incoming(message)
        if not self.closed:
            self._ended = asyncio.Event()
            await self._ended.wait()
        return None

    def write(self, sent: wire.Message) -> None:
        message, response = sent.data, sent.kind is RESPONSE
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
        if not response and self.streaming is not None:
            streaming, self.streaming = self.streaming, None
            streaming()

    def took(self, item: tuple[bytes, bool]) -> None:
        self.waiting -= len(item[0])

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


class _RequestPost:
    """The POST of one 2026-07-28 request, while it is answered.

    The request's session and transport are made when first needed
    (``summon``): a handler that answers within its first step, sending
    nothing before its response and never looking at ``ctx.peer``, needs
    neither, and making and closing them is a fifth of what such a request
    costs the app. Likewise the client watch (``watched``): a request that
    never waits has no client to lose meanwhile."""

    __slots__ = (
        "app", "body", "version", "principal", "send", "receive", "takes_json", "takes_sse",
        "session", "transport", "watch", "replying", "ended",
    )  # fmt: skip

    def __init__(
        self,
        app: StreamableHTTPApp,
        body: bytes,
        version: str | None,
        principal: Principal | None,
        send: Send,
        receive: Receive,
        takes_json: bool,
        takes_sse: bool,
    ) -> None:
        self.app = app
        self.body = body
        self.version = version  # the revision the request's _meta names, when this server speaks it
        self.principal = principal
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
            app = self.app
            transport = RequestTransport(
                self.body,
                app.max_stream_buffer,
                responses_only=not self.takes_sse,
                principal=self.principal,
            )
            session = ServerSession(app.server, transport, stateless=True, version=self.version)
            self.session, self.transport = session, transport
            if self.ended:
                transport.closed = True
                session.shut_down("Session closed")
            else:
                transport.streaming = self._stream
                app._requests.add(session)
        return session

    def watched(self) -> ClientWatch:
        """The client watch, made at the first call (when the request first waits)."""
        watch = self.watch
        if watch is None:
            watch = self.watch = ClientWatch(self.receive, self.app._slow_answers)
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
        self.replying = asyncio.get_running_loop().create_task(self.app._reply_modern(self))

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
            self.app._requests.discard(self.session)


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
    * ``auth``: a :class:`~mcp_runtime.auth.server.ResourceServer`: every
      request needs a bearer token it accepts (the metadata document it
      serves needs none), handlers see the token's principal as
      ``ctx.principal``, and a session serves only the principal that
      opened it.
    * ``max_sessions``: sessions kept at once. When it is reached, a new
      session first takes the place of an idle one (never used after
      initialize first, else the least recently seen); 503 only when every
      session is busy. ``max_sessions_per_client``: the same, per client.
    * ``max_streams``: long-lived streams open at once (GET streams and
      2026-07-28 ``subscriptions/listen``), counted apart from requests so
      that they cannot starve them; ``max_streams_per_client`` per client;
      more get 429.
    * ``max_requests_per_client``: 2026-07-28 requests of one client in
      flight at once (429 past it).
    * ``body_timeout``: seconds a POST body has to arrive in full (408
      after); ``max_bodies_buffered``: bytes of bodies being read at once,
      app-wide (503 for the body that would pass it).
    * ``event_retention``: seconds the events of a stream are kept for
      resumption, purged in the background; ``max_session_replay`` and
      ``max_replay``: bytes kept for resumption per session and app-wide
      (past them the oldest go, finished streams' first).
    * ``client_key``: names the client of a request for the per-client
      limits (default: its peer address; an authorization layer can name the
      principal instead).

    * ``store``: where sessions, resumable events, tasks and change
      notifications live; a shared one (``RedisStore``) lets several
      workers and hosts serve one deployment (default: the server's
      store, else this process). See docs/guides/scaling.md.

    ``max_concurrent_requests`` counts handlers still running, whether or not
    the POST that started them is still open, and bounds the stateless mode
    app-wide.

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
        auth: ResourceServer | None = None,
        max_sessions_per_client: int | None = None,
        max_streams: int = 1024,
        max_streams_per_client: int | None = None,
        max_requests_per_client: int | None = None,
        client_key: ClientKey = peer_key,
        body_timeout: float | None = DEFAULT_BODY_TIMEOUT,
        max_bodies_buffered: int = DEFAULT_MAX_BODIES_BUFFERED,
        event_retention: float = DEFAULT_EVENT_RETENTION,
        max_session_replay: int = DEFAULT_MAX_STREAM_BUFFER,
        max_replay: int = DEFAULT_MAX_REPLAY,
        store: Store | None = None,
    ) -> None:
        self.server = server
        self.auth = auth
        self.path = path.rstrip("/") or "/"
        self.stateless = stateless
        self.json_response = json_response
        self.allowed_hosts = None if allowed_hosts is None else {h.lower() for h in allowed_hosts}
        self.allowed_origins = (
            None if allowed_origins is None else {o.lower().rstrip("/") for o in allowed_origins}
        )
        self.max_body_size = max_body_size
        self.max_concurrent_requests = max_concurrent_requests
        self.max_sessions = max_sessions
        self.session_timeout = session_timeout
        self.retry_ms = retry_ms
        self.event_history = event_history
        self.max_stream_buffer = max_stream_buffer
        self.sessions: dict[str, HttpSession] = {}
        self._reaper: asyncio.Task[None] | None = None
        self._requests: set[ServerSession] = (
            set()
        )  # the sessions of 2026-07-28 requests in flight that made one
        self._slow_answers = SlowAnswers()  # starts the client watches of answers still being made
        self.max_streams = max_streams
        self.client_key = client_key
        self.bodies = BodyBudget(max_bodies_buffered, body_timeout)
        self.event_retention = event_retention
        self.max_session_replay = max_session_replay
        self.max_replay = max_replay
        self._purger: asyncio.Task[None] | None = None
        self._session_quota = Quota(max_sessions_per_client)
        self._stream_quota = Quota(max_streams_per_client)
        self._request_quota = Quota(max_requests_per_client)  # 2026-07-28 requests in flight
        self._unused: dict[str, None] = (
            {}
        )  # sessions with no request since initialize, oldest first
        self._streams = 0  # long-lived streams open (GET streams, subscriptions/listen)
        self._listening = 0  # subscriptions/listen streams open
        self._requests_running = 0  # other 2026-07-28 requests in flight (places held)
        self._stateless_running = 0  # requests of the handshake revisions' stateless mode in flight
        self._tool_params: dict[str, list[ParamHeader]] = {}
        self._tool_params_at = float("-inf")  # when the tools were last listed
        self._tool_params_tried = float("-inf")
        self._listing: asyncio.Task[None] | None = None
        if store is not None:
            server.use_store(store)
        self._shared: Any = None  # a SharedSessions when the server's store is shared
        if server.store is not None and server.store.shared and not stateless:
            from .shared_sessions import SharedSessions

            self._shared = SharedSessions(self, server.store)
        # With a shared store the per-client stream and request quotas are
        # app-wide (leases in the store); max_streams and
        # max_concurrent_requests protect this process and stay its own.
        shared = server.store if server.store is not None and server.store.shared else None
        self._stream_leases = None
        if shared is not None and max_streams_per_client is not None and not stateless:
            self._stream_leases = SharedQuota(shared, "streams", max_streams_per_client)
        self._request_leases = None
        if shared is not None and max_requests_per_client is not None:
            self._request_leases = SharedQuota(shared, "requests", max_requests_per_client)

    @property
    def requests_in_flight(self) -> int:
        """How many 2026-07-28 requests are being answered (subscriptions/listen streams among them)."""
        return self._requests_running + self._listening

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        headers = _headers(scope)
        if self.auth is not None and self.auth.serves_metadata(scope["path"]):
            await send_answer(send, self.auth.metadata_answer(scope["method"]))
            return
        if scope["path"].rstrip("/") != self.path.rstrip("/") and scope["path"] != self.path:
            await _plain(send, 404, "Not Found")
            return
        refused = self._check_origin(headers)
        if refused is not None:
            await _plain(send, 403, refused)
            return
        # Verified here with ``auth``, else by an authorization layer in front of the app, if any.
        principal = scope.get(ownership.PRINCIPAL_SCOPE_KEY)
        if self.auth is not None:
            outcome = await self.auth.authenticate(headers)
            if not isinstance(outcome, Principal):
                await send_answer(send, outcome)
                return
            principal = scope[ownership.PRINCIPAL_SCOPE_KEY] = outcome
        self._start_reaper()
        if self._shared is not None and not self._shared.started:
            await self._shared.start()
        method = scope["method"]
        if method in ("GET", "DELETE") and self._names_modern(headers):
            await _plain(
                send,
                405,
                "Method Not Allowed: MCP 2026-07-28 has neither GET streams nor sessions",
                [(b"allow", b"POST")],
            )
        elif method == "POST":
            await self._post(scope, receive, send, headers, principal)
        elif method == "GET":
            await self._get(receive, send, headers, principal, self.client_key(scope))
        elif method == "DELETE":
            await self._delete(send, headers, principal)
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
        if (
            not self.server.modern_versions
            or "mcp-session-id" in headers
            or isinstance(probe, list)
        ):
            return None
        if not isinstance(probe.method, str):
            return None
        header = headers.get("mcp-protocol-version")
        if header is not None and header.strip(" \t") in self.server.bindings.handshake_versions:
            return None
        fields = http_headers.mirrored_fields(probe.params)
        version = fields.version
        if header is None and (
            not isinstance(version, str) or version in self.server.bindings.handshake_versions
        ):
            # No header: a request of the older revisions (initialize among
            # them), unless its _meta says otherwise; an initialize that does
            # is refused as a method 2026-07-28 removed.
            return None
        return fields, version

    def _version_of(self, headers: dict[str, str]) -> str:
        """The revision a POST speaks: its session's, else its header's."""
        session = self.sessions.get(headers.get("mcp-session-id", ""))
        if session is not None and session.session.protocol_version:
            return session.session.protocol_version
        return headers.get("mcp-protocol-version", DEFAULT_HEADER_VERSION).strip(" \t")

    def _session_for(
        self, headers: dict[str, str], principal: Principal | None
    ) -> tuple[HttpSession | None, int, str]:
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            return None, 400, "Bad Request: Mcp-Session-Id header is required"
        session = self.sessions.get(session_id)
        # Another principal's session is as unknown as a made-up id: a stolen
        # session id is of no use without its owner's token.
        if session is None or session.session.is_closed or session.owner != _owner(principal):
            return None, 404, "Not Found: unknown or expired session"
        # Most recently seen last: what the session cap makes room from is found first.
        self.sessions[session_id] = self.sessions.pop(session_id)
        session.last_seen = time.monotonic()
        return session, 200, ""

    # -------------------------------------------------------------- POST

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
        if self._names_modern(headers):
            if not (takes_json or takes_sse):
                await _plain(
                    send,
                    406,
                    "Not Acceptable: Accept must list application/json or text/event-stream",
                )
                return
        elif not takes_json or not (takes_sse or self.json_response):
            await _plain(
                send, 406, "Not Acceptable: Accept must list application/json and text/event-stream"
            )
            return
        if not headers.get("content-type", "").lower().startswith("application/json"):
            await _plain(send, 415, "Unsupported Media Type: Content-Type must be application/json")
            return
        try:
            body = await self.bodies.read(receive, self.max_body_size)
        except BodyRefused as refused:
            await _body_refused(send, refused)
            return
        try:
            probe = _probe.decode(body)
        except msgspec.ValidationError:
            # The shape may fail on the first bytes of what is not even JSON.
            problem = jsonrpc.parse_error(body)
            if problem is not None:
                await _json_error(send, 400, None, jsonrpc.PARSE_ERROR, problem)
            else:
                await _json_error(
                    send,
                    400,
                    None,
                    jsonrpc.INVALID_REQUEST,
                    "Invalid request: not a JSON-RPC message",
                )
            return
        except jsonrpc.UNDECODABLE as error:  # invalid JSON, invalid UTF-8, nested too deeply
            await _json_error(
                send, 400, None, jsonrpc.PARSE_ERROR, jsonrpc.parse_error_message(error)
            )
            return
        if self.auth is not None and principal is not None:
            sent = probe if isinstance(probe, list) else [probe]
            # A generator: nothing is gathered unless the app declares scopes by method.
            refusal = self.auth.authorize(
                principal, ((i.method, i.params) for i in sent if isinstance(i.method, str))
            )
            if refusal is not None:
                await send_answer(send, refusal)
                return
        modern = self._modern_fields(headers, probe)
        if modern is not None:
            assert isinstance(probe, _Probe)
            fields, version = modern
            await self._post_modern(
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
        items = probe if isinstance(probe, list) else [probe]
        single = None if isinstance(probe, list) else probe
        if not items:
            await _json_error(
                send, 400, None, jsonrpc.INVALID_REQUEST, "Invalid request: empty batch"
            )
            return
        if isinstance(probe, list) and not lifecycle.allows_batches(self._version_of(headers)):
            await _json_error(
                send,
                400,
                None,
                jsonrpc.INVALID_REQUEST,
                "Invalid request: this protocol revision has no JSON-RPC batches",
            )
            return
        for item in items:
            problem = item.problem()
            if problem is not None:
                reply_to = (
                    item.id
                    if isinstance(item.id, (str, int)) and isinstance(item.method, str)
                    else None
                )
                await _json_error(send, 400, reply_to, jsonrpc.INVALID_REQUEST, problem)
                return
        requests = [
            i.id
            for i in items
            if isinstance(i.method, str) and i.id is not msgspec.UNSET and i.id is not None
        ]
        initializing = any(i.method == "initialize" for i in items)
        if initializing and len(items) > 1:
            await _json_error(
                send,
                400,
                None,
                jsonrpc.INVALID_REQUEST,
                "Invalid request: initialize must be sent alone",
            )
            return
        if not initializing:
            problem = self._check_version(headers)
            if problem is not None:
                await _json_error(send, 400, None, jsonrpc.INVALID_REQUEST, problem)
                return

        if self.stateless:
            if self._stateless_running + len(requests) > self.max_concurrent_requests:
                await _json_error(
                    send, 429, None, jsonrpc.INVALID_REQUEST, "Too many requests in flight"
                )
                return
            self._stateless_running += len(requests)
            try:
                await self._post_stateless(
                    body, requests, initializing, headers, send, receive, principal, single
                )
            finally:
                self._stateless_running -= len(requests)
            return
        if initializing:
            client = self.client_key(scope)
            session_id = secrets.token_urlsafe(32)  # 256 bits from the OS CSPRNG
            if self._shared is not None:
                # The cap is app-wide, counted in the store (the idle-session
                # eviction and per-client quotas are this process's own).
                no_room = await self._shared.admit(session_id, _owner(principal), client)
                if no_room is not None:
                    await _plain(send, 503, no_room)
                    return
                http_session = self._new_session(session_id, _owner(principal), client)
            else:
                if not await self._room_for_session(client):
                    await _plain(send, 503, "Service Unavailable: too many sessions")
                    return
                http_session = self._new_session(session_id, _owner(principal))
                http_session.client = client
                self._unused[session_id] = None
                self._session_quota.take(client)
        else:
            found, status, reason = (
                self._session_for(headers, principal)
                if self._shared is None
                else await self._shared.session_for(headers, _owner(principal))
            )
            if found is None:
                code = jsonrpc.INTERNAL_ERROR if status == 503 else jsonrpc.INVALID_REQUEST
                await _json_error(send, status, None, code, reason)
                return
            http_session = found
            if requests and not http_session.used:
                http_session.used = True
                self._unused.pop(http_session.id or "", None)
        if http_session.transport.unanswered + len(requests) > self.max_concurrent_requests:
            await _json_error(
                send,
                429,
                None,
                jsonrpc.INVALID_REQUEST,
                "Too many requests in flight for this session",
            )
            return
        await self._answer(http_session, body, requests, send, receive, principal, single, headers)

    def _new_session(self, session_id: str, owner: str | None, client: str = "") -> HttpSession:
        """``client``: with a shared store, the client key the session counts against."""
        transport = self._shared.transport(session_id, client) if self._shared is not None else None
        http_session = HttpSession(
            session_id, self.server, self.event_history, self.max_stream_buffer, owner, transport
        )
        self.sessions[session_id] = http_session
        http_session.task.add_done_callback(
            lambda _: self._forget_session(session_id, http_session)
        )
        return http_session

    async def _answer(
        self,
        http_session: HttpSession,
        body: bytes,
        requests: list[RequestId],
        send: Send,
        receive: Receive,
        principal: Principal | None,
        single: _Probe | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        """``single``: the POST's one message, as decoded (None for a batch);
        ``headers``: the POST's, for the handlers (see mcp_runtime.http.current)."""
        transport = http_session.transport
        extra = http_session.id_headers
        if not requests:
            if not await _utf8_or_refused(body, send):
                return
            if self._shared is not None and http_session.id and self._shared.relays(body):
                # Answers to the server's requests (and cancellations) go to
                # the worker whose request is waiting for them, over the bus.
                relay_failed = await self._shared.relay(http_session.id, body)
                if relay_failed is not None:
                    await _plain(send, 503, relay_failed)
                    return
            else:
                transport.receive(body, principal)
            await _plain(send, 202, "", extra)
            return
        taken = transport.taken_id(requests)
        if taken is not None:
            # Its stream would take the place of the one waiting for the
            # request that has the id, which would then never be answered.
            await _json_error(
                send,
                400,
                taken,
                jsonrpc.INVALID_REQUEST,
                f"Invalid request: id {taken!r} is already in use",
            )
            return
        stream = transport.open_stream(requests, json=self.json_response)
        queue = stream.attach(0)
        http_session.in_flight += len(requests)
        try:
            # The handlers' tasks start in feed: they keep these headers, this POST's.
            token = set_request_headers(headers)
            try:
                http_session.feed(body, principal, single)
            finally:
                reset_request_headers(token)
            if self.json_response:
                await self._reply_json(
                    stream,
                    queue,
                    len(requests),
                    send,
                    receive,
                    extra,
                    batch=body.lstrip()[:1] == b"[",
                )
            else:
                await self._reply_sse(stream, queue, send, receive, extra, prime=True, short=True)
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
        principal: Principal | None,
        single: _Probe | None,
    ) -> None:
        http_session = HttpSession(None, self.server, self.event_history, self.max_stream_buffer)
        if not initializing:
            http_session.session.adopt(headers.get("mcp-protocol-version", DEFAULT_HEADER_VERSION))
        try:
            await self._answer(
                http_session, body, requests, send, receive, principal, single, headers
            )
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
        principal: Principal | None,
        scope: Scope,
    ) -> None:
        request_id = probe.id
        method = probe.method
        assert isinstance(method, str)
        if isinstance(request_id, msgspec.UnsetType):
            if not await _utf8_or_refused(body, send):
                return
            await _plain(
                send, 202, ""
            )  # a notification: no client notification of 2026-07-28 needs a session
            return
        problem = _header_problem(headers, method, fields, version)
        if problem is None and method == "tools/call" and isinstance(fields.name, str):
            params = self._known_params(fields.name)
            if params is None:  # not known yet, or no longer fresh
                params = await self._params_of(fields.name)
            if params:  # most tools mirror no argument
                problem = _param_headers_problem(headers, fields, params)
        if problem is not None:
            await _json_error(
                send, 400, request_id, jsonrpc.HEADER_MISMATCH, f"Header mismatch: {problem}"
            )
            return
        listen = method == "subscriptions/listen"
        client = self._client_of(scope, listen)
        if listen:
            refused, lease = await self._hold_stream(client)
        elif self._request_leases is None:
            refused, lease = self._hold_request_here(client), None
        else:
            refused, lease = await self._hold_request(client)
        if refused is not None:
            status, reason = refused
            code = jsonrpc.INTERNAL_ERROR if status == 503 else jsonrpc.INVALID_REQUEST
            await _json_error(send, status, request_id, code, reason)
            return
        server = self.server
        known = version if isinstance(version, str) and version in server.modern_versions else None
        post = _RequestPost(self, body, known, principal, send, receive, takes_json, takes_sse)
        if listen:
            self._listening += 1
        token = set_request_headers(headers)
        try:
            # The one message goes straight to the handler (no reader task),
            # which runs in this task (no task of its own).
            if probe.jsonrpc == "2.0" and request_id is not None:
                route = server.modern_routes(known).get(method) if known is not None else None
                begun = (
                    first_step(route, request_id, probe.params, body, post.summon, principal)
                    if route is not None
                    else None
                )
                if isinstance(begun, bytes):
                    if post.session is None:  # nothing was sent before it: nothing more will be
                        post.ended = True
                        await self._respond_modern(send, begun, takes_json)
                        return
                    post.summon().transport.write(wire.response(begun, request_id))
                elif (
                    begun is not None
                ):  # the handler waits: on under the session and the client watch
                    session = post.summon()
                    assert route is not None
                    task = post.task()
                    await _answer_here(
                        session.take_started(request_id, route[0], begun.rest(), task),
                        post.watched,
                        session,
                        task,
                    )
                else:  # what first_step leaves (an unknown method or revision, bad params): the session says why
                    session, task = post.summon(), post.task()
                    answer = session.take_request(request_id, method, probe.params, body, task)
                    if answer is not None:
                        await _answer_here(answer, post.watched, session, task)
            else:
                post.summon().feed(body)  # which answers what is wrong with it
            await (post.replying or self._reply_modern(post))
        except OSError:
            pass  # the connection broke
        finally:
            reset_request_headers(token)
            post.end()
            if listen:
                self._listening -= 1
                self._release_stream(client, lease)
            else:
                self._release_request(client, lease)
            if post.session is not None:
                # Cancels what still runs for the request (the client went away).
                await post.session.close()

    async def _reply_modern(self, post: _RequestPost) -> None:
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
            item = await _next_event(transport)
            if item is None and watch.gone:
                return  # nobody to answer
        if item is None:
            if transport.overflowed:
                # The request wrote faster than this POST took its messages,
                # past max_stream_buffer: the transport gave up before the response.
                await _plain(
                    send,
                    503,
                    "Service Unavailable: the request's messages overflowed max_stream_buffer before its response",
                )
            else:  # the app is closing: it closed the request's session
                await _plain(send, 503, "Service Unavailable: the server is shutting down")
            return
        message, final = item
        if final:
            await self._respond_modern(send, message, post.takes_json)
            return
        await send({"type": "http.response.start", "status": 200, "headers": list(_SSE_HEADERS)})
        while True:
            chunk = b"event: message\ndata: " + message + b"\n\n"
            if final:
                await send({"type": "http.response.body", "body": chunk, "more_body": False})
                return
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            post.watched()  # the client may leave while this waits
            item = await _next_event(transport, send)
            if item is None:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            message, final = item

    async def _respond_modern(self, send: Send, message: bytes, takes_json: bool) -> None:
        """Send the response of a 2026-07-28 request that sent nothing before
        it: as JSON when the client takes it, else as an SSE stream of that one event."""
        refusal = self._scope_refusal(message) if self.auth is not None else None
        if refusal is not None:
            await send_answer(send, refusal)
            return
        if takes_json:
            await send(
                {
                    "type": "http.response.start",
                    "status": _status_of(message),
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", b"%d" % len(message)),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": message})
            return
        await _whole_sse(send, b"event: message\ndata: " + message + b"\n\n")

    def _known_params(self, tool: str) -> list[ParamHeader] | None:
        """What _params_of would return without waiting, if it would."""
        known = self._tool_params.get(tool)
        if known is not None and time.monotonic() - self._tool_params_at < TOOL_SCHEMAS_TTL:
            return known
        return None

    async def _params_of(self, tool: str) -> list[ParamHeader]:
        """The arguments of ``tool`` mirrored in headers, from the server's
        own tools/list, kept a while."""
        known = self._known_params(tool)
        if known is not None:
            return known
        now = time.monotonic()
        listing = self._listing
        if (
            listing is None or listing.done()
        ) and now - self._tool_params_tried >= TOOL_SCHEMAS_RETRY:
            self._tool_params_tried = now
            listing = self._listing = asyncio.get_running_loop().create_task(
                self._list_tool_params()
            )
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
            answer = await self._ask(
                jsonrpc.request_bytes(page + 1, "tools/list", msgspec.json.encode(params))
            )
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
                    logger.warning(
                        "tool %r: %s; its Mcp-Param headers are not checked", tool["name"], error
                    )
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
        queue: _Events,
        expected: int,
        send: Send,
        receive: Receive,
        extra: Sequence[tuple[bytes, bytes]],
        batch: bool,
    ) -> None:
        """``expected``: how many responses make the answer."""
        responses: list[bytes] = []
        watch = ClientWatch(receive, self._slow_answers)
        try:
            while len(responses) < expected:
                event = await next_or_gone(queue, watch)
                if isinstance(event, Gone):
                    return  # the client went away: nobody to answer
                if event is None:
                    break
                stream.took(queue, event)
                message = event[1]
                if _is_response(message):
                    responses.append(message)
        finally:
            watch.close()
        refusal = self._scope_refusal(responses[0]) if len(responses) == 1 and not batch else None
        if refusal is not None:
            await send_answer(send, refusal)
            return
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
        queue: _Events,
        send: Send,
        receive: Receive,
        extra: Sequence[tuple[bytes, bytes]],
        prime: bool,
        short: bool = False,
    ) -> None:
        """``short``: a POST's stream (unlike a GET's). It starts one pass of
        the event loop late, so that an answer complete by then goes out
        whole, with its length (chunked encoding costs the server a write
        per event and one more to end), and its client is watched only if
        the answer is slow (the watch is made when it is not complete by then)."""
        watch = None if short else ClientWatch(receive)
        try:
            head = (
                [f"id: {stream.id}:0\nretry: {self.retry_ms}\ndata: \n\n".encode()] if prime else []
            )
            if short:
                await one_pass()  # a handler that answers without waiting has answered by then
                chunks, ended = _events_ready(stream, queue)
                head += chunks
                if ended:
                    await _whole_sse(send, b"".join(head), extra)
                    return
                watch = ClientWatch(receive, self._slow_answers)
            await send(
                {"type": "http.response.start", "status": 200, "headers": [*_SSE_HEADERS, *extra]}
            )
            if head:
                await send(
                    {"type": "http.response.body", "body": b"".join(head), "more_body": True}
                )
            assert watch is not None
            while True:
                event = await next_or_gone(queue, watch)
                if isinstance(event, Gone):
                    return  # as above
                if event is None:
                    break
                chunk, ended = _event_chunk(stream, queue, event)
                if ended:  # in the same write as the last event
                    await send({"type": "http.response.body", "body": chunk, "more_body": False})
                    return
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass  # the connection broke: as above
        finally:
            if watch is not None:
                watch.close()
            if stream.live is queue:
                stream.live = None  # however this connection ended, it no longer holds the stream

    def _scope_refusal(self, response: bytes) -> HttpAnswer | None:
        """The 403 for a response that says the caller lacks scopes (a handler
        raised InsufficientScope), when the app checks tokens; else None."""
        if self.auth is None or b"insufficient_scope" not in response:
            return None
        try:
            error = _data_outcome.decode(response).error
        except (msgspec.MsgspecError, *jsonrpc.UNDECODABLE):
            return None
        if (
            error is None
            or error.code != jsonrpc.INSUFFICIENT_SCOPE
            or not isinstance(error.data, dict)
        ):
            return None
        scope = error.data.get("scope")
        return self.auth.insufficient(scope.split() if isinstance(scope, str) else ())

    # -------------------------------------------------------------- GET

    async def _get(
        self,
        receive: Receive,
        send: Send,
        headers: dict[str, str],
        principal: Principal | None,
        client: str = "",
    ) -> None:
        if "text/event-stream" not in headers.get("accept", "") and "*/*" not in headers.get(
            "accept", ""
        ):
            await _plain(send, 406, "Not Acceptable: Accept must list text/event-stream")
            return
        if self.stateless:
            await _plain(
                send,
                405,
                "Method Not Allowed: stateless server has no GET stream",
                [(b"allow", b"POST")],
            )
            return
        http_session, status, reason = (
            self._session_for(headers, principal)
            if self._shared is None
            else await self._shared.session_for(headers, _owner(principal))
        )
        if http_session is None:
            await _plain(send, status, reason)
            return
        problem = self._check_version(headers)
        if problem is not None:
            await _plain(send, 400, problem)
            return
        transport = http_session.transport
        extra = http_session.id_headers
        if self._shared is not None:
            # Any worker may hold the stream: it follows the shared event log.
            refused, lease = await self._hold_stream(client)
            if refused is not None:
                await _plain(send, *refused)
                return
            try:
                await self._shared.serve_get(http_session, headers, send, receive, extra)
            finally:
                self._release_stream(client, lease)
            return
        last = headers.get("last-event-id")
        if last is not None:
            stream_id, _, seq = last.partition(":")
            stream = transport.streams.get(stream_id)
            if stream is None or _EVENT_SEQ.fullmatch(seq) is None:
                # Not 404: that would tell the client its session is gone.
                await _plain(
                    send, 400, "Bad Request: unknown Last-Event-ID (the stream may have expired)"
                )
                return
            refused, lease = await self._hold_stream(client)
            if refused is not None:
                await _plain(send, *refused)
                return
            queue = stream.attach(int(seq))
            await self._stream_sse(stream, queue, send, receive, extra, False, client, lease)
            return
        standalone = transport.standalone
        if standalone.live is not None:
            await _plain(send, 409, "Conflict: this session already has a GET stream")
            return
        refused, lease = await self._hold_stream(client)
        if refused is not None:
            await _plain(send, *refused)
            return
        # What was sent while no GET stream was open is delivered now.
        queue = standalone.attach(standalone.handed)
        await self._stream_sse(standalone, queue, send, receive, extra, True, client, lease)

    async def _stream_sse(
        self,
        stream: EventStream,
        queue: _Events,
        send: Send,
        receive: Receive,
        extra: Sequence[tuple[bytes, bytes]],
        prime: bool,
        client: str,
        lease: str | None,
    ) -> None:
        """A GET stream, held (see _hold_stream) while it is open."""
        try:
            await self._reply_sse(stream, queue, send, receive, extra, prime=prime)
        finally:
            self._release_stream(client, lease)

    # -------------------------------------------------------------- fairness

    # A long-lived stream (a GET stream, subscriptions/listen) or a
    # 2026-07-28 request in flight holds a place: against this process's cap,
    # and against its client's quota, app-wide (a lease in the store) when
    # the store is shared. A refusal is an HTTP status and why.

    async def _hold_stream(self, client: str) -> tuple[tuple[int, str] | None, str | None]:
        if self._streams >= self.max_streams:
            return (429, "Too many streams open"), None
        refused, lease = await _take_place(self._stream_quota, self._stream_leases, client)
        if refused is not None:
            return (refused[0], refused[1] or "Too many streams open for this client"), None
        self._streams += 1
        return None, lease

    def _release_stream(self, client: str, lease: str | None) -> None:
        self._streams -= 1
        _give_place(self._stream_quota, self._stream_leases, client, lease)

    def _client_of(self, scope: Scope, listen: bool) -> str:
        """The client key a 2026-07-28 request's place counts against (a
        stream's for subscriptions/listen); "" when no per-client limit counts them."""
        quota, leases = (
            (self._stream_quota, self._stream_leases)
            if listen
            else (self._request_quota, self._request_leases)
        )
        return self.client_key(scope) if quota.limit is not None or leases is not None else ""

    def _hold_request_here(self, client: str) -> tuple[int, str] | None:
        """A place for a 2026-07-28 request in this process's own counts (no
        shared store: nothing to wait for, not even a coroutine to make)."""
        refused = self._too_many_requests()
        if refused is None:
            quota = self._request_quota
            if quota.limit is not None:
                if quota.full(client):
                    return 429, _CLIENT_REQUESTS_FULL
                quota.take(client)
            self._requests_running += 1
        return refused

    async def _hold_request(self, client: str) -> tuple[tuple[int, str] | None, str | None]:
        """A place for a 2026-07-28 request: a lease of the shared store's."""
        refused = self._too_many_requests()
        if refused is not None:
            return refused, None
        taken, lease = await _take_place(self._request_quota, self._request_leases, client)
        if taken is not None:
            return (taken[0], taken[1] or _CLIENT_REQUESTS_FULL), None
        self._requests_running += 1
        return None, lease

    def _too_many_requests(self) -> tuple[int, str] | None:
        if self._requests_running >= self.max_concurrent_requests:
            return 429, "Too many requests in flight"
        return None

    def _release_request(self, client: str, lease: str | None) -> None:
        self._requests_running -= 1
        if lease is not None or self._request_quota.limit is not None:
            _give_place(self._request_quota, self._request_leases, client, lease)

    def _forget_session(self, session_id: str, http_session: HttpSession) -> None:
        if self.sessions.get(session_id) is http_session:
            del self.sessions[session_id]
        self._unused.pop(session_id, None)
        if http_session.client:
            self._session_quota.give(http_session.client)
            http_session.client = ""

    async def _room_for_session(self, client: str) -> bool:
        """Whether ``client`` may open one more session, after closing an idle
        one if a cap is reached: the client's own when its quota is full,
        anyone's when max_sessions is; never-used sessions first, then the
        least recently seen. False when every candidate is busy."""
        if self._session_quota.full(client):
            if not await self._evict_idle(lambda s: s.client == client):
                return False
        if len(self.sessions) >= self.max_sessions:
            if not await self._evict_idle(lambda s: True):
                return False
        return True

    async def _evict_idle(self, candidate: Callable[[HttpSession], bool]) -> bool:
        # Both orders are kept as they change (self.sessions: least recently
        # seen first), so this usually looks at a few sessions, not all.
        unused = (self.sessions[i] for i in self._unused if i in self.sessions)
        oldest = next(
            (
                s
                for s in itertools.chain(unused, self.sessions.values())
                if candidate(s) and not s.busy
            ),
            None,
        )
        if oldest is None:
            return False
        if oldest.id is not None:
            self._forget_session(oldest.id, oldest)
        await oldest.close()
        return True

    # -------------------------------------------------------------- DELETE

    async def _delete(
        self, send: Send, headers: dict[str, str], principal: Principal | None
    ) -> None:
        if self.stateless:
            await _plain(
                send,
                405,
                "Method Not Allowed: stateless server has no sessions",
                [(b"allow", b"POST")],
            )
            return
        http_session, status, reason = (
            self._session_for(headers, principal)
            if self._shared is None
            else await self._shared.session_for(headers, _owner(principal))
        )
        if http_session is None:
            await _plain(send, status, reason)
            return
        if self._shared is not None:
            refused = await self._shared.forget(http_session)
            if refused is not None:
                await _plain(send, 503, refused)
                return
        self.sessions.pop(http_session.id or "", None)
        await http_session.close()
        await _plain(send, 200, "")

    # -------------------------------------------------------------- lifetime

    def _start_reaper(self) -> None:
        if self._reaper is None and self.session_timeout is not None and not self.stateless:
            self._reaper = asyncio.get_running_loop().create_task(self._reap())
        if self._purger is None and not self.stateless:
            self._purger = asyncio.get_running_loop().create_task(self._purge_events())

    async def _purge_events(self) -> None:
        while True:
            await asyncio.sleep(max(0.05, min(self.event_retention / 4, 5.0)))
            self.purge_events()

    def purge_events(self) -> int:
        """Forget the events kept for resumption past ``event_retention`` or
        the byte budgets (done in the background); the bytes still kept."""
        before = time.monotonic() - self.event_retention
        kept = [
            (s.transport.purge(before, self.max_session_replay), s)
            for s in list(self.sessions.values())
        ]
        total = sum(size for size, _ in kept)
        if total > self.max_replay:
            for size, http_session in sorted(kept, key=lambda k: -k[0]):  # the largest first
                total -= http_session.transport.shed(total - self.max_replay)
                if total <= self.max_replay:
                    break
        return total

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
        if self._purger is not None:
            self._purger.cancel()
            self._purger = None
        self.server.end_subscriptions()
        deadline = time.monotonic() + SHUTDOWN_GRACE
        while (self._requests or self._requests_running) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)  # requests finishing, listen streams sending their result
        for session in list(self._requests):
            await session.close()
        sessions, self.sessions = list(self.sessions.values()), {}
        for http_session in sessions:
            await http_session.close()
        if self.auth is not None:
            await self.auth.aclose()
        for leases in (self._stream_leases, self._request_leases):
            if leases is not None:
                await leases.close()
        if self._shared is not None:
            await self._shared.close()

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                if self._shared is not None:
                    await self._shared.start()
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
        await _json_error(
            send,
            400,
            None,
            jsonrpc.PARSE_ERROR,
            f"Parse error: invalid UTF-8 at byte {error.start}",
        )
        return False
    return True


def _headers(scope: Scope) -> dict[str, str]:
    return {
        name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]
    }


# The number in a Last-Event-ID: ASCII digits only (str.isdigit also takes
# "²" and other digits int() refuses), and few enough to stay a small int.
_EVENT_SEQ = re.compile(r"[0-9]{1,15}", re.ASCII)

# A host with an optional numeric port: a bracketed IPv6 address or a name.
_HOST = re.compile(r"(\[[0-9a-f:.]+\]|[^\[\]:/@\s]+)(?::[0-9]{1,5})?")


@functools.lru_cache(maxsize=256)  # a server sees few Host values; the regex ran on every request
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


# Refused by the per-client quota of 2026-07-28 requests, in this process or app-wide.
_CLIENT_REQUESTS_FULL = "Too many requests in flight for this client"


async def _take_place(
    quota: Quota, leases: SharedQuota | None, client: str
) -> tuple[tuple[int, str] | None, str | None]:
    """A place of ``client``: in this process's ``quota``, or a lease of the
    shared ``leases`` when there are; the refusal (429 when full, with the
    reason left to the caller; 503 with the store's) or the lease."""
    if leases is None:
        if quota.full(client):
            return (429, ""), None
        quota.take(client)
        return None, None
    try:
        lease = await leases.take(client)
    except StoreUnavailable as error:
        return (503, f"Service Unavailable: {error}"), None
    return ((429, ""), None) if lease is None else (None, lease)


def _give_place(quota: Quota, leases: SharedQuota | None, client: str, lease: str | None) -> None:
    if leases is None:
        quota.give(client)
    elif lease is not None:
        leases.give(client, lease)


def _event_chunk(
    stream: EventStream, queue: _Events, event: tuple[int, bytes]
) -> tuple[bytes, bool]:
    """The SSE text of ``event``, taken from ``queue``, and whether it is the stream's last."""
    stream.took(queue, event)
    seq, message = event
    chunk = (
        b"id: " + f"{stream.id}:{seq}".encode() + b"\nevent: message\ndata: " + message + b"\n\n"
    )
    if stream.live is not queue and queue.qsize() == 1:
        # Nothing is added to a queue the stream has let go, and the last
        # thing it got is its end.
        queue.get_nowait()
        return chunk, True
    return chunk, False


async def _whole_sse(send: Send, body: bytes, extra: Sequence[tuple[bytes, bytes]] = ()) -> None:
    """An SSE answer complete before it is sent: one body, with its length
    (no chunked encoding), and no header asking proxies not to buffer it."""
    length = (b"content-length", str(len(body)).encode())
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [*_WHOLE_SSE_HEADERS, *extra, length],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _events_ready(stream: EventStream, queue: _Events) -> tuple[list[bytes], bool]:
    """The SSE text of the events ``queue`` holds now, and whether the stream ended."""
    chunks: list[bytes] = []
    while not queue.empty():
        event = queue.get_nowait()
        if event is None:
            return chunks, True
        chunk, ended = _event_chunk(stream, queue, event)
        chunks.append(chunk)
        if ended:
            return chunks, True
    return chunks, False


async def _answer_here(
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


async def _next_event(
    transport: RequestTransport, send: Send | None = None
) -> tuple[bytes, bool] | None:
    """The next message of a 2026-07-28 request (and whether it is the
    response); None once the client is gone (RequestTransport.client_gone)
    or the transport gave up. With ``send``, a comment line goes out every
    KEEPALIVE_SECONDS of silence."""
    while True:
        if send is None:
            item = await transport.outbox.get()
        else:
            try:
                async with asyncio.timeout(KEEPALIVE_SECONDS):
                    item = await transport.outbox.get()
            except TimeoutError:
                await send({"type": "http.response.body", "body": b":\n\n", "more_body": True})
                continue
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


def _param_headers_problem(
    headers: dict[str, str], fields: http_headers.MirroredFields, params: list[ParamHeader]
) -> str | None:
    """What is wrong with the Mcp-Param-* headers of a tools/call whose tool mirrors ``params``."""
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


def _requests_in(body: bytes) -> int:
    """How many requests a message or batch holds (what cannot be probed counts as one)."""
    try:
        probe = _probe.decode(body)
    except (msgspec.MsgspecError, *jsonrpc.UNDECODABLE):
        return 1
    items = probe if isinstance(probe, list) else [probe]
    return sum(1 for i in items if isinstance(i.method, str) and isinstance(i.id, (str, int)))


def _is_response(message: bytes) -> bool:
    try:
        probe = _probe.decode(message)
    except (msgspec.MsgspecError, *jsonrpc.UNDECODABLE):
        return False
    return isinstance(probe, _Probe) and probe.method is msgspec.UNSET


async def _body_refused(send: Send, refused: BodyRefused) -> None:
    if refused.status == 413:
        await _json_error(send, 413, None, jsonrpc.INVALID_REQUEST, refused.reason)
    else:
        await _plain(send, refused.status, refused.reason, [(b"connection", b"close")])


async def _plain(
    send: Send, status: int, text: str, extra: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), *extra],
        }
    )
    await send({"type": "http.response.body", "body": text.encode()})


def _owner(principal: Principal | None) -> str | None:
    return principal.key if principal is not None else None


async def send_answer(send: Send, answer: HttpAnswer) -> None:
    """Send an answer the resource server made (a refusal, the metadata document)."""
    await send(
        {"type": "http.response.start", "status": answer.status, "headers": list(answer.headers)}
    )
    await send({"type": "http.response.body", "body": answer.body})


async def _json_error(
    send: Send, status: int, request_id: RequestId | None, code: int, message: str, data: Any = None
) -> None:
    body = jsonrpc.error_bytes(request_id, code, message, data)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body})
