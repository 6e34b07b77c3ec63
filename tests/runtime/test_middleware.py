"""One middleware concept on both sides (mcpbind.middleware): a server's middleware
sees every request and notification its handlers answer, with the params decoded as the
method's type; a client's (and a server's) sending middleware sees every request it sends
and its typed result or error, over stdio and Streamable HTTP; several run in the order
given, each resolved once per method; an McpError a middleware raises reaches the wire
with its code."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import pytest
from support.http_servers import LOWLEVEL_SERVER, eventually, lowlevel_server, run, serving
from support.lowlevel_modern_server import ModernHandlers
from support.transports import memory_pair
from typing_extensions import override

from mcpbind._client.client import Client, ClientSession, connect_stdio
from mcpbind._core import jsonrpc
from mcpbind._core.jsonrpc import McpError
from mcpbind._core.session import SessionContext
from mcpbind._server.server import Server
from mcpbind._transports.http.client.streamable import connect_streamable_http
from mcpbind._transports.stdio import StdioServerParameters
from mcpbind.http import http_app
from mcpbind.methods import MethodSpec, RequestContext
from mcpbind_protocol import v2025_11_25 as mcp
from mcpbind_protocol import v2026_07_28 as modern

H = TypeVar("H", bound=Callable[[Any, Any], Awaitable[Any]])


class Recorder:
    """A middleware for either side that records (method, params type, outcome) of each
    message, and how often it was asked for a method's handler."""

    def __init__(self, name: str = "", trace: list[str] | None = None) -> None:
        self.name = name
        self.trace = trace if trace is not None else []
        self.seen: list[tuple[str, type, Any]] = []
        self.resolved: dict[str, int] = {}

    def __call__(self, spec: MethodSpec[Any, Any], call_next: H) -> H:
        self.resolved[spec.method] = self.resolved.get(spec.method, 0) + 1

        async def around(params: Any, ctx: Any) -> Any:
            assert params is None or isinstance(params, spec.params)
            self.trace.append(f"{self.name}>")
            try:
                result = await call_next(params, ctx)
            except McpError as error:
                self.seen.append((spec.method, type(params), error.code))
                raise
            finally:
                self.trace.append(f"<{self.name}")
            self.seen.append((spec.method, type(params), type(result)))
            return result

        return around  # type: ignore[return-value]


class Tools(mcp.ServerHandlers):
    def __init__(self) -> None:
        self.roots_changed = asyncio.Event()

    @override
    async def list_tools(
        self, params: mcp.PaginatedRequestParams, ctx: RequestContext
    ) -> mcp.ListToolsResult:
        return mcp.ListToolsResult(tools=[])

    @override
    async def call_tool(
        self, params: mcp.CallToolRequestParams, ctx: RequestContext
    ) -> mcp.CallToolResult:
        if params.name == "roots":  # asks the client: the server's sending side
            roots = await mcp.ServerStub(ctx.peer).list_roots()
            return mcp.CallToolResult(content=[mcp.TextContent(text=roots.roots[0].uri)])
        return mcp.CallToolResult(content=[mcp.TextContent(text=params.name)])

    @override
    async def on_roots_list_changed(
        self, params: mcp.NotificationParams, ctx: RequestContext
    ) -> None:
        self.roots_changed.set()


class Roots(mcp.ClientHandlers):
    @override
    async def list_roots(
        self, params: mcp.RequestParams, ctx: RequestContext
    ) -> mcp.ListRootsResult:
        return mcp.ListRootsResult(roots=[mcp.Root(uri="file:///work")])


@asynccontextmanager
async def in_memory(server: Server, client: Client) -> AsyncIterator[ClientSession]:
    server_end, client_end = memory_pair("server", "client")
    serving_task = asyncio.create_task(server.serve(server_end))
    session = await client.connect(client_end)
    try:
        yield session
    finally:
        await session.close()
        await asyncio.wait_for(serving_task, 10)


