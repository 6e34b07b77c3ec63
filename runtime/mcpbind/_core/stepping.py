"""Taking an awaitable's first step by hand, and awaiting the rest later.

Most of what a request awaits is ready when it asks (a body that has
arrived, a handler that answers without waiting). Stepping it by hand tells
whether it was, so that only what has to wait pays for waiting: a deadline,
a client watch, a look-up of the running task (a system call on CPython 3.11).
"""

from __future__ import annotations

import types
from collections.abc import Awaitable, Coroutine, Generator, Iterator
from typing import Any, Generic, TypeVar, cast

T = TypeVar("T")


class Pending(Generic[T]):
    """An awaitable stopped at its first wait; ``await pending.rest()`` carries it on."""

    __slots__ = ("_steps", "_waiting_on")

    def __init__(self, steps: Generator[Any, Any, T], waiting_on: Any) -> None:
        self._steps = steps
        self._waiting_on = waiting_on

    def rest(self) -> Awaitable[T]:
        return resumed(self._steps, self._waiting_on)


def step(awaitable: Awaitable[T]) -> T | Pending[T]:
    """What ``awaitable`` gives, if it gives it without waiting; else where it stopped."""
    steps = awaitable.__await__()
    try:
        # next(), not send(None): some awaitables (an ASGI server's receive()
        # written in Rust) are bare iterators, as await allows.
        waiting_on = next(steps)
    except StopIteration as done:
        result: T = done.value
        return result
    return Pending(steps, waiting_on)


@types.coroutine
def one_pass() -> Generator[None, None, None]:
    """Let the event loop run what is ready, once, as ``asyncio.sleep(0)``
    does, without its two frames: a frame costs each time the task is
    suspended or resumed through it."""
    yield


@types.coroutine
def resumed(
    steps: Coroutine[Any, Any, T] | Generator[Any, Any, T], waiting_on: Any
) -> Generator[Any, Any, T]:
    """Await ``steps`` (a coroutine, or an awaitable's ``__await__()``) from
    where its first step left it, waiting on ``waiting_on`` (what it yielded
    to the event loop); what it returns. As ``await`` would: what is sent in
    goes on to ``steps``, what is thrown in (a cancellation) is thrown into
    it, or raised here when it is a bare iterator, which cannot take it."""
    send = getattr(steps, "send", None)  # a coroutine has no __next__, a bare iterator no send
    while True:
        try:
            sent = yield waiting_on
        except GeneratorExit:
            close = getattr(steps, "close", None)
            if close is not None:
                close()
            raise
        except BaseException as error:
            throw = getattr(steps, "throw", None)
            if throw is None:
                raise
            try:
                waiting_on = throw(error)
            except StopIteration as done:
                result: T = done.value
                return result
        else:
            try:
                waiting_on = send(sent) if send is not None else next(cast(Iterator[Any], steps))
            except StopIteration as done:
                result = done.value
                return result
