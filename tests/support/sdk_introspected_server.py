"""An MCP server built with the official Python SDK (mcp 2.3.0, MCPServer) and
protected by the SDK's own resource server support (AuthSettings, its bearer
middleware and Protected Resource Metadata), for the interop tests of our
OAuth client.

``python sdk_introspected_server.py <issuer>`` binds 127.0.0.1 on an ephemeral port,
prints ``PORT <n>`` once listening, and serves Streamable HTTP at /mcp for
tokens of the authorization server ``issuer`` with the scope ``mcp``. Tokens
are checked by RFC 7662 introspection at ``<issuer>/introspect`` (that
server is tests/support/oauth_peers.py's AuthorizationServerPeer).
"""

from __future__ import annotations

import socket
import sys

import httpx
import uvicorn
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer


class IntrospectingVerifier:
    """The SDK's TokenVerifier, by token introspection."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint

    async def verify_token(self, token: str) -> AccessToken | None:
        async with httpx.AsyncClient() as http:
            answer = (await http.post(self.endpoint, data={"token": token})).json()
        if not answer.get("active"):
            return None
        return AccessToken(
            token=token,
            client_id=answer["client_id"],
            scopes=answer.get("scope", "").split(),
            expires_at=int(answer["exp"]),
            resource=answer.get("aud"),
        )


def main() -> None:
    issuer = sys.argv[1]
    # proto IPPROTO_TCP, or asyncio leaves Nagle on for accepted connections (40 ms stalls)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    server = MCPServer(
        "sdk-auth-server",
        version="0.1.0",
        token_verifier=IntrospectingVerifier(f"{issuer}/introspect"),
        auth=AuthSettings(
            issuer_url=issuer,
            resource_server_url=f"http://127.0.0.1:{port}/mcp",
            required_scopes=["mcp"],
            validate_token_resource=True,
        ),
    )

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    print(f"PORT {port}", flush=True)
    uvicorn.Server(
        uvicorn.Config(
            server.streamable_http_app(), log_level="warning", timeout_graceful_shutdown=1
        )
    ).run(sockets=[sock])


if __name__ == "__main__":
    main()
