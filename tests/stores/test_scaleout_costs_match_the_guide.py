"""The scaling guide's table of Redis costs per request is true: each row that starts with a
number is measured here on a real redis-server with ``MONITOR`` (commands, those a Lua script
runs included; round trips, the commands a worker sent: see support.redis_monitor), with
the workers in this process."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from support.asgi import request
from support.peers import run
from support.redis_monitor import Cost, Monitor
from support.scaleout import HANDSHAKE, MODERN, modern_meta
from support.scaleout_app import Worker

from mcpbind._transports.http.server.streamable import StreamableHTTPApp
from mcpbind.http import HttpOptions

pytestmark = pytest.mark.redis

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "scaling.md"
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
# Per request, not per worker: connection set-up, and the heartbeat (every 2 s, its longer
# mark every session_timeout / 3).
NOT_PER_REQUEST = ("mark:worker", "HELLO", "SCRIPT", "CLIENT")


def guide_costs() -> dict[str, tuple[int, int]]:
    """The rows of the guide's cost table whose cells start with numbers: (commands,
    round trips), by the row's first cell."""
    text = GUIDE.read_text()
    table = text.split("| Request | Redis commands | Round trips |", 1)[1].split("\n\n", 1)[0]
    found = {}
    for line in table.splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        commands, trips = (re.match(r"\d+", cell) for cell in cells[1:3])
        if commands and trips:
            found[cells[0]] = (int(commands[0]), int(trips[0]))
    return found


async def stateless(app: StreamableHTTPApp, request_id: int) -> None:
    headers = {**HEADERS, "mcp-protocol-version": MODERN, "mcp-method": "tools/call"}
    headers["mcp-name"] = "pid"
    params = {"name": "pid", "arguments": {}, "_meta": modern_meta()}
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    answer = await request(app, "POST", "/mcp", headers=headers, body=json.dumps(body).encode())
    assert answer.status == 200 and b'"result"' in answer.body, answer.body


async def listen(app: StreamableHTTPApp) -> None:
    """A ``subscriptions/listen`` stream, left once its first event came."""
    headers = {**HEADERS, "mcp-protocol-version": MODERN, "mcp-method": "subscriptions/listen"}
    params = {"notifications": {"toolsListChanged": True}, "_meta": modern_meta()}
    body = {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": params}
    answer = await request(
        app,
        "POST",
        "/mcp",
        headers=headers,
        body=json.dumps(body).encode(),
        leave_after_first_chunk=True,
    )
    assert answer.status == 200 and b"data:" in answer.body, answer.body


async def initialize(app: StreamableHTTPApp) -> dict[str, str]:
    params = {"protocolVersion": HANDSHAKE, "capabilities": {},
              "clientInfo": {"name": "costs", "version": "1"}}  # fmt: skip
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    opened = await request(app, "POST", "/mcp", headers=HEADERS, body=json.dumps(body).encode())
    assert opened.status == 200, opened.body
    headers = {**HEADERS, "mcp-session-id": opened.headers["mcp-session-id"]}
    headers["mcp-protocol-version"] = HANDSHAKE
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    assert (await request(app, "POST", "/mcp", headers=headers, body=note)).status == 202
    return headers


async def session_call(app: StreamableHTTPApp, headers: dict[str, str], request_id: int) -> None:
    params = {"name": "pid", "arguments": {}}
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    answer = await request(app, "POST", "/mcp", headers=headers, body=json.dumps(body).encode())
    assert answer.status == 200 and b'"result"' in answer.body, answer.body


async def cost(monitor: Monitor, act: Callable[[], Awaitable[object]], ends_with: str = "") -> Cost:
    """What ``act`` (a coroutine function) costs, once the command ``ends_with`` (the last
    one it makes, off the response's path) was seen."""
    start = monitor.mark()
    await act()
    for _ in range(600):
        if not ends_with or any(
            c.name == ends_with for c in monitor.commands(start, len(monitor.lines))
        ):
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.2)  # nothing else comes of it (a test of the table, not of time)
    return monitor.cost(start, monitor.mark(), ignore=NOT_PER_REQUEST)


