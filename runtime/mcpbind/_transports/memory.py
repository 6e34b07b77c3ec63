"""An in-memory transport: two connected ends in one event loop.

``memory_pair()`` gives a server end and a client end; what one writes the
other reads, with no serialization beyond the JSON each side already does and
no process or socket. Unit tests use it to call a server through a real client
session (``App.test_client()`` wires it up).
"""

from __future__ import annotations

import asyncio
from typing import Any

from .._core.jsonrpc import RequestId
from .._core.limits import local_client
from .._core.wire import Message, RequestExtra


class MemoryTransport:
    """One end of an in-memory connection (see :func:`memory_pair`)."""

    def __init__(
        self,
        inbox: asyncio.Queue[bytes | None],
        outbox: asyncio.Queue[bytes | None],
        principal: Any = None,
    ) -> None:
        # What ctx.extra says of every message read on this end: the principal
        # as if a verified token came with each, and the local client.
        self._extra = RequestExtra(principal, local_client(principal))
        self._inbox = inbox
        self._outbox = outbox
        self._closed = False

    async def read(self) -> Message | None:
        if self._closed:
            return None
        data = await self._inbox.get()
        if data is None:
            self._closed = True
            return None
        return Message(data=data, extra=self._extra)

    def write(self, message: Message) -> None:
        if not self._closed:  # after close, like a broken pipe: dropped
            self._outbox.put_nowait(message.data)

    async def drain(self) -> None:
        """Nothing to wait for: the peer's queue takes every message."""

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            # Both readers stop: the peer's and a read of ours still waiting.
            self._outbox.put_nowait(None)
            self._inbox.put_nowait(None)

    def close_request_stream(self, request_id: RequestId) -> None:
        """Nothing to close: an in-memory connection has no per-request streams."""


def memory_pair(principal: Any = None) -> tuple[MemoryTransport, MemoryTransport]:
    """A connected (server, client) pair of transports; ``principal`` (an
    :class:`mcpbind.auth._principal.Principal`) is the caller the server
    end reports, to test what an authenticated transport would pass on."""
    to_server: asyncio.Queue[bytes | None] = asyncio.Queue()
    to_client: asyncio.Queue[bytes | None] = asyncio.Queue()
    return MemoryTransport(to_server, to_client, principal), MemoryTransport(to_client, to_server)
