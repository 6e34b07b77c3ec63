"""Fairness under load: one client holding every place of a shared cap does
not lock the others out.

* Sessions: an attacker opens max_sessions sessions (never used, then all
  used and idle); an honest client's initialize still succeeds, at once, by
  taking an idle one's place; sessions that are busy are never taken. With
  ``max_sessions_per_client`` an attacker never holds more than its quota.
* Long-lived streams: 1,024 ``subscriptions/listen`` streams (the default
  max_streams) leave every request cap free; the next stream gets 429.
  GET streams count the same way.
* Running handlers, not open requests: handlers whose POST was closed still
  count against max_concurrent_requests; the handshake revisions' stateless
  mode and the legacy HTTP+SSE transport bound them too (a POSTed batch of
  2,000 calls starts nothing and gets 429).

Everything goes straight into the ASGI apps; the figures (requests refused
while the attacker holds a cap, time until the honest client is served, RSS
before, during and after) go to build/reliability/figures.json.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import json
import time
from collections import Counter
from typing import Any

from support import asgi
from support.figures import record, rss_kib
from support.http_servers import eventually, run
from support.reliability_server import ReliabilityServer, reliability_server
from typing_extensions import override

from mcpbind._server.server import Server
from mcpbind._transports.http.server.legacy_sse import LegacySSEApp
from mcpbind._transports.http.server.streamable import StreamableHTTPApp
from mcpbind.http import HttpOptions, http_app
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2026_07_28 as modern

ACCEPT = "application/json, text/event-stream"
LATEST = "2025-11-25"
ATTACKER = ("203.0.113.66", 40000)
HONEST = ("198.51.100.7", 50000)


def settled_rss_kib() -> int:
    """RSS once freed memory is handed back to the OS (glibc keeps freed blocks otherwise)."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return rss_kib()


def init_body(version: str = LATEST) -> bytes:
    params = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "fair", "version": "0"},
    }
    return json.dumps(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    ).encode()


def headers(session_id: str | None = None, version: str = LATEST) -> dict[str, str]:
    result = {"accept": ACCEPT, "content-type": "application/json"}
    if session_id is not None:
        result["mcp-session-id"] = session_id
        result["mcp-protocol-version"] = version
    return result


async def initialize(app: Any, client: tuple[str, int]) -> asgi.Response:
    return await asgi.request(app, "POST", "/mcp", headers(), init_body(), client=client)


def call(request_id: Any, name: str, arguments: dict[str, Any]) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
    ).encode()


# ------------------------------------------------------------------ sessions


