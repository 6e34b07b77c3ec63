"""Two uvicorn workers sharing a Redis Cluster of three primaries
(``redis+cluster://``): every script's keys share a slot (hash tags), so a
session, its resumable streams, a task and change notifications work across
workers as on a single server, with the keys spread over the shards."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from support.peers import run
from support.redis_server import RedisClusterNodes
from support.scaleout import (
    MODERN,
    SseReader,
    Workers,
    call,
    initialize,
    modern_call,
    modern_meta,
    modern_request,
    on_both_workers,
    result_of,
    session_headers,
)

from mcpbind.stores._base import StoreUnavailable
from mcpbind.stores._redis_store import RedisStore

pytestmark = pytest.mark.redis


@pytest.fixture(scope="module")
def nodes() -> Iterator[RedisClusterNodes]:
    redis = RedisClusterNodes()
    try:
        redis.start()
        yield redis
    finally:
        redis.close()


@pytest.fixture(scope="module")
def cluster(nodes: RedisClusterNodes) -> Iterator[Workers]:
    workers = Workers(nodes)
    try:
        workers.start()
        yield workers
    finally:
        workers.stop()


def pid_of(result: dict[str, object]) -> str:
    return str(result["result"]["content"][0]["text"])  # type: ignore[index]


def test_a_session_started_on_one_worker_is_served_by_both(cluster: Workers) -> None:
    session = initialize(cluster.url)
    pids = on_both_workers(lambda n: pid_of(call(cluster.url, session, n, "pid", {})))
    assert len(set(pids)) == 2


def test_a_request_stream_resumes_on_either_worker_with_exactly_the_missing_events(
    cluster: Workers, nodes: RedisClusterNodes
) -> None:
    session = initialize(cluster.url)
    for round_ in range(4):  # resumed connections land on either worker
        body = {"jsonrpc": "2.0", "id": 10 + round_, "method": "tools/call",
                "params": {"name": "count", "arguments": {"n": 6, "delay": 0.15}}}  # fmt: skip
        first = SseReader("POST", cluster.url, session_headers(session), body)
        seen = [first.next() for _ in range(2)]
        last_id = first.last_id
        first.close()
        assert last_id is not None
        rest = SseReader(
            "GET", cluster.url, {**session_headers(session), "last-event-id": last_id}
        ).rest()
        numbers = [data["params"]["data"]["n"] for _, data in seen + rest if "method" in data]
        assert numbers == [0, 1, 2, 3, 4, 5]  # nothing lost, nothing repeated
        assert rest[-1][1]["id"] == 10 + round_ and "result" in rest[-1][1]
    # The event logs are spread over the shards by their hash tags.
    holding = [node for node in nodes.nodes if not node.command("DBSIZE").startswith(b":0\r\n")]
    assert len(holding) >= 2


def test_a_task_made_on_one_worker_is_polled_on_both(cluster: Workers) -> None:
    created = modern_call(cluster.url, 1, "wait_job", {"seconds": 0.5}, extensions=True)
    assert created["resultType"] == "task"
    time.sleep(1.0)
    seen: set[str] = set()
    for n in range(8):  # the polls land on either worker
        params = {"taskId": created["taskId"]}
        data = result_of(
            modern_request(cluster.url, 2 + n, "tasks/get", params, created["taskId"], True)
        )
        assert data["result"]["status"] == "completed"
        seen.add(data["result"]["result"]["content"][0]["text"])
    assert len(seen) == 1 and seen.pop().startswith("finished on ")


def test_a_list_change_announced_on_either_worker_reaches_every_listen_stream(
    cluster: Workers,
) -> None:
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-protocol-version": MODERN, "mcp-method": "subscriptions/listen"}  # fmt: skip
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": True}, "_meta": modern_meta()},
    }
    listeners = [SseReader("POST", cluster.url, headers, body) for _ in range(4)]
    try:
        for listener in listeners:
            assert listener.next()[1]["method"] == "notifications/subscriptions/acknowledged"
        announcers = on_both_workers(
            lambda n: str(modern_call(cluster.url, 10 + n, "announce", {})["content"][0]["text"]),
            least=2,
        )
        for listener in listeners:
            methods = [listener.next()[1]["method"] for _ in announcers]
            assert methods == ["notifications/tools/list_changed"] * len(announcers)
    finally:
        for listener in listeners:
            listener.close()


def test_a_burst_of_one_session_s_requests_is_answered_on_the_cluster(cluster: Workers) -> None:
    """100 requests of one session at once, over both workers: none refused
    (the cluster's pools fail at once when full; the store makes commands
    take turns instead)."""
    session = initialize(cluster.url)
    with ThreadPoolExecutor(max_workers=100) as pool:
        answers = list(
            pool.map(lambda n: call(cluster.url, session, 1000 + n, "pid", {}), range(100))
        )
    assert all("result" in answer for answer in answers)
    assert len({pid_of(answer) for answer in answers}) == 2


def test_a_command_waits_for_its_turn_then_says_every_connection_was_busy(
    nodes: RedisClusterNodes,
) -> None:
    async def scenario() -> None:
        # Two connections: the pub/sub one and one turn for commands.
        store = RedisStore.from_url(nodes.url, max_connections=2, pool_timeout=0.5)
        try:
            async with store._guard():  # a command holding the one turn
                waiting = asyncio.ensure_future(store.get_mark("busy"))
                await asyncio.sleep(0)
            assert await waiting == 0  # it waited and was served
            async with store._guard():
                with pytest.raises(
                    StoreUnavailable, match="every connection of this worker is busy"
                ):
                    await store.get_mark("busy")
        finally:
            await store.close()

    run(scenario(), timeout=30)
