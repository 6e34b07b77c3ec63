"""A worker dies while it answers a request over SSE: the client resumes the
stream on a survivor, gets what the dead worker logged, then a JSON-RPC error
for its request, and the stream ends (the client does not wait forever). A
worker dies while it runs a task: the task fails on the survivors instead of
staying "working" forever."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import pytest
from support.scaleout import (
    SseReader,
    call,
    deployment,
    initialize,
    modern_call,
    modern_request,
    on_both_workers,
    result_of,
    session_headers,
)

pytestmark = pytest.mark.redis


def test_a_request_stream_of_a_dead_worker_ends_with_an_error_on_a_survivor() -> None:
    with deployment() as (_, cluster):
        session = initialize(cluster.url)
        on_both_workers(
            lambda n: str(call(cluster.url, session, n, "pid", {})["result"]["content"][0]["text"])
        )
        body = {"jsonrpc": "2.0", "id": 50, "method": "tools/call",
                "params": {"name": "count", "arguments": {"n": 1000, "delay": 0.1}}}  # fmt: skip
        first = SseReader("POST", cluster.url, session_headers(session), body)
        seen = [first.next() for _ in range(5)]
        runner = seen[0][1]["params"]["data"]["pid"]
        os.kill(runner, signal.SIGKILL)  # mid-stream
        try:
            while True:
                seen.append(first.next())
        except Exception:  # the connection is cut
            pass
        first.close()
        assert first.last_id is not None and first.last_id.count(":") == 1
        resumed = {**session_headers(session), "last-event-id": first.last_id}
        rest = SseReader("GET", cluster.url, resumed).rest()  # until the survivor ends the stream
        *replayed, (_, last) = rest
        numbers = [data["params"]["data"]["n"] for _, data in seen + replayed]
        assert numbers == list(range(len(numbers)))  # nothing lost, nothing repeated
        assert last["id"] == 50 and last["error"]["code"] == -32603, last
        assert "stopped before answering" in last["error"]["message"]
        # A second resumption from the same point ends the same way at once.
        events = SseReader("GET", cluster.url, resumed).rest()
        assert events[-1][1] == last


def test_a_stream_resumed_from_its_priming_event_after_its_worker_died_ends_with_an_error() -> None:
    """The 2025-11-25 transport: "The server SHOULD immediately send an SSE
    event consisting of an event ID and an empty `data` field in order to
    prime the client to reconnect (using that event ID as `Last-Event-ID`)."
    A worker SIGKILLed right after the priming event of a request that has
    sent nothing else: the stream was made known to the store before that
    event went out, so the resumption on another worker is not refused as
    unknown (HTTP 400) but ends with a JSON-RPC error for the request."""
    with deployment() as (_, cluster):
        session = initialize(cluster.url)
        pids: dict[str, int] = {}  # each worker's name in the store -> its pid

        def name_worker(n: int) -> str:
            pid, name = call(cluster.url, session, n, "worker", {})["result"]["content"][0][
                "text"
            ].split()
            pids[name] = int(pid)
            return pid

        on_both_workers(name_worker)
        body = {"jsonrpc": "2.0", "id": 60, "method": "tools/call",
                "params": {"name": "sleep", "arguments": {"seconds": 600}}}  # fmt: skip
        first = SseReader("POST", cluster.url, session_headers(session), body)
        primed = next(line[3:].strip() for line in first.lines if line.startswith("id:"))
        stream_id, _, seq = primed.partition(":")
        assert seq == "0", primed
        os.kill(pids[stream_id.partition(".")[0]], signal.SIGKILL)
        first.close()
        resumed = {**session_headers(session), "last-event-id": primed}
        rest = SseReader("GET", cluster.url, resumed).rest()  # until the survivor ends the stream
        assert [data for _, data in rest] == [
            {
                "jsonrpc": "2.0",
                "id": 60,
                "error": {
                    "code": -32603,
                    "message": "the server worker running this request stopped before"
                    " answering it; send the request again",
                },
            }
        ], rest
        assert rest[0][0] == f"{stream_id}:1"
        # A second resumption from the same point ends the same way at once.
        assert SseReader("GET", cluster.url, resumed).rest() == rest


def test_a_task_of_a_dead_worker_fails_on_the_survivors_instead_of_running_forever() -> None:
    """A worker that died can no longer settle the tasks it ran: a survivor
    does, so that the client polling one gets a terminal status."""
    with deployment() as (_, cluster):
        created = modern_call(cluster.url, 1, "wait_job", {"seconds": 600}, extensions=True)
        task_id = created["taskId"]

        def poll(n: int) -> Any:
            answer = modern_request(
                cluster.url, n, "tasks/get", {"taskId": task_id}, task_id, extensions=True
            )
            data = result_of(answer)
            assert "result" in data, data
            return data["result"]

        got = poll(2)
        for n in range(3, 200):
            if "running on" in str(got.get("statusMessage", "")):
                break
            got = poll(n)
        runner = int(got["statusMessage"].split()[-1])
        os.kill(runner, signal.SIGKILL)
        for n in range(200, 400):  # the survivors poll until the runner's heartbeat is gone
            got = poll(n)
            if got["status"] != "working":
                break
            time.sleep(0.25)
        assert got["status"] == "failed", got
        assert got["error"]["code"] == -32603
        assert "stopped before it ended" in got["statusMessage"]
        assert all(poll(400 + n)["status"] == "failed" for n in range(6))
