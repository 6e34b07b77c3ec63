"""How a server process runs: on which event loop, with the garbage collector kept out of
the way, and serving stdio.

``run_stdio(server)`` serves one client on this process's stdin and stdout until stdin
closes. Before it starts, everything that exists (modules, types, method tables,
handlers) is moved out of the cyclic collector's generations (``gc.freeze()``): it lives
as long as the process, and without the freeze every full collection would walk it all
again. It runs on uvloop when installed and both standard streams are pipes. HTTP serving
(:mod:`mcpbind.serving`) builds on the same pieces.

The server is handed in: this module needs only its ``serve(transport)``, so the server
knows nothing of how it is run.
"""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import os
import stat
import sys
from collections.abc import Coroutine
from typing import Any, Protocol

from .._core.session import Transport
from .._transports.stdio import configure_stdio_logging, process_stdio


class Serves(Protocol):
    """What runs over a transport: :class:`mcpbind._server.server.Server`."""

    async def serve(self, transport: Transport) -> None: ...


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def freeze_heap() -> None:
    """Collect once, then leave what survives (the long-lived objects of
    start-up) out of every later collection."""
    gc.collect()
    gc.freeze()


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


def run_main(main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` on uvloop when installed, else asyncio; Ctrl-C ends it quietly."""
    try:
        if installed("uvloop"):
            import uvloop

            uvloop.run(main)
        else:
            asyncio.run(main)
    except KeyboardInterrupt:
        pass


async def serve_stdio(server: Serves) -> None:
    """Serve one session over this process's stdin and stdout."""
    transport = await process_stdio()
    await server.serve(transport)


def run_stdio(server: Serves) -> None:
    """Run ``server`` over stdio until stdin closes (blocking; the usual entry point)."""
    configure_stdio_logging()
    freeze_heap()
    try:
        run_stdio_loop(serve_stdio(server))
    except KeyboardInterrupt:
        pass
