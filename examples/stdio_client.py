"""An MCP client over stdio: starts a server process and exercises it with
the generated 2025-11-25 client stub.

``python examples/stdio_client.py`` runs it against ``examples/stdio_server.py``;
``python examples/stdio_client.py COMMAND [ARGS...]`` against any server.
"""

from __future__ import annotations

import asyncio
import sys

from mcp_protocol import v2025_11_25 as mcp
from mcp_runtime.client import Client, connect_stdio
from mcp_runtime.jsonrpc import McpError
from mcp_runtime.methods import RequestContext
from mcp_runtime.stdio import StdioServerParameters
from typing_extensions import override


class ExampleClient(mcp.ClientHandlers):
    """Prints the log messages the server sends."""

    @override
    async def on_logging_message(self, params: mcp.LoggingMessageNotificationParams, ctx: RequestContext) -> None:
        print(f"  log [{params.level}] {params.data}")


async def on_progress(progress: float, total: float | None, message: str | None) -> None:
    print(f"  progress {progress}/{total} {message or ''}")


async def main(command: list[str]) -> None:
    client = Client(name="mcp-codegen-example-client", version="0.1.0", handlers=ExampleClient())
    parameters = StdioServerParameters(command=command[0], args=command[1:])
    async with connect_stdio(client, parameters) as session:
        print(f"connected to {session.server_info.name} speaking {session.protocol_version}")
        server = mcp.ClientStub(session)
        await server.ping()
        await server.set_level("debug")
        async for tool in server.iter_tools():
            print(f"tool {tool.name}: {tool.description}")
        result = await server.call_tool("echo", arguments={"text": "hello"})
        print("echo ->", [block.text for block in result.content if isinstance(block, mcp.TextContent)])
        result = await server.call_tool("count", arguments={"steps": 3}, on_progress=on_progress)
        print("count ->", [block.text for block in result.content if isinstance(block, mcp.TextContent)])
        try:
            await server.call_tool("sleep", arguments={"seconds": 30}, timeout=0.2)
        except McpError as error:
            print("sleep ->", error)
        resources = await server.list_resources()
        for resource in resources.resources:
            contents = await server.read_resource(resource.uri)
            print(f"resource {resource.uri}: {type(contents.contents[0]).__name__}")
        prompt = await server.get_prompt("review", arguments={"code": "print(1)", "language": "python"})
        print("prompt ->", prompt.messages[0].content)
        completion = await server.complete(
            mcp.CompleteRequestParamsArgument(name="language", value="r"),
            mcp.PromptReference(name="review"),
        )
        print("complete ->", completion.completion.values)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:] or [sys.executable, "examples/stdio_server.py"]))
