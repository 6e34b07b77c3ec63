"""The client the official conformance suite drives for its client scenarios.

The suite runs ``python examples/conformance_client.py <server-url>`` with the
scenario's name in ``MCP_CONFORMANCE_SCENARIO``: initialize, tools_call,
elicitation-sep1034-client-defaults, sse-retry. Every scenario connects over
Streamable HTTP with the runtime's client, lists the tools and calls each one
the scenario offers; elicitation requests are accepted with the defaults of
the requested schema filled in (SEP-1034).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from typing import Any

from typing_extensions import override

from mcp_protocol import v2025_11_25 as mcp
from mcp_runtime.client import Client
from mcp_runtime.codec import UNSET
from mcp_runtime.http_client import connect_streamable_http
from mcp_runtime.methods import RequestContext

ARGUMENTS: dict[str, dict[str, Any]] = {"add_numbers": {"a": 1, "b": 2}}


class ConformanceClient(mcp.ClientHandlers):
    @override
    async def elicit(self, params: mcp.ElicitRequestParams, ctx: RequestContext) -> mcp.ElicitResult:
        if not isinstance(params, mcp.ElicitRequestFormParams):
            return mcp.ElicitResult(action="decline")
        content: dict[str, Any] = {}
        for name, schema in params.requested_schema.properties.items():
            default = getattr(schema, "default", UNSET)
            if default is not UNSET and default is not None:
                content[name] = default
        return mcp.ElicitResult(action="accept", content=content)


async def run(url: str, scenario: str) -> None:
    client = Client(name="mcp-codegen-conformance-client", version="0.1.0", handlers=ConformanceClient())
    async with connect_streamable_http(client, url) as session:
        server = mcp.ClientStub(session)
        if scenario == "initialize":
            return
        tools = await server.list_tools()
        for tool in tools.tools:
            await server.call_tool(tool.name, arguments=ARGUMENTS.get(tool.name, {}), timeout=30)


def main() -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO)
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    asyncio.run(run(sys.argv[-1], scenario))


if __name__ == "__main__":
    main()
