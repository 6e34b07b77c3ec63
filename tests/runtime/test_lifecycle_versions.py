"""The lifecycle and version negotiation: initialize first and once, the
revision each side ends up speaking, what is refused locally because the
negotiated revision or the peer's capabilities rule it out, and the
capabilities derived from the overridden handler methods."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import sys
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

import mcp.types as sdk_types
import pytest
from mcp import ClientSession as SdkSession
from mcp import StdioServerParameters as SdkStdioParameters
from mcp import stdio_client as sdk_stdio_client
from support.peers import (
    LOWLEVEL_SERVER,
    THIS_TREE,
    everything_server,
    lowlevel_module,
    lowlevel_server,
    no_leaked_processes,  # noqa: F401  (a fixture)
    run,
)
from support.transports import MemoryTransport, RecordingTransport, memory_pair, parse
from typing_extensions import override

from mcpbind._client.client import Client, ClientSession, connect_stdio
from mcpbind._core import jsonrpc
from mcpbind._core.jsonrpc import McpError
from mcpbind._server.server import Server, ServerSession
from mcpbind._transports.stdio import spawn
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2024_11_05, v2025_11_25

VERSIONS = ["2024-11-05", "2025-06-18", "2025-11-25"]

pytestmark = pytest.mark.usefixtures("no_leaked_processes")


def package(version: str) -> ModuleType:
    return importlib.import_module(f"mcpbind_protocol.v{version.replace('-', '_')}")


def example_handlers() -> Any:
    return lowlevel_module().LowLevelServer()


def example(**options: Any) -> Server:
    return Server(example_handlers(), name="example", version="0", **options)


def initialize_message(
    version: str, request_id: Any = 0, capabilities: Any = None
) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": capabilities or {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }


@contextlib.asynccontextmanager
async def served(server: Server) -> AsyncIterator[tuple[MemoryTransport, ServerSession]]:
    """A server session whose client is the test, writing raw messages."""
    wire, end = memory_pair("client", "server")
    session = ServerSession(server, end)
    task = asyncio.create_task(session.run())
    try:
        yield wire, session
    finally:
        await wire.close()
        await asyncio.wait_for(task, 10)


@contextlib.asynccontextmanager
async def connected(
    server: Server, client: Client
) -> AsyncIterator[tuple[ClientSession, ServerSession, RecordingTransport]]:
    """Our client connected to our server in memory; the client's writes recorded."""
    client_end, server_end = memory_pair("client", "server")
    server_session = ServerSession(server, server_end)
    task = asyncio.create_task(server_session.run())
    recorder = RecordingTransport(client_end)
    try:
        session = await client.connect(recorder)
        try:
            yield session, server_session, recorder
        finally:
            await session.close()
    finally:
        await client_end.close()
        await asyncio.wait_for(task, 10)


# ------------------------------------------------------------------ negotiation: our client, our server


@pytest.mark.parametrize("version", VERSIONS)
def test_our_client_gets_the_revision_it_asks_for_and_uses_its_types(version: str) -> None:
    revision = package(version)

    async def scenario() -> None:
        client = Client(name="versions", version="0", protocol_version=version)
        async with connect_stdio(client, lowlevel_server()) as session:
            assert session.protocol_version == version
            assert isinstance(session.server_capabilities, revision.ServerCapabilities)
            server = revision.ClientStub(session)
            await server.ping()
            tools = await server.list_tools()
            assert isinstance(tools, revision.ListToolsResult)
            assert all(isinstance(tool, revision.Tool) for tool in tools.tools)
            result = await server.call_tool("add", arguments={"a": 1, "b": 2})
            assert isinstance(result, revision.CallToolResult)
            assert (
                isinstance(result.content[0], revision.TextContent)
                and result.content[0].text == "3.0"
            )
            if version == "2024-11-05":
                assert not hasattr(result, "structured_content")  # not in that revision
            else:
                assert result.structured_content == {"sum": 3.0}
            prompt = await server.get_prompt("review", arguments={"code": "1"})
            assert isinstance(prompt, revision.GetPromptResult)
            readme = await server.read_resource("memo://readme")
            assert isinstance(readme.contents[0], revision.TextResourceContents)

    run(scenario())


