"""Interop at MCP 2026-07-28, over stdio and Streamable HTTP.

1. Our client against our server (tests/support/lowlevel_modern_server.py plus the tools of
   tests/support/modern_peer.py): discovery, progress, multi round-trip
   requests, per-request log levels, caching, subscriptions, and the errors.
2. Our client against servers of 2025-11-25 only (server-everything, and our
   own server with 2025-11-25 handlers only): it falls back to initialize.
3. The official Python SDK's client (PyPI ``mcp`` 2.3.0) against our server,
   in its ``auto`` mode (2026-07-28) and its ``legacy`` mode (2025-11-25).
4. Our client against a server written with the SDK, in both modes.

Every test starts the servers it needs and stops them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import mcp as sdk
import mcp.types as sdk_types
import pytest
from mcp.shared.exceptions import MCPDeprecationWarning
from support.http_servers import SubprocessServer, ThreadedServer
from support.modern_peer import PEER, example, make_server
from support.peers import (
    THIS_TREE,
    everything_server,
    no_leaked_processes,  # noqa: F401  (a fixture)
    pid_alive,
    run,
)
from support.rawstdio import RawServer
from support.wire import BodyTap, Message, WireTap
from typing_extensions import override

from mcpbind._client.client import Client, ClientSession
from mcpbind._core import jsonrpc
from mcpbind._core.jsonrpc import McpError
from mcpbind._transports.http.client.streamable import StreamableHTTPClientTransport
from mcpbind._transports.stdio import StdioServerParameters, spawn
from mcpbind.http import http_app
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25 as legacy
from mcpbind_protocol import v2026_07_28 as mcp

pytestmark = pytest.mark.usefixtures("no_leaked_processes")

MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"
SERVER_NAME = "mcp-codegen-stateless-example"
SDK_MODERN_SERVER = Path(__file__).resolve().parents[1] / "support" / "sdk_modern_server.py"
EXAMPLE_TOOLS = ["echo", "add", "progress", "ask", "log"]


@pytest.fixture(autouse=True)
def no_deprecation_noise() -> Iterator[None]:
    # The SDK marks logging and roots deprecated as of 2026-07-28; they still work.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        yield


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content if getattr(block, "type", None) == "text"]


# ------------------------------------------------------------------ peers


class Handlers(mcp.ClientHandlers):
    """Answers every input request and records every notification."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, Any]] = []
        self.logs: list[tuple[str, Any, Any]] = []
        self.tools_changed = 0
        self.prompts_changed = 0
        self.resources_changed = 0
        self.updated: list[str] = []
        self.changed = asyncio.Event()
        self.acknowledged: list[Any] = []

    @override
    async def elicit(
        self, params: mcp.ElicitRequestParams, ctx: RequestContext
    ) -> mcp.ElicitResult:
        self.asked.append(("elicitation/create", params.message))
        return mcp.ElicitResult(action="accept", content={"name": "ada"})

    @override
    async def create_message(
        self, params: mcp.CreateMessageRequestParams, ctx: RequestContext
    ) -> mcp.CreateMessageResult:
        question = params.messages[0].content
        self.asked.append(("sampling/createMessage", getattr(question, "text", None)))
        return mcp.CreateMessageResult(
            role="assistant", content=mcp.TextContent(text="Paris"), model="test-model"
        )

    @override
    async def list_roots(
        self, params: mcp.ListRootsRequestParams, ctx: RequestContext
    ) -> mcp.ListRootsResult:
        self.asked.append(("roots/list", None))
        return mcp.ListRootsResult(roots=[mcp.Root(uri="file:///work", name="work")])

    @override
    async def on_logging_message(
        self, params: mcp.LoggingMessageNotificationParams, ctx: RequestContext
    ) -> None:
        self.logs.append((params.level, params.data, params.logger))

    @override
    async def on_tool_list_changed(
        self, params: mcp.NotificationParams, ctx: RequestContext
    ) -> None:
        self.tools_changed += 1
        self.changed.set()

    @override
    async def on_prompt_list_changed(
        self, params: mcp.NotificationParams, ctx: RequestContext
    ) -> None:
        self.prompts_changed += 1
        self.changed.set()

    @override
    async def on_resource_list_changed(
        self, params: mcp.NotificationParams, ctx: RequestContext
    ) -> None:
        self.resources_changed += 1
        self.changed.set()

    @override
    async def on_resource_updated(
        self, params: mcp.ResourceUpdatedNotificationParams, ctx: RequestContext
    ) -> None:
        self.updated.append(params.uri)
        self.changed.set()

    @override
    async def on_subscriptions_acknowledged(
        self, params: mcp.SubscriptionsAcknowledgedNotificationParams, ctx: RequestContext
    ) -> None:
        self.acknowledged.append(params.notifications)

    async def next_change(self) -> None:
        await asyncio.wait_for(self.changed.wait(), 10)
        self.changed.clear()


class ElicitOnly(mcp.ClientHandlers):
    @override
    async def elicit(
        self, params: mcp.ElicitRequestParams, ctx: RequestContext
    ) -> mcp.ElicitResult:
        return mcp.ElicitResult(action="accept", content={"name": "bo"})


