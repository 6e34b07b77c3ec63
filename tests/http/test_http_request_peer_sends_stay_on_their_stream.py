"""What a handler sends through ``ctx.peer`` goes on its own request's stream over
Streamable HTTP, also while another request of the same session sends at the same
time: the peer a handler is given is bound to its request, no context variable of the
task decides it.

Streamable HTTP: "The server MAY send JSON-RPC requests and notifications before sending
the JSON-RPC response. These messages SHOULD relate to the originating client request."
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from support.http_servers import run, serving

from mcpbind._server.server import Server
from mcpbind.http import http_app
from mcpbind.methods import Caller, RequestContext
from mcpbind_protocol import v2025_11_25 as mcp

ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
ROUNDS = 5


class Chatter(mcp.ServerHandlers):
    """``chatter`` sends ROUNDS log messages tagged with its argument through ctx.peer,
    taking turns with the other call in flight (both wait until both have started);
    ``relayed`` has them sent by one task that sends for every call (started by the
    first call: a task of that request's context), as a queue's consumer would."""

    def __init__(self) -> None:
        self.started = 0
        self.both = asyncio.Event()
        self.queue: asyncio.Queue[tuple[Caller, str, asyncio.Future[None]]] = asyncio.Queue()
        self.pump: asyncio.Task[None] | None = None

    async def send_all(self) -> None:
        while True:
            peer, text, sent = await self.queue.get()
            await mcp.ServerStub(peer).notify_logging_message(data=text, level="info")
            sent.set_result(None)

    async def list_tools(
        self, params: mcp.PaginatedRequestParams, ctx: RequestContext
    ) -> mcp.ListToolsResult:
        return mcp.ListToolsResult(tools=[])

    async def set_logging_level(
        self, params: mcp.SetLevelRequestParams, ctx: RequestContext
    ) -> mcp.Result:
        return mcp.Result()

    async def call_tool(
        self, params: mcp.CallToolRequestParams, ctx: RequestContext
    ) -> mcp.CallToolResult:
        tag = str((params.arguments or {})["tag"])
        self.started += 1
        if self.started == 2:
            self.both.set()
        await asyncio.wait_for(self.both.wait(), 30)
        if params.name == "relayed" and self.pump is None:
            self.pump = asyncio.create_task(self.send_all())
        peer = mcp.ServerStub(ctx.peer)
        for n in range(ROUNDS):
            if params.name == "relayed":
                sent = asyncio.get_running_loop().create_future()
                await self.queue.put((ctx.peer, f"{tag}:{n}", sent))
                await sent
            else:
                await peer.notify_logging_message(data=f"{tag}:{n}", level="info")
            await asyncio.sleep(0.01)  # the other call sends in between
        return mcp.CallToolResult(content=[mcp.TextContent(text=tag)])


@pytest.fixture
def url() -> Iterator[str]:
    with serving(http_app(Server(Chatter(), name="chatter", version="1"))) as served:
        yield served.url()


def sse_messages(text: str) -> list[dict[str, Any]]:
    return [
        json.loads(line[6:])
        for line in text.splitlines()
        if line.startswith("data: ") and len(line) > 6
    ]


@pytest.mark.parametrize("tool", ["chatter", "relayed"])
def test_concurrent_requests_peer_sends_never_cross(url: str, tool: str) -> None:
    async def scenario() -> None:
        async with httpx.AsyncClient(timeout=60) as client:
            opened = await client.post(url, json=INITIALIZE, headers=ACCEPT)
            assert opened.status_code == 200, opened.text
            session = {
                **ACCEPT,
                "mcp-session-id": opened.headers["mcp-session-id"],
                "mcp-protocol-version": "2025-11-25",
            }
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await client.post(url, json=initialized, headers=session)).status_code == 202

            async def call(request_id: int, tag: str) -> list[dict[str, Any]]:
                params = {"name": tool, "arguments": {"tag": tag}}
                body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call"}
                answer = await client.post(url, json={**body, "params": params}, headers=session)
                assert answer.status_code == 200, answer.text
                return sse_messages(answer.text)

            first, second = await asyncio.gather(call(1, "a"), call(2, "b"))
        for request_id, tag, stream in ((1, "a", first), (2, "b", second)):
            logged = [m["params"]["data"] for m in stream if m.get("method")]
            assert logged == [f"{tag}:{n}" for n in range(ROUNDS)]
            assert stream[-1]["id"] == request_id
            assert stream[-1]["result"]["content"][0]["text"] == tag

    run(scenario())
