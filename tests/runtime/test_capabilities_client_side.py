"""A client keeps to the capabilities on both sides: it refuses a server's request for an
elicitation mode it did not declare (-32602), and sends no task-augmented call to a server
without ``tasks.requests.tools.call`` and no roots list_changed it did not declare; over
stdio (a server of raw lines that checks nothing) and in process (a server end driven by
hand)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from support.peers import SUPPORT, run
from support.raw_peer_server import TASK_CREATED
from support.transports import MemoryTransport, memory_pair
from typing_extensions import override

from mcpbind._client.client import Client, ClientSession, connect_stdio
from mcpbind._core import jsonrpc
from mcpbind._core.jsonrpc import McpError
from mcpbind._transports.stdio import StdioServerParameters
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25 as mcp
from mcpbind_protocol import v2026_07_28 as modern

RAW_PEER = SUPPORT / "raw_peer_server.py"
URL_ELICITATION = {
    "method": "elicitation/create",
    "params": {
        "mode": "url",
        "message": "Sign in",
        "url": "https://example.com/sign-in",
        "elicitationId": "e-1",
    },
}


class Handlers(mcp.ClientHandlers):
    """Answers every elicitation with accept: what a client must not do for a mode it did not declare."""

    asked: list[Any]

    def __init__(self) -> None:
        self.asked = []

    @override
    async def elicit(self, params: Any, ctx: RequestContext) -> Any:
        self.asked.append(params)
        return mcp.ElicitResult(action="accept", content={})

    @override
    async def list_roots(self, params: Any, ctx: RequestContext) -> Any:
        return mcp.ListRootsResult(roots=[])


@asynccontextmanager
async def over_stdio(client: Client, capabilities: dict[str, Any]) -> AsyncIterator[ClientSession]:
    parameters = StdioServerParameters(
        command=sys.executable, args=[str(RAW_PEER), json.dumps(capabilities)]
    )
    async with connect_stdio(client, parameters) as session:
        yield session


async def _raw_peer(end: MemoryTransport, capabilities: dict[str, Any]) -> None:
    """The in-process twin of raw_peer_server.py."""
    seen: list[Any] = []
    waiting: dict[Any, Any] = {}
    while True:
        message = await end.receive(timeout=60)
        if message is None:
            return
        method = message.get("method")
        if method is not None:
            params = message.get("params") or {}
            seen.append([method, params.get("task")] if method == "tools/call" else method)
        if method == "initialize":
            end.send(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "result": {
                        "protocolVersion": message["params"]["protocolVersion"],
                        "capabilities": capabilities,
                        "serverInfo": {"name": "raw-peer", "version": "0"},
                    },
                }
            )
        elif method == "tools/call":
            arguments = message["params"].get("arguments") or {}
            if message["params"].get("task") is not None:
                end.send({"jsonrpc": "2.0", "id": message["id"], "result": TASK_CREATED})
            elif message["params"]["name"] == "probe":
                waiting[f"probe-{message['id']}"] = message["id"]
                end.send({"jsonrpc": "2.0", "id": f"probe-{message['id']}", **arguments["request"]})
            else:
                _text(end, message["id"], seen)
        elif method is None and message.get("id") in waiting:
            _text(end, waiting.pop(message["id"]), message)


def _text(end: MemoryTransport, request_id: Any, value: Any) -> None:
    result = {"content": [{"type": "text", "text": json.dumps(value)}]}
    end.send({"jsonrpc": "2.0", "id": request_id, "result": result})


@asynccontextmanager
async def in_process(client: Client, capabilities: dict[str, Any]) -> AsyncIterator[ClientSession]:
    server_end, client_end = memory_pair("server", "client")
    peer = asyncio.get_running_loop().create_task(_raw_peer(server_end, capabilities))
    session = await client.connect(client_end)
    try:
        yield session
    finally:
        await session.close()
        await server_end.close()
        await peer


TRANSPORTS = {"stdio": over_stdio, "in-process": in_process}


def _client(handlers: Any = None, capabilities: dict[str, Any] | None = None) -> Client:
    return Client(
        name="t",
        version="0",
        protocol_version="2025-11-25",
        handlers=handlers,
        capabilities=capabilities,
    )


async def _text_of(session: ClientSession, name: str, arguments: dict[str, Any]) -> Any:
    result = await mcp.ClientStub(session).call_tool(name, arguments=arguments)
    return json.loads(result.content[0].text)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_client_refuses_an_elicitation_mode_it_did_not_declare(transport: str) -> None:
    """Clients **MUST** return -32602 when the server sends an elicitation/create request
    with a mode not declared in client capabilities. (client/elicitation, 2025-11-25:
    "Server sends an `elicitation/create` request with a mode not declared in client
    capabilities: `-32602` (Invalid params)")"""

    async def scenario() -> None:
        for declared, allowed in (
            (None, False),  # the handler alone declares elicitation: {} (form only)
            ({"elicitation": {"form": {}}}, False),
            ({"elicitation": {"url": {}}}, True),
        ):
            handlers = Handlers()
            async with TRANSPORTS[transport](_client(handlers, declared), {"tools": {}}) as session:
                answer = await _text_of(session, "probe", {"request": URL_ELICITATION})
            if allowed:
                assert answer["result"]["action"] == "accept" and len(handlers.asked) == 1
            else:
                assert answer["error"]["code"] == jsonrpc.INVALID_PARAMS, answer
                assert "elicitation.url" in answer["error"]["message"]
                assert handlers.asked == []

    run(scenario())


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_client_sends_no_task_augmentation_the_server_did_not_declare(transport: str) -> None:
    """If a server's capabilities do not include `tasks.requests.tools.call`, then clients
    **MUST NOT** attempt to use task augmentation on that server's tools, regardless of
    the `execution.taskSupport` value. (basic/utilities/tasks, 2025-11-25)"""

    async def scenario() -> None:
        async with TRANSPORTS[transport](_client(), {"tools": {}}) as session:
            with pytest.raises(McpError, match="tasks.requests.tools.call") as refused:
                await mcp.ClientStub(session).call_tool_as_task("slow")
            assert refused.value.code == jsonrpc.METHOD_NOT_FOUND
            seen = await _text_of(session, "seen", {})
        assert ["tools/call", {"ttl": None}] not in seen and all(
            entry[1] is None for entry in seen if isinstance(entry, list)
        ), seen
        declared = {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}}
        async with TRANSPORTS[transport](_client(), declared) as session:
            await mcp.ClientStub(session).call_tool_as_task("slow")
            seen = await _text_of(session, "seen", {})
        assert any(isinstance(entry, list) and entry[1] is not None for entry in seen), seen

    run(scenario())


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_client_announces_no_roots_change_it_did_not_declare(transport: str) -> None:
    """`listChanged` indicates whether the client will emit notifications when the list of
    roots changes. (client/roots, 2024-11-05 to 2025-11-25): a client that declared
    ``roots: {}`` sends no notifications/roots/list_changed."""

    async def scenario() -> None:
        async with TRANSPORTS[transport](_client(Handlers()), {"tools": {}}) as session:
            with pytest.raises(McpError, match="roots.listChanged"):
                await mcp.ClientStub(session).notify_roots_list_changed()
            seen = await _text_of(session, "seen", {})
        assert "notifications/roots/list_changed" not in seen, seen
        declared = {"roots": {"listChanged": True}}
        async with TRANSPORTS[transport](_client(Handlers(), declared), {"tools": {}}) as session:
            await mcp.ClientStub(session).notify_roots_list_changed()
            seen = await _text_of(session, "seen", {})
        assert "notifications/roots/list_changed" in seen, seen

    run(scenario())


