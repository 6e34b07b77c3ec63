"""Redis restarted under a worker's followers of event logs, on a real
redis-server stopped and started by the test.

A stream followed on a worker waits on the worker's one pub/sub connection,
subscribed while it is followed. While Redis restarts, every read of a log
ends with what the log holds or StoreUnavailable, which the HTTP layer turns
into a 503 before a response started and a clean end of the stream after
(the client resumes it); no other error reaches the ASGI server, whatever the
event loop (uvicorn serves on uvloop when it is installed, as in the soak run
of the benchmark). Then the pub/sub connection is back by itself."""

from __future__ import annotations

import asyncio
import itertools
import traceback
from collections.abc import Callable

import pytest
import uvloop
from support.redis_server import RedisServer

from mcpbind.stores._base import StoreUnavailable
from mcpbind.stores._redis_store import RedisStore

pytestmark = pytest.mark.redis

LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,
}
FOLLOWERS = 200  # each follows a log of its own at a time: a subscription each
RESTARTS = 3


async def restarted_under_followers(redis: RedisServer) -> list[str]:
    """What escaped a read of a log (but StoreUnavailable) while Redis restarted."""
    store = RedisStore.from_url(redis.url)
    await store.start()
    escaped: list[str] = []
    stop = asyncio.Event()
    logs = itertools.count()

    async def follow() -> None:
        while not stop.is_set():
            try:
                # Like a request stream's follower: subscribed, read, woken, unsubscribed.
                await store.read_after(f"s{next(logs)}:1", 0, 0.05)
            except StoreUnavailable:
                await asyncio.sleep(0.01)
            except Exception:
                escaped.append(traceback.format_exc())
                await asyncio.sleep(0.01)

    async def write() -> None:
        while not stop.is_set():
            try:
                await store.append_at("s:1", 1, b"m", 60, 10)
                await store.read_after("s:1", 0, 0)
            except StoreUnavailable:
                await asyncio.sleep(0.01)
            except Exception:
                escaped.append(traceback.format_exc())

    def restart() -> None:
        redis.stop()  # SIGTERM: Redis closes every connection, as at an operator's restart
        redis.start()

    load = [asyncio.create_task(follow()) for _ in range(FOLLOWERS)]
    load += [asyncio.create_task(write()) for _ in range(20)]
    try:
        for _ in range(RESTARTS):
            await asyncio.sleep(0.5)
            await asyncio.to_thread(restart)
        await asyncio.sleep(0.5)
    finally:
        stop.set()
        await asyncio.gather(*load)
    # The pub/sub connection is back: a message on the bus reaches this worker.
    heard = asyncio.Event()

    async def listener(message: bytes) -> None:
        if message == b"back":
            heard.set()

    store.subscribe(listener)
    while not heard.is_set():
        try:
            await store.publish(b"back")
        except StoreUnavailable:
            pass
        await asyncio.sleep(0.2)
    await store.close()
    return escaped


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_reads_of_logs_while_redis_restarts_fail_only_as_the_store_unavailable(loop: str) -> None:
    redis = RedisServer()
    redis.start()
    try:
        with asyncio.Runner(loop_factory=LOOPS[loop]) as runner:
            escaped = runner.run(asyncio.wait_for(restarted_under_followers(redis), 120))
    finally:
        redis.close()
    assert escaped == [], "".join(escaped[:3])
