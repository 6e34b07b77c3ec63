"""The life of a proxied server's connection (see :mod:`.proxy`).

An app's backends are connected together when its lifespan starts: the start
waits for each one's first attempt, all at once, not one after another. A
backend that cannot be started or reached (its command missing, its URL
refusing connections, its process exiting at start) does not stop the app:
its reason is logged, with the last line a stdio server wrote to its stderr,
and it is tried again after a growing delay, as a host's servers are
(:class:`~mcpbind.host._connection.Connection`), its items served once it
connects. The backends are closed together too, so that the app's stop ends
every stdio backend's process group within one bound
(:meth:`mcpbind._transports.stdio.ProcessTransport.close`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Literal, Protocol

from .._client.client import Client
from .._transports.stdio import StdioServerParameters
from ..host._config import ServerConfig, parse_config
from ..host._connection import Connection, RetryPolicy
from ..host._stderr import StderrTail

logger = logging.getLogger(__name__)

Stderr = int | Literal["tail"] | None
"""Where a stdio backend's stderr goes: a file descriptor, None (ours), or
``"tail"`` (read, its last line kept for the reports: :class:`StderrTail`)."""


def backend_config(source: object, prefix: str) -> tuple[ServerConfig, Stderr]:
    """``source`` as a host configuration entry named ``prefix``, and where a
    stdio server's stderr goes."""
    if isinstance(source, Mapping):
        source = parse_config({"mcpServers": {prefix: dict(source)}})[prefix]
    if isinstance(source, ServerConfig):
        # A configuration's servers are many: their stderr would drown the gateway's own.
        # Its last line is kept, the reason to give when the server fails to start.
        return source, "tail"
    if isinstance(source, StdioServerParameters):
        config = ServerConfig(
            name=prefix,
            transport="stdio",
            command=source.command,
            args=tuple(source.args),
            env=dict(source.env or {}),
            cwd=str(source.cwd) if source.cwd is not None else None,
        )
        return config, source.stderr
    if isinstance(source, str) and source.startswith(("http://", "https://")):
        return ServerConfig(name=prefix, transport="auto", url=source), None
    raise TypeError(
        "proxy() serves a StdioServerParameters, an http(s) URL, an mcpServers entry "
        f"(a mapping) or a host ServerConfig, not {type(source).__name__}"
    )


class Supervision:
    """One backend's supervised connection, and what is said of its failures."""

    def __init__(self, prefix: str, config: ServerConfig, stderr: Stderr) -> None:
        self.prefix = prefix
        self.config = config
        self.connection: Connection | None = None
        self._stderr = stderr
        self._tail: StderrTail | None = None
        self._reported = 0  # the failed attempts logged
        self._said: str | None = None  # the reason last logged as a warning

    async def start(
        self,
        client: Client,
        retry: RetryPolicy,
        on_ready: Callable[[Connection], Awaitable[None]],
        on_lost: Callable[[Connection], None],
    ) -> None:
        """Connect, returning once the first attempt has succeeded or failed."""
        stderr: int | None
        if self._stderr == "tail":
            self._tail = StderrTail()
            self._tail.start()
            stderr = self._tail.fd
        else:
            stderr = self._stderr
        connection = Connection(
            self.config,
            client,
            retry=retry,
            on_ready=on_ready,
            on_lost=on_lost,
            on_status=self._status_changed,
            stderr=stderr,
        )
        self.connection = connection
        connection.start()
        await connection.settled.wait()

    async def stop(self) -> None:
        connection, self.connection = self.connection, None  # closing: its loss is no news
        try:
            if connection is not None:
                await connection.stop()
        finally:
            if self._tail is not None:
                self._tail.close()
                self._tail = None

    @property
    def problem(self) -> str | None:
        """Why the backend is not connected (None while it is), with the last
        line a stdio backend wrote to its stderr."""
        connection = self.connection
        if connection is None:
            return "not started"
        status = connection.status
        if status.state == "ready":
            return None
        why = status.error or status.state
        said = self._tail.last_line() if self._tail is not None else None
        return f"{why} (its stderr said: {said})" if said else why

    def _status_changed(self, connection: Connection) -> None:
        status = connection.status
        if connection is not self.connection:
            return
        if status.state == "ready":
            self._reported, self._said = 0, None
        if status.state == "connecting" and self._tail is not None:
            self._tail.forget()  # what an earlier attempt said is not this one's reason
        if status.state not in ("retrying", "failed") or status.failures == self._reported:
            return
        self._reported = status.failures  # one line per failed attempt, not per status
        problem = self.problem
        if status.state == "failed":
            logger.error("proxy %r: not connected, given up: %s", self.prefix, problem)
        elif status.retry_at is not None:
            # Said as a warning when it is news; the same reason again is for the curious.
            level = logging.WARNING if problem != self._said else logging.INFO
            self._said = problem
            delay = max(0.0, status.retry_at - time.monotonic())
            logger.log(
                level,
                "proxy %r: not connected: %s; trying again in %.0f s (attempt %d failed)",
                self.prefix,
                problem,
                delay,
                status.failures,
            )


class Backend(Protocol):
    """What :func:`connected` starts and stops (a :class:`.proxy.Proxy`)."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


@contextlib.asynccontextmanager
async def connected(backends: Sequence[Backend]) -> AsyncIterator[None]:
    """An app's backends, connected at once and closed at once (see the module)."""
    started = list(backends)
    try:
        await asyncio.gather(*(backend.start() for backend in started))
        yield None
    finally:
        await asyncio.gather(*(backend.stop() for backend in started), return_exceptions=True)
