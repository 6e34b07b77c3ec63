"""``max_sessions_per_client`` holds while one client opens sessions over several
connections at once: a new session past the quota takes the place of one of the
client's idle sessions (or is refused with 503), and at no time does the client
hold more sessions than its quota. Before, making room freed the quota before the
idle session it closed was gone: another connection's ``initialize`` took the
freed place meanwhile, and then the first took one more (519 sessions held
against 512 over 8 connections)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from support.http_servers import lowlevel_server, serving
from support.peers import run
from support.redis_server import RedisServer

from mcpbind._transports.http.server.streamable import StreamableHTTPApp
from mcpbind.http import HttpApp, HttpOptions, http_app
from mcpbind.stores._redis_store import RedisStore

QUOTA = 512  # the default
CONNECTIONS = 8
EACH = 160  # initialize requests per connection: 1,280 in all, 2.5 times the quota
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "flood", "version": "0"},
        },
    }
)
PING = json.dumps({"jsonrpc": "2.0", "id": "p", "method": "ping"})


def held(app: StreamableHTTPApp) -> int:
    """Sessions of the app that are not closed."""
    return sum(1 for s in list(app.sessions.values()) if not s.session.is_closed)


def test_one_address_never_holds_more_sessions_than_its_quota_over_concurrent_connections() -> None:
    opened = flood(http_app(lowlevel_server(), options=HttpOptions(max_sessions_per_client=QUOTA)))
    assert opened > QUOTA  # the client went past its quota: its idle sessions made room


def test_the_app_wide_session_cap_holds_over_concurrent_connections() -> None:
    """``max_sessions`` alike: a session closed to make room still counts until it is closed."""
    options = HttpOptions(max_sessions=64, max_sessions_per_client=None)
    assert flood(http_app(lowlevel_server(), options=options), cap=64) > 64


@pytest.mark.redis
def test_the_quota_holds_the_same_with_sessions_shared_through_redis() -> None:
    """With a shared store the quota is counted app-wide in Redis (a session past it
    is refused with 503: no idle session is closed for it)."""
    redis = RedisServer()
    redis.start()
    try:
        options = HttpOptions(max_sessions_per_client=QUOTA)
        app = http_app(lowlevel_server(), store=RedisStore.from_url(redis.url), options=options)
        assert flood(app) == QUOTA
    finally:
        redis.close()


def flood(app: HttpApp, cap: int = QUOTA) -> int:
    """One address opens sessions over CONNECTIONS connections at once, EACH
    times each; at no time does it hold more than ``cap`` of them. How many it opened."""
    most = 0

    async def scenario(url: str) -> list[str]:
        nonlocal most
        opened: list[str] = []

        async def connection() -> None:
            nonlocal most
            # One client per connection: the requests of each go one after the other.
            async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=1)) as c:
                for _ in range(EACH):
                    answer = await c.post(url, content=INITIALIZE, headers=HEADERS)
                    assert answer.status_code in (200, 503), answer.text
                    if answer.status_code == 200:
                        opened.append(answer.headers["mcp-session-id"])
                    most = max(most, held(app.streamable))

        await asyncio.gather(*(connection() for _ in range(CONNECTIONS)))
        return opened

    with serving(app, limit_concurrency=2048) as served:
        url = served.url()
        opened = run(scenario(url), timeout=240)

        async def live() -> int:
            async with httpx.AsyncClient(timeout=60) as client:
                pinged = [
                    await client.post(
                        url,
                        content=PING,
                        headers={
                            **HEADERS,
                            "mcp-session-id": session_id,
                            "mcp-protocol-version": "2025-11-25",
                        },
                    )
                    for session_id in opened
                ]
            return sum(1 for answer in pinged if answer.status_code == 200)

        alive = run(live(), timeout=240)
    assert alive <= cap, f"one address holds {alive} sessions against a cap of {cap}"
    assert most <= cap, f"one address held {most} sessions at once (cap {cap})"
    return len(opened)
