"""Writing a worker's stream events to the shared store, and ending what a dead worker
left unanswered.

Events are written in the background, in order per stream, so that a request is never
slowed by a round trip to the store. A request stream's id names its worker and, when
they are short enough, the requests it answers (:func:`request_stream_id`): a survivor
given a stream of a dead worker that left no log ends it with an error for each of them.
A stream whose ids are too long for that sends its priming event only once the store
knows what it answers, so that a client may resume it on any worker even if this one
dies. While the store is unreachable events are not kept for resumption (a warning says
so once, and once again when it is back).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
import re
from collections.abc import Callable, Collection, Coroutine
from typing import Any

import msgspec

from ...._core import jsonrpc
from ...._core.jsonrpc import RequestId
from ....stores._base import Store, StoreUnavailable, current_note

logger = logging.getLogger(__name__)

STANDALONE = "g"
"""The id of every session's GET stream (its events are numbered by the store)."""
# More queued writes sent together, at most (bounds the store connections a worker opens).
_WRITE_BATCH = 63
# Seconds a closing writer spends writing what is queued, at most.
_CLOSE_FLUSH = 2.0
# Characters of a request stream's id that may say which requests it answers, at most:
# its every event carries the id, and a client sends it back as Last-Event-ID.
_CARRIED_IDS = 96
# What carries them: base64url (no padding) of their JSON list. Nothing in it means
# anything in an SSE id, a header, an event id ("<stream>:<n>") or a Redis Cluster key.
_CARRIED = re.compile(rf"[A-Za-z0-9_-]{{2,{_CARRIED_IDS}}}", re.ASCII)


class About(msgspec.Struct):
    """What a request stream answers (kept beside its log)."""

    r: list[RequestId]


class _Answer(msgspec.Struct):
    id: RequestId | None = None
    method: str | None = None


decode_about = msgspec.json.Decoder(About)
_decode_answer = msgspec.json.Decoder(_Answer | list[_Answer])
_encode_ids = msgspec.json.Encoder()
_decode_ids = msgspec.json.Decoder(list[RequestId])


def request_stream_id(worker: str, count: int, request_ids: Collection[RequestId]) -> str:
    """A request stream's id: ``<worker>.<count>``, and ``.<the ids it answers>``
    when they fit in _CARRIED_IDS characters (see :func:`carried_ids`)."""
    stream_id = f"{worker}.{count}"
    if request_ids:
        carried = base64.urlsafe_b64encode(_encode_ids.encode(list(request_ids))).rstrip(b"=")
        if len(carried) <= _CARRIED_IDS:
            return f"{stream_id}.{carried.decode()}"
    return stream_id


def carried_ids(stream_id: str) -> list[RequestId] | None:
    """The request ids a request stream's id carries; None if it carries none.

    A client may make up a stream id, and gets no more for it than errors for
    the ids it names, on its own session (see :func:`end_orphan`)."""
    worker, _, rest = stream_id.partition(".")
    count, _, carried = rest.partition(".")
    if not (worker and count.isascii() and count.isdigit() and _CARRIED.fullmatch(carried)):
        return None
    try:
        found = _decode_ids.decode(base64.urlsafe_b64decode(carried + "=" * (-len(carried) % 4)))
    except (binascii.Error, ValueError, msgspec.MsgspecError):
        return None
    return found or None


