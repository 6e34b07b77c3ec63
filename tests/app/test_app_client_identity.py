"""Who the app's middleware counts: the client the transport names, on every transport.

``Call.client_identity`` is what the transport names the request's client by for its
own per-client limits (the principal, else the peer's address; a forwarded address
only from a proxy of ``trusted_proxies``), so ``RateLimit`` counts one client as
one, whatever it sends and however many sessions it opens. The requests the
transport makes of the app for itself (the tool listing behind the ``Mcp-Param-*``
check) are nobody's: the middleware never sees them.

The clients come from two loopback addresses, 127.0.0.2 and 127.0.0.3, over real
HTTP to a uvicorn server on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from support.http_servers import run, serving
from support.peers import THIS_TREE

from mcpbind._client.client import Client, ClientSession
from mcpbind._core import lifecycle
from mcpbind._core.jsonrpc import McpError
from mcpbind._core.limits import LOCAL, ClientIdentity
from mcpbind._transports.http.client.streamable import connect_sse, connect_streamable_http
from mcpbind._transports.stdio import StdioServerParameters, spawn
from mcpbind.app import RATE_LIMITED, App, Call, Context, Next, RateLimit
from mcpbind.auth._principal import Principal
from mcpbind.http import HttpOptions

A, B = "127.0.0.2", "127.0.0.3"

# (revision, the app's stateless mode): handshake sessions, the stateless mode of the
# handshake revisions, the 2026-07-28 requests, the legacy HTTP+SSE transport.
TRANSPORTS = {
    "sessions": ("2025-11-25", False),
    "stateless-mode": ("2025-11-25", True),
    "2026-07-28": ("2026-07-28", False),
    "legacy-sse": ("2024-11-05", False),
}


def limited_app(limit: int, seen: list[Call] | None = None, **rate: Any) -> App[Any]:
    """An app with a ``ping`` tool behind ``RateLimit(limit, **rate)``; the calls the
    middleware sees go to ``seen``."""

    async def recording(call: Call, call_next: Next) -> Any:
        if seen is not None:
            seen.append(call)
        return await call_next(call)

    app = App("limited", middleware=[recording, RateLimit(limit, per=3600.0, **rate)])

    @app.tool()
    def ping() -> str:
        return "pong"

    @app.tool()
    def whoami(ctx: Context) -> str:
        return ctx.client_identity.key

    return app


@contextlib.asynccontextmanager
async def connected(
    url: str, version: str, address: str, headers: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """A session of our client whose HTTP requests come from ``address``."""
    connector = aiohttp.TCPConnector(local_addr=(address, 0))
    async with aiohttp.ClientSession(connector=connector) as http:
        client = Client(name="c", version="1", protocol_version=version)
        if version == "2024-11-05":
            connect = connect_sse(
                client, url.replace("/mcp", "/sse"), headers=headers, http_client=http
            )
        else:
            connect = connect_streamable_http(client, url, headers=headers, http_client=http)
        async with connect as session:
            yield session


async def ping(session: ClientSession) -> int | None:
    """The error code of one call of the ping tool; None when it was answered."""
    stub = lifecycle.revision(session.protocol_version).package.ClientStub(session)
    try:
        await stub.call_tool("ping", arguments={})
    except McpError as error:
        return error.code
    return None


async def ping_from(
    url: str, version: str, address: str, headers: dict[str, str] | None = None
) -> int | None:
    """One call of the ping tool, on a connection (and session) of its own."""
    async with connected(url, version, address, headers) as session:
        return await ping(session)


@pytest.mark.parametrize("transport", list(TRANSPORTS))
def test_each_http_client_is_counted_by_its_own_address(transport: str) -> None:
    """Two clients without a principal, on two addresses, have a limit each: the
    second is served after the first used up its own, and the middleware sees
    each as the transport names it (peer:<address>)."""
    version, stateless = TRANSPORTS[transport]
    seen: list[Call] = []
    app = limited_app(1, seen, methods=["tools/call"])

    async def main(url: str) -> None:
        async with connected(url, version, A) as first:
            assert await ping(first) is None
            assert await ping(first) == RATE_LIMITED
        assert await ping_from(url, version, B) is None
        assert await ping_from(url, version, A) == RATE_LIMITED

    with serving(app.asgi(stateless=stateless)) as server:
        run(main(server.url()))
    calls = [call for call in seen if call.method == "tools/call"]
    assert [call.client_identity for call in calls] == [
        ClientIdentity(f"peer:{A}"),
        ClientIdentity(f"peer:{A}"),
        ClientIdentity(f"peer:{B}"),
        ClientIdentity(f"peer:{A}"),
    ]
    assert [call.client for call in calls] == [f"peer:{address}" for address in (A, A, B, A)]


@pytest.mark.parametrize("transport", ["sessions", "legacy-sse"])
def test_a_client_opening_a_session_per_call_is_limited_all_the_same(transport: str) -> None:
    """A new session (a new SSE stream) for every call is the same client: its
    third call is refused by RateLimit(2)."""
    version, _ = TRANSPORTS[transport]

    async def main(url: str) -> None:
        assert await ping_from(url, version, A) is None
        assert await ping_from(url, version, A) is None
        assert await ping_from(url, version, A) == RATE_LIMITED
        assert await ping_from(url, version, B) is None

    with serving(limited_app(2, methods=["tools/call"]).asgi()) as server:
        run(main(server.url()))


@pytest.mark.parametrize("transport", ["sessions", "2026-07-28", "legacy-sse"])
def test_a_forged_x_forwarded_for_does_not_make_a_new_client(transport: str) -> None:
    """Without trusted proxies, X-Forwarded-For is the client's to write, not
    believed: a client forging a new address for every call is limited."""
    version, _ = TRANSPORTS[transport]

    async def main(url: str) -> None:
        for index in range(3):
            forged = {"X-Forwarded-For": f"198.51.100.{index + 1}"}
            expected = None if index == 0 else RATE_LIMITED
            assert await ping_from(url, version, A, forged) == expected

    with serving(limited_app(1, methods=["tools/call"]).asgi()) as server:
        run(main(server.url()))


@pytest.mark.parametrize("transport", ["sessions", "2026-07-28", "legacy-sse"])
def test_a_trusted_proxy_names_its_clients_and_no_other_peer_does(transport: str) -> None:
    """With ``trusted_proxies=(B,)`` the proxy at B forwards two clients, each
    counted apart; a client at A writing X-Forwarded-For (one of those clients'
    addresses, then another) is counted by its own address."""
    version, _ = TRANSPORTS[transport]
    seen: list[Call] = []
    app = limited_app(1, seen, methods=["tools/call"])

    async def main(url: str) -> None:
        def forwarded(address: str) -> dict[str, str]:
            return {"X-Forwarded-For": address}

        assert await ping_from(url, version, B, forwarded("198.51.100.1")) is None
        assert await ping_from(url, version, B, forwarded("198.51.100.2")) is None
        assert await ping_from(url, version, B, forwarded("198.51.100.1")) == RATE_LIMITED
        assert await ping_from(url, version, A, forwarded("198.51.100.2")) is None
        assert await ping_from(url, version, A, forwarded("198.51.100.3")) == RATE_LIMITED

    options = HttpOptions(trusted_proxies=(B,))
    # uvicorn's own X-Forwarded-For handling off: the app's trusted_proxies decide.
    with serving(app.asgi(options=options), proxy_headers=False) as server:
        run(main(server.url()))
    keys = [call.client for call in seen if call.method == "tools/call"]
    assert keys == [
        "peer:198.51.100.1",
        "peer:198.51.100.2",
        "peer:198.51.100.1",
        f"peer:{A}",
        f"peer:{A}",
    ]


def test_the_transports_own_tool_listing_is_no_clients_call() -> None:
    """A 2026-07-28 tools/call makes the transport list the tools (to check the
    call's Mcp-Param-* headers); that listing does not reach the middleware, so
    it neither counts against the client's RateLimit(1) nor shows in its records."""
    seen: list[Call] = []
    app = limited_app(1, seen)
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }

    async def call(url: str, request_id: int) -> dict[str, Any]:
        head = {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": "ping",
        }
        body = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": "ping", "arguments": {}, "_meta": meta},
        }
        connector = aiohttp.TCPConnector(local_addr=(A, 0))
        async with aiohttp.ClientSession(connector=connector) as http:
            async with http.post(url, headers=head, data=json.dumps(body)) as response:
                answer: dict[str, Any] = json.loads(await response.read())
                return answer

    async def main(url: str) -> None:
        first = await call(url, 1)
        assert first["result"]["content"][0]["text"] == "pong"
        second = await call(url, 2)
        assert second["error"]["code"] == RATE_LIMITED

    with serving(app.asgi()) as server:
        run(main(server.url()))
    assert [call.method for call in seen] == ["tools/call", "tools/call"]


