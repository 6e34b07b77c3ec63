"""An MCP client over stdio: starts a server process and exercises it with
the generated 2025-11-25 client stub.

``python examples/stdio_client.py`` runs it against ``examples/stdio_server.py``;
``python examples/stdio_client.py COMMAND [ARGS...]`` against any server, for
example ``npx -y @modelcontextprotocol/server-everything stdio``. It calls only
what the server lists: ``echo`` (with a string for each required argument),
``count`` with progress and ``sleep`` with a timeout when the server has them,
the first resources, and the first prompt.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from msgspec import UNSET
from typing_extensions import override

from mcpbind import Client, McpError, RequestContext, StdioServerParameters, connect_stdio
from mcpbind_protocol import v2025_11_25 as mcp


class ExampleClient(mcp.ClientHandlers):
    """Prints the log messages the server sends."""

    @override
    async def on_logging_message(
        self, params: mcp.LoggingMessageNotificationParams, ctx: RequestContext
    ) -> None:
        print(f"  log [{params.level}] {params.data}")


async def on_progress(progress: float, total: float | None, message: str | None) -> None:
    print(f"  progress {progress}/{total} {message or ''}")


def texts(result: mcp.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, mcp.TextContent)]


def string_arguments(tool: mcp.Tool, value: str) -> dict[str, Any]:
    """``value`` for every required string property of the tool's input schema."""
    properties = (
        tool.input_schema.properties if isinstance(tool.input_schema.properties, dict) else {}
    )
    required = tool.input_schema.required if isinstance(tool.input_schema.required, list) else []
    return {name: value for name in required if properties.get(name, {}).get("type") == "string"}


async def main(command: list[str]) -> None:
    client = Client(name="mcp-codegen-example-client", version="0.1.0", handlers=ExampleClient())
    parameters = StdioServerParameters(command=command[0], args=command[1:])
    async with connect_stdio(client, parameters) as session:
        print(f"connected to {session.server_info.name} speaking {session.protocol_version}")
        server = mcp.ClientStub(session)
        capabilities: mcp.ServerCapabilities = session.server_capabilities
        await server.ping()
        if capabilities.logging is not UNSET:
            await server.set_level("debug")
        tools = {tool.name: tool async for tool in server.iter_tools()}
        for tool in tools.values():
            print(f"tool {tool.name}: {tool.description}")
        if "echo" in tools:
            result = await server.call_tool(
                "echo", arguments=string_arguments(tools["echo"], "hello")
            )
            print("echo ->", texts(result))
        if "count" in tools:
            result = await server.call_tool(
                "count", arguments={"steps": 3}, on_progress=on_progress
            )
            print("count ->", texts(result))
        if "sleep" in tools:
            try:
                await server.call_tool("sleep", arguments={"seconds": 30}, timeout=0.2)
            except McpError as error:
                print("sleep ->", error)
        if capabilities.resources is not UNSET:
            resources = await server.list_resources()
            for resource in resources.resources[:3]:
                contents = await server.read_resource(resource.uri)
                print(f"resource {resource.uri}: {type(contents.contents[0]).__name__}")
        if capabilities.prompts is not UNSET:
            prompts = await server.list_prompts()
            if prompts.prompts:
                first = prompts.prompts[0]
                arguments = first.arguments if isinstance(first.arguments, list) else []
                values = {
                    argument.name: "python" for argument in arguments if argument.required is True
                }
                prompt = await server.get_prompt(first.name, arguments=values)
                print(
                    f"prompt {first.name} ->",
                    prompt.messages[0].content if prompt.messages else None,
                )
                if arguments and capabilities.completions is not UNSET:
                    completion = await server.complete(
                        mcp.CompleteRequestParamsArgument(name=arguments[-1].name, value="p"),
                        mcp.PromptReference(name=first.name),
                    )
                    print(
                        f"complete {first.name}({arguments[-1].name}='p') ->",
                        completion.completion.values,
                    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:] or [sys.executable, "examples/stdio_server.py"]))
