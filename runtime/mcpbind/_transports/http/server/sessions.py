"""Handshake sessions over Streamable HTTP (the revisions before 2026-07-28).

A session is named by an unguessable ``Mcp-Session-Id``; its messages go out on SSE
streams (one per POST of requests, and the standalone GET stream) that a client may
resume. The app keeps its sessions in a :class:`SessionTable`: :class:`LocalSessions`
in this process, or ``SharedSessions`` (:mod:`mcpbind._transports.http.server.shared_sessions`) in a
store several workers share. The app speaks to either through the same methods.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

import msgspec

from ...._core import jsonrpc, lifecycle, ownership, wire
from ...._core.jsonrpc import Envelope, RequestId
from ...._core.limits import LOCAL, ClientIdentity, Quota
from ...._core.wire import RESPONSE, Message, RequestExtra
from ...._server.server import Server, ServerSession
from ....auth._principal import Principal
from ..asgi import Receive, Send
from ..disconnect import SlowAnswers
from .answers import plain
from .events import EVENT_SEQ, EventStream, send_stream
from .options import HttpOptions
from .places import Places
from .probe import is_request

# The error a JSON answer carries for a request the client cancelled (it has
# no response to carry); the same code the official SDK uses.
REQUEST_CANCELLED = -32800

Found = tuple["HttpSession | None", int, str]
"""The session a request names, else the HTTP status and why not."""


class _CancelledParams(msgspec.Struct):
    requestId: RequestId | msgspec.UnsetType = msgspec.UNSET


class _Cancelled(msgspec.Struct):
    method: str | msgspec.UnsetType = msgspec.UNSET
    params: _CancelledParams | msgspec.UnsetType = msgspec.UNSET


_cancelled = msgspec.json.Decoder(_Cancelled)


class HttpSessionTransport:
    """The Transport a ServerSession reads and writes when served over HTTP."""

    def __init__(self, options: HttpOptions) -> None:
        # Each message with what its POST said of it (principal, client).
        self._incoming: asyncio.Queue[wire.Message | None] = asyncio.Queue()
        # The client of the message read last: a message relayed from another
        # worker (a response, a cancellation) names none, and is taken as its.
        self.identity: ClientIdentity = LOCAL
        self._history = options.event_history
        self._max_stream_buffer = options.max_stream_buffer
        self._retention = options.finished_stream_retention
        self._finished_kept = options.finished_streams_kept
        self._by_request: dict[RequestId, EventStream] = {}
        self._finished: deque[tuple[float, str]] = (
            deque()
        )  # (forget after, stream id), oldest first
        self.streams: dict[str, EventStream] = {}
        self._stream_ids = itertools.count(1)
        self.standalone = EventStream("0", None, self._history, max_buffer=self._max_stream_buffer)
        self.streams[self.standalone.id] = self.standalone
        self.closed = False
        self.owner: str | None = None  # see ownership.owner_of
        self.session_id: str | None = None  # that of the HttpSession it serves (telemetry)

    # Transport -------------------------------------------------------

    async def read(self) -> wire.Message | None:
        if self.closed:
            return None
        return await self._incoming.get()

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
            stream.error = sent.error
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

    def receive(
        self,
        message: bytes,
        principal: Principal | None = None,
        identity: ClientIdentity | None = None,
    ) -> None:
        """``identity``: the client of the POST that carried ``message`` (None
        for one relayed from another worker, responses and cancellations: the
        client of the message read before stands)."""
        if identity is None:
            identity = self.identity
        else:
            self.identity = identity
        self._incoming.put_nowait(
            wire.incoming(message, extra=wire.RequestExtra(principal, identity))
        )
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
        expected = set(request_ids)
        stream = EventStream(
            self.new_stream_id(() if json else expected),
            expected,
            self._history,
            json,
            self._max_stream_buffer,
        )
        self.streams[stream.id] = stream
        for request_id in stream.expected or ():
            self._by_request[request_id] = stream
        return stream

    def new_stream_id(self, request_ids: Collection[RequestId]) -> str:
        """The id of a new request stream (answering ``request_ids``; none for
        a JSON answer), unique to the session. A count: resuming a stream
        needs the session (and its owner) first, so its id need not be
        unguessable."""
        return str(next(self._stream_ids))

    def _forget_later(self, stream: EventStream) -> None:
        """A finished stream stays resumable for a while (its last events may
        not have reached a client whose connection just dropped): for
        finished_stream_retention seconds, and only the newest
        finished_streams_kept of the session. What is due is forgotten here,
        with no timer per stream (a timer would also hold a closed session's
        streams until it fired)."""
        now = time.monotonic()
        finished = self._finished
        finished.append((now + self._retention, stream.id))
        while finished and (finished[0][0] <= now or len(finished) > self._finished_kept):
            self.streams.pop(finished.popleft()[1], None)


class HttpSession:
    def __init__(
        self,
        session_id: str | None,
        server: Server,
        options: HttpOptions,
        owner: str | None = None,
        transport: HttpSessionTransport | None = None,
    ) -> None:
        self.id = session_id
        # Sent with each answer; encoded once, not per POST.
        self.id_headers: tuple[tuple[bytes, bytes], ...] = (
            ((b"mcp-session-id", session_id.encode()),) if session_id else ()
        )
        self.owner = owner  # the key of the principal that opened it: only it may use it
        self.transport = transport if transport is not None else HttpSessionTransport(options)
        self.transport.session_id = session_id
        if session_id is not None:
            self.transport.owner = ownership.session_owner(session_id)
        self.session = ServerSession(server, self.transport)
        self.task = asyncio.get_running_loop().create_task(self.session.run())
        self.last_seen = time.monotonic()
        self.in_flight = 0
        self.client = ""  # limits.peer_key (or the app's client_key) of whoever opened it
        self.used = False  # whether a request came after initialize

    def feed(
        self,
        message: bytes,
        principal: Principal | None,
        identity: ClientIdentity,
        envelope: Envelope | None = None,
        headers: Mapping[str, str] | None = None,
        close_stream: Callable[[], None] | None = None,
    ) -> None:
        """Dispatch a POSTed message with requests now, in the POST's task: not
        queued for the session's reader (a task switch less per request).
        ``identity``: the POST's client; ``envelope``: the message, a single
        request, as the POST decoded it (the session then skips its own pass
        over it); ``headers``: the POST's; ``close_stream``: ends the POST's
        SSE stream early (None for a JSON answer)."""
        self.transport.identity = identity
        extra = RequestExtra(principal, identity, headers, close_stream)
        if envelope is not None and is_request(envelope):
            self.session.feed(Message(data=message, envelope=envelope, extra=extra))
            return
        self.session.feed(Message(data=message, extra=extra))
        if b"notifications/cancelled" in message:  # one of a batch
            self.transport.end_cancelled(message)

    @property
    def busy(self) -> bool:
        """Whether a request is running or a stream is connected: not idle, however long since the last HTTP request."""
        return (
            self.in_flight > 0
            or self.session.requests_running > 0
            or any(stream.live is not None for stream in self.transport.streams.values())
        )

    async def close(self) -> None:
        await self.session.close()
        try:
            await self.task
        except Exception:
            pass


class SessionTable:
    """The handshake sessions of one app: this process's copy of each, by id.

    What differs between keeping sessions here and sharing them through a store is in the
    methods a table overrides (``open``, ``find``, ``deliver``, ``serve_get``, ``end``);
    the app calls them alike."""

    started = True
    """Whether :meth:`start` has run (a table with nothing to start is started)."""

    def __init__(
        self, server: Server, options: HttpOptions, places: Places, slow_answers: SlowAnswers
    ) -> None:
        self.server = server
        self.options = options
        self.places = places
        self.slow_answers = slow_answers
        self.quota = Quota(options.max_sessions_per_client)
        self.sessions: dict[str, HttpSession] = {}
        self._reaper: asyncio.Task[None] | None = None
        self._purger: asyncio.Task[None] | None = None

    # ------------------------------------------------------------ what differs

    async def start(self) -> None:
        """Connect what the table needs (at lifespan startup, else at the first request)."""

    async def open(self, session_id: str, owner: str | None, client: str) -> HttpSession | str:
        """A new session for ``client`` (initialize), or why there is no room (503)."""
        raise NotImplementedError

    async def find(self, headers: dict[str, str], owner: str | None) -> Found:
        """The session a request names; another owner's session is unknown."""
        raise NotImplementedError

    async def deliver(
        self,
        http_session: HttpSession,
        body: bytes,
        principal: Principal | None,
        identity: ClientIdentity,
    ) -> str | None:
        """Hand a POST of notifications and responses (from ``identity``) to the
        session; why not (503), if not."""
        http_session.transport.receive(body, principal, identity)
        return None

    async def serve_get(
        self,
        http_session: HttpSession,
        headers: dict[str, str],
        send: Send,
        receive: Receive,
        client: str,
    ) -> None:
        """Answer a GET: the standalone stream, or the resumption of one (Last-Event-ID)."""
        raise NotImplementedError

    async def end(self, http_session: HttpSession) -> str | None:
        """End a session (DELETE); why not (503), if not."""
        self.sessions.pop(http_session.id or "", None)
        await http_session.close()
        return None

    # ------------------------------------------------------------ in common

    def transport_for(self, session_id: str, client: str) -> HttpSessionTransport | None:
        """The transport of a new session (None: the plain one)."""
        return None

    def make(self, session_id: str, owner: str | None, client: str = "") -> HttpSession:
        """This process's copy of a session, kept in the table until it ends."""
        http_session = HttpSession(
            session_id, self.server, self.options, owner, self.transport_for(session_id, client)
        )
        self.sessions[session_id] = http_session
        http_session.task.add_done_callback(lambda _: self.forget(session_id, http_session))
        return http_session

    def forget(self, session_id: str, http_session: HttpSession) -> None:
        if self.sessions.get(session_id) is http_session:
            del self.sessions[session_id]
        if http_session.client:
            self.quota.leave(http_session.client)
            http_session.client = ""

    def used(self, http_session: HttpSession) -> None:
        """A request came after initialize: the session is no longer a fresh one."""
        http_session.used = True

    def start_background(self) -> None:
        """Start reaping idle sessions and purging old events, once."""
        if self._reaper is None and self.options.session_timeout is not None:
            self._reaper = asyncio.get_running_loop().create_task(self._reap())
        if self._purger is None:
            self._purger = asyncio.get_running_loop().create_task(self._purge_events())

    async def _purge_events(self) -> None:
        while True:
            await asyncio.sleep(max(0.05, min(self.options.event_retention / 4, 5.0)))
            self.purge_events()

    def purge_events(self) -> int:
        """Forget the events kept for resumption past ``event_retention`` or
        the byte budgets (done in the background); the bytes still kept."""
        options = self.options
        before = time.monotonic() - options.event_retention
        kept = [
            (s.transport.purge(before, options.max_session_replay), s)
            for s in list(self.sessions.values())
        ]
        total = sum(size for size, _ in kept)
        if total > options.max_replay:
            for size, http_session in sorted(kept, key=lambda k: -k[0]):  # the largest first
                total -= http_session.transport.shed(total - options.max_replay)
                if total <= options.max_replay:
                    break
        return total

    async def _reap(self) -> None:
        timeout = self.options.session_timeout
        assert timeout is not None
        while True:
            await asyncio.sleep(min(timeout / 4, 60))
            await self._reap_idle(time.monotonic() - timeout)

    async def _reap_idle(self, cutoff: float) -> None:
        # A function of its own: its loop variable would otherwise keep the
        # last session it looked at (closed since, maybe) alive through the
        # reaper's sleep until the next pass.
        for session_id, http_session in list(self.sessions.items()):
            if http_session.last_seen < cutoff and not http_session.busy:
                self.sessions.pop(session_id, None)
                await http_session.close()

    def stop_background(self) -> None:
        for task in (self._reaper, self._purger):
            if task is not None:
                task.cancel()
        self._reaper = self._purger = None

    async def close_sessions(self) -> None:
        """End every session of this process."""
        sessions, self.sessions = list(self.sessions.values()), {}
        for http_session in sessions:
            await http_session.close()

    async def close(self) -> None:
        """Let go of what :meth:`start` took (the sessions are ended first)."""


