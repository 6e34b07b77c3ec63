"""A Streamable HTTP server protected by the official Python SDK (mcp 2.3.0):
its resource-server support (AuthSettings, a TokenVerifier, the bearer
middleware, the protected resource metadata route) with a verifier that
checks the JWT access tokens of the tests' authorization server with PyJWT
(the SDK's own dependency), as an SDK user would write it.

``python sdk_auth_server.py ISSUER`` binds 127.0.0.1 on an ephemeral port,
prints ``PORT <n>`` once listening and serves /mcp as the resource
``http://127.0.0.1:<n>/mcp``, needing scope mcp:tools. Its tool ``whoami``
answers the subject, client id and scopes of the caller's token.
"""

from __future__ import annotations

import json
import socket
import sys

import anyio
import httpx
import jwt
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer


class OidcJwtVerifier(TokenVerifier):
    """JWT access tokens of ``issuer`` for ``resource``, checked against its JWKS."""

    def __init__(self, issuer: str, resource: str) -> None:
        metadata = httpx.get(f"{issuer}/.well-known/openid-configuration", timeout=10).json()
        self.issuer = issuer
        self.resource = resource
        self.keys = jwt.PyJWKClient(metadata["jwks_uri"])

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            key = await anyio.to_thread.run_sync(self.keys.get_signing_key_from_jwt, token)
            claims = jwt.decode(
                token,
                key.key,
                algorithms=["RS256"],
                audience=self.resource,
                issuer=self.issuer,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError:
            return None
        return AccessToken(
            token=token,
            client_id=claims["client_id"],
            scopes=str(claims.get("scope", "")).split(),
            expires_at=claims["exp"],
            resource=self.resource,
            subject=claims.get("sub"),
            claims=claims,
        )


def main() -> None:
    issuer = sys.argv[1]
    # proto IPPROTO_TCP, or asyncio leaves Nagle on for accepted connections (40 ms stalls)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    resource = f"http://127.0.0.1:{port}/mcp"
    server = MCPServer(
        "sdk-protected",
        token_verifier=OidcJwtVerifier(issuer, resource),
        auth=AuthSettings(
            issuer_url=issuer,
            resource_server_url=resource,
            required_scopes=["mcp:tools"],
            validate_token_resource=True,
        ),
    )

    @server.tool()
    def whoami() -> str:
        """The caller's token: subject, client id, scopes."""
        token = get_access_token()
        assert token is not None
        return json.dumps(
            {"subject": token.subject, "client_id": token.client_id, "scopes": sorted(token.scopes)}
        )

    print(f"PORT {port}", flush=True)
    uvicorn.Server(
        uvicorn.Config(
            server.streamable_http_app(), log_level="warning", timeout_graceful_shutdown=1
        )
    ).run(sockets=[sock])


if __name__ == "__main__":
    main()
