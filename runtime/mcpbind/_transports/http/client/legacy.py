"""The client side of the HTTP+SSE transport of revision 2024-11-05, for
servers older than Streamable HTTP: ``GET url`` opens the event stream, whose
first ``endpoint`` event names the URL every message is POSTed to.

Needs aiohttp (the ``http`` extra); requests go through
:class:`~mcpbind._transports.http.client.fetch.Fetcher`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from urllib.parse import urljoin, urlsplit

from ...._core import jsonrpc, wire
from ...._core.extras import MissingExtra

try:
    import aiohttp
    import httpx2  # the interface of auth providers
except ModuleNotFoundError as error:
    raise MissingExtra("mcpbind._transports.http.client.legacy", "http", error.name) from None
from ...._core.jsonrpc import McpError, RequestId
from ...._core.logsafe import quoted
from ...._core.wire import REQUEST, Message
from .fetch import (
    ACCEPT_SSE,
    MAX_ERROR_BODY,
    Failure,
    Fetcher,
    FetchError,
    http_failure,
    media_type,
    read_limited,
)
from .sse_parser import SSEParseError, SSEParser

logger = logging.getLogger(__name__)


class LegacySSEClientTransport:
    """A :class:`~mcpbind._core.session.Transport` to a server of the 2024-11-05
    HTTP+SSE transport: ``GET url`` opens the event stream, whose first
    ``endpoint`` event names the URL to POST messages to.

    Call :meth:`open` before use. Messages are POSTed in order. ``auth``:
    an ``httpx2.Auth`` for every request; ``http_client``: an
    ``aiohttp.ClientSession`` to use (left open).
    """

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str] | None = None,
        *,
        timeout: float | None = 30.0,
        sse_read_timeout: float | None = None,
        http_client: aiohttp.ClientSession | None = None,
        auth: httpx2.Auth | None = None,
    ) -> None:
        self.url = url
        self.headers = {name.lower(): value for name, value in (headers or {}).items()}
        self._connect_timeout = timeout
        self._http = Fetcher(http_client, timeout=timeout, read_timeout=sse_read_timeout, auth=auth)
        self.endpoint: str | None = None
        self._incoming: asyncio.Queue[Message | None] = asyncio.Queue()
        self._outbox: asyncio.Queue[tuple[Message, asyncio.Future[None] | None]] = asyncio.Queue()
        self._unsent: set[asyncio.Future[None]] = set()
        self._reader: asyncio.Task[None] | None = None
        self._sender: asyncio.Task[None] | None = None
        self._closed = False

    async def open(self) -> None:
        """Open the event stream and wait for the ``endpoint`` event."""
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        self._reader = loop.create_task(self._read_stream(ready))
        try:
            await asyncio.wait_for(asyncio.shield(ready), self._connect_timeout)
        except asyncio.TimeoutError:
            raise McpError(
                jsonrpc.CONNECTION_CLOSED,
                f"GET {self.url}: no endpoint event within {self._connect_timeout} s",
            ) from None
        self._sender = loop.create_task(self._send_loop())

    # Transport -------------------------------------------------------

    async def read(self) -> Message | None:
        if self._closed and self._incoming.empty():
            return None
        message = await self._incoming.get()
        if message is None:
            self._incoming.put_nowait(None)
        return message

    def write(self, message: Message) -> None:
        if self._closed:
            return
        if message.kind is REQUEST:  # its answer is what the caller waits for
            self._outbox.put_nowait((message, None))
            return
        sent: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._unsent.add(sent)
        sent.add_done_callback(self._unsent.discard)
        self._outbox.put_nowait((message, sent))

    async def drain(self) -> None:
        """Wait until the notifications and responses written so far were accepted."""
        pending = list(self._unsent)
        if pending and self._sender is not None and not self._sender.done():
            await asyncio.wait(pending)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        tasks = [task for task in (self._reader, self._sender) if task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for sent in list(self._unsent):
            sent.cancel()
        await self._http.close()
        self._incoming.put_nowait(None)

    def close_request_stream(self, request_id: RequestId) -> None:
        return None

    # the stream ------------------------------------------------------

    async def _read_stream(self, ready: asyncio.Future[None]) -> None:
        headers = {**self.headers, "accept": ACCEPT_SSE, "cache-control": "no-cache"}
        try:
            async with self._http.open("GET", self.url, headers) as response:
                if response.status != 200 or media_type(response) != "text/event-stream":
                    body = await read_limited(response, MAX_ERROR_BODY)
                    if response.status == 200:
                        body = f"expected an SSE stream, got content type {media_type(response) or 'none'!r}".encode()
                    raise Failure(
                        http_failure(
                            response.status, response.reason or "", body, f"GET {self.url}"
                        )
                    )
                parser = SSEParser()
                async for chunk in response.content.iter_any():
                    for event in parser.feed(chunk):
                        if event.event == "endpoint" and not ready.done():
                            self.endpoint = self._resolve(event.data.strip())
                            ready.set_result(None)
                        elif (
                            event.event == "message"
                            and self.endpoint is not None
                            and event.data.strip()
                        ):
                            self._incoming.put_nowait(wire.incoming(event.data.encode()))
        except Failure as failure:
            if not ready.done():
                ready.set_exception(failure.error)
        except McpError as error:
            if not ready.done():
                ready.set_exception(error)
        except (FetchError, SSEParseError) as error:
            if not ready.done():
                ready.set_exception(
                    McpError(jsonrpc.CONNECTION_CLOSED, f"GET {self.url} failed: {error}")
                )
            else:
                logger.warning("the SSE stream from %s failed: %s", self.url, quoted(error))
        finally:
            if not ready.done():
                ready.set_exception(
                    McpError(
                        jsonrpc.CONNECTION_CLOSED,
                        f"GET {self.url}: the stream ended before the endpoint event",
                    )
                )
            self._incoming.put_nowait(None)  # the session lasts as long as the stream

    def _resolve(self, endpoint: str) -> str:
        resolved = urljoin(self.url, endpoint)
        base, target = urlsplit(self.url), urlsplit(resolved)
        if (base.scheme, base.netloc) != (target.scheme, target.netloc):
            raise McpError(
                jsonrpc.INVALID_REQUEST,
                f"GET {self.url}: the endpoint {resolved!r} is not on the same origin; refusing to send messages there",
            )
        return resolved

    async def _send_loop(self) -> None:
        assert self.endpoint is not None
        while True:
            message, sent = await self._outbox.get()
            try:
                await self._post(self.endpoint, message)
            except Exception:  # keep sending what follows
                logger.exception("sending a message to %s failed", self.endpoint)
            finally:
                if sent is not None and not sent.done():
                    sent.set_result(None)

    async def _post(self, endpoint: str, message: Message) -> None:
        headers = {**self.headers, "content-type": "application/json"}
        try:
            async with self._http.open("POST", endpoint, headers, message.data) as response:
                status, reason = response.status, response.reason or ""
                body = await read_limited(response, MAX_ERROR_BODY) if status >= 300 else b""
        except FetchError as error:
            failure = McpError(jsonrpc.CONNECTION_CLOSED, f"POST {endpoint} failed: {error}")
        except McpError as error:  # from the auth provider: authorization failed
            failure = error
        else:
            if status < 300:
                return
            failure = http_failure(status, reason, body, f"POST {endpoint}")
            if status == 404:  # the server forgot the session
                failure = McpError(
                    jsonrpc.CONNECTION_CLOSED,
                    f"the SSE session at {self.url} has ended ({failure.message})",
                    failure.data,
                )
        if message.kind is REQUEST and message.id is not None:
            self._incoming.put_nowait(
                wire.incoming(
                    jsonrpc.error_bytes(message.id, failure.code, failure.message, failure.data)
                )
            )
        else:
            logger.warning("%s", quoted(failure.message))


__all__ = ["LegacySSEClientTransport"]