def test_a_flood_of_sessions_does_not_lock_out_an_honest_client() -> None:
    cap = 1000
    figures: dict[str, Any] = {"max_sessions": cap}

    async def scenario() -> None:
        figures["rss_kib_before"] = settled_rss_kib()
        handlers = ReliabilityServer()
        # Without a per-client quota: the global cap alone against a flood.
        options = HttpOptions(max_sessions=cap, max_sessions_per_client=None)
        app = StreamableHTTPApp(reliability_server(handlers), options=options)
        for _ in range(cap):
            await initialize(app, ATTACKER)
        assert len(app.sessions) == cap
        figures["rss_kib_during"] = settled_rss_kib()

        # 1. All never used: the honest client takes the place of one of them, at once.
        started = time.monotonic()
        honest = await initialize(app, HONEST)
        figures["honest_served_after_s_never_used_flood"] = round(time.monotonic() - started, 4)
        assert honest.status == 200
        mine = honest.headers["mcp-session-id"]
        assert len(app.sessions) == cap and mine in app.sessions
        # A busy honest session (a call running) is never taken.
        running = asyncio.ensure_future(
            asgi.request(
                app,
                "POST",
                "/mcp",
                headers(mine),
                call(1, "gate", {"token": "busy"}),
                client=HONEST,
                timeout=100,
            )
        )
        await asyncio.wait_for(handlers.wait_entered("busy"), 10)

        # 2. All used, then idle: the least recently seen makes room.
        for session_id in list(app.sessions):
            if session_id != mine:
                pinged = await asgi.request(
                    app,
                    "POST",
                    "/mcp",
                    headers(session_id),
                    b'{"jsonrpc":"2.0","id":"p","method":"ping"}',
                    client=ATTACKER,
                )
                assert pinged.status in (200, 404)
        refused = Counter[int]()
        started = time.monotonic()
        for _ in range(cap):  # the attacker now churns through every place
            refused[(await initialize(app, ATTACKER)).status] += 1
        figures["attacker_churn_s"] = round(time.monotonic() - started, 4)
        started = time.monotonic()
        second = await initialize(app, HONEST)
        figures["honest_served_after_s_used_flood"] = round(time.monotonic() - started, 4)
        figures["attacker_initializes_answered"] = dict(refused)
        assert second.status == 200
        assert mine in app.sessions, "a busy session was taken"
        handlers.release("busy")
        assert (await running).status == 200

        # 3. Every session busy: then, and only then, 503.
        await app.close()
        small = StreamableHTTPApp(reliability_server(handlers), options=HttpOptions(max_sessions=3))
        tokens = []
        held = []
        for index in range(3):
            session_id = (await initialize(small, ATTACKER)).headers["mcp-session-id"]
            tokens.append(f"hold-{index}")
            held.append(
                asyncio.ensure_future(
                    asgi.request(
                        small,
                        "POST",
                        "/mcp",
                        headers(session_id),
                        call(1, "gate", {"token": tokens[-1]}),
                        client=ATTACKER,
                    )
                )
            )
            await asyncio.wait_for(handlers.wait_entered(tokens[-1]), 10)
        assert (await initialize(small, HONEST)).status == 503
        for token in tokens:
            handlers.release(token)
        await asyncio.gather(*held)
        assert (await initialize(small, HONEST)).status == 200
        await small.close()
        figures["rss_kib_after"] = settled_rss_kib()

    run(scenario(), timeout=120)
    record("fairness.session_flood", figures)


def test_a_per_client_session_quota_bounds_what_one_client_holds() -> None:
    async def scenario() -> dict[str, Any]:
        app = StreamableHTTPApp(
            reliability_server(), options=HttpOptions(max_sessions=100, max_sessions_per_client=10)
        )
        statuses: Counter[int] = Counter()
        for port in range(300):  # every port of one host is one client
            statuses[(await initialize(app, (ATTACKER[0], 1000 + port))).status] += 1
        held = sum(1 for s in app.sessions.values() if s.client == f"peer:{ATTACKER[0]}")
        assert (
            held == 10 and statuses[200] == 300
        )  # its own idle sessions made room for its new ones
        honest = [await initialize(app, (f"198.51.100.{i}", 1)) for i in range(50)]
        assert all(answer.status == 200 for answer in honest)
        assert len(app.sessions) == 60
        await app.close()
        return {
            "attacker_initializes": 300,
            "attacker_sessions_held": held,
            "honest_clients_served": 50,
            "max_sessions_per_client": 10,
        }

    record("fairness.session_quota", run(scenario()))


# ------------------------------------------------------------------ long-lived streams


class Listening(modern.ServerHandlers):
    @override
    async def list_tools(
        self, params: modern.PaginatedRequestParams, ctx: RequestContext
    ) -> modern.ListToolsResult:
        return modern.ListToolsResult(
            tools=[modern.Tool(name="hi", input_schema=modern.ToolInputSchema(type="object"))]
        )

    def __init__(self) -> None:
        self.release = asyncio.Event()

    @override
    async def call_tool(
        self, params: modern.CallToolRequestParams, ctx: RequestContext
    ) -> modern.CallToolResultResponseResult:
        if params.name == "wait":
            await self.release.wait()
        return modern.CallToolResult(content=[modern.TextContent(text="hi")])


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def modern_request(
    request_id: int, method: str, params: dict[str, Any]
) -> tuple[dict[str, str], bytes]:
    head = {
        "accept": ACCEPT,
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
    }
    if method == "tools/call":
        head["mcp-name"] = params["name"]
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": method,
            "params": {**params, "_meta": MODERN_META},
        }
    ).encode()
    return head, body


