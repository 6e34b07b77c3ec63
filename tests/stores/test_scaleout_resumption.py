"""Resuming a request stream on another worker than the one that answered it,
on a real redis-server: a finished stream hands over what the client missed
and ends, and a resumption that comes before the events are logged waits for
them instead of being refused."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.asgi import request
from support.peers import run
from support.scaleout import HANDSHAKE, sse_events
from support.scaleout_app import Tools

from mcpbind._extensions.tasks.serving import Tasks
from mcpbind._server.server import Server
from mcpbind._transports.http.server.streamable import StreamableHTTPApp
from mcpbind.stores._redis_store import RedisStore

pytestmark = pytest.mark.redis

HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def worker(url: str) -> StreamableHTTPApp:
    tools = Tools(Tasks())
    server = Server(tools, name="w", version="1", capabilities={"logging": {}})
    tools.server = server
    return StreamableHTTPApp(server, store=RedisStore.from_url(url))


async def open_session(app: StreamableHTTPApp) -> dict[str, str]:
    params = {
        "protocolVersion": HANDSHAKE,
        "capabilities": {},
        "clientInfo": {"name": "r", "version": "1"},
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
    level = {"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "info"}}
    assert (
        await request(app, "POST", "/mcp", headers=headers, body=json.dumps(level).encode())
    ).status == 200
    return headers


async def call(
    app: StreamableHTTPApp,
    headers: dict[str, str],
    request_id: int,
    tool: str,
    arguments: dict[str, Any],
) -> list[tuple[str | None, Any]]:
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    answer = await request(app, "POST", "/mcp", headers=headers, body=json.dumps(message).encode())
    assert answer.status == 200, answer.body
    return [(event_id, data) for event_id, data in sse_events(answer.body.decode()) if data]


async def resume(
    app: StreamableHTTPApp, headers: dict[str, str], last: str
) -> tuple[int, list[Any]]:
    # The helper's timeout fails a resumption that would never end.
    answer = await request(
        app, "GET", "/mcp", headers={**headers, "last-event-id": last}, timeout=20
    )
    return answer.status, [data for _, data in sse_events(answer.body.decode()) if data]


def test_a_finished_stream_resumed_on_another_worker_hands_over_the_rest_and_ends(
    redis_url: str,
) -> None:
    async def scenario() -> None:
        first, second = worker(redis_url), worker(redis_url)
        try:
            headers = await open_session(first)
            events = await call(first, headers, 2, "count", {"n": 3})
            assert len(events) == 4 and events[-1][1]["id"] == 2
            status, rest = await resume(second, headers, str(events[0][0]))
            assert status == 200
            assert rest == [data for _, data in events[1:]]
            status, rest = await resume(second, headers, str(events[-1][0]))
            assert (status, rest) == (200, [])
        finally:
            await first.close()
            await second.close()

    run(scenario(), timeout=60)


def test_a_resumption_racing_the_event_log_waits_for_it(redis_url: str) -> None:
    async def scenario() -> None:
        first, second = worker(redis_url), worker(redis_url)
        try:
            headers = await open_session(first)
            for n in range(10, 20):
                events = await call(first, headers, n, "pid", {})
                ((last, answer),) = events
                # At once, before the first worker's background write has gone out.
                status, rest = await resume(second, headers, str(last))
                assert (status, rest) == (200, []), (n, status, rest)
            status, _ = await resume(second, headers, "nobody:1")
            assert status == 400  # a stream no worker named is still unknown at once
        finally:
            await first.close()
            await second.close()

    run(scenario(), timeout=60)
