"""Streamable HTTP at MCP 2026-07-28: our ASGI app under uvicorn, seen through
raw HTTP (httpx) and through our client.

Each request is one POST without a session. Its headers must mirror its body
(Mcp-Method, Mcp-Name, MCP-Protocol-Version, Mcp-Param-*), the HTTP status
follows the answer, notifications before the response come as SSE, a
subscriptions/listen stream stays open with the notifications asked for, and
closing a stream cancels its request. Clients of the handshake revisions are
still served with sessions by the same app.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
from collections.abc import AsyncGenerator, Iterator
from typing import Any

import httpx
import msgspec
import pytest
from support.http_servers import ThreadedServer, eventually, lowlevel_server, run, serving
from typing_extensions import override

from mcpbind._client.client import Client
from mcpbind._core import jsonrpc, stepping
from mcpbind._core.jsonrpc import ConnectionClosed, McpError
from mcpbind._core.limits import ClientIdentity
from mcpbind._core.session import Session, first_step
from mcpbind._core.wire import Message, RequestExtra
from mcpbind._server.server import Server
from mcpbind._transports.http.client.streamable import (
    SSEParser,
    StreamableHTTPClientTransport,
    connect_http,
    connect_streamable_http,
)
from mcpbind._transports.http.headers import (
    InvalidAnnotation,
    decode_value,
    encode_value,
    param_headers,
)
from mcpbind._transports.http.server.streamable import StreamableHTTPApp
from mcpbind.http import HttpOptions, http_app
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25 as legacy
from mcpbind_protocol import v2026_07_28 as mcp

MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
ACCEPT = "application/json, text/event-stream"
LIMIT = 64 * 1024

META: dict[str, Any] = {
    VERSION_KEY: MODERN,
    CAPABILITIES_KEY: {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
}

# Arguments mirrored in Mcp-Param-* headers, one of each kind, one nested.
ROUTED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "loud": {"type": "boolean", "x-mcp-header": "Loud"},
        "where": {
            "type": "object",
            "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}},
        },
        "note": {"type": "string"},
    },
}
# A number may not be mirrored: clients leave this tool out.
INVALID_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"score": {"type": "number", "x-mcp-header": "Score"}},
}


def _text(value: str) -> mcp.TextContent:
    return mcp.TextContent(text=value)


class ModernHandlers(mcp.ServerHandlers):
    def __init__(self) -> None:
        self.cancelled: list[str] = []
        self.started: list[str] = []
        self.listed_by: list[Any] = []  # the client info of each tools/list
        self.kept: list[RequestContext] = (
            []
        )  # the contexts of "keep" calls, kept past their request

    @override
    async def list_tools(
        self, params: mcp.PaginatedRequestParams, ctx: RequestContext
    ) -> mcp.ListToolsResult:
        self.listed_by.append(getattr(ctx.client_info, "name", None))
        plain = mcp.ToolInputSchema(type="object")
        tools = [
            mcp.Tool(name=name, input_schema=plain)
            for name in ("echo", "progress", "slow", "ask", "fail", "log")
        ]
        tools.append(mcp.Tool(name="routed", input_schema=mcp.ToolInputSchema(**ROUTED_SCHEMA)))
        tools.append(mcp.Tool(name="invalid", input_schema=mcp.ToolInputSchema(**INVALID_SCHEMA)))
        return mcp.ListToolsResult(tools=tools, ttl_ms=0, cache_scope="private")

    @override
    async def call_tool(
        self, params: mcp.CallToolRequestParams, ctx: RequestContext
    ) -> mcp.CallToolResult | mcp.InputRequiredResult:
        arguments = params.arguments if isinstance(params.arguments, dict) else {}
        if params.name in ("echo", "routed", "invalid"):
            return mcp.CallToolResult(content=[_text(json.dumps(arguments, sort_keys=True))])
        if params.name == "keep":
            self.kept.append(ctx)
            return mcp.CallToolResult(content=[_text("kept")])
        if params.name == "progress":
            steps = int(arguments.get("steps", 3))
            for step in range(1, steps + 1):
                await ctx.report_progress(step, steps, f"step {step}")
                await asyncio.sleep(float(arguments.get("pause", 0.01)))
            return mcp.CallToolResult(content=[_text(f"done {steps}")])
        if params.name == "slow":
            tag = str(arguments.get("tag", ""))
            self.started.append(tag)
            try:
                await asyncio.sleep(float(arguments.get("seconds", 30)))
            except asyncio.CancelledError:
                self.cancelled.append(tag)
                raise
            return mcp.CallToolResult(content=[_text(f"slept {tag}")])
        if params.name == "timed":
            # A timeout entered before the first wait belongs to the task the
            # handler goes on in: it must cancel this handler, not another.
            task = asyncio.current_task()
            try:
                async with asyncio.timeout(0.05):
                    await asyncio.sleep(30)
            except TimeoutError:
                same = asyncio.current_task() is task
                return mcp.CallToolResult(
                    content=[_text("timed out in one task" if same else "moved to another task")]
                )
            return mcp.CallToolResult(content=[_text("not timed out")])
        if params.name == "ask":
            request = mcp.ElicitRequest(
                params=mcp.ElicitRequestFormParams(
                    message="Name?",
                    requested_schema=mcp.ElicitRequestFormParamsRequestedSchema(
                        properties={"name": mcp.StringSchema()}
                    ),
                )
            )
            return mcp.InputRequiredResult(input_requests={"name": request})
        if params.name == "log":
            for _ in range(int(arguments.get("times", 1))):
                await ctx.log("info", "logged")
            return mcp.CallToolResult(content=[_text("logged")])
        raise McpError(jsonrpc.INTERNAL_ERROR, "the tool failed on purpose")

    @override
    async def read_resource(
        self, params: mcp.ReadResourceRequestParams, ctx: RequestContext
    ) -> mcp.ReadResourceResult | mcp.InputRequiredResult:
        return mcp.ReadResourceResult(
            contents=[mcp.TextResourceContents(uri=params.uri, text="read")],
            ttl_ms=0,
            cache_scope="private",
        )

    @override
    async def list_resources(
        self, params: mcp.PaginatedRequestParams, ctx: RequestContext
    ) -> mcp.ListResourcesResult:
        return mcp.ListResourcesResult(resources=[], ttl_ms=0, cache_scope="private")

    @override
    async def list_prompts(
        self, params: mcp.PaginatedRequestParams, ctx: RequestContext
    ) -> mcp.ListPromptsResult:
        return mcp.ListPromptsResult(prompts=[], ttl_ms=0, cache_scope="private")

    @override
    async def get_prompt(
        self, params: mcp.GetPromptRequestParams, ctx: RequestContext
    ) -> mcp.GetPromptResult | mcp.InputRequiredResult:
        return mcp.GetPromptResult(
            messages=[mcp.PromptMessage(role="user", content=_text(params.name))]
        )


class LegacyHandlers(legacy.ServerHandlers):
    @override
    async def list_tools(
        self, params: legacy.PaginatedRequestParams, ctx: RequestContext
    ) -> legacy.ListToolsResult:
        return legacy.ListToolsResult(
            tools=[legacy.Tool(name="echo", input_schema=legacy.ToolInputSchema(type="object"))]
        )

    @override
    async def call_tool(
        self, params: legacy.CallToolRequestParams, ctx: RequestContext
    ) -> legacy.CallToolResult:
        arguments = params.arguments if isinstance(params.arguments, dict) else {}
        return legacy.CallToolResult(
            content=[legacy.TextContent(text=json.dumps(arguments, sort_keys=True))]
        )


class Peer:
    """Our server over HTTP, and what the tests look at."""

    def __init__(self) -> None:
        self.handlers = ModernHandlers()
        self.server = Server([LegacyHandlers(), self.handlers], name="http-modern", version="1.0")
        self.app = http_app(self.server, options=HttpOptions(max_body_size=LIMIT))
        self.http = ThreadedServer(self.app).start()

    @property
    def streamable(self) -> StreamableHTTPApp:
        return self.app.streamable

    def url(self, path: str = "/mcp") -> str:
        return self.http.url(path)


@pytest.fixture(scope="module")
def peer() -> Iterator[Peer]:
    server = Peer()
    try:
        yield server
    finally:
        server.http.stop()


def request(
    request_id: int, method: str, params: dict[str, Any] | None = None, meta: Any = META
) -> dict[str, Any]:
    body: dict[str, Any] = {**(params or {})}
    if meta is not None:
        body["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": body}


def headers_for(message: dict[str, Any], **extra: str | None) -> dict[str, str]:
    """The headers a conforming client sends with ``message``; ``extra``
    replaces (None: removes) some of them."""
    params = message.get("params", {})
    result = {
        "accept": ACCEPT,
        "content-type": "application/json",
        "mcp-protocol-version": str(params.get("_meta", {}).get(VERSION_KEY, MODERN)),
        "mcp-method": message["method"],
    }
    name = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}.get(
        message["method"]
    )
    if name is not None and name in params:
        result["mcp-name"] = encode_value(params[name])
    for key, value in extra.items():
        key = key.replace("_", "-")
        result.pop(key.lower(), None)
        if value is not None:
            result[key] = value
    return result


def sse_messages(body: bytes) -> list[Any]:
    return [json.loads(event.data) for event in SSEParser().feed(body) if event.data]


def b64(value: str) -> str:
    return "=?base64?" + base64.b64encode(value.encode()).decode() + "?="


async def post(url: str, message: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
    if any(value != value.strip(" \t") for value in headers.values()):
        return await post_verbatim(url, message, headers)
    async with httpx.AsyncClient(timeout=10) as raw:
        return await raw.post(url, content=json.dumps(message), headers=headers)


async def post_verbatim(
    url: str, message: dict[str, Any], headers: dict[str, str]
) -> httpx.Response:
    """A POST written on the socket as it is (httpx refuses header values
    with surrounding whitespace, which HTTP allows and servers must ignore)."""
    address = httpx.URL(url)
    assert address.port is not None
    reader, writer = await asyncio.open_connection(address.host, address.port)
    body = json.dumps(message).encode()
    lines = [
        f"POST {address.path} HTTP/1.1",
        f"host: {address.host}:{address.port}",
        "connection: close",
    ]
    lines += [
        f"content-length: {len(body)}",
        *(f"{name}: {value}" for name, value in headers.items()),
    ]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
    try:
        head, _, content = (await reader.read()).partition(b"\r\n\r\n")
    finally:
        writer.close()
    status_line, *field_lines = head.decode("latin-1").split("\r\n")
    fields = {name.lower(): value for name, value in (line.split(": ", 1) for line in field_lines)}
    if fields.get("transfer-encoding") == "chunked":
        chunks, rest = b"", content
        while True:
            size, _, rest = rest.partition(b"\r\n")
            if int(size, 16) == 0:
                break
            chunks, rest = chunks + rest[: int(size, 16)], rest[int(size, 16) + 2 :]
        content = chunks
    return httpx.Response(int(status_line.split()[1]), headers=fields, content=content)


def modern_client(handlers: object | None = None, **options: Any) -> Client:
    return Client(name="http-modern-test", version="0", handlers=handlers, **options)


@pytest.fixture(autouse=True)
def all_requests_end(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test leaves no 2026-07-28 request running in the shared server."""
    yield
    if "peer" in request.fixturenames:
        peer: Peer = request.getfixturevalue("peer")

        async def settled() -> None:
            await eventually(
                lambda: peer.streamable.requests_in_flight == 0, what="no request in flight"
            )

        run(settled())


