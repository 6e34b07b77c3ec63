"""The Streamable HTTP client transport, and the functions that open a client
session over HTTP (Streamable HTTP, or the HTTP+SSE transport of revision
2024-11-05 in :mod:`~mcpbind._transports.http.client.legacy` for older servers; the
SSE parser both read with is :mod:`~mcpbind._transports.http.client.sse_parser`).

``connect_http(client, url)`` opens a session to a server at ``url``
whichever of the two it speaks: it POSTs server/discover, then (for a server
without 2026-07-28) initialize (Streamable HTTP) and, if the server answers
that with 400, 404 or 405 or with neither JSON nor SSE, falls back to a GET on
the same URL (legacy HTTP+SSE), as the specification's backwards-compatibility
section describes. ``connect_streamable_http`` and
``connect_sse`` force one transport.

Streamable HTTP sends every message in its own POST; requests are in flight
concurrently, each answered by a JSON body or an SSE stream. A stream that
ends or drops before the request is answered is resumed with GET and
``Last-Event-ID`` after the server's ``retry`` delay. After initialization an
optional standalone GET stream carries what the server sends outside any
request.

A server answering 404 for the session has ended it, and the client "MUST
start a new session by sending a new InitializeRequest without a session ID
attached" (2025-03-26 on). So it does (``renew_session``, on by default):
requests wait while the client session initializes again
(:mod:`~mcpbind._client.renewal`), then the requests whose POST got the 404 are
sent again in the new session, and the standalone GET stream is opened
again. A request whose POST was accepted is never sent again (it may have
run): if the session ends before it is answered, it fails with -32000.
Notifications and responses refused with 404 belonged to the ended session:
they are not sent again. ``max_renewals`` new sessions in a row with no
request accepted in between, or a new session that cannot be started, end
the session as ``renew_session=False`` does: every pending call fails with a
clear error, and later calls with ConnectionClosed.

Requests of MCP 2026-07-28 (those whose ``_meta`` names it) go without a
session: their headers mirror the body (``MCP-Protocol-Version``,
``Mcp-Method``, ``Mcp-Name``, and ``Mcp-Param-*`` for the tool arguments the
tool's schema marks with ``x-mcp-header``; tools whose marks are invalid are
left out of tools/list), an error status with a JSON-RPC error body answers
the call with that error, and a cancelled request's stream is just closed.

Needs aiohttp (the ``http`` extra); requests go through
:class:`~mcpbind._transports.http.client.fetch.Fetcher`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Final

import msgspec

from ...._core import jsonrpc, lifecycle, wire
from ...._core.extras import MissingExtra
from .. import headers as http_headers

try:
    import aiohttp
    import httpx2  # the interface of auth providers
except ModuleNotFoundError as error:
    raise MissingExtra("mcpbind._transports.http.client.streamable", "http", error.name) from None
from ...._client.client import Client, ClientSession
from ...._core.jsonrpc import Envelope, McpError, RequestId
from ...._core.logsafe import quoted
from ...._core.wire import REQUEST, Message, RequestExtra
from .fetch import (
    ACCEPT_SSE,
    MAX_ERROR_BODY,
    Fetcher,
    FetchError,
    http_failure,
    media_type,
    read_limited,
)
from .legacy import LegacySSEClientTransport
from .sse_parser import (
    MAX_EVENT_SIZE,  # noqa: F401
    SSEEvent,
    SSEParseError,
    SSEParser,
)
from .streams import (
    ACCEPT_ANY,
    DEFAULT_RETRY_MS,  # noqa: F401  (the names this module always had)
    FALLBACK_STATUSES,  # noqa: F401
    Exchange,
    StreamState,
    consume,
)

logger = logging.getLogger(__name__)

DEFAULT_MAX_RECONNECTS: Final = 5
"""Consecutive failed attempts to resume a stream before giving up."""
DEFAULT_MAX_RENEWALS: Final = 3
"""New sessions started in a row, with no request accepted in between, before giving up."""


# ---------------------------------------------------------------- Streamable HTTP


class StreamableHTTPClientTransport:
    """A :class:`~mcpbind._core.session.Transport` to a Streamable HTTP server.

    * ``headers``: sent with every request (e.g. ``Authorization``).
    * ``timeout``: seconds for connecting and sending; ``sse_read_timeout``:
      longest silence on a response stream (None: no limit; calls have their
      own timeouts).
    * ``http_client``: an ``aiohttp.ClientSession`` to use (it is not
      closed), e.g. for a proxy, TLS settings or connection limits of your
      own; by default the transport makes and closes its own (proxies from
      the environment, the system's certificate authorities).
    * ``listen``: open the standalone GET stream after initialization.
    * ``max_reconnects``: consecutive failed attempts to resume a stream.
    * ``terminate_on_close``: DELETE the session on close.
    * ``auth``: an ``httpx2.Auth`` for every request, e.g. an
      :class:`~mcpbind.auth.client.OAuthClientProvider`.
    * ``renew_session``: when the server answers 404 for the session, start
      a new one and carry on (see the module docstring); False: the session
      ends there. ``max_renewals``: new sessions in a row, with no request
      accepted in between, before giving up.

    Each request is an :class:`~mcpbind._transports.http.client.streams.Exchange`
    of its own; the headers mirroring a body come from a
    :class:`~mcpbind._transports.http.headers.Mirror`.
    """

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str] | None = None,
        *,
        timeout: float | None = 30.0,
        sse_read_timeout: float | None = None,
        http_client: aiohttp.ClientSession | None = None,
        listen: bool = True,
        max_reconnects: int = DEFAULT_MAX_RECONNECTS,
        terminate_on_close: bool = True,
        auth: httpx2.Auth | None = None,
        renew_session: bool = True,
        max_renewals: int = DEFAULT_MAX_RENEWALS,
    ) -> None:
        self.url = url
        self.headers = {name.lower(): value for name, value in (headers or {}).items()}
        self.http = Fetcher(http_client, timeout=timeout, read_timeout=sse_read_timeout, auth=auth)
        self.listen = listen
        self.max_reconnects = max_reconnects
        self.terminate_on_close = terminate_on_close
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.fallback_reason: str | None = None
        """Set when the initialize POST was answered the way a server of the
        legacy HTTP+SSE transport answers it (see :func:`connect_http`)."""
        self._incoming: asyncio.Queue[Message | None] = asyncio.Queue()
        self._requests: dict[RequestId, asyncio.Task[None]] = {}
        self._posts: set[asyncio.Task[None]] = set()
        self._listener: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # at the first write (a system call)
        self._closed = False
        self._expired = False
        self.stateless = False
        """Whether the session speaks 2026-07-28 (each request on its own, no session)."""
        self._stateless_requests: set[RequestId] = set()
        self._tool_lists: set[RequestId] = set()  # stateless tools/list requests in flight
        self._mirror = http_headers.Mirror()
        self.renew_session = renew_session
        self.max_renewals = max_renewals
        self._renewer: Callable[[str | None], Awaitable[None]] | None = None
        self._renewal: asyncio.Task[bool] | None = None
        self._renewals = 0  # in a row, with no request accepted since
        self._generation = 0  # sessions that replaced the first one
        self._admit = asyncio.Event()  # cleared while a new session is being started
        self._admit.set()
        self._held: set[asyncio.Task[None]] = set()  # posts waiting for the new session

    # Transport -------------------------------------------------------

    async def read(self) -> Message | None:
        if self._closed and self._incoming.empty():
            return None
        message = await self._incoming.get()
        if message is None:
            self._incoming.put_nowait(None)  # every later read ends too
        return message

    def write(self, message: Message) -> None:
        if self._closed or self._expired:
            return
        loop = self._loop or asyncio.get_running_loop()
        self._loop = loop
        method = message.method
        if message.kind is REQUEST and method is not None and message.id is not None:
            request_id = message.id
            extra, stateless = self._mirror.request_headers(
                method, message.params, self.protocol_version
            )
            if stateless:
                self._stateless_requests.add(request_id)
                if method == "tools/list":
                    self._tool_lists.add(request_id)
            task = loop.create_task(Exchange(self, message, extra, stateless).run())
            self._requests[request_id] = task
            task.add_done_callback(lambda done: self._forget_request(request_id, done))
            return
        if method == "notifications/cancelled":
            cancelled = self._abandon(http_headers.cancelled_id(message.params))
            if cancelled is not None and cancelled in self._stateless_requests:
                self._stateless_requests.discard(cancelled)
                self._tool_lists.discard(cancelled)
                return  # closing the request's stream was the cancellation
        # Written while a new session is being started: for the new session,
        # once it is there (and not waited for by drain(), which that start awaits).
        held = not self._admit.is_set() and method != "notifications/initialized"
        post = loop.create_task(self._post_message(message.data, method, held, self._generation))
        posts = self._held if held else self._posts
        posts.add(post)
        post.add_done_callback(posts.discard)

    async def drain(self) -> None:
        """Wait until the notifications and responses written so far were accepted."""
        pending = [task for task in self._posts if not task.done()]
        if pending:
            await asyncio.wait(pending)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        pending = [task for task in self._posts if not task.done()]
        if pending:  # a last notification (e.g. a cancellation) still gets out
            await asyncio.wait(pending, timeout=2.0)
        tasks: list[asyncio.Task[Any]] = [*self._requests.values(), *self._posts, *self._held]
        if self._listener is not None:
            tasks.append(self._listener)
        if self._renewal is not None:
            tasks.append(self._renewal)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.session_id is not None and self.terminate_on_close and not self._expired:
            try:
                async with self.http.open(
                    "DELETE", self.url, self.headers_for(ACCEPT_ANY), total=5.0
                ) as response:
                    if response.status not in (200, 202, 204, 404, 405):
                        logger.debug("DELETE of session answered HTTP %d", response.status)
            except (FetchError, McpError) as error:  # McpError: from the auth provider
                logger.debug("DELETE of session failed: %s", error)
        await self.http.close()
        self._incoming.put_nowait(None)

    def close_request_stream(self, request_id: RequestId) -> None:
        return None  # a client has no request streams of its own to close

    def negotiated(self, version: str, stateless: bool | None = None) -> None:
        """Called once initialize (or server/discover) is answered: send
        ``MCP-Protocol-Version`` from now on, and open the standalone GET
        stream (2026-07-28 has none). ``stateless`` says whether the session
        speaks a revision without handshake (else the shipped package tells)."""
        self.protocol_version = version
        if stateless is None:
            stateless = version in lifecycle.stateless_versions()
        if stateless:
            self.stateless = True
            return
        if self.listen and self._listener is None and not self._closed:
            self._listener = asyncio.get_running_loop().create_task(self._listen())

    @property
    def expired(self) -> bool:
        """Whether the server ended the session (HTTP 404)."""
        return self._expired

    # for the exchanges (client_streams.Owner) ------------------------

    @property
    def ended(self) -> bool:
        return self._closed or self._expired

    def headers_for(
        self, accept: str, content: bool = False, stateless: bool = False
    ) -> dict[str, str]:
        """The headers of a request of this transport's: ``stateless``, one of 2026-07-28."""
        headers = {**self.headers, "accept": accept}
        if content:
            headers["content-type"] = "application/json"
        if stateless:
            return headers  # no session; the caller adds the version the request names
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        if self.protocol_version is not None:
            headers["mcp-protocol-version"] = self.protocol_version
        return headers

    def deliver(self, data: bytes, envelope: Envelope | None, answers: RequestId | None,
                carried_on: RequestId | None = None) -> None:  # fmt: skip
        if answers is not None and answers in self._tool_lists and envelope is not None:
            self._tool_lists.discard(answers)
            data, envelope = _screened(self._mirror, answers, data, envelope)
        extra = None if carried_on is None else RequestExtra(related=carried_on)
        self._incoming.put_nowait(wire.incoming(data, envelope, carried_on, extra))

    def deliver_error(self, request_id: RequestId, error: McpError) -> None:
        if not self._closed:
            # The envelope as decoding these bytes would give it: nobody decodes them.
            envelope = Envelope(jsonrpc="2.0", id=request_id, error=error.to_object())
            data = jsonrpc.error_bytes(request_id, error.code, error.message, error.data)
            self._incoming.put_nowait(wire.incoming(data, envelope))

    def expire(self, why: str = "open a new session") -> None:
        """The server forgot the session: fail every pending call, end reading."""
        if self._expired or self._closed:
            return
        self._expired = True
        error = McpError(
            jsonrpc.CONNECTION_CLOSED,
            f"the MCP session {self.session_id} has expired or was ended by the server (HTTP 404); "
            + why,
            {"httpStatus": 404},
        )
        current = asyncio.current_task()
        for request_id, task in list(self._requests.items()):
            self.deliver_error(request_id, error)
            if task is not current:
                task.cancel()
        self._requests.clear()
        for held in list(self._held):
            held.cancel()
        if self._listener is not None and self._listener is not current:
            self._listener.cancel()
        self._admit.set()
        self._incoming.put_nowait(None)

    # a new session when the server ended this one -----------------------

    def renew_by(self, renew: Callable[[str | None], Awaitable[None]]) -> None:
        """Called by the client session once initialized: ``renew(previous
        session id)`` starts a new session (initialize again) or raises."""
        self._renewer = renew

    async def admitted(self) -> None:
        await self._admit.wait()

    def served(self) -> None:
        self._renewals = 0

    def lost(self, sent: str) -> asyncio.Future[bool]:
        loop = asyncio.get_running_loop()
        if self._renewal is not None and not self._renewal.done():
            return self._renewal
        outcome: asyncio.Future[bool] = loop.create_future()
        if self.ended:
            outcome.set_result(False)
        elif sent != self.session_id:
            outcome.set_result(True)  # already replaced: send again in the new session
        elif not self.renew_session or self._renewer is None:
            self.expire()
            outcome.set_result(False)
        elif self._renewals >= self.max_renewals:
            self.expire(f"gave up after {self._renewals} new sessions in a row")
            outcome.set_result(False)
        else:
            self._renewal = loop.create_task(self._renew(sent))
            return self._renewal
        return outcome

    async def _renew(self, previous: str) -> bool:
        assert self._renewer is not None
        self._renewals += 1
        self._admit.clear()
        # The new InitializeRequest goes "without a session ID attached".
        self.session_id = self.protocol_version = None
        listener, self._listener = self._listener, None
        if listener is not None and listener is not asyncio.current_task():
            listener.cancel()  # negotiated() opens the new session's stream
        logger.warning(
            "%s ended MCP session %s (HTTP 404); starting a new session", self.url, previous
        )
        try:
            await self._renewer(previous)
        except Exception as error:  # whatever it was, the session cannot go on
            reason = error.message if isinstance(error, McpError) else str(error)
            self.session_id = previous
            self.expire(f"a new session could not be started: {reason or type(error).__name__}")
            return False
        finally:
            self._admit.set()
        self._generation += 1
        return True

    # requests --------------------------------------------------------

    def _forget_request(self, request_id: RequestId, task: asyncio.Task[None]) -> None:
        if self._requests.get(request_id) is task:
            del self._requests[request_id]
            self._stateless_requests.discard(request_id)
            self._tool_lists.discard(request_id)

    def _abandon(self, request_id: RequestId | None) -> RequestId | None:
        """The session cancelled one of its requests: stop waiting for the
        answer (closing its stream). The request's id."""
        if request_id is None:
            return None
        task = self._requests.pop(request_id, None)
        if task is not None:
            task.cancel()
        return request_id

    async def _post_message(
        self, message: bytes, method: str | None, held: bool, generation: int
    ) -> None:
        """POST a notification or a response; the server accepts it with 202."""
        if held:
            await self._admit.wait()
            if self.ended:
                return
        if method is None and generation != self._generation:
            logger.debug("not sending a response to a request of an ended session")
            return
        headers = self.headers_for(ACCEPT_ANY, content=True, stateless=self.stateless)
        sent = None if self.stateless else headers.get("mcp-session-id")
        if method is not None:
            headers[http_headers.METHOD] = method
        if self.stateless and self.protocol_version is not None:
            headers["mcp-protocol-version"] = self.protocol_version
        try:
            async with self.http.open("POST", self.url, headers, message) as response:
                status, reason = response.status, response.reason or ""
                body = await read_limited(response, MAX_ERROR_BODY) if status >= 300 else b""
        except FetchError as error:
            logger.warning("could not send a message to %s: %s", self.url, error)
            return
        except McpError as error:  # from the auth provider: authorization failed
            logger.warning("could not send a message to %s: %s", self.url, error.message)
            return
        if status == 404 and sent is not None:
            # Not sent again: it belonged to the ended session.
            self.lost(sent)
        elif status >= 300:
            logger.warning(
                "%s refused a message: %s",
                self.url,
                quoted(http_failure(status, reason, body, "POST").message),
            )

    async def _listen(self) -> None:
        """The standalone GET stream: opened once, resumed when it drops."""
        state = StreamState()
        attempts = 0
        opened = False
        while not self._closed and not self._expired:
            headers = self.headers_for(ACCEPT_SSE)
            if state.last_id is not None:
                headers["last-event-id"] = state.last_id
            sent = headers.get("mcp-session-id")
            before = state.events
            try:
                async with self.http.open("GET", self.url, headers) as response:
                    status = response.status
                    if status == 405:
                        logger.debug("%s offers no standalone SSE stream", self.url)
                        return
                    if status == 404 and sent is not None:
                        if opened or not self.renew_session:
                            self.lost(sent)  # renewal opens the new session's stream
                            return
                        # Refused on a session just started: a new session would be
                        # refused its stream too, and no request says the session is gone.
                    if status == 200 and media_type(response) == "text/event-stream":
                        opened = True
                        await consume(self, response, None, state)
                    elif status < 500:
                        body = await read_limited(response, MAX_ERROR_BODY)
                        logger.warning(
                            "standalone SSE stream refused: %s",
                            quoted(
                                http_failure(
                                    status, response.reason or "", body, f"GET {self.url}"
                                ).message
                            ),
                        )
                        return
            except FetchError as error:
                logger.debug("standalone SSE stream dropped: %s", error)
            except McpError as error:  # from the auth provider: authorization failed
                logger.warning("standalone SSE stream refused: %s", error.message)
                return
            except SSEParseError as error:
                logger.warning("bad standalone SSE stream: %s", quoted(error))
                return
            attempts = 0 if state.events > before else attempts + 1
            if attempts > self.max_reconnects:
                logger.warning(
                    "gave up on the standalone SSE stream after %d attempts", self.max_reconnects
                )
                return
            await asyncio.sleep(state.retry_ms / 1000)


def _screened(
    mirror: http_headers.Mirror, answers: RequestId, data: bytes, envelope: Envelope
) -> tuple[bytes, Envelope]:
    """A 2026-07-28 tools/list answer without the tools whose x-mcp-header marks are invalid."""
    result = envelope.result
    screened = mirror.screen(result) if isinstance(result, msgspec.Raw) else None
    if screened is None:
        return data, envelope
    envelope = msgspec.structs.replace(envelope, result=msgspec.Raw(screened))
    return jsonrpc.result_bytes(answers, screened), envelope


# ---------------------------------------------------------------- connecting


@contextlib.asynccontextmanager
async def connect_streamable_http(
    client: Client,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    http_client: aiohttp.ClientSession | None = None,
    timeout: float | None = 30.0,
    listen: bool = True,
    auth: httpx2.Auth | None = None,
    renew_session: bool = True,
) -> AsyncIterator[ClientSession]:
    """An initialized session over Streamable HTTP; closed (and the session
    DELETEd) on exit. ``renew_session``: start a new session when the server
    ends this one (HTTP 404) and carry on (see the module docstring)."""
    transport = StreamableHTTPClientTransport(
        url,
        headers,
        timeout=timeout,
        http_client=http_client,
        listen=listen,
        auth=auth,
        renew_session=renew_session,
    )
    session = await client.connect(transport)
    try:
        yield session
    finally:
        await session.close()


@contextlib.asynccontextmanager
async def connect_sse(
    client: Client,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    http_client: aiohttp.ClientSession | None = None,
    timeout: float | None = 30.0,
    auth: httpx2.Auth | None = None,
) -> AsyncIterator[ClientSession]:
    """An initialized session over the legacy HTTP+SSE transport (``url`` is
    the SSE endpoint, e.g. ``http://host/sse``)."""
    transport = LegacySSEClientTransport(
        url, headers, timeout=timeout, http_client=http_client, auth=auth
    )
    try:
        await transport.open()
    except BaseException:
        await transport.close()
        raise
    session = await client.connect(transport)
    try:
        yield session
    finally:
        await session.close()


@contextlib.asynccontextmanager
async def connect_http(
    client: Client,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float | None = 30.0,
    listen: bool = True,
    auth: httpx2.Auth | None = None,
    renew_session: bool = True,
) -> AsyncIterator[ClientSession]:
    """An initialized session to the server at ``url``, over Streamable HTTP,
    or over the legacy HTTP+SSE transport if the server answers the
    initialize POST with 400, 404 or 405 (or neither JSON nor SSE).
    ``auth`` (e.g. an OAuthClientProvider) authorizes every request.
    ``renew_session``: over Streamable HTTP, start a new session when the
    server ends this one (HTTP 404) and carry on (see the module docstring)."""
    session = await _probe_connect(client, url, headers, timeout, listen, auth, renew_session)
    try:
        yield session
    finally:
        await session.close()


async def _probe_connect(
    client: Client,
    url: str,
    headers: Mapping[str, str] | None,
    timeout: float | None,
    listen: bool,
    auth: httpx2.Auth | None = None,
    renew_session: bool = True,
) -> ClientSession:
    streamable = StreamableHTTPClientTransport(
        url, headers, timeout=timeout, listen=listen, auth=auth, renew_session=renew_session
    )
    try:
        return await client.connect(streamable)
    except McpError as error:
        reason = streamable.fallback_reason
        if reason is None:
            raise
        streamable_error = error
    logger.info(
        "%s answered the initialize POST with %s; trying the HTTP+SSE transport", url, reason
    )
    legacy = LegacySSEClientTransport(url, headers, timeout=timeout, auth=auth)
    try:
        await legacy.open()
    except McpError as error:
        await legacy.close()
        raise McpError(
            streamable_error.code,
            f"{url} speaks neither Streamable HTTP ({streamable_error.message}) "
            f"nor the HTTP+SSE transport ({error.message})",
            streamable_error.data,
        ) from None
    except BaseException:
        await legacy.close()
        raise
    return await client.connect(legacy)


__all__ = [
    "LegacySSEClientTransport",
    "SSEEvent",
    "SSEParser",
    "StreamableHTTPClientTransport",
    "connect_http",
    "connect_sse",
    "connect_streamable_http",
]
