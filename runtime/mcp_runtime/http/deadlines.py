"""Deadlines for a connection's request head and body under uvicorn.

uvicorn starts no timer before a connection's first response, and its
keep-alive timer stops at the first byte of the next request: a client that
trickles its request head, a byte or a header line now and then, holds the
connection (and a place under ``limit_concurrency``) as long as it likes.
uvicorn's HTTP protocols with two deadlines added close such connections:

* ``head_timeout``: seconds from the connection's start, or from the end of the
  previous response, to the end of the next request head. Past it the client
  gets ``408 Request Timeout`` and the connection is closed.
* ``body_timeout``: seconds from the end of a request head to the end of its
  body. Past it the connection is closed (the application sees the client
  go). It is a backstop: our apps answer 408 themselves after
  ``HttpOptions.body_timeout`` (30 s), and the head deadline then closes a
  connection that keeps trickling the rest of that body.

``run_http`` serves with them (:func:`uvicorn_protocol`). With uvicorn's own
command line, name one of the classes here (defaults: 10 s and 60 s)::

    uvicorn app:app --http mcp_runtime.http.deadlines:HttpToolsProtocol
    uvicorn app:app --http mcp_runtime.http.deadlines:H11Protocol

This module imports uvicorn only when one of them is asked for.
"""

from __future__ import annotations

import asyncio
from typing import Any

DEFAULT_HEAD_TIMEOUT = 10.0
DEFAULT_BODY_TIMEOUT = 60.0

_REQUEST_TIMEOUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\ncontent-length: 48\r\n\r\n"
    b"Request Timeout: the request head came too late\n"
)
_BASES = {
    "httptools": "uvicorn.protocols.http.httptools_impl:HttpToolsProtocol",
    "h11": "uvicorn.protocols.http.h11_impl:H11Protocol",
}


class _Deadlines(asyncio.Protocol):
    """Put before one of uvicorn's HTTP protocols (which provides ``transport``,
    ``cycle`` and ``on_response_complete``): watches what arrives and closes
    the connection when a head or a body misses its deadline."""

    head_timeout: float = DEFAULT_HEAD_TIMEOUT
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    transport: asyncio.Transport
    cycle: Any  # uvicorn's RequestResponseCycle of the latest request head

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._timer: asyncio.TimerHandle | None = None
        self._waiting = ""  # "head", "body" or "" (nothing awaited)
        self._cycle: Any = self.cycle  # the cycle before the awaited head, or of the awaited body
        self._arm("head", self.cycle)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._waiting == "head" and self.cycle is not self._cycle:
            if self.cycle.more_body:
                self._arm("body", self.cycle)
            else:
                self._disarm()
        elif self._waiting == "body" and not self._cycle.more_body:
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        if not self.transport.is_closing() and not getattr(self, "pipeline", None):
            self._arm("head", self.cycle)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self, waiting: str, cycle: Any) -> None:
        self._disarm()
        self._waiting, self._cycle = waiting, cycle
        timeout = self.head_timeout if waiting == "head" else self.body_timeout
        self._timer = asyncio.get_running_loop().call_later(timeout, self._expire)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._waiting = None, ""

    def _expire(self) -> None:
        self._timer = None
        if self.transport.is_closing():
            return
        # A 408 only where no response is under way, nor a body of one unread.
        idle = self.cycle is None or (self.cycle.response_complete and not self.cycle.more_body)
        if self._waiting == "head" and idle:
            self.transport.write(_REQUEST_TIMEOUT)
        self._waiting = ""
        self.transport.close()


def uvicorn_protocol(
    http: str = "auto",
    *,
    head_timeout: float = DEFAULT_HEAD_TIMEOUT,
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol ``http`` (``"httptools"``, ``"h11"``, or
    ``"auto"``: httptools when importable) with the two deadlines; pass it as
    uvicorn's ``http`` setting."""
    if http == "auto":
        try:
            import httptools  # noqa: F401
        except ImportError:
            http = "h11"
        else:
            http = "httptools"
    if http not in _BASES:
        raise ValueError(f"unknown uvicorn HTTP protocol {http!r} (httptools, h11 or auto)")
    from uvicorn.importer import import_from_string

    base = import_from_string(_BASES[http])
    return type(
        f"{base.__name__}WithDeadlines",
        (_Deadlines, base),
        {"head_timeout": head_timeout, "body_timeout": body_timeout, "__module__": __name__},
    )


def __getattr__(name: str) -> type[asyncio.Protocol]:
    """``HttpToolsProtocol`` and ``H11Protocol``: the protocols with the default
    deadlines, named by uvicorn's ``--http module:Class``."""
    if name == "HttpToolsProtocol":
        return uvicorn_protocol("httptools")
    if name == "H11Protocol":
        return uvicorn_protocol("h11")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
