"""The statements of the specification the conformance suite does not look at, over
Streamable HTTP: the audit app under uvicorn driven by raw POSTs (httpx), in a
handshake session at 2025-11-25 (initialize, then Mcp-Session-Id) and per request at
2026-07-28 (the ``_meta`` envelope and the headers that mirror it). Structured results
that conform to their outputSchema, nothing sent past the client's sub-capabilities,
progress that stops at the response and only rises, -32602 for cursors and completion
references the server never issued, and a requestState bound to its arguments."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from support.audit_server import app as audit_app
from support.http_servers import ThreadedServer, run, serving

from mcp_runtime import jsonrpc
from mcp_runtime.http import http_app
from mcp_runtime.http.headers import encode_value
from mcp_runtime.http.sse_parser import SSEParser

HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"
REVISIONS = (HANDSHAKE, MODERN)
ACCEPT = "application/json, text/event-stream"
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}

# (what the tool asks, capabilities that do not allow it, capabilities that do)
REFUSED = [
    ("url", {"elicitation": {}}, {"elicitation": {"url": {}}}),
    ("url", {"elicitation": {"form": {}}}, {"elicitation": {"form": {}, "url": {}}}),
    ("form", {"elicitation": {"url": {}}}, {"elicitation": {}}),
    ("sampling_tools", {"sampling": {}}, {"sampling": {"tools": {}}}),
]
LISTS = ("tools/list", "prompts/list", "resources/list", "resources/templates/list")


@pytest.fixture(scope="module")
def audit() -> Iterator[ThreadedServer]:
    with serving(http_app(audit_app.server())) as server:
        yield server


def _meta(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    }


def _messages(response: httpx.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an answer, whether JSON or an SSE stream."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return [
            json.loads(event.data) for event in SSEParser().feed(response.content) if event.data
        ]
    return [response.json()]


class Wire:
    """Raw POSTs to the audit app at one revision: a handshake session (``initialize``,
    then the Mcp-Session-Id on every POST) or 2026-07-28 requests, each with the
    ``_meta`` envelope and the headers that mirror its body."""

    def __init__(self, raw: httpx.AsyncClient, url: str, version: str) -> None:
        self.raw, self.url, self.version = raw, url, version
        self.session_id: str | None = None
        self.capabilities: dict[str, Any] = {}
        self.ids = 0

    @classmethod
    async def open(
        cls,
        raw: httpx.AsyncClient,
        url: str,
        version: str,
        capabilities: dict[str, Any] | None = None,
    ) -> Wire:
        wire = cls(raw, url, version)
        wire.capabilities = capabilities or {}
        if version != MODERN:
            init = {
                "protocolVersion": version,
                "capabilities": wire.capabilities,
                "clientInfo": {"name": "raw", "version": "0"},
            }
            answer = await raw.post(
                url,
                json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
                headers={"accept": ACCEPT, "content-type": "application/json"},
            )
            assert answer.status_code == 200, answer.text
            wire.session_id = answer.headers["mcp-session-id"]
            done = await wire.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
            assert done.status_code == 202, done.text
        return wire

    def headers(self, message: dict[str, Any]) -> dict[str, str]:
        result = {"accept": ACCEPT, "content-type": "application/json"}
        result["mcp-protocol-version"] = self.version
        if self.session_id is not None:
            result["mcp-session-id"] = self.session_id
        if self.version == MODERN and "method" in message:
            result["mcp-method"] = message["method"]
            name = NAMED.get(message["method"])
            if name is not None and name in message.get("params", {}):
                result["mcp-name"] = encode_value(message["params"][name])
        return result

    def message(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        params = dict(params or {})
        if self.version == MODERN:
            params["_meta"] = {**_meta(self.capabilities), **params.get("_meta", {})}
        self.ids += 1
        return {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}

    async def post(self, message: dict[str, Any]) -> httpx.Response:
        return await self.raw.post(
            self.url, content=json.dumps(message), headers=self.headers(message)
        )

    async def exchange(
        self, method: str, params: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The answer to one request, and the messages that came before it."""
        message = self.message(method, params)
        *before, answer = _messages(await self.post(message))
        assert answer.get("id") == message["id"], (message, before, answer)
        return answer, before

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return (await self.exchange(method, params))[0]

    async def call_answering(self, params: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
        """tools/call in a handshake session, its SSE answer read as it comes: the
        server's requests met before the response are answered by POSTs of their own
        (accept, or a model's message) and returned with it."""
        message = self.message("tools/call", params)
        asked: list[Any] = []
        parser = SSEParser()
        async with self.raw.stream(
            "POST", self.url, content=json.dumps(message), headers=self.headers(message)
        ) as response:
            assert response.status_code == 200
            async for chunk in response.aiter_bytes():
                for event in parser.feed(chunk):
                    if not event.data:
                        continue
                    received = json.loads(event.data)
                    if received.get("id") == message["id"] and "method" not in received:
                        return received, asked
                    if "method" in received and "id" in received:
                        asked.append(received)
                        answered = await self.post(
                            {"jsonrpc": "2.0", "id": received["id"], "result": _answer(received)}
                        )
                        assert answered.status_code == 202, answered.text
        raise AssertionError(f"the stream ended before the response; asked {asked}")


def _answer(request: dict[str, Any]) -> dict[str, Any]:
    if request["method"] == "elicitation/create":
        return {"action": "accept", "content": {"name": "Ann"}}
    return {"role": "assistant", "model": "m", "content": {"type": "text", "text": "x"}}


def _client() -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=30)


