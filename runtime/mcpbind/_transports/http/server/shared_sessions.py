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
worker running the request and the requests it answers (or, when they are
too many or too long for that, its log says so before the stream's priming
event goes out): a client resuming on a survivor the stream of a worker that
died gets what the log holds, then a JSON-RPC error for each request left
unanswered, and the stream ends (written to the log, so every later
resumption ends alike).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import msgspec

from .... import codec
from ...._core import lifecycle
from ...._core.limits import ClientIdentity
from ...._core.session import LOG_LEVELS
from ...._server.server import Server, ServerSession
from ....auth._principal import Principal
from ....stores._base import Store, StoreUnavailable
from ....stores._quotas import SharedQuota
from ..asgi import Receive, Send
from ..disconnect import SlowAnswers, wait_disconnect
from .answers import SSE_HEADERS, plain
from .events import priming_event
from .options import HttpOptions
from .places import Places
from .sessions import Found, HttpSession, SessionTable
from .shared_transport import SharedSessionTransport
from .store_log import STANDALONE, StoreWriter, carried_ids, end_orphan

logger = logging.getLogger(__name__)

SESSION_TTL_UNBOUNDED = 24 * 3600.0
"""The expiry of sessions of an app without session_timeout (refreshed on use)."""
_FOLLOW_WAIT = 15.0  # seconds a follower waits for events before a keepalive comment
HEARTBEAT_EVERY = 2.0
"""Seconds between a worker's heartbeats."""
HEARTBEAT_TTL = 3 * HEARTBEAT_EVERY
"""A worker not heard of for this long is dead."""
# A request stream's follower looks at its worker this often while idle.
_ORPHAN_CHECK = HEARTBEAT_TTL / 2
_MAX_LAST_EVENT_DIGITS = 18
# Seconds a resumption waits for the log of a stream whose events are still being written.
_LOG_RACE_WAIT = 3.0
# While the worker named by the stream lives, its log is behind, not missing
# (a busy worker writes its events a while after sending them): up to this long.
_LOG_LIVE_WAIT = 30.0


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


_decode_record = msgspec.json.Decoder(_Record)
_decode_note = msgspec.json.Decoder(_Note)