def our_client(handlers: object | None = None, **options: Any) -> Client:
    return Client(name="codegen-modern-interop", version="0", handlers=handlers, **options)


class Peer:
    """Our server (``kind`` "modern" or "legacy"), over ``transport``; each
    connect() opens a session to it through a WireTap."""

    def __init__(self, transport: str, kind: str = "modern") -> None:
        self.transport = transport
        self.kind = kind
        self.http: ThreadedServer | None = None
        if transport == "http":
            self.http = ThreadedServer(http_app(make_server(kind))).start()

    def stop(self) -> None:
        if self.http is not None:
            self.http.stop()

    @property
    def url(self) -> str:
        assert self.http is not None
        return self.http.url()

    def parameters(self) -> StdioServerParameters:
        return StdioServerParameters(
            command=sys.executable, args=[str(PEER), self.kind], stderr=asyncio.subprocess.DEVNULL
        )

    async def open_transport(self) -> Any:
        if self.transport == "stdio":
            return await spawn(self.parameters())
        return StreamableHTTPClientTransport(self.url)

    @contextlib.asynccontextmanager
    async def connect(
        self, client: Client, rewrite: Callable[[Message], Message | None] | None = None
    ) -> AsyncIterator[tuple[ClientSession, WireTap]]:
        tap = WireTap(await self.open_transport(), rewrite=rewrite)
        try:
            session = await client.connect(tap)
        except BaseException:
            await tap.close()
            raise
        try:
            yield session, tap
        finally:
            await session.close()
        if self.transport == "stdio":
            assert not pid_alive(tap.inner.process.pid)

    async def raw(self, message: Message) -> tuple[int | None, Message]:
        """Send one JSON-RPC request as it is; (HTTP status or None, the response)."""
        if self.transport == "stdio":
            server = await RawServer.start([sys.executable, str(PEER), self.kind])
            try:
                await server.send(message)
                return None, await server.response(message["id"])
            finally:
                await server.close()
        meta = message.get("params", {}).get("_meta", {})
        headers = {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            "mcp-protocol-version": str(meta.get(VERSION_KEY, MODERN)),
            "mcp-method": message["method"],
        }
        async with httpx.AsyncClient(timeout=30) as http:
            response = await http.post(self.url, content=json.dumps(message), headers=headers)
        body = response.text
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            body = next(line[5:] for line in body.splitlines() if line.startswith("data:"))
        return response.status_code, json.loads(body)


@pytest.fixture(params=["stdio", "http"])
def peer(request: pytest.FixtureRequest) -> Iterator[Peer]:
    server = Peer(request.param)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["stdio", "http"])
def legacy_peer(request: pytest.FixtureRequest) -> Iterator[Peer]:
    server = Peer(request.param, "legacy")
    try:
        yield server
    finally:
        server.stop()


def envelope(version: str = MODERN, **extra: Any) -> dict[str, Any]:
    return {
        VERSION_KEY: version,
        CAPABILITIES_KEY: {},
        CLIENT_INFO_KEY: {"name": "raw-test", "version": "0"},
        **extra,
    }


# ------------------------------------------------------------------ 1. our client, our server


def test_discover_chooses_the_modern_revision_and_every_request_describes_its_sender(
    peer: Peer,
) -> None:
    async def scenario() -> None:
        async with peer.connect(our_client(Handlers())) as (session, tap):
            assert session.stateless
            assert session.protocol_version == MODERN
            assert session.server_info is not None and session.server_info.name == SERVER_NAME
            assert session.instructions == example().INSTRUCTIONS
            assert session.supported_versions == [MODERN]
            capabilities = session.server_capabilities
            assert isinstance(capabilities, mcp.ServerCapabilities)
            assert (
                isinstance(capabilities.tools, mcp.ServerCapabilitiesTools)
                and capabilities.tools.list_changed is True
            )
            server = mcp.ClientStub(session)
            names = [tool.name for tool in (await server.list_tools()).tools]
            assert names[:5] == EXAMPLE_TOOLS
            echoed = await server.call_tool("echo", arguments={"text": "hi"})
            assert isinstance(echoed, mcp.CallToolResult) and texts(echoed) == ["hi"]
            added = await server.call_tool("add", arguments={"a": 2, "b": 3.5})
            assert added.structured_content == {"sum": 5.5}
            # Every result says who answered.
            assert isinstance(added.meta, dict) and added.meta[SERVER_INFO_KEY].name == SERVER_NAME

            # On the wire: server/discover first, no initialize, and every
            # request names the version, the capabilities and the client.
            assert tap.methods()[0] == "server/discover"
            assert "initialize" not in tap.methods()
            assert "notifications/initialized" not in [m.get("method") for m in tap.sent]
            for request in tap.requests():
                meta = request["params"]["_meta"]
                assert meta[VERSION_KEY] == MODERN
                assert meta[CLIENT_INFO_KEY] == {"name": "codegen-modern-interop", "version": "0"}
                assert set(meta[CAPABILITIES_KEY]) >= {"elicitation", "sampling", "roots"}
            discovered = tap.response_to(tap.requests("server/discover")[0]["id"])["result"]
            assert discovered["supportedVersions"] == [MODERN]
            assert discovered["resultType"] == "complete"
            assert discovered["_meta"][SERVER_INFO_KEY]["name"] == SERVER_NAME
            for request in tap.requests("tools/call"):
                result = tap.response_to(request["id"])["result"]
                assert result["resultType"] == "complete"
                assert result["_meta"][SERVER_INFO_KEY] == {"name": SERVER_NAME, "version": "0.1.0"}

    run(scenario())


