"""The resource server with JWT access tokens, against a real authorization
server (oidc-provider, tests/support/oidc): tokens it issues through dynamic
registration and the authorization code flow with PKCE are accepted, on both
wires (handshake sessions and 2026-07-28 requests) and on legacy SSE; forged,
expired, wrong-audience, wrong-issuer and malformed ones get 401 with the
challenge; missing scopes get 403 for step-up; each request's handler sees
the principal its own POST was authenticated with; keys rotate; no token
ever reaches a log."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import msgspec
import pytest
from joserfc import jws
from joserfc.jwk import ECKey, RSAKey
from support.bearer import (
    HANDSHAKE,
    MODERN,
    HandshakeSession,
    challenge,
    modern_call,
    tool_error,
    tool_text,
)
from support.http_servers import ThreadedServer, run
from support.oidc_provider import (
    AuthorizationServer,
    authorization_server,
    authorize,
    client_credentials,
    refresh,
    register_client,
    signing_keys,
)
from support.peers import SUPPORT
from support.protected import resource_server, serving_protected

from mcpbind._client.client import Client, connect_stdio
from mcpbind._core import jsonrpc
from mcpbind._core.jsonrpc import McpError
from mcpbind._transports.http.client.streamable import connect_sse, connect_streamable_http
from mcpbind._transports.stdio import StdioServerParameters
from mcpbind.auth._principal import Principal
from mcpbind.auth.server import JWTVerifier, ResourceServer, canonical_resource
from mcpbind.auth.server._verifier import InvalidToken
from mcpbind_protocol import v2026_07_28 as mcp


@pytest.fixture(scope="module")
def issuer() -> Iterator[AuthorizationServer]:
    with authorization_server() as server:
        yield server


@pytest.fixture(scope="module")
def protected(issuer: AuthorizationServer) -> Iterator[ThreadedServer]:
    def make(url: str) -> ResourceServer:
        issuer.register_resource(url)
        return resource_server(
            url, issuer.issuer, JWTVerifier(issuer.issuer, url, leeway=0, token_type="at+jwt")
        )

    with serving_protected(make) as served:
        yield served


def token(
    issuer: AuthorizationServer, resource: str, scope: str = "mcp:tools", login: str | None = None
) -> str:
    """An access token from the authorization server: registration, then the code flow with PKCE."""
    return authorize(
        issuer, register_client(issuer), resource, scope=scope, login=login
    ).access_token


def whoami(text: str) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(text)
    return decoded


# ---------------------------------------------------------------- metadata and challenges


@pytest.mark.node
def test_metadata_is_served_without_a_token_at_both_well_known_urls(
    protected: ThreadedServer, issuer: AuthorizationServer
) -> None:
    for path in (
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ):
        response = httpx.get(protected.url(path))
        assert response.status_code == 200
        assert response.json() == {
            "resource": protected.url(),
            "authorization_servers": [issuer.issuer],
            "scopes_supported": ["mcp:tools"],
            "bearer_methods_supported": ["header"],
        }


@pytest.mark.node
def test_no_token_gets_401_naming_the_metadata_and_the_scope(protected: ThreadedServer) -> None:
    async def main() -> None:
        session = HandshakeSession(protected.url(), None)
        try:
            responses = [
                await session.open(),
                await session.http.get(protected.url(), headers={"accept": "text/event-stream"}),
            ]
        finally:
            await session.close()
        responses.append(modern_call(protected.url(), None))
        for response in responses:
            assert response.status_code == 401
            params = challenge(response)
            assert params["resource_metadata"] == protected.url(
                "/.well-known/oauth-protected-resource/mcp"
            )
            assert params["scope"] == "mcp:tools"
            assert (
                "error" not in params and "error_description" not in params
            )  # no credentials: a bare challenge (RFC 6750 §3.1)

    run(main())


# ---------------------------------------------------------------- accepted tokens


@pytest.mark.node
def test_token_from_the_authorization_server_is_accepted_on_both_wires(
    protected: ThreadedServer, issuer: AuthorizationServer
) -> None:
    access = token(issuer, protected.url(), login="alice")

    async def main() -> None:
        headers = {"authorization": f"Bearer {access}"}
        for version in (HANDSHAKE, MODERN):
            client = Client(name="t", version="1", protocol_version=version)
            async with connect_streamable_http(client, protected.url(), headers=headers) as session:
                assert session.protocol_version == version
                server = mcp.ClientStub(session)
                result = await server.call_tool("whoami", arguments={})
                seen = whoami(result.content[0].text)  # type: ignore[union-attr]
                assert (
                    seen["subject"] == "alice"
                    and seen["scopes"] == ["mcp:tools"]
                    and seen["client_id"]
                )
        async with connect_sse(
            Client(name="t", version="1", protocol_version="2024-11-05"),
            protected.url("/sse"),
            headers=headers,
        ) as session:
            result = await session.request_raw("tools/call", b'{"name":"whoami","arguments":{}}')
            assert whoami(json.loads(bytes(result))["content"][0]["text"])["subject"] == "alice"

    run(main())


@pytest.mark.node
def test_client_credentials_and_refreshed_tokens_are_accepted(
    protected: ThreadedServer, issuer: AuthorizationServer
) -> None:
    machine = register_client(
        issuer, confidential=True, grant_types=("client_credentials",), redirect_uris=()
    )
    answer = modern_call(
        protected.url(), client_credentials(issuer, machine, protected.url()).access_token
    )
    seen = whoami(tool_text(answer))
    assert seen["subject"] == machine.client_id and seen["client_id"] == machine.client_id

    person = register_client(issuer)
    first = authorize(issuer, person, protected.url(), login="carol")
    renewed = refresh(issuer, person, first, protected.url())
    assert renewed.access_token != first.access_token
    assert (
        whoami(tool_text(modern_call(protected.url(), renewed.access_token)))["subject"] == "carol"
    )


# ---------------------------------------------------------------- refused tokens


def _b64(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def _resigned(access: str, key: RSAKey, **header: Any) -> str:
    """The token's header and payload signed again with ``key``."""
    parts = jws.extract_compact(access.encode())
    return jws.serialize_compact({**parts.headers(), **header}, parts.payload, key)