@pytest.mark.parametrize(
    ("asked", "answered"),
    [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),  # unknown: the server's latest
        ("2026-07-28", "2025-11-25"),  # not reachable through initialize
        ("not-a-date", "2025-11-25"),
    ],
)
def test_our_server_answers_the_asked_revision_or_its_latest(asked: str, answered: str) -> None:
    async def scenario() -> None:
        async with served(example()) as (wire, session):
            wire.send(initialize_message(asked))
            answer = await wire.receive()
            assert answer is not None
            assert answer["result"]["protocolVersion"] == answered
            assert session.protocol_version == answered
            wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            wire.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            tools = await wire.receive()
            assert tools is not None and "echo" in [
                tool["name"] for tool in tools["result"]["tools"]
            ]

    run(scenario())


def test_a_restricted_server_answers_its_own_latest() -> None:
    async def scenario() -> None:
        async with served(example(versions=["2024-11-05", "2025-03-26"])) as (wire, _):
            wire.send(initialize_message("2025-11-25"))
            answer = await wire.receive()
            assert answer is not None and answer["result"]["protocolVersion"] == "2025-03-26"

    run(scenario())


# ------------------------------------------------------------------ negotiation: the SDK client


async def sdk_handshake(version: str) -> tuple[str, list[str], str]:
    """Initialize tests/support/lowlevel_server.py by hand from the SDK, asking for ``version``."""
    parameters = SdkStdioParameters(
        command=sys.executable, args=[str(LOWLEVEL_SERVER)], env=THIS_TREE
    )
    async with sdk_stdio_client(parameters) as (read, write), SdkSession(read, write) as session:
        result = await session.send_request(
            sdk_types.InitializeRequest(
                params=sdk_types.InitializeRequestParams(
                    protocol_version=version,
                    capabilities=sdk_types.ClientCapabilities(),
                    client_info=sdk_types.Implementation(name="sdk-version-client", version="0"),
                )
            ),
            sdk_types.InitializeResult,
        )
        session.adopt(result)
        await session.send_notification(sdk_types.InitializedNotification())
        tools = await session.list_tools()
        echoed = await session.call_tool("echo", {"text": f"speaking {result.protocol_version}"})
        text = echoed.content[0].text  # type: ignore[union-attr]
        return result.protocol_version, [tool.name for tool in tools.tools], text


@pytest.mark.peers
@pytest.mark.parametrize(
    ("asked", "answered"),
    [("2024-11-05", "2024-11-05"), ("2025-06-18", "2025-06-18"), ("2099-01-01", "2025-11-25")],
)
def test_the_sdk_client_asking_for_a_revision_gets_it_from_our_server(
    asked: str, answered: str
) -> None:
    version, tools, text = run(sdk_handshake(asked))
    assert version == answered
    assert "echo" in tools
    assert text == f"speaking {answered}"


# ------------------------------------------------------------------ an older answer, and local refusals


def test_our_client_accepts_an_older_answer_then_refuses_locally_what_it_rules_out() -> None:
    async def scenario() -> None:
        server = example(
            versions=["2024-11-05"], capabilities={"resources": {"listChanged": False}}
        )
        async with connected(server, Client(name="versions", version="0")) as (
            session,
            server_session,
            wire,
        ):
            # The default client probes for the stateless revision first, then falls back.
            assert parse(wire.sent[0])["method"] == "server/discover"
            asked = parse(wire.sent[1])
            assert (
                asked["method"] == "initialize"
                and asked["params"]["protocolVersion"] == "2025-11-25"
            )
            assert session.protocol_version == "2024-11-05" and not session.stateless
            assert server_session.protocol_version == "2024-11-05"

            # The answered revision's stub works.
            old = v2024_11_05.ClientStub(session)
            assert "echo" in [tool.name for tool in (await old.list_tools()).tools]

            new = v2025_11_25.ClientStub(session)
            sent = len(wire.sent)
            # A method the answered revision lacks: refused, nothing sent.
            with pytest.raises(McpError) as missing:
                await new.list_tasks()
            assert missing.value.code == jsonrpc.METHOD_NOT_FOUND
            assert "tasks/list" in missing.value.message and "2024-11-05" in missing.value.message
            # A method that needs a capability the server did not declare.
            with pytest.raises(McpError) as undeclared:
                await new.subscribe("memo://readme")
            assert undeclared.value.code == jsonrpc.METHOD_NOT_FOUND
            assert "resources.subscribe" in undeclared.value.message
            assert len(wire.sent) == sent

            # What the revision has still goes through, with either stub.
            echoed = await new.call_tool("echo", arguments={"text": "still fine"})
            assert echoed.content[0].text == "still fine"  # type: ignore[union-attr]
            assert wire.methods()[-1] == "tools/call"

    run(scenario())


