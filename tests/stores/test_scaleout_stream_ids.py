"""A request stream's id names its worker and the requests it answers, on a
real redis-server: a request of a known session answered after its priming
event costs one round trip to the store (the write of its answer), since a
survivor learns what a dead worker's stream answered from its id; a stream
whose ids are too long for that is made known to the store before its
priming event goes out. A client that makes up a stream id gets no more than
errors for the ids it names, on its own session."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest
from support.asgi import request
from support.peers import run
from support.scaleout import sse_events
from test_scaleout_resumption import open_session, resume, worker

from mcpbind._extensions.tasks.serving import Tasks
from mcpbind._server.server import Server
from mcpbind._transports.http.server.shared_sessions import SharedSessions
from mcpbind._transports.http.server.streamable import StreamableHTTPApp
from mcpbind.stores._redis_store import RedisStore

pytestmark = pytest.mark.redis

STOPPED = (
    "the server worker running this request stopped before answering it; send the request again"
)


class Counted:
    """A store that records each call made of it (one round trip each, but
    for a follower's waits), by method and first argument."""

    def __init__(self, store: RedisStore) -> None:
        self.store = store
        self.calls: list[tuple[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.store, name)
        if not name.startswith("_") and asyncio.iscoroutinefunction(found):

            async def counted(*args: Any, **kwargs: Any) -> Any:
                self.calls.append((name, args[0] if args else None))
                return await found(*args, **kwargs)

            return counted
        return found

    def about(self, session_id: str) -> list[tuple[str, Any]]:
        """The calls that concern ``session_id``: its record, its streams' logs."""
        return [
            (name, key)
            for name, key in self.calls
            if isinstance(key, str) and key.startswith(session_id)
        ]


def counted_worker(url: str) -> tuple[StreamableHTTPApp, Counted]:
    from support.scaleout_app import Tools

    tools = Tools(Tasks())
    server = Server(tools, name="w", version="1", capabilities={"logging": {}})
    tools.server = server
    store = Counted(RedisStore.from_url(url))
    return StreamableHTTPApp(server, store=store), store  # type: ignore[arg-type]


async def post(app: StreamableHTTPApp, headers: dict[str, str], body: dict[str, Any]) -> Any:
    answer = await request(app, "POST", "/mcp", headers=headers, body=json.dumps(body).encode())
    assert answer.status == 200, answer.body
    return list(sse_events(answer.body.decode()))


async def settled(store: Counted, session_id: str, least: int) -> list[tuple[str, Any]]:
    """The calls about the session once at least ``least`` are made and the writer is idle."""
    for _ in range(200):
        if len(store.about(session_id)) >= least:
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)  # anything more would be written by now
    return store.about(session_id)


def test_a_request_answered_after_its_priming_event_costs_one_store_round_trip(
    redis_url: str,
) -> None:
    async def scenario() -> None:
        app, store = counted_worker(redis_url)
        try:
            headers = await open_session(app)
            session_id = headers["mcp-session-id"]
            await post(app, headers, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                      "params": {"name": "pid", "arguments": {}}})  # fmt: skip
            await settled(store, session_id, 1)
            store.calls.clear()
            for n in range(3, 8):
                events = await post(app, headers, {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                                                   "params": {"name": "sleep", "arguments": {"seconds": 0.05}}})  # fmt: skip
                (primed, _), (_, answer) = events
                assert primed.endswith(":0") and answer["id"] == n
            calls = await settled(store, session_id, 5)
            # The answer's write alone, saying nothing more of the stream.
            assert [name for name, _ in calls] == ["append_at"] * 5, calls
            # An id too long for a stream id: the store knows the stream before its
            # priming event goes out (one write), then the answer (one more).
            store.calls.clear()
            long_id = "x" * 200
            events = await post(app, headers, {"jsonrpc": "2.0", "id": long_id, "method": "tools/call",
                                               "params": {"name": "sleep", "arguments": {"seconds": 0.05}}})  # fmt: skip
            (primed, _), (_, answer) = events
            assert answer["id"] == long_id and primed.count(".") == 1, primed
            calls = await settled(store, session_id, 2)
            assert [name for name, _ in calls] == ["declare_stream", "append_at"], calls
        finally:
            await app.close()

    run(scenario(), timeout=60)


def carrying(worker_name: str, count: int, ids: list[Any]) -> str:
    carried = base64.urlsafe_b64encode(json.dumps(ids).encode()).rstrip(b"=").decode()
    return f"{worker_name}.{count}.{carried}"


