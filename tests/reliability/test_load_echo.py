"""Load: 10,000 tools/call echo requests, 512 in flight, over one stdio session
(our client to tests/support/lowlevel_server.py) and over Streamable HTTP (our client,
connect_streamable_http, to our server under uvicorn in a child process).

Every request carries a unique token and must get exactly its own token back,
exactly once on the wire. Memory is the server's RSS (from /proc): the
baseline is taken after a warm-up round of 2,048 requests at the same
concurrency, and after the 10,000 the server must be back within a small
tolerance of it. The figures (duration, requests per second, memory) go to
build/reliability/figures.json. LOAD_REQUESTS overrides the 10,000.
"""

from __future__ import annotations

import asyncio
import gc
import os
import secrets
import time
from collections import Counter
from typing import Any

import msgspec
import pytest
from support.figures import hwm_kib, record, rss_kib
from support.peers import lowlevel_server, no_leaked_processes, run  # noqa: F401  (a fixture)
from support.reliability_peers import HttpServerProcess

from mcpbind._client.client import Client, ClientSession
from mcpbind._core import wire
from mcpbind._transports.http.client.streamable import StreamableHTTPClientTransport
from mcpbind._transports.stdio import spawn
from mcpbind_protocol import v2025_11_25 as mcp

TOTAL = int(os.environ.get("LOAD_REQUESTS", "10000"))
WARM_UP = 2048
IN_FLIGHT = 512
# The server may end up this much above its warmed-up baseline: allocator
# slack, not a per-request leak (which 10,000 requests would show in MiB).
TOLERANCE_KIB = 8 * 1024
TOLERANCE_RATIO = 0.10

pytestmark = pytest.mark.usefixtures("no_leaked_processes")


class _Probe(msgspec.Struct):
    id: int | str | None = None
    method: str | None = None


_probe = msgspec.json.Decoder(_Probe)


class CountingTransport:
    """Wraps a client transport and counts, by id, every response read from
    it (duplicates included); everything else goes to the wrapped transport."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.responses: Counter[Any] = Counter()

    async def read(self) -> wire.Message | None:
        message: wire.Message | None = await self.inner.read()
        if message is not None:
            probe = _probe.decode(message.data)
            if probe.method is None:
                self.responses[probe.id] += 1
        return message

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def drive(session: ClientSession, total: int, in_flight: int, tag: str) -> dict[str, Any]:
    """``total`` echo calls, ``in_flight`` at a time, each checked for its own token."""
    stub = mcp.ClientStub(session)
    indexes = iter(range(total))
    answered = [0] * total
    running = peak = 0
    transport = session.transport
    assert isinstance(transport, CountingTransport)
    responses = transport.responses
    responses.clear()
    salt = secrets.token_hex(4)

    async def worker() -> None:
        nonlocal running, peak
        for index in indexes:
            token = f"{tag}-{index}-{salt}"
            running += 1
            peak = max(peak, running)
            try:
                result = await stub.call_tool("echo", arguments={"text": token}, timeout=300)
            finally:
                running -= 1
            content = result.content[0]
            assert isinstance(content, mcp.TextContent) and content.text == token, (token, result)
            answered[index] += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    elapsed = time.perf_counter() - started
    assert answered == [1] * total
    assert peak == min(in_flight, total)
    assert sum(responses.values()) == total and set(responses.values()) == {
        1
    }, "a response arrived twice"
    assert not session.outgoing.pending and not session.outgoing.progress
    return {
        "requests": total,
        "in_flight": peak,
        "duration_s": round(elapsed, 2),
        "requests_per_s": round(total / elapsed),
    }


def client_objects() -> int:
    gc.collect()
    return len(gc.get_objects())


def check_memory(baseline_kib: int, after_kib: int) -> None:
    allowed = max(TOLERANCE_KIB, int(baseline_kib * TOLERANCE_RATIO))
    assert (
        after_kib - baseline_kib <= allowed
    ), f"the server grew from {baseline_kib} KiB to {after_kib} KiB after {TOTAL} requests (allowed {allowed} KiB)"


def test_10000_echo_requests_512_in_flight_over_one_stdio_session() -> None:
    async def scenario() -> dict[str, Any]:
        process = await spawn(lowlevel_server())
        session = await Client(name="load", version="0").connect(CountingTransport(process))
        try:
            pid = process.process.pid
            before_warm_up = rss_kib(pid)
            warm_up = await drive(session, WARM_UP, IN_FLIGHT, "warm-up")
            await asyncio.sleep(0.5)
            baseline, objects_before = rss_kib(pid), client_objects()
            figures = await drive(session, TOTAL, IN_FLIGHT, "load")
            await asyncio.sleep(0.5)
            after, objects_after = rss_kib(pid), client_objects()
            peak = hwm_kib(pid)
        finally:
            await session.close()
        check_memory(baseline, after)
        assert objects_after - objects_before < 5000, (objects_before, objects_after)
        return {
            **figures,
            "warm_up": warm_up,
            "server_rss_kib": {
                "started": before_warm_up,
                "baseline_after_warm_up": baseline,
                "after": after,
                "peak": peak,
            },
            "client_gc_objects": {"baseline": objects_before, "after": objects_after},
        }

    record("load.stdio_echo", run(scenario(), timeout=240))


def test_10000_echo_requests_512_in_flight_over_streamable_http() -> None:
    with HttpServerProcess() as server:

        async def scenario() -> dict[str, Any]:

            async def round_trip(total: int, tag: str) -> dict[str, Any]:
                # A session each: the baseline and the final figure are taken with no session open.
                transport = CountingTransport(StreamableHTTPClientTransport(server.url()))
                session = await Client(name="load", version="0").connect(transport)
                try:
                    return await drive(session, total, IN_FLIGHT, tag)
                finally:
                    await session.close()

            started = await server.stats()
            warm_up = await round_trip(WARM_UP, "warm-up")
            baseline, objects_before = await settled(server), client_objects()
            figures = await round_trip(TOTAL, "load")
            after, objects_after = await settled(server), client_objects()
            check_memory(baseline["rss_kib"], after["rss_kib"])
            # Objects the server's garbage collector tracks: a leak of one per request would show 10,000.
            assert after["gc_objects"] - baseline["gc_objects"] < 2000, (baseline, after)
            assert objects_after - objects_before < 5000, (objects_before, objects_after)
            return {
                **figures,
                "warm_up": warm_up,
                "server_rss_kib": {
                    "started": started["rss_kib"],
                    "baseline_after_warm_up": baseline["rss_kib"],
                    "after": after["rss_kib"],
                    "peak": hwm_kib(server.pid),
                },
                "server_after": {
                    k: after[k] for k in ("sessions", "streams", "in_flight", "tasks", "gc_objects")
                },
                "server_gc_objects_baseline": baseline["gc_objects"],
                "client_gc_objects": {"baseline": objects_before, "after": objects_after},
            }

        record("load.streamable_http_echo", run(scenario(), timeout=300))


async def settled(server: HttpServerProcess) -> dict[str, Any]:
    """The server's stats once the closed session is gone and its tasks have ended."""
    deadline = time.monotonic() + 30
    while True:
        stats = await server.stats()
        if stats["sessions"] == 0 and stats["in_flight"] == 0:
            return stats
        assert time.monotonic() < deadline, stats
        await asyncio.sleep(0.1)