def test_a_client_refuses_an_answer_outside_the_versions_it_speaks() -> None:
    async def scenario() -> None:
        client = Client(name="versions", version="0", versions=["2025-11-25"])
        client_end, server_end = memory_pair()
        task = asyncio.create_task(
            ServerSession(example(versions=["2024-11-05"]), server_end).run()
        )
        with pytest.raises(McpError) as refused:
            await client.connect(client_end)
        assert "2024-11-05" in refused.value.message
        assert client_end.closed
        await asyncio.wait_for(task, 10)

    run(scenario())


@pytest.mark.node
def test_our_client_against_server_everything_answering_2024_11_05() -> None:
    async def scenario() -> None:
        wire = RecordingTransport(await spawn(everything_server()))
        session = await Client(name="versions", version="0", protocol_version="2024-11-05").connect(
            wire
        )
        try:
            assert session.protocol_version == "2024-11-05"
            assert isinstance(session.server_capabilities, v2024_11_05.ServerCapabilities)
            old = v2024_11_05.ClientStub(session)
            tools = await old.list_tools()
            assert all(isinstance(tool, v2024_11_05.Tool) for tool in tools.tools)
            echoed = await old.call_tool("echo", arguments={"message": "old times"})
            assert isinstance(echoed, v2024_11_05.CallToolResult)
            assert echoed.content[0].text == "Echo: old times"  # type: ignore[union-attr]

            sent = len(wire.sent)
            with pytest.raises(McpError) as missing:
                await v2025_11_25.ClientStub(session).list_tasks()
            assert missing.value.code == jsonrpc.METHOD_NOT_FOUND
            assert len(wire.sent) == sent
            assert "tasks/list" not in wire.methods()
        finally:
            await session.close()
        assert wire.inner.process.returncode is not None  # type: ignore[attr-defined]

    run(scenario())


# ------------------------------------------------------------------ initialize first, and once


def test_requests_before_initialize_are_invalid() -> None:
    async def scenario() -> None:
        async with served(example()) as (wire, session):
            for request_id, method in enumerate(
                ["tools/list", "tools/call", "resources/read", "no/such"]
            ):
                wire.send(
                    {
                        "jsonrpc": "2.0",
                        "id": request_id,
                        "method": method,
                        "params": {"name": "echo"},
                    }
                )
                answer = await wire.receive()
                assert answer is not None and answer["id"] == request_id
                assert answer["error"]["code"] == jsonrpc.INVALID_REQUEST, answer
                assert "before initialize" in answer["error"]["message"]
            # Ping is allowed at any time; notifications are not answered.
            wire.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
            wire.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
            assert await wire.receive() == {"jsonrpc": "2.0", "id": "p", "result": {}}
            # The session can still be initialized, and then the same request works.
            wire.send(initialize_message("2025-11-25", request_id="init"))
            answer = await wire.receive()
            assert answer is not None and answer["id"] == "init" and "result" in answer
            wire.send({"jsonrpc": "2.0", "id": 9, "method": "tools/list"})
            answer = await wire.receive()
            assert answer is not None and "result" in answer
            assert not session.is_closed

    run(scenario())


def test_a_second_initialize_is_invalid_and_changes_nothing() -> None:
    async def scenario() -> None:
        async with served(example()) as (wire, session):
            wire.send(initialize_message("2025-06-18", request_id=1))
            first = await wire.receive()
            assert first is not None and first["result"]["protocolVersion"] == "2025-06-18"
            wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            wire.send(initialize_message("2025-11-25", request_id=2))
            second = await wire.receive()
            assert second is not None and second["id"] == 2
            assert second["error"]["code"] == jsonrpc.INVALID_REQUEST
            assert "already initialized" in second["error"]["message"]
            assert session.protocol_version == "2025-06-18"
            wire.send(
                {
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": "x"}},
                }
            )
            answer = await wire.receive()
            assert answer is not None and answer["result"]["content"] == [
                {"type": "text", "text": "x"}
            ]

    run(scenario())


