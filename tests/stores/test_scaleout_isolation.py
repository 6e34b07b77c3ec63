"""Two deployments on one redis-server, apart by database number or by key
prefix, never see each other: Redis pub/sub channels span databases, so
every channel carries the deployment's prefix and database."""

from __future__ import annotations

import asyncio

import pytest
from support.peers import run
from support.redis_server import RedisServer

from mcpbind.stores._redis_store import RedisStore

pytestmark = pytest.mark.redis


def test_deployments_apart_by_database_or_prefix_never_hear_each_other() -> None:
    async def scenario(port: int) -> None:
        stores = {
            "a": RedisStore.from_url(f"redis://127.0.0.1:{port}/0"),
            "other db": RedisStore.from_url(f"redis://127.0.0.1:{port}/1"),
            "other prefix": RedisStore.from_url(f"redis://127.0.0.1:{port}/0", prefix="blue:"),
        }
        heard: dict[str, list[bytes]] = {name: [] for name in stores}
        for name, store in stores.items():

            async def listen(message: bytes, name: str = name) -> None:
                heard[name].append(message)

            store.subscribe(listen)
            await store.start()
        try:
            # A waiting reader of one deployment's log is not woken by another's write.
            reader = asyncio.ensure_future(stores["a"].read_after("s:g", 0, 30))
            while not stores["a"].bus.following:
                await asyncio.sleep(0.01)
            for name in ("other db", "other prefix"):
                await stores[name].append("s:g", name.encode(), 60, 10)
                await stores[name].publish(name.encode())
            # Published last: once each has heard its own, an earlier message would be in too.
            for name, store in stores.items():
                await store.publish(b"own " + name.encode())
            while any(b"own " + name.encode() not in heard[name] for name in stores):
                await asyncio.sleep(0.01)
            assert heard == {
                "a": [b"own a"],
                "other db": [b"other db", b"own other db"],
                "other prefix": [b"other prefix", b"own other prefix"],
            }
            await stores["a"].append("s:g", b"mine", 60, 10)
            assert await reader == ([(1, b"mine")], False)
        finally:
            for store in stores.values():
                await store.close()

    redis = RedisServer()
    redis.start()
    try:
        run(scenario(redis.port), timeout=60)
    finally:
        redis.close()
