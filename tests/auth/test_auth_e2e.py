"""Authorization end to end, with no mocks in between: our OAuth client
(``OAuthClientProvider``, its redirect step played by a user who logs in and
consents at the authorization server) through a real authorization server
(oidc-provider) against our protected server, and against a server the
official SDK protects.

What a session goes through: a 401, Protected Resource Metadata, the
authorization server's metadata, dynamic registration, the authorization
code flow with PKCE and the resource indicator, the token, the call; short
access-token lifetimes that make the client refresh before expiry and on a
401; step-up on a 403 insufficient_scope keeping the earlier scopes; over
Streamable HTTP at a handshake revision and at 2026-07-28, and over legacy
SSE. A server whose metadata names another resource is refused before any
authorization server is contacted."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from support.http_servers import ThreadedServer, run
from support.oidc_provider import REDIRECT_URI, AuthorizationServer, User, authorization_server
from support.protected import protected_by, resource_server, serving_protected
from test_auth_interop_sdk import sdk_protected

from mcpbind._client.client import Client, ClientSession
from mcpbind._core.jsonrpc import McpError
from mcpbind._transports.http.client.streamable import connect_http, connect_sse
from mcpbind.auth.client import (
    CallbackRedirect,
    ClientMetadata,
    InMemoryTokenStorage,
    OAuthClientProvider,
    Tokens,
)
from mcpbind.auth.server import JWTVerifier, ResourceServer
from mcpbind_protocol import v2025_11_25 as legacy
from mcpbind_protocol import v2026_07_28 as modern

SHORT_TTL = 2  # seconds an access token of the short-lived resource lives


class RecordingStorage(InMemoryTokenStorage):
    """The default storage, remembering every set of tokens it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.kept: list[Tokens] = []

    async def set_tokens(self, tokens: Tokens | None) -> None:
        if tokens is not None:
            self.kept.append(tokens)
        await super().set_tokens(tokens)


class ForgetfulStorage(RecordingStorage):
    """A storage that keeps tokens but not when they expire (as one that
    saves only the token strings would): the client learns of an expired
    access token from the server's 401."""

    async def set_tokens(self, tokens: Tokens | None) -> None:
        await super().set_tokens(
            None if tokens is None else msgspec.structs.replace(tokens, expires_at=None)
        )


def provider(url: str, user: User, **options: Any) -> OAuthClientProvider:
    return OAuthClientProvider(
        url,
        client_metadata=ClientMetadata(client_name="mcp-codegen end to end"),
        redirect=CallbackRedirect(REDIRECT_URI, user.consent),
        **options,
    )


@pytest.fixture(scope="module")
def issuer() -> Iterator[AuthorizationServer]:
    with authorization_server() as server:
        yield server


@pytest.fixture(scope="module")
def protected(issuer: AuthorizationServer) -> Iterator[ThreadedServer]:
    with protected_by(issuer, origin=True) as served:  # /sse belongs to the resource too
        yield served


@pytest.fixture(scope="module")
def short_lived(issuer: AuthorizationServer) -> Iterator[ThreadedServer]:
    with protected_by(issuer, ttl=SHORT_TTL, leeway=0) as served:
        yield served


def client(version: str) -> Client:
    return Client(name="e2e", version="1", protocol_version=version)


async def call(session: ClientSession, name: str) -> str:
    if session.stateless:
        result: Any = await modern.ClientStub(session).call_tool(name, arguments={})
    else:
        result = await legacy.ClientStub(session).call_tool(name, arguments={})
    return str(result.content[0].text)


async def whoami(session: ClientSession) -> dict[str, Any]:
    seen: dict[str, Any] = json.loads(await call(session, "whoami"))
    return seen


@pytest.mark.node
@pytest.mark.parametrize(
    ("transport", "version", "tool"),
    [
        ("http", "2025-11-25", "admin_reset"),
        ("http", "2026-07-28", "admin_reset"),
        ("http", "2026-07-28", "escalate"),
        ("sse", "2025-11-25", "admin_reset"),
    ],
)
def test_discovery_registration_authorization_call_and_step_up(
    protected: ThreadedServer, issuer: AuthorizationServer, transport: str, version: str, tool: str
) -> None:
    user = User(f"erin-{transport}-{version}-{tool}")
    storage = RecordingStorage()
    url = protected.url("/mcp") if transport == "http" else protected.url("/sse")
    auth = provider(url, user, storage=storage)
    connect = connect_http if transport == "http" else connect_sse

    async def go() -> None:
        async with connect(client(version), url, auth=auth) as session:
            assert session.protocol_version == version
            seen = await whoami(session)
            assert seen["subject"] == user.login and seen["scopes"] == ["mcp:tools"]
            # mcp:admin is needed: a 403 insufficient_scope, a new authorization, the call again.
            assert await call(session, tool) == (
                "reset"
                if tool == "admin_reset"
                else json.dumps(seen | {"scopes": ["mcp:admin", "mcp:tools"]})
            )
            seen = await whoami(session)
            assert seen["scopes"] == ["mcp:admin", "mcp:tools"]
            registered = await storage.get_client(issuer.issuer)
            assert registered is not None and seen["client_id"] == registered.client_id

    run(go())
    first, second = user.authorizations  # one registration, two authorizations
    resource = protected.url("")
    for query in (first, second):
        assert (
            query["resource"] == resource
            and query["code_challenge_method"] == "S256"
            and query["redirect_uri"] == REDIRECT_URI
        )
    # offline_access: oidc-provider offers it, and the client wants a refresh token
    assert set(first["scope"].split()) == {"mcp:tools", "offline_access"}
    assert set(second["scope"].split()) == {
        "mcp:tools",
        "mcp:admin",
        "offline_access",
    }  # the earlier scopes kept
    assert [t.resource for t in storage.kept] == [resource, resource]
    paths = [path for _, path, _ in protected.recorder.requests]
    assert "/.well-known/oauth-protected-resource" in paths  # from the 401's resource_metadata


