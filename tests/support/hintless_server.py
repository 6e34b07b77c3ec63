"""A 2026-07-28 server written by hand, with no MCP library, whose cacheable
results carry neither ``ttlMs`` nor ``cacheScope``: a peer that follows the
official example ``ReadResourceResultResponse/read-resource-result-response.json``
(whose result has neither) for every cacheable method.

It answers ``server/discover``, ``tools/list``, ``prompts/list``,
``resources/list``, ``resources/templates/list`` and ``resources/read`` (with
that example's result, whatever the URI) and checks nothing the client sends.

``python hintless_server.py`` serves stdio until its stdin closes;
:data:`app` is the same server as an ASGI app answering POSTs with JSON
(Streamable HTTP at 2026-07-28: one POST a request, no session).
"""

from __future__ import annotations

import json
import sys
from typing import Any

SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"

RESULTS: dict[str, dict[str, Any]] = {
    "server/discover": {
        "resultType": "complete",
        "supportedVersions": ["2026-07-28"],
        "capabilities": {"tools": {}, "prompts": {}, "resources": {}},
        "_meta": {SERVER_INFO_KEY: {"name": "hintless-server", "version": "0"}},
    },
    "tools/list": {
        "resultType": "complete",
        "tools": [{"name": "noop", "inputSchema": {"type": "object"}}],
    },
    "prompts/list": {"resultType": "complete", "prompts": [{"name": "hello"}]},
    "resources/list": {
        "resultType": "complete",
        "resources": [{"uri": "file:///project/src/main.rs", "name": "main.rs"}],
    },
    "resources/templates/list": {
        "resultType": "complete",
        "resourceTemplates": [{"uriTemplate": "file:///{path}", "name": "files"}],
    },
    # The result of the official example read-resource-result-response.json, as published.
    "resources/read": {
        "resultType": "complete",
        "contents": [
            {
                "uri": "file:///project/src/main.rs",
                "mimeType": "text/x-rust",
                "text": 'fn main() {\n    println!("Hello world!");\n}',
            }
        ],
    },
}


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    """The response to one message; None for a notification."""
    if "id" not in message or "method" not in message:
        return None
    result = RESULTS.get(message["method"])
    if result is None:
        error = {"code": -32601, "message": f"Method not found: {message['method']}"}
        return {"jsonrpc": "2.0", "id": message["id"], "error": error}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            event = await receive()
            if event["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif event["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    body = b""
    while True:
        event = await receive()
        body += event.get("body", b"")
        if not event.get("more_body"):
            break
    if scope["method"] != "POST":
        await send({"type": "http.response.start", "status": 405, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    response = answer(json.loads(body))
    if response is None:
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    headers = [(b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": json.dumps(response).encode()})


def main() -> None:
    for line in sys.stdin:
        response = answer(json.loads(line))
        if response is not None:
            sys.stdout.write(json.dumps(response) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