def test_in_memory_the_client_is_the_local_one_or_its_principal() -> None:
    """Off HTTP (in memory, as on stdio) the peer is the process's one client,
    named by its principal where the connection was given one (as over HTTP)."""
    seen: list[Call] = []
    app = limited_app(5, seen)
    alice = Principal("alice", client_id="desk")

    async def main() -> int:
        async with app.test_client(protocol_version="2025-11-25") as session:
            assert await ping(session) is None
        local = len(seen)
        async with app.test_client(protocol_version="2025-11-25", principal=alice) as session:
            assert await ping(session) is None
            stub = lifecycle.revision(session.protocol_version).package.ClientStub(session)
            named = await stub.call_tool("whoami", arguments={})
            assert named.content[0].text == "principal:sub:alice"
        return local

    local = run(main())
    assert 0 < local < len(seen)
    assert all(call.client_identity == LOCAL for call in seen[:local])
    assert {call.client for call in seen[local:]} == {"principal:sub:alice"}
    assert {call.client_identity.kind for call in seen[local:]} == {"local"}


def test_over_stdio_the_client_is_the_local_one(tmp_path: Path) -> None:
    """The one peer of a stdio server is ``local``, for the middleware
    (RateLimit) as for the app's functions."""
    script = tmp_path / "whoami.py"
    script.write_text(
        "from mcpbind.app import App, RateLimit\n"
        "from mcpbind.app._context import Context\n"
        "app = App('whoami', middleware=[RateLimit(2, per=3600.0)])\n"
        "@app.tool()\n"
        "def whoami(ctx: Context) -> str:\n"
        "    return f'{ctx.client_identity.key} {ctx.client_identity.kind}'\n"
        "app.run('stdio')\n"
    )
    parameters = StdioServerParameters(
        sys.executable, [str(script)], env=THIS_TREE, stderr=asyncio.subprocess.DEVNULL
    )

    async def main() -> None:
        client = Client(name="c", version="1", protocol_version="2025-11-25")
        session = await client.connect(await spawn(parameters))
        try:
            stub = lifecycle.revision(session.protocol_version).package.ClientStub(session)
            named = await stub.call_tool("whoami", arguments={})
            assert named.content[0].text == "local local"
            await stub.call_tool("whoami", arguments={})
            with pytest.raises(McpError) as refused:
                await stub.call_tool("whoami", arguments={})
            assert refused.value.code == RATE_LIMITED
        finally:
            await session.close()

    run(main())
