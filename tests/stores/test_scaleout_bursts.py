"""A worker under bursts, on a real redis-server: its Redis connections stay
bounded whatever it serves (open streams wait on one pub/sub connection,
commands share a blocking pool), a burst of one session's requests makes one
copy of it per worker, and every request is answered."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from support.asgi import Response, request
from support.peers import run
from support.scaleout import HANDSHAKE, sse_events
from support.scaleout_app import Tools

from mcpbind._extensions.tasks.serving import Tasks
from mcpbind._server.server import Server
from mcpbind._transports.http.server.shared_sessions import SharedSessions
from mcpbind._transports.http.server.streamable import StreamableHTTPApp
from mcpbind.http import HttpOptions
from mcpbind.stores._base import StoreUnavailable
from mcpbind.stores._redis_store import RedisStore

pytestmark = pytest.mark.redis

HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def worker(url: str, max_connections: int = 32) -> StreamableHTTPApp:
    tasks = Tasks()
    tools = Tools(tasks)
    server = Server(tools, name="w", version="1")
    tools.server = server
    store = RedisStore.from_url(url, max_connections=max_connections)
    return StreamableHTTPApp(server, store=store, options=HttpOptions(max_streams=1024))


def table_of(app: StreamableHTTPApp) -> SharedSessions:
    assert isinstance(app.table, SharedSessions)
    return app.table


async def open_session(app: StreamableHTTPApp) -> dict[str, str]:
    params = {
        "protocolVersion": HANDSHAKE,
        "capabilities": {},
        "clientInfo": {"name": "burst", "version": "1"},
    }
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    opened = await request(app, "POST", "/mcp", headers=HEADERS, body=json.dumps(body).encode())
    assert opened.status == 200, opened.body
    headers = {
        **HEADERS,
        "mcp-session-id": opened.headers["mcp-session-id"],
        "mcp-protocol-version": HANDSHAKE,
    }
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    assert (await request(app, "POST", "/mcp", headers=headers, body=note)).status == 202
    return headers


async def call_pid(app: StreamableHTTPApp, headers: dict[str, str], request_id: int) -> Response:
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call"}
    message["params"] = {"name": "pid", "arguments": {}}  # type: ignore[assignment]
    return await request(
        app, "POST", "/mcp", headers=headers, body=json.dumps(message).encode(), timeout=60
    )


def answered(response: Response, request_id: int) -> bool:
    if response.status != 200:
        return False
    found: list[Any] = [data for _, data in sse_events(response.body.decode()) if data]
    return any(data.get("id") == request_id and "result" in data for data in found)


def test_a_burst_of_one_new_session_is_answered_on_both_workers_with_one_copy_each(
    redis_url: str,
) -> None:
    """200 concurrent requests of one session, 100 on each of two workers, the
    session new to the second: every one answered, one copy of it there."""

    async def scenario() -> None:
        first, second = worker(redis_url), worker(redis_url)
        try:
            headers = await open_session(first)
            session_id = headers["mcp-session-id"]
            assert session_id not in table_of(second).sessions
            copies: list[object] = []
            make = table_of(second).make

            def counted(*args: Any, **kwargs: Any) -> Any:
                made = make(*args, **kwargs)
                copies.append(made)
                return made

            table_of(second).make = counted  # type: ignore[method-assign]
            calls = [
                call_pid(app, headers, n)
                for n in range(1, 201)
                for app in ((first,) if n % 2 else (second,))
            ]
            responses = await asyncio.gather(*calls)
            failed = [
                (n, r.status, r.body[:200])
                for n, r in enumerate(responses, 1)
                if not answered(r, n)
            ]
            assert failed == []
            assert len(copies) == 1
            assert table_of(second).sessions[session_id] is copies[0]
            assert table_of(second)._finding.pending == {}
        finally:
            await first.close()
            await second.close()

    run(scenario(), timeout=120)


def test_open_get_streams_hold_no_command_connection_and_new_sessions_are_served(
    redis_url: str,
) -> None:
    """120 GET streams open on a worker with 16 Redis connections: a new
    session and its requests are still served, and a write reaches a stream."""

    async def scenario() -> None:
        app = worker(redis_url, max_connections=16)
        streams: list[asyncio.Task[Response]] = []
        try:
            sessions = [await open_session(app) for _ in range(120)]
            streams = [
                asyncio.ensure_future(request(app, "GET", "/mcp", headers=headers, timeout=120))
                for headers in sessions
            ]
            store = app.table.store  # type: ignore[attr-defined]
            assert isinstance(store, RedisStore)
            pool = store.client.connection_pool
            # A stream counts as following its log as soon as it asks to, before
            # its subscription is confirmed and its first read (one command on a
            # pooled connection) is done: the last ones to start still hold a
            # connection for a moment then. Once every stream waits, only the
            # pub/sub connection is in use; a stream holding one would keep it.
            for _ in range(400):
                if len(store.bus.following) == 120 and len(pool._in_use_connections) <= 1:
                    break
                await asyncio.sleep(0.05)
            assert len(store.bus.following) == 120
            assert len(pool._in_use_connections) <= 1  # the pub/sub one
            headers = await open_session(app)
            assert answered(await call_pid(app, headers, 7), 7)
        finally:
            for stream in streams:
                stream.cancel()
            await asyncio.gather(*streams, return_exceptions=True)
            await app.close()

    run(scenario(), timeout=120)


def test_a_busy_pool_makes_a_command_wait_then_says_it_was_busy(redis_url: str) -> None:
    """A command waits for a free connection; past the pool's timeout the error
    says that every connection was busy, not that Redis is unreachable."""

    async def scenario() -> None:
        store = RedisStore.from_url(redis_url, max_connections=2, pool_timeout=0.5)
        pool = store.client.connection_pool
        try:
            held = [await pool.get_connection() for _ in range(2)]  # type: ignore[no-untyped-call]
            waiting = asyncio.ensure_future(store.get_mark("busy"))
            await asyncio.sleep(0)
            await pool.release(held.pop())  # type: ignore[no-untyped-call]
            assert await waiting == 0  # it waited and was served
            held.append(await pool.get_connection())  # type: ignore[no-untyped-call]
            with pytest.raises(StoreUnavailable, match="every connection of this worker is busy"):
                await store.get_mark("busy")
            for connection in held:
                await pool.release(connection)  # type: ignore[no-untyped-call]
        finally:
            await store.close()

    run(scenario(), timeout=30)
