"""Handshake sessions of a deployment of several workers sharing Redis: a
session started on one worker is served by every other, ends everywhere when
deleted on any, and its streams resume on any worker with Last-Event-ID."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from support.asgi import request
from support.peers import run
from support.redis_server import RedisServer
from support.scaleout import (
    HANDSHAKE,
    SseReader,
    Workers,
    call,
    deployment,
    initialize,
    on_both_workers,
    post,
    session_headers,
    sse_events,
)
from support.scaleout_app import Tools

from mcpbind._extensions.tasks.serving import Tasks
from mcpbind._server.server import Server
from mcpbind._transports.http.server.streamable import StreamableHTTPApp
from mcpbind.http import HttpOptions
from mcpbind.stores._redis_store import RedisStore

pytestmark = pytest.mark.redis


@pytest.fixture(scope="module")
def cluster() -> Iterator[Workers]:
    with deployment() as (_, workers):
        yield workers


def pid_of(result: dict[str, object]) -> int:
    return int(result["result"]["content"][0]["text"])  # type: ignore[index]


def test_a_session_started_on_one_worker_is_served_by_all(cluster: Workers) -> None:
    session = initialize(cluster.url)
    pids = on_both_workers(
        lambda n: str(pid_of(call(cluster.url, session, n, "pid", {}))), least=20
    )
    assert len(set(pids)) == 2  # both workers served it
    listed = post(
        cluster.url, {"jsonrpc": "2.0", "id": 99, "method": "tools/list", "params": {}}, session
    )
    assert listed.status_code == 200 and '"pid"' in listed.text


def test_a_session_deleted_on_one_worker_is_gone_on_all(cluster: Workers) -> None:
    session = initialize(cluster.url)
    call(cluster.url, session, 1, "pid", {})
    with httpx.Client() as client:
        deleted = client.delete(cluster.url, headers=session_headers(session))
    assert deleted.status_code == 200
    for n in range(12):
        answer = post(
            cluster.url,
            {"jsonrpc": "2.0", "id": n + 2, "method": "tools/call", "params": {"name": "pid"}},
            session,
        )
        assert answer.status_code == 404, answer.text


def test_a_request_stream_resumes_on_any_worker_with_exactly_the_missing_events(
    cluster: Workers,
) -> None:
    session = initialize(cluster.url)
    for round_ in range(4):  # resumed connections land on either worker
        body = {"jsonrpc": "2.0", "id": 10 + round_, "method": "tools/call",
                "params": {"name": "count", "arguments": {"n": 8, "delay": 0.15}}}  # fmt: skip
        first = SseReader("POST", cluster.url, session_headers(session), body)
        seen = [first.next() for _ in range(3)]
        last_id = first.last_id
        first.close()
        assert last_id is not None and [data["params"]["data"]["n"] for _, data in seen] == [
            0,
            1,
            2,
        ]
        rest = SseReader(
            "GET", cluster.url, {**session_headers(session), "last-event-id": last_id}
        ).rest()
        numbers = [data["params"]["data"]["n"] for _, data in rest if "method" in data]
        assert numbers == [3, 4, 5, 6, 7]  # nothing lost, nothing repeated
        assert rest[-1][1]["id"] == 10 + round_ and "result" in rest[-1][1]
        ids = [int(event_id.split(":")[1]) for event_id, _ in seen + rest]  # type: ignore[union-attr]
        assert ids == list(range(1, len(ids) + 1))


def test_the_session_cap_is_counted_across_workers() -> None:
    async def scenario(url: str) -> None:
        def worker() -> StreamableHTTPApp:
            tasks = Tasks()
            return StreamableHTTPApp(
                Server(Tools(tasks), name="w", version="1"),
                store=RedisStore.from_url(url),
                options=HttpOptions(max_sessions=2),
            )

        first, second = worker(), worker()
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        }
        params = {
            "protocolVersion": HANDSHAKE,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        body = json.dumps(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
        ).encode()
        statuses = [
            (await request(app, "POST", "/mcp", headers=headers, body=body)).status
            for app in (first, second, first, second)
        ]
        assert statuses == [200, 200, 503, 503]
        refused = await request(second, "POST", "/mcp", headers=headers, body=body)
        # Under the id of the initialize it turns away, which fails now.
        assert json.loads(refused.body) == {
            "jsonrpc": "2.0",
            "id": 0,
            "error": {"code": -32603, "message": "Service Unavailable: too many sessions"},
        }
        await first.close()
        await second.close()

    redis = RedisServer()
    redis.start()
    try:
        run(scenario(redis.url))
    finally:
        redis.close()


def test_the_client_answers_a_server_request_on_any_worker(cluster: Workers) -> None:
    session = initialize(cluster.url, {"roots": {}})
    answered_on: set[str] = set()
    for round_ in range(8):  # the answers land on either worker; the request waits on one
        body = {
            "jsonrpc": "2.0",
            "id": 50 + round_,
            "method": "tools/call",
            "params": {"name": "ask_roots", "arguments": {}},
        }
        stream = SseReader("POST", cluster.url, session_headers(session), body)
        try:
            _, asked = stream.next()
            assert asked["method"] == "roots/list"
            roots = {"roots": [{"uri": "file:///work", "name": "work"}] * (round_ + 1)}
            answer = post(
                cluster.url, {"jsonrpc": "2.0", "id": asked["id"], "result": roots}, session
            )
            assert answer.status_code == 202
            _, done = stream.next()
            runner, count = done["result"]["content"][0]["text"].split()
            assert int(count) == round_ + 1
            answered_on.add(runner)
        finally:
            stream.close()


def test_expiry_and_the_log_level_hold_across_workers() -> None:
    """Two apps sharing one Redis stand for two workers here (in process, so
    that each request goes where the test says)."""

    async def scenario(url: str) -> None:
        def worker() -> StreamableHTTPApp:
            tools = Tools(Tasks())
            server = Server(tools, name="w", version="1")
            app = StreamableHTTPApp(
                server, store=RedisStore.from_url(url), options=HttpOptions(session_timeout=1.0)
            )
            tools.server = server
            return app

        first, second = worker(), worker()
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        }
        params = {
            "protocolVersion": HANDSHAKE,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        body = json.dumps(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
        ).encode()
        opened = await request(first, "POST", "/mcp", headers=headers, body=body)
        in_session = {
            **headers,
            "mcp-session-id": opened.headers["mcp-session-id"],
            "mcp-protocol-version": HANDSHAKE,
        }

        async def send(
            app: StreamableHTTPApp, request_id: int, method: str, params: dict[str, object]
        ) -> list[Any]:
            message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            answer = await request(
                app, "POST", "/mcp", headers=in_session, body=json.dumps(message).encode()
            )
            assert answer.status == 200, answer.body
            return [data for _, data in sse_events(answer.body.decode()) if data is not None]

        await send(first, 1, "logging/setLevel", {"level": "error"})
        counted = await send(second, 2, "tools/call", {"name": "count", "arguments": {"n": 3}})
        assert [m["method"] for m in counted if "method" in m] == []
        await send(first, 3, "logging/setLevel", {"level": "info"})
        await asyncio.sleep(0.2)  # past the second's trust in its copy: min(timeout / 10, 30 s)
        counted = await send(second, 4, "tools/call", {"name": "count", "arguments": {"n": 3}})
        assert [m["method"] for m in counted if "method" in m] == ["notifications/message"] * 3
        await asyncio.sleep(1.3)  # idle past session_timeout: expired everywhere
        message = json.dumps(
            {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "pid"}}
        ).encode()
        for app in (second, first):
            gone = await request(app, "POST", "/mcp", headers=in_session, body=message)
            assert gone.status == 404, gone.body
        await first.close()
        await second.close()

    redis = RedisServer()
    redis.start()
    try:
        run(scenario(redis.url))
    finally:
        redis.close()
