"""Echo server on this project's runtime: one tool, ``echo``, returning its ``text`` argument.

``python bench/servers/ours_stdio.py`` serves stdio; ``... http PORT`` serves
Streamable HTTP on 127.0.0.1:PORT/mcp with ``mcpbind.serving.run_http``
(uvicorn, one worker, on uvloop and httptools when installed). With
``--modern`` the handlers are of revision 2026-07-28 (clients find it with
server/discover and send each request with its own ``_meta``); without it,
of 2025-11-25 (the initialize handshake).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from mcpbind._server.server import Server
from mcpbind.methods import RequestContext
from mcpbind.serving import run_stdio
from mcpbind_protocol import v2025_11_25 as mcp
from mcpbind_protocol import v2026_07_28 as modern

ECHO = mcp.Tool(
    name="echo",
    description="Return the text it is given.",
    input_schema=mcp.ToolInputSchema(
        type="object", properties={"text": {"type": "string"}}, required=["text"]
    ),
)


class EchoServer(mcp.ServerHandlers):
    async def list_tools(
        self, params: mcp.PaginatedRequestParams, ctx: RequestContext
    ) -> mcp.ListToolsResult:
        return mcp.ListToolsResult(tools=[ECHO])

    async def call_tool(
        self, params: mcp.CallToolRequestParams, ctx: RequestContext
    ) -> mcp.CallToolResult:
        arguments: dict[str, Any] = params.arguments if isinstance(params.arguments, dict) else {}
        if params.name != "echo":
            return mcp.CallToolResult(
                content=[mcp.TextContent(text=f"unknown tool {params.name!r}")], is_error=True
            )
        return mcp.CallToolResult(content=[mcp.TextContent(text=str(arguments.get("text", "")))])


MODERN_ECHO = modern.Tool(
    name="echo",
    description="Return the text it is given.",
    input_schema=modern.ToolInputSchema(
        type="object", properties={"text": {"type": "string"}}, required=["text"]
    ),
)


class ModernEchoServer(modern.ServerHandlers):
    async def list_tools(
        self, params: modern.PaginatedRequestParams, ctx: RequestContext
    ) -> modern.ListToolsResult:
        # Fetched once per trial: no reason to let the client keep it.
        return modern.ListToolsResult(tools=[MODERN_ECHO], ttl_ms=0, cache_scope="private")

    async def call_tool(
        self, params: modern.CallToolRequestParams, ctx: RequestContext
    ) -> modern.CallToolResult | modern.InputRequiredResult:
        arguments: dict[str, Any] = params.arguments if isinstance(params.arguments, dict) else {}
        if params.name != "echo":
            return modern.CallToolResult(
                content=[modern.TextContent(text=f"unknown tool {params.name!r}")], is_error=True
            )
        return modern.CallToolResult(
            content=[modern.TextContent(text=str(arguments.get("text", "")))]
        )


def server(modern_wire: bool = False) -> Server:
    handlers = ModernEchoServer() if modern_wire else EchoServer()
    # BENCH_TELEMETRY=on (bench/telemetry_bench.py): the same server, traced and measured.
    on = _load_telemetry_on().telemetry()
    traced: dict[str, Any] = {} if on is None else {"telemetry": on}  # runs on older trees too
    return Server(handlers, name="bench-echo", version="1.0.0", **traced)


def _load_telemetry_on() -> Any:
    """bench/servers/telemetry_on.py, beside this file (run as a script or loaded by path)."""
    spec = importlib.util.spec_from_file_location(
        "bench_telemetry_on", Path(__file__).resolve().parent / "telemetry_on.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    modern_wire = "--modern" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--modern"]
    if len(args) > 1 and args[0] == "http":
        from mcpbind.serving import run_http

        # The runtime's own helper: uvicorn on uvloop and httptools, the heap frozen after start-up.
        run_http(server(modern_wire), port=int(args[1]), legacy_sse=False)
    else:
        run_stdio(server(modern_wire))


if __name__ == "__main__":
    main()