def test_tools_call_with_progress(peer: Peer) -> None:
    async def scenario() -> None:
        async with peer.connect(our_client()) as (session, tap):
            progress: list[tuple[float, float | None, str | None]] = []
            result = await mcp.ClientStub(session).call_tool(
                "progress",
                arguments={"steps": 3},
                on_progress=lambda p, t, m: progress.append((p, t, m)),
            )
            assert texts(result) == ["done 3 steps"]
            assert progress == [(1, 3, "step 1/3"), (2, 3, "step 2/3"), (3, 3, "step 3/3")]
            (call,) = tap.requests("tools/call")
            meta = call["params"]["_meta"]
            assert "progressToken" in meta and meta[VERSION_KEY] == MODERN
            tokens = {
                n["params"]["progressToken"] for n in tap.notifications("notifications/progress")
            }
            assert tokens == {meta["progressToken"]}

    run(scenario())


def test_input_requests_of_every_kind_are_answered_by_the_handlers_and_the_call_retried(
    peer: Peer,
) -> None:
    handlers = Handlers()

    async def scenario() -> None:
        async with peer.connect(our_client(handlers)) as (session, tap):
            server = mcp.ClientStub(session)

            # One round with an elicitation, a sampling and the roots at once.
            result = await server.call_tool("inputs")
            assert isinstance(result, mcp.CallToolResult) and result.result_type == "complete"
            assert texts(result) == [
                "who=elicit:accept:ada; capital=sample:test-model:Paris; roots=roots:file:///work; state=inputs:1"
            ]
            assert sorted(handlers.asked) == [
                ("elicitation/create", "Who are you?"),
                ("roots/list", None),
                ("sampling/createMessage", "What is the capital of France?"),
            ]
            first, retry = tap.requests("tools/call")
            assert first["id"] != retry["id"]
            assert "inputResponses" not in first["params"] and "requestState" not in first["params"]
            asked = tap.response_to(first["id"])["result"]
            assert asked["resultType"] == "input_required"
            assert set(asked["inputRequests"]) == {"who", "capital", "roots"}
            assert asked["inputRequests"]["roots"]["method"] == "roots/list"
            # The state the handler returned ("inputs:1") reaches the client sealed,
            # comes back unchanged, and the handler sees its own state again.
            sealed = asked["requestState"]
            assert sealed != "inputs:1" and "inputs:1" not in sealed
            assert retry["params"]["requestState"] == sealed
            assert (
                retry["params"]["name"] == "inputs"
                and retry["params"]["_meta"][VERSION_KEY] == MODERN
            )
            responses = retry["params"]["inputResponses"]
            assert responses["who"] == {"action": "accept", "content": {"name": "ada"}}
            assert responses["capital"]["model"] == "test-model"
            assert responses["roots"] == {"roots": [{"uri": "file:///work", "name": "work"}]}

            # Two rounds: the state of the first comes back in the second.
            handlers.asked.clear()
            result = await server.call_tool("rounds")
            assert texts(result) == ["round:2|elicit:accept:ada|sample:test-model:Paris"]
            assert handlers.asked == [
                ("elicitation/create", "First question"),
                ("sampling/createMessage", "Second question"),
            ]
            calls = tap.requests("tools/call")[2:]
            assert [len(c["params"].get("inputResponses", {})) for c in calls] == [0, 1, 1]
            assert len({c["id"] for c in calls}) == 3

            # The example's own tool.
            assert texts(await server.call_tool("ask")) == ["Hello, ada!"]

    run(scenario())


def test_a_tampered_request_state_is_refused(peer: Peer) -> None:
    def flip_a_character(message: Message) -> Message | None:
        state = message.get("params", {}).get("requestState")
        if not isinstance(state, str):
            return None
        last = "A" if state[-2] != "A" else "B"
        message["params"]["requestState"] = state[:-2] + last + state[-1]
        return message

    def present_it_to_another_tool(message: Message) -> Message | None:
        if "requestState" not in message.get("params", {}):
            return None
        message["params"]["name"] = "rounds"
        return message

    async def scenario() -> None:
        for rewrite in (flip_a_character, present_it_to_another_tool):
            async with peer.connect(our_client(Handlers()), rewrite=rewrite) as (session, tap):
                with pytest.raises(McpError) as refused:
                    await mcp.ClientStub(session).call_tool("ask")
                assert refused.value.code == jsonrpc.INVALID_PARAMS
                assert "requestState" in refused.value.message
                assert len(tap.requests("tools/call")) == 2
                # The session goes on.
                assert texts(
                    await mcp.ClientStub(session).call_tool("echo", arguments={"text": "ok"})
                ) == ["ok"]

    run(scenario())


