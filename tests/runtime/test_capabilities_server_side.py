"""A server sends nothing the client's capabilities do not take, down to the
sub-capabilities: elicitation modes and tool-enabled sampling, as requests on the
handshake revisions and as input requests on 2026-07-28; over stdio (raw lines, and
the official SDK client), and in process with our own client."""

from __future__ import annotations

import os
import sys
from typing import Any

import mcp_types as sdk_types
import pytest
from mcp import Client as SdkClient
from mcp import StdioServerParameters as SdkStdioParameters
from support.audit_server import app as audit_app
from support.peers import SUPPORT, run
from support.rawstdio import RawServer
from typing_extensions import override

from mcpbind._client.client import Client
from mcpbind._core import jsonrpc
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25 as mcp

AUDIT_SERVER = [sys.executable, str(SUPPORT / "audit_server.py")]
MODERN = "2026-07-28"

# (what the tool asks, capabilities that do not allow it, capabilities that do)
REFUSED = [
    ("url", {"elicitation": {}}, {"elicitation": {"url": {}}}),
    ("url", {"elicitation": {"form": {}}}, {"elicitation": {"form": {}, "url": {}}}),
    ("form", {"elicitation": {"url": {}}}, {"elicitation": {}}),
    ("sampling_tools", {"sampling": {}}, {"sampling": {"tools": {}}}),
]


async def _handshake(wire: RawServer, capabilities: dict[str, Any]) -> None:
    answer = await wire.request(
        "init",
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "clientInfo": {"name": "raw", "version": "0"},
        },
    )
    assert "result" in answer, answer
    await wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


async def _call_answering(wire: RawServer, request_id: Any, params: dict[str, Any]) -> tuple:
    """tools/call; the server's requests met before the response are answered
    (accept, or a model's message) and returned with it."""
    await wire.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
    asked = []
    while True:
        message = await wire.receive()
        if message.get("id") == request_id and "method" not in message:
            return message, asked
        if "method" in message and "id" in message:
            asked.append(message)
            result: dict[str, Any] = (
                {"action": "accept", "content": {"name": "Ann"}}
                if message["method"] == "elicitation/create"
                else {"role": "assistant", "model": "m", "content": {"type": "text", "text": "x"}}
            )
            await wire.send({"jsonrpc": "2.0", "id": message["id"], "result": result})


@pytest.mark.parametrize("kind,refusing,allowing", REFUSED)
def test_stdio_server_does_not_send_what_the_client_did_not_declare(
    kind: str, refusing: dict[str, Any], allowing: dict[str, Any]
) -> None:
    """Servers **MUST NOT** send elicitation requests with modes that are not supported
    by the client. (client/elicitation, 2025-11-25) Servers **MUST NOT** send
    tool-enabled sampling requests to Clients that have not declared support for tool use
    via the `sampling.tools` capability. (client/sampling, 2025-11-25)

    Over stdio, raw lines: refused to the tool (which says so), sent once declared."""

    async def scenario() -> None:
        for capabilities, allowed in ((refusing, False), (allowing, True)):
            wire = await RawServer.start(AUDIT_SERVER)
            try:
                await _handshake(wire, capabilities)
                answer, asked = await _call_answering(
                    wire, 1, {"name": "ask", "arguments": {"kind": kind}}
                )
                text = answer["result"]["content"][0]["text"]
                if allowed:
                    assert text == "sent" and len(asked) == 1, (capabilities, answer)
                else:
                    assert asked == [], (capabilities, asked)
                    assert text.startswith("refused: the client did not declare"), text
                    assert ("url" if kind == "url" else kind[:4]) in text
            finally:
                await wire.close()

    run(scenario())


def _meta(capabilities: dict[str, Any]) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    }


