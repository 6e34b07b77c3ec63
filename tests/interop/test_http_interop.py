"""HTTP interop with the official Python SDK (mcp 2.3.0): its clients
(``mcp.Client`` over a URL, ``streamable_http_client``, ``sse_client``)
against our server, and our client against its Streamable HTTP servers (SSE
with an event store, JSON responses, stateless) and its legacy SSE server."""

from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import Iterator
from typing import Any

import mcp as sdk
import pytest
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from support.http_servers import (
    SubprocessServer,
    ThreadedServer,
    lowlevel_server,
    run,
    sdk_serving,
    serving,
)
from typing_extensions import override

from mcpbind._client.client import Client, ClientSession
from mcpbind._core import jsonrpc
from mcpbind._core.jsonrpc import McpError
from mcpbind._transports.http.client.streamable import (
    LegacySSEClientTransport,
    StreamableHTTPClientTransport,
    connect_http,
)
from mcpbind.http import HttpOptions, http_app
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25 as mcp

pytestmark = [pytest.mark.peers, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


# ---------------------------------------------------------------- the SDK's clients, our server


@pytest.fixture(scope="module")
def ours() -> Iterator[dict[str, ThreadedServer]]:
    with (
        serving(http_app(lowlevel_server(), options=HttpOptions(retry_ms=200))) as sse,
        serving(http_app(lowlevel_server(), json_response=True)) as json,
        serving(http_app(lowlevel_server(), stateless=True)) as stateless,
    ):
        yield {"sse": sse, "json": json, "stateless": stateless}


def sdk_texts(result: Any) -> list[str]:
    return [block.text for block in result.content if getattr(block, "type", None) == "text"]


@pytest.mark.parametrize("mode", ["sse", "json", "stateless"])
def test_sdk_client_against_our_server(ours: dict[str, ThreadedServer], mode: str) -> None:
    async def main() -> None:
        progress: list[float] = []
        logs: list[Any] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(value)

        async def on_log(params: Any) -> None:
            logs.append(params.data)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            async with sdk.Client(
                ours[mode].url(), mode="legacy", logging_callback=on_log
            ) as client:
                assert client.protocol_version == "2025-11-25"
                assert (
                    client.server_info is not None
                    and client.server_info.name == "mcp-codegen-example"
                )
                await client.set_logging_level("debug")
                tools = await client.list_tools()
                assert {"echo", "count", "reconnect"} <= {tool.name for tool in tools.tools}
                assert sdk_texts(await client.call_tool("echo", {"text": "from the SDK"})) == [
                    "from the SDK"
                ]
                result = await client.call_tool(
                    "count", {"steps": 3}, progress_callback=on_progress
                )
                assert sdk_texts(result) == ["counted to 3"]
                if mode != "json":  # a JSON answer carries no progress; it goes on the GET stream
                    assert progress == [1, 2, 3]
                    assert logs == ["reached step 1", "reached step 2", "reached step 3"]
                results = await asyncio.gather(
                    *(client.call_tool("add", {"a": i, "b": 1}) for i in range(20))
                )
                assert [r.structured_content for r in results] == [
                    {"sum": float(i + 1)} for i in range(20)
                ]
                readme = await client.read_resource("memo://readme")
                assert readme.contents[0].text == "This server exists to show the runtime."  # type: ignore[union-attr]
                prompt = await client.get_prompt("review", {"code": "x"})
                assert prompt.messages[0].role == "user"

    run(main())


def test_sdk_client_resumes_our_stream(ours: dict[str, ThreadedServer]) -> None:
    """The SDK's client follows our server's retry and Last-Event-ID replay."""
    server = ours["sse"]

    async def main() -> None:
        progress: list[float] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(value)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            async with sdk.Client(server.url(), mode="legacy") as client:
                result = await client.call_tool(
                    "reconnect", {"pause": 0.3}, progress_callback=on_progress
                )
        assert sdk_texts(result) == ["resumed"] and progress == [1, 2, 3]
        assert server.recorder.matching("GET", "last-event-id")

    run(main())


def test_sdk_client_auto_mode_falls_back_to_initialize(ours: dict[str, ThreadedServer]) -> None:
    async def main() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            async with sdk.Client(ours["sse"].url()) as client:
                assert client.protocol_version == "2025-11-25"
                assert sdk_texts(await client.call_tool("echo", {"text": "auto"})) == ["auto"]

    run(main())


def test_sdk_streamable_http_client_session(ours: dict[str, ThreadedServer]) -> None:
    app = ours["sse"].app
    before = set(app.streamable.sessions)  # type: ignore[attr-defined]

    async def main() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            async with (
                streamable_http_client(ours["sse"].url()) as (read, write),
                sdk.ClientSession(read, write) as s,
            ):
                init = await s.initialize()
                assert (
                    init.protocol_version == "2025-11-25"
                    and init.server_info.name == "mcp-codegen-example"
                )
                listed = await s.list_tools()
                assert "echo" in [tool.name for tool in listed.tools]
                assert sdk_texts(await s.call_tool("echo", {"text": "low level"})) == ["low level"]
        assert set(app.streamable.sessions) <= before  # type: ignore[attr-defined]  # the SDK DELETEd its session

    run(main())


def test_sdk_sse_client_against_our_legacy_endpoint(ours: dict[str, ThreadedServer]) -> None:
    async def main() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            async with (
                sse_client(ours["sse"].url("/sse")) as (read, write),
                sdk.ClientSession(read, write) as s,
            ):
                init = await s.initialize()
                assert init.server_info.name == "mcp-codegen-example"
                assert sdk_texts(await s.call_tool("echo", {"text": "legacy"})) == ["legacy"]

    run(main())


# ---------------------------------------------------------------- our client, the SDK's servers


@pytest.fixture(scope="module")
def theirs() -> Iterator[dict[str, SubprocessServer]]:
    with sdk_serving("streamable", "json", "stateless", "sse") as servers:
        yield servers


class Recording(mcp.ClientHandlers):
    def __init__(self) -> None:
        self.logs: list[Any] = []

    @override
    async def on_logging_message(
        self, params: mcp.LoggingMessageNotificationParams, ctx: RequestContext
    ) -> None:
        self.logs.append(params.data)


def texts(result: mcp.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, mcp.TextContent)]


