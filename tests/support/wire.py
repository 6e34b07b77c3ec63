"""Seeing what crosses the wire: a transport wrapper that keeps every message
a session sends and receives (and may rewrite outgoing ones), and an ASGI
wrapper that keeps the JSON-RPC bodies POSTed to a server."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import IO, Any

import msgspec

from mcpbind._core import wire

Message = dict[str, Any]


def _messages(data: bytes) -> list[Message]:
    decoded = json.loads(data)
    return decoded if isinstance(decoded, list) else [decoded]


class WireTap:
    """A transport that passes everything through to ``inner`` and remembers
    it, decoded. ``rewrite`` may replace an outgoing message (return the new
    one) or leave it (return None). ``log`` gets one line per message received."""

    def __init__(
        self,
        inner: Any,
        rewrite: Callable[[Message], Message | None] | None = None,
        log: IO[str] | None = None,
    ) -> None:
        self.inner = inner
        self.rewrite = rewrite
        self.log = log
        self.sent: list[Message] = []
        self.received: list[Message] = []

    async def read(self) -> wire.Message | None:
        message: wire.Message | None = await self.inner.read()
        if message is not None:
            self.received.extend(_messages(message.data))
            if self.log is not None:
                self.log.write(bytes(message.data).decode().rstrip("\n") + "\n")
                self.log.flush()
        return message

    def write(self, message: wire.Message) -> None:
        decoded = json.loads(message.data)
        if self.rewrite is not None and isinstance(decoded, dict):
            replaced = self.rewrite(decoded)
            if replaced is not None:
                decoded = replaced
                # What the message says of itself follows the rewrite: its
                # params are the rewritten ones, encoded.
                params = decoded.get("params")
                message = msgspec.structs.replace(
                    message,
                    data=json.dumps(decoded).encode(),
                    params=None if params is None else json.dumps(params).encode(),
                )
        self.sent.extend(decoded if isinstance(decoded, list) else [decoded])
        self.inner.write(message)

    async def drain(self) -> None:
        await self.inner.drain()

    async def close(self) -> None:
        await self.inner.close()

    def close_request_stream(self, request_id: Any) -> None:
        self.inner.close_request_stream(request_id)

    def __getattr__(self, name: str) -> Any:
        # negotiated(), closed_reason(), process ...: whatever the inner transport has
        return getattr(self.inner, name)

    # ------------------------------------------------------------ queries

    def requests(self, method: str | None = None) -> list[Message]:
        """Requests sent, in order (of ``method`` only, if given)."""
        return [
            m for m in self.sent if "id" in m and "method" in m and method in (None, m["method"])
        ]

    def methods(self) -> list[str]:
        """The method of every request sent, in order."""
        return [m["method"] for m in self.requests()]

    def notifications(self, method: str | None = None) -> list[Message]:
        """Notifications received, in order (of ``method`` only, if given)."""
        return [
            m
            for m in self.received
            if "id" not in m and "method" in m and method in (None, m["method"])
        ]

    def response_to(self, request_id: Any) -> Message:
        for message in self.received:
            if "method" not in message and message.get("id") == request_id:
                return message
        raise AssertionError(f"no response to request {request_id!r}")


class BodyTap:
    """An ASGI app wrapper remembering the JSON-RPC messages POSTed to it."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.messages: list[Message] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []

        async def tapped() -> Any:
            event = await receive()
            if event["type"] == "http.request":
                chunks.append(event.get("body", b""))
                if not event.get("more_body", False):
                    try:
                        self.messages.extend(_messages(b"".join(chunks)))
                    except ValueError:
                        pass
            return event

        await self.app(scope, tapped, send)

    def methods(self) -> list[str]:
        return [m["method"] for m in self.messages if "id" in m and "method" in m]

    # also lets ThreadedServer(BodyTap(app)).app.<attr> reach the wrapped app
    def __getattr__(self, name: str) -> Any:
        return getattr(self.app, name)
