"""What the HTTP benchmark parts send, and the ASGI applications they serve.

One ``tools/call echo`` request in each of the two shapes the issue compares:

* ``handshake``: a request of an initialize session (2025-11-25), with the
  session's ``Mcp-Session-Id``; the session is opened once beforehand
  (``initialize`` + ``notifications/initialized``);
* ``modern``: a 2026-07-28 request on its own (no session), its ``_meta``
  naming the protocol version, client capabilities and client info, and its
  headers mirroring the body (``Mcp-Method``, ``Mcp-Name``,
  ``MCP-Protocol-Version``), as clients send it.

Applications (``make_app``), in two pairs compared like with like:

* ``ours`` (``mcpbind.http.http_app`` of the echo server in
  bench/servers/ours_stdio.py, 2026-07-28 handlers for the modern wire) and
  ``sdk`` (the official SDK's ``MCPServer.streamable_http_app`` of the
  ``async def`` tool in bench/servers/sdk_stdio.py, which speaks both), both
  answering with one JSON body: the SDK's fastest equivalent configuration, the
  main rows;
* ``ours_sse`` and ``sdk_def``: each library's default settings, which answer a
  handshake session's request with an SSE stream, the SDK's tool a plain
  ``def`` (run in a worker thread, one hop per call): the second rows. A
  2026-07-28 request is answered with JSON either way, so ``ours_sse`` is
  ``ours`` there (``SAME_AS``);

and ``echo``, a bare ASGI app that decodes the JSON-RPC body and answers a
text result (the floor any MCP server on the same stack stays above).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import msgspec

SERVERS = Path(__file__).resolve().parent / "servers"
WIRES = ("handshake", "modern")
IMPLS = ("ours", "sdk", "ours_sse", "sdk_def", "echo")
# (impl, wire) measured by another impl: the same application answering the same way.
SAME_AS = {("ours_sse", "modern"): "ours"}
PATH = "/mcp"
HANDSHAKE_VERSION = "2025-11-25"
MODERN_VERSION = "2026-07-28"

ACCEPT = "application/json, text/event-stream"
CLIENT_INFO = {"name": "bench", "version": "1.0.0"}
_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
}

# Headers of every POST (Host is added by whoever sends).
BASE_HEADERS = {"content-type": "application/json", "accept": ACCEPT}
MODERN_HEADERS = {
    **BASE_HEADERS,
    "mcp-protocol-version": MODERN_VERSION,
    "mcp-method": "tools/call",
    "mcp-name": "echo",
}
HANDSHAKE_HEADERS = {**BASE_HEADERS, "mcp-protocol-version": HANDSHAKE_VERSION}

INITIALIZE = msgspec.json.encode(
    {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": HANDSHAKE_VERSION,
            "capabilities": {},
            "clientInfo": CLIENT_INFO,
        },
    }
)
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


def call_body(wire: str, request_id: int | str, text: str = "hello") -> bytes:
    """The body of one ``tools/call echo`` request."""
    params: dict[str, Any] = {"name": "echo", "arguments": {"text": text}}
    if wire == "modern":
        params["_meta"] = _META
    return msgspec.json.encode(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    )


def call_headers(wire: str, session_id: str | None = None) -> dict[str, str]:
    if wire == "modern":
        return dict(MODERN_HEADERS)
    assert session_id is not None, "a handshake request needs its session"
    return {**HANDSHAKE_HEADERS, "mcp-session-id": session_id}


def answer_text(body: bytes) -> str:
    """The echoed text of an answer (JSON, or SSE whose last data line is the response)."""
    data = body
    if not body.lstrip().startswith(b"{"):
        lines = [line for line in body.splitlines() if line.startswith(b"data: ") and len(line) > 6]
        if not lines:
            raise AssertionError(f"no response in {body[:200]!r}")
        data = lines[-1][6:]
    message = msgspec.json.decode(data)
    if "result" not in message:
        raise AssertionError(f"not a result: {data[:300]!r}")
    text: str = message["result"]["content"][0]["text"]
    return text


# ------------------------------------------------------------------ applications

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class _EchoRequest(msgspec.Struct):
    id: int | str
    params: dict[str, Any]


_echo_decoder = msgspec.json.Decoder(_EchoRequest)
_JSON_HEADERS = [(b"content-type", b"application/json")]


async def echo_app(scope: Scope, receive: Receive, send: Send) -> None:
    """A bare ASGI JSON-RPC echo: the least an MCP server on the same stack can do."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    request = _echo_decoder.decode(b"".join(chunks))
    text = request.params.get("arguments", {}).get("text", "")
    body = msgspec.json.encode(
        {
            "jsonrpc": "2.0",
            "id": request.id,
            "result": {"content": [{"type": "text", "text": text}]},
        }
    )
    await send({"type": "http.response.start", "status": 200, "headers": _JSON_HEADERS})
    await send({"type": "http.response.body", "body": body})


def _load(name: str) -> Any:
    """A module of bench/servers, by file (they are scripts, not a package)."""
    module = sys.modules.get(f"bench_servers_{name}")
    if module is None:
        spec = importlib.util.spec_from_file_location(
            f"bench_servers_{name}", SERVERS / f"{name}.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return module


def make_app(impl: str, wire: str) -> Any:
    """The ASGI application of ``impl`` serving the echo tool for ``wire``."""
    if impl == "echo":
        return echo_app
    if impl in ("ours", "ours_sse"):
        from mcpbind import http_app

        server = _load("ours_stdio").server(wire == "modern")
        return http_app(server, legacy_sse=False, json_response=impl == "ours")
    if impl == "sdk":
        return _load("sdk_stdio").mcp.streamable_http_app(host="127.0.0.1", json_response=True)
    if impl == "sdk_def":
        return _load("sdk_stdio").mcp_def.streamable_http_app(host="127.0.0.1")
    raise ValueError(f"unknown application {impl!r} (one of {', '.join(IMPLS)})")
