"""The OAuth client's rules, on their own: WWW-Authenticate parsing, the
well-known URLs tried and their order, whether a resource's metadata is about
the server asked for, scope selection, PKCE, and DPoP proofs."""

from __future__ import annotations

import base64
import hashlib
import json
import re

import httpx2
import pytest
from joserfc import jwk, jws

from mcpbind.auth.client import (
    ClientCredentialsProvider,
    ClientMetadata,
    HTTPRedirectFollower,
    OAuthClientProvider,
    PrivateKeyJWT,
)
from mcpbind.auth.client._discovery import (
    BearerChallenge,
    Discovery,
    authorization_server_metadata_urls,
    bearer_challenge,
    check_endpoint,
    parse_www_authenticate,
    protected_resource_metadata_urls,
    resource_covers,
    select_scopes,
)
from mcpbind.auth.client._dpop import DPoPKey
from mcpbind.auth.client._errors import MetadataError
from mcpbind.auth.client._metadata import AuthorizationServerMetadata, ProtectedResourceMetadata
from mcpbind.auth.client._pkce import PKCE, challenge_of
from mcpbind.auth.client._registration import application_type, check_metadata_document_url

# ---------------------------------------------------------------- WWW-Authenticate


def test_bearer_challenge_with_every_parameter() -> None:
    value = (
        'Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", '
        'scope="files:read files:write", error="insufficient_scope", error_description="needs \\"write\\", too"'
    )
    [challenge] = parse_www_authenticate(value)
    assert challenge.scheme == "Bearer"
    assert challenge.params["error_description"] == 'needs "write", too'
    found = bearer_challenge({"www-authenticate": value})
    assert found == BearerChallenge(
        resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
        scopes=("files:read", "files:write"),
        error="insufficient_scope",
        error_description='needs "write", too',
    )
    assert found.insufficient_scope


def test_several_challenges_in_one_header_and_token68() -> None:
    value = 'Basic realm="a, b", Negotiate abc123==, bearer Realm=x,scope=read , DPoP algs="ES256"'
    challenges = parse_www_authenticate(value)
    assert [c.scheme for c in challenges] == ["Basic", "Negotiate", "bearer", "DPoP"]
    assert challenges[0].params == {"realm": "a, b"}
    assert challenges[1].token68 == "abc123=="
    assert challenges[2].params == {"realm": "x", "scope": "read"}  # names are case-insensitive
    assert bearer_challenge({"www-authenticate": value}).scopes == ("read",)


def test_bearer_challenge_across_header_lines_and_without_one() -> None:
    headers = httpx2.Headers(
        [("www-authenticate", 'Basic realm="x"'), ("www-authenticate", 'Bearer scope="mcp"')]
    )
    assert bearer_challenge(headers).scopes == ("mcp",)
    assert bearer_challenge({"www-authenticate": 'Basic realm="x"'}) == BearerChallenge()
    assert bearer_challenge({}) == BearerChallenge()
    assert bearer_challenge({"www-authenticate": "Bearer"}) == BearerChallenge()
    # An empty scope is a scope parameter naming nothing, not an absent one.
    assert bearer_challenge({"www-authenticate": 'Bearer scope=""'}).scopes == ()


def test_garbage_keeps_what_parsed_before_it() -> None:
    assert [c.scheme for c in parse_www_authenticate('Bearer scope="a" ;;; "x"')] == ["Bearer"]
    assert parse_www_authenticate("") == []
    assert parse_www_authenticate('"quoted"') == []


# ---------------------------------------------------------------- well-known URLs


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        (
            "https://mcp.example.com/mcp",
            [
                "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
                "https://mcp.example.com/.well-known/oauth-protected-resource",
            ],
        ),
        (
            "https://mcp.example.com/a/b/?x=1",
            [
                "https://mcp.example.com/.well-known/oauth-protected-resource/a/b",
                "https://mcp.example.com/.well-known/oauth-protected-resource",
            ],
        ),
        (
            "https://mcp.example.com/",
            ["https://mcp.example.com/.well-known/oauth-protected-resource"],
        ),
        ("http://127.0.0.1:8000", ["http://127.0.0.1:8000/.well-known/oauth-protected-resource"]),
    ],
)
def test_protected_resource_metadata_urls(server: str, expected: list[str]) -> None:
    assert protected_resource_metadata_urls(server) == expected