class StoreWriter:
    """The background writes of one worker to ``store``; entries expire after ``ttl``
    seconds, and a stream's log keeps its newest ``history`` events."""

    def __init__(self, store: Store, ttl: float, history: int) -> None:
        self.store = store
        self.ttl = ttl
        self.history = history
        self._writes: asyncio.Queue[tuple[str, Callable[[], Coroutine[Any, Any, Any]]]] = (
            asyncio.Queue()
        )
        self._writer: asyncio.Task[None] | None = None
        self._down = False
        # Waits for queued writes (see after): released at close, written or not.
        self._written: set[asyncio.Future[None]] = set()
        self._busy = False  # a batch of writes is under way
        self._closing: asyncio.Future[None] | None = None  # set once close() may stop the writer

    def start(self) -> None:
        self._writer = asyncio.get_running_loop().create_task(
            self._write_in_order(), name="mcp-store-writer"
        )

    async def close(self, flush: float = _CLOSE_FLUSH) -> None:
        """Stop writing, once what is queued is written (for ``flush``
        seconds at most, and not while the store is down): a worker that
        stops gracefully leaves the events it sent resumable on the others,
        not an error for answers it gave."""
        if self._writer is not None and not self._down and not self._writer.done():
            drained: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._closing = drained
            if self._writes.empty() and not self._busy:
                drained.set_result(None)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(drained), flush)
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer
        self._writer = None
        for written in list(self._written):
            if not written.done():
                written.set_result(None)

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
            self._busy = True
            try:
                await asyncio.gather(*(self._write_chain(chain) for chain in chains.values()))
            finally:
                self._busy = False
            closing = self._closing
            if closing is not None and self._writes.empty() and not closing.done():
                closing.set_result(None)

    async def _write_chain(self, chain: list[Callable[[], Coroutine[Any, Any, Any]]]) -> None:
        for write in chain:
            await self._attempt(write())

    async def _attempt(self, write: Coroutine[Any, Any, Any]) -> None:
        try:
            await write
            if self._down:
                logger.warning("the shared store is reachable again; stream events are kept again")
                self._down = False
        except StoreUnavailable as error:
            if not self._down:
                logger.warning("stream events are not kept for resumption while %s", error)
                self._down = True

    def remember(self, mark: str, handed: int) -> None:
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
            lambda: self.store.append_at(key, seq, message, self.ttl, self.history, end, about),
        )

    async def now(
        self, key: str, about: bytes, first: tuple[int, bytes] | None, end: bool = False
    ) -> None:
        """Write what a stream is at once, not queued (the caller waits for
        it; nothing of the stream is queued before it), with its first event
        when there is one: one command either way. A store down is reported
        as for queued writes."""
        if first is None:
            await self._attempt(self.store.declare_stream(key, about, self.ttl))
        else:
            seq, message = first
            await self._attempt(
                self.store.append_at(key, seq, message, self.ttl, self.history, end, about)
            )

    def declare(self, key: str, about: bytes) -> None:
        """Write what a stream answers, before any event (queued)."""
        self.enqueue(key, lambda: self.store.declare_stream(key, about, self.ttl))

    def after(self, key: str, written: asyncio.Future[None]) -> None:
        """Set ``written`` once the writes of ``key`` queued so far are done
        (no round trip of its own), or the writer closed."""
        self._written.add(written)
        written.add_done_callback(self._written.discard)
        self.enqueue(key, lambda: _release(written))

    def log_standalone(self, key: str, message: bytes) -> None:
        note = current_note.get()
        once = None if note is None else f"{note}"
        self.enqueue(key, lambda: self.store.append(key, message, self.ttl, self.history, once))


async def _release(written: asyncio.Future[None]) -> None:
    if not written.done():
        written.set_result(None)


async def end_orphan(
    store: Store, key: str, stream_id: str, after: int, ttl: float, history: int
) -> None:
    """End the log of a request stream whose worker died: a JSON-RPC
    error for each request it has not answered (those its log says it
    answers, or else its id), then the end mark."""
    about = await store.stream_about(key)
    waiting = list(decode_about.decode(about).r) if about is not None else carried_ids(stream_id)
    if waiting is None:
        waiting = []
    else:
        events, _ = await store.read_after(key, 0, 0)
        for _, message in events:
            for answered in _answers_in(message):
                if answered in waiting:
                    waiting.remove(answered)
    error = (
        "the server worker running this request stopped before answering it; send the request again"
    )
    messages = [
        jsonrpc.error_bytes(request_id, jsonrpc.INTERNAL_ERROR, error) for request_id in waiting
    ]
    for offset, message in enumerate(messages, 1):
        await store.append_at(
            key,
            after + offset,
            message,
            ttl,
            history,
            offset == len(messages),
        )
    if not messages:
        await store.append_at(key, after + 1, None, ttl, history)


def _answers_in(message: bytes) -> list[RequestId]:
    """The ids of the responses in a logged message (or batch)."""
    try:
        found = _decode_answer.decode(message)
    except msgspec.MsgspecError:
        return []
    items = found if isinstance(found, list) else [found]
    return [item.id for item in items if item.method is None and item.id is not None]
