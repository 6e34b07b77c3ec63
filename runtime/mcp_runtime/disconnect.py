"""Noticing that the client of an HTTP request has gone.

ASGI says so only through ``receive()``: once the request body is read, it
returns ``http.disconnect`` when the connection closes, so something has to
wait on it. A task per request doing only that costs about as much as the
rest of a short request (creating, scheduling and cancelling it), so a
``ClientWatch`` starts that task only when an answer is slow to come: most
answers are written before it would have started.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, TypeVar

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]

ANSWER_GRACE = 0.05
"""Seconds an answer may take before its client is watched. A client that
leaves sooner is noticed that much later (its request is cancelled then)."""


class ClientWatch:
    """Whether the client of one request has disconnected, and what to call when it does.

    ``grace`` 0 watches from the start (long-lived streams); else the
    watching starts after ``grace`` seconds, unless ``close()`` comes first.
    Close it when the request is answered."""

    __slots__ = ("_receive", "_timer", "_task", "_callbacks", "gone")

    def __init__(self, receive: Receive, grace: float = 0.0) -> None:
        self._receive = receive
        self._task: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._callbacks: list[Callable[[], None]] = []
        self.gone = False
        if grace > 0:
            self._timer = asyncio.get_running_loop().call_later(grace, self._start)
        else:
            self._start()

    def _start(self) -> None:
        self._timer = None
        self._task = asyncio.get_running_loop().create_task(wait_disconnect(self._receive))
        self._task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        self.gone = True  # a receive() that failed has lost its connection as surely
        for callback in list(self._callbacks):
            callback()

    def add_callback(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the client is gone."""
        self._callbacks.append(callback)

    def remove_callback(self, callback: Callable[[], None]) -> None:
        try:
            self._callbacks.remove(callback)
        except ValueError:
            pass

    def close(self) -> None:
        """Stop watching. Drops the timer and the task, which refer back to the
        watch: no reference cycle is left for the collector."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._task is not None:
            self._task.cancel()
            self._task = None
        self._callbacks.clear()


async def wait_disconnect(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


class Gone:
    """What next_or_gone returns once the client has disconnected."""


GONE = Gone()
_T = TypeVar("_T")


async def next_or_gone(queue: asyncio.Queue[_T], watch: ClientWatch) -> _T | Gone:
    """The next queued item, or GONE once the client has disconnected.

    What is already queued goes out without a wait (and the task and futures
    a wait costs)."""
    if not queue.empty():
        return queue.get_nowait()
    if watch.gone:
        return GONE
    # The wait is on the queue itself, cancelled when the client leaves: no
    # getter task, no asyncio.wait (a cancelled get leaves the item queued).
    task = asyncio.current_task()
    assert task is not None
    waiting = True

    def leave() -> None:
        if waiting:
            task.cancel()

    watch.add_callback(leave)
    try:
        return await queue.get()
    except asyncio.CancelledError:
        if watch.gone and task.uncancel() == 0:
            return GONE
        raise
    finally:
        waiting = False
        watch.remove_callback(leave)
