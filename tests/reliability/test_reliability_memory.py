"""Memory a client cannot hold: bodies that never finish, answers kept for
resumption by an idle session.

* Request bodies: declared and sent slowly, half sent then stalled, or
  never started: 408 once ``body_timeout`` has passed, over uvicorn on a
  real socket too; many at once hold no more than ``max_bodies_buffered``
  between them (503 for the body that would pass it), and the budget is
  whole again afterwards.
* Answers kept for resumption: an idle session that made 40 requests of
  1 MiB answers holds them only until ``event_retention`` passes (purged in
  the background, not when another stream finishes); per-session and
  app-wide byte budgets hold at every purge.

RSS before, during and after goes to build/reliability/figures.json.
"""

from __future__ import annotations

import asyncio
import ctypes
import dataclasses
import gc
import json
import socket
import time
from typing import Any

from support import asgi
from support.figures import record, rss_kib
from support.http_servers import eventually, run, serving
from support.reliability_server import reliability_server

from mcpbind._transports.http.server.streamable import StreamableHTTPApp
from mcpbind.http import HttpOptions, http_app

ACCEPT = "application/json, text/event-stream"
LATEST = "2025-11-25"
MIB = 1024 * 1024


def settled_rss_kib() -> int:
    """RSS once freed memory is handed back: glibc keeps freed blocks for reuse
    (its mmap threshold grows after large frees), which RSS would count."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return rss_kib()


def scope(
    path: str = "/mcp", length: int | None = None, session_id: str | None = None
) -> dict[str, Any]:
    head = [
        (b"host", b"127.0.0.1"),
        (b"accept", ACCEPT.encode()),
        (b"content-type", b"application/json"),
    ]
    if length is not None:
        head.append((b"content-length", str(length).encode()))
    if session_id is not None:
        head += [
            (b"mcp-session-id", session_id.encode()),
            (b"mcp-protocol-version", LATEST.encode()),
        ]
    return {
        "type": "http",
        "http_version": "1.1",
        "method": "POST",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": head,
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 8000),
    }


async def slow_post(
    app: Any, chunks: list[bytes], pause: float, then_stall: bool = True
) -> tuple[int, float]:
    """POST the ``chunks`` with ``pause`` between them, then (``then_stall``) never finish; the status and when it came."""
    status = 0
    answered = asyncio.Event()
    queue = list(chunks)
    started = time.monotonic()

    async def receive() -> dict[str, Any]:
        if queue:
            await asyncio.sleep(pause)
            chunk = queue.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(queue) or then_stall}
        await answered.wait()  # stalled: the client sends nothing more until answered
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
            answered.set()

    await asyncio.wait_for(app(scope(length=sum(map(len, chunks)) + 1000), receive, send), 10)
    return status, time.monotonic() - started


def test_bodies_that_never_finish_are_cut_at_the_deadline() -> None:
    figures: dict[str, Any] = {"body_timeout_s": 0.3}

    async def scenario() -> None:
        app = http_app(
            reliability_server(), options=HttpOptions(body_timeout=0.3, max_bodies_buffered=MIB)
        )
        cases = {
            "nothing sent": ([], 0.0),
            "half then stall": ([b'{"jsonrpc":"2.0","id":1,'], 0.0),
            "one byte every 50 ms": ([b"x"] * 1000, 0.05),
        }
        for name, (chunks, pause) in cases.items():
            status, took = await slow_post(app, chunks, pause)
            assert status == 408, (name, status)
            assert 0.25 < took < 2.0, (name, took)
            figures[f"{name}: cut after s"] = round(took, 3)
        assert app.streamable.bodies.buffered == 0

        # Eight at once, 256 KiB each, against a budget of 1 MiB: at most four are held.
        figures["rss_kib_before"] = settled_rss_kib()
        slow = [slow_post(app, [b" " * (256 * 1024)], 0.0) for _ in range(8)]
        statuses = sorted(status for status, _ in await asyncio.gather(*slow))
        figures["eight_stalled_256KiB_bodies"] = statuses
        assert statuses.count(503) >= 4 and set(statuses) <= {408, 503}
        assert app.streamable.bodies.buffered == 0
        honest = await asgi.request(
            app,
            "POST",
            "/mcp",
            {"accept": ACCEPT, "content-type": "application/json"},
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": LATEST,
                        "capabilities": {},
                        "clientInfo": {"name": "m", "version": "0"},
                    },
                }
            ).encode(),
        )
        assert honest.status == 200
        figures["rss_kib_after"] = settled_rss_kib()
        await app.streamable.close()

    run(scenario())

    # Over a real socket: uvicorn hands the app a body that stops coming.
    with serving(http_app(reliability_server(), options=HttpOptions(body_timeout=0.5))) as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
            raw.sendall(
                b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: "
                + ACCEPT.encode()
                + b"\r\ncontent-type: application/json\r\ncontent-length: 1000000\r\n\r\n"
                + b"{" * 100
            )
            started = time.monotonic()
            answer = raw.recv(4096)
            figures["uvicorn_stalled_body_cut_after_s"] = round(time.monotonic() - started, 3)
        assert answer.startswith(b"HTTP/1.1 408"), answer[:100]
    record("memory.body_deadline", figures)


def initialize_body() -> bytes:
    params = {
        "protocolVersion": LATEST,
        "capabilities": {},
        "clientInfo": {"name": "m", "version": "0"},
    }
    return json.dumps(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    ).encode()


async def session(app: Any) -> str:
    answer = await asgi.request(
        app,
        "POST",
        "/mcp",
        {"accept": ACCEPT, "content-type": "application/json"},
        initialize_body(),
    )
    session_id: str = answer.headers["mcp-session-id"]
    return session_id


async def big_answers(app: Any, session_id: str, count: int, size: int) -> None:
    head = {
        "accept": ACCEPT,
        "content-type": "application/json",
        "mcp-session-id": session_id,
        "mcp-protocol-version": LATEST,
    }
    for index in range(count):
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": index + 1,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "x" * size}},
            }
        ).encode()
        answer = await asgi.request(app, "POST", "/mcp", head, body)
        assert answer.status == 200 and len(answer.body) > size


def kept(app: StreamableHTTPApp) -> int:
    return sum(
        stream.kept for s in app.sessions.values() for stream in s.transport.streams.values()
    )


def test_answers_kept_for_resumption_are_purged_by_time_and_budgets() -> None:
    figures: dict[str, Any] = {"event_retention_s": 0.5}

    async def scenario() -> None:
        figures["rss_kib_before"] = settled_rss_kib()
        # Kept while they are made (however slow the machine), then the
        # retention is cut while the session sits idle.
        app = StreamableHTTPApp(
            reliability_server(),
            options=HttpOptions(
                event_retention=600, max_body_size=4 * MIB, max_session_replay=64 * MIB
            ),
        )
        idle = await session(app)
        await big_answers(app, idle, 40, MIB)
        figures["kept_bytes_after_40_answers"] = kept(app)
        assert kept(app) > 30 * MIB
        figures["rss_kib_during"] = settled_rss_kib()
        started = time.monotonic()
        app.table.options = dataclasses.replace(app.options, event_retention=0.5)
        # The session stays idle: nothing else finishes a stream, the purge still comes
        # (at the background pass, at most 5 s apart).
        await eventually(
            lambda: kept(app) == 0, timeout=15, what="the idle session's answers to be purged"
        )
        figures["purged_within_s"] = round(time.monotonic() - started, 3)
        assert len(app.sessions[idle].transport.streams) == 1  # only its standalone stream is left
        figures["rss_kib_after"] = settled_rss_kib()
        await app.close()

        # Budgets: 2 MiB a session, 5 MiB app-wide; retention long enough not to matter.
        budgeted = StreamableHTTPApp(
            reliability_server(),
            options=HttpOptions(
                event_retention=600, max_session_replay=2 * MIB, max_replay=5 * MIB
            ),
        )
        sessions = [await session(budgeted) for _ in range(4)]
        for session_id in sessions:
            await big_answers(budgeted, session_id, 6, 512 * 1024)
        assert kept(budgeted) > 10 * MIB
        total = budgeted.purge_events()
        assert total == kept(budgeted) <= 5 * MIB
        for session_id in sessions:
            assert (
                sum(s.kept for s in budgeted.sessions[session_id].transport.streams.values())
                <= 2 * MIB
            )
        figures["budgeted_kept_bytes"] = total
        await budgeted.close()

    run(scenario())
    record("memory.replay_purge", figures)
