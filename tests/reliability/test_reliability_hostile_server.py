"""Our client against a hostile server (tests/support/hostile_server.py, a
subprocess on 127.0.0.1): an answer of 256 MiB, an SSE stream that never
ends, 100,000 progress notifications, 2,000 responses to ids never sent, and
(over stdio) a server that stops reading. Each call ends with a clear error
or its result, in bounded time; the client's memory stays bounded (RSS
before, at its peak, after) and the session goes on.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.figures import hwm_kib, record, rss_kib
from support.http_servers import run

from mcpbind._client.client import Client, connect_stdio
from mcpbind._core.jsonrpc import ConnectionClosed, McpError
from mcpbind._core.session import MAX_PROGRESS_BACKLOG
from mcpbind._transports.http.client.streamable import MAX_EVENT_SIZE, connect_streamable_http
from mcpbind._transports.stdio import StdioServerParameters
from mcpbind_protocol import v2025_11_25 as mcp

HOSTILE = Path(__file__).resolve().parents[1] / "support" / "hostile_server.py"
MIB = 1024 * 1024


def settled_rss_kib() -> int:
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return rss_kib()


@pytest.fixture(scope="module")
def hostile() -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, str(HOSTILE), "--huge-mib", "256"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        process.terminate()
        process.wait(10)


def client() -> Client:
    return Client(name="victim", version="0", protocol_version="2025-11-25")


def test_an_enormous_answer_fails_clearly_with_bounded_memory(hostile: str) -> None:
    async def scenario() -> dict[str, Any]:
        before = settled_rss_kib()
        async with connect_streamable_http(client(), hostile, listen=False) as session:
            server = mcp.ClientStub(session)
            started = time.monotonic()
            with pytest.raises(McpError, match=f"larger than {MAX_EVENT_SIZE} bytes"):
                await server.call_tool("huge", arguments={}, timeout=60)
            took = time.monotonic() - started
            peak = hwm_kib()
            await session.request_raw("ping", None, timeout=10)  # the session goes on
        after = settled_rss_kib()
        assert peak - before < 3 * MAX_EVENT_SIZE // 1024, (before, peak)
        return {
            "answer_mib": 256,
            "limit_mib": MAX_EVENT_SIZE // MIB,
            "failed_after_s": round(took, 2),
            "rss_kib_before": before,
            "rss_kib_peak": peak,
            "rss_kib_after": after,
        }

    record("hostile_server.enormous_answer", run(scenario()))


def test_an_endless_stream_ends_at_the_call_timeout_and_is_closed(hostile: str) -> None:
    async def scenario() -> dict[str, Any]:
        before = settled_rss_kib()
        async with connect_streamable_http(client(), hostile, listen=False) as session:
            server = mcp.ClientStub(session)
            started = time.monotonic()
            with pytest.raises(McpError, match="timed out"):
                await server.call_tool("endless", arguments={}, timeout=2)
            took = time.monotonic() - started
            during = rss_kib()
            async with httpx.AsyncClient() as raw:
                stats = hostile.removesuffix("/mcp") + "/stats"
                deadline = time.monotonic() + 10
                while (await raw.get(stats)).json()["endless_open"] and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
                assert (await raw.get(stats)).json()[
                    "endless_open"
                ] == 0, "the client kept the endless stream open"
            await session.request_raw("ping", None, timeout=10)
        after = settled_rss_kib()
        assert 1.9 < took < 5, took
        return {
            "timeout_s": 2,
            "failed_after_s": round(took, 2),
            "stream_closed": True,
            "rss_kib_before": before,
            "rss_kib_during": during,
            "rss_kib_after": after,
        }

    record("hostile_server.endless_stream", run(scenario()))


def test_a_flood_of_progress_and_stray_responses_leave_the_call_answered(hostile: str) -> None:
    async def scenario() -> dict[str, Any]:
        seen: list[float] = []
        running = 0
        most = 0

        async def slow_progress(progress: float, total: float | None, message: str | None) -> None:
            nonlocal running, most
            running += 1
            most = max(most, running)
            seen.append(progress)
            await asyncio.sleep(0)
            running -= 1

        before = settled_rss_kib()
        async with connect_streamable_http(client(), hostile, listen=False) as session:
            server = mcp.ClientStub(session)
            started = time.monotonic()
            flooded = await server.call_tool(
                "flood", arguments={}, timeout=60, on_progress=slow_progress
            )
            took = time.monotonic() - started
            assert flooded.content[0].text == "after the flood"  # type: ignore[union-attr]
            assert (
                seen == sorted(seen) and 0 < len(seen) <= 100_000
            )  # in order; what came faster than the callback was dropped
            stray = await server.call_tool("strays", arguments={}, timeout=30)
            assert stray.content[0].text == "after the strays"  # type: ignore[union-attr]
            during = rss_kib()
        after = settled_rss_kib()
        return {
            "progress_notifications": 100_000,
            "progress_callbacks_run": len(seen),
            "max_progress_backlog": MAX_PROGRESS_BACKLOG,
            "flood_call_s": round(took, 2),
            "stray_responses": 2000,
            "rss_kib_before": before,
            "rss_kib_during": during,
            "rss_kib_after": after,
        }

    record("hostile_server.floods", run(scenario(), timeout=120))


_NEVER_READS = r"""
import json, sys, time
line = sys.stdin.readline()
request = json.loads(line)
result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "deaf", "version": "0"}}
sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}) + "\n")
sys.stdout.flush()
time.sleep(60)  # never reads again
"""


def test_a_server_that_stops_reading_is_cut_off_with_a_clear_error() -> None:
    """Over stdio: once the pipe and max_buffered are full, the connection
    is dropped and the calls waiting fail with ConnectionClosed."""

    async def scenario() -> dict[str, Any]:
        parameters = StdioServerParameters(sys.executable, ["-c", _NEVER_READS])
        started = time.monotonic()
        failed = 0
        async with connect_stdio(client(), parameters) as session:
            big = json.dumps({"name": "x", "arguments": {"text": "z" * MIB}}).encode()
            calls = [
                asyncio.ensure_future(session.request_raw("tools/call", big, timeout=30))
                for _ in range(80)
            ]
            for outcome in await asyncio.gather(*calls, return_exceptions=True):
                assert isinstance(outcome, ConnectionClosed), outcome
                failed += 1
        return {
            "calls_failed_clearly": failed,
            "cut_off_after_s": round(time.monotonic() - started, 2),
            "rss_kib": settled_rss_kib(),
        }

    record("hostile_server.stops_reading", run(scenario()))