def test_an_invalid_initialize_is_answered_and_a_valid_one_may_follow() -> None:
    async def scenario() -> None:
        async with served(example()) as (wire, _):
            wire.send(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {"protocolVersion": 2025},
                }
            )
            answer = await wire.receive()
            assert answer is not None and answer["error"]["code"] == jsonrpc.INVALID_PARAMS
            assert "$.protocolVersion" in answer["error"]["message"]
            wire.send(initialize_message("2025-11-25", request_id=2))
            answer = await wire.receive()
            assert answer is not None and answer["result"]["protocolVersion"] == "2025-11-25"

    run(scenario())


def test_our_client_sends_nothing_but_initialize_before_the_handshake() -> None:
    async def scenario() -> None:
        client = Client(name="lifecycle", version="0")
        client_end, _ = memory_pair()
        session = ClientSession(client, client_end)
        with pytest.raises(McpError) as refused:
            await v2025_11_25.ClientStub(session).list_tools()
        assert refused.value.code == jsonrpc.INVALID_REQUEST
        assert client_end.sent == []
        await session.close()

    run(scenario())


def test_an_unanswered_initialize_times_out_without_being_cancelled() -> None:
    async def scenario() -> None:
        client_end, server_end = memory_pair("client", "silent server")
        with pytest.raises(McpError) as timed_out:
            await Client(
                name="lifecycle", version="0", protocol_version="2025-11-25", default_timeout=0.2
            ).connect(client_end)
        assert timed_out.value.code == jsonrpc.REQUEST_TIMEOUT
        # "A client MUST NOT attempt to cancel its initialize request."
        assert [m.get("method") for m in client_end.sent_messages()] == ["initialize"]
        assert client_end.closed

    run(scenario())


def test_cancelling_a_connect_does_not_cancel_initialize_either() -> None:
    async def scenario() -> None:
        client_end, server_end = memory_pair("client", "silent server")
        connecting = asyncio.create_task(
            Client(name="lifecycle", version="0", protocol_version="2025-11-25").connect(client_end)
        )
        request = await server_end.receive()
        assert request is not None and request["method"] == "initialize"
        connecting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await connecting
        assert [m.get("method") for m in client_end.sent_messages()] == ["initialize"]
        assert client_end.closed

    run(scenario())


def test_the_handshake_sends_initialized_after_the_answer() -> None:
    async def scenario() -> None:
        async with connected(
            example(), Client(name="lifecycle", version="0", protocol_version="2025-11-25")
        ) as (_, server_session, wire):
            assert wire.methods()[:2] == ["initialize", "notifications/initialized"]
            await asyncio.wait_for(server_session.initialized.wait(), 10)
            assert server_session.client_info.name == "lifecycle"

    run(scenario())


# ------------------------------------------------------------------ capabilities follow the handlers


class ToolsOnly(v2025_11_25.ServerHandlers):
    @override
    async def list_tools(
        self, params: v2025_11_25.PaginatedRequestParams, ctx: RequestContext
    ) -> v2025_11_25.ListToolsResult:
        return v2025_11_25.ListToolsResult(tools=[])

    @override
    async def call_tool(
        self, params: v2025_11_25.CallToolRequestParams, ctx: RequestContext
    ) -> v2025_11_25.CallToolResult:
        return v2025_11_25.CallToolResult(
            content=[v2025_11_25.TextContent(text=ctx.protocol_version)]
        )


class PromptsAndCompletion(v2025_11_25.ServerHandlers):
    @override
    async def list_prompts(
        self, params: v2025_11_25.PaginatedRequestParams, ctx: RequestContext
    ) -> v2025_11_25.ListPromptsResult:
        return v2025_11_25.ListPromptsResult(prompts=[])

    @override
    async def complete(
        self, params: v2025_11_25.CompleteRequestParams, ctx: RequestContext
    ) -> v2025_11_25.CompleteResult:
        return v2025_11_25.CompleteResult(
            completion=v2025_11_25.CompleteResultCompletion(values=[])
        )