def test_log_messages_come_only_for_requests_that_ask_for_them(peer: Peer) -> None:
    async def scenario() -> None:
        handlers = Handlers()
        async with peer.connect(our_client(handlers)) as (session, tap):
            server = mcp.ClientStub(session)
            assert texts(await server.call_tool("log", arguments={"message": "m1"})) == ["logged"]
            assert handlers.logs == [] and tap.notifications("notifications/message") == []

            await server.call_tool("log", arguments={"message": "m2"}, meta={LOG_LEVEL_KEY: "info"})  # type: ignore[arg-type]
            assert handlers.logs == [("info", "info: m2", "log"), ("warning", "warning: m2", "log")]
            _, asked = tap.requests("tools/call")
            assert asked["params"]["_meta"][LOG_LEVEL_KEY] == "info"
            assert asked["params"]["_meta"][VERSION_KEY] == MODERN  # the envelope is kept

            # The next request without a level gets nothing again: nothing is remembered.
            handlers.logs.clear()
            await server.call_tool("log", arguments={"message": "m3"})
            assert handlers.logs == []

        # A client-wide level applies to every request.
        handlers = Handlers()
        async with peer.connect(our_client(handlers, log_level="debug")) as (session, tap):
            await mcp.ClientStub(session).call_tool("log", arguments={"message": "m4"})
            assert [level for level, _, _ in handlers.logs] == ["debug", "info", "warning"]
            assert all(r["params"]["_meta"][LOG_LEVEL_KEY] == "debug" for r in tap.requests())

    run(scenario())


def test_the_client_cache_honours_the_ttl_and_list_changes_invalidate_it(peer: Peer) -> None:
    handlers = Handlers()

    async def scenario() -> None:
        async with peer.connect(our_client(handlers, cache=True)) as (session, tap):
            server = mcp.ClientStub(session)
            first = await server.list_tools()
            assert first.ttl_ms == example().LIST_TTL_MS and first.cache_scope == "public"
            second = await server.list_tools()
            assert [t.name for t in second.tools] == [t.name for t in first.tools]
            assert len(tap.requests("tools/list")) == 1  # the second came from the cache

            readme = await server.read_resource("memo://readme")
            again = await server.read_resource("memo://readme")
            assert readme.ttl_ms == example().RESOURCE_TTL_MS
            assert again.contents == readme.contents
            assert len(tap.requests("resources/read")) == 1
            # Results the server does not call cacheable (tools/call) always go out.
            await server.call_tool("echo", arguments={"text": "1"})
            await server.call_tool("echo", arguments={"text": "1"})
            assert len(tap.requests("tools/call")) == 2

            # A tool list change makes the cached list stale.
            listener = await session.listen(tools_list_changed=True)
            await server.call_tool("change", arguments={"kind": "tools"})
            await handlers.next_change()
            third = await server.list_tools()
            assert len(tap.requests("tools/list")) == 2
            assert "extra" in [t.name for t in third.tools]
            assert "extra" not in [t.name for t in first.tools]
            await listener.close()

        # Without cache=True every list goes out.
        async with peer.connect(our_client()) as (session, tap):
            await mcp.ClientStub(session).list_tools()
            await mcp.ClientStub(session).list_tools()
            assert len(tap.requests("tools/list")) == 2

    run(scenario())


def test_subscriptions_listen_delivers_what_the_filter_asked_for(peer: Peer) -> None:
    handlers = Handlers()

    async def scenario() -> None:
        async with peer.connect(our_client(handlers)) as (session, tap):
            server = mcp.ClientStub(session)
            listener = await session.listen(
                tools_list_changed=True, resource_subscriptions=["memo://readme"]
            )
            assert listener.open
            assert listener.acknowledged == {
                "toolsListChanged": True,
                "resourceSubscriptions": ["memo://readme"],
            }
            assert len(handlers.acknowledged) == 1
            (listen,) = tap.requests("subscriptions/listen")
            assert listen["id"] == listener.id
            assert listen["params"]["notifications"] == {
                "toolsListChanged": True,
                "resourceSubscriptions": ["memo://readme"],
            }
            (ack,) = tap.notifications("notifications/subscriptions/acknowledged")
            assert ack["params"]["_meta"][SUBSCRIPTION_ID_KEY] == listener.id

            # Not asked for: prompts; asked for: tools.
            await server.call_tool("change", arguments={"kind": "prompts"})
            await server.call_tool("change", arguments={"kind": "tools"})
            await handlers.next_change()
            assert (handlers.tools_changed, handlers.prompts_changed) == (1, 0)

            # Only the resource subscribed to.
            await server.call_tool("touch", arguments={"uri": "memo://other"})
            await server.call_tool("touch", arguments={"uri": "memo://readme"})
            await handlers.next_change()
            assert handlers.updated == ["memo://readme"]

            # Every notification of the stream names it.
            delivered = tap.notifications("notifications/tools/list_changed") + tap.notifications(
                "notifications/resources/updated"
            )
            assert len(delivered) == 2
            assert all(n["params"]["_meta"][SUBSCRIPTION_ID_KEY] == listener.id for n in delivered)
            assert tap.notifications("notifications/prompts/list_changed") == []

            # Closed, it delivers nothing more; a new one does.
            await listener.close()
            assert not listener.open
            again = await session.listen(prompts_list_changed=True)
            await server.call_tool("change", arguments={"kind": "tools"})
            await server.call_tool("change", arguments={"kind": "prompts"})
            await handlers.next_change()
            await server.call_tool("echo", arguments={"text": "settle"})
            assert (handlers.tools_changed, handlers.prompts_changed) == (1, 1)
            await again.close()

    run(scenario())


