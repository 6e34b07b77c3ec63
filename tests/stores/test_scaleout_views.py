"""What the app offers, alike on every worker: a tool hidden or shown through
one worker (``app.disable`` / ``app.enable`` while serving) holds on every
worker before any client is told its list changed, and on a worker started
later; a tool registered while serving on one worker is announced by that
worker only.

Two uvicorn workers, each on a port of its own (so a request goes to the
worker chosen), serve support/scaleout_views_app.py with a real redis-server.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from support.redis_server import RedisServer
from support.scaleout import (
    MODERN,
    SseReader,
    Worker,
    call,
    initialize,
    modern_meta,
    modern_request,
    post,
    result_of,
    session_headers,
)

pytestmark = pytest.mark.redis

TARGET = "support.scaleout_views_app:asgi"
LIST_CHANGED = "notifications/tools/list_changed"


@pytest.fixture()
def pair() -> Iterator[tuple[RedisServer, Worker, Worker]]:
    redis = RedisServer()
    redis.start()
    workers = [Worker(redis, TARGET), Worker(redis, TARGET)]
    try:
        for worker in workers:
            worker.start()
        yield redis, workers[0], workers[1]
    finally:
        for worker in workers:
            worker.stop()
        redis.close()


def listen(url: str) -> SseReader:
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-protocol-version": MODERN, "mcp-method": "subscriptions/listen"}  # fmt: skip
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": True}, "_meta": modern_meta()},
    }
    reader = SseReader("POST", url, headers, body)
    _, acknowledged = reader.next()
    assert acknowledged["method"] == "notifications/subscriptions/acknowledged", acknowledged
    return reader


def session_tools(url: str, session: str) -> set[str]:
    message = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}
    data = result_of(post(url, message, session))
    return {tool["name"] for tool in data["result"]["tools"]}


def modern_tools(url: str) -> set[str]:
    data = result_of(modern_request(url, 8, "tools/list", {}))
    return {tool["name"] for tool in data["result"]["tools"]}


def modern_call(url: str, tool: str, arguments: dict[str, Any]) -> Any:
    """The response (an unknown tool is refused with HTTP 400 and its JSON-RPC error)."""
    params = {"name": tool, "arguments": arguments}
    answer = modern_request(url, 9, "tools/call", params, tool)
    if answer.status_code == 400:
        return answer.json()
    return result_of(answer)


def test_a_tool_hidden_through_one_worker_is_gone_on_the_other_before_its_clients_hear(
    pair: tuple[RedisServer, Worker, Worker],
) -> None:
    """The server "SHOULD send a notification" when its list of tools changes
    (2025-06-18, server/tools, List Changed Notification): a client told so by
    any worker lists, and calls, what every worker now serves."""
    _, a, b = pair
    on_b = initialize(b.url)
    stream = SseReader("GET", b.url, session_headers(on_b))
    listener = listen(b.url)
    on_a = initialize(a.url)
    try:
        assert "greet" in session_tools(b.url, on_b)
        hidden = call(a.url, on_a, 1, "hide", {"names": ["greet"]})
        assert "result" in hidden, hidden

        _, note = stream.next()
        assert note["method"] == LIST_CHANGED
        assert "greet" not in session_tools(b.url, on_b)
        _, note = listener.next()
        assert note["method"] == LIST_CHANGED
        assert "greet" not in modern_tools(b.url)
        assert "greet" not in modern_tools(a.url)
        refused = call(b.url, on_b, 2, "greet", {})
        assert refused["error"]["code"] == -32602, refused
        assert modern_call(b.url, "greet", {})["error"]["code"] == -32602

        # Shown again through B: A's clients hear it, and both serve it.
        shown = call(b.url, on_b, 3, "show", {"names": ["greet"]})
        assert "result" in shown, shown
        _, note = stream.next()
        assert note["method"] == LIST_CHANGED
        assert "greet" in session_tools(a.url, on_a)
        assert "greet" in session_tools(b.url, on_b)
        assert modern_call(a.url, "greet", {})["result"]["content"][0]["text"].startswith("hello")
    finally:
        stream.close()
        listener.close()


def test_a_worker_started_after_a_change_serves_the_app_as_changed(
    pair: tuple[RedisServer, Worker, Worker],
) -> None:
    redis, a, _ = pair
    listener = listen(a.url)
    try:
        assert "result" in modern_call(a.url, "hide", {"names": ["greet"]})
        # A announces a rule once the store's log brought it back: it is logged.
        assert listener.next()[1]["method"] == LIST_CHANGED
    finally:
        listener.close()
    later = Worker(redis, TARGET)
    later.start()
    try:
        assert "greet" not in modern_tools(later.url)
        session = initialize(later.url)
        assert "greet" not in session_tools(later.url, session)
        assert call(later.url, session, 1, "greet", {})["error"]["code"] == -32602
    finally:
        later.stop()


def test_a_tool_registered_while_serving_is_announced_only_by_the_worker_serving_it(
    pair: tuple[RedisServer, Worker, Worker],
) -> None:
    """A worker that lacks the tool never tells its clients the list changed
    for it; a shared change after it is announced once on every worker."""
    _, a, b = pair
    on_a, on_b = listen(a.url), listen(b.url)
    try:
        assert "result" in modern_call(a.url, "grow", {"name": "extra"})
        assert "extra" in modern_tools(a.url)
        assert "extra" not in modern_tools(b.url)
        assert modern_call(b.url, "extra", {})["error"]["code"] == -32602
        _, note = on_a.next()
        assert note["method"] == LIST_CHANGED
        # A shared change, then B stops (ending its listen streams): B's
        # listen stream heard the shared change only, which came after the tool.
        assert "result" in modern_call(b.url, "hide", {"names": ["greet"]})
        _, note = on_a.next()
        assert note["method"] == LIST_CHANGED
        _, note = on_b.next()
        assert note["method"] == LIST_CHANGED
        b.stop()
        rest = []
        with contextlib.suppress(StopIteration, httpx.RemoteProtocolError):
            while True:  # until B's shutdown ends the stream
                rest.append(on_b.next()[1])
        assert [each.get("method") for each in rest if "method" in each] == [], rest
    finally:
        on_a.close()
        on_b.close()


def test_rules_made_at_once_on_two_workers_end_the_same_on_both(
    pair: tuple[RedisServer, Worker, Worker],
) -> None:
    """Each worker applies the rules in the order of the shared log, so rules
    racing on two workers leave both serving the same list."""
    _, a, b = pair
    # A hides and B shows, 16 times each, interleaved: alone, each would end its own way.
    calls = [(worker.url, tool, {"names": ["greet"]}) for _ in range(16)
             for worker, tool in ((a, "hide"), (b, "show"))]  # fmt: skip
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda call: modern_call(*call), calls))
    assert all("result" in answer for answer in answers), answers
    for _ in range(100):  # the last rules are still on their way through the store
        seen = modern_tools(a.url), modern_tools(b.url)
        if seen[0] == seen[1]:
            break
        time.sleep(0.1)
    assert seen[0] == seen[1], seen
