"""The OAuth client against a protected MCP server of this project and a
small authorization server (tests/support/oauth_peers.py), both on loopback
over real HTTP: authorization on Streamable HTTP at both wires and on the
legacy SSE transport, refresh before expiry and on 401, step-up with its
bound, the RFC 9207 iss check, a move to another authorization server, the
loopback redirect receiver, cancellation, stored tokens, pre-registered
credentials, and the client credentials grant."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from support.http_servers import ThreadedServer, run
from support.oauth_peers import AuthorizationServerPeer, ProtectedResource
from typing_extensions import override

from mcpbind._client.client import Client, ClientSession
from mcpbind._core.jsonrpc import McpError
from mcpbind._server.server import Server
from mcpbind._transports.http.client.streamable import connect_http, connect_sse
from mcpbind.auth.client import (
    AuthorizationError,
    AuthorizationResponse,
    CallbackRedirect,
    ClientCredentialsProvider,
    ClientMetadata,
    HTTPRedirectFollower,
    InMemoryTokenStorage,
    LoopbackRedirect,
    OAuthClientProvider,
    PreRegisteredClient,
)
from mcpbind.http import http_app
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25 as legacy
from mcpbind_protocol import v2026_07_28 as modern

REDIRECT = "http://127.0.0.1:1/callback"  # nothing listens: HTTPRedirectFollower reads the redirect


class LegacyTools(legacy.ServerHandlers):
    @override
    async def list_tools(
        self, params: legacy.PaginatedRequestParams, ctx: RequestContext
    ) -> legacy.ListToolsResult:
        return legacy.ListToolsResult(
            tools=[legacy.Tool(name="echo", input_schema=legacy.ToolInputSchema(type="object"))]
        )

    @override
    async def call_tool(
        self, params: legacy.CallToolRequestParams, ctx: RequestContext
    ) -> legacy.CallToolResult:
        return legacy.CallToolResult(
            content=[legacy.TextContent(text=json.dumps(params.arguments))]
        )


class ModernTools(modern.ServerHandlers):
    @override
    async def list_tools(
        self, params: modern.PaginatedRequestParams, ctx: RequestContext
    ) -> modern.ListToolsResult:
        return modern.ListToolsResult(
            tools=[modern.Tool(name="echo", input_schema=modern.ToolInputSchema(type="object"))],
            ttl_ms=0,
            cache_scope="private",
        )

    @override
    async def call_tool(
        self, params: modern.CallToolRequestParams, ctx: RequestContext
    ) -> modern.CallToolResult | modern.InputRequiredResult:
        return modern.CallToolResult(
            content=[modern.TextContent(text=json.dumps(params.arguments))]
        )


@dataclass
class Peers:
    authorization: AuthorizationServerPeer
    resource: ProtectedResource
    url: str
    base: str


@contextlib.contextmanager
def _serve(app: Any) -> Iterator[ThreadedServer]:
    server = ThreadedServer(app)
    try:
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def peers(resource_path: str = "/mcp", **options: Any) -> Iterator[Peers]:
    authorization = AuthorizationServerPeer(**options)
    resource = ProtectedResource(
        http_app(Server([LegacyTools(), ModernTools()], name="p", version="1")),
        authorization,
        path=resource_path,
    )
    with _serve(authorization) as as_http, _serve(resource) as rs_http:
        authorization.base, resource.base = as_http.url(""), rs_http.url("")
        as_http.start()
        rs_http.start()
        yield Peers(authorization, resource, rs_http.url("/mcp"), rs_http.url(""))


def provider(url: str, **options: Any) -> OAuthClientProvider:
    options.setdefault("redirect", HTTPRedirectFollower(REDIRECT))
    return OAuthClientProvider(
        url, client_metadata=ClientMetadata(client_name="auth-tests"), **options
    )


async def echo(session: ClientSession, text: str = "hi") -> str:
    if session.stateless:
        result: Any = await modern.ClientStub(session).call_tool("echo", arguments={"text": text})
    else:
        result = await legacy.ClientStub(session).call_tool("echo", arguments={"text": text})
    return str(json.loads(result.content[0].text)["text"])


def client(version: str = "2026-07-28") -> Client:
    return Client(name="auth-tests", version="1", protocol_version=version)


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_streamable_http_is_authorized_at_both_wires(version: str) -> None:
    with peers() as p:

        async def go() -> None:
            async with connect_http(client(version), p.url, auth=provider(p.url)) as session:
                assert session.protocol_version == version
                assert await echo(session) == "hi"

        run(go())
        authz = p.authorization
        [registration] = authz.registrations
        assert registration["application_type"] == "native"
        assert (
            registration["redirect_uris"] == [REDIRECT]
            and "refresh_token" in registration["grant_types"]
        )
        [request] = authz.authorizations
        assert (
            request["code_challenge_method"] == "S256"
            and request["resource"] == p.url
            and request["scope"] == "mcp"
        )
        [token] = authz.token_requests
        assert (
            token["grant_type"] == "authorization_code"
            and token["resource"] == p.url
            and token["code_verifier"]
        )
        assert all(seen.startswith("Bearer ") for seen in p.resource.seen[1:])


def test_legacy_sse_is_authorized() -> None:
    with peers(resource_path="") as p:

        async def go() -> None:
            async with connect_sse(
                client("2025-11-25"), f"{p.base}/sse", auth=provider(f"{p.base}/sse")
            ) as session:
                assert await echo(session, "over sse") == "over sse"

        run(go())
        assert [r["resource"] for r in p.authorization.authorizations] == [p.base]


def test_refresh_before_expiry_and_on_401() -> None:
    with peers(lifetime=3600) as p:
        auth = provider(p.url)

        async def go() -> None:
            async with connect_http(client(), p.url, auth=auth) as session:
                await echo(session)
                p.authorization.access.clear()  # the server forgets every access token: 401
                await echo(session)
                p.authorization.lifetime = 1  # tokens from now on expire within the refresh margin
                p.authorization.access.clear()
                await echo(session)
                await echo(session)

        run(go())
        grants = [t["grant_type"] for t in p.authorization.token_requests]
        assert grants == ["authorization_code", "refresh_token", "refresh_token", "refresh_token"]
        assert len(p.authorization.authorizations) == 1


def test_a_refused_refresh_token_means_a_new_authorization() -> None:
    with peers() as p:

        async def go() -> None:
            async with connect_http(client(), p.url, auth=provider(p.url)) as session:
                await echo(session)
                p.authorization.access.clear()
                p.authorization.refresh.clear()
                await echo(session)

        run(go())
        grants = [t["grant_type"] for t in p.authorization.token_requests]
        assert grants == ["authorization_code", "refresh_token", "authorization_code"]
        assert len(p.authorization.registrations) == 1  # the client ID is kept


def test_step_up_keeps_earlier_scopes_and_is_bounded() -> None:
    with peers() as p:
        auth = provider(p.url)

        async def go() -> None:
            async with connect_http(client(), p.url, auth=auth) as session:
                await echo(session)
                p.resource.required = ["mcp", "admin"]
                await echo(session)
                p.resource.required = ["mcp", "admin", "root"]
                p.authorization.withheld = {"root"}  # asked for, never granted
                with pytest.raises(McpError, match="HTTP 403") as caught:
                    await echo(session)
                assert caught.value.data["httpStatus"] == 403

        run(go())
        scopes = [r.get("scope") for r in p.authorization.authorizations]
        assert scopes == ["mcp", "mcp admin", "mcp admin root", "mcp admin root"]


@pytest.mark.parametrize(
    ("iss", "message"),
    [("wrong", "comes from issuer 'https://evil.example'"), ("omit", "lacks the iss parameter")],
)
def test_authorization_responses_from_elsewhere_are_refused(iss: str, message: str) -> None:
    with peers(iss_parameter=iss) as p:

        async def go() -> None:
            async with connect_http(client(), p.url, auth=provider(p.url)):
                pass

        with pytest.raises(McpError, match=message) as caught:
            run(go())
        assert caught.value.data == {"httpStatus": 401}
        assert p.authorization.token_requests == []


def test_a_new_authorization_server_gets_a_new_registration() -> None:
    with peers() as p, _serve(second := AuthorizationServerPeer()) as second_http:
        second.base = second_http.url("")
        second_http.start()

        async def go() -> None:
            async with connect_http(client(), p.url, auth=provider(p.url)) as session:
                await echo(session)
                first_client = next(iter(p.authorization.clients))
                p.resource.authorization = (
                    second  # the resource moves; its old tokens are now invalid
                )
                await echo(session)
                assert first_client not in second.clients
                assert all(r["client_id"] != first_client for r in second.authorizations)

        run(go())
        assert len(second.registrations) == 1 and len(second.authorizations) == 1
        assert [t["grant_type"] for t in second.token_requests] == [
            "authorization_code"
        ]  # no refresh token from the first


def test_loopback_redirect_receives_the_code() -> None:
    with peers() as p:
        opened: list[str] = []

        def browser(url: str) -> bool:  # what a user's browser does: follow the redirects
            opened.append(url)
            with httpx.Client(follow_redirects=False) as web:
                back = web.get(url).headers["location"]
                wrong = back.replace("state=", "state=x")
                assert (
                    web.get(wrong).status_code == 400
                )  # a response to another authorization is refused
                assert web.get(back.replace("/callback", "/favicon.ico")).status_code == 404
                page = web.get(back)
                assert page.status_code == 200 and "Authorization complete" in page.text
            return True

        with LoopbackRedirect(open_browser=browser) as loopback:

            async def go() -> None:
                async with connect_http(
                    client(), p.url, auth=provider(p.url, redirect=loopback)
                ) as session:
                    await echo(session)

            run(go())
            assert loopback.redirect_uri.startswith("http://127.0.0.1:") and len(opened) == 1
            assert p.authorization.registrations[0]["redirect_uris"] == [loopback.redirect_uri]


def test_loopback_redirect_times_out() -> None:
    with LoopbackRedirect(timeout=0.3, open_browser=lambda url: True) as loopback:
        with pytest.raises(
            AuthorizationError,
            match=r"no authorization response reached http://127.0.0.1:\d+/callback within 0 s",
        ):
            run(loopback.authorize("https://as.example/authorize?state=abc"))


def test_cancelling_a_waiting_authorization() -> None:
    with peers() as p:
        never: asyncio.Event

        async def stuck(url: str) -> AuthorizationResponse:
            await never.wait()
            raise AssertionError("unreachable")

        auth = provider(p.url, redirect=CallbackRedirect(REDIRECT, stuck))

        async def go() -> None:
            nonlocal never
            never = asyncio.Event()
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(connect_http(client(), p.url, auth=auth).__aenter__(), 0.5)
            auth.redirect = HTTPRedirectFollower(REDIRECT)  # the user tries again
            async with connect_http(client(), p.url, auth=auth) as session:
                await echo(session)

        run(go())
        # The stuck attempt never reached the authorization server; the lock it held was released.
        assert len(p.authorization.authorizations) == 1 and len(p.authorization.token_requests) == 1


def test_stored_tokens_and_pre_registered_credentials() -> None:
    with peers(auth_methods=["client_secret_basic"]) as p:
        p.authorization.clients["known"] = {
            "client_id": "known",
            "client_secret": "known-secret",
            "token_endpoint_auth_method": "client_secret_basic",
            "redirect_uris": [REDIRECT],
        }
        storage = InMemoryTokenStorage()
        known = PreRegisteredClient("known", "known-secret")

        async def go() -> None:
            async with connect_http(
                client(), p.url, auth=provider(p.url, storage=storage, pre_registered=known)
            ) as session:
                await echo(session)
            # A new provider (the application restarted) with the same storage: no new authorization.
            async with connect_http(
                client(), p.url, auth=provider(p.url, storage=storage)
            ) as session:
                await echo(session)

        run(go())
        assert p.authorization.registrations == [] and len(p.authorization.authorizations) == 1
        assert p.authorization.authorizations[0]["client_id"] == "known"


def test_client_credentials_grant() -> None:
    with peers(auth_methods=["client_secret_post"]) as p:
        p.authorization.clients["svc"] = {
            "client_id": "svc",
            "client_secret": "svc-secret",
            "token_endpoint_auth_method": "client_secret_post",
            "redirect_uris": [],
        }

        async def go() -> None:
            auth = ClientCredentialsProvider(p.url, client_id="svc", client_secret="svc-secret")
            async with connect_http(client(), p.url, auth=auth) as session:
                assert await echo(session) == "hi"

        run(go())
        [token] = p.authorization.token_requests
        assert (
            token["grant_type"] == "client_credentials" and token["client_secret"] == "svc-secret"
        )
        assert token["scope"] == "mcp" and token["resource"] == p.url


def test_calls_waiting_for_a_failed_authorization_share_its_failure() -> None:
    """Five calls of a 2026-07-28 session get 401 at once (the server forgot
    their token, the refresh token is refused) and the user declines the
    authorization: the user is asked once, and the five calls fail with the
    refusal, rather than each asking again in turn. A call after that asks again."""
    with peers() as p:
        asked: list[str] = []

        async def decline(url: str) -> AuthorizationResponse:
            asked.append(url)
            await asyncio.sleep(
                0.5
            )  # the user takes a moment; the other calls are waiting meanwhile
            raise AuthorizationError("the user declined the authorization")

        auth = provider(p.url)

        async def go() -> None:
            async with connect_http(client(), p.url, auth=auth) as session:
                await echo(session)
                p.authorization.access.clear()
                p.authorization.refresh.clear()
                auth.redirect = CallbackRedirect(REDIRECT, decline)
                outcomes = await asyncio.gather(
                    *(echo(session, str(n)) for n in range(5)), return_exceptions=True
                )
                assert all(
                    isinstance(o, McpError) and "the user declined" in o.message for o in outcomes
                ), outcomes
                assert len(asked) == 1
                with pytest.raises(McpError, match="the user declined"):
                    await echo(session)
                assert len(asked) == 2

        run(go())
