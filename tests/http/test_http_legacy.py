"""The legacy HTTP+SSE transport (revision 2024-11-05): our client against our
server's /sse, the server seen through raw HTTP, and the backwards-compatibility
probe of connect_http (Streamable HTTP first, then GET on the same URL)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from support.http_servers import ThreadedServer, eventually, lowlevel_server, run, serving
from typing_extensions import override

from mcpbind._client.client import Client
from mcpbind._core import jsonrpc
from mcpbind._core.jsonrpc import ConnectionClosed, McpError
from mcpbind._transports.http.client.streamable import (
    LegacySSEClientTransport,
    SSEParser,
    StreamableHTTPClientTransport,
    connect_http,
    connect_sse,
)
from mcpbind._transports.http.server.legacy_sse import LegacySSEApp
from mcpbind.http import HttpOptions, http_app
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25 as mcp

LIMIT = 64 * 1024


async def refuse_everything(scope: Any, receive: Any, send: Any) -> None:
    """A web server that knows no MCP: 404 for every path, like a typo'd URL."""
    if scope["type"] != "http":
        return
    await send(
        {"type": "http.response.start", "status": 404, "headers": [(b"content-type", b"text/html")]}
    )
    await send({"type": "http.response.body", "body": b"<h1>Not Found</h1>"})


async def needs_login(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [(b"www-authenticate", b"Bearer")],
        }
    )
    await send({"type": "http.response.body", "body": b"login first"})


async def foreign_endpoint(scope: Any, receive: Any, send: Any) -> None:
    """A legacy SSE server whose endpoint event points at another origin."""
    if scope["type"] != "http":
        return
    if scope["method"] == "POST":
        await send({"type": "http.response.start", "status": 405, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/event-stream")],
        }
    )
    await send(
        {
            "type": "http.response.body",
            "body": b"event: endpoint\ndata: http://evil.example/messages\n\n",
            "more_body": True,
        }
    )
    while (await receive())["type"] != "http.disconnect":
        pass


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, ThreadedServer]]:
    with (
        serving(http_app(lowlevel_server(), options=HttpOptions(max_body_size=LIMIT))) as both,
        serving(
            LegacySSEApp(lowlevel_server(), options=HttpOptions(max_body_size=LIMIT))
        ) as legacy,
        serving(refuse_everything) as nothing,
        serving(needs_login) as login,
        serving(foreign_endpoint) as foreign,
    ):
        yield {
            "both": both,
            "legacy": legacy,
            "nothing": nothing,
            "login": login,
            "foreign": foreign,
        }


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


async def exercise(stub: mcp.ClientStub, handlers: Recording) -> None:
    """Tools, progress, logs, timeout, concurrency and resources over one session."""
    await stub.set_level("debug")
    assert texts(await stub.call_tool("echo", arguments={"text": "hi"})) == ["hi"]
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    result = await stub.call_tool("count", arguments={"steps": 3}, on_progress=on_progress)
    assert texts(result) == ["counted to 3"] and progress == [1, 2, 3]
    assert handlers.logs == ["reached step 1", "reached step 2", "reached step 3"]
    with pytest.raises(McpError) as timed_out:
        await stub.call_tool("sleep", arguments={"seconds": 30}, timeout=0.2)
    assert timed_out.value.code == jsonrpc.REQUEST_TIMEOUT
    echoes = await asyncio.gather(
        *(stub.call_tool("echo", arguments={"text": str(i)}) for i in range(50))
    )
    assert [texts(r) for r in echoes] == [[str(i)] for i in range(50)]
    readme = await stub.read_resource("memo://readme")
    assert isinstance(readme.contents[0], mcp.TextResourceContents)
    prompt = await stub.get_prompt("review", arguments={"code": "1"})
    assert prompt.messages[0].role == "user"


# ---------------------------------------------------------------- our client, our server


def test_connect_sse_to_our_server(servers: dict[str, ThreadedServer]) -> None:
    async def main() -> None:
        handlers = Recording()
        client = Client(name="legacy-test", version="0", handlers=handlers)
        async with connect_sse(client, servers["both"].url("/sse")) as session:
            assert isinstance(session.transport, LegacySSEClientTransport)
            assert session.transport.endpoint is not None
            assert session.transport.endpoint.startswith(
                servers["both"].url("/messages?session_id=")
            )
            assert session.protocol_version == "2025-11-25"
            await exercise(mcp.ClientStub(session), handlers)

    run(main())


