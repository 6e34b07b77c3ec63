"""A server whose tools break what common clients accept, one rule each (for
``mcpx list tools --strict`` beside the Inspector's ``--strict``): a bare
``true`` items schema, a ``type`` array, a remote ``$ref``, an untyped
property, a name with a space, parameters that are not an object schema, a
parameter name with a dash; and ``fine``, which breaks none.
``python tests/support/unportable_server.py`` serves it over stdio."""

from __future__ import annotations

from typing import Any

from typing_extensions import override

from mcpbind._server.server import Server
from mcpbind.methods import RequestContext
from mcpbind.serving import run_stdio
from mcpbind_protocol import v2025_11_25 as mcp


def _tool(name: str, schema: dict[str, Any]) -> mcp.Tool:
    return mcp.Tool(name=name, input_schema=mcp.ToolInputSchema(**schema))


TOOLS = [
    _tool("fine", {"type": "object", "properties": {"city": {"type": "string"}}}),
    # (a bare true directly under properties is refused by the MCP schema's own types)
    _tool(
        "boolean_schema",
        {"type": "object", "properties": {"items": {"type": "array", "items": True}}},
    ),
    _tool(
        "type_union",
        {"type": "object", "properties": {"limit": {"type": ["integer", "null"]}}},
    ),
    _tool(
        "remote_ref",
        {"type": "object", "properties": {"x": {"$ref": "https://example.com/x.json"}}},
    ),
    _tool("untyped", {"type": "object", "properties": {"blob": {"description": "any"}}}),
    _tool("get weather", {"type": "object", "properties": {"city": {"type": "string"}}}),
    _tool(
        "either",
        {
            "type": "object",
            "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        },
    ),
    _tool("dashed", {"type": "object", "properties": {"max-results": {"type": "integer"}}}),
]


class Unportable(mcp.ServerHandlers):
    @override
    async def list_tools(
        self, params: mcp.PaginatedRequestParams, ctx: RequestContext
    ) -> mcp.ListToolsResult:
        return mcp.ListToolsResult(tools=TOOLS)

    @override
    async def call_tool(
        self, params: mcp.CallToolRequestParams, ctx: RequestContext
    ) -> mcp.CallToolResult:
        return mcp.CallToolResult(content=[mcp.TextContent(text=params.name)])


def main() -> None:
    run_stdio(Server(Unportable(), name="unportable", version="1"))


if __name__ == "__main__":
    main()