def refused_tokens(issuer: AuthorizationServer, resource: str) -> dict[str, tuple[str, str]]:
    """Tokens the server must refuse, by kind: (token, what the refusal says)."""
    good = token(issuer, resource)
    kid = jws.extract_compact(good.encode()).headers()["kid"]
    stranger = RSAKey.generate_key(2048, parameters={"kid": kid}, private=True)
    other_resource = resource.replace("/mcp", "/other")
    issuer.register_resource(other_resource)
    header, payload, _ = good.split(".")
    return {
        "forged": (_resigned(good, stranger), "signature is invalid"),
        "unknown key": (_resigned(good, stranger, kid="not-a-published-key"), "does not publish"),
        "signature cut off": (f"{header}.{payload}.", "signature is invalid"),
        "unsigned": (
            f"{_b64({'alg': 'none', 'kid': kid})}.{payload}.",
            "algorithm this server does not accept",
        ),
        "wrong audience": (token(issuer, other_resource), "not issued for this resource"),
        "malformed": ("not-a-jwt", "not a JWT"),
        "three garbage parts": ("a.b.c", "not a JWT"),
    }


@pytest.mark.node
def test_refused_tokens_get_401_invalid_token(
    protected: ThreadedServer, issuer: AuthorizationServer
) -> None:
    for kind, (bad, reason) in refused_tokens(issuer, protected.url()).items():
        for response in (modern_call(protected.url(), bad), _handshake_open(protected.url(), bad)):
            assert response.status_code == 401, kind
            params = challenge(response)
            assert params["error"] == "invalid_token", kind
            assert reason in params["error_description"], (kind, params)
            assert params["resource_metadata"] == protected.url(
                "/.well-known/oauth-protected-resource/mcp"
            )
            assert bad not in response.text and bad not in response.headers["www-authenticate"]


def _handshake_open(url: str, token: str) -> httpx.Response:
    async def main() -> httpx.Response:
        session = HandshakeSession(url, token)
        try:
            return await session.open()
        finally:
            await session.close()

    return run(main())


