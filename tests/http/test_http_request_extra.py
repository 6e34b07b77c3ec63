"""What the transport knows of a request reaches its handler typed, in
``ctx.extra`` (headers over HTTP, None elsewhere; a way to end the request's
SSE stream), and what the session answers reaches the transport typed: an
error's HTTP status and challenge come from the error object, never from the
response's text."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from support.http_servers import run, serving

from mcpbind._client.client import Client
from mcpbind._core import jsonrpc
from mcpbind._core.jsonrpc import McpError
from mcpbind._core.wire import RequestExtra
from mcpbind._server.server import Server
from mcpbind._transports.http.client.streamable import connect_http, connect_sse
from mcpbind._transports.stdio import StreamTransport
from mcpbind.auth._principal import Principal
from mcpbind.auth.server import ResourceServer
from mcpbind.auth.server._verifier import InvalidToken
from mcpbind.http import http_app
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25 as mcp
from mcpbind_protocol import v2026_07_28 as modern

SCOPE_DATA = {"error": "insufficient_scope", "scope": "mcp:admin"}
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
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
}


def _text(result: str) -> mcp.CallToolResult:
    return mcp.CallToolResult(content=[mcp.TextContent(text=result)])


class Handlers(mcp.ServerHandlers):
    async def list_tools(
        self, params: mcp.PaginatedRequestParams, ctx: RequestContext
    ) -> mcp.ListToolsResult:
        return mcp.ListToolsResult(tools=[])

    async def call_tool(
        self, params: mcp.CallToolRequestParams, ctx: RequestContext
    ) -> mcp.CallToolResult:
        if params.name == "headers":
            headers = ctx.extra.headers
            return _text("none" if headers is None else headers.get("x-tenant", "?"))
        if params.name == "mentions_scope":
            # A tool error whose text mentions the scope error: a result all the same.
            return mcp.CallToolResult(
                content=[
                    mcp.TextContent(text='{"error": "insufficient_scope"} insufficient_scope')
                ],
                is_error=True,
            )
        if params.name == "scope_error":
            raise McpError(jsonrpc.INSUFFICIENT_SCOPE, "needs admin", SCOPE_DATA)
        if params.name == "other_error":
            # The same code with other data (a backend's own use of it), its
            # text naming the scope error: an error, not a challenge.
            raise McpError(jsonrpc.INSUFFICIENT_SCOPE, "upstream: insufficient_scope", {"n": 1})
        if params.name == "log":
            await ctx.log("info", "on the request's stream")
            await asyncio.sleep(0.1)  # not answered within the POST's first pass: an SSE stream
            return _text("logged")
        if params.name == "close":
            close = ctx.extra.close_stream
            assert close is not None
            close()
            await asyncio.sleep(0.2)  # answered once the client has lost the stream
            return _text("after the stream closed")
        return _text("unknown")


class ModernHandlers(modern.ServerHandlers):
    async def list_tools(
        self, params: modern.PaginatedRequestParams, ctx: RequestContext
    ) -> modern.ListToolsResult:
        return modern.ListToolsResult(tools=[], ttl_ms=0, cache_scope="private")

    async def call_tool(
        self, params: modern.CallToolRequestParams, ctx: RequestContext
    ) -> modern.CallToolResult | modern.InputRequiredResult:
        if params.name == "mentions_scope":
            return modern.CallToolResult(
                content=[modern.TextContent(text="insufficient_scope")], is_error=True
            )
        if params.name == "scope_error":
            raise McpError(jsonrpc.INSUFFICIENT_SCOPE, "needs admin", SCOPE_DATA)
        if params.name == "other_error":
            raise McpError(jsonrpc.INSUFFICIENT_SCOPE, "upstream: insufficient_scope", {"n": 1})
        headers = ctx.extra.headers
        text = "none" if headers is None else headers.get("x-tenant", "?")
        return modern.CallToolResult(content=[modern.TextContent(text=text)])


class AnyToken:
    """Takes every bearer token as a principal with the base scope."""

    async def verify(self, token: str) -> Principal:
        if not token:
            raise InvalidToken("no token")
        return Principal(subject="user", scopes=frozenset({"mcp:tools"}))

    async def aclose(self) -> None:
        return None


def server() -> Server:
    return Server([Handlers(), ModernHandlers()], name="extra", version="1")


def call(request_id: int, name: str, meta: bool = False) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": {}}
    if meta:
        params["_meta"] = META
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def sse_messages(text: str) -> list[dict[str, Any]]:
    return [
        json.loads(line[6:])
        for line in text.splitlines()
        if line.startswith("data: ") and len(line) > 6
    ]


@pytest.fixture
def plain_server() -> Iterator[str]:
    with serving(http_app(server())) as served:
        yield served.url()


@pytest.fixture
def protected_server() -> Iterator[str]:
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    auth = ResourceServer(
        url, ["https://issuer.invalid"], AnyToken(), required_scopes=["mcp:tools"]
    )
    with serving(http_app(server(), json_response=True, auth=auth), port=port) as served:
        yield served.url()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def _session(client: httpx.AsyncClient, url: str, headers: dict[str, str]) -> dict[str, str]:
    opened = await client.post(url, json=INITIALIZE, headers=headers)
    assert opened.status_code == 200, opened.text
    session = {
        **headers,
        "mcp-session-id": opened.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-11-25",
    }
    done = await client.post(
        url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session
    )
    assert done.status_code == 202
    return session


def test_request_extra_carries_the_posts_headers_over_http(plain_server: str) -> None:
    """A handler reads the headers of the POST that carried its request, for a
    handshake session's request and for a 2026-07-28 request alike."""

    async def main() -> None:
        async with httpx.AsyncClient(timeout=30) as client:
            session = await _session(client, plain_server, {**ACCEPT, "x-tenant": "first"})
            answer = await client.post(
                plain_server, json=call(1, "headers"), headers={**session, "x-tenant": "acme"}
            )
            assert sse_messages(answer.text)[-1]["result"]["content"][0]["text"] == "acme"
            modern_headers = {
                **ACCEPT,
                "x-tenant": "modern",
                "mcp-protocol-version": "2026-07-28",
                "mcp-method": "tools/call",
                "mcp-name": "headers",
            }
            answer = await client.post(
                plain_server, json=call(2, "headers", meta=True), headers=modern_headers
            )
            assert answer.status_code == 200, answer.text
            found = sse_messages(answer.text) if "data: " in answer.text else [answer.json()]
            assert found[-1]["result"]["content"][0]["text"] == "modern"

    run(main())


