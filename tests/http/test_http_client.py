"""Our Streamable HTTP client against our Streamable HTTP server (uvicorn in a
thread), in SSE, JSON-response and stateless modes: the handshake, tools,
progress, logging, cancellation, concurrency, resources and prompts; stream
resumption with Last-Event-ID; the standalone GET stream; HTTP errors and
session expiry. Also the SSE parser on its own."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import httpx
import pytest
from support.http_servers import ThreadedServer, eventually, lowlevel_server, run, serving
from typing_extensions import override

from mcpbind._client.client import Client, ClientSession
from mcpbind._core import jsonrpc
from mcpbind._core.jsonrpc import ConnectionClosed, McpError
from mcpbind._transports.http.client.streamable import (
    SSEEvent,
    SSEParser,
    StreamableHTTPClientTransport,
    connect_streamable_http,
)
from mcpbind._transports.http.server.streamable import HttpSession
from mcpbind.codec import encode
from mcpbind.http import HttpApp, HttpOptions, http_app
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25 as mcp

RETRY_MS = 300
MODES = ("sse", "json", "stateless")


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, ThreadedServer]]:
    with (
        serving(http_app(lowlevel_server(), options=HttpOptions(retry_ms=RETRY_MS))) as sse,
        serving(
            http_app(lowlevel_server(), json_response=True, options=HttpOptions(retry_ms=RETRY_MS))
        ) as json,
        serving(http_app(lowlevel_server(), stateless=True)) as stateless,
    ):
        yield {"sse": sse, "json": json, "stateless": stateless}


@pytest.fixture(params=MODES)
def server(request: pytest.FixtureRequest, servers: dict[str, ThreadedServer]) -> ThreadedServer:
    return servers[request.param]


class Recording(mcp.ClientHandlers):
    def __init__(self) -> None:
        self.logs: list[tuple[str, Any]] = []

    @override
    async def on_logging_message(
        self, params: mcp.LoggingMessageNotificationParams, ctx: RequestContext
    ) -> None:
        self.logs.append((params.level, params.data))


class Progress:
    def __init__(self) -> None:
        self.seen: list[tuple[float, float | None, str | None]] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen.append((progress, total, message))


@contextlib.asynccontextmanager
async def open_session(
    server: ThreadedServer, **options: Any
) -> AsyncIterator[tuple[ClientSession, mcp.ClientStub, Recording]]:
    handlers = Recording()
    client = Client(name="http-test-client", version="0.1", handlers=handlers)
    async with connect_streamable_http(client, server.url(), **options) as session:
        yield session, mcp.ClientStub(session), handlers


def texts(result: mcp.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, mcp.TextContent)]


def transport_of(session: ClientSession) -> StreamableHTTPClientTransport:
    assert isinstance(session.transport, StreamableHTTPClientTransport)
    return session.transport


def server_session(server: ThreadedServer, session_id: str | None) -> HttpSession:
    app = server.app
    assert isinstance(app, HttpApp) and session_id is not None
    return app.streamable.sessions[session_id]


def is_stateless(server: ThreadedServer) -> bool:
    return isinstance(server.app, HttpApp) and server.app.streamable.stateless


# ---------------------------------------------------------------- basics, every mode


def test_initialize_and_tools(server: ThreadedServer) -> None:
    async def main() -> None:
        async with open_session(server) as (session, stub, _):
            assert session.protocol_version == "2025-11-25"
            assert session.server_info.name == "mcp-codegen-example"
            assert session.instructions == "An example server for the mcp-codegen runtime."
            transport = transport_of(session)
            assert transport.protocol_version == "2025-11-25"
            if is_stateless(server):
                assert transport.session_id is None
            else:
                assert transport.session_id is not None and len(transport.session_id) >= 22
            await stub.ping()
            tools = [tool.name async for tool in stub.iter_tools()]
            assert {"echo", "add", "count", "sleep", "reconnect"} <= set(tools)
            assert texts(await stub.call_tool("echo", arguments={"text": "héllo"})) == ["héllo"]
            added = await stub.call_tool("add", arguments={"a": 2, "b": 3})
            assert added.structured_content == {"sum": 5.0}
            with pytest.raises(McpError) as failed:
                await stub.call_tool("fail")
            assert (
                failed.value.code == jsonrpc.INTERNAL_ERROR
                and "fail tool" not in failed.value.message
            )

    run(main())


def test_progress_and_logs(server: ThreadedServer) -> None:
    async def main() -> None:
        async with open_session(server) as (_, stub, handlers):
            await stub.set_level("debug")
            progress = Progress()
            if server.app.streamable.json_response:  # type: ignore[attr-defined]
                # A JSON answer carries only the response: progress and logs
                # travel on the GET stream, so use a tool that pauses before answering.
                result = await stub.call_tool(
                    "reconnect", arguments={"pause": 0.3}, on_progress=progress
                )
                assert texts(result) == ["resumed"]
                assert [p for p, _, _ in progress.seen][:2] == [1, 2]
                await eventually(lambda: len(handlers.logs) == 2, what="two log messages")
                return
            result = await stub.call_tool("count", arguments={"steps": 4}, on_progress=progress)
            assert texts(result) == ["counted to 4"]
            assert progress.seen == [(i, 4, f"step {i}/4") for i in range(1, 5)]
            # Logs travel on the request's stream, before its response.
            assert handlers.logs == [("info", f"reached step {i}") for i in range(1, 5)]

    run(main())


def test_timeout_and_cancellation(server: ThreadedServer) -> None:
    async def main() -> None:
        async with open_session(server) as (session, stub, _):
            with pytest.raises(McpError) as timed_out:
                await stub.call_tool("sleep", arguments={"seconds": 30}, timeout=0.2)
            assert timed_out.value.code == jsonrpc.REQUEST_TIMEOUT
            call = asyncio.ensure_future(stub.call_tool("sleep", arguments={"seconds": 30}))
            await asyncio.sleep(0.2)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            if not is_stateless(server):
                # notifications/cancelled reached the server: nothing is left running there.
                http_session = server_session(server, transport_of(session).session_id)
                await eventually(
                    lambda: not http_session.session._in_flight,
                    what="the server to cancel the calls",
                )
                await eventually(
                    lambda: not http_session.transport._by_request, what="the streams to end"
                )
                await eventually(lambda: http_session.in_flight == 0, what="the POSTs to end")
            assert texts(await stub.call_tool("echo", arguments={"text": "still here"})) == [
                "still here"
            ]

    run(main())


def test_concurrent_requests(server: ThreadedServer) -> None:
    async def main() -> None:
        async with open_session(server) as (_, stub, _):
            started = time.monotonic()
            sleeps = [stub.call_tool("sleep", arguments={"seconds": 0.5}) for _ in range(50)]
            echoes = [stub.call_tool("echo", arguments={"text": f"n{i}"}) for i in range(50)]
            results = await asyncio.gather(*sleeps, *echoes)
            elapsed = time.monotonic() - started
            assert [texts(r) for r in results[:50]] == [["awake"]] * 50
            assert [texts(r) for r in results[50:]] == [[f"n{i}"] for i in range(50)]
            assert elapsed < 5.0, f"50 half-second calls took {elapsed:.1f} s: not concurrent"

    run(main())


def test_resources_prompts_completion(server: ThreadedServer) -> None:
    async def main() -> None:
        async with open_session(server) as (_, stub, _):
            listed = await stub.list_resources()
            assert [r.uri for r in listed.resources] == ["memo://readme", "memo://logo"]
            readme = await stub.read_resource("memo://readme")
            assert isinstance(readme.contents[0], mcp.TextResourceContents)
            assert readme.contents[0].text == "This server exists to show the runtime."
            logo = await stub.read_resource("memo://logo")
            assert isinstance(logo.contents[0], mcp.BlobResourceContents)
            templates = await stub.list_resource_templates()
            assert templates.resource_templates[0].uri_template == "greeting://{name}"
            greeting = await stub.read_resource("greeting://bob")
            assert isinstance(greeting.contents[0], mcp.TextResourceContents)
            assert greeting.contents[0].text == "Hello, bob!"
            with pytest.raises(McpError) as missing:
                await stub.read_resource("memo://nothing")
            assert missing.value.code == jsonrpc.INVALID_PARAMS and missing.value.data == {
                "uri": "memo://nothing"
            }
            prompt = await stub.get_prompt(
                "review", arguments={"code": "x = 1", "language": "python"}
            )
            assert isinstance(prompt.messages[0].content, mcp.TextContent)
            assert prompt.messages[0].content.text == "Please review this python:\nx = 1"
            completion = await stub.complete(
                mcp.CompleteRequestParamsArgument(name="language", value="r"),
                mcp.PromptReference(name="review"),
            )
            assert completion.completion.values == ["rust", "ruby"]

    run(main())


# ---------------------------------------------------------------- resumption (SSE mode)


@pytest.mark.parametrize("pause", [0.1, 0.8])
def test_stream_resumed_after_server_closes_it(
    servers: dict[str, ThreadedServer], pause: float
) -> None:
    """The tool closes its SSE stream, keeps reporting, then answers: the
    client waits ``retry`` ms, resumes with GET and Last-Event-ID, and gets
    every message (replayed, then live when the pause outlasts the retry)."""
    server = servers["sse"]

    async def main() -> None:
        async with open_session(server) as (session, stub, handlers):
            await stub.set_level("debug")
            progress = Progress()
            resumes_before = len(server.recorder.matching("GET", "last-event-id"))
            started = time.monotonic()
            result = await stub.call_tool(
                "reconnect", arguments={"pause": pause}, on_progress=progress
            )
            elapsed = time.monotonic() - started
            assert texts(result) == ["resumed"]
            assert [p for p, _, _ in progress.seen] == [1, 2, 3]
            assert [data for _, data in handlers.logs] == [
                "closing the stream",
                "sent while the client was away",
            ]
            assert (
                elapsed >= RETRY_MS / 1000
            ), "the client did not wait for the server's retry delay"
            resumes = server.recorder.matching("GET", "last-event-id")[resumes_before:]
            session_id = transport_of(session).session_id
            assert any(
                h.get("mcp-session-id") == session_id and ":" in h["last-event-id"] for h in resumes
            )
            assert all(h.get("mcp-protocol-version") == "2025-11-25" for h in resumes)
            # The session goes on as before.
            assert texts(await stub.call_tool("echo", arguments={"text": "after"})) == ["after"]

    run(main())


def test_resumption_many_at_once(servers: dict[str, ThreadedServer]) -> None:
    server = servers["sse"]

    async def main() -> None:
        async with open_session(server) as (_, stub, _):
            results = await asyncio.gather(
                *(stub.call_tool("reconnect", arguments={"pause": 0.05 * i}) for i in range(10)),
                *(stub.call_tool("echo", arguments={"text": str(i)}) for i in range(10)),
            )
            assert [texts(r) for r in results[:10]] == [["resumed"]] * 10
            assert [texts(r) for r in results[10:]] == [[str(i)] for i in range(10)]

    run(main())


def test_reconnect_tool_in_json_and_stateless_modes(servers: dict[str, ThreadedServer]) -> None:
    """Where a stream cannot be resumed the tool's close is a no-op (JSON
    mode) or the answer still comes back (stateless: the stream ends, and the
    client reports that it cannot resume)."""

    async def main() -> None:
        async with open_session(servers["json"]) as (_, stub, _):
            assert texts(await stub.call_tool("reconnect", arguments={"pause": 0})) == ["resumed"]

    run(main())


# ---------------------------------------------------------------- the standalone GET stream


def test_standalone_stream_delivers_and_resumes(servers: dict[str, ThreadedServer]) -> None:
    server = servers["sse"]

    async def main() -> None:
        async with open_session(server) as (session, stub, handlers):
            http_session = server_session(server, transport_of(session).session_id)
            standalone = http_session.transport.standalone
            await eventually(lambda: standalone.live is not None, what="the GET stream")

            async def notify(text: str) -> None:
                params = encode({"level": "info", "data": text})
                await http_session.session.send_raw_notification("notifications/message", params)

            await server.call(lambda: notify("unprompted"))
            await eventually(
                lambda: ("info", "unprompted") in handlers.logs, what="the first message"
            )

            # The server drops the connection, then sends more: the client
            # reconnects with Last-Event-ID and gets it.
            async def drop() -> None:
                standalone.detach()

            await server.call(drop)
            await server.call(lambda: notify("while away"))
            await eventually(
                lambda: ("info", "while away") in handlers.logs,
                timeout=10,
                what="the replayed message",
            )
            resumed = server.recorder.matching("GET", "last-event-id")
            assert any(h["last-event-id"].startswith(standalone.id + ":") for h in resumed)
            assert handlers.logs.count(("info", "unprompted")) == 1  # nothing delivered twice
            await stub.ping()

    run(main())


def test_no_standalone_stream_on_stateless_server(servers: dict[str, ThreadedServer]) -> None:
    server = servers["stateless"]

    async def main() -> None:
        before = len(server.recorder.matching("GET"))
        async with open_session(server) as (_, stub, _):
            await stub.ping()
            await asyncio.sleep(0.3)
            await stub.ping()
        # 405: the server offers no GET stream; the client does not retry.
        assert len(server.recorder.matching("GET")) - before == 1

    run(main())


# ---------------------------------------------------------------- failures


def test_http_error_fails_the_call_with_the_servers_message(
    servers: dict[str, ThreadedServer],
) -> None:
    async def main() -> None:
        async with open_session(servers["sse"]) as (session, stub, _):
            transport = transport_of(session)
            transport.protocol_version = "1999-01-01"
            with pytest.raises(McpError) as refused:
                await stub.ping()
            assert (
                "HTTP 400" in refused.value.message
                and "MCP-Protocol-Version" in refused.value.message
            )
            assert refused.value.data == {"httpStatus": 400}
            transport.protocol_version = "2025-11-25"
            with pytest.raises(McpError) as too_big:
                await stub.call_tool("echo", arguments={"text": "x" * (5 * 1024 * 1024)})
            assert "HTTP 413" in too_big.value.message
            await stub.ping()  # the session survives both

    run(main())


def test_session_ended_by_server_fails_pending_calls(servers: dict[str, ThreadedServer]) -> None:
    """Without renewal (``renew_session=False``; tests/http/test_http_client_renewal.py
    has it on), a session the server ended ends the client session."""
    server = servers["sse"]

    async def main() -> None:
        async with open_session(server, renew_session=False) as (session, stub, _):
            session_id = transport_of(session).session_id
            pending = asyncio.ensure_future(stub.call_tool("sleep", arguments={"seconds": 30}))
            await asyncio.sleep(0.2)
            async with httpx.AsyncClient() as raw:
                ended = await raw.delete(server.url(), headers={"mcp-session-id": session_id or ""})
            assert ended.status_code == 200
            started = time.monotonic()
            with pytest.raises(McpError) as expired:
                await pending
            assert "expired" in expired.value.message and session_id in expired.value.message
            assert time.monotonic() - started < 3
            await eventually(lambda: session.is_closed, what="the session to end")
            assert await session.transport.read() is None
            with pytest.raises(ConnectionClosed):
                await stub.ping()

    run(main())


def test_session_expiry_seen_on_the_next_post(servers: dict[str, ThreadedServer]) -> None:
    """Without renewal, as above."""
    server = servers["sse"]

    async def main() -> None:
        async with open_session(server, listen=False, renew_session=False) as (session, stub, _):
            session_id = transport_of(session).session_id
            async with httpx.AsyncClient() as raw:
                await raw.delete(server.url(), headers={"mcp-session-id": session_id or ""})
            with pytest.raises(McpError) as expired:
                await stub.ping()
            assert expired.value.code == jsonrpc.CONNECTION_CLOSED
            assert "expired" in expired.value.message and expired.value.data == {"httpStatus": 404}
            assert transport_of(session).expired
            await eventually(lambda: session.is_closed, what="the session to end")

    run(main())


def test_close_deletes_the_session(servers: dict[str, ThreadedServer]) -> None:
    server = servers["sse"]
    app = server.app
    assert isinstance(app, HttpApp)

    async def main() -> None:
        async with open_session(server) as (session, stub, _):
            session_id = transport_of(session).session_id
            assert session_id in app.streamable.sessions
        deletes = [
            h for h in server.recorder.matching("DELETE") if h.get("mcp-session-id") == session_id
        ]
        assert len(deletes) == 1
        assert session_id not in app.streamable.sessions

    run(main())


def test_unreachable_server() -> None:
    async def main() -> None:
        client = Client(name="http-test-client", version="0.1")
        with pytest.raises(McpError) as failed:
            async with connect_streamable_http(client, "http://127.0.0.1:9/mcp"):
                pass
        assert "POST http://127.0.0.1:9/mcp failed" in failed.value.message

    run(main())


def test_shared_http_client_is_left_open(servers: dict[str, ThreadedServer]) -> None:
    async def main() -> None:
        async with aiohttp.ClientSession() as shared:
            client = Client(name="http-test-client", version="0.1")
            async with connect_streamable_http(
                client, servers["sse"].url(), http_client=shared
            ) as session:
                await mcp.ClientStub(session).ping()
            assert not shared.closed

    run(main())


# ---------------------------------------------------------------- the SSE parser


def parse(*chunks: bytes) -> tuple[list[SSEEvent], SSEParser]:
    parser = SSEParser()
    events = [event for chunk in chunks for event in parser.feed(chunk)]
    return events, parser


def test_sse_parser_fields_and_comments() -> None:
    events, parser = parse(
        b": a comment\n"
        b"id: s:0\nretry: 250\ndata: \n\n"
        b'event: message\nid: s:1\ndata: {"a":\ndata:  1}\n\n'
        b"event: custom\ndata:x\n\n"
        b"data: no id here\n\n"
    )
    assert events == [
        SSEEvent("message", "", "s:0"),
        SSEEvent("message", '{"a":\n 1}', "s:1"),
        SSEEvent("custom", "x", "s:1"),
        SSEEvent("message", "no id here", "s:1"),
    ]
    assert parser.retry == 250 and parser.last_event_id == "s:1"


def test_sse_parser_line_endings_split_anywhere() -> None:
    stream = b"\xef\xbb\xbfid: 7\r\ndata: one\r\ndata: two\r\n\r\ndata: three\rdata: four\r\rdata: five\n\n"
    expected = [
        SSEEvent("message", "one\ntwo", "7"),
        SSEEvent("message", "three\nfour", "7"),
        SSEEvent("message", "five", "7"),
    ]
    for cut in range(len(stream) + 1):
        assert parse(stream[:cut], stream[cut:])[0] == expected, cut
    assert parse(*[bytes([b]) for b in stream])[0] == expected


def test_sse_parser_edge_cases() -> None:
    events, parser = parse(
        b"retry: soon\nid: a\0b\ndata\n\nid\ndata: x\n\nevent: lonely\n\ndata: unfinished"
    )
    assert parser.retry is None  # not digits: ignored
    assert events == [SSEEvent("message", "", None), SSEEvent("message", "x", "")]
    assert parser.last_event_id == ""  # an empty id resets it
    multibyte = "données: ✓".encode()
    assert parse(b"data: " + multibyte[:9], multibyte[9:] + b"\n\n")[0] == [
        SSEEvent("message", "données: ✓", None)
    ]


# ---------------------------------------------------------------- a faulty front end


class Faulty:
    """Our app behind a front end that answers 500 to any POST mentioning
    "explode", and 503 to every resumption while ``refuse_resume`` is set."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.refuse_resume = False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            names = {name.lower() for name, _ in scope["headers"]}
            if scope["method"] == "GET" and b"last-event-id" in names and self.refuse_resume:
                await reply(send, 503, b"try later")
                return
            if scope["method"] == "POST":
                chunks = []
                while True:
                    message = await receive()
                    chunks.append(message.get("body", b""))
                    if not message.get("more_body"):
                        break
                body = b"".join(chunks)
                if b"explode" in body:
                    await reply(send, 500, b"kaboom")
                    return
                replayed = False

                async def replay() -> Any:
                    nonlocal replayed
                    if not replayed:
                        replayed = True
                        return {"type": "http.request", "body": body, "more_body": False}
                    return await receive()

                await self.app(scope, replay, send)
                return
        await self.app(scope, receive, send)


