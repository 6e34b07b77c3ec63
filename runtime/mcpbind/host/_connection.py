"""One supervised client per server: connect, watch, and reconnect with backoff.

A :class:`Connection` opens a session to its server within the entry's
``connectTimeout``, tells the host when it is ready and when it is lost, and
after a failure tries again after an exponentially growing delay with jitter
(:class:`RetryPolicy`), until it is stopped or gives up after
``max_attempts`` consecutive failures. Stopping closes the session, which
ends a stdio server's process (stdin closed, then terminated, then killed).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from .._client.client import Client, ClientSession, connect_stdio
from .._core import lifecycle
from .._core.jsonrpc import McpError
from .._core.wire import ClosesWithReason
from .._transports.stdio import StdioServerParameters
from ._config import ServerConfig

if TYPE_CHECKING:  # the 'http' extra, imported when a server is reached by URL
    import httpx2

logger = logging.getLogger(__name__)

State = Literal["connecting", "ready", "retrying", "failed", "stopped"]

Authorize = Callable[[ServerConfig], Awaitable[Mapping[str, str]]]
"""Called before each connection to an HTTP server: headers to send (an
``Authorization`` header, say), from the entry's ``auth`` value. The seam for
per-server authorization."""


@dataclass(frozen=True)
class RetryPolicy:
    """How long to wait before connecting again after the n-th consecutive failure:
    ``min(max_delay, initial_delay * factor ** (n - 1))``, times a random
    factor between ``1 - jitter`` and 1 (so that servers failing together do
    not all retry at once)."""

    initial_delay: float = 1.0
    max_delay: float = 60.0
    factor: float = 2.0
    jitter: float = 0.5
    max_attempts: int | None = None
    """Consecutive failed attempts before the server is given up (None: never)."""

    def delay(self, failures: int, rng: random.Random) -> float:
        base = min(self.max_delay, self.initial_delay * self.factor ** max(0, failures - 1))
        return base * (1 - self.jitter * rng.random())


@dataclass(frozen=True)
class ServerStatus:
    """Where a server stands."""

    name: str
    state: State
    failures: int = 0
    """Consecutive failed attempts (0 once connected)."""
    error: str | None = None
    """Why the last attempt failed or the session was lost."""
    retry_at: float | None = None
    """When the next attempt starts (time.monotonic()), while retrying."""
    protocol_version: str | None = None
    server_info: Any = None


class Connection:
    """The supervised session to one server."""

    def __init__(
        self,
        config: ServerConfig,
        client: Client,
        *,
        retry: RetryPolicy,
        on_ready: Callable[[Connection], Awaitable[None]],
        on_lost: Callable[[Connection], None],
        on_status: Callable[[Connection], None],
        authorize: Authorize | None = None,
        auth: httpx2.Auth | None = None,
        stderr: int | None = None,
    ) -> None:
        self.config = config
        self.client = client
        self.retry = retry
        self.session: ClientSession | None = None
        self.status = ServerStatus(config.name, "connecting")
        self.settled = asyncio.Event()
        """Set once the first attempt has succeeded or failed."""
        self._on_ready = on_ready
        self._on_lost = on_lost
        self._on_status = on_status
        self._authorize = authorize
        self._auth = auth  # the server's OAuth client, kept across reconnections
        self._stderr = stderr
        self._rng = random.Random()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._wake = asyncio.Event()

    @property
    def name(self) -> str:
        return self.config.name

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"mcp-host:{self.name}"
        )

    def retry_now(self) -> None:
        """Try again at once: a server waiting for its next attempt, or one given up."""
        if self._task is None or self._task.done():
            if not self._stopping:
                self.start()
        else:
            self._wake.set()

    async def stop(self) -> None:
        """Close the session (ending a stdio server's process) and stop retrying."""
        task, self._task = self._task, None
        # A cancellation that lands while the session closes can be absorbed there; the
        # flag still ends the loop before it sleeps towards another attempt.
        self._stopping = True
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._set(ServerStatus(self.name, "stopped"))

    async def _run(self) -> None:
        failures = 0
        while True:
            self._set(replace(self.status, state="connecting", retry_at=None))
            try:
                error = await self._session_lifetime()
                failures = 0  # it was up: start the backoff over
            except Exception as failed:  # any failure to start is reported and retried
                error = _describe(failed)
                logger.info("server %s: %s", self.name, error)
            failures += 1
            if self._stopping:
                return
            if self.retry.max_attempts is not None and failures >= self.retry.max_attempts:
                self._set(ServerStatus(self.name, "failed", failures, error))
                self.settled.set()
                return
            delay = self.retry.delay(failures, self._rng)
            self._set(
                ServerStatus(self.name, "retrying", failures, error, time.monotonic() + delay)
            )
            self.settled.set()
            self._wake.clear()
            with contextlib.suppress(TimeoutError):  # retry_now() cuts the wait short
                await asyncio.wait_for(self._wake.wait(), delay)

    async def _session_lifetime(self) -> str:
        """Connect, serve until the session ends, and say why it ended."""
        async with contextlib.AsyncExitStack() as stack:
            async with asyncio.timeout(self.config.connect_timeout):
                session = await stack.enter_async_context(self._open())
                self.session = session
                try:
                    await self._on_ready(self)
                except BaseException:
                    self._lost(None)
                    raise
            self._set(
                ServerStatus(
                    self.name,
                    "ready",
                    protocol_version=session.protocol_version,
                    server_info=session.server_info,
                )
            )
            self.settled.set()
            try:
                failed = await self._watch(session)
            except BaseException:
                self._lost(None)
                raise
            if failed is None:
                transport = session.transport
                detail = (
                    transport.closed_reason() if isinstance(transport, ClosesWithReason) else None
                )
                failed = f"connection lost: {detail}" if detail else "connection lost"
            # The entries go before the session is closed, which may take a while.
            self._lost(failed)
            return failed

    async def _watch(self, session: ClientSession) -> str | None:
        """Wait until the session ends (None) or fails a health check (why)."""
        interval = self.config.ping_interval
        if interval is None:
            await session.closed.wait()
            return None
        # 2026-07-28 has no ping; server/discover is as cheap and needs no state.
        method = "server/discover" if session.stateless else "ping"
        spec = lifecycle.revision(session.protocol_version).all_methods[method]
        while True:
            try:
                await asyncio.wait_for(session.closed.wait(), interval)
                return None
            except TimeoutError:
                pass
            try:
                await session.request(spec, None, timeout=self.config.health_timeout)
            except McpError as error:
                return f"health check failed: {error.message}"

    def _lost(self, reason: str | None) -> None:
        if reason is not None:
            self._set(ServerStatus(self.name, "retrying", self.status.failures, reason))
        if self.session is not None:
            self.session = None
            self._on_lost(self)

    def _open(self) -> contextlib.AbstractAsyncContextManager[ClientSession]:
        config = self.config
        if config.transport == "stdio":
            assert config.command is not None
            parameters = StdioServerParameters(
                config.command,
                list(config.args),
                env=dict(config.env) or None,
                cwd=config.cwd,
                stderr=self._stderr,
            )
            return connect_stdio(self.client, parameters)
        return self._open_http()

    @contextlib.asynccontextmanager
    async def _open_http(self) -> AsyncIterator[ClientSession]:
        try:
            from .._transports.http.client import streamable as http_client
        except ImportError as missing:
            raise RuntimeError(
                f"HTTP servers need the 'http' extra (pip install 'mcpbind[http]'): {missing}"
            ) from None
        config = self.config
        assert config.url is not None
        headers = dict(config.headers)
        if self._authorize is not None:
            headers.update(await self._authorize(config))
        if config.transport == "http":
            opened = http_client.connect_streamable_http(
                self.client, config.url, headers=headers, auth=self._auth
            )
        elif config.transport == "sse":
            opened = http_client.connect_sse(
                self.client, config.url, headers=headers, auth=self._auth
            )
        else:
            opened = http_client.connect_http(
                self.client, config.url, headers=headers, auth=self._auth
            )
        async with opened as session:
            yield session

    def _set(self, status: ServerStatus) -> None:
        self.status = status
        self._on_status(self)


def _describe(error: BaseException) -> str:
    if isinstance(error, TimeoutError):
        return "timed out connecting"
    message = getattr(error, "message", None) or str(error) or type(error).__name__
    return str(message)
