"""Streamable HTTP sessions shared by several workers through a store.

Each worker keeps its own copy of a session it serves (a ServerSession built
on demand from the stored record: revision, client capabilities and info, log
level), so any worker answers a request naming a live session. Request
streams are answered by the worker that runs the request and logged to the
store as they go; the session's GET stream is only in the store (any worker
may write to it and any worker may hold it). A client cut off from one worker
resumes on another with ``Last-Event-ID``: the follower replays what the log
holds after that id, then goes on live.

Each worker keeps a heartbeat in the store. A request stream's id names the
worker running the request, and its log says which requests it answers: a
client resuming on a survivor the stream of a worker that died gets what
the log holds, then a JSON-RPC error for each request left unanswered, and
the stream ends (written to the log, so every later resumption ends alike).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import secrets
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from .. import codec, jsonrpc, lifecycle
from ..jsonrpc import RequestId
from ..session import LOG_LEVELS
from ..stores.base import Store, StoreUnavailable, current_note
from ..stores.quotas import SharedQuota
from ..wire import RESPONSE, Message

if TYPE_CHECKING:
    from ..server import ServerSession
    from .streamable import HttpSession, Receive, Send, StreamableHTTPApp

logger = logging.getLogger("mcp_runtime.stores")

STANDALONE = "g"
"""The id of every session's GET stream (its events are numbered by the store)."""
SESSION_TTL_UNBOUNDED = 24 * 3600.0
"""The expiry of sessions of an app without session_timeout (refreshed on use)."""
_FOLLOW_WAIT = 15.0  # seconds a follower waits for events before a keepalive comment
HEARTBEAT_EVERY = 2.0
"""Seconds between a worker's heartbeats."""
HEARTBEAT_TTL = 3 * HEARTBEAT_EVERY
"""A worker not heard of for this long is dead."""
_WRITE_BATCH = (
    63  # more queued writes sent together, at most (bounds the store connections a worker opens)
)
_ORPHAN_CHECK = (
    HEARTBEAT_TTL / 2
)  # a request stream's follower looks at its worker this often while idle
_MAX_LAST_EVENT_DIGITS = 18


class _Record(msgspec.Struct, omit_defaults=True):
    """What a worker needs to serve a session it did not start."""

    v: str = ""  # the negotiated revision ("" until initialize succeeded)
    c: Any = None  # client capabilities
    i: Any = None  # client info
    l: str = "debug"  # log level  # noqa: E741
    d: Any = None  # the capabilities the server declared
    o: str | None = None  # the key of the principal that opened it (authorization on)
    k: str = ""  # the client key it counts against (max_sessions_per_client)


class _Note(msgspec.Struct):
    k: str
    s: str = ""
    b: bytes = b""  # a relayed POST body


class _About(msgspec.Struct):
    """What a request stream answers (kept beside its log)."""

    r: list[RequestId]


class _Answer(msgspec.Struct):
    id: RequestId | None = None
    method: str | None = None


_decode_record = msgspec.json.Decoder(_Record)
_decode_note = msgspec.json.Decoder(_Note)
_decode_about = msgspec.json.Decoder(_About)
_decode_answer = msgspec.json.Decoder(_Answer | list[_Answer])


