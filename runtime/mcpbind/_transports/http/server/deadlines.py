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
  ``HttpOptions.body_timeout`` (30 s); a connection that keeps trickling the
  rest of that body is then closed by this deadline.

The deadlines are looked at every ``head_timeout``, not timed per request, so
a connection is cut up to one ``head_timeout`` after its deadline (a head
trickled past 10 s is cut by 20 s).

``run_http`` serves with them (:func:`uvicorn_protocol`). An app of this
runtime served by uvicorn any other way (``uvicorn app:app``, with or without
``--workers``, or ``uvicorn.run(app)``) puts them on that uvicorn itself at its
ASGI lifespan startup (:func:`guard_uvicorn`), with the defaults (10 s and
60 s), unless its protocol has them already. With ``--lifespan off`` that
cannot happen: name one of the classes here instead::

    uvicorn app:app --http mcpbind._transports.http.server.deadlines:HttpToolsProtocol
    uvicorn app:app --http mcpbind._transports.http.server.deadlines:H11Protocol

This module imports uvicorn only when one of them is asked for, or when it
is serving.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
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
    """Put before one of uvicorn's HTTP protocols (which provides ``transport``
    and ``cycle``): closes the connection when a head or a body misses its deadline.

    Nothing is done per request (a timer armed and cancelled for each cost a
    tenth of a small request's time): one timer per connection looks at it
    every ``head_timeout``. A head is late when the connection has waited for
    it since the previous look (the same finished request, or none, both
    times), so a trickled head is cut between one and two ``head_timeout``
    after the connection's start or its previous response; a body when
    ``body_timeout`` has passed since a look first found it awaited (up to
    one ``head_timeout`` more)."""

    head_timeout: float = DEFAULT_HEAD_TIMEOUT
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    transport: asyncio.Transport
    cycle: Any  # uvicorn's RequestResponseCycle of the latest request head

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._idle_with: Any = self.cycle  # what the previous look found waiting for a head
        self._body_of: Any = None  # the request whose body a look found awaited, and when
        self._body_since = 0.0
        self._timer = asyncio.get_running_loop().call_later(self.head_timeout, self._look)

    def connection_lost(self, exc: Exception | None) -> None:
        self._timer.cancel()
        super().connection_lost(exc)

    def _look(self) -> None:
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if cycle is None or (
            cycle.response_complete and not cycle.more_body and not getattr(self, "pipeline", None)
        ):  # waiting for a head
            if cycle is self._idle_with:
                self.transport.write(_REQUEST_TIMEOUT)
                self.transport.close()
                return
            self._idle_with = cycle
        else:
            self._idle_with = _BUSY
            if cycle.more_body:  # its body is awaited (answered or not)
                now = asyncio.get_running_loop().time()
                if cycle is not self._body_of:
                    self._body_of, self._body_since = cycle, now
                elif now - self._body_since >= self.body_timeout:
                    self.transport.close()  # the application sees the client go
                    return
        self._timer = asyncio.get_running_loop().call_later(self.head_timeout, self._look)


_BUSY = object()  # a request under way: no head awaited


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

    return with_deadlines(import_from_string(_BASES[http]), head_timeout, body_timeout)


def with_deadlines(
    base: type[asyncio.Protocol],
    head_timeout: float = DEFAULT_HEAD_TIMEOUT,
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
) -> type[asyncio.Protocol]:
    """``base`` (one of uvicorn's HTTP protocols) with the two deadlines."""
    return type(
        f"{base.__name__}WithDeadlines",
        (_Deadlines, base),
        {"head_timeout": head_timeout, "body_timeout": body_timeout, "__module__": __name__},
    )


def guard_uvicorn(
    head_timeout: float = DEFAULT_HEAD_TIMEOUT, body_timeout: float = DEFAULT_BODY_TIMEOUT
) -> bool:
    """Called by an app at its ASGI lifespan startup: when uvicorn runs that
    startup, the connections it accepts from then on (it accepts none before)
    get the deadlines, unless its HTTP protocol has them already. Whether it
    put them on.

    An ASGI app never sees a request head before it is complete, so it
    cannot cut a trickling one itself; and uvicorn's command line, or a
    ``uvicorn.run(app)``, chooses the protocol without the app. uvicorn makes
    each connection's protocol from ``Config.http_protocol_class`` as it
    accepts it, and runs the lifespan (in each worker of ``--workers``) in a
    task of its ``LifespanOn``, before it listens: that config is reached
    from the task, whatever ASGI wrappers pass the lifespan on."""
    if "uvicorn" not in sys.modules:
        return False  # another server (uvicorn is imported by whatever runs it)
    from uvicorn.lifespan.on import LifespanOn

    task = asyncio.current_task()
    running = None if task is None else task.get_coro()
    if not inspect.iscoroutine(running):
        return False
    owner = inspect.getcoroutinelocals(running).get("self")
    if not isinstance(owner, LifespanOn):
        return False
    config = owner.config
    current = config.http_protocol_class
    if issubclass(current, _Deadlines) or not issubclass(current, _uvicorn_protocols()):
        return False  # run_http's, a named one of this module's, or a protocol of its own
    config.http_protocol_class = with_deadlines(current, head_timeout, body_timeout)
    return True


def _uvicorn_protocols() -> tuple[type[asyncio.Protocol], ...]:
    from uvicorn.protocols.http.h11_impl import H11Protocol

    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # httptools not installed
        return (H11Protocol,)
    return (H11Protocol, HttpToolsProtocol)


def __getattr__(name: str) -> type[asyncio.Protocol]:
    """``HttpToolsProtocol`` and ``H11Protocol``: the protocols with the default
    deadlines, named by uvicorn's ``--http module:Class``."""
    if name == "HttpToolsProtocol":
        return uvicorn_protocol("httptools")
    if name == "H11Protocol":
        return uvicorn_protocol("h11")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
