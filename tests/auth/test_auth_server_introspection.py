"""The resource server with opaque access tokens checked by introspection
(RFC 7662) at a real authorization server (oidc-provider): active tokens
for this resource are accepted and briefly cached, revoked, foreign and
structured ones are refused, and the resource server's own credentials
never show."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import httpx
import httpx2
import pytest
from support.bearer import HandshakeSession, challenge, modern_call, tool_text
from support.http_servers import ThreadedServer, run
from support.oidc_provider import (
    AuthorizationServer,
    Registered,
    authorization_server,
    authorize,
    register_client,
)
from support.protected import resource_server, serving_protected

from mcpbind.auth.server import IntrospectionVerifier, ResourceServer
from mcpbind.auth.server._verifier import InvalidToken

pytestmark = pytest.mark.node


@pytest.fixture(scope="module")
def issuer() -> Iterator[AuthorizationServer]:
    with authorization_server() as server:
        yield server


@pytest.fixture(scope="module")
def credentials(issuer: AuthorizationServer) -> Registered:
    """The resource server's own registration at the authorization server."""
    return register_client(
        issuer, confidential=True, grant_types=("client_credentials",), redirect_uris=()
    )


@pytest.fixture(scope="module")
def protected(issuer: AuthorizationServer, credentials: Registered) -> Iterator[ThreadedServer]:
    def make(url: str) -> ResourceServer:
        issuer.register_resource(url, format="opaque")
        assert credentials.client_secret is not None
        verifier = IntrospectionVerifier(
            issuer.issuer,
            url,
            client_id=credentials.client_id,
            client_secret=credentials.client_secret,
        )
        return resource_server(url, issuer.issuer, verifier)

    with serving_protected(make) as served:
        yield served


def opaque(
    issuer: AuthorizationServer, resource: str, login: str = "erin", scope: str = "mcp:tools"
) -> str:
    access = authorize(
        issuer, register_client(issuer), resource, scope=scope, login=login
    ).access_token
    assert access.count(".") == 0  # opaque, not a JWT
    return access


def test_active_opaque_token_is_accepted_on_both_wires(
    protected: ThreadedServer, issuer: AuthorizationServer
) -> None:
    access = opaque(issuer, protected.url())
    seen = json.loads(tool_text(modern_call(protected.url(), access)))
    assert seen["subject"] == "erin" and seen["scopes"] == ["mcp:tools"] and seen["client_id"]

    async def main() -> None:
        session = HandshakeSession(protected.url(), access)
        try:
            assert (await session.open()).status_code == 200
            assert json.loads(tool_text(await session.call("whoami")))["subject"] == "erin"
            assert (await session.call("admin_reset")).status_code == 403
        finally:
            await session.close()

    run(main())


def _verifier(
    issuer: AuthorizationServer,
    credentials: Registered,
    resource: str,
    http: httpx2.AsyncClient,
    **options: object,
) -> IntrospectionVerifier:
    assert credentials.client_secret is not None
    return IntrospectionVerifier(
        issuer.issuer, resource, client_id=credentials.client_id, client_secret=credentials.client_secret, http_client=http, **options  # type: ignore[arg-type]
    )


def test_answers_are_cached_and_revocation_is_seen_without_the_cache(
    issuer: AuthorizationServer, credentials: Registered
) -> None:
    resource = "http://127.0.0.1:3/mcp"
    issuer.register_resource(resource, format="opaque")
    owner = register_client(issuer)
    access = authorize(issuer, owner, resource, login="erin").access_token
    asked: list[str] = []

    async def count(request: httpx2.Request) -> None:
        asked.append(request.url.path)

    async def main() -> None:
        async with httpx2.AsyncClient(event_hooks={"request": [count]}) as http:
            cached = _verifier(issuer, credentials, resource, http)
            for _ in range(3):
                assert (await cached.verify(access)).subject == "erin"
            assert asked.count("/token/introspection") == 1
            uncached = _verifier(
                issuer, credentials, resource, http, cache_ttl=0, auth_method="client_secret_post"
            )
            assert (await uncached.verify(access)).subject == "erin"
            # The client the token was issued to revokes it (RFC 7009).
            revoked = await http.post(
                issuer.url("/token/revocation"),
                data={"token": access, "client_id": owner.client_id},
            )
            assert revoked.status_code == 200
            with pytest.raises(InvalidToken, match="not active"):
                await uncached.verify(access)

    run(main())


def test_foreign_and_structured_tokens_are_refused(
    protected: ThreadedServer, issuer: AuthorizationServer
) -> None:
    elsewhere = protected.url().replace("/mcp", "/elsewhere")
    issuer.register_resource(elsewhere, format="opaque")
    jwt_resource = protected.url().replace("/mcp", "/jwt")
    issuer.register_resource(jwt_resource)
    cases = {
        "not active": "made-up-token",
        "not issued for this resource": opaque(issuer, elsewhere),
        "cannot introspect": authorize(issuer, register_client(issuer), jwt_resource).access_token,
    }
    for reason, bad in cases.items():
        response = modern_call(protected.url(), bad)
        assert response.status_code == 401, reason
        assert reason in challenge(response)["error_description"]


def test_refused_credentials_of_the_resource_server_are_a_503_that_shows_no_secret(
    issuer: AuthorizationServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    secret = "not-the-secret-0123456789"

    def make(url: str) -> ResourceServer:
        issuer.register_resource(url, format="opaque")
        return resource_server(
            url,
            issuer.issuer,
            IntrospectionVerifier(issuer.issuer, url, client_id="nobody", client_secret=secret),
        )

    with serving_protected(make) as served:
        access = opaque(issuer, served.url())
        response = modern_call(served.url(), access)
        assert response.status_code == 503
        assert "introspection endpoint" in caplog.text
        for text in (
            response.text,
            str(response.headers),
            caplog.text,
            repr(served.app.streamable.auth.verifier),
        ):
            assert secret not in text and access not in text
    assert httpx.get(issuer.url("/.well-known/openid-configuration")).status_code == 200