async def reply(send: Any, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain")],
        }
    )
    await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def faulty() -> Iterator[ThreadedServer]:
    with serving(Faulty(http_app(lowlevel_server(), options=HttpOptions(retry_ms=50)))) as server:
        yield server


def test_server_error_fails_only_that_call(faulty: ThreadedServer) -> None:
    async def main() -> None:
        async with open_session(faulty) as (_, stub, _):
            with pytest.raises(McpError) as failed:
                await stub.call_tool("echo", arguments={"text": "explode"})
            assert (
                failed.value.message
                == f"POST {faulty.url()}: HTTP 500 Internal Server Error: kaboom"
            )
            assert failed.value.data == {"httpStatus": 500}
            assert texts(await stub.call_tool("echo", arguments={"text": "fine"})) == ["fine"]

    run(main())


def test_resumption_gives_up_after_bounded_attempts(faulty: ThreadedServer) -> None:
    front = faulty.app
    assert isinstance(front, Faulty)

    async def main() -> None:
        async with open_session(faulty, listen=False) as (_, stub, _):
            before = len(faulty.recorder.matching("GET", "last-event-id"))
            front.refuse_resume = True
            try:
                with pytest.raises(McpError) as failed:
                    await stub.call_tool("reconnect", arguments={"pause": 5})
            finally:
                front.refuse_resume = False
            assert "gave up resuming the response stream after 5 attempts" in failed.value.message
            assert len(faulty.recorder.matching("GET", "last-event-id")) - before == 5
            await stub.ping()

    run(main())


