"""Raw HTTP requests to a protected MCP server, by a client other than the
one under test: what came back (status, challenge, JSON-RPC messages)."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx

from mcpbind._transports.http.client.streamable import SSEParser

MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
_PARAM = re.compile(r'(\w+)="([^"]*)"')


def challenge(response: httpx.Response) -> dict[str, str]:
    """The parameters of a Bearer WWW-Authenticate header."""
    value = response.headers.get("www-authenticate", "")
    assert value.startswith("Bearer "), value
    return dict(_PARAM.findall(value))


def messages(response: httpx.Response) -> list[Any]:
    """The JSON-RPC messages of a JSON or SSE answer."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return [response.json()]
    found = []
    for block in response.text.split("\n\n"):
        data = "\n".join(
            line[5:].lstrip() for line in block.splitlines() if line.startswith("data:")
        )
        if data.strip():
            found.append(json.loads(data))
    return found


def auth(token: str | None) -> dict[str, str]:
    return {} if token is None else {"authorization": f"Bearer {token}"}


def modern_call(
    url: str, token: str | None, tool: str = "whoami", request_id: int = 1
) -> httpx.Response:
    """A 2026-07-28 tools/call, on its own (no session)."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    }
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {}, "_meta": meta},
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": tool,
        **auth(token),
    }
    return httpx.post(url, json=body, headers=headers, timeout=30)


class HandshakeSession:
    """A 2025-11-25 session over raw POSTs, each with the token given for it."""

    def __init__(self, url: str, token: str | None) -> None:
        self.url = url
        self.http = httpx.AsyncClient(timeout=30)
        self.session_id: str | None = None
        self.token = token
        self._ids = 0

    async def open(self) -> httpx.Response:
        params = {
            "protocolVersion": HANDSHAKE,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        }
        response = await self.post("initialize", params)
        if response.status_code == 200:
            self.session_id = response.headers.get("mcp-session-id")  # none in stateless mode
            await self.post("notifications/initialized", None, notification=True)
        return response

    async def post(
        self,
        method: str,
        params: Any,
        *,
        token: str | None = None,
        notification: bool = False,
        session_id: str | None = None,
    ) -> httpx.Response:
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            body["params"] = params
        if not notification:
            self._ids += 1
            body["id"] = self._ids
        headers = {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            "mcp-protocol-version": HANDSHAKE,
        }
        headers.update(auth(token if token is not None else self.token))
        sid = session_id if session_id is not None else self.session_id
        if sid is not None:
            headers["mcp-session-id"] = sid
        return await self.http.post(self.url, json=body, headers=headers)

    async def call(self, tool: str, *, token: str | None = None) -> httpx.Response:
        return await self.post("tools/call", {"name": tool, "arguments": {}}, token=token)

    async def close(self) -> None:
        await self.http.aclose()


def tool_text(response: httpx.Response) -> str:
    """The text of the tools/call result a response carries (it must carry one)."""
    found = [m for m in messages(response) if "result" in m or "error" in m]
    assert found and "result" in found[-1], (response.status_code, response.text)
    return str(found[-1]["result"]["content"][0]["text"])


def tool_error(response: httpx.Response) -> dict[str, Any]:
    found = [m for m in messages(response) if "error" in m]
    assert found, (response.status_code, response.text)
    error: dict[str, Any] = found[-1]["error"]
    return error


class LegacySession:
    """A 2024-11-05 HTTP+SSE session over raw requests: the GET stream, and a
    POST of each message to the endpoint it names."""

    def __init__(self, base: str, token: str) -> None:
        self.base = base
        self.token = token
        self.http = httpx.AsyncClient(timeout=30)
        self.parser = SSEParser()
        self.endpoint = ""
        self._chunks: AsyncIterator[bytes] | None = None
        self._pending: list[Any] = []

    @contextlib.asynccontextmanager
    async def opened(self) -> AsyncIterator[LegacySession]:
        """The session, initialized, while its GET stream (at ``base``/sse) is open."""
        try:
            sse = f"{self.base}/sse"
            async with self.http.stream("GET", sse, headers=auth(self.token)) as stream:
                assert stream.status_code == 200, stream.status_code
                await self._open(stream)
                yield self
        finally:
            await self.http.aclose()

    async def _open(self, stream: httpx.Response) -> None:
        self._chunks = stream.aiter_bytes()
        events = self.parser.feed(await anext(self._chunks))
        assert events[0].event == "endpoint", events
        self.endpoint = self.base + events[0].data
        init = {
            "protocolVersion": "2024-11-05",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        }
        assert (
            await self.post({"id": 0, "method": "initialize", "params": init})
        ).status_code == 202
        assert "result" in await self.answer(0)
        assert (await self.post({"method": "notifications/initialized"})).status_code == 202

    async def post(self, message: dict[str, Any], token: str | None = None) -> httpx.Response:
        body = {"jsonrpc": "2.0", **message}
        headers = auth(token if token is not None else self.token)
        return await self.http.post(self.endpoint, json=body, headers=headers)

    async def call(self, request_id: int, tool: str, token: str | None = None) -> httpx.Response:
        params = {"name": tool, "arguments": {}}
        return await self.post({"id": request_id, "method": "tools/call", "params": params}, token)

    async def answer(self, request_id: int) -> dict[str, Any]:
        """The response to ``request_id``, from the stream."""
        assert self._chunks is not None
        while True:
            for message in self._pending:
                if message.get("id") == request_id and "method" not in message:
                    self._pending.remove(message)
                    return dict(message)
            self._pending += [
                json.loads(event.data)
                for event in self.parser.feed(await anext(self._chunks))
                if event.event == "message"
            ]