class LocalSessions(SessionTable):
    """Sessions kept in this process alone."""

    def __init__(
        self, server: Server, options: HttpOptions, places: Places, slow_answers: SlowAnswers
    ) -> None:
        super().__init__(server, options, places, slow_answers)
        self._unused: dict[str, None] = (
            {}
        )  # sessions with no request since initialize, oldest first
        self._closing = 0  # sessions being closed to make room, still counted under max_sessions

    async def open(self, session_id: str, owner: str | None, client: str) -> HttpSession | str:
        if not await self._room_for_session(client):
            return "Service Unavailable: too many sessions"
        http_session = self.make(session_id, owner)
        http_session.client = client
        self._unused[session_id] = None
        self.quota.take(client)
        return http_session

    async def find(self, headers: dict[str, str], owner: str | None) -> Found:
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            return None, 400, "Bad Request: Mcp-Session-Id header is required"
        session = self.sessions.get(session_id)
        # Another principal's session is as unknown as a made-up id: a stolen
        # session id is of no use without its owner's token.
        if session is None or session.session.is_closed or session.owner != owner:
            return None, 404, "Not Found: unknown or expired session"
        # Most recently seen last: what the session cap makes room from is found first.
        self.sessions[session_id] = self.sessions.pop(session_id)
        session.last_seen = time.monotonic()
        return session, 200, ""

    def used(self, http_session: HttpSession) -> None:
        http_session.used = True
        self._unused.pop(http_session.id or "", None)

    def forget(self, session_id: str, http_session: HttpSession) -> None:
        super().forget(session_id, http_session)
        self._unused.pop(session_id, None)

    async def serve_get(
        self,
        http_session: HttpSession,
        headers: dict[str, str],
        send: Send,
        receive: Receive,
        client: str,
    ) -> None:
        transport = http_session.transport
        last = headers.get("last-event-id")
        if last is not None:
            stream_id, _, seq = last.partition(":")
            stream = transport.streams.get(stream_id)
            if stream is None or EVENT_SEQ.fullmatch(seq) is None:
                # Not 404: that would tell the client its session is gone.
                await plain(
                    send, 400, "Bad Request: unknown Last-Event-ID (the stream may have expired)"
                )
                return
            after, prime = int(seq), False
        else:
            stream = transport.standalone
            if stream.live is not None:
                await plain(send, 409, "Conflict: this session already has a GET stream")
                return
            # What was sent while no GET stream was open is delivered now.
            after, prime = -1, lifecycle.primes_streams(http_session.session.protocol_version)
        refused, lease = await self.places.hold_stream(client)
        if refused is not None:
            await plain(send, *refused)
            return
        try:
            queue = stream.attach(stream.handed if after < 0 else after)
            await send_stream(
                stream,
                queue,
                send,
                receive,
                http_session.id_headers,
                retry_ms=self.options.retry_ms,
                slow_answers=self.slow_answers,
                prime=prime,
            )
        finally:
            self.places.release_stream(client, lease)

    async def _room_for_session(self, client: str) -> bool:
        """Whether ``client`` may open one more session, after closing an idle
        one if a cap is reached: the client's own when its quota is full,
        anyone's when max_sessions is; never-used sessions first, then the
        least recently seen. False when every candidate is busy.

        A session closed to make room keeps its place under both caps until
        it is closed: an initialize arriving meanwhile finds the cap still
        reached and makes room of its own, so neither cap is passed however
        many come at once (freeing the place first let one take it, and the
        session that made room one more)."""
        while True:
            if self.quota.full(client):
                found = await self._evict_idle(lambda s: s.client == client)
            elif len(self.sessions) + self._closing >= self.options.max_sessions:
                found = await self._evict_idle(lambda s: True)
            else:
                return True  # the caller takes the place before it awaits anything
            if not found:
                return False

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
        session_id = oldest.id or ""
        # Out of the table (no one else picks it), its places still held.
        self.sessions.pop(session_id, None)
        self._unused.pop(session_id, None)
        self._closing += 1
        try:
            await oldest.close()
        finally:
            self._closing -= 1
            self.forget(session_id, oldest)
        return True
