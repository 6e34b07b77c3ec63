"""A Streamable HTTP client whose server ends its session (HTTP 404) starts a
new one and carries on: against our server (uvicorn in a thread) restarted on
the same port, ending the session on a DELETE, evicting it for another
client, or ending every session it gives out; and against the official SDK's
server restarted on the same port. The requests whose POST got the 404 are
sent again; a request the server may have run is not; subscriptions and the
log level are set up again; repeated 404s end in an error, not a loop; and
``renew_session=False`` keeps the session ended.

Each test guards, in the Streamable HTTP transport of 2025-03-26, 2025-06-18
and 2025-11-25 (basic/transports, session management): "When a client
receives HTTP 404 in response to a request containing an Mcp-Session-Id, it
MUST start a new session by sending a new InitializeRequest without a session
ID attached."
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import httpx
import pytest
from support.http_servers import (
    SubprocessServer,
    ThreadedServer,
    eventually,
    lowlevel_server,
    run,
)
from typing_extensions import override

from mcpbind._client.client import Client, ClientSession, SessionRenewal
from mcpbind._core import jsonrpc
from mcpbind._core.jsonrpc import ConnectionClosed, McpError
from mcpbind._transports.http.client.streamable import (
    DEFAULT_MAX_RENEWALS,
    StreamableHTTPClientTransport,
    connect_streamable_http,
)
from mcpbind.app import App
from mcpbind.http import HttpApp, HttpOptions, http_app
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25 as mcp

RETRY_MS = 200
REVISIONS = ("2025-03-26", "2025-06-18", "2025-11-25")


@dataclass
class Seen:
    """One HTTP request as the server saw it, and the status it answered."""

    method: str
    session_id: str | None
    body: bytes = b""
    status: int = 0

    @property
    def rpc(self) -> str | None:
        """The JSON-RPC method the body names (None: a response, or no body)."""
        if not self.body:
            return None
        message = json.loads(self.body)
        return message.get("method") if isinstance(message, dict) else None


class Wire:
    """Wraps an ASGI app: every HTTP request, its body and its status."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[Seen] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        seen = Seen(scope["method"], headers.get("mcp-session-id"))
        self.seen.append(seen)

        async def recording_receive() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                seen.body += message.get("body", b"")
            return message

        async def recording_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                seen.status = message["status"]
            await send(message)

        await self.app(scope, recording_receive, recording_send)

    def posts(self, rpc: str, session_id: str | None = None) -> list[Seen]:
        return [
            s
            for s in list(self.seen)
            if s.method == "POST" and s.rpc == rpc and s.session_id == session_id
        ]

    def streams(self, session_id: str | None) -> list[Seen]:
        """The standalone GET streams the server opened for ``session_id``."""
        return [
            s
            for s in list(self.seen)
            if s.method == "GET" and s.session_id == session_id and s.status == 200
        ]


def stubs(version: str) -> ModuleType:
    return importlib.import_module(f"mcpbind_protocol.v{version.replace('-', '_')}")


def transport_of(session: ClientSession) -> StreamableHTTPClientTransport:
    assert isinstance(session.transport, StreamableHTTPClientTransport)
    return session.transport


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content]


async def restart(server: ThreadedServer | SubprocessServer) -> None:
    """Stop ``server``, the client's loop running meanwhile (it sees the
    connections the server closes as closed, as a client would)."""
    await asyncio.to_thread(server.stop)


def our_server(
    port: int = 0, json_response: bool = False, **limits: Any
) -> tuple[ThreadedServer, Wire]:
    options = HttpOptions(retry_ms=RETRY_MS, **limits)
    wire = Wire(http_app(lowlevel_server(), json_response=json_response, options=options))
    return ThreadedServer(wire, port).start(), wire


class Renewals:
    """The client's on_renewed callback: every renewal reported."""

    def __init__(self) -> None:
        self.seen: list[SessionRenewal] = []

    def __call__(self, session: ClientSession, renewal: SessionRenewal) -> None:
        assert session.transport is not None
        self.seen.append(renewal)


