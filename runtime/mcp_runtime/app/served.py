"""Serving an ASGI application with uvicorn from a program's main: a missing
``http`` extra is one line naming it (no traceback), and the address the
server listens on is printed once it listens (port 0 resolved)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from ..extras import MissingExtra
from ..http import UVICORN_OPTIONS


def run_uvicorn(
    asgi: Any,
    host: str,
    port: int,
    *,
    path: str,
    name: str,
    on_listening: Callable[[str], None] | None = None,
) -> None:
    """Serve ``asgi`` until interrupted (blocking). ``on_listening`` is told the
    endpoint's URL once the socket is bound (default: a line on stderr)."""
    try:
        import uvicorn
    except ImportError as error:
        # The caller is a program's main: SystemExit prints this one line and exits 1.
        raise SystemExit(
            f"{name}: {MissingExtra('serving over HTTP', 'http', error.name)}"
        ) from None
    announce = on_listening or (lambda url: _say(f"{name}: serving MCP at {url}"))

    class Announcing(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.should_exit:
                return
            bound = self.servers[0].sockets[0].getsockname() if self.servers else (host, port)
            authority = f"[{bound[0]}]" if ":" in str(bound[0]) else str(bound[0])
            announce(f"http://{authority}:{bound[1]}{path}")

    config = uvicorn.Config(asgi, host=host, port=port, log_level="warning", **UVICORN_OPTIONS)
    Announcing(config).run()


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