class Held:
    """A request whose client stays connected until ``leave()``."""

    def __init__(
        self,
        app: Any,
        method: str,
        path: str,
        head: dict[str, str],
        body: bytes,
        client: tuple[str, int],
    ) -> None:
        self.status = 0
        self.chunks: list[bytes] = []
        self._body = body
        self._gone = asyncio.Event()
        self._sent = False
        scope = {
            "type": "http",
            "http_version": "1.1",
            "method": method,
            "path": path,
            "raw_path": path.encode(),
            "root_path": "",
            "query_string": b"",
            "client": client,
            "server": ("127.0.0.1", 8000),
            "headers": [(k.encode(), v.encode()) for k, v in {"host": "127.0.0.1", **head}.items()],
        }
        self.task = asyncio.ensure_future(app(scope, self._receive, self._send))

    async def _receive(self) -> dict[str, Any]:
        if not self._sent:
            self._sent = True
            return {"type": "http.request", "body": self._body, "more_body": False}
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        else:
            self.chunks.append(message.get("body", b""))

    async def leave(self) -> None:
        self._gone.set()
        await asyncio.wait_for(self.task, 10)


def test_listen_streams_have_their_own_cap_and_leave_requests_free() -> None:
    streams = 1024
    figures: dict[str, Any] = {"max_streams": streams, "max_concurrent_requests": 1024}

    async def scenario() -> None:
        figures["rss_kib_before"] = settled_rss_kib()
        # Without a per-client quota: the global stream cap alone, from one client.
        app = http_app(
            Server(Listening(), name="listen", version="1"),
            options=HttpOptions(max_streams_per_client=None),
        )
        listens = []
        for index in range(streams):
            head, body = modern_request(
                index, "subscriptions/listen", {"notifications": {"toolsListChanged": True}}
            )
            listens.append(Held(app, "POST", "/mcp", head, body, ATTACKER))
        await eventually(
            lambda: app.streamable.streams_open == streams,
            timeout=60,
            what="every listen stream open",
        )
        figures["rss_kib_during"] = settled_rss_kib()
        head, body = modern_request(
            5000, "subscriptions/listen", {"notifications": {"toolsListChanged": True}}
        )
        extra = await asgi.request(app, "POST", "/mcp", head, body, client=ATTACKER)
        assert extra.status == 429
        started = time.monotonic()
        answered: Counter[int] = Counter()
        for index in range(50):
            head, body = modern_request(6000 + index, "tools/call", {"name": "hi"})
            answered[
                (await asgi.request(app, "POST", "/mcp", head, body, client=HONEST)).status
            ] += 1
        figures["honest_calls_while_streams_full"] = dict(answered)
        figures["honest_served_after_s"] = round((time.monotonic() - started) / 50, 4)
        assert answered == {200: 50}
        for held in listens:
            await held.leave()
        assert app.streamable.streams_open == 0
        head, body = modern_request(
            7000, "subscriptions/listen", {"notifications": {"toolsListChanged": True}}
        )
        again = Held(app, "POST", "/mcp", head, body, HONEST)
        await eventually(
            lambda: app.streamable.streams_open == 1, what="a new stream once the others closed"
        )
        await again.leave()
        await app.streamable.close()
        figures["rss_kib_after"] = settled_rss_kib()

    run(scenario(), timeout=120)
    record("fairness.listen_streams", figures)


