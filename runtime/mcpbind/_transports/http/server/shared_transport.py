"""The transport of a handshake session whose streams are logged to a shared store.

Each request stream's events are written to the store as they go (with what the stream
answers), and the session's GET stream lives only there, so that a client cut off from
one worker resumes on another (see :mod:`mcpbind._transports.http.server.shared_sessions`). The
handshake, and any change of log level, is stored before the client hears of it.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Collection
from typing import Any, Protocol

import msgspec

from ...._core.jsonrpc import RequestId
from ...._core.wire import RESPONSE, Message
from ...._server.server import ServerSession
from ....stores._base import StoreUnavailable
from .events import EventStream
from .options import HttpOptions
from .sessions import HttpSession, HttpSessionTransport
from .store_log import STANDALONE, About, StoreWriter, carried_ids, request_stream_id

logger = logging.getLogger(__name__)

DECLARE_AFTER = 1.0
"""Seconds a request stream whose id says what it answers may stay unknown to
the store after its priming event (less than the while a resumption on another
worker waits for a log to appear, ``shared_sessions._LOG_RACE_WAIT``)."""


class SessionLog(Protocol):
    """What a shared session's transport needs of the table that made it."""

    options: HttpOptions
    worker: str
    stream_ids: itertools.count[int]
    sessions: dict[str, HttpSession]
    writer: StoreWriter

    async def save(
        self, session: ServerSession, session_id: str, owner: str | None, client: str = ""
    ) -> None: ...


class _SharedStandalone(EventStream):
    """A session's GET stream when it lives in the store: every message goes to the log."""

    def __init__(self, shared: SessionLog, key: str) -> None:
        super().__init__(STANDALONE, None, 1)  # nothing kept here: the log keeps it
        self.shared = shared
        self.key = key

    def send(self, message: bytes) -> None:
        self.shared.writer.log_standalone(self.key, message)


class _StreamLog:
    """Logs a request stream's events. An event is written once the loop
    turns (call_soon), so that a response and the end of its stream, which
    come together, are one write. The first write says what the stream
    answers, unless its id says it (``carried``)."""

    def __init__(self, shared: SessionLog, key: str, about: bytes, carried: bool) -> None:
        self.shared = shared
        self.key = key
        self.about = about
        self.carried = carried
        self.started = False  # whether a write of the stream is queued (or made)
        self.pending: tuple[int, bytes] | None = None
        self.ended = False
        # While known() writes: the events sent meanwhile, queued after it (in order).
        self.held: list[tuple[int, bytes | None, bool]] | None = None
        self.later: asyncio.TimerHandle | None = None  # the declaration of a quiet stream

    def __call__(self, seq: int, message: bytes | None) -> None:
        if message is None:
            if self.pending is not None:
                self.ended = True
            else:
                self._write(seq, None)
            return
        if self.pending is not None:
            self.flush()
        self.pending = (seq, message)
        asyncio.get_running_loop().call_soon(self.flush)

    async def known(self) -> None:
        """Before the priming event: make sure that a client may resume the
        stream on any worker, even once this one is dead.

        A stream whose id says what it answers needs nothing (a survivor
        ends it with an error for each); its log is declared in the
        background only if it is still quiet DECLARE_AFTER seconds later,
        so that another worker resuming it while this one lives finds it:
        a request answered before then costs the one write of its answer.
        Any other stream is written at once, not queued behind the worker's
        other writes, and waited for: with its first event when there is
        one (no round trip of its own), else alone."""
        if self.carried:
            if not self.started and self.later is None:
                self.later = asyncio.get_running_loop().call_later(DECLARE_AFTER, self._declare)
            return
        if self.started:  # the first event is queued already, saying it
            written: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self.shared.writer.after(self.key, written)
            await written
            return
        self.started = True
        first, self.pending = self.pending, None
        ended, self.ended = self.ended, False
        self.held = []
        try:
            await self.shared.writer.now(self.key, self.about, first, ended)
        finally:
            held, self.held = self.held, None
            for seq, message, end in held:
                self.shared.writer.log_event(self.key, seq, message, end)

    def _declare(self) -> None:
        self.later = None
        if not self.started:
            self.started = True
            self.shared.writer.declare(self.key, self.about)

    def flush(self) -> None:
        if self.pending is not None:
            seq, message = self.pending
            self.pending = None
            self._write(seq, message, self.ended)

    def _write(self, seq: int, message: bytes | None, end: bool = False) -> None:
        if self.held is not None:  # what it answers went with known()'s write
            self.held.append((seq, message, end))
            return
        about = None
        if not self.started:
            self.started = True
            if self.later is not None:
                self.later.cancel()
                self.later = None
            about = None if self.carried else self.about
        self.shared.writer.log_event(self.key, seq, message, end, about)


class SharedSessionTransport(HttpSessionTransport):
    """An HTTP session's transport whose streams are logged to the store."""

    def __init__(self, shared: SessionLog, session_id: str) -> None:
        super().__init__(shared.options)
        self.shared = shared
        self.session_id: str = session_id
        del self.streams[self.standalone.id]
        self.standalone = _SharedStandalone(shared, f"{session_id}:{STANDALONE}")
        self.saved: tuple[str, str] = ("", "debug")  # the revision and log level the store holds
        # When the store last confirmed the session (and pushed its expiry back).
        self.touched = time.monotonic()
        self.client = ""  # the client key the session counts against

    def open_stream(self, request_ids: Any, json: bool = False) -> EventStream:
        stream = super().open_stream(request_ids, json)
        if not json:
            about = msgspec.json.encode(About(r=list(stream.expected or ())))
            key = f"{self.session_id}:{stream.id}"
            log = _StreamLog(self.shared, key, about, carried_ids(stream.id) is not None)
            stream.log = log
            stream.known = log.known
        return stream

    def new_stream_id(self, request_ids: Collection[RequestId]) -> str:
        # Counted by the worker, not the session: this worker's copy of a
        # session may be rebuilt, and its logs must not be written twice.
        return request_stream_id(self.shared.worker, next(self.shared.stream_ids), request_ids)

    def write(self, message: Message) -> None:
        session = self.session
        if message.kind is RESPONSE and session is not None:
            state = (session.protocol_version, session.log_level)
            if state != self.saved:
                # The handshake (or a new log level): stored before the client
                # hears of it, so its next request may land on any worker.
                self.saved = state
                asyncio.get_running_loop().create_task(self._save_then_write(session, message))
                return
        super().write(message)

    async def _save_then_write(self, session: ServerSession, message: Message) -> None:
        try:
            http_session = self.shared.sessions.get(self.session_id)
            owner = None if http_session is None else http_session.owner
            await self.shared.save(session, self.session_id, owner, self.client)
        except StoreUnavailable as error:
            logger.warning(
                "a session's state is not shared (other workers will not know it): %s", error
            )
        super().write(message)

    @property
    def session(self) -> ServerSession | None:
        http_session = self.shared.sessions.get(self.session_id)
        return None if http_session is None else http_session.session
