"""A 2026-07-28 server that sends cacheable results without ``ttlMs`` and
``cacheScope`` (as the official example ``read-resource-result-response.json``
does) is read, not refused: ``ttlMs`` 0 and ``cacheScope`` "private", over
stdio and Streamable HTTP; and our own servers still send both fields.

The server (support/hintless_server.py) is written by hand, so what reaches
the client is exactly that. The rule is documented in
docs/guides/the-2026-07-28-wire.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support import hintless_server
from support.http_servers import run, serving
from support.peers import no_leaked_processes  # noqa: F401  (a fixture)
from typing_extensions import override

from mcpbind._client.client import Client, ClientSession
from mcpbind._server.server import Server
from mcpbind._transports.http.client.streamable import connect_http
from mcpbind._transports.stdio import StdioServerParameters, spawn
from mcpbind.http import http_app
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2026_07_28 as mcp

pytestmark = pytest.mark.usefixtures("no_leaked_processes")

SERVER = Path(__file__).resolve().parents[1] / "support" / "hintless_server.py"
MODERN = "2026-07-28"


@contextlib.asynccontextmanager
async def connected(transport: str, url: str) -> AsyncIterator[ClientSession]:
    client = Client(name="hintless-test", version="0")
    if transport == "http":
        async with connect_http(client, url) as session:
            yield session
        return
    parameters = StdioServerParameters(
        command=sys.executable, args=[str(SERVER)], stderr=asyncio.subprocess.DEVNULL
    )
    session = await client.connect(await spawn(parameters))
    try:
        yield session
    finally:
        await session.close()


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_cacheable_results_without_hints_are_stale_and_private(transport: str) -> None:
    """server/utilities/caching: "If `ttlMs` is absent, clients SHOULD assume
    a default of `0` (immediately stale)". The specification gives
    `cacheScope` no default; an absent one is read as "private" (as the
    official Python SDK reads it), the scope that allows no shared cache:
    "The response MAY be cached and reused only within the same
    authorization context. Caches MUST NOT be shared across authorization
    contexts". Every cacheable result: server/discover (the session speaks
    2026-07-28 instead of falling back to initialize, which this server does
    not answer), the four lists and resources/read."""

    async def main(url: str) -> None:
        async with connected(transport, url) as session:
            assert session.stateless and session.protocol_version == MODERN
            stub = mcp.ClientStub(session)
            results: list[Any] = [
                await stub.list_tools(),
                await stub.list_prompts(),
                await stub.list_resources(),
                await stub.list_resource_templates(),
                await stub.read_resource("file:///project/src/main.rs"),
            ]
            for result in results:
                assert (result.ttl_ms, result.cache_scope) == (0, "private"), result
            read = results[-1]
            assert isinstance(read, mcp.ReadResourceResult)
            (content,) = read.contents
            assert isinstance(content, mcp.TextResourceContents)
            assert content.text == 'fn main() {\n    println!("Hello world!");\n}'
            assert [t.name for t in results[0].tools] == ["noop"]

    if transport == "http":
        with serving(hintless_server.app) as server:
            run(main(server.url()))
    else:
        run(main(""))


class Handlers(mcp.ServerHandlers):
    """Handlers that leave both hints to their defaults."""

    @override
    async def list_tools(
        self, params: mcp.PaginatedRequestParams | None, ctx: RequestContext
    ) -> mcp.ListToolsResult:
        return mcp.ListToolsResult(tools=[])

    @override
    async def read_resource(
        self, params: mcp.ReadResourceRequestParams, ctx: RequestContext
    ) -> mcp.ReadResourceResult:
        return mcp.ReadResourceResult(contents=[mcp.TextResourceContents(uri=params.uri, text="x")])


def test_our_server_sends_both_hints_when_a_handler_gives_neither() -> None:
    """server/utilities/caching: servers MUST provide both fields (the schema
    requires them); a handler that sets neither sends their defaults, 0 and
    "private", on the wire (and so do the server's own server/discover answers)."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    }
    calls = [
        ("server/discover", {}),
        ("tools/list", {}),
        ("resources/read", {"uri": "file:///x"}),
    ]

    async def main(url: str) -> None:
        async with httpx.AsyncClient(timeout=30) as raw:
            for number, (method, params) in enumerate(calls):
                message = {
                    "jsonrpc": "2.0",
                    "id": number,
                    "method": method,
                    "params": {**params, "_meta": meta},
                }
                headers = {
                    "accept": "application/json, text/event-stream",
                    "content-type": "application/json",
                    "mcp-protocol-version": MODERN,
                    "mcp-method": method,
                }
                if method == "resources/read":
                    headers["mcp-name"] = params["uri"]
                response = await raw.post(url, content=json.dumps(message), headers=headers)
                assert response.status_code == 200, response.text
                text = response.text
                if response.headers["content-type"].startswith("text/event-stream"):
                    text = next(
                        line.removeprefix("data: ")
                        for line in text.splitlines()
                        if line.startswith("data: {")
                    )
                result = json.loads(text)["result"]
                assert "ttlMs" in result and "cacheScope" in result, (method, result)
                if method != "server/discover":  # the server's own choice for its discover
                    assert (result["ttlMs"], result["cacheScope"]) == (0, "private"), result

    with serving(http_app(Server([Handlers()], name="hints", version="1"))) as server:
        run(main(server.url()))
