"""The redirect step of the authorization code flow: sending the user to the
authorization URL and getting back the code.

* :class:`LoopbackRedirect`, for desktop and CLI applications (RFC 8252
  section 7.3): a one-shot HTTP receiver on a loopback port, and the
  system browser opened on the authorization URL.
* :class:`CallbackRedirect`, for everything else: the application's own
  coroutine gets the URL and returns what came back to its redirect URI
  (a web application's callback route, a mobile deep link...).
* :class:`HTTPRedirectFollower`, for authorization servers that answer
  without user interaction (tests, or a session the server already knows):
  it GETs the authorization URL and reads the redirect.

Cancelling the request that needed authorization cancels the wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import logging
import socket
import webbrowser
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx2

from ._errors import AuthorizationError

logger = logging.getLogger(__name__)

MAX_REQUEST_HEAD = 16 * 1024
"""Longest request line plus headers the loopback receiver reads."""
READ_TIMEOUT = 10.0
"""Seconds a connection to the loopback receiver has to send its request."""


@dataclass(frozen=True)
class AuthorizationResponse:
    """The parameters of the redirect back from the authorization endpoint."""

    code: str | None = None
    state: str | None = None
    iss: str | None = None
    error: str | None = None
    error_description: str | None = None

    @classmethod
    def from_url(cls, url: str) -> AuthorizationResponse:
        query = parse_qs(urlsplit(url).query, keep_blank_values=True)

        def one(name: str) -> str | None:
            values = query.get(name)
            return values[0] if values else None

        return cls(one("code"), one("state"), one("iss"), one("error"), one("error_description"))

    def __repr__(self) -> str:  # the code stays out of logs
        return (
            f"AuthorizationResponse(state={self.state!r}, iss={self.iss!r}, error={self.error!r})"
        )


def state_of(authorization_url: str) -> str | None:
    values = parse_qs(urlsplit(authorization_url).query).get("state")
    return values[0] if values else None


class RedirectHandler(Protocol):
    """Takes the user to the authorization URL and returns the response that
    came back to ``redirect_uri``."""

    @property
    def redirect_uri(self) -> str: ...

    async def authorize(self, authorization_url: str) -> AuthorizationResponse: ...


class CallbackRedirect:
    """A :class:`RedirectHandler` made of the application's coroutine."""

    def __init__(
        self, redirect_uri: str, callback: Callable[[str], Awaitable[AuthorizationResponse]]
    ) -> None:
        self._redirect_uri = redirect_uri
        self._callback = callback

    @property
    def redirect_uri(self) -> str:
        return self._redirect_uri

    async def authorize(self, authorization_url: str) -> AuthorizationResponse:
        return await self._callback(authorization_url)


class HTTPRedirectFollower:
    """GETs the authorization URL, follows the authorization server's own
    redirects (at most ``max_hops``), and returns the parameters of the first
    redirect to ``redirect_uri``. For servers that need no user interaction."""

    def __init__(
        self,
        redirect_uri: str,
        *,
        http_client: httpx2.AsyncClient | None = None,
        max_hops: int = 10,
    ) -> None:
        self._redirect_uri = redirect_uri
        self._http = http_client
        self.max_hops = max_hops

    @property
    def redirect_uri(self) -> str:
        return self._redirect_uri

    async def authorize(self, authorization_url: str) -> AuthorizationResponse:
        async with contextlib.AsyncExitStack() as stack:
            http = (
                self._http
                if self._http is not None
                else await stack.enter_async_context(httpx2.AsyncClient(timeout=30.0))
            )
            url = authorization_url
            for _ in range(self.max_hops):
                try:
                    # Only the status and Location are read: a body, however long, is left unread.
                    async with http.stream("GET", url, follow_redirects=False) as response:
                        status, redirected = response.status_code, response.is_redirect
                        location = response.headers.get("location")
                except httpx2.HTTPError as error:
                    raise AuthorizationError(
                        f"GET {urlsplit(url)._replace(query='').geturl()} failed: {error}"
                    ) from None
                if not redirected or location is None:
                    raise AuthorizationError(
                        f"the authorization endpoint answered HTTP {status} instead of redirecting back"
                    )
                url = urljoin(url, location)
                if url.split("?", 1)[0] == self._redirect_uri.split("?", 1)[0]:
                    return AuthorizationResponse.from_url(url)
        raise AuthorizationError(
            f"no redirect back to {self._redirect_uri} within {self.max_hops} hops"
        )