class SharedSessions(SessionTable):
    """The sessions of one app, kept in ``store`` for every worker that serves it."""

    def __init__(
        self,
        server: Server,
        options: HttpOptions,
        places: Places,
        slow_answers: SlowAnswers,
        store: Store,
    ) -> None:
        super().__init__(server, options, places, slow_answers)
        self.store = store
        timeout = options.session_timeout
        self.ttl = timeout if timeout is not None else SESSION_TTL_UNBOUNDED
        # A session's expiry is pushed back at most this often per worker
        # (not on every request); a deletion reaches workers over the bus.
        self.touch_every = min(self.ttl / 10, 30.0)
        self.started = False
        self._followed: set[str] = set()  # sessions whose GET stream a connection here holds
        self.writer = StoreWriter(store, self.ttl, options.event_history)
        self.workers = _Workers(store, self.ttl)
        self.worker = self.workers.name
        """This worker's name in the store (its heartbeat, its request streams' ids)."""
        self.stream_ids = itertools.count(1)
        self._heart: asyncio.Task[None] | None = None
        self._finding = _Lookups()  # session lookups under way
        per_client = options.max_sessions_per_client
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
        self.writer.start()
        await self.store.start()
        self._heart = loop.create_task(self.workers.beat(), name="mcp-store-heartbeat")

    async def close(self) -> None:
        """Stop the writer and the heartbeat, and let go of the store."""
        if self.per_client is not None:
            await self.per_client.close()
        await self.writer.close()
        await self._finding.close()
        heart = self._heart
        # Cancelled until it ends: a cancellation that lands as Redis answers a
        # command sent while it was stalled has been seen lost in the heartbeat's
        # store call (it then beat on, and close() waited forever). A cancellation
        # of close() itself goes on up, instead of being taken for the heartbeat's.
        while heart is not None and not heart.done():
            heart.cancel()
            await asyncio.wait({heart}, timeout=1.0)
        self._heart = None
        await self.store.close()
        self.started = False

    # ------------------------------------------------------------ sessions

    def transport_for(self, session_id: str, client: str) -> SharedSessionTransport:
        transport = SharedSessionTransport(self, session_id)
        transport.client = client
        return transport

    async def open(self, session_id: str, owner: str | None, client: str) -> HttpSession | str:
        # The cap is app-wide, counted in the store (the idle-session
        # eviction and per-client quotas are this process's own).
        refused = await self._admit(session_id, owner, client)
        if refused is not None:
            return refused
        return self.make(session_id, owner, client)

    async def _admit(self, session_id: str, owner: str | None, client: str) -> str | None:
        """Count a new session app-wide, and against its client's quota; why not, if not."""
        held = False
        try:
            if self.per_client is not None:
                if await self.per_client.take(client, session_id) is None:
                    return "Service Unavailable: too many sessions for this client"
                held = True
            record = msgspec.json.encode(_Record(o=owner, k=client))
            if not await self.store.create_session(
                session_id, record, self.ttl, self.options.max_sessions
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
        record = _Record(
            v=session.protocol_version,
            c=msgspec.to_builtins(session.client_capabilities),
            i=msgspec.to_builtins(session.client_info),
            l=session.log_level,
            d=session.declared_capabilities,
            o=owner,
            k=client,
        )
        await self.store.update_session(session_id, msgspec.json.encode(record), self.ttl)

    async def find(self, headers: dict[str, str], owner: str | None) -> Found:
        """The session a request names, this worker's copy (made from the
        store's record if need be); another principal's session is unknown."""
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            return None, 400, "Bad Request: Mcp-Session-Id header is required"
        local = self.sessions.get(session_id)
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
            found = await self._finding.one(
                session_id, lambda: self.store.touch_session(session_id, self.ttl)
            )
        except StoreUnavailable as error:
            return None, 503, f"Service Unavailable: {error}"
        # Whatever copy a request of the session made while this one waited:
        # from here to _rebuild nothing awaits, so a worker makes one copy.
        local = self.sessions.get(session_id)
        if local is not None and local.owner != owner:
            return None, 404, "Not Found: unknown or expired session"
        if found is None:
            if local is not None:
                self.sessions.pop(session_id, None)
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
        http_session = self.make(session_id, record.o, record.k)
        if record.v:
            revision = lifecycle.revision(record.v)
            http_session.session.restore(
                record.v,
                _typed(record.c, revision.type("ClientCapabilities")),
                _typed(record.i, revision.type("Implementation")),
                record.l if record.l in LOG_LEVELS else None,
                record.d,
            )
        assert isinstance(http_session.transport, SharedSessionTransport)
        http_session.transport.saved = (record.v, record.l)
        return http_session

    @staticmethod
    def _follow(http_session: HttpSession, record: _Record) -> None:
        """Take a log level another worker's logging/setLevel stored."""
        session = http_session.session
        if record.l in LOG_LEVELS and record.l != session.log_level:
            session.log_level = record.l
            transport = http_session.transport
            if isinstance(transport, SharedSessionTransport):
                transport.saved = (transport.saved[0], record.l)

    async def end(self, http_session: HttpSession) -> str | None:
        """End a session on every worker; why not, if not."""
        refused = await self._end_everywhere(http_session)
        if refused is not None:
            return refused
        return await super().end(http_session)

    async def deliver(
        self,
        http_session: HttpSession,
        body: bytes,
        principal: Principal | None,
        identity: ClientIdentity,
    ) -> str | None:
        if http_session.id and self.relays(body):
            # Answers to the server's requests (and cancellations) go to
            # the worker whose request is waiting for them, over the bus.
            return await self.relay(http_session.id, body)
        http_session.transport.receive(body, principal, identity)
        return None

    async def _end_everywhere(self, http_session: HttpSession) -> str | None:
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
            local = self.sessions.get(note.s)
            if local is not None and not local.session.is_closed:
                local.transport.receive(note.b)  # a response no request here waits for is dropped
            return
        if note.k == "close":
            local = self.sessions.pop(note.s, None)
            if local is not None:
                await local.close()

    # ------------------------------------------------------------ GET

    def holds_stream(self, session_id: str) -> bool:
        """Whether a connection to this worker holds the session's GET stream."""
        return session_id in self._followed

    async def serve_get(
        self,
        http_session: HttpSession,
        headers: dict[str, str],
        send: Send,
        receive: Receive,
        client: str,
    ) -> None:
        # Any worker may hold the stream: it follows the shared event log.
        refused, lease = await self.places.hold_stream(client)
        if refused is not None:
            await plain(send, *refused)
            return
        try:
            await self._follow_log(http_session, headers, send, receive)
        finally:
            self.places.release_stream(client, lease)

    async def _follow_log(
        self, http_session: HttpSession, headers: dict[str, str], send: Send, receive: Receive
    ) -> None:
        extra = http_session.id_headers
        session_id = http_session.id or ""
        last = headers.get("last-event-id")
        mark = f"{session_id}:handed"
        try:
            if last is not None:
                stream_id, _, seq = last.partition(":")
                unknown = ""
                if not (seq.isascii() and seq.isdigit() and len(seq) <= _MAX_LAST_EVENT_DIGITS):
                    unknown = "the stream may have expired"
                elif stream_id != STANDALONE:
                    unknown = await _unlogged(
                        self.store, f"{session_id}:{stream_id}", stream_id, self.workers
                    )
                if unknown:
                    await plain(send, 400, f"Bad Request: unknown Last-Event-ID ({unknown})")
                    return
                after, prime = int(seq), False
            else:
                if session_id in self._followed:
                    await plain(send, 409, "Conflict: this session already has a GET stream")
                    return
                # What was sent while no GET stream was open is delivered now.
                stream_id, after = STANDALONE, await self.store.get_mark(mark)
                prime = lifecycle.primes_streams(http_session.session.protocol_version)
        except StoreUnavailable as error:
            await plain(send, 503, f"Service Unavailable: {error}")
            return
        standalone = stream_id == STANDALONE
        key = f"{session_id}:{stream_id}"
        if standalone:
            self._followed.add(session_id)
        http_session.in_flight += 1
        disconnected = asyncio.get_running_loop().create_task(wait_disconnect(receive))
        try:
            await send(
                {"type": "http.response.start", "status": 200, "headers": [*SSE_HEADERS, *extra]}
            )
            if prime:
                priming = priming_event(stream_id, after, self.options.retry_ms)
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
                    self.writer.remember(mark, after)
                elif not events:
                    if not standalone:
                        try:
                            gone = await self.workers.gone(stream_id)
                            # Twice in a row: a store that just came back has no heartbeats yet.
                            orphan_checks = orphan_checks + 1 if gone else 0
                            if orphan_checks >= 2:
                                await end_orphan(
                                    self.store,
                                    key,
                                    stream_id,
                                    after,
                                    self.ttl,
                                    self.options.event_history,
                                )
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


class _Workers:
    """This worker's marks in the store, and what they say of the others.

    Besides the heartbeat, a longer mark says that the worker served this
    deployment: a stream named by a worker without one was never this
    deployment's (another's, or made up), not a stream of a worker that
    stopped. The mark outlives the logs of the worker's streams (they expire
    ``ttl`` after their last write) and is renewed every ttl / 3."""

    def __init__(self, store: Store, ttl: float) -> None:
        self.store = store
        self.ttl = ttl
        self.name = secrets.token_hex(6)

    async def beat(self) -> None:
        known_until = 0.0
        while True:
            try:
                await self.store.set_mark(f"worker:{self.name}", 1, HEARTBEAT_TTL)
                if time.monotonic() >= known_until:
                    await self.store.set_mark(f"worker-known:{self.name}", 1, 2 * self.ttl)
                    known_until = time.monotonic() + self.ttl / 3
            except StoreUnavailable:
                pass  # the writer reports the outage
            await asyncio.sleep(HEARTBEAT_EVERY)

    async def known(self, stream_id: str) -> bool:
        """Whether the worker a request stream's id names served this deployment
        (it may have stopped since)."""
        worker = stream_id.partition(".")[0]
        return worker == self.name or await self.store.get_mark(f"worker-known:{worker}") != 0

    async def gone(self, stream_id: str) -> bool:
        """Whether the worker whose request stream this is has stopped (no
        heartbeat within HEARTBEAT_TTL)."""
        worker, dot, _ = stream_id.partition(".")
        if not dot or worker == self.name:
            return False
        return await self.store.get_mark(f"worker:{worker}") == 0


class _Lookups:
    """Store lookups under way, by session id: one however many of a session's
    requests ask at once (a burst on a worker that has not seen the session
    costs one round trip, and makes one copy)."""

    def __init__(self) -> None:
        self.pending: dict[str, asyncio.Task[bytes | None]] = {}

    async def one(
        self, session_id: str, lookup: Callable[[], Coroutine[Any, Any, bytes | None]]
    ) -> bytes | None:
        pending = self.pending.get(session_id)
        if pending is None:
            pending = asyncio.get_running_loop().create_task(lookup())
            self.pending[session_id] = pending
            pending.add_done_callback(lambda done: self._done(session_id, done))
        # Shielded: a request that goes away does not take the others' lookup with it.
        return await asyncio.shield(pending)

    def _done(self, session_id: str, done: asyncio.Task[bytes | None]) -> None:
        if self.pending.get(session_id) is done:
            del self.pending[session_id]
        if not done.cancelled():
            done.exception()  # retrieved: every waiter may have gone

    async def close(self) -> None:
        """Nothing left pending at shutdown."""
        pending = list(self.pending.values())
        for lookup in pending:
            lookup.cancel()
        for lookup in pending:
            with contextlib.suppress(asyncio.CancelledError, StoreUnavailable):
                await lookup


async def _unlogged(store: Store, key: str, stream_id: str, workers: _Workers) -> str:
    """Why a request stream cannot be resumed from the store ("" if it can).

    Its log is there; or, when it is not, the stream is named by a worker's id:
    of a worker this deployment never had (another deployment's, or made up),
    it is unknown at once; else see _logged."""
    if await store.has_stream(key):
        return ""
    if "." in stream_id and not await workers.known(stream_id):
        return "no worker of this server ever had that stream"
    if await _logged(store, key, stream_id, workers.gone):
        return ""
    return "the stream may have expired"


async def _logged(
    store: Store, key: str, stream_id: str, gone: Callable[[str], Awaitable[bool]]
) -> bool:
    """Whether a request stream's log is in the store (or is to be ended
    for its requests). The events of an answer are written just after it
    is sent, so a client may resume before they are there: a stream named
    by a worker's id gets a short while (``_LOG_RACE_WAIT``) to appear,
    renewed while that worker lives (a loaded worker's writes lag) up to
    ``_LOG_LIVE_WAIT``, before it is unknown; one whose worker died
    before writing it is ended with an error for each request its id
    names (see store_log.end_orphan), or else unknown. The caller has
    found the log missing once and the worker one of this deployment's."""
    if "." not in stream_id:
        return False
    now = time.monotonic()
    deadline, longest = now + _LOG_RACE_WAIT, now + _LOG_LIVE_WAIT
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            if await gone(stream_id):
                return carried_ids(stream_id) is not None
            if time.monotonic() >= longest:
                return False
            deadline = min(longest, time.monotonic() + _LOG_RACE_WAIT)
            continue
        # Returns as soon as the first event is written (or after the wait).
        events, ended = await store.read_after(key, 0, min(left, 1.0))
        if events or ended or await store.has_stream(key):
            return True


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


__all__ = ["STANDALONE", "SharedSessionTransport", "SharedSessions"]
