"""Echo server on this project's runtime: one tool, ``echo``, returning its ``text`` argument.

``python bench/servers/ours_stdio.py`` serves stdio; ``... http PORT`` serves
Streamable HTTP on 127.0.0.1:PORT/mcp with uvicorn (one worker).
"""

from __future__ import annotations

import sys
from typing import Any

from mcp_protocol import v2025_11_25 as mcp
from mcp_runtime.methods import RequestContext
from mcp_runtime.server import Server, run_stdio

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


def server() -> Server:
    return Server(EchoServer(), name="bench-echo", version="1.0.0")


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        import uvicorn

        from mcp_runtime.http import http_app

        app = http_app(server(), legacy_sse=False)
        uvicorn.run(
            app,
            host="127.0.0.1",
            port=int(sys.argv[2]),
            log_level="warning",
            access_log=False,
            workers=1,
        )
    else:
        run_stdio(server())


if __name__ == "__main__":
    main()