@pytest.mark.node
def test_sender_constrained_token_is_refused_as_a_bearer_token(
    protected: ThreadedServer, issuer: AuthorizationServer
) -> None:
    machine = register_client(
        issuer, confidential=True, grant_types=("client_credentials",), redirect_uris=()
    )
    bound = client_credentials(
        issuer, machine, protected.url(), dpop=ECKey.generate_key("P-256", private=True)
    )
    assert "cnf" in json.loads(jws.extract_compact(bound.access_token.encode()).payload)
    response = modern_call(protected.url(), bound.access_token)
    assert response.status_code == 401
    assert "bound to a key" in challenge(response)["error_description"]


@pytest.mark.node
def test_expired_token_is_refused(protected: ThreadedServer, issuer: AuthorizationServer) -> None:
    issuer.register_resource(protected.url(), ttl=2)
    try:
        short = token(issuer, protected.url())
    finally:
        issuer.register_resource(protected.url())
    assert modern_call(protected.url(), short).status_code == 200
    time.sleep(3)
    response = modern_call(protected.url(), short)
    assert response.status_code == 401
    assert challenge(response)["error_description"] == "the access token has expired"


@pytest.mark.node
def test_token_of_another_issuer_with_the_same_keys_is_refused(
    protected: ThreadedServer, issuer: AuthorizationServer
) -> None:
    # A second authorization server signing with the very same keys: only the issuer check tells them apart.
    with authorization_server(jwks=issuer.jwks) as impostor:
        impostor.register_resource(protected.url())
        response = modern_call(protected.url(), token(impostor, protected.url()))
    assert response.status_code == 401
    assert "issued by another authorization server" in challenge(response)["error_description"]


@pytest.mark.node
def test_authorization_header_that_is_not_one_bearer_token_is_a_bad_request(
    protected: ThreadedServer,
) -> None:
    response = httpx.post(protected.url(), headers={"authorization": "Bearer two tokens"}, json={})
    assert response.status_code == 400
    assert challenge(response)["error"] == "invalid_request"
    basic = httpx.post(protected.url(), headers={"authorization": "Basic dXNlcjpwYXNz"}, json={})
    assert basic.status_code == 401 and "error" not in challenge(basic)


# ---------------------------------------------------------------- scopes


@pytest.mark.node
def test_missing_declared_scope_gets_403_with_every_scope_the_request_needs(
    protected: ThreadedServer, issuer: AuthorizationServer
) -> None:
    basic = token(issuer, protected.url())
    admin = token(issuer, protected.url(), scope="mcp:tools mcp:admin")

    async def main() -> None:
        session = HandshakeSession(protected.url(), basic)
        try:
            assert (await session.open()).status_code == 200
            refused = await session.call("admin_reset")
            assert refused.status_code == 403
            params = challenge(refused)
            assert (
                params["error"] == "insufficient_scope" and params["scope"] == "mcp:admin mcp:tools"
            )
            assert tool_text(await session.call("admin_reset", token=admin)) == "reset"
        finally:
            await session.close()

    run(main())
    refused = modern_call(protected.url(), basic, "admin_reset")
    assert refused.status_code == 403 and challenge(refused)["scope"] == "mcp:admin mcp:tools"
    assert tool_text(modern_call(protected.url(), admin, "admin_reset")) == "reset"


@pytest.mark.node
def test_insufficient_scope_raised_by_a_handler(
    protected: ThreadedServer, issuer: AuthorizationServer
) -> None:
    basic = token(issuer, protected.url())
    # A 2026-07-28 request is answered by its response alone: the refusal is an HTTP 403.
    refused = modern_call(protected.url(), basic, "escalate")
    assert refused.status_code == 403
    assert challenge(refused) | {"error_description": ""} == {
        "error": "insufficient_scope",
        "scope": "mcp:admin mcp:tools",
        "resource_metadata": protected.url("/.well-known/oauth-protected-resource/mcp"),
        "error_description": "",
    }

    async def main() -> None:
        # On a session's SSE stream, already open, it is a JSON-RPC error with the same parameters.
        session = HandshakeSession(protected.url(), basic)
        try:
            await session.open()
            answer = await session.call("escalate")
            assert answer.status_code == 200
            error = tool_error(answer)
            assert error["code"] == jsonrpc.INSUFFICIENT_SCOPE
            assert error["data"] == {"error": "insufficient_scope", "scope": "mcp:admin"}
        finally:
            await session.close()

    run(main())


