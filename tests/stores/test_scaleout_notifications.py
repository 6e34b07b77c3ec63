"""Change notifications on a deployment of several workers sharing Redis: a
change announced on any worker reaches every listen stream and GET stream on
every worker, once; a GET stream cut off by a worker's death resumes on a
survivor with nothing lost or repeated."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest
from support.scaleout import (
    MODERN,
    SseReader,
    Workers,
    call,
    deployment,
    initialize,
    modern_call,
    modern_meta,
    on_both_workers,
    session_headers,
)

pytestmark = pytest.mark.redis


@pytest.fixture(scope="module")
def cluster() -> Iterator[Workers]:
    with deployment() as (_, workers):
        yield workers


def listen(cluster: Workers, wanted: dict[str, object]) -> SseReader:
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-protocol-version": MODERN, "mcp-method": "subscriptions/listen"}  # fmt: skip
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "subscriptions/listen",
        "params": {"notifications": wanted, "_meta": modern_meta()},
    }
    reader = SseReader("POST", cluster.url, headers, body)
    _, acknowledged = reader.next()
    assert acknowledged["method"] == "notifications/subscriptions/acknowledged", acknowledged
    return reader


def test_changes_on_any_worker_reach_listen_and_get_streams_on_every_worker_once(
    cluster: Workers,
) -> None:
    listeners = [
        listen(cluster, {"toolsListChanged": True, "resourceSubscriptions": ["memo://doc"]})
        for _ in range(4)
    ]
    session = initialize(cluster.url)
    stream = SseReader("GET", cluster.url, session_headers(session))
    try:
        announcers: list[str] = []
        while (
            len(set(announcers)) < 2 or len(announcers) < 4
        ):  # until the changes came from both workers
            assert len(announcers) < 60
            announcers.append(
                modern_call(cluster.url, 10 + len(announcers), "announce", {})["content"][0]["text"]
            )
        count = len(announcers)
        modern_call(cluster.url, 100, "touch", {"uri": "memo://doc"})
        for listener in listeners:
            methods = [listener.next()[1]["method"] for _ in range(count + 1)]
            assert methods == ["notifications/tools/list_changed"] * count + [
                "notifications/resources/updated"
            ]
        got = [stream.next() for _ in range(count)]
        assert [data["method"] for _, data in got] == ["notifications/tools/list_changed"] * count
        assert [event_id for event_id, _ in got] == [
            f"g:{n}" for n in range(1, count + 1)
        ]  # each once, in order
    finally:
        for reader in [*listeners, stream]:
            reader.close()


def test_a_get_stream_cut_by_a_dead_worker_resumes_on_a_survivor(cluster: Workers) -> None:
    session = initialize(cluster.url)
    on_both_workers(
        lambda n: str(call(cluster.url, session, n, "pid", {})["result"]["content"][0]["text"])
    )
    # Both workers hold a copy of the session now.
    stream = SseReader("GET", cluster.url, session_headers(session))
    holder = None
    for n in range(40):
        pid, holds = modern_call(cluster.url, 100 + n, "holds_stream", {"session": session})[
            "content"
        ][0]["text"].split()
        if holds == "True":
            holder = int(pid)
            break
    assert holder is not None
    for n in range(3):
        modern_call(cluster.url, 200 + n, "announce", {})
    before = [stream.next() for _ in range(3)]
    os.kill(holder, signal.SIGKILL)  # the worker holding the stream dies mid-stream
    try:
        while True:
            before.append(stream.next())
    except Exception:  # the connection is cut (or ends)
        pass
    stream.close()
    assert stream.last_id == before[-1][0]
    for n in range(3):  # announced while the client has no stream
        modern_call(cluster.url, 300 + n, "announce", {})
    resumed = SseReader(
        "GET", cluster.url, {**session_headers(session), "last-event-id": stream.last_id}
    )
    try:
        after = [resumed.next() for _ in range(3)]
        modern_call(cluster.url, 400, "announce", {})
        after.append(resumed.next())  # and it goes on live
    finally:
        resumed.close()
    ids = [event_id for event_id, _ in before + after]
    assert ids == [f"g:{n}" for n in range(1, 8)]  # nothing lost, nothing repeated
    assert all(data["method"] == "notifications/tools/list_changed" for _, data in before + after)
