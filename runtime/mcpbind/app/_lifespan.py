"""The app's lifespan: setup and teardown once per process, around serving.

    @contextlib.asynccontextmanager
    async def lifespan(app: App[State]) -> AsyncIterator[State]:
        db = await aiosqlite.connect("notes.db")
        try:
            yield State(db)
        finally:
            await db.close()

    app = App("notes", lifespan=lifespan)

    @app.tool()
    async def count(ctx: Context[State]) -> int:
        return await ctx.lifespan.db...   # typed: State

It runs around ``app.run()`` over stdio (until end of input, a signal or an
error), the ASGI lifespan of ``app.asgi()`` (uvicorn, granian) and
``app.test_client()``. A failure while starting stops the server with a
one-line reason; teardown runs on every way out.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Generic

from typing_extensions import TypeVar

if TYPE_CHECKING:  # the ASGI types only: a stdio app loads no HTTP module
    from .._transports.http.asgi import Receive, Scope, Send

S = TypeVar("S", default=Any)

# What App(lifespan=...) takes: a function of the app to an async context manager.
LifespanFactory = Callable[[Any], AbstractAsyncContextManager[S]]


THREADS_END_TIMEOUT = 2.0
"""Seconds a lifespan that failed to start waits for the threads it started to end.

A driver's worker thread (aiosqlite's, after a failed connect) reports its
stop to the event loop: were the loop closed first (the server stops), the
thread would die printing a traceback after the one-line reason."""


class LifespanError(RuntimeError):
    """The lifespan failed to start: the server does not serve."""


class Lifespan(Generic[S]):
    """Runs one lifespan (entered at most once at a time) and holds what it yielded."""

    def __init__(self, factory: LifespanFactory[S] | None, app: object) -> None:
        self._factory = factory
        self._app = app
        self._stack: contextlib.AsyncExitStack | None = None
        self._state: S | None = None
        self._users = 0
        self.failed: str | None = None  # why the last start failed, if it did
        # The lifespans of mounted apps: entered after this one, left before it.
        self.children: list[Lifespan[object]] = []

    @property
    def running(self) -> bool:
        return self._stack is not None

    @property
    def state(self) -> S:
        """What the lifespan yielded; RuntimeError before it started."""
        if self._stack is None:
            raise RuntimeError(
                "the app's lifespan has not started (serve the app with run(), asgi() or test_client())"
            )
        return self._state  # type: ignore[return-value]  # None when the app has no lifespan

    async def start(self) -> None:
        """Enter the lifespan (a second user of a running one shares it)."""
        self._users += 1
        if self._stack is not None:
            return
        stack = contextlib.AsyncExitStack()
        threads = set(threading.enumerate())
        try:
            if self._factory is not None:
                self._state = await stack.enter_async_context(self._factory(self._app))
            for child in self.children:
                await child.start()
                stack.push_async_callback(child.stop)
        except BaseException as error:
            self._users -= 1
            await stack.aclose()
            await _threads_end(set(threading.enumerate()) - threads, THREADS_END_TIMEOUT)
            if not isinstance(error, Exception):
                raise  # a cancellation or an interrupt is not a failure to report
            if isinstance(error, LifespanError):  # a mounted app's, already said in one line
                self.failed = str(error)
                raise
            self.failed = f"the app's lifespan failed to start: {_one_line(error)}"
            raise LifespanError(self.failed) from error
        self._stack = stack

    async def stop(self) -> None:
        """Leave the lifespan when its last user stops."""
        self._users = max(0, self._users - 1)
        stack = self._stack
        if stack is None or self._users:
            return
        self._stack, self._state = None, None
        await stack.aclose()


class LifespanASGI:
    """An ASGI app running ``lifespan`` around the ASGI lifespan of ``app``:
    started before the app starts, stopped after it has shut down."""

    def __init__(
        self, app: Callable[[Scope, Receive, Send], Any], lifespan: Lifespan[object]
    ) -> None:
        self.app = app
        self.lifespan = lifespan

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        try:
            await self.lifespan.start()
        except LifespanError as error:
            await send({"type": "lifespan.startup.failed", "message": str(error)})
            return
        first: list[object] = [message]

        async def inner_receive() -> Any:
            return first.pop() if first else await receive()

        async def inner_send(sent: Any) -> None:
            if sent["type"] in ("lifespan.shutdown.complete", "lifespan.shutdown.failed"):
                await self.lifespan.stop()
            await send(sent)

        try:
            await self.app(scope, inner_receive, inner_send)
        finally:
            if self.lifespan.running:  # the app ended without a shutdown (an error, a cancellation)
                await self.lifespan.stop()


async def _threads_end(threads: set[threading.Thread], timeout: float) -> None:
    """Wait, the loop running, for ``threads`` to end (``timeout`` at most)."""
    deadline = time.monotonic() + timeout
    while any(each.is_alive() for each in threads) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