# ---------------------------------------------------------------- the header helpers


def test_header_values_are_encoded_when_they_cannot_go_as_they_are() -> None:
    assert encode_value("us-west1") == "us-west1"
    assert encode_value("us west 1") == "us west 1"
    assert encode_value("Hello, 世界") == "=?base64?SGVsbG8sIOS4lueVjA==?="
    assert encode_value(" padded ") == "=?base64?IHBhZGRlZCA=?="
    assert encode_value("line1\nline2") == "=?base64?bGluZTEKbGluZTI=?="
    assert encode_value("=?base64?literal?=") == "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
    assert encode_value("\tindented") == b64("\tindented")
    for value in ("us-west1", "Hello, 世界", " padded ", "=?base64?literal?=", ""):
        assert decode_value(encode_value(value)) == value
    assert decode_value("  us-west1 \t") == "us-west1"
    assert decode_value("=?base64?SGVsbG8?=") is None  # bad padding
    assert decode_value("=?base64?SGVs!!!bG8=?=") is None  # not the alphabet
    assert decode_value("SGVsbG8=") == "SGVsbG8="  # no sentinel: literal
    assert decode_value("=?base64?SGVsbG8=") == "=?base64?SGVsbG8="
    assert decode_value("caf\xe9") is None  # not ASCII


