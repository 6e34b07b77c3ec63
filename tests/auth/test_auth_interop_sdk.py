"""Authorization interop with the official Python SDK (mcp 2.3.0), through a
real authorization server (oidc-provider):

* the SDK's OAuth client (``OAuthClientProvider``) against our protected
  server over Streamable HTTP, handshake and 2026-07-28 alike: discovery from
  the 401, dynamic registration, the authorization code flow with PKCE and
  the resource indicator, the token, the call, and step-up on a 403;
* a server protected by the SDK (tests/support/sdk_auth_server.py, its
  resource-server support with a verifier of this authorization server's
  JWTs), proven here with the SDK's own client so that our client can be
  tested against it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import warnings
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import httpx2
import mcp as sdk
import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from support.bearer import challenge
from support.http_servers import ThreadedServer, run
from support.oidc_provider import REDIRECT_URI, AuthorizationServer, authorization_server, play_user
from support.peers import SUPPORT
from support.protected import resource_server, serving_protected

from mcpbind.auth.server import JWTVerifier, ResourceServer

pytestmark = [
    pytest.mark.node,
    pytest.mark.peers,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]


@pytest.fixture(scope="module")
def issuer() -> Iterator[AuthorizationServer]:
    with authorization_server() as server:
        yield server


@pytest.fixture(scope="module")
def protected(issuer: AuthorizationServer) -> Iterator[ThreadedServer]:
    def make(url: str) -> ResourceServer:
        issuer.register_resource(url)
        return resource_server(
            url, issuer.issuer, JWTVerifier(issuer.issuer, url, token_type="at+jwt")
        )

    with serving_protected(make) as served:
        yield served


class MemoryStorage:
    """The SDK's TokenStorage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class User:
    """Plays the user in the browser the SDK would open: follows the
    authorization URL through login and consent and hands back the code."""

    def __init__(self, login: str) -> None:
        self.login = login
        self.authorizations: list[str] = []  # the authorization URLs followed
        self._answer: dict[str, str] = {}

    async def redirect(self, url: str) -> None:
        self.authorizations.append(url)
        self._answer = await asyncio.to_thread(play_user, url, REDIRECT_URI, self.login)

    async def callback(self) -> AuthorizationCodeResult:
        assert "code" in self._answer, f"the authorization server refused: {self._answer}"
        return AuthorizationCodeResult(
            code=self._answer["code"], state=self._answer.get("state"), iss=self._answer.get("iss")
        )


@contextlib.asynccontextmanager
async def sdk_client(url: str, user: User, mode: str) -> AsyncIterator[Any]:
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="the SDK's client", redirect_uris=[REDIRECT_URI], grant_types=["authorization_code", "refresh_token"]  # type: ignore[list-item]
        ),
        storage=MemoryStorage(),
        redirect_handler=user.redirect,
        callback_handler=user.callback,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(30, read=60)) as http:
            async with sdk.Client(streamable_http_client(url, http_client=http), mode=mode) as client:  # type: ignore[arg-type]
                yield client


def text(result: Any) -> str:
    return str(result.content[0].text)


# ---------------------------------------------------------------- the SDK's client, our server


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_sdk_oauth_client_against_our_protected_server(
    protected: ThreadedServer, issuer: AuthorizationServer, mode: str
) -> None:
    user = User(f"frank-{mode}")

    async def main() -> None:
        async with sdk_client(protected.url(), user, mode) as client:
            assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
            seen = json.loads(text(await client.call_tool("whoami", {})))
            assert seen["subject"] == user.login and seen["scopes"] == ["mcp:tools"]
            assert len(user.authorizations) == 1
            # admin_reset needs mcp:admin: 403 insufficient_scope, the SDK steps up and retries.
            assert text(await client.call_tool("admin_reset", {})) == "reset"
            assert len(user.authorizations) == 2
            assert (
                "mcp%3Aadmin" in user.authorizations[1] and "mcp%3Atools" in user.authorizations[1]
            )
            seen = json.loads(text(await client.call_tool("whoami", {})))
            assert seen["scopes"] == ["mcp:admin", "mcp:tools"]

    run(main())
    paths = {path for _, path, _ in protected.recorder.requests}
    assert (
        "/.well-known/oauth-protected-resource/mcp" in paths
    )  # discovered from the 401's resource_metadata
    first = user.authorizations[0]
    assert "resource=http%3A%2F%2F127.0.0.1" in first and "code_challenge_method=S256" in first


# ---------------------------------------------------------------- a server the SDK protects


@contextlib.contextmanager
def sdk_protected(issuer: AuthorizationServer) -> Iterator[str]:
    """tests/support/sdk_auth_server.py in a child process; the URL of its MCP endpoint."""
    process = subprocess.Popen(
        [sys.executable, str(SUPPORT / "sdk_auth_server.py"), issuer.issuer],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("PORT "), f"the SDK's protected server did not start (said {line!r})"
        url = f"http://127.0.0.1:{int(line.split()[1])}/mcp"
        issuer.register_resource(url)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def test_server_protected_by_the_sdk_works_with_the_sdk_client(issuer: AuthorizationServer) -> None:
    with sdk_protected(issuer) as url:
        refused = httpx.post(
            url, json={}, headers={"accept": "application/json, text/event-stream"}
        )
        assert refused.status_code == 401
        assert challenge(refused)["resource_metadata"] == url.replace(
            "/mcp", "/.well-known/oauth-protected-resource/mcp"
        )
        metadata = httpx.get(challenge(refused)["resource_metadata"]).json()
        assert metadata["resource"] == url and metadata["authorization_servers"] == [issuer.issuer]
        user = User("grace")

        async def main() -> None:
            async with sdk_client(url, user, "legacy") as client:
                seen = json.loads(text(await client.call_tool("whoami", {})))
                assert seen["subject"] == "grace" and seen["scopes"] == ["mcp:tools"]

        run(main())
        assert len(user.authorizations) == 1