@contextlib.asynccontextmanager
async def opened(
    url: str, version: str, renewals: Renewals, **options: Any
) -> AsyncIterator[tuple[ClientSession, Any]]:
    client = Client(
        name="renewing-client", version="0.1", protocol_version=version, on_renewed=renewals
    )
    async with connect_streamable_http(client, url, **options) as session:
        yield session, stubs(version).ClientStub(session)


# ---------------------------------------------------------------- our server


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
@pytest.mark.parametrize("version", REVISIONS)
def test_a_restarted_server_gets_a_new_initialize_and_the_refused_calls(
    version: str, json_response: bool
) -> None:
    """Our server restarted on the same port answers 404 to the old session:
    the client sends a new InitializeRequest without a session id (once, for
    three calls made at once), then the three calls whose POST got the 404;
    the application hears of it. (Spec statement: see the module docstring.)"""
    renewals = Renewals()
    first, _ = our_server(json_response=json_response)
    port = first.port

    async def main() -> None:
        # No standalone stream: its 404 would start the new session before the calls are made.
        async with opened(first.url(), version, renewals, listen=False) as (session, stub):
            transport = transport_of(session)
            old = transport.session_id
            assert texts(await stub.call_tool("echo", arguments={"text": "before"})) == ["before"]
            await restart(first)
            second, wire = our_server(port, json_response=json_response)
            try:
                answers = await asyncio.gather(
                    *(stub.call_tool("echo", arguments={"text": f"after {i}"}) for i in range(3))
                )
                assert [texts(answer) for answer in answers] == [[f"after {i}"] for i in range(3)]
                new = transport.session_id
                assert new is not None and new != old
                initializes = wire.posts("initialize")
                assert len(initializes) == 1 and initializes[0].status == 200
                refused = wire.posts("tools/call", old)
                assert len(refused) == 3 and {s.status for s in refused} == {404}
                assert len(wire.posts("tools/call", new)) == 3
                assert wire.posts("notifications/initialized", new)
                assert session.protocol_version == version
                await eventually(lambda: bool(renewals.seen), what="the renewal to be reported")
                assert renewals.seen == [SessionRenewal(old, new, version, 1)]
                assert not transport.expired and not session.is_closed
            finally:
                second.stop()

    run(main())


def test_a_call_in_flight_when_the_session_ends_fails_and_is_not_sent_again() -> None:
    """A call whose POST was accepted may have run when the server ends the
    session (a DELETE from elsewhere) before answering: it fails with -32000
    and is not sent again; the next call starts the new session (the
    standalone stream's 404 may start it first) and is answered. (Spec
    statement: see the module docstring.)"""
    renewals = Renewals()
    server, wire = our_server()

    async def main() -> None:
        async with opened(server.url(), "2025-11-25", renewals) as (session, stub):
            transport = transport_of(session)
            old = transport.session_id
            pending = asyncio.ensure_future(stub.call_tool("sleep", arguments={"seconds": 30}))
            await eventually(lambda: bool(wire.posts("tools/call", old)), what="the call's POST")
            async with httpx.AsyncClient() as raw:
                ended = await raw.delete(server.url(), headers={"mcp-session-id": old or ""})
            assert ended.status_code == 200
            with pytest.raises(McpError) as failed:
                await pending
            assert failed.value.code == jsonrpc.CONNECTION_CLOSED
            assert texts(await stub.call_tool("echo", arguments={"text": "next"})) == ["next"]
            new = transport.session_id
            assert new is not None and new != old
            assert len(wire.posts("initialize")) == 2  # the first session's, and the new one's
            sleeps = [s for s in wire.seen if s.rpc == "tools/call" and b"sleep" in s.body]
            assert len(sleeps) == 1  # sent once, in the ended session
            await eventually(lambda: bool(renewals.seen), what="the renewal to be reported")
            assert [(r.previous_session_id, r.session_id) for r in renewals.seen] == [(old, new)]
            await eventually(lambda: bool(wire.streams(new)), what="the new GET stream")

    try:
        run(main())
    finally:
        server.stop()