@pytest.mark.node
def test_refresh_before_expiry(short_lived: ThreadedServer) -> None:
    user = User("frank")
    storage = RecordingStorage()
    url = short_lived.url()
    # The access tokens live SHORT_TTL seconds, inside the refresh margin: each request refreshes first.
    auth = provider(url, user, storage=storage, refresh_margin=SHORT_TTL)

    async def go() -> None:
        async with connect_http(client("2026-07-28"), url, auth=auth) as session:
            assert (await whoami(session))["subject"] == "frank"
            posts = len(short_lived.recorder.matching("POST"))
            await whoami(session)
            # one POST: the token was refreshed before it was sent, no 401 came back
            assert len(short_lived.recorder.matching("POST")) == posts + 1

    run(go())
    assert len(user.authorizations) == 1
    assert len(storage.kept) >= 2 and len({t.access_token for t in storage.kept}) == len(
        storage.kept
    )
    assert len({t.refresh_token for t in storage.kept}) == len(
        storage.kept
    )  # oidc-provider rotates them


@pytest.mark.node
def test_refresh_on_401(short_lived: ThreadedServer) -> None:
    user = User("grace")
    storage = ForgetfulStorage()
    url = short_lived.url()
    auth = provider(url, user, storage=storage)

    async def go() -> None:
        async with connect_http(client("2025-11-25"), url, auth=auth) as session:
            assert (await whoami(session))["subject"] == "grace"
            expired = storage.kept[-1].access_token
            await asyncio.sleep(SHORT_TTL + 1.1)  # expired at the server; the client does not know
            posts = len(short_lived.recorder.matching("POST"))
            assert (await whoami(session))["subject"] == "grace"
            sent = [h["authorization"] for h in short_lived.recorder.matching("POST")[posts:]]
            assert sent == [
                f"Bearer {expired}",
                f"Bearer {storage.kept[-1].access_token}",
            ]  # 401, refreshed, again

    run(go())
    assert len(user.authorizations) == 1 and len(storage.kept) == 2


@pytest.mark.node
@pytest.mark.peers
def test_our_client_against_a_server_the_sdk_protects(issuer: AuthorizationServer) -> None:
    user = User("heidi")
    with sdk_protected(issuer) as url:

        async def go() -> None:
            for version in ("2025-11-25", "2026-07-28"):
                async with connect_http(client(version), url, auth=auth) as session:
                    assert session.protocol_version == version
                    seen = await whoami(session)
                    assert seen["subject"] == "heidi" and seen["scopes"] == ["mcp:tools"]

        auth = provider(url, user)
        run(go())
    [query] = user.authorizations  # the second session reused the token
    assert query["resource"] == url and query["scope"].split() == ["mcp:tools", "offline_access"]
    assert query["code_challenge_method"] == "S256"


@pytest.mark.node
def test_metadata_for_another_resource_is_refused(issuer: AuthorizationServer) -> None:
    """A server that publishes metadata for another resource (misconfigured,
    or hostile: it would receive tokens meant for that one) is refused before
    any authorization server is contacted."""

    def make(url: str) -> ResourceServer:
        other = url.replace(
            "/mcp", "/other"
        )  # its metadata is served here too, at the path of /other
        return resource_server(other, issuer.issuer, JWTVerifier(issuer.issuer, other))

    user = User("ivan")
    with serving_protected(make) as served:
        url = served.url()

        async def go() -> None:
            async with connect_http(client("2026-07-28"), url, auth=provider(url, user)):
                pass

        started = time.monotonic()
        with pytest.raises(
            McpError,
            match=r"is for 'http://127.0.0.1:\d+/other', not for .*/mcp'; refusing to authorize for another resource",
        ):
            run(go())
        assert time.monotonic() - started < 10
    assert user.authorizations == []
