"""Serving an ASGI application of this runtime: the fast server stack, and the
garbage collector kept out of the way.

``run_http(server_or_app)`` serves over HTTP until interrupted, with one of

* ``"uvicorn"`` (default): uvicorn with uvloop and httptools when they are
  importable (the ``http`` extra installs both), else asyncio and h11;
* ``"uvicorn-h11"``: plain uvicorn (asyncio, h11), for comparison;
* ``"granian"``: granian's embedded server (the ``granian`` extra), the HTTP
  side in Rust, the application on uvloop when installed.

Once the application has started (ASGI lifespan startup), everything that
exists is moved out of the cyclic garbage collector's generations
(``gc.freeze()``): modules, types, method tables and decoders are never
garbage, and without the freeze every full collection walks them all again,
pausing requests for tens of milliseconds. ``run_stdio`` does the same before
it starts serving, and runs on uvloop when it is installed and both standard
streams are pipes (``run_stdio_loop``).
"""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import os
import signal
import stat
import sys
from collections.abc import Awaitable, Callable, Coroutine, MutableMapping
from typing import Any

from .server import Server

STACKS = ("uvicorn", "uvicorn-h11", "granian")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def freeze_heap() -> None:
    """Collect once, then leave what survives (the long-lived objects of
    start-up) out of every later collection."""
    gc.collect()
    gc.freeze()


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
    **options: Any,
) -> None:
    """Serve ``target`` (a Server, served by ``http_app``, or any ASGI app)
    on ``host:port`` with ``stack`` (see the module docstring) until
    interrupted. ``options`` go to ``http_app`` when ``target`` is a Server."""
    if stack not in STACKS:
        raise ValueError(f"unknown server stack {stack!r} (one of {', '.join(STACKS)})")
    if isinstance(target, Server):
        from .http import http_app

        app: App = http_app(target, **options)
    elif options:
        raise TypeError(f"options for http_app given with an application: {', '.join(options)}")
    else:
        app = target
    if freeze:
        app = FreezeAfterStartup(app)
    if stack == "granian":
        _run(_serve_granian(app, host, port, log_level))
        return
    import uvicorn

    from .http import UVICORN_OPTIONS

    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        **{**UVICORN_OPTIONS, **uvicorn_options(stack)},
    )


async def _serve_granian(app: App, host: str, port: int, log_level: str) -> None:
    try:
        from granian.constants import Interfaces
        from granian.log import LogLevels
        from granian.server.embed import Server as Granian
    except ImportError:
        raise RuntimeError(
            "serving with granian needs the granian extra: pip install 'mcp-codegen[granian]'"
        ) from None
    server = Granian(
        app, address=host, port=port, interface=Interfaces.ASGI, log_level=LogLevels(log_level)
    )
    # The embedded server leaves signals to its host: stop gracefully (lifespan shutdown) on either.
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, server.stop)
    await server.serve()


def stdio_streams_are_pipes() -> bool:
    """Whether stdin and stdout are pipes, sockets or terminals: uvloop's
    pipe transports abort the process on a regular file (asyncio refuses
    one with ValueError, which the stdio transport handles)."""
    for stream in (sys.stdin, sys.stdout):
        try:
            mode = os.fstat(stream.fileno()).st_mode
        except (OSError, ValueError):
            return False
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)):
            return False
    return True


def run_stdio_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run a stdio server's ``main``: on uvloop when installed and both
    streams are pipes (about a quarter less CPU per message), else asyncio."""
    if installed("uvloop") and stdio_streams_are_pipes():
        import uvloop

        uvloop.run(main)
    else:
        asyncio.run(main)


def _run(main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` on uvloop when installed, else asyncio; Ctrl-C ends it quietly."""
    try:
        if installed("uvloop"):
            import uvloop

            uvloop.run(main)
        else:
            asyncio.run(main)
    except KeyboardInterrupt:
        pass
