"""Serving an ASGI application of this runtime: the fast server stack, and the
garbage collector kept out of the way.

``run_http(server_or_app)`` serves over HTTP until interrupted, with one of

* ``"uvicorn"`` (default): uvicorn with uvloop and httptools when they are
  importable (the ``http`` extra installs both), else asyncio and h11;
* ``"uvicorn-h11"``: plain uvicorn (asyncio, h11), for comparison;
* ``"granian"``: granian's embedded server (the ``granian`` extra), the HTTP
  side in Rust, the application on uvloop when installed.

Every connection has a deadline for each request head (``head_timeout``,
10 s from the connection's start or the previous response) and body
(``connection_body_timeout``, 60 s, a backstop behind the app's own 408 at
``HttpOptions.body_timeout``): under uvicorn through the protocols of
:mod:`mcpbind._transports.http.server.deadlines`, under granian through its
``header_read_timeout`` (the head only; the app bounds the body).

Once the application has started (ASGI lifespan startup), everything that
exists is moved out of the cyclic garbage collector's generations
(``gc.freeze()``): modules, types, method tables and decoders are never
garbage, and without the freeze every full collection walks them all again,
pausing requests for tens of milliseconds.

``run_stdio(server)`` serves stdio, freezing the heap the same way before it
starts, on uvloop when it is installed and both standard streams are pipes
(:mod:`mcpbind._server.running`).
"""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import Any

from ._core.extras import MissingExtra
from ._server.running import (
    freeze_heap,
    installed,
    run_main,
    run_stdio,
    run_stdio_loop,
    serve_stdio,
    stdio_streams_are_pipes,
)
from ._server.server import Server
from ._transports.http.asgi import App, Message, Receive, Scope, Send

STACKS = ("uvicorn", "uvicorn-h11", "granian")


class FreezeAfterStartup:
    """An ASGI app that freezes the heap once ``app`` has started (lifespan);
    requests go straight through."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return

        async def send_then_freeze(message: Message) -> None:
            await send(message)
            if message["type"] == "lifespan.startup.complete":
                freeze_heap()

        await self.app(scope, receive, send_then_freeze)


def uvicorn_options(stack: str = "uvicorn") -> dict[str, str]:
    """uvicorn's ``loop`` and ``http`` for ``stack``: the fast ones when importable."""
    if stack == "uvicorn-h11":
        return {"loop": "asyncio", "http": "h11"}
    return {
        "loop": "uvloop" if installed("uvloop") else "asyncio",
        "http": "httptools" if installed("httptools") else "h11",
    }


def run_http(
    target: Server | App,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    stack: str = "uvicorn",
    freeze: bool = True,
    log_level: str = "warning",
    name: str = "mcp",
    path: str = "/mcp",
    head_timeout: float | None = None,
    connection_body_timeout: float | None = None,
    **options: Any,
) -> None:
    """Serve ``target`` (a Server, served by ``http_app``, or any ASGI app)
    on ``host:port`` with ``stack`` (see the module docstring) until
    interrupted. ``options`` go to ``http_app`` when ``target`` is a Server.
    Under uvicorn, once it listens, ``"{name}: serving MCP at {url}"`` (the
    endpoint at ``path``) is written on stderr; without uvicorn (the ``http``
    extra), one line names it and the program exits 1. ``head_timeout`` and
    ``connection_body_timeout``: the deadlines of each request's head and body
    on a connection (see the module docstring; None: 10 s and 60 s, the
    defaults of :mod:`mcpbind._transports.http.server.deadlines`)."""
    if stack not in STACKS:
        raise ValueError(f"unknown server stack {stack!r} (one of {', '.join(STACKS)})")
    if isinstance(target, Server):
        from .http import http_app

        app: App = http_app(target, path=path, **options)
    elif options:
        raise TypeError(f"options for http_app given with an application: {', '.join(options)}")
    else:
        app = target
    if freeze:
        app = FreezeAfterStartup(app)
    from ._transports.http.server import deadlines as limits

    head = limits.DEFAULT_HEAD_TIMEOUT if head_timeout is None else head_timeout
    body = (
        limits.DEFAULT_BODY_TIMEOUT if connection_body_timeout is None else connection_body_timeout
    )
    if stack == "granian":
        run_main(_serve_granian(app, host, port, log_level, head))
        return
    deadlines = (head, body)
    _serve_uvicorn(app, host, port, stack, log_level, name, path, deadlines)


def _serve_uvicorn(
    app: App,
    host: str,
    port: int,
    stack: str,
    log_level: str,
    name: str,
    path: str,
    deadlines: tuple[float, float],
) -> None:
    try:
        import uvicorn
    except ImportError as error:
        # Called from a program's main: SystemExit prints this one line and exits 1.
        raise SystemExit(
            f"{name}: {MissingExtra('serving over HTTP', 'http', error.name)}"
        ) from None

    from ._transports.http.server.deadlines import uvicorn_protocol
    from .http import UVICORN_OPTIONS

    class Announcing(uvicorn.Server):
        """Says where it listens once the socket is bound (port 0 resolved)."""

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.should_exit:
                return
            bound = self.servers[0].sockets[0].getsockname() if self.servers else (host, port)
            authority = f"[{bound[0]}]" if ":" in str(bound[0]) else str(bound[0])
            sys.stderr.write(f"{name}: serving MCP at http://{authority}:{bound[1]}{path}\n")
            sys.stderr.flush()

    chosen: dict[str, Any] = {**UVICORN_OPTIONS, **uvicorn_options(stack)}
    head, body = deadlines
    chosen["http"] = uvicorn_protocol(chosen["http"], head_timeout=head, body_timeout=body)
    config = uvicorn.Config(
        app, host=host, port=port, log_level=log_level, access_log=False, **chosen
    )
    Announcing(config).run()


async def _serve_granian(
    app: App, host: str, port: int, log_level: str, head_timeout: float
) -> None:
    try:
        from granian.constants import Interfaces
        from granian.http import HTTP1Settings
        from granian.log import LogLevels
        from granian.server.embed import Server as Granian
    except ImportError:
        raise RuntimeError(
            "serving with granian needs the granian extra: pip install 'mcpbind[granian]'"
        ) from None
    server = Granian(
        app,
        address=host,
        port=port,
        interface=Interfaces.ASGI,
        log_level=LogLevels(log_level),
        http1_settings=HTTP1Settings(header_read_timeout=max(1, int(head_timeout * 1000))),
    )
    # The embedded server leaves signals to its host: stop gracefully (lifespan shutdown) on either.
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, server.stop)
    await server.serve()


__all__ = [
    "STACKS",
    "FreezeAfterStartup",
    "freeze_heap",
    "installed",
    "run_http",
    "run_stdio",
    "run_stdio_loop",
    "serve_stdio",
    "stdio_streams_are_pipes",
    "uvicorn_options",
]