def test_an_unsupported_version_is_refused_with_the_supported_list(peer: Peer) -> None:
    async def scenario() -> None:
        request = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/list",
            "params": {"_meta": envelope("2099-01-01")},
        }
        status, answer = await peer.raw(request)
        assert answer["id"] == 7
        assert answer["error"]["code"] == jsonrpc.UNSUPPORTED_PROTOCOL_VERSION
        assert answer["error"]["data"]["supported"] == [MODERN]
        assert answer["error"]["data"]["requested"] == "2099-01-01"
        if status is not None:
            assert status == 400

        # A method 2026-07-28 removed is unknown there.
        status, answer = await peer.raw(
            {
                "jsonrpc": "2.0",
                "id": 8,
                "method": "logging/setLevel",
                "params": {"level": "info", "_meta": envelope()},
            }
        )
        assert answer["error"]["code"] == jsonrpc.METHOD_NOT_FOUND
        if status is not None:
            assert status == 404

        # A request that does not describe its sender is invalid.
        status, answer = await peer.raw(
            {
                "jsonrpc": "2.0",
                "id": 9,
                "method": "tools/list",
                "params": {"_meta": {VERSION_KEY: MODERN}},
            }
        )
        assert answer["error"]["code"] == jsonrpc.INVALID_PARAMS

    run(scenario())


def test_an_input_request_the_client_cannot_answer_is_refused_with_missing_capability(
    peer: Peer,
) -> None:
    async def scenario() -> None:
        async with peer.connect(our_client()) as (session, tap):
            assert tap.requests()[0]["params"]["_meta"][CAPABILITIES_KEY] == {}
            with pytest.raises(McpError) as refused:
                await mcp.ClientStub(session).call_tool("ask")
            assert refused.value.code == jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY
            assert refused.value.data == {"requiredCapabilities": {"elicitation": {}}}
            assert len(tap.requests("tools/call")) == 1

        async with peer.connect(our_client(ElicitOnly())) as (session, tap):
            server = mcp.ClientStub(session)
            assert texts(await server.call_tool("ask")) == ["Hello, bo!"]
            with pytest.raises(McpError) as refused:
                await server.call_tool("sample")
            assert refused.value.code == jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY
            assert refused.value.data == {"requiredCapabilities": {"sampling": {}}}

    run(scenario())


# ------------------------------------------------------------------ 2. our client, servers of 2025-11-25 only


def test_our_client_falls_back_to_initialize_with_our_2025_11_25_server(legacy_peer: Peer) -> None:
    handlers = Handlers()

    async def scenario() -> None:
        client = our_client(handlers)
        assert client.protocol_version == MODERN
        async with legacy_peer.connect(client) as (session, tap):
            assert not session.stateless
            assert session.protocol_version == HANDSHAKE
            assert session.server_info.name == SERVER_NAME
            assert tap.methods()[:2] == ["server/discover", "initialize"]
            discover = tap.response_to(tap.requests("server/discover")[0]["id"])
            assert "error" in discover
            initialize = tap.requests("initialize")[0]["params"]
            assert initialize["protocolVersion"] == HANDSHAKE
            assert set(initialize["capabilities"]) >= {"elicitation", "sampling", "roots"}

            server = legacy.ClientStub(session)
            await server.ping()
            assert [t.name for t in (await server.list_tools()).tools] == EXAMPLE_TOOLS
            assert texts(await server.call_tool("echo", arguments={"text": "old"})) == ["old"]
            progress: list[float] = []
            result = await server.call_tool(
                "progress", arguments={"steps": 2}, on_progress=lambda p, t, m: progress.append(p)
            )
            assert texts(result) == ["done 2 steps"] and progress == [1, 2]
            # The 2026-07-28 handlers answer the server's own elicitation request.
            assert texts(await server.call_tool("ask")) == ["Hello, ada!"]
            assert handlers.asked == [("elicitation/create", "What is your name?")]
            await server.set_level("warning")
            await server.call_tool("log", arguments={"message": "x"})
            await server.ping()
            assert [level for level, _, _ in handlers.logs] == ["warning"]
            readme = await server.read_resource("memo://readme")
            assert isinstance(readme.contents[0], legacy.TextResourceContents)
            # No _meta envelope once on a handshake revision.
            later = [
                r for r in tap.requests() if r["method"] not in ("server/discover", "initialize")
            ]
            assert later and all(
                VERSION_KEY not in r.get("params", {}).get("_meta", {}) for r in later
            )

    run(scenario())