class SubscribableResources(v2025_11_25.ServerHandlers):
    @override
    async def list_resources(
        self, params: v2025_11_25.PaginatedRequestParams, ctx: RequestContext
    ) -> v2025_11_25.ListResourcesResult:
        return v2025_11_25.ListResourcesResult(resources=[])

    @override
    async def subscribe(
        self, params: v2025_11_25.SubscribeRequestParams, ctx: RequestContext
    ) -> v2025_11_25.EmptyResult:
        return v2025_11_25.EmptyResult()


class MoreTools(ToolsOnly):
    """Inherits the overrides of ToolsOnly: the same capabilities."""


@pytest.mark.parametrize(
    ("handlers", "extra", "declared"),
    [
        (v2025_11_25.ServerHandlers(), None, {"logging": {}}),
        (ToolsOnly(), None, {"tools": {}, "logging": {}}),
        (MoreTools(), None, {"tools": {}, "logging": {}}),
        (PromptsAndCompletion(), None, {"prompts": {}, "completions": {}, "logging": {}}),
        (SubscribableResources(), None, {"resources": {"subscribe": True}, "logging": {}}),
        (
            SubscribableResources(),
            {"resources": {"listChanged": True}, "experimental": {"x": {}}},
            {
                "resources": {"subscribe": True, "listChanged": True},
                "logging": {},
                "experimental": {"x": {}},
            },
        ),
    ],
    ids=["nothing", "tools", "inherited", "prompts+completion", "subscribe", "merged"],
)
def test_server_capabilities_follow_the_overridden_handlers(
    handlers: Any, extra: Any, declared: dict[str, Any]
) -> None:
    async def scenario() -> None:
        server = Server(handlers, name="caps", version="0", capabilities=extra)
        async with served(server) as (wire, _):
            wire.send(initialize_message("2025-11-25"))
            answer = await wire.receive()
            assert answer is not None
            assert answer["result"]["capabilities"] == declared

    run(scenario())


def test_methods_without_an_override_are_not_found_after_initialize() -> None:
    async def scenario() -> None:
        async with served(Server(ToolsOnly(), name="caps", version="0")) as (wire, _):
            wire.send(initialize_message("2025-11-25"))
            await wire.receive()
            for request_id, method in enumerate(
                ["prompts/list", "resources/list", "completion/complete"]
            ):
                wire.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": {}})
                answer = await wire.receive()
                assert (
                    answer is not None and answer["error"]["code"] == jsonrpc.METHOD_NOT_FOUND
                ), answer
            wire.send({"jsonrpc": "2.0", "id": "t", "method": "tools/list"})
            answer = await wire.receive()
            assert answer == {"jsonrpc": "2.0", "id": "t", "result": {"tools": []}}

    run(scenario())


class Sampler(v2025_11_25.ClientHandlers):
    @override
    async def create_message(
        self, params: v2025_11_25.CreateMessageRequestParams, ctx: RequestContext
    ) -> v2025_11_25.CreateMessageResult:
        asked = params.messages[0].content
        assert isinstance(asked, v2025_11_25.TextContent)
        return v2025_11_25.CreateMessageResult(
            content=v2025_11_25.TextContent(text=f"sampled: {asked.text}"),
            model="test-model",
            role="assistant",
        )


class RootsAndElicitation(v2025_11_25.ClientHandlers):
    @override
    async def list_roots(
        self, params: v2025_11_25.RequestParams, ctx: RequestContext
    ) -> v2025_11_25.ListRootsResult:
        return v2025_11_25.ListRootsResult(
            roots=[v2025_11_25.Root(uri="file:///work", name="work")]
        )

    @override
    async def elicit(self, params: Any, ctx: RequestContext) -> v2025_11_25.ElicitResult:
        return v2025_11_25.ElicitResult(action="decline")


@pytest.mark.parametrize(
    ("handlers", "declared"),
    [
        (None, {}),
        (v2025_11_25.ClientHandlers(), {}),
        (Sampler(), {"sampling": {}}),
        (RootsAndElicitation(), {"roots": {}, "elicitation": {}}),
    ],
    ids=["no handlers", "nothing overridden", "sampling", "roots+elicitation"],
)
def test_client_capabilities_follow_the_overridden_handlers(
    handlers: Any, declared: dict[str, Any]
) -> None:
    async def scenario() -> None:
        client = Client(name="caps", version="0", handlers=handlers, protocol_version="2025-11-25")
        async with connected(example(), client) as (_, server_session, wire):
            assert parse(wire.sent[0])["params"]["capabilities"] == declared
            assert isinstance(server_session.client_capabilities, v2025_11_25.ClientCapabilities)

    run(scenario())


