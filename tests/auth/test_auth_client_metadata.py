"""Metadata documents as the OAuth client fetches them from a real HTTP server
on loopback: the order of the well-known URLs, and a clear MetadataError for
every document that is missing, malformed, about another resource, or from
an issuer that is not the one asked for. Token and registration endpoint
refusals name the server's error and never the client's secret."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest
from support.http_servers import ThreadedServer, run, serving
from support.oauth_peers import DocumentServer

from mcpbind.auth.client._discovery import (
    BearerChallenge,
    discover,
    fetch_authorization_server_metadata,
    fetch_protected_resource_metadata,
)
from mcpbind.auth.client._errors import AuthorizationError, MetadataError
from mcpbind.auth.client._metadata import AuthorizationServerMetadata, ClientMetadata
from mcpbind.auth.client._registration import register
from mcpbind.auth.client._tokens import SecretAuthentication, token_request, tokens_from

PRM = "/.well-known/oauth-protected-resource"
OAUTH = "/.well-known/oauth-authorization-server"
OIDC = "/.well-known/openid-configuration"


@pytest.fixture(scope="module")
def peer() -> Iterator[tuple[ThreadedServer, DocumentServer]]:
    documents = DocumentServer()
    with serving(documents) as server:
        yield server, documents


@pytest.fixture
def docs(peer: tuple[ThreadedServer, DocumentServer]) -> tuple[str, DocumentServer]:
    server, documents = peer
    documents.documents.clear()
    documents.asked.clear()
    return server.url(""), documents


async def _prm(server_url: str, challenge: BearerChallenge | None = None) -> object:
    async with httpx2.AsyncClient() as http:
        return await fetch_protected_resource_metadata(http, server_url, challenge)


async def _as(issuer: str) -> AuthorizationServerMetadata:
    async with httpx2.AsyncClient() as http:
        return await fetch_authorization_server_metadata(http, issuer)


def _as_document(issuer: str, **extra: object) -> dict[str, object]:
    return {
        "issuer": issuer,
        "authorization_endpoint": f"{issuer}/authorize",
        "token_endpoint": f"{issuer}/token",
        **extra,
    }


# ---------------------------------------------------------------- protected resource metadata


def test_path_based_then_root(docs: tuple[str, DocumentServer]) -> None:
    base, server = docs
    server.documents[PRM] = (200, {"resource": base, "authorization_servers": [base]})
    found = run(_prm(f"{base}/mcp"))
    assert server.asked == [f"{PRM}/mcp", PRM]
    assert getattr(found, "resource") == base


def test_the_challenge_url_comes_first(docs: tuple[str, DocumentServer]) -> None:
    base, server = docs
    server.documents["/custom/prm.json"] = (
        200,
        {"resource": f"{base}/mcp", "authorization_servers": [base]},
    )
    run(_prm(f"{base}/mcp", BearerChallenge(resource_metadata=f"{base}/custom/prm.json")))
    assert server.asked == ["/custom/prm.json"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            b"<html>oops</html>",
            r"the protected resource metadata at http://\S+ is not a JSON document",
        ),
        (
            {"resource": "R", "authorization_servers": "https://as"},
            r"is invalid: Expected `array`, got `str` - at `\$.authorization_servers`",
        ),
        (
            {"authorization_servers": ["https://as"]},
            r"is invalid: Object missing required field `resource`",
        ),
        (
            {"resource": "https://evil.example.com/mcp", "authorization_servers": ["https://as"]},
            r"is for 'https://evil.example.com/mcp', not for 'http://\S+/mcp'; refusing",
        ),
        ({"resource": "R", "authorization_servers": []}, r"names no authorization server"),
    ],
)
def test_bad_protected_resource_metadata(
    docs: tuple[str, DocumentServer], body: object, message: str
) -> None:
    base, server = docs
    if isinstance(body, dict) and body.get("resource") == "R":
        body = {**body, "resource": f"{base}/mcp"}
    server.documents[f"{PRM}/mcp"] = (200, body)
    with pytest.raises(MetadataError, match=message) as caught:
        run(_prm(f"{base}/mcp"))
    assert caught.value.data == {"httpStatus": 401}


def test_no_protected_resource_metadata(docs: tuple[str, DocumentServer]) -> None:
    base, _ = docs
    with pytest.raises(
        MetadataError,
        match=rf"publishes no protected resource metadata \(tried {base}{PRM}/mcp, {base}{PRM}\)",
    ):
        run(_prm(f"{base}/mcp"))


def test_a_server_error_is_not_a_missing_document(docs: tuple[str, DocumentServer]) -> None:
    base, server = docs
    server.documents[f"{PRM}/mcp"] = (503, b"busy")
    with pytest.raises(MetadataError, match=r"GET http://\S+/mcp: HTTP 503"):
        run(_prm(f"{base}/mcp"))
    assert server.asked == [f"{PRM}/mcp"]


def test_unreachable_metadata() -> None:
    with pytest.raises(
        MetadataError,
        match=r"GET http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp failed",
    ):
        run(_prm("http://127.0.0.1:9/mcp"))


# ---------------------------------------------------------------- authorization server metadata


def test_issuer_with_a_path_tries_the_three_urls_in_order(docs: tuple[str, DocumentServer]) -> None:
    base, server = docs
    issuer = f"{base}/tenant1"
    server.documents[f"/tenant1{OIDC}"] = (200, _as_document(issuer))
    assert run(_as(issuer)).issuer == issuer
    assert server.asked == [f"{OAUTH}/tenant1", f"{OIDC}/tenant1", f"/tenant1{OIDC}"]


def test_issuer_without_a_path_falls_back_to_openid_configuration(
    docs: tuple[str, DocumentServer],
) -> None:
    base, server = docs
    server.documents[OIDC] = (200, _as_document(base))
    assert run(_as(base)).token_endpoint == f"{base}/token"
    assert server.asked == [OAUTH, OIDC]


@pytest.mark.parametrize("issuer_suffix", ["/", "x", "https://attacker.example.com"])
def test_issuer_mismatch_is_refused(docs: tuple[str, DocumentServer], issuer_suffix: str) -> None:
    base, server = docs
    lying = issuer_suffix if issuer_suffix.startswith("https") else base + issuer_suffix
    server.documents[OAUTH] = (200, _as_document(lying))
    with pytest.raises(
        MetadataError, match=rf"names issuer '{lying}', not '{base}'; refusing to use it"
    ):
        run(_as(base))
    assert server.asked == [OAUTH]  # never looked elsewhere for a better answer


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"issuer": "ISSUER"}, "has no token_endpoint"),
        (
            {"issuer": "ISSUER", "token_endpoint": "http://auth.example.com/token"},
            "token_endpoint 'http://auth.example.com/token' is not an HTTPS URL",
        ),
        (
            {
                "issuer": "ISSUER",
                "token_endpoint": "https://a/t",
                "registration_endpoint": "/register",
            },
            "registration_endpoint '/register' is not an absolute http",
        ),
        (
            {
                "issuer": "ISSUER",
                "token_endpoint": "https://a/t",
                "code_challenge_methods_supported": "S256",
            },
            r"Expected `array \| null`, got `str`",
        ),
        ([1, 2], "Expected `object`, got `array`"),
    ],
)
def test_bad_authorization_server_metadata(
    docs: tuple[str, DocumentServer], document: object, message: str
) -> None:
    base, server = docs
    if isinstance(document, dict):
        document = {**document, "issuer": base}
    server.documents[OAUTH] = (200, document)
    with pytest.raises(MetadataError, match=message):
        run(_as(base))


def test_no_authorization_server_metadata(docs: tuple[str, DocumentServer]) -> None:
    base, _ = docs
    with pytest.raises(
        MetadataError,
        match=rf"no authorization server metadata for {base} \(tried {base}{OAUTH}, {base}{OIDC}\)",
    ):
        run(_as(base))


def test_discover_joins_both_documents(docs: tuple[str, DocumentServer]) -> None:
    base, server = docs
    server.documents[f"{PRM}/mcp"] = (
        200,
        {"resource": f"{base}/mcp", "authorization_servers": [f"{base}/as"]},
    )
    server.documents[f"{OAUTH}/as"] = (
        200,
        _as_document(f"{base}/as", client_id_metadata_document_supported=True),
    )

    async def go() -> object:
        async with httpx2.AsyncClient() as http:
            return await discover(http, f"{base}/mcp")

    found = run(go())
    assert getattr(found, "issuer") == f"{base}/as" and getattr(found, "resource") == f"{base}/mcp"
    assert getattr(found, "server").client_id_metadata_document_supported


# ---------------------------------------------------------------- token and registration endpoints


def _server(base: str) -> AuthorizationServerMetadata:
    return AuthorizationServerMetadata(
        issuer=base, token_endpoint=f"{base}/token", registration_endpoint=f"{base}/register"
    )


def test_token_endpoint_refusal_names_the_error_not_the_secret(
    docs: tuple[str, DocumentServer],
) -> None:
    base, server = docs
    server.documents["/token"] = (
        400,
        {"error": "invalid_grant", "error_description": "code expired"},
    )
    auth = SecretAuthentication("my-client", "s3cret-value", "client_secret_post")

    async def go() -> object:
        async with httpx2.AsyncClient() as http:
            return await token_request(
                http, _server(base), {"grant_type": "authorization_code", "code": "c0de"}, auth
            )

    with pytest.raises(
        AuthorizationError,
        match=r"refused the authorization_code grant \(invalid_grant: code expired\)",
    ) as caught:
        run(go())
    assert "s3cret-value" not in str(caught.value) and "c0de" not in str(caught.value)
    assert "s3cret-value" not in repr(auth)


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (500, b"", r"refused the client_credentials grant \(HTTP 500"),
        (200, b"not json", r"the token response from http://\S+ is not a JSON document"),
        (200, {"token_type": "Bearer"}, r"Object missing required field `access_token`"),
    ],
)
def test_bad_token_responses(
    docs: tuple[str, DocumentServer], status: int, body: object, message: str
) -> None:
    base, server = docs
    server.documents["/token"] = (status, body)

    async def go() -> object:
        async with httpx2.AsyncClient() as http:
            return await token_request(
                http, _server(base), {"grant_type": "client_credentials"}, SecretAuthentication("c")
            )

    with pytest.raises(AuthorizationError, match=message):
        run(go())


def test_only_bearer_tokens_are_kept(docs: tuple[str, DocumentServer]) -> None:
    base, server = docs
    server.documents["/token"] = (200, {"access_token": "t", "token_type": "MAC"})

    async def go() -> object:
        async with httpx2.AsyncClient() as http:
            answer = await token_request(
                http, _server(base), {"grant_type": "client_credentials"}, SecretAuthentication("c")
            )
            return tokens_from(answer, issuer=base, resource="r", requested=())

    with pytest.raises(MetadataError, match="issued a 'MAC' token; this client uses Bearer tokens"):
        run(go())


def test_registration_refusal_and_malformed_answer(docs: tuple[str, DocumentServer]) -> None:
    base, server = docs
    server.documents["/register"] = (
        400,
        {"error": "invalid_redirect_uri", "error_description": "loopback only"},
    )

    async def go() -> object:
        async with httpx2.AsyncClient() as http:
            return await register(
                http, _server(base), ClientMetadata(redirect_uris=["http://127.0.0.1:1/cb"])
            )

    with pytest.raises(
        AuthorizationError,
        match=r"client registration at http://\S+/register failed \(invalid_redirect_uri: loopback only\)",
    ):
        run(go())
    server.documents["/register"] = (201, {"client_secret": "x"})
    with pytest.raises(MetadataError, match="Object missing required field `client_id`"):
        run(go())