@pytest.mark.node
def test_our_client_falls_back_to_initialize_with_server_everything() -> None:
    async def scenario() -> None:
        transport = await spawn(everything_server())
        tap = WireTap(transport)
        session = await our_client().connect(tap)
        try:
            assert not session.stateless
            assert session.protocol_version == HANDSHAKE
            assert session.server_info.name == "mcp-servers/everything"
            assert tap.methods()[:2] == ["server/discover", "initialize"]
            discover = tap.response_to(tap.requests("server/discover")[0]["id"])
            assert discover["error"]["code"] == jsonrpc.METHOD_NOT_FOUND
            server = legacy.ClientStub(session)
            echoed = await server.call_tool("echo", arguments={"message": "after the fallback"})
            assert texts(echoed) == ["Echo: after the fallback"]
            summed = await server.call_tool("get-sum", arguments={"a": 2, "b": 3})
            assert texts(summed) == ["The sum of 2 and 3 is 5."]
            progress: list[float] = []
            await server.call_tool(
                "trigger-long-running-operation",
                arguments={"duration": 0.2, "steps": 2},
                on_progress=lambda p, t, m: progress.append(p),
            )
            assert progress == [1, 2]
        finally:
            await session.close()
        assert not pid_alive(transport.process.pid)

    run(scenario())


# ------------------------------------------------------------------ 3. the SDK's client, our server


@contextlib.contextmanager
def our_server_for_the_sdk(
    transport: str, tmp_path: Path
) -> Iterator[tuple[Any, Callable[[], list[Message]]]]:
    """(what to give sdk.Client, a function returning the messages the server received)."""
    if transport == "stdio":
        record = tmp_path / "received.jsonl"
        record.touch()
        parameters = sdk.StdioServerParameters(
            command=sys.executable,
            args=[str(PEER), "modern", "--record", str(record)],
            env=THIS_TREE,
        )

        def received() -> list[Message]:
            return [json.loads(line) for line in record.read_text().splitlines() if line.strip()]

        yield parameters, received
        return
    tap = BodyTap(http_app(make_server()))
    server = ThreadedServer(tap).start()
    try:
        yield server.url(), lambda: list(tap.messages)
    finally:
        server.stop()


def request_methods(messages: list[Message]) -> list[str]:
    return [m["method"] for m in messages if "id" in m and "method" in m]


@pytest.mark.peers
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_sdk_client_in_auto_mode_speaks_2026_07_28_to_our_server(
    transport: str, tmp_path: Path
) -> None:
    logs: list[tuple[str, Any]] = []
    asked: list[str] = []

    async def on_log(params: sdk_types.LoggingMessageNotificationParams) -> None:
        logs.append((params.level, params.data))

    async def on_elicit(context: Any, params: Any) -> sdk_types.ElicitResult:
        asked.append(params.message)
        return sdk_types.ElicitResult(action="accept", content={"name": "grace"})

    async def scenario(target: Any, received: Callable[[], list[Message]]) -> None:
        async with sdk.Client(
            target, mode="auto", logging_callback=on_log, elicitation_callback=on_elicit
        ) as client:
            assert client.protocol_version == MODERN
            assert client.server_info is not None and client.server_info.name == SERVER_NAME
            assert client.server_capabilities.tools is not None

            tools = await client.list_tools()
            assert [tool.name for tool in tools.tools][:5] == EXAMPLE_TOOLS
            assert texts(await client.call_tool("echo", {"text": "from the SDK"})) == [
                "from the SDK"
            ]
            added = await client.call_tool("add", {"a": 2, "b": 3})
            assert added.structured_content == {"sum": 5.0}

            progress: list[tuple[float, float | None, str | None]] = []

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                progress.append((value, total, message))

            result = await client.call_tool("progress", {"steps": 3}, progress_callback=on_progress)
            assert texts(result) == ["done 3 steps"]
            assert progress == [(1, 3, "step 1/3"), (2, 3, "step 2/3"), (3, 3, "step 3/3")]

            # MRTR: the SDK answers the elicitation and retries.
            assert texts(await client.call_tool("ask", {})) == ["Hello, grace!"]
            assert asked == ["What is your name?"]

            # Logs only for a request that asks for them.
            await client.call_tool("log", {"message": "quiet"})
            assert logs == []
            await client.call_tool("log", {"message": "loud"}, meta={LOG_LEVEL_KEY: "info"})  # type: ignore[arg-type]
            assert logs == [("info", "info: loud"), ("warning", "warning: loud")]

            resources = await client.list_resources()
            assert [str(r.uri) for r in resources.resources] == ["memo://readme"]
            readme = await client.read_resource("memo://readme")
            assert readme.contents[0].text == example().README  # type: ignore[union-attr]
            prompts = await client.list_prompts()
            assert [p.name for p in prompts.prompts] == ["review"]
            prompt = await client.get_prompt("review", {"code": "x = 1", "language": "python"})
            assert prompt.messages[0].content.text == "Please review this python:\nx = 1"  # type: ignore[union-attr]

            # The SDK keeps lists for the ttlMs our server gives: one tools/list went out.
            await client.list_tools()

        methods = request_methods(received())
        assert methods[0] == "server/discover"
        assert "initialize" not in methods
        assert methods.count("tools/list") == 1
        asks = [
            m
            for m in received()
            if m.get("method") == "tools/call" and m["params"]["name"] == "ask"
        ]
        assert len(asks) == 2
        assert set(asks[1]["params"]["inputResponses"]) == {"name"}
        assert isinstance(asks[1]["params"]["requestState"], str)
        for message in received():
            if "id" in message and "method" in message:
                assert message["params"]["_meta"][VERSION_KEY] == MODERN

    with our_server_for_the_sdk(transport, tmp_path) as (target, received):
        run(scenario(target, received))


