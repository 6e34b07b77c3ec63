"""Stateless 2026-07-28 requests need nothing from Redis, on a real redis-server.

By default a worker counts each client's requests in flight (``max_requests_per_client``) and
its ``subscriptions/listen`` streams (``max_streams_per_client``) on its own: a stateless
request sends Redis no command, and a Redis that stalls (SIGSTOP: it accepts connections and
answers nothing) leaves them served. With app-wide counts turned on
(``app_wide_request_counts``), each store call is bounded by ``app_wide_count_timeout``; past
it the worker counts the request or the stream on its own (the same limit, per worker), says
so once in its log, and asks the store again a few seconds later.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from support.asgi import Response, request
from support.peers import run
from support.redis_monitor import Monitor
from support.redis_server import RedisServer
from support.scaleout import MODERN, modern_meta
from support.scaleout_app import Worker

from mcpbind._transports.http.server.streamable import StreamableHTTPApp
from mcpbind.http import HttpOptions

pytestmark = pytest.mark.redis

HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
# Far below the ~30 s a stateless request waited for a stalled Redis (three 10 s socket
# timeouts), far above the ~1 s it may take now, on a loaded machine.
ANSWERED_WITHIN = 10.0


async def call(
    app: StreamableHTTPApp,
    request_id: int,
    tool: str = "pid",
    arguments: dict[str, Any] | None = None,
    timeout: float = ANSWERED_WITHIN,
) -> Response:
    """A stateless 2026-07-28 ``tools/call`` (no session), from 127.0.0.1."""
    headers = {**HEADERS, "mcp-protocol-version": MODERN, "mcp-method": "tools/call"}
    headers["mcp-name"] = tool
    params = {"name": tool, "arguments": arguments or {}, "_meta": modern_meta()}
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return await request(
        app, "POST", "/mcp", headers=headers, body=json.dumps(body).encode(), timeout=timeout
    )


async def listen(
    app: StreamableHTTPApp, timeout: float = ANSWERED_WITHIN, leave: bool = True
) -> Response:
    """A 2026-07-28 ``subscriptions/listen`` from 127.0.0.1, left once its first event came
    (``leave``; else held open until ``timeout`` or cancelled)."""
    headers = {**HEADERS, "mcp-protocol-version": MODERN, "mcp-method": "subscriptions/listen"}
    params = {"notifications": {"toolsListChanged": True}, "_meta": modern_meta()}
    body = {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": params}
    return await request(
        app,
        "POST",
        "/mcp",
        headers=headers,
        body=json.dumps(body).encode(),
        leave_after_first_chunk=leave,
        timeout=timeout,
    )


def opened(response: Response) -> bool:
    """A listen stream that opened: its first event came (the acknowledgement)."""
    return response.status == 200 and b"data:" in response.body


async def close(app: StreamableHTTPApp) -> None:
    """Close the worker, and check that it closes (after a stall of Redis, the heartbeat
    once missed its cancellation and close() waited for it forever)."""
    closing = asyncio.ensure_future(app.close())
    done, _ = await asyncio.wait({closing}, timeout=60)
    assert closing in done, "the worker did not close within 60 s"
    closing.result()


def answered(response: Response) -> bool:
    return response.status == 200 and b'"result"' in response.body


def test_a_stateless_request_sends_redis_no_command_by_default(
    worker: Worker, monitor: Monitor
) -> None:
    """The default options (``max_requests_per_client`` 256, counted by each worker): not one
    command, as MONITOR shows."""

    async def scenario() -> None:
        app = worker(HttpOptions())
        try:
            assert answered(await call(app, 1))  # the worker's start-up (bus, heartbeat)
            start = monitor.mark()
            for n in range(2, 12):
                assert answered(await call(app, n))
            end = monitor.mark()
            assert monitor.commands(start, end, ignore=("mark:worker",)) == []
        finally:
            await close(app)

    run(scenario(), timeout=120)


def test_stateless_requests_are_answered_while_redis_is_frozen(
    redis: RedisServer, worker: Worker
) -> None:
    """Redis stopped with SIGSTOP (it accepts connections, answers nothing): 50 concurrent
    stateless requests are all answered, none waits for Redis."""

    async def scenario() -> None:
        app = worker(HttpOptions())
        try:
            assert answered(await call(app, 0))
            redis.freeze()
            try:
                responses = await asyncio.gather(*(call(app, n) for n in range(1, 51)))
                assert [r.status for r in responses if not answered(r)] == []
            finally:
                redis.thaw()
        finally:
            await close(app)

    run(scenario(), timeout=120)


def test_app_wide_counts_with_redis_frozen_fall_back_to_the_workers_own_count(
    redis: RedisServer, worker: Worker, monitor: Monitor, caplog: pytest.LogCaptureFixture
) -> None:
    """``app_wide_request_counts=True``, ``max_requests_per_client=2``: with Redis frozen
    each request is decided within ``app_wide_count_timeout`` (0.5 s here; 100 at once, more
    than the worker's 31 command connections to Redis), counted by the worker alone: answered, and refused (429) past the limit like the default count; the
    worker says so once. Redis thawed, the requests are counted in it again."""
    options = HttpOptions(
        max_requests_per_client=2, app_wide_request_counts=True, app_wide_count_timeout=0.5
    )

    async def scenario() -> None:
        app = worker(options)
        try:
            start = monitor.mark()
            assert answered(await call(app, 0))
            leases = [
                c for c in monitor.commands(start, monitor.mark()) if "lease:{requests:" in str(c)
            ]
            assert leases, "with app-wide counts on, a request takes a lease in Redis"
            redis.freeze()
            try:
                responses = await asyncio.gather(*(call(app, n) for n in range(1, 101)))
                assert [r.status for r in responses if not answered(r)] == []
                # Two held by this worker: the third is refused, as by the default count.
                held = [
                    asyncio.ensure_future(call(app, n, "sleep", {"seconds": 3.0})) for n in (30, 31)
                ]
                third: Response | None = None
                for _ in range(200):
                    third = await call(app, 32)
                    if third.status == 429:
                        break
                    await asyncio.sleep(0.02)
                assert third is not None and third.status == 429, third
                assert b"Too many requests in flight for this client" in third.body
                assert all(answered(r) for r in await asyncio.gather(*held))
            finally:
                redis.thaw()
            warned = [r for r in caplog.records if "by this worker alone" in r.getMessage()]
            assert len(warned) == 1, [r.getMessage() for r in caplog.records]
            # Asked again a few seconds later: the requests take leases in Redis once more.
            taken = False
            for n in range(100, 400):
                start = monitor.mark()
                assert answered(await call(app, n))
                found = monitor.commands(start, monitor.mark())
                if any("lease:{requests:" in str(c) and c.name == "EVALSHA" for c in found):
                    taken = True
                    break
                await asyncio.sleep(0.1)
            assert taken, "the app-wide count did not come back after Redis was thawed"
        finally:
            await close(app)

    caplog.set_level(logging.WARNING, logger="mcpbind")
    run(scenario(), timeout=180)


def test_a_listen_stream_sends_redis_no_command_by_default(
    worker: Worker, monitor: Monitor
) -> None:
    """The default options (``max_streams_per_client`` 128): a ``subscriptions/listen``
    stream, opened and closed, is counted by the worker alone: not one command."""

    async def scenario() -> None:
        app = worker(HttpOptions())
        try:
            assert answered(await call(app, 1))  # the worker's start-up (bus, heartbeat)
            assert opened(await listen(app))
            await asyncio.sleep(0.3)
            start = monitor.mark()
            for _ in range(5):
                assert opened(await listen(app))
            await asyncio.sleep(0.3)  # a place freed in the background would show by now
            end = monitor.mark()
            assert monitor.commands(start, end, ignore=("mark:worker",)) == []
        finally:
            await close(app)

    run(scenario(), timeout=120)


@pytest.mark.parametrize("app_wide", [False, True], ids=["default", "app-wide-counts"])
def test_a_listen_stream_opens_while_redis_is_frozen(
    redis: RedisServer, worker: Worker, caplog: pytest.LogCaptureFixture, app_wide: bool
) -> None:
    """Redis stopped with SIGSTOP: 20 ``subscriptions/listen`` streams at once each get their
    first event, by default (counted by the worker) and with ``app_wide_request_counts``
    (each store call bounded by ``app_wide_count_timeout``, 0.5 s here, then counted by the
    worker alone; it says so once). Until now each waited ~30 s for Redis, then got 503."""
    options = HttpOptions(app_wide_request_counts=app_wide, app_wide_count_timeout=0.5)

    async def scenario() -> None:
        app = worker(options)
        try:
            assert answered(await call(app, 0))
            assert opened(await listen(app))
            redis.freeze()
            try:
                streams = await asyncio.gather(*(listen(app) for _ in range(20)))
                assert [(s.status, s.body) for s in streams if not opened(s)] == []
                assert answered(await call(app, 1))
            finally:
                redis.thaw()
        finally:
            await close(app)
        warned = [r for r in caplog.records if "by this worker alone" in r.getMessage()]
        assert len(warned) == (1 if app_wide else 0), [r.getMessage() for r in caplog.records]

    caplog.set_level(logging.WARNING, logger="mcpbind")
    run(scenario(), timeout=180)


@pytest.mark.parametrize("app_wide", [False, True], ids=["default", "app-wide-counts"])
def test_a_worker_s_own_count_of_listen_streams_keeps_the_limit_while_redis_is_frozen(
    redis: RedisServer, worker: Worker, app_wide: bool
) -> None:
    """``max_streams_per_client=2``, Redis frozen: two listen streams held open, a third is
    refused (429, this client's streams), by the worker's own count (the default's, and the
    one app-wide counts fall back to); one closed, a new one opens."""
    options = HttpOptions(
        max_streams_per_client=2, app_wide_request_counts=app_wide, app_wide_count_timeout=0.5
    )

    async def scenario() -> None:
        app = worker(options)
        try:
            assert answered(await call(app, 0))
            redis.freeze()
            try:
                held = [
                    asyncio.ensure_future(listen(app, timeout=120, leave=False)) for _ in range(2)
                ]
                for _ in range(1000):  # until both hold their places
                    if app.places.streams == 2:
                        break
                    await asyncio.sleep(0.02)
                assert app.places.streams == 2 and not any(h.done() for h in held)
                third = await listen(app)
                assert third.status == 429, third
                assert b"Too many streams open for this client" in third.body
                held[0].cancel()
                await asyncio.gather(held[0], return_exceptions=True)
                assert opened(await listen(app))
                held[1].cancel()
                await asyncio.gather(held[1], return_exceptions=True)
            finally:
                redis.thaw()
        finally:
            await close(app)

    run(scenario(), timeout=180)