@pytest.mark.parametrize(
    ("issuer", "expected"),
    [
        (
            "https://auth.example.com",
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ],
        ),
        (
            "https://auth.example.com/",
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ],
        ),
        (
            "https://auth.example.com/tenant1",
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ],
        ),
        (
            "http://localhost:9000/realms/a/",
            [
                "http://localhost:9000/.well-known/oauth-authorization-server/realms/a",
                "http://localhost:9000/.well-known/openid-configuration/realms/a",
                "http://localhost:9000/realms/a/.well-known/openid-configuration",
            ],
        ),
    ],
)
def test_authorization_server_metadata_urls(issuer: str, expected: list[str]) -> None:
    assert authorization_server_metadata_urls(issuer) == expected


@pytest.mark.parametrize("url", ["mcp.example.com/mcp", "ftp://x/y", "/mcp", "https://"])
def test_urls_that_are_not_absolute_http_are_refused(url: str) -> None:
    with pytest.raises(MetadataError, match="is not an absolute http"):
        protected_resource_metadata_urls(url)
    with pytest.raises(MetadataError, match="is not an absolute http"):
        authorization_server_metadata_urls(url)


def test_endpoints_need_https_off_loopback() -> None:
    assert check_endpoint("https://auth.example.com/token", "token_endpoint")
    assert check_endpoint("http://127.0.0.1:9/token", "token_endpoint")
    assert check_endpoint("http://localhost/token", "token_endpoint")
    with pytest.raises(
        MetadataError, match="token_endpoint 'http://auth.example.com/token' is not an HTTPS URL"
    ):
        check_endpoint("http://auth.example.com/token", "token_endpoint")


# ---------------------------------------------------------------- resources


@pytest.mark.parametrize(
    ("resource", "server", "covers"),
    [
        ("https://mcp.example.com/mcp", "https://mcp.example.com/mcp", True),
        ("https://mcp.example.com/mcp/", "https://mcp.example.com/mcp", True),
        ("https://mcp.example.com", "https://mcp.example.com/mcp", True),
        ("https://MCP.example.com:443/", "https://mcp.example.com/mcp", True),
        ("https://mcp.example.com/mcp", "https://mcp.example.com/mcp/sub", True),
        ("https://mcp.example.com/mcp", "https://mcp.example.com/mcp2", False),
        ("https://mcp.example.com/other", "https://mcp.example.com/mcp", False),
        ("https://evil.example.com/mcp", "https://mcp.example.com/mcp", False),
        ("http://mcp.example.com/mcp", "https://mcp.example.com/mcp", False),
        ("https://mcp.example.com:8443/mcp", "https://mcp.example.com/mcp", False),
        ("https://mcp.example.com/mcp#x", "https://mcp.example.com/mcp", False),
        ("not a url", "https://mcp.example.com/mcp", False),
    ],
)
def test_resource_covers(resource: str, server: str, covers: bool) -> None:
    assert resource_covers(resource, server) is covers


# ---------------------------------------------------------------- scopes


def _discovery(
    prm_scopes: list[str] | None = None, as_scopes: list[str] | None = None
) -> Discovery:
    prm = ProtectedResourceMetadata(
        resource="https://r/mcp", authorization_servers=["https://as"], scopes_supported=prm_scopes
    )
    server = AuthorizationServerMetadata(
        issuer="https://as", token_endpoint="https://as/token", scopes_supported=as_scopes
    )
    return Discovery(
        resource="https://r/mcp", resource_metadata=prm, issuer="https://as", server=server
    )


def test_scopes_from_the_challenge_else_the_resource_else_none() -> None:
    discovery = _discovery(prm_scopes=["a", "b"])
    assert select_scopes(BearerChallenge(scopes=("x",)), discovery) == ("x",)
    assert select_scopes(BearerChallenge(), discovery) == ("a", "b")
    assert select_scopes(None, _discovery()) == ()