class SharedSessions:
    """The shared side of one StreamableHTTPApp."""

    def __init__(self, app: StreamableHTTPApp, store: Store) -> None:
        self.app = app
        self.store = store
        self.ttl = app.session_timeout if app.session_timeout is not None else SESSION_TTL_UNBOUNDED
        # A session's expiry is pushed back at most this often per worker
        # (not on every request); a deletion reaches workers over the bus.
        self.touch_every = min(self.ttl / 10, 30.0)
        self.started = False
        self._followed: set[str] = set()  # sessions whose GET stream a connection here holds
        self._writes: asyncio.Queue[tuple[str, Callable[[], Coroutine[Any, Any, Any]]]] = (
            asyncio.Queue()
        )
        self._writer: asyncio.Task[None] | None = None
        self._down = False
        self.worker = secrets.token_hex(6)
        """This worker's name in the store (its heartbeat, its request streams' ids)."""
        self.stream_ids = itertools.count(1)
        self._heart: asyncio.Task[None] | None = None
        per_client = app._session_quota.limit
        # A session's place lives as long as the session: renewed when its expiry is pushed back.
        self.per_client = (
            None
            if per_client is None
            else SharedQuota(store, "sessions", per_client, self.ttl, renew=False)
        )
        store.subscribe(self._on_published)

    async def start(self) -> None:
        if self.started:
            return
        self.started = True
        loop = asyncio.get_running_loop()
        self._writer = loop.create_task(self._write_in_order(), name="mcp-store-writer")
        await self.store.start()
        self._heart = loop.create_task(self._beat(), name="mcp-store-heartbeat")

    async def close(self) -> None:
        if self.per_client is not None:
            await self.per_client.close()
        for task in (self._writer, self._heart):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._writer = self._heart = None
        await self.store.close()
        self.started = False

    # ------------------------------------------------------------ writes

    def enqueue(self, key: str, write: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        """Write in the background; the writes of one ``key`` in order (the
        events of a stream stay in sequence), those of different keys together."""
        self._writes.put_nowait((key, write))

    async def _write_in_order(self) -> None:
        # One write at a time cannot keep up with a busy worker (a round trip
        # each): what is queued goes out at once, a chain per key, in parallel.
        while True:
            chains: dict[str, list[Callable[[], Coroutine[Any, Any, Any]]]] = {}
            key, write = await self._writes.get()
            chains[key] = [write]
            for _ in range(_WRITE_BATCH):
                if self._writes.empty():
                    break
                key, write = self._writes.get_nowait()
                chains.setdefault(key, []).append(write)
            await asyncio.gather(*(self._write_chain(chain) for chain in chains.values()))

    async def _write_chain(self, chain: list[Callable[[], Coroutine[Any, Any, Any]]]) -> None:
        for write in chain:
            try:
                await write()
                if self._down:
                    logger.warning(
                        "the shared store is reachable again; stream events are kept again"
                    )
                    self._down = False
            except StoreUnavailable as error:
                if not self._down:
                    logger.warning("stream events are not kept for resumption while %s", error)
                    self._down = True

    def _remember(self, mark: str, handed: int) -> None:
        self.enqueue(mark, lambda: self.store.set_mark(mark, handed, self.ttl))

    def log_event(
        self,
        key: str,
        seq: int,
        message: bytes | None,
        end: bool = False,
        about: bytes | None = None,
    ) -> None:
        self.enqueue(
            key,
            lambda: self.store.append_at(
                key, seq, message, self.ttl, self.app.event_history, end, about
            ),
        )

    # ------------------------------------------------------------ workers

    async def _beat(self) -> None:
        while True:
            try:
                await self.store.set_mark(f"worker:{self.worker}", 1, HEARTBEAT_TTL)
            except StoreUnavailable:
                pass  # the writer reports the outage
            await asyncio.sleep(HEARTBEAT_EVERY)

    async def _worker_gone(self, stream_id: str) -> bool:
        """Whether the worker whose request stream this is has stopped (no
        heartbeat within HEARTBEAT_TTL)."""
        worker, dot, _ = stream_id.partition(".")
        if not dot or worker == self.worker:
            return False
        return await self.store.get_mark(f"worker:{worker}") == 0

    async def _end_orphan(self, key: str, after: int) -> None:
        """End the log of a request stream whose worker died: a JSON-RPC
        error for each request it has not answered, then the end mark."""
        about = await self.store.stream_about(key)
        if about is None:
            waiting: list[RequestId] = []
        else:
            waiting = list(_decode_about.decode(about).r)
            events, _ = await self.store.read_after(key, 0, 0)
            for _, message in events:
                for answered in _answers_in(message):
                    if answered in waiting:
                        waiting.remove(answered)
        error = "the server worker running this request stopped before answering it; send the request again"
        messages = [
            jsonrpc.error_bytes(request_id, jsonrpc.INTERNAL_ERROR, error) for request_id in waiting
        ]
        for offset, message in enumerate(messages, 1):
            await self.store.append_at(
                key,
                after + offset,
                message,
                self.ttl,
                self.app.event_history,
                offset == len(messages),
            )
        if not messages:
            await self.store.append_at(key, after + 1, None, self.ttl, self.app.event_history)

    def log_standalone(self, key: str, message: bytes) -> None:
        note = current_note.get()
        once = None if note is None else f"{note}"
        self.enqueue(
            key, lambda: self.store.append(key, message, self.ttl, self.app.event_history, once)
        )

    # ------------------------------------------------------------ sessions

    def transport(self, session_id: str, client: str = "") -> SharedSessionTransport:
        transport = SharedSessionTransport(self, session_id)
        transport.client = client
        return transport

    async def admit(self, session_id: str, owner: str | None, client: str) -> str | None:
        """Count a new session app-wide, and against its client's quota; why not, if not."""
        held = False
        try:
            if self.per_client is not None:
                if await self.per_client.take(client, session_id) is None:
                    return "Service Unavailable: too many sessions for this client"
                held = True
            record = msgspec.json.encode(_Record(o=owner, k=client))
            if not await self.store.create_session(
                session_id, record, self.ttl, self.app.max_sessions
            ):
                if held and self.per_client is not None:
                    self.per_client.give(client, session_id)
                return "Service Unavailable: too many sessions"
        except StoreUnavailable as error:
            if held and self.per_client is not None:
                self.per_client.give(client, session_id)
            return f"Service Unavailable: {error}"
        return None

    async def save(
        self, session: ServerSession, session_id: str, owner: str | None, client: str = ""
    ) -> None:
        router = session._server_router
        record = _Record(
            v=session.protocol_version,
            c=msgspec.to_builtins(session.client_capabilities),
            i=msgspec.to_builtins(session.client_info),
            l=router.log_level,
            d=session.declared_capabilities,
            o=owner,
            k=client,
        )
        await self.store.update_session(session_id, msgspec.json.encode(record), self.ttl)

    async def session_for(
        self, headers: dict[str, str], owner: str | None
    ) -> tuple[HttpSession | None, int, str]:
        """The session a request names, this worker's copy (made from the
        store's record if need be); another principal's session is unknown."""
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            return None, 400, "Bad Request: Mcp-Session-Id header is required"
        local = self.app.sessions.get(session_id)
        now = time.monotonic()
        if local is not None and local.owner != owner:
            return None, 404, "Not Found: unknown or expired session"
        if (
            local is not None
            and not local.session.is_closed
            and now - _touched(local) < self.touch_every
        ):
            local.last_seen = now
            return local, 200, ""
        try:
            found = await self.store.touch_session(session_id, self.ttl)
        except StoreUnavailable as error:
            return None, 503, f"Service Unavailable: {error}"
        if found is None:
            if local is not None:
                self.app.sessions.pop(session_id, None)
                await local.close()
            return None, 404, "Not Found: unknown or expired session"
        record = _decode_record.decode(found)
        if self.per_client is not None and record.k:
            self.per_client.renew(record.k, session_id)
        if local is None or local.session.is_closed:
            if record.o != owner:
                return None, 404, "Not Found: unknown or expired session"
            local = self._rebuild(session_id, record)
        else:
            self._follow(local, record)
        if isinstance(local.transport, SharedSessionTransport):
            local.transport.touched = now
        local.last_seen = now
        return local, 200, ""

    def _rebuild(self, session_id: str, record: _Record) -> HttpSession:
        """This worker's copy of a session another worker started."""
        http_session = self.app._new_session(session_id, record.o, record.k)
        session = http_session.session
        if record.v:
            revision = lifecycle.revision(record.v)
            router = session._server_router
            router.adopt(
                record.v,
                _typed(record.c, revision.type("ClientCapabilities")),
                _typed(record.i, revision.type("Implementation")),
            )
            if record.l in LOG_LEVELS:
                router.log_level = record.l
            session.declared_capabilities = record.d
            self.app.server._legacy_sessions.add(session)
            session.initialized.set()
        assert isinstance(http_session.transport, SharedSessionTransport)
        http_session.transport.saved = (record.v, record.l)
        return http_session

    @staticmethod
    def _follow(http_session: HttpSession, record: _Record) -> None:
        """Take a log level another worker's logging/setLevel stored."""
        router = http_session.session._server_router
        if record.l in LOG_LEVELS and record.l != router.log_level:
            router.log_level = record.l
            transport = http_session.transport
            if isinstance(transport, SharedSessionTransport):
                transport.saved = (transport.saved[0], record.l)

    async def forget(self, http_session: HttpSession) -> str | None:
        """End a session on every worker; why not, if not."""
        session_id = http_session.id or ""
        try:
            await self.store.delete_session(session_id)
            transport = http_session.transport
            if (
                self.per_client is not None
                and isinstance(transport, SharedSessionTransport)
                and transport.client
            ):
                self.per_client.give(transport.client, session_id)
            await self.store.publish(msgspec.json.encode(_Note(k="close", s=session_id)))
        except StoreUnavailable as error:
            return f"Service Unavailable: {error}"
        return None

    @staticmethod
    def relays(body: bytes) -> bool:
        """Whether a POST of no requests goes to every worker: responses (the
        client answering the server) and cancellations, which concern a
        request some worker runs; other notifications stay where they land
        (their handlers run once)."""
        return b'"method"' not in body or b"notifications/cancelled" in body

    async def relay(self, session_id: str, body: bytes) -> str | None:
        """Hand ``body`` to every worker's copy of the session; why not, if not."""
        try:
            await self.store.publish(msgspec.json.encode(_Note(k="relay", s=session_id, b=body)))
        except StoreUnavailable as error:
            return f"Service Unavailable: {error}"
        return None

    async def _on_published(self, message: bytes) -> None:
        try:
            note = _decode_note.decode(message)
        except msgspec.MsgspecError:
            return
        if note.k == "relay":
            local = self.app.sessions.get(note.s)
            if local is not None and not local.session.is_closed:
                local.transport.receive(note.b)  # a response no request here waits for is dropped
            return
        if note.k == "close":
            local = self.app.sessions.pop(note.s, None)
            if local is not None:
                await local.close()

    # ------------------------------------------------------------ GET

    async def serve_get(
        self,
        http_session: HttpSession,
        headers: dict[str, str],
        send: Send,
        receive: Receive,
        extra: Sequence[tuple[bytes, bytes]],
    ) -> None:
        from ..disconnect import wait_disconnect
        from .streamable import _SSE_HEADERS, _plain

        session_id = http_session.id or ""
        last = headers.get("last-event-id")
        mark = f"{session_id}:handed"
        try:
            if last is not None:
                stream_id, _, seq = last.partition(":")
                if not (seq.isascii() and seq.isdigit() and len(seq) <= _MAX_LAST_EVENT_DIGITS) or (
                    stream_id != STANDALONE
                    and not await self.store.has_stream(f"{session_id}:{stream_id}")
                ):
                    await _plain(
                        send,
                        400,
                        "Bad Request: unknown Last-Event-ID (the stream may have expired)",
                    )
                    return
                after, prime = int(seq), False
            else:
                if session_id in self._followed:
                    await _plain(send, 409, "Conflict: this session already has a GET stream")
                    return
                # What was sent while no GET stream was open is delivered now.
                stream_id, after, prime = STANDALONE, await self.store.get_mark(mark), True
        except StoreUnavailable as error:
            await _plain(send, 503, f"Service Unavailable: {error}")
            return
        standalone = stream_id == STANDALONE
        key = f"{session_id}:{stream_id}"
        if standalone:
            self._followed.add(session_id)
        http_session.in_flight += 1
        disconnected = asyncio.get_running_loop().create_task(wait_disconnect(receive))
        try:
            await send(
                {"type": "http.response.start", "status": 200, "headers": [*_SSE_HEADERS, *extra]}
            )
            if prime:
                priming = (
                    f"id: {stream_id}:{after}\nretry: {self.app.retry_ms}\ndata: \n\n".encode()
                )
                await send({"type": "http.response.body", "body": priming, "more_body": True})
            orphan_checks = 0
            while True:
                read = asyncio.ensure_future(
                    self.store.read_after(key, after, _FOLLOW_WAIT if standalone else _ORPHAN_CHECK)
                )
                done, _ = await asyncio.wait(
                    {read, disconnected, http_session.task}, return_when=asyncio.FIRST_COMPLETED
                )
                if read not in done:
                    read.cancel()
                    if disconnected in done:
                        return  # the client went away; the log stays for a resuming client
                    break  # the session ended
                try:
                    events, ended = read.result()
                except StoreUnavailable as error:
                    logger.warning("ending an SSE stream: %s (the client may resume it)", error)
                    break
                for seq_number, message in events:
                    chunk = (
                        f"id: {stream_id}:{seq_number}\nevent: message\ndata: ".encode()
                        + message
                        + b"\n\n"
                    )
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    after = seq_number
                if ended:
                    break
                if events and standalone:
                    self._remember(mark, after)
                elif not events:
                    if not standalone:
                        try:
                            gone = await self._worker_gone(stream_id)
                            # Twice in a row: a store that just came back has no heartbeats yet.
                            orphan_checks = orphan_checks + 1 if gone else 0
                            if orphan_checks >= 2:
                                await self._end_orphan(key, after)
                        except StoreUnavailable as error:
                            logger.warning(
                                "ending an SSE stream: %s (the client may resume it)", error
                            )
                            break
                        if gone:
                            continue
                    await send({"type": "http.response.body", "body": b":\n\n", "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass  # the connection broke: as above
        finally:
            disconnected.cancel()
            http_session.in_flight -= 1
            if standalone:
                self._followed.discard(session_id)


def _answers_in(message: bytes) -> list[RequestId]:
    """The ids of the responses in a logged message (or batch)."""
    try:
        found = _decode_answer.decode(message)
    except msgspec.MsgspecError:
        return []
    items = found if isinstance(found, list) else [found]
    return [item.id for item in items if item.method is None and item.id is not None]


def _touched(http_session: HttpSession) -> float:
    transport = http_session.transport
    return transport.touched if isinstance(transport, SharedSessionTransport) else 0.0


def _typed(value: Any, type_: Any) -> Any:
    """A stored client value as the revision's type (as the handshake decoded it)."""
    if value is None:
        return None
    try:
        return codec.convert(value, type_)
    except msgspec.ValidationError:
        return value


# The transport is defined here, after SharedSessions, but subclasses the
# HTTP session transport: imported late, as streamable_http imports this
# module only when a shared store is in use.
from .streamable import EventStream, HttpSessionTransport  # noqa: E402


class _SharedStandalone(EventStream):
    """A session's GET stream when it lives in the store: every message goes to the log."""

    def __init__(self, shared: SharedSessions, key: str) -> None:
        super().__init__(STANDALONE, None, 1)
        self.shared = shared
        self.key = key

    def send(self, message: bytes) -> None:
        self.shared.log_standalone(self.key, message)


class _StreamLog:
    """Logs a request stream's events. An event is written once the loop
    turns (call_soon), so that a response and the end of its stream, which
    come together, are one write. The first carries what the stream
    answers."""

    def __init__(self, shared: SharedSessions, key: str, about: bytes) -> None:
        self.shared = shared
        self.key = key
        self.about: bytes | None = about
        self.pending: tuple[int, bytes] | None = None
        self.ended = False

    def __call__(self, seq: int, message: bytes | None) -> None:
        if message is None:
            if self.pending is not None:
                self.ended = True
            else:
                self.shared.log_event(self.key, seq, None)
            return
        if self.pending is not None:
            self.flush()
        self.pending = (seq, message)
        asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        if self.pending is not None:
            seq, message = self.pending
            self.pending = None
            about, self.about = self.about, None
            self.shared.log_event(self.key, seq, message, self.ended, about)


class SharedSessionTransport(HttpSessionTransport):
    """An HTTP session's transport whose streams are logged to the store."""

    def __init__(self, shared: SharedSessions, session_id: str) -> None:
        super().__init__(shared.app.event_history, shared.app.max_stream_buffer)
        self.shared = shared
        self.session_id = session_id
        del self.streams[self.standalone.id]
        self.standalone = _SharedStandalone(shared, f"{session_id}:{STANDALONE}")
        self.saved: tuple[str, str] = ("", "debug")  # the revision and log level the store holds
        self.touched = (
            time.monotonic()
        )  # when the store last confirmed the session (and pushed its expiry back)
        self.client = ""  # the client key the session counts against

    def open_stream(self, request_ids: Any, json: bool = False) -> EventStream:
        stream = super().open_stream(request_ids, json)
        if not json:
            about = msgspec.json.encode(_About(r=list(stream.expected or ())))
            stream.log = _StreamLog(self.shared, f"{self.session_id}:{stream.id}", about)
        return stream

    def new_stream_id(self) -> str:
        # Counted by the worker, not the session: this worker's copy of a
        # session may be rebuilt, and its logs must not be written twice.
        return f"{self.shared.worker}.{next(self.shared.stream_ids)}"

    def write(self, message: Message) -> None:
        session = self.session
        if message.kind is RESPONSE and session is not None:
            state = (session.protocol_version, session._server_router.log_level)
            if state != self.saved:
                # The handshake (or a new log level): stored before the client
                # hears of it, so its next request may land on any worker.
                self.saved = state
                asyncio.get_running_loop().create_task(self._save_then_write(session, message))
                return
        super().write(message)

    async def _save_then_write(self, session: ServerSession, message: Message) -> None:
        try:
            http_session = self.shared.app.sessions.get(self.session_id)
            owner = None if http_session is None else http_session.owner
            await self.shared.save(session, self.session_id, owner, self.client)
        except StoreUnavailable as error:
            logger.warning(
                "a session's state is not shared (other workers will not know it): %s", error
            )
        super().write(message)

    @property
    def session(self) -> ServerSession | None:
        http_session = self.shared.app.sessions.get(self.session_id)
        return None if http_session is None else http_session.session


__all__ = ["STANDALONE", "SharedSessionTransport", "SharedSessions"]