# ---------------------------------------------------------------- item 1: structured results


@pytest.mark.parametrize("version", REVISIONS)
def test_http_structured_results_conform_to_the_output_schema(
    audit: ThreadedServer, version: str
) -> None:
    """Servers **MUST** provide structured results that conform to this schema.
    (server/tools, 2025-11-25 and 2026-07-28): over Streamable HTTP, a tool whose value
    does not fit its return annotation answers a tool error, never a malformed
    structuredContent."""

    async def scenario() -> None:
        async with _client() as raw:
            wire = await Wire.open(raw, audit.url(), version)
            for name in ("bad_output", "bad_list"):
                answer = await wire.call("tools/call", {"name": name, "arguments": {}})
                result = answer["result"]
                assert result.get("isError") is True and "structuredContent" not in result, answer
                assert "does not conform to its output schema" in result["content"][0]["text"]
            good = await wire.call("tools/call", {"name": "good_output", "arguments": {}})
            assert good["result"]["structuredContent"] == {"n": 1}, good
            assert not good["result"].get("isError"), good

    run(scenario())


# ---------------------------------------------------------------- items 2 and 3: sub-capabilities


@pytest.mark.parametrize("kind,refusing,allowing", REFUSED)
def test_http_session_server_does_not_send_what_the_client_did_not_declare(
    audit: ThreadedServer, kind: str, refusing: dict[str, Any], allowing: dict[str, Any]
) -> None:
    """Servers **MUST NOT** send elicitation requests with modes that are not supported
    by the client. (client/elicitation, 2025-11-25) Servers **MUST NOT** send
    tool-enabled sampling requests to Clients that have not declared support for tool use
    via the `sampling.tools` capability. (client/sampling, 2025-11-25)

    In a Streamable HTTP session: refused to the tool (which says so, and nothing is put
    on the POST's stream), sent on the stream and answered by a POST once declared."""

    async def scenario() -> None:
        async with _client() as raw:
            for capabilities, allowed in ((refusing, False), (allowing, True)):
                wire = await Wire.open(raw, audit.url(), HANDSHAKE, capabilities)
                answer, asked = await wire.call_answering(
                    {"name": "ask", "arguments": {"kind": kind}}
                )
                text = answer["result"]["content"][0]["text"]
                if allowed:
                    assert text == "sent" and len(asked) == 1, (capabilities, answer, asked)
                else:
                    assert asked == [], (capabilities, asked)
                    assert text.startswith("refused: the client did not declare"), text
                    assert ("url" if kind == "url" else kind[:4]) in text

    run(scenario())


@pytest.mark.parametrize("kind,refusing,allowing", REFUSED)
def test_http_input_requests_stay_within_the_declared_capabilities(
    audit: ThreadedServer, kind: str, refusing: dict[str, Any], allowing: dict[str, Any]
) -> None:
    """Servers **MUST NOT** send an `inputRequests` that the client has not declared
    support for in its capabilities. (basic/patterns/mrtr, 2026-07-28) Servers **MUST
    NOT** send elicitation requests with modes that are not supported by the client.
    (client/elicitation, 2026-07-28) Servers **MUST NOT** send tool-enabled sampling
    requests to Clients that have not declared support for tool use via the
    `sampling.tools` capability. (client/sampling, 2026-07-28)

    Over Streamable HTTP, per request: -32021 naming the sub-capability, an
    input-required result once declared."""

    async def scenario() -> None:
        async with _client() as raw:
            params = {"name": "ask", "arguments": {"kind": kind}}
            refusing_wire = await Wire.open(raw, audit.url(), MODERN, refusing)
            refused = await refusing_wire.call("tools/call", params)
            assert refused["error"]["code"] == jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY, refused
            wanted = refused["error"]["data"]["requiredCapabilities"]
            assert wanted[next(iter(wanted))], wanted  # the sub-capability, not the top level
            allowing_wire = await Wire.open(raw, audit.url(), MODERN, allowing)
            allowed = await allowing_wire.call("tools/call", params)
            assert allowed["result"]["resultType"] == "input_required", allowed

    run(scenario())


# ---------------------------------------------------------------- item 4: progress


