"""A server whose tool list grows: its ``grow`` tool adds a tool and announces
the change, at both eras (2025-11-25 handlers for handshake sessions, 2026-07-28
for stateless ones, sharing one list)."""

from __future__ import annotations

from typing import Any

from typing_extensions import override

from mcpbind._server.server import Server
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25 as legacy
from mcpbind_protocol import v2026_07_28 as modern


class Growth:
    """The shared list of tool names, and the server to announce changes through."""

    def __init__(self) -> None:
        self.names = ["grow"]
        self.server: Server | None = None

    async def grow(self) -> str:
        name = f"extra-{len(self.names)}"
        self.names.append(name)
        assert self.server is not None
        await self.server.notify_list_changed("tools")
        return name


class LegacyGrowing(legacy.ServerHandlers):
    def __init__(self, growth: Growth) -> None:
        self.growth = growth

    @override
    async def list_tools(
        self, params: legacy.PaginatedRequestParams, ctx: RequestContext
    ) -> legacy.ListToolsResult:
        schema = legacy.ToolInputSchema(type="object")
        return legacy.ListToolsResult(
            tools=[legacy.Tool(name=name, input_schema=schema) for name in self.growth.names]
        )

    @override
    async def call_tool(
        self, params: legacy.CallToolRequestParams, ctx: RequestContext
    ) -> legacy.CallToolResult:
        text = await self.growth.grow() if params.name == "grow" else f"{params.name} called"
        return legacy.CallToolResult(content=[legacy.TextContent(text=text)])


class ModernGrowing(modern.ServerHandlers):
    def __init__(self, growth: Growth) -> None:
        self.growth = growth

    @override
    async def list_tools(
        self, params: modern.PaginatedRequestParams, ctx: RequestContext
    ) -> modern.ListToolsResult:
        schema = modern.ToolInputSchema(type="object")
        tools = [modern.Tool(name=name, input_schema=schema) for name in self.growth.names]
        return modern.ListToolsResult(tools=tools, ttl_ms=0, cache_scope="private")

    @override
    async def call_tool(self, params: modern.CallToolRequestParams, ctx: RequestContext) -> Any:
        text = await self.growth.grow() if params.name == "grow" else f"{params.name} called"
        return modern.CallToolResult(content=[modern.TextContent(text=text)])


def growing_server() -> Server:
    growth = Growth()
    server = Server(
        [LegacyGrowing(growth), ModernGrowing(growth)],
        name="growing",
        version="1.0",
        capabilities={"tools": {"listChanged": True}},
    )
    growth.server = server
    return server
