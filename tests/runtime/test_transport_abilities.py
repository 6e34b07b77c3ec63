"""A transport needs only the five members of ``wire.Transport``: one without
any optional ability (a principal, a reason for closing, a session id, per
request streams) still serves, its requests' ``ctx.extra`` says it knows
nothing more of them; the abilities it declares (typed Protocols, not
attribute names looked up) are used."""

from __future__ import annotations

import asyncio

import msgspec
import pytest
from support.http_servers import run

from mcpbind._client.client import Client
from mcpbind._core.jsonrpc import ConnectionClosed, RequestId
from mcpbind._core.limits import LOCAL
from mcpbind._core.wire import ClosesWithReason, Message, RequestExtra
from mcpbind._server.server import Server
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25 as mcp


class BareTransport:
    """read, write, drain, close, close_request_stream: nothing more."""

    def __init__(self, inbox: asyncio.Queue[bytes | None], outbox: asyncio.Queue[bytes | None]):
        self._inbox, self._outbox = inbox, outbox

    async def read(self) -> Message | None:
        data = await self._inbox.get()
        return None if data is None else Message(data=data)

    def write(self, message: Message) -> None:
        self._outbox.put_nowait(message.data)

    async def drain(self) -> None:
        return None

    async def close(self) -> None:
        self._outbox.put_nowait(None)
        self._inbox.put_nowait(None)

    def close_request_stream(self, request_id: RequestId) -> None:
        return None


class ExplainingTransport(BareTransport):
    """One that can say why its peer went away."""

    def closed_reason(self) -> str | None:
        return "the peer exited with status 3"


def bare_pair(
    client_kind: type[BareTransport] = BareTransport,
) -> tuple[BareTransport, BareTransport]:
    to_server: asyncio.Queue[bytes | None] = asyncio.Queue()
    to_client: asyncio.Queue[bytes | None] = asyncio.Queue()
    return BareTransport(to_server, to_client), client_kind(to_client, to_server)


class Handlers(mcp.ServerHandlers):
    def __init__(self) -> None:
        self.extras: list[RequestExtra] = []
        self.release = asyncio.Event()

    async def list_tools(
        self, params: mcp.PaginatedRequestParams, ctx: RequestContext
    ) -> mcp.ListToolsResult:
        return mcp.ListToolsResult(tools=[])

    async def call_tool(
        self, params: mcp.CallToolRequestParams, ctx: RequestContext
    ) -> mcp.CallToolResult:
        self.extras.append(ctx.extra)
        if params.name == "wait":
            await self.release.wait()
        return mcp.CallToolResult(content=[mcp.TextContent(text=params.name)])


def _client() -> Client:
    return Client(name="t", version="0", protocol_version="2025-11-25")


def _call(name: str) -> bytes:
    return msgspec.json.encode({"name": name, "arguments": {}})


def test_a_transport_without_optional_abilities_still_serves() -> None:
    async def main() -> None:
        handlers = Handlers()
        server_end, client_end = bare_pair()
        assert not isinstance(server_end, ClosesWithReason)
        serving = asyncio.get_running_loop().create_task(
            Server(handlers, name="s", version="1").serve(server_end)
        )
        session = await _client().connect(client_end)
        try:
            result = await session.request_raw("tools/call", _call("hello"))
            assert msgspec.json.decode(result)["content"][0]["text"] == "hello"
        finally:
            await session.close()
            await asyncio.wait_for(serving, 10)
        # Nothing more known of the request: no principal, the local client,
        # no headers, no stream of its own to close.
        assert handlers.extras == [RequestExtra(None, LOCAL, None, None)]

    run(main())


def test_a_transport_that_says_why_it_closed_has_its_reason_in_the_failed_calls() -> None:
    async def main() -> None:
        handlers = Handlers()
        server_end, client_end = bare_pair(ExplainingTransport)
        assert isinstance(client_end, ClosesWithReason)
        serving = asyncio.get_running_loop().create_task(
            Server(handlers, name="s", version="1").serve(server_end)
        )
        session = await _client().connect(client_end)
        pending = asyncio.get_running_loop().create_task(
            session.request_raw("tools/call", _call("wait"))
        )
        while not handlers.extras:
            await asyncio.sleep(0.01)
        await server_end.close()  # the peer goes away with the call unanswered
        with pytest.raises(ConnectionClosed, match="the peer exited with status 3"):
            await asyncio.wait_for(pending, 10)
        handlers.release.set()
        await session.close()
        await asyncio.wait_for(serving, 10)

    run(main())