def test_request_extra_carries_the_posts_headers_over_legacy_http_sse(plain_server: str) -> None:
    """Over the 2024-11-05 HTTP+SSE transport too, a handler reads the headers
    of the POST that carried its request (its session reader takes the
    message in: the headers travel with it, not in the reader's context)."""

    async def main() -> None:
        client = Client(name="t", version="0", protocol_version="2024-11-05")
        sse_url = plain_server.removesuffix("/mcp") + "/sse"
        async with connect_sse(client, sse_url, headers={"x-tenant": "legacy"}) as session:
            result = await session.request_raw(
                "tools/call", json.dumps({"name": "headers", "arguments": {}}).encode()
            )
        assert json.loads(bytes(result))["content"][0]["text"] == "legacy"

    run(main())


def test_request_extra_has_no_headers_over_stdio() -> None:
    """Over stdio there is no HTTP request: ``ctx.extra.headers`` is None, and
    the request has no stream to close."""

    async def main() -> None:
        ours, theirs = socket.socketpair()
        server_reader, server_writer = await asyncio.open_connection(sock=ours)
        reader, writer = await asyncio.open_connection(sock=theirs)
        serving_task = asyncio.get_running_loop().create_task(
            server().serve(StreamTransport(server_reader, server_writer))
        )
        writer.write(json.dumps(INITIALIZE).encode() + b"\n")
        assert b'"result"' in await reader.readline()
        writer.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        writer.write(json.dumps(call(1, "headers")).encode() + b"\n")
        answer = json.loads(await reader.readline())
        assert answer["result"]["content"][0]["text"] == "none"
        writer.close()
        await asyncio.wait_for(serving_task, 10)

    run(main())