def test_legacy_session_ends_with_the_stream(servers: dict[str, ThreadedServer]) -> None:
    server = servers["legacy"]
    app = server.app
    assert isinstance(app, LegacySSEApp)

    async def main() -> None:
        client = Client(name="legacy-test", version="0")
        async with connect_sse(client, server.url("/sse")) as session:
            stub = mcp.ClientStub(session)
            pending = asyncio.ensure_future(stub.call_tool("sleep", arguments={"seconds": 30}))
            await asyncio.sleep(0.1)
            transports = list(app.sessions.values())
            assert len(transports) == 1
            await server.call(transports[0].close)
            with pytest.raises(ConnectionClosed):
                await asyncio.wait_for(pending, 5)
            await eventually(lambda: session.is_closed, what="the session to end")

    run(main())


# ---------------------------------------------------------------- the probe


def test_probe_falls_back_to_legacy_only_server(servers: dict[str, ThreadedServer]) -> None:
    server = servers["legacy"]

    async def main() -> None:
        handlers = Recording()
        client = Client(name="probe-test", version="0", handlers=handlers)
        before = len(server.recorder.requests)
        async with connect_http(client, server.url("/sse")) as session:
            assert isinstance(session.transport, LegacySSEClientTransport)
            await exercise(mcp.ClientStub(session), handlers)
        first, second = server.recorder.requests[before : before + 2]
        assert (first[0], first[1]) == ("POST", "/sse")  # initialize: 405 from a legacy server
        assert (second[0], second[1]) == ("GET", "/sse")

    run(main())


def test_probe_uses_streamable_http_when_offered(servers: dict[str, ThreadedServer]) -> None:
    server = servers["both"]

    async def main() -> None:
        client = Client(name="probe-test", version="0")
        async with connect_http(client, server.url("/mcp")) as session:
            assert isinstance(session.transport, StreamableHTTPClientTransport)
            assert session.transport.session_id is not None
            await mcp.ClientStub(session).ping()
        # The same server's legacy endpoint, given as the URL: its 405 leads to the GET.
        async with connect_http(client, server.url("/sse")) as session:
            assert isinstance(session.transport, LegacySSEClientTransport)
            await mcp.ClientStub(session).ping()

    run(main())


def test_probe_reports_both_failures(servers: dict[str, ThreadedServer]) -> None:
    async def main() -> None:
        client = Client(name="probe-test", version="0")
        with pytest.raises(McpError) as failed:
            async with connect_http(client, servers["nothing"].url("/mcp")):
                pass
        message = failed.value.message
        assert "neither Streamable HTTP" in message and "HTTP 404" in message
        assert "GET " in message

    run(main())


def test_probe_does_not_fall_back_on_other_errors(servers: dict[str, ThreadedServer]) -> None:
    server = servers["login"]

    async def main() -> None:
        client = Client(name="probe-test", version="0")
        with pytest.raises(McpError) as failed:
            async with connect_http(client, server.url("/mcp")):
                pass
        assert "HTTP 401" in failed.value.message and "login first" in failed.value.message
        assert [m for m, _, _ in server.recorder.requests] == ["POST"]

    run(main())


def test_endpoint_on_another_origin_is_refused(servers: dict[str, ThreadedServer]) -> None:
    async def main() -> None:
        client = Client(name="probe-test", version="0")
        with pytest.raises(McpError) as failed:
            async with connect_sse(client, servers["foreign"].url("/sse")):
                pass
        assert "not on the same origin" in failed.value.message

    run(main())


# ---------------------------------------------------------------- the server, raw


def test_legacy_server_raw(servers: dict[str, ThreadedServer]) -> None:
    server = servers["legacy"]

    async def main() -> None:
        async with httpx.AsyncClient(timeout=10) as raw:
            assert (
                await raw.post(server.url("/messages?session_id=nope"), json={})
            ).status_code == 404
            assert (
                await raw.get(server.url("/sse"), headers={"origin": "http://evil.example"})
            ).status_code == 403
            assert (await raw.post(server.url("/sse"), json={})).status_code == 405
            async with raw.stream("GET", server.url("/sse")) as stream:
                assert stream.headers["content-type"] == "text/event-stream"
                parser = SSEParser()
                chunks = stream.aiter_bytes()
                events = parser.feed(await anext(chunks))
                assert events[0].event == "endpoint"
                endpoint = events[0].data
                assert endpoint.startswith("/messages?session_id=")
                assert len(endpoint.split("=", 1)[1]) * 4 >= 128  # hex: 4 bits a character
                target = server.url(endpoint)
                assert (await raw.post(target, content=b"{nope")).status_code == 400
                assert (
                    await raw.post(target, content=b"[" + b" " * LIMIT + b"]")
                ).status_code == 413
                ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
                assert (await raw.post(target, json=ping)).status_code == 202
                answer: list[Any] = []
                while not answer:
                    answer = [
                        json.loads(e.data)
                        for e in parser.feed(await anext(chunks))
                        if e.event == "message"
                    ]
                assert answer == [{"jsonrpc": "2.0", "id": 1, "result": {}}]

    run(main())