class LoopbackRedirect:
    """A redirect URI on the loopback interface (``http://127.0.0.1:<port>/callback``)
    and the browser opened on the authorization URL.

    The port is bound when the object is made (``port=0``: any free one), so
    the redirect URI is known before registration; the receiver listens only
    while an authorization waits, for at most ``timeout`` seconds, and
    answers a callback whose ``state`` is not the one expected with 400.
    ``open_browser`` is called with the URL (default: the system browser;
    when that fails, the URL is logged for the user to open).
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        path: str = "/callback",
        timeout: float = 300.0,
        open_browser: Callable[[str], Any] | None = None,
    ) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._socket = socket.socket(family, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind((host, port))
        self._socket.listen(8)
        self._socket.setblocking(False)
        bound = self._socket.getsockname()[1]
        authority = f"[{host}]" if family == socket.AF_INET6 else host
        self._redirect_uri = f"http://{authority}:{bound}{path}"
        self.path = path
        self.timeout = timeout
        self._open = open_browser

    @property
    def redirect_uri(self) -> str:
        return self._redirect_uri

    def close(self) -> None:
        self._socket.close()

    def __enter__(self) -> LoopbackRedirect:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def authorize(self, authorization_url: str) -> AuthorizationResponse:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[AuthorizationResponse] = loop.create_future()
        expected = state_of(authorization_url)

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                status, page = await asyncio.wait_for(
                    self._receive(reader, expected, done), READ_TIMEOUT
                )
                body = f"<!doctype html><meta charset=utf-8><title>Authorization</title><p>{html.escape(page)}</p>".encode()
                head = f"HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {len(body)}\r\nconnection: close\r\n\r\n"
                writer.write(head.encode() + body)
                await writer.drain()
            except (
                OSError,
                asyncio.IncompleteReadError,
                asyncio.LimitOverrunError,
                ValueError,
                asyncio.TimeoutError,
            ):
                pass  # a connection that is not a browser bringing the response back
            finally:
                writer.close()

        # A duplicate: closing the server after this authorization leaves the port bound for the next.
        listener = self._socket.dup()
        listener.setblocking(False)
        server = await asyncio.start_server(serve, sock=listener, limit=MAX_REQUEST_HEAD)
        try:
            await self._show(authorization_url)
            try:
                return await asyncio.wait_for(asyncio.shield(done), self.timeout)
            except asyncio.TimeoutError:
                raise AuthorizationError(
                    f"no authorization response reached {self._redirect_uri} within {self.timeout:.0f} s"
                ) from None
        finally:
            server.close()

    async def _receive(
        self,
        reader: asyncio.StreamReader,
        expected: str | None,
        done: asyncio.Future[AuthorizationResponse],
    ) -> tuple[str, str]:
        request_line = (await reader.readuntil(b"\n")).decode("latin-1").split()
        while (await reader.readuntil(b"\n")).strip():  # headers: not needed
            pass
        if (
            len(request_line) < 2
            or request_line[0] != "GET"
            or urlsplit(request_line[1]).path != self.path
        ):
            return "404 Not Found", "Not found."
        response = AuthorizationResponse.from_url(request_line[1])
        if response.state != expected:
            return (
                "400 Bad Request",
                "This response does not belong to the authorization in progress.",
            )
        if not done.done():
            done.set_result(response)
        if response.error is not None:
            return "200 OK", f"Authorization failed ({response.error}). You can close this window."
        return (
            "200 OK",
            "Authorization complete. You can close this window and return to the application.",
        )

    async def _show(self, url: str) -> None:
        opener = self._open or webbrowser.open
        try:
            opened = await asyncio.to_thread(opener, url)
        except Exception as error:  # a missing or broken browser is not fatal: the URL is shown
            logger.debug("opening a browser failed: %s", error)
            opened = False
        if opened is False:
            logger.warning("open this URL in a browser to authorize: %s", url)
