"""A small, correct MCP 2025-11-25 server: it must type-check under mypy --strict."""

from __future__ import annotations

from typing_extensions import override

from mcpbind_protocol.v2025_11_25 import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    ServerHandlers,
    TextContent,
    TextResourceContents,
    Tool,
    ToolInputSchema,
)
from mcpbind.codec import UNSET
from mcpbind.methods import RequestContext


class EchoServer(ServerHandlers):
    @override
    async def call_tool(self, params: CallToolRequestParams, ctx: RequestContext) -> CallToolResult:
        arguments = params.arguments if params.arguments is not UNSET else {}
        await ctx.report_progress(1.0, total=1.0)
        return CallToolResult(content=[TextContent(text=f"{params.name}: {arguments!r}")])

    @override
    async def list_tools(self, params: PaginatedRequestParams, ctx: RequestContext) -> ListToolsResult:
        schema = ToolInputSchema(properties={"text": {"type": "string"}}, required=["text"])
        return ListToolsResult(tools=[Tool(name="echo", input_schema=schema)])

    @override
    async def read_resource(self, params: ReadResourceRequestParams, ctx: RequestContext) -> ReadResourceResult:
        return ReadResourceResult(contents=[TextResourceContents(uri=params.uri, text="hello")])