@pytest.mark.parametrize("version", REVISIONS)
def test_http_progress_stops_at_the_response_and_only_rises(
    audit: ThreadedServer, version: str
) -> None:
    """The `progress` value **MUST** increase with each notification, even if the total
    is unknown. Progress notifications **MUST** only reference tokens that: Were provided
    in an active request; Are associated with an in-progress operation.
    (basic/utilities/progress, 2025-11-25; basic/patterns/progress, 2026-07-28)

    Over Streamable HTTP, in the SSE answer of the call: 5 and 6 of the reports 5, 3, 5,
    6, and the report its task makes after the response is not in the answer of the
    next request."""

    async def scenario() -> None:
        async with _client() as raw:
            wire = await Wire.open(raw, audit.url(), version)
            params = {"name": "late_progress", "arguments": {}, "_meta": {"progressToken": "p-1"}}
            answer, before = await wire.exchange("tools/call", params)
            assert answer["result"]["content"][0]["text"] == "returned", answer
            progress = [m["params"] for m in before if m["method"] == "notifications/progress"]
            assert [(p["progressToken"], p["progress"]) for p in progress] == [
                ("p-1", 5),
                ("p-1", 6),
            ], before
            released, after = await wire.exchange(
                "tools/call", {"name": "release", "arguments": {}}
            )
            assert released["result"]["content"][0]["text"] == "released", released
            assert after == [], after  # the late report of 7 never went out

    run(scenario())


# ---------------------------------------------------------------- item 5: -32602


@pytest.mark.parametrize("version", REVISIONS)
def test_http_invalid_cursors_are_invalid_params(audit: ThreadedServer, version: str) -> None:
    """Invalid cursors **SHOULD** result in an error with code -32602 (Invalid params).
    (server/utilities/pagination, 2025-11-25 and 2026-07-28)"""

    async def scenario() -> None:
        async with _client() as raw:
            wire = await Wire.open(raw, audit.url(), version)
            for method in LISTS:
                refused = await wire.call(method, {"cursor": "garbage!!"})
                assert refused["error"]["code"] == jsonrpc.INVALID_PARAMS, (method, refused)
                listed = await wire.call(method)
                assert "result" in listed, (method, listed)

    run(scenario())


@pytest.mark.parametrize("version", REVISIONS)
def test_http_completion_of_what_is_not_served_is_invalid_params(
    audit: ThreadedServer, version: str
) -> None:
    """Servers **SHOULD** return standard JSON-RPC errors for common failure cases: ...
    Invalid prompt name: `-32602` (Invalid params) (server/utilities/completion,
    2025-11-25 and 2026-07-28); an unknown resource template the same way."""

    async def scenario() -> None:
        async with _client() as raw:
            wire = await Wire.open(raw, audit.url(), version)
            argument = {"name": "name", "value": "A"}
            for ref in (
                {"type": "ref/prompt", "name": "nope"},
                {"type": "ref/resource", "uri": "nope://{x}"},
            ):
                refused = await wire.call("completion/complete", {"ref": ref, "argument": argument})
                assert refused["error"]["code"] == jsonrpc.INVALID_PARAMS, (ref, refused)
            known = await wire.call(
                "completion/complete",
                {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": argument},
            )
            assert known["result"]["completion"]["values"] == ["Ann"], known

    run(scenario())


# ---------------------------------------------------------------- item 9: requestState


def test_http_request_state_is_bound_to_its_arguments(audit: ThreadedServer) -> None:
    """To prevent replay, servers **SHOULD** include the following inside the
    integrity-protected `requestState` payload and verify each on receipt: ... an identifier
    for the originating request, e.g. the method name and a digest of its salient parameters,
    rejecting state presented on a request that does not match. (basic/patterns/mrtr,
    2026-07-28)

    Over Streamable HTTP: the state of an input-required answer, presented on a retry
    with other arguments, is -32602; with the same arguments, the call completes."""

    async def scenario() -> None:
        async with _client() as raw:
            wire = await Wire.open(raw, audit.url(), MODERN, {"elicitation": {}})
            first = await wire.call("tools/call", {"name": "ask", "arguments": {"kind": "form"}})
            asked = first["result"]
            assert asked["resultType"] == "input_required", first
            answers = {key: {"action": "decline"} for key in asked["inputRequests"]}
            retry = {"inputResponses": answers, "requestState": asked["requestState"]}
            other = await wire.call(
                "tools/call", {"name": "ask", "arguments": {"kind": "other"}, **retry}
            )
            assert other["error"]["code"] == jsonrpc.INVALID_PARAMS, other
            assert "other arguments" in other["error"]["message"], other
            same = await wire.call(
                "tools/call", {"name": "ask", "arguments": {"kind": "form"}, **retry}
            )
            assert same["result"]["content"][0]["text"] == "answered", same

    run(scenario())