@pytest.mark.parametrize(
    "schema",
    [
        {"properties": {"v": {"type": "string", "x-mcp-header": ""}}},
        {"properties": {"v": {"type": "object", "x-mcp-header": "V"}}},
        {"properties": {"v": {"type": "array", "items": {"type": "string"}, "x-mcp-header": "V"}}},
        {"properties": {"v": {"type": "null", "x-mcp-header": "V"}}},
        {"properties": {"v": {"type": "number", "x-mcp-header": "V"}}},
        {
            "properties": {
                "a": {"type": "string", "x-mcp-header": "Same"},
                "b": {"type": "string", "x-mcp-header": "same"},
            }
        },
        {"properties": {"v": {"type": "string", "x-mcp-header": "My Region"}}},
        {"properties": {"v": {"type": "string", "x-mcp-header": "Region:Primary"}}},
        {"properties": {"v": {"type": "string", "x-mcp-header": "Région"}}},
        {"properties": {"v": {"type": "string", "x-mcp-header": "Region\t1"}}},
        {"properties": {"v": {"type": "array", "items": {"type": "string", "x-mcp-header": "V"}}}},
        {"properties": {"v": {"oneOf": [{"type": "string", "x-mcp-header": "V"}]}}},
        {"$defs": {"v": {"type": "string", "x-mcp-header": "V"}}},
        {"type": "string", "x-mcp-header": "Root"},
    ],
)
def test_invalid_x_mcp_header_annotations(schema: dict[str, Any]) -> None:
    with pytest.raises(InvalidAnnotation):
        param_headers({"type": "object", **schema})


def test_valid_x_mcp_header_annotations() -> None:
    found = param_headers(ROUTED_SCHEMA)
    assert [(p.name, p.path, p.header) for p in found] == [
        ("Region", ("region",), "mcp-param-region"),
        ("Count", ("count",), "mcp-param-count"),
        ("Loud", ("loud",), "mcp-param-loud"),
        ("Zone", ("where", "zone"), "mcp-param-zone"),
    ]
    assert found[3].value_in({"where": {"zone": "z1"}}) == "z1"
    assert found[3].value_in({"where": "flat"}) is None
    assert (
        param_headers({"type": "object", "properties": {"v": {"enum": [{"x-mcp-header": "data"}]}}})
        == []
    )


# ---------------------------------------------------------------- standard headers


