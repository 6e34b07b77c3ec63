"""A worker that stops gracefully writes the stream events it has queued before it
lets go of the shared store, against a real redis-server started by the test.

Events are written to the store in the background, a little after they are sent;
a worker shutting down (a rolling deploy, a scale-in) stops its writer last, once
what it queued is written (for a couple of seconds at most), so that a client that
resumes one of its streams on another worker gets the answers it was sent, not an
error saying the worker stopped before answering."""

from __future__ import annotations

import asyncio

import pytest
from support.redis_server import RedisServer

from mcpbind._transports.http.server.store_log import StoreWriter
from mcpbind.stores._redis_store import RedisStore

pytestmark = pytest.mark.redis

STREAMS = 50
EVENTS = 40  # per stream


async def queued_then_closed(url: str) -> dict[str, list[int]]:
    """Queue every stream's events, close the writer at once; what the store then holds."""
    store = RedisStore.from_url(url)
    await store.start()
    writer = StoreWriter(store, ttl=60, history=1000)
    writer.start()
    try:
        for seq in range(1, EVENTS + 1):
            for stream in range(STREAMS):
                last = seq == EVENTS
                message = b'{"jsonrpc":"2.0","method":"notifications/progress"}'
                writer.log_event(f"s{stream}", seq, message, end=last)
        await writer.close()
    finally:
        await store.close()
    reader = RedisStore.from_url(url)
    await reader.start()
    try:
        held = {}
        for stream in range(STREAMS):
            events, _ = await reader.read_after(f"s{stream}", 0, 0)
            held[f"s{stream}"] = [seq for seq, _ in events]
        return held
    finally:
        await reader.close()


def test_events_queued_when_a_worker_stops_are_written_before_it_lets_go_of_the_store() -> None:
    redis = RedisServer()
    redis.start()
    try:
        held = asyncio.run(asyncio.wait_for(queued_then_closed(redis.url), 60))
    finally:
        redis.close()
    everything = list(range(1, EVENTS + 1))
    assert {stream: seqs for stream, seqs in held.items() if seqs != everything} == {}
