"""What the Streamable HTTP app answers to what its transport refuses, raw on the wire.

Which path a POST takes (a 2026-07-28 request or one of a handshake session), the id its
error carries when the transport turns it away, and a 2025-03-26 batch answered member by
member. Each against a real uvicorn serving ``http_app``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from support.http_servers import ThreadedServer, run, serving

from mcpbind._core import jsonrpc, lifecycle
from mcpbind._server.server import Server
from mcpbind._transports.http.client.sse_parser import SSEParser
from mcpbind.http import HttpOptions, http_app
from mcpbind_protocol import v2025_11_25 as legacy
from mcpbind_protocol import v2026_07_28 as mcp

MODERN = "2026-07-28"
HANDSHAKES = ["2025-03-26", "2025-06-18", "2025-11-25"]
BATCHING = [v for v in HANDSHAKES if lifecycle.allows_batches(v)]
ACCEPT = "application/json, text/event-stream"
META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
}


class ModernHandlers(mcp.ServerHandlers):
    pass


class LegacyHandlers(legacy.ServerHandlers):
    pass


def both_eras() -> Server:
    return Server([LegacyHandlers(), ModernHandlers()], name="rejections", version="1")


@pytest.fixture(scope="module")
def served() -> Iterator[ThreadedServer]:
    with serving(http_app(both_eras())) as server:
        yield server


@pytest.fixture(scope="module")
def served_json() -> Iterator[ThreadedServer]:
    with serving(http_app(both_eras(), json_response=True)) as server:
        yield server


def messages_of(response: httpx.Response) -> list[Any]:
    """The JSON-RPC messages of an answer, whether JSON (one or a batch) or SSE."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return [json.loads(e.data) for e in SSEParser().feed(response.content) if e.data]
    decoded = response.json()
    return decoded if isinstance(decoded, list) else [decoded]


def modern_headers(method: str, **extra: str) -> dict[str, str]:
    return {
        "accept": ACCEPT,
        "content-type": "application/json",
        "mcp-protocol-version": MODERN,
        "mcp-method": method,
        **extra,
    }


async def open_session(raw: httpx.AsyncClient, url: str, version: str) -> dict[str, str]:
    """Initialize a handshake session at ``version``; the headers its later POSTs carry."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
    headers = {"accept": ACCEPT, "content-type": "application/json"}
    response = await raw.post(url, content=json.dumps(initialize), headers=headers)
    assert response.status_code == 200, response.text
    assert messages_of(response)[0]["result"]["protocolVersion"] == version
    headers["mcp-session-id"] = response.headers["mcp-session-id"]
    if version >= "2025-06-18":
        headers["mcp-protocol-version"] = version
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    response = await raw.post(url, content=json.dumps(initialized), headers=headers)
    assert response.status_code == 202
    return headers


# ---------------------------------------------------------------- item 6: which path


@pytest.mark.parametrize("header", HANDSHAKES)
def test_a_modern_body_under_an_older_version_header_is_a_header_mismatch(
    served: ThreadedServer, header: str
) -> None:
    """2026-07-28, basic/transports/streamable-http: "The header value **MUST** match the
    `io.modelcontextprotocol/protocolVersion` field carried in the request body's `_meta`.
    If the values do not match, the server **MUST** reject the request with
    `400 Bad Request` and a `HeaderMismatch` JSON-RPC error"."""

    async def main() -> None:
        message = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "server/discover",
            "params": {"_meta": META},
        }
        headers = modern_headers("server/discover", **{"mcp-protocol-version": header})
        async with httpx.AsyncClient(timeout=10) as raw:
            response = await raw.post(served.url(), content=json.dumps(message), headers=headers)
        assert response.status_code == 400, response.text
        answer = response.json()
        assert answer["id"] == 3
        assert answer["error"]["code"] == jsonrpc.HEADER_MISMATCH, answer

    run(main())


def test_a_stray_session_id_does_not_turn_a_modern_request_away(served: ThreadedServer) -> None:
    """2026-07-28, basic/transports/streamable-http, Backward Compatibility: "An
    `Mcp-Session-Id` header on a request: ignore it, and do not mint or echo session IDs"."""

    async def main() -> None:
        message = {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "server/discover",
            "params": {"_meta": META},
        }
        headers = modern_headers("server/discover", **{"mcp-session-id": "left-over-session"})
        async with httpx.AsyncClient(timeout=10) as raw:
            response = await raw.post(served.url(), content=json.dumps(message), headers=headers)
        assert response.status_code == 200, response.text
        assert "mcp-session-id" not in response.headers
        (answer,) = messages_of(response)
        assert answer["id"] == 5 and MODERN in answer["result"]["supportedVersions"], answer

    run(main())


# ---------------------------------------------------------------- item 7: the id of a rejection


