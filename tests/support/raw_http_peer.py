"""The Streamable HTTP twin of raw_peer_server.py: an ASGI app written by hand, with no
MCP library, that declares the capabilities it is built with and checks nothing the
client sends. Sessions at the handshake revisions (an Mcp-Session-Id from
``initialize`` on); no standalone GET stream (405).

Its tools, reached by ``tools/call``:

* ``probe`` answers with an SSE stream: first the request given as the call's
  ``request`` argument (``{"method": ..., "params": ...}``), then, once the client has
  POSTed its response to it, that response as JSON text;
* ``seen`` answers with the methods of every message the client sent in this session so
  far (and the ``task`` of each ``tools/call``), as JSON text;
* any other: ``TASK_CREATED`` for a task-augmented call, else ``"called"``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

from support.raw_peer_server import TASK_CREATED

Scope = dict[str, Any]
Message = dict[str, Any]


def _text(request_id: Any, value: Any) -> Message:
    result = {"content": [{"type": "text", "text": json.dumps(value)}]}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


class _Session:
    def __init__(self) -> None:
        self.seen: list[Any] = []
        self.waiting: dict[str, asyncio.Future[Any]] = {}


class RawHttpPeer:
    """The ASGI app; ``capabilities``: what its initialize result declares."""

    def __init__(self, capabilities: dict[str, Any]) -> None:
        self.capabilities = capabilities
        self.sessions: dict[str, _Session] = {}
        self._ids = itertools.count(1)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                event = await receive()
                if event["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif event["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if scope["method"] == "DELETE":
            self.sessions.pop(headers.get("mcp-session-id", ""), None)
            await _respond(send, 200)
            return
        if scope["method"] != "POST":
            await _respond(send, 405)
            return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        message = json.loads(body)
        method = message.get("method")
        if method == "initialize":
            session_id = f"s-{next(self._ids)}"
            self.sessions[session_id] = _Session()
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": self.capabilities,
                "serverInfo": {"name": "raw-http-peer", "version": "0"},
            }
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
            await _respond(send, 200, answer, session_id)
            return
        session = self.sessions.get(headers.get("mcp-session-id", ""))
        if session is None:
            await _respond(send, 404)
            return
        if method is not None:
            params = message.get("params") or {}
            session.seen.append([method, params.get("task")] if method == "tools/call" else method)
        if "id" not in message or method is None:
            if method is None and message.get("id") in session.waiting:
                session.waiting.pop(message["id"]).set_result(message)
            await _respond(send, 202)
            return
        if method != "tools/call":
            await _respond(send, 200, {"jsonrpc": "2.0", "id": message["id"], "result": {}})
            return
        params = message["params"]
        if params["name"] == "probe":
            ours = f"probe-{message['id']}"
            answered = session.waiting[ours] = asyncio.get_running_loop().create_future()
            sse = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
            await send({"type": "http.response.start", "status": 200, "headers": sse})
            asked = {"jsonrpc": "2.0", "id": ours, **params["arguments"]["request"]}
            await send({"type": "http.response.body", "body": _event(asked), "more_body": True})
            last = _event(_text(message["id"], await answered))
            await send({"type": "http.response.body", "body": last})
        elif params["name"] == "seen":
            await _respond(send, 200, _text(message["id"], session.seen))
        elif params.get("task") is not None:
            await _respond(
                send, 200, {"jsonrpc": "2.0", "id": message["id"], "result": TASK_CREATED}
            )
        else:
            await _respond(send, 200, _text(message["id"], "called"))


async def _respond(
    send: Any, status: int, body: Message | None = None, session_id: str | None = None
) -> None:
    headers = [(b"content-type", b"application/json")] if body is not None else []
    if session_id is not None:
        headers.append((b"mcp-session-id", session_id.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    content = json.dumps(body).encode() if body is not None else b""
    await send({"type": "http.response.body", "body": content})


def _event(message: Message) -> bytes:
    return b"data: " + json.dumps(message).encode() + b"\n\n"
