"""Interop with the official Python SDK (PyPI ``mcp`` 2.3.0) over stdio, both ways:
the SDK client drives tests/support/lowlevel_server.py, and our client drives a server
written with the SDK (tests/support/sdk_server.py)."""

from __future__ import annotations

import asyncio
import sys
import warnings
from collections.abc import Iterator
from typing import Any, cast

import mcp.types as sdk_types
import pytest
from mcp import Client as SdkClient
from mcp import StdioServerParameters as SdkStdioParameters
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from support.peers import (
    LOWLEVEL_SERVER,
    THIS_TREE,
    live_children,
    no_leaked_processes,  # noqa: F401  (a fixture)
    pid_alive,
    run,
    sdk_server,
)

from mcpbind._client.client import Client, ClientSession, connect_stdio
from mcpbind._core import jsonrpc
from mcpbind._core.jsonrpc import McpError
from mcpbind._transports.stdio import ProcessTransport
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25 as mcp

pytestmark = [pytest.mark.peers, pytest.mark.usefixtures("no_leaked_processes")]


@pytest.fixture(autouse=True)
def no_deprecation_noise() -> Iterator[None]:
    # The SDK marks logging deprecated as of 2026-07-28; it still works on the
    # handshake revisions these tests speak.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        yield


def text_of(content: Any) -> str:
    assert content.type == "text", content
    return cast(str, content.text)


# ------------------------------------------------------------------ SDK client -> our server


def sdk_client_for_example(**options: Any) -> SdkClient:
    return SdkClient(
        SdkStdioParameters(command=sys.executable, args=[str(LOWLEVEL_SERVER)], env=THIS_TREE),
        mode="legacy",
        client_info=sdk_types.Implementation(name="sdk-interop-client", version="2.3.0"),
        **options,
    )


def test_the_sdk_client_drives_our_server() -> None:
    logs: list[tuple[str, Any, str | None]] = []
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_log(params: sdk_types.LoggingMessageNotificationParams) -> None:
        logs.append((params.level, params.data, params.logger))

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def scenario() -> None:
        before = live_children()
        async with sdk_client_for_example(logging_callback=on_log) as client:
            spawned = live_children() - before
            assert len(spawned) == 1, spawned

            # initialize
            assert client.protocol_version == "2025-11-25"
            assert client.server_info.name == "mcp-codegen-example"
            assert client.instructions == "An example server for the mcp-codegen runtime."
            capabilities = client.server_capabilities
            assert capabilities.tools is not None and capabilities.prompts is not None
            assert capabilities.resources is not None and capabilities.completions is not None
            assert capabilities.logging is not None
            await client.send_ping()

            # tools
            tools = await client.list_tools()
            names = [tool.name for tool in tools.tools]
            assert names[:4] == ["echo", "add", "count", "sleep"]
            echo = tools.tools[0]
            assert echo.input_schema["required"] == ["text"]
            result = await client.call_tool("echo", {"text": "hi from the SDK"})
            assert [text_of(block) for block in result.content] == ["hi from the SDK"]
            assert not result.is_error
            added = await client.call_tool("add", {"a": 2, "b": 3.5})
            assert added.structured_content == {"sum": 5.5}

            # tools/call with progress, and logging at the level set
            await client.set_logging_level("debug")
            counted = await client.call_tool("count", {"steps": 3}, progress_callback=on_progress)
            assert [text_of(block) for block in counted.content] == ["counted to 3"]
            assert progress == [(1, 3, "step 1/3"), (2, 3, "step 2/3"), (3, 3, "step 3/3")]
            await client.send_ping()  # the log notifications preceded this answer
            assert logs == [("info", f"reached step {n}", "count") for n in (1, 2, 3)]

            # A higher level filters the info messages out.
            await client.set_logging_level("warning")
            await client.call_tool("count", {"steps": 2})
            await client.send_ping()
            assert len(logs) == 3

            # resources
            resources = await client.list_resources()
            assert [(r.uri, r.mime_type) for r in resources.resources] == [
                ("memo://readme", "text/plain"),
                ("memo://logo", "image/png"),
            ]
            readme = await client.read_resource("memo://readme")
            assert readme.contents[0].text == "This server exists to show the runtime."  # type: ignore[union-attr]
            logo = await client.read_resource("memo://logo")
            assert isinstance(logo.contents[0], sdk_types.BlobResourceContents)
            templates = await client.list_resource_templates()
            assert [t.uri_template for t in templates.resource_templates] == ["greeting://{name}"]
            greeting = await client.read_resource("greeting://ada")
            assert greeting.contents[0].text == "Hello, ada!"  # type: ignore[union-attr]
            with pytest.raises(MCPError) as missing:
                await client.read_resource("memo://missing")
            assert missing.value.error.code == jsonrpc.INVALID_PARAMS

            # prompts
            prompts = await client.list_prompts()
            assert [p.name for p in prompts.prompts] == ["review"]
            assert [(a.name, a.required) for a in prompts.prompts[0].arguments or []] == [
                ("code", True),
                ("language", None),
            ]
            prompt = await client.get_prompt("review", {"code": "print(1)", "language": "python"})
            assert prompt.messages[0].role == "user"
            assert text_of(prompt.messages[0].content) == "Please review this python:\nprint(1)"

            # completion
            completion = await client.complete(
                sdk_types.PromptReference(type="ref/prompt", name="review"),
                {"name": "language", "value": "r"},
            )
            assert completion.completion.values == ["rust", "ruby"]
            assert completion.completion.total == 2
            completion = await client.complete(
                sdk_types.ResourceTemplateReference(type="ref/resource", uri="greeting://{name}"),
                {"name": "name", "value": "b"},
            )
            assert completion.completion.values == ["bob"]

            # The SDK's own timeout cancels the call; our server carries on.
            with pytest.raises(MCPError) as timed_out:
                await client.call_tool("sleep", {"seconds": 60}, read_timeout_seconds=0.5)
            assert timed_out.value.error.code == jsonrpc.REQUEST_TIMEOUT
            await client.send_ping()

            # errors
            with pytest.raises(MCPError) as failed:
                await client.call_tool("fail", {})
            assert failed.value.error.code == jsonrpc.INTERNAL_ERROR
            assert (await client.call_tool("echo", {"text": "after"})).content[0].text == "after"  # type: ignore[union-attr]

        assert not any(pid_alive(pid) for pid in spawned)

    run(scenario())


