"""A Streamable HTTP request leaves nothing to the cyclic garbage collector:
what it creates is freed by reference counting when it ends, for a 2026-07-28
request on its own as for a request of a handshake session. (Cycles made the
collector run often and pause the server for full collections.)"""

from __future__ import annotations

import gc
import importlib.util
import json
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from support.asgi import request
from support.http_servers import run

from mcpbind._server.server import Server
from mcpbind.http import http_app

EXAMPLE = Path(__file__).resolve().parents[1] / "support" / "lowlevel_modern_server.py"
ACCEPT = "application/json, text/event-stream"
MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
}
REQUESTS = 200


def modern_server() -> Server:
    """The server of tests/support/lowlevel_modern_server.py (2026-07-28 and 2025-11-25 handlers)."""
    spec = importlib.util.spec_from_file_location("modern_server_for_cycles", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    server: Server = module.make_server()
    return server


def call(request_id: int, meta: bool) -> bytes:
    params: dict[str, Any] = {"name": "echo", "arguments": {"text": f"hi {request_id}"}}
    if meta:
        params["_meta"] = META
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    ).encode()


async def left_for_the_collector(
    requests: Callable[[], Awaitable[None]],
) -> tuple[int, Counter[str]]:
    """Objects the cyclic collector finds after ``requests`` ran with it off, and their types."""
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        await requests()
        found = gc.collect()
        kinds = Counter(type(o).__qualname__ for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    return found, kinds


def test_a_2026_07_28_request_leaves_no_cycles() -> None:
    app = http_app(modern_server())
    headers = {
        "content-type": "application/json",
        "accept": ACCEPT,
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "echo",
    }

    async def calls() -> None:
        for i in range(REQUESTS):
            response = await request(app, "POST", "/mcp", headers, call(i, meta=True))
            assert response.status == 200 and f"hi {i}" in response.body.decode()

    async def main() -> tuple[int, Counter[str]]:
        await calls()  # the first requests build caches (routes, the tool listing)
        return await left_for_the_collector(calls)

    found, kinds = run(main())
    assert (
        found == 0
    ), f"{found} objects in cycles after {REQUESTS} requests: {kinds.most_common(10)}"


def test_a_session_request_leaves_no_cycles() -> None:
    app = http_app(modern_server())
    base = {
        "content-type": "application/json",
        "accept": ACCEPT,
        "mcp-protocol-version": "2025-11-25",
    }
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    headers: dict[str, str] = {}
    ids = iter(range(1, 10 * REQUESTS))

    async def calls() -> None:
        for _ in range(REQUESTS):
            i = next(ids)
            response = await request(app, "POST", "/mcp", headers, call(i, meta=False))
            assert response.status == 200 and f"hi {i}" in response.body.decode()

    async def main() -> tuple[int, Counter[str]]:
        response = await request(app, "POST", "/mcp", base, json.dumps(initialize).encode())
        headers.update(base, **{"mcp-session-id": response.headers["mcp-session-id"]})
        await request(
            app, "POST", "/mcp", headers, b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
        )
        await calls()
        return await left_for_the_collector(calls)

    found, kinds = run(main())
    assert (
        found == 0
    ), f"{found} objects in cycles after {REQUESTS} requests: {kinds.most_common(10)}"
