"""The transport of a handshake session whose streams are logged to a shared store.

Each request stream's events are written to the store as they go (with what the stream
answers), and the session's GET stream lives only there, so that a client cut off from
one worker resumes on another (see :mod:`mcp_runtime.http.shared_sessions`). The
handshake, and any change of log level, is stored before the client hears of it.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from typing import Any, Protocol

import msgspec

from ..server import ServerSession
from ..stores.base import StoreUnavailable
from ..wire import RESPONSE, Message
from .events import EventStream
from .options import HttpOptions
from .sessions import HttpSession, HttpSessionTransport
from .store_log import STANDALONE, About, StoreWriter

logger = logging.getLogger("mcp_runtime.stores")


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
    come together, are one write. The first carries what the stream
    answers (or :meth:`known` writes that alone, before any event)."""

    def __init__(self, shared: SessionLog, key: str, about: bytes) -> None:
        self.shared = shared
        self.key = key
        self.about: bytes | None = about
        self.pending: tuple[int, bytes] | None = None
        self.ended = False
        # While known() writes: the events sent meanwhile, queued after it (in order).
        self.held: list[tuple[int, bytes | None, bool]] | None = None

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
        """Wait until the store knows the stream (what it answers; its id
        names this worker), so that a client may resume it on any worker,
        even once this one is dead. Written at once, not queued behind the
        worker's other writes: with its first event when there is one (no
        round trip of its own), else alone."""
        if self.about is None:  # the first event is queued already, saying it
            written: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self.shared.writer.after(self.key, written)
            await written
            return
        about, self.about = self.about, None
        first, self.pending = self.pending, None
        ended, self.ended = self.ended, False
        self.held = []
        try:
            await self.shared.writer.now(self.key, about, first, ended)
        finally:
            held, self.held = self.held, None
            for seq, message, end in held:
                self.shared.writer.log_event(self.key, seq, message, end)

    def flush(self) -> None:
        if self.pending is not None:
            seq, message = self.pending
            self.pending = None
            about, self.about = self.about, None
            self._write(seq, message, self.ended, about)

    def _write(
        self, seq: int, message: bytes | None, end: bool = False, about: bytes | None = None
    ) -> None:
        if self.held is not None:
            self.held.append((seq, message, end))  # ``about`` went with known()'s write
        else:
            self.shared.writer.log_event(self.key, seq, message, end, about)


class SharedSessionTransport(HttpSessionTransport):
    """An HTTP session's transport whose streams are logged to the store."""

    def __init__(self, shared: SessionLog, session_id: str) -> None:
        super().__init__(shared.options)
        self.shared = shared
        self.session_id = session_id
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
            log = _StreamLog(self.shared, f"{self.session_id}:{stream.id}", about)
            stream.log = log
            stream.known = log.known
        return stream

    def new_stream_id(self) -> str:
        # Counted by the worker, not the session: this worker's copy of a
        # session may be rebuilt, and its logs must not be written twice.
        return f"{self.shared.worker}.{next(self.shared.stream_ids)}"

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
