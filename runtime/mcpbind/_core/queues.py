"""A queue with one reader, for what a stream or a request has to send.

``asyncio.Queue`` serves many readers and writers (waiter lists, a
``join()`` count, its own event): made per POST, it was a sizeable part of
what a short request costs. This one keeps the part that is used.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


class OneReaderQueue(Generic[T]):
    """Items in order; ``get()`` waits for one. One reader at a time: a
    ``get()`` cancelled leaves what is queued in place, as asyncio.Queue's does."""

    __slots__ = ("_items", "_waiter")

    def __init__(self) -> None:
        self._items: deque[T] = deque()
        self._waiter: asyncio.Future[None] | None = None

    def put_nowait(self, item: T) -> None:
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def get_nowait(self) -> T:
        if not self._items:
            raise asyncio.QueueEmpty
        return self._items.popleft()

    def empty(self) -> bool:
        return not self._items

    def qsize(self) -> int:
        return len(self._items)

    async def get(self) -> T:
        while not self._items:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._items.popleft()