def test_server_middleware_sees_every_request_and_notification_with_typed_params() -> None:
    async def main() -> None:
        recorder = Recorder()
        handlers = Tools()
        server = Server(handlers, name="s", version="1", middleware=[recorder])
        client = Client(
            name="c",
            version="1",
            handlers=Roots(),
            protocol_version="2025-11-25",
            capabilities={"roots": {"listChanged": True}},
        )
        async with in_memory(server, client) as session:
            stub = mcp.ClientStub(session)
            await stub.list_tools()
            await stub.call_tool(name="echo")
            await stub.notify_roots_list_changed()
            await asyncio.wait_for(handlers.roots_changed.wait(), 30)
            await eventually(lambda: len(recorder.seen) == 3, what="the notification's record")
        assert recorder.seen == [
            ("tools/list", mcp.PaginatedRequestParams, mcp.ListToolsResult),
            ("tools/call", mcp.CallToolRequestParams, mcp.CallToolResult),
            ("notifications/roots/list_changed", mcp.NotificationParams, type(None)),
        ]

    run(main())


def test_server_middleware_sees_the_requests_of_the_per_request_revision() -> None:
    """At 2026-07-28 the same middleware runs inside the per-request answers: it sees
    the request's params as 2026-07-28 types and the handler's result."""

    async def main() -> None:
        recorder = Recorder()
        server = modern_server(middleware=[recorder])
        async with in_memory(server, Client(name="c", version="1")) as session:
            assert session.stateless
            result = await modern.ClientStub(session).call_tool(
                name="echo", arguments={"text": "hi"}
            )
            assert isinstance(result, modern.CallToolResult)
        assert recorder.seen == [
            ("tools/call", modern.CallToolRequestParams, modern.CallToolResult)
        ]

    run(main())


def test_client_middleware_sees_the_requests_of_the_per_request_revision() -> None:
    """A 2026-07-28 client's requests go through its sending middleware with their
    ``_meta`` envelope, server/discover first."""

    async def main() -> None:
        recorder = Recorder()
        client = Client(name="c", version="1", sending=[recorder])
        async with in_memory(modern_server(), client) as session:
            await modern.ClientStub(session).call_tool(name="echo", arguments={"text": "hi"})
        assert recorder.seen == [
            ("server/discover", modern.RequestParams, modern.DiscoverResult),
            ("tools/call", modern.CallToolRequestParams, modern.CallToolResult),
        ]

    run(main())


@asynccontextmanager
async def over_stdio(client: Client) -> AsyncIterator[ClientSession]:
    parameters = StdioServerParameters(command=sys.executable, args=[str(LOWLEVEL_SERVER)])
    async with connect_stdio(client, parameters) as session:
        yield session


@asynccontextmanager
async def over_http(client: Client) -> AsyncIterator[ClientSession]:
    with serving(http_app(lowlevel_server())) as server:
        async with connect_streamable_http(client, server.url()) as session:
            yield session


@pytest.mark.parametrize("connect", [over_stdio, over_http], ids=["stdio", "http"])
def test_client_middleware_sees_every_request_sent_and_its_typed_result_or_error(
    connect: Callable[[Client], Any],
) -> None:
    async def main() -> None:
        recorder = Recorder()
        client = Client(name="c", version="1", protocol_version="2025-11-25", sending=[recorder])
        async with connect(client) as session:
            stub = mcp.ClientStub(session)
            await stub.list_tools()
            await stub.get_prompt(name="review", arguments={"code": "x"})
            with pytest.raises(McpError) as refused:
                await stub.get_prompt(name="nothing")
            assert refused.value.code == jsonrpc.INVALID_PARAMS
        assert recorder.seen == [
            ("initialize", mcp.InitializeRequestParams, mcp.InitializeResult),
            ("tools/list", mcp.PaginatedRequestParams, mcp.ListToolsResult),
            ("prompts/get", mcp.GetPromptRequestParams, mcp.GetPromptResult),
            ("prompts/get", mcp.GetPromptRequestParams, jsonrpc.INVALID_PARAMS),
        ]

    run(main())