def test_a_handler_closes_its_requests_sse_stream_through_ctx_extra(plain_server: str) -> None:
    """2025-11-25, transports: "The server MAY close the connection before
    sending the JSON-RPC response"; the client resumes the stream with
    Last-Event-ID and gets the response there."""

    async def main() -> None:
        async with httpx.AsyncClient(timeout=30) as client:
            session = await _session(client, plain_server, dict(ACCEPT))
            answer = await client.post(plain_server, json=call(7, "close"), headers=session)
            assert answer.status_code == 200
            assert not any("result" in m for m in sse_messages(answer.text))
            ids = [line[4:] for line in answer.text.splitlines() if line.startswith("id: ")]
            assert ids, answer.text  # the priming event's id, to resume from
            resumed = await client.get(
                plain_server,
                headers={
                    **session,
                    "accept": "text/event-stream",
                    "last-event-id": ids[-1],
                },
            )
            found = [m for m in sse_messages(resumed.text) if m.get("id") == 7]
            assert found and found[0]["result"]["content"][0]["text"] == "after the stream closed"

    run(main())


@pytest.mark.parametrize("wire", ["handshake", "modern"])
def test_an_insufficient_scope_status_comes_from_the_typed_error_not_its_text(
    protected_server: str, wire: str
) -> None:
    """A handler's insufficient-scope error gets the 403 and its
    ``WWW-Authenticate`` challenge (2025-11-25, authorization: "Servers SHOULD
    respond with 403 Forbidden and a WWW-Authenticate header with
    error="insufficient_scope""), while a tool error whose text says
    "insufficient_scope" is a result like any other (200), and an error whose
    text says it but whose data is no scope challenge stays an error (no 403)."""

    async def main() -> None:
        token = {**ACCEPT, "authorization": "Bearer any"}
        async with httpx.AsyncClient(timeout=30) as client:
            if wire == "handshake":
                headers = await _session(client, protected_server, token)
                meta = False
            else:
                headers = {
                    **token,
                    "mcp-protocol-version": "2026-07-28",
                    "mcp-method": "tools/call",
                }
                meta = True
            mentions = await client.post(
                protected_server,
                json=call(1, "mentions_scope", meta),
                headers={**headers, "mcp-name": "mentions_scope"} if meta else headers,
            )
            assert mentions.status_code == 200, mentions.text
            assert mentions.json()["result"]["isError"] is True
            assert "www-authenticate" not in mentions.headers
            other = await client.post(
                protected_server,
                json=call(3, "other_error", meta),
                headers={**headers, "mcp-name": "other_error"} if meta else headers,
            )
            assert other.status_code != 403, other.text
            assert "www-authenticate" not in other.headers
            assert other.json()["error"]["data"] == {"n": 1}
            refused = await client.post(
                protected_server,
                json=call(2, "scope_error", meta),
                headers={**headers, "mcp-name": "scope_error"} if meta else headers,
            )
            assert refused.status_code == 403, refused.text
            challenge = refused.headers["www-authenticate"]
            assert 'error="insufficient_scope"' in challenge and "mcp:admin" in challenge

    run(main())


class Listening(mcp.ClientHandlers):
    def __init__(self) -> None:
        self.extras: list[RequestExtra] = []

    async def on_logging_message(
        self, params: mcp.LoggingMessageNotificationParams, ctx: RequestContext
    ) -> None:
        self.extras.append(ctx.extra)


def test_a_client_handler_knows_which_request_of_ours_carried_the_servers_message(
    plain_server: str,
) -> None:
    """2025-11-25, transports: "These messages SHOULD relate to the originating
    client request": a client's handler of a log message sent on a request's
    response stream finds that request's id in ``ctx.extra.related``."""

    async def main() -> None:
        handlers = Listening()
        client = Client(name="t", version="0", protocol_version="2025-11-25", handlers=handlers)
        async with connect_http(client, plain_server, listen=False) as session:
            request_id = session.next_id()
            spec = session.client.bindings.revision("2025-11-25").all_methods["tools/call"]
            await session.request(
                spec, mcp.CallToolRequestParams(name="log", arguments={}), request_id=request_id
            )
            for _ in range(200):  # the notification's handler runs in a task of its own
                if handlers.extras:
                    break
                await asyncio.sleep(0.02)
        assert [extra.related for extra in handlers.extras] == [request_id]

    run(main())