def test_the_guide_states_the_measured_rows() -> None:
    assert set(guide_costs()) >= {
        "2026-07-28 request (no task, no change notification), the default options",
        "The same with `HttpOptions(app_wide_request_counts=True)`",
        "`subscriptions/listen` stream opened and closed, the default options",
        "The same stream with `HttpOptions(app_wide_request_counts=True)`",
        "Request in a handshake session, answered on an SSE stream",
        "Session lookup",
        "`initialize` with `notifications/initialized`, the default options",
        "The same with `max_sessions_per_client=None`",
    }


def test_a_stateless_request_costs_what_the_guide_says(worker: Worker, monitor: Monitor) -> None:
    table = guide_costs()

    async def scenario() -> None:
        default = worker(HttpOptions())
        app_wide = worker(HttpOptions(app_wide_request_counts=True))
        try:
            for app in (default, app_wide):
                await stateless(app, 0)  # the worker's start, the scripts loaded
                await asyncio.sleep(0.3)
            found = await cost(monitor, lambda: stateless(default, 1))
            row = "2026-07-28 request (no task, no change notification), the default options"
            assert (found.commands, found.round_trips) == table[row], found
            found = await cost(monitor, lambda: stateless(app_wide, 2), ends_with="ZREM")
            row = "The same with `HttpOptions(app_wide_request_counts=True)`"
            assert (found.commands, found.round_trips) == table[row], found
        finally:
            await default.close()
            await app_wide.close()

    run(scenario(), timeout=120)


def test_a_listen_stream_costs_what_the_guide_says(worker: Worker, monitor: Monitor) -> None:
    table = guide_costs()

    async def scenario() -> None:
        default = worker(HttpOptions())
        app_wide = worker(HttpOptions(app_wide_request_counts=True))
        try:
            for app in (default, app_wide):
                await listen(app)  # the worker's start, the scripts loaded
                await asyncio.sleep(0.3)
            found = await cost(monitor, lambda: listen(default))
            row = "`subscriptions/listen` stream opened and closed, the default options"
            assert (found.commands, found.round_trips) == table[row], found
            found = await cost(monitor, lambda: listen(app_wide), ends_with="ZREM")
            row = "The same stream with `HttpOptions(app_wide_request_counts=True)`"
            assert (found.commands, found.round_trips) == table[row], found
        finally:
            await default.close()
            await app_wide.close()

    run(scenario(), timeout=120)


def test_a_session_costs_what_the_guide_says(worker: Worker, monitor: Monitor) -> None:
    table = guide_costs()

    async def scenario() -> None:
        first = worker(HttpOptions())
        second = worker(HttpOptions())
        unquoted = worker(HttpOptions(max_sessions_per_client=None))
        try:
            for app in (first, second, unquoted):  # the workers' start, the scripts loaded
                await session_call(app, await initialize(app), 1)
            await session_call(second, await initialize(first), 1)  # a lookup's scripts
            await asyncio.sleep(0.3)
            headers: dict[str, str] = {}

            async def opened() -> None:
                headers.update(await initialize(first))

            found = await cost(monitor, opened, ends_with="PUBLISH")
            row = "`initialize` with `notifications/initialized`, the default options"
            assert (found.commands, found.round_trips) == table[row], found

            found = await cost(monitor, lambda: initialize(unquoted), ends_with="PUBLISH")
            row = "The same with `max_sessions_per_client=None`"
            assert (found.commands, found.round_trips) == table[row], found

            found = await cost(monitor, lambda: session_call(first, headers, 2), "PUBLISH")
            row = "Request in a handshake session, answered on an SSE stream"
            answered = (found.commands, found.round_trips)
            assert answered == table[row], found

            # On a worker new to the session: the lookup, then the same answer.
            found = await cost(monitor, lambda: session_call(second, headers, 3), "PUBLISH")
            lookup = (found.commands - answered[0], found.round_trips - answered[1])
            assert lookup == table["Session lookup"], found
        finally:
            for app in (first, second, unquoted):
                await app.close()

    run(scenario(), timeout=120)