def test_a_made_up_stream_id_gets_errors_only_for_the_ids_it_names_on_its_own_session(
    redis_url: str,
) -> None:
    """A client names any stream it likes in Last-Event-ID: a stream of
    another session is unknown on its own (the log is the session's), and
    one no live worker holds ends with an error for each id it names,
    nothing else."""

    async def scenario() -> None:
        first, second = worker(redis_url), worker(redis_url)
        try:
            mine, theirs = await open_session(first), await open_session(first)
            body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "count", "arguments": {"n": 2}}}  # fmt: skip
            answer = await request(
                first, "POST", "/mcp", headers=theirs, body=json.dumps(body).encode()
            )
            their_stream = sse_events(answer.body.decode())[0][0].partition(":")[0]
            # On their session, their stream is theirs: its events, then its end.
            status, their_events = await resume(second, theirs, f"{their_stream}:0")
            assert status == 200 and [m.get("method") for m in their_events] == [
                "notifications/message",
                "notifications/message",
                None,
            ]
            assert their_events[-1]["id"] == 2 and "result" in their_events[-1]
            assert isinstance(first.table, SharedSessions)
            dead = first.table.worker
            await first.close()  # its heartbeat stops: its streams are orphans
            error = {"code": -32603, "message": STOPPED}
            outcomes = await asyncio.gather(
                # Their stream, named on my session: an error for the id its
                # id names, none of their events.
                resume(second, mine, f"{their_stream}:0"),
                # A stream no worker ever had: errors for exactly the ids named.
                resume(second, mine, f"{carrying(dead, 999, ['x', 7])}:0"),
                # What names no ids: unknown, once its worker is known to be gone.
                resume(second, mine, f"{dead}.1.!!:0"),
                resume(second, mine, f"{carrying(dead, 1, [{'id': 1}])}:0"),
                resume(second, mine, f"{carrying(dead, 1, [1.5])}:0"),
                # Their stream on their session is untouched by all that.
                resume(second, theirs, f"{their_stream}:0"),
            )
            assert outcomes[0] == (200, [{"jsonrpc": "2.0", "id": 2, "error": error}])
            assert outcomes[1] == (
                200,
                [
                    {"jsonrpc": "2.0", "id": "x", "error": error},
                    {"jsonrpc": "2.0", "id": 7, "error": error},
                ],
            )
            assert [status for status, _ in outcomes[2:5]] == [400, 400, 400]
            assert outcomes[5] == (200, their_events)
        finally:
            await first.close()
            await second.close()

    run(scenario(), timeout=120)


def test_another_deployments_stream_id_is_an_unknown_last_event_id_at_once(
    redis_url: str,
) -> None:
    """A stream id of a worker this store never had (another deployment's: another
    Redis, or another key prefix), resumed with one's own valid session, is an
    unknown Last-Event-ID at once (400): no worker of this deployment stopped.
    Before, the follower waited 9 s for the stream's log and then said that the
    worker running its request had stopped before answering it."""

    def deployment(prefix: str) -> StreamableHTTPApp:
        from support.scaleout_app import Tools

        tools = Tools(Tasks())
        server = Server(tools, name="w", version="1", capabilities={"logging": {}})
        tools.server = server
        return StreamableHTTPApp(server, store=RedisStore.from_url(redis_url, prefix=prefix))

    async def scenario() -> None:
        ours, theirs = deployment("ours:"), deployment("theirs:")
        try:
            mine, other = await open_session(ours), await open_session(theirs)
            body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "count", "arguments": {"n": 1}}}  # fmt: skip
            answer = await request(
                theirs, "POST", "/mcp", headers=other, body=json.dumps(body).encode()
            )
            their_event = sse_events(answer.body.decode())[0][0]
            assert their_event.count(".") == 2  # a worker's id, a count, the ids it answers
            their_stream = their_event.partition(":")[0]
            for last in (their_event, f"{carrying(their_stream.partition('.')[0], 1, [2])}:0"):
                started = asyncio.get_running_loop().time()
                answered = await request(
                    ours, "GET", "/mcp", headers={**mine, "last-event-id": last}, timeout=20
                )
                waited = asyncio.get_running_loop().time() - started
                assert answered.status == 400, (answered.status, answered.body)
                assert b"unknown Last-Event-ID" in answered.body, answered.body
                assert b"no worker of this server" in answered.body, answered.body
                # Not after waiting for a log to appear (3 s and more, 9 s before).
                assert waited < 2.5, waited
            # Their deployment still resumes it.
            status, events = await resume(theirs, other, their_event)
            assert status == 200 and events[-1]["id"] == 2
        finally:
            await ours.close()
            await theirs.close()

    run(scenario(), timeout=120)