CALL = request(10, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
LIST = request(11, "tools/list")


@pytest.mark.parametrize(
    ("message", "changes", "accepted"),
    [
        (LIST, {}, True),
        (LIST, {"mcp-method": None}, False),
        (LIST, {"mcp-method": "prompts/list"}, False),
        (LIST, {"mcp-method": "TOOLS/LIST"}, False),  # values are case-sensitive
        (LIST, {"mcp-method": None, "MCP-METHOD": "tools/list"}, True),  # names are not
        (LIST, {"mcp-method": "  tools/list \t"}, True),
        (LIST, {"mcp-protocol-version": None}, False),
        (LIST, {"mcp-protocol-version": "2025-11-25x"}, False),
        (CALL, {}, True),
        (CALL, {"mcp-name": None}, False),
        (CALL, {"mcp-name": "wrong_tool_name"}, False),
        (CALL, {"mcp-name": "  echo  "}, True),
        (CALL, {"mcp-name": b64("echo")}, True),
        (CALL, {"mcp-name": "=?base64?ZWNobw?="}, False),  # bad padding
        (CALL, {"mcp-name": b64("echo ")}, False),
        (request(12, "resources/read", {"uri": "memo://a b/ü"}), {}, True),
        (request(12, "resources/read", {"uri": "memo://x"}), {"mcp-name": "memo://y"}, False),
        (request(13, "prompts/get", {"name": "review"}), {}, True),
        (request(13, "prompts/get", {"name": "review"}), {"mcp-name": None}, False),
    ],
)
def test_standard_headers_must_mirror_the_body(
    peer: Peer, message: dict[str, Any], changes: dict[str, str | None], accepted: bool
) -> None:
    async def main() -> None:
        response = await post(peer.url(), message, headers_for(message, **changes))
        answer = response.json()
        assert answer["id"] == message["id"]
        if accepted:
            assert response.status_code == 200 and "result" in answer, answer
        else:
            assert response.status_code == 400
            assert answer["error"]["code"] == jsonrpc.HEADER_MISMATCH == -32020
            assert answer["error"]["message"].startswith("Header mismatch: ")

    run(main())


def test_protocol_version_header_and_meta(peer: Peer) -> None:
    async def main() -> None:
        # Header and _meta agree on a version the server does not speak.
        unknown = request(20, "server/discover", meta={**META, VERSION_KEY: "v999.0.0"})
        response = await post(peer.url(), unknown, headers_for(unknown))
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["code"] == jsonrpc.UNSUPPORTED_PROTOCOL_VERSION
        assert error["data"] == {"requested": "v999.0.0", "supported": [MODERN]}
        # They disagree.
        response = await post(
            peer.url(), unknown, headers_for(unknown, **{"mcp-protocol-version": MODERN})
        )
        assert (
            response.status_code == 400
            and response.json()["error"]["code"] == jsonrpc.HEADER_MISMATCH
        )
        # No version in _meta: the request is invalid, whatever the header says.
        metas: list[dict[str, Any] | None] = [None, {CAPABILITIES_KEY: {}}]
        for meta in metas:
            bare = request(21, "server/discover", meta=meta)
            response = await post(peer.url(), bare, headers_for(bare))
            assert response.status_code == 400
            assert (
                response.json()["error"]["code"] == jsonrpc.INVALID_PARAMS
                and response.json()["id"] == 21
            )

    run(main())


# ---------------------------------------------------------------- Mcp-Param headers


ROUTED_ARGUMENTS = {
    "region": "us-west1",
    "count": 42,
    "loud": False,
    "where": {"zone": "z1"},
    "note": "x",
}
ROUTED_HEADERS = {
    "Mcp-Param-Region": "us-west1",
    "Mcp-Param-Count": "42",
    "Mcp-Param-Loud": "false",
    "Mcp-Param-Zone": "z1",
}


@pytest.mark.parametrize(
    ("arguments", "changes", "accepted"),
    [
        ({}, {}, True),
        ({}, {"Mcp-Param-Region": None}, False),  # the value is in the body: the header must be too
        ({}, {"Mcp-Param-Region": "eu-west1"}, False),
        ({}, {"Mcp-Param-Zone": None}, False),
        ({}, {"Mcp-Param-Count": "42.0"}, True),  # compared as numbers
        ({}, {"Mcp-Param-Count": "43"}, False),
        ({}, {"Mcp-Param-Count": "forty-two"}, False),
        ({}, {"Mcp-Param-Loud": "False"}, False),
        ({}, {"mcp-param-region": "  us-west1 "}, True),
        ({}, {"Mcp-Param-Region": b64("us-west1")}, True),
        ({}, {"Mcp-Param-Region": "=?base64?dXMtd2VzdDE?="}, False),  # bad padding
        ({}, {"Mcp-Param-Region": "=?base64?dXMt!!!d2VzdDE=?="}, False),
        ({"region": "Hello, 世界"}, {"Mcp-Param-Region": b64("Hello, 世界")}, True),
        (
            {"region": "dXMtd2VzdDE="},
            {"Mcp-Param-Region": "dXMtd2VzdDE="},
            True,
        ),  # no sentinel: literal
        (
            {"region": None, "count": None},
            {"Mcp-Param-Region": None, "Mcp-Param-Count": None},
            True,
        ),
        (
            {"where": None},
            {"Mcp-Param-Zone": None},
            True,
        ),  # nothing at the path: no header expected
        ({}, {"Mcp-Param-Unknown": "anything"}, True),
    ],
)
def test_mcp_param_headers_must_mirror_the_arguments(
    peer: Peer, arguments: dict[str, Any], changes: dict[str, str | None], accepted: bool
) -> None:
    async def main() -> None:
        merged = {k: v for k, v in {**ROUTED_ARGUMENTS, **arguments}.items() if v is not None}
        message = request(30, "tools/call", {"name": "routed", "arguments": merged})
        headers = {**headers_for(message), **ROUTED_HEADERS}
        for key, value in changes.items():
            for existing in [k for k in headers if k.lower() == key.lower()]:
                del headers[existing]
            if value is not None:
                headers[key] = value
        response = await post(peer.url(), message, headers)
        answer = response.json()
        if accepted:
            assert (
                response.status_code == 200
                and json.loads(answer["result"]["content"][0]["text"]) == merged
            )
        else:
            assert (
                response.status_code == 400 and answer["error"]["code"] == jsonrpc.HEADER_MISMATCH
            )
            assert "Mcp-Param-" in answer["error"]["message"]

    run(main())


def test_mcp_param_headers_are_checked_against_the_servers_own_listing() -> None:
    """The tools are listed with the app's own _meta: a caller whose _meta
    would fail a listing neither skips the check nor decides what it sees."""

    async def main(url: str) -> None:
        bad = {VERSION_KEY: MODERN}  # no client capabilities: a tools/list with it fails
        message = request(
            31, "tools/call", {"name": "routed", "arguments": ROUTED_ARGUMENTS}, meta=bad
        )
        response = await post(url, message, headers_for(message))
        assert response.status_code == 400
        answer = response.json()
        assert (
            answer["error"]["code"] == jsonrpc.HEADER_MISMATCH
            and "Mcp-Param-Region" in answer["error"]["message"]
        )
        assert handlers.listed_by == ["mcp-runtime-header-check"]

    handlers = ModernHandlers()
    with serving(http_app(Server([LegacyHandlers(), handlers], name="m", version="1"))) as fresh:
        run(main(fresh.url()))


# ---------------------------------------------------------------- status codes and bodies


@pytest.mark.parametrize(
    ("method", "params", "status", "code"),
    [
        ("unknown/method", {}, 404, jsonrpc.METHOD_NOT_FOUND),
        ("ping", {}, 404, jsonrpc.METHOD_NOT_FOUND),
        (
            "initialize",
            {"protocolVersion": HANDSHAKE, "capabilities": {}},
            404,
            jsonrpc.METHOD_NOT_FOUND,
        ),
        ("logging/setLevel", {"level": "info"}, 404, jsonrpc.METHOD_NOT_FOUND),
        ("resources/subscribe", {"uri": "memo://a"}, 404, jsonrpc.METHOD_NOT_FOUND),
        ("tools/call", {"name": "ask"}, 400, jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY),
        ("tools/call", {"name": "fail"}, 200, jsonrpc.INTERNAL_ERROR),
        ("tools/call", {"arguments": {}}, 400, jsonrpc.INVALID_PARAMS),  # no name
    ],
)
def test_the_status_follows_the_error(
    peer: Peer, method: str, params: dict[str, Any], status: int, code: int
) -> None:
    async def main() -> None:
        message = request(40, method, params)
        response = await post(peer.url(), message, headers_for(message))
        assert response.status_code == status
        assert response.headers["content-type"] == "application/json"
        answer = response.json()
        assert answer["id"] == 40 and answer["error"]["code"] == code

    run(main())


def test_a_ping_without_meta_is_invalid_rather_than_unknown(peer: Peer) -> None:
    async def main() -> None:
        message = request(41, "ping", meta={VERSION_KEY: MODERN})
        response = await post(peer.url(), message, headers_for(message))
        assert (
            response.status_code == 400
            and response.json()["error"]["code"] == jsonrpc.INVALID_PARAMS
        )

    run(main())


def test_a_response_first_is_json_without_session_or_event_ids(peer: Peer) -> None:
    async def main() -> None:
        response = await post(peer.url(), CALL, headers_for(CALL))
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        assert int(response.headers["content-length"]) == len(response.content)  # not chunked
        assert "mcp-session-id" not in response.headers
        answer = response.json()
        assert (
            answer["id"] == CALL["id"]
            and answer["result"]["content"][0]["text"] == '{"text": "hi"}'
        )
        assert answer["result"]["resultType"] == "complete"
        assert peer.streamable.sessions == {}

        # A client that takes SSE alone gets the response as one event.
        response = await post(peer.url(), CALL, headers_for(CALL, accept="text/event-stream"))
        assert (
            response.status_code == 200 and response.headers["content-type"] == "text/event-stream"
        )
        assert b"\nid:" not in b"\n" + response.content
        assert [m["id"] for m in sse_messages(response.content)] == [CALL["id"]]
        # Sent whole: with its length, and nothing asking proxies not to buffer it.
        assert int(response.headers["content-length"]) == len(response.content)
        assert "x-accel-buffering" not in response.headers

        # Neither: refused.
        response = await post(peer.url(), CALL, headers_for(CALL, accept="text/html"))
        assert response.status_code == 406

    run(main())


def test_a_notification_is_accepted(peer: Peer) -> None:
    async def main() -> None:
        message = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": 1},
        }
        headers = {
            "accept": ACCEPT,
            "content-type": "application/json",
            "mcp-protocol-version": MODERN,
        }
        response = await post(peer.url(), message, headers)
        assert response.status_code == 202 and response.content == b""

    run(main())


