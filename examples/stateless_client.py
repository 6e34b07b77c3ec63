"""An MCP client of revision 2026-07-28: connects (server/discover, falling
back to initialize with older servers), calls tools, and answers the
server's questions through its handlers.

``python examples/stateless_client.py`` starts ``examples/stateless_server.py`` and
talks to it over stdio; ``python examples/stateless_client.py COMMAND [ARGS...]``
starts another server; ``python examples/stateless_client.py http://HOST:PORT/mcp``
connects over Streamable HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator

from typing_extensions import override

from mcpbind import (
    Client,
    ClientSession,
    RequestContext,
    StdioServerParameters,
    connect_stdio,
    connect_streamable_http,
)
from mcpbind_protocol import v2025_11_25 as legacy
from mcpbind_protocol import v2026_07_28 as mcp


class ExampleClient(mcp.ClientHandlers):
    """Answers elicitations (with a fixed name: a real client would ask its
    user) and prints what the server tells it."""

    @override
    async def elicit(
        self, params: mcp.ElicitRequestParams, ctx: RequestContext
    ) -> mcp.ElicitResult:
        print(f"  the server asks: {params.message!r} -> answering 'Ada'")
        return mcp.ElicitResult(action="accept", content={"name": "Ada"})

    @override
    async def on_logging_message(
        self, params: mcp.LoggingMessageNotificationParams, ctx: RequestContext
    ) -> None:
        print(f"  log [{params.level}] {params.data}")

    @override
    async def on_tool_list_changed(
        self, params: mcp.NotificationParams, ctx: RequestContext
    ) -> None:
        print("  the tool list changed")


async def on_progress(progress: float, total: float | None, message: str | None) -> None:
    print(f"  progress {progress}/{total} {message or ''}")


def texts(result: mcp.CallToolResult | legacy.CallToolResult) -> list[str]:
    return [
        block.text
        for block in result.content
        if isinstance(block, (mcp.TextContent, legacy.TextContent))
    ]


@contextlib.asynccontextmanager
async def connect(client: Client, target: list[str]) -> AsyncIterator[ClientSession]:
    if len(target) == 1 and target[0].startswith(("http://", "https://")):
        async with connect_streamable_http(client, target[0]) as session:
            yield session
    else:
        async with connect_stdio(
            client, StdioServerParameters(command=target[0], args=target[1:])
        ) as session:
            yield session


async def main(target: list[str]) -> None:
    # log_level: the server sends log messages of this level and above with
    # the answer to each request (2026-07-28 servers send none otherwise).
    client = Client(
        name="mcp-codegen-stateless-client",
        version="0.1.0",
        handlers=ExampleClient(),
        log_level="info",
    )
    async with connect(client, target) as session:
        how = "request by request" if session.stateless else "after an initialize handshake"
        print(
            f"connected to {session.server_info.name}, speaking {session.protocol_version} ({how})"
        )
        if not session.stateless:
            # An older server: the 2025-11-25 stub fits its answers.
            old = legacy.ClientStub(session)
            async for old_tool in old.iter_tools():
                print(f"tool {old_tool.name}: {old_tool.description}")
            print("echo ->", texts(await old.call_tool("echo", arguments={"text": "hello"})))
            return
        server = mcp.ClientStub(session)
        tools = await server.list_tools()
        print(f"{len(tools.tools)} tools (fresh for {tools.ttl_ms} ms, {tools.cache_scope}):")
        for tool in tools.tools:
            print(f"  {tool.name}: {tool.description}")
        print("echo ->", texts(await server.call_tool("echo", arguments={"text": "hello"})))
        added = await server.call_tool("add", arguments={"a": 2, "b": 40})
        print("add ->", added.structured_content)
        print(
            "progress ->",
            texts(
                await server.call_tool("progress", arguments={"steps": 3}, on_progress=on_progress)
            ),
        )
        # The server answers "input required"; the session asks ExampleClient.elicit and retries.
        print("ask ->", texts(await server.call_tool("ask")))
        print("log ->", texts(await server.call_tool("log", arguments={"message": "hi"})))
        readme = await server.read_resource("memo://readme")
        for contents in readme.contents:
            if isinstance(contents, mcp.TextResourceContents):
                print(f"resource {contents.uri}: {contents.text}")
        prompt = await server.get_prompt(
            "review", arguments={"code": "print(1)", "language": "python"}
        )
        print("prompt ->", prompt.messages[0].content)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:] or [sys.executable, "examples/stateless_server.py"]))
