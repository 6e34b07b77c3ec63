"""Drive an ASGI application directly, without a network: one HTTP request,
its response collected. Fast enough to try thousands of requests."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Response:
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def json(self) -> Any:
        return json.loads(self.body)


async def request(
    app: Any,
    method: str,
    path: str,
    headers: dict[str, str] | None = None,
    body: bytes = b"",
    query: str = "",
    host: str | None = "127.0.0.1",
    leave_after_first_chunk: bool = False,
    timeout: float = 10.0,
    client: tuple[str, int] = ("127.0.0.1", 50000),
) -> Response:
    """Send one request to ``app``. ``host`` is the Host header (None: none).
    ``leave_after_first_chunk``: the client disconnects once the first piece
    of the body has arrived (for streams that never end by themselves).
    ``client``: the peer address and port the request comes from."""
    response = Response()
    gone = asyncio.Event()
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            response.status = message["status"]
            response.headers = {
                k.decode("latin-1").lower(): v.decode("latin-1")
                for k, v in message.get("headers", [])
            }
        elif message["type"] == "http.response.body":
            response.body += message.get("body", b"")
            if leave_after_first_chunk and response.body:
                gone.set()

    all_headers = {**({"host": host} if host is not None else {}), **(headers or {})}
    scope = {
        "type": "http",
        "http_version": "1.1",
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": query.encode(),
        "headers": [
            (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in all_headers.items()
        ],
        "client": client,
        "server": ("127.0.0.1", 8000),
    }
    try:
        await asyncio.wait_for(app(scope, receive, send), timeout)
    finally:
        gone.set()
    return response
