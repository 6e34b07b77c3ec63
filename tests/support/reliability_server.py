"""The server of the reliability, security and load tests: the example
low-level test server's tools (lowlevel_server.py: echo, sleep, count, ...) and a few
that tests steer.

* ``gate`` {token}: waits until released, then answers the token; the test
  releases it with :meth:`ReliabilityServer.release` (in-process) or by
  calling ``open`` {token}.
* ``slow`` {seconds, token}: sleeps, then answers the token; a cancelled call
  is recorded in ``cancelled`` (and, in a child process, as a line
  ``cancelled <token>`` in the file named by $RELIABILITY_CANCEL_LOG).
* ``numbered`` {count, pause}: ``count`` progress notifications numbered 1..count,
  ``pause`` seconds apart, then the answer ``numbered <count>``.
* ``flood`` {count, size}: ``count`` progress notifications of ``size`` bytes
  each, as fast as the transport takes them.

As a program: ``python reliability_server.py stdio [--max-message-size N]
[--max-buffered N]`` serves one session over stdio; ``python
reliability_server.py http [options]`` binds 127.0.0.1 on an ephemeral port,
prints ``PORT <n>`` once listening and serves ``http_app`` at /mcp (and
/sse, /messages), plus ``GET /stats``: the server's RSS, sessions, streams and
tasks, as JSON, for the memory checks of the tests.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import socket
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from typing_extensions import override

SUPPORT = Path(__file__).resolve().parent
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))

from lowlevel_server import TOOLS, LowLevelServer  # noqa: E402

from mcpbind._server.server import Server  # noqa: E402
from mcpbind.methods import RequestContext  # noqa: E402
from mcpbind_protocol import v2025_11_25 as mcp  # noqa: E402

_OBJECT = mcp.ToolInputSchema(type="object")
EXTRA_TOOLS = [
    mcp.Tool(
        name="gate", description="Wait until the test releases `token`.", input_schema=_OBJECT
    ),
    mcp.Tool(name="open", description="Release the gate `token`.", input_schema=_OBJECT),
    mcp.Tool(
        name="slow", description="Sleep `seconds`, then answer `token`.", input_schema=_OBJECT
    ),
    mcp.Tool(
        name="numbered",
        description="`count` numbered progress notifications.",
        input_schema=_OBJECT,
    ),
    mcp.Tool(
        name="flood",
        description="`count` progress notifications of `size` bytes.",
        input_schema=_OBJECT,
    ),
]


def _text(value: str) -> mcp.CallToolResult:
    return mcp.CallToolResult(content=[mcp.TextContent(text=value)])


class ReliabilityServer(LowLevelServer):
    def __init__(self) -> None:
        self.gates: dict[str, asyncio.Event] = {}
        self.entered: dict[str, asyncio.Event] = {}
        self.cancelled: list[str] = []
        self.finished: list[str] = []
        self.cancel_log = os.environ.get("RELIABILITY_CANCEL_LOG")

    def _gate(self, token: str) -> asyncio.Event:
        return self.gates.setdefault(token, asyncio.Event())

    def release(self, token: str) -> None:
        """Let the ``gate`` call with this token answer (call it on the server's loop)."""
        self._gate(token).set()

    async def wait_entered(self, token: str) -> None:
        await self.entered.setdefault(token, asyncio.Event()).wait()

    @override
    async def list_tools(
        self, params: mcp.PaginatedRequestParams, ctx: RequestContext
    ) -> mcp.ListToolsResult:
        return mcp.ListToolsResult(tools=[*TOOLS, *EXTRA_TOOLS])

    @override
    async def call_tool(
        self, params: mcp.CallToolRequestParams, ctx: RequestContext
    ) -> mcp.CallToolResult:
        arguments: dict[str, Any] = params.arguments if isinstance(params.arguments, dict) else {}
        token = str(arguments.get("token", ""))
        if params.name == "gate":
            self.entered.setdefault(token, asyncio.Event()).set()
            await self._gate(token).wait()
            del self.gates[token]
            self.entered.pop(token, None)
            return _text(token)
        if params.name == "open":
            self.release(token)
            return _text(token)
        if params.name == "slow":
            try:
                await asyncio.sleep(float(arguments.get("seconds", 60)))
            except asyncio.CancelledError:
                self.cancelled.append(token)
                if self.cancel_log:
                    with open(self.cancel_log, "a") as log:
                        log.write(f"cancelled {token}\n")
                raise
            self.finished.append(token)
            return _text(token)
        if params.name == "numbered":
            count = int(arguments.get("count", 10))
            pause = float(arguments.get("pause", 0.0))
            for number in range(1, count + 1):
                await ctx.report_progress(number, count, f"#{number}")
                await asyncio.sleep(pause)
            return _text(f"numbered {count}")
        if params.name == "flood":
            count, size = int(arguments.get("count", 100)), int(arguments.get("size", 1024))
            filler = "x" * size
            for number in range(1, count + 1):
                await ctx.report_progress(number, count, filler)
            return _text("flooded")
        return await super().call_tool(params, ctx)


def reliability_server(handlers: ReliabilityServer | None = None) -> Server:
    return Server(handlers or ReliabilityServer(), name="reliability-server", version="0.1.0")


# ---------------------------------------------------------------- as a program


class _WithStats:
    """Serves GET /stats itself and hands every other request to ``app``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/stats":
            stats = self.stats()
            if scope.get("query_string") == b"types":
                stats["types"] = Counter(
                    type(o).__qualname__ for o in gc.get_objects()
                ).most_common(40)
            body = json.dumps(stats).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    def stats(self) -> dict[str, Any]:
        gc.collect()
        streamable = self.app.streamable
        sessions = list(streamable.sessions.values())
        status = Path("/proc/self/status").read_text()
        rss = next(
            int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")
        )
        return {
            "rss_kib": rss,
            "sessions": len(sessions),
            "legacy_sessions": len(self.app.legacy.sessions) if self.app.legacy is not None else 0,
            "streams": sum(len(s.transport.streams) for s in sessions),
            "in_flight": sum(len(s.session._in_flight) for s in sessions),
            "tasks": len(asyncio.all_tasks()),
            "gc_objects": len(gc.get_objects()),
        }


def _serve_http(options: argparse.Namespace) -> None:
    import uvicorn

    from mcpbind.http import HttpOptions, http_app

    extra: dict[str, Any] = {}
    if options.max_stream_buffer is not None:
        extra["max_stream_buffer"] = options.max_stream_buffer
    app = http_app(
        reliability_server(),
        **extra,
        options=HttpOptions(
            max_body_size=options.max_body_size,
            max_concurrent_requests=options.max_concurrent,
            retry_ms=options.retry_ms,
            session_timeout=options.session_timeout,
        ),
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(4096)  # connections wait in the backlog until uvicorn accepts them
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(
        _WithStats(app), log_level="error", lifespan="on", timeout_graceful_shutdown=1, backlog=4096
    )
    uvicorn.Server(config).run(sockets=[sock])


def _serve_stdio(options: argparse.Namespace) -> None:
    from mcpbind._transports.stdio import configure_stdio_logging, process_stdio

    configure_stdio_logging()

    async def main() -> None:
        extra: dict[str, Any] = {}
        if options.max_buffered is not None:
            extra["max_buffered"] = options.max_buffered
        transport = await process_stdio(options.max_message_size, **extra)
        await reliability_server().serve(transport)

    asyncio.run(main())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("mode", choices=["stdio", "http"])
    parser.add_argument("--max-message-size", type=int, default=64 * 1024 * 1024)
    parser.add_argument("--max-buffered", type=int, default=None)
    parser.add_argument("--max-body-size", type=int, default=4 * 1024 * 1024)
    parser.add_argument("--max-concurrent", type=int, default=1024)
    parser.add_argument("--max-stream-buffer", type=int, default=None)
    parser.add_argument("--retry-ms", type=int, default=1000)
    parser.add_argument("--session-timeout", type=float, default=30 * 60)
    options = parser.parse_args()
    if options.mode == "stdio":
        _serve_stdio(options)
    else:
        _serve_http(options)


if __name__ == "__main__":
    main()