def test_get_and_delete_naming_the_modern_revision_are_not_allowed(peer: Peer) -> None:
    async def main() -> None:
        async with httpx.AsyncClient(timeout=10) as raw:
            headers = {"accept": "text/event-stream", "mcp-protocol-version": MODERN}
            got = await raw.get(peer.url(), headers={**headers, "last-event-id": "abc:1"})
            assert got.status_code == 405 and got.headers["allow"] == "POST"
            deleted = await raw.delete(peer.url(), headers=headers)
            assert deleted.status_code == 405

    run(main())


def test_host_origin_and_size_checks_hold(peer: Peer) -> None:
    async def main() -> None:
        response = await post(peer.url(), CALL, headers_for(CALL, host="evil.example"))
        assert response.status_code == 403
        response = await post(peer.url(), CALL, headers_for(CALL, origin="http://evil.example"))
        assert response.status_code == 403
        big = request(42, "tools/call", {"name": "echo", "arguments": {"text": "x" * LIMIT}})
        response = await post(peer.url(), big, headers_for(big))
        assert response.status_code == 413
        async with httpx.AsyncClient(timeout=10) as raw:
            broken = await raw.post(
                peer.url(),
                content=b'{"jsonrpc": "2.0", "id": 1, "method": ',
                headers=headers_for(LIST),
            )
        assert broken.status_code == 400 and broken.json()["error"]["code"] == jsonrpc.PARSE_ERROR

    run(main())


# ---------------------------------------------------------------- streams


def test_progress_streams_before_the_response(peer: Peer) -> None:
    async def main() -> None:
        message = request(
            50,
            "tools/call",
            {"name": "progress", "arguments": {"steps": 3}},
            meta={**META, "progressToken": "p"},
        )
        response = await post(peer.url(), message, headers_for(message))
        assert (
            response.status_code == 200 and response.headers["content-type"] == "text/event-stream"
        )
        assert response.headers["x-accel-buffering"] == "no"
        assert b"\nid:" not in b"\n" + response.content  # not resumable: no event ids
        sent = sse_messages(response.content)
        assert [m.get("method") for m in sent] == ["notifications/progress"] * 3 + [None]
        assert [m["params"]["progress"] for m in sent[:3]] == [1, 2, 3]
        assert sent[-1]["id"] == 50 and sent[-1]["result"]["content"][0]["text"] == "done 3"

        # A client that takes JSON alone gets the response alone.
        response = await post(peer.url(), message, headers_for(message, accept="application/json"))
        assert response.headers["content-type"] == "application/json"
        assert response.json()["result"]["content"][0]["text"] == "done 3"

    run(main())


def test_a_json_client_of_a_chatty_request_gets_its_response() -> None:
    """A client that takes only JSON cannot receive a request's notifications:
    they are dropped, not queued, so they never fill max_stream_buffer."""

    async def main(url: str) -> None:
        message = request(
            53,
            "tools/call",
            {"name": "log", "arguments": {"times": 50}},
            meta={**META, LOG_LEVEL_KEY: "info"},
        )
        response = await post(url, message, headers_for(message, accept="application/json"))
        assert (
            response.status_code == 200 and response.headers["content-type"] == "application/json"
        )
        assert response.json()["id"] == 53 and "result" in response.json()

    server = Server([LegacyHandlers(), ModernHandlers()], name="m", version="1")
    with serving(http_app(server, options=HttpOptions(max_stream_buffer=1024))) as small:
        run(main(small.url()))


def test_log_messages_only_when_the_request_asks(peer: Peer) -> None:
    async def main() -> None:
        quiet = request(51, "tools/call", {"name": "log"})
        response = await post(peer.url(), quiet, headers_for(quiet))
        assert response.headers["content-type"] == "application/json"
        loud = request(52, "tools/call", {"name": "log"}, meta={**META, LOG_LEVEL_KEY: "info"})
        response = await post(peer.url(), loud, headers_for(loud))
        assert [m.get("method") for m in sse_messages(response.content)] == [
            "notifications/message",
            None,
        ]

    run(main())


def test_our_client_gets_progress_over_sse(peer: Peer) -> None:
    async def main() -> None:
        async with connect_streamable_http(modern_client(), peer.url()) as session:
            assert session.stateless and session.protocol_version == MODERN
            seen: list[tuple[float, float | None, str | None]] = []
            result = await mcp.ClientStub(session).call_tool(
                "progress",
                arguments={"steps": 2},
                on_progress=lambda p, t, m: seen.append((p, t, m)),
            )
            assert result.content[0].text == "done 2"  # type: ignore[union-attr]
            assert seen == [(1, 2, "step 1"), (2, 2, "step 2")]

    run(main())


