"""A worker dies while it answers a request over SSE: the client resumes the
stream on a survivor, gets what the dead worker logged, then a JSON-RPC error
for its request, and the stream ends (the client does not wait forever)."""

from __future__ import annotations

import os
import signal

import pytest
from support.scaleout import (
    SseReader,
    call,
    deployment,
    initialize,
    on_both_workers,
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
