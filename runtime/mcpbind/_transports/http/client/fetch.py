"""The HTTP requests of the client transports, on aiohttp.

aiohttp's client costs about a fifth of the CPU per request of httpx2's
(``python -m bench --parts client``), and a client's HTTP library is most of
what an MCP call costs it. One :class:`Fetcher` per transport owns (or
borrows) an ``aiohttp.ClientSession``: no connection cap, proxies from the
environment, redirects not followed (an ``Authorization`` header never goes
to a host it was not meant for; a redirect answers the call with its status).

``auth`` takes an ``httpx2.Auth``, the interface of the OAuth providers in
:mod:`mcpbind.auth.client`: each request runs the provider's
``async_auth_flow``, which adds its credentials and may retry the request
(after a 401, a 403 ``insufficient_scope`` or a DPoP nonce); the providers
talk to the authorization server with their own httpx2 client.

Needs aiohttp (the ``http`` extra).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Mapping
from typing import Final

import msgspec

from ...._core import jsonrpc
from ...._core.extras import MissingExtra
from ...._core.jsonrpc import McpError

try:
    import aiohttp
    import httpx2
    from aiohttp.helpers import get_env_proxy_for_url
    from yarl import URL
except ModuleNotFoundError as error:
    raise MissingExtra("mcpbind._transports.http.client.fetch", "http", error.name) from None

Response = aiohttp.ClientResponse

MAX_ERROR_BODY: Final = 64 * 1024
"""Bytes of an HTTP error body read (for its message); the rest is not."""
ACCEPT_SSE: Final = "text/event-stream"

# Headers httpx2 fills in on a request it builds, which aiohttp sets itself.
_BUILT_BY_CLIENT: Final = frozenset({"host", "content-length", "transfer-encoding"})


_Proxy = tuple["URL | None", "aiohttp.BasicAuth | None"]
_NO_PROXY: Final[_Proxy] = (None, None)


class FetchError(Exception):
    """A request that got no (complete) HTTP answer: the connection was
    refused, reset or timed out."""


def describe(error: BaseException) -> str:
    return str(error) or type(error).__name__


def media_type(response: Response) -> str:
    value = response.headers.get("content-type", "")
    return value.split(";", 1)[0].strip().lower()


def new_session(
    timeout: float | None = 30.0, read_timeout: float | None = None
) -> aiohttp.ClientSession:
    """A session as the transports make their own: ``timeout`` seconds to
    connect, ``read_timeout`` the longest silence on an answer."""
    return aiohttp.ClientSession(
        timeout=aiohttp.ClientTimeout(
            total=None, connect=timeout, sock_connect=timeout, sock_read=read_timeout
        ),
        # No connection cap: every request in flight holds its own connection
        # while its answer streams back.
        connector=aiohttp.TCPConnector(limit=0),
        # The environment's proxy is looked up once per origin by Fetcher:
        # aiohttp's trust_env does it (and reads ~/.netrc) in a thread on every
        # request, which doubled the client's CPU per request.
        trust_env=False,
    )


class Fetcher:
    """Sends a transport's requests. ``session``: an ``aiohttp.ClientSession``
    to use (left open); by default one is made on first use and closed by
    :meth:`close`. ``auth``: an ``httpx2.Auth`` run for every request."""

    def __init__(
        self,
        session: aiohttp.ClientSession | None,
        *,
        timeout: float | None,
        read_timeout: float | None,
        auth: httpx2.Auth | None,
    ) -> None:
        if auth is not None and auth.requires_response_body:
            raise TypeError(
                f"{type(auth).__name__} reads the response body, which a streamed answer does not allow"
            )
        self._session = session
        self._owns = session is None
        self._timeout = timeout
        self._read_timeout = read_timeout
        self._auth = auth
        self._proxies: dict[str, _Proxy] = {}

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:  # made in the running loop, as aiohttp wants
            self._session = new_session(self._timeout, self._read_timeout)
        return self._session

    @contextlib.asynccontextmanager
    async def open(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None = None,
        total: float | None = None,
    ) -> AsyncIterator[Response]:
        """The answer to a request, its body still to read; released on exit.
        Raises :class:`FetchError` when no answer comes, and whatever the auth
        provider raises (an ``McpError`` when authorization fails)."""
        timeout = aiohttp.ClientTimeout(total=total) if total is not None else None
        try:
            if self._auth is None:
                response = await self._send(method, url, headers, body, timeout)
            else:
                response = await self._authorized(method, url, headers, body, timeout)
        except (aiohttp.ClientError, TimeoutError) as error:
            raise FetchError(describe(error)) from None
        try:
            yield response
        except (aiohttp.ClientError, TimeoutError) as error:  # the answer broke off while read
            raise FetchError(describe(error)) from None
        finally:
            response.release()

    async def _send(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        timeout: aiohttp.ClientTimeout | None,
    ) -> Response:
        http = self._http()
        proxy, proxy_auth = await self._proxy(url) if self._owns else _NO_PROXY
        if timeout is None and proxy is None:  # the common case, with the fewest arguments
            return await http.request(
                method, url, headers=headers, data=body, allow_redirects=False
            )
        return await http.request(
            method,
            url,
            headers=headers,
            data=body,
            allow_redirects=False,
            timeout=timeout if timeout is not None else aiohttp.helpers.sentinel,
            proxy=proxy,
            proxy_auth=proxy_auth,
        )

    async def _proxy(self, url: str) -> _Proxy:
        """The proxy the environment names for ``url`` (``HTTP_PROXY``,
        ``HTTPS_PROXY``, ``NO_PROXY``), looked up once per URL (a transport
        uses one or two)."""
        found = self._proxies.get(url)
        if found is None:
            try:  # in a thread: urllib's bypass check may ask the system
                found = await asyncio.to_thread(get_env_proxy_for_url, URL(url))
            except LookupError:
                found = _NO_PROXY
            self._proxies[url] = found
        return found

    async def _authorized(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        timeout: aiohttp.ClientTimeout | None,
    ) -> Response:
        assert self._auth is not None
        flow = self._auth.async_auth_flow(
            httpx2.Request(method, url, headers=headers, content=body)
        )
        try:
            request = await flow.__anext__()
            while True:
                sent = {
                    name: value
                    for name, value in request.headers.items()
                    if name.lower() not in _BUILT_BY_CLIENT
                }
                response = await self._send(
                    request.method, str(request.url), sent, request.content or None, timeout
                )
                seen = httpx2.Response(
                    response.status, headers=list(response.headers.items()), request=request
                )
                try:
                    request = await flow.asend(seen)
                except StopAsyncIteration:
                    return response
                except BaseException:
                    response.release()
                    raise
                response.release()  # the provider sends the request again
        finally:
            await flow.aclose()

    async def close(self) -> None:
        if self._owns and self._session is not None:
            await self._session.close()


class Failure(Exception):
    """What ends a call's exchange with the server: ``error`` answers the call."""

    def __init__(self, error: McpError) -> None:
        super().__init__(error.message)
        self.error = error