def test_step_up_keeps_earlier_scopes_once() -> None:
    discovery = _discovery(prm_scopes=["profile"])
    assert select_scopes(BearerChallenge(scopes=("write", "read")), discovery, ("read",)) == (
        "read",
        "write",
    )


def test_offline_access_only_when_offered_and_wanted() -> None:
    offered = _discovery(prm_scopes=["mcp"], as_scopes=["mcp", "offline_access"])
    assert select_scopes(None, offered, offline_access=True) == ("mcp", "offline_access")
    assert select_scopes(None, offered, offline_access=False) == ("mcp",)
    assert select_scopes(
        None, _discovery(prm_scopes=["mcp"], as_scopes=["mcp"]), offline_access=True
    ) == ("mcp",)
    # No scope parameter at all stays none: offline_access alone would narrow the grant.
    assert select_scopes(None, _discovery(as_scopes=["offline_access"]), offline_access=True) == ()


# ---------------------------------------------------------------- PKCE and client metadata


def test_pkce_s256_matches_rfc_7636_appendix_b() -> None:
    assert (
        challenge_of("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
        == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    )


def test_pkce_verifiers_are_fresh_and_well_formed() -> None:
    first, second = PKCE(), PKCE()
    assert first.verifier != second.verifier
    assert re.fullmatch(r"[A-Za-z0-9\-._~]{43,128}", first.verifier)
    assert first.method == "S256" and first.challenge == challenge_of(first.verifier)
    assert first.verifier not in repr(first)


def test_application_type_and_metadata_document_urls() -> None:
    assert application_type(["http://127.0.0.1:8765/callback"]) == "native"
    assert application_type(["com.example.app:/oauth"]) == "native"
    assert application_type(["https://app.example.com/callback"]) == "web"
    assert check_metadata_document_url("https://app.example.com/client.json")
    for bad in (
        "http://app.example.com/client.json",
        "https://app.example.com/",
        "https://app.example.com/c#x",
    ):
        with pytest.raises(ValueError, match="https URL with a path"):
            check_metadata_document_url(bad)


def test_dpop_proofs() -> None:
    key = DPoPKey()
    first = key.proof("POST", "https://mcp.example.com/mcp?x=1#f", access_token="tok")
    assert key.remember_nonce("https://MCP.example.com/other", "n-1") and not key.remember_nonce(
        "https://mcp.example.com/", "n-1"
    )
    second = key.proof("POST", "https://mcp.example.com/mcp")
    proofs = []
    for proof in (first, second):
        header = jws.extract_compact(proof.encode()).headers()
        assert header["typ"] == "dpop+jwt" and header["alg"] == "ES256" and "d" not in header["jwk"]
        public = jwk.import_key(header["jwk"], "EC")
        proofs.append(json.loads(jws.deserialize_compact(proof, public).payload))
    ath = base64.urlsafe_b64encode(hashlib.sha256(b"tok").digest()).rstrip(b"=").decode()
    assert (
        proofs[0]["htu"] == "https://mcp.example.com/mcp"
        and proofs[0]["htm"] == "POST"
        and proofs[0]["ath"] == ath
    )
    assert "nonce" not in proofs[0] and proofs[1]["nonce"] == "n-1" and "ath" not in proofs[1]
    assert proofs[0]["jti"] != proofs[1]["jti"]


def test_bad_configuration_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match="exactly one of client_secret and private_key"):
        ClientCredentialsProvider("https://mcp.example.com/mcp", client_id="svc")
    with pytest.raises(ValueError, match=r"the private key is not a usable EC key"):
        ClientCredentialsProvider(
            "https://mcp.example.com/mcp", client_id="svc", private_key="not a key"
        )
    with pytest.raises(ValueError, match="unsupported signing algorithm 'HS256'"):
        PrivateKeyJWT("svc", jwk.ECKey.generate_key("P-256").as_pem(private=True), "HS256")
    with pytest.raises(ValueError, match="https URL with a path"):
        OAuthClientProvider(
            "https://mcp.example.com/mcp",
            client_metadata=ClientMetadata(),
            redirect=HTTPRedirectFollower("http://127.0.0.1:1/cb"),
            client_metadata_url="http://app.example.com/client.json",
        )
