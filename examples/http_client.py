"""An MCP client over HTTP: connects to a server URL and exercises it with
the generated 2025-11-25 client stub.

``python examples/http_server.py`` in one terminal, then
``python examples/http_client.py [URL]`` (default http://127.0.0.1:8000/mcp).
The URL may name a Streamable HTTP endpoint or, for servers of revision
2024-11-05, an HTTP+SSE endpoint (e.g. http://127.0.0.1:8000/sse):
``connect_http`` tries the first and falls back to the second.
"""

from __future__ import annotations

import asyncio
import sys

from typing_extensions import override

from mcpbind import Client, McpError, RequestContext, connect_http
from mcpbind._transports.http.client.streamable import StreamableHTTPClientTransport
from mcpbind_protocol import v2025_11_25 as mcp

DEFAULT_URL = "http://127.0.0.1:8000/mcp"


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


async def main(url: str) -> None:
    client = Client(
        name="mcp-codegen-example-http-client", version="0.1.0", handlers=ExampleClient()
    )
    async with connect_http(client, url) as session:
        transport = (
            "Streamable HTTP"
            if isinstance(session.transport, StreamableHTTPClientTransport)
            else "HTTP+SSE"
        )
        print(
            f"connected to {session.server_info.name} over {transport}, speaking {session.protocol_version}"
        )
        server = mcp.ClientStub(session)
        await server.ping()
        await server.set_level("debug")
        tools = []
        async for tool in server.iter_tools():
            print(f"tool {tool.name}: {tool.description}")
            tools.append(tool.name)
        result = await server.call_tool("echo", arguments={"text": "hello over HTTP"})
        print("echo ->", texts(result))
        result = await server.call_tool("count", arguments={"steps": 3}, on_progress=on_progress)
        print("count ->", texts(result))
        if "reconnect" in tools:
            # The server drops this call's stream mid-way; the client resumes it.
            result = await server.call_tool(
                "reconnect", arguments={"pause": 0.2}, on_progress=on_progress
            )
            print("reconnect ->", texts(result))
        try:
            await server.call_tool("sleep", arguments={"seconds": 30}, timeout=0.2)
        except McpError as error:
            print("sleep ->", error)
        calls = [server.call_tool("add", arguments={"a": i, "b": i}) for i in range(20)]
        sums = [r.structured_content for r in await asyncio.gather(*calls)]
        print(f"20 concurrent adds -> {sums[:3]} ...")
        resources = await server.list_resources()
        for resource in resources.resources:
            contents = await server.read_resource(resource.uri)
            print(f"resource {resource.uri}: {type(contents.contents[0]).__name__}")
        prompt = await server.get_prompt(
            "review", arguments={"code": "print(1)", "language": "python"}
        )
        print("prompt ->", prompt.messages[0].content)
        completion = await server.complete(
            mcp.CompleteRequestParamsArgument(name="language", value="r"),
            mcp.PromptReference(name="review"),
        )
        print("complete ->", completion.completion.values)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_URL))