async def read_limited(response: Response, limit: int, what: str | None = None) -> bytes:
    """A response body, read as it arrives and never past ``limit`` bytes: a
    server cannot make the client hold an answer of any size. Past it, a
    clear error about ``what``; without ``what`` (an error body, read only
    for its message), its first ``limit`` bytes."""
    length = response.content_length
    if length is not None and length <= limit and not response.headers.get("content-encoding"):
        return await response.read()  # the common case: one read of a known size
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_any():
        if size + len(chunk) > limit:
            if what is None:
                chunks.append(chunk[: limit - size])
                break
            raise Failure(
                McpError(jsonrpc.INTERNAL_ERROR, f"{what}: the answer is larger than {limit} bytes")
            )
        size += len(chunk)
        chunks.append(chunk)
    return b"".join(chunks)


class _ErrorBody(msgspec.Struct):
    error: jsonrpc.ErrorObject


_error_body = msgspec.json.Decoder(_ErrorBody)
_HTML = re.compile(r"\s*(<!doctype html|<html)", re.IGNORECASE)
_TAG = re.compile(r"<[^>]*>")


def error_in(body: bytes) -> jsonrpc.ErrorObject | None:
    """The JSON-RPC error an HTTP error body carries, if it carries one."""
    try:
        return _error_body.decode(body).error
    except (msgspec.MsgspecError, *jsonrpc.UNDECODABLE):
        return None


def http_failure(status: int, reason: str, body: bytes, what: str) -> McpError:
    """The error a call gets for an HTTP error status: the server's JSON-RPC
    error message when the body carries one, else the body's text."""
    code: int = jsonrpc.INTERNAL_ERROR
    error = error_in(body)
    if error is not None:
        code, detail = error.code, error.message
    else:
        detail = body.decode("utf-8", "replace")
        if _HTML.match(detail):  # a proxy's or balancer's error page: its words, not its markup
            detail = " ".join(_TAG.sub(" ", detail).split())
        detail = detail.strip()[:300]
    text = f"{what}: HTTP {status} {reason}".rstrip()
    if detail:
        text += f": {detail}"
    return McpError(code, text, {"httpStatus": status})


__all__ = [
    "ACCEPT_SSE",
    "MAX_ERROR_BODY",
    "Failure",
    "FetchError",
    "Fetcher",
    "Response",
    "describe",
    "error_in",
    "http_failure",
    "media_type",
    "new_session",
    "read_limited",
]