def test_get_streams_count_against_the_stream_cap_per_client() -> None:
    async def scenario() -> dict[str, Any]:
        app = StreamableHTTPApp(
            reliability_server(), options=HttpOptions(max_streams=20, max_streams_per_client=5)
        )
        held = []
        statuses: Counter[int] = Counter()
        for _ in range(8):
            session_id = (await initialize(app, ATTACKER)).headers["mcp-session-id"]
            stream = Held(
                app,
                "GET",
                "/mcp",
                {
                    "accept": "text/event-stream",
                    "mcp-session-id": session_id,
                    "mcp-protocol-version": LATEST,
                },
                b"",
                ATTACKER,
            )
            await asyncio.sleep(0.01)
            statuses[stream.status] += 1
            held.append(stream)
        assert statuses == {200: 5, 429: 3}
        session_id = (await initialize(app, HONEST)).headers["mcp-session-id"]
        honest = Held(
            app,
            "GET",
            "/mcp",
            {
                "accept": "text/event-stream",
                "mcp-session-id": session_id,
                "mcp-protocol-version": LATEST,
            },
            b"",
            HONEST,
        )
        await eventually(lambda: honest.status == 200, what="the honest GET stream")
        for stream in [*held, honest]:
            await stream.leave()
        await app.close()
        return {
            "attacker_get_streams": dict(statuses),
            "max_streams_per_client": 5,
            "honest_stream_status": 200,
        }

    record("fairness.get_streams", run(scenario()))


# ------------------------------------------------------------------ running handlers, not open requests


def test_handlers_still_running_after_their_post_closed_still_count() -> None:
    async def scenario() -> dict[str, Any]:
        handlers = ReliabilityServer()
        app = StreamableHTTPApp(
            reliability_server(handlers), options=HttpOptions(max_concurrent_requests=4)
        )
        session_id = (await initialize(app, ATTACKER)).headers["mcp-session-id"]
        tokens = [f"left-{i}" for i in range(4)]
        for index, token in enumerate(tokens):
            # The client reads the priming event and goes: the handler runs on.
            await asgi.request(
                app,
                "POST",
                "/mcp",
                headers(session_id),
                call(index, "gate", {"token": token}),
                leave_after_first_chunk=True,
            )
        await asyncio.wait_for(asyncio.gather(*(handlers.wait_entered(t) for t in tokens)), 10)
        refused = await asgi.request(
            app, "POST", "/mcp", headers(session_id), call(9, "echo", {"text": "x"})
        )
        assert refused.status == 429
        for token in tokens:
            handlers.release(token)
        await eventually(
            lambda: app.sessions[session_id].transport.unanswered == 0,
            what="the handlers to finish",
        )
        accepted = await asgi.request(
            app, "POST", "/mcp", headers(session_id), call(10, "echo", {"text": "x"})
        )
        assert accepted.status == 200
        await app.close()
        return {"handlers_left_running": 4, "fifth_request_status": 429, "after_they_finished": 200}

    record("fairness.running_handlers", run(scenario()))


def test_one_posted_batch_cannot_start_thousands_of_handlers() -> None:
    """2,000 calls in one batch (2025-03-26, which has batches) to the
    stateless mode and to the legacy HTTP+SSE transport, each capped at 100
    handlers: 429 and no handler starts; 50 at once are served."""
    batch = json.dumps(
        [json.loads(call(i, "slow", {"seconds": 30, "token": str(i)})) for i in range(2000)]
    ).encode()
    small = json.dumps([json.loads(call(i, "echo", {"text": str(i)})) for i in range(50)]).encode()

    async def scenario() -> dict[str, Any]:
        handlers = ReliabilityServer()
        stateless = StreamableHTTPApp(
            reliability_server(handlers),
            stateless=True,
            options=HttpOptions(max_concurrent_requests=100),
        )
        head = headers(None) | {"mcp-protocol-version": "2025-03-26"}
        refused = await asgi.request(stateless, "POST", "/mcp", head, batch)
        assert refused.status == 429
        served = await asgi.request(stateless, "POST", "/mcp", head, small)
        assert served.status == 200
        await stateless.close()

        legacy = LegacySSEApp(
            reliability_server(handlers), options=HttpOptions(max_concurrent_requests=100)
        )
        stream = Held(legacy, "GET", "/sse", {"accept": "text/event-stream"}, b"", ATTACKER)
        await eventually(lambda: bool(stream.chunks), what="the endpoint event")
        endpoint = stream.chunks[0].split(b"data: ", 1)[1].split(b"\n", 1)[0].decode()
        query = endpoint.split("?", 1)[1]
        init = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": "i",
                "method": "initialize",
                "params": {
                    "protocolVersion": "2024-11-05",
                    "capabilities": {},
                    "clientInfo": {"name": "x", "version": "0"},
                },
            }
        ).encode()
        assert (
            await asgi.request(
                legacy, "POST", "/messages", {"content-type": "application/json"}, init, query=query
            )
        ).status == 202
        legacy_refused = await asgi.request(
            legacy, "POST", "/messages", {"content-type": "application/json"}, batch, query=query
        )
        assert legacy_refused.status == 429
        await asyncio.sleep(0.05)
        assert handlers.cancelled == [] and handlers.finished == []
        assert not any(t.get_name().startswith("slow") for t in asyncio.all_tasks())
        legacy_served = await asgi.request(
            legacy, "POST", "/messages", {"content-type": "application/json"}, small, query=query
        )
        assert legacy_served.status == 202
        await stream.leave()
        return {
            "batch_size": 2000,
            "cap": 100,
            "stateless_status": 429,
            "legacy_status": 429,
            "handlers_started": 0,
        }

    record("fairness.batch_bound", run(scenario()))