def test_a_session_evicted_for_another_client_is_renewed() -> None:
    """Our server keeping one session at a time evicts an idle one for a new
    client; the evicted client's next call gets 404, and it starts a new
    session and is answered. (Spec statement: see the module docstring.)"""
    renewals = Renewals()
    server, wire = our_server(max_sessions=1)

    async def main() -> None:
        async with opened(server.url(), "2025-06-18", renewals, listen=False) as (session, stub):
            old = transport_of(session).session_id
            await stub.ping()
            other = Client(name="other", version="0.1", protocol_version="2025-11-25")
            async with connect_streamable_http(other, server.url(), listen=False) as crowding:
                await mcp.ClientStub(crowding).ping()
                app = wire.app
                assert isinstance(app, HttpApp) and old not in app.streamable.sessions
            await stub.ping()
            assert transport_of(session).session_id not in (None, old)
            assert [s.status for s in wire.posts("ping", old)] == [200, 404]
            await eventually(lambda: bool(renewals.seen), what="the renewal to be reported")

    try:
        run(main())
    finally:
        server.stop()


class Updates(mcp.ClientHandlers):
    def __init__(self) -> None:
        self.updated: asyncio.Queue[str] = asyncio.Queue()
        self.logs: list[str] = []

    @override
    async def on_resource_updated(
        self, params: mcp.ResourceUpdatedNotificationParams, ctx: RequestContext
    ) -> None:
        self.updated.put_nowait(params.uri)


def notes() -> App:
    app = App("notes", "1.0")

    @app.resource("note://{id}")
    def note(id: int) -> str:
        return f"note {id}"

    @app.tool()
    def echo(text: str) -> str:
        return text

    return app


def test_subscriptions_and_log_level_are_set_up_again_in_the_new_session() -> None:
    """The resources subscribed to (less those unsubscribed since) and the
    log level are set up again in the new session: a change of a subscribed
    resource on the restarted server reaches the client. (Spec statement:
    see the module docstring.)"""
    renewals = Renewals()
    first = ThreadedServer(
        Wire(http_app(notes().server(), options=HttpOptions(retry_ms=RETRY_MS)))
    ).start()
    port = first.port

    async def main() -> None:
        handlers = Updates()
        client = Client(name="subscriber", version="0.1", handlers=handlers, on_renewed=renewals)
        async with connect_streamable_http(client, first.url()) as session:
            stub = mcp.ClientStub(session)
            await stub.subscribe(uri="note://1")
            await stub.subscribe(uri="note://2")
            await stub.unsubscribe(uri="note://2")
            await stub.set_level(level="debug")
            await restart(first)
            app = notes()
            wire = Wire(http_app(app.server(), options=HttpOptions(retry_ms=RETRY_MS)))
            second = ThreadedServer(wire, port).start()
            try:
                assert await stub.call_tool("echo", arguments={"text": "hi"})
                await eventually(lambda: bool(renewals.seen), what="the renewal to be reported")
                new = transport_of(session).session_id
                (renewal,) = renewals.seen
                assert renewal.restored == (
                    "resources/subscribe note://1",
                    "logging/setLevel debug",
                )
                assert renewal.not_restored == ()
                assert [s.status for s in wire.posts("resources/subscribe", new)] == [200]
                await eventually(lambda: bool(wire.streams(new)), what="the new GET stream")
                await second.call(lambda: app.notify_resource_updated("note://1"))
                assert await asyncio.wait_for(handlers.updated.get(), 10) == "note://1"
            finally:
                second.stop()

    run(main())


class EndsEverySession:
    """Our server, ending each session as soon as a tool is called in it."""

    def __init__(self, app: HttpApp) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            messages = [await receive()]
            while messages[-1].get("more_body"):
                messages.append(await receive())
            body = b"".join(m.get("body", b"") for m in messages)
            headers = dict(scope["headers"])
            session_id = headers.get(b"mcp-session-id", b"").decode()
            if b'"tools/call"' in body and session_id in self.app.streamable.sessions:
                await self.app.streamable.sessions.pop(session_id).close()
            replay = iter(messages)

            async def replaying() -> Any:
                return next(replay, {"type": "http.disconnect"})

            await self.app(scope, replaying, send)
            return
        await self.app(scope, receive, send)


