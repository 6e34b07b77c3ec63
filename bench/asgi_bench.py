"""The application alone: ASGI apps driven in-process, with no network and no HTTP server.

``python -m bench.asgi_bench [--requests N] [--in-flight 16] [--loop uvloop]``
calls each application (bench/http_wire.py: ours, the SDK's, the bare JSON
echo) with an ASGI scope, a ``receive`` that hands over the request body and
a ``send`` that collects the answer, as an ASGI server would, ``in_flight``
requests at a time, for both wires (a handshake session's request and a
2026-07-28 request on its own). Lifespan is started first (the SDK's session
manager runs in it). For each it reports:

* ``us_per_request``: wall time per request (the process does nothing else);
* ``cpu_us_per_request``: process CPU time per request;
* ``cycles_per_request``: objects the cyclic garbage collector found
  unreachable per request, over a run with the collector off: what a request
  leaves for the collector (0 means reference counting frees everything);
* ``gc_share``: the share of the timed run spent in collections
  (``gc.callbacks``).

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from .http_wire import (
    HANDSHAKE_HEADERS,
    IMPLS,
    INITIALIZE,
    INITIALIZED,
    PATH,
    SAME_AS,
    WIRES,
    answer_text,
    call_body,
    call_headers,
    make_app,
)


class Driver:
    """Calls one ASGI application the way an HTTP server would, without sockets."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.state: dict[str, Any] = {}  # lifespan state, copied into each request's scope

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Driver]:
        """Lifespan startup before, shutdown after."""
        inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        scope = {
            "type": "lifespan",
            "asgi": {"version": "3.0", "spec_version": "2.0"},
            "state": self.state,
        }
        task = asyncio.get_running_loop().create_task(self.app(scope, inbox.get, outbox.put))
        await inbox.put({"type": "lifespan.startup"})
        started = await outbox.get()
        if started["type"] != "lifespan.startup.complete":
            raise RuntimeError(f"lifespan startup failed: {started}")
        try:
            yield self
        finally:
            await inbox.put({"type": "lifespan.shutdown"})
            await asyncio.wait_for(outbox.get(), 10)
            await asyncio.wait_for(task, 10)

    async def post(
        self, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[bytes, bytes], bytes]:
        delivered = False
        done = asyncio.Event()
        status = 0
        response_headers: dict[bytes, bytes] = {}
        chunks: list[bytes] = []

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await done.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                response_headers.update(message.get("headers", ()))
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": PATH,
            "raw_path": PATH.encode(),
            "root_path": "",
            "query_string": b"",
            "headers": [(b"host", b"127.0.0.1:8000")]
            + [(k.encode(), v.encode()) for k, v in headers.items()],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
            "state": dict(self.state),
        }
        try:
            await self.app(scope, receive, send)
        finally:
            done.set()
        return status, response_headers, b"".join(chunks)


async def open_session(driver: Driver) -> str | None:
    """Initialize a handshake session; its id (None for an app without sessions: the echo)."""
    status, headers, body = await driver.post(dict(HANDSHAKE_HEADERS), INITIALIZE)
    if status != 200:
        raise RuntimeError(f"initialize answered {status}: {body[:300]!r}")
    session_id = headers.get(b"mcp-session-id")
    if session_id is None:
        return None
    await driver.post({**HANDSHAKE_HEADERS, "mcp-session-id": session_id.decode()}, INITIALIZED)
    return session_id.decode()


def caller(
    driver: Driver, wire: str, session_id: str | None
) -> Callable[[int], Coroutine[Any, Any, None]]:
    headers = (
        call_headers(wire, session_id)
        if session_id is not None or wire == "modern"
        else dict(HANDSHAKE_HEADERS)
    )

    async def call(request_id: int) -> None:
        text = f"hello {request_id}"
        status, _, body = await driver.post(headers, call_body(wire, request_id, text))
        if status != 200 or answer_text(body) != text:
            raise AssertionError(f"{status}: {body[:300]!r}")

    return call


async def _run(
    call: Callable[[int], Coroutine[Any, Any, None]], requests: int, in_flight: int, first: int
) -> None:
    ids = iter(range(first, first + requests))

    async def worker() -> None:
        for request_id in ids:
            await call(request_id)

    await asyncio.gather(*(worker() for _ in range(in_flight)))


async def measure(impl: str, wire: str, requests: int, in_flight: int) -> dict[str, Any]:
    driver = Driver(make_app(impl, wire))
    async with driver.running():
        session_id = await open_session(driver) if wire == "handshake" else None
        call = caller(driver, wire, session_id)
        await _run(call, max(requests // 10, in_flight), in_flight, 1)  # warm-up
        # What a request leaves to the cyclic collector: a run with it off.
        gc.collect()
        gc.disable()
        try:
            await _run(call, requests, in_flight, 10**6)
        finally:
            cycles = gc.collect()
            gc.enable()
        paused = 0.0
        started_at = 0.0

        def on_gc(phase: str, info: dict[str, Any]) -> None:
            nonlocal paused, started_at
            if phase == "start":
                started_at = time.perf_counter()
            else:
                paused += time.perf_counter() - started_at

        gc.callbacks.append(on_gc)
        try:
            cpu, wall = time.process_time(), time.perf_counter()
            await _run(call, requests, in_flight, 2 * 10**6)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        finally:
            gc.callbacks.remove(on_gc)
    return {
        "impl": impl,
        "wire": wire,
        "requests": requests,
        "in_flight": in_flight,
        "us_per_request": wall / requests * 1e6,
        "cpu_us_per_request": cpu / requests * 1e6,
        "cycles_per_request": cycles / requests,
        "gc_share": paused / wall if wall else 0.0,
    }


def event_loop(name: str) -> Callable[[Coroutine[Any, Any, Any]], Any]:
    """``asyncio.run``, or uvloop's when asked for and installed."""
    if name == "uvloop":
        try:
            import uvloop
        except ImportError:
            return asyncio.run
        return uvloop.run
    return asyncio.run


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--in-flight", type=int, default=16)
    parser.add_argument("--impls", default=",".join(IMPLS))
    parser.add_argument("--wires", default=",".join(WIRES))
    parser.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop")
    options = parser.parse_args()
    run = event_loop(options.loop)
    rows = []
    for wire in options.wires.split(","):
        for impl in options.impls.split(","):
            if (impl, wire) in SAME_AS:
                continue
            rows.append(run(measure(impl, wire, options.requests, options.in_flight)))
    loop = "uvloop" if run is not asyncio.run else "asyncio"
    print(json.dumps({"loop": loop, "rows": rows}))


if __name__ == "__main__":
    main()
