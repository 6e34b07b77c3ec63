"""The Streamable HTTP client transport, and the functions that open a client
session over HTTP (Streamable HTTP, or the HTTP+SSE transport of revision
2024-11-05 in :mod:`~mcp_runtime.http.legacy_client` for older servers; the
SSE parser both read with is :mod:`~mcp_runtime.http.sse_parser`).

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
request. A server answering 404 for the session ends the session: every
pending call fails with a clear error.

Requests of MCP 2026-07-28 (those whose ``_meta`` names it) go without a
session: their headers mirror the body (``MCP-Protocol-Version``,
``Mcp-Method``, ``Mcp-Name``, and ``Mcp-Param-*`` for the tool arguments the
tool's schema marks with ``x-mcp-header``; tools whose marks are invalid are
left out of tools/list), an error status with a JSON-RPC error body answers
the call with that error, and a cancelled request's stream is just closed.

Needs aiohttp (the ``http`` extra); requests go through
:class:`~mcp_runtime.http.fetch.Fetcher`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import msgspec
from msgspec import UNSET, UnsetType

from .. import jsonrpc, lifecycle
from ..extras import MissingExtra
from . import headers as http_headers

try:
    import aiohttp
    import httpx2  # the interface of auth providers
except ModuleNotFoundError as error:
    raise MissingExtra("mcp_runtime.http.client", "http", error.name) from None
from ..client import Client, ClientSession
from ..jsonrpc import McpError, RequestId
from ..logsafe import quoted
from .fetch import (
    ACCEPT_SSE,
    MAX_ERROR_BODY,
    Failure,
    Fetcher,
    FetchError,
    Response,
    error_in,
    http_failure,
    media_type,
    read_limited,
)
from .headers import InvalidAnnotation, ParamHeader
from .legacy_client import LegacySSEClientTransport
from .sse_parser import MAX_EVENT_SIZE, SSEEvent, SSEParseError, SSEParser

logger = logging.getLogger("mcp_runtime.http.client")

DEFAULT_RETRY_MS: Final = 1000
"""How long to wait before resuming a stream when the server sent no ``retry``."""
DEFAULT_MAX_RECONNECTS: Final = 5
"""Consecutive failed attempts to resume a stream before giving up."""
FALLBACK_STATUSES: Final = (400, 404, 405)
"""Statuses of the initialize POST that mean "try the legacy HTTP+SSE transport"."""

_ACCEPT_ANY = "application/json, text/event-stream"


# ---------------------------------------------------------------- helpers


class _Probe(msgspec.Struct):
    """Enough of a message to route it."""

    id: RequestId | None | UnsetType = UNSET
    method: str | UnsetType = UNSET
    params: msgspec.Raw | UnsetType = UNSET


class _CancelledParams(msgspec.Struct):
    requestId: RequestId | UnsetType = UNSET


_probe = msgspec.json.Decoder(_Probe)
_probe_many = msgspec.json.Decoder(_Probe | list[_Probe])
_cancelled = msgspec.json.Decoder(_CancelledParams)


def _decode_probe(message: bytes) -> _Probe | None:
    try:
        return _probe.decode(message)
    except msgspec.MsgspecError:
        return None


def _answers(message: bytes, request_id: RequestId) -> bool:
    """Whether ``message`` (or a batch) holds the response to ``request_id``."""
    try:
        probe = _probe_many.decode(message)
    except msgspec.MsgspecError:
        return False
    items = probe if isinstance(probe, list) else [probe]
    return any(
        item.method is UNSET and type(item.id) is type(request_id) and item.id == request_id
        for item in items
    )


@dataclass
class _StreamState:
    last_id: str | None = None
    retry_ms: int = DEFAULT_RETRY_MS
    answered: bool = False
    events: int = 0
    failure: str | None = None  # why the stream, or the last attempt to resume it, failed


# ---------------------------------------------------------------- Streamable HTTP


class StreamableHTTPClientTransport:
    """A :class:`~mcp_runtime.session.Transport` to a Streamable HTTP server.

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
      :class:`~mcp_runtime.auth.client.OAuthClientProvider`.
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
    ) -> None:
        self.url = url
        self.headers = {name.lower(): value for name, value in (headers or {}).items()}
        self._http = Fetcher(http_client, timeout=timeout, read_timeout=sse_read_timeout, auth=auth)
        self.listen = listen
        self.max_reconnects = max_reconnects
        self.terminate_on_close = terminate_on_close
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.fallback_reason: str | None = None
        """Set when the initialize POST was answered the way a server of the
        legacy HTTP+SSE transport answers it (see :func:`connect_http`)."""
        self._incoming: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._requests: dict[RequestId, asyncio.Task[None]] = {}
        self._posts: set[asyncio.Task[None]] = set()
        self._listener: asyncio.Task[None] | None = None
        self._closed = False
        self._expired = False
        self.modern = False
        """Whether the session speaks 2026-07-28 (each request on its own, no session)."""
        self._modern_requests: set[RequestId] = set()
        self._tool_lists: set[RequestId] = set()  # modern tools/list requests in flight
        self._tool_params: dict[str, list[ParamHeader]] = (
            {}
        )  # x-mcp-header marks by tool, from tools/list

    # Transport -------------------------------------------------------

    async def read(self) -> bytes | None:
        if self._closed and self._incoming.empty():
            return None
        message = await self._incoming.get()
        if message is None:
            self._incoming.put_nowait(None)  # every later read ends too
        return message

    def write(
        self, message: bytes, related: RequestId | None = None, response: bool = False
    ) -> None:
        if self._closed or self._expired:
            return
        probe = _decode_probe(message)
        loop = asyncio.get_running_loop()
        if probe is not None and isinstance(probe.method, str) and isinstance(probe.id, (str, int)):
            request_id = probe.id
            extra, modern = self._request_headers(probe.method, probe.params)
            if modern:
                self._modern_requests.add(request_id)
                if probe.method == "tools/list":
                    self._tool_lists.add(request_id)
            task = loop.create_task(
                self._run_request(request_id, probe.method == "initialize", message, extra, modern)
            )
            self._requests[request_id] = task
            task.add_done_callback(lambda done: self._forget_request(request_id, done))
            return
        if probe is not None and probe.method == "notifications/cancelled":
            cancelled = self._abandon(probe.params)
            if cancelled is not None and cancelled in self._modern_requests:
                self._modern_requests.discard(cancelled)
                self._tool_lists.discard(cancelled)
                return  # closing the request's stream was the cancellation
        post = loop.create_task(
            self._post_message(message, probe.method if probe is not None else None)
        )
        self._posts.add(post)
        post.add_done_callback(self._posts.discard)

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
        tasks = [*self._requests.values(), *self._posts]
        if self._listener is not None:
            tasks.append(self._listener)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.session_id is not None and self.terminate_on_close and not self._expired:
            try:
                async with self._http.open(
                    "DELETE", self.url, self._headers(_ACCEPT_ANY), total=5.0
                ) as response:
                    if response.status not in (200, 202, 204, 404, 405):
                        logger.debug("DELETE of session answered HTTP %d", response.status)
            except (FetchError, McpError) as error:  # McpError: from the auth provider
                logger.debug("DELETE of session failed: %s", error)
        await self._http.close()
        self._incoming.put_nowait(None)

    def close_request_stream(self, request_id: RequestId) -> None:
        return None  # a client has no request streams of its own to close

    def negotiated(self, version: str, modern: bool | None = None) -> None:
        """Called once initialize (or server/discover) is answered: send
        ``MCP-Protocol-Version`` from now on, and open the standalone GET
        stream (2026-07-28 has none). ``modern`` says whether the session
        speaks a revision without handshake (else the shipped package tells)."""
        self.protocol_version = version
        if modern is None:
            modern = version in lifecycle.modern_versions()
        if modern:
            self.modern = True
            return
        if self.listen and self._listener is None and not self._closed:
            self._listener = asyncio.get_running_loop().create_task(self._listen())

    @property
    def expired(self) -> bool:
        """Whether the server ended the session (HTTP 404)."""
        return self._expired

    # requests --------------------------------------------------------

    def _headers(self, accept: str, content: bool = False, modern: bool = False) -> dict[str, str]:
        headers = {**self.headers, "accept": accept}
        if content:
            headers["content-type"] = "application/json"
        if modern:
            return headers  # no session; the caller adds the version the request names
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        if self.protocol_version is not None:
            headers["mcp-protocol-version"] = self.protocol_version
        return headers

    def _request_headers(
        self, method: str, params: msgspec.Raw | UnsetType
    ) -> tuple[dict[str, str], bool]:
        """The headers mirroring a request's body, and whether it is a
        2026-07-28 request (its ``_meta`` names a revision without handshake)."""
        headers = {http_headers.METHOD: method}
        if self.protocol_version in lifecycle.handshake_versions():
            return headers, False  # a handshake session: its requests name no version of their own
        fields = http_headers.mirrored_fields(params)
        name = fields.name_for(method)
        if name is not None:
            headers[http_headers.NAME] = http_headers.encode_value(name)
        version = fields.version
        if not isinstance(version, str) or version in lifecycle.handshake_versions():
            return headers, False
        headers["mcp-protocol-version"] = version
        if method == "tools/call" and name is not None and self._tool_params.get(name):
            self._mirror_arguments(headers, self._tool_params[name], fields.arguments)
        return headers, True

    @staticmethod
    def _mirror_arguments(
        headers: dict[str, str], params: list[ParamHeader], raw: msgspec.Raw | UnsetType
    ) -> None:
        if isinstance(raw, UnsetType):
            return
        try:
            arguments = msgspec.json.decode(raw)
        except (msgspec.MsgspecError, *jsonrpc.UNDECODABLE):
            return
        for param in params:
            text = http_headers.header_text(param.value_in(arguments))
            if text is not None:  # absent or null: no header
                headers[param.header] = http_headers.encode_value(text)

    def _screen_tools(self, data: bytes) -> bytes:
        """A tools/list response without the tools whose x-mcp-header marks
        are invalid (the specification has clients drop them); the marks of
        the others are kept for their calls."""
        try:
            message = msgspec.json.decode(data)
        except (msgspec.MsgspecError, *jsonrpc.UNDECODABLE):
            return data
        result = message.get("result") if isinstance(message, dict) else None
        tools = result.get("tools") if isinstance(result, dict) else None
        if not isinstance(tools, list):
            return data
        kept: list[Any] = []
        for tool in tools:
            name = tool.get("name") if isinstance(tool, dict) else None
            if not isinstance(name, str):
                kept.append(tool)
                continue
            try:
                params = http_headers.param_headers(tool.get("inputSchema"))
            except InvalidAnnotation as error:
                logger.warning("leaving tool %s out of tools/list: %s", quoted(name), quoted(error))
                self._tool_params.pop(name, None)
                continue
            if params:
                self._tool_params[name] = params
            else:
                self._tool_params.pop(name, None)
            kept.append(tool)
        if len(kept) == len(tools):
            return data
        assert isinstance(result, dict)
        result["tools"] = kept
        return msgspec.json.encode(message)

    def _received(self, data: bytes, request_id: RequestId | None) -> None:
        if request_id is not None and request_id in self._tool_lists and _answers(data, request_id):
            self._tool_lists.discard(request_id)
            data = self._screen_tools(data)
        self._incoming.put_nowait(data)

    def _forget_request(self, request_id: RequestId, task: asyncio.Task[None]) -> None:
        if self._requests.get(request_id) is task:
            del self._requests[request_id]
            self._modern_requests.discard(request_id)
            self._tool_lists.discard(request_id)

    def _abandon(self, params: msgspec.Raw | UnsetType) -> RequestId | None:
        """The session cancelled one of its requests: stop waiting for the
        answer (closing its stream). The request's id."""
        if params is UNSET:
            return None
        try:
            request_id = _cancelled.decode(params).requestId
        except msgspec.MsgspecError:
            return None
        if request_id is UNSET:
            return None
        task = self._requests.pop(request_id, None)
        if task is not None:
            task.cancel()
        return request_id

    def _deliver_error(self, request_id: RequestId, error: McpError) -> None:
        if not self._closed:
            self._incoming.put_nowait(
                jsonrpc.error_bytes(request_id, error.code, error.message, error.data)
            )

    async def _run_request(
        self,
        request_id: RequestId,
        initialize: bool,
        message: bytes,
        extra: dict[str, str],
        modern: bool,
    ) -> None:
        state = _StreamState()
        try:
            await self._post_request(request_id, initialize, message, state, extra, modern)
            attempts = 0
            while not state.answered and not self._closed and not self._expired:
                if modern:
                    raise Failure(
                        McpError(
                            jsonrpc.CONNECTION_CLOSED,
                            "the server ended the response stream before answering"
                            + (f" ({state.failure})" if state.failure else ""),
                        )
                    )
                if state.last_id is None:
                    raise Failure(
                        McpError(
                            jsonrpc.CONNECTION_CLOSED,
                            "the server ended the response stream before answering, "
                            "and the stream cannot be resumed (it sent no event id)",
                        )
                    )
                attempts += 1
                if attempts > self.max_reconnects:
                    raise Failure(
                        McpError(
                            jsonrpc.CONNECTION_CLOSED,
                            f"gave up resuming the response stream after {self.max_reconnects} attempts"
                            + (f" (last: {state.failure})" if state.failure else ""),
                        )
                    )
                await asyncio.sleep(state.retry_ms / 1000)
                before = state.events
                await self._resume(state, request_id)
                if state.events > before:
                    attempts = 0
        except Failure as failure:
            self._deliver_error(request_id, failure.error)
        except McpError as error:  # from the auth provider: authorization failed
            self._deliver_error(request_id, error)
        except SSEParseError as error:
            self._deliver_error(
                request_id,
                McpError(jsonrpc.PARSE_ERROR, f"bad SSE stream from the server: {error}"),
            )
        except Exception:  # a bug here must still answer the waiting call
            logger.exception("HTTP request %r failed", request_id)
            self._deliver_error(
                request_id, McpError(jsonrpc.INTERNAL_ERROR, "internal error in the HTTP transport")
            )

    async def _post_request(
        self,
        request_id: RequestId,
        initialize: bool,
        message: bytes,
        state: _StreamState,
        extra: dict[str, str],
        modern: bool,
    ) -> None:
        headers = self._headers(_ACCEPT_ANY, content=True, modern=modern)
        headers.update(extra)
        try:
            async with self._http.open("POST", self.url, headers, message) as response:
                status = response.status
                if initialize:
                    self.session_id = response.headers.get("mcp-session-id") or self.session_id
                if status == 404 and self.session_id is not None and not initialize and not modern:
                    self._expire()
                    return
                if status >= 300 or status == 202:
                    body = await read_limited(response, MAX_ERROR_BODY)
                    # An authentication status stays one (a client does not fall back on it).
                    if (
                        modern
                        and status >= 400
                        and status not in (401, 403)
                        and self._deliver_error_body(request_id, body)
                    ):
                        state.answered = True
                        return
                    if initialize and status in FALLBACK_STATUSES:
                        self.fallback_reason = f"HTTP {status}"
                    raise Failure(
                        http_failure(status, response.reason or "", body, f"POST {self.url}")
                    )
                media = media_type(response)
                if media == "application/json":
                    body = await read_limited(response, MAX_EVENT_SIZE, f"POST {self.url}")
                    self._deliver_json(body, request_id, state)
                elif media == "text/event-stream":
                    await self._consume(response, request_id, state)
                else:
                    if initialize:
                        self.fallback_reason = f"content type {media or 'none'!r}"
                    raise Failure(
                        McpError(
                            jsonrpc.INTERNAL_ERROR,
                            f"POST {self.url}: expected a JSON or SSE answer, got content type {media or 'none'!r}",
                        )
                    )
        except FetchError as error:
            if (modern or state.last_id is None) and not state.answered:
                raise Failure(
                    McpError(jsonrpc.CONNECTION_CLOSED, f"POST {self.url} failed: {error}")
                ) from None
            state.failure = str(error)  # the stream dropped after it started: resumed by the caller

    def _deliver_error_body(self, request_id: RequestId, body: bytes) -> bool:
        """Answer a call with the JSON-RPC error an error status carries, if it carries one."""
        error = error_in(body)
        if error is None:
            return False
        self._incoming.put_nowait(
            jsonrpc.error_bytes(request_id, error.code, error.message, error.data)
        )
        return True

    def _deliver_json(self, body: bytes, request_id: RequestId, state: _StreamState) -> None:
        if not body.strip():
            raise Failure(
                McpError(jsonrpc.INTERNAL_ERROR, f"POST {self.url}: empty answer to a request")
            )
        try:
            msgspec.json.decode(body)
        except msgspec.DecodeError:
            raise Failure(
                McpError(jsonrpc.PARSE_ERROR, f"POST {self.url}: the answer is not valid JSON")
            ) from None
        self._received(body, request_id)
        if _answers(body, request_id):
            state.answered = True
        else:
            raise Failure(
                McpError(
                    jsonrpc.INTERNAL_ERROR, f"POST {self.url}: the JSON answer holds no response"
                )
            )

    async def _consume(
        self, response: Response, request_id: RequestId | None, state: _StreamState
    ) -> None:
        """Deliver a stream's messages until it ends or (for a request) is answered."""
        parser = SSEParser(last_event_id=state.last_id)  # ids persist across reconnections
        async for chunk in response.content.iter_any():
            events = parser.feed(chunk)
            if parser.retry is not None:
                state.retry_ms = parser.retry
            for event in events:
                state.events += 1
                if event.event != "message" or not event.data.strip():
                    continue
                data = event.data.encode()
                self._received(data, request_id)
                if request_id is not None and _answers(data, request_id):
                    state.answered = True
            state.last_id = parser.last_event_id
            if state.answered:
                return  # the server ends the stream now; no need to wait for it

    async def _resume(self, state: _StreamState, request_id: RequestId) -> None:
        """One attempt to resume a request's stream with GET and Last-Event-ID."""
        headers = self._headers(ACCEPT_SSE)
        assert state.last_id is not None
        headers["last-event-id"] = state.last_id
        try:
            async with self._http.open("GET", self.url, headers) as response:
                status = response.status
                if status == 404 and self.session_id is not None:
                    self._expire()
                    return
                if status >= 500:
                    state.failure = f"HTTP {status} {response.reason or ''}".rstrip()
                    return  # try again later
                if status != 200 or media_type(response) != "text/event-stream":
                    body = await read_limited(response, MAX_ERROR_BODY)
                    raise Failure(
                        http_failure(
                            status,
                            response.reason or "",
                            body,
                            f"resuming the response stream at {self.url}",
                        )
                    )
                await self._consume(response, request_id, state)
        except FetchError as error:
            state.failure = str(error)
            logger.debug("resuming the stream of request %r failed: %s", request_id, state.failure)

    async def _post_message(self, message: bytes, method: str | UnsetType | None) -> None:
        """POST a notification or a response; the server accepts it with 202."""
        headers = self._headers(_ACCEPT_ANY, content=True, modern=self.modern)
        if isinstance(method, str):
            headers[http_headers.METHOD] = method
        if self.modern and self.protocol_version is not None:
            headers["mcp-protocol-version"] = self.protocol_version
        try:
            async with self._http.open("POST", self.url, headers, message) as response:
                status, reason = response.status, response.reason or ""
                body = await read_limited(response, MAX_ERROR_BODY) if status >= 300 else b""
        except FetchError as error:
            logger.warning("could not send a message to %s: %s", self.url, error)
            return
        except McpError as error:  # from the auth provider: authorization failed
            logger.warning("could not send a message to %s: %s", self.url, error.message)
            return
        if status == 404 and self.session_id is not None:
            self._expire()
        elif status >= 300:
            logger.warning(
                "%s refused a message: %s",
                self.url,
                quoted(http_failure(status, reason, body, "POST").message),
            )

    # session ---------------------------------------------------------

    def _expire(self) -> None:
        """The server forgot the session: fail every pending call, end reading."""
        if self._expired or self._closed:
            return
        self._expired = True
        error = McpError(
            jsonrpc.CONNECTION_CLOSED,
            f"the MCP session {self.session_id} has expired or was ended by the server (HTTP 404); "
            "open a new session",
            {"httpStatus": 404},
        )
        current = asyncio.current_task()
        for request_id, task in list(self._requests.items()):
            self._deliver_error(request_id, error)
            if task is not current:
                task.cancel()
        self._requests.clear()
        if self._listener is not None and self._listener is not current:
            self._listener.cancel()
        self._incoming.put_nowait(None)

    async def _listen(self) -> None:
        """The standalone GET stream: opened once, resumed when it drops."""
        state = _StreamState()
        attempts = 0
        while not self._closed and not self._expired:
            headers = self._headers(ACCEPT_SSE)
            if state.last_id is not None:
                headers["last-event-id"] = state.last_id
            before = state.events
            try:
                async with self._http.open("GET", self.url, headers) as response:
                    status = response.status
                    if status == 405:
                        logger.debug("%s offers no standalone SSE stream", self.url)
                        return
                    if status == 404 and self.session_id is not None:
                        self._expire()
                        return
                    if status == 200 and media_type(response) == "text/event-stream":
                        await self._consume(response, None, state)
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
) -> AsyncIterator[ClientSession]:
    """An initialized session over Streamable HTTP; closed (and the session
    DELETEd) on exit."""
    transport = StreamableHTTPClientTransport(
        url, headers, timeout=timeout, http_client=http_client, listen=listen, auth=auth
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
) -> AsyncIterator[ClientSession]:
    """An initialized session to the server at ``url``, over Streamable HTTP,
    or over the legacy HTTP+SSE transport if the server answers the
    initialize POST with 400, 404 or 405 (or neither JSON nor SSE).
    ``auth`` (e.g. an OAuthClientProvider) authorizes every request."""
    session = await _probe_connect(client, url, headers, timeout, listen, auth)
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
) -> ClientSession:
    streamable = StreamableHTTPClientTransport(
        url, headers, timeout=timeout, listen=listen, auth=auth
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
