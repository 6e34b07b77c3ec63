"""Resource subscriptions through a host: ``async with host.subscribe(uri) as
updates`` subscribes with the server that offers ``uri`` (``resources/subscribe``,
or a ``subscriptions/listen`` stream at 2026-07-28) and yields each
``notifications/resources/updated`` for it; leaving the block unsubscribes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from .._client.client import ClientSession


class Updates:
    """The update notifications of one subscription, as an async iterator."""

    def __init__(self, uri: str, server: str) -> None:
        self.uri = uri
        self.server = server
        self._queue: asyncio.Queue[Any] = asyncio.Queue()

    def put(self, params: Any) -> None:
        self._queue.put_nowait(params)

    def __aiter__(self) -> Updates:
        return self

    async def __anext__(self) -> Any:
        return await self._queue.get()


class Subscriptions:
    """A host's open subscriptions, by server and URI."""

    def __init__(self) -> None:
        self._open: dict[tuple[str, str], set[Updates]] = {}

    def updated(self, server: str, params: Any) -> None:
        for updates in self._open.get((server, str(params.uri)), ()):
            updates.put(params)

    @contextlib.asynccontextmanager
    async def subscribe(
        self,
        uri: str,
        server: str,
        session: ClientSession,
        request: Callable[[str, str, dict[str, Any]], Any],
    ) -> AsyncIterator[Updates]:
        updates = Updates(uri, server)
        key = (server, uri)
        self._open.setdefault(key, set()).add(updates)
        listener: Any = None
        try:
            if session.stateless:
                listener = await session.listen(resource_subscriptions=[uri])
            else:
                await request(server, "resources/subscribe", {"uri": uri})
            yield updates
        finally:
            self._open[key].discard(updates)
            if not self._open[key]:
                del self._open[key]
                if listener is not None:
                    await listener.close()
                elif not session.closed.is_set():
                    with contextlib.suppress(Exception):  # the server may be gone meanwhile
                        await request(server, "resources/unsubscribe", {"uri": uri})