@pytest.mark.node
@pytest.mark.parametrize(
    "options", [{"json_response": True}, {"stateless": True, "json_response": True}]
)
def test_handshake_answers_in_json_turn_a_raised_insufficient_scope_into_403(
    issuer: AuthorizationServer, options: dict[str, bool]
) -> None:
    def make(url: str) -> ResourceServer:
        issuer.register_resource(url)
        return resource_server(url, issuer.issuer, JWTVerifier(issuer.issuer, url))

    with serving_protected(make, **options) as served:
        basic = token(issuer, served.url(), login="heidi")

        async def main() -> None:
            session = HandshakeSession(served.url(), basic)
            try:
                await session.open()
                assert whoami(tool_text(await session.call("whoami")))["subject"] == "heidi"
                refused = await session.call("escalate")
                assert (
                    refused.status_code == 403
                    and challenge(refused)["scope"] == "mcp:admin mcp:tools"
                )
            finally:
                await session.close()

        run(main())


@pytest.mark.node
def test_insufficient_scope_on_stdio_stays_a_jsonrpc_error() -> None:
    async def main() -> None:
        server = StdioServerParameters(command=sys.executable, args=[str(SUPPORT / "protected.py")])
        async with connect_stdio(
            Client(name="t", version="1", protocol_version=HANDSHAKE), server
        ) as session:
            stub = mcp.ClientStub(session)
            assert (await stub.call_tool("whoami", arguments={})).content[0].text == "null"  # type: ignore[union-attr]
            with pytest.raises(McpError) as raised:
                await stub.call_tool("escalate", arguments={})
            assert raised.value.code == jsonrpc.INSUFFICIENT_SCOPE
            assert raised.value.data == {"error": "insufficient_scope", "scope": "mcp:admin"}

    run(main())


@pytest.mark.node
def test_scope_hierarchy_lets_a_broader_scope_stand_for_narrower_ones(
    issuer: AuthorizationServer,
) -> None:
    def make(url: str) -> ResourceServer:
        issuer.register_resource(url)
        verifier = JWTVerifier(issuer.issuer, url)
        return resource_server(
            url, issuer.issuer, verifier, scope_hierarchy={"mcp:admin": ["mcp:tools"]}
        )

    with serving_protected(make) as served:
        admin_only = token(issuer, served.url(), scope="mcp:admin")
        assert whoami(tool_text(modern_call(served.url(), admin_only)))["scopes"] == [
            "mcp:admin",
            "mcp:tools",
        ]


# ---------------------------------------------------------------- the principal of each request


@pytest.mark.node
def test_each_request_of_a_session_has_the_principal_of_its_own_post(
    protected: ThreadedServer, issuer: AuthorizationServer
) -> None:
    # One user, two clients (so two client ids) and two scope sets, on one session, requests overlapping.
    first = token(issuer, protected.url(), login="dave")
    second = token(issuer, protected.url(), scope="mcp:tools mcp:admin", login="dave")

    async def main() -> None:
        session = HandshakeSession(protected.url(), first)
        try:
            await session.open()
            answers = await asyncio.gather(
                *(session.call("slow_whoami", token=t) for t in (first, second, first, second))
            )
            seen = [whoami(tool_text(a)) for a in answers]
            assert [s["scopes"] for s in seen] == [["mcp:tools"], ["mcp:admin", "mcp:tools"]] * 2
            assert (
                seen[0]["client_id"]
                == seen[2]["client_id"]
                != seen[1]["client_id"]
                == seen[3]["client_id"]
            )
            assert tool_text(await session.call("escalate", token=second)) != ""
        finally:
            await session.close()

    run(main())


