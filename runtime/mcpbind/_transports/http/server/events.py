"""SSE streams of handshake sessions: numbered events kept for replay, the text of an
event, and sending a stream to its connection.

Every stream starts with a priming event (an id and no data) and a ``retry`` hint, keeps
its recent events, and can be resumed after a dropped connection: the events after
``Last-Event-ID`` are replayed, then the stream goes on live.
"""

from __future__ import annotations

import logging
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence

from ...._core.jsonrpc import ErrorObject, RequestId
from ...._core.queues import OneReaderQueue
from ...._core.stepping import one_pass
from ..asgi import Receive, Send
from ..disconnect import ClientWatch, Gone, SlowAnswers, next_or_gone
from .answers import SSE_HEADERS, whole_sse
from .options import DEFAULT_MAX_STREAM_BUFFER

logger = logging.getLogger(__name__)

Events = OneReaderQueue[tuple[int, bytes] | None]
"""The events of a stream waiting for its connection: (seq, message), None for the end."""

# The number in a Last-Event-ID: ASCII digits only (str.isdigit also takes
# "²" and other digits int() refuses), and few enough to stay a small int.
EVENT_SEQ = re.compile(r"[0-9]{1,15}", re.ASCII)


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
        "waiting", "dropped", "finished", "log", "known", "error",
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
        self.live: Events | None = None
        self.waiting = 0  # bytes queued for the live connection, not yet taken by it
        self.dropped = 0  # connections dropped for not keeping up
        self.finished = False
        # With a shared store: called with each event (seq, message; None
        # for the end) so that other workers can resume the stream.
        self.log: Callable[[int, bytes | None], None] | None = None
        # With a shared store: awaited before the priming event of a stream
        # not answered at once goes out, so that a client resuming from it
        # on another worker finds the stream, even if this worker dies.
        self.known: Callable[[], Awaitable[None]] | None = None
        # The error the last response sent on it says, as its session knew it
        # (a JSON answer's HTTP status is chosen by it); None after a result.
        self.error: ErrorObject | None = None

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

    def took(self, queue: Events, event: tuple[int, bytes]) -> None:
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

    def attach(self, after: int) -> Events:
        """A queue for a new connection: the events after ``after``, then live ones."""
        self.detach()
        queue: Events = OneReaderQueue()
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


def priming_event(stream_id: str, after: int, retry_ms: int) -> bytes:
    """The first event of a stream: its id (to resume from) and the retry hint, no data."""
    return f"id: {stream_id}:{after}\nretry: {retry_ms}\ndata: \n\n".encode()


def event_chunk(stream: EventStream, queue: Events, event: tuple[int, bytes]) -> tuple[bytes, bool]:
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


def events_ready(stream: EventStream, queue: Events) -> tuple[list[bytes], bool]:
    """The SSE text of the events ``queue`` holds now, and whether the stream ended."""
    chunks: list[bytes] = []
    while not queue.empty():
        event = queue.get_nowait()
        if event is None:
            return chunks, True
        chunk, ended = event_chunk(stream, queue, event)
        chunks.append(chunk)
        if ended:
            return chunks, True
    return chunks, False


async def send_stream(
    stream: EventStream,
    queue: Events,
    send: Send,
    receive: Receive,
    extra: Sequence[tuple[bytes, bytes]],
    *,
    retry_ms: int,
    slow_answers: SlowAnswers,
    prime: bool,
    short: bool = False,
) -> None:
    """Send ``stream`` to one connection, from ``queue`` (see EventStream.attach).

    ``short``: a POST's stream (unlike a GET's). It starts one pass of
    the event loop late, so that an answer complete by then goes out
    whole, with its length (chunked encoding costs the server a write
    per event and one more to end), and its client is watched only if
    the answer is slow (the watch is made when it is not complete by then)."""
    watch = None if short else ClientWatch(receive)
    try:
        head = [f"id: {stream.id}:0\nretry: {retry_ms}\ndata: \n\n".encode()] if prime else []
        if short:
            await one_pass()  # a handler that answers without waiting has answered by then
            chunks, ended = events_ready(stream, queue)
            head += chunks
            if ended:
                await whole_sse(send, b"".join(head), extra)
                return
            if stream.known is not None:
                await stream.known()
            watch = ClientWatch(receive, slow_answers)
        await send(
            {"type": "http.response.start", "status": 200, "headers": [*SSE_HEADERS, *extra]}
        )
        if head:
            await send({"type": "http.response.body", "body": b"".join(head), "more_body": True})
        assert watch is not None
        while True:
            event = await next_or_gone(queue, watch)
            if isinstance(event, Gone):
                return  # the client went away: the stream stays for a client that resumes it
            if event is None:
                break
            chunk, ended = event_chunk(stream, queue, event)
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
