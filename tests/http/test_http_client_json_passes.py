"""What one call costs the client in JSON work: a tools/call over Streamable HTTP
encodes its params once, decodes the answer's envelope once and its result
once, and nothing else. The transport mirrors the body in headers (Mcp-Name,
MCP-Protocol-Version, Mcp-Param-*) from what the session hands it with the
bytes (mcpbind._core.wire.Message), never by decoding what the session has just
encoded; the envelope it decodes to find the response is the one the session
uses.

A pass is a call into msgspec's JSON encoders or decoders made by the client's
thread while the call is under way (counted with a profile hook: the server
runs under uvicorn in a thread of its own, which the hook does not see). Not
counted: jsonrpc's framing helpers, which encode the id and the method name
alone to splice them around the params."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import msgspec
import pytest
from support.http_servers import ThreadedServer, run, serving
from typing_extensions import override

from mcpbind._client.client import Client
from mcpbind._server.server import Server
from mcpbind._transports.http.client.streamable import connect_streamable_http
from mcpbind.http import http_app
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25 as handshake
from mcpbind_protocol import v2026_07_28 as mcp

MAX_PASSES = 3
FRAMING = {"request_bytes", "notification_bytes", "result_bytes"}
# A tool with an argument mirrored in a header: the call needs the argument's value.
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "note": {"type": "string"},
    },
}
ARGUMENTS = {"region": "eu-west", "note": "hello"}


class StatelessHandlers(mcp.ServerHandlers):
    @override
    async def list_tools(
        self, params: mcp.PaginatedRequestParams, ctx: RequestContext
    ) -> mcp.ListToolsResult:
        tool = mcp.Tool(name="routed", input_schema=mcp.ToolInputSchema(**SCHEMA))
        return mcp.ListToolsResult(tools=[tool], ttl_ms=0, cache_scope="private")

    @override
    async def call_tool(
        self, params: mcp.CallToolRequestParams, ctx: RequestContext
    ) -> mcp.CallToolResult | mcp.InputRequiredResult:
        return mcp.CallToolResult(content=[mcp.TextContent(text=str(params.arguments))])


class HandshakeHandlers(handshake.ServerHandlers):
    @override
    async def list_tools(
        self, params: handshake.PaginatedRequestParams, ctx: RequestContext
    ) -> handshake.ListToolsResult:
        tool = handshake.Tool(name="routed", input_schema=handshake.ToolInputSchema(**SCHEMA))
        return handshake.ListToolsResult(tools=[tool])

    @override
    async def call_tool(
        self, params: handshake.CallToolRequestParams, ctx: RequestContext
    ) -> handshake.CallToolResult:
        return handshake.CallToolResult(content=[handshake.TextContent(text=str(params.arguments))])


@pytest.fixture(scope="module", params=["sse", "json"])
def server(request: pytest.FixtureRequest) -> Iterator[ThreadedServer]:
    app = Server([HandshakeHandlers(), StatelessHandlers()], name="passes", version="1")
    with serving(http_app(app, json_response=request.param == "json")) as threaded:
        yield threaded


def _counter(passes: list[str]) -> Callable[[FrameType, str, Any], None]:
    def profile(frame: FrameType, event: str, called: Any) -> None:
        if event != "c_call":
            return
        owner = getattr(called, "__self__", None)
        name = getattr(called, "__name__", "")
        json_call = isinstance(owner, (msgspec.json.Decoder, msgspec.json.Encoder)) or (
            getattr(owner, "__name__", "").startswith("msgspec")
            and name in ("json_decode", "json_encode")
        )
        code = frame.f_code
        if json_call and code.co_name not in FRAMING:
            passes.append(f"{name} in {os.path.basename(code.co_filename)}:{code.co_name}")

    return profile


async def _passes_of_one_call(url: str, version: str, stubs: Any) -> list[str]:
    client = Client(name="counting", version="0", protocol_version=version)
    async with connect_streamable_http(client, url) as session:
        server = stubs.ClientStub(session)
        await server.list_tools()  # the x-mcp-header marks, learnt once
        await server.call_tool("routed", arguments=ARGUMENTS)  # decoders built, caches warm
        passes: list[str] = []
        sys.setprofile(_counter(passes))
        try:
            result = await server.call_tool("routed", arguments=ARGUMENTS)
        finally:
            sys.setprofile(None)
        assert result.content[0].text == str(ARGUMENTS)
        await asyncio.sleep(0)
    return passes


def test_a_stateless_tools_call_costs_the_client_at_most_three_json_passes(
    server: ThreadedServer,
) -> None:
    passes = run(_passes_of_one_call(server.url(), "2026-07-28", mcp))
    assert len(passes) <= MAX_PASSES, passes


def test_a_tools_call_in_a_handshake_session_costs_at_most_three_json_passes(
    server: ThreadedServer,
) -> None:
    passes = run(_passes_of_one_call(server.url(), "2025-11-25", handshake))
    assert len(passes) <= MAX_PASSES, passes