@pytest.mark.node
def test_a_session_serves_only_the_principal_that_opened_it(
    protected: ThreadedServer, issuer: AuthorizationServer
) -> None:
    alice = token(issuer, protected.url(), login="alice")
    mallory = token(issuer, protected.url(), login="mallory")

    async def main() -> None:
        session = HandshakeSession(protected.url(), alice)
        try:
            await session.open()
            stolen = await session.call("whoami", token=mallory)
            assert stolen.status_code == 404
            stream = await session.http.get(
                protected.url(),
                headers={
                    "accept": "text/event-stream",
                    "authorization": f"Bearer {mallory}",
                    "mcp-session-id": session.session_id or "",
                },
            )
            assert stream.status_code == 404
            assert whoami(tool_text(await session.call("whoami")))["subject"] == "alice"
        finally:
            await session.close()

    run(main())


@pytest.mark.node
def test_legacy_sse_posts_need_the_token_of_the_principal_that_opened_the_stream(
    protected: ThreadedServer, issuer: AuthorizationServer
) -> None:
    alice = token(issuer, protected.url(), login="alice")
    mallory = token(issuer, protected.url(), login="mallory")

    async def main() -> None:
        async with httpx.AsyncClient(timeout=30) as http:
            async with http.stream(
                "GET", protected.url("/sse"), headers={"authorization": f"Bearer {alice}"}
            ) as stream:
                assert stream.status_code == 200
                lines = stream.aiter_lines()
                endpoint = ""
                while not endpoint.startswith("data: "):
                    endpoint = await anext(lines)
                url = protected.url(endpoint.removeprefix("data: ").strip())
                ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
                assert (
                    await http.post(url, json=ping, headers={"authorization": f"Bearer {mallory}"})
                ).status_code == 404
                assert (await http.post(url, json=ping)).status_code == 401
                assert (
                    await http.post(url, json=ping, headers={"authorization": f"Bearer {alice}"})
                ).status_code == 202

    run(main())


# ---------------------------------------------------------------- keys and the verifier itself


@pytest.mark.node
def test_verifier_fetches_the_keys_again_when_the_server_rotates_them() -> None:
    fetches: list[str] = []

    async def count(request: httpx2.Request) -> None:
        fetches.append(request.url.path)

    resource = "http://127.0.0.1:1/mcp"
    old_keys = signing_keys()
    before = AuthorizationServer(jwks=old_keys).wait_ready()
    servers = [before]

    def rotate() -> str:
        """The server restarts at the same address signing with a new key, still publishing the old one."""
        before.stop()
        after = AuthorizationServer(
            jwks={"keys": [*signing_keys()["keys"], *old_keys["keys"]]}, port=before.port
        )
        servers.append(after.wait_ready())
        after.register_resource(resource)
        return token(after, resource, login="bob")

    async def main() -> None:
        async with httpx2.AsyncClient(event_hooks={"request": [count]}) as http:
            verifier = JWTVerifier(
                before.issuer, resource, http_client=http, min_refresh_interval=0
            )
            assert (await verifier.verify(old)).subject == "alice"
            new = await asyncio.to_thread(rotate)
            assert (
                await verifier.verify(new)
            ).subject == "bob"  # signed with a key new to the verifier
            assert (await verifier.verify(old)).subject == "alice"
            assert fetches.count("/jwks") == 2

    try:
        before.register_resource(resource)
        old = token(before, resource, login="alice")
        run(main())
    finally:
        for server in servers:
            server.stop()


@pytest.mark.node
def test_unknown_key_ids_do_not_make_the_verifier_refetch_within_the_interval(
    issuer: AuthorizationServer,
) -> None:
    fetches: list[str] = []

    async def count(request: httpx2.Request) -> None:
        fetches.append(request.url.path)

    resource = "http://127.0.0.1:2/mcp"
    issuer.register_resource(resource)
    good = token(issuer, resource)
    stranger = RSAKey.generate_key(2048, private=True)

    async def main() -> None:
        async with httpx2.AsyncClient(event_hooks={"request": [count]}) as http:
            verifier = JWTVerifier(issuer.issuer, resource, http_client=http)
            await verifier.verify(good)
            for attempt in range(5):
                with pytest.raises(InvalidToken):
                    await verifier.verify(_resigned(good, stranger, kid=f"made-up-{attempt}"))
        assert fetches.count("/jwks") == 1

    run(main())