def test_server_sending_middleware_sees_the_requests_to_its_client() -> None:
    """A server's requests to its client (here roots/list, asked in a tool call) go
    through its sending middleware; the client's middleware sees them arrive."""

    async def main() -> None:
        sent, received = Recorder(), Recorder()
        server = Server(Tools(), name="s", version="1", sending=[sent])
        client = Client(
            name="c",
            version="1",
            handlers=Roots(),
            protocol_version="2025-11-25",
            middleware=[received],
        )
        async with in_memory(server, client) as session:
            result = await mcp.ClientStub(session).call_tool(name="roots")
            assert result.content[0].text == "file:///work"  # type: ignore[union-attr]
        assert [(m, r) for m, _, r in sent.seen] == [("roots/list", mcp.ListRootsResult)]
        assert [(m, r) for m, _, r in received.seen] == [("roots/list", mcp.ListRootsResult)]

    run(main())


def test_several_middleware_run_in_the_order_given_each_resolved_once_per_method() -> None:
    async def main() -> None:
        trace: list[str] = []
        outer, inner = Recorder("server-outer", trace), Recorder("server-inner", trace)
        first, second = Recorder("client-first", trace), Recorder("client-second", trace)
        server = Server(Tools(), name="s", version="1", middleware=[outer, inner])
        client = Client(
            name="c", version="1", protocol_version="2025-11-25", sending=[first, second]
        )
        async with in_memory(server, client) as session:
            trace.clear()  # initialize: the client's alone
            await mcp.ClientStub(session).call_tool(name="echo")
            assert trace == [
                "client-first>",
                "client-second>",
                "server-outer>",
                "server-inner>",
                "<server-inner",
                "<server-outer",
                "<client-second",
                "<client-first",
            ]
            for _ in range(5):
                await mcp.ClientStub(session).call_tool(name="echo")
        for each in (outer, inner, first, second):
            assert each.resolved["tools/call"] == 1

    run(main())


def test_a_server_without_middleware_keeps_its_handlers_unwrapped() -> None:
    server = Server(Tools(), name="s", version="1")
    spec = mcp.methods.TOOLS_CALL
    handler = Tools().call_tool
    assert server.wrapped(spec, handler) is handler
    assert server.senders is None


def test_an_mcp_error_a_middleware_raises_reaches_the_wire_with_its_code() -> None:
    """JSON-RPC 2.0: "When a rpc call encounters an error, the Response Object MUST
    contain the error member"; the middleware's code and message are that error."""

    def quota(spec: MethodSpec[Any, Any], call_next: H) -> H:
        async def refuse(params: Any, ctx: SessionContext) -> Any:
            raise McpError(-32042, "Quota exceeded", {"retryAfter": 60})

        return refuse if spec.method == "tools/call" else call_next  # type: ignore[return-value]

    async def main() -> None:
        server_end, client_end = memory_pair("server", "client")
        server = Server(Tools(), name="s", version="1", middleware=[quota])
        serving_task = asyncio.create_task(server.serve(server_end))
        client = Client(name="c", version="1", protocol_version="2025-11-25")
        session = await client.connect(client_end)
        try:
            with pytest.raises(McpError) as refused:
                await mcp.ClientStub(session).call_tool(name="echo")
            assert refused.value.code == -32042
            assert (await mcp.ClientStub(session).list_tools()).tools == []
        finally:
            await session.close()
            await asyncio.wait_for(serving_task, 10)
        errors = [json.loads(data) for data in server_end.sent if b'"error"' in data]
        assert [each["error"] for each in errors] == [
            {"code": -32042, "message": "Quota exceeded", "data": {"retryAfter": 60}}
        ]

    run(main())


def modern_server(**options: Any) -> Server:
    return Server(ModernHandlers(), name="s", version="1", **options)
