"""The store interface, kept the same way by the in-process store and the
Redis store (here on fakeredis; the scale-out tests run a real redis-server)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import fakeredis
import pytest
from support.peers import run

from mcpbind.stores import MemoryStore, Store
from mcpbind.stores._redis_store import RedisStore


def memory() -> Store:
    return MemoryStore()


def redis() -> Store:
    return RedisStore(fakeredis.FakeAsyncRedis(server=fakeredis.FakeServer()))


STORES = pytest.mark.parametrize("make", [memory, redis], ids=["memory", "redis"])


def scenario(make: Callable[[], Store], body: Callable[[Store], Awaitable[None]]) -> None:
    async def go() -> None:
        store = make()
        try:
            await body(store)
        finally:
            await store.close()

    run(go(), timeout=20)


@STORES
def test_sessions_are_capped_touched_and_deleted(make: Callable[[], Store]) -> None:
    async def body(store: Store) -> None:
        assert await store.create_session("a", b"A", 30, cap=2)
        assert await store.create_session("b", b"B", 30, cap=2)
        assert not await store.create_session("c", b"C", 30, cap=2)  # the cap: nothing kept
        assert await store.touch_session("c", 30) is None
        assert await store.count_sessions() == 2
        assert await store.touch_session("a", 30) == b"A"
        await store.update_session("a", b"A2", 30)
        assert await store.touch_session("a", 30) == b"A2"
        assert await store.delete_session("a") and not await store.delete_session("a")
        assert await store.touch_session("a", 30) is None
        assert await store.create_session("c", b"C", 30, cap=2)  # room again

    scenario(make, body)


@STORES
def test_sessions_expire_and_free_their_place(make: Callable[[], Store]) -> None:
    async def body(store: Store) -> None:
        assert await store.create_session("a", b"A", 0.05, cap=1)
        await asyncio.sleep(0.15)
        assert await store.touch_session("a", 1) is None
        assert await store.create_session("b", b"B", 30, cap=1)

    scenario(make, body)


@STORES
def test_event_logs_number_read_after_trim_and_end(make: Callable[[], Store]) -> None:
    async def body(store: Store) -> None:
        assert [await store.append("s:g", f"m{n}".encode(), 30, 3) for n in range(5)] == [
            1,
            2,
            3,
            4,
            5,
        ]
        events, ended = await store.read_after("s:g", 0, 0)
        assert events == [(3, b"m2"), (4, b"m3"), (5, b"m4")] and not ended  # the newest 3 kept
        assert await store.append("s:g", b"dup", 30, 3, once="note-1") == 6
        assert await store.append("s:g", b"dup", 30, 3, once="note-1") == 0  # the same note once
        for seq in (1, 2, 3):
            await store.append_at("s:r", seq, f"r{seq}".encode(), 30, 100)
        await store.append_at("s:r", 4, None, 30, 100)
        assert await store.read_after("s:r", 1, 0) == ([(2, b"r2"), (3, b"r3")], True)
        assert await store.has_stream("s:r") and not await store.has_stream("s:other")
        await store.append_at(
            "s:one", 1, b"response", 30, 100, end=True
        )  # the last event carries the end
        assert await store.read_after("s:one", 0, 0) == ([(1, b"response")], True)

    scenario(make, body)


@STORES
def test_a_stream_declared_before_its_first_event_is_known_and_says_what_it_is(
    make: Callable[[], Store],
) -> None:
    """A stream whose priming event went out before any of its events: known
    (a resumption is not refused as unknown), and its first event's writer
    changes nothing of what it is."""

    async def body(store: Store) -> None:
        await store.declare_stream("s:r", b'{"r":[7]}', 30)
        assert await store.has_stream("s:r") and not await store.has_stream("s:other")
        assert await store.read_after("s:r", 0, 0) == ([], False)
        await store.append_at("s:r", 1, b"first", 30, 100, end=True, about=b"other")
        assert await store.stream_about("s:r") == b'{"r":[7]}'
        assert await store.read_after("s:r", 0, 0) == ([(1, b"first")], True)

    scenario(make, body)


@STORES
def test_a_stream_says_what_it_is_and_a_late_writer_changes_nothing(
    make: Callable[[], Store],
) -> None:
    async def body(store: Store) -> None:
        assert await store.stream_about("s:r") is None
        await store.append_at("s:r", 1, b"first", 30, 100, about=b'{"r":[7]}')
        await store.append_at("s:r", 2, b"second", 30, 100, about=b"other")
        assert await store.stream_about("s:r") == b'{"r":[7]}'  # the first writer's
        await store.append_at(
            "s:r", 2, b"again", 30, 100, end=True
        )  # a second writer of the same event
        await store.append_at("s:r", 3, b"last", 30, 100, end=True)
        assert await store.read_after("s:r", 0, 0) == (
            [(1, b"first"), (2, b"second"), (3, b"last")],
            True,
        )

    scenario(make, body)


@STORES
def test_a_reader_waits_for_the_next_event(make: Callable[[], Store]) -> None:
    async def body(store: Store) -> None:
        await store.append("s:g", b"first", 30, 10)
        reader = asyncio.ensure_future(store.read_after("s:g", 1, 5))
        await asyncio.sleep(0.1)
        assert not reader.done()
        await store.append("s:g", b"second", 30, 10)
        assert await asyncio.wait_for(reader, 5) == ([(2, b"second")], False)

    scenario(make, body)


@STORES
def test_a_terminal_task_snapshot_is_final(make: Callable[[], Store]) -> None:
    async def body(store: Store) -> None:
        await store.put_task("t", b"working", False, 30)
        assert await store.get_task("t") == b"working"
        await store.put_task("t", b"cancelled", True, None)
        await store.put_task("t", b"completed", True, None)  # too late: the first outcome stays
        assert await store.get_task("t") == b"cancelled"
        assert await store.get_task("unknown") is None

    scenario(make, body)


@STORES
def test_marks_and_the_bus(make: Callable[[], Store]) -> None:
    async def body(store: Store) -> None:
        await store.set_mark("k", 7, 30)
        assert await store.get_mark("k") == 7 and await store.get_mark("other") == 0
        got: list[bytes] = []

        async def listener(message: bytes) -> None:
            got.append(message)

        store.subscribe(listener)
        await store.start()
        await store.publish(b"hello")
        for _ in range(100):
            if got:
                break
            await asyncio.sleep(0.02)
        assert got == [b"hello"]

    scenario(make, body)


@STORES
def test_a_lease_is_seen_held_until_dropped_or_expired(make: Callable[[], Store]) -> None:
    async def body(store: Store) -> None:
        assert not await store.lease_held("places", "a")
        assert await store.take_lease("places", "a", 2, 30)
        assert await store.take_lease("places", "b", 2, 0.05)
        assert await store.lease_held("places", "a") and await store.lease_held("places", "b")
        await asyncio.sleep(0.15)
        assert not await store.lease_held("places", "b")  # expired
        await store.drop_lease("places", "a")
        assert not await store.lease_held("places", "a")

    scenario(make, body)


@STORES
def test_a_mailbox_is_heard_only_while_held(make: Callable[[], Store]) -> None:
    async def body(store: Store) -> None:
        got: list[bytes] = []

        async def listener(message: bytes) -> None:
            got.append(message)

        await store.start()
        await store.post("box", b"before")  # nobody holds it: lost
        async with store.hold_box("box", listener):
            await store.post("other", b"elsewhere")
            await store.post("box", b"one")
            for _ in range(100):
                if got:
                    break
                await asyncio.sleep(0.02)
        await store.post("box", b"after")
        await asyncio.sleep(0.1)
        assert got == [b"one"]

    scenario(make, body)