@pytest.mark.node
def test_unreachable_authorization_server_gets_503() -> None:
    closed = "http://127.0.0.1:9"  # discard port: nothing listens

    def make(url: str) -> ResourceServer:
        return resource_server(url, closed, JWTVerifier(closed, url))

    with serving_protected(make) as served:
        response = modern_call(served.url(), "a.b.c")
        assert response.status_code == 401  # not even a JWT: refused before any fetch
        header = jws.serialize_compact(
            {"alg": "RS256", "kid": "k"}, b"{}", RSAKey.generate_key(2048, private=True)
        )
        response = modern_call(served.url(), header)
        assert response.status_code == 503 and response.headers["retry-after"] == "5"


def test_bad_configuration_is_refused_with_a_clear_error() -> None:
    with pytest.raises(ValueError, match="leeway"):
        JWTVerifier("https://as.example", "https://mcp.example/mcp", leeway=3600)
    with pytest.raises(ValueError, match="asymmetric"):
        JWTVerifier("https://as.example", "https://mcp.example/mcp", algorithms=["HS256"])
    with pytest.raises(ValueError, match="fragment"):
        canonical_resource("https://mcp.example/mcp#part")
    with pytest.raises(ValueError, match="absolute"):
        canonical_resource("mcp.example/mcp")
    assert canonical_resource("HTTPS://MCP.Example.com/") == "https://mcp.example.com"
    with pytest.raises(ValueError, match="authorization server"):
        ResourceServer(
            "https://mcp.example/mcp",
            [],
            JWTVerifier("https://as.example", "https://mcp.example/mcp"),
        )


# ---------------------------------------------------------------- secrets stay out of logs


@pytest.mark.node
def test_tokens_never_reach_logs_or_error_messages(
    protected: ThreadedServer, issuer: AuthorizationServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    good = token(issuer, protected.url())
    bad = refused_tokens(issuer, protected.url())
    seen_by_client: list[str] = []
    for candidate in [good, *(t for t, _ in bad.values())]:
        for response in (
            modern_call(protected.url(), candidate),
            modern_call(protected.url(), candidate, "admin_reset"),
        ):
            seen_by_client.append(response.text + str(response.headers))
    assert any("refused an access token" in record.getMessage() for record in caplog.records)
    logged = caplog.text + "".join(str(record.args) for record in caplog.records)
    for secret in [good, *(t for t, _ in bad.values() if len(t) > 12)]:
        assert secret not in logged
        assert all(secret not in text for text in seen_by_client)
        for part in secret.split("."):
            if len(part) > 20:
                assert part not in logged


def test_scopes_are_declared_per_method_tool_prompt_and_resource() -> None:
    verifier = JWTVerifier("https://as.example", "https://mcp.example/mcp")
    guard = ResourceServer(
        "https://mcp.example/mcp",
        ["https://as.example"],
        verifier,
        scopes={
            "tools/list": ["mcp:list"],
            ("tools/call", "delete"): ["mcp:admin"],
            ("prompts/get", "review"): ["mcp:prompts"],
            ("resources/read", "memo://secret"): ["mcp:admin"],
        },
    )
    caller = Principal("ivan", scopes=frozenset({"mcp:tools"}))

    def needs(method: str, params: bytes) -> str | None:
        refusal = guard.authorize(caller, [(method, msgspec.Raw(params))])
        if refusal is None:
            return None
        assert refusal.status == 403
        return dict(refusal.headers)[b"www-authenticate"].decode().split('scope="')[1].rstrip('"')

    assert needs("tools/call", b'{"name":"echo"}') is None
    assert needs("tools/call", b'{"name":"delete"}') == "mcp:admin"
    assert needs("prompts/get", b'{"name":"review","arguments":{}}') == "mcp:prompts"
    assert needs("resources/read", b'{"uri":"memo://public"}') is None
    assert needs("resources/read", b'{"uri":"memo://secret"}') == "mcp:admin"
    assert needs("tools/list", b"{}") == "mcp:list"
    # A batch needs what all its requests need, in one challenge.
    batch = guard.authorize(
        caller, [("tools/list", msgspec.UNSET), ("tools/call", msgspec.Raw(b'{"name":"delete"}'))]
    )
    assert (
        batch is not None
        and b'scope="mcp:admin mcp:list"' in dict(batch.headers)[b"www-authenticate"]
    )
