"""Noticing that the client of an HTTP request has gone.

ASGI says so only through ``receive()``: once the request body is read, it
returns ``http.disconnect`` when the connection closes, so something has to
wait on it. A task per request doing only that costs about as much as the
rest of a short request (creating, scheduling and cancelling it), so a
``ClientWatch`` starts that task only when an answer is slow to come
(``SlowAnswers``): most answers are written before it would have started.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from .asgi import Receive

ANSWER_GRACE = 0.05
"""Seconds an answer may take before its client is watched (up to twice
that: see SlowAnswers). A client that leaves sooner is noticed that much
later, and its request cancelled then."""


class SlowAnswers:
    """Starts the watches of the answers still being made after a grace:
    one timer for all of them, not one per request. Those added during one
    grace period are started at the end of the next."""

    def __init__(self, grace: float = ANSWER_GRACE) -> None:
        self.grace = grace
        self._young: dict[ClientWatch, None] = {}
        self._old: dict[ClientWatch, None] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def add(self, watch: ClientWatch) -> None:
        # The loop is looked up only to arm the timer: on CPython 3.11 each
        # lookup is a getpid() system call, a few per cent of a short request.
        # A timer left by a loop that has stopped is of no use.
        loop = self._loop
        if self._timer is None or loop is None or not loop.is_running():
            running = asyncio.get_running_loop()
            if loop is not running:
                # An app may outlive its loop (tests run one per loop): what the
                # old one left unanswered is gone with it.
                self._young, self._old, self._timer, self._loop = {}, {}, None, running
            loop = running
        self._young[watch] = None
        if self._timer is None:
            self._timer = loop.call_later(self.grace, self._tick)

    def discard(self, watch: ClientWatch) -> None:
        self._young.pop(watch, None)
        self._old.pop(watch, None)

    def _tick(self) -> None:
        due, self._old, self._young = self._old, self._young, {}
        for watch in due:
            watch.start()
        loop = self._loop
        self._timer = (
            loop.call_later(self.grace, self._tick) if self._old and loop is not None else None
        )


class ClientWatch:
    """Whether the client of one request has disconnected, and what to call when it does.

    Watches from the start (long-lived streams), or, with ``later``, once
    that finds the answer slow, unless ``close()`` comes first. Close it
    when the request is answered."""

    __slots__ = ("_receive", "_later", "_task", "_callbacks", "gone")

    def __init__(self, receive: Receive, later: SlowAnswers | None = None) -> None:
        self._receive = receive
        self._task: asyncio.Task[None] | None = None
        self._callbacks: list[Callable[[], None]] = []
        self.gone = False
        self._later = later
        if later is not None:
            later.add(self)
        else:
            self.start()

    def start(self) -> None:
        """Watch from now on."""
        self._later = None
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
        """Stop watching. Drops the task, which refers back to the watch: no
        reference cycle is left for the collector."""
        if self._later is not None:
            self._later.discard(self)
            self._later = None
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
_T_co = TypeVar("_T_co", covariant=True)


class Queue(Protocol[_T_co]):
    """What next_or_gone reads: an asyncio.Queue, or a queues.OneReaderQueue."""

    def empty(self) -> bool: ...

    def get_nowait(self) -> _T_co: ...

    def get(self) -> Awaitable[_T_co]: ...


async def next_or_gone(queue: Queue[_T], watch: ClientWatch) -> _T | Gone:
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
