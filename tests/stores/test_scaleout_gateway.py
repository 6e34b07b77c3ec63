"""The gateway on two uvicorn workers sharing a real redis-server: a handshake
session opened on one worker calls proxied tools on both, each worker through
its own backend connections, and a proxied call's stream is resumed on the
other worker.

Each worker is on a port of its own (so a request goes to the worker chosen)
and serves support/scaleout_gateway_app.py over server-everything, the
official SDK's server and the notes example, all over stdio.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.gateway import NOTES_SERVER, gateway_config
from support.peers import SDK_SERVER, SERVER_EVERYTHING, THIS_TREE, require
from support.redis_server import RedisServer
from support.scaleout import (
    SseReader,
    Worker,
    call,
    initialize,
    post,
    session_headers,
    sse_events,
)

pytestmark = [pytest.mark.redis, pytest.mark.peers, pytest.mark.node]

TARGET = "support.scaleout_gateway_app:asgi"


@pytest.fixture()
def pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Worker, Worker]]:
    config = gateway_config(
        tmp_path / "gateway.json",
        {
            "everything": {"command": str(SERVER_EVERYTHING), "args": ["stdio"]},
            "sdk": {"command": sys.executable, "args": [str(SDK_SERVER)], "env": THIS_TREE},
            "notes": {"command": sys.executable, "args": [str(NOTES_SERVER)], "env": THIS_TREE},
        },
    )
    require(SERVER_EVERYTHING, "server-everything")
    monkeypatch.setenv("MCP_TEST_GATEWAY_CONFIG", str(config))
    redis = RedisServer()
    redis.start()
    workers = [Worker(redis, TARGET), Worker(redis, TARGET)]
    try:
        for worker in workers:
            worker.start()
        yield workers[0], workers[1]
    finally:
        for worker in workers:
            worker.stop()
        redis.close()


def structured(answer: dict[str, Any]) -> Any:
    assert "result" in answer, answer
    assert not answer["result"].get("isError"), answer
    return answer["result"]["structuredContent"]


def test_a_session_calls_proxied_tools_on_both_workers_each_through_its_own_backends(
    pair: tuple[Worker, Worker],
) -> None:
    a, b = pair
    session = initialize(a.url)
    assert structured(call(a.url, session, 1, "sdk_add", {"a": 2, "b": 3})) == {"result": 5}
    assert structured(call(b.url, session, 2, "sdk_add", {"a": 4, "b": 5})) == {"result": 9}
    # Each worker has its own notes backend (a process of its own): a note added
    # through A is in A's backend only. Sessions are shared; backend connections are not.
    added = structured(call(a.url, session, 3, "notes_add_note", {"text": "on a"}))
    assert added["text"] == "on a"
    found_on_a = structured(call(a.url, session, 4, "notes_search_notes", {"query": "on a"}))
    found_on_b = structured(call(b.url, session, 5, "notes_search_notes", {"query": "on a"}))
    assert (found_on_a["total"], found_on_b["total"]) == (1, 0)


def test_a_proxied_calls_stream_is_resumed_on_the_other_worker(
    pair: tuple[Worker, Worker],
) -> None:
    """The client "SHOULD issue an HTTP GET to the MCP endpoint, and include
    the Last-Event-ID header"; "The server MAY use this header to replay
    messages that would have been sent after the last event ID, on the stream
    that was disconnected" (2025-06-18, basic/transports, Resumability and
    Redelivery): the backend's progress relayed on A is replayed by B."""
    a, b = pair
    session = initialize(a.url)
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "sdk_count", "arguments": {"steps": 3}, "_meta": {"progressToken": 7}},
    }
    answer = post(a.url, message, session)
    assert answer.status_code == 200, answer.text
    events = [(event_id, data) for event_id, data in sse_events(answer.text) if data]
    progress = [data for _, data in events if data.get("method") == "notifications/progress"]
    assert [each["params"]["progress"] for each in progress] == [1, 2, 3]
    assert events[-1][1]["id"] == 1 and "result" in events[-1][1]
    with httpx.Client(timeout=30) as client:
        resumed = client.get(
            b.url, headers={**session_headers(session), "last-event-id": str(events[0][0])}
        )
    assert resumed.status_code == 200, resumed.text
    assert [data for _, data in sse_events(resumed.text) if data] == [
        data for _, data in events[1:]
    ]


def test_a_backends_question_is_answered_through_the_other_worker(
    pair: tuple[Worker, Worker],
) -> None:
    """A backend asks a handshake client for its roots while answering a call
    made through A; the client's answer goes to B ("Every JSON-RPC message sent
    from the client MUST be a new HTTP POST request to the MCP endpoint", and
    for a response the server "MUST return HTTP status code 202 Accepted":
    2025-06-18, basic/transports, Sending Messages to the Server), which
    passes it to A, whose backend call gets it."""
    a, b = pair
    session = initialize(a.url, {"roots": {}})
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "everything_get-roots-list", "arguments": {}},
    }
    stream = SseReader("POST", a.url, session_headers(session), body)
    try:
        _, asked = stream.next()
        while asked.get("method") != "roots/list":  # the backend's other notifications
            _, asked = stream.next()
        roots = {"roots": [{"uri": "file:///answered-on-b", "name": "b"}]}
        answer = post(b.url, {"jsonrpc": "2.0", "id": asked["id"], "result": roots}, session)
        assert answer.status_code == 202, answer.text
        _, done = stream.next()
        while "id" not in done:
            _, done = stream.next()
        assert "file:///answered-on-b" in done["result"]["content"][0]["text"], done
    finally:
        stream.close()