async def exercise_sdk_server(
    session: ClientSession, handlers: Recording, streams_progress: bool
) -> None:
    stub = mcp.ClientStub(session)
    assert session.server_info.name == "sdk-http-server"
    await stub.ping()
    await stub.set_level("debug")
    assert {"add", "long_task", "sleep", "reconnect"} <= {
        tool.name async for tool in stub.iter_tools()
    }
    added = await stub.call_tool("add", arguments={"a": 2, "b": 3})
    assert added.structured_content == {"result": 5}
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    result = await stub.call_tool("long_task", arguments={"steps": 3}, on_progress=on_progress)
    assert texts(result) == ["done 3 steps"]
    if streams_progress:
        assert progress == [1, 2, 3]
        assert handlers.logs == ["finished step 1", "finished step 2", "finished step 3"]
    with pytest.raises(McpError) as timed_out:
        await stub.call_tool("sleep", arguments={"seconds": 30}, timeout=0.3)
    assert timed_out.value.code == jsonrpc.REQUEST_TIMEOUT
    many = await asyncio.gather(
        *(stub.call_tool("add", arguments={"a": i, "b": i}) for i in range(50))
    )
    assert [r.structured_content for r in many] == [{"result": 2 * i} for i in range(50)]
    static = await stub.read_resource("demo://static")
    assert isinstance(static.contents[0], mcp.TextResourceContents)
    assert static.contents[0].text == "hello from static resource"
    greeting = await stub.read_resource("demo://greeting/bob")
    assert (
        isinstance(greeting.contents[0], mcp.TextResourceContents)
        and greeting.contents[0].text == "Hello, bob!"
    )
    prompt = await stub.get_prompt("review", arguments={"code": "print(1)"})
    assert isinstance(prompt.messages[0].content, mcp.TextContent)
    assert prompt.messages[0].content.text == "Please review this python code:\nprint(1)"


@pytest.mark.parametrize("mode", ["streamable", "json", "stateless"])
def test_our_client_against_sdk_streamable_server(
    theirs: dict[str, SubprocessServer], mode: str
) -> None:
    async def main() -> None:
        handlers = Recording()
        client = Client(name="ours", version="0.1", handlers=handlers)
        async with connect_http(client, theirs[mode].url()) as session:
            transport = session.transport
            assert isinstance(transport, StreamableHTTPClientTransport)
            assert (transport.session_id is None) == (mode == "stateless")
            await exercise_sdk_server(session, handlers, streams_progress=mode != "json")

    run(main())


def test_our_client_resumes_sdk_stream(theirs: dict[str, SubprocessServer]) -> None:
    """The SDK server (event store, retry 200 ms) closes the call's stream;
    we resume it with Last-Event-ID and lose nothing."""

    async def main() -> None:
        client = Client(name="ours", version="0.1")
        async with connect_http(client, theirs["streamable"].url()) as session:
            progress: list[float] = []

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                progress.append(value)

            started = time.monotonic()
            result = await mcp.ClientStub(session).call_tool(
                "reconnect", arguments={"pause": 0.4}, on_progress=on_progress
            )
            assert texts(result) == ["resumed"] and progress == [1, 2, 3]
            assert time.monotonic() - started >= 0.2  # waited the server's retry

    run(main())


def test_probe_falls_back_to_sdk_sse_server(theirs: dict[str, SubprocessServer]) -> None:
    async def main() -> None:
        handlers = Recording()
        client = Client(name="ours", version="0.1", handlers=handlers)
        async with connect_http(client, theirs["sse"].url("/sse")) as session:
            assert isinstance(session.transport, LegacySSEClientTransport)
            assert (
                session.transport.endpoint is not None
                and "/messages/" in session.transport.endpoint
            )
            await exercise_sdk_server(session, handlers, streams_progress=True)

    run(main())
