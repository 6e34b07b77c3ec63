"""What a 2026-07-28 client makes of ``resultType``: the final result, the
documented refusal (or the specification's defaults), the input round, or a
protocol error; never one result read as another, never data dropped.

The server (support/result_type_server.py) is a separate process over stdio
that writes its answers by hand, so what reaches the client is exactly what
each case needs, schema or not. The rule is documented in
docs/guides/the-2026-07-28-wire.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from support.peers import (
    no_leaked_processes,  # noqa: F401  (a fixture)
    pid_alive,
    run,
)
from typing_extensions import override

from mcpbind._client.client import Client
from mcpbind._core import jsonrpc
from mcpbind._core.jsonrpc import McpError
from mcpbind._transports.stdio import StdioServerParameters, spawn
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2026_07_28 as mcp

pytestmark = pytest.mark.usefixtures("no_leaked_processes")

SERVER = Path(__file__).resolve().parents[1] / "support" / "result_type_server.py"
METHODS = ("tools/call", "prompts/get", "resources/read")


class Handlers(mcp.ClientHandlers):
    def __init__(self) -> None:
        self.asked: list[str] = []

    @override
    async def elicit(
        self, params: mcp.ElicitRequestParams, ctx: RequestContext
    ) -> mcp.ElicitResult:
        self.asked.append(params.message)
        return mcp.ElicitResult(action="accept", content={"name": "ada"})


@contextlib.asynccontextmanager
async def connected(handlers: Handlers) -> AsyncIterator[mcp.ClientStub]:
    parameters = StdioServerParameters(
        command=sys.executable, args=[str(SERVER)], stderr=asyncio.subprocess.DEVNULL
    )
    transport = await spawn(parameters)
    session = await Client(name="result-type-test", version="0", handlers=handlers).connect(
        transport
    )
    try:
        assert session.protocol_version == "2026-07-28"
        yield mcp.ClientStub(session)
    finally:
        await session.close()
    assert not pid_alive(transport.process.pid)


def ask(stub: mcp.ClientStub, method: str, scenario: str) -> Awaitable[Any]:
    calls: dict[str, Callable[[], Awaitable[Any]]] = {
        "tools/call": lambda: stub.call_tool(scenario),
        "prompts/get": lambda: stub.get_prompt(scenario),
        "resources/read": lambda: stub.read_resource(f"test://{scenario}"),
    }
    return calls[method]()


FINAL_TYPES = {
    "tools/call": mcp.CallToolResult,
    "prompts/get": mcp.GetPromptResult,
    "resources/read": mcp.ReadResourceResult,
}


def text_of(result: Any) -> str:
    if isinstance(result, mcp.CallToolResult):
        block = result.content[0]
    elif isinstance(result, mcp.GetPromptResult):
        block = result.messages[0].content
    else:
        block = result.contents[0]
    assert isinstance(block, (mcp.TextContent, mcp.TextResourceContents))
    return block.text


def outcome(method: str, scenario: str, handlers: Handlers | None = None) -> Any:
    """What the user gets from one call: the result, or the McpError raised."""

    async def scenario_() -> Any:
        async with connected(handlers or Handlers()) as stub:
            try:
                return await ask(stub, method, scenario)
            except McpError as error:
                return error

    return run(scenario_())


@pytest.mark.parametrize("method", METHODS)
def test_an_answer_without_result_type_is_the_final_result(method: str) -> None:
    """basic/index, ResultType: "For backward compatibility with servers
    implementing earlier protocol versions, which do not include
    `resultType`, clients MUST treat an absent `resultType` as "complete"."
    """
    result = outcome(method, "absent")
    assert type(result) is FINAL_TYPES[method]
    assert result.result_type == "complete"
    assert text_of(result) == f"{method} absent"


MISSING = {
    "tools/call": "CallToolResult lacks required field `content`",
    "prompts/get": "GetPromptResult lacks required field `messages`",
    # ttlMs and cacheScope have defaults (0, "private"); contents has none.
    "resources/read": "ReadResourceResult lacks required field `contents`",
}


@pytest.mark.parametrize("method", METHODS)
def test_a_complete_answer_without_required_fields_is_refused_naming_method_and_fields(
    method: str,
) -> None:
    """A final result lacking fields its schema requires and the
    specification gives no default for is refused: never read as an
    InputRequiredResult, never returned with the fields missing."""
    error = outcome(method, "incomplete")
    assert isinstance(error, McpError), error
    assert error.code == jsonrpc.INTERNAL_ERROR
    assert error.message == (
        f"invalid result for {method}: {MISSING[method]} (resultType 'complete')"
    )


def test_a_read_without_ttl_gets_the_default_the_specification_gives() -> None:
    """server/utilities/caching: "If `ttlMs` is absent, clients SHOULD
    assume a default of `0` (immediately stale)"."""
    result = outcome("resources/read", "ttl-absent")
    assert isinstance(result, mcp.ReadResourceResult)
    assert result.ttl_ms == 0 and result.cache_scope == "private"
    assert text_of(result) == "resources/read ttl-absent"


@pytest.mark.parametrize("method", METHODS)
def test_input_required_is_an_input_round_then_the_final_result(method: str) -> None:
    """basic/index, ResultType: "A `resultType` of "input_required" indicates
    the request is incomplete and more information is needed to process the
    request. The result contains an `InputRequiredResult` object"."""
    handlers = Handlers()
    result = outcome(method, "input-required", handlers)
    assert handlers.asked == ["Who are you?"]
    assert type(result) is FINAL_TYPES[method]
    assert text_of(result) == f"{method} input-required for ada (asked-who)"


@pytest.mark.parametrize("method", METHODS)
def test_an_unrecognized_result_type_is_a_protocol_error_naming_it(method: str) -> None:
    """basic/index, ResultType: "A `resultType` of any value unrecognized by
    the client MUST be considered invalid."."""
    error = outcome(method, "bogus")
    assert isinstance(error, McpError), error
    assert error.code == jsonrpc.INTERNAL_ERROR
    assert error.message == (
        f"invalid result for {method}: Unrecognized `resultType` 'bogus': expected one of"
        " 'input_required', 'complete' (absent means 'complete')"
    )