@pytest.mark.parametrize("version", HANDSHAKES)
@pytest.mark.parametrize("request_id", [7, "seven"])
def test_a_transport_rejection_carries_the_request_id(
    served: ThreadedServer, version: str, request_id: int | str
) -> None:
    """basic (every revision): "Responses **MUST** include the same ID as the request they
    correspond to"; JSON-RPC 2.0: the id of an error "**MUST** be the same as the value of
    the id member in the Request Object. If there was an error in detecting the id in the
    Request Object (e.g. Parse error/Invalid Request), it MUST be Null." A session
    missing or unknown, or a version header the server does not speak, leaves the id
    readable."""

    async def main() -> None:
        url = served.url()
        message = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"})
        async with httpx.AsyncClient(timeout=10) as raw:
            headers = await open_session(raw, url, version)
            refusals = [
                {k: v for k, v in headers.items() if k != "mcp-session-id"},
                {**headers, "mcp-session-id": "no-such-session"},
                {**headers, "mcp-protocol-version": "1999-01-01"},
            ]
            for refused in refusals:
                response = await raw.post(url, content=message, headers=refused)
                assert response.status_code in (400, 404), response.text
                answer = response.json()
                assert answer["id"] == request_id, (refused, answer)
                assert answer["error"]["code"] == jsonrpc.INVALID_REQUEST
            response = await raw.post(url, content=message, headers=headers)
            assert messages_of(response) == [{"jsonrpc": "2.0", "id": request_id, "result": {}}]

    run(main())


# ---------------------------------------------------------------- item 8: batches


@pytest.mark.parametrize("version", BATCHING)
@pytest.mark.parametrize("json_response", [False, True])
def test_a_batch_is_answered_member_by_member(
    served: ThreadedServer, served_json: ThreadedServer, version: str, json_response: bool
) -> None:
    """2025-03-26, basic/transports: "Implementations **MUST** support receiving JSON-RPC
    batches"; JSON-RPC 2.0, Batch: "The Server should respond with an Array containing the
    corresponding Response objects" and, for `[1]`, an Invalid Request error with id null per
    member; "If the batch rpc call itself fails to be recognized [...] as an Array with at
    least one value, the response from the Server MUST be a single Response object"."""
    url = (served_json if json_response else served).url()

    async def main() -> None:
        async with httpx.AsyncClient(timeout=10) as raw:
            headers = await open_session(raw, url, version)
            ping = {"jsonrpc": "2.0", "id": 4, "method": "ping"}

            response = await raw.post(url, content=json.dumps([ping, 5]), headers=headers)
            assert response.status_code == 200, response.text
            answers = sorted(messages_of(response), key=lambda m: m["id"] is None)
            assert answers[0] == {"jsonrpc": "2.0", "id": 4, "result": {}}
            assert answers[1]["id"] is None
            assert answers[1]["error"]["code"] == jsonrpc.INVALID_REQUEST
            assert len(answers) == 2

            # A member with a readable id that is not a valid request: answered under it.
            bad = {"jsonrpc": "1.0", "id": 9, "method": "ping"}
            response = await raw.post(url, content=json.dumps([bad, ping]), headers=headers)
            answers = sorted(messages_of(response), key=lambda m: m["id"])
            assert [a["id"] for a in answers] == [4, 9]
            assert answers[1]["error"]["code"] == jsonrpc.INVALID_REQUEST

            # Nothing valid: an array of errors, one per member.
            response = await raw.post(url, content=b"[1, 2]", headers=headers)
            assert response.status_code == 400
            answers = response.json()
            assert [(a["id"], a["error"]["code"]) for a in answers] == [
                (None, jsonrpc.INVALID_REQUEST)
            ] * 2

            # An empty batch: one error, not an array.
            response = await raw.post(url, content=b"[]", headers=headers)
            assert response.status_code == 400
            answer = response.json()
            assert answer["id"] is None and answer["error"]["code"] == jsonrpc.INVALID_REQUEST

            # The session goes on.
            response = await raw.post(url, content=json.dumps(ping), headers=headers)
            assert messages_of(response) == [{"jsonrpc": "2.0", "id": 4, "result": {}}]

    run(main())


def test_a_legacy_sse_rejection_carries_the_request_id() -> None:
    """2024-11-05, basic/messages: "Responses **MUST** include the same ID as the request
    they correspond to". A POST to the HTTP+SSE message endpoint turned away for want of
    room names the request it turns away."""

    async def main(url: str) -> None:
        async with httpx.AsyncClient(timeout=10) as raw:
            async with raw.stream("GET", url + "/sse") as stream:
                chunks = stream.aiter_bytes()
                events = SSEParser().feed(await anext(chunks))
                assert events[0].event == "endpoint"
                target = url + events[0].data
                ping = {"jsonrpc": "2.0", "id": "p-1", "method": "ping"}
                response = await raw.post(target, json=ping)
                assert response.status_code == 429
                assert response.json()["id"] == "p-1"

    app = http_app(both_eras(), options=HttpOptions(max_concurrent_requests=0))
    with serving(app) as server:
        run(main(server.url("")))
