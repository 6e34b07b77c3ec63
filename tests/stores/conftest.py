"""What the store tests share: a redis-server for a module's tests, and for the scale-out
tests a worker on it and a MONITOR of the commands the workers send it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.redis_monitor import Monitor
from support.redis_server import RedisServer
from support.scaleout_app import Tools, Worker

from mcpbind._extensions.tasks.serving import Tasks
from mcpbind._server.server import Server
from mcpbind._transports.http.server.streamable import StreamableHTTPApp
from mcpbind.http import HttpOptions
from mcpbind.stores._redis_store import RedisStore


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    """The URL of a redis-server started for the module's tests, stopped after them."""
    redis = RedisServer()
    redis.start()
    try:
        yield redis.url
    finally:
        redis.close()


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    """A redis-server for the module's tests (a test that freezes it thaws it)."""
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def monitor(redis: RedisServer) -> Iterator[Monitor]:
    """MONITOR on ``redis`` for the test: the commands and round trips workers send it."""
    watching = Monitor(redis)
    try:
        yield watching
    finally:
        watching.close()


@pytest.fixture
def worker(redis: RedisServer) -> Worker:
    """Makes workers of the scale-out server (support.scaleout_app's tools) on ``redis``."""

    def make(options: HttpOptions) -> StreamableHTTPApp:
        tools = Tools(Tasks())
        server = Server(tools, name="w", version="1", state_key=b"k" * 32)
        tools.server = server
        return StreamableHTTPApp(server, store=RedisStore.from_url(redis.url), options=options)

    return make
