"""The low-level test server (lowlevel_server.py), made hard to stop, for the shutdown tests.

``python stubborn_server.py ignore-eof``: keeps running after its stdin closes
(a SIGTERM ends it). ``python stubborn_server.py ignore-term``: also ignores
SIGTERM, so only SIGKILL ends it. In every mode the tool ``hang`` blocks the
whole process (it stops reading its stdin) until a signal ends it, and the tool
``scribble`` writes stray text to stdout the way careless server code would,
and the tool ``pid`` answers with the server's process id.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lowlevel_server import LowLevelServer, mcp  # noqa: E402

from mcpbind._server.server import Server  # noqa: E402
from mcpbind._transports.stdio import configure_stdio_logging  # noqa: E402
from mcpbind.methods import RequestContext  # noqa: E402
from mcpbind.serving import serve_stdio  # noqa: E402


class StubbornServer(LowLevelServer):
    async def call_tool(
        self, params: mcp.CallToolRequestParams, ctx: RequestContext
    ) -> mcp.CallToolResult:
        if params.name == "hang":
            time.sleep(3600)  # blocks the event loop: nothing is read any more
        if params.name == "pid":
            return mcp.CallToolResult(content=[mcp.TextContent(text=str(os.getpid()))])
        if params.name == "scribble":
            print("stray print")
            sys.stdout.flush()
            os.write(1, b"stray bytes on fd 1\n")
            return mcp.CallToolResult(content=[mcp.TextContent(text="scribbled")])
        return await super().call_tool(params, ctx)


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "ignore-eof"
    if mode == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    configure_stdio_logging()
    asyncio.run(serve_stdio(Server(StubbornServer(), name="stubborn", version="0")))
    print("stdin closed; lingering", file=sys.stderr, flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