def test_custom_headers_are_sent(servers: dict[str, ThreadedServer]) -> None:
    server = servers["sse"]

    async def main() -> None:
        async with open_session(
            server, headers={"Authorization": "Bearer t0ken", "X-Trace": "1"}
        ) as (_, stub, _):
            await stub.ping()
        sent = [h for h in server.recorder.matching("POST", "authorization")]
        assert sent and all(
            h["authorization"] == "Bearer t0ken" and h["x-trace"] == "1" for h in sent
        )
        assert all(h["accept"] == "application/json, text/event-stream" for h in sent)
        assert all(h["content-type"] == "application/json" for h in sent)
        initialize, *later = sent
        assert "mcp-session-id" not in initialize and "mcp-protocol-version" not in initialize
        assert later and all(h["mcp-protocol-version"] == "2025-11-25" for h in later)
        assert len({h["mcp-session-id"] for h in later}) == 1
        streams = [h for h in server.recorder.matching("GET", "authorization")]
        assert streams and all(h["accept"] == "text/event-stream" for h in streams)
        ended = [h for h in server.recorder.matching("DELETE", "authorization")]
        assert [h["mcp-session-id"] for h in ended] == [later[0]["mcp-session-id"]]

    run(main())


def test_example_client_runs(servers: dict[str, ThreadedServer]) -> None:
    import subprocess
    import sys

    from support.http_servers import REPO

    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "http_client.py"), servers["sse"].url()],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "over Streamable HTTP" in done.stdout
    assert (
        "reconnect -> ['resumed']" in done.stdout and "complete -> ['rust', 'ruby']" in done.stdout
    )