async def open_listen(
    url: str, request_id: int, wanted: dict[str, Any]
) -> AsyncGenerator[Any, None]:
    """The messages of a subscriptions/listen stream, as they come."""
    message = request(request_id, "subscriptions/listen", {"notifications": wanted})
    parser = SSEParser()
    async with httpx.AsyncClient(timeout=10) as raw:
        async with raw.stream(
            "POST", url, content=json.dumps(message), headers=headers_for(message)
        ) as response:
            assert (
                response.status_code == 200
                and response.headers["content-type"] == "text/event-stream"
            )
            async for chunk in response.aiter_bytes():
                for event in parser.feed(chunk):
                    yield json.loads(event.data)


def test_listen_stream_acknowledges_then_delivers_what_was_asked(peer: Peer) -> None:
    async def main() -> None:
        wanted = {"toolsListChanged": True, "resourceSubscriptions": ["memo://watched"]}
        stream = open_listen(peer.url(), 60, wanted)
        first = await anext(stream)
        assert first["method"] == "notifications/subscriptions/acknowledged"
        assert first["params"]["notifications"] == wanted
        assert first["params"]["_meta"][SUBSCRIPTION_ID_KEY] == 60

        async def changes() -> None:
            await peer.server.notify_list_changed("prompts")  # not asked for
            await peer.server.notify_resource_updated("memo://other")  # not asked for
            await peer.server.notify_list_changed("tools")
            await peer.server.notify_resource_updated("memo://watched")
            await peer.server.notify_list_changed("tools")

        await peer.http.call(changes)
        received = [await anext(stream) for _ in range(3)]
        assert [m["method"] for m in received] == [
            "notifications/tools/list_changed",
            "notifications/resources/updated",
            "notifications/tools/list_changed",
        ]
        assert received[1]["params"]["uri"] == "memo://watched"
        assert all(m["params"]["_meta"][SUBSCRIPTION_ID_KEY] == 60 for m in received)
        assert peer.streamable.requests_in_flight == 1
        await stream.aclose()  # the client goes away: the listen request ends
        await eventually(
            lambda: peer.streamable.requests_in_flight == 0, what="the listen request to end"
        )

        # The server ends a stream with the listen request's result.
        stream = open_listen(peer.url(), 62, {"promptsListChanged": True})
        assert (await anext(stream))["method"] == "notifications/subscriptions/acknowledged"

        async def end() -> None:
            peer.server.end_subscriptions()

        await peer.http.call(end)
        last = await anext(stream)
        assert last["id"] == 62 and last["result"]["_meta"][SUBSCRIPTION_ID_KEY] == 62
        with pytest.raises(StopAsyncIteration):
            await anext(stream)

    run(main())


def test_closing_the_app_ends_listen_streams_with_their_result() -> None:
    async def main(served: ThreadedServer, app: StreamableHTTPApp) -> None:
        stream = open_listen(served.url(), 63, {"toolsListChanged": True})
        assert (await anext(stream))["method"] == "notifications/subscriptions/acknowledged"
        await served.call(app.close)
        last = await anext(stream)
        assert last["id"] == 63 and last["result"]["_meta"][SUBSCRIPTION_ID_KEY] == 63
        with pytest.raises(StopAsyncIteration):
            await anext(stream)

    server = Server([LegacyHandlers(), ModernHandlers()], name="m", version="1")
    app = StreamableHTTPApp(server)
    with serving(app) as served:
        run(main(served, app))