def test_repeated_404s_end_the_session_after_a_bounded_number_of_new_sessions() -> None:
    """A server that ends every session as soon as it is used: the client
    starts a new session for each 404, up to DEFAULT_MAX_RENEWALS in a row,
    then the call fails with -32000 and the session ends; it does not loop.
    (Spec statement: see the module docstring.)"""
    renewals = Renewals()
    wire = Wire(EndsEverySession(http_app(lowlevel_server())))
    server = ThreadedServer(wire).start()

    async def main() -> None:
        async with opened(server.url(), "2025-11-25", renewals, listen=False) as (session, stub):
            with pytest.raises(McpError) as failed:
                await stub.call_tool("echo", arguments={"text": "never"})
            assert failed.value.code == jsonrpc.CONNECTION_CLOSED
            assert f"gave up after {DEFAULT_MAX_RENEWALS} new sessions" in failed.value.message
            assert len(wire.posts("initialize")) == 1 + DEFAULT_MAX_RENEWALS
            calls = [s for s in wire.seen if s.rpc == "tools/call"]
            assert len(calls) == 1 + DEFAULT_MAX_RENEWALS
            assert {s.status for s in calls} == {404}
            await eventually(lambda: session.is_closed, what="the session to end")
            with pytest.raises(ConnectionClosed):
                await stub.ping()

    try:
        run(main())
    finally:
        server.stop()


def test_without_renewal_a_restarted_server_ends_the_session() -> None:
    """``renew_session=False``: a 404 ends the session as before (every
    pending call fails, later calls raise ConnectionClosed) and no new
    InitializeRequest is sent."""
    renewals = Renewals()
    first, _ = our_server()
    port = first.port

    async def main() -> None:
        options = {"renew_session": False, "listen": False}
        async with opened(first.url(), "2025-11-25", renewals, **options) as (session, stub):
            await stub.ping()
            await restart(first)
            second, wire = our_server(port)
            try:
                with pytest.raises(McpError) as expired:
                    await stub.ping()
                assert expired.value.code == jsonrpc.CONNECTION_CLOSED
                assert "open a new session" in expired.value.message
                assert expired.value.data == {"httpStatus": 404}
                await eventually(lambda: session.is_closed, what="the session to end")
                with pytest.raises(ConnectionClosed):
                    await stub.ping()
                assert wire.posts("initialize") == [] and renewals.seen == []
            finally:
                second.stop()

    run(main())


# ---------------------------------------------------------------- the SDK's server


@contextlib.contextmanager
def sdk_server(port: int = 0) -> Iterator[SubprocessServer]:
    server = SubprocessServer("streamable", str(port)).wait_ready()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.peers
def test_the_sdk_server_restarted_on_the_same_port_gets_a_new_session() -> None:
    """The official SDK's Streamable HTTP server, restarted on the same
    port, answers 404 to the old session: a call in flight then fails
    (it may have run), and the calls after it are answered in a new session.
    (Spec statement: see the module docstring.)"""
    renewals = Renewals()

    async def main() -> None:
        with contextlib.ExitStack() as servers:
            first = servers.enter_context(sdk_server())
            async with opened(first.url(), "2025-11-25", renewals) as (session, stub):
                transport = transport_of(session)
                old = transport.session_id
                added = await stub.call_tool("add", arguments={"a": 1, "b": 2})
                assert texts(added) == ["3"]
                pending = asyncio.ensure_future(stub.call_tool("sleep", arguments={"seconds": 30}))
                await asyncio.sleep(0.3)  # the call is running on the server
                await restart(first)
                servers.enter_context(sdk_server(first.port))
                with pytest.raises(McpError) as failed:
                    await pending
                assert failed.value.code == jsonrpc.CONNECTION_CLOSED
                answers = await asyncio.gather(
                    *(stub.call_tool("add", arguments={"a": i, "b": 1}) for i in range(3))
                )
                assert [texts(answer) for answer in answers] == [[str(i + 1)] for i in range(3)]
                new = transport.session_id
                assert new is not None and new != old
                await eventually(lambda: bool(renewals.seen), what="the renewal to be reported")
                assert [(r.previous_session_id, r.session_id) for r in renewals.seen] == [
                    (old, new)
                ]
                assert not session.is_closed

    run(main())
