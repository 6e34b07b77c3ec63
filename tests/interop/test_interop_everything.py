"""Our client against the official reference server
@modelcontextprotocol/server-everything (pinned in tests/peers/package.json),
over stdio on Node 22."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import cast

import pytest
from support.peers import (
    everything_server,
    no_leaked_processes,  # noqa: F401  (a fixture)
    pid_alive,
    require,
    run,
)

from mcpbind._client.client import Client, ClientSession, connect_stdio
from mcpbind._core import jsonrpc
from mcpbind._core.jsonrpc import McpError
from mcpbind._transports.stdio import ProcessTransport
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25 as mcp

pytestmark = [pytest.mark.node, pytest.mark.usefixtures("no_leaked_processes")]


class Listener(mcp.ClientHandlers):
    """Notices the tool-list change the server announces after initialization."""

    def __init__(self) -> None:
        self.tools_changed = asyncio.Event()

    async def on_tool_list_changed(
        self, params: mcp.NotificationParams, ctx: RequestContext
    ) -> None:
        self.tools_changed.set()


def process_of(session: ClientSession) -> asyncio.subprocess.Process:
    return cast(ProcessTransport, session.transport).process


def texts(result: mcp.CallToolResult | mcp.GetPromptResult) -> list[str]:
    if isinstance(result, mcp.CallToolResult):
        blocks = list(result.content)
    else:
        blocks = [message.content for message in result.messages]
    return [block.text for block in blocks if isinstance(block, mcp.TextContent)]


def test_our_client_drives_server_everything() -> None:
    listener = Listener()

    async def scenario() -> None:
        client = Client(name="codegen-interop", version="0", handlers=listener)
        async with connect_stdio(client, everything_server()) as session:
            process = process_of(session)
            assert session.protocol_version == "2025-11-25"
            assert session.server_info.name == "mcp-servers/everything"
            capabilities = session.server_capabilities
            assert isinstance(capabilities, mcp.ServerCapabilities)
            assert capabilities.tools is not None and capabilities.prompts is not None
            server = mcp.ClientStub(session)
            await server.ping()
            await listener.tools_changed.wait()

            # tools
            tools = [tool async for tool in server.iter_tools()]
            names = [tool.name for tool in tools]
            assert {"echo", "get-sum", "trigger-long-running-operation", "get-tiny-image"} <= set(
                names
            )
            assert all(isinstance(tool, mcp.Tool) for tool in tools)
            echoed = await server.call_tool("echo", arguments={"message": "hello everything"})
            assert texts(echoed) == ["Echo: hello everything"]
            summed = await server.call_tool("get-sum", arguments={"a": 2, "b": 3})
            assert texts(summed) == ["The sum of 2 and 3 is 5."]
            image = await server.call_tool("get-tiny-image")
            images = [block for block in image.content if isinstance(block, mcp.ImageContent)]
            assert images and images[0].mime_type == "image/png"
            assert base64.b64decode(images[0].data)[:4] == b"\x89PNG"

            # resources
            resources = (await server.list_resources()).resources
            uris = [resource.uri for resource in resources]
            assert "demo://resource/static/document/architecture.md" in uris
            document = await server.read_resource("demo://resource/static/document/architecture.md")
            assert isinstance(document.contents[0], mcp.TextResourceContents)
            assert document.contents[0].text.startswith("# Everything Server")
            templates = (await server.list_resource_templates()).resource_templates
            assert "demo://resource/dynamic/text/{resourceId}" in [
                t.uri_template for t in templates
            ]
            dynamic = await server.read_resource("demo://resource/dynamic/text/1")
            assert isinstance(dynamic.contents[0], mcp.TextResourceContents)
            assert dynamic.contents[0].text.startswith("Resource 1:")
            blob = await server.read_resource("demo://resource/dynamic/blob/2")
            assert isinstance(blob.contents[0], mcp.BlobResourceContents)

            # prompts and completion
            prompts = [prompt.name for prompt in (await server.list_prompts()).prompts]
            assert {"simple-prompt", "args-prompt"} <= set(prompts)
            simple = await server.get_prompt("simple-prompt")
            assert texts(simple) == ["This is a simple prompt without arguments."]
            with_args = await server.get_prompt("args-prompt", arguments={"city": "Paris"})
            assert "Paris" in texts(with_args)[0]
            completion = await server.complete(
                mcp.CompleteRequestParamsArgument(name="department", value="E"),
                mcp.PromptReference(name="completable-prompt"),
            )
            assert completion.completion.values == ["Engineering"]

            # errors
            # (the TypeScript SDK reports bad tool arguments as a tool error)
            invalid = await server.call_tool("get-sum", arguments={"a": "two"})
            assert invalid.is_error is True
            with pytest.raises(McpError) as unknown:
                await server.get_prompt("no-such-prompt")
            assert unknown.value.code == jsonrpc.INVALID_PARAMS
        assert not pid_alive(process.pid)

    run(scenario())


def test_progress_from_server_everything_reaches_the_caller() -> None:
    async def scenario() -> None:
        async with connect_stdio(
            Client(name="codegen-interop", version="0"), everything_server()
        ) as session:
            server = mcp.ClientStub(session)
            progress: list[tuple[float, float | None, str | None]] = []
            result = await server.call_tool(
                "trigger-long-running-operation",
                arguments={"duration": 0.3, "steps": 3},
                on_progress=lambda p, t, m: progress.append((p, t, m)),
            )
            assert texts(result) == [
                "Long running operation completed. Duration: 0.3 seconds, Steps: 3."
            ]
            assert progress == [(1, 3, None), (2, 3, None), (3, 3, None)]
            process = process_of(session)
        assert not pid_alive(process.pid)

    run(scenario())


@pytest.mark.parametrize("how", ["cancel the task", "timeout"])
def test_a_long_call_to_server_everything_can_be_cancelled_and_the_session_goes_on(
    how: str,
) -> None:
    async def scenario() -> None:
        # The server keeps the cancelled operation's timers after its stdin
        # closes, so closing ends it with SIGTERM: no need to wait long for that.
        parameters = everything_server(terminate_timeout=0.5)
        async with connect_stdio(
            Client(name="codegen-interop", version="0"), parameters
        ) as session:
            process = process_of(session)
            server = mcp.ClientStub(session)
            if how == "cancel the task":
                first_step = asyncio.Event()
                call = asyncio.create_task(
                    server.call_tool(
                        "trigger-long-running-operation",
                        arguments={"duration": 60, "steps": 600},  # a step every 0.1 s
                        on_progress=lambda p, t, m: first_step.set(),
                    )
                )
                await first_step.wait()
                call.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await call
            else:
                with pytest.raises(McpError) as timed_out:
                    await server.call_tool(
                        "trigger-long-running-operation",
                        arguments={"duration": 60, "steps": 5},
                        timeout=0.5,
                    )
                assert timed_out.value.code == jsonrpc.REQUEST_TIMEOUT
            # The session still works, and the cancelled call left nothing behind.
            summed = await server.call_tool("get-sum", arguments={"a": 20, "b": 22})
            assert texts(summed) == ["The sum of 20 and 22 is 42."]
            await server.ping()
            assert not session.is_closed
        assert process.returncode is not None
        assert not pid_alive(process.pid)

    run(scenario())


def test_a_missing_npm_peer_fails_the_test_with_instructions(tmp_path: Path) -> None:
    with pytest.raises(pytest.fail.Exception, match=r"tests/peers/install\.py"):
        require(tmp_path / "no-such-bin", "a peer")
