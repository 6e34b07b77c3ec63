"""Two uvicorn workers on a Sentinel-managed primary
(``redis+sentinel://:password@sentinel/service/db``): a primary with a
password, its replica and one Sentinel, started by the test. A forced
failover (``SENTINEL FAILOVER``) moves the primary; while it switches a
request is served or refused with a clear error, and once the Sentinel names
the new primary every request is served again, the sessions made before it
included."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from support.peers import run
from support.redis_server import SentinelGroup
from support.scaleout import SseReader, Workers, call, initialize, post, session_headers

from mcpbind.stores._base import StoreUnavailable
from mcpbind.stores._redis_store import RedisStore

pytestmark = pytest.mark.redis


@pytest.fixture(scope="module")
def group() -> Iterator[SentinelGroup]:
    redis = SentinelGroup(password="s3cret/p@ss")  # quoted in the URL
    try:
        redis.start()
        yield redis
    finally:
        redis.close()


@pytest.fixture(scope="module")
def cluster(group: SentinelGroup) -> Iterator[Workers]:
    workers = Workers(group)
    try:
        workers.start()
        yield workers
    finally:
        workers.stop()


def test_requests_keep_working_through_a_forced_failover(
    group: SentinelGroup, cluster: Workers
) -> None:
    session = initialize(cluster.url)
    for n in range(6):
        assert "result" in call(cluster.url, session, n, "pid", {})
    old = group.primary_port()

    outcomes: list[tuple[int, str]] = []
    stop = threading.Event()

    def keep_calling() -> None:
        n = 100
        while not stop.is_set():
            message = {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                       "params": {"name": "pid", "arguments": {}}}  # fmt: skip
            answer = post(cluster.url, message, session)
            outcomes.append((answer.status_code, answer.text))
            n += 1

    caller = threading.Thread(target=keep_calling)
    caller.start()
    try:
        new = group.fail_over()
    finally:
        stop.set()
        caller.join()
    assert new != old
    for status, text in outcomes:  # during the switch: served, or refused saying why
        assert status == 200 or (
            status == 503 and "the shared store (Redis)" in text and "Traceback" not in text
        ), (status, text)

    # Once the new primary is named: the old session, a new one, and a stream resumed.
    for n in range(12):
        assert "result" in call(cluster.url, session, 200 + n, "pid", {})
    fresh = initialize(cluster.url)
    body = {"jsonrpc": "2.0", "id": 300, "method": "tools/call",
            "params": {"name": "count", "arguments": {"n": 4, "delay": 0.1}}}  # fmt: skip
    first = SseReader("POST", cluster.url, session_headers(fresh), body)
    first.next()
    last_id = first.last_id
    first.close()
    assert last_id is not None
    rest = SseReader(
        "GET", cluster.url, {**session_headers(fresh), "last-event-id": last_id}
    ).rest()
    assert [data["params"]["data"]["n"] for _, data in rest if "method" in data] == [1, 2, 3]
    assert rest[-1][1]["id"] == 300
    assert "Traceback" not in cluster.output()


def test_a_service_the_sentinels_do_not_know_is_refused_saying_so(group: SentinelGroup) -> None:
    async def scenario() -> None:
        store = RedisStore.from_url(group.url.replace(f"/{group.service}/", "/nosuch/"))
        try:
            with pytest.raises(StoreUnavailable, match="unreachable: No master found for 'nosuch'"):
                await store.create_session("s", b"record", 60, 10)
        finally:
            await store.close()

    run(scenario(), timeout=60)


def test_a_sentinel_url_without_a_service_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="names its Sentinels and the service"):
        RedisStore.from_url("redis+sentinel://127.0.0.1:26379")
    with pytest.raises(ValueError, match="not a Redis URL"):
        RedisStore.from_url("redis+shard://127.0.0.1:6379")
