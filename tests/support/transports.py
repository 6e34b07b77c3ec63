"""In-memory transports for driving sessions without processes.

:func:`memory_pair` returns two connected :class:`MemoryTransport` ends: what
one end writes, the other reads, in order. Either end can be handed to a
:class:`~mcpbind._core.session.Session` or driven by hand (``send``/``receive``)
to put arbitrary bytes on the wire. Every end records what it wrote, and a
test can wait for a message it expects with :meth:`MemoryTransport.wait_sent`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from mcpbind._core import wire
from mcpbind._core.jsonrpc import RequestId
from mcpbind._core.session import Transport
from mcpbind._core.wire import RESPONSE

Message = dict[str, Any]
Predicate = Callable[[Message], bool]


def parse(message: bytes) -> Message:
    value = json.loads(message)
    assert isinstance(value, dict), f"not a JSON object: {message!r}"
    return value


class MemoryTransport:
    """One end of an in-memory, message-framed duplex pipe."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.peer: MemoryTransport | None = None
        self.sent: list[bytes] = []
        self.related: list[tuple[RequestId | None, bool]] = []
        self.closed = False
        # What this end's reads say of each message (a principal, as an
        # authorization gate would set it); None: nothing.
        self.extra: wire.RequestExtra | None = None
        self._inbox: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._waiters: list[asyncio.Future[None]] = []
        self._flowing = asyncio.Event()
        self._flowing.set()

    # ------------------------------------------------------------ Transport

    async def read(self) -> wire.Message | None:
        if self.closed:
            return None
        message = await self._inbox.get()
        if message is None:
            self._inbox.put_nowait(None)  # every later read sees the end too
            return None
        return wire.incoming(message, extra=self.extra)

    def write(self, message: wire.Message) -> None:
        if self.closed or self.peer is None or self.peer.closed:
            return
        self.sent.append(message.data)
        self.related.append((message.related, message.kind is RESPONSE))
        self.peer._inbox.put_nowait(message.data)
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def drain(self) -> None:
        """Returns at once unless :meth:`pause` made the peer stop reading."""
        await self._flowing.wait()

    def close_request_stream(self, request_id: RequestId) -> None:
        return None

    async def close(self) -> None:
        """Close both directions, like a socket: the peer reads end-of-stream."""
        if self.closed:
            return
        self.closed = True
        self._flowing.set()
        self._inbox.put_nowait(None)
        if self.peer is not None:
            self.peer._inbox.put_nowait(None)

    # ------------------------------------------------------------ test helpers

    def pause(self) -> None:
        """Act as if the peer stopped reading: drain() blocks until :meth:`resume`."""
        self._flowing.clear()

    def resume(self) -> None:
        self._flowing.set()

    def send(self, message: bytes | Message) -> None:
        """Put one message on the wire as this end (bytes as they are, dicts as JSON)."""
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.write(wire.Message(data=data))

    async def receive(self, timeout: float = 10.0) -> Message | None:
        """The next message the peer sent, parsed; None at end-of-stream."""
        message = await asyncio.wait_for(self.read(), timeout)
        return None if message is None else parse(message.data)

    def sent_messages(self) -> list[Message]:
        return [parse(message) for message in self.sent]

    async def wait_sent(self, predicate: Predicate, timeout: float = 10.0) -> Message:
        """The first message this end wrote that matches, waiting for it if needed."""

        async def wait() -> Message:
            seen = 0
            while True:
                for message in self.sent[seen:]:
                    parsed = parse(message)
                    if predicate(parsed):
                        return parsed
                seen = len(self.sent)
                waiter = asyncio.get_running_loop().create_future()
                self._waiters.append(waiter)
                await waiter

        return await asyncio.wait_for(wait(), timeout)


def memory_pair(a: str = "a", b: str = "b") -> tuple[MemoryTransport, MemoryTransport]:
    """Two connected ends."""
    left, right = MemoryTransport(a), MemoryTransport(b)
    left.peer, right.peer = right, left
    return left, right


class RecordingTransport:
    """Wraps a transport and records every message written through it."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.sent: list[bytes] = []

    async def read(self) -> wire.Message | None:
        return await self.inner.read()

    def write(self, message: wire.Message) -> None:
        self.sent.append(message.data)
        self.inner.write(message)

    def close_request_stream(self, request_id: RequestId) -> None:
        self.inner.close_request_stream(request_id)

    async def drain(self) -> None:
        await self.inner.drain()

    async def close(self) -> None:
        await self.inner.close()

    def methods(self) -> list[str]:
        """The methods of the requests and notifications written so far."""
        return [m["method"] for m in map(parse, self.sent) if "method" in m]

    def sent_messages(self) -> list[Message]:
        return [parse(message) for message in self.sent]