# ------------------------------------------------------------------ our client -> SDK server


class LogCollector(mcp.ClientHandlers):
    def __init__(self) -> None:
        self.messages: list[tuple[str, Any]] = []

    async def on_logging_message(
        self, params: mcp.LoggingMessageNotificationParams, ctx: RequestContext
    ) -> None:
        self.messages.append((params.level, params.data))


def process_of(session: ClientSession) -> asyncio.subprocess.Process:
    return cast(ProcessTransport, session.transport).process


def test_our_client_drives_an_sdk_server() -> None:
    collector = LogCollector()

    async def scenario() -> None:
        client = Client(name="codegen-interop", version="0", handlers=collector)
        async with connect_stdio(client, sdk_server()) as session:
            process = process_of(session)
            assert session.protocol_version == "2025-11-25"
            assert session.server_info.name == "sdk-test-server"
            assert session.instructions == "SDK peer for the interop tests"
            server = mcp.ClientStub(session)
            await server.ping()

            tools = {tool.name: tool for tool in (await server.list_tools()).tools}
            assert {"add", "count", "slow", "cancelled_calls"} <= set(tools)
            assert tools["add"].input_schema["required"] == ["a", "b"]
            added = await server.call_tool("add", arguments={"a": 2, "b": 3})
            assert isinstance(added, mcp.CallToolResult)
            assert added.structured_content == {"result": 5}
            assert isinstance(added.content[0], mcp.TextContent) and added.content[0].text == "5"

            # progress and logging
            await server.set_level("debug")
            progress: list[tuple[float, float | None, str | None]] = []
            counted = await server.call_tool(
                "count",
                arguments={"steps": 3},
                on_progress=lambda p, t, m: progress.append((p, t, m)),
            )
            assert counted.structured_content == {"result": "counted 3 steps"}
            assert progress == [(1, 3, "step 1/3"), (2, 3, "step 2/3"), (3, 3, "step 3/3")]
            await server.ping()
            assert collector.messages == [("info", f"finished step {n}") for n in (1, 2, 3)]

            # resources
            listed = await server.list_resources()
            assert [(str(r.uri), r.name) for r in listed.resources] == [("sdk://static", "static")]
            static = await server.read_resource("sdk://static")
            assert isinstance(static.contents[0], mcp.TextResourceContents)
            assert static.contents[0].text == "hello from the SDK"
            templates = await server.list_resource_templates()
            assert [t.uri_template for t in templates.resource_templates] == [
                "sdk://greeting/{name}"
            ]
            greeting = await server.read_resource("sdk://greeting/bob")
            assert isinstance(greeting.contents[0], mcp.TextResourceContents)
            assert greeting.contents[0].text == "Hello, bob!"

            # prompts and completion
            prompts = await server.list_prompts()
            assert [p.name for p in prompts.prompts] == ["review"]
            prompt = await server.get_prompt(
                "review", arguments={"code": "x = 1", "language": "rust"}
            )
            content = prompt.messages[0].content
            assert isinstance(content, mcp.TextContent)
            assert content.text == "Please review this rust code:\nx = 1"
            completion = await server.complete(
                mcp.CompleteRequestParamsArgument(name="language", value="p"),
                mcp.PromptReference(name="review"),
            )
            assert completion.completion.values == ["python", "perl"]

            # errors from the SDK come back as McpError
            with pytest.raises(McpError) as unknown:
                await server.get_prompt("no-such-prompt")
            assert (
                "no-such-prompt" in unknown.value.message
            )  # (the SDK answers this one with code 0)
        assert process.returncode is not None
        assert not pid_alive(process.pid)

    run(scenario())


def test_cancelling_a_call_to_an_sdk_server_cancels_it_there_and_the_session_goes_on() -> None:
    async def scenario() -> None:
        async with connect_stdio(
            Client(name="codegen-interop", version="0"), sdk_server()
        ) as session:
            process = process_of(session)
            server = mcp.ClientStub(session)

            # Cancel the awaiting task once the server is running the tool.
            running = asyncio.Event()
            call = asyncio.create_task(
                server.call_tool(
                    "slow", arguments={"seconds": 60}, on_progress=lambda p, t, m: running.set()
                )
            )
            await running.wait()  # the tool reports progress once it sleeps
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            counted = await server.call_tool("cancelled_calls", arguments={"at_least": 1})
            assert counted.structured_content == {"result": 1}

            # A timeout cancels too (generous enough for the tool to be running by then).
            with pytest.raises(McpError) as timed_out:
                await server.call_tool("slow", arguments={"seconds": 60}, timeout=2.0)
            assert timed_out.value.code == jsonrpc.REQUEST_TIMEOUT
            counted = await server.call_tool("cancelled_calls", arguments={"at_least": 2})
            assert counted.structured_content == {"result": 2}

            # And the session still works.
            assert (
                await server.call_tool("add", arguments={"a": 1, "b": 1})
            ).structured_content == {"result": 2}
        assert not pid_alive(process.pid)

    run(scenario())
