"""The client alone: CPU time per request of each HTTP client against one fixed fast server.

``python -m bench.client_bench [--requests 5000] [--in-flight 16]`` serves our
echo server (bench/servers/asgi_serve.py, uvicorn on uvloop with httptools)
once per wire and points each client at it in a fresh process:

* ``ours``: ``Client`` + ``connect_streamable_http`` (bench/roundtrip.py);
* ``sdk``: the official SDK's ``mcp.Client`` (``mode="auto"`` at 2026-07-28,
  ``"legacy"`` in a handshake session);
* ``httpx2`` and ``aiohttp``: the bare HTTP clients POSTing the same request
  bytes (bench/http_wire.py) and reading the answer: the floor of what an
  MCP client on each costs.

``requests`` calls, ``in_flight`` at a time, after a warm-up; the client
process's own CPU time (user + system) per request is the figure (the server
is another process), beside requests per second. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

from .http_server_bench import serve
from .http_wire import (
    HANDSHAKE_HEADERS,
    INITIALIZE,
    INITIALIZED,
    WIRES,
    answer_text,
    call_body,
    call_headers,
)
from .roundtrip import HANDSHAKE, MODERN, Call, free_port, ours_client, sdk_client, wait_for_port

CLIENTS = ("ours", "sdk", "httpx2", "aiohttp")
SERVER_STACK = "uvicorn"


@contextlib.asynccontextmanager
async def httpx2_client(url: str, wire: str) -> AsyncIterator[Call]:
    import httpx2

    limits = httpx2.Limits(max_connections=256, max_keepalive_connections=256)
    async with httpx2.AsyncClient(limits=limits, timeout=30) as http:
        session_id = None
        if wire == "handshake":
            answer = await http.post(url, content=INITIALIZE, headers=HANDSHAKE_HEADERS)
            session_id = answer.headers["mcp-session-id"]
            await http.post(
                url,
                content=INITIALIZED,
                headers={**HANDSHAKE_HEADERS, "mcp-session-id": session_id},
            )
        headers = call_headers(wire, session_id)
        ids = itertools.count(1)

        async def call(text: str) -> str:
            answer = await http.post(url, content=call_body(wire, next(ids), text), headers=headers)
            return answer_text(answer.content)

        yield call


@contextlib.asynccontextmanager
async def aiohttp_client(url: str, wire: str) -> AsyncIterator[Call]:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=256)
    async with aiohttp.ClientSession(connector=connector) as http:
        session_id = None
        if wire == "handshake":
            async with http.post(url, data=INITIALIZE, headers=HANDSHAKE_HEADERS) as answer:
                session_id = answer.headers["mcp-session-id"]
                await answer.read()
            headers = {**HANDSHAKE_HEADERS, "mcp-session-id": session_id}
            async with http.post(url, data=INITIALIZED, headers=headers) as answer:
                await answer.read()
        headers = call_headers(wire, session_id)
        ids = itertools.count(1)

        async def call(text: str) -> str:
            async with http.post(
                url, data=call_body(wire, next(ids), text), headers=headers
            ) as answer:
                return answer_text(await answer.read())

        yield call


def opener(impl: str, url: str, wire: str) -> contextlib.AbstractAsyncContextManager[Call]:
    revision = MODERN if wire == "modern" else HANDSHAKE
    if impl == "ours":
        return ours_client("http", url, wire=revision)
    if impl == "sdk":
        return sdk_client("http", url, wire=revision)
    if impl == "httpx2":
        return httpx2_client(url, wire)
    if impl == "aiohttp":
        return aiohttp_client(url, wire)
    raise ValueError(f"unknown client {impl!r} (one of {', '.join(CLIENTS)})")


async def one(impl: str, url: str, wire: str, requests: int, in_flight: int) -> dict[str, Any]:
    async with opener(impl, url, wire) as call:
        for i in range(min(200, requests)):  # warm-up
            await call(f"warm {i}")
        texts = iter(range(requests))

        async def worker() -> None:
            for i in texts:
                text = f"call {i}"
                if await call(text) != text:
                    raise AssertionError("the echo answered something else")

        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(in_flight)))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "client": impl,
        "wire": wire,
        "requests": requests,
        "in_flight": in_flight,
        "rps": requests / wall,
        "cpu_us_per_request": cpu / requests * 1e6,
    }


def measure(requests: int, in_flight: int, clients: list[str], wires: list[str]) -> dict[str, Any]:
    rows = []
    for wire in wires:
        port = free_port()
        server = serve("ours", wire, SERVER_STACK, port)
        try:
            wait_for_port(port, server)
            url = f"http://127.0.0.1:{port}/mcp"
            for impl in clients:
                done = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "bench.client_bench",
                        "--one",
                        impl,
                        "--url",
                        url,
                        "--wire",
                        wire,
                        "--requests",
                        str(requests),
                        "--in-flight",
                        str(in_flight),
                    ],
                    capture_output=True,
                    text=True,
                    timeout=600,
                )
                if done.returncode != 0:
                    raise RuntimeError(f"client {impl} failed: {done.stderr.strip()[-500:]}")
                row = json.loads(done.stdout)
                rows.append(row)
                print(
                    f"  client {impl:7s} {wire:9s}: {row['cpu_us_per_request']:,.0f} µs CPU/request,"
                    f" {row['rps']:,.0f} req/s",
                    file=sys.stderr,
                    flush=True,
                )
        finally:
            server.terminate()
            server.wait(10)
    return {"server": f"ours under {SERVER_STACK} (uvloop, httptools)", "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--in-flight", type=int, default=16)
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--wires", default=",".join(reversed(WIRES)))
    parser.add_argument(
        "--one", choices=CLIENTS, help="measure this client alone against --url (a child run)"
    )
    parser.add_argument("--url")
    parser.add_argument("--wire", choices=WIRES, default="modern")
    options = parser.parse_args()
    if options.one:
        print(
            json.dumps(
                asyncio.run(
                    one(options.one, options.url, options.wire, options.requests, options.in_flight)
                )
            )
        )
        return
    print(
        json.dumps(
            measure(
                options.requests,
                options.in_flight,
                options.clients.split(","),
                options.wires.split(","),
            )
        )
    )


if __name__ == "__main__":
    main()