@pytest.mark.peers
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_sdk_client_in_legacy_mode_speaks_2025_11_25_to_our_server(
    transport: str, tmp_path: Path
) -> None:
    logs: list[tuple[str, Any]] = []

    async def on_log(params: sdk_types.LoggingMessageNotificationParams) -> None:
        logs.append((params.level, params.data))

    async def on_elicit(context: Any, params: Any) -> sdk_types.ElicitResult:
        return sdk_types.ElicitResult(action="accept", content={"name": "grace"})

    async def scenario(target: Any, received: Callable[[], list[Message]]) -> None:
        async with sdk.Client(
            target, mode="legacy", logging_callback=on_log, elicitation_callback=on_elicit
        ) as client:
            assert client.protocol_version == HANDSHAKE
            assert client.server_info is not None and client.server_info.name == SERVER_NAME
            await client.send_ping()
            tools = await client.list_tools()
            assert [tool.name for tool in tools.tools] == EXAMPLE_TOOLS
            assert texts(await client.call_tool("echo", {"text": "legacy"})) == ["legacy"]
            progress: list[float] = []

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                progress.append(value)

            await client.call_tool("progress", {"steps": 2}, progress_callback=on_progress)
            assert progress == [1, 2]
            assert texts(await client.call_tool("ask", {})) == ["Hello, grace!"]
            await client.set_logging_level("info")
            await client.call_tool("log", {"message": "x"})
            await client.send_ping()
            assert logs == [("info", "info: x"), ("warning", "warning: x")]
            readme = await client.read_resource("memo://readme")
            assert readme.contents[0].text == example().README  # type: ignore[union-attr]
            prompt = await client.get_prompt("review", {"code": "y"})
            assert prompt.messages[0].content.text == "Please review this code:\ny"  # type: ignore[union-attr]

        methods = request_methods(received())
        assert methods[0] == "initialize"
        assert "server/discover" not in methods

    with our_server_for_the_sdk(transport, tmp_path) as (target, received):
        run(scenario(target, received))


# ------------------------------------------------------------------ 4. our client, the SDK's server


