"""Our OAuth client against an MCP server protected by the official Python
SDK (mcp 2.3.0: its AuthSettings, bearer middleware and Protected Resource
Metadata; tests/support/sdk_introspected_server.py), with tokens from the small
authorization server of tests/support/oauth_peers.py, checked by the SDK
server through token introspection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.http_servers import SubprocessServer, ThreadedServer, run
from support.oauth_peers import AuthorizationServerPeer

from mcpbind._client.client import Client
from mcpbind._transports.http.client.streamable import connect_http
from mcpbind.auth.client import ClientMetadata, HTTPRedirectFollower, OAuthClientProvider
from mcpbind_protocol import v2025_11_25 as legacy
from mcpbind_protocol import v2026_07_28 as modern

pytestmark = pytest.mark.peers

SDK_AUTH_SERVER = Path(__file__).resolve().parents[1] / "support" / "sdk_introspected_server.py"


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_our_client_through_the_sdks_resource_server(version: str) -> None:
    authorization = AuthorizationServerPeer()
    as_http = ThreadedServer(authorization)
    authorization.base = as_http.url("")
    as_http.start()
    sdk = SubprocessServer(authorization.issuer, script=SDK_AUTH_SERVER)
    try:
        sdk.wait_ready()
        url = sdk.url("/mcp")
        auth = OAuthClientProvider(
            url,
            client_metadata=ClientMetadata(client_name="interop"),
            redirect=HTTPRedirectFollower("http://127.0.0.1:1/cb"),
        )

        async def go() -> None:
            async with connect_http(
                Client(name="interop", version="1", protocol_version=version), url, auth=auth
            ) as session:
                assert session.protocol_version == version
                stub: Any = (
                    modern.ClientStub(session) if session.stateless else legacy.ClientStub(session)
                )
                result = await stub.call_tool("add", arguments={"a": 2, "b": 3})
                assert result.is_error is not True
                assert [getattr(c, "text", None) for c in result.content] == ["5"]

        run(go())
    finally:
        sdk.stop()
        as_http.stop()
    [request] = authorization.authorizations
    assert (
        request["resource"] == url
        and request["scope"] == "mcp"
        and request["code_challenge_method"] == "S256"
    )