def test_client_refuses_an_input_request_mode_it_did_not_declare() -> None:
    """Clients **MUST** return -32602 when the server sends an elicitation/create request
    with a mode not declared in client capabilities. (client/elicitation, 2025-11-25; on
    2026-07-28 the request comes as an input request: the call fails with -32602 and the
    handler is not asked)"""

    class ModernHandlers(modern.ClientHandlers):
        asked: list[Any] = []

        @override
        async def elicit(self, params: Any, ctx: RequestContext) -> Any:
            self.asked.append(params)
            return modern.ElicitResult(action="accept", content={})

    async def scenario() -> None:
        server_end, client_end = memory_pair("server", "client")

        async def server() -> None:
            while True:
                message = await server_end.receive(timeout=60)
                if message is None:
                    return
                if message.get("method") == "server/discover":
                    result: dict[str, Any] = {
                        "supportedVersions": ["2026-07-28"],
                        "capabilities": {"tools": {}},
                        "resultType": "complete",
                        "ttlMs": 0,
                        "cacheScope": "public",
                    }
                elif message.get("method") == "tools/call":
                    result = {
                        "resultType": "input_required",
                        "inputRequests": {"k": URL_ELICITATION},
                    }
                else:
                    continue
                server_end.send({"jsonrpc": "2.0", "id": message["id"], "result": result})

        serving = asyncio.get_running_loop().create_task(server())
        handlers = ModernHandlers()
        client = Client(name="t", version="0", handlers=handlers)
        session = await client.connect(client_end)
        try:
            with pytest.raises(McpError, match="elicitation.url") as refused:
                await modern.ClientStub(session).call_tool("probe")
            assert refused.value.code == jsonrpc.INVALID_PARAMS
            assert handlers.asked == []
        finally:
            await session.close()
            await server_end.close()
            await serving

    run(scenario())