class SdkModernHttpServer(SubprocessServer):
    """tests/support/sdk_modern_server.py serving Streamable HTTP in a child process."""

    def __init__(self) -> None:
        import subprocess

        env = {**os.environ, "PYTHONWARNINGS": "ignore"}
        self.process = subprocess.Popen(
            [sys.executable, str(SDK_MODERN_SERVER), "http"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
        )
        self.port = 0


@contextlib.asynccontextmanager
async def open_sdk_server(transport: str) -> AsyncIterator[Callable[[], Any]]:
    """A function making a fresh transport to the SDK's server."""
    if transport == "stdio":
        parameters = StdioServerParameters(
            command=sys.executable, args=[str(SDK_MODERN_SERVER)], stderr=asyncio.subprocess.DEVNULL
        )

        async def stdio_transport() -> Any:
            return await spawn(parameters)

        yield stdio_transport
        return
    server = SdkModernHttpServer()
    try:
        await asyncio.to_thread(server.wait_ready)

        async def http_transport() -> Any:
            return StreamableHTTPClientTransport(server.url())

        yield http_transport
    finally:
        await asyncio.to_thread(server.stop)


@pytest.mark.peers
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_our_client_speaks_2026_07_28_to_the_sdk_server(transport: str) -> None:
    handlers = Handlers()

    async def scenario() -> None:
        async with open_sdk_server(transport) as new_transport:
            tap = WireTap(await new_transport())
            session = await our_client(handlers).connect(tap)
            try:
                assert session.stateless
                assert session.protocol_version == MODERN
                assert (
                    session.server_info is not None
                    and session.server_info.name == "sdk-modern-server"
                )
                assert session.instructions == "SDK peer speaking 2026-07-28"
                assert tap.methods()[0] == "server/discover"
                assert "initialize" not in tap.methods()
                server = mcp.ClientStub(session)

                tools = {tool.name for tool in (await server.list_tools()).tools}
                assert {"add", "count", "ask"} <= tools
                added = await server.call_tool("add", arguments={"a": 2, "b": 3})
                assert added.structured_content == {"result": 5}

                progress: list[tuple[float, float | None, str | None]] = []
                counted = await server.call_tool(
                    "count",
                    arguments={"steps": 2},
                    on_progress=lambda p, t, m: progress.append((p, t, m)),
                    meta={LOG_LEVEL_KEY: "info"},  # type: ignore[arg-type]
                )
                assert texts(counted) == ["counted 2 steps"]
                assert progress == [(1, 2, "step 1/2"), (2, 2, "step 2/2")]
                assert [(level, data) for level, data, _ in handlers.logs] == [
                    ("info", "finished step 1"),
                    ("info", "finished step 2"),
                ]
                # Without a level in the request, the SDK server sends no logs.
                handlers.logs.clear()
                await server.call_tool("count", arguments={"steps": 1})
                assert handlers.logs == []

                # The SDK server asks through an input-required result; our handlers answer.
                asked = await server.call_tool("ask")
                assert texts(asked) == ["hello ada (state asked-for-name)"]
                assert handlers.asked == [("elicitation/create", "What is your name?")]
                asks = [r for r in tap.requests("tools/call") if r["params"]["name"] == "ask"]
                assert len(asks) == 2 and "inputResponses" not in asks[0]["params"]
                issued = tap.response_to(asks[0]["id"])["result"]
                assert issued["resultType"] == "input_required"
                assert (
                    asks[1]["params"]["requestState"] == issued["requestState"]
                )  # (the SDK seals it too)
                assert asks[1]["params"]["inputResponses"] == {
                    "name": {"action": "accept", "content": {"name": "ada"}}
                }

                static = await server.read_resource("sdk://static")
                assert isinstance(static.contents[0], mcp.TextResourceContents)
                assert static.contents[0].text == "hello from the SDK"
                greeting = await server.read_resource("sdk://greeting/bob")
                assert greeting.contents[0].text == "Hello, bob!"  # type: ignore[union-attr]
                prompt = await server.get_prompt(
                    "review", arguments={"code": "x = 1", "language": "rust"}
                )
                assert isinstance(prompt.messages[0].content, mcp.TextContent)
                assert prompt.messages[0].content.text == "Please review this rust code:\nx = 1"
            finally:
                await session.close()

    run(scenario())


@pytest.mark.peers
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_our_client_speaks_2025_11_25_to_the_sdk_server_when_asked(transport: str) -> None:
    handlers = Handlers()

    async def scenario() -> None:
        async with open_sdk_server(transport) as new_transport:
            tap = WireTap(await new_transport())
            session = await our_client(handlers, protocol_version=HANDSHAKE).connect(tap)
            try:
                assert not session.stateless
                assert session.protocol_version == HANDSHAKE
                assert session.server_info.name == "sdk-modern-server"
                assert tap.methods()[0] == "initialize"
                assert "server/discover" not in tap.methods()
                server = legacy.ClientStub(session)
                await server.ping()
                added = await server.call_tool("add", arguments={"a": 4, "b": 5})
                assert added.structured_content == {"result": 9}
                await server.set_level("info")
                progress: list[float] = []
                counted = await server.call_tool(
                    "count", arguments={"steps": 2}, on_progress=lambda p, t, m: progress.append(p)
                )
                assert texts(counted) == ["counted 2 steps"] and progress == [1, 2]
                await server.ping()
                assert [data for _, data, _ in handlers.logs] == [
                    "finished step 1",
                    "finished step 2",
                ]
                static = await server.read_resource("sdk://static")
                assert isinstance(static.contents[0], legacy.TextResourceContents)
                prompt = await server.get_prompt("review", arguments={"code": "z"})
                assert isinstance(prompt.messages[0].content, legacy.TextContent)
                assert prompt.messages[0].content.text == "Please review this python code:\nz"
                for request in tap.requests():
                    assert VERSION_KEY not in request.get("params", {}).get("_meta", {})
            finally:
                await session.close()

    run(scenario())


# ------------------------------------------------------------------ the examples


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_example_client_and_server_talk_2026_07_28(transport: str) -> None:
    client = Path(__file__).resolve().parents[2] / "examples" / "stateless_client.py"

    async def scenario(arguments: list[str]) -> str:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(client),
            *arguments,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=client.parents[1],  # the client starts examples/stateless_server.py by that path
        )
        out, err = await process.communicate()
        assert process.returncode == 0, err.decode()
        return out.decode()

    if transport == "stdio":
        output = run(scenario([]))
    else:
        server = ThreadedServer(http_app(example().make_server())).start()
        try:
            output = run(scenario([server.url()]))
        finally:
            server.stop()
    lines = output.splitlines()
    assert lines[0] == f"connected to {SERVER_NAME}, speaking {MODERN} (request by request)"
    assert "echo -> ['hello']" in lines
    assert "add -> {'sum': 42.0}" in lines
    assert "  progress 3.0/3.0 step 3/3" in lines
    assert "  the server asks: 'What is your name?' -> answering 'Ada'" in lines
    assert "ask -> ['Hello, Ada!']" in lines
    assert lines.index("  log [info] info: hi") < lines.index("log -> ['logged']")
    assert not any("[debug]" in line for line in lines)
