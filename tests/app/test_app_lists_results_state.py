"""The app layer's answers where the conformance suite does not look: structured results
that conform to their outputSchema (else a tool error), cursors it never issued and
completion references it does not serve refused with -32602, and a requestState that
opens only for the arguments it was issued for; over stdio (raw lines) and in process."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest
from msgspec import UNSET
from support.audit_server import app as audit_app
from support.peers import SUPPORT, run
from support.rawstdio import RawServer
from support.transports import memory_pair

from mcpbind._client.client import Client
from mcpbind._core import jsonrpc, lifecycle
from mcpbind._core.jsonrpc import McpError

AUDIT_SERVER = [sys.executable, str(SUPPORT / "audit_server.py")]
MODERN = "2026-07-28"
ALL = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", MODERN)
STRUCTURED = ("2025-06-18", "2025-11-25", MODERN)
COMPLETING = tuple(v for v in ALL if "completion/complete" in lifecycle.revision(v).all_methods)


def _meta(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    }


class Wire:
    """A raw stdio connection to the audit app, at one revision."""

    def __init__(self, raw: RawServer, version: str) -> None:
        self.raw, self.version, self.ids = raw, version, 0

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        params = dict(params or {})
        if self.version == MODERN:
            params["_meta"] = {**_meta(), **params.get("_meta", {})}
        self.ids += 1
        return await self.raw.request(self.ids, method, params)


async def _open(version: str) -> Wire:
    raw = await RawServer.start(AUDIT_SERVER)
    if version != MODERN:
        await raw.initialize(version)
    return Wire(raw, version)


@pytest.mark.parametrize("version", STRUCTURED)
def test_stdio_structured_results_conform_to_the_output_schema(version: str) -> None:
    """Servers **MUST** provide structured results that conform to this schema.
    (server/tools, 2025-06-18, 2025-11-25 and 2026-07-28): a tool whose value does not
    fit its return annotation answers a tool error, never a malformed structuredContent."""

    async def scenario() -> None:
        wire = await _open(version)
        try:
            for name in ("bad_output", "bad_list"):
                answer = (await wire.call("tools/call", {"name": name, "arguments": {}}))["result"]
                assert answer.get("isError") is True and "structuredContent" not in answer, answer
                assert "does not conform to its output schema" in answer["content"][0]["text"]
            good = (await wire.call("tools/call", {"name": "good_output", "arguments": {}}))[
                "result"
            ]
            assert good["structuredContent"] == {"n": 1} and not good.get("isError"), good
        finally:
            await wire.raw.close()

    run(scenario())


@pytest.mark.parametrize("version", STRUCTURED)
def test_in_process_structured_results_conform_to_the_output_schema(version: str) -> None:
    """Servers **MUST** provide structured results that conform to this schema.
    (server/tools, 2025-06-18, 2025-11-25 and 2026-07-28)"""

    async def scenario() -> None:
        client = Client(name="t", version="0", protocol_version=version)
        stub: Any = lifecycle.revision(version).package.ClientStub
        async with audit_app.test_client(client=client) as session:
            bad = await stub(session).call_tool("bad_output")
            good = await stub(session).call_tool("good_output")
        assert bad.is_error is True and bad.structured_content in (None, UNSET), bad
        assert good.is_error is not True

    run(scenario())


LISTS = ("tools/list", "prompts/list", "resources/list", "resources/templates/list")


@pytest.mark.parametrize("version", ALL)
def test_stdio_invalid_cursors_are_invalid_params(version: str) -> None:
    """Invalid cursors **SHOULD** result in an error with code -32602 (Invalid params).
    (server/utilities/pagination, 2024-11-05 to 2026-07-28)"""

    async def scenario() -> None:
        wire = await _open(version)
        try:
            for method in LISTS:
                refused = await wire.call(method, {"cursor": "garbage!!"})
                assert refused["error"]["code"] == jsonrpc.INVALID_PARAMS, (method, refused)
                listed = await wire.call(method)
                assert "result" in listed, (method, listed)
        finally:
            await wire.raw.close()

    run(scenario())


@pytest.mark.parametrize("version", COMPLETING)
def test_stdio_completion_of_what_is_not_served_is_invalid_params(version: str) -> None:
    """Servers **SHOULD** return standard JSON-RPC errors for common failure cases: ...
    Invalid prompt name: `-32602` (Invalid params) (server/utilities/completion,
    2025-03-26 to 2026-07-28; 2024-11-05 names the same error in server/prompts); an
    unknown resource template the same way."""

    async def scenario() -> None:
        wire = await _open(version)
        try:
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
            unregistered = await wire.call(
                "completion/complete",
                {"ref": {"type": "ref/resource", "uri": "note://{id}"}, "argument": argument},
            )
            assert unregistered["result"]["completion"]["values"] == [], unregistered
        finally:
            await wire.raw.close()

    run(scenario())


@pytest.mark.parametrize("version", ("2025-06-18", "2025-11-25"))
def test_in_process_invalid_cursor_and_unknown_prompt_completion(version: str) -> None:
    """Invalid cursors **SHOULD** result in an error with code -32602 (Invalid params).
    (server/utilities/pagination) Invalid prompt name: `-32602` (Invalid params)
    (server/utilities/completion)"""

    async def scenario() -> None:
        client = Client(name="t", version="0", protocol_version=version)
        types: Any = lifecycle.revision(version).package
        async with audit_app.test_client(client=client) as session:
            stub = types.ClientStub(session)
            with pytest.raises(McpError) as refused:
                await stub.list_tools(cursor="garbage!!")
            assert refused.value.code == jsonrpc.INVALID_PARAMS
            with pytest.raises(McpError) as unknown:
                await stub.complete(
                    types.CompleteRequestParamsArgument(name="name", value="A"),
                    types.PromptReference(name="nope"),
                )
            assert unknown.value.code == jsonrpc.INVALID_PARAMS

    run(scenario())


async def _state_rounds(call: Any) -> None:
    """Ask (input required), retry with other arguments (refused), then with the same."""
    elicitation = {"elicitation": {}}
    first = await call(1, {"name": "ask", "arguments": {"kind": "form"}}, elicitation)
    asked = first["result"]
    assert asked["resultType"] == "input_required", first
    answers = {key: {"action": "decline"} for key in asked["inputRequests"]}
    retry = {"inputResponses": answers, "requestState": asked["requestState"]}
    other = await call(2, {"name": "ask", "arguments": {"kind": "other"}, **retry}, elicitation)
    assert other["error"]["code"] == jsonrpc.INVALID_PARAMS, other
    assert "other arguments" in other["error"]["message"], other
    same = await call(3, {"name": "ask", "arguments": {"kind": "form"}, **retry}, elicitation)
    assert same["result"]["content"][0]["text"] == "answered", same


def test_stdio_request_state_is_bound_to_its_arguments() -> None:
    """To prevent replay, servers **SHOULD** include the following inside the
    integrity-protected `requestState` payload and verify each on receipt: ... an identifier
    for the originating request, e.g. the method name and a digest of its salient parameters,
    rejecting state presented on a request that does not match. (basic/patterns/mrtr,
    2026-07-28)"""

    async def scenario() -> None:
        raw = await RawServer.start(AUDIT_SERVER)
        try:

            async def call(request_id: int, params: dict[str, Any], caps: Any) -> Any:
                return await raw.request(request_id, "tools/call", {**params, "_meta": _meta(caps)})

            await _state_rounds(call)
        finally:
            await raw.close()

    run(scenario())


def test_in_process_request_state_is_bound_to_its_arguments() -> None:
    """To prevent replay, servers **SHOULD** include the following inside the
    integrity-protected `requestState` payload and verify each on receipt: ... an identifier
    for the originating request, e.g. the method name and a digest of its salient parameters,
    rejecting state presented on a request that does not match. (basic/patterns/mrtr,
    2026-07-28)"""

    async def scenario() -> None:
        server_end, client_end = memory_pair()
        serving = asyncio.get_running_loop().create_task(audit_app.server().serve(server_end))
        try:

            async def call(request_id: int, params: dict[str, Any], caps: Any) -> Any:
                message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call"}
                client_end.send({**message, "params": {**params, "_meta": _meta(caps)}})
                while True:
                    answer = await client_end.receive()
                    assert answer is not None
                    if answer.get("id") == request_id:
                        return answer

            await _state_rounds(call)
        finally:
            await client_end.close()
            await serving

    run(scenario())
