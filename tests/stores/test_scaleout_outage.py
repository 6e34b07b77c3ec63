"""A Redis outage under a deployment of several workers: requests that need
the store get a clear refusal (HTTP 503, or -32603 with a message saying
so), no tracebacks fill the log, and everything works again once Redis is
back (its data lost: this server runs without persistence)."""

from __future__ import annotations

import time

import pytest
from support.scaleout import (
    SseReader,
    call,
    deployment,
    initialize,
    modern_call,
    modern_request,
    on_both_workers,
    post,
    result_of,
)
from test_scaleout_notifications import listen

pytestmark = pytest.mark.redis

UNREACHABLE = "the shared store (Redis) is unreachable"


def test_redis_stopped_then_restarted() -> None:
    with deployment() as (redis, cluster):
        session = initialize(cluster.url)
        created = modern_call(cluster.url, 1, "wait_job", {"seconds": 30}, extensions=True)
        redis.stop()
        time.sleep(
            2.5
        )  # longer than a worker trusts its copy of a session without asking the store
        params = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        for n in range(4):
            refused = post(
                cluster.url, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
            )
            assert refused.status_code == 503 and UNREACHABLE in refused.text, refused.text
            used = post(
                cluster.url,
                {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "pid"}},
                session,
            )
            assert used.status_code == 503 and UNREACHABLE in used.json()["error"]["message"]
            assert used.json()["error"]["code"] == -32603
            announced = result_of(
                modern_request(
                    cluster.url, n, "tools/call", {"name": "announce", "arguments": {}}, "announce"
                )
            )
            assert (
                announced["error"]["code"] == -32603
                and UNREACHABLE in announced["error"]["message"]
            )
            polled = modern_request(
                cluster.url,
                n,
                "tasks/get",
                {"taskId": created["taskId"]},
                created["taskId"],
                extensions=True,
            )
            assert (
                polled.json()["error"]["code"] == -32603
                and UNREACHABLE in polled.json()["error"]["message"]
            )
            assert modern_call(cluster.url, 10 + n, "pid", {})[
                "content"
            ]  # what needs no store still works
        redis.start()
        deadline = time.monotonic() + 20
        while True:  # the workers reconnect by themselves
            answer = post(
                cluster.url, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
            )
            if answer.status_code == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert answer.status_code == 200, answer.text
        fresh = initialize(cluster.url)
        on_both_workers(
            lambda n: str(call(cluster.url, fresh, n, "pid", {})["result"]["content"][0]["text"])
        )
        old = post(
            cluster.url,
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "pid"}},
            session,
        )
        assert old.status_code == 404  # Redis came back empty: the old session is gone
        time.sleep(2.5)  # the bus subscriptions are back too
        listener: SseReader = listen(cluster, {"toolsListChanged": True})
        try:
            for n in range(4):
                modern_call(cluster.url, 20 + n, "announce", {})
            assert [listener.next()[1]["method"] for _ in range(4)] == [
                "notifications/tools/list_changed"
            ] * 4
        finally:
            listener.close()
        log = cluster.output()
        assert "Traceback" not in log, log
        assert log.count(UNREACHABLE) <= 8, log  # said once per worker and concern, not per request