def test_the_server_may_only_ask_the_client_for_what_it_declared() -> None:
    async def scenario() -> None:
        message = [
            v2025_11_25.SamplingMessage(role="user", content=v2025_11_25.TextContent(text="hi"))
        ]
        async with connected(example(), Client(name="caps", version="0", handlers=Sampler())) as (
            _,
            server_session,
            wire,
        ):
            peer = v2025_11_25.ServerStub(server_session)
            sampled = await peer.create_message(16, message)
            assert (
                isinstance(sampled.content, v2025_11_25.TextContent)
                and sampled.content.text == "sampled: hi"
            )
            assert sampled.model == "test-model"
            with pytest.raises(McpError) as undeclared:
                await peer.list_roots()
            assert (
                undeclared.value.code == jsonrpc.METHOD_NOT_FOUND
                and "roots" in undeclared.value.message
            )
        async with connected(
            example(), Client(name="caps", version="0", handlers=RootsAndElicitation())
        ) as (
            _,
            server_session,
            wire,
        ):
            peer = v2025_11_25.ServerStub(server_session)
            roots = await peer.list_roots()
            assert [(root.uri, root.name) for root in roots.roots] == [("file:///work", "work")]
            server_writes = len(server_session.transport.sent)  # type: ignore[attr-defined]
            with pytest.raises(McpError) as undeclared:
                await peer.create_message(16, message)
            assert (
                undeclared.value.code == jsonrpc.METHOD_NOT_FOUND
                and "sampling" in undeclared.value.message
            )
            assert len(server_session.transport.sent) == server_writes  # type: ignore[attr-defined]

    run(scenario())


class OldTools(v2024_11_05.ServerHandlers):
    @override
    async def list_tools(self, params: Any, ctx: RequestContext) -> v2024_11_05.ListToolsResult:
        return v2024_11_05.ListToolsResult(tools=[])

    @override
    async def call_tool(
        self, params: v2024_11_05.CallToolRequestParams, ctx: RequestContext
    ) -> v2024_11_05.CallToolResult:
        return v2024_11_05.CallToolResult(
            content=[v2024_11_05.TextContent(text=f"old handlers, {ctx.protocol_version}")]
        )


@pytest.mark.parametrize(
    ("asked", "text"),
    [
        ("2024-11-05", "old handlers, 2024-11-05"),
        ("2025-03-26", "2025-03-26"),  # the oldest newer handlers serve it
        ("2025-11-25", "2025-11-25"),
    ],
)
def test_a_server_with_handlers_for_several_revisions_serves_each_with_its_own(
    asked: str, text: str
) -> None:
    async def scenario() -> None:
        server = Server([OldTools(), ToolsOnly()], name="multi", version="0")
        client = Client(name="multi", version="0", protocol_version=asked)
        async with connected(server, client) as (session, _, _wire):
            assert session.protocol_version == asked
            result = await package(asked).ClientStub(session).call_tool("any")
            assert result.content[0].text == text

    run(scenario())


def test_a_handshake_session_served_by_newer_handlers_keeps_its_own_optional_params() -> None:
    """A 2025-11-25 session answered by 2026-07-28 handlers: the request's params are
    decoded with the handlers' types, but whether they may be left out is the session's
    revision's rule. In 2025-11-25, ``ListToolsRequest.params`` is optional (the official
    SDK's client sends ``tools/list`` without params); 2026-07-28 requires them (they carry
    ``_meta``)."""
    from support.lowlevel_modern_server import ModernHandlers

    async def scenario() -> None:
        server = Server(ModernHandlers(), name="newer", version="0")
        async with served(server) as (wire, session):
            wire.send(initialize_message("2025-11-25", request_id="init"))
            answer = await wire.receive()
            assert answer is not None and answer["result"]["protocolVersion"] == "2025-11-25"
            wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            wire.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            answer = await wire.receive()
            assert answer is not None and "result" in answer, answer
            assert [tool["name"] for tool in answer["result"]["tools"]]

    run(scenario())