def test_a_quiet_listen_stream_gets_keepalive_comments(
    peer: Peer, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = peer.streamable.per_request
    monkeypatch.setattr(path, "options", dataclasses.replace(path.options, keepalive=0.05))

    async def main() -> None:
        message = request(61, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
        async with httpx.AsyncClient(timeout=10) as raw:
            async with raw.stream(
                "POST", peer.url(), content=json.dumps(message), headers=headers_for(message)
            ) as response:
                received = b""
                async for chunk in response.aiter_bytes():
                    received += chunk
                    if received.count(b":\n\n") >= 2:
                        break
        assert sse_messages(received)[0]["method"] == "notifications/subscriptions/acknowledged"

    run(main())


class ListChanges(mcp.ClientHandlers):
    def __init__(self) -> None:
        self.tools = asyncio.Event()

    @override
    async def on_tool_list_changed(
        self, params: mcp.NotificationParams, ctx: RequestContext
    ) -> None:
        self.tools.set()


def test_our_client_listens_over_http(peer: Peer) -> None:
    async def main() -> None:
        handlers = ListChanges()
        async with connect_streamable_http(modern_client(handlers), peer.url()) as session:
            listener = await session.listen(tools_list_changed=True)
            assert listener.acknowledged == {"toolsListChanged": True}
            await peer.http.call(lambda: peer.server.notify_list_changed("tools"))
            await asyncio.wait_for(handlers.tools.wait(), 10)
            await listener.close()
            await eventually(
                lambda: peer.streamable.requests_in_flight == 0, what="the listen request to end"
            )

    run(main())


# ---------------------------------------------------------------- cancellation and concurrency


def test_closing_the_stream_cancels_the_request(peer: Peer) -> None:
    async def main() -> None:
        message = request(70, "tools/call", {"name": "slow", "arguments": {"tag": "raw"}})
        async with httpx.AsyncClient(timeout=10) as raw:
            task = asyncio.ensure_future(
                raw.post(peer.url(), content=json.dumps(message), headers=headers_for(message))
            )
            await eventually(lambda: "raw" in peer.handlers.started, what="the call to start")
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        await eventually(
            lambda: "raw" in peer.handlers.cancelled, what="the handler to be cancelled"
        )

        async with connect_streamable_http(modern_client(), peer.url()) as session:
            with pytest.raises(McpError) as timed_out:
                await mcp.ClientStub(session).call_tool(
                    "slow", arguments={"tag": "client"}, timeout=0.5
                )
            assert timed_out.value.code == jsonrpc.REQUEST_TIMEOUT
            await eventually(
                lambda: "client" in peer.handlers.cancelled, what="the handler to be cancelled"
            )
        # The cancellation was the closed stream: no notifications/cancelled was POSTed.
        posted = [
            h
            for h in peer.http.recorder.matching("POST")
            if h.get("mcp-method") == "notifications/cancelled"
        ]
        assert posted == []

    run(main())


def test_a_handler_keeps_its_task_and_its_timeouts_across_waits(peer: Peer) -> None:
    """A 2026-07-28 handler starts in its POST's task and stays in it when it
    waits: what it set up before its first wait (here a timeout) still applies."""

    async def main() -> None:
        message = request(72, "tools/call", {"name": "timed"})
        response = await post(peer.url(), message, headers_for(message))
        assert response.status_code == 200
        assert response.json()["result"]["content"][0]["text"] == "timed out in one task"

    run(main())


def test_first_step_answers_at_once_or_hands_the_handler_over() -> None:
    """A 2026-07-28 request starts with no session: its handler's first step
    gives the response, or the handler to carry on; params that do not
    decode are left to a session's dispatch, which says what is wrong."""
    handlers = ModernHandlers()
    route = Server([handlers], name="m", version="1").stateless_routes(MODERN)["tools/call"]

    def summon() -> Any:
        raise AssertionError("none of these handlers needs a session")

    extra = RequestExtra(None, ClientIdentity("peer:127.0.0.1"))

    def params(**fields: Any) -> msgspec.Raw:
        return msgspec.Raw(json.dumps({**fields, "_meta": META}).encode())

    async def main() -> None:
        answered = first_step(route, 1, params(name="echo", arguments={"a": 1}), b"", summon, extra)
        assert isinstance(answered, Message) and answered.error is None
        assert json.loads(answered.data)["result"]["content"][0]["text"] == '{"a": 1}'
        failed = first_step(route, 2, params(name="fail"), b"", summon, extra)
        assert isinstance(failed, Message) and failed.error is not None
        assert json.loads(failed.data)["error"]["message"] == "the tool failed on purpose"
        assert first_step(route, 3, params(name=5), b"", summon, extra) is None
        waiting = first_step(
            route,
            4,
            params(name="slow", arguments={"seconds": 0, "tag": "t"}),
            b"",
            summon,
            extra,
        )
        assert isinstance(waiting, stepping.Pending) and handlers.started == ["t"]
        result = await waiting.rest()  # what the handler returns, once carried on
        assert result.content[0].text == "slept t"

    run(main())


def test_a_context_kept_past_its_request_finds_its_session_closed(peer: Peer) -> None:
    """A handler that answers at once never makes its request's session; one
    made later, for a context kept past the request, is closed from the start."""

    async def main() -> None:
        message = request(73, "tools/call", {"name": "keep"})
        response = await post(peer.url(), message, headers_for(message))
        assert response.json()["result"]["content"][0]["text"] == "kept"
        await eventually(lambda: peer.streamable.requests_in_flight == 0, what="the request to end")
        session = peer.handlers.kept[-1].session
        assert isinstance(session, Session) and session.is_closed
        with pytest.raises(ConnectionClosed):
            await session.send_raw_notification("notifications/message", None)

    run(main())


def test_requests_in_flight_are_capped_like_a_sessions() -> None:
    async def main(url: str) -> None:
        async with httpx.AsyncClient(timeout=10) as raw:
            slow = [
                request(80 + i, "tools/call", {"name": "slow", "arguments": {"tag": f"cap{i}"}})
                for i in range(2)
            ]
            calls = [
                asyncio.ensure_future(raw.post(url, content=json.dumps(m), headers=headers_for(m)))
                for m in slow
            ]
            await eventually(lambda: len(handlers.started) == 2, what="both calls to start")
            one_more = request(82, "tools/call", {"name": "echo", "arguments": {"text": "over"}})
            response = await post(url, one_more, headers_for(one_more))
            assert (
                response.status_code == 429
                and response.headers["content-type"] == "application/json"
            )
            error = response.json()
            assert error["id"] == 82 and error["error"]["code"] == jsonrpc.INVALID_REQUEST
            for call in calls:
                call.cancel()
            await asyncio.gather(*calls, return_exceptions=True)
            await eventually(
                lambda: app.streamable.requests_in_flight == 0, what="the calls to end"
            )
            response = await post(url, one_more, headers_for(one_more))
            assert (
                response.status_code == 200
                and response.json()["result"]["content"][0]["text"] == '{"text": "over"}'
            )

    handlers = ModernHandlers()
    app = http_app(
        Server([LegacyHandlers(), handlers], name="m", version="1"),
        options=HttpOptions(max_concurrent_requests=2),
    )
    with serving(app) as capped:
        run(main(capped.url()))


def test_concurrent_requests_each_get_their_own_answer(peer: Peer) -> None:
    async def main() -> None:
        async with connect_streamable_http(modern_client(), peer.url()) as session:
            server = mcp.ClientStub(session)
            seen: dict[int, list[float]] = {}

            async def counted(steps: int) -> str:
                seen[steps] = []
                result = await server.call_tool(
                    "progress",
                    arguments={"steps": steps},
                    on_progress=lambda p, t, m: seen[steps].append(p),
                )
                return result.content[0].text  # type: ignore[union-attr]

            async def echoed(index: int) -> str:
                result = await server.call_tool("echo", arguments={"text": str(index)})
                return result.content[0].text  # type: ignore[union-attr]

            answers = await asyncio.gather(
                *(counted(n) for n in range(1, 6)), *(echoed(i) for i in range(30))
            )
            assert answers[:5] == [f"done {n}" for n in range(1, 6)]
            assert answers[5:] == [json.dumps({"text": str(i)}) for i in range(30)]
            assert seen == {n: [float(step) for step in range(1, n + 1)] for n in range(1, 6)}

    run(main())


# ---------------------------------------------------------------- our client


def test_our_client_mirrors_the_body_in_headers(peer: Peer) -> None:
    async def main() -> None:
        before = len(peer.http.recorder.requests)
        async with connect_streamable_http(modern_client(), peer.url()) as session:
            server = mcp.ClientStub(session)
            tools = {tool.name for tool in (await server.list_tools()).tools}
            assert "routed" in tools and "invalid" not in tools  # its x-mcp-header is invalid
            arguments = {
                "region": "Hello, 世界",
                "count": 7,
                "loud": True,
                "where": {"zone": " z "},
                "note": "n",
            }
            result = await server.call_tool("routed", arguments=arguments)
            assert json.loads(result.content[0].text) == arguments  # type: ignore[union-attr]
            await server.read_resource("memo://ü")
            await server.get_prompt("review")
        sent = [h for m, _, h in peer.http.recorder.requests[before:] if m == "POST"]
        assert all("mcp-session-id" not in h and h["mcp-protocol-version"] == MODERN for h in sent)
        assert [h["mcp-method"] for h in sent] == [
            "server/discover",
            "tools/list",
            "tools/call",
            "resources/read",
            "prompts/get",
        ]
        call = sent[2]
        assert call["mcp-name"] == "routed"
        assert call["mcp-param-region"] == b64("Hello, 世界")
        assert (call["mcp-param-count"], call["mcp-param-loud"], call["mcp-param-zone"]) == (
            "7",
            "true",
            b64(" z "),
        )
        assert not any(name.startswith("mcp-param-note") for name in call)
        assert decode_value(sent[3]["mcp-name"]) == "memo://ü" and sent[4]["mcp-name"] == "review"
        assert all(m == "POST" for m, _, _ in peer.http.recorder.requests[before:])

    run(main())


def test_our_client_gets_error_statuses_as_the_servers_errors(peer: Peer) -> None:
    async def main() -> None:
        async with connect_streamable_http(modern_client(), peer.url()) as session:
            server = mcp.ClientStub(session)
            with pytest.raises(McpError) as refused:
                await server.call_tool("ask")
            assert refused.value.code == jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY
            assert refused.value.data == {"requiredCapabilities": {"elicitation": {}}}
            assert not refused.value.message.startswith("POST")
            with pytest.raises(McpError) as unknown:
                await session.request_raw("nope/method", json.dumps({"_meta": META}).encode())
            assert (unknown.value.code, unknown.value.message) == (
                jsonrpc.METHOD_NOT_FOUND,
                "Method not found: nope/method",
            )
            # The session goes on.
            assert (await server.call_tool("echo", arguments={"text": "on"})).content[0].text == '{"text": "on"}'  # type: ignore[union-attr]

    run(main())


# ---------------------------------------------------------------- the older revisions, same app


def test_handshake_clients_still_get_sessions(peer: Peer) -> None:
    async def main() -> None:
        old = Client(name="old", version="0", protocol_version=HANDSHAKE)
        transport = StreamableHTTPClientTransport(peer.url())
        session = await old.connect(transport)
        try:
            assert not session.stateless and session.protocol_version == HANDSHAKE
            assert (
                transport.session_id is not None
                and transport.session_id in peer.streamable.sessions
            )
            result = await legacy.ClientStub(session).call_tool("echo", arguments={"text": "old"})
            assert result.content[0].text == '{"text": "old"}'  # type: ignore[union-attr]
            async with connect_streamable_http(modern_client(), peer.url()) as modern:
                assert modern.stateless
                assert (await mcp.ClientStub(modern).call_tool("echo")).content[0].text == "{}"  # type: ignore[union-attr]
            await eventually(
                lambda: bool(peer.http.recorder.matching("GET", "mcp-session-id")),
                what="the GET stream",
            )
        finally:
            await session.close()
        await eventually(
            lambda: transport.session_id not in peer.streamable.sessions, what="the session to end"
        )

        # Raw: a POST without session that names a handshake revision still needs one.
        async with httpx.AsyncClient(timeout=10) as raw:
            message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            headers = {
                "accept": ACCEPT,
                "content-type": "application/json",
                "mcp-protocol-version": HANDSHAKE,
            }
            response = await raw.post(peer.url(), content=json.dumps(message), headers=headers)
            assert (
                response.status_code == 400
                and "Mcp-Session-Id" in response.json()["error"]["message"]
            )

    run(main())


def test_connect_http_speaks_modern_or_falls_back() -> None:
    async def main(modern_url: str, legacy_url: str) -> None:
        async with connect_http(modern_client(), modern_url) as session:
            assert session.stateless and session.protocol_version == MODERN
        async with connect_http(modern_client(), legacy_url) as session:
            assert not session.stateless and session.protocol_version == HANDSHAKE
            tools = await legacy.ClientStub(session).list_tools()
            assert "echo" in {tool.name for tool in tools.tools}

    modern_server = Server([LegacyHandlers(), ModernHandlers()], name="m", version="1")
    with serving(http_app(modern_server)) as modern, serving(http_app(lowlevel_server())) as old:
        run(main(modern.url(), old.url()))


def test_the_older_stateless_mode_still_serves_handshake_requests() -> None:
    async def main(url: str) -> None:
        async with httpx.AsyncClient(timeout=10) as raw:
            message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            headers = {
                "accept": ACCEPT,
                "content-type": "application/json",
                "mcp-protocol-version": HANDSHAKE,
            }
            old = await raw.post(url, content=json.dumps(message), headers=headers)
            assert old.status_code == 200 and [
                t["name"] for t in sse_messages(old.content)[0]["result"]["tools"]
            ] == ["echo"]
            response = await post(url, CALL, headers_for(CALL))
            assert (
                response.status_code == 200
                and response.json()["result"]["content"][0]["text"] == '{"text": "hi"}'
            )

    server = Server([LegacyHandlers(), ModernHandlers()], name="m", version="1")
    with serving(http_app(server, stateless=True)) as stateless:
        run(main(stateless.url()))


def test_an_authentication_status_is_not_a_reason_to_fall_back() -> None:
    """A 401 carrying a JSON-RPC error body stays an authentication failure:
    the client neither falls back to initialize nor hides the status."""

    async def unauthorized(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = json.dumps(
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": "Unauthorized"}}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def main(server: ThreadedServer) -> None:
        with pytest.raises(McpError) as refused:
            async with connect_streamable_http(modern_client(), server.url()):
                pass
        assert refused.value.data == {"httpStatus": 401} and "Unauthorized" in refused.value.message
        assert [h["mcp-method"] for m, _, h in server.recorder.requests if m == "POST"] == [
            "server/discover"
        ]

    with serving(unauthorized) as server:
        run(main(server))
