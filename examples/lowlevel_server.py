"""The low-level API underneath the application layer: a server written
against the generated 2025-11-25 handler interface (``ServerHandlers``), with
its own JSON Schemas and results, for what the layer does not cover.

Each method is one MCP request, typed with that revision's generated params
and result; the runtime declares the capabilities of the methods overridden.
``Server`` takes one handler object per revision it serves (here one).

``python examples/lowlevel_server.py`` serves stdio; try it with
``python examples/stdio_client.py python examples/lowlevel_server.py``.
"""

from __future__ import annotations

from typing import Any

from typing_extensions import override

from mcpbind import INVALID_PARAMS, McpError, RequestContext, Server, run_stdio
from mcpbind_protocol import v2025_11_25 as mcp

ECHO = mcp.Tool(
    name="echo",
    description="Return the text it is given.",
    input_schema=mcp.ToolInputSchema(properties={"text": {"type": "string"}}, required=["text"]),
)


class LowLevelHandlers(mcp.ServerHandlers):
    @override
    async def list_tools(
        self, params: mcp.PaginatedRequestParams, ctx: RequestContext
    ) -> mcp.ListToolsResult:
        return mcp.ListToolsResult(tools=[ECHO])

    @override
    async def call_tool(
        self, params: mcp.CallToolRequestParams, ctx: RequestContext
    ) -> mcp.CallToolResult:
        if params.name != "echo":
            raise McpError(INVALID_PARAMS, f"Unknown tool: {params.name}")
        arguments: dict[str, Any] = params.arguments if isinstance(params.arguments, dict) else {}
        text = arguments.get("text")
        if not isinstance(text, str):
            return mcp.CallToolResult(
                content=[mcp.TextContent(text="`text` must be a string")], is_error=True
            )
        await ctx.log("info", f"echoing {len(text)} characters", logger="echo")
        return mcp.CallToolResult(content=[mcp.TextContent(text=text)])


if __name__ == "__main__":
    run_stdio(Server(LowLevelHandlers(), name="mcp-codegen-lowlevel-example", version="0.1.0"))