def test_a_per_client_request_quota_leaves_room_for_the_others() -> None:
    """max_requests_per_client=5 on 2026-07-28 requests: the attacker's
    sixth call in flight is 429 while another address is served, and the
    attacker is again once its calls end."""

    async def scenario() -> dict[str, Any]:
        handlers = Listening()
        app = http_app(
            Server(handlers, name="quota", version="1"),
            options=HttpOptions(max_requests_per_client=5),
        )
        held = []
        for index in range(5):
            head, body = modern_request(index, "tools/call", {"name": "wait"})
            held.append(Held(app, "POST", "/mcp", head, body, ATTACKER))
        await eventually(
            lambda: app.streamable.requests_in_flight == 5, what="five calls in flight"
        )
        head, body = modern_request(99, "tools/call", {"name": "hi"})
        sixth = await asgi.request(app, "POST", "/mcp", head, body, client=ATTACKER)
        assert sixth.status == 429
        honest = await asgi.request(app, "POST", "/mcp", head, body, client=HONEST)
        assert honest.status == 200
        handlers.release.set()
        for call in held:
            await call.leave()
        assert (await asgi.request(app, "POST", "/mcp", head, body, client=ATTACKER)).status == 200
        await app.streamable.close()
        return {
            "max_requests_per_client": 5,
            "attacker_sixth_status": 429,
            "other_client_status": 200,
        }

    record("fairness.request_quota", run(scenario()))


def test_by_default_one_client_is_refused_streams_and_sessions_while_another_is_served() -> None:
    """The per-client quotas are on by default: a client opening sessions and
    GET streams holds its quota at most (past it its own idle sessions make
    room, and a stream is refused) while a second client is served."""

    async def scenario() -> None:
        defaults = HttpOptions()
        assert defaults.max_sessions_per_client is not None
        assert defaults.max_streams_per_client is not None
        app = StreamableHTTPApp(reliability_server(ReliabilityServer()))
        limit = defaults.max_sessions_per_client
        for _ in range(limit + 20):
            await initialize(app, ATTACKER)  # past the quota: the client's own idle ones go
        assert len(app.sessions) == limit
        sessions = list(app.sessions)
        held = [
            Held(app, "GET", "/mcp", headers(session_id), b"", ATTACKER)
            for session_id in sessions[: defaults.max_streams_per_client]
        ]
        await eventually(lambda: app.streams_open == len(held), what="the streams to open")
        refused = await asgi.request(app, "GET", "/mcp", headers(sessions[-1]), client=ATTACKER)
        assert refused.status == 429
        honest = await initialize(app, HONEST)
        assert honest.status == 200
        stream = Held(app, "GET", "/mcp", headers(honest.headers["mcp-session-id"]), b"", HONEST)
        await eventually(lambda: app.streams_open == len(held) + 1, what="the honest stream")
        for one in [*held, stream]:
            await one.leave()
        await app.close()

    run(scenario(), timeout=120)