@pytest.mark.parametrize("kind,refusing,allowing", REFUSED)
def test_stdio_input_requests_stay_within_the_declared_capabilities(
    kind: str, refusing: dict[str, Any], allowing: dict[str, Any]
) -> None:
    """Servers **MUST NOT** send an `inputRequests` that the client has not declared
    support for in its capabilities. (basic/patterns/mrtr, 2026-07-28) Servers **MUST
    NOT** send elicitation requests with modes that are not supported by the client.
    (client/elicitation, 2026-07-28) Servers **MUST NOT** send tool-enabled sampling
    requests to Clients that have not declared support for tool use via the
    `sampling.tools` capability. (client/sampling, 2026-07-28)

    Over stdio, raw lines: -32021 naming the sub-capability, an input-required result
    once declared."""

    async def scenario() -> None:
        wire = await RawServer.start(AUDIT_SERVER)
        try:
            params = {"name": "ask", "arguments": {"kind": kind}}
            refused = await wire.request(1, "tools/call", {**params, "_meta": _meta(refusing)})
            assert refused["error"]["code"] == jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY, refused
            wanted = refused["error"]["data"]["requiredCapabilities"]
            first = next(iter(wanted))
            assert wanted[first], wanted  # the sub-capability, not only the top level
            allowed = await wire.request(2, "tools/call", {**params, "_meta": _meta(allowing)})
            assert allowed["result"]["resultType"] == "input_required", allowed
        finally:
            await wire.close()

    run(scenario())


class _Handlers(mcp.ClientHandlers):
    @override
    async def elicit(self, params: Any, ctx: RequestContext) -> Any:
        return mcp.ElicitResult(action="accept", content={"name": "Ann"})

    @override
    async def create_message(self, params: Any, ctx: RequestContext) -> Any:
        return mcp.CreateMessageResult(
            role="assistant", model="m", content=mcp.TextContent(text="x")
        )


@pytest.mark.parametrize("kind,refusing,allowing", REFUSED)
def test_in_process_server_does_not_send_what_the_client_did_not_declare(
    kind: str, refusing: dict[str, Any], allowing: dict[str, Any]
) -> None:
    """Servers **MUST NOT** send elicitation requests with modes that are not supported
    by the client. (client/elicitation, 2025-11-25) Servers **MUST NOT** send
    tool-enabled sampling requests to Clients that have not declared support for tool use
    via the `sampling.tools` capability. (client/sampling, 2025-11-25)

    In process, with our client declaring the capabilities."""

    async def scenario() -> None:
        for capabilities, allowed in ((refusing, False), (allowing, True)):
            client = Client(
                name="t",
                version="0",
                protocol_version="2025-11-25",
                handlers=_Handlers(),
                capabilities=capabilities,
            )
            async with audit_app.test_client(client=client) as session:
                result = await mcp.ClientStub(session).call_tool("ask", arguments={"kind": kind})
            text = result.content[0].text
            assert (text == "sent") if allowed else text.startswith("refused:"), (
                capabilities,
                text,
            )

    run(scenario())


@pytest.mark.peers
def test_sdk_client_without_sampling_tools_gets_no_tool_enabled_sampling() -> None:
    """Servers **MUST NOT** send tool-enabled sampling requests to Clients that have not
    declared support for tool use via the `sampling.tools` capability. (client/sampling,
    2025-11-25): the official SDK client declares ``sampling: {}`` and is asked nothing."""

    async def scenario() -> None:
        asked: list[Any] = []

        async def sampling(context: Any, params: Any) -> Any:
            asked.append(params)
            return sdk_types.CreateMessageResult(
                role="assistant", model="m", content=sdk_types.TextContent(type="text", text="x")
            )

        async with SdkClient(
            # The SDK starts servers with a minimal environment: this tree's path is passed on.
            SdkStdioParameters(
                command=AUDIT_SERVER[0],
                args=AUDIT_SERVER[1:],
                env={"PYTHONPATH": os.pathsep.join(sys.path)},
            ),
            sampling_callback=sampling,
            sampling_capabilities=sdk_types.SamplingCapability(),
            mode="legacy",
        ) as client:
            result = await client.call_tool("ask", {"kind": "sampling_tools"})
        text = result.content[0].text
        assert asked == [] and text.startswith(
            "refused: the client did not declare the sampling.tools"
        ), text

    run(scenario())
