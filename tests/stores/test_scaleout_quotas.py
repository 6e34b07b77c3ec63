"""Per-client quotas on a deployment of several workers sharing Redis: a
client's sessions, long-lived streams and 2026-07-28 requests in flight are
counted app-wide (the requests with ``app_wide_request_counts``), whichever worker each
landed on, and the places held by a worker that died free themselves once their leases
run out."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from support.scaleout import (
    HANDSHAKE,
    MODERN,
    Workers,
    deployment,
    initialize,
    modern_call,
    modern_meta,
    modern_request,
    on_both_workers,
    post,
    session_headers,
)

pytestmark = pytest.mark.redis

SESSIONS, STREAMS, REQUESTS, LEASE_TTL = 3, 2, 2, 3.0


@pytest.fixture(scope="module")
def cluster() -> Iterator[Workers]:
    quotas = f"{SESSIONS},{STREAMS},{REQUESTS},{LEASE_TTL},app-wide"
    with deployment(quotas=quotas) as (_, workers):
        yield workers


def eventually(check: Callable[[], bool], seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.2)


class Listen:
    """A subscriptions/listen POST held open on its own connection."""

    def __init__(self, url: str) -> None:
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
                   "mcp-protocol-version": MODERN, "mcp-method": "subscriptions/listen"}  # fmt: skip
        body = {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
                "params": {"notifications": {"toolsListChanged": True}, "_meta": modern_meta()}}  # fmt: skip
        self.client = httpx.Client(timeout=httpx.Timeout(30, read=20))
        request = self.client.build_request("POST", url, headers=headers, content=json.dumps(body))
        self.response = self.client.send(request, stream=True)
        self.status = self.response.status_code
        self.text = "" if self.status == 200 else self.response.read().decode()

    def close(self) -> None:
        self.response.close()
        self.client.close()


def refused_listen(url: str) -> bool:
    attempt = Listen(url)
    attempt.close()
    return attempt.status == 429 and "for this client" in attempt.text


def test_sessions_per_client_are_counted_on_every_worker(cluster: Workers) -> None:
    sessions = [initialize(cluster.url) for _ in range(SESSIONS)]
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    for _ in range(6):  # connections land on either worker
        answer = post(cluster.url, init)
        assert (
            answer.status_code == 503 and "too many sessions for this client" in answer.text
        ), answer.text
    with httpx.Client(timeout=30) as client:
        assert client.delete(cluster.url, headers=session_headers(sessions[0])).status_code == 200
    eventually(lambda: post(cluster.url, init).status_code == 200)


def test_streams_per_client_are_counted_on_every_worker(cluster: Workers) -> None:
    held = [Listen(cluster.url) for _ in range(STREAMS)]
    try:
        assert [listen.status for listen in held] == [200] * STREAMS
        for _ in range(6):
            assert refused_listen(cluster.url)
        held.pop().close()
        eventually(lambda: not refused_listen(cluster.url))
    finally:
        for listen in held:
            listen.close()


def test_requests_in_flight_per_client_are_counted_on_every_worker(cluster: Workers) -> None:
    slow = {"n": 30, "delay": 0.1}
    with ThreadPoolExecutor(REQUESTS) as pool:
        running = [pool.submit(modern_request, cluster.url, 700 + n, "tools/call", {"name": "count", "arguments": slow}, "count")
                   for n in range(REQUESTS)]  # fmt: skip
        time.sleep(1.0)
        for n in range(6):
            answer = modern_request(
                cluster.url, 800 + n, "tools/call", {"name": "pid", "arguments": {}}, "pid"
            )
            assert answer.status_code == 429 and "for this client" in answer.text, answer.text
        assert all(done.result().status_code == 200 for done in running)
    eventually(
        lambda: modern_request(
            cluster.url, 900, "tools/call", {"name": "pid", "arguments": {}}, "pid"
        ).status_code
        == 200
    )


def test_the_places_of_dead_workers_drain(cluster: Workers) -> None:
    held = [Listen(cluster.url) for _ in range(STREAMS)]
    try:
        assert [listen.status for listen in held] == [200] * STREAMS
        assert refused_listen(cluster.url)
        pids = set(
            on_both_workers(
                lambda n: str(modern_call(cluster.url, 950 + n, "pid", {})["content"][0]["text"])
            )
        )
        for pid in pids:  # both die holding the streams; uvicorn starts new ones
            os.kill(int(pid), signal.SIGKILL)
        killed = time.monotonic()

        def served() -> bool:
            try:
                return not refused_listen(cluster.url)
            except httpx.HTTPError:
                return False  # the new workers are starting

        eventually(served)
        assert time.monotonic() - killed <= LEASE_TTL + 15
    finally:
        for listen in held:
            listen.close()
