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
from support.raw_http_peer import RawHttpPeer
from typing_extensions import override

from mcpbind._client.client import Client, ClientSession
from mcpbind._core import jsonrpc
from mcpbind._core.jsonrpc import McpError
from mcpbind._transports.http.client.sse_parser import SSEParser
from mcpbind._transports.http.headers import encode_value
from mcpbind.http import connect_http, http_app
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25 as legacy

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


# ---------------------------------------------------------------- items 11-13: our client

URL_ELICITATION = {
    "method": "elicitation/create",
    "params": {
        "mode": "url",
        "message": "Sign in",
        "url": "https://example.com/sign-in",
        "elicitationId": "e-1",
    },
}
TOOLS_ONLY = "tools"
WITH_TASKS = "tasks"


@pytest.fixture(scope="module")
def raw_peers() -> Iterator[dict[str, ThreadedServer]]:
    tasks = {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}}
    with (
        serving(RawHttpPeer({"tools": {}})) as tools_only,
        serving(RawHttpPeer(tasks)) as with_tasks,
    ):
        yield {TOOLS_ONLY: tools_only, WITH_TASKS: with_tasks}


class Handlers(legacy.ClientHandlers):
    """Answers every elicitation with accept: what a client must not do for a mode it
    did not declare."""

    def __init__(self) -> None:
        self.asked: list[Any] = []

    @override
    async def elicit(self, params: Any, ctx: RequestContext) -> Any:
        self.asked.append(params)
        return legacy.ElicitResult(action="accept", content={})

    @override
    async def list_roots(self, params: Any, ctx: RequestContext) -> Any:
        return legacy.ListRootsResult(roots=[])


def _our_client(handlers: Any = None, capabilities: dict[str, Any] | None = None) -> Client:
    return Client(
        name="t",
        version="0",
        protocol_version=HANDSHAKE,
        handlers=handlers,
        capabilities=capabilities,
    )


async def _text_of(session: ClientSession, name: str, arguments: dict[str, Any]) -> Any:
    result = await legacy.ClientStub(session).call_tool(name, arguments=arguments)
    return json.loads(result.content[0].text)


def test_http_client_refuses_an_elicitation_mode_it_did_not_declare(
    raw_peers: dict[str, ThreadedServer],
) -> None:
    """Clients **MUST** return -32602 when the server sends an elicitation/create request
    with a mode not declared in client capabilities. (client/elicitation, 2025-11-25:
    "Server sends an `elicitation/create` request with a mode not declared in client
    capabilities: `-32602` (Invalid params)")

    Over Streamable HTTP: the request comes on the SSE answer of a call, the client's
    answer goes back in a POST of its own."""

    async def scenario() -> None:
        for declared, allowed in (
            (None, False),  # the handler alone declares elicitation: {} (form only)
            ({"elicitation": {"form": {}}}, False),
            ({"elicitation": {"url": {}}}, True),
        ):
            handlers = Handlers()
            client = _our_client(handlers, declared)
            async with connect_http(client, raw_peers[TOOLS_ONLY].url(), listen=False) as session:
                answer = await _text_of(session, "probe", {"request": URL_ELICITATION})
            if allowed:
                assert answer["result"]["action"] == "accept" and len(handlers.asked) == 1
            else:
                assert answer["error"]["code"] == jsonrpc.INVALID_PARAMS, answer
                assert "elicitation.url" in answer["error"]["message"]
                assert handlers.asked == []

    run(scenario())


def test_http_client_sends_no_task_augmentation_the_server_did_not_declare(
    raw_peers: dict[str, ThreadedServer],
) -> None:
    """If a server's capabilities do not include `tasks.requests.tools.call`, then clients
    **MUST NOT** attempt to use task augmentation on that server's tools, regardless of
    the `execution.taskSupport` value. (basic/utilities/tasks, 2025-11-25)

    Over Streamable HTTP, against a server that checks nothing."""

    async def scenario() -> None:
        url = raw_peers[TOOLS_ONLY].url()
        async with connect_http(_our_client(), url, listen=False) as session:
            with pytest.raises(McpError, match="tasks.requests.tools.call") as refused:
                await legacy.ClientStub(session).call_tool_as_task("slow")
            assert refused.value.code == jsonrpc.METHOD_NOT_FOUND
            seen = await _text_of(session, "seen", {})
        assert all(entry[1] is None for entry in seen if isinstance(entry, list)), seen
        url = raw_peers[WITH_TASKS].url()
        async with connect_http(_our_client(), url, listen=False) as session:
            await legacy.ClientStub(session).call_tool_as_task("slow")
            seen = await _text_of(session, "seen", {})
        assert any(isinstance(entry, list) and entry[1] is not None for entry in seen), seen

    run(scenario())


def test_http_client_announces_no_roots_change_it_did_not_declare(
    raw_peers: dict[str, ThreadedServer],
) -> None:
    """`listChanged` indicates whether the client will emit notifications when the list of
    roots changes. (client/roots, 2025-11-25): over Streamable HTTP, a client that
    declared ``roots: {}`` POSTs no notifications/roots/list_changed."""

    async def scenario() -> None:
        url = raw_peers[TOOLS_ONLY].url()
        async with connect_http(_our_client(Handlers()), url, listen=False) as session:
            with pytest.raises(McpError, match="roots.listChanged"):
                await legacy.ClientStub(session).notify_roots_list_changed()
            seen = await _text_of(session, "seen", {})
        assert "notifications/roots/list_changed" not in seen, seen
        declared = {"roots": {"listChanged": True}}
        async with connect_http(_our_client(Handlers(), declared), url, listen=False) as session:
            await legacy.ClientStub(session).notify_roots_list_changed()
            seen = await _text_of(session, "seen", {})
        assert "notifications/roots/list_changed" in seen, seen

    run(scenario())
