"""A hostile Streamable HTTP server, for testing our client against it.

It answers initialize like any server, then answers ``tools/call`` by the
tool's name:

* ``huge``: a JSON answer of ``--huge-mib`` MiB, sent as it is made;
* ``endless``: an SSE stream of log notifications that never ends and
  never carries the response;
* ``flood``: 100,000 progress notifications for the call, then its result;
* ``strays``: responses to ids the client never sent, then the result.

``python tests/support/hostile_server.py`` prints ``PORT <n>`` once it
listens on 127.0.0.1. GET /stats tells how many endless streams are open.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
from typing import Any

import uvicorn

INIT_RESULT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "hostile", "version": "0"},
}


class Hostile:
    def __init__(self, huge_mib: int) -> None:
        self.huge_mib = huge_mib
        self.endless_open = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if scope["method"] == "GET" and scope["path"] == "/stats":
            await self._json(send, 200, json.dumps({"endless_open": self.endless_open}).encode())
            return
        if scope["method"] != "POST":
            await send({"type": "http.response.start", "status": 405, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        request = json.loads(body)
        if "id" not in request or "method" not in request:
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        request_id, method = request["id"], request["method"]
        if method == "initialize":
            await self._json(
                send,
                200,
                self._result(request_id, INIT_RESULT),
                [(b"mcp-session-id", b"hostile-session")],
            )
            return
        if method != "tools/call":
            await self._json(send, 200, self._result(request_id, {}))
            return
        name = request["params"]["name"]
        token = request["params"].get("_meta", {}).get("progressToken")
        if name == "huge":
            await self._huge(send, request_id)
        elif name == "endless":
            await self._endless(send, receive)
        elif name == "flood":
            notes = (
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": i, "total": 100_000},
                }
                for i in range(100_000)
            )
            await self._sse(
                send,
                [
                    *notes,
                    json.loads(
                        self._result(
                            request_id, {"content": [{"type": "text", "text": "after the flood"}]}
                        )
                    ),
                ],
            )
        elif name == "strays":
            strays = [
                {"jsonrpc": "2.0", "id": 10_000 + i, "result": {"content": []}} for i in range(1000)
            ]
            strays += [
                {"jsonrpc": "2.0", "id": f"never-{i}", "error": {"code": -1, "message": "x"}}
                for i in range(1000)
            ]
            await self._sse(
                send,
                [
                    *strays,
                    json.loads(
                        self._result(
                            request_id, {"content": [{"type": "text", "text": "after the strays"}]}
                        )
                    ),
                ],
            )

    @staticmethod
    def _result(request_id: Any, result: Any) -> bytes:
        return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()

    @staticmethod
    async def _json(
        send: Any, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None
    ) -> None:
        headers = [(b"content-type", b"application/json"), *(extra or [])]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _huge(self, send: Any, request_id: Any) -> None:
        """A result whose text is huge_mib MiB, never whole in this process's memory."""
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        head = (
            b'{"jsonrpc":"2.0","id":'
            + json.dumps(request_id).encode()
            + b',"result":{"content":[{"type":"text","text":"'
        )
        await send({"type": "http.response.body", "body": head, "more_body": True})
        chunk = b"x" * (1024 * 1024)
        try:
            for _ in range(self.huge_mib):
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b'"}]}}', "more_body": False})
        except OSError:
            pass  # the client hung up, as it should

    async def _endless(self, send: Any, receive: Any) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        self.endless_open += 1
        gone = asyncio.ensure_future(receive())
        note = (
            b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"'
            + b"y" * 1000
            + b'"}}\n\n'
        )
        try:
            while not gone.done():
                await send({"type": "http.response.body", "body": note * 10, "more_body": True})
                await asyncio.sleep(0.001)
        except OSError:
            pass
        finally:
            gone.cancel()
            self.endless_open -= 1

    @staticmethod
    async def _sse(send: Any, messages: list[Any]) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        batch: list[bytes] = []
        for message in messages:
            batch.append(b"event: message\ndata: " + json.dumps(message).encode() + b"\n\n")
            if len(batch) == 500:
                await send(
                    {"type": "http.response.body", "body": b"".join(batch), "more_body": True}
                )
                batch = []
        await send({"type": "http.response.body", "body": b"".join(batch), "more_body": False})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--huge-mib", type=int, default=256)
    options = parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(
        Hostile(options.huge_mib), log_level="error", lifespan="off", timeout_graceful_shutdown=1
    )
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
